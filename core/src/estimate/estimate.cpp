// Assembles a profile's model state and activation into an Estimate, and the Bridge-compatible
// entry points and text formats around it.
#include "trainmem/estimate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <ostream>
#include <span>
#include <stdexcept>

#include "config/messages.hpp"
#include "profiles.hpp"

namespace trainmem {
namespace {

using detail::ModelState;

ModelState model_state(const Config& c, Trace* trace,
                       std::vector<StageParams>* stages = nullptr) {
  return c.profile == Profile::megatron_lm ? detail::lm_model_state(c, trace)
                                           : detail::bridge_model_state(c, trace, stages);
}

double activation(const Config& c, int64_t num_microbatches, Trace* trace) {
  return c.profile == Profile::megatron_lm ? detail::lm_activation(c, num_microbatches, trace)
                                           : detail::bridge_activation(c, num_microbatches, trace);
}

// Splits `params` (all with the same bytes-per-parameter) into tensor classes, following the
// byte model of reference §3.4: weight 2 B, fp32 main gradient 4 B, fp32 master weight 4 B and
// Adam m, v 8 B; the last two divided by the optimizer shard when the optimizer is distributed.
void add_state(StateBreakdown& state, double PartBytes::*part, double params, double shard,
               bool distributed, bool lm) {
  // Bridge guards the shard with max(1, n); Megatron-LM does not (n >= 1 is validated anyway).
  const double n = distributed ? (lm ? shard : std::max(1.0, shard)) : 1.0;
  state.weights.*part += 2 * params;
  state.gradients.*part += 4 * params;
  state.master_weights.*part += 4 * params / n;
  state.optimizer_states.*part += 8 * params / n;
}

// Branch-free: the estimate is on the planner's hot path.
inline void set(uint32_t& bits, Assumption a, bool on = true) {
  bits |= uint32_t(on) << unsigned(a);
}

constexpr std::array<std::string_view, size_t(Assumption::count)> k_assumption_texts = {
    "Reports the most-loaded GPU; the CUDA context, allocator caching and fragmentation, kernel "
    "and library workspaces, NCCL buffers and CUDA-graph buffers are not included.",
    "Model state uses Megatron's bf16 mixed-precision Adam byte model: 18 B per parameter "
    "(2 weight + 4 fp32 gradient + 4 fp32 master + 8 Adam) without the distributed optimizer, "
    "else 6 B plus 12 B sharded over the optimizer's data-parallel group.",
    "Embeddings sit on the first and last pipeline stages; untied input and output embeddings "
    "share a GPU only when pipeline_model_parallel_size = 1.",
    "Routed-expert parameters are sharded over expert_model_parallel_size × "
    "expert_tensor_parallel_size; their optimizer state over the expert data-parallel group "
    "(DP·TP·CP / (EP·ETP)).",
    "Dense optimizer state and activations are divided across context-parallel ranks.",
    "Activations follow Korthikanti et al. 2022 (Table 2) for sequence parallelism with selective "
    "recomputation on the first pipeline stage, whatever the configured recomputation; full "
    "recompute, offload, token imbalance and dispatcher workspaces are not modelled.",
    "The training log line omits activation memory because the run does not use both "
    "sequence_parallel and recompute_granularity = \"selective\".",
    "sequence_parallel is ignored at tensor_model_parallel_size = 1 (Megatron turns it off).",
    "Uneven pipeline stages: the dense and routed-expert maxima come from different stages and "
    "are added (the reference's quirk), so the figure exceeds every real stage.",
    "Megatron-LM shards the dense optimizer state over data_parallel_size only (not DP × CP).",
    "Megatron-LM's activation formula without sequence parallelism: s·b·h·(10 + 24/t) per layer, "
    "×1.05, and no division by TP.",
    "Megatron-LM reads neither context_parallel_size nor uneven pipeline stage sizes.",
    "Megatron-LM puts the whole multi-token-prediction block on the most-loaded shard.",
    "The most-loaded GPU is the pipeline stage whose device figure is largest (each stage's "
    "caching allocator simulated), its allocated peak (the largest moment of a step) breaking "
    "ties; every stage lists its own figures. Allocated bytes include the library workspaces; reserved and device bytes add the "
    "caching allocator, the CUDA context and NCCL buffers from their fields' documented "
    "defaults: set them from a run for the best match.",
    "Adafactor's factored statistics (rows + columns per matrix) are divided over the optimizer's "
    "shard group like per-parameter states; real implementations keep a matrix's statistics "
    "together, so a sharded figure is an approximation.",
    "Pipeline stages follow torch.distributed.pipelining (torchtitan): a receive buffer per "
    "microbatch for activations and for gradients on every stage, and on the last stage every "
    "microbatch's logits kept until the step ends (pipeline_outputs: in the compute dtype, or "
    "fp32 and concatenated once more as in December 2024); they count as activations.",
    "PEFT: the frozen base keeps no gradients, master weights or optimizer states and its "
    "linears save no inputs for weight gradients; each adapter saves its input (the base layer's "
    "own when it reads it unchanged) and its rank-wide intermediate. The first layer is counted "
    "like the others, as with enable_input_require_grads (PEFT with gradient checkpointing); "
    "the frozen embedding keeps nothing.",
    "Activation offload: the layers' saved activations are in CPU memory (cpu_bytes) except one "
    "layer's set, which the GPU keeps in flight while it copies; the output layer and the loss "
    "stay on the GPU.",
    "Paged optimizer without gpu_memory_bytes: the figure is the unpressured one, every paged "
    "state resident on the GPU. Paged states live in CUDA unified memory outside PyTorch's "
    "allocator: they are in device bytes, not in allocated or reserved bytes.",
    "Paged optimizer: the paged states keep on the GPU what gpu_memory_bytes leaves after the "
    "device figure; the rest is evicted to CPU memory (cpu_bytes). They live outside PyTorch's "
    "allocator: not in allocated or reserved bytes.",
    "Gradients do not outlive a step: the optimizer frees them (zero_grad(set_to_none=True), "
    "PyTorch's default) and, with one microbatch per step, the forward runs without them while "
    "backward makes them layer by layer as it frees the activations. The breakdown shows the "
    "gradients that exist at the peak (none at the end of the forward).",
    "PEFT modules_to_save: each named module trains as a whole copy in the base's dtype beside "
    "its frozen original (both are counted), the copy in the adapter rows with its gradients and "
    "optimizer states; a trained embedding keeps its token ids and a trained output layer its "
    "input.",
    "The job's other moments modelled for this run need less than the training step: loading a "
    "bitsandbytes 4-bit or 8-bit model with from_pretrained (the weights and one 16-bit copy of the "
    "largest quantised linear, quantised one at a time on the GPU), saving a full state dict under "
    "FSDP2 (the state without gradients and one tensor gathered whole at a time) and evaluating "
    "between steps (the evaluation batch's forward and loss under no_grad). --verbose traces their "
    "figures.",
    "The job's peak is outside the training step, while from_pretrained loads the model: "
    "bitsandbytes quantises one weight at a time on the GPU, beside the weights already loaded. "
    "The figure is that moment's; the breakdown shows the step's peak, the difference among the "
    "temporaries.",
    "The job's peak is outside the training step, while a full state dict is saved: FSDP2 gathers "
    "each tensor whole on the GPU, one at a time, beside the state at rest. The figure is that "
    "moment's; the breakdown shows the step's peak, the difference among the temporaries.",
    "The job's peak is outside the training step, in an evaluation step: transformers' Trainer "
    "runs the evaluation batch's forward and loss under no_grad after zero_grad, so nothing is "
    "saved for backward, but the batch's logits, the loss's fp32 copies and the KV cache "
    "(eval_kv_cache) exist at once. The figure is that moment's; the breakdown shows the step's "
    "peak, the difference among the temporaries.",
};

std::string fixed2(double v) { return two_decimals(v); }

}  // namespace

namespace detail {

double reference_schedule_factor(const Config& c, int64_t num_microbatches, Trace* trace,
                                 std::string_view profile) {
  const double p = double(c.pipeline_model_parallel_size);
  if (c.virtual_pipeline_model_parallel_size > 0) {
    const double penalty = 1 + (p - 1) / (p * double(c.virtual_pipeline_model_parallel_size));
    if (trace) append_note(*trace, std::string(profile) + ".interleaved_penalty", penalty, "1 + (p − 1)/(p·v)");
    return penalty;
  }
  if (c.pipeline_model_parallel_size > 1 && num_microbatches > 0) {
    const double factor = std::min(1.0, double(num_microbatches) / p);
    if (trace) append_note(*trace, std::string(profile) + ".in_flight_factor", factor, "min(1, num_microbatches / p)");
    return factor;
  }
  return 1.0;
}

void set_components(Estimate& est, double dense_bytes_per_parameter, double dense_bytes,
                    double dense_shard, double expert_bytes_per_parameter, double expert_bytes,
                    double expert_shard) {
  ModelStateComponent& dense = est.components[0];
  dense.kind = ComponentKind::dense_and_embedding;
  dense.name = component_name(ComponentKind::dense_and_embedding);
  dense.parameter_count = est.params.dense_transformer + est.params.embedding;
  dense.parameter_count_per_gpu = est.params.dense_per_gpu;
  dense.bytes_per_parameter = dense_bytes_per_parameter;
  dense.optimizer_shard_size = dense_shard;
  dense.memory_bytes = dense_bytes;
  est.n_components = 1;
  if (est.params.routed_experts > 0) {
    ModelStateComponent& routed = est.components[1];
    routed.kind = ComponentKind::routed_experts;
    routed.name = component_name(ComponentKind::routed_experts);
    routed.parameter_count = est.params.routed_experts;
    routed.parameter_count_per_gpu = est.params.routed_per_gpu;
    routed.bytes_per_parameter = expert_bytes_per_parameter;
    routed.optimizer_shard_size = expert_shard;
    routed.memory_bytes = expert_bytes;
    est.n_components = 2;
  }
}

void append_note(Trace& trace, std::string_view name, double value, std::string_view formula) {
  trace.push_back({std::string(name), value, std::string(formula)});
}
}  // namespace detail

std::string_view assumption_text(Assumption a) { return k_assumption_texts[size_t(a)]; }

std::vector<std::string_view> Estimate::assumption_texts() const {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < size_t(Assumption::count); ++i)
    if (has(Assumption(i))) out.push_back(k_assumption_texts[i]);
  return out;
}

