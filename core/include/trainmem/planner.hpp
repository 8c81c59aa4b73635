// The planner: which layouts of a model fit on N GPUs of a given capacity, and which one to start
// from; the largest micro batch, the longest sequence and the fewest GPUs that fit.
//
// A layout is everything a launch command chooses about parallelism and memory policy:
//
//   TP        tensor_model_parallel_size     1 … gpus_per_node, dividing the GPU count and the
//                                            MLP sizes (ffn_hidden_size, shared experts)
//   SP        sequence_parallel              on whenever TP > 1
//   PP        pipeline_model_parallel_size   divisors of GPUs / TP, at most num_layers; even
//             splits, and with allow_uneven_pipeline also uneven ones: a first and/or a last
//             stage with fewer layers than the others (1 … the middle stages' count)
//   VPP       virtual_pipeline_…_size        none, or 2 … that divide the middle stages' layers
//   CP        context_parallel_size          divisors of GPUs / (TP·PP)
//   EP, ETP   expert_(model|tensor)_…_size   MoE only: EP divides num_moe_experts, ETP in
//             1 … gpus_per_node dividing moe_ffn_hidden_size
//   DP        data_parallel_size             derived: GPUs / (TP·PP·CP)
//   sharding  megatron and the reference profiles: use_distributed_optimizer off/on;
//             deepspeed: zero_stage 0 … 3; fsdp2: zero_stage 2, 3 (over the whole DP group);
//             ddp: none
//   recompute recompute_granularity none, selective, full
//   micro batch  divisors of global_batch_size / DP; without a global batch 1 …
//             max_micro_batch_size (default: the config's micro_batch_size)
//
// Every candidate is the base config with these fields replaced, and goes through resolve()
// (config.hpp), the single source of validity: no layout that resolve() rejects can appear.
// Each valid candidate is estimated by estimate_training_memory (estimate.hpp), the estimator
// the page and the CLI use. A candidate fits when its metric (allocated, reserved or device
// bytes of the most-loaded GPU) is at most gpu_memory_bytes × (1 − headroom).
//
// Ranking (best first): least recompute (none, selective, full), then the smallest
// model-parallel footprint TP·PP·CP·EP, then the largest micro batch, then the least memory,
// then the smaller TP, PP, VPP, first-stage, last-stage, CP, EP, ETP and sharding values.
//
// Pruning (none of it changes the answer; a test compares with prune = false):
//   * model state first: a layout whose weights, gradients and optimizer state alone
//     (estimate_training_memory with include_activation = false, a lower bound of the full
//     estimate) do not fit is not estimated with any recompute policy or micro batch;
//   * micro batches in increasing order: a larger micro batch never uses less memory, so the
//     first one that does not fit ends that layout's micro batches;
//   * ranking bound: candidates are visited in ranking order of (recompute, footprint); once a
//     group is done with max_results fits found, nothing later can enter the top max_results;
//   * the simulated allocator only for what is listed (trainmem profile, allocator_fragmentation
//     unset): candidates are estimated with the allocator factor's figures, lower bounds of the
//     default's, and the listing is a best-first walk that simulates the best-ranked candidate
//     until the best-ranked has its own figures (solvers.cpp, settle_best); n_fitting then
//     counts the fits confirmed by the default's figures;
//   * min-gpus starts from a lower bound: summed over its GPUs, any layout holds at least one
//     copy of the weights, gradients, master weights and optimizer states (parallelism and
//     sharding split or replicate them, never drop them); its most-loaded GPU holds at least the
//     average, and every metric is at least the allocated bytes. So no layout fits on fewer than
//     (that one copy, as the estimator counts it for the whole model on one GPU, least over the
//     sharding choices) / (the limit) GPUs.
// max_evaluations bounds the work (estimates, model-state ones included): the search stops
// there and says so (PlanResult::stopped); it never hangs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/estimate.hpp"

