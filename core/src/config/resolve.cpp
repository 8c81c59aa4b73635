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

namespace trainmem {

int64_t padded_vocab_size(int64_t vocab_size, int64_t divisible_by, int64_t tensor_parallel) {
  // Megatron-LM vocab_utils.calculate_padded_vocab_size: multiple = m · t; pad up to it.
  const int64_t multiple = divisible_by * tensor_parallel;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

namespace {

// An issue with the other fields its rule involves (Issue::related), its own field left out (a
// rule about a field chosen at run time may name the field itself).
Issue with_related(Issue made, std::initializer_list<FieldName> related) {
  for (FieldName name : related)
    if (name.text != made.field) made.related.emplace_back(name.text);
  return made;
}


// Fine-tuning and memory-saving techniques (issue 13): where each framework supports them, from
// the sources cited in docs/trainmem-profile.md §7.
void resolve_finetuning_fields(const ConfigInput& in, Config& c, std::vector<Issue>& issues) {
  auto fail = [&](std::string_view field, const std::string& rule, std::initializer_list<FieldName> related = {}) {
    issues.push_back(with_related(issue(field, rule), related));
  };
  auto n = [](double v) { return number_text(v); };
  const Framework fw = c.framework;
  // Message parts are built only when a message is (resolve runs on every keystroke).
  const auto fw_name = [&] { return std::string(name_of(fw)); };
  const int64_t pp = c.pipeline_model_parallel_size;
  const auto recompute = [&] { return quoted(name_of(c.recompute_granularity)); };

  if (c.peft_on()) {
    const auto peft = [&] { return quoted(name_of(c.peft)); };
    if (c.peft == Peft::qlora && fw == Framework::megatron)
      fail("peft", "\"qlora\" needs framework ddp, fsdp2 or deepspeed (bitsandbytes or torchao NF4 "
                   "linears; Megatron has none), got framework megatron", {field::framework});
    if (c.fp8_recipe != Fp8Recipe::none)
      fail("fp8_recipe", "must be \"none\" with peft " + peft() +
                             " (FP8 copies of frozen weights are not modelled), got " + quoted(name_of(c.fp8_recipe)), {field::peft});
    if (c.multi_latent_attention)
      fail("peft", "is not modelled with multi_latent_attention (its projections are not among "
                   "lora_target_modules)", {field::multi_latent_attention, field::lora_target_modules});
    if (c.recompute_granularity == RecomputeGranularity::selective_op)
      fail("recompute_granularity", "\"selective_op\" (torchtitan's per-op policy) is not modelled "
                                    "with peft " + peft(), {field::peft});
    const auto has = [&](LoraTarget t) { return c.lora_targets(t); };
    if (c.lora_target_modules == 0)
      fail("lora_target_modules", "must name at least one module with peft " + peft(), {field::peft});
    if (has(LoraTarget::gate_proj) && !c.gated_linear_unit)
      fail("lora_target_modules", "\"gate_proj\" needs gated_linear_unit (the MLP has no gate)", {field::gated_linear_unit});
    // Adapters on experts: in an MoE model the MLP targets are the routed experts' linears, as
    // PEFT's suffix match finds them in transformers' per-expert loop (Mixtral's
    // block_sparse_moe.experts.N.w1/w3/w2, Qwen3-MoE's mlp.experts.N.gate_proj/up_proj/down_proj:
    // one lora.Linear per expert; tuners/lora/model.py _create_and_replace). Only that block's
    // saved tensors are walked (activations.cpp mixtral_moe); the grouped experts of torchtune,
    // torchtitan and Megatron Core and the shared or latent experts stand on Megatron Core's
    // rules, which know no adapter.
    if (c.is_moe() &&
        (has(LoraTarget::gate_proj) || has(LoraTarget::up_proj) || has(LoraTarget::down_proj))) {
      if (c.model_implementation != ModelImplementation::hf_transformers)
        fail("lora_target_modules", "\"gate_proj\", \"up_proj\" and \"down_proj\" on the experts of "
                                    "an MoE model are modelled for model_implementation "
                                    "\"hf-transformers\" only (PEFT on each expert's linears), got " +
                                        quoted(name_of(c.model_implementation)), {field::model_implementation});
      else if (c.moe_shared_expert_intermediate_size > 0 || c.moe_latent_size > 0)
        fail("lora_target_modules", "\"gate_proj\", \"up_proj\" and \"down_proj\" on an MoE model "
                                    "with shared or latent experts are not modelled (adapters on the "
                                    "routed experts only, Mixtral and Qwen3-MoE style)");
    }
    if (c.num_attention_heads == 0 && (has(LoraTarget::q_proj) || has(LoraTarget::k_proj) ||
                                       has(LoraTarget::v_proj) || has(LoraTarget::o_proj)))
      fail("lora_target_modules", "q_proj, k_proj, v_proj and o_proj need attention "
                                  "(num_attention_heads is 0)", {field::num_attention_heads});
    if (c.vocab_size == 0 && has(LoraTarget::lm_head))
      fail("lora_target_modules", "\"lm_head\" needs an output layer (vocab_size is 0)", {field::vocab_size});
    // modules_to_save is Hugging Face PEFT's (ModulesToSaveWrapper); torchtune, torchtitan and
    // Megatron-Bridge have no such option.
    if (c.lora_modules_to_save != 0) {
      if (c.model_implementation != ModelImplementation::hf_transformers)
        fail("lora_modules_to_save", "is Hugging Face PEFT's modules_to_save: needs model_implementation "
                                     "\"hf-transformers\", got " + quoted(name_of(c.model_implementation)), {field::model_implementation});
      if (c.vocab_size == 0)
        fail("lora_modules_to_save", "embed_tokens and lm_head need a vocabulary (vocab_size is 0)", {field::vocab_size});
      if (c.saves(SavedModule::lm_head) && has(LoraTarget::lm_head))
        fail("lora_modules_to_save", "\"lm_head\" is also in lora_target_modules: PEFT trains a "
                                     "module to save whole and puts no adapter on it; name it in one "
                                     "of the two", {field::lora_target_modules});
    }
    // A target in → out gets A: in × r and B: r × out (PEFT lora/layer.py update_layer), and
    // rank(B·A) ≤ min(in, out): a larger r adds parameters and memory but no rank. PEFT does not
    // refuse it; a rank above a target's smaller side is taken for a mistake (often lora_alpha
    // given as the rank) rather than counted.
    struct Side {
      LoraTarget target;
      double in, out;  // doubles: products of sizes up to 10^12 each
    };
    // Sides of 0 are targets the rules above reject (no attention, no gate); in an MoE model the
    // MLP targets are the experts'.
    const double h = double(c.hidden_size), q = double(c.num_attention_heads) * double(c.kv_channels),
                 kv = double(c.num_query_groups) * double(c.kv_channels),
                 f = c.is_moe() ? double(c.moe_ffn_hidden_size) : double(c.ffn_hidden_size);
    const Side sides[] = {{LoraTarget::q_proj, h, q},
                          {LoraTarget::k_proj, h, kv},
                          {LoraTarget::v_proj, h, kv},
                          {LoraTarget::o_proj, q, h},
                          {LoraTarget::gate_proj, h, c.gated_linear_unit ? f : 0},
                          {LoraTarget::up_proj, h, f},
                          {LoraTarget::down_proj, f, h},
                          {LoraTarget::lm_head, h, double(c.vocab_size)}};
    const Side* narrowest = nullptr;
    for (const Side& side : sides)
      if (has(side.target) && side.in > 0 && side.out > 0 &&
          (!narrowest || std::min(side.in, side.out) < std::min(narrowest->in, narrowest->out)))
        narrowest = &side;
    if (narrowest && double(c.lora_rank) > std::min(narrowest->in, narrowest->out))
      fail("lora_rank", "must be at most the smaller dimension of every target (rank(B·A) ≤ "
                        "min(in, out)); " + std::string(name_of(narrowest->target)) + " is " +
                            n(narrowest->in) + " → " + n(narrowest->out) + ", got " +
                            n(double(c.lora_rank)));
  }

  // QLoRA's quantisation options (docs/trainmem-profile.md §7, "PEFT: LoRA and QLoRA").
  if (c.peft == Peft::qlora) {
    const bool torchtune = c.model_implementation == ModelImplementation::torchtune;
    // Double quantisation: torchao's NF4Tensor always quantises its scalers again
    // (torchao/dtypes/nf4tensor.py @ 0598012907d6f6e88734088a65f788c38d294a65,
    // double_quantize_scalers); transformers' BitsAndBytesConfig defaults
    // bnb_4bit_use_double_quant to False (src/transformers/utils/quantization_config.py @
    // 000e2231167497a632d7661a78f13e27b5d67a5d) and passes it as Linear4bit's compress_statistics.
    c.nf4_double_quant = in.nf4_double_quant.value_or(torchtune);
    if (torchtune && !c.nf4_double_quant)
      fail("nf4_double_quant", "must be true with model_implementation \"torchtune\" (torchao's "
                               "NF4Tensor always double-quantises its block scales)", {field::model_implementation});
    // The output layer: transformers leaves lm_head out of the 4-bit conversion unless
    // llm_int8_skip_modules is given without it (quantizers/quantizer_bnb_4bit.py @
    // 009ba7ca964c0049263bb4ad5d9eceb3674aaa0f, get_keys_to_not_convert); torchtune's output is a
    // LoRALinear(quantize_base=True) exactly when it gets an adapter (apply_lora_to_output).
    const bool output_adapter = c.lora_targets(LoraTarget::lm_head);
    c.quantize_lm_head = in.quantize_lm_head.value_or(torchtune && output_adapter);
    if (c.quantize_lm_head) {
      if (c.vocab_size == 0)
        fail("quantize_lm_head", "needs an output layer (vocab_size is 0)", {field::vocab_size});
      else if (c.share_embeddings_and_output_weights)
        fail("quantize_lm_head", "is not modelled with share_embeddings_and_output_weights (a "
                                 "quantised lm_head no longer shares the embedding's weight; "
                                 "transformers keeps tied weights unconverted by default)", {field::share_embeddings_and_output_weights});
      if (c.fused_linear_cross_entropy)
        fail("quantize_lm_head", "is not modelled with fused_linear_cross_entropy (Liger multiplies "
                                 "by lm_head.weight itself, not by a 4-bit linear)", {field::fused_linear_cross_entropy});
    }
    if (torchtune && c.quantize_lm_head != output_adapter)
      fail("quantize_lm_head", output_adapter
                                   ? "must be true with model_implementation \"torchtune\" and an "
                                     "lm_head adapter (the output is a LoRALinear with quantize_base)"
                                   : "needs lm_head among lora_target_modules with model_implementation "
                                     "\"torchtune\" (only a LoRALinear base is quantised)", {field::model_implementation, field::lora_target_modules});

    // bitsandbytes MatMul4Bit (autograd/_functions.py): 0.41.0 … 0.43.1 (tags a06a0f6a, 48763245)
    // keep `ctx.tensors = (A, B)`, the input of every Linear4bit; 0.43.2 (ce53caf3) keeps
    // (None, B) (PR #1270, commit 9e753741). torchtune runs torchao's linear_nf4 instead.
    c.bnb_keeps_matmul_input = in.bnb_keeps_matmul_input.value_or(false);
    if (torchtune && c.bnb_keeps_matmul_input)
      fail("bnb_keeps_matmul_input", "must be false with model_implementation \"torchtune\" (torchao's "
                                     "NF4Tensor and linear_nf4, not bitsandbytes' MatMul4Bit)", {field::model_implementation});
    // PEFT's prepare_model_for_kbit_training (src/peft/utils/other.py @ 5d602fdb) upcasts every
    // fp16/bf16 parameter that is not a Params4bit to fp32. TRL's SFTTrainer (v0.8.0 … v0.21.0,
    // trl/trainer/sft_trainer.py @ v0.12.0 80cf468a) and axolotl (src/axolotl/loaders/model.py @
    // 067b021c, _prepare_model_for_quantization) skip it for sharded QLoRA (FSDP, ZeRO-3): the
    // default there is "none"; elsewhere the call with nothing undone ("peft"), the most bytes of
    // the four (erring high when the trainer is not known).
    const bool sharded = c.framework == Framework::fsdp2 ||
                         (c.framework == Framework::deepspeed && c.zero_stage == 3);
    c.kbit_upcast = in.kbit_upcast.value_or(torchtune || sharded ? KbitUpcast::none : KbitUpcast::peft);
    if (torchtune && c.kbit_upcast != KbitUpcast::none)
      fail("kbit_upcast", "must be \"none\" with model_implementation \"torchtune\" (torchtune "
                          "does not call PEFT's prepare_model_for_kbit_training)", {field::model_implementation});
    else if (sharded && (c.kbit_upcast == KbitUpcast::trl || c.kbit_upcast == KbitUpcast::axolotl))
      fail("kbit_upcast", std::string("\"") + std::string(name_of(c.kbit_upcast)) +
                              "\" does not exist with framework fsdp2 or deepspeed zero_stage 3 "
                              "(TRL and axolotl skip prepare_model_for_kbit_training for sharded "
                              "QLoRA): use \"none\", or \"peft\" for a script that calls it itself", {field::framework, field::zero_stage, field::peft});
  }

  // torchtune optimizer_in_bwd (recipes/full_finetune_single_device.py and
  // full_finetune_distributed.py with FSDP2) steps in post-accumulate-grad hooks; it refuses
  // gradient accumulation. Megatron and DeepSpeed step after backward.
  if (c.optimizer_in_backward) {
    if (fw == Framework::megatron || fw == Framework::deepspeed)
      fail("optimizer_in_backward", "applies to frameworks ddp and fsdp2 (torchtune's "
                                    "optimizer_in_bwd); framework " + fw_name() +
                                        " steps its optimizer after backward", {field::framework, field::optimizer});
    else if (fw == Framework::ddp && c.data_parallel_size > 1)
      fail("optimizer_in_backward", "with framework ddp needs data_parallel_size 1 (DDP all-reduces "
                                    "its gradient buckets after the hooks have run), got " +
                                        n(double(c.data_parallel_size)), {field::framework, field::data_parallel_size});
    if (pp > 1)
      fail("optimizer_in_backward", "needs pipeline_model_parallel_size 1 (a pipeline accumulates "
                                    "gradients over its microbatches), got " + n(double(pp)), {field::pipeline_model_parallel_size});
  }

  // Megatron TransformerConfig.__post_init__ (002526d81b81): no CPU offloading with pipeline
  // parallelism or with activation recomputation. DeepSpeed offloads what its activation
  // checkpointing saves (checkpointing.py, CPU_CHECKPOINT). torchtune pipelines nothing.
  if (c.activation_offload) {
    if (pp > 1)
      fail("activation_offload", "needs pipeline_model_parallel_size 1 (Megatron has no pipeline "
                                 "parallelism with CPU offloading), got " + n(double(pp)), {field::pipeline_model_parallel_size});
    if (fw == Framework::megatron && c.recompute_granularity != RecomputeGranularity::none)
      fail("activation_offload", "with framework megatron needs recompute_granularity \"none\" "
                                 "(Megatron's CPU offloading does not work with activation "
                                 "recomputation), got " + recompute(), {field::framework, field::recompute_granularity});
    if (fw == Framework::deepspeed && c.recompute_granularity != RecomputeGranularity::full)
      fail("activation_offload", "with framework deepspeed needs recompute_granularity \"full\" "
                                 "(cpu_checkpointing moves the checkpointed layer inputs), got " +
                                     recompute(), {field::framework, field::recompute_granularity});
  }

  // torch.compile runs the PyTorch implementations' own modules (torchtune training/_compile.py
  // compile_model, torchtitan apply_compile, transformers Trainer torch_compile); Megatron Core's
  // Transformer Engine layers are not torch.compile'd. MLA's rules are Megatron Core's standing in
  // for every implementation, so what a compiled MLA layer keeps is not derived.
  if (c.torch_compile) {
    if (!c.eager_model())
      fail("torch_compile", "needs model_implementation hf-transformers, torchtune or torchtitan "
                            "(Megatron Core's Transformer Engine layers are not torch.compile'd)", {field::model_implementation});
    if (c.multi_latent_attention)
      fail("torch_compile", "is not modelled with multi_latent_attention (its saved tensors are "
                            "Megatron Core's rules standing in for every implementation)", {field::multi_latent_attention});
  }

  // Liger Kernel's fused linear cross entropy replaces the output layer and the loss of the
  // Hugging Face models it patches (liger_kernel/transformers/model/*.py lce_forward, which hands
  // LigerForCausalLMLoss the hidden states and lm_head.weight), on one GPU's whole vocabulary.
  // Both kernels below replace the output layer and the loss of the transformers models they
  // patch: those models only, with the whole output layer on each GPU.
  const auto patches_hf_output = [&](std::string_view field, const std::string& patches, const std::string& whole) {
    if (c.model_implementation != ModelImplementation::hf_transformers)
      fail(field, patches + ": needs model_implementation \"hf-transformers\", got " +
                      quoted(name_of(c.model_implementation)), {field::model_implementation});
    if (c.tensor_model_parallel_size > 1)
      fail(field, whole + ": needs tensor_model_parallel_size 1, got " + n(c.tensor_model_parallel_size), {field::tensor_model_parallel_size});
  };
  if (c.fused_linear_cross_entropy) {
    patches_hf_output("fused_linear_cross_entropy", "patches Hugging Face transformers' models",
                      "multiplies by the whole output layer on each GPU");
    if (c.cross_entropy_loss_fusion)
      fail("fused_linear_cross_entropy", "is a loss of its own: not with cross_entropy_loss_fusion", {field::cross_entropy_loss_fusion});
    if (c.peft_on() && c.lora_targets(LoraTarget::lm_head))
      fail("fused_linear_cross_entropy", "reads lm_head.weight directly, so an lm_head adapter "
                                         "would not take part: drop lm_head from lora_target_modules", {field::lora_target_modules});
  }

  // Apple's Cut Cross Entropy replaces the output layer and the loss of the transformers models
  // its cce_patch patches (cut_cross_entropy/transformers/*.py: apply_lce(hidden_states,
  // lm_head.weight, labels)); axolotl's CutCrossEntropyPlugin applies it. Its backward asserts
  // 16-bit embeddings and classifier (apple/ml-cross-entropy cut_cross_entropy/cce_backward.py @
  // 18e76ada05706ad9bc672804a35a940a07a21a13, cce_backward_kernel: "Backwards requires embeddings
  // to be bf16 or fp16"), and axolotl refuses it without bf16 or fp16 (integrations/
  // cut_cross_entropy/args.py @ 1188fdc1185e0c5c2c1b6082cb9e40021fcd1f47, check_dtype_is_half).
  if (c.cut_cross_entropy) {
    const auto half = [](Dtype d) { return d == Dtype::bf16 || d == Dtype::fp16; };
    const Dtype weight = c.params_dtype == Dtype::nf4 ? c.compute_dtype : c.params_dtype;
    patches_hf_output("cut_cross_entropy", "patches Hugging Face transformers' models (cce_patch)",
                      "is modelled on the whole output layer on each GPU");
    if (!half(weight) || !half(c.compute_dtype))
      fail("cut_cross_entropy", "needs the output layer's weight and the compute dtype in bf16 or fp16 "
                                "(its backward kernel asserts 16-bit inputs), got params_dtype " +
                                    quoted(name_of(c.params_dtype)) + " and compute_dtype " +
                                    quoted(name_of(c.compute_dtype)), {field::params_dtype, field::compute_dtype});
    if (c.cross_entropy_loss_fusion || c.fused_linear_cross_entropy || c.cross_entropy_chunks > 1)
      fail("cut_cross_entropy", "is a loss of its own: not with cross_entropy_loss_fusion, "
                                "fused_linear_cross_entropy or cross_entropy_chunks", {field::cross_entropy_loss_fusion, field::fused_linear_cross_entropy, field::cross_entropy_chunks});
    if (c.peft_on() && c.lora_targets(LoraTarget::lm_head))
      fail("cut_cross_entropy", "with an lm_head adapter is not modelled (newer releases fold the "
                                "adapter into a wider classifier); drop lm_head from "
                                "lora_target_modules", {field::lora_target_modules});
    if (c.quantize_lm_head)
      fail("cut_cross_entropy", "is not modelled with quantize_lm_head (the kernel reads a 16-bit "
                                "lm_head.weight)", {field::quantize_lm_head});
  }

  // bitsandbytes has paged Adam, AdamW, their 8-bit forms and Lion (bitsandbytes/optim).
  if (c.paged_optimizer) {
    const Optimizer o = c.optimizer;
    if (o != Optimizer::adam && o != Optimizer::adamw && o != Optimizer::adam8bit && o != Optimizer::lion)
      fail("paged_optimizer", "bitsandbytes pages the states of adam, adamw, adam8bit and lion, got "
                              "optimizer " + quoted(name_of(o)), {field::optimizer});
    if (fw == Framework::megatron)
      fail("paged_optimizer", "applies to frameworks ddp, fsdp2 and deepspeed (a bitsandbytes "
                              "optimizer); framework megatron steps with its own optimizer", {field::optimizer, field::framework});
    if (c.optimizer_offload_fraction > 0)
      fail("paged_optimizer", "cannot be combined with optimizer_offload_fraction (the states are "
                              "paged, not offloaded), got " + n(c.optimizer_offload_fraction), {field::optimizer_offload_fraction});
    if (in.optimizer_implementation && c.pytorch_native())
      fail("optimizer_implementation", "does not apply with paged_optimizer (bitsandbytes steps in "
                                       "its own kernel)", {field::paged_optimizer});
  }

  if (c.cross_entropy_chunks > 1) {
    if (fw == Framework::megatron)
      fail("cross_entropy_chunks", "applies to frameworks ddp, fsdp2 and deepspeed (torchtune's "
                                   "CEWithChunkedOutputLoss); framework megatron computes a "
                                   "vocab-parallel cross entropy", {field::framework});
    else if (c.cross_entropy_loss_fusion)
      fail("cross_entropy_chunks", "chunks the fp32 copy of the unfused loss; "
                                   "cross_entropy_loss_fusion keeps none", {field::cross_entropy_loss_fusion});
    else if (c.model_implementation == ModelImplementation::torchtitan)
      fail("cross_entropy_chunks", "is torchtune's CEWithChunkedOutputLoss (or axolotl's copy of it "
                                   "for transformers' models): needs model_implementation \"torchtune\", "
                                   "\"hf-transformers\" (or \"megatron-core\"), got \"torchtitan\"", {field::model_implementation});
    // axolotl's chunked_cross_entropy (src/axolotl/monkeypatch/loss/chunked.py @
    // 01b75c129d7b3014c2524cd270075b5653fe6735) replaces transformers' ForCausalLMLoss: it chunks
    // the model's whole logits, on one GPU's whole vocabulary.
    else if (c.model_implementation == ModelImplementation::hf_transformers) {
      if (c.fused_linear_cross_entropy)
        fail("cross_entropy_chunks", "chunks the logits of transformers' loss; fused_linear_cross_entropy "
                                     "makes none", {field::fused_linear_cross_entropy});
      if (c.tensor_model_parallel_size > 1)
        fail("cross_entropy_chunks", "with model_implementation \"hf-transformers\" (axolotl's "
                                     "chunked_cross_entropy) is modelled on one GPU's whole vocabulary: "
                                     "needs tensor_model_parallel_size 1, got " +
                                         n(c.tensor_model_parallel_size), {field::model_implementation, field::tensor_model_parallel_size});
    }
  }
}

// The model's own code (issue 13 item 11). Megatron trains its own GPTModel (Megatron Core); the
// frameworks around plain PyTorch train whatever module they are given, by default the code
// their users run: torchtitan's models under FSDP2 (torchtitan), Hugging Face transformers'
// models under DDP (the Trainer, Accelerate) and DeepSpeed.
void resolve_model_implementation(const ConfigInput& in, Config& c, std::vector<Issue>& issues) {
  const Framework fw = c.framework;
  c.model_implementation = in.model_implementation.value_or(
      fw == Framework::megatron ? ModelImplementation::megatron_core
      : fw == Framework::fsdp2  ? ModelImplementation::torchtitan
                                : ModelImplementation::hf_transformers);
  const auto impl = [&] { return quoted(name_of(c.model_implementation)); };
  if (fw == Framework::megatron && c.model_implementation != ModelImplementation::megatron_core)
    issues.push_back(with_related(issue("model_implementation",
                                        "must be \"megatron-core\" with framework megatron (Megatron trains its "
                                        "own GPTModel), got " + impl()),
                                  {field::framework}));
  if (c.recompute_granularity == RecomputeGranularity::selective && c.eager_model())
    issues.push_back(with_related(issue("recompute_granularity",
                                        "\"selective\" recomputes Megatron Core's modules (recompute_modules); "
                                        "model_implementation " + impl() + " checkpoints whole layers (\"full\")" +
                                            (c.model_implementation == ModelImplementation::torchtitan
                                                 ? std::string(" or per op (\"selective_op\")")
                                                 : std::string())),
                                  {field::recompute_modules, field::model_implementation}));
  if (c.recompute_granularity == RecomputeGranularity::selective_op &&
      c.model_implementation != ModelImplementation::torchtitan)
    issues.push_back(with_related(issue("recompute_granularity",
                                        "\"selective_op\" is torchtitan's per-op checkpointing: needs "
                                        "model_implementation \"torchtitan\", got " + impl()),
                                  {field::model_implementation}));
}

// Fields of the trainmem profile: defaults that depend on the framework, and their rules. The
// reference profiles model only Megatron's bf16 Adam, so they reject these fields when set
// rather than silently answering another question.
void resolve_trainmem_fields(const ConfigInput& in, Config& c, std::vector<Issue>& issues) {
  auto fail = [&](std::string_view field, const std::string& rule, std::initializer_list<FieldName> related = {}) {
    issues.push_back(with_related(issue(field, rule), related));
  };
  if (c.profile != Profile::trainmem) {
    for (const FieldSpec& spec : field_specs())
      if (spec.trainmem_only && !std::holds_alternative<std::monostate>(get_field(in, spec.name)))
        fail(spec.name, "is read only by the trainmem profile (profile is \"" +
                            std::string(name_of(c.profile)) + "\")", {field::profile});
    if (c.recompute_granularity == RecomputeGranularity::selective_op)
      fail("recompute_granularity", "\"selective_op\" is read only by the trainmem profile "
                                    "(profile is \"" + std::string(name_of(c.profile)) + "\")", {field::profile});
    return;
  }
  const Framework fw = c.framework;
  // Message parts are built only when a message is (resolve runs on every keystroke).
  const auto fw_name = [&] { return std::string(name_of(fw)); };
  if (fw == Framework::deepspeed || fw == Framework::fsdp2) {
    c.zero_stage = in.zero_stage.value_or(fw == Framework::fsdp2 ? 3 : 0);
    // DeepSpeed zero/config.py: overlap_comm None resolves to stage == 3.
    c.overlap_comm = in.overlap_comm.value_or(fw == Framework::deepspeed && c.zero_stage == 3);
    if (fw == Framework::fsdp2 && c.zero_stage < 2)
      fail("zero_stage", "must be 2 (shard gradients and optimizer) or 3 (full shard) with fsdp2, got " +
                             std::to_string(c.zero_stage), {field::optimizer});
    // FSDP1 (fsdp_version 1) is modelled without pipelining only: torch.distributed.pipelining,
    // as torchtitan runs it, composes with fully_shard (FSDP2).
    if (fw == Framework::fsdp2 && c.fsdp_version == 1 && c.pipeline_model_parallel_size > 1)
      fail("fsdp_version", "1 (FullyShardedDataParallel) is not modelled with pipeline_model_parallel_size above 1 "
                           "(torch.distributed.pipelining runs with fully_shard, fsdp_version 2)",
           {field::pipeline_model_parallel_size});
  } else if (in.zero_stage) {
    fail("zero_stage", "applies to deepspeed and fsdp2; framework " + fw_name() +
                           (fw == Framework::megatron ? " shards with use_distributed_optimizer" : " does not shard"), {field::framework, field::use_distributed_optimizer});
  }
  if (c.use_distributed_optimizer && fw != Framework::megatron)
    fail("use_distributed_optimizer", fw == Framework::ddp
        ? std::string("is Megatron's; framework ddp does not shard (deepspeed and fsdp2 shard with zero_stage)")
        : "is Megatron's; with framework " + fw_name() + " use zero_stage instead", {field::framework, field::zero_stage});
  c.data_parallel_shard_size = in.data_parallel_shard_size.value_or(c.data_parallel_size);
  if (in.data_parallel_shard_size && fw == Framework::fsdp2 &&
      c.data_parallel_size % c.data_parallel_shard_size != 0)
    fail("data_parallel_shard_size", "must divide data_parallel_size (" +
                                         std::to_string(c.data_parallel_size) + "), got " +
                                         std::to_string(c.data_parallel_shard_size), {field::data_parallel_size});

  // QLoRA stores the frozen base linears in NF4 (bitsandbytes Linear4bit, torchtune's
  // LoRALinear(quantize_base=True)) and computes in a 16-bit dtype: bf16 unless given.
  const bool qlora = c.peft == Peft::qlora;
  const auto peft_name = [&] { return quoted(name_of(c.peft)); };
  c.params_dtype = in.params_dtype.value_or(qlora ? Dtype::nf4
                                                  : fw == Framework::ddp ? Dtype::fp32 : Dtype::bf16);
  if (c.params_dtype == Dtype::nf4) {
    if (!qlora)
      fail("params_dtype", "\"nf4\" needs peft \"qlora\" (a frozen 4-bit base), got peft " + peft_name(), {field::peft});
  } else if (c.params_dtype != Dtype::fp32 && c.params_dtype != Dtype::bf16 && c.params_dtype != Dtype::fp16) {
    fail("params_dtype", "must be \"fp32\", \"bf16\" or \"fp16\" (FP8 weights: fp8_param_gather), got " + quoted(name_of(c.params_dtype)), {field::fp8_param_gather});
  } else if (qlora) {
    fail("params_dtype", "must be \"nf4\" with peft \"qlora\" (the frozen base linears in 4-bit NF4), got " + quoted(name_of(c.params_dtype)), {field::peft});
  }
  c.expert_params_dtype = in.expert_params_dtype.value_or(c.params_dtype);
  if (in.expert_params_dtype == Dtype::nf4 && !qlora)
    fail("expert_params_dtype", "\"nf4\" needs peft \"qlora\" (a frozen 4-bit base), got peft " + peft_name(), {field::peft});
  c.compute_dtype = in.compute_dtype.value_or(
      fw == Framework::ddp || c.params_dtype == Dtype::nf4 ? Dtype::bf16 : c.params_dtype);
  // Defaulted from a valid params_dtype it is valid; from an invalid one that field is named.
  if (in.compute_dtype && c.compute_dtype != Dtype::fp32 && c.compute_dtype != Dtype::bf16 &&
      c.compute_dtype != Dtype::fp16)
    fail("compute_dtype", "must be \"fp32\", \"bf16\" or \"fp16\" (FP8 matmuls: fp8_recipe), got " + quoted(name_of(c.compute_dtype)), {field::fp8_recipe});
  for (auto [name, dtype] : {std::pair<std::string_view, Dtype>{"main_params_dtype", c.main_params_dtype},
                             {"main_grads_dtype", c.main_grads_dtype}})
    if (dtype != Dtype::fp32 && dtype != Dtype::bf16 && dtype != Dtype::fp16)
      fail(name, "must be \"fp32\", \"bf16\" or \"fp16\", got " + quoted(name_of(dtype)));
  for (auto [name, dtype] : {std::pair<std::string_view, Dtype>{"exp_avg_dtype", c.exp_avg_dtype},
                             {"exp_avg_sq_dtype", c.exp_avg_sq_dtype}})
    if (dtype == Dtype::mxfp4 || dtype == Dtype::mxfp8 || dtype == Dtype::int8 || dtype == Dtype::nf4)
      fail(name, "must be \"fp32\", \"bf16\", \"fp16\" or \"fp8\" (8-bit states: optimizer "
                 "\"adam8bit\"), got " + quoted(name_of(dtype)), {field::optimizer});
  if (c.fp8_param_gather && c.fp8_recipe == Fp8Recipe::none)
    fail("fp8_param_gather", "needs an fp8_recipe", {field::fp8_recipe});
  if (in.optimizer_implementation && !c.pytorch_native())
    fail("optimizer_implementation", "applies to frameworks ddp and fsdp2 (torch.optim); framework " +
                                     fw_name() + " steps with its own fused Adam", {field::framework});
  // torchtune shard_model fully_shards the modules custom_sharded_layers names before the root;
  // resharding after forward is what full sharding (zero_stage 3) does.
  if (c.fsdp_embedding_units && !(fw == Framework::fsdp2 && c.zero_stage == 3))
    fail("fsdp_embedding_units", "needs framework fsdp2 with zero_stage 3 (units resharded after "
                                 "their forward)", {field::framework, field::zero_stage});
  if (c.offload_params && !((fw == Framework::deepspeed || fw == Framework::fsdp2) && c.zero_stage == 3))
    fail("offload_params", "needs sharded weights: framework deepspeed or fsdp2 with zero_stage 3", {field::framework, field::zero_stage});

  resolve_model_implementation(in, c, issues);
  resolve_finetuning_fields(in, c, issues);

  const bool interleaved = c.virtual_pipeline_model_parallel_size > 0;
  c.pipeline_schedule = in.pipeline_schedule.value_or(interleaved ? PipelineSchedule::interleaved
                                                                  : PipelineSchedule::one_f_one_b);
  if (c.pipeline_schedule == PipelineSchedule::interleaved && !interleaved)
    fail("pipeline_schedule", "\"interleaved\" needs virtual_pipeline_model_parallel_size", {field::virtual_pipeline_model_parallel_size});
  if (c.pipeline_schedule != PipelineSchedule::interleaved && interleaved)
    fail("pipeline_schedule", "must be \"interleaved\" with virtual_pipeline_model_parallel_size, got " + quoted(name_of(c.pipeline_schedule)), {field::virtual_pipeline_model_parallel_size});
}

}  // namespace

Resolved resolve(const ConfigInput& in) {
  Resolved out;
  Config& c = out.config;
  std::vector<Issue>& issues = out.issues;
  copy_set_fields(in, c);  // every simple default is Config{}'s
  auto fail = [&](std::string_view field, const std::string& rule, std::initializer_list<FieldName> related = {}) {
    Issue broken = with_related(issue(field, rule), related);
    // Two rules can find one problem (sizes too large to count): it is reported once.
    if (std::find(issues.begin(), issues.end(), broken) == issues.end()) issues.push_back(std::move(broken));
  };
  auto required = [&](const std::optional<int64_t>& v, std::string_view name) -> int64_t {
    if (!v) {
      fail(name, "is required (a positive integer)");
      return 0;
    }
    return *v;
  };
  auto n = [](int64_t v) { return number_text(double(v)); };

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
                                  "trainmem profile)", {field::profile});
    if (in.vocab_size == 0)
      fail("vocab_size", "must be at least 1, got 0 (a model without embeddings needs the "
                         "trainmem profile)", {field::profile});
    if (in.normalization == Normalization::none)
      fail("normalization", "\"none\" needs the trainmem profile", {field::profile});
    if (in.activation_func == ActivationFunc::identity)
      fail("activation_func", "\"identity\" needs the trainmem profile", {field::profile});
  }

