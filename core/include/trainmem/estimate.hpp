// The estimate: bytes on the most-loaded GPU, by component, with parameter counts.
//
// Two reference profiles reproduce NVIDIA's theoretical-memory estimators to the byte
// (../shared/reference/megatron-formulas.md): `megatron-bridge` (Megatron-Bridge
// estimate_training_memory, §3) and `megatron-lm` (Megatron-LM theoretical_memory_usage, §4).
// The entry points mirror Bridge's module so its users recognise them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"
#include "trainmem/nccl.hpp"

namespace trainmem {

// Bytes in a megabyte as the references print them (MiB, 2^20).
inline constexpr double NUM_BYTES_IN_MEGABYTE = 1024.0 * 1024.0;
// Bytes in a gigabyte as the references print them (GiB, 2^30).
inline constexpr double NUM_BYTES_IN_GIGABYTE = 1024.0 * 1024.0 * 1024.0;

// Formula transparency: when a Trace is passed, every intermediate quantity is appended with the
// formula that produced it. Passing nullptr (the default) costs nothing.
struct TraceEntry {
  std::string name;
  double value;
  std::string formula;
};
using Trace = std::vector<TraceEntry>;

// adapters: the trainmem profile's LoRA adapters (peft), apart from the frozen base they adapt.
enum class ComponentKind : uint8_t { dense_and_embedding, routed_experts, adapters, count };
// The reference's name of a component ("dense parameters and optimizer", ...).
std::string_view component_name(ComponentKind kind);
// The JSON name of a component's kind ("dense_and_embedding", "routed_experts", "adapters").
std::string_view component_kind_name(ComponentKind kind);

// One model-state component (weights + gradients + master weights + optimizer states).
struct ModelStateComponent {
  ComponentKind kind = ComponentKind::dense_and_embedding;
  std::string_view name;              // the reference's name, e.g. "dense parameters and optimizer"
  double parameter_count = 0;         // global
  double parameter_count_per_gpu = 0; // on the most-loaded GPU
  double bytes_per_parameter = 0;
  double optimizer_shard_size = 0;    // ranks the optimizer state is sharded over (1: unsharded)
  double memory_bytes = 0;
};

// Bytes of one tensor class on the most-loaded GPU, split by the parameters they belong to.
struct PartBytes {
  double dense = 0;      // transformer layers (attention, dense MLP, shared experts, norms)
  double embedding = 0;  // input embedding and output layer
  double expert = 0;     // routed experts
  double total() const { return dense + embedding + expert; }
};

// Model state by tensor class. In the reference profiles the byte model is Megatron's bf16
// mixed-precision Adam (reference §3.4): weight 2 B and fp32 main gradient 4 B per parameter,
// fp32 master weight 4 B and Adam m, v 8 B sharded over the optimizer group.
// The trainmem profile adds weight_copies (FP8 caches, autocast casts) and buffers (ZeRO-3 and
// FSDP gathered layers, DDP gradient buckets); the reference profiles leave them at zero.
// With peft (trainmem profile) the base weights are frozen_weights (no gradients, master weights
// or optimizer states; QLoRA's NF4 block scales included) and the LoRA adapters have rows of their
// own; the first six rows then hold only what the frozen base and the adapters share (weight
// copies, buffers).
struct StateBreakdown {
  PartBytes weights, weight_copies, gradients, master_weights, optimizer_states, buffers;
  PartBytes frozen_weights, adapter_weights, adapter_gradients, adapter_master_weights,
      adapter_optimizer_states;
  // The rows in the order of k_state_rows (the JSON "state" object, the result slots); the last
  // k_adapter_rows are the adapters'.
  static constexpr size_t k_adapter_rows = 4;
  std::array<const PartBytes*, 11> rows() const {
    return {&weights, &weight_copies, &gradients, &master_weights, &optimizer_states, &buffers,
            &frozen_weights, &adapter_weights, &adapter_gradients, &adapter_master_weights,
            &adapter_optimizer_states};
  }
  double total() const {
    double sum = 0;
    for (const PartBytes* row : rows()) sum += row->total();
    return sum;
  }
  double adapters() const {
    const auto all = rows();
    double sum = 0;
    for (size_t i = all.size() - k_adapter_rows; i < all.size(); ++i) sum += all[i]->total();
    return sum;
  }
};
// The names of StateBreakdown's rows, in rows() order.
inline constexpr std::string_view k_state_rows[] = {
    "weights", "weight_copies", "gradients", "master_weights", "optimizer_states", "buffers",
    "frozen_weights", "adapter_weights", "adapter_gradients", "adapter_master_weights",
    "adapter_optimizer_states"};

// CPU memory per node, by what was moved there (trainmem profile): offloaded weights (frozen ones
// included), gradients, master weights and optimizer states, offloaded activations, and the part
// of paged optimizer states the GPU does not hold. They add up to Estimate::cpu_bytes.
struct CpuBytes {
  double weights = 0, gradients = 0, master_weights = 0, optimizer_states = 0, activations = 0,
         paged_optimizer_states = 0;
  // In the order of k_cpu_rows (the JSON "cpu" object, the result slots).
  std::array<const double*, 6> rows() const {
    return {&weights, &gradients, &master_weights, &optimizer_states, &activations, &paged_optimizer_states};
  }
  double total() const {
    double sum = 0;
    for (const double* row : rows()) sum += *row;
    return sum;
  }
  CpuBytes scaled(double factor) const {
    return {weights * factor, gradients * factor, master_weights * factor, optimizer_states * factor,
            activations * factor, paged_optimizer_states * factor};
  }
};
inline constexpr std::string_view k_cpu_rows[] = {"weights", "gradients", "master_weights",
                                                  "optimizer_states", "activations",
                                                  "paged_optimizer_states"};

enum class Moment : uint8_t { forward, backward, optimizer_step, count };
std::string_view moment_name(Moment moment);  // "forward", "backward", "optimizer_step"
// The job's moments (trainmem profile): the step's three, then loading the model, saving a full
// checkpoint and evaluating between steps (job_moments); the largest is the job's peak, what
// max_memory_allocated shows.
enum class JobMoment : uint8_t { forward, backward, optimizer_step, loading, checkpoint_save, evaluation, count };
std::string_view job_moment_name(JobMoment moment);  // ..., "loading", "checkpoint_save", "evaluation"

// The moments of a training step whose largest is the peak (trainmem profile).
struct Moments {
  double forward = 0;         // end of the forward passes in flight
  double backward = 0;        // backward, with a recomputed layer re-materialised
  double optimizer_step = 0;  // activations freed, optimizer temporaries allocated
  // What the peak holds besides the model state: activations (0 at an optimizer-step peak) and
  // the moment's temporaries (loss logits, a recomputed layer, optimizer scratch, workspaces).
  Moment peak_moment = Moment::forward;
  double peak_activation_bytes = 0;
  double peak_temporary_bytes = 0;
  // The job's moments outside the steady step (trainmem profile, job_moments; 0 where not
  // modelled): loading a bitsandbytes 4-bit model with from_pretrained, saving a full state dict
  // under fsdp2, and evaluating between steps (eval_micro_batch_size). The stage's total is the
  // largest of these and the step's moments.
  double loading = 0;
  double checkpoint_save = 0;
  double evaluation = 0;
  double peak() const { return forward > backward ? (forward > optimizer_step ? forward : optimizer_step)
                                                  : (backward > optimizer_step ? backward : optimizer_step); }
  // The job's peak: the step's peak moment, unless loading, a checkpoint save or an evaluation is
  // larger (a tie goes to the step, then to the earlier of the job's moments).
  JobMoment job_peak() const {
    const double step = peak();
    const double outside = std::max({loading, checkpoint_save, evaluation});
    if (!(outside > step)) return JobMoment(peak_moment);
    if (loading == outside) return JobMoment::loading;
    return checkpoint_save == outside ? JobMoment::checkpoint_save : JobMoment::evaluation;
  }
};

struct ParamCounts {
  double total = 0;              // everything the profile counts
  double dense_transformer = 0;  // decoder + MTP layers' non-expert parameters + final norm
  double embedding = 0;          // input embedding (+ output layer when untied)
  double routed_experts = 0;
  double active = 0;             // parameters used per token (top-k of the routed experts)
  double adapter = 0;            // trainmem peft: LoRA adapter parameters (not in total)
  double adapter_per_gpu = 0;    // of them on the most-loaded GPU (not in per_gpu)
  double per_gpu = 0;            // on the most-loaded GPU (its pipeline stage, after TP/EP split)
  // Of per_gpu, what the GPU stores at rest: divided by the shard count where the framework
  // shards the weights themselves (ZeRO-3, FSDP2); the rest is gathered one unit at a time.
  double stored_per_gpu = 0;
  double dense_per_gpu = 0;      // non-expert parameters on it, embedding included
  double embedding_per_gpu = 0;  // embedding part of dense_per_gpu
  double routed_per_gpu = 0;
};

struct LayerCounts {
  int64_t total = 0;  // decoder layers + MTP layers
  int64_t dense = 0;
  int64_t moe = 0;
};

// One pipeline stage's parameters (Bridge's placement, reference §3.3).
struct StageParams {
  int64_t num_layers = 0;   // decoder layers on the stage
  double dense = 0;         // non-expert parameters, embedding included
  double routed = 0;
  double weight_and_optimizer_bytes = 0;  // model state on one GPU of the stage
  bool has_activation = false;            // the reference formulas know only the first stage
  double activation_bytes = 0;            // activations in flight at the stage's peak
  int64_t microbatches_in_flight = 0;     // trainmem profile: under the pipeline schedule
  Moments moments;                        // trainmem profile
  double total_bytes = 0;                 // the stage's peak on one GPU (allocated)
  double reserved_bytes = 0;              // trainmem: + the caching allocator's overhead
  double device_bytes = 0;                // trainmem: + CUDA context, NCCL, workspaces
  // trainmem: what reserved and device add above allocated on this stage (the stage chart's
  // overhead bar for the chosen figure).
  double reserved_overhead_bytes = 0, device_overhead_bytes = 0;
};

// Statements that qualify the number; their text is in assumption_text().
enum class Assumption : uint8_t {
  most_loaded_shard,         // most-loaded GPU; runtime memory excluded
  bridge_byte_model,         // 18 B or 6 + 12/n B per parameter
  embedding_placement,       // embeddings on first/last stage; untied counted twice only at PP=1
  routed_expert_sharding,    // expert params over EP·ETP; optimizer over expert DP
  context_parallel_divides,  // dense optimizer and activations divided over CP ranks
  activation_sp_selective,   // activation formula assumes SP + selective recompute
  activation_not_reported,   // the training log omits activation without SP + selective
  sequence_parallel_off_tp1, // sequence_parallel ignored at TP = 1 (Megatron turns it off)
  uneven_independent_maxima, // dense and routed maxima may come from different stages
  lm_dense_shard_dp_only,    // megatron-lm shards the dense optimizer over DP only
  lm_no_sp_formula,          // megatron-lm's no-SP formula (10 + 24/t, ×1.05)
  lm_ignores_cp_and_uneven,  // megatron-lm reads neither CP nor uneven stage sizes
  lm_mtp_on_most_loaded,     // megatron-lm puts the whole MTP block on the most-loaded shard
  trainmem_peak_and_overheads,  // trainmem: the heaviest stage's peak; overheads from defaults
  trainmem_adafactor_local,  // trainmem: factored states sharded like per-parameter ones (approximation)
  trainmem_torch_pipeline,   // trainmem: torch.distributed.pipelining's buffers and kept outputs
  trainmem_peft,             // trainmem: frozen base, adapters' saved tensors, layer 0 like the rest
  trainmem_activation_offload,  // trainmem: saved activations in CPU memory but one layer's
  trainmem_paged_unpressured,   // trainmem: paged optimizer states all resident (no capacity given)
  trainmem_paged_evicted,       // trainmem: paged states beyond the capacity counted in CPU memory
  trainmem_gradients_per_step,  // trainmem: gradients freed between steps, absent from the forward
  trainmem_peft_saved_copies,   // trainmem: PEFT modules_to_save copies beside the frozen originals
  trainmem_job_moments_below,   // trainmem: loading / checkpoint save / evaluation modelled, below the step's peak
  trainmem_peak_at_loading,     // trainmem: the job's peak is loading (from_pretrained, bitsandbytes)
  trainmem_peak_at_checkpoint_save,  // trainmem: the job's peak is a full-state-dict save (fsdp2)
  trainmem_peak_at_evaluation,  // trainmem: the job's peak is an evaluation step (eval_micro_batch_size)
  count
};
std::string_view assumption_text(Assumption);

// The figures of the trainmem profile, and the lines between them (OverheadLine's names).
inline constexpr std::string_view k_figure_names[] = {"allocated", "reserved", "device"};
inline constexpr std::string_view k_overhead_keys[] = {"caching_allocator", "cuda_context", "nccl",
                                                       "paged_optimizer"};

// One line between two of the figures (trainmem profile): allocated + the lines that add to
// reserved = reserved; reserved + the lines that add to device = device.
struct OverheadLine {
  std::string_view key;      // "caching_allocator", "cuda_context", "nccl", "paged_optimizer"
  double bytes = 0;
  std::string_view adds_to;  // "reserved" or "device"
};

// How close runs like this one came to their measurements (trainmem profile; confidence.cpp).
// The validation points that run (tests/validation/points.json and finetune-points.json) are
// grouped by framework, training (full-parameter or PEFT) and recompute class, and each group's
// |error| statistics are generated into the core by `npm run validate -- --write-confidence`
// (core/src/estimate/confidence_table.inc; a Node test fails when they are stale).
struct ConfidenceKey {
  std::string_view framework;  // a Framework's name, or "any"
  std::string_view training;   // "full-parameter", "peft" (LoRA, QLoRA) or "any"
  std::string_view recompute;  // "none", "selective" (selective_op included), "full" or "any"
  bool operator==(const ConfidenceKey&) const = default;
};
struct ConfidenceGroup {
  ConfidenceKey key;
  int points = 0;                 // validation points in the group
  double median_abs_error = 0;    // median |estimate - measured| / measured
  double p90_abs_error = 0;       // 90th percentile of it (nearest rank: at least 90 % within)
  double median_signed_error = 0; // median (estimate - measured) / measured: below 0, under-read
};
// A group whose median signed error is below this leans low: more than half of its runs were
// under-estimated by more than 3 % (issue 29: "no group with a median signed error below -3 %";
// the same threshold as tests/validation/points.mjs LEANS_LOW).
inline constexpr double k_confidence_leans_low = -0.03;
inline bool leans_low(const ConfidenceGroup& group) { return group.median_signed_error < k_confidence_leans_low; }
// What the group shares with the run, narrowest first: the order the core falls back in when a
// group has fewer than k_confidence_min_points points.
enum class ConfidenceMatch : uint8_t { exact, framework_and_training, training, framework, all, count };
std::string_view confidence_match_name(ConfidenceMatch match);  // "exact", "framework_and_training", ...
inline constexpr int k_confidence_min_points = 3;
inline constexpr std::string_view k_confidence_source = "npm run validate";
struct Confidence {
  bool known = false;     // false: reference profiles (and a core built without validation groups)
  ConfidenceKey run;      // the run's own group
  ConfidenceGroup group;  // the group whose figures apply: the run's own, or a wider one (match)
  ConfidenceMatch match = ConfidenceMatch::exact;
};
// Every generated group, narrowest first.
std::span<const ConfidenceGroup> confidence_groups();
// The group closest to a resolved config: same framework and PEFT-ness, then same recompute, each
// with at least k_confidence_min_points points, falling back as ConfidenceMatch orders. Pure.
Confidence confidence_for(const Config& config);
// The same choice from another table of groups (tests).
Confidence confidence_for(const Config& config, std::span<const ConfidenceGroup> groups);
// "megatron, full-parameter training, selective recompute"; "any framework, PEFT (LoRA, QLoRA),
// any recompute"; "all validation points".
std::string confidence_group_name(const ConfidenceKey& key);

struct Estimate;

// Whether a figure fits its GPU: the one verdict the page, the embed and the element show, the
// line the suggestions aim below and the planner's limit (with its default headroom).
//   over   the figure is above the capacity;
//   tight  it is within the capacity but above capacity · (1 − headroom) (reason headroom: the
//          caching allocator, a longer sample or a checkpoint save can take the rest), or its
//          validation spread crosses the capacity: figure · (1 + spread) > capacity (reason
//          spread: runs like this landed within ±spread of their measurement, Confidence);
//   fits   otherwise.
// The headroom is the planner's default share kept free (planner.hpp PlanOptions::headroom).
inline constexpr double k_default_headroom = 0.10;
enum class Fit : uint8_t { fits, tight, over, count };
std::string_view fit_name(Fit fit);  // "fits", "tight", "over"
enum class FitReason : uint8_t { none, headroom, spread, count };
std::string_view fit_reason_name(FitReason reason);  // "none", "headroom", "spread"
struct FitVerdict {
  Fit fit = Fit::fits;
  FitReason reason = FitReason::none;
  double figure_bytes = 0, capacity_bytes = 0;
  double headroom = k_default_headroom;  // share of the capacity kept free
  double spread = 0;                     // the figure's validation spread (p90 |error|), 0 if unknown
  double limit_bytes = 0;                // capacity · (1 − headroom): "fits" is at most this
  double upper_bytes = 0;                // figure · (1 + spread)
};
// Pure; capacity > 0, figure >= 0, 0 <= headroom < 1, spread >= 0.
FitVerdict fit_verdict(double figure_bytes, double capacity_bytes, double spread,
                       double headroom = k_default_headroom);
// The figure a config's verdict, suggestions and planner compare: device bytes in the trainmem
// profile (what nvidia-smi shows), the total in the reference ones.
double compared_figure(const Config& config, const Estimate& estimate);
// The config whose reserved figure is the 5 % factor alone: with allocator_fragmentation unset,
// reserved is the larger of that factor and the simulated caching allocator, so this config's
// reserved and device figures (and so its compared_figure: the most-loaded stage's device bytes,
// the largest over the stages) are lower bounds of the config's own, at a small part of the
// cost. The config itself when it sets allocator_fragmentation or is a reference profile. The
// suggestions and the planner test a candidate with it first and simulate only one that fits.
Config factor_only(const Config& config);

// A change that makes a run fit: `fields` written over the config (resolve()d and estimated again)
// give `figure_bytes` (device bytes in the trainmem profile, the total in the reference ones), at
// most its gpu_memory_bytes. `rank` is its kind, least disruptive first: 0 recompute, 1 micro
// batch, 2 sharding stage, 3 TP/PP/CP at the same GPU count (DP gives the factor), 4 offload.
struct Suggestion {
  int rank = 0;
  std::vector<std::pair<std::string, FieldValue>> fields;
  double figure_bytes = 0;
  std::string what;  // e.g. "full recompute (activation checkpointing of every layer)"
};

// When `config` has a capacity (gpu_memory_bytes) and its compared figure is above the headroom
// line (FitVerdict limit_bytes): up to `max_count` single changes that bring it below that line,
// least disruptive first and the least change of each kind, none touching a field of `held`.
// Empty when it is below the line or has no capacity. Each is verified by a full estimate.
std::vector<Suggestion> suggest_changes(const Config& config, std::span<const std::string> held = {},
                                        size_t max_count = 5);

// A run's figures at one GPU capacity and each one's verdict there: a row of "on every GPU".
// Figures in the verdicts' order: allocated, reserved, device (trainmem), the total alone (the
// reference profiles).
struct CapacityFit {
  double capacity_bytes = 0;
  std::array<double, 3> figures{};
  std::array<FitVerdict, 3> verdicts{};
  int n_figures = 0;
};

// What one estimate pass computes (estimate_training_memory): the figures of the most-loaded GPU,
// by class, with its parameter counts. What a result shows besides is FullEstimate's.
struct Estimate {
  Profile profile = Profile::megatron_bridge;
  std::array<ModelStateComponent, 3> components{};
  int n_components = 0;
  bool has_activation = false;
  double activation_bytes = 0;
  double weight_and_optimizer_bytes = 0;
  double total_bytes = 0;
  ParamCounts params;
  LayerCounts layers;
  StateBreakdown state;
  // trainmem profile (zero in the reference profiles):
  int64_t most_loaded_stage = 0;    // the pipeline stage whose device figure is the largest
  // The largest allocated figure of any stage: total_bytes is the most-loaded stage's (chosen by
  // its device figure), which another stage's allocated peak may exceed. The reference profiles:
  // total_bytes.
  double largest_stage_allocated_bytes = 0;
  // total_bytes is what torch.cuda.max_memory_allocated would show; reserved adds the caching
  // allocator's rounding and fragmentation; device adds what nvidia-smi sees besides PyTorch.
  double reserved_bytes = 0, device_bytes = 0;
  std::array<OverheadLine, 4> overhead_lines{};  // allocated → reserved → device, in order
  int n_overhead_lines = 0;
  NcclCommunicators nccl;           // the NCCL communicators and their buffers on this GPU
  Moments moments;                  // of that stage
  double cpu_bytes = 0;             // CPU memory per node: offloaded state of its GPUs
  CpuBytes cpu;                     // trainmem: cpu_bytes by what was moved there
  // trainmem, per GPU of the most-loaded stage (their share of cpu_bytes is × gpus_per_node):
  double cpu_activation_bytes = 0;  // activation_offload: saved activations moved to CPU memory
  double paged_optimizer_bytes = 0; // paged_optimizer: states in unified memory, all of them
  double paged_gpu_bytes = 0;       // of them resident on the GPU (in device_bytes)
  // framework deepspeed, ZeRO-2/3: what DeepSpeed's own estimator prints for this model and
  // cluster (deepspeed.hpp), for comparison; 0 otherwise.
  double deepspeed_gpu_bytes = 0, deepspeed_cpu_bytes = 0;
  uint32_t assumptions = 0;         // bit i set: Assumption(i) applies