namespace trainmem {

// Which figure must fit: automatic = device bytes in the trainmem profile, total_bytes
// (allocated) in the reference profiles, which model no runtime overheads.
enum class PlanMetric : uint8_t { automatic, allocated, reserved, device, count };
// The fields the search varies. A knob that is not searched keeps the base config's value
// (ETP follows TP when the base had ETP = TP).
enum class PlanKnob : uint8_t { tp, pp, vpp, cp, ep, etp, sharding, recompute, micro_batch_size, count };
enum class PlanSolve : uint8_t { none, max_micro_batch, max_seq_length, min_gpus, count };

template <> std::span<const std::string_view> enum_names<PlanMetric>();  // "auto", "allocated", …
template <> std::span<const std::string_view> enum_names<PlanKnob>();    // "tp", "pp", …
template <> std::span<const std::string_view> enum_names<PlanSolve>();   // "none", "max-micro-batch", …

inline constexpr uint32_t k_plan_all_knobs = (1u << unsigned(PlanKnob::count)) - 1;

struct PlanStats {
  int64_t layouts = 0;           // parallel layouts × sharding choices enumerated
  int64_t candidates = 0;        // layouts × recompute policies × micro batch sizes
  int64_t invalid = 0;           // candidates resolve() rejected
  int64_t estimates = 0;         // full estimates run
  int64_t state_estimates = 0;   // model-state-only estimates run (pruning)
  int64_t pruned_by_state = 0;   // candidates skipped: model state alone does not fit
  int64_t pruned_by_batch = 0;   // candidates skipped: a smaller micro batch did not fit
  int64_t pruned_by_rank = 0;    // candidates skipped: they could not enter the top max_results
  // Of the full estimates that fit by the allocator factor, those estimated again with the
  // simulated caching allocator (allocator_fragmentation unset; not counted in evaluations()).
  int64_t simulated = 0;
  // Listing with pruning: candidates that fit by the allocator factor's figures but were not
  // simulated, because the best max_results were settled before them (they may or may not fit
  // by the default's figures, and are not in n_fitting).
  int64_t not_simulated = 0;
  int64_t evaluations() const { return estimates + state_estimates; }
};

struct PlanOptions {
  int64_t gpus = 0;               // GPUs of the run; 0: the base config's TP·PP·CP·DP
  double gpu_memory_bytes = 0;    // bytes of one GPU; 0: the base config's gpu_memory_bytes
  double headroom = k_default_headroom;  // share of the GPU kept free, 0 ≤ headroom < 1 (estimate.hpp)
  int64_t gpus_per_node = 0;      // bounds TP and ETP, the node size of min-gpus; 0: the config's (8)
  PlanMetric metric = PlanMetric::automatic;
  int64_t max_results = 20;       // layouts returned, best first: 1 … 100,000
  int64_t max_evaluations = 1'000'000;  // work bound: estimates run (model-state ones included)
  bool allow_uneven_pipeline = false;   // also try smaller first/last pipeline stages
  uint32_t search = k_plan_all_knobs;   // bit i: PlanKnob(i) is searched
  int64_t max_micro_batch_size = 0;     // largest micro batch without a global batch (and a cap
                                        // with one); 0: the config's (max-micro-batch: 65,536)
  PlanSolve solve = PlanSolve::none;
  int64_t max_seq_length = 1 << 24;     // max-seq-length: the longest sequence tried (tokens)
  int64_t seq_length_step = 1;          // max-seq-length: lengths tried are multiples of this
  int64_t max_gpus = 65536;             // min-gpus: the most GPUs tried
  // Config fields held at the base config's values in every layout and answer (the page's hold
  // toggles, the CLI's --keep): a parallel, sharding, recompute or micro-batch field stops its
  // knob from being searched; data_parallel_size keeps DP = GPUs / (TP·PP·CP) at the base's;
  // any other field of the table is never varied (seq_length except by max-seq-length, which
  // then cannot hold it). Set through set_plan_option("keep", [...]), which checks the names.
  std::vector<std::string> keep;
  bool prune = true;                    // false: estimate every candidate and count every fit
  // Called every progress_every evaluations with the work done so far (PlanStats);
  // returning false stops the search, which then reports itself stopped ("cancelled: ...").
  std::function<bool(const PlanStats&)> on_progress;
  int64_t progress_every = 10000;

