// trainmem: GPU-memory estimates for training large language models.
//
// This header is the input side of the estimator: the configuration as a user writes it
// (`ConfigInput`, every field optional, field names are Megatron's), the field table that
// documents each field (type, unit, range, default), and `resolve()`, which validates an input
// and fills unset fields the way Megatron Core resolves them, producing a `Config`.
//
// Data flows one way: JSON / JS object -> ConfigInput (set_field) -> resolve() -> Config ->
// estimate (estimate.hpp) -> Estimate -> formatting (report.hpp, json_io.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace trainmem {

// One problem with the input. `field` is the Megatron field name it concerns; `message` starts
// with that name and states the rule, e.g. "num_layers: must be divisible by
// pipeline_model_parallel_size (4), got 30".
struct Issue {
  std::string field;
  std::string message;
  // The other fields the rule involves, as the rule declares them (resolve.cpp): a link's restore
  // drops the field most issues involve, and a form marks them. Not part of equality: two rules
  // finding one problem are one issue.
  std::vector<std::string> related;
  // The rule's stable id ("peft/qlora-framework") for the rules that are rows (config/rules.cpp),
  // so a page answers a rule without reading its message; empty for the others. Not part of
  // equality either.
  std::string rule;
  friend bool operator==(const Issue& a, const Issue& b) { return a.field == b.field && a.message == b.message; }
};