  bool has(Assumption a) const { return (assumptions >> unsigned(a)) & 1u; }
  std::vector<std::string_view> assumption_texts() const;
};

// Everything a result holds (full_estimate): the pass's figures and what a result shows besides
// them, computed from that pass. The JSON writer, the slots and the text report take only this
// (a pass's Estimate has no stages, verdicts or suggestions to show).
struct FullEstimate : Estimate {
  std::vector<StageParams> stages;  // every pipeline stage, first to last (see pipeline_stages)
  std::vector<Suggestion> suggestions;  // what to change when it does not fit its capacity
  std::string reference_line;       // the training log's line (see report_theoretical_memory)
  Confidence confidence;            // trainmem profile: the closest validation group (confidence_for)
  double minimum_devices = 0;       // with gpu_memory_bytes: fewest GPUs that could hold the run
                                    // (when the run is one replica on one GPU, or does not fit
                                    // below the headroom line: else it would take a second
                                    // estimate, and 0)
  // With a capacity: each figure's verdict against it (fit_verdict with the confidence's spread),
  // in k_figure_names order for the trainmem profile (allocated, reserved, device), the total
  // alone for the reference profiles.
  std::array<FitVerdict, 3> verdicts{};
  int n_verdicts = 0;
  // Asked for with capacities to compare (fits_at_capacities): the run at each of them.
  std::vector<CapacityFit> capacity_fits;
};

// The same, given the config's own estimate `now` (full_estimate has it: no second estimate to learn
// whether the run fits).
std::vector<Suggestion> suggest_changes(const Config& config, const Estimate& now,
                                        std::span<const std::string> held = {}, size_t max_count = 5);

// --- Bridge-compatible API (Megatron-Bridge training/utils/theoretical_memory_utils.py) ---
// All of them take a resolved Config (config.hpp) and dispatch on config.profile.
// `num_microbatches` < 1 means "not given" (Python's None).

// Weights, gradients, master weights and optimizer states on the most-loaded GPU, in bytes.
double compute_weight_and_optimizer_memory(const Config& config, Trace* verbose = nullptr);
// Activation bytes on the most-loaded GPU (the profile's formula; first pipeline stage).
double compute_activation_memory(const Config& config, int64_t num_microbatches,
                                 Trace* verbose = nullptr);
// The structured estimate. include_activation=false leaves the activation out, as Bridge does.
Estimate estimate_training_memory(const Config& config, int64_t num_microbatches,
                                  bool include_activation = true, Trace* verbose = nullptr);
// "Theoretical memory footprints: <component>=… MB, activation=… MB, total=… MB".
// unit: "MB" (2^20) or "GB" (2^30), case-insensitive; anything else throws std::invalid_argument
// with "Unsupported memory unit: <unit>".
std::string format_training_memory_estimate(const Estimate& estimate, std::string_view unit = "MB");
// The line the training log prints (Bridge's report_theoretical_memory for megatron-bridge and,
// for comparison, for trainmem; Megatron-LM's for megatron-lm). Empty when the reference formula
// cannot describe the model (trainmem blocks without attention, norms or embeddings). Core does
// no I/O: the caller prints it.
std::string report_theoretical_memory(const Config& config, int64_t num_microbatches,
                                      Trace* verbose = nullptr);

// Every pipeline stage's parameters and model-state bytes, first stage to last, for profiles that
// place layers on stages (trainmem; megatron-bridge with PP > 1), else empty: full_estimate's
// stages. Kept apart from estimate_training_memory so that the estimate itself allocates nothing
// (but the prefix sums of a pipeline_stage_layers list, and the chunk figures past 16 chunks).
std::vector<StageParams> pipeline_stages(const Config& config);

// Everything a result holds, computed once: the pass estimate_training_memory(config,
// config.num_microbatches) makes, and from it every pipeline stage (`stages`, the same trainmem
// pass), the training log's line, the confidence, the verdicts, the suggestions and the minimum
// GPU count (FullEstimate). The JSON writer, the slots, the text report and the bindings only read
// it (json/result_schema.hpp).
FullEstimate full_estimate(const Config& config, Trace* verbose = nullptr);

// The run of `estimate` (full_estimate(config)) at each of `capacities` (bytes, > 0), without
// estimating again: only the paged optimizer states' resident share depends on the capacity (the
// most-loaded stage is the one with the most allocated bytes, whatever the capacity), and the
// verdict (fit_verdict with the run's validation spread). One result answers "on every GPU". A
// capacity that is not a finite positive number is left out (never a NaN verdict).
std::vector<CapacityFit> fits_at_capacities(const Config& config, const FullEstimate& estimate,
                                            std::span<const double> capacities);

// How many trainmem-profile passes (one estimate of one config: the walk over its pipeline stages)
// this process has run: what the benchmarks print per call and per keystroke. A count, not an
// input to anything. (The reference formulas, such as the training log's line, are not counted.)
uint64_t estimator_passes();

std::ostream& operator<<(std::ostream& os, const Estimate& estimate);

}  // namespace trainmem