namespace {

Estimate trainmem_profile_estimate(const Config& c, bool include_activation, Trace* trace,
                                   std::vector<StageParams>* stages = nullptr) {
  Estimate est = detail::trainmem_estimate(c, include_activation, trace, stages);
  set(est.assumptions, Assumption::trainmem_peak_and_overheads);
  set(est.assumptions, Assumption::trainmem_adafactor_local, c.optimizer == Optimizer::adafactor);
  set(est.assumptions, Assumption::trainmem_torch_pipeline, c.torch_pipelining());
  set(est.assumptions, Assumption::trainmem_peft, c.peft_on());
  set(est.assumptions, Assumption::trainmem_activation_offload, c.activation_offload);
  set(est.assumptions, Assumption::trainmem_paged_unpressured, c.paged_optimizer && !(c.gpu_memory_bytes > 0));
  set(est.assumptions, Assumption::trainmem_paged_evicted, c.paged_optimizer && c.gpu_memory_bytes > 0);
  set(est.assumptions, Assumption::trainmem_gradients_per_step, detail::gradients_start_each_step_empty(c));
  set(est.assumptions, Assumption::trainmem_peft_saved_copies, c.lora_modules_to_save != 0 && c.peft_on());
  // The job's moments outside the step (trainmem_profile.cpp job_moments), on the most-loaded
  // stage: which one is the peak, or that they are below it.
  const Moments& m = est.moments;
  const JobMoment job_peak = m.job_peak();
  set(est.assumptions, Assumption::trainmem_peak_at_loading, job_peak == JobMoment::loading);
  set(est.assumptions, Assumption::trainmem_peak_at_checkpoint_save, job_peak == JobMoment::checkpoint_save);
  set(est.assumptions, Assumption::trainmem_peak_at_evaluation, job_peak == JobMoment::evaluation);
  set(est.assumptions, Assumption::trainmem_job_moments_below,
      (m.loading > 0 || m.checkpoint_save > 0 || m.evaluation > 0) && job_peak == JobMoment(m.peak_moment));
  return est;
}

// The reference profiles (reference §3 and §4). One named result, so it is built in place.
Estimate reference_estimate(const Config& c, int64_t num_microbatches, bool include_activation,
                            Trace* trace) {
  const bool lm = c.profile == Profile::megatron_lm;
  ModelState ms = model_state(c, trace);

  Estimate est;
  est.profile = c.profile;
  est.params = ms.params;
  est.layers = ms.layers;

  detail::set_components(est, ms.dense_bpp, ms.params.dense_per_gpu * ms.dense_bpp,
                 c.use_distributed_optimizer ? ms.dense_shard : 1, ms.expert_bpp,
                 ms.params.routed_per_gpu * ms.expert_bpp,
                 c.use_distributed_optimizer ? ms.expert_shard : 1);
  for (int i = 0; i < est.n_components; ++i)
    est.weight_and_optimizer_bytes += est.components[size_t(i)].memory_bytes;

  const bool distributed = c.use_distributed_optimizer;
  add_state(est.state, &PartBytes::dense, ms.params.dense_per_gpu - ms.params.embedding_per_gpu,
            ms.dense_shard, distributed, lm);
  add_state(est.state, &PartBytes::embedding, ms.params.embedding_per_gpu, ms.dense_shard,
            distributed, lm);
  add_state(est.state, &PartBytes::expert, ms.params.routed_per_gpu, ms.expert_shard, distributed,
            lm);

  est.has_activation = include_activation;
  if (include_activation) est.activation_bytes = activation(c, num_microbatches, trace);
  est.total_bytes = est.weight_and_optimizer_bytes + est.activation_bytes;

  uint32_t& bits = est.assumptions;
  set(bits, Assumption::most_loaded_shard);
  set(bits, Assumption::bridge_byte_model);
  set(bits, Assumption::embedding_placement);
  set(bits, Assumption::routed_expert_sharding, ms.params.routed_experts > 0);
  const bool sp_selective =
      c.sequence_parallel && c.recompute_granularity == RecomputeGranularity::selective;
  if (!lm) {
    set(bits, Assumption::context_parallel_divides, c.context_parallel_size > 1);
    set(bits, Assumption::activation_sp_selective, include_activation);
    set(bits, Assumption::uneven_independent_maxima, ms.independent_maxima);
  } else {
    set(bits, Assumption::lm_dense_shard_dp_only,
        c.use_distributed_optimizer && c.context_parallel_size > 1);
    set(bits, Assumption::activation_sp_selective, include_activation && sp_selective);
    set(bits, Assumption::lm_no_sp_formula, include_activation && !sp_selective);
    set(bits, Assumption::lm_ignores_cp_and_uneven,
        c.context_parallel_size > 1 || c.uneven_pipeline());
    set(bits, Assumption::lm_mtp_on_most_loaded,
        c.mtp_num_layers > 0 && c.pipeline_model_parallel_size > 1);
  }
  set(bits, Assumption::activation_not_reported, !lm && !sp_selective);
  return est;
}

}  // namespace

