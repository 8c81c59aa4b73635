// Name tables for the enumerations of config.hpp. Names are what users write in JSON.
#include <array>

#include "trainmem/config.hpp"

namespace trainmem {
namespace {

template <class E, size_t N>
std::string_view lookup(const std::array<std::string_view, N>& names, E value) {
  static_assert(N == size_t(E::count), "one name per enumerator");
  return names[size_t(value)];
}

template <class E, size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& names, std::string_view text) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) return E(i);
  return std::nullopt;
}

constexpr std::array<std::string_view, 2> k_profiles = {"megatron-bridge", "megatron-lm"};
// Megatron's own spellings (TransformerConfig.normalization).
constexpr std::array<std::string_view, 2> k_norms = {"LayerNorm", "RMSNorm"};
constexpr std::array<std::string_view, 4> k_activations = {"gelu", "silu", "relu", "squared_relu"};
// "none" stands for Megatron's None (no recomputation); JSON null means the same.
constexpr std::array<std::string_view, 3> k_recompute = {"none", "selective", "full"};
constexpr std::array<std::string_view, 4> k_field_types = {"integer", "boolean", "choice",
                                                           "integer_or_list"};
constexpr std::array<std::string_view, 6> k_field_groups = {"profile",  "model",    "moe",
                                                            "mla",      "training", "parallelism"};

}  // namespace

std::string_view name_of(Profile v) { return lookup(k_profiles, v); }
std::string_view name_of(Normalization v) { return lookup(k_norms, v); }
std::string_view name_of(ActivationFunc v) { return lookup(k_activations, v); }
std::string_view name_of(RecomputeGranularity v) { return lookup(k_recompute, v); }
std::string_view name_of(FieldType v) {
  static_assert(k_field_types.size() == 4);
  return k_field_types[size_t(v)];
}
std::string_view name_of(FieldGroup v) {
  static_assert(k_field_groups.size() == 6);
  return k_field_groups[size_t(v)];
}

std::optional<Profile> profile_from_name(std::string_view s) { return parse<Profile>(k_profiles, s); }
std::optional<Normalization> normalization_from_name(std::string_view s) {
  return parse<Normalization>(k_norms, s);
}
std::optional<ActivationFunc> activation_from_name(std::string_view s) {
  return parse<ActivationFunc>(k_activations, s);
}
std::optional<RecomputeGranularity> recompute_from_name(std::string_view s) {
  return parse<RecomputeGranularity>(k_recompute, s);
}

const std::array<std::string_view, 2>& profile_names() { return k_profiles; }
const std::array<std::string_view, 2>& normalization_names() { return k_norms; }
const std::array<std::string_view, 4>& activation_names() { return k_activations; }
const std::array<std::string_view, 3>& recompute_names() { return k_recompute; }

}  // namespace trainmem
