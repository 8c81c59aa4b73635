// Name tables for the enumerations of config.hpp. Names are what users write in JSON; the order of
// each table follows its enumeration (append-only).
#include <array>

#include "config/name_tables.hpp"
#include "internal.hpp"
#include "trainmem/config.hpp"

namespace trainmem {
namespace {
template <class E, size_t N>
constexpr bool complete(const std::array<std::string_view, N>&) {
  return N == size_t(E::count);
}
static_assert(complete<Profile>(k_profiles) && complete<Normalization>(k_norms) &&
              complete<ActivationFunc>(k_activations) &&
              complete<RecomputeGranularity>(k_recompute) && complete<Framework>(k_frameworks) &&
              complete<Dtype>(k_dtypes) && complete<Optimizer>(k_optimizers) &&
              complete<OptimizerImplementation>(k_optimizer_implementations) &&
              complete<Fp8Recipe>(k_fp8_recipes) &&
              complete<AttentionBackend>(k_attention_backends) &&
              complete<RecomputeMethod>(k_recompute_methods) &&
              complete<PipelineSchedule>(k_schedules) &&
              complete<PipelineOutputs>(k_pipeline_outputs) &&
              complete<MoeRouterDtype>(k_moe_router_dtypes) &&
              complete<MoeTokenDispatcher>(k_moe_token_dispatchers) &&
              complete<MoeRouterScoreFunction>(k_moe_router_score_functions) &&
              complete<RecomputeModule>(k_recompute_modules) && complete<Peft>(k_peft) &&
              complete<LoraTarget>(k_lora_targets) && complete<SavedModule>(k_saved_modules) &&
              complete<ModelImplementation>(k_model_implementations) &&
              complete<KbitUpcast>(k_kbit_upcast) && complete<TransformersLoss>(k_transformers_loss) &&
              complete<EvalPredictions>(k_eval_predictions) &&
              k_field_types.size() == 7 && k_field_groups.size() == 7,
              "one name per enumerator");

}  // namespace

template <> std::span<const std::string_view> enum_names<Profile>() { return k_profiles; }
template <> std::span<const std::string_view> enum_names<Normalization>() { return k_norms; }
template <> std::span<const std::string_view> enum_names<ActivationFunc>() { return k_activations; }
template <> std::span<const std::string_view> enum_names<RecomputeGranularity>() { return k_recompute; }
template <> std::span<const std::string_view> enum_names<Framework>() { return k_frameworks; }
template <> std::span<const std::string_view> enum_names<Dtype>() { return k_dtypes; }
template <> std::span<const std::string_view> enum_names<Optimizer>() { return k_optimizers; }
template <> std::span<const std::string_view> enum_names<OptimizerImplementation>() {
  return k_optimizer_implementations;
}
template <> std::span<const std::string_view> enum_names<Fp8Recipe>() { return k_fp8_recipes; }
template <> std::span<const std::string_view> enum_names<AttentionBackend>() { return k_attention_backends; }
template <> std::span<const std::string_view> enum_names<RecomputeMethod>() { return k_recompute_methods; }
template <> std::span<const std::string_view> enum_names<PipelineSchedule>() { return k_schedules; }
template <> std::span<const std::string_view> enum_names<PipelineOutputs>() { return k_pipeline_outputs; }
template <> std::span<const std::string_view> enum_names<MoeRouterDtype>() { return k_moe_router_dtypes; }
template <> std::span<const std::string_view> enum_names<MoeTokenDispatcher>() { return k_moe_token_dispatchers; }
template <> std::span<const std::string_view> enum_names<MoeRouterScoreFunction>() { return k_moe_router_score_functions; }
template <> std::span<const std::string_view> enum_names<RecomputeModule>() { return k_recompute_modules; }
template <> std::span<const std::string_view> enum_names<Peft>() { return k_peft; }
template <> std::span<const std::string_view> enum_names<LoraTarget>() { return k_lora_targets; }
template <> std::span<const std::string_view> enum_names<SavedModule>() { return k_saved_modules; }
template <> std::span<const std::string_view> enum_names<ModelImplementation>() {
  return k_model_implementations;
}
template <> std::span<const std::string_view> enum_names<KbitUpcast>() { return k_kbit_upcast; }
template <> std::span<const std::string_view> enum_names<TransformersLoss>() { return k_transformers_loss; }
template <> std::span<const std::string_view> enum_names<EvalPredictions>() { return k_eval_predictions; }
template <> std::span<const std::string_view> enum_names<FieldType>() { return k_field_types; }
template <> std::span<const std::string_view> enum_names<FieldGroup>() { return k_field_groups; }

}  // namespace trainmem
