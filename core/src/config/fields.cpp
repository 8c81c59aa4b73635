// The field table and reading or writing single fields of a ConfigInput.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <variant>

#include "internal.hpp"
#include "trainmem/config.hpp"

namespace trainmem {

namespace {

// Largest accepted count. Larger values are not meaningful for any run and keep every product
// the estimator forms far from overflow in double arithmetic.
constexpr int64_t k_max_count = 1'000'000'000'000;      // 10^12
constexpr int64_t k_max_layers = 1'000'000;              // loops over layers stay bounded
constexpr int64_t k_max_parallel = 1'000'000'000;        // 10^9 ranks in one dimension

using IntMember = std::optional<int64_t> ConfigInput::*;
using BoolMember = std::optional<bool> ConfigInput::*;
using NumberMember = std::optional<double> ConfigInput::*;
// A choice field of any enumeration, reached through its index in the enumeration's name table.
struct ChoiceTarget {
  std::optional<size_t> (*get)(const ConfigInput&);
  void (*set)(ConfigInput&, std::optional<size_t>);
};
template <auto Member>
ChoiceTarget choice_target() {
  using E = typename std::remove_reference_t<decltype(ConfigInput{}.*Member)>::value_type;
  return {[](const ConfigInput& in) -> std::optional<size_t> {
            if (auto v = in.*Member) return size_t(*v);
            return std::nullopt;
          },
          [](ConfigInput& in, std::optional<size_t> v) {
            if (v) in.*Member = E(*v);
            else (in.*Member).reset();
          }};
}
using MaskMember = std::optional<uint32_t> ConfigInput::*;  // a set of choices (bit i: choice i)
struct MoeFreqTarget {};  // moe_layer_freq: an integer or a 0/1 list
using Target = std::variant<IntMember, BoolMember, NumberMember, ChoiceTarget, MaskMember, MoeFreqTarget>;

struct Field {
  FieldSpec spec;
  Target target;
};

constexpr std::span<const std::string_view> no_choices{};

Field int_field(std::string_view name, FieldGroup group, bool required, int64_t min, int64_t max,
                std::string_view unit, std::string_view default_text, std::string_view description,
                IntMember member) {
  return {{name, FieldType::integer, group, required, double(min), double(max), no_choices, unit,
           default_text, description},
          member};
}
Field number_field(std::string_view name, FieldGroup group, double min, double max,
                   std::string_view unit, std::string_view default_text,
                   std::string_view description, NumberMember member) {
  return {{name, FieldType::number, group, false, min, max, no_choices, unit, default_text,
           description},
          member};
}
Field bool_field(std::string_view name, FieldGroup group, std::string_view default_text,
                 std::string_view description, BoolMember member) {
  return {{name, FieldType::boolean, group, false, 0, 1, no_choices, "", default_text, description},
          member};
}
template <auto Member>
Field choice_field(std::string_view name, FieldGroup group, std::string_view default_text,
                   std::string_view description) {
  using E = typename std::remove_reference_t<decltype(ConfigInput{}.*Member)>::value_type;
  return {{name, FieldType::choice, group, false, 0, 0, enum_names<E>(), "", default_text,
           description},
          choice_target<Member>()};
}
template <class E>
Field choice_list_field(std::string_view name, FieldGroup group, std::string_view default_text,
                        std::string_view description, MaskMember member) {
  return {{name, FieldType::choice_list, group, false, 0, 0, enum_names<E>(), "", default_text,
           description},
          member};
}
// Marks a field as read only by the trainmem profile.
Field trainmem_only(Field f) {
  f.spec.trainmem_only = true;
  return f;
}

using G = FieldGroup;
using C = ConfigInput;

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      choice_field<&C::profile>("profile", G::profile, "trainmem",
                   "Which estimator to reproduce: megatron-bridge (Megatron-Bridge "
                   "estimate_training_memory), megatron-lm (Megatron-LM theoretical_memory_usage) "
                   "or trainmem (the default: every framework, precision, optimizer, per-tensor "
                   "activations on every pipeline stage, runtime overheads)."),
      // Model shape.
      int_field("num_layers", G::model, true, 1, k_max_layers, "layers", "required",
                "Transformer (decoder) layers, L.", &C::num_layers),
      int_field("hidden_size", G::model, true, 1, k_max_count, "", "required",
                "Hidden size h.", &C::hidden_size),
      int_field("num_attention_heads", G::model, true, 0, k_max_count, "heads", "required",
                "Attention (query) heads a; 0: blocks without attention (trainmem profile).",
                &C::num_attention_heads),
      int_field("num_query_groups", G::model, false, 1, k_max_count, "groups",
                "num_attention_heads (MHA)", "Key/value head groups g (GQA); must divide the heads.",
                &C::num_query_groups),
      int_field("kv_channels", G::model, false, 1, k_max_count, "", "hidden_size / num_attention_heads",
                "Channels per attention head k (head_dim).", &C::kv_channels),
      int_field("ffn_hidden_size", G::model, false, 1, k_max_count, "",
                "4 × hidden_size (megatron-lm with SwiGLU: int(8h/3/64)·64)",
                "MLP intermediate size f.", &C::ffn_hidden_size),
      int_field("vocab_size", G::model, true, 0, k_max_count, "tokens", "required",
                "Vocabulary size V (before padding); 0: no embedding or output layer (trainmem "
                "profile).", &C::vocab_size),
      int_field("make_vocab_size_divisible_by", G::model, false, 1, k_max_count, "", "128",
                "Vocabulary padding multiple m; padded V = ceil(V / (m·TP))·m·TP.",
                &C::make_vocab_size_divisible_by),
      int_field("max_position_embeddings", G::model, false, 1, k_max_count, "tokens", "none",
                "Learned absolute position embeddings (GPT-2/3 style); the reference profiles do "
                "not count them (reference §3.2).",
                &C::max_position_embeddings),
      bool_field("should_pad_vocab", G::model, "false",
                 "megatron-bridge: pad the vocabulary before counting (megatron-lm always pads).",
                 &C::should_pad_vocab),
      bool_field("share_embeddings_and_output_weights", G::model, "true",
                 "Tie the input embedding and the output layer.",
                 &C::share_embeddings_and_output_weights),
      bool_field("gated_linear_unit", G::model, "false", "Gated MLP (GLU): fc1 has two halves.",
                 &C::gated_linear_unit),
      choice_field<&C::activation_func>("activation_func", G::model, "gelu",
                   "MLP activation; with gated_linear_unit, silu is SwiGLU and gelu GeGLU."),
      bool_field("swiglu", G::model, "false",
                 "Megatron-LM's --swiglu: shorthand for gated_linear_unit=true, activation_func=silu.",
                 &C::swiglu),
      choice_field<&C::normalization>("normalization", G::model, "LayerNorm",
                   "Normalization layer (megatron-lm counts RMSNorm as h, LayerNorm as 2h)."),
      bool_field("add_bias_linear", G::model, "true",
                 "Linear layers have biases (megatron-lm counts the router bias).",
                 &C::add_bias_linear),
      bool_field("add_qkv_bias", G::model, "false",
                 "Biases on the query/key/value projections only (Qwen2); not counted by the "
                 "reference profiles.",
                 &C::add_qkv_bias),
      bool_field("qk_layernorm", G::model, "false",
                 "A norm on each query and key head (Qwen3, OLMo 2); not counted by the reference "
                 "profiles.",
                 &C::qk_layernorm),
      // MoE and MTP.
      int_field("num_moe_experts", G::moe, false, 0, k_max_count, "experts", "none (dense model)",
                "Routed experts per MoE layer E; unset or 0 for a dense model.", &C::num_moe_experts),
      {{"moe_layer_freq", FieldType::integer_or_list, G::moe, false, 1, k_max_layers, no_choices, "",
        "1", "Which layers are MoE: every n-th layer (layer i is MoE iff i % n == 0), or a 0/1 list "
        "with one entry per layer."},
       MoeFreqTarget{}},
      int_field("moe_ffn_hidden_size", G::moe, false, 1, k_max_count, "", "ffn_hidden_size",
                "Intermediate size of one routed expert f_e.", &C::moe_ffn_hidden_size),
      int_field("moe_router_topk", G::moe, false, 1, k_max_count, "experts", "2",
                "Experts each token is routed to K.", &C::moe_router_topk),
      int_field("moe_shared_expert_intermediate_size", G::moe, false, 0, k_max_count, "", "0",
                "Total intermediate size of the shared experts f_s.",
                &C::moe_shared_expert_intermediate_size),
      int_field("moe_latent_size", G::moe, false, 1, k_max_count, "", "none",
                "Latent MoE: experts work in a latent space of this size.", &C::moe_latent_size),
      bool_field("moe_shared_expert_gate", G::moe, "false",
                 "Shared experts have a gate (megatron-lm counts h parameters for it).",
                 &C::moe_shared_expert_gate),
      int_field("mtp_num_layers", G::moe, false, 0, k_max_layers, "layers", "0",
                "Multi-token-prediction layers after the decoder.", &C::mtp_num_layers),
      // Multi-latent attention.
      bool_field("multi_latent_attention", G::mla, "false",
                 "DeepSeek multi-latent attention (counted by megatron-lm only).",
                 &C::multi_latent_attention),
      int_field("q_lora_rank", G::mla, false, 1, k_max_count, "", "none",
                "MLA query low-rank size r_q; unset: full-rank queries.", &C::q_lora_rank),
      int_field("kv_lora_rank", G::mla, false, 1, k_max_count, "", "32",
                "MLA key/value low-rank size r_kv.", &C::kv_lora_rank),
      int_field("qk_head_dim", G::mla, false, 1, k_max_count, "", "128",
                "MLA query/key head size without the rotary part.", &C::qk_head_dim),
      int_field("qk_pos_emb_head_dim", G::mla, false, 0, k_max_count, "", "64",
                "MLA rotary (decoupled) head size.", &C::qk_pos_emb_head_dim),
      int_field("v_head_dim", G::mla, false, 1, k_max_count, "", "128", "MLA value head size.",
                &C::v_head_dim),
      // Training.
      int_field("seq_length", G::training, true, 1, k_max_count, "tokens", "required",
                "Sequence length s.", &C::seq_length),
      int_field("micro_batch_size", G::training, true, 1, k_max_count, "sequences", "required",
                "Micro batch size b.", &C::micro_batch_size),
      int_field("global_batch_size", G::training, false, 1, k_max_count, "sequences", "none",
                "Global batch size; gives num_microbatches = global / (micro × DP).",
                &C::global_batch_size),
      int_field("num_microbatches", G::training, false, 1, k_max_count, "microbatches", "none",
                "Microbatches per step per pipeline (limits the in-flight ones when PP > 1).",
                &C::num_microbatches),
      bool_field("use_distributed_optimizer", G::training, "false",
                 "Megatron's distributed optimizer (ZeRO-1): master weights and Adam states "
                 "sharded over data-parallel ranks.",
                 &C::use_distributed_optimizer),
      bool_field("sequence_parallel", G::training, "false",
                 "Megatron sequence parallelism (only with TP > 1).", &C::sequence_parallel),
      choice_field<&C::recompute_granularity>("recompute_granularity", G::training, "none",
                   "Activation recomputation (selective_op: torchtitan's per-op checkpointing, "
                   "trainmem profile only)."),
      // Frameworks, precisions, optimizers, offload: the trainmem profile (issue 4).
      trainmem_only(choice_field<&C::framework>("framework", G::training, "megatron",
          "Whose memory behaviour to follow: megatron (distributed optimizer optional), "
          "deepspeed (ZeRO 0-3), fsdp2 (PyTorch FSDP2, full or grad/optimizer sharding), ddp "
          "(plain PyTorch DDP with AMP).")),
      trainmem_only(int_field("zero_stage", G::training, false, 0, 3, "", "deepspeed 0; fsdp2 3",
          "ZeRO stage: deepspeed 0-3; fsdp2 3 = full shard, 2 = shard gradients and optimizer.",
          &C::zero_stage)),
      trainmem_only(int_field("data_parallel_shard_size", G::parallelism, false, 1, k_max_parallel,
          "GPUs", "data_parallel_size", "fsdp2: ranks one shard group spans (HSDP replicates the "
          "shards over data_parallel_size / this).", &C::data_parallel_shard_size)),
      trainmem_only(int_field("gpus_per_node", G::parallelism, false, 1, 1024, "GPUs", "8",
          "GPUs per node, for CPU memory per node.", &C::gpus_per_node)),
      trainmem_only(choice_field<&C::params_dtype>("params_dtype", G::training,
          "bf16 (ddp: fp32)", "Storage type of the model weights.")),
      trainmem_only(choice_field<&C::expert_params_dtype>("expert_params_dtype", G::training,
          "params_dtype", "Storage type of routed-expert weights (e.g. mxfp4 for GPT-OSS).")),
      trainmem_only(choice_field<&C::compute_dtype>("compute_dtype", G::training,
          "params_dtype (ddp: bf16 autocast)", "Type the matmuls run in; below params_dtype it "
          "is autocast, which caches low-precision weight copies.")),
      trainmem_only(bool_field("master_weights", G::training, "true",
          "Keep higher-precision master weights (main_params_dtype) when params_dtype is lower.",
          &C::master_weights)),
      trainmem_only(choice_field<&C::main_params_dtype>("main_params_dtype", G::training, "fp32",
          "Master weights type (Megatron --main-params-dtype).")),
      trainmem_only(choice_field<&C::main_grads_dtype>("main_grads_dtype", G::training, "fp32",
          "Gradient accumulation type (Megatron --main-grads-dtype; FSDP2 reduce_dtype).")),
      trainmem_only(choice_field<&C::exp_avg_dtype>("exp_avg_dtype", G::training, "fp32",
          "First-moment (momentum) state type (Megatron --exp-avg-dtype).")),
      trainmem_only(choice_field<&C::exp_avg_sq_dtype>("exp_avg_sq_dtype", G::training, "fp32",
          "Second-moment state type (Megatron --exp-avg-sq-dtype).")),
      trainmem_only(choice_field<&C::fp8_recipe>("fp8_recipe", G::training, "none",
          "FP8 training recipe (Transformer Engine): extra FP8 weight copies and transposes.")),
      trainmem_only(bool_field("fp8_param_gather", G::training, "false",
          "Keep the weights themselves in FP8 (Megatron --fp8-param-gather).", &C::fp8_param_gather)),
      trainmem_only(choice_field<&C::optimizer>("optimizer", G::training, "adam",
          "Optimizer; its states per parameter come from the optimizer table.")),
      trainmem_only(choice_field<&C::optimizer_implementation>("optimizer_implementation",
          G::training, "foreach",
          "How torch.optim Adam/AdamW steps (frameworks ddp and fsdp2; torchtitan's "
          "optimizer.implementation): foreach keeps a copy of every exp_avg_sq as the "
          "denominator, for-loop one tensor's at a time, fused none. Megatron and DeepSpeed step "
          "with their fused multi-tensor Adam.")),
      trainmem_only(number_field("momentum", G::training, 0, 1, "", "0",
          "SGD momentum; 0 keeps no momentum buffer.", &C::momentum)),
      trainmem_only(number_field("optimizer_offload_fraction", G::training, 0, 1, "", "0",
          "Share of master weights and optimizer states kept in CPU memory "
          "(Megatron --optimizer-offload-fraction; deepspeed offload_optimizer = 1).",
          &C::optimizer_offload_fraction)),
      trainmem_only(bool_field("offload_params", G::training, "false",
          "Keep sharded weights in CPU memory (ZeRO-3 offload_param, FSDP2 CPUOffloadPolicy).",
          &C::offload_params)),
      trainmem_only(bool_field("zero_init", G::training, "true",
          "deepspeed: construct the model partitioned (zero.Init), as DeepSpeed's estimator asks.",
          &C::zero_init)),
      trainmem_only(number_field("additional_buffer_factor", G::training, 1, 100, "", "1.5",
          "deepspeed: CPU buffer factor of DeepSpeed's estimator.", &C::additional_buffer_factor)),
      trainmem_only(bool_field("gradient_as_bucket_view", G::training, "false",
          "ddp: gradients are views into the all-reduce buckets (no second gradient copy).",
          &C::gradient_as_bucket_view)),
      trainmem_only(number_field("gpu_memory_bytes", G::training, 0, 1e15, "bytes", "none",
          "Capacity of one GPU; gives whether it fits and the minimum number of devices.",
          &C::gpu_memory_bytes)),
      // Runtime overheads: what max_memory_reserved and nvidia-smi add (trainmem profile).
      trainmem_only(number_field("allocator_fragmentation", G::training, 0, 10, "", "0.05",
          "PyTorch's caching allocator: reserved = allocated × (1 + this). It rounds blocks of "
          "1 MiB and more up to 2 MiB multiples and keeps freed blocks cached (PyTorch CUDA "
          "semantics, memory management); 5 % is a planning default, set it from "
          "torch.cuda.memory_stats of a run.", &C::allocator_fragmentation)),
      trainmem_only(number_field("cuda_context_bytes", G::training, 0, 1e12, "bytes", "536870912 (512 MiB)",
          "CUDA context and loaded kernels (lazy module loading, PyTorch's default since 1.13); "
          "counted in nvidia-smi, not in PyTorch's figures.", &C::cuda_context_bytes)),
      trainmem_only(number_field("nccl_bytes_per_communicator", G::training, 0, 1e12, "bytes",
          "754974720 (720 MiB)", "NCCL ring and tree buffers of one communicator: per channel one "
          "ring and two tree (chain) receive connections, each holding the Simple (NCCL_BUFFSIZE "
          "4 MiB), LL128 (4.6875 MiB) and LL (0.5 MiB) buffers in one 10 MiB allocation (2 MiB "
          "cuMem granularity; NVIDIA/nccl#1685), 24 channels on 8-GPU H100/H200 boards. "
          "Communicators: the world and each process group that runs a collective (the result's "
          "nccl_groups).", &C::nccl_bytes_per_communicator)),
      trainmem_only(bool_field("nccl_nvls", G::training, "false",
          "NVLink SHARP (NVSwitch boards: H100/H200/B200 SXM): a communicator of more than two "
          "GPUs on one node also binds 24 channels x 2 x (4 + 2) MiB per GPU of it (288 MiB x "
          "GPUs; NCCL 2.17-2.20 nvls.cc, NCCL_NVLS_ENABLE=0 turns it off).", &C::nccl_nvls)),
      trainmem_only(number_field("workspace_bytes", G::training, 0, 1e12, "bytes", "100663296 (96 MiB)",
          "Library workspaces PyTorch allocates through its caching allocator: the cuBLAS and "
          "cuBLASLt workspaces (32 MiB each on Hopper and newer; CUBLAS_WORKSPACE_CONFIG=:4096:8) "
          "and Transformer Engine's cuBLASLt workspace (32 MiB on sm90+, 4 MiB before). Megatron "
          "CI's after-step allocation sits 99 MiB above model state on H100.",
          &C::workspace_bytes)),
      // Activations: the trainmem profile (issue 5).
      trainmem_only(choice_field<&C::attention_backend>("attention_backend", G::training, "flash",
          "Attention kernel: flash keeps the softmax statistics; unfused keeps the s² scores.")),
      trainmem_only(number_field("attention_dropout", G::training, 0, 1, "", "0.1",
          "Attention dropout probability (a mask is saved when above 0).", &C::attention_dropout)),
      trainmem_only(number_field("hidden_dropout", G::training, 0, 1, "", "0.1",
          "Hidden dropout probability (a mask is saved when above 0).", &C::hidden_dropout)),
      trainmem_only(number_field("moe_expert_capacity_factor", G::moe, 0, 1e6, "", "none (dropless)",
          "Expert capacity factor: tokens per expert are padded to this multiple of the average.",
          &C::moe_expert_capacity_factor)),
      trainmem_only(choice_field<&C::recompute_method>("recompute_method", G::training, "uniform",
          "With full recompute: uniform (groups of recompute_num_layers) or block (the first "
          "recompute_num_layers of each stage).")),
      trainmem_only(int_field("recompute_num_layers", G::training, false, 1, k_max_layers, "layers",
          "all layers", "Layers per recompute group (uniform) or recomputed per stage (block).",
          &C::recompute_num_layers)),
      trainmem_only(choice_list_field<RecomputeModule>("recompute_modules", G::training,
          "[\"core_attn\"]", "With selective recompute: the submodules recomputed.",
          &C::recompute_modules)),
      trainmem_only(choice_field<&C::pipeline_schedule>("pipeline_schedule", G::parallelism,
          "interleaved with VPP, else 1f1b", "Pipeline schedule: how many microbatches each "
          "stage keeps in flight.")),
      trainmem_only(choice_field<&C::pipeline_outputs>("pipeline_outputs", G::parallelism, "kept",
          "Frameworks ddp and fsdp2 with PP (torch.distributed.pipelining): the last stage keeps "
          "every microbatch's model output until the step ends. kept: the logits in the compute "
          "dtype (torchtitan 2025 on: 16-bit logits, step(return_outputs=False)); "
          "kept_fp32_merged: fp32 logits, concatenated once more when step() returns them "
          "(torchtitan and torch of December 2024: the model's .float(), _merge_outputs).")),
      trainmem_only(bool_field("cross_entropy_loss_fusion", G::training, "false",
          "Fused cross entropy: no fp32 copy of the logits.", &C::cross_entropy_loss_fusion)),
      // Parallelism.
      int_field("tensor_model_parallel_size", G::parallelism, false, 1, k_max_parallel, "GPUs", "1",
                "Tensor parallel size TP.", &C::tensor_model_parallel_size),
      int_field("pipeline_model_parallel_size", G::parallelism, false, 1, k_max_parallel, "stages",
                "1", "Pipeline parallel size PP.", &C::pipeline_model_parallel_size),
      int_field("virtual_pipeline_model_parallel_size", G::parallelism, false, 1, k_max_layers,
                "chunks", "none", "Virtual pipeline stages per rank (interleaved schedule).",
                &C::virtual_pipeline_model_parallel_size),
      int_field("num_layers_in_first_pipeline_stage", G::parallelism, false, 1, k_max_layers,
                "layers", "none (even split)", "Layers on the first pipeline stage (uneven split).",
                &C::num_layers_in_first_pipeline_stage),
      int_field("num_layers_in_last_pipeline_stage", G::parallelism, false, 1, k_max_layers,
                "layers", "none (even split)", "Layers on the last pipeline stage (uneven split).",
                &C::num_layers_in_last_pipeline_stage),
      int_field("context_parallel_size", G::parallelism, false, 1, k_max_parallel, "GPUs", "1",
                "Context parallel size CP.", &C::context_parallel_size),
      int_field("expert_model_parallel_size", G::parallelism, false, 1, k_max_parallel, "GPUs", "1",
                "Expert parallel size EP.", &C::expert_model_parallel_size),
      int_field("expert_tensor_parallel_size", G::parallelism, false, 1, k_max_parallel, "GPUs",
                "tensor_model_parallel_size", "Tensor parallel size inside experts ETP.",
                &C::expert_tensor_parallel_size),
      int_field("data_parallel_size", G::parallelism, false, 1, k_max_parallel, "GPUs", "1",
                "Data parallel size DP.", &C::data_parallel_size),
  };
  return table;
}

