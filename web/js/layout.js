// How the form is laid out: its sections. Labels, link keys, types, ranges, units, defaults and
// help text come from the core's field specs (engine.fieldSpecs: each field's row), and which fields mean something for a
// config from the core's field rows (engine.fieldsInEffect); nothing here duplicates them. A field
// the core adds later and this table does not list still appears, in its group's "More" list.

/**
 * Page sections in order. `fields` are shown; `more` go under a collapsed "More" disclosure.
 * `groups` lists the core field groups whose unlisted fields land in this section's "More".
 */
const SECTIONS = [
  // What a fine-tuner knows first (issue 32, item 5): the GPU, the method, how many GPUs, the
  // sequence and batch, the framework and checkpointing. The model is the preset above the form.
  // `mount`: the section is index.html's own (#section-run, which holds the GPU select), and its
  // fields go into that grid after the GPU.
  {
    id: 'run',
    title: 'Your run',
    mount: 'run-grid',
    groups: [],
    fields: ['peft', 'world_size', 'seq_length', 'micro_batch_size', 'framework', 'recompute_granularity'],
    more: [],
  },
  {
    id: 'model',
    title: 'Model',
    groups: ['model', 'moe', 'mla'],
    fields: ['num_layers', 'hidden_size', 'num_attention_heads', 'num_query_groups', 'kv_channels',
      'ffn_hidden_size', 'vocab_size', 'gated_linear_unit', 'activation_func',
      'share_embeddings_and_output_weights', 'num_moe_experts', 'moe_ffn_hidden_size',
      'moe_router_topk', 'moe_shared_expert_intermediate_size', 'moe_layer_freq', 'mtp_num_layers',
      'multi_latent_attention', 'q_lora_rank', 'kv_lora_rank', 'qk_head_dim',
      'qk_pos_emb_head_dim', 'v_head_dim'],
    more: ['normalization', 'add_bias_linear', 'swiglu', 'make_vocab_size_divisible_by',
      'should_pad_vocab', 'moe_latent_size', 'moe_shared_expert_gate'],
  },
  {
    id: 'parallelism',
    title: 'Parallelism',
    groups: ['parallelism'],
    fields: ['tensor_model_parallel_size', 'pipeline_model_parallel_size', 'data_parallel_size',
      'context_parallel_size', 'expert_model_parallel_size', 'expert_tensor_parallel_size',
      'virtual_pipeline_model_parallel_size', 'num_layers_in_first_pipeline_stage',
      'num_layers_in_last_pipeline_stage', 'pipeline_stage_layers', 'sequence_parallel', 'use_distributed_optimizer'],
    more: [],
  },
  {
    id: 'training',
    title: 'Training',
    groups: ['training', 'profile'],
    fields: ['global_batch_size', 'profile'],
    more: ['num_microbatches'],
  },
  // The sections below hold fields only the trainmem profile reads (the core marks them
  // trainmem_only); they are hidden with the reference profiles.
  {
    id: 'framework',
    title: 'Framework and precision',
    groups: [],
    fields: ['zero_stage', 'data_parallel_shard_size', 'params_dtype', 'compute_dtype',
      'master_weights', 'fp8_recipe', 'fp8_param_gather', 'expert_params_dtype'],
    more: ['main_params_dtype', 'main_grads_dtype', 'exp_avg_dtype', 'exp_avg_sq_dtype',
      'zero_init', 'contiguous_gradients', 'reduce_bucket_size', 'overlap_comm', 'additional_buffer_factor',
      'gradient_as_bucket_view', 'gpus_per_node'],
  },
  {
    id: 'optimizer',
    title: 'Optimizer and offload',
    groups: [],
    fields: ['optimizer', 'momentum', 'optimizer_implementation', 'optimizer_offload_fraction', 'offload_params'],
    more: [],
  },
  {
    id: 'activations',
    title: 'Activations',
    groups: [],
    fields: ['attention_backend', 'recompute_method', 'recompute_num_layers', 'recompute_modules',
      'pipeline_schedule', 'pipeline_outputs', 'cross_entropy_loss_fusion'],
    more: ['checkpoint_reentrant', 'op_sac_saves_cudnn_attention', 'attention_dropout', 'hidden_dropout',
      'moe_expert_capacity_factor'],
  },
  {
    id: 'finetuning',
    title: 'Fine-tuning',
    groups: ['finetuning'],
    fields: ['model_implementation', 'lora_target_modules', 'lora_rank', 'optimizer_in_backward',
      'activation_offload', 'paged_optimizer', 'torch_compile', 'cross_entropy_chunks', 'fused_linear_cross_entropy',
      'cut_cross_entropy'],
    more: ['lora_modules_to_save', 'lora_dropout', 'nf4_double_quant', 'quantize_lm_head', 'kbit_upcast', 'bnb_keeps_matmul_input'],
  },
  {
    id: 'runtime',
    title: 'Runtime overheads',
    groups: [],
    fields: ['allocator_fragmentation', 'cuda_context_bytes', 'nccl_bytes_per_communicator',
      'nccl_nvls', 'workspace_bytes'],
    more: [],
  },
];

/**
 * How a choice reads in the form where the core's name alone is a framework's word: recompute is
 * what FSDP, torchtitan and Hugging Face users call activation checkpointing.
 */
export const CHOICE_LABELS = {
  peft: { none: 'full fine-tuning', lora: 'LoRA', qlora: 'QLoRA (4-bit base)' },
  recompute_granularity: {
    none: 'none (no checkpointing)',
    selective: 'selective (attention)',
    full: 'full (every layer)',
    selective_op: 'per-op (torchtitan)',
  },
};

/** Core fields the page sets itself instead of showing them (the Hardware section owns capacity). */
const NOT_SHOWN = new Set(['gpu_memory_bytes']);

/** Fields a preset describes (the model); choosing a preset resets exactly these. */
export const MODEL_GROUPS = new Set(['model', 'moe', 'mla']);

/**
 * Each section's shown fields and its "More" list, in page order, as the core's specs fill them:
 * a field the core does not know is left out, one it adds later goes to its group's "More".
 * @param {Map<string, object>} specs the core's field specs by name
 * @returns {{section: object, fields: string[], more: string[]}[]}
 */
export function sectionFields(specs) {
  const placed = new Set([...SECTIONS.flatMap((s) => [...s.fields, ...s.more]), ...NOT_SHOWN]);
  return SECTIONS.map((section) => {
    const extra = [...specs.values()]
      .filter((s) => section.groups.includes(s.group) && !placed.has(s.name))
      .map((s) => s.name);
    return {
      section,
      fields: section.fields.filter((n) => specs.has(n)),
      more: [...section.more, ...extra].filter((n) => specs.has(n)),
    };
  });
}

const pageOrders = new WeakMap();
/** Every field the form shows, in page order (built once per specs: asked on every keystroke). */
function pageOrder(specs) {
  if (!pageOrders.has(specs)) pageOrders.set(specs, sectionFields(specs).flatMap((s) => [...s.fields, ...s.more]));
  return pageOrders.get(specs);
}

/**
 * The fields in effect, in page order: what the form shows and what a view sends to the core.
 * Which fields mean something is the core's answer (engine.fieldsInEffect, core fields_in_effect:
 * each field row's condition), not a rule of the page's.
 * @param {Map<string, object>} specs the core's field specs by name
 * @param {Set<string>} inEffect the names the core says mean something
 */
export function fieldsInPageOrder(specs, inEffect) {
  return pageOrder(specs).filter((name) => inEffect.has(name));
}