// Enumerations are append-only; each has a name table (names.cpp) used for parsing and printing.
enum class Profile : uint8_t { megatron_bridge, megatron_lm, trainmem, count };
enum class Normalization : uint8_t { layer_norm, rms_norm, none, count };  // none: trainmem only
enum class ActivationFunc : uint8_t { gelu, silu, relu, squared_relu, identity, count };  // identity: trainmem only
enum class RecomputeGranularity : uint8_t { none, selective, full, selective_op, count };
// Training framework whose memory behaviour the trainmem profile follows.
enum class Framework : uint8_t { megatron, deepspeed, fsdp2, ddp, count };
// Storage formats; bytes per element (block scales included) are in the dtype table.
// nf4: bitsandbytes / torchao 4-bit NormalFloat with double-quantised block scales (QLoRA).
enum class Dtype : uint8_t { fp32, bf16, fp16, fp8, mxfp8, mxfp4, int8, nf4, count };
enum class Optimizer : uint8_t { adam, adamw, sgd, adafactor, adam8bit, lion, muon, count };
// How a torch.optim optimizer steps (its foreach / fused arguments; torchtitan's
// optimizer.implementation names): the temporaries of the step differ.
enum class OptimizerImplementation : uint8_t { foreach, for_loop, fused, count };
enum class Fp8Recipe : uint8_t { none, delayed, tensorwise, blockwise, mxfp8, count };
enum class AttentionBackend : uint8_t { flash, fused, unfused, count };
enum class RecomputeMethod : uint8_t { uniform, block, count };
enum class PipelineSchedule : uint8_t { one_f_one_b, interleaved, gpipe, count };
// What torch.distributed.pipelining's last stage keeps of the model outputs during a step.
enum class PipelineOutputs : uint8_t { kept, kept_fp32_merged, count };
// Megatron's --moe-router-dtype: the dtype the MoE router's gating GEMM writes its logits in
// (none: the input's, i.e. the compute dtype).
enum class MoeRouterDtype : uint8_t { none, fp32, count };
// Megatron's --moe-token-dispatcher-type: the all-to-all dispatcher, or the all-gather one, which
// gathers every token of the expert-TP x EP group onto each GPU (flex, DeepEP's, is refused).
enum class MoeTokenDispatcher : uint8_t { alltoall, allgather, count };
// Megatron's --moe-router-score-function: how the router turns its logits into scores (softmax
// over the experts, or an independent sigmoid per expert, DeepSeek-V3's and GLM-4.5's).
enum class MoeRouterScoreFunction : uint8_t { softmax, sigmoid, count };
// Megatron's --recompute-modules; a set of them is a bit mask (bit i: RecomputeModule(i)).
enum class RecomputeModule : uint8_t {
  core_attn, mlp, moe_act, layernorm, moe, shared_experts, mla_up_proj, count
};
// Parameter-efficient fine-tuning (trainmem profile): the base weights frozen, low-rank adapters
// trained (LoRA); QLoRA also stores the frozen base linears in NF4.
enum class Peft : uint8_t { none, lora, qlora, count };
// The linear layers LoRA adapters attach to, by their Hugging Face PEFT names; a set of them is a
// bit mask (bit i: LoraTarget(i)).
enum class LoraTarget : uint8_t {
  q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head, count
};
// Modules PEFT trains whole beside the adapters (LoraConfig.modules_to_save), by the Hugging Face
// names of a causal LM's input embedding and output layer; a set of them is a bit mask.
enum class SavedModule : uint8_t { embed_tokens, lm_head, count };
// Whose model code runs the layers (trainmem profile): what autograd saves follows that code's op
// sequence (activations.cpp). megatron-core: Megatron Core's fused Transformer Engine layers;
// hf-transformers: Hugging Face transformers' modeling code (the Llama family's eager ops);
// torchtune: torchtune's modules (llama3 builders); torchtitan: torchtitan's models.
enum class ModelImplementation : uint8_t { megatron_core, hf_transformers, torchtune, torchtitan, count };
// How QLoRA keeps the parameters bitsandbytes does not quantise (embeddings, lm_head, norms, biases):
// as loaded (none); all upcast to fp32 by PEFT's prepare_model_for_kbit_training (peft); that, then
// TRL's peft_module_casting_to_bf16 (trl: norms fp32, embeddings and lm_head back to bf16); axolotl's
// patched call and its cast back (axolotl: embeddings, lm_head and norms in the training dtype).
enum class KbitUpcast : uint8_t { none, peft, trl, axolotl, count };
// Which causal-LM loss a transformers model runs (docs/trainmem-profile.md §8): labels padded
// (pad_labels, after transformers PR #35646), the upcast logits copied shifted (shift_logits,
// 4.46 to 4.48), or the model's forward upcasting its logits to fp32 and shifting them
// (upcast_in_model, 4.45 and earlier).
enum class TransformersLoss : uint8_t { pad_labels, shift_logits, upcast_in_model, count };
// What transformers' Trainer keeps of each evaluation step for compute_metrics: nothing but the
// loss (no compute_metrics, or prediction_loss_only), the logits, or the token ids a
// preprocess_logits_for_metrics such as logits.argmax(-1) leaves (int64 per token).
enum class EvalPredictions : uint8_t { none, logits, argmax, count };
enum class FieldType : uint8_t { integer, boolean, choice, integer_or_list, number, choice_list, integer_list };
// The types whose values (or list entries) have a numeric range (FieldSpec::min, max).
constexpr bool has_range(FieldType t) {
  return t == FieldType::integer || t == FieldType::integer_or_list || t == FieldType::integer_list ||
         t == FieldType::number;
}
enum class FieldGroup : uint8_t { profile, model, moe, mla, training, parallelism, finetuning };
// The sections of the page's form, where a field's input sits (web/js/layout.js titles them and
// sets their order). none: the page sets the field itself and shows no input for it (the GPU's
// capacity comes from its GPU picker).
enum class FormSection : uint8_t {
  none, run, model, parallelism, training, framework, optimizer, activations, finetuning, runtime, count
};
// Where the page's form shows a field: its section, among the section's inputs or under its
// "More" disclosure, and its place there (smaller first; unique within the section).
struct FormPlace {
  FormSection section = FormSection::none;
  bool more = false;
  uint16_t order = 0;
};

// The names of an enumeration's values, in order (names.cpp).
template <class E>
std::span<const std::string_view> enum_names();
template <class E>
std::string_view name_of(E value) {
  return enum_names<E>()[size_t(value)];
}
template <class E>
std::optional<E> from_name(std::string_view text) {
  const auto names = enum_names<E>();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return E(i);
  return std::nullopt;
}