// The rules between fields, in words, for the field documentation. resolve() checks them; a test
// asserts each rule's exact message (tests/core/validation.test.cpp).
constexpr std::pair<std::string_view, std::string_view> k_rules[] = {
    {"num_layers", "divisible by pipeline_model_parallel_size (× virtual_pipeline_model_parallel_size) for an even split; with uneven first/last stages the rest divides evenly over the middle stages"},
    {"hidden_size", "divisible by num_attention_heads when kv_channels is unset"},
    {"num_attention_heads", "divisible by tensor_model_parallel_size and by num_query_groups; 0 only in the trainmem profile"},
    {"num_query_groups", "divides num_attention_heads; divisible by tensor_model_parallel_size"},
    {"vocab_size", "0 only in the trainmem profile"},
    {"swiglu", "consistent with gated_linear_unit and activation_func"},
    {"num_moe_experts", "divisible by expert_model_parallel_size"},
    {"ffn_hidden_size", "divisible by tensor_model_parallel_size when a layer has a dense MLP"},
    {"moe_ffn_hidden_size", "divisible by expert_tensor_parallel_size"},
    {"moe_shared_expert_intermediate_size", "divisible by tensor_model_parallel_size"},
    {"moe_layer_freq", "a list has one 0/1 entry per layer"},
    {"moe_router_topk", "at most num_moe_experts"},
    {"seq_length", "divisible by 2 × context_parallel_size when CP > 1, times tensor_model_parallel_size with sequence_parallel"},
    {"global_batch_size", "divisible by micro_batch_size × data_parallel_size"},
    {"num_microbatches", "equals global_batch_size / (micro_batch_size × data_parallel_size) when both are given"},
    {"sequence_parallel", "ignored at TP = 1; required for MoE with TP > 1 and EP > 1"},
    {"virtual_pipeline_model_parallel_size", "needs pipeline_model_parallel_size > 1; divides every stage's layer count"},
    {"num_layers_in_first_pipeline_stage", "needs pipeline_model_parallel_size > 1"},
    {"num_layers_in_last_pipeline_stage", "needs pipeline_model_parallel_size > 1"},
    {"expert_model_parallel_size", "EP × ETP divides DP × TP × CP; 1 for a dense model"},
    {"use_distributed_optimizer", "framework megatron only"},
    {"zero_stage", "deepspeed 0-3, fsdp2 2 or 3; not for megatron or ddp"},
    {"data_parallel_shard_size", "fsdp2 only; divides data_parallel_size"},
    {"params_dtype", "fp32, bf16 or fp16"},
    {"fp8_param_gather", "needs an fp8_recipe"},
    {"momentum", "optimizer sgd only"},
    {"optimizer_implementation", "frameworks ddp and fsdp2 only"},
    {"offload_params", "deepspeed or fsdp2 with zero_stage 3"},
    {"recompute_method", "recompute_granularity full only"},
    {"recompute_num_layers", "recompute_granularity full only"},
    {"recompute_modules", "recompute_granularity selective only"},
    {"pipeline_schedule", "interleaved exactly when virtual_pipeline_model_parallel_size is set"},
    {"pipeline_outputs", "frameworks ddp and fsdp2 with pipeline_model_parallel_size > 1 only"},
};