Estimate estimate_training_memory(const Config& c, int64_t num_microbatches,
                                  bool include_activation, Trace* trace) {
  if (c.profile == Profile::trainmem) return trainmem_profile_estimate(c, include_activation, trace);
  return reference_estimate(c, num_microbatches, include_activation, trace);
}

namespace {

// Bridge's stages (PP > 1): each GPU of a stage holds 1/t of its dense and 1/(e·t_e) of its
// routed parameters (§3.3). Megatron-LM's formula places no layers: no stages.
std::vector<StageParams> reference_stages(const Config& c) {
  std::vector<StageParams> stages;
  if (c.profile != Profile::megatron_bridge || c.pipeline_model_parallel_size < 2) return stages;
  const ModelState ms = model_state(c, nullptr, &stages);
  for (StageParams& stage : stages)
    stage.weight_and_optimizer_bytes =
        stage.dense / double(c.tensor_model_parallel_size) * ms.dense_bpp +
        stage.routed /
            (double(c.expert_model_parallel_size) * double(c.expert_tensor_parallel_size)) *
            ms.expert_bpp;
  return stages;
}

}  // namespace

// One name per enumerator (static_assert: a new value without a name does not compile).
std::string_view component_name(ComponentKind kind) {
  static constexpr auto names = std::to_array<std::string_view>(
      {"dense parameters and optimizer", "routed expert parameters and optimizer",
       "adapter parameters and optimizer"});
  static_assert(names.size() == size_t(ComponentKind::count));
  return names[size_t(kind)];
}

