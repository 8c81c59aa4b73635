// Where Megatron puts decoder layers. The pipeline has p × v virtual stages (v = 1 without
// interleaving); virtual stage s runs on rank s % p as its chunk s / p and holds the layers that
// follow those of stages 0 … s − 1 (Megatron's PipelineParallelLayerLayout.get_layer_offset,
// megatron/core/transformer/pipeline_parallel_layer_layout.py; reference §3.3 for the even and
// first/last splits, which are the special cases below).
//  - pipeline_stage_layers: the counts as given, one per virtual stage.
//  - Otherwise rank r holds count(r) layers (the first and last ranks theirs, the others the rest
//    evenly), dealt in v rounds of count(r) / v: Megatron's --decoder-first/last-pipeline-num-layers
//    with --num-virtual-stages-per-pipeline-rank.
#pragma once

#include <cstdint>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem::detail {

struct PipelineLayout {
  int64_t p = 1, rounds = 1;
  // Decoder layers of virtual stage s = k·p + r, and the layers of the stages before it.
  std::vector<int64_t> stage_layers, offset;
  std::vector<int64_t> rank_layers;  // per rank, over its chunks

  explicit PipelineLayout(const Config& c)
      : p(c.pipeline_model_parallel_size),
        rounds(c.virtual_pipeline_model_parallel_size > 0 ? c.virtual_pipeline_model_parallel_size
                                                          : 1) {
    const size_t stages = size_t(p * rounds);
    if (c.pipeline_stage_layers.size() == stages) {
      stage_layers = c.pipeline_stage_layers;
    } else {
      const int64_t first = c.num_layers_in_first_pipeline_stage;
      const int64_t last = c.num_layers_in_last_pipeline_stage;
      const int64_t rest_stages = p - (first ? 1 : 0) - (last ? 1 : 0);
      const int64_t middle = rest_stages ? (c.num_layers - first - last) / rest_stages : 0;
      stage_layers.resize(stages);
      for (int64_t k = 0; k < rounds; ++k)
        for (int64_t r = 0; r < p; ++r) {
          const int64_t on_rank = r == 0 && first ? first : r == p - 1 && last ? last : middle;
          stage_layers[size_t(k * p + r)] = on_rank / rounds;
        }
    }
    offset.resize(stages);
    rank_layers.assign(size_t(p), 0);
    int64_t before = 0;
    for (size_t s = 0; s < stages; ++s) {
      offset[s] = before;
      before += stage_layers[s];
      rank_layers[s % size_t(p)] += stage_layers[s];
    }
  }

  int64_t count(int64_t r) const { return rank_layers[size_t(r)]; }
  // visit(layer index, round (virtual chunk), position of the layer in its chunk), in the order
  // the rank's forward pass runs them.
  template <class F>
  void for_each_layer(int64_t r, F&& visit) const {
    for (int64_t k = 0; k < rounds; ++k) {
      const size_t s = size_t(k * p + r);
      for (int64_t i = 0; i < stage_layers[s]; ++i) visit(offset[s] + i, k, i);
    }
  }
};

}  // namespace trainmem::detail