const std::vector<FieldSpec>& spec_table() {
  static const std::vector<FieldSpec> specs = [] {
    std::vector<FieldSpec> out;
    for (const Field& f : fields()) {
      out.push_back(f.spec);
      for (const auto& [name, rule] : k_rules)
        if (name == f.spec.name) out.back().rules = rule;
    }
    return out;
  }();
  return specs;
}

// An integer field's value: finite, integral and within [min, max].
std::optional<Issue> read_integer(const FieldSpec& spec, double d, int64_t& out) {
  if (!std::isfinite(d)) return issue(spec.name, "must be a finite integer, got " + number_text(d));
  if (d != std::floor(d)) return issue(spec.name, "must be an integer, got " + number_text(d));
  if (d < double(spec.min))
    return issue(spec.name, "must be at least " + number_text(double(spec.min)) + ", got " +
                                number_text(d));
  if (d > double(spec.max))
    return issue(spec.name, "must be at most " + number_text(double(spec.max)) + ", got " +
                                number_text(d));
  out = static_cast<int64_t>(d);
  return std::nullopt;
}

std::optional<size_t> choice_index(const FieldSpec& spec, std::string_view text) {
  for (size_t i = 0; i < spec.choices.size(); ++i)
    if (spec.choices[i] == text) return i;
  return std::nullopt;
}