std::string_view component_kind_name(ComponentKind kind) {
  static constexpr auto names =
      std::to_array<std::string_view>({"dense_and_embedding", "routed_experts", "adapters"});
  static_assert(names.size() == size_t(ComponentKind::count));
  return names[size_t(kind)];
}

std::string_view moment_name(Moment moment) {
  static constexpr auto names =
      std::to_array<std::string_view>({"forward", "backward", "optimizer_step"});
  static_assert(names.size() == size_t(Moment::count));
  return names[size_t(moment)];
}

std::string_view job_moment_name(JobMoment moment) {
  static constexpr auto names = std::to_array<std::string_view>(
      {"forward", "backward", "optimizer_step", "loading", "checkpoint_save", "evaluation"});
  static_assert(names.size() == size_t(JobMoment::count));
  return names[size_t(moment)];
}

std::vector<StageParams> pipeline_stages(const Config& c) { return full_estimate(c).stages; }

namespace {
uint64_t g_estimator_passes = 0;  // single-threaded: the module, the CLI and each planner worker
}  // namespace

uint64_t estimator_passes() { return g_estimator_passes; }
void detail::count_trainmem_pass() { ++g_estimator_passes; }

FullEstimate full_estimate(const Config& c, Trace* trace) {
  FullEstimate est;
  Estimate& pass = est;  // the one pass; the rest of a result is computed from it
  if (c.profile == Profile::trainmem) {
    std::vector<StageParams> stages;  // the same pass that finds the most-loaded stage
    pass = trainmem_profile_estimate(c, true, trace, &stages);
    est.stages = std::move(stages);
    est.minimum_devices = detail::minimum_devices(c, est, trace);
  } else {
    pass = reference_estimate(c, c.num_microbatches, true, trace);
    est.stages = reference_stages(c);
    est.params.stored_per_gpu = est.params.per_gpu;  // Megatron keeps every weight it holds
  }
  // The training log's line is Megatron's (its theoretical_memory_usage at startup): shown beside
  // the trainmem profile only for a run Megatron-LM itself would launch and log, a Megatron run
  // without PEFT adapters; a torchtune LoRA run's log has no such line to compare with.
  if (c.profile != Profile::trainmem || (c.framework == Framework::megatron && c.peft == Peft::none))
    est.reference_line = report_theoretical_memory(c, c.num_microbatches);
  est.confidence = confidence_for(c);  // trainmem profile only; unknown for the references
  if (c.gpu_memory_bytes > 0) {
    const double spread = est.confidence.known ? est.confidence.group.p90_abs_error : 0;
    const double trainmem_figures[] = {est.total_bytes, est.reserved_bytes, est.device_bytes};
    const std::span<const double> figures = c.profile == Profile::trainmem ? std::span<const double>(trainmem_figures)
                                                                           : std::span<const double>(&est.total_bytes, 1);
    for (double figure : figures) est.verdicts[size_t(est.n_verdicts++)] = fit_verdict(figure, c.gpu_memory_bytes, spread);
  }
  est.suggestions = suggest_changes(c, est);  // empty unless it has a capacity and is above the headroom line
  return est;
}

