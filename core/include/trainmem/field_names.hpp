// Every field's name as a constant (field::seq_length), so that code naming a field — the
// field table's rows, the importers, the planner — does not compile with a misspelt one. The list
// is the field table's, in its order: a row names itself with its constant (config/fields.cpp,
// FieldNames::name is a FieldName), and a test checks that every constant has a row. A new field
// is one line here and its row.
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
#define TRAINMEM_FIELD(name) inline constexpr FieldName name{#name};
TRAINMEM_FIELD(profile)
TRAINMEM_FIELD(num_layers)
TRAINMEM_FIELD(hidden_size)
TRAINMEM_FIELD(num_attention_heads)
TRAINMEM_FIELD(num_query_groups)
TRAINMEM_FIELD(kv_channels)
TRAINMEM_FIELD(ffn_hidden_size)
TRAINMEM_FIELD(vocab_size)
TRAINMEM_FIELD(make_vocab_size_divisible_by)
TRAINMEM_FIELD(max_position_embeddings)
TRAINMEM_FIELD(should_pad_vocab)
TRAINMEM_FIELD(share_embeddings_and_output_weights)
TRAINMEM_FIELD(gated_linear_unit)
TRAINMEM_FIELD(activation_func)
TRAINMEM_FIELD(swiglu)
TRAINMEM_FIELD(normalization)
TRAINMEM_FIELD(add_bias_linear)
TRAINMEM_FIELD(add_qkv_bias)
TRAINMEM_FIELD(qk_layernorm)
TRAINMEM_FIELD(attention_sinks)
TRAINMEM_FIELD(num_moe_experts)
TRAINMEM_FIELD(moe_layer_freq)
TRAINMEM_FIELD(moe_ffn_hidden_size)
TRAINMEM_FIELD(moe_router_topk)
TRAINMEM_FIELD(moe_routing_imbalance)
TRAINMEM_FIELD(moe_shared_expert_intermediate_size)
TRAINMEM_FIELD(moe_latent_size)
TRAINMEM_FIELD(moe_shared_expert_gate)
TRAINMEM_FIELD(moe_fused_expert_params)
TRAINMEM_FIELD(mtp_num_layers)
TRAINMEM_FIELD(multi_latent_attention)
TRAINMEM_FIELD(q_lora_rank)
TRAINMEM_FIELD(kv_lora_rank)
TRAINMEM_FIELD(qk_head_dim)
TRAINMEM_FIELD(qk_pos_emb_head_dim)
TRAINMEM_FIELD(v_head_dim)
TRAINMEM_FIELD(seq_length)
TRAINMEM_FIELD(micro_batch_size)
TRAINMEM_FIELD(global_batch_size)
TRAINMEM_FIELD(num_microbatches)
TRAINMEM_FIELD(use_distributed_optimizer)
TRAINMEM_FIELD(sequence_parallel)
TRAINMEM_FIELD(recompute_granularity)
TRAINMEM_FIELD(framework)
TRAINMEM_FIELD(model_implementation)
TRAINMEM_FIELD(zero_stage)
TRAINMEM_FIELD(data_parallel_shard_size)
TRAINMEM_FIELD(fsdp_version)
TRAINMEM_FIELD(gpus_per_node)
TRAINMEM_FIELD(params_dtype)
TRAINMEM_FIELD(expert_params_dtype)
TRAINMEM_FIELD(compute_dtype)
TRAINMEM_FIELD(master_weights)
TRAINMEM_FIELD(main_params_dtype)
TRAINMEM_FIELD(main_grads_dtype)
TRAINMEM_FIELD(exp_avg_dtype)
TRAINMEM_FIELD(exp_avg_sq_dtype)
TRAINMEM_FIELD(fp8_recipe)
TRAINMEM_FIELD(fp8_param_gather)
TRAINMEM_FIELD(optimizer)
TRAINMEM_FIELD(optimizer_implementation)
TRAINMEM_FIELD(momentum)
TRAINMEM_FIELD(optimizer_offload_fraction)
TRAINMEM_FIELD(offload_params)
TRAINMEM_FIELD(fsdp_embedding_units)
TRAINMEM_FIELD(zero_init)
TRAINMEM_FIELD(reduce_bucket_size)
TRAINMEM_FIELD(contiguous_gradients)
TRAINMEM_FIELD(overlap_comm)
TRAINMEM_FIELD(additional_buffer_factor)
TRAINMEM_FIELD(gradient_as_bucket_view)
TRAINMEM_FIELD(gpu_memory_bytes)
TRAINMEM_FIELD(allocator_fragmentation)
TRAINMEM_FIELD(cuda_context_bytes)
TRAINMEM_FIELD(nccl_bytes_per_communicator)
TRAINMEM_FIELD(nccl_nvls)
TRAINMEM_FIELD(workspace_bytes)
TRAINMEM_FIELD(attention_backend)
TRAINMEM_FIELD(op_sac_saves_cudnn_attention)
TRAINMEM_FIELD(attention_dropout)
TRAINMEM_FIELD(hidden_dropout)
TRAINMEM_FIELD(moe_expert_capacity_factor)
TRAINMEM_FIELD(moe_pad_expert_input_to_capacity)
TRAINMEM_FIELD(moe_router_dtype)
TRAINMEM_FIELD(moe_permute_fusion)
TRAINMEM_FIELD(recompute_method)
TRAINMEM_FIELD(recompute_num_layers)
TRAINMEM_FIELD(recompute_modules)
TRAINMEM_FIELD(pipeline_schedule)
TRAINMEM_FIELD(pipeline_outputs)
TRAINMEM_FIELD(cross_entropy_loss_fusion)
TRAINMEM_FIELD(tensor_model_parallel_size)
TRAINMEM_FIELD(pipeline_model_parallel_size)
TRAINMEM_FIELD(virtual_pipeline_model_parallel_size)
TRAINMEM_FIELD(num_layers_in_first_pipeline_stage)
TRAINMEM_FIELD(num_layers_in_last_pipeline_stage)
TRAINMEM_FIELD(pipeline_stage_layers)
TRAINMEM_FIELD(context_parallel_size)
TRAINMEM_FIELD(expert_model_parallel_size)
TRAINMEM_FIELD(expert_tensor_parallel_size)
TRAINMEM_FIELD(data_parallel_size)
TRAINMEM_FIELD(world_size)
TRAINMEM_FIELD(peft)
TRAINMEM_FIELD(lora_rank)
TRAINMEM_FIELD(lora_target_modules)
TRAINMEM_FIELD(lora_modules_to_save)
TRAINMEM_FIELD(lora_dropout)
TRAINMEM_FIELD(nf4_double_quant)
TRAINMEM_FIELD(quantize_lm_head)
TRAINMEM_FIELD(bnb_keeps_matmul_input)
TRAINMEM_FIELD(kbit_upcast)
TRAINMEM_FIELD(optimizer_in_backward)
TRAINMEM_FIELD(activation_offload)
TRAINMEM_FIELD(paged_optimizer)
TRAINMEM_FIELD(torch_compile)
TRAINMEM_FIELD(cross_entropy_chunks)
TRAINMEM_FIELD(fused_linear_cross_entropy)
TRAINMEM_FIELD(cut_cross_entropy)
TRAINMEM_FIELD(transformers_loss)
TRAINMEM_FIELD(model_output_kept)
TRAINMEM_FIELD(eval_micro_batch_size)
TRAINMEM_FIELD(eval_kv_cache)
#undef TRAINMEM_FIELD