// The configuration as written: unset (JSON null or absent) fields are std::nullopt.
struct ConfigInput {
  std::optional<Profile> profile;
  // Model shape.
  std::optional<int64_t> num_layers, hidden_size, num_attention_heads, num_query_groups,
      kv_channels, ffn_hidden_size, vocab_size, make_vocab_size_divisible_by,
      max_position_embeddings;
  std::optional<double> rotary_percent;
  std::optional<bool> should_pad_vocab, share_embeddings_and_output_weights, gated_linear_unit,
      swiglu, add_bias_linear, add_qkv_bias, qk_layernorm, attention_sinks;
  std::optional<ActivationFunc> activation_func;
  std::optional<Normalization> normalization;
  // Mixture of experts and multi-token prediction.
  std::optional<int64_t> num_moe_experts, moe_layer_freq, moe_ffn_hidden_size, moe_router_topk,
      moe_shared_expert_intermediate_size, moe_latent_size, mtp_num_layers;
  std::optional<double> moe_routing_imbalance;  // trainmem profile
  std::optional<std::vector<uint8_t>> moe_layer_freq_list;  // moe_layer_freq given as a 0/1 list
  std::optional<bool> moe_shared_expert_gate;
  std::optional<bool> moe_fused_expert_params;
  std::optional<MoeRouterDtype> moe_router_dtype;
  std::optional<bool> moe_permute_fusion, moe_pad_expert_input_to_capacity;
  std::optional<MoeTokenDispatcher> moe_token_dispatcher_type;
  std::optional<MoeRouterScoreFunction> moe_router_score_function;
  std::optional<bool> moe_router_enable_expert_bias;
  // Multi-latent attention (DeepSeek), read by the megatron-lm profile.
  std::optional<bool> multi_latent_attention;
  std::optional<int64_t> q_lora_rank, kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim;
  // Training.
  std::optional<int64_t> seq_length, micro_batch_size, num_microbatches, global_batch_size;
  std::optional<bool> use_distributed_optimizer, sequence_parallel;
  std::optional<RecomputeGranularity> recompute_granularity;
  // Frameworks, precisions, optimizers and offload (read by the trainmem profile only).
  std::optional<Framework> framework;
  std::optional<int64_t> zero_stage, data_parallel_shard_size, fsdp_version, gpus_per_node;
  std::optional<bool> fsdp1_checkpoint_around_unit;
  std::optional<Dtype> params_dtype, main_params_dtype, main_grads_dtype, exp_avg_dtype,
      exp_avg_sq_dtype, compute_dtype, expert_params_dtype;
  std::optional<bool> master_weights, fp8_param_gather, store_param_remainders, offload_params, zero_init,
      gradient_as_bucket_view, nccl_nvls, fsdp_embedding_units, contiguous_gradients, overlap_comm,
      expandable_segments;
  std::optional<Fp8Recipe> fp8_recipe;
  std::optional<Optimizer> optimizer;
  std::optional<OptimizerImplementation> optimizer_implementation;
  std::optional<double> reduce_bucket_size;
  std::optional<double> momentum, optimizer_offload_fraction, additional_buffer_factor,
      gpu_memory_bytes, allocator_fragmentation, cuda_context_bytes, nccl_bytes_per_communicator,
      workspace_bytes;
  // Activations (read by the trainmem profile only).
  std::optional<AttentionBackend> attention_backend;
  std::optional<bool> op_sac_saves_cudnn_attention;
  std::optional<double> attention_dropout, hidden_dropout, moe_expert_capacity_factor;
  std::optional<RecomputeMethod> recompute_method;
  std::optional<int64_t> recompute_num_layers;
  std::optional<uint32_t> recompute_modules;  // bit mask of RecomputeModule
  std::optional<bool> checkpoint_reentrant;
  std::optional<PipelineSchedule> pipeline_schedule;
  std::optional<PipelineOutputs> pipeline_outputs;
  std::optional<bool> cross_entropy_loss_fusion;
  // Fine-tuning and memory-saving techniques (read by the trainmem profile only).
  std::optional<Peft> peft;
  std::optional<int64_t> lora_rank, cross_entropy_chunks;
  std::optional<uint32_t> lora_target_modules;  // bit mask of LoraTarget
  std::optional<uint32_t> lora_modules_to_save;  // bit mask of SavedModule
  std::optional<double> lora_dropout;
  std::optional<Dtype> lora_expert_dtype;
  std::optional<bool> optimizer_in_backward, activation_offload, paged_optimizer, torch_compile;
  std::optional<bool> fused_linear_cross_entropy;
  std::optional<bool> cut_cross_entropy, model_output_kept;
  std::optional<TransformersLoss> transformers_loss;
  std::optional<int64_t> eval_micro_batch_size;
  std::optional<bool> eval_kv_cache;
  std::optional<EvalPredictions> eval_predictions;
  std::optional<int64_t> eval_samples, eval_accumulation_steps;
  std::optional<bool> nf4_double_quant, quantize_lm_head;
  std::optional<bool> bnb_keeps_matmul_input;
  std::optional<KbitUpcast> kbit_upcast;
  std::optional<ModelImplementation> model_implementation;
  // Parallelism.
  std::optional<int64_t> tensor_model_parallel_size, pipeline_model_parallel_size,
      virtual_pipeline_model_parallel_size, num_layers_in_first_pipeline_stage,
      num_layers_in_last_pipeline_stage, context_parallel_size, expert_model_parallel_size,
      expert_tensor_parallel_size, data_parallel_size, world_size;
  std::optional<std::vector<int64_t>> pipeline_stage_layers;  // one count per virtual stage
};

