// DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py), line by line.
// Python's int() truncates toward zero: std::trunc.
#include "trainmem/deepspeed.hpp"

#include <algorithm>
#include <cmath>

namespace trainmem {

DeepSpeedEstimate deepspeed_zero2_estimate(double total_params, int64_t num_gpus_per_node,
                                           int64_t num_nodes, bool cpu_offload,
                                           double additional_buffer_factor) {
  const double total_gpus = double(num_nodes) * double(num_gpus_per_node);
  DeepSpeedEstimate out;
  if (cpu_offload) {
    out.gpu_bytes = 2 * total_params;
    out.cpu_bytes = total_params * std::max(4 * total_gpus, 16.0) * additional_buffer_factor;
  } else {
    // GPU multipliers: 2 = 16-bit params; 18 = 16-bit grads 2 + fp32 grads 4 + fp32 params 4 +
    // optimizer states 8 (the code's own comment).
    out.gpu_bytes = 2 * total_params + std::trunc(18 * total_params / total_gpus);
    out.cpu_bytes = total_params * 4 * double(num_gpus_per_node) * additional_buffer_factor;
  }
  out.cpu_bytes = std::trunc(out.cpu_bytes);
  out.gpu_bytes = std::trunc(out.gpu_bytes);
  return out;
}

DeepSpeedEstimate deepspeed_zero3_estimate(double total_params, double largest_layer_params,
                                           int64_t num_gpus_per_node, int64_t num_nodes,
                                           bool cpu_offload, bool cpu_offload_params,
                                           bool zero_init, double additional_buffer_factor) {
  const double total_gpus = double(num_nodes) * double(num_gpus_per_node);
  const double gpus_factor = 1.0 / double(num_nodes);
  const double gpus_per_node = double(num_gpus_per_node);
  // The largest layer is gathered whole: 16-bit params and 16-bit grads.
  const double largest_layer_memory = 4 * largest_layer_params;
  DeepSpeedEstimate out;
  if (cpu_offload) {
    if (cpu_offload_params) {
      out.gpu_bytes = largest_layer_memory;
      out.cpu_bytes = zero_init ? total_params * 18 * gpus_factor * additional_buffer_factor
                                : total_params * std::max(4 * gpus_per_node, 18 * gpus_factor) *
                                      additional_buffer_factor;
    } else {
      out.gpu_bytes = largest_layer_memory + std::trunc(2 * total_params / total_gpus);
      out.cpu_bytes = zero_init ? total_params * 16 * gpus_factor * additional_buffer_factor
                                : total_params * std::max(4 * gpus_per_node, 16 * gpus_factor) *
                                      additional_buffer_factor;
    }
  } else {
    out.gpu_bytes = largest_layer_memory + std::trunc(18 * total_params / total_gpus);
    out.cpu_bytes = zero_init ? largest_layer_params * 4 * gpus_per_node * additional_buffer_factor
                              : total_params * 4 * gpus_per_node * additional_buffer_factor;
  }
  out.cpu_bytes = std::trunc(out.cpu_bytes);
  out.gpu_bytes = std::trunc(out.gpu_bytes);
  return out;
}

}  // namespace trainmem
