// Every field's name as a constant (field::seq_length), so that code naming a field — the
// field table's rows, the importers, the planner — does not compile with a misspelt one. The list
// is the field table's, in its order: a row names itself with its constant (config/fields.cpp,
// FieldNames::name is a FieldName), and a test checks that every constant has a row. A new field
// is one line of the list here and its row.
#pragma once

#include <string_view>

namespace trainmem {

// A field's name. Made only from the constants below or, where a name arrives at run time (a
// Megatron flag's table, a loop over dtype fields), from a constant too; no conversion from a
// string literal, so "seq_lenght" is a compile error, not an ignored key.
struct FieldName {
  std::string_view text;
  constexpr operator std::string_view() const { return text; }
};

namespace field {
// The list, once: the constants and `all` below are both made from it.
#define TRAINMEM_FIELD_NAMES(X) \
  X(profile) \
  X(num_layers) \
  X(hidden_size) \
  X(num_attention_heads) \
  X(num_query_groups) \
  X(kv_channels) \
  X(ffn_hidden_size) \
  X(vocab_size) \
  X(make_vocab_size_divisible_by) \
  X(max_position_embeddings) \
  X(rotary_percent) \
  X(should_pad_vocab) \
  X(share_embeddings_and_output_weights) \
  X(gated_linear_unit) \
  X(activation_func) \
  X(swiglu) \
  X(normalization) \
  X(add_bias_linear) \
  X(add_qkv_bias) \
  X(qk_layernorm) \
  X(attention_sinks) \
  X(num_moe_experts) \
  X(moe_layer_freq) \
  X(moe_ffn_hidden_size) \
  X(moe_router_topk) \
  X(moe_routing_imbalance) \
  X(moe_shared_expert_intermediate_size) \
  X(moe_latent_size) \
  X(moe_shared_expert_gate) \
  X(moe_fused_expert_params) \
  X(mtp_num_layers) \
  X(multi_latent_attention) \
  X(q_lora_rank) \
  X(kv_lora_rank) \
  X(qk_head_dim) \
  X(qk_pos_emb_head_dim) \
  X(v_head_dim) \
  X(seq_length) \
  X(micro_batch_size) \
  X(global_batch_size) \
  X(num_microbatches) \
  X(use_distributed_optimizer) \
  X(sequence_parallel) \
  X(recompute_granularity) \
  X(framework) \
  X(model_implementation) \
  X(zero_stage) \
  X(data_parallel_shard_size) \
  X(fsdp_version) \
  X(fsdp1_checkpoint_around_unit) \
  X(gpus_per_node) \
  X(params_dtype) \
  X(expert_params_dtype) \
  X(compute_dtype) \
  X(master_weights) \
  X(main_params_dtype) \
  X(main_grads_dtype) \
  X(exp_avg_dtype) \
  X(exp_avg_sq_dtype) \
  X(fp8_recipe) \
  X(fp8_param_gather) \
  X(store_param_remainders) \
  X(optimizer) \
  X(optimizer_implementation) \
  X(momentum) \
  X(optimizer_offload_fraction) \
  X(offload_params) \
  X(fsdp_embedding_units) \
  X(zero_init) \
  X(reduce_bucket_size) \
  X(contiguous_gradients) \
  X(overlap_comm) \
  X(additional_buffer_factor) \
  X(gradient_as_bucket_view) \
  X(gpu_memory_bytes) \
  X(allocator_fragmentation) \
  X(expandable_segments) \
  X(cuda_context_bytes) \
  X(nccl_bytes_per_communicator) \
  X(nccl_nvls) \
  X(workspace_bytes) \
  X(attention_backend) \
  X(op_sac_saves_cudnn_attention) \
  X(attention_dropout) \
  X(hidden_dropout) \
  X(moe_expert_capacity_factor) \
  X(moe_pad_expert_input_to_capacity) \
  X(moe_router_dtype) \
  X(moe_permute_fusion) \
  X(moe_token_dispatcher_type) \
  X(moe_router_score_function) \
  X(moe_router_enable_expert_bias) \
  X(recompute_method) \
  X(recompute_num_layers) \
  X(recompute_modules) \
  X(checkpoint_reentrant) \
  X(pipeline_schedule) \
  X(pipeline_outputs) \
  X(cross_entropy_loss_fusion) \
  X(tensor_model_parallel_size) \
  X(pipeline_model_parallel_size) \
  X(virtual_pipeline_model_parallel_size) \
  X(num_layers_in_first_pipeline_stage) \
  X(num_layers_in_last_pipeline_stage) \
  X(pipeline_stage_layers) \
  X(context_parallel_size) \
  X(expert_model_parallel_size) \
  X(expert_tensor_parallel_size) \
  X(data_parallel_size) \
  X(world_size) \
  X(peft) \
  X(lora_rank) \
  X(lora_target_modules) \
  X(lora_modules_to_save) \
  X(lora_dropout) \
  X(lora_expert_dtype) \
  X(nf4_double_quant) \
  X(quantize_lm_head) \
  X(bnb_keeps_matmul_input) \
  X(kbit_upcast) \
  X(optimizer_in_backward) \
  X(activation_offload) \
  X(paged_optimizer) \
  X(torch_compile) \
  X(cross_entropy_chunks) \
  X(fused_linear_cross_entropy) \
  X(cut_cross_entropy) \
  X(transformers_loss) \
  X(model_output_kept) \
  X(eval_micro_batch_size) \
  X(eval_kv_cache) \
  X(eval_predictions) \
  X(eval_samples) \
  X(eval_accumulation_steps)

#define TRAINMEM_FIELD_CONSTANT(name) inline constexpr FieldName name{#name};
TRAINMEM_FIELD_NAMES(TRAINMEM_FIELD_CONSTANT)
#undef TRAINMEM_FIELD_CONSTANT

// All of them, in the field table's order (a test holds them equal to the rows).
#define TRAINMEM_FIELD_ENTRY(name) name,
inline constexpr FieldName all[] = {TRAINMEM_FIELD_NAMES(TRAINMEM_FIELD_ENTRY)};
#undef TRAINMEM_FIELD_ENTRY
#undef TRAINMEM_FIELD_NAMES
}  // namespace field

}  // namespace trainmem
