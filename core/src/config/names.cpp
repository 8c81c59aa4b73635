// Name tables for the enumerations of config.hpp. Names are what users write in JSON; the order of
// each table follows its enumeration (append-only).
#include <array>

#include "internal.hpp"
#include "trainmem/config.hpp"

namespace trainmem {
namespace {

constexpr std::array<std::string_view, 3> k_profiles = {"megatron-bridge", "megatron-lm", "trainmem"};
// Megatron's own spellings (TransformerConfig.normalization).
constexpr std::array<std::string_view, 3> k_norms = {"LayerNorm", "RMSNorm", "none"};
constexpr std::array<std::string_view, 5> k_activations = {"gelu", "silu", "relu", "squared_relu",
                                                           "identity"};
// "none" stands for Megatron's None (no recomputation); JSON null means the same.
constexpr std::array<std::string_view, 4> k_recompute = {"none", "selective", "full", "selective_op"};
constexpr std::array<std::string_view, 4> k_frameworks = {"megatron", "deepspeed", "fsdp2", "ddp"};
constexpr std::array<std::string_view, 8> k_dtypes = {"fp32", "bf16",  "fp16", "fp8",
                                                      "mxfp8", "mxfp4", "int8", "nf4"};
constexpr std::array<std::string_view, 7> k_optimizers = {"adam", "adamw", "sgd",  "adafactor",
                                                          "adam8bit", "lion", "muon"};
constexpr std::array<std::string_view, 3> k_optimizer_implementations = {"foreach", "for-loop",
                                                                         "fused"};
constexpr std::array<std::string_view, 5> k_fp8_recipes = {"none", "delayed", "tensorwise",
                                                           "blockwise", "mxfp8"};
constexpr std::array<std::string_view, 3> k_attention_backends = {"flash", "fused", "unfused"};
constexpr std::array<std::string_view, 2> k_recompute_methods = {"uniform", "block"};
constexpr std::array<std::string_view, 3> k_schedules = {"1f1b", "interleaved", "gpipe"};
constexpr std::array<std::string_view, 2> k_pipeline_outputs = {"kept", "kept_fp32_merged"};
// Megatron's --moe-router-dtype choices this estimator models (fp64 is not).
constexpr std::array<std::string_view, 2> k_moe_router_dtypes = {"none", "fp32"};
// Megatron's --recompute-modules names.
constexpr std::array<std::string_view, 7> k_recompute_modules = {
    "core_attn", "mlp", "moe_act", "layernorm", "moe", "shared_experts", "mla_up_proj"};
constexpr std::array<std::string_view, 3> k_peft = {"none", "lora", "qlora"};
// Hugging Face PEFT's module names (LoraConfig.target_modules for Llama-style models).
constexpr std::array<std::string_view, 8> k_lora_targets = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"};
// Hugging Face's names of a causal LM's embedding and output layer (PEFT modules_to_save).
constexpr std::array<std::string_view, 2> k_saved_modules = {"embed_tokens", "lm_head"};
constexpr std::array<std::string_view, 4> k_model_implementations = {
    "megatron-core", "hf-transformers", "torchtune", "torchtitan"};
// What prepare_model_for_kbit_training left (KbitUpcast): none, PEFT's call alone, TRL's, axolotl's.
constexpr std::array<std::string_view, 4> k_kbit_upcast = {"none", "peft", "trl", "axolotl"};
constexpr std::array<std::string_view, 7> k_field_types = {"integer", "boolean", "choice",
                                                           "integer_or_list", "number", "choice_list", "integer_list"};
constexpr std::array<std::string_view, 7> k_field_groups = {
    "profile", "model", "moe", "mla", "training", "parallelism", "finetuning"};

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
              complete<RecomputeModule>(k_recompute_modules) && complete<Peft>(k_peft) &&
              complete<LoraTarget>(k_lora_targets) && complete<SavedModule>(k_saved_modules) &&
              complete<ModelImplementation>(k_model_implementations) &&
              complete<KbitUpcast>(k_kbit_upcast) &&
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
template <> std::span<const std::string_view> enum_names<RecomputeModule>() { return k_recompute_modules; }
template <> std::span<const std::string_view> enum_names<Peft>() { return k_peft; }
template <> std::span<const std::string_view> enum_names<LoraTarget>() { return k_lora_targets; }
template <> std::span<const std::string_view> enum_names<SavedModule>() { return k_saved_modules; }
template <> std::span<const std::string_view> enum_names<ModelImplementation>() {
  return k_model_implementations;
}
template <> std::span<const std::string_view> enum_names<KbitUpcast>() { return k_kbit_upcast; }
template <> std::span<const std::string_view> enum_names<FieldType>() { return k_field_types; }
template <> std::span<const std::string_view> enum_names<FieldGroup>() { return k_field_groups; }

}  // namespace trainmem