struct FieldSetter {
  const FieldSpec& spec;
  const FieldValue& value;
  bool is_null;
  ConfigInput& input;

  std::optional<Issue> operator()(IntMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const double* d = std::get_if<double>(&value);
    if (!d) return issue(spec.name, "must be an integer, got " + describe(value));
    int64_t out = 0;
    if (auto problem = read_integer(spec, *d, out)) return problem;
    input.*m = out;
    return std::nullopt;
  }
  std::optional<Issue> operator()(BoolMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const bool* b = std::get_if<bool>(&value);
    if (!b) return issue(spec.name, "must be true or false, got " + describe(value));
    input.*m = *b;
    return std::nullopt;
  }
  std::optional<Issue> operator()(NumberMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const double* d = std::get_if<double>(&value);
    if (!d) return issue(spec.name, "must be a number, got " + describe(value));
    if (!std::isfinite(*d)) return issue(spec.name, "must be a finite number, got " + number_text(*d));
    if (*d < spec.min || *d > spec.max)
      return issue(spec.name, "must be between " + number_text(spec.min) + " and " +
                                  number_text(spec.max) + ", got " + number_text(*d));
    input.*m = *d == 0 ? 0.0 : *d;  // -0 reads as 0
    return std::nullopt;
  }
  std::optional<Issue> operator()(const ChoiceTarget& target) const {
    if (is_null) return target.set(input, std::nullopt), std::nullopt;
    const auto* text = std::get_if<std::string>(&value);
    const std::optional<size_t> index = text ? choice_index(spec, *text) : std::nullopt;
    if (!index)
      return issue(spec.name, "must be one of " + choices_text(spec.choices, ", ") + ", got " + describe(value));
    target.set(input, index);
    return std::nullopt;
  }
  std::optional<Issue> operator()(MaskMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const auto* list = std::get_if<std::vector<std::string>>(&value);
    const auto* empty = std::get_if<std::vector<double>>(&value);  // [] parses as a number list
    if (!list && !(empty && empty->empty()))
      return issue(spec.name, "must be a list of " + choices_text(spec.choices, ", ") + ", got " + describe(value));
    uint32_t mask = 0;
    if (list)
      for (const std::string& text : *list) {
        const std::optional<size_t> index = choice_index(spec, text);
        if (!index)
          return issue(spec.name, "entries must be among " + choices_text(spec.choices, ", ") + ", got " +
                                      quoted(text));
        mask |= 1u << *index;
      }
    input.*m = mask;
    return std::nullopt;
  }
  std::optional<Issue> operator()(MoeFreqTarget) const {
    input.moe_layer_freq.reset();
    input.moe_layer_freq_list.reset();
    if (is_null) return std::nullopt;
    if (const double* d = std::get_if<double>(&value)) {
      int64_t out = 0;
      if (auto problem = read_integer(spec, *d, out)) return problem;
      input.moe_layer_freq = out;
      return std::nullopt;
    }
    if (const auto* list = std::get_if<std::vector<double>>(&value)) {
      if (list->size() > size_t(k_max_layers))
        return issue(spec.name, "list must have at most " + number_text(double(k_max_layers)) +
                                    " entries");
      std::vector<uint8_t> pattern;
      pattern.reserve(list->size());
      for (size_t i = 0; i < list->size(); ++i) {
        double e = (*list)[i];
        if (e != 0.0 && e != 1.0)
          return issue(spec.name, "list entries must be 0 or 1, got " + number_text(e) +
                                      " at index " + std::to_string(i));
        pattern.push_back(e == 1.0 ? 1 : 0);
      }
      input.moe_layer_freq_list = std::move(pattern);
      return std::nullopt;
    }
    return issue(spec.name,
                 "must be a positive integer or a list of 0/1 per layer, got " + describe(value));
  }
};