// A configuration with every field resolved and validated. Counts are exact integers; a value of
// 0 stands for Megatron's None where 0 is not a legal value (virtual pipeline size, uneven stage
// sizes, latent size, q LoRA rank, number of microbatches).
struct Config {
  Profile profile = Profile::trainmem;
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_query_groups = 0;  // = num_attention_heads when unset (MHA)
  int64_t kv_channels = 0;       // = hidden_size / num_attention_heads when unset
  int64_t ffn_hidden_size = 0;   // = 4 * hidden_size when unset (see resolve())
  int64_t vocab_size = 0;
  int64_t make_vocab_size_divisible_by = 128;
  int64_t max_position_embeddings = 0;  // 0: no learned absolute position embedding
  // The fraction of each head's channels RoPE rotates (Megatron's --rotary-percent, transformers'
  // partial_rotary_factor): the rotary tables are that much narrower; q and k keep their width.
  double rotary_percent = 1.0;
  bool should_pad_vocab = false;
  bool share_embeddings_and_output_weights = true;
  bool gated_linear_unit = false;
  ActivationFunc activation_func = ActivationFunc::gelu;
  Normalization normalization = Normalization::layer_norm;
  bool add_bias_linear = true;
  bool add_qkv_bias = false;  // biases on Q, K, V only (Qwen2); implied by add_bias_linear
  bool qk_layernorm = false;  // a norm on each query and key head (Qwen3, OLMo 2)
  bool attention_sinks = false;  // a learned sink logit per head (gpt-oss's GptOssAttention.sinks)

  int64_t num_moe_experts = 0;  // 0: dense model
  int64_t moe_layer_freq = 1;
  std::vector<uint8_t> moe_layer_freq_list;  // non-empty: one 0/1 entry per layer, wins over freq
  int64_t moe_ffn_hidden_size = 0;
  int64_t moe_router_topk = 2;
  // trainmem: the tokens the most-loaded GPU's experts receive over the balanced share (1.0 =
  // perfectly balanced; no published per-GPU, per-microbatch measurement was found to default
  // from: docs/trainmem-profile.md, MoE at scale).
  double moe_routing_imbalance = 1.0;
  int64_t moe_shared_expert_intermediate_size = 0;
  int64_t moe_latent_size = 0;  // 0: no latent MoE
  bool moe_shared_expert_gate = false;
  // transformers' experts as 3D parameters indexed per expert (GptOssExperts), not one
  // nn.Linear per expert (Mixtral, Qwen-MoE); trainmem profile, hf-transformers MoE.
  bool moe_fused_expert_params = false;
  // Megatron Core's MoE dispatch (TransformerConfig defaults): the router's logits dtype, Transformer
  // Engine's fused permutation, and padding every expert to its capacity (with a capacity factor).
  MoeRouterDtype moe_router_dtype = MoeRouterDtype::none;
  bool moe_permute_fusion = false;
  bool moe_pad_expert_input_to_capacity = false;
  // The all-to-all dispatcher, which Megatron-Bridge's and NeMo's MoE recipes and ms-swift set;
  // Megatron-LM's own command line defaults to allgather (its importer says so).
  MoeTokenDispatcher moe_token_dispatcher_type = MoeTokenDispatcher::alltoall;
  // Megatron Core's router (TransformerConfig defaults: softmax, no expert bias). The expert bias
  // (DeepSeek-V3's auxiliary-loss-free balancing) applies to the sigmoid router only.
  MoeRouterScoreFunction moe_router_score_function = MoeRouterScoreFunction::softmax;
  bool moe_router_enable_expert_bias = false;
  int64_t mtp_num_layers = 0;