std::vector<CapacityFit> fits_at_capacities(const Config& c, const FullEstimate& est,
                                            std::span<const double> capacities) {
  std::vector<CapacityFit> out;
  const double spread = est.confidence.known ? est.confidence.group.p90_abs_error : 0;
  // Device bytes less the paged states the GPU holds at the config's own capacity (all of them
  // without one): what the capacity does not change.
  const double device_without_paged = est.device_bytes - est.paged_gpu_bytes;
  for (double capacity : capacities) {
    if (!(capacity > 0) || !std::isfinite(capacity)) continue;  // fit_verdict needs a capacity
    CapacityFit fit;
    fit.capacity_bytes = capacity;
    if (c.profile == Profile::trainmem) {
      const double paged = detail::paged_resident_bytes(capacity, device_without_paged, est.paged_optimizer_bytes);
      fit.figures = {est.total_bytes, est.reserved_bytes, device_without_paged + paged};
      fit.n_figures = 3;
    } else {
      fit.figures[0] = est.total_bytes;
      fit.n_figures = 1;
    }
    for (int i = 0; i < fit.n_figures; ++i) fit.verdicts[size_t(i)] = fit_verdict(fit.figures[size_t(i)], capacity, spread);
    out.push_back(fit);
  }
  return out;
}

double compared_figure(const Config& config, const Estimate& e) {
  return config.profile == Profile::trainmem ? e.device_bytes : e.total_bytes;
}

Config factor_only(const Config& config) {
  Config out = config;
  if (out.profile == Profile::trainmem && !out.allocator_fragmentation)
    out.allocator_fragmentation = Config::k_fragmentation_floor;
  return out;
}