struct FieldGetter {
  const FieldSpec& spec;
  const ConfigInput& input;
  FieldValue operator()(IntMember m) const {
    if (auto v = input.*m) return double(*v);
    return std::monostate{};
  }
  FieldValue operator()(BoolMember m) const {
    if (auto v = input.*m) return *v;
    return std::monostate{};
  }
  FieldValue operator()(NumberMember m) const {
    if (auto v = input.*m) return *v;
    return std::monostate{};
  }
  FieldValue operator()(const ChoiceTarget& target) const {
    if (auto index = target.get(input)) return std::string(spec.choices[*index]);
    return std::monostate{};
  }
  FieldValue operator()(MaskMember m) const {
    if (!(input.*m)) return std::monostate{};
    std::vector<std::string> names;
    for (size_t i = 0; i < spec.choices.size(); ++i)
      if ((*(input.*m) >> i) & 1u) names.emplace_back(spec.choices[i]);
    return names;
  }
  FieldValue operator()(MoeFreqTarget) const {
    if (input.moe_layer_freq_list)
      return std::vector<double>(input.moe_layer_freq_list->begin(), input.moe_layer_freq_list->end());
    if (input.moe_layer_freq) return double(*input.moe_layer_freq);
    return std::monostate{};
  }
};

}  // namespace

