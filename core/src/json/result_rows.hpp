// Rows of figures the result schema (result_schema.hpp) walks: a struct's members under their keys,
// in their order, and the small helpers its writers share. No JSON library here: the estimator
// module links slots.cpp without one.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string_view>

#include "trainmem/estimate.hpp"

namespace trainmem::detail {

// One figure of a struct under its JSON key.
template <class T>
struct FigureRow {
  std::string_view key;
  double T::*member;
};

// A model-state component's figures, after its name and kind and before its memory_bytes, which
// the activation's row has too ("components").
inline constexpr FigureRow<ModelStateComponent> k_component_figures[] = {
    {"parameter_count", &ModelStateComponent::parameter_count},
    {"parameter_count_per_gpu", &ModelStateComponent::parameter_count_per_gpu},
    {"bytes_per_parameter", &ModelStateComponent::bytes_per_parameter},
    {"optimizer_shard_size", &ModelStateComponent::optimizer_shard_size}};

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

// A figure that is not set: JSON's null, the slots' NaN.
inline constexpr double k_not_a_number = std::numeric_limits<double>::quiet_NaN();

// The position of `name` in a table of names; k_no_entry when it is not there (the slot writer
// names that as the core's own mistake; the schema's default elements have no name).
inline constexpr size_t k_no_entry = size_t(-1);
inline size_t index_of(std::span<const std::string_view> names, std::string_view name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  return k_no_entry;
}

// The caching allocator's bytes ("overheads.allocator_bytes", reserved − allocated): the
// estimator's own caching_allocator line (trainmem profile; 0 without one).
inline double allocator_bytes(const Estimate& est) {
  for (int i = 0; i < est.n_overhead_lines; ++i)
    if (est.overhead_lines[size_t(i)].key == k_overhead_keys[0]) return est.overhead_lines[size_t(i)].bytes;
  return 0;
}

}  // namespace trainmem::detail
