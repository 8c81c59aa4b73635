// DeepSpeed's own model-state estimators, reproduced exactly (integer truncation included), so
// that people who size runs with them see the same figures: estimate_zero2_model_states_mem_needs
// (deepspeed/runtime/zero/stage_1_and_2.py) and estimate_zero3_model_states_mem_needs
// (deepspeed/runtime/zero/stage3.py). They count model states only (no activations), fp16/bf16
// mixed-precision Adam. Where DeepSpeed's code and its docs (docs/code-docs/source/memory.rst)
// disagree — ZeRO-2 without offload: code 2P + 18P/N, docs 4P + 16P/N — this follows the code,
// which is what the estimator prints.
#pragma once

#include <cstdint>

namespace trainmem {

struct DeepSpeedEstimate {
  double cpu_bytes = 0;  // per node
  double gpu_bytes = 0;  // per GPU
};

DeepSpeedEstimate deepspeed_zero2_estimate(double total_params, int64_t num_gpus_per_node,
                                           int64_t num_nodes, bool cpu_offload,
                                           double additional_buffer_factor = 1.5);

DeepSpeedEstimate deepspeed_zero3_estimate(double total_params, double largest_layer_params,
                                           int64_t num_gpus_per_node, int64_t num_nodes,
                                           bool cpu_offload, bool cpu_offload_params,
                                           bool zero_init, double additional_buffer_factor = 1.5);

}  // namespace trainmem