// All of them, in the field table's order (a test holds the two lists equal).
inline constexpr FieldName all[] = {
    profile,
    num_layers,
    hidden_size,
    num_attention_heads,
    num_query_groups,
    kv_channels,
    ffn_hidden_size,
    vocab_size,
    make_vocab_size_divisible_by,
    max_position_embeddings,
    should_pad_vocab,
    share_embeddings_and_output_weights,
    gated_linear_unit,
    activation_func,
    swiglu,
    normalization,
    add_bias_linear,
    add_qkv_bias,
    qk_layernorm,
    attention_sinks,
    num_moe_experts,
    moe_layer_freq,
    moe_ffn_hidden_size,
    moe_router_topk,
    moe_routing_imbalance,
    moe_shared_expert_intermediate_size,
    moe_latent_size,
    moe_shared_expert_gate,
    moe_fused_expert_params,
    mtp_num_layers,
    multi_latent_attention,
    q_lora_rank,
    kv_lora_rank,
    qk_head_dim,
    qk_pos_emb_head_dim,
    v_head_dim,
    seq_length,
    micro_batch_size,
    global_batch_size,
    num_microbatches,
    use_distributed_optimizer,
    sequence_parallel,
    recompute_granularity,
    framework,
    model_implementation,
    zero_stage,
    data_parallel_shard_size,
    fsdp_version,
    gpus_per_node,
    params_dtype,
    expert_params_dtype,
    compute_dtype,
    master_weights,
    main_params_dtype,
    main_grads_dtype,
    exp_avg_dtype,
    exp_avg_sq_dtype,
    fp8_recipe,
    fp8_param_gather,
    optimizer,
    optimizer_implementation,
    momentum,
    optimizer_offload_fraction,
    offload_params,
    fsdp_embedding_units,
    zero_init,
    reduce_bucket_size,
    contiguous_gradients,
    overlap_comm,
    additional_buffer_factor,
    gradient_as_bucket_view,
    gpu_memory_bytes,
    allocator_fragmentation,
    cuda_context_bytes,
    nccl_bytes_per_communicator,
    nccl_nvls,
    workspace_bytes,
    attention_backend,
    op_sac_saves_cudnn_attention,
    attention_dropout,
    hidden_dropout,
    moe_expert_capacity_factor,
    moe_pad_expert_input_to_capacity,
    moe_router_dtype,
    moe_permute_fusion,
    recompute_method,
    recompute_num_layers,
    recompute_modules,
    pipeline_schedule,
    pipeline_outputs,
    cross_entropy_loss_fusion,
    tensor_model_parallel_size,
    pipeline_model_parallel_size,
    virtual_pipeline_model_parallel_size,
    num_layers_in_first_pipeline_stage,
    num_layers_in_last_pipeline_stage,
    pipeline_stage_layers,
    context_parallel_size,
    expert_model_parallel_size,
    expert_tensor_parallel_size,
    data_parallel_size,
    world_size,
    peft,
    lora_rank,
    lora_target_modules,
    lora_modules_to_save,
    lora_dropout,
    nf4_double_quant,
    quantize_lm_head,
    bnb_keeps_matmul_input,
    kbit_upcast,
    optimizer_in_backward,
    activation_offload,
    paged_optimizer,
    torch_compile,
    cross_entropy_chunks,
    fused_linear_cross_entropy,
    cut_cross_entropy,
    transformers_loss,
    model_output_kept,
    eval_micro_batch_size,
    eval_kv_cache,
};
}  // namespace field

}  // namespace trainmem
