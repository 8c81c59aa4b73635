// resolve(): validation plus Megatron Core's default resolution
// (../shared/reference/megatron-formulas.md §2 and §6 item 8).
#include <algorithm>
#include <cmath>
#include <utility>
#include <variant>

#include "config/field_table.hpp"
#include "internal.hpp"
#include "trainmem/config.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/tables.hpp"

namespace trainmem {

int64_t padded_vocab_size(int64_t vocab_size, int64_t divisible_by, int64_t tensor_parallel) {
  // Megatron-LM vocab_utils.calculate_padded_vocab_size: multiple = m · t; pad up to it.
  const int64_t multiple = divisible_by * tensor_parallel;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

namespace {

// QLoRA's quantisation options (docs/trainmem-profile.md §7, "PEFT: LoRA and QLoRA"): the defaults
// as each framework sets them; their rules are rows in rules.cpp.
void derive_qlora_defaults(const ConfigInput& in, Config& c) {
  const bool torchtune = c.model_implementation == ModelImplementation::torchtune;
  // Double quantisation: torchao's NF4Tensor always quantises its scalers again
  // (torchao/dtypes/nf4tensor.py @ 0598012907d6f6e88734088a65f788c38d294a65,
  // double_quantize_scalers); transformers' BitsAndBytesConfig defaults
  // bnb_4bit_use_double_quant to False (src/transformers/utils/quantization_config.py @
  // 000e2231167497a632d7661a78f13e27b5d67a5d) and passes it as Linear4bit's compress_statistics.
  c.nf4_double_quant = in.nf4_double_quant.value_or(torchtune);
  // The output layer: transformers leaves lm_head out of the 4-bit conversion unless
  // llm_int8_skip_modules is given without it (quantizers/quantizer_bnb_4bit.py @
  // 009ba7ca964c0049263bb4ad5d9eceb3674aaa0f, get_keys_to_not_convert); torchtune's output is a
  // LoRALinear(quantize_base=True) exactly when it gets an adapter (apply_lora_to_output).
  c.quantize_lm_head = in.quantize_lm_head.value_or(torchtune && c.lora_targets(LoraTarget::lm_head));
  // bitsandbytes MatMul4Bit (autograd/_functions.py): 0.41.0 … 0.43.1 (tags a06a0f6a, 48763245)
  // keep `ctx.tensors = (A, B)`, the input of every Linear4bit; 0.43.2 (ce53caf3) keeps
  // (None, B) (PR #1270, commit 9e753741). torchtune runs torchao's linear_nf4 instead.
  c.bnb_keeps_matmul_input = in.bnb_keeps_matmul_input.value_or(false);
  // PEFT's prepare_model_for_kbit_training (src/peft/utils/other.py @ 5d602fdb) upcasts every
  // fp16/bf16 parameter that is not a Params4bit to fp32. TRL's SFTTrainer (v0.8.0 … v0.21.0,
  // trl/trainer/sft_trainer.py @ v0.12.0 80cf468a) and axolotl (src/axolotl/loaders/model.py @
  // 067b021c, _prepare_model_for_quantization) skip it for sharded QLoRA (FSDP, ZeRO-3): the
  // default there is "none"; elsewhere the call with nothing undone ("peft"), the most bytes of
  // the four (erring high when the trainer is not known).
  const bool sharded = c.framework == Framework::fsdp2 ||
                       (c.framework == Framework::deepspeed && c.zero_stage == 3);
  c.kbit_upcast = in.kbit_upcast.value_or(torchtune || sharded ? KbitUpcast::none : KbitUpcast::peft);
}

// The trainmem profile's defaults that depend on the framework (their rules are the rows of
// rules.cpp, checked after every default is derived).
void derive_trainmem_defaults(const ConfigInput& in, Config& c) {
  if (c.profile != Profile::trainmem) return;
  const Framework fw = c.framework;
  if (fw == Framework::deepspeed || fw == Framework::fsdp2) {
    c.zero_stage = in.zero_stage.value_or(fw == Framework::fsdp2 ? 3 : 0);
    // DeepSpeed zero/config.py: overlap_comm None resolves to stage == 3.
    c.overlap_comm = in.overlap_comm.value_or(fw == Framework::deepspeed && c.zero_stage == 3);
  }
  c.data_parallel_shard_size = in.data_parallel_shard_size.value_or(c.data_parallel_size);
  // QLoRA stores the frozen base linears in NF4 (bitsandbytes Linear4bit, torchtune's
  // LoRALinear(quantize_base=True)) and computes in a 16-bit dtype: bf16 unless given.
  c.params_dtype = in.params_dtype.value_or(c.peft == Peft::qlora ? Dtype::nf4
                                            : fw == Framework::ddp  ? Dtype::fp32
                                                                    : Dtype::bf16);
  c.expert_params_dtype = in.expert_params_dtype.value_or(c.params_dtype);
  c.compute_dtype = in.compute_dtype.value_or(
      fw == Framework::ddp || c.params_dtype == Dtype::nf4 || c.params_dtype == Dtype::int8 ? Dtype::bf16
                                                                                          : c.params_dtype);
  // The model's own code (issue 13 item 11). Megatron trains its own GPTModel (Megatron Core);
  // the frameworks around plain PyTorch train whatever module they are given, by default the
  // code their users run: torchtitan's models under FSDP2 (torchtitan), Hugging Face
  // transformers' models under DDP (the Trainer, Accelerate) and DeepSpeed.
  c.model_implementation = in.model_implementation.value_or(
      fw == Framework::megatron ? ModelImplementation::megatron_core
      : fw == Framework::fsdp2  ? ModelImplementation::torchtitan
                                : ModelImplementation::hf_transformers);
  if (c.peft == Peft::qlora) derive_qlora_defaults(in, c);
  // torch.utils.checkpoint's mode: transformers' gradient_checkpointing_enable() passes
  // {"use_reentrant": True} unless given gradient_checkpointing_kwargs (modeling_utils.py @
  // 040ba146759afc625c77f49d04982bb54873995f; explicit from PR #28538, torch's own default True
  // before it; False from PR #43203, after the 4.x releases); torchtune's and
  // torchtitan's checkpoint_wrapper are CheckpointImpl.NO_REENTRANT (rules.cpp refuses true there).
  c.checkpoint_reentrant = in.checkpoint_reentrant.value_or(
      c.recompute_granularity == RecomputeGranularity::full &&
      c.model_implementation == ModelImplementation::hf_transformers);
  // torchtitan's launcher turns the caching allocator's expandable segments on: run_llama_train.sh
  // sets PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True" from pytorch/torchtitan a5e57e4a
  // (2024-10-22; at 9dec370ad26b5f8e9a7333a0e36165018262644b, the commit of its December 2024
  // benchmarks, line 22), and run_train.sh, its successor, PYTORCH_ALLOC_CONF=
  // "expandable_segments:True" (@ 0168bd518f831380828e7a59266fbbb7fca3a851). The other
  // frameworks' launchers leave PyTorch's default (off); a run's own environment says otherwise.
  c.expandable_segments = in.expandable_segments.value_or(c.model_implementation == ModelImplementation::torchtitan);
  // Where FSDP1's checkpoint sits: transformers' gradient_checkpointing wraps decoder_layer.__call__,
  // which under accelerate is the layer's FullyShardedDataParallel unit (activations.cpp
  // fsdp1_kept_inputs); accelerate's fsdp_activation_checkpointing and fsdp_qlora's train.py
  // checkpoint inside the units (their importers and points say false).
  c.fsdp1_checkpoint_around_unit = in.fsdp1_checkpoint_around_unit.value_or(
      c.framework == Framework::fsdp2 && c.fsdp_version == 1 &&
      c.recompute_granularity == RecomputeGranularity::full &&
      c.model_implementation == ModelImplementation::hf_transformers);
  // transformers' gpt-oss has no SDPA path (GptOssPreTrainedModel._supports_sdpa = False,
  // src/transformers/models/gpt_oss/modeling_gpt_oss.py @ 00d4b3d2142cb4ced2f51b90614b5d26bc045015):
  // from_pretrained falls back to eager_attention_forward, with the sinks, unless a kernel that
  // takes them is asked for (attn_implementation "kernels-community/vllm-flash-attn3": flash).
  if (!in.attention_backend && c.attention_sinks && c.model_implementation == ModelImplementation::hf_transformers)
    c.attention_backend = AttentionBackend::unfused;
  c.pipeline_schedule = in.pipeline_schedule.value_or(c.virtual_pipeline_model_parallel_size > 0
                                                          ? PipelineSchedule::interleaved
                                                          : PipelineSchedule::one_f_one_b);
  // The experts' adapters are made as the others are (PEFT's lora.Linear per expert; ms-swift's
  // LoraParallelLinear in the config's params_dtype from e2f4d85a9, 2025-08-20) unless given: from
  // ea766ff5b (2025-07-10) to then ms-swift built them in fp32 and cast back only bases with a
  // `weight`, which TEGroupedLinear has not (docs/trainmem-profile.md §7).
  c.lora_expert_dtype = in.lora_expert_dtype.value_or(lora_adapter_dtype(c));
}

// The reference profiles model only Megatron's bf16 Adam, so they reject the trainmem profile's
// fields when set rather than silently answering another question.
void check_reference_profile(const ConfigInput& in, const Config& c, std::vector<Issue>& issues) {
  const auto fail = [&](std::string_view field, const std::string& rule) {
    Issue made = issue(field, rule);
    if (field != "profile") made.related.emplace_back("profile");
    issues.push_back(std::move(made));
  };
  const std::string profile = "(profile is \"" + std::string(name_of(c.profile)) + "\")";
  for (const FieldSpec& spec : field_specs())
    if (spec.trainmem_only && !std::holds_alternative<std::monostate>(get_field(in, spec.name)))
      fail(spec.name, "is read only by the trainmem profile " + profile);
  if (c.recompute_granularity == RecomputeGranularity::selective_op)
    fail("recompute_granularity", "\"selective_op\" is read only by the trainmem profile " + profile);
}

}  // namespace

Resolved resolve(const ConfigInput& in) {
  Resolved out;
  Config& c = out.config;
  std::vector<Issue>& issues = out.issues;
  copy_set_fields(in, c);  // every simple default is Config{}'s
  auto required = [&](const std::optional<int64_t>& v, FieldName name) -> int64_t {
    if (!v) {
      issues.push_back(issue(name.text, "is required (a positive integer)"));
      return 0;
    }
    return *v;
  };

  // The defaults that follow from other fields, in dependency order; the rules (rules.cpp) are
  // checked once the values they read are derived.
  c.num_layers = required(in.num_layers, field::num_layers);
  c.hidden_size = required(in.hidden_size, field::hidden_size);
  c.num_attention_heads = required(in.num_attention_heads, field::num_attention_heads);
  c.vocab_size = required(in.vocab_size, field::vocab_size);
  c.seq_length = required(in.seq_length, field::seq_length);
  c.micro_batch_size = required(in.micro_batch_size, field::micro_batch_size);
  const bool have_shape = c.num_layers > 0 && c.hidden_size > 0 && c.num_attention_heads > 0;
  if (in.swiglu.value_or(false)) {  // SwiGLU: a gated MLP with silu
    c.gated_linear_unit = true;
    c.activation_func = ActivationFunc::silu;
  }
  c.num_query_groups = in.num_query_groups.value_or(c.num_attention_heads);
  // Megatron-LM arguments.py: kv_channels defaults to h / a (rule hidden_size/heads).
  if (in.kv_channels) c.kv_channels = *in.kv_channels;
  else if (have_shape) c.kv_channels = c.hidden_size / c.num_attention_heads;
  if (in.ffn_hidden_size) {
    c.ffn_hidden_size = *in.ffn_hidden_size;
  } else if (c.profile == Profile::megatron_lm && c.gated_linear_unit && c.activation_func == ActivationFunc::silu) {
    // Megatron-LM arguments.py with --swiglu: int((4h · 2/3) / 64) · 64.
    c.ffn_hidden_size = static_cast<int64_t>((4.0 * double(c.hidden_size) * 2.0 / 3.0) / 64.0) * 64;
  } else {
    c.ffn_hidden_size = 4 * c.hidden_size;  // TransformerConfig.__post_init__
  }
  c.moe_ffn_hidden_size = in.moe_ffn_hidden_size.value_or(c.ffn_hidden_size);
  if (!c.is_moe()) c.moe_layer_freq_list.clear();  // a dense model has no MoE layers to describe

  // Parallelism.
  const int64_t t = c.tensor_model_parallel_size;
  // Megatron Core: expert_tensor_parallel_size None -> tensor_model_parallel_size
  // (megatron/core/model_parallel_config.py @ 02aa3ee454b5ff16b1bf356ec36fa0cc1c26858f, "Default
  // is None, which will be set to the value of tensor_model_parallel_size"; Megatron-LM's
  // arguments.py does the same). Every framework takes Megatron's default here; torchtitan's own
  // expert_tensor_parallel_degree defaults to 1 (set the field for such a run).
  c.expert_tensor_parallel_size = in.expert_tensor_parallel_size.value_or(t);
  // The world: DP = world_size / (TP·PP·CP) when the world is given (Megatron-LM's
  // initialize_model_parallel: data_parallel_size = world_size / (tp × pp × cp)); rules
  // world_size/divisible and world_size/equal when it does not divide or disagrees.
  std::optional<int64_t> model_parallel = checked_mul(t, c.pipeline_model_parallel_size);
  if (model_parallel) model_parallel = checked_mul(*model_parallel, c.context_parallel_size);
  if (in.world_size && model_parallel && *in.world_size % *model_parallel == 0) {
    const auto given = in.data_parallel_size ? checked_mul(*in.data_parallel_size, *model_parallel) : std::nullopt;
    if (!in.data_parallel_size || given == in.world_size) c.data_parallel_size = *in.world_size / *model_parallel;
  }
  if (model_parallel)
    if (const auto world = checked_mul(*model_parallel, c.data_parallel_size)) c.world_size = *world;
  // Megatron-LM turns sequence parallelism off when TP = 1 (arguments.py).
  c.sequence_parallel = c.sequence_parallel && t > 1;
  derive_trainmem_defaults(in, c);

  check_model_rules(in, c, issues);
  if (c.profile == Profile::trainmem) check_trainmem_rules(in, c, issues);
  else check_reference_profile(in, c, issues);
  check_fields_apply(in, c, issues);

  // The batch: microbatches per step from the global batch (rules global_batch_size/divisible,
  // num_microbatches/derived).
  if (in.global_batch_size && c.micro_batch_size > 0) {
    const auto per_step = checked_mul(c.micro_batch_size, c.data_parallel_size);
    if (per_step && c.global_batch_size % *per_step == 0) c.num_microbatches = c.global_batch_size / *per_step;
  }
  check_batch_rules(in, c, issues);
  return out;
}

Resolved resolve_read(const ConfigInput& input, std::vector<Issue> read_issues) {
  Resolved out = resolve(input);
  if (read_issues.empty()) return out;
  const size_t n_read = read_issues.size();
  for (Issue& later : out.issues) {
    bool seen = false;
    for (size_t i = 0; i < n_read; ++i) seen |= read_issues[i].field == later.field;
    if (!seen) read_issues.push_back(std::move(later));
  }
  out.issues = std::move(read_issues);
  return out;
}

}  // namespace trainmem
