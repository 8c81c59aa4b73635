// Where Megatron puts decoder layers: stage r holds count(r) layers; with v virtual stages the
// layers are dealt in v rounds, each round giving every stage, in order, its next count(r)/v
// layers (interleaved schedule chunks). Even and uneven splits alike (reference §3.3).
#pragma once

#include <cstdint>

#include "trainmem/config.hpp"

namespace trainmem::detail {

struct PipelineLayout {
  int64_t p = 1, rounds = 1, first = 0, last = 0, middle = 0;

  explicit PipelineLayout(const Config& c)
      : p(c.pipeline_model_parallel_size),
        rounds(c.virtual_pipeline_model_parallel_size > 0 ? c.virtual_pipeline_model_parallel_size
                                                          : 1),
        first(c.num_layers_in_first_pipeline_stage),
        last(c.num_layers_in_last_pipeline_stage) {
    const int64_t rest_stages = p - (first ? 1 : 0) - (last ? 1 : 0);
    middle = rest_stages ? (c.num_layers - first - last) / rest_stages : 0;
  }

  int64_t count(int64_t r) const {
    if (r == 0 && first) return first;
    if (r == p - 1 && last) return last;
    return middle;
  }
  // Layers of one round that come before stage r's chunk.
  int64_t chunk_offset(int64_t r) const {
    if (r == 0) return 0;
    return count(0) / rounds + (r - 1) * (middle / rounds);
  }
  int64_t layers_per_round() const {
    return p == 1 ? count(0) / rounds : (count(0) + count(p - 1) + (p - 2) * middle) / rounds;
  }
  // visit(layer index, round (virtual chunk), position of the layer in its chunk).
  template <class F>
  void for_each_layer(int64_t r, F&& visit) const {
    const int64_t per_round = layers_per_round();
    const int64_t chunk = count(r) / rounds;
    for (int64_t k = 0; k < rounds; ++k)
      for (int64_t i = 0; i < chunk; ++i) visit(k * per_round + chunk_offset(r) + i, k, i);
  }
};

}  // namespace trainmem::detail
