// Where Megatron puts decoder layers. The pipeline has p × v virtual stages (v = 1 without
// interleaving); virtual stage s runs on rank s % p as its chunk s / p and holds the layers that
// follow those of stages 0 … s − 1 (Megatron's PipelineParallelLayerLayout.get_layer_offset,
// megatron/core/transformer/pipeline_parallel_layer_layout.py; reference §3.3 for the even and
// first/last splits, which are the special cases below).
//  - pipeline_stage_layers: the counts as given, one per virtual stage.
//  - Otherwise rank r holds count(r) layers (the first and last ranks theirs, the others the rest
//    evenly), dealt in v rounds of count(r) / v: Megatron's --decoder-first/last-pipeline-num-layers
//    with --num-virtual-stages-per-pipeline-rank.
// The split without a list is arithmetic (no allocation: the planner builds millions of these).
#pragma once

#include <cstdint>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem::detail {

struct PipelineLayout {
  int64_t p = 1, rounds = 1, first = 0, last = 0, middle = 0;
  const std::vector<int64_t>* list = nullptr;  // pipeline_stage_layers, when given
  std::vector<int64_t> list_offset;            // with a list: the layers before each stage

  explicit PipelineLayout(const Config& c)
      : p(c.pipeline_model_parallel_size),
        rounds(c.virtual_pipeline_model_parallel_size > 0 ? c.virtual_pipeline_model_parallel_size
                                                          : 1),
        first(c.num_layers_in_first_pipeline_stage),
        last(c.num_layers_in_last_pipeline_stage) {
    if (!c.pipeline_stage_layers.empty() && int64_t(c.pipeline_stage_layers.size()) == p * rounds) {
      list = &c.pipeline_stage_layers;
      list_offset.resize(list->size());
      int64_t before = 0;
      for (size_t s = 0; s < list->size(); ++s) {
        list_offset[s] = before;
        before += (*list)[s];
      }
      return;
    }
    const int64_t rest_stages = p - (first ? 1 : 0) - (last ? 1 : 0);
    middle = rest_stages ? (c.num_layers - first - last) / rest_stages : 0;
  }

  // Decoder layers on rank r, over its chunks.
  int64_t count(int64_t r) const {
    if (!list) return rank_share(r);
    int64_t n = 0;
    for (int64_t k = 0; k < rounds; ++k) n += (*list)[size_t(k * p + r)];
    return n;
  }
  // visit(layer index, round (virtual chunk), position of the layer in its chunk), in the order
  // the rank's forward pass runs them.
  template <class F>
  void for_each_layer(int64_t r, F&& visit) const {
    if (list) {
      for (int64_t k = 0; k < rounds; ++k) {
        const int64_t s = k * p + r, from = list_offset[size_t(s)], n = (*list)[size_t(s)];
        for (int64_t i = 0; i < n; ++i) visit(from + i, k, i);
      }
      return;
    }
    // Every chunk of the rank alike: round k's chunk starts one round's layers after round k − 1's,
    // behind the chunks of the ranks before r.
    const int64_t n = rank_share(r) / rounds;
    const int64_t per_round = (rank_share(0) + (p > 1 ? rank_share(p - 1) + (p - 2) * middle : 0)) / rounds;
    const int64_t before = r == 0 ? 0 : rank_share(0) / rounds + (r - 1) * (middle / rounds);
    for (int64_t k = 0, from = before; k < rounds; ++k, from += per_round)
      for (int64_t i = 0; i < n; ++i) visit(from + i, k, i);
  }

 private:
  int64_t rank_share(int64_t r) const {
    if (r == 0 && first) return first;
    if (r == p - 1 && last) return last;
    return middle;
  }
};

}  // namespace trainmem::detail
