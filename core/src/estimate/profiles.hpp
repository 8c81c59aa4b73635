// The reference profiles' internals: each computes the model state on the most-loaded GPU and
// the activation bytes; estimate.cpp assembles them into an Estimate. Not public API.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "trainmem/estimate.hpp"

namespace trainmem::detail {

void append_note(Trace& trace, std::string_view name, double value, std::string_view formula);
// Appends to the trace when one is being kept; nothing else happens on the fast path.
inline void note(Trace* trace, std::string_view name, double value, std::string_view formula) {
  if (trace) [[unlikely]] append_note(*trace, name, value, formula);
}

// Both reference formulas scale the first stage's activations by the pipeline schedule
// (reference §3.5 step 5, §4.3): × (1 + (p − 1)/(p·v)) with VPP (the interleaving penalty),
// else × min(1, num_microbatches / p) when PP > 1 and the number of microbatches is known.
// `profile` prefixes the trace names ("bridge", "lm").
double reference_schedule_factor(const Config& config, int64_t num_microbatches, Trace* trace,
                                 std::string_view profile);

// Fills the reference's two model-state components from est.params: "dense parameters and
// optimizer" and, when there are routed experts, "routed expert parameters and optimizer".
void set_components(Estimate& est, double dense_bytes_per_parameter, double dense_bytes,
                    double dense_shard, double expert_bytes_per_parameter, double expert_bytes,
                    double expert_shard);

struct ModelState {
  ParamCounts params;
  LayerCounts layers;
  double dense_shard = 1, expert_shard = 1;  // optimizer shard sizes
  double dense_bpp = 18, expert_bpp = 18;    // bytes per parameter
  bool independent_maxima = false;           // Bridge quirk 1 applies
};

// `stages`, when given, receives every pipeline stage's parameters (PP > 1).
ModelState bridge_model_state(const Config& config, Trace* trace, std::vector<StageParams>* stages);
double bridge_activation(const Config& config, int64_t num_microbatches, Trace* trace);

ModelState lm_model_state(const Config& config, Trace* trace);
double lm_activation(const Config& config, int64_t num_microbatches, Trace* trace);
// Profile trainmem: the whole estimate; `stages`, when given, receives every stage's figures.
Estimate trainmem_estimate(const Config& config, bool include_activation, Trace* trace,
                           std::vector<StageParams>* stages);

// trainmem, with gpu_memory_bytes: the fewest GPUs that could hold one replica's model state and
// one microbatch's activations, else 0. From `now` (the config's own estimate) when the config
// already is one replica on one GPU; else it takes a second estimate, so it is computed only when
// the run is above the headroom line (when the question is asked: it does not fit), else 0.
double minimum_devices(const Config& config, const Estimate& now, Trace* trace);

// Counts one trainmem-profile pass (estimator_passes).
void count_trainmem_pass();

// trainmem, paged optimizer: the part of the paged states (`paged` bytes, in unified memory) the
// GPU holds when everything else on it takes `device_without_paged`: all of them without a
// capacity (capacity <= 0), else what the capacity leaves; the driver pages the rest out to CPU
// memory (trainmem_profile.cpp's paged states: bitsandbytes functional.py, 01327aa0, get_paged,
// cudaMallocManaged). The only part of an estimate that depends on the GPU's capacity.
inline double paged_resident_bytes(double capacity, double device_without_paged, double paged) {
  if (!(capacity > 0)) return paged;
  return std::clamp(capacity - device_without_paged, 0.0, paged);
}

// Whether Optimizer.zero_grad(set_to_none=True) frees the gradients after each step (the default
// since PyTorch 2.0, torch/optim/optimizer.py): fsdp2, and ddp unless its .grad tensors are views
// of the reducer's buckets (gradient_as_bucket_view at DP > 1). Megatron's main_grad buffer and
// DeepSpeed's gradient partitions stay for the whole run.
bool zero_grad_frees_gradients(const Config& config);
// trainmem: whether the step's forward runs without gradients (they are freed after each step).
bool gradients_start_each_step_empty(const Config& config);

// Megatron-LM uses the SP formula only with sequence parallelism and selective recompute.
bool lm_uses_sp_formula(const Config& config);

}  // namespace trainmem::detail