  bool multi_latent_attention = false;
  int64_t q_lora_rank = 0;  // 0: no q LoRA
  int64_t kv_lora_rank = 32;
  int64_t qk_head_dim = 128;
  int64_t qk_pos_emb_head_dim = 64;
  int64_t v_head_dim = 128;

  int64_t seq_length = 0;
  int64_t micro_batch_size = 0;
  int64_t num_microbatches = 0;   // 0: not known (no global batch given)
  int64_t global_batch_size = 0;  // 0: not given
  bool use_distributed_optimizer = false;
  bool sequence_parallel = false;
  RecomputeGranularity recompute_granularity = RecomputeGranularity::none;

  // trainmem profile: framework, precisions, optimizer, offload. Defaults follow Megatron
  // (bf16 weights, fp32 main gradients, fp32 master weights, Adam with fp32 states).
  Framework framework = Framework::megatron;
  int64_t zero_stage = 0;                // deepspeed 0..3, fsdp2 2 or 3
  int64_t data_parallel_shard_size = 1;  // fsdp2 shard group (HSDP); = DP when unset
  int64_t fsdp_version = 2;              // fsdp2: 2 = fully_shard (FSDP2), 1 = FullyShardedDataParallel (FSDP1)
  // FSDP1: each decoder layer checkpointed reentrantly around its FullyShardedDataParallel unit
  // (transformers' gradient_checkpointing under accelerate), not inside it.
  bool fsdp1_checkpoint_around_unit = false;
  int64_t gpus_per_node = 8;
  Dtype params_dtype = Dtype::bf16;
  Dtype main_params_dtype = Dtype::fp32;
  Dtype main_grads_dtype = Dtype::fp32;
  Dtype exp_avg_dtype = Dtype::fp32;
  Dtype exp_avg_sq_dtype = Dtype::fp32;
  Dtype compute_dtype = Dtype::bf16;
  Dtype expert_params_dtype = Dtype::bf16;
  bool master_weights = true;
  bool fp8_param_gather = false;
  // Megatron's precision-aware optimizer (Transformer Engine FusedAdam with master weights) keeps
  // the low 16 bits of each bf16 weight's fp32 master, not the whole fp32 copy.
  bool store_param_remainders = false;
  bool offload_params = false;
  bool fsdp_embedding_units = false;  // fsdp2: embedding and output layer are FSDP units of their own
  bool zero_init = true;
  // deepspeed ZeRO's gradient buckets (zero_optimization: DeepSpeed's defaults).
  double reduce_bucket_size = 5e8;  // elements
  bool contiguous_gradients = true;
  bool overlap_comm = false;        // resolved: true at zero_stage 3 unless given
  bool gradient_as_bucket_view = false;
  Fp8Recipe fp8_recipe = Fp8Recipe::none;
  Optimizer optimizer = Optimizer::adam;
  OptimizerImplementation optimizer_implementation = OptimizerImplementation::foreach;
  double momentum = 0;
  double optimizer_offload_fraction = 0;
  double additional_buffer_factor = 1.5;
  double gpu_memory_bytes = 0;  // 0: not given
  // Runtime overheads (trainmem): device = reserved + CUDA context + NCCL buffers per
  // communicator + library workspaces. Reserved: unset, the larger of allocated × (1 +
  // k_fragmentation_floor) and the simulated caching allocator; > 0, allocated × (1 + this); 0,
  // the simulated allocator alone.
  std::optional<double> allocator_fragmentation;
  static constexpr double k_fragmentation_floor = 0.05;
  // PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True" for the simulated allocator, derived from
  // model_implementation (torchtitan's launcher sets it; resolve.cpp).
  bool expandable_segments = false;
  double cuda_context_bytes = 512.0 * 1024 * 1024;
  double nccl_bytes_per_communicator = 720.0 * 1024 * 1024;
  bool nccl_nvls = false;
  double workspace_bytes = 96.0 * 1024 * 1024;
  // trainmem profile: activations.
  AttentionBackend attention_backend = AttentionBackend::flash;
  // selective_op: torchtitan's save list names cuDNN's SDPA kernel (since its PR #2095)
  bool op_sac_saves_cudnn_attention = true;
  double attention_dropout = 0.1;  // TransformerConfig defaults
  double hidden_dropout = 0.1;
  double moe_expert_capacity_factor = 0;  // 0: dropless
  RecomputeMethod recompute_method = RecomputeMethod::uniform;
  int64_t recompute_num_layers = 0;  // 0: every layer (with full recompute)
  uint32_t recompute_modules = 1u << unsigned(RecomputeModule::core_attn);
  // torch.utils.checkpoint's reentrant mode (CheckpointFunction) for every checkpointed layer,
  // derived from model_implementation with full recompute (resolve.cpp).
  bool checkpoint_reentrant = false;
  PipelineSchedule pipeline_schedule = PipelineSchedule::one_f_one_b;
  PipelineOutputs pipeline_outputs = PipelineOutputs::kept;
  bool cross_entropy_loss_fusion = false;
  // trainmem profile: fine-tuning. LoRA defaults are Hugging Face PEFT's LoraConfig (r = 8,
  // lora_dropout = 0.0; target modules q_proj, v_proj as PEFT's default for Llama).
  Peft peft = Peft::none;
  int64_t lora_rank = 8;
  uint32_t lora_target_modules =
      (1u << unsigned(LoraTarget::q_proj)) | (1u << unsigned(LoraTarget::v_proj));
  uint32_t lora_modules_to_save = 0;  // none: PEFT's default
  double lora_dropout = 0;
  // The adapters on routed experts (resolve(): the other adapters' dtype unless given; ms-swift's
  // Megatron LoRA of July-August 2025 made them fp32).
  Dtype lora_expert_dtype = Dtype::bf16;
  bool optimizer_in_backward = false;  // torchtune optimizer_in_bwd
  bool activation_offload = false;     // saved activations moved to CPU memory
  bool torch_compile = false;          // the layers (and, per implementation, the loss) run torch.compile'd
  bool paged_optimizer = false;        // bitsandbytes paged optimizer states
  int64_t cross_entropy_chunks = 1;    // torchtune CEWithChunkedOutputLoss: 1 = unchunked
  bool fused_linear_cross_entropy = false;  // Liger's LigerFusedLinearCrossEntropy: no logits kept
  bool cut_cross_entropy = false;  // Apple's Cut Cross Entropy (ml-cross-entropy): no logits kept
  TransformersLoss transformers_loss = TransformersLoss::pad_labels;  // the transformers release's loss
  bool model_output_kept = false;  // the loop holds the model's output (its logits) through the step
  // Evaluation between steps (transformers' Trainer prediction_step, under torch.no_grad()): the
  // per-GPU evaluation batch (TrainingArguments per_device_eval_batch_size; 0: the job does not
  // evaluate) and whether the model's forward builds its KV cache then (config.use_cache).
  int64_t eval_micro_batch_size = 0;
  bool eval_kv_cache = true;
  // With compute_metrics, the predictions and labels every evaluation step gathers and keeps on
  // the GPU (EvalLoopContainer): the evaluation set's sequences and how many steps stay on the GPU
  // before they are moved to the CPU (eval_accumulation_steps; 0: all of them, to the loop's end).
  EvalPredictions eval_predictions = EvalPredictions::none;
  int64_t eval_samples = 0;
  int64_t eval_accumulation_steps = 0;
  // QLoRA (params_dtype nf4): the block absmax quantised again to uint8 (bitsandbytes
  // compress_statistics, transformers bnb_4bit_use_double_quant); resolve() derives it (torchtune:
  // true, torchao always does; otherwise false, transformers' BitsAndBytesConfig default).
  bool nf4_double_quant = false;
  // QLoRA: the output layer (lm_head) is an NF4 linear too (transformers: llm_int8_skip_modules
  // given without "lm_head"; torchtune: LoRA on the output with quantize_base); resolve() derives it.
  bool quantize_lm_head = false;
  // QLoRA (bitsandbytes): MatMul4Bit keeps each Linear4bit's input on ctx for backward, as
  // bitsandbytes 0.41.0 … 0.43.1 did (fixed in 0.43.2, PR #1270).
  bool bnb_keeps_matmul_input = false;
  // QLoRA: what prepare_model_for_kbit_training (and the trainer after it) left of the unquantised
  // parameters' dtype; resolve() derives it.
  KbitUpcast kbit_upcast = KbitUpcast::none;
  // The model's own code (trainmem profile). resolve() derives it from the framework: megatron
  // runs Megatron Core, fsdp2 torchtitan, ddp and deepspeed Hugging Face transformers.
  ModelImplementation model_implementation = ModelImplementation::megatron_core;