  if (in.swiglu.value_or(false)) {
    if (in.gated_linear_unit == false)
      fail("swiglu", "contradicts gated_linear_unit = false (SwiGLU is a gated MLP)", {field::gated_linear_unit});
    if (in.activation_func && *in.activation_func != ActivationFunc::silu)
      fail("swiglu", "contradicts activation_func = \"" +
                         std::string(name_of(*in.activation_func)) + "\" (SwiGLU uses silu)", {field::activation_func});
    c.gated_linear_unit = true;
    c.activation_func = ActivationFunc::silu;
  }

  c.num_query_groups = in.num_query_groups.value_or(c.num_attention_heads);
  if (in.num_query_groups && have_shape && c.num_attention_heads % c.num_query_groups != 0)
    fail("num_query_groups", "must divide num_attention_heads (" + n(c.num_attention_heads) +
                                 "), got " + n(c.num_query_groups), {field::num_attention_heads});
  if (in.kv_channels) {
    c.kv_channels = *in.kv_channels;
  } else if (have_shape) {
    // Megatron-LM arguments.py: kv_channels defaults to h / a and requires divisibility.
    if (c.hidden_size % c.num_attention_heads != 0)
      fail("hidden_size", "must be divisible by num_attention_heads (" + n(c.num_attention_heads) +
                              ") when kv_channels is unset, got " + n(c.hidden_size), {field::num_attention_heads, field::kv_channels});
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
                                  " with SwiGLU; set it explicitly", {field::hidden_size});
  } else {
    c.ffn_hidden_size = 4 * c.hidden_size;  // TransformerConfig.__post_init__
  }

  // MoE and MTP.
  c.moe_ffn_hidden_size = in.moe_ffn_hidden_size.value_or(c.ffn_hidden_size);
  if (c.is_moe()) {
    if (!c.moe_layer_freq_list.empty() && c.num_layers > 0 &&
        int64_t(c.moe_layer_freq_list.size()) != c.num_layers)
      fail("moe_layer_freq", "list must have one entry per layer (num_layers = " +
                                 n(c.num_layers) + "), got " +
                                 n(int64_t(c.moe_layer_freq_list.size())), {field::num_layers});
    if (c.moe_router_topk > c.num_moe_experts)
      fail("moe_router_topk", "must be at most num_moe_experts (" + n(c.num_moe_experts) +
                                  "), got " + n(c.moe_router_topk), {field::num_moe_experts});
    // moe_routing_imbalance scales the tokens the most-loaded GPU's experts receive; with a
    // capacity factor the trainmem profile counts every expert at its capacity (padded to it with
    // moe_pad_expert_input_to_capacity, else the most it can take), so an imbalance would have no
    // effect: a mistake.
    // Values above what one GPU's experts can receive are capped in activations.cpp
    // (routing_load), not rejected: the planner tries smaller EP with the same value.
    if (in.moe_routing_imbalance && c.moe_expert_capacity_factor > 0 && c.moe_routing_imbalance != 1.0)
      fail("moe_routing_imbalance", "has no effect with moe_expert_capacity_factor (" +
                                        number_text(c.moe_expert_capacity_factor) +
                                        "): every expert is counted at the capacity; leave it unset", {field::moe_expert_capacity_factor});
    // Megatron Core's dispatch fields (activations.cpp, "MoE at scale"): the PyTorch
    // implementations' MoE blocks have no such dispatcher, so there they are a mistake (for a
    // dense model they mean nothing and are dropped, as every MoE field). Megatron asserts a
    // capacity factor for padding (token_dispatcher.py: drop_and_pad needs
    // moe_expert_capacity_factor).
    const bool megatron_layer = !c.eager_model();
    if (in.moe_router_dtype && *in.moe_router_dtype != MoeRouterDtype::none && !megatron_layer)
      fail("moe_router_dtype", "applies to MoE with model_implementation megatron-core (Megatron "
                               "Core's router; the PyTorch implementations route in the compute dtype)", {field::model_implementation});
    if (in.moe_permute_fusion && *in.moe_permute_fusion && !megatron_layer)
      fail("moe_permute_fusion", "applies to MoE with model_implementation megatron-core (Transformer "
                                 "Engine's fused permutation in Megatron Core's dispatcher)", {field::model_implementation});
    if (in.moe_pad_expert_input_to_capacity && *in.moe_pad_expert_input_to_capacity &&
        (!megatron_layer || !(c.moe_expert_capacity_factor > 0)))
      fail("moe_pad_expert_input_to_capacity",
           "applies to MoE with model_implementation megatron-core and moe_expert_capacity_factor "
           "(the padding is to the capacity)", {field::model_implementation, field::moe_expert_capacity_factor});
  } else {
    c.moe_layer_freq_list.clear();  // a dense model has no MoE layers to describe
  }

  // Multi-latent attention (defaults of Megatron-LM's arguments, §2).

  // Parallelism.
  const int64_t t = c.tensor_model_parallel_size;
  const int64_t p = c.pipeline_model_parallel_size;
  const int64_t v = c.virtual_pipeline_model_parallel_size;
  const int64_t cp = c.context_parallel_size;
  const int64_t e = c.expert_model_parallel_size;
  // Megatron Core: expert_tensor_parallel_size None -> tensor_model_parallel_size
  // (megatron/core/model_parallel_config.py @ 02aa3ee454b5ff16b1bf356ec36fa0cc1c26858f, "Default
  // is None, which will be set to the value of tensor_model_parallel_size"; Megatron-LM's
  // arguments.py does the same). Every framework takes Megatron's default here; torchtitan's own
  // expert_tensor_parallel_degree defaults to 1 (set the field for such a run).
  const int64_t te = c.expert_tensor_parallel_size = in.expert_tensor_parallel_size.value_or(t);
  // The world: DP = world_size / (TP·PP·CP) when the world is given (Megatron-LM's
  // initialize_model_parallel: data_parallel_size = world_size / (tp × pp × cp)).
  std::optional<int64_t> model_parallel = checked_mul(t, p);
  if (model_parallel) model_parallel = checked_mul(*model_parallel, cp);
  if (in.world_size && model_parallel) {
    const int64_t world = *in.world_size, mp = *model_parallel;
    if (world % mp != 0)
      fail("world_size", "must be divisible by tensor_model_parallel_size × pipeline_model_parallel_size × "
                         "context_parallel_size (" + n(t) + " × " + n(p) + " × " + n(cp) + " = " + n(mp) +
                             "), got " + n(world), {field::tensor_model_parallel_size, field::pipeline_model_parallel_size, field::context_parallel_size});
    else if (in.data_parallel_size && *in.data_parallel_size * mp != world)
      fail("world_size", "must equal tensor_model_parallel_size × pipeline_model_parallel_size × "
                         "context_parallel_size × data_parallel_size (" + n(t) + " × " + n(p) + " × " + n(cp) +
                             " × " + n(*in.data_parallel_size) + " = " + n(*in.data_parallel_size * mp) +
                             "), got " + n(world) + "; give one of them", {field::tensor_model_parallel_size, field::pipeline_model_parallel_size, field::context_parallel_size, field::data_parallel_size});
    else
      c.data_parallel_size = world / mp;
  }
  const int64_t d = c.data_parallel_size;
  if (const auto world = model_parallel ? checked_mul(*model_parallel, d) : std::nullopt) {
    c.world_size = *world;
    // The product is the world_size field's value (to_input writes it): beyond that field's
    // range the configuration could not be written back and read again.
    const double most = find_field("world_size")->max;
    if (double(*world) > most)
      fail("world_size", "must be at most " + number_text(most) + " GPUs, got tensor_model_parallel_size × "
                         "pipeline_model_parallel_size × context_parallel_size × data_parallel_size = " +
                             n(t) + " × " + n(p) + " × " + n(cp) + " × " + n(d) + " = " + n(*world), {field::tensor_model_parallel_size, field::pipeline_model_parallel_size, field::context_parallel_size, field::data_parallel_size});
  } else {
    fail("data_parallel_size", "the parallel sizes multiply to more ranks than can be counted");
  }

  if (have_shape && c.num_attention_heads % t != 0)
    fail("num_attention_heads", "must be divisible by tensor_model_parallel_size (" + n(t) +
                                    "), got " + n(c.num_attention_heads), {field::tensor_model_parallel_size});
  if (have_shape && !c.multi_latent_attention && c.num_query_groups % t != 0)
    fail("num_query_groups", "must be divisible by tensor_model_parallel_size (" + n(t) +
                                 "), got " + n(c.num_query_groups), {field::tensor_model_parallel_size});

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
                                n(c.ffn_hidden_size), {field::tensor_model_parallel_size});
  if (c.is_moe() && c.moe_shared_expert_intermediate_size % t != 0)
    fail("moe_shared_expert_intermediate_size", "must be divisible by tensor_model_parallel_size (" +
                                                    n(t) + "), got " +
                                                    n(c.moe_shared_expert_intermediate_size), {field::tensor_model_parallel_size});
  if (c.is_moe() && c.moe_ffn_hidden_size > 0 && c.moe_ffn_hidden_size % te != 0)
    fail("moe_ffn_hidden_size", "must be divisible by expert_tensor_parallel_size (" + n(te) +
                                    "), got " + n(c.moe_ffn_hidden_size), {field::expert_tensor_parallel_size});

  if (v > 0 && p == 1)
    fail("virtual_pipeline_model_parallel_size",
         "requires pipeline_model_parallel_size > 1 (the interleaved schedule needs pipeline stages)", {field::pipeline_model_parallel_size});
  if (!c.pipeline_stage_layers.empty()) {
    // Megatron's PipelineParallelLayerLayout: len(layout) % PP == 0 gives VPP, every decoder layer
    // placed once (validate_layer_layout: the count equals num_layers); a stage may be empty.
    const auto& list = c.pipeline_stage_layers;
    const int64_t stages = p * (v > 0 ? v : 1);
    int64_t placed = 0;
    for (int64_t e : list) placed += e;  // at most 10^6 entries of at most 10^6 each
    if (p == 1)
      fail("pipeline_stage_layers", "requires pipeline_model_parallel_size > 1", {field::pipeline_model_parallel_size});
    else if (c.num_layers_in_first_pipeline_stage > 0 || c.num_layers_in_last_pipeline_stage > 0)
      fail("pipeline_stage_layers", "cannot be combined with num_layers_in_first_pipeline_stage or "
                                    "num_layers_in_last_pipeline_stage (the list gives every stage's layers)", {field::num_layers_in_first_pipeline_stage, field::num_layers_in_last_pipeline_stage});
    else if (int64_t(list.size()) != stages)
      fail("pipeline_stage_layers",
           "must have one entry per virtual pipeline stage: pipeline_model_parallel_size × "
           "virtual_pipeline_model_parallel_size = " + n(p) + (v > 0 ? " × " + n(v) : std::string()) + " = " +
               n(stages) + " entries, got " + n(int64_t(list.size())), {field::pipeline_model_parallel_size, field::virtual_pipeline_model_parallel_size});
    else if (c.num_layers > 0 && placed != c.num_layers)
      fail("pipeline_stage_layers", "places " + n(placed) + " decoder layers, but num_layers is " + n(c.num_layers), {field::num_layers});
  } else if (c.uneven_pipeline()) {
    const int64_t first = c.num_layers_in_first_pipeline_stage;
    const int64_t last = c.num_layers_in_last_pipeline_stage;
    if (p == 1) {
      fail(first ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage",
           "requires pipeline_model_parallel_size > 1", {field::pipeline_model_parallel_size});
    } else if (c.num_layers > 0) {
      const int64_t rest_layers = c.num_layers - first - last;
      const int64_t rest_stages = p - (first ? 1 : 0) - (last ? 1 : 0);
      int64_t middle = 0;
      if (rest_stages == 0) {
        if (rest_layers != 0)
          fail("num_layers", "must equal num_layers_in_first_pipeline_stage + "
                             "num_layers_in_last_pipeline_stage (" + n(first + last) +
                                 ") when they are the only stages, got " + n(c.num_layers), {field::num_layers_in_first_pipeline_stage, field::num_layers_in_last_pipeline_stage});
      } else if (rest_layers <= 0) {
        fail("num_layers", "the first/last pipeline stages take " + n(first + last) + " layers of " +
                               n(c.num_layers) + ", which leaves none for the other " + n(rest_stages) +
                               " stage" + (rest_stages == 1 ? "" : "s"));
      } else if (rest_layers % rest_stages != 0) {
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
                               "), got " + n(c.num_layers), {field::pipeline_model_parallel_size, field::virtual_pipeline_model_parallel_size});
      else
        fail("num_layers", "must be divisible by pipeline_model_parallel_size (" + n(p) +
                               "), got " + n(c.num_layers), {field::pipeline_model_parallel_size});
    }
  }

  if (c.is_moe()) {
    if (c.num_moe_experts % e != 0)
      fail("num_moe_experts", "must be divisible by expert_model_parallel_size (" + n(e) +
                                  "), got " + n(c.num_moe_experts), {field::expert_model_parallel_size});
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
               "context_parallel_size (" + n(d) + " × " + n(t) + " × " + n(cp) + ")", {field::expert_tensor_parallel_size, field::data_parallel_size, field::tensor_model_parallel_size, field::context_parallel_size});
  } else if (e > 1) {
    fail("expert_model_parallel_size", "must be 1 for a dense model (num_moe_experts is unset), got " +
                                           n(e), {field::num_moe_experts});
  }

  // Training.
  // Megatron-LM turns sequence parallelism off when TP = 1 (arguments.py).
  c.sequence_parallel = c.sequence_parallel && t > 1;
  if (c.is_moe() && t > 1 && e > 1 && !c.sequence_parallel)
    fail("sequence_parallel", "must be true when an MoE model uses both tensor_model_parallel_size "
                              "> 1 and expert_model_parallel_size > 1 (Megatron requires it)", {field::tensor_model_parallel_size, field::expert_model_parallel_size});
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
    if (divisor == 0 || (divisor > 1 && c.seq_length % divisor != 0)) {
      const std::string rule = "must be divisible by " + why + ", got " + n(c.seq_length);
      if (cp > 1 && c.sequence_parallel)
        fail("seq_length", rule, {field::context_parallel_size, field::tensor_model_parallel_size, field::sequence_parallel});
      else if (cp > 1)
        fail("seq_length", rule, {field::context_parallel_size});
      else
        fail("seq_length", rule, {field::tensor_model_parallel_size, field::sequence_parallel});
    }
  }

  resolve_trainmem_fields(in, c, issues);
  check_fields_apply(in, c, issues);

  if (in.global_batch_size && c.micro_batch_size > 0) {
    auto per_step = checked_mul(c.micro_batch_size, d);
    if (!per_step || c.global_batch_size % *per_step != 0) {
      fail("global_batch_size", "must be divisible by micro_batch_size × data_parallel_size (" +
                                    n(c.micro_batch_size) + " × " + n(d) + "), got " +
                                    n(c.global_batch_size), {field::micro_batch_size, field::data_parallel_size});
    } else {
      const int64_t derived = c.global_batch_size / *per_step;
      if (in.num_microbatches && *in.num_microbatches != derived)
        fail("num_microbatches", "must equal global_batch_size / (micro_batch_size × "
                                 "data_parallel_size) = " + n(derived) + ", got " +
                                     n(*in.num_microbatches), {field::global_batch_size, field::micro_batch_size, field::data_parallel_size});
      c.num_microbatches = derived;
    }
  }
  // torchtune: "Gradient accumulation is not supported with optimizer in bwd" (its recipes raise).
  if (c.profile == Profile::trainmem && c.optimizer_in_backward && c.num_microbatches > 1 &&
      c.pipeline_model_parallel_size == 1)
    fail("optimizer_in_backward", "needs one microbatch per step (gradient accumulation keeps every "
                                  "gradient until the last microbatch), got num_microbatches " +
                                      n(c.num_microbatches), {field::num_microbatches});
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
