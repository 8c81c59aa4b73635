// The enumerations' name tables (names.cpp's enum_names<E>() returns them), visible to the
// config room at compile time so that the field table (fields.cpp) is constant data, not code
// that builds it at run time (issue 31: the wasm module compiled that builder, 53 KB of code, on
// the first call).
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "trainmem/config.hpp"

namespace trainmem {


inline constexpr std::array<std::string_view, 3> k_profiles = {"megatron-bridge", "megatron-lm", "trainmem"};
// Megatron's own spellings (TransformerConfig.normalization).
inline constexpr std::array<std::string_view, 3> k_norms = {"LayerNorm", "RMSNorm", "none"};
inline constexpr std::array<std::string_view, 5> k_activations = {"gelu", "silu", "relu", "squared_relu",
                                                           "identity"};
// "none" stands for Megatron's None (no recomputation); JSON null means the same.
inline constexpr std::array<std::string_view, 4> k_recompute = {"none", "selective", "full", "selective_op"};
// How the page's form words them (FieldSpec::choice_labels): recompute is what FSDP, torchtitan
// and Hugging Face users call activation checkpointing.
inline constexpr std::array<std::string_view, k_recompute.size()> k_recompute_labels = {
    "none (no checkpointing)", "selective (attention)", "full (every layer)", "per-op (torchtitan)"};
inline constexpr std::array<std::string_view, 4> k_frameworks = {"megatron", "deepspeed", "fsdp2", "ddp"};
inline constexpr std::array<std::string_view, 8> k_dtypes = {"fp32", "bf16",  "fp16", "fp8",
                                                      "mxfp8", "mxfp4", "int8", "nf4"};
inline constexpr std::array<std::string_view, 7> k_optimizers = {"adam", "adamw", "sgd",  "adafactor",
                                                          "adam8bit", "lion", "muon"};
inline constexpr std::array<std::string_view, 3> k_optimizer_implementations = {"foreach", "for-loop",
                                                                         "fused"};
inline constexpr std::array<std::string_view, 5> k_fp8_recipes = {"none", "delayed", "tensorwise",
                                                           "blockwise", "mxfp8"};
inline constexpr std::array<std::string_view, 3> k_attention_backends = {"flash", "fused", "unfused"};
inline constexpr std::array<std::string_view, 2> k_recompute_methods = {"uniform", "block"};
inline constexpr std::array<std::string_view, 3> k_schedules = {"1f1b", "interleaved", "gpipe"};
inline constexpr std::array<std::string_view, 2> k_pipeline_outputs = {"kept", "kept_fp32_merged"};
// Megatron's --moe-router-dtype choices this estimator models (fp64 is not).
inline constexpr std::array<std::string_view, 2> k_moe_router_dtypes = {"none", "fp32"};
inline constexpr std::array<std::string_view, 2> k_moe_token_dispatchers = {"alltoall", "allgather"};
// Megatron's --moe-router-score-function choices this estimator models (sqrtsoftplus is not).
inline constexpr std::array<std::string_view, 2> k_moe_router_score_functions = {"softmax", "sigmoid"};
// Megatron's --recompute-modules names.
inline constexpr std::array<std::string_view, 7> k_recompute_modules = {
    "core_attn", "mlp", "moe_act", "layernorm", "moe", "shared_experts", "mla_up_proj"};
inline constexpr std::array<std::string_view, 3> k_peft = {"none", "lora", "qlora"};
// How the page's form words each method (FieldSpec::choice_labels).
inline constexpr std::array<std::string_view, k_peft.size()> k_peft_labels = {"full fine-tuning", "LoRA",
                                                                             "QLoRA (4-bit base)"};
// Hugging Face PEFT's module names (LoraConfig.target_modules for Llama-style models).
inline constexpr std::array<std::string_view, 8> k_lora_targets = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"};
// Hugging Face's names of a causal LM's embedding and output layer (PEFT modules_to_save).
inline constexpr std::array<std::string_view, 2> k_saved_modules = {"embed_tokens", "lm_head"};
inline constexpr std::array<std::string_view, 4> k_model_implementations = {
    "megatron-core", "hf-transformers", "torchtune", "torchtitan"};
// What prepare_model_for_kbit_training left (KbitUpcast): none, PEFT's call alone, TRL's, axolotl's.
inline constexpr std::array<std::string_view, 4> k_kbit_upcast = {"none", "peft", "trl", "axolotl"};
inline constexpr std::array<std::string_view, 3> k_transformers_loss = {"pad-labels", "shift-logits", "upcast-in-model"};
inline constexpr std::array<std::string_view, 3> k_eval_predictions = {"none", "logits", "argmax"};
inline constexpr std::array<std::string_view, 7> k_field_types = {"integer", "boolean", "choice",
                                                           "integer_or_list", "number", "choice_list", "integer_list"};
inline constexpr std::array<std::string_view, 7> k_field_groups = {
    "profile", "model", "moe", "mla", "training", "parallelism", "finetuning"};
inline constexpr std::array<std::string_view, 10> k_form_sections = {
    "none", "run", "model", "parallelism", "training", "framework", "optimizer", "activations", "finetuning", "runtime"};


// Every enumeration with a name table, and its table: the one list enum_table() below and
// names.cpp's enum_names<E>() are made from, so a new enumeration is its table and one line here.
#define TRAINMEM_ENUM_TABLES(X)                                                                   \
  X(Profile, k_profiles)                                                                          \
  X(Normalization, k_norms)                                                                       \
  X(ActivationFunc, k_activations)                                                                \
  X(RecomputeGranularity, k_recompute)                                                            \
  X(Framework, k_frameworks)                                                                      \
  X(Dtype, k_dtypes)                                                                              \
  X(Optimizer, k_optimizers)                                                                      \
  X(OptimizerImplementation, k_optimizer_implementations)                                         \
  X(Fp8Recipe, k_fp8_recipes)                                                                     \
  X(AttentionBackend, k_attention_backends)                                                       \
  X(RecomputeMethod, k_recompute_methods)                                                         \
  X(PipelineSchedule, k_schedules)                                                                \
  X(PipelineOutputs, k_pipeline_outputs)                                                          \
  X(MoeRouterDtype, k_moe_router_dtypes)                                                          \
  X(MoeTokenDispatcher, k_moe_token_dispatchers)                                                  \
  X(MoeRouterScoreFunction, k_moe_router_score_functions)                                         \
  X(RecomputeModule, k_recompute_modules)                                                         \
  X(Peft, k_peft)                                                                                 \
  X(LoraTarget, k_lora_targets)                                                                   \
  X(SavedModule, k_saved_modules)                                                                 \
  X(ModelImplementation, k_model_implementations)                                                 \
  X(KbitUpcast, k_kbit_upcast)                                                                    \
  X(TransformersLoss, k_transformers_loss)                                                        \
  X(EvalPredictions, k_eval_predictions)                                                          \
  X(FieldType, k_field_types)                                                                     \
  X(FieldGroup, k_field_groups)                                                                   \
  X(FormSection, k_form_sections)

// An enumeration's names as a constant span (the same table enum_names<E>() returns).
template <class E>
constexpr std::span<const std::string_view> enum_table() {
  using T = E;
#define TRAINMEM_ENUM_TABLE_CASE(E, table) \
  if constexpr (std::is_same_v<T, E>) return table; else
  TRAINMEM_ENUM_TABLES(TRAINMEM_ENUM_TABLE_CASE)
#undef TRAINMEM_ENUM_TABLE_CASE
  static_assert(sizeof(T) == 0, "no name table");
}

}  // namespace trainmem