  int64_t tensor_model_parallel_size = 1;
  int64_t pipeline_model_parallel_size = 1;
  int64_t virtual_pipeline_model_parallel_size = 0;  // 0: no interleaving
  int64_t num_layers_in_first_pipeline_stage = 0;    // 0: even split
  int64_t num_layers_in_last_pipeline_stage = 0;     // 0: even split
  // Decoder layers of each virtual pipeline stage, PP × max(1, VPP) entries: stage s runs on
  // rank s % PP as its chunk s / PP (Megatron's --pipeline-model-parallel-layout order). Empty:
  // the split the two fields above (or an even one) give.
  std::vector<int64_t> pipeline_stage_layers;
  int64_t context_parallel_size = 1;
  int64_t expert_model_parallel_size = 1;
  int64_t expert_tensor_parallel_size = 1;  // = tensor_model_parallel_size when unset
  int64_t data_parallel_size = 1;
  int64_t world_size = 1;  // GPUs of the run: TP·PP·CP·DP (given, it sets DP)

  bool is_moe() const { return num_moe_experts > 0; }
  bool peft_on() const { return peft != Peft::none; }
  bool lora_targets(LoraTarget t) const {
    return peft_on() && ((lora_target_modules >> unsigned(t)) & 1u);
  }
  // Whether PEFT trains a whole copy of module `m` (lora_modules_to_save).
  bool saves(SavedModule m) const { return peft_on() && ((lora_modules_to_save >> unsigned(m)) & 1u); }
  // Plain PyTorch training (ddp, fsdp2): torch.optim steps, torch.distributed.pipelining pipelines.
  // The layers are the model's own eager PyTorch code rather than Megatron Core's fused ones.
  bool eager_model() const { return model_implementation != ModelImplementation::megatron_core; }
  bool pytorch_native() const { return framework == Framework::ddp || framework == Framework::fsdp2; }
  bool torch_pipelining() const { return pipeline_model_parallel_size > 1 && pytorch_native(); }
  bool is_moe_layer(int64_t layer) const {  // layer: 0-based decoder layer index
    if (!is_moe()) return false;
    if (!moe_layer_freq_list.empty()) return moe_layer_freq_list[size_t(layer)] != 0;
    return layer % moe_layer_freq == 0;
  }
  friend bool operator==(const Config&, const Config&) = default;
  // Any split but the even one: first/last stage sizes or a per-stage list.
  bool uneven_pipeline() const {
    return num_layers_in_first_pipeline_stage > 0 || num_layers_in_last_pipeline_stage > 0 ||
           !pipeline_stage_layers.empty();
  }
};