std::span<const FieldSpec> field_specs() { return spec_table(); }

const FieldSpec* find_field(std::string_view name) {
  for (const FieldSpec& spec : spec_table())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::optional<Issue> set_field(ConfigInput& input, std::string_view name, const FieldValue& value) {
  const Field* field = nullptr;
  for (const Field& f : fields())
    if (f.spec.name == name) field = &f;
  if (!field) {
    // A typo must never fall back to a default silently: name the closest known field.
    static const std::vector<std::string_view> names = [] {
      std::vector<std::string_view> out;
      for (const Field& f : fields()) out.push_back(f.spec.name);
      return out;
    }();
    return unknown_name(name, "field", names);
  }
  const FieldSpec& spec = field->spec;
  const bool is_null = std::holds_alternative<std::monostate>(value);

  return std::visit(FieldSetter{spec, value, is_null, input}, field->target);
}

FieldValue get_field(const ConfigInput& input, std::string_view name) {
  const Field* field = nullptr;
  for (const Field& f : fields())
    if (f.spec.name == name) field = &f;
  if (!field) return std::monostate{};
  return std::visit(FieldGetter{field->spec, input}, field->target);
}

ConfigInput to_input(const Config& c) {
  auto unless_zero = [](int64_t v) { return v ? std::optional<int64_t>(v) : std::nullopt; };
  ConfigInput in;
  in.profile = c.profile;
  in.num_layers = c.num_layers;
  in.hidden_size = c.hidden_size;
  in.num_attention_heads = c.num_attention_heads;
  in.num_query_groups = c.num_query_groups;
  in.kv_channels = c.kv_channels;
  in.ffn_hidden_size = c.ffn_hidden_size;
  in.vocab_size = c.vocab_size;
  in.make_vocab_size_divisible_by = c.make_vocab_size_divisible_by;
  in.max_position_embeddings = unless_zero(c.max_position_embeddings);
  in.should_pad_vocab = c.should_pad_vocab;
  in.share_embeddings_and_output_weights = c.share_embeddings_and_output_weights;
  in.gated_linear_unit = c.gated_linear_unit;
  in.activation_func = c.activation_func;
  in.normalization = c.normalization;
  in.add_bias_linear = c.add_bias_linear;
  in.add_qkv_bias = c.add_qkv_bias;
  in.qk_layernorm = c.qk_layernorm;
  in.num_moe_experts = unless_zero(c.num_moe_experts);
  if (c.is_moe()) {
    if (c.moe_layer_freq_list.empty()) in.moe_layer_freq = c.moe_layer_freq;
    else in.moe_layer_freq_list = c.moe_layer_freq_list;
    in.moe_ffn_hidden_size = c.moe_ffn_hidden_size;
    in.moe_router_topk = c.moe_router_topk;
    in.moe_shared_expert_intermediate_size = c.moe_shared_expert_intermediate_size;
    in.moe_latent_size = unless_zero(c.moe_latent_size);
    in.moe_shared_expert_gate = c.moe_shared_expert_gate;
  }
  in.mtp_num_layers = c.mtp_num_layers;
  in.multi_latent_attention = c.multi_latent_attention;
  if (c.multi_latent_attention) {
    in.q_lora_rank = unless_zero(c.q_lora_rank);
    in.kv_lora_rank = c.kv_lora_rank;
    in.qk_head_dim = c.qk_head_dim;
    in.qk_pos_emb_head_dim = c.qk_pos_emb_head_dim;
    in.v_head_dim = c.v_head_dim;
  }
  in.seq_length = c.seq_length;
  in.micro_batch_size = c.micro_batch_size;
  in.global_batch_size = unless_zero(c.global_batch_size);
  in.num_microbatches = unless_zero(c.num_microbatches);
  in.use_distributed_optimizer = c.use_distributed_optimizer;
  in.sequence_parallel = c.sequence_parallel;
  in.recompute_granularity = c.recompute_granularity;
  if (c.profile == Profile::trainmem) {
    in.framework = c.framework;
    if (c.framework == Framework::deepspeed || c.framework == Framework::fsdp2)
      in.zero_stage = c.zero_stage;
    if (c.framework == Framework::fsdp2) in.data_parallel_shard_size = c.data_parallel_shard_size;
    in.gpus_per_node = c.gpus_per_node;
    in.params_dtype = c.params_dtype;
    in.expert_params_dtype = c.expert_params_dtype;
    in.compute_dtype = c.compute_dtype;
    in.master_weights = c.master_weights;
    in.main_params_dtype = c.main_params_dtype;
    in.main_grads_dtype = c.main_grads_dtype;
    in.exp_avg_dtype = c.exp_avg_dtype;
    in.exp_avg_sq_dtype = c.exp_avg_sq_dtype;
    in.fp8_recipe = c.fp8_recipe;
    in.fp8_param_gather = c.fp8_param_gather;
    in.optimizer = c.optimizer;
    if (c.optimizer == Optimizer::sgd) in.momentum = c.momentum;
    if (c.pytorch_native()) in.optimizer_implementation = c.optimizer_implementation;
    in.optimizer_offload_fraction = c.optimizer_offload_fraction;
    in.offload_params = c.offload_params;
    in.zero_init = c.zero_init;
    in.additional_buffer_factor = c.additional_buffer_factor;
    in.gradient_as_bucket_view = c.gradient_as_bucket_view;
    if (c.gpu_memory_bytes > 0) in.gpu_memory_bytes = c.gpu_memory_bytes;
    in.allocator_fragmentation = c.allocator_fragmentation;
    in.cuda_context_bytes = c.cuda_context_bytes;
    in.nccl_bytes_per_communicator = c.nccl_bytes_per_communicator;
    in.nccl_nvls = c.nccl_nvls;
    in.workspace_bytes = c.workspace_bytes;
    in.attention_backend = c.attention_backend;
    in.attention_dropout = c.attention_dropout;
    in.hidden_dropout = c.hidden_dropout;
    if (c.moe_expert_capacity_factor > 0) in.moe_expert_capacity_factor = c.moe_expert_capacity_factor;
    if (c.recompute_granularity == RecomputeGranularity::full) {
      in.recompute_method = c.recompute_method;
      in.recompute_num_layers = unless_zero(c.recompute_num_layers);
    }
    if (c.recompute_granularity == RecomputeGranularity::selective)
      in.recompute_modules = c.recompute_modules;
    in.pipeline_schedule = c.pipeline_schedule;
    if (c.torch_pipelining()) in.pipeline_outputs = c.pipeline_outputs;
    in.cross_entropy_loss_fusion = c.cross_entropy_loss_fusion;
  }
  in.tensor_model_parallel_size = c.tensor_model_parallel_size;
  in.pipeline_model_parallel_size = c.pipeline_model_parallel_size;
  in.virtual_pipeline_model_parallel_size = unless_zero(c.virtual_pipeline_model_parallel_size);
  in.num_layers_in_first_pipeline_stage = unless_zero(c.num_layers_in_first_pipeline_stage);
  in.num_layers_in_last_pipeline_stage = unless_zero(c.num_layers_in_last_pipeline_stage);
  in.context_parallel_size = c.context_parallel_size;
  in.expert_model_parallel_size = c.expert_model_parallel_size;
  in.expert_tensor_parallel_size = c.expert_tensor_parallel_size;
  in.data_parallel_size = c.data_parallel_size;
  return in;
}

}  // namespace trainmem