FitVerdict fit_verdict(double figure_bytes, double capacity_bytes, double spread, double headroom) {
  FitVerdict v;
  v.figure_bytes = figure_bytes;
  v.capacity_bytes = capacity_bytes;
  v.headroom = headroom;
  v.spread = spread;
  v.limit_bytes = capacity_bytes * (1 - headroom);
  v.upper_bytes = figure_bytes * (1 + spread);
  if (figure_bytes > capacity_bytes) v.fit = Fit::over;
  else if (figure_bytes > v.limit_bytes) v.fit = Fit::tight, v.reason = FitReason::headroom;
  else if (v.upper_bytes > capacity_bytes) v.fit = Fit::tight, v.reason = FitReason::spread;
  return v;
}

std::string_view fit_name(Fit fit) {
  static constexpr std::string_view names[] = {"fits", "tight", "over"};
  return names[size_t(fit)];
}

std::string_view fit_reason_name(FitReason reason) {
  static constexpr std::string_view names[] = {"none", "headroom", "spread"};
  return names[size_t(reason)];
}

double compute_weight_and_optimizer_memory(const Config& config, Trace* verbose) {
  return estimate_training_memory(config, 0, false, verbose).weight_and_optimizer_bytes;
}

double compute_activation_memory(const Config& config, int64_t num_microbatches, Trace* verbose) {
  if (config.profile == Profile::trainmem)
    return estimate_training_memory(config, num_microbatches, true, verbose).activation_bytes;
  return activation(config, num_microbatches, verbose);
}

std::string format_training_memory_estimate(const Estimate& est, std::string_view unit) {
  std::string upper(unit);
  for (char& ch : upper) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  double scale = 0;
  if (upper == "MB") scale = NUM_BYTES_IN_MEGABYTE;
  else if (upper == "GB") scale = NUM_BYTES_IN_GIGABYTE;
  else throw std::invalid_argument("Unsupported memory unit: " + upper);

  std::string out = "Theoretical memory footprints: ";
  for (int i = 0; i < est.n_components; ++i) {
    const ModelStateComponent& comp = est.components[size_t(i)];
    out += std::string(comp.name) + "=" + fixed2(comp.memory_bytes / scale) + " " + upper + ", ";
  }
  if (est.has_activation) out += "activation=" + fixed2(est.activation_bytes / scale) + " " + upper + ", ";
  out += "total=" + fixed2(est.total_bytes / scale) + " " + upper;
  return out;
}

std::string report_theoretical_memory(const Config& input_config, int64_t num_microbatches,
                                      Trace* verbose) {
  // The trainmem profile prints the line Megatron-Bridge's training log would print for the
  // same model and layout, for people who compare with it.
  Config config = input_config;
  if (config.profile == Profile::trainmem) {
    // Blocks without attention, models without embeddings, no norms or no activation function
    // are outside the reference formula: it has no line for them.
    if (config.num_attention_heads == 0 || config.vocab_size == 0 ||
        config.normalization == Normalization::none ||
        config.activation_func == ActivationFunc::identity)
      return "";
    config.profile = Profile::megatron_bridge;
  }
  const bool sp_selective = config.sequence_parallel &&
                            config.recompute_granularity == RecomputeGranularity::selective;
  // Bridge reports activation only with SP + selective recompute; Megatron-LM always does (with
  // its no-SP formula otherwise).
  const bool with_activation = config.profile == Profile::megatron_lm || sp_selective;
  const Estimate est = estimate_training_memory(config, num_microbatches, with_activation, verbose);
  const double weights_mb = est.weight_and_optimizer_bytes / NUM_BYTES_IN_MEGABYTE;
  std::string line = "Theoretical memory footprints: weight and optimizer=" + fixed2(weights_mb) + " MB";
  if (!with_activation) return line;
  const double activation_mb = est.activation_bytes / NUM_BYTES_IN_MEGABYTE;
  line += ", activation=" + fixed2(activation_mb) + " MB, total=" +
          fixed2(weights_mb + activation_mb) + " MB";
  return line;
}

std::ostream& operator<<(std::ostream& os, const Estimate& est) {
  os << "Estimate{" << name_of(est.profile);
  for (int i = 0; i < est.n_components; ++i) {
    const ModelStateComponent& c = est.components[size_t(i)];
    os << ", " << c.name << "=" << c.memory_bytes << " B (" << c.parameter_count_per_gpu
       << " params × " << c.bytes_per_parameter << " B)";
  }
  if (est.has_activation) os << ", activation=" << est.activation_bytes << " B";
  os << ", total=" << est.total_bytes << " B, params.total=" << est.params.total << "}";
  return os;
}

}  // namespace trainmem