// ---- Field table: the single description of every input field ----

struct FieldSpec {
  std::string_view name;
  FieldType type;
  FieldGroup group;
  bool required;
  double min;  // integers and numbers: smallest legal value
  double max;  // integers and numbers: largest legal value
  std::span<const std::string_view> choices;  // choice fields: the accepted names
  std::string_view unit;                       // e.g. "layers", "tokens", "" for pure numbers
  std::string_view default_text;               // what an unset field resolves to
  std::string_view description;
  bool trainmem_only = false;  // the reference profiles reject it when set
  std::string_view rules = {}; // the cross-field rules it takes part in (checked by resolve())
  // How views name it: the share link's short key (append-only: never reused or renamed; a link
  // may also spell the field's name) and the form's label (the name is shown beside it).
  std::string_view link_key = {};
  std::string_view label = {};
  FormPlace form = {};  // where the page's form shows it
  // Choice fields: the words the form shows for each choice, in the choices' order, where the
  // name alone is a framework's word (empty: the names).
  std::span<const std::string_view> choice_labels = {};
};

std::span<const FieldSpec> field_specs();
// What a fine-tuning method usually runs with (issue 32: choosing a method on a run built by hand
// sets them where the user has not): for peft `peft`, `field` takes `value` (its name as a link
// or JSON spells it), for the reason `why`. Data, cited where it is defined (config/fields.cpp);
// resolve() does not apply it: a config means what it says.
struct MethodSetting {
  Peft peft;
  std::string_view field, value, why;
};
std::span<const MethodSetting> method_settings();
// The ids of the rules that are rows of the core's rule table (config/rules.cpp), in the order
// resolve() checks them: what Issue::rule holds. Stable and append-only, like link keys.
std::vector<std::string_view> rule_ids();
const FieldSpec* find_field(std::string_view name);
// The field a share link's key names: its link key, or its name (a hand-written link may use either).
const FieldSpec* find_field_by_link_key(std::string_view key);

