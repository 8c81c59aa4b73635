// The field table, reading single fields, and resolve(): validation plus Megatron Core's
// default resolution (../shared/reference/megatron-formulas.md §2 and §6 item 8).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <variant>

#include "internal.hpp"
#include "trainmem/config.hpp"

namespace trainmem {

std::string number_text(double value) {
  char buf[64];
  if (std::isfinite(value) && std::fabs(value) < 9.007199254740992e15 &&
      value == std::floor(value)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(buf, sizeof buf, "%.15g", value);
  }
  return buf;
}

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

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string describe(const FieldValue& v) {
  struct {
    std::string operator()(std::monostate) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(double d) const { return number_text(d); }
    std::string operator()(const std::string& s) const {
      return "the string " + quoted(s.size() > 40 ? s.substr(0, 40) + "…" : s);
    }
    std::string operator()(const std::vector<double>&) const { return "a list"; }
    std::string operator()(const std::vector<std::string>&) const { return "a list"; }
  } visitor;
  return std::visit(visitor, v);
}

Issue issue(std::string_view field, const std::string& rule) {
  return {std::string(field), std::string(field) + ": " + rule};
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

std::string choice_list_text(const FieldSpec& spec) {
  std::string list;
  for (size_t i = 0; i < spec.choices.size(); ++i) list += (i ? ", " : "") + quoted(spec.choices[i]);
  return list;
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
      return issue(spec.name, "must be one of " + choice_list_text(spec) + ", got " + describe(value));
    target.set(input, index);
    return std::nullopt;
  }
  std::optional<Issue> operator()(MaskMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const auto* list = std::get_if<std::vector<std::string>>(&value);
    const auto* empty = std::get_if<std::vector<double>>(&value);  // [] parses as a number list
    if (!list && !(empty && empty->empty()))
      return issue(spec.name, "must be a list of " + choice_list_text(spec) + ", got " + describe(value));
    uint32_t mask = 0;
    if (list)
      for (const std::string& text : *list) {
        const std::optional<size_t> index = choice_index(spec, text);
        if (!index)
          return issue(spec.name, "entries must be among " + choice_list_text(spec) + ", got " +
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
    std::string_view best;
    size_t best_distance = 4;  // suggest only near misses
    for (const Field& f : fields()) {
      size_t d = edit_distance(name, f.spec.name);
      if (d < best_distance) best_distance = d, best = f.spec.name;
    }
    std::string shown(name.substr(0, 60));
    std::string rule = "unknown field";
    if (!best.empty()) rule += "; did you mean " + quoted(best) + "?";
    return Issue{shown, shown + ": " + rule};
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

int64_t padded_vocab_size(int64_t vocab_size, int64_t divisible_by, int64_t tensor_parallel) {
  // Megatron-LM vocab_utils.calculate_padded_vocab_size: multiple = m · t; pad up to it.
  const int64_t multiple = divisible_by * tensor_parallel;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

namespace {

// Fields of the trainmem profile: defaults that depend on the framework, and their rules. The
// reference profiles model only Megatron's bf16 Adam, so they reject these fields when set
// rather than silently answering another question.
void resolve_trainmem_fields(const ConfigInput& in, Config& c, std::vector<Issue>& issues) {
  auto fail = [&](std::string_view field, const std::string& rule) {
    issues.push_back(issue(field, rule));
  };
  if (c.profile != Profile::trainmem) {
    for (const FieldSpec& spec : field_specs())
      if (spec.trainmem_only && !std::holds_alternative<std::monostate>(get_field(in, spec.name)))
        fail(spec.name, "is read only by the trainmem profile (profile is \"" +
                            std::string(name_of(c.profile)) + "\")");
    if (c.recompute_granularity == RecomputeGranularity::selective_op)
      fail("recompute_granularity", "\"selective_op\" is read only by the trainmem profile "
                                    "(profile is \"" + std::string(name_of(c.profile)) + "\")");
    return;
  }
  const Framework fw = c.framework = in.framework.value_or(Framework::megatron);
  const std::string fw_name(name_of(fw));
  if (fw == Framework::deepspeed || fw == Framework::fsdp2) {
    c.zero_stage = in.zero_stage.value_or(fw == Framework::fsdp2 ? 3 : 0);
    if (fw == Framework::fsdp2 && c.zero_stage < 2)
      fail("zero_stage", "must be 2 (shard gradients and optimizer) or 3 (full shard) with fsdp2, got " +
                             std::to_string(c.zero_stage));
  } else if (in.zero_stage) {
    fail("zero_stage", "applies to deepspeed and fsdp2; framework " + fw_name +
                           (fw == Framework::megatron ? " shards with use_distributed_optimizer" : " does not shard"));
  }
  if (c.use_distributed_optimizer && fw != Framework::megatron)
    fail("use_distributed_optimizer", fw == Framework::ddp
        ? std::string("is Megatron's; framework ddp does not shard (deepspeed and fsdp2 shard with zero_stage)")
        : "is Megatron's; with framework " + fw_name + " use zero_stage instead");
  c.data_parallel_shard_size = in.data_parallel_shard_size.value_or(c.data_parallel_size);
  if (in.data_parallel_shard_size) {
    if (fw != Framework::fsdp2)
      fail("data_parallel_shard_size", "applies to fsdp2 (hybrid sharding) only");
    else if (c.data_parallel_size % c.data_parallel_shard_size != 0)
      fail("data_parallel_shard_size", "must divide data_parallel_size (" +
                                           std::to_string(c.data_parallel_size) + "), got " +
                                           std::to_string(c.data_parallel_shard_size));
  }
  c.gpus_per_node = in.gpus_per_node.value_or(8);

  c.params_dtype = in.params_dtype.value_or(fw == Framework::ddp ? Dtype::fp32 : Dtype::bf16);
  if (c.params_dtype != Dtype::fp32 && c.params_dtype != Dtype::bf16 && c.params_dtype != Dtype::fp16)
    fail("params_dtype", "must be \"fp32\", \"bf16\" or \"fp16\" (FP8 weights: fp8_param_gather), got \"" +
                             std::string(name_of(c.params_dtype)) + "\"");
  c.expert_params_dtype = in.expert_params_dtype.value_or(c.params_dtype);
  c.compute_dtype = in.compute_dtype.value_or(fw == Framework::ddp ? Dtype::bf16 : c.params_dtype);
  // Defaulted from a valid params_dtype it is valid; from an invalid one that field is named.
  if (in.compute_dtype && c.compute_dtype != Dtype::fp32 && c.compute_dtype != Dtype::bf16 &&
      c.compute_dtype != Dtype::fp16)
    fail("compute_dtype", "must be \"fp32\", \"bf16\" or \"fp16\" (FP8 matmuls: fp8_recipe), got \"" +
                              std::string(name_of(c.compute_dtype)) + "\"");
  c.master_weights = in.master_weights.value_or(true);
  c.main_params_dtype = in.main_params_dtype.value_or(Dtype::fp32);
  c.main_grads_dtype = in.main_grads_dtype.value_or(Dtype::fp32);
  c.exp_avg_dtype = in.exp_avg_dtype.value_or(Dtype::fp32);
  c.exp_avg_sq_dtype = in.exp_avg_sq_dtype.value_or(Dtype::fp32);
  for (auto [name, dtype] : {std::pair<std::string_view, Dtype>{"main_params_dtype", c.main_params_dtype},
                             {"main_grads_dtype", c.main_grads_dtype}})
    if (dtype != Dtype::fp32 && dtype != Dtype::bf16 && dtype != Dtype::fp16)
      fail(name, "must be \"fp32\", \"bf16\" or \"fp16\", got \"" + std::string(name_of(dtype)) + "\"");
  for (auto [name, dtype] : {std::pair<std::string_view, Dtype>{"exp_avg_dtype", c.exp_avg_dtype},
                             {"exp_avg_sq_dtype", c.exp_avg_sq_dtype}})
    if (dtype == Dtype::mxfp4 || dtype == Dtype::mxfp8 || dtype == Dtype::int8)
      fail(name, "must be \"fp32\", \"bf16\", \"fp16\" or \"fp8\" (8-bit states: optimizer "
                 "\"adam8bit\"), got \"" + std::string(name_of(dtype)) + "\"");
  c.fp8_recipe = in.fp8_recipe.value_or(Fp8Recipe::none);
  c.fp8_param_gather = in.fp8_param_gather.value_or(false);
  if (c.fp8_param_gather && c.fp8_recipe == Fp8Recipe::none)
    fail("fp8_param_gather", "needs an fp8_recipe");
  c.optimizer = in.optimizer.value_or(Optimizer::adam);
  c.momentum = in.momentum.value_or(0);
  if (in.momentum && c.optimizer != Optimizer::sgd)
    fail("momentum", "applies to optimizer \"sgd\" only");
  c.optimizer_implementation = in.optimizer_implementation.value_or(OptimizerImplementation::foreach);
  if (in.optimizer_implementation && !c.pytorch_native())
    fail("optimizer_implementation", "applies to frameworks ddp and fsdp2 (torch.optim); framework " +
                                     fw_name + " steps with its own fused Adam");
  c.optimizer_offload_fraction = in.optimizer_offload_fraction.value_or(0);
  c.offload_params = in.offload_params.value_or(false);
  if (c.offload_params && !((fw == Framework::deepspeed || fw == Framework::fsdp2) && c.zero_stage == 3))
    fail("offload_params", "needs sharded weights: framework deepspeed or fsdp2 with zero_stage 3");
  c.zero_init = in.zero_init.value_or(true);
  c.additional_buffer_factor = in.additional_buffer_factor.value_or(1.5);
  c.gradient_as_bucket_view = in.gradient_as_bucket_view.value_or(false);
  c.gpu_memory_bytes = in.gpu_memory_bytes.value_or(0);
  c.allocator_fragmentation = in.allocator_fragmentation.value_or(0.05);
  c.cuda_context_bytes = in.cuda_context_bytes.value_or(512.0 * 1024 * 1024);
  c.nccl_bytes_per_communicator = in.nccl_bytes_per_communicator.value_or(720.0 * 1024 * 1024);
  c.nccl_nvls = in.nccl_nvls.value_or(false);
  c.workspace_bytes = in.workspace_bytes.value_or(96.0 * 1024 * 1024);

  c.attention_backend = in.attention_backend.value_or(AttentionBackend::flash);
  c.attention_dropout = in.attention_dropout.value_or(0.1);
  c.hidden_dropout = in.hidden_dropout.value_or(0.1);
  c.moe_expert_capacity_factor = in.moe_expert_capacity_factor.value_or(0);
  c.recompute_method = in.recompute_method.value_or(RecomputeMethod::uniform);
  c.recompute_num_layers = in.recompute_num_layers.value_or(0);
  if ((in.recompute_method || in.recompute_num_layers) &&
      c.recompute_granularity != RecomputeGranularity::full)
    fail(in.recompute_method ? "recompute_method" : "recompute_num_layers",
         "applies to recompute_granularity \"full\" only");
  c.recompute_modules = in.recompute_modules.value_or(1u << unsigned(RecomputeModule::core_attn));
  if (in.recompute_modules && c.recompute_granularity != RecomputeGranularity::selective)
    fail("recompute_modules", "applies to recompute_granularity \"selective\" only");
  const bool interleaved = c.virtual_pipeline_model_parallel_size > 0;
  c.pipeline_schedule = in.pipeline_schedule.value_or(interleaved ? PipelineSchedule::interleaved
                                                                  : PipelineSchedule::one_f_one_b);
  if (c.pipeline_schedule == PipelineSchedule::interleaved && !interleaved)
    fail("pipeline_schedule", "\"interleaved\" needs virtual_pipeline_model_parallel_size");
  if (c.pipeline_schedule != PipelineSchedule::interleaved && interleaved)
    fail("pipeline_schedule", "must be \"interleaved\" with virtual_pipeline_model_parallel_size, got \"" +
                                  std::string(name_of(c.pipeline_schedule)) + "\"");
  c.pipeline_outputs = in.pipeline_outputs.value_or(PipelineOutputs::kept);
  if (in.pipeline_outputs && !c.torch_pipelining())
    fail("pipeline_outputs", "applies to frameworks ddp and fsdp2 with pipeline_model_parallel_size > 1 "
                             "(torch.distributed.pipelining)");
  c.cross_entropy_loss_fusion = in.cross_entropy_loss_fusion.value_or(false);
}

}  // namespace

Resolved resolve(const ConfigInput& in) {
  Resolved out;
  Config& c = out.config;
  std::vector<Issue>& issues = out.issues;
  auto fail = [&](std::string_view field, const std::string& rule) {
    issues.push_back(issue(field, rule));
  };
  auto required = [&](const std::optional<int64_t>& v, std::string_view name) -> int64_t {
    if (!v) {
      fail(name, "is required (a positive integer)");
      return 0;
    }
    return *v;
  };
  auto n = [](int64_t v) { return number_text(double(v)); };

  c.profile = in.profile.value_or(Profile::trainmem);
  const bool lm = c.profile == Profile::megatron_lm;

  // Model shape.
  c.num_layers = required(in.num_layers, "num_layers");
  c.hidden_size = required(in.hidden_size, "hidden_size");
  c.num_attention_heads = required(in.num_attention_heads, "num_attention_heads");
  c.vocab_size = required(in.vocab_size, "vocab_size");
  c.seq_length = required(in.seq_length, "seq_length");
  c.micro_batch_size = required(in.micro_batch_size, "micro_batch_size");
  const bool have_shape = c.num_layers > 0 && c.hidden_size > 0 && c.num_attention_heads > 0;
  if (c.profile != Profile::trainmem) {
    // Blocks without attention and models without embeddings are the trainmem profile's.
    if (in.num_attention_heads == 0)
      fail("num_attention_heads", "must be at least 1, got 0 (blocks without attention need the "
                                  "trainmem profile)");
    if (in.vocab_size == 0)
      fail("vocab_size", "must be at least 1, got 0 (a model without embeddings needs the "
                         "trainmem profile)");
    if (in.normalization == Normalization::none)
      fail("normalization", "\"none\" needs the trainmem profile");
    if (in.activation_func == ActivationFunc::identity)
      fail("activation_func", "\"identity\" needs the trainmem profile");
  }

  c.make_vocab_size_divisible_by = in.make_vocab_size_divisible_by.value_or(128);
  c.max_position_embeddings = in.max_position_embeddings.value_or(0);
  c.should_pad_vocab = in.should_pad_vocab.value_or(false);  // GPTModelProvider default (§6.8)
  c.share_embeddings_and_output_weights = in.share_embeddings_and_output_weights.value_or(true);
  c.gated_linear_unit = in.gated_linear_unit.value_or(false);
  c.activation_func = in.activation_func.value_or(ActivationFunc::gelu);
  if (in.swiglu.value_or(false)) {
    if (in.gated_linear_unit == false)
      fail("swiglu", "contradicts gated_linear_unit = false (SwiGLU is a gated MLP)");
    if (in.activation_func && *in.activation_func != ActivationFunc::silu)
      fail("swiglu", "contradicts activation_func = \"" +
                         std::string(name_of(*in.activation_func)) + "\" (SwiGLU uses silu)");
    c.gated_linear_unit = true;
    c.activation_func = ActivationFunc::silu;
  }
  c.normalization = in.normalization.value_or(Normalization::layer_norm);
  c.add_bias_linear = in.add_bias_linear.value_or(true);
  c.add_qkv_bias = in.add_qkv_bias.value_or(false);
  c.qk_layernorm = in.qk_layernorm.value_or(false);

  c.num_query_groups = in.num_query_groups.value_or(c.num_attention_heads);
  if (in.num_query_groups && have_shape && c.num_attention_heads % c.num_query_groups != 0)
    fail("num_query_groups", "must divide num_attention_heads (" + n(c.num_attention_heads) +
                                 "), got " + n(c.num_query_groups));
  if (in.kv_channels) {
    c.kv_channels = *in.kv_channels;
  } else if (have_shape) {
    // Megatron-LM arguments.py: kv_channels defaults to h / a and requires divisibility.
    if (c.hidden_size % c.num_attention_heads != 0)
      fail("hidden_size", "must be divisible by num_attention_heads (" + n(c.num_attention_heads) +
                              ") when kv_channels is unset, got " + n(c.hidden_size));
    c.kv_channels = c.hidden_size / c.num_attention_heads;
  }
  if (in.ffn_hidden_size) {
    c.ffn_hidden_size = *in.ffn_hidden_size;
  } else if (lm && c.gated_linear_unit && c.activation_func == ActivationFunc::silu) {
    // Megatron-LM arguments.py with --swiglu: int((4h · 2/3) / 64) · 64.
    c.ffn_hidden_size =
        static_cast<int64_t>((4.0 * double(c.hidden_size) * 2.0 / 3.0) / 64.0) * 64;
    if (c.hidden_size > 0 && c.ffn_hidden_size < 1)
      fail("ffn_hidden_size", "resolves to 0 for hidden_size " + n(c.hidden_size) +
                                  " with SwiGLU; set it explicitly");
  } else {
    c.ffn_hidden_size = 4 * c.hidden_size;  // TransformerConfig.__post_init__
  }

  // MoE and MTP.
  c.num_moe_experts = in.num_moe_experts.value_or(0);
  c.moe_layer_freq = in.moe_layer_freq.value_or(1);
  if (in.moe_layer_freq_list) c.moe_layer_freq_list = *in.moe_layer_freq_list;
  c.moe_ffn_hidden_size = in.moe_ffn_hidden_size.value_or(c.ffn_hidden_size);
  c.moe_router_topk = in.moe_router_topk.value_or(2);  // TransformerConfig default (§6.8)
  c.moe_shared_expert_intermediate_size = in.moe_shared_expert_intermediate_size.value_or(0);
  c.moe_latent_size = in.moe_latent_size.value_or(0);
  c.moe_shared_expert_gate = in.moe_shared_expert_gate.value_or(false);
  c.mtp_num_layers = in.mtp_num_layers.value_or(0);
  if (c.is_moe()) {
    if (!c.moe_layer_freq_list.empty() && c.num_layers > 0 &&
        int64_t(c.moe_layer_freq_list.size()) != c.num_layers)
      fail("moe_layer_freq", "list must have one entry per layer (num_layers = " +
                                 n(c.num_layers) + "), got " +
                                 n(int64_t(c.moe_layer_freq_list.size())));
    if (c.moe_router_topk > c.num_moe_experts)
      fail("moe_router_topk", "must be at most num_moe_experts (" + n(c.num_moe_experts) +
                                  "), got " + n(c.moe_router_topk));
  } else {
    c.moe_layer_freq_list.clear();  // a dense model has no MoE layers to describe
  }

  // Multi-latent attention (defaults of Megatron-LM's arguments, §2).
  c.multi_latent_attention = in.multi_latent_attention.value_or(false);
  c.q_lora_rank = in.q_lora_rank.value_or(0);
  c.kv_lora_rank = in.kv_lora_rank.value_or(32);
  c.qk_head_dim = in.qk_head_dim.value_or(128);
  c.qk_pos_emb_head_dim = in.qk_pos_emb_head_dim.value_or(64);
  c.v_head_dim = in.v_head_dim.value_or(128);

  // Parallelism.
  const int64_t t = c.tensor_model_parallel_size = in.tensor_model_parallel_size.value_or(1);
  const int64_t p = c.pipeline_model_parallel_size = in.pipeline_model_parallel_size.value_or(1);
  const int64_t v = c.virtual_pipeline_model_parallel_size =
      in.virtual_pipeline_model_parallel_size.value_or(0);
  c.num_layers_in_first_pipeline_stage = in.num_layers_in_first_pipeline_stage.value_or(0);
  c.num_layers_in_last_pipeline_stage = in.num_layers_in_last_pipeline_stage.value_or(0);
  const int64_t cp = c.context_parallel_size = in.context_parallel_size.value_or(1);
  const int64_t e = c.expert_model_parallel_size = in.expert_model_parallel_size.value_or(1);
  // Megatron Core __post_init__: expert_tensor_parallel_size None -> tensor_model_parallel_size.
  const int64_t te = c.expert_tensor_parallel_size = in.expert_tensor_parallel_size.value_or(t);
  const int64_t d = c.data_parallel_size = in.data_parallel_size.value_or(1);

  if (have_shape && c.num_attention_heads % t != 0)
    fail("num_attention_heads", "must be divisible by tensor_model_parallel_size (" + n(t) +
                                    "), got " + n(c.num_attention_heads));
  if (have_shape && !c.multi_latent_attention && c.num_query_groups % t != 0)
    fail("num_query_groups", "must be divisible by tensor_model_parallel_size (" + n(t) +
                                 "), got " + n(c.num_query_groups));

  // Megatron's column-parallel linears split their output evenly over the tensor-parallel ranks
  // (ColumnParallelLinear: divide(output_size, world_size) asserts): TP divides the MLP and the
  // shared experts' widths, ETP the routed experts'.
  bool has_dense_mlp = !c.is_moe();
  if (c.is_moe() && c.num_layers > 0) {
    if (!c.moe_layer_freq_list.empty()) {
      for (uint8_t x : c.moe_layer_freq_list) has_dense_mlp |= x == 0;
    } else {
      has_dense_mlp = c.moe_layer_freq > 1 && c.num_layers > 1;
    }
  }
  if (has_dense_mlp && c.ffn_hidden_size > 0 && c.ffn_hidden_size % t != 0)
    fail("ffn_hidden_size", "must be divisible by tensor_model_parallel_size (" + n(t) + "), got " +
                                n(c.ffn_hidden_size));
  if (c.is_moe() && c.moe_shared_expert_intermediate_size % t != 0)
    fail("moe_shared_expert_intermediate_size", "must be divisible by tensor_model_parallel_size (" +
                                                    n(t) + "), got " +
                                                    n(c.moe_shared_expert_intermediate_size));
  if (c.is_moe() && c.moe_ffn_hidden_size > 0 && c.moe_ffn_hidden_size % te != 0)
    fail("moe_ffn_hidden_size", "must be divisible by expert_tensor_parallel_size (" + n(te) +
                                    "), got " + n(c.moe_ffn_hidden_size));

  if (v > 0 && p == 1)
    fail("virtual_pipeline_model_parallel_size",
         "requires pipeline_model_parallel_size > 1 (the interleaved schedule needs pipeline stages)");
  if (c.uneven_pipeline()) {
    const int64_t first = c.num_layers_in_first_pipeline_stage;
    const int64_t last = c.num_layers_in_last_pipeline_stage;
    if (p == 1) {
      fail(first ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage",
           "requires pipeline_model_parallel_size > 1");
    } else if (c.num_layers > 0) {
      const int64_t rest_layers = c.num_layers - first - last;
      const int64_t rest_stages = p - (first ? 1 : 0) - (last ? 1 : 0);
      int64_t middle = 0;
      if (rest_stages == 0) {
        if (rest_layers != 0)
          fail("num_layers", "must equal num_layers_in_first_pipeline_stage + "
                             "num_layers_in_last_pipeline_stage (" + n(first + last) +
                                 ") when they are the only stages, got " + n(c.num_layers));
      } else if (rest_layers <= 0 || rest_layers % rest_stages != 0) {
        fail("num_layers", "the " + n(rest_layers) +
                               " layers left after the first/last pipeline stages must divide "
                               "evenly (and at least one each) over the " + n(rest_stages) +
                               " remaining stages");
      } else {
        middle = rest_layers / rest_stages;
      }
      if (v > 0) {
        bool divisible = (first % v == 0) && (last % v == 0) && (middle % v == 0);
        if (!divisible)
          fail("virtual_pipeline_model_parallel_size",
               "must divide the layer count of every pipeline stage (first " +
                   n(first ? first : middle) + ", middle " + n(middle) + ", last " +
                   n(last ? last : middle) + "), got " + n(v));
      }
    }
  } else if (p > 1 && c.num_layers > 0) {
    const int64_t per = v > 0 ? p * v : p;  // p, v <= 10^9 and 10^6: no overflow
    if (c.num_layers % per != 0) {
      if (v > 0)
        fail("num_layers", "must be divisible by pipeline_model_parallel_size × "
                           "virtual_pipeline_model_parallel_size (" + n(p) + " × " + n(v) +
                               "), got " + n(c.num_layers));
      else
        fail("num_layers", "must be divisible by pipeline_model_parallel_size (" + n(p) +
                               "), got " + n(c.num_layers));
    }
  }

  if (c.is_moe()) {
    if (c.num_moe_experts % e != 0)
      fail("num_moe_experts", "must be divisible by expert_model_parallel_size (" + n(e) +
                                  "), got " + n(c.num_moe_experts));
    // Expert data-parallel size = DP·TP·CP / (EP·ETP) must be a whole number of ranks.
    auto dense_ranks = checked_mul(d, t);
    if (dense_ranks) dense_ranks = checked_mul(*dense_ranks, cp);
    auto expert_ranks = checked_mul(e, te);
    if (!dense_ranks || !expert_ranks)
      fail("data_parallel_size", "the parallel sizes multiply to more ranks than can be counted");
    else if (*dense_ranks % *expert_ranks != 0)
      fail("expert_model_parallel_size",
           "expert_model_parallel_size × expert_tensor_parallel_size (" + n(e) + " × " + n(te) +
               ") must divide data_parallel_size × tensor_model_parallel_size × "
               "context_parallel_size (" + n(d) + " × " + n(t) + " × " + n(cp) + ")");
  } else if (e > 1) {
    fail("expert_model_parallel_size", "must be 1 for a dense model (num_moe_experts is unset), got " +
                                           n(e));
  }

  // Training.
  c.use_distributed_optimizer = in.use_distributed_optimizer.value_or(false);
  c.recompute_granularity = in.recompute_granularity.value_or(RecomputeGranularity::none);
  // Megatron-LM turns sequence parallelism off when TP = 1 (arguments.py).
  c.sequence_parallel = in.sequence_parallel.value_or(false) && t > 1;
  if (c.is_moe() && t > 1 && e > 1 && !c.sequence_parallel)
    fail("sequence_parallel", "must be true when an MoE model uses both tensor_model_parallel_size "
                              "> 1 and expert_model_parallel_size > 1 (Megatron requires it)");
  if (c.seq_length > 0) {
    int64_t divisor = 1;
    std::string why;
    if (cp > 1) divisor = 2 * cp, why = "2 × context_parallel_size (" + n(cp) + ")";
    if (c.sequence_parallel) {
      auto with_tp = checked_mul(divisor, t);
      divisor = with_tp.value_or(0);
      why += (why.empty() ? "" : " × ") + std::string("tensor_model_parallel_size (") + n(t) +
             ") with sequence_parallel";
    }
    if (divisor == 0 || (divisor > 1 && c.seq_length % divisor != 0))
      fail("seq_length", "must be divisible by " + why + ", got " + n(c.seq_length));
  }

  resolve_trainmem_fields(in, c, issues);

  c.global_batch_size = in.global_batch_size.value_or(0);
  c.num_microbatches = in.num_microbatches.value_or(0);
  if (in.global_batch_size && c.micro_batch_size > 0) {
    auto per_step = checked_mul(c.micro_batch_size, d);
    if (!per_step || c.global_batch_size % *per_step != 0) {
      fail("global_batch_size", "must be divisible by micro_batch_size × data_parallel_size (" +
                                    n(c.micro_batch_size) + " × " + n(d) + "), got " +
                                    n(c.global_batch_size));
    } else {
      const int64_t derived = c.global_batch_size / *per_step;
      if (in.num_microbatches && *in.num_microbatches != derived)
        fail("num_microbatches", "must equal global_batch_size / (micro_batch_size × "
                                 "data_parallel_size) = " + n(derived) + ", got " +
                                     n(*in.num_microbatches));
      c.num_microbatches = derived;
    }
  }
  return out;
}

}  // namespace trainmem
