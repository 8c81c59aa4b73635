// What the two writers of a result share: estimate_to_json (json_io.cpp, the JSON document) and
// write_result_slots (slots.cpp, the page's numbers; slots.hpp has their layout). The keys of the
// rows both write, in their order, are written here once; slot_tables() names them for
// web/js/slots.js. No JSON library here: the estimator module links slots.cpp without one.
#pragma once

#include <string_view>

#include "trainmem/estimate.hpp"

namespace trainmem::detail {

// One figure of a struct under its JSON key.
template <class T>
struct FigureRow {
  std::string_view key;
  double T::*member;
};

// A model-state component's figures, after its name and kind ("components").
inline constexpr FigureRow<ModelStateComponent> k_component_figures[] = {
    {"parameter_count", &ModelStateComponent::parameter_count},
    {"parameter_count_per_gpu", &ModelStateComponent::parameter_count_per_gpu},
    {"bytes_per_parameter", &ModelStateComponent::bytes_per_parameter},
    {"optimizer_shard_size", &ModelStateComponent::optimizer_shard_size},
    {"memory_bytes", &ModelStateComponent::memory_bytes}};

// The parameter counts ("params"); the adapters' counts are not written.
inline constexpr FigureRow<ParamCounts> k_param_rows[] = {
    {"total", &ParamCounts::total},
    {"dense_transformer", &ParamCounts::dense_transformer},
    {"embedding", &ParamCounts::embedding},
    {"routed_experts", &ParamCounts::routed_experts},
    {"active", &ParamCounts::active},
    {"per_gpu", &ParamCounts::per_gpu},
    {"stored_per_gpu", &ParamCounts::stored_per_gpu},
    {"dense_per_gpu", &ParamCounts::dense_per_gpu},
    {"embedding_per_gpu", &ParamCounts::embedding_per_gpu},
    {"routed_per_gpu", &ParamCounts::routed_per_gpu}};

// The caching allocator's bytes ("overheads.allocator_bytes", reserved − allocated): the
// estimator's own caching_allocator line (trainmem profile; 0 without one).
inline double allocator_bytes(const Estimate& est) {
  for (int i = 0; i < est.n_overhead_lines; ++i)
    if (est.overhead_lines[size_t(i)].key == k_overhead_keys[0]) return est.overhead_lines[size_t(i)].bytes;
  return 0;
}

}  // namespace trainmem::detail