// A value as it arrives from JSON or JavaScript, before it is checked against the field table.
using FieldValue = std::variant<std::monostate /* null */, bool, double, std::string,
                                std::vector<double>, std::vector<std::string>>;

// Sets one field of `input`; returns the problem if the name is unknown or the value does not
// fit the field's type and range. A null value unsets the field.
std::optional<Issue> set_field(ConfigInput& input, std::string_view name, const FieldValue& value);

// Reads one field of `input` (std::monostate when unset; moe_layer_freq may be a list).
FieldValue get_field(const ConfigInput& input, std::string_view name);

// set_field for a value as a reader found it: `value` is empty when the value has a shape no
// field takes (`shape`: "an object", "a list" of mixed entries), which is then the problem named.
std::optional<Issue> set_read_field(ConfigInput& input, std::string_view name,
                                    const std::optional<FieldValue>& value, std::string_view shape);

// The same by position in field_specs(), for callers that go through every field.
std::optional<Issue> set_field_at(ConfigInput& input, size_t index, const FieldValue& value);
FieldValue get_field_at(const ConfigInput& input, size_t index);
// The same value as one number, the way slots.hpp encodes a config: NaN unset; the number; 0 or 1;
// the choice's index; the choice list's bit mask; -1 for a list (moe_layer_freq's, a list field's),
// whose length and entries are appended to `lists`. No strings: the page's estimate path writes
// the whole resolved config per call.
double get_field_slot_at(const ConfigInput& input, size_t index, std::vector<double>& lists);

struct Resolved {
  Config config;
  std::vector<Issue> issues;  // empty when `config` is usable
  bool ok() const { return issues.empty(); }
};

// Validates `input` (one issue per broken rule) and resolves unset fields as Megatron Core does
// (reference §2 and §6 item 8): num_query_groups -> heads, kv_channels -> h / heads,
// ffn_hidden_size -> 4h, expert_tensor_parallel_size -> TP, moe_router_topk -> 2,
// should_pad_vocab -> false, sequence_parallel -> false when TP = 1.
Resolved resolve(const ConfigInput& input);

// resolve() for an input whose reading already reported `read_issues`: those come first, and a
// field rejected while reading is not reported again (as missing, say).
Resolved resolve_read(const ConfigInput& input, std::vector<Issue> read_issues);

// Which fields mean something for a config, one flag per field in field_specs() order: the
// profile reads the field (trainmem_only ones only the trainmem profile), and its row's condition
// holds: where it applies (set elsewhere, resolve() rejects it), or, for a field accepted anywhere,
// where it has an effect (set elsewhere it changes nothing). Views show and send only these: the
// page asks the core instead of keeping rules of its own. The input form resolves `input` first,
// whatever its problems (resolve() goes on past them), so a partial or broken input has an answer.
std::vector<bool> fields_in_effect(const Config& config);
std::vector<bool> fields_in_effect(const ConfigInput& input);
// `input` without the fields it sets that are not in effect (fields_in_effect(input), received in
// `in_effect` when given): what a view estimates, so that a value the form remembers from an
// earlier choice (momentum, set before the optimizer became adamw) neither shows nor stops the
// estimate.

ConfigInput without_fields_out_of_effect(const ConfigInput& input, std::vector<bool>* in_effect = nullptr);

// The resolved configuration written back as input, every field set except those that are
// Megatron's None (no VPP, even split, ...). resolve(to_input(c)).config == c.
ConfigInput to_input(const Config& config);

// Megatron's vocabulary padding: ceil(V / (m·t)) · (m·t) (Megatron-LM vocab_utils).
int64_t padded_vocab_size(int64_t vocab_size, int64_t divisible_by, int64_t tensor_parallel);

}  // namespace trainmem