  bool searches(PlanKnob knob) const { return (search >> unsigned(knob)) & 1u; }
  bool keeps(FieldName field) const {
    for (const std::string& f : keep)
      if (f == field.text) return true;
    return false;
  }
};

// One layout that fits, with its memory on the most-loaded GPU.
struct PlanEntry {
  Config config;                      // the base with the layout applied, as resolve() gave it
  double metric_bytes = 0;            // the figure that was fitted (options.metric)
  double allocated_bytes = 0;         // Estimate::total_bytes
  double reserved_bytes = 0;          // trainmem profile only (0 otherwise)
  double device_bytes = 0;            // trainmem profile only (0 otherwise)
  double weight_and_optimizer_bytes = 0;
  double activation_bytes = 0;
  double headroom_bytes = 0;          // gpu_memory_bytes − metric_bytes
  double headroom = 0;                // headroom_bytes / gpu_memory_bytes
  int64_t most_loaded_stage = 0;

  int64_t footprint() const {         // TP·PP·CP·EP: GPUs one model replica spans
    return config.tensor_model_parallel_size * config.pipeline_model_parallel_size *
           config.context_parallel_size * config.expert_model_parallel_size;
  }
};


// A solver's answer: the value (micro batch, tokens or GPUs) and the best-ranked layout that
// achieves it.
struct PlanSolution {
  bool found = false;
  int64_t value = 0;
  PlanEntry layout;
  // The answer is the search's own limit (max_seq_length, or max_micro_batch_size without a
  // global batch): more may fit.
  bool at_limit = false;
  // min-gpus: every GPU count up to this one was ruled out (the lower bound's predecessor, or the
  // last count searched when max_evaluations stopped the search).
  int64_t ruled_out = 0;
};

struct PlanResult {
  std::vector<Issue> issues;     // bad options or config; when not empty nothing else is set
  PlanOptions options;           // as run: gpus, gpus_per_node, gpu_memory_bytes and metric
                                 // filled in from the config (min-gpus: gpus is the answer)
  Profile profile = Profile::trainmem;
  double limit_bytes = 0;        // gpu_memory_bytes × (1 − headroom): what a layout may use
  std::vector<PlanEntry> layouts;  // best first, at most max_results (plan without solve)
  int64_t n_fitting = 0;         // fitting layouts found and confirmed (≥ layouts.size())
  bool counted_all = false;      // n_fitting is every fitting layout: no bound cut the search
  bool complete = false;         // false: stopped at max_evaluations; see `stopped`
  std::string stopped;           // why the search stopped early; empty when it did not
  PlanSolution solution;         // options.solve != none
  PlanStats stats;
  bool ok() const { return issues.empty(); }
};

// Searches the layouts of `base` (a resolved config: its model and training settings; its
// parallel fields are the values of knobs not searched). Never throws.
PlanResult plan(const Config& base, const PlanOptions& options);

// Sets one option by its JSON name (gpus, gpu_memory_bytes, headroom, gpus_per_node, metric,
// max_results, max_evaluations, allow_uneven_pipeline, search, keep, max_micro_batch_size, solve,
// max_seq_length, seq_length_step, max_gpus, prune, progress_every). Sizes accept a number of
// bytes or a text such as "80GiB", "80 GB" or "85899345920". Returns the problem, naming the option.
std::optional<Issue> set_plan_option(PlanOptions& options, std::string_view name, const FieldValue& value);
// The same from command-line text: a number when the text is one, a comma-separated list for
// search and keep, "true"/"false" for booleans, else the text.
std::optional<Issue> set_plan_option_text(PlanOptions& options, std::string_view name, std::string_view text);

// "80GiB" → 85899345920: a non-negative number with an optional unit B, kB/KB, MB, GB, TB
// (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024); case-insensitive, spaces allowed.
std::optional<double> parse_byte_size(std::string_view text);

// Parse the config JSON, resolve it and plan. `option_issues` (from set_plan_option) are
// reported first, together with the config's, so that every problem shows at once.
PlanResult plan_request(std::string_view config_json, const PlanOptions& options,
                        std::vector<Issue> option_issues = {});

// Everything in one call: config JSON + options JSON → the plan as JSON, or
// {"ok": false, "issues": [...]}. Never throws.
std::string plan_json(std::string_view config_json, std::string_view options_json);

// A successful plan as JSON (keys in README.md) and as the CLI's text table.
std::string plan_to_json(const PlanResult& result, int indent = -1);
std::string plan_text(const PlanResult& result);

// The fields a layout sets over its base config, as JSON ({"tensor_model_parallel_size": 8, …};
// null for a field the layout leaves unset): merged into the base, they give entry.config.
std::string plan_fields_json(const Config& layout_config);

}  // namespace trainmem
