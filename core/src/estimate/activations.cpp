// Per-tensor activation accounting (trainmem profile): what the forward pass of one microbatch
// keeps alive for backward on one GPU, tensor by tensor.
//
// Whose code runs the layers is model_implementation: the PyTorch implementations
// (hf-transformers, torchtune, torchtitan) follow their own op sequences, in the section "The
// model's own code" below (docs/trainmem-profile.md §8). With megatron-core (Megatron's only
// choice) the layer is Megatron Core's GPT layer built from the Transformer Engine module spec
// (gpt_layer_specs.py): the input norm is fused into linear_qkv (TELayerNormColumnParallelLinear),
// the pre-MLP norm into linear_fc1 for dense layers, while MoE layers and MLA attention use a
// separate TENorm. Every rule below names the tensor, its dtype and where it comes from. The
// reference for the dense block is Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", §4 and Table 2; everything the paper does not cover follows the
// framework code named at each entry.
//
// Symbols: s sequence, b micro batch, h hidden, a heads, g query groups, k kv_channels, f ffn,
// t TP, c CP. Token counts on one GPU: T = s·b/c in the tensor-parallel region (every TP rank sees
// the whole sequence chunk of its CP rank) and T_sp = T/t in the sequence-parallel region (norms,
// dropout, residual) when sequence parallelism is on, T otherwise.
#include "trainmem/activations.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <vector>

#include "trainmem/tables.hpp"

namespace trainmem {
namespace {

// ---- Sources, cited by every entry ----
constexpr std::string_view k_src_norm_input =
    "Korthikanti et al. 2022 §4.1: a LayerNorm keeps its input (2sbh per norm); TE "
    "LayerNorm/RMSNorm save inputmat";
constexpr std::string_view k_src_norm_stats =
    "TE LayerNorm saves fp32 mu and rsigma per token, RMSNorm rsigma only; Korthikanti §4.1 "
    "sets these 2sb elements aside as small next to sbh";
constexpr std::string_view k_src_linear_input =
    "Korthikanti §4.1: a linear layer keeps its input; with sequence parallelism only the local "
    "1/t shard is kept and all-gathered again in backward (§4.2.2)";
constexpr std::string_view k_src_fp8_input =
    "Transformer Engine _Linear.forward: under FP8 the input is saved as one FP8 copy (or its "
    "FP8 transpose), 1 byte per element plus the recipe's scales";
constexpr std::string_view k_src_qkv =
    "Korthikanti Table 2: QK^T keeps Q and K, softmax·V keeps V (6sbh for MHA); with GQA K and V "
    "are g·k wide; flash/cuDNN attention and the core_attn checkpoint keep the same q, k, v";
constexpr std::string_view k_src_qkv_unfused_gqa =
    "Megatron/TE unfused attention repeat_interleaves K and V to a heads before baddbmm/bmm, "
    "which then save the expanded copies";
constexpr std::string_view k_src_flash_stats =
    "flash-attn / TE FusedAttnFunc save q, k, v, out and fp32 softmax statistics (logsumexp) per "
    "head and token; dropout is regenerated from the Philox seed, no mask";
constexpr std::string_view k_src_softmax =
    "Korthikanti Table 2: softmax output 2as²b, its dropout mask as²b and the dropout output "
    "2as²b (5as²b); the fused scale-mask-softmax keeps only its output";
constexpr std::string_view k_src_proj_input =
    "Korthikanti Table 2: the output projection keeps its input (2sbh); in 16-bit the flash "
    "kernel's saved `out` is the same storage";
constexpr std::string_view k_src_kernel_out =
    "The attention kernel's saved `out` (16-bit) and linear_proj's input are two storages under "
    "FP8 (an FP8 copy) and under TE's flash-attn with b > 1 (a contiguous sbhd copy of the bshd "
    "output)";
constexpr std::string_view k_src_dropout_mask =
    "PyTorch native_dropout saves a bool mask (1 byte per element) when p > 0 (Korthikanti: sbh "
    "per dropout); Megatron bias_dropout_add";
constexpr std::string_view k_src_glu =
    "Megatron bias_swiglu / bias_geglu fused kernels save their input, the 2f-wide fc1 output";
constexpr std::string_view k_src_act_input =
    "Korthikanti Table 2: GeLU keeps its input (8sbh for f = 4h); SiLU likewise "
    "(autograd saves the input)";
constexpr std::string_view k_src_relu =
    "PyTorch relu backward (threshold_backward) uses the saved result, not the input";
constexpr std::string_view k_src_glu_unfused =
    "Unfused GLU act(x0)·x1: the product saves act(x0) and x1, a view that keeps the whole "
    "fc1 output alive";
constexpr std::string_view k_src_sq_relu =
    "squared_relu = pow(relu(x), 2): relu and pow keep relu(x)";
constexpr std::string_view k_src_fc2_input =
    "Korthikanti Table 2: fc2 keeps its input, the activation output (8sbh for f = 4h)";
constexpr std::string_view k_src_checkpoint_input =
    "Megatron tensor_parallel.checkpoint (CheckpointFunction) saves only the inputs of the "
    "checkpointed region";
constexpr std::string_view k_src_full_recompute =
    "Korthikanti Table 2 full recompute: 2sbh, the layer input kept by the checkpoint "
    "(Megatron recompute_granularity full)";
constexpr std::string_view k_src_qk_norm =
    "Megatron q_layernorm/k_layernorm (TENorm per head) save their input and fp32 rsigma per "
    "head and token";
constexpr std::string_view k_src_mla =
    "Megatron MLASelfAttention: down projections share the norm output; latents normed by "
    "TELayerNormColumnParallelLinear (inputmat, rsigma, ln_out); q, k, v concatenated with the "
    "rope parts and made contiguous for the attention kernel";
constexpr std::string_view k_src_mla_up_proj =
    "Megatron mla_up_proj (CheckpointWithoutOutput): keeps the latents and k_pos_emb as inputs, "
    "frees q, k, v and recomputes the up projections";
constexpr std::string_view k_src_router =
    "Megatron TopKRouter: the score function (softmax/sigmoid, fp32) saves its output probs";
constexpr std::string_view k_src_expert_input =
    "Megatron TEGroupedMLP linear_fc1 keeps the dispatched tokens: K copies per token after the "
    "EP all-to-all, gathered over ETP; capacity factor pads/drops to cf × average";
constexpr std::string_view k_src_weighted_act =
    "Megatron mlp.py MLP.forward / experts.py TEGroupedMLP bias_act_func @ "
    "93aa335b952e8e53078c9dbd36686e72e0c2b1f9: unfused (bias_activation_fusion false; a "
    "non-gated expert cannot fuse the probabilities, MLP.forward raises), the expert's "
    "activation output times per_token_scale: the product keeps the activation's output for "
    "the probabilities' gradient, and the product is fc2's input";
constexpr std::string_view k_src_expert_probs =
    "Megatron ≥ 0.13 applies the routing probs in the expert activation (weighted swiglu saves "
    "fp32 probs per token-expert pair); unpermute then keeps nothing";
constexpr std::string_view k_src_shared_gate =
    "Megatron SharedExpertMLP gate: output · sigmoid(gate(x)) keeps the shared-expert output";
constexpr std::string_view k_src_latent =
    "Megatron latent MoE: the up projection back to h keeps its latent input";
constexpr std::string_view k_src_token_ids =
    "Megatron VocabParallelEmbedding: F.embedding saves the (masked) int64 token ids on every "
    "TP rank (Bridge counts 8sb, reference §3.5)";
constexpr std::string_view k_src_vocab_mask =
    "Megatron VocabParallelEmbedding (TP > 1): output_parallel[input_mask] = 0 saves the bool mask";
constexpr std::string_view k_src_position_ids =
    "Learned absolute position embedding: F.embedding saves int64 position ids";
constexpr std::string_view k_src_output_input =
    "Megatron output layer (tensor_parallel.ColumnParallelLinear, not FP8) keeps its input, the "
    "local sequence shard with SP";
constexpr std::string_view k_src_ce =
    "Megatron _VocabParallelCrossEntropy (native and jit-fused): logits.float(), exp in place, "
    "saves exp_logits (fp32), target_mask and masked_target_1d";
constexpr std::string_view k_src_autocast_norm =
    "torch.autocast runs layer_norm in fp32 (PyTorch AMP docs, ops that autocast to float32) and "
    "HF RMSNorm modules upcast to fp32 themselves: the norm saves an fp32 input";
constexpr std::string_view k_src_autocast_softmax =
    "torch.autocast runs softmax in fp32 (AMP docs, ops that autocast to float32), which saves "
    "its fp32 output; the probabilities are cast back to the compute dtype for the matmul with V "
    "(autocast to float16 ops), which saves that copy";
constexpr std::string_view k_src_torch_ce =
    "PyTorch F.cross_entropy on logits.float() (torchtitan components/loss.py cross_entropy_loss; "
    "HF models upcast the logits before the loss): aten log_softmax saves its fp32 result for "
    "backward, nll_loss keeps the int64 targets";
constexpr std::string_view k_src_dtensor_input =
    "DTensor tensor parallelism (torchtitan's TP plan): PrepareModuleInput redistributes the "
    "sequence-sharded input to Replicate before the ColwiseParallel linears, and autograd saves "
    "the gathered tensor";
constexpr std::string_view k_src_dtensor_output =
    "torchtitan's TP plan: the output layer is ColwiseParallel(input_layouts=Shard(1)), so the "
    "sequence-sharded input is redistributed to Replicate before F.linear and autograd saves the "
    "gathered tensor (DTensor keeps no re-gather for backward, unlike Megatron's SP linears)";
constexpr std::string_view k_src_te_ce =
    "TE parallel_cross_entropy (cross_entropy_fusion_impl te): saves the 16-bit logits and "
    "per-token softmax statistics, no fp32 copy";
constexpr std::string_view k_src_lora =
    "Hugging Face PEFT lora.Linear.forward, lora_B(lora_A(dropout(x))) * scaling "
    "(src/peft/tuners/lora/layer.py, 00336949), torchtune LoRALinear (031d89b8): lora_A saves "
    "its input (the base layer's own tensor when nothing casts or drops it), lora_B the "
    "rank-wide lora_A output";
constexpr std::string_view k_src_lora_copy =
    "PEFT casts the input to the fp32 adapter's dtype (_cast_input_dtype) and autocast casts it "
    "back to the compute dtype for lora_A, which saves that copy; with lora_dropout the dropped "
    "copy is lora_A's input";
constexpr std::string_view k_src_lora_dropout =
    "PEFT and torchtune put one nn.Dropout on each adapter's input when lora_dropout > 0: "
    "native_dropout saves a bool mask";
constexpr std::string_view k_src_sac =
    "torchtitan op-level SAC (_apply_op_sac): MUST_SAVE the outputs of aten.mm except every "
    "second one, SDPA, reduce_scatter and all_to_all; everything else is recomputed";

constexpr std::string_view k_src_kbit_fp32_residual =
    "PEFT prepare_model_for_kbit_training (src/peft/utils/other.py @ 5d602fdb) leaves the norm "
    "weights fp32 (TRL's peft_module_casting_to_bf16, trl/trainer/utils.py @ v0.12.0, keeps them "
    "so): LlamaRMSNorm returns weight * hidden.to(input_dtype), fp32; bitsandbytes Linear4bit."
    "forward (nn/modules.py @ 0.48.0 406fb6aa) returns its output .to(inp_dtype), fp32 for an "
    "fp32 input; the residual adds, the checkpointed layer inputs and the MLP's gate, up and "
    "activation outputs are fp32";
constexpr std::string_view k_src_bnb_lora_autocast =
    "PEFT src/peft/tuners/lora/bnb.py @ 5d602fdb Linear4bit.forward (Linear8bitLt alike): "
    "`requires_conversion = not torch.is_autocast_enabled()`; only then is x cast to lora_A's "
    "dtype; under autocast lora_A's F.linear casts what is not in the compute dtype (none for a "
    "16-bit input). Measured by the allocation timeline oracle's QLoRA draws (tests/oracle/bnb.py)";
constexpr std::string_view k_src_kbit_adapter_cast =
    "an adapter on a linear whose input is the fp32 norm output: under the trainer's bf16 "
    "autocast lora_A's linear casts its input (autocast_mode.cpp cached_cast caches only leaf "
    "tensors that require grad, so every adapter makes its own copy) and keeps that copy";
constexpr std::string_view k_src_bnb_matmul_input =
    "bitsandbytes autograd/_functions.py MatMul4Bit 0.41.0 (a06a0f6a) to 0.43.1: ctx.tensors = "
    "(A, B) when the input needs a gradient, a plain attribute (no saved_tensors_hooks) that "
    "stays until backward; A = Linear4bit.forward's x.to(compute_dtype), a copy for an fp32 "
    "input, else the input itself. 0.43.2 (ce53caf3, PR #1270, commit 9e753741) keeps (None, B)";

constexpr std::string_view k_src_bnb_checkpoint =
    "MatMul4Bit's ctx.tensors (k_src_bnb_matmul_input) is a plain attribute of the autograd node: "
    "the non-reentrant torch.utils.checkpoint packs only save_for_backward's tensors "
    "(saved_tensors_hooks) and runs the checkpointed forward with grad enabled, so every "
    "Linear4bit's A stays beside the layer's checkpoint until the graph is freed (the reentrant "
    "mode runs that forward under no_grad: nothing kept). Measured by the allocation timeline "
    "oracle's bitsandbytes stand-in (tests/oracle/bnb.py)";

constexpr std::string_view k_src_bnb_int8_input =
    "bitsandbytes autograd/_functions.py MatMul8bitLt @ 95f9af309d4d5793847169c39288dcd3fcbdf564 "
    "(the same since c5c38ca1, 2023-02): ctx.tensors = (CAt, subA, A) when the input needs a "
    "gradient, a plain attribute (no saved_tensors_hooks) that stays until backward; A is the "
    "input reshaped, the input's own storage in its own dtype (Linear8bitLt.forward passes x as "
    "it is); CAt is None for a frozen weight and subA the outlier columns (a few, left out)";

constexpr std::string_view k_src_kbit_lm_head_cast =
    "PEFT prepare_model_for_kbit_training (other.py @ 5d602fdb) leaves lm_head fp32; under bf16 "
    "autocast F.linear casts the frozen weight (autocast_mode.cpp cached_cast: no cache for a "
    "tensor that does not require grad) and mm keeps that bf16 copy while its input needs a "
    "gradient";

// ---- Precision helpers ----

// Bytes of one element of the tensors between the GEMMs. FP8-class compute types still run the
// non-GEMM ops in 16 bits under Transformer Engine, so only fp32 and fp16 differ from bf16.
double activation_bytes(const Config& c) { return c.compute_dtype == Dtype::fp32 ? 4 : 2; }

std::string_view activation_dtype(const Config& c) {
  if (c.compute_dtype == Dtype::fp32) return "fp32";
  if (c.compute_dtype == Dtype::fp16) return "fp16";
  return "bf16";
}

// Bytes per element of a saved linear input under an FP8 recipe: delayed and tensorwise keep one
// FP8 byte and a per-tensor scale (negligible); blockwise adds an fp32 scale per 1×128 tile; MXFP8
// an E8M0 scale per 32 elements (Transformer Engine recipe docs).
double fp8_input_bytes(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::blockwise: return 1.0 + 4.0 / 128;
    case Fp8Recipe::mxfp8: return 1.0 + 1.0 / 32;
    default: return 1.0;
  }
}

std::string_view fp8_dtype(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::blockwise: return "fp8 (1x128 fp32 scales)";
    case Fp8Recipe::mxfp8: return "mxfp8";
    default: return "fp8";
  }
}

// Whether FP8 changes what is saved: Transformer Engine (Megatron, DeepSpeed) saves FP8 copies
// of the linear inputs. PyTorch-native training (fsdp2, ddp) gets FP8 from torchao's Float8Linear,
// whose autograd function (float8_linear.matmul_with_hp_or_float8_args) saves the high-precision
// input and weight and casts again in backward; torchao's benchmarks (docs/source/workflows/
// training.md: Llama3-8B bf16 47.65 GiB, tensorwise 47.77, rowwise 47.79) show the same peak.
bool te_fp8(const Config& c) {
  if (c.fp8_recipe == Fp8Recipe::none) return false;
  return c.framework == Framework::megatron || c.framework == Framework::deepspeed;
}

// The configuration reduced to the doubles every rule needs.
struct Shape {
  double s = 0, b = 0, h = 0, a = 0, g = 0, k = 0, f = 0, t = 1, c = 1;
  double tokens = 0;     // T: tokens of this CP rank, seen whole by every TP rank
  double tokens_sp = 0;  // T_sp: tokens of the sequence-parallel region on this GPU
  double e = 2;          // bytes per activation element
  double lin = 2;        // bytes per element of a saved linear input
  double norm_stats = 8;  // fp32 bytes per token a norm keeps beside its input
  bool has_norm = true;   // normalization "none" (trainmem): no norm layers at all
  std::string_view act_dtype, lin_dtype;
  bool fp8 = false;
  bool attention_dropout = false, hidden_dropout = false;
  bool autocast = false;  // torch.autocast over higher-precision weights (framework ddp)
  double norm_e = 2;      // bytes per element of a saved norm input
  std::string_view norm_dtype;
  // Tokens of a column-parallel linear's saved input: Megatron keeps the sequence-parallel shard
  // and gathers it again in backward; DTensor (fsdp2) saves the gathered input.
  double tokens_linear_in = 0;
  double hidden = 0;  // bytes of one residual-stream tensor on this GPU: e · h · T_sp
  double logits = 0;  // elements of the logits on this GPU: padded vocabulary / TP · T
  // peft: the base is frozen and the adapters on `lora_targets` (a LoraTarget mask) have rank r.
  bool peft = false;
  uint32_t lora_targets = 0;
  double r = 0;
  bool lora_dropout = false;
  // The adapters see a copy of their input: fp32 PEFT adapters under autocast (ddp).
  bool adapter_copy = false;
  // QLoRA with fp32 norm weights (kbit_upcast peft or trl): the norms' outputs, the Linear4bit
  // outputs after them and the residual stream are fp32 (k_src_kbit_fp32_residual); `ffn_e` is
  // the bytes of the MLP's gate, up and activation outputs (4 then, e otherwise).
  bool kbit_fp32 = false;
  double ffn_e = 2;
  std::string_view ffn_dtype;
  // QLoRA on bitsandbytes 0.41.0 … 0.43.1 (bnb_keeps_matmul_input): MatMul4Bit keeps each
  // Linear4bit's input A (k_src_bnb_matmul_input).
  bool bnb_input = false;
  // Counting A for a layer under the non-reentrant checkpoint (k_src_bnb_checkpoint): none of the
  // layer's saved tensors exist, so A counts where a kept layer's saved tensor would hold it.
  bool bnb_outside_checkpoint = false;
  // LLM.int8 (params_dtype int8): MatMul8bitLt keeps every Linear8bitLt's input A, the input
  // itself, on ctx (k_src_bnb_int8_input).
  bool int8_input = false;
  bool targeted(LoraTarget t) const { return peft && ((lora_targets >> unsigned(t)) & 1u); }
  // Whether a linear's saved input stays: always for trainable weights (no peft). A frozen
  // linear's matmul saves its input only for the weight gradient, which is not computed
  // (tools/autograd/derivatives.yaml mm: self's formula uses mat2 and mat2's uses self,
  // d327a787; gen_variable_type.py guard_for then saves self only if
  // grad_fn->should_compute_output for mat2, 9e69e821): with peft the input stays only when an
  // adapter on the linear reads it as it is.
  bool keeps_input(std::initializer_list<LoraTarget> linears) const {
    if (!peft) return true;
    if (lora_dropout || adapter_copy) return false;
    for (LoraTarget t : linears)
      if (targeted(t)) return true;
    return false;
  }
};

// Bytes per element of transformers' MoE block's hidden-width tensors (its input, routing
// weights, expert and weighted outputs, and their gradients): the norm output's dtype, fp32
// under QLoRA with fp32 norms (Shape::kbit_fp32).
double moe_block_bytes(const Shape& x) { return x.kbit_fp32 ? 4.0 : x.e; }

}  // namespace

bool kbit_fp32_activations(const Config& c) {
  return c.peft == Peft::qlora && c.model_implementation == ModelImplementation::hf_transformers &&
         c.normalization != Normalization::none &&
         (c.kbit_upcast == KbitUpcast::peft || c.kbit_upcast == KbitUpcast::trl);
}

namespace {
// The embedding output's element bytes: the first layer's input and the dtype transformers builds
// the causal mask and cos/sin in (LlamaModel: inputs_embeds.dtype). The residual stream's, except
// under TRL's QLoRA casting (kbit_upcast trl: peft_module_casting_to_bf16 casts embed_tokens back
// to bf16 while the norms stay fp32, k_src_kbit_fp32_residual), where it is the compute dtype and
// the stream turns fp32 at the first layer's MLP sum (the allocation timeline oracle: bf16 cos/sin,
// mask and first checkpoint on its trl QLoRA draws, seed 13 and 21 q02).
double embedding_output_e(const Config& c, const Shape& x) {
  return x.kbit_fp32 && c.kbit_upcast == KbitUpcast::trl ? x.e : x.norm_e;
}
// Its dtype's label: the compute dtype's where it is in the compute dtype.
std::string_view embedding_output_dtype(const Config& c, const Shape& x) {
  return embedding_output_e(c, x) == x.e ? x.act_dtype : x.norm_dtype;
}


double padded_vocab(const Config& c) {
  return double(c.should_pad_vocab ? padded_vocab_size(c.vocab_size, c.make_vocab_size_divisible_by,
                                                       c.tensor_model_parallel_size)
                                   : c.vocab_size);
}

Shape shape_of(const Config& c) {
  Shape x;
  x.s = double(c.seq_length);
  x.b = double(c.micro_batch_size);
  x.h = double(c.hidden_size);
  x.a = double(c.num_attention_heads);
  x.g = double(c.num_query_groups);
  x.k = double(c.kv_channels);
  x.f = double(c.ffn_hidden_size);
  x.t = double(c.tensor_model_parallel_size);
  x.c = double(c.context_parallel_size);
  x.tokens = x.s * x.b / x.c;
  x.tokens_sp = c.sequence_parallel ? x.tokens / x.t : x.tokens;
  x.e = activation_bytes(c);
  x.act_dtype = activation_dtype(c);
  x.fp8 = te_fp8(c);
  x.lin = x.fp8 ? fp8_input_bytes(c.fp8_recipe) : x.e;
  x.lin_dtype = x.fp8 ? fp8_dtype(c.fp8_recipe) : x.act_dtype;
  x.norm_stats = c.normalization == Normalization::layer_norm ? 8 : 4;
  // ddp trains a plain module under torch.autocast when compute_dtype is below params_dtype.
  x.autocast = c.framework == Framework::ddp &&
               bytes_per_element(c.compute_dtype) < bytes_per_element(c.params_dtype);
  x.norm_e = x.autocast ? 4 : x.e;
  x.norm_dtype = x.autocast ? "fp32" : x.act_dtype;
  x.tokens_linear_in =
      c.framework == Framework::fsdp2 && c.sequence_parallel ? x.tokens : x.tokens_sp;
  x.has_norm = c.normalization != Normalization::none;
  x.attention_dropout = c.attention_dropout > 0;
  x.hidden_dropout = c.hidden_dropout > 0;
  x.hidden = x.e * x.h * x.tokens_sp;
  x.logits = padded_vocab(c) / x.t * x.tokens;
  x.peft = c.peft_on();
  x.lora_targets = c.lora_target_modules;
  x.r = double(c.lora_rank);
  x.lora_dropout = c.lora_dropout > 0;
  x.adapter_copy = x.peft && c.framework == Framework::ddp &&
                   (x.autocast || bytes_per_element(lora_adapter_dtype(c)) != x.e);
  const bool qlora_hf = c.peft == Peft::qlora && c.model_implementation == ModelImplementation::hf_transformers;
  x.kbit_fp32 = kbit_fp32_activations(c);
  x.ffn_e = x.kbit_fp32 ? 4 : x.e;
  x.ffn_dtype = x.kbit_fp32 ? "fp32" : x.act_dtype;
  if (x.kbit_fp32) {
    x.norm_e = 4;
    x.norm_dtype = "fp32";
    // Each adapter reads the fp32 norm output through its own cast (k_src_kbit_adapter_cast).
    x.adapter_copy = true;
  } else if (qlora_hf) {
    // PEFT's bitsandbytes LoRA layers cast x to the adapter's dtype only without autocast
    // (k_src_bnb_lora_autocast): under the trainer's bf16 autocast a 16-bit input reaches lora_A
    // as it is, one storage with the base layer's.
    x.adapter_copy = false;
  }
  x.int8_input = qlora_hf && c.params_dtype == Dtype::int8;
  x.bnb_input = qlora_hf && c.bnb_keeps_matmul_input && !x.int8_input;
  return x;
}

// What one LoRA adapter keeps for backward (peft), for a base linear whose input is `in_width`
// wide over `in_tokens` tokens: lora_B's input, the r-wide lora_A output over `inter_tokens`
// tokens; lora_A's input is the base layer's (kept by keeps_input) unless it is a copy or dropped
// out, when it is the adapter's own, with the dropout's mask.
struct AdapterNames {
  std::string_view input, mask, intermediate;
};
constexpr AdapterNames k_adapter_names[] = {
    {"lora.q_proj_input", "lora.q_proj_dropout_mask", "lora.q_proj_intermediate"},
    {"lora.k_proj_input", "lora.k_proj_dropout_mask", "lora.k_proj_intermediate"},
    {"lora.v_proj_input", "lora.v_proj_dropout_mask", "lora.v_proj_intermediate"},
    {"lora.o_proj_input", "lora.o_proj_dropout_mask", "lora.o_proj_intermediate"},
    {"lora.gate_proj_input", "lora.gate_proj_dropout_mask", "lora.gate_proj_intermediate"},
    {"lora.up_proj_input", "lora.up_proj_dropout_mask", "lora.up_proj_intermediate"},
    {"lora.down_proj_input", "lora.down_proj_dropout_mask", "lora.down_proj_intermediate"},
    {"lora.lm_head_input", "lora.lm_head_dropout_mask", "lora.lm_head_intermediate"},
};
static_assert(std::size(k_adapter_names) == size_t(LoraTarget::count), "one row per target");
// One adapter on Megatron Core's fused linear_qkv / dense linear_fc1 (megatron_fused_qkv_adapter).
constexpr AdapterNames k_qkv_adapter_names{"lora.linear_qkv_input", "lora.linear_qkv_dropout_mask",
                                           "lora.linear_qkv_intermediate"};
constexpr AdapterNames k_fc1_adapter_names{"lora.linear_fc1_input", "lora.linear_fc1_dropout_mask",
                                           "lora.linear_fc1_intermediate"};

// The selective-recompute modules in force (Megatron recompute_modules).
struct Modules {
  bool core_attn = false, mlp = false, moe_act = false, layernorm = false, moe = false,
       shared_experts = false, mla_up_proj = false;
};

Modules modules_of(uint32_t mask) {
  const auto has = [mask](RecomputeModule m) { return (mask >> unsigned(m)) & 1u; };
  Modules m;
  m.core_attn = has(RecomputeModule::core_attn);
  m.mlp = has(RecomputeModule::mlp);
  m.moe_act = has(RecomputeModule::moe_act);
  m.layernorm = has(RecomputeModule::layernorm);
  m.moe = has(RecomputeModule::moe);
  m.shared_experts = has(RecomputeModule::shared_experts);
  m.mla_up_proj = has(RecomputeModule::mla_up_proj);
  return m;
}

// Sums the entries and, when asked, lists them. Entries of zero bytes are left out, so a
// disabled feature leaves no line in the breakdown.
class Ledger {
 public:
  explicit Ledger(SavedTensors* detail) : detail_(detail) {}
  void add(std::string_view name, std::string_view module, double bytes, std::string_view dtype,
           std::string_view source) {
    if (!(bytes > 0)) return;
    total_ += bytes;
    if (detail_) detail_->push_back(SavedTensor{name, module, bytes, dtype, source});
  }
  double total() const { return total_; }

 private:
  SavedTensors* detail_;
  double total_ = 0;
};

// One LoRA adapter on a linear whose input is `in_width` wide over `tokens` rows: lora_A keeps
// its input (its own copy when dropped out or cast, else the base layer's, which keeps_input
// counts), lora_B the r-wide intermediate; with dropout a bool mask, which native_dropout keeps
// only when the input needs a gradient (`in_rg`; Megatron Core's layer counts every layer as if
// it does).
void adapter_entries(const Shape& x, const AdapterNames& n, double in_width, double tokens, bool in_rg,
                     Ledger& out) {
  if (x.lora_dropout && in_rg) out.add(n.mask, "lora", in_width * tokens, "mask", k_src_lora_dropout);
  if (x.lora_dropout || x.adapter_copy)
    out.add(n.input, "lora", x.e * in_width * tokens, x.act_dtype, k_src_lora_copy);
  out.add(n.intermediate, "lora", x.e * x.r * tokens, x.act_dtype, k_src_lora);
}
void adapter_entries(const Shape& x, LoraTarget t, double in_width, double tokens, bool in_rg,
                     Ledger& out) {
  if (!x.targeted(t)) return;
  adapter_entries(x, k_adapter_names[size_t(t)], in_width, tokens, in_rg, out);
}

// Names of the activation-function tensors of one MLP site (dense MLP, routed experts, shared
// experts); string_views into static storage, as SavedTensor requires.
struct ActivationNames {
  std::string_view module, fc1_output, relu_output, act_output, fc2_input;
};
constexpr ActivationNames k_mlp_names{"mlp", "mlp.fc1_output", "mlp.relu_output",
                                      "mlp.activation_output", "mlp.fc2_input"};
constexpr ActivationNames k_expert_names{"moe", "moe.expert_fc1_output", "moe.expert_relu_output",
                                         "moe.expert_activation_output", "moe.expert_fc2_input"};
constexpr ActivationNames k_shared_names{"moe", "moe.shared_fc1_output", "moe.shared_relu_output",
                                         "moe.shared_activation_output", "moe.shared_fc2_input"};

// What the activation function between fc1 and fc2 keeps, for `tokens` rows of width `width`
// (the per-GPU intermediate size), followed by fc2's input. With `recomputed` (moe_act) the
// activation runs inside CheckpointWithoutOutput: only its input, the fc1 output, is kept, and
// its output (fc2's input) is freed once fc2 has run.
// `fc2_input_needed`: fc2's own input is needed (its weight trains, or an adapter reads it); with
// peft a frozen fc2 keeps it only when the activation function saved it anyway (relu).
// `weighted`: Megatron Core's routed experts multiply the activation's output by each row's
// routing probability before fc2 (moe_apply_probs_on_input false, the default). A gated
// activation does it inside the fused weighted SwiGLU (its input and the probabilities kept,
// as without weighting); a non-gated one runs unfused (k_src_weighted_act): the product is a
// tensor of its own, fc2's input, and it keeps the activation's output when the probabilities
// need a gradient (the router trains: not under peft, where resolve() freezes it).
void activation_and_fc2(const Config& c, const Shape& x, const ActivationNames& n, double width,
                        double tokens, bool recomputed, bool fc2_input_needed, Ledger& out,
                        bool weighted = false) {
  const double one = x.e * width * tokens;  // one f-wide tensor in the activation dtype
  const double fc1_width = c.gated_linear_unit ? 2 : 1;
  if (recomputed) {
    out.add(n.fc1_output, n.module, fc1_width * one, x.act_dtype, k_src_checkpoint_input);
    return;
  }
  const bool relu = c.activation_func == ActivationFunc::relu;
  const bool squared = c.activation_func == ActivationFunc::squared_relu;
  const bool unfused_weight = weighted && !c.gated_linear_unit;
  const bool product_keeps_act = unfused_weight && !x.peft;
  bool fc2_input_shared = false;  // fc2's input is a tensor the activation already keeps
  if (c.gated_linear_unit) {
    // The gate and the linear half are one 2f-wide fc1 output.
    out.add(n.fc1_output, n.module, 2 * one, x.act_dtype,
            relu || squared ? k_src_glu_unfused : k_src_glu);
    if (squared) out.add(n.relu_output, n.module, one, x.act_dtype, k_src_sq_relu);
    if (relu || squared) out.add(n.act_output, n.module, one, x.act_dtype, k_src_glu_unfused);
  } else if (relu) {
    // relu keeps its result, which is fc2's input: one storage in 16-bit, two under FP8 or
    // when the probabilities' product is fc2's input.
    if (x.fp8 || unfused_weight)
      out.add(n.act_output, n.module, one, x.act_dtype, unfused_weight ? k_src_weighted_act : k_src_relu);
    else
      fc2_input_shared = true;
  } else if (squared) {
    out.add(n.relu_output, n.module, one, x.act_dtype, k_src_sq_relu);
    if (product_keeps_act) out.add(n.act_output, n.module, one, x.act_dtype, k_src_weighted_act);
  } else if (c.activation_func == ActivationFunc::identity) {
    // No activation: fc2 reads fc1's output directly, kept once as fc2's input; weighted, the
    // product keeps fc1's output.
    if (product_keeps_act) out.add(n.fc1_output, n.module, one, x.act_dtype, k_src_weighted_act);
  } else {
    out.add(n.fc1_output, n.module, one, x.act_dtype, k_src_act_input);
    if (product_keeps_act) out.add(n.act_output, n.module, one, x.act_dtype, k_src_weighted_act);
  }
  if (fc2_input_shared || fc2_input_needed)
    out.add(n.fc2_input, n.module, x.lin * width * tokens, x.lin_dtype,
            fc2_input_shared ? k_src_relu : (x.fp8 ? k_src_fp8_input : k_src_fc2_input));
}

// The s²-proportional tensors of unfused attention (per GPU: a/t heads, T queries, s keys).
void unfused_softmax(const Shape& x, Ledger& out) {
  const double scores = x.a / x.t * x.tokens * x.s;  // elements of one [b, a/t, s/c, s] tensor
  if (x.autocast) {
    // The dropout (on the fp32 probabilities) keeps its mask; its fp32 output is saved by no
    // one, the matmul saving the cast copy instead.
    out.add("attention.softmax_output", "attention", 4 * scores, "fp32", k_src_autocast_softmax);
    if (x.attention_dropout)
      out.add("attention.softmax_dropout_mask", "attention", scores, "mask", k_src_softmax);
    out.add("attention.probs_cast", "attention", x.e * scores, x.act_dtype, k_src_autocast_softmax);
    return;
  }
  out.add("attention.softmax_output", "attention", x.e * scores, x.act_dtype, k_src_softmax);
  if (x.attention_dropout) {
    out.add("attention.softmax_dropout_mask", "attention", scores, "mask", k_src_softmax);
    out.add("attention.softmax_dropout_output", "attention", x.e * scores, x.act_dtype,
            k_src_softmax);
  }
}

// Core attention on q, k, v already accounted: the kernel's own statistics or score tensors,
// and its output (the output projection's input). `v_width` is the per-head value size.
//
// flash: flash-attn (through TE) saves q, k, v, out and the fp32 logsumexp per head and token.
// fused: TE's cuDNN backend (F16_arbitrary_seqlen, the one used for training lengths) is
//   flash-like: it saves q, k, v, out and fp32 softmax statistics [b, h, s, 1] plus the RNG
//   state, no s² buffer; it is counted exactly like flash. (The legacy max-512 cuDNN kernel kept
//   the softmax, which only matters for s ≤ 512.)
// unfused: QK^T is computed by baddbmm, which saves Q and K but not its output; the fused
//   scale-mask-softmax saves only its output, so the raw scores are never kept. What stays is the
//   softmax output, and with attention dropout its mask and the dropped-out probabilities that
//   the bmm with V saves (Korthikanti's 5as²b).
// In 16-bit the cuDNN (fused) `out` and linear_proj's input are one storage: cuDNN works on
// Megatron's sbhd layout. flash-attn works on bshd: TE's FlashAttention makes q, k, v contiguous
// in bshd (the sbhd originals are then freed) and returns its bshd `out`, which it saves, as a
// contiguous sbhd copy for linear_proj. With b = 1 both layouts are one storage; with b > 1 the
// copy is a second one. Megatron CI's gpt3_7b_tp4_pp1_memory_speed shows it: the A100 golden
// (flash-attn) peaks 1,044,324,352 B above the H100 one (cuDNN), which is 32 layers × s·b·(a/t)·k
// × 2 B = 1,073,741,824 B less the 29,415,424 B smaller Transformer Engine workspace that both
// runs' after-step allocation shows.
void core_attention(const Config& c, const Shape& x, const Modules& m, double v_width,
                    Ledger& out) {
  const bool unfused = c.attention_backend == AttentionBackend::unfused;
  // The kernel's saved `out` is linear_proj's input itself (16-bit flash or cuDNN, one layout).
  const bool bshd_copy = c.attention_backend == AttentionBackend::flash &&
                         c.framework == Framework::megatron && x.b > 1;
  const bool kernel_keeps_input = !m.core_attn && !unfused && !x.fp8 && !bshd_copy;
  if (!m.core_attn) {
    if (unfused)
      unfused_softmax(x, out);
    else
      out.add("attention.softmax_stats", "attention", 4 * x.a / x.t * x.tokens, "fp32",
              k_src_flash_stats);
    // Under FP8 the flash kernel's 16-bit `out` is a second storage beside linear_proj's FP8
    // copy; the unfused path's context output is saved by nobody but linear_proj.
    if ((x.fp8 || bshd_copy) && !unfused)
      out.add("attention.kernel_output", "attention", x.e * x.a * v_width / x.t * x.tokens,
              x.act_dtype, k_src_kernel_out);
  }
  // A frozen linear_proj (peft) keeps its input only as the kernel's `out` or for its adapter.
  const double proj_width = x.a * v_width / x.t;
  if (x.keeps_input({LoraTarget::o_proj}) || kernel_keeps_input)
    out.add("attention.proj_input", "attention", x.lin * proj_width * x.tokens, x.lin_dtype,
            x.fp8 ? k_src_fp8_input : x.targeted(LoraTarget::o_proj) ? k_src_lora : k_src_proj_input);
  // o_proj is row-parallel: its adapter's A takes the local a·v/t-wide input.
  adapter_entries(x, LoraTarget::o_proj, proj_width, x.tokens, true, out);
}

// Where the saved input of a column-parallel linear after a norm comes from.
std::string_view linear_input_source(const Shape& x) {
  if (x.fp8) return k_src_fp8_input;
  return x.tokens_linear_in > x.tokens_sp ? k_src_dtensor_input : k_src_linear_input;
}

void norm_entries(const Shape& x, std::string_view input_name, std::string_view stats_name,
                  bool keep_stats, Ledger& out) {
  if (!x.has_norm) return;  // normalization "none": the block has no norm to keep inputs for
  out.add(input_name, "norm", x.norm_e * x.h * x.tokens_sp, x.norm_dtype,
          x.autocast ? k_src_autocast_norm : k_src_norm_input);
  if (keep_stats) out.add(stats_name, "norm", x.norm_stats * x.tokens_sp, "fp32", k_src_norm_stats);
}

void output_dropout(const Shape& x, std::string_view name, std::string_view module, Ledger& out) {
  if (x.hidden_dropout) out.add(name, module, x.h * x.tokens_sp, "mask", k_src_dropout_mask);
}

// Multi-head / grouped-query attention (TE spec: input norm fused into linear_qkv, so the
// layernorm recompute module does not apply to it).
void standard_attention(const Config& c, const Shape& x, const Modules& m, Ledger& out) {
  norm_entries(x, "norm.attention_input", "norm.attention_stats", true, out);
  if (x.keeps_input({LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj}))
    out.add("attention.qkv_input", "attention", x.lin * x.h * x.tokens_linear_in, x.lin_dtype,
            x.peft ? k_src_lora : linear_input_source(x));
  if (megatron_fused_qkv_adapter(c))
    adapter_entries(x, k_qkv_adapter_names, x.h, x.tokens_linear_in, true, out);
  else
    for (LoraTarget t : {LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj})
      adapter_entries(x, t, x.h, x.tokens_linear_in, true, out);
  const double q_width = x.a * x.k / x.t, kv_width = x.g * x.k / x.t;
  if (c.qk_layernorm) {
    out.add("attention.q_norm_input", "attention", x.e * q_width * x.tokens, x.act_dtype,
            k_src_qk_norm);
    out.add("attention.k_norm_input", "attention", x.e * kv_width * x.tokens, x.act_dtype,
            k_src_qk_norm);
    out.add("attention.qk_norm_stats", "attention", 4 * (x.a + x.g) / x.t * x.tokens, "fp32",
            k_src_qk_norm);
  }
  // Unfused attention without the core_attn checkpoint saves K and V expanded to a heads.
  const bool expanded = c.attention_backend == AttentionBackend::unfused && !m.core_attn;
  const double saved_kv = expanded ? q_width : kv_width;
  const std::string_view kv_source = expanded && x.g != x.a ? k_src_qkv_unfused_gqa : k_src_qkv;
  out.add("attention.q", "attention", x.e * q_width * x.tokens, x.act_dtype, k_src_qkv);
  out.add("attention.k", "attention", x.e * saved_kv * x.tokens, x.act_dtype, kv_source);
  out.add("attention.v", "attention", x.e * saved_kv * x.tokens, x.act_dtype, kv_source);
  core_attention(c, x, m, x.k, out);
  output_dropout(x, "attention.output_dropout_mask", "attention", out);
}

// DeepSeek multi-latent attention (Megatron MLA spec: separate input TENorm, duplicated down
// projections on the local sequence shard, latent norms fused into the up projections).
void latent_attention(const Config& c, const Shape& x, const Modules& m, Ledger& out) {
  const bool norm_recomputed = m.layernorm;  // the input norm is a separate module here
  norm_entries(x, "norm.attention_input", "norm.attention_stats", !norm_recomputed, out);
  if (!norm_recomputed) {
    // The norm output feeds the q and kv down projections: one 16-bit storage, or one FP8 copy
    // per projection.
    out.add("attention.down_proj_input", "attention",
            (x.fp8 ? 2 * x.lin : x.e) * x.h * x.tokens_sp, x.lin_dtype,
            x.fp8 ? k_src_fp8_input : k_src_mla);
  }
  const double r_q = double(c.q_lora_rank), r_kv = double(c.kv_lora_rank);
  const double d_qk = double(c.qk_head_dim), d_rope = double(c.qk_pos_emb_head_dim),
               d_v = double(c.v_head_dim);
  const auto latent = [&](std::string_view latent_name, std::string_view stats_name,
                          std::string_view up_input_name, double rank) {
    if (m.mla_up_proj) {
      // The checkpoint keeps the latent (before its norm) as an input.
      out.add(latent_name, "attention", x.e * rank * x.tokens_sp, x.act_dtype, k_src_mla_up_proj);
      return;
    }
    if (c.qk_layernorm) {
      out.add(latent_name, "attention", x.e * rank * x.tokens_sp, x.act_dtype, k_src_mla);
      out.add(stats_name, "attention", x.norm_stats * x.tokens_sp, "fp32", k_src_norm_stats);
    }
    out.add(up_input_name, "attention", x.lin * rank * x.tokens_sp, x.lin_dtype,
            x.fp8 ? k_src_fp8_input : k_src_mla);
  };
  if (r_q > 0) latent("attention.q_latent", "attention.q_latent_stats", "attention.q_up_input", r_q);
  latent("attention.kv_latent", "attention.kv_latent_stats", "attention.kv_up_input", r_kv);
  if (m.mla_up_proj) {
    // k_pos_emb is gathered over the sequence-parallel group before the checkpoint.
    out.add("attention.k_rope_input", "attention", x.e * d_rope * x.tokens, x.act_dtype,
            k_src_mla_up_proj);
  } else {
    const double qk_width = x.a * (d_qk + d_rope) / x.t;
    out.add("attention.q", "attention", x.e * qk_width * x.tokens, x.act_dtype, k_src_mla);
    out.add("attention.k", "attention", x.e * qk_width * x.tokens, x.act_dtype, k_src_mla);
    out.add("attention.v", "attention", x.e * x.a * d_v / x.t * x.tokens, x.act_dtype, k_src_mla);
  }
  core_attention(c, x, m, d_v, out);
  output_dropout(x, "attention.output_dropout_mask", "attention", out);
}

// Dense MLP (TE spec: pre-MLP norm fused into linear_fc1; the mlp module checkpoints the norm
// and the MLP together, keeping only the residual stream that enters them).
void dense_mlp(const Config& c, const Shape& x, const Modules& m, Ledger& out) {
  if (m.mlp) {
    out.add("norm.mlp_input", "norm", x.hidden, x.act_dtype,
            k_src_checkpoint_input);
  } else {
    norm_entries(x, "norm.mlp_input", "norm.mlp_stats", true, out);
    if (x.keeps_input({LoraTarget::gate_proj, LoraTarget::up_proj}))
      out.add("mlp.fc1_input", "mlp", x.lin * x.h * x.tokens_linear_in, x.lin_dtype,
              x.peft ? k_src_lora : linear_input_source(x));
    if (megatron_fused_fc1_adapter(c))
      adapter_entries(x, k_fc1_adapter_names, x.h, x.tokens_linear_in, true, out);
    else
      for (LoraTarget t : {LoraTarget::gate_proj, LoraTarget::up_proj})
        adapter_entries(x, t, x.h, x.tokens_linear_in, true, out);
    activation_and_fc2(c, x, k_mlp_names, x.f / x.t, x.tokens, false,
                       x.keeps_input({LoraTarget::down_proj}), out);
    // down_proj is row-parallel: its adapter's A takes the local f/t-wide input.
    adapter_entries(x, LoraTarget::down_proj, x.f / x.t, x.tokens, true, out);
  }
  output_dropout(x, "mlp.output_dropout_mask", "mlp", out);
}

// ---- MoE at scale: the tokens the experts see, and the all-to-all dispatcher ----
//
// Megatron Core's MoELayer with the alltoall token dispatcher, the unfused permutation
// (moe_permute_fusion false, TransformerConfig's default; the fused one's row maps below) and
// TEGroupedMLP, read from:
//   megatron/core/transformer/moe/token_dispatcher.py @ 0014f13713bfa38a8bab4ae11edd6917d35165ce
//     (MoEAlltoAllTokenDispatcher: dispatch_preprocess permutes, dispatch_all_to_all sends over
//     EP, dispatch_postprocess all-gathers over the expert-TP group and sorts by local expert;
//     combine_preprocess sorts back and reduce-scatters, combine_all_to_all returns, unpermute)
//   megatron/core/transformer/moe/moe_utils.py @ 00611e6eeb0b09b5ee074750956855215ddbd67f
//     (permute, unpermute, sort_chunks_by_idxs, topk_routing_with_score_function)
//   megatron/core/transformer/moe/moe_layer.py @ 001199898c4badd01eaf0785c212d8ed7ce83042
//     (MoELayer.forward's custom_forward: which tensors its locals hold)
//   megatron/core/transformer/moe/router.py @ 005742ff1f002035922b88a648fa615aec22eeff (TopKRouter)
//   megatron/core/transformer/moe/experts.py, TEGroupedMLP.forward (as indexed; the index names
//     no commit for that version): linear_fc1 keeps its input, the weighted SwiGLU its input and
//     the probabilities, linear_fc2 its input.
// Token counts on one GPU for one microbatch (T_sp: the tokens of the sequence-parallel region,
// the MoE layer's input):
//   N_s = T_sp·K (·cf when a capacity factor pads): token copies this GPU permutes and sends;
//   N_a = T_sp·K·λ: token copies the EP all-to-all delivers to the most-loaded GPU, λ the
//         routing load (routing_load);
//   N_r = N_a·ETP: rows its grouped GEMMs run after the all-gather over the expert-TP group.
constexpr std::string_view k_src_router_topk =
    "Megatron moe_utils.py @ 00611e6e topk_routing_with_score_function (softmax after the top-k, "
    "the default): torch.topk on the logits saves its int64 indices (the scatter of the "
    "probabilities keeps the same storage), the softmax over the K chosen logits its fp32 output";
// Megatron Core's sigmoid router (moe_router_score_function sigmoid), read from
// megatron/core/transformer/moe/moe_utils.py @ 00611e6eeb0b09b5ee074750956855215ddbd67f
// (topk_routing_with_score_function, compute_routing_scores_for_aux_loss,
// switch_load_balancing_loss_func) and router.py at the same commit (TopKRouter.routing), unfused
// (moe_router_fusion false, TransformerConfig's default). Routing: scores = sigmoid(logits.float())
// keeps its fp32 output [T_sp, E] (the cast keeps nothing); torch.topk, on the scores or, with the
// expert bias, on scores + expert_bias (whose values are dropped), gives the int64 indices [T_sp, K]
// that gather(scores, 1, top_indices) and the scatter keep (one storage, as the softmax router's);
// with K > 1, probs = scores / (scores.sum(-1, keepdim=True) + 1e-20) keeps its numerator, the K
// chosen scores (topk's or gather's output, fp32 [T_sp, K]), and its denominator (fp32 [T_sp, 1]).
// The scaling factor (a Python float) and type_as keep nothing. So the sigmoid router keeps
// 4·E·T_sp beside the softmax router's 8·K·T_sp + 4·K·T_sp, and 4·T_sp more.
// The load-balancing loss: compute_routing_scores_for_aux_loss runs its own sigmoid over all
// experts (a second fp32 [T_sp, E] storage, kept) and normalises it over the experts (the
// denominator [T_sp, 1] kept); switch_load_balancing_loss_func sums it over the tokens, which
// keeps nothing. Counted whenever the router runs, as the softmax router's loss softmax
// (moe.router_probs) is: trainmem has no field for --moe-aux-loss-coeff.
constexpr std::string_view k_src_router_sigmoid =
    "Megatron moe_utils.py @ 00611e6e topk_routing_with_score_function (sigmoid): "
    "sigmoid(logits.float()) keeps its fp32 scores [T_sp, E]; topk (on the scores, or on the "
    "scores plus the expert bias) its int64 indices, which gather and scatter keep too";
constexpr std::string_view k_src_router_sigmoid_norm =
    "Megatron moe_utils.py @ 00611e6e topk_routing_with_score_function (sigmoid, K > 1): "
    "scores / (scores.sum(-1) + 1e-20) keeps the K chosen fp32 scores and the [T_sp, 1] sum";
constexpr std::string_view k_src_router_sigmoid_aux =
    "Megatron moe_utils.py @ 00611e6e compute_routing_scores_for_aux_loss (sigmoid): the "
    "load-balancing loss's own sigmoid keeps fp32 [T_sp, E]; its normalisation the [T_sp, 1] sum";
constexpr std::string_view k_src_permute_indices =
    "Megatron moe_utils.py @ 00611e6e permute: tokens.index_select(0, sorted_indices) saves the "
    "int64 indices (N_s = T_sp·K; unpermute's scatter_add_ keeps the same storage)";
constexpr std::string_view k_src_permute_probs =
    "Megatron moe_utils.py @ 00611e6e permute: probs.T.contiguous().reshape(-1)[flat_sorted] "
    "saves the int64 flat indices, a storage apart from sorted_indices = flat_sorted % num_tokens";

// With moe_permute_fusion (Megatron's permute/unpermute/sort_chunks_by_idxs with fused=True call
// Transformer Engine's moe_permute_with_probs, moe_unpermute, moe_sort_chunks_by_index; moe_utils.py
// @ 00611e6e) the two int64 index tensors are replaced by TE's row-id map, which _moe_permute_mask_map
// saves (and unpermute keeps, the same storage): int32 [T_sp, 2E+1] in TE's current triton
// permutation ("shape [num_tokens, num_experts * 2 + 1]", torch.int32), int64 [E, T_sp] in the
// version the index holds at 20deb83e (transformer_engine/pytorch/triton/permutation.py
// make_row_id_map): the larger, 4·T_sp·(2E+1), is counted. Each fused sort by local expert
// (_moe_chunk_sort, transformer_engine/pytorch/permutation.py @ 0a67aa3b) saves its own row map,
// int64 per row at 20deb83e (sort_chunks_by_idx), int32 in the current version: 8 B per row.
constexpr std::string_view k_src_fused_row_map =
    "TE _moe_permute_mask_map (moe_permute_fusion) saves row_id_map: int32 [T_sp, 2E+1] "
    "(triton make_row_id_map; int64 [E, T_sp] in TE @ 20deb83e), unpermute keeps the same storage";
constexpr std::string_view k_src_fused_chunk_sort =
    "TE _moe_chunk_sort (moe_permute_fusion, sort by local expert and back) saves a row map per "
    "sort: int64 per row in TE @ 20deb83e sort_chunks_by_idx";

// The factor λ on the tokens the most-loaded GPU's experts receive, over the balanced share
// (each EP rank receiving as many token copies as it sends). A capacity factor pads every
// expert to cf × the average (the field's meaning; Megatron moe_pad_expert_input_to_capacity):
// λ = cf. Dropless: moe_routing_imbalance, capped at what one GPU can receive: every token of
// its EP group (T_sp each, EP ranks) routed to its E/EP experts, at most min(K, E/EP) copies
// per token, is EP·min(K, E/EP)/K times the balanced T_sp·K; with EP = 1 that is 1 (one GPU
// runs every expert, however uneven the routing).
//
// Without moe_pad_expert_input_to_capacity (TransformerConfig's default, and ms-swift's) the
// capacity only drops: moe_utils.py @ 00611e6e topk_softmax_with_capacity keeps at most
// get_capacity = ceil(T_sp·K/E · cf) copies per expert from each GPU, so the experts of one GPU
// receive at most EP·(E/EP)·cf·T_sp·K/E = cf·T_sp·K copies: λ = min(cf, the cap above), an
// upper bound (the routing may leave them below it).
double routing_load(const Config& c) {
  const double ep = double(c.expert_model_parallel_size), k = double(c.moe_router_topk);
  const double local = double(c.num_moe_experts) / ep;
  const double most = std::max(1.0, ep * std::min(k, local) / k);
  if (c.moe_expert_capacity_factor > 0)
    return c.moe_pad_expert_input_to_capacity ? c.moe_expert_capacity_factor
                                              : std::min(c.moe_expert_capacity_factor, most);
  return std::clamp(c.moe_routing_imbalance, 1.0, most);
}

struct MoeTokens {
  double sent = 0;      // N_s
  double received = 0;  // N_a
  double expert = 0;    // N_r
};

MoeTokens moe_tokens(const Config& c, const Shape& x) {
  const double k = double(c.moe_router_topk);
  // Padding to the capacity sends E·capacity copies (token_dispatcher.py @ 0014f137
  // num_out_tokens = capacity·E when drop_and_pad); dropping alone sends at most T_sp·K.
  const double padded = c.moe_expert_capacity_factor > 0 && c.moe_pad_expert_input_to_capacity
                            ? c.moe_expert_capacity_factor
                            : 1.0;
  MoeTokens n;
  n.sent = x.tokens_sp * k * padded;
  n.received = x.tokens_sp * k * routing_load(c);
  n.expert = n.received * double(c.expert_tensor_parallel_size);
  return n;
}

// The width of the rows the dispatcher moves: h, or the latent size of a latent MoE (the down
// projection to it runs before the dispatch, the up projection after the combine).
double routed_width(const Config& c, const Shape& x) {
  return c.moe_latent_size > 0 ? double(c.moe_latent_size) : x.h;
}

// One expert's FFN width on this GPU: moe_ffn_hidden_size split by expert tensor parallelism
// (Megatron Core's TEGroupedMLP column- and row-parallel linear_fc1 / linear_fc2).
double local_expert_ffn(const Config& c) {
  return double(c.moe_ffn_hidden_size) / double(c.expert_tensor_parallel_size);
}

// ---- The all-gather dispatcher (moe_token_dispatcher_type allgather) ----
//
// Megatron Core's MoEAllGatherTokenDispatcher, read from NVIDIA/Megatron-LM
// megatron/core/transformer/moe/token_dispatcher.py, moe_utils.py (permute, unpermute) and
// tensor_parallel/mappings.py (_gather_along_first_dim), core/utils.py (GlobalMemoryBuffer), all
// @ 93aa335b952e8e53078c9dbd36686e72e0c2b1f9. When ETP > 1 or EP > 1, token_dispatch gathers over
// the expert-TP x EP group (G = ETP·EP ranks) the routing map [T_sp, E] (bool, under no_grad), the
// probabilities [T_sp, E] and the tokens [T_sp, h]; the tokens land in Megatron's global "mpu"
// buffer (use_global_buffer=True: allocated once at its largest size and kept for the run). So
// every GPU holds N_g = G·T_sp gathered tokens. dispatch_postprocess keeps the map's and the
// probabilities' columns of its E/EP local experts (.contiguous() copies), picks the local rows
// with probs.T.contiguous().masked_select(local_map.T.contiguous()) (which saves both operands
// for the probabilities' gradient) and permutes the N_r local rows with permute(): unfused,
// sorted_indices = arange(N_g).expand(...).masked_select(map) and tokens.index_select(0,
// sorted_indices), which saves the int64 indices (N_r); fused, TE's moe_permute over the gathered
// map, whose row-id map is [N_g, 2·E/EP + 1] int32. combine_preprocess unpermutes into zeros
// [N_g, h] (scatter_add_, the same index), and token_combine casts that to the probabilities'
// dtype and reduce-scatters it back to [T_sp, h]. N_r (the local experts' rows) is the
// all-to-all's N_r: G·T_sp tokens, K copies each, 1/EP of them local, ETP·T_sp·K, by λ.
constexpr std::string_view k_src_allgather_indices =
    "Megatron moe_utils.py @ 93aa335b permute (allgather dispatcher): index_select saves the int64 "
    "sorted_indices of the N_r local rows; unpermute's scatter_add_ keeps the same storage";
constexpr std::string_view k_src_allgather_row_map =
    "TE _moe_permute_mask_map (moe_permute_fusion, allgather dispatcher) saves row_id_map: int32 "
    "[N_g, 2·E/EP + 1] over the gathered tokens and the local experts";
constexpr std::string_view k_src_allgather_probs =
    "Megatron token_dispatcher.py @ 93aa335b MoEAllGatherTokenDispatcher.dispatch_postprocess: "
    "local_probs.T.contiguous().masked_select(local_map.T.contiguous()) saves the gathered local "
    "probabilities [E/EP, N_g] and the mask, for the probabilities' gradient";

bool allgather(const Config& c) { return c.moe_token_dispatcher_type == MoeTokenDispatcher::allgather; }

// ms-swift's LoRA on Megatron Core's grouped experts (modelscope/ms-swift
// swift/megatron/tuners/lora.py @ 710553d85464c7d2be85f35fa19d9d5476619d6f, and alike @
// 67fcc33641fbef6937bffe47da1833205d5df685, LoraParallelLinear.forward): after the frozen grouped
// linear, `x = x.to(lora_A.weight0.dtype)` (a copy when the adapters are in another dtype,
// lora_expert_dtype), lora_A(dropout(x), tokens_per_expert), lora_B(...), `lora_result * scaling`
// and `result = result + lora_result`, cast back with `result.to(previous_dtype)`. The adapters
// are Transformer Engine GroupedLinear modules with trainable weights, which save their input
// split per expert (views of it) for the weight gradient, while the frozen base saves none
// (transformer_engine/pytorch/module/grouped_linear.py @ v2.5 _GroupedLinear.forward:
// `inputmats = [None] * num_gemms` unless weight_requires_grad). So each adapter keeps lora_A's
// input (the dropped-out copy with its mask, the cast copy, or the base's own input) and lora_B's
// input, the r-wide intermediate, both in the adapters' dtype.
constexpr std::string_view k_src_expert_lora =
    "ms-swift swift/megatron/tuners/lora.py @ 710553d8 LoraParallelLinear.forward on TEGroupedLinear: "
    "lora_A (TE GroupedLinear, trainable) saves its input, lora_B the r-wide lora_A output, in the "
    "adapters' dtype (grouped_linear.py @ v2.5)";
constexpr std::string_view k_src_expert_lora_dropout =
    "ms-swift lora.py: nn.Dropout(lora_dropout) on each adapter's input: native_dropout keeps its "
    "bool mask, and lora_A the dropped copy";
struct ExpertAdapters {
  bool fc1 = false, fc2 = false;  // linear_fc1 (gate and up) and linear_fc2 (down) carry one
  double e = 2;                   // bytes per element of the adapters and their tensors
  std::string_view dtype;
  bool own_input = false;         // lora_A's input is a copy (dropout or the cast), not the base's
  bool cast = false;              // x.to(dtype) copies (adapters in another dtype than the input)
};
ExpertAdapters expert_adapters(const Config& c, const Shape& x) {
  ExpertAdapters a;
  if (!x.peft || !c.is_moe() || c.model_implementation != ModelImplementation::megatron_core) return a;
  a.fc1 = x.targeted(LoraTarget::up_proj) || x.targeted(LoraTarget::gate_proj);
  a.fc2 = x.targeted(LoraTarget::down_proj);
  a.e = bytes_per_element(c.lora_expert_dtype);
  a.dtype = name_of(c.lora_expert_dtype);
  a.cast = a.e != x.e;
  a.own_input = x.lora_dropout || a.cast;
  return a;
}
// Whether the experts' input G (the dispatched tokens) is saved: by linear_fc1 when its weights
// train, or by an adapter's lora_A that reads it as it is.
bool expert_input_saved(const Config& c, const Shape& x) {
  if (!x.peft) return true;
  const ExpertAdapters a = expert_adapters(c, x);
  return a.fc1 && !a.own_input;
}
// The adapters' forward beyond what they save, at its largest, in bytes per expert row, over the
// tensors the layer already holds. On linear_fc1 (output width `fc1_width`): when `lora_result *
// scaling` runs, the base output (`x_e`), lora_B's output and its scaled copy (adapters' dtype),
// none of them yet the fc1 output the activation saves (the sum, or its cast back); before it,
// the cast copy of the input beside the dropped one. On linear_fc2 (width w): the base output O,
// where the dispatcher's transient counts O alone, beside two adapter-dtype rows (lora_B's output
// and its scaled copy, then the scaled copy and the sum, which replaces O).
double expert_adapter_fc1_extra(const ExpertAdapters& a, double x_e, double in_width, double fc1_width) {
  if (!a.fc1) return 0;
  const double cast_then_drop = a.cast && a.own_input ? a.e * in_width : 0.0;
  return std::max(cast_then_drop, (x_e + 2 * a.e) * fc1_width);
}
double expert_adapter_fc2_extra(const ExpertAdapters& a, double width) {
  return a.fc2 ? 2 * a.e * width : 0.0;
}

// The adapters' saved tensors for one MoE layer, over the most-loaded GPU's `n` rows.
void expert_adapter_entries(const Config& c, const Shape& x, double n, Ledger& out) {
  const ExpertAdapters a = expert_adapters(c, x);
  const double f_e = local_expert_ffn(c);
  const double w = routed_width(c, x);
  const auto one = [&](double in_width, std::string_view mask, std::string_view input,
                       std::string_view intermediate) {
    if (x.lora_dropout) out.add(mask, "lora", in_width * n, "mask", k_src_expert_lora_dropout);
    if (a.own_input) out.add(input, "lora", a.e * in_width * n, a.dtype,
                             x.lora_dropout ? k_src_expert_lora_dropout : k_src_expert_lora);
    out.add(intermediate, "lora", a.e * x.r * n, a.dtype, k_src_expert_lora);
  };
  if (a.fc1) one(w, "lora.expert_fc1_dropout_mask", "lora.expert_fc1_input", "lora.expert_fc1_intermediate");
  if (a.fc2) one(f_e, "lora.expert_fc2_dropout_mask", "lora.expert_fc2_input", "lora.expert_fc2_intermediate");
}

// The gathered tokens N_g = G·T_sp (G = ETP·EP; 1: nothing is gathered).
double gathered_tokens(const Config& c, const Shape& x) {
  return x.tokens_sp * double(c.expert_tensor_parallel_size) * double(c.expert_model_parallel_size);
}

// The routing probabilities' bytes per element: the logits' dtype (moe_dispatcher_state).
double probs_bytes(const Config& c, const Shape& x) {
  return c.moe_router_dtype == MoeRouterDtype::fp32 ? 4.0 : x.e;
}

// The index the permutation keeps to undo itself: the unfused sorted_indices (int64, N_s) or,
// with moe_permute_fusion, TE's row-id map (k_src_fused_row_map: 4·T_sp·(2E+1)); with the
// all-gather dispatcher, over the gathered tokens and the local experts.
double moe_permutation_map_bytes(const Config& c, const Shape& x) {
  const double E = double(c.num_moe_experts);
  if (allgather(c)) {
    if (c.moe_permute_fusion)
      return 4 * gathered_tokens(c, x) * (2 * E / double(c.expert_model_parallel_size) + 1);
    return 8 * moe_tokens(c, x).expert;
  }
  if (c.moe_permute_fusion) return 4 * x.tokens_sp * (2 * E + 1);
  return 8 * moe_tokens(c, x).sent;
}

// Tokens one GPU's experts process for one microbatch (N_r above).
double expert_tokens(const Config& c, const Shape& x) { return moe_tokens(c, x).expert; }

// The dispatcher's transient buffers in one MoE layer's forward (Megatron Core, alltoall), beyond
// the tensors the layer saves: the largest set alive at once, in the layer's routed width w (h, or
// the latent size). MoELayer.forward's custom_forward (moe_layer.py @ 00119989) holds the permuted
// tokens P (`hidden_states` after router_and_preprocess: index_select makes a copy, e·w·N_s) and
// the all-to-all output A (`dispatched_input`, e·w·N_a; with EP = 1 all_to_all returns its input)
// until the layer returns. routed_experts_compute then holds the experts' input G
// (dispatch_postprocess: the all-gather over ETP and, with more than one local expert,
// sort_chunks_by_idxs's torch.cat each make a copy; without either G is A, or P), the experts'
// output O (e·w·N_r), its sorted-back copy B (combine_preprocess, more than one local expert) and
// the reduce-scatter's output R (ETP > 1, e·w·N_a), all at once at the end of combine_preprocess.
// combine then sends R (or B, or O) back over the EP all-to-all into C (e·w·N_s, a copy with
// EP > 1) while P and A are still held. linear_fc1 saves G (the layer's moe.expert_input) unless
// its weights are frozen (peft), so G counts here only then. The unpermuted output
// (T_sp rows) is the layer's output, as a dense MLP's is, and is not counted.
//
// The all-gather dispatcher instead (token_dispatcher.py @ 93aa335b, above): custom_forward's
// `probs` holds the gathered probabilities [N_g, E] until the layer returns; the experts' input P
// (N_r rows) and output O live until experts_compute returns, beside combine_preprocess's
// unpermuted U (zeros [N_g, w] filled by scatter_add_); token_combine then holds U, its copy in
// the probabilities' dtype when that differs (fp32 router) and the reduce-scatter's output (T_sp
// rows, in that dtype). The gathered tokens sit in the global buffer (moe_gather_buffer_bytes).
double allgather_forward_transient(const Config& c, const Shape& x) {
  const double n_r = moe_tokens(c, x).expert, n_g = gathered_tokens(c, x);
  const double w = routed_width(c, x);
  const double p = probs_bytes(c, x);
  const double gathered_probs = n_g > x.tokens_sp ? p * double(c.num_moe_experts) * n_g : 0.0;
  // P is kept by linear_fc1 or an adapter (counted there) unless neither saves it.
  const double P = expert_input_saved(c, x) ? 0.0 : x.e * w * n_r;
  const double O = x.e * w * n_r, U = x.e * w * n_g;
  const bool cast = p != x.e;
  const double at_combine_preprocess = P + O + U;
  const double at_combine = U + (cast ? p * w * n_g : 0.0) + p * w * x.tokens_sp;
  // The experts' adapters (expert_adapters): their forward inside experts_compute, P still held.
  const ExpertAdapters a = expert_adapters(c, x);
  const double f_e = local_expert_ffn(c);
  const double glu = c.gated_linear_unit ? 2 : 1;
  const double at_adapters = P + n_r * std::max(expert_adapter_fc1_extra(a, x.e, w, glu * f_e),
                                                x.e * w + expert_adapter_fc2_extra(a, w));
  return gathered_probs + std::max({at_combine_preprocess, at_combine, a.fc1 || a.fc2 ? at_adapters : 0.0});
}

double moe_forward_transient(const Config& c, const Shape& x) {
  if (allgather(c)) return allgather_forward_transient(c, x);
  const MoeTokens n = moe_tokens(c, x);
  const double w = routed_width(c, x);
  const double row = x.e * w;
  const bool ep = c.expert_model_parallel_size > 1, etp = c.expert_tensor_parallel_size > 1;
  const bool sorted = c.num_moe_experts / c.expert_model_parallel_size > 1;
  const bool copied = etp || sorted;  // G is a tensor of its own
  const bool saved = expert_input_saved(c, x);  // linear_fc1 (or an adapter's lora_A) keeps G
  double P = row * n.sent;
  double A = ep ? row * n.received : 0.0;  // with EP = 1 A is P
  const double G = copied && !saved ? row * n.expert : 0.0;
  if (!copied && saved) (ep ? A : P) = 0;  // G is A (or P), saved by linear_fc1
  const double O = row * n.expert;
  const double B = sorted ? row * n.expert : 0.0;
  const double R = etp ? row * n.received : 0.0;
  const double combine_in = etp ? R : sorted ? B : O;
  const double C = ep ? row * n.sent : 0.0;  // with EP = 1 C is combine_in
  const double at_combine_preprocess = P + A + G + O + B + R;
  const double at_combine = P + A + combine_in + C;
  // The experts' adapters (expert_adapters): their forward inside experts_compute, with P, A and G
  // held; on linear_fc2 beside the base output O.
  const ExpertAdapters a = expert_adapters(c, x);
  if (!a.fc1 && !a.fc2) return std::max(at_combine_preprocess, at_combine);
  const double f_e = local_expert_ffn(c);
  const double glu = c.gated_linear_unit ? 2 : 1;
  const double at_adapters = P + A + G + n.expert * std::max(expert_adapter_fc1_extra(a, x.e, w, glu * f_e),
                                                             row + expert_adapter_fc2_extra(a, w));
  return std::max({at_combine_preprocess, at_combine, at_adapters});
}

// What the dispatcher object itself keeps of one MoE layer between its forward passes
// (token_dispatcher.py @ 0014f137 dispatch_preprocess: self.probs and self.routing_map, read by
// combine_preprocess and unpermute, are overwritten only by the layer's next forward): the routing
// probabilities [T_sp, E] in the router's dtype (router.py @ 005742ff gating in the input's dtype,
// moe_utils topk_routing_with_score_function probs.type_as(logits): the compute dtype with
// Megatron's default moe_router_dtype None) and the bool routing map [T_sp, E]. After backward
// the saved permutation indices (self.reversed_local_input_permutation_mapping) stay too.
//
// The probabilities are in the logits' dtype: fp32 with moe_router_dtype fp32 (router.py @
// 005742ff gating: router_dtype = torch.float32; router_gating_linear writes the logits in it;
// moe_utils.py @ 00611e6e topk_routing_with_score_function: "The final probs are casted to the same
// dtype as the logits", routing_probs = zeros_like(logits).scatter(...)). The permutation's index
// (moe_permutation_map_bytes: self.reversed_local_input_permutation_mapping) is autograd's too
// while the layer's saved tensors live, so it is counted here only when they do not: after
// backward, and through the whole step when the layer's forward ran inside a recompute
// checkpoint (full recompute, or selective with the moe module: the first forward runs under
// no_grad and the dispatcher still keeps the index; an upper bound for the layers a block-method
// recompute leaves out, whose index is then counted twice).
//
// The all-gather dispatcher keeps instead (token_dispatcher.py @ 93aa335b): self.local_map, the
// gathered map's local columns [N_g, E/EP] (bool; self.routing_map is dropped), and
// self.local_probs (the N_r local rows' probabilities, which the experts save too) beside the
// permutation's index, both counted under the same rule as the index.
double moe_dispatcher_state(const Config& c, const Shape& x, bool after_backward) {
  const double E = double(c.num_moe_experts);
  const double probs = probs_bytes(c, x);
  const bool unsaved = after_backward || moe_layer_checkpointed(c);
  if (allgather(c)) {
    const double local_map = gathered_tokens(c, x) * E / double(c.expert_model_parallel_size);
    return local_map + (unsaved ? moe_permutation_map_bytes(c, x) + probs * moe_tokens(c, x).expert : 0.0);
  }
  const double probs_and_map = (probs + 1) * E * x.tokens_sp;
  return probs_and_map + (unsaved ? moe_permutation_map_bytes(c, x) : 0.0);
}

// What one MoE layer's router keeps for the run with the expert bias (router.py @
// 00611e6eeb0b09b5ee074750956855215ddbd67f TopKRouter.__init__): the expert_bias buffer and the
// local_tokens_per_expert counter forward adds routing_map.sum(0) to, fp32 [E] each (kept in fp32:
// _maintain_float32_expert_bias). The step's bias update stacks them over the layers for one
// all-reduce (moe_utils.py get_updated_expert_bias): transient, and as small, not counted.
double moe_router_buffers(const Config& c) {
  return c.moe_router_enable_expert_bias ? 2 * 4 * double(c.num_moe_experts) : 0.0;
}

// Megatron's global "mpu" buffer of the all-gather dispatcher's gathered tokens: one per GPU, at
// the largest size asked (GlobalMemoryBuffer.get_tensor reallocates only to grow), kept for the
// run; e·w·N_g. An upper bound where the sequence-parallel linears of the local transformer
// implementation already keep a buffer of that name (T·h, at most this size).
double moe_gather_buffer(const Config& c, const Shape& x) {
  if (!allgather(c)) return 0;
  const double n_g = gathered_tokens(c, x);
  if (!(n_g > x.tokens_sp)) return 0;
  const double w = routed_width(c, x);
  return x.e * w * n_g;
}

// The all-gather dispatcher's backward through one MoE layer (autograd of the same ops, in
// reverse): the reduce-scatter's backward all-gathers the output gradient to [N_g, w] in the
// probabilities' dtype (mappings.py _ReduceScatterToSequenceParallelRegion.backward) and, with an
// fp32 router, casts it back to the compute dtype beside it; unpermute's scatter_add_ backward
// gathers it to the N_r rows (e·w·N_r). Later, index_select's backward writes the gathered
// tokens' gradient into zeros [N_g, w] (e) and the all-gather's backward reduce-scatters it to
// T_sp rows. The larger of the two groups.
double allgather_backward_transient(const Config& c, const Shape& x) {
  if (!allgather(c)) return 0;
  const double n_r = moe_tokens(c, x).expert, n_g = gathered_tokens(c, x);
  const double w = routed_width(c, x);
  const double p = probs_bytes(c, x);
  const double combine = p * w * n_g + (p != x.e ? x.e * w * n_g : 0.0) + x.e * w * n_r;
  const double dispatch = x.e * w * n_g + x.e * w * x.tokens_sp;
  return std::max(combine, dispatch);
}

// The MoE block after its norm: router, dispatch, experts, shared experts.
void moe_body(const Config& c, const Shape& x, const Modules& m, Ledger& out) {
  // The norm output is the MoE input: kept by the router's gating linear and by the shared
  // experts' fc1 (one storage), or by the moe checkpoint as its input.
  // With peft the router, the experts and the shared experts are frozen (resolve() allows no
  // adapters on them): their linears keep no inputs of their own.
  if (!m.layernorm && (m.moe || !x.peft))
    out.add("moe.input", "moe", x.hidden, x.act_dtype,
            m.moe ? k_src_checkpoint_input : k_src_linear_input);
  if (!m.moe) {
    const double n_experts = double(c.num_moe_experts), topk = double(c.moe_router_topk);
    const MoeTokens tokens = moe_tokens(c, x);
    if (c.moe_router_score_function == MoeRouterScoreFunction::sigmoid) {
      out.add("moe.router_scores", "moe", 4 * n_experts * x.tokens_sp, "fp32", k_src_router_sigmoid);
      out.add("moe.router_topk_indices", "moe", 8 * topk * x.tokens_sp, "int64", k_src_router_sigmoid);
      if (c.moe_router_topk > 1) {
        out.add("moe.router_topk_scores", "moe", 4 * topk * x.tokens_sp, "fp32", k_src_router_sigmoid_norm);
        out.add("moe.router_topk_sum", "moe", 4 * x.tokens_sp, "fp32", k_src_router_sigmoid_norm);
      }
      out.add("moe.router_aux_scores", "moe", 4 * n_experts * x.tokens_sp, "fp32", k_src_router_sigmoid_aux);
      out.add("moe.router_aux_sum", "moe", 4 * x.tokens_sp, "fp32", k_src_router_sigmoid_aux);
    } else {
      out.add("moe.router_probs", "moe", 4 * n_experts * x.tokens_sp, "fp32", k_src_router);
      out.add("moe.router_topk_indices", "moe", 8 * topk * x.tokens_sp, "int64", k_src_router_topk);
      out.add("moe.router_topk_probs", "moe", 4 * topk * x.tokens_sp, "fp32", k_src_router_topk);
    }
    if (allgather(c)) {
      // No sort by local expert: permute() orders the gathered rows by local expert directly.
      if (c.moe_permute_fusion)
        out.add("moe.permute_row_id_map", "moe", moe_permutation_map_bytes(c, x), "int32",
                k_src_allgather_row_map);
      else
        out.add("moe.permutation_indices", "moe", moe_permutation_map_bytes(c, x), "int64",
                k_src_allgather_indices);
      const double local = gathered_tokens(c, x) * n_experts / double(c.expert_model_parallel_size);
      if (!x.peft) {  // with one rank nothing is gathered, but the selection runs the same
        out.add("moe.local_probs", "moe", probs_bytes(c, x) * local,
                c.moe_router_dtype == MoeRouterDtype::fp32 ? "fp32" : x.act_dtype, k_src_allgather_probs);
        out.add("moe.local_map", "moe", local, "mask", k_src_allgather_probs);
      }
    } else if (c.moe_permute_fusion) {
      out.add("moe.permute_row_id_map", "moe", moe_permutation_map_bytes(c, x), "int32",
              k_src_fused_row_map);
      // dispatch_postprocess sorts the N_r gathered rows by local expert, combine_preprocess
      // sorts them back (more than one local expert).
      if (c.num_moe_experts / c.expert_model_parallel_size > 1)
        out.add("moe.chunk_sort_row_maps", "moe", 2 * 8 * tokens.expert, "int64",
                k_src_fused_chunk_sort);
    } else {
      out.add("moe.permutation_indices", "moe", 8 * tokens.sent, "int64", k_src_permute_indices);
      out.add("moe.permuted_probs_indices", "moe", 8 * tokens.sent, "int64", k_src_permute_probs);
    }
    const double width_in = routed_width(c, x);
    // The most-loaded GPU's rows (N_r, routing_load): the experts' tensors scale with them.
    const double n = tokens.expert;
    if (expert_input_saved(c, x))
      out.add("moe.expert_input", "moe", x.lin * width_in * n, x.lin_dtype,
              x.peft ? k_src_expert_lora : k_src_expert_input);
    const double f_e = local_expert_ffn(c);
    // fc2's input: kept by linear_fc2 when it trains, or by its adapter's lora_A reading it as it is.
    const ExpertAdapters adapters = expert_adapters(c, x);
    const bool fc2_input_kept = !x.peft || (adapters.fc2 && !adapters.own_input);
    activation_and_fc2(c, x, k_expert_names, f_e, n, m.moe_act, fc2_input_kept, out, /*weighted=*/true);
    expert_adapter_entries(c, x, n, out);
    out.add("moe.expert_probs", "moe", 4 * n, "fp32", k_src_expert_probs);
    if (c.moe_latent_size > 0 && !x.peft)
      out.add("moe.latent_up_input", "moe", x.lin * double(c.moe_latent_size) * x.tokens_sp,
              x.lin_dtype, k_src_latent);
    if (c.moe_shared_expert_intermediate_size > 0 && !m.shared_experts) {
      // In 16-bit the shared fc1 input is moe.input; under FP8 it is its own copy.
      if (x.fp8)
        out.add("moe.shared_fc1_input", "moe", x.lin * x.h * x.tokens_sp, x.lin_dtype,
                k_src_fp8_input);
      activation_and_fc2(c, x, k_shared_names,
                         double(c.moe_shared_expert_intermediate_size) / x.t, x.tokens, false,
                         !x.peft, out);
      if (c.moe_shared_expert_gate)
        out.add("moe.shared_output", "moe", x.hidden, x.act_dtype,
                k_src_shared_gate);
    }
  }
  output_dropout(x, "moe.output_dropout_mask", "moe", out);
}

// MoE block (Megatron MoELayer with the all-to-all dispatcher and TEGroupedMLP; pre-MLP norm
// is a separate TENorm).
void moe_mlp(const Config& c, const Shape& x, const Modules& m, Ledger& out) {
  norm_entries(x, "norm.mlp_input", "norm.mlp_stats", !m.layernorm, out);
  moe_body(c, x, m, out);
}

// ---- torchtitan per-op selective checkpointing ----
//
// torchtitan wraps each block in a non-reentrant checkpoint whose policy MUST_SAVEs the outputs
// of aten.mm (except every second one, counted per block from the first), the SDPA kernels (cuDNN's
// only since PR #2095: op_sac_saves_cudnn_attention),
// reduce_scatter_tensor and all_to_all_single; the block input is kept as the checkpoint's
// argument. The MoE router's gate mm is force-recomputed (per_op_sac_force_recompute_mm_shapes_
// by_fqns defaults to moe.router.gate) and grouped expert GEMMs (_grouped_mm) are not in the list.
// Under Transformer Engine FP8 the linears run torch._scaled_mm, which is not in the list either:
// no mm output is saved. torchao's Float8Linear (fsdp2, ddp) calls aten.mm on Float8Tensor
// subclasses, which the policy sees as mm: saved as in 16 bits (te_fp8 is false there).
// Matmuls are visited in torchtitan's order: wq, wk, wv (or MLA's wq_a, wq_b, wkv_a, wkv_b),
// SDPA, wo, then w1, w3, w2 (shared experts after the routed ones).
class OpSac {
 public:
  OpSac(const Config& c, const Shape& x, Ledger& out) : c_(c), x_(x), out_(out) {}

  // A column-parallel (or replicated) matmul with `width` output columns on this GPU.
  void mm(std::string_view name, std::string_view module, double width, double tokens) {
    if (x_.fp8) return;
    if (++count_ % 2 == 0) return;
    out_.add(name, module, x_.e * width * tokens, x_.act_dtype, k_src_sac);
  }
  // A row-parallel matmul back to h: its output is a partial sum over the whole T before the
  // reduce-scatter, whose own output is saved as well under sequence parallelism.
  void row_mm(std::string_view name, std::string_view rs_name, std::string_view module) {
    mm(name, module, x_.h, x_.tokens);
    if (c_.sequence_parallel && x_.t > 1)
      out_.add(rs_name, module, x_.e * x_.h * x_.tokens_sp, x_.act_dtype, k_src_sac);
  }
  void sdpa(double v_width) {
    // cuDNN's kernel (torchtitan's models/attention.py runs it first on sm100 since PR #1196,
    // 2025-05-14) entered the save list with PR #2095 (2025-12-01, issue #2091): before it the
    // policy returns PREFER_RECOMPUTE for _scaled_dot_product_cudnn_attention, so neither its
    // output nor its statistics are saved and backward re-runs the attention. PR #1196's own
    // B200 log shows the step: 46.39 -> 44.59 GiB reserved on switching to cuDNN.
    if (c_.attention_backend == AttentionBackend::fused && !c_.op_sac_saves_cudnn_attention) return;
    out_.add("attention.sdpa_output", "attention", x_.e * x_.a * v_width / x_.t * x_.tokens,
             x_.act_dtype, k_src_sac);
    if (c_.attention_backend == AttentionBackend::unfused)
      // _scaled_dot_product_attention_math returns (output, attention weights).
      out_.add("attention.sdpa_probs", "attention", x_.e * x_.a / x_.t * x_.tokens * x_.s,
               x_.act_dtype, k_src_sac);
    else
      out_.add("attention.sdpa_logsumexp", "attention", 4 * x_.a / x_.t * x_.tokens, "fp32",
               k_src_sac);
  }
  void ffn(std::string_view w1, std::string_view w3, std::string_view w2, std::string_view rs,
           std::string_view module, double width) {
    mm(w1, module, width, x_.tokens);
    if (c_.gated_linear_unit) mm(w3, module, width, x_.tokens);
    row_mm(w2, rs, module);
  }

 private:
  const Config& c_;
  const Shape& x_;
  Ledger& out_;
  int count_ = 0;
};

void selective_op_layer(const Config& c, const Shape& x, bool moe_layer, Ledger& out) {
  out.add("layer.input", "layer", x.hidden, x.act_dtype, k_src_sac);
  OpSac sac(c, x, out);
  if (x.a > 0) {
    if (c.multi_latent_attention) {
      const double d_qk = double(c.qk_head_dim), d_rope = double(c.qk_pos_emb_head_dim),
                   d_v = double(c.v_head_dim);
      if (c.q_lora_rank > 0) {
        sac.mm("attention.wq_a_output", "attention", double(c.q_lora_rank), x.tokens);
        sac.mm("attention.wq_b_output", "attention", x.a * (d_qk + d_rope) / x.t, x.tokens);
      } else {
        sac.mm("attention.wq_output", "attention", x.a * (d_qk + d_rope) / x.t, x.tokens);
      }
      sac.mm("attention.wkv_a_output", "attention", double(c.kv_lora_rank) + d_rope, x.tokens);
      sac.mm("attention.wkv_b_output", "attention", x.a * (d_qk + d_v) / x.t, x.tokens);
      sac.sdpa(d_v);
    } else {
      sac.mm("attention.wq_output", "attention", x.a * x.k / x.t, x.tokens);
      sac.mm("attention.wk_output", "attention", x.g * x.k / x.t, x.tokens);
      sac.mm("attention.wv_output", "attention", x.g * x.k / x.t, x.tokens);
      sac.sdpa(x.k);
    }
    sac.row_mm("attention.wo_output", "attention.wo_reduce_scatter", "attention");
  }
  if (moe_layer) {
    if (c.expert_model_parallel_size > 1) {
      const double width = routed_width(c, x);
      const double capacity =
          c.moe_expert_capacity_factor > 0 ? c.moe_expert_capacity_factor : 1.0;
      const double routed = x.tokens_sp * double(c.moe_router_topk) * capacity;
      out.add("moe.dispatch_all_to_all", "moe", x.e * width * routed, x.act_dtype, k_src_sac);
      out.add("moe.combine_all_to_all", "moe", x.e * width * routed, x.act_dtype, k_src_sac);
    }
    if (c.moe_shared_expert_intermediate_size > 0)
      sac.ffn("moe.shared_w1_output", "moe.shared_w3_output", "moe.shared_w2_output",
              "moe.shared_w2_reduce_scatter", "moe",
              double(c.moe_shared_expert_intermediate_size) / x.t);
  } else {
    sac.ffn("mlp.w1_output", "mlp.w3_output", "mlp.w2_output", "mlp.w2_reduce_scatter", "mlp",
            x.f / x.t);
  }
}

// ---- The model's own code: Hugging Face transformers, torchtune, torchtitan ----
//
// With model_implementation hf-transformers, torchtune or torchtitan the layers are the model's
// own eager PyTorch code, and what autograd keeps follows that code's op sequence, tensor by
// tensor, with PyTorch's save rules (tools/autograd/derivatives.yaml: a node keeps a tensor only
// for a gradient that is needed, so with peft the frozen base keeps less). tests/oracle measures
// the same op sequences (torch 1.13, CPU) and tests/oracle/README.md lists them in closed form.
// Symbols as above; per GPU a_l = a/t query heads, g_l = g/t KV heads, f_l = f/t; e the compute
// dtype's bytes, e_r the residual stream's (fp32 under ddp's autocast, e otherwise).
constexpr std::string_view k_src_hf_rmsnorm =
    "transformers modeling_llama.py @ 5dd4a63548857797727ae73eeb6a6e886ea02a3e LlamaRMSNorm "
    "(torchtune rms_norm.py @ 68200894da3dc9d0e3276b3d91e13758f884ad7a RMSNorm does the same): "
    "the input cast to fp32 is kept by pow (for the input's gradient), rsqrt keeps its fp32 "
    "result, and weight * normalised keeps the normalised input in the input dtype (for the "
    "weight's gradient only)";
constexpr std::string_view k_src_fused_rmsnorm =
    "torchtitan models/llama3/model/model.py @ 018740b7aae7846d24954539244c78215dbd181f uses "
    "nn.RMSNorm; PyTorch layer_norm.cpp @ 3de78edb07f16b05fe8af347d4e2d1d495873d85 rms_norm "
    "dispatches to _fused_rms_norm (weight and input of one dtype, as FSDP2's param_dtype makes "
    "them), whose backward keeps the input and the fp32 rstd (derivatives.yaml)";
constexpr std::string_view k_src_eager_layer_norm =
    "nn.LayerNorm: native_layer_norm keeps its input, mean and rstd (fp32) when the input or the "
    "weight needs a gradient (derivatives.yaml native_layer_norm)";
constexpr std::string_view k_src_eager_linear =
    "F.linear: mm keeps its input for the weight's gradient only (derivatives.yaml mm, "
    "gen_variable_type.py should_compute_output); the projections that read one tensor keep one "
    "storage";
constexpr std::string_view k_src_hf_rope =
    "transformers modeling_llama.py @ 5dd4a635 apply_rotary_pos_emb: q * cos + rotate_half(q) * "
    "sin keeps cos and sin ([1, s, head_dim] each in the hidden states' dtype, computed once by "
    "LlamaRotaryEmbedding and shared by every layer) when q or k needs a gradient";
constexpr std::string_view k_src_hf_eager_qk =
    "transformers modeling_llama.py @ 5dd4a635 eager_attention_forward: matmul(query, "
    "repeat_kv(key).T) keeps the query after rope and the key repeated to a heads (one KV head "
    "and b = 1: both reshapes are views and the one head is kept)";
constexpr std::string_view k_src_hf_eager_softmax =
    "eager_attention_forward: softmax(dtype=float32) keeps its fp32 output; .to(query.dtype) in "
    "16-bit is a copy the matmul with V keeps; dropout keeps a bool mask and the matmul its "
    "output";
constexpr std::string_view k_src_hf_eager_sinks =
    "transformers modeling_gpt_oss.py @ 00d4b3d2142cb4ced2f51b90614b5d26bc045015 "
    "eager_attention_forward: cat([scores, sinks]) keeps nothing; combined - combined.max(dim=-1, "
    "keepdim=True).values keeps max's int64 indices [b, a, s, 1]; softmax(dtype=combined.dtype) "
    "keeps its output [b, a, s, s + 1] in the scores' dtype; probs[..., :-1] is a view of it, "
    "which the matmul with V keeps (no fp32 copy, unlike Llama's eager path)";
constexpr std::string_view k_src_hf_eager_v =
    "eager_attention_forward: matmul(attn_weights, repeat_kv(value)) keeps the value repeated to "
    "a heads";
constexpr std::string_view k_src_sdpa_math =
    "torchtune attention.py @ 90d5ba51861259b2a94dab524f246acaf196a042 and torchtitan model.py @ "
    "018740b7 call F.scaled_dot_product_attention with k and v expanded to a heads; its math "
    "path (PyTorch attention.cpp @ bc8cb28010a6b27e1817d38e1c1e0ac59b34477e "
    "_scaled_dot_product_attention_math) scales q and k by sqrt(1/sqrt(d)) each (new tensors, "
    "the key a heads wide), keeps the softmax in the input dtype, its dropout mask and output, "
    "and v";
constexpr std::string_view k_src_sdpa_fused =
    "SDPA's flash, memory-efficient and cuDNN kernels (and flash-attn) keep query, key, value, "
    "output and the fp32 logsumexp per head and query token; no s^2 tensor, dropout regenerated "
    "from the Philox seed. PyTorch cuda/attention.cu @ 007ae17eabceb8ec8aca74d0ad269d06ccdfeb52 "
    "returns the bshd output transposed, so transpose(1, 2).contiguous() before o_proj is a view: "
    "o_proj keeps the kernel's output storage";
constexpr std::string_view k_src_hf_sdpa_kv =
    "transformers integrations/sdpa_attention.py @ 00c238bd242b4c6ddfb2c17d4573174ec2daaec8: "
    "with no attention mask (causal training batches) and torch >= 2.5 SDPA gets enable_gqa and "
    "the KV heads unrepeated (flash_attention_2 likewise takes g heads)";
constexpr std::string_view k_src_eager_kv_expanded =
    "torchtune attention.py @ 90d5ba51 (expand + flatten) and torchtitan model.py @ 018740b7 "
    "(repeat_kv) hand SDPA k and v with a heads: copies, views when there is one KV head";
constexpr std::string_view k_src_eager_glu =
    "transformers LlamaMLP (modeling_llama.py @ 5dd4a635), torchtune FeedForward "
    "(feed_forward.py @ 7304ea5c7258826fc253f21b523b162a42560204), torchtitan FeedForward "
    "(model.py @ 018740b7): down(act(gate(x)) * up(x)) keeps the gate output (the activation's "
    "input; relu keeps its result), the activation output and the up output (each for the "
    "other's gradient) and the product (down's input)";
constexpr std::string_view k_src_eager_mlp =
    "fc2(act(fc1(x))): the activation keeps its input (relu: its result, also fc2's input), fc2 "
    "its input";
constexpr std::string_view k_src_hf_moe_router =
    "transformers modeling_mixtral.py @ af3efdd71ee5b568dfdb71bb41d316df830147af "
    "MixtralSparseMoeBlock: softmax(router_logits, dtype=float) keeps the fp32 probabilities, "
    "topk its int64 indices, the in-place renormalisation a copy of the top-k weights and their "
    "sum";
constexpr std::string_view k_src_hf_moe_experts =
    "MixtralSparseMoeBlock: per expert torch.where gives one int64 [n, 2] index storage (kept by "
    "the gathers and index_add_), hidden_states[top_x] a copy of the expert's tokens (kept by w1 "
    "and w3), expert output * routing weight keeps both, index_add_ keeps the weighted output";
constexpr std::string_view k_src_hf_moe_kbit =
    "MixtralSparseMoeBlock under QLoRA with fp32 norms (k_src_kbit_fp32_residual): the block's "
    "input is the fp32 norm output, so routing_weights.to(hidden_states.dtype) stays fp32, each "
    "expert's w2 (Linear4bit) returns its output .to(inp_dtype) of the fp32 product, and the "
    "weighted output is fp32";
constexpr std::string_view k_src_eager_checkpoint =
    "torch.utils.checkpoint keeps the layer's arguments while its output needs a gradient: the "
    "hidden state (the residual stream's dtype); non-reentrant as torchtune's and torchtitan's "
    "activation checkpointing run it, reentrant (CheckpointFunction's save_for_backward, the same "
    "arguments) as transformers' gradient_checkpointing_enable runs it unless "
    "gradient_checkpointing_kwargs says otherwise";
constexpr std::string_view k_src_hf_checkpoint_args =
    "transformers LlamaModel.forward @ 5dd4a635 passes hidden_states, causal_mask, "
    "position_ids, cache_position and position_embeddings to _gradient_checkpointing_func: the "
    "eager 4-D causal mask [b, 1, s, s] in the model dtype (SDPA and flash get none for causal "
    "batches), the int64 positions and cos/sin, once per model";
constexpr std::string_view k_src_hf_checkpoint_mask =
    "transformers modeling_bert.py @ 004ad5f50b627b59bf0d581c31bc0052b6cfd40b BertEncoder: "
    "the checkpoint gets hidden_states and the extended attention mask [b, 1, 1, s] in the model "
    "dtype (get_extended_attention_mask); position ids come from a buffer";
constexpr std::string_view k_src_hf_labels =
    "transformers loss/loss_utils.py @ 0114da07ec0e101b420a923dedeb6032b6ac3a44 ForCausalLMLoss: "
    "logits.float(), cross_entropy keeps the fp32 log-probabilities; pad(labels, (0, 1))[..., "
    "1:].contiguous() is a view of the padded [1, s + 1] labels when b = 1, a [b, s] copy "
    "otherwise, kept by nll_loss";
// transformers 4.46 introduced loss/loss_utils.py (the models call self.loss_function; PR #33902,
// merged for 4.46, took `logits = logits.float()` out of the models' forward) with a ForCausalLMLoss
// that upcast the logits and then shifted them: `logits = logits.float(); shift_logits =
// logits[..., :-1, :].contiguous(); shift_labels = labels[..., 1:].contiguous()`, then
// cross_entropy over the flattened copies. PR #35646 (huggingface/transformers, opened 2025-01-13,
// after 4.48.0) dropped the copy: the loss pads the labels instead (k_src_hf_labels, loss_utils.py
// @ 0114da07), as the snapshot at 65c36f6a (huggingface/pytorch-transformers) shows without the
// later shift_labels argument. The 4.48 patch releases keep the copy.
// Releases up to 4.45 did the same inside the model's forward, after `logits = logits.float()`
// (removed by PR #33902 for 4.46), so the model's output is the fp32 logits.
constexpr std::string_view k_src_hf_shifted_loss =
    "transformers 4.46-4.48 loss/loss_utils.py ForCausalLMLoss (before PR #35646): logits.float(), "
    "then logits[..., :-1, :].contiguous(), a copy of b(s - 1) rows; cross_entropy keeps the fp32 "
    "log-probabilities of those rows and labels[..., 1:].contiguous() (a view of the batch's [1, s] "
    "labels when b = 1, a [b, s - 1] copy otherwise)";
constexpr std::string_view k_src_tt_chunks =
    "torchtune transformer.py @ 3e5b0408e636e20ca18e9c6c58c68b4da9339129 chunked_output and "
    "loss/ce_chunked_output_loss.py @ ce5433b01eefe4ad4abe2d28d9f34b4e658fd982: h.chunk(n, 1) "
    "gives ceil(s / ceil(s / n)) chunks; output(chunk) and labels.reshape(-1) copy a chunk's rows "
    "when b > 1 and it is longer than one token, and keep the whole tensor (once) when they are "
    "views; each chunk's log-probabilities are fp32";

// ---- torch.compile (torch_compile) ----
//
// A compiled module's backward keeps what AOTAutograd's min-cut partitioner chooses
// (torch/_functorch/partitioners.py @ 00c07b93c9e8145d374299154218e747d1d20fb0,
// min_cut_rematerialization_partition, with the defaults of torch/_functorch/config.py): every op
// outside the recomputable allowlist (mm, bmm, addmm, the SDPA kernels, topk, ...) and every
// reduction whose output is under a quarter of its inputs (a norm's mean) is banned from
// recomputation, and so is any tensor a non-fusible backward op reads ("materialized
// backwards": a matmul's input, read again by the weight-gradient matmul). The rest, pointwise
// and view chains, is recomputed in backward from the cheapest cut, where a tensor some
// non-fusible op produced (a matmul output, a graph input) costs its bytes and one only fusible
// ops read costs twice its bytes. torchtune compiles each decoder layer and the loss
// (training/_compile.py @ 0078c31b8ad014b22b8ced42659d8549e4c71552 compile_model, compile_loss;
// CEWithChunkedOutputLoss compiles compute_cross_entropy, one chunk per call); torchtitan each
// block (its loss follows cross_entropy_loss_fusion); transformers' Trainer the whole model,
// loss included (trainer.py torch_compile).
constexpr std::string_view k_src_compiled_rmsnorm =
    "compiled RMSNorm (partitioners.py @ 00c07b93 min-cut): the mean of x² is a reduction to "
    "1/h of its input (banned: 4 B per row kept), the normalised input times the weight is a "
    "matmul's input (materialized backwards: kept by the linears); the fp32 upcast and the "
    "normalised input before the weight are pointwise and recomputed from the input, which is "
    "kept in its own dtype";
constexpr std::string_view k_src_compiled_glu =
    "compiled gated MLP (partitioners.py @ 00c07b93 min-cut): the gate and up matmul outputs are "
    "banned (not recomputable); act(gate) is pointwise with only fusible readers, so backward "
    "recomputes it from the kept gate (which costs half as much to keep); act(gate) * up is "
    "down's input (materialized backwards) and stays";
constexpr std::string_view k_src_compiled_softmax =
    "compiled eager attention (partitioners.py @ 00c07b93 min-cut): the fp32 softmax is "
    "pointwise of the scores (a bmm output, banned) and two row reductions (banned, kept: 8 B per "
    "row), so backward recomputes it from the scores in the compute dtype; the probabilities cast "
    "for the bmm with V are that bmm's input and stay";
constexpr std::string_view k_src_liger_flce =
    "Liger Kernel fused linear cross entropy (src/liger_kernel/ops/fused_linear_cross_entropy.py "
    "@ 00eba634c2e9b5f05badbfb67e9b0a4caba301a2, fused_linear_cross_entropy_forward): the "
    "forward allocates grad_input = zeros_like(_input) and, when the output layer trains, "
    "grad_weight = zeros_like(weight), fills them chunk by chunk of tokens, and saves only them "
    "for backward (save_for_backward(grad_input, grad_weight, grad_bias)); the input, the logits "
    "and the targets are not kept";
constexpr std::string_view k_src_axolotl_chunks =
    "axolotl chunked_cross_entropy (src/axolotl/monkeypatch/loss/chunked.py @ "
    "01b75c129d7b3014c2524cd270075b5653fe6735, a copy of torchtune's CEWithChunkedOutputLoss "
    "patched in as transformers' ForCausalLMLoss): the model's whole 16-bit logits are cut by "
    "source.chunk(n, dim=1), each chunk reshaped (a view when b = 1, a copy otherwise) and handed "
    "to compute_cross_entropy under torch.compile, which keeps the chunk's logits and an fp32 "
    "log-sum-exp per row; the labels are F.pad(labels, (0, 1))[..., 1:], chunked alike";
constexpr std::string_view k_src_cce =
    "Cut Cross Entropy (apple/ml-cross-entropy cut_cross_entropy/cce.py @ "
    "3a79837891bdd018c959784bd85327b987abd179, LinearCrossEntropyFunction.forward: "
    "save_for_backward(e, c, bias, lse, targets, valids, logit_avg)): e is the final norm's output "
    "itself ([T, h], contiguous: flatten is a view), c the output layer's weight (a parameter), lse "
    "one fp32 log-sum-exp per valid token (cce_lse_forward.py @ 2709dd3a), targets the batch's int64 "
    "labels (shift=True in the transformers patch: no shifted copy), valids one int32 index per "
    "token (utils.py @ ad428fdd, _build_flat_valids: always made when shifting), logit_avg one fp32 "
    "per vocabulary entry (filter_eps \"auto\", the default); no logits";
constexpr std::string_view k_src_compiled_loss =
    "compiled cross entropy (torchtune compile_loss @ 0078c31b; transformers Trainer "
    "torch_compile with the loss in the model's forward): log_softmax decomposes into a row max "
    "and log-sum-exp (reductions, banned: 4 B per row) and pointwise ops, so backward recomputes "
    "the probabilities from the logits the graph was given (kept in their own dtype: fp32 where "
    "torchtune's model returns output(h).float(), the compute dtype for a chunk or inside the "
    "model) and writes one gradient of that dtype";

// torchtune's chunked output (transformer.py @ 3e5b0408e636e20ca18e9c6c58c68b4da9339129,
// chunked_output: h.chunk(num_output_chunks, dim=1)): torch.chunk cuts the s/c tokens of a
// sequence into chunks of ceil((s/c) / n) tokens and a shorter last one, so there are never more
// chunks than tokens, however large cross_entropy_chunks is (s/c = 25, n = 8: six of 4 and one
// of 1; s/c = 4, n = 8: four of 1).
struct LossChunks {
  int64_t size = 0;   // tokens per sequence in a full chunk
  int64_t whole = 0;  // full chunks
  int64_t rest = 0;   // tokens of the shorter last chunk; 0: none
  int64_t count() const { return whole + (rest > 0 ? 1 : 0); }
};
LossChunks loss_chunks(const Config& c) {
  const int64_t s_local = c.seq_length / c.context_parallel_size, n = c.cross_entropy_chunks;
  const int64_t size = (s_local + n - 1) / n;
  return {size, s_local / size, s_local % size};
}

enum class Eager : uint8_t { hf, torchtune, torchtitan };

Eager eager_kind(const Config& c) {
  switch (c.model_implementation) {
    case ModelImplementation::torchtune: return Eager::torchtune;
    case ModelImplementation::torchtitan: return Eager::torchtitan;
    default: return Eager::hf;
  }
}

// Whether the decoder layers' outputs need gradients under peft: adapters on any decoder-layer
// linear (not only lm_head), or a trained copy of the embedding below them (modules_to_save
// embed_tokens), whose gradient comes through every layer.
bool layers_need_gradients(const Config& c) {
  return c.peft_on() && ((c.lora_target_modules & ~(1u << unsigned(LoraTarget::lm_head))) != 0 ||
                         c.saves(SavedModule::embed_tokens));
}

// Whether a decoder layer's input needs a gradient. Full training: always (the embedding
// trains). peft: a layer above one with adapters does; the first layer's input is the frozen
// embedding's output, which needs none, except where transformers' gradient_checkpointing_enable
// calls enable_input_require_grads for a PEFT model (modeling_utils.py; PEFT's
// _prepare_model_for_gradient_checkpointing does the same). Not for a quantised model (QLoRA):
// PEFT's _prepare_model_for_gradient_checkpointing skips models loaded in 4 or 8 bits, and
// prepare_model_for_kbit_training calls it only for the reentrant checkpoint ("When having
// `use_reentrant=False` + gradient_checkpointing, there is no need for this hack",
// huggingface/peft src/peft/utils/other.py @ 5d602fdb).
bool layer_input_needs_grad(const Config& c, bool first_layer) {
  if (!c.peft_on() || c.saves(SavedModule::embed_tokens)) return true;
  if (!layers_need_gradients(c)) return false;
  if (!first_layer) return true;
  if (c.peft == Peft::qlora && !c.checkpoint_reentrant) return false;
  return c.model_implementation == ModelImplementation::hf_transformers &&
         c.recompute_granularity == RecomputeGranularity::full;
}

// What the forward of one eager layer builds, with the requires-grad state of each tensor.
struct EagerWalk {
  const Config& c;
  const Shape& x;
  Ledger& out;
  Eager kind;
  bool full;      // the base weights train (no peft)
  bool compiled;  // torch_compile: these modules run as one compiled graph

  EagerWalk(const Config& config, const Shape& shape, Ledger& ledger, bool compiled_graph)
      : c(config), x(shape), out(ledger), kind(eager_kind(config)), full(!shape.peft),
        compiled(compiled_graph) {}

  bool targeted(LoraTarget t) const { return x.targeted(t); }

  // A norm of `width` over `rows` rows on an input that needs a gradient or not; returns whether
  // its output does. `head_norm`: a norm over each attention head (q_norm, k_norm), whose input
  // is a projection's output in the compute dtype rather than the residual stream.
  bool norm(bool in_rg, double width, double rows, std::string_view input_name,
            std::string_view stats_name, std::string_view normed_name, bool head_norm = false) const {
    if (!x.has_norm) return in_rg;
    const bool any = in_rg || full;
    if (c.normalization == Normalization::layer_norm) {
      // Compiled, native_layer_norm decomposes into var_mean (banned: a reduction) and pointwise
      // ops that need the input: the same input, mean and rstd are kept.
      if (any) {
        out.add(input_name, "norm", x.norm_e * width * rows, x.norm_dtype, k_src_eager_layer_norm);
        out.add(stats_name, "norm", 8 * rows, "fp32", k_src_eager_layer_norm);
      }
      return any;
    }
    if (compiled) {
      // The input (for its own gradient, or to recompute the normalised input for the weight's),
      // in its dtype, and the mean of squares; the weighted output is kept by the linears.
      if (any) {
        const double in_e = head_norm ? x.e : x.norm_e;
        out.add(input_name, "norm", in_e * width * rows, head_norm ? x.act_dtype : x.norm_dtype,
                k_src_compiled_rmsnorm);
        out.add(stats_name, "norm", 4 * rows, "fp32", k_src_compiled_rmsnorm);
      }
      return any;
    }
    if (kind == Eager::torchtitan) {
      if (any) {
        out.add(input_name, "norm", x.norm_e * width * rows, x.norm_dtype, k_src_fused_rmsnorm);
        out.add(stats_name, "norm", 4 * rows, "fp32", k_src_fused_rmsnorm);
      }
      return any;
    }
    if (in_rg) {
      out.add(input_name, "norm", 4 * width * rows, "fp32", k_src_hf_rmsnorm);
      out.add(stats_name, "norm", 4 * rows, "fp32", k_src_hf_rmsnorm);
    }
    if (full) out.add(normed_name, "norm", x.norm_e * width * rows, x.norm_dtype, k_src_hf_rmsnorm);
    return any;
  }

  // The linears in `targets` read one input: it is kept once when a weight trains or an adapter
  // reads it as it is (`kept_already`: another node keeps that storage); then the adapters.
  // `fp32_in`: the input is an fp32 norm output or MLP product (Shape::kbit_fp32), which each
  // Linear4bit copies to the compute dtype; `quantized`: the linears are Linear4bit.
  void linear_inputs(std::initializer_list<LoraTarget> targets, bool in_rg, double in_width,
                     double tokens, std::string_view name, std::string_view module,
                     bool kept_already, bool adapters = true, bool fp32_in = false,
                     bool quantized = true) const {
    bool keep = full;
    if (adapters && !x.lora_dropout && !x.adapter_copy)
      for (LoraTarget t : targets) keep = keep || targeted(t);
    if (keep && !kept_already)
      out.add(name, module, x.lin * in_width * tokens, x.lin_dtype,
              x.fp8 ? k_src_fp8_input : full ? k_src_eager_linear : k_src_lora);
    // bitsandbytes < 0.43.2: every Linear4bit whose input needs a gradient keeps A on ctx. A is
    // the input itself (one storage for the linears reading it, nothing more when an adapter or
    // another node keeps it already) or, for an fp32 input, each linear's own compute-dtype copy.
    if (x.bnb_input && quantized && in_rg) {
      const double copies = fp32_in ? double(targets.size())
                            : (keep || kept_already) && !x.bnb_outside_checkpoint ? 0.0 : 1.0;
      out.add("bnb.matmul_input", module, copies * x.e * in_width * tokens, x.act_dtype,
              k_src_bnb_matmul_input);
    }
    // LLM.int8: every Linear8bitLt keeps its input itself, one storage for the linears reading
    // it (fp32 after an fp32 norm), nothing more when an adapter or another node keeps it.
    if (x.int8_input && quantized && in_rg && !keep && !kept_already)
      out.add("bnb.int8_matmul_input", module, (fp32_in ? 4 : x.e) * in_width * tokens,
              fp32_in ? "fp32" : x.act_dtype, k_src_bnb_int8_input);
    if (adapters)
      for (LoraTarget t : targets) adapter_entries(x, t, in_width, tokens, in_rg, out);
  }
  bool linear_out(bool in_rg, LoraTarget t, bool adapters = true) const {
    return in_rg || full || (adapters && targeted(t));
  }

  // Standard attention on the attention norm's output; returns whether o_proj's output needs a
  // gradient.
  bool attention(bool n_rg) const {
    const double T = x.tokens, a_l = x.a / x.t, g_l = x.g / x.t, k = x.k;
    const double q_width = a_l * k;
    linear_inputs({LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj}, n_rg, x.h,
                  x.tokens_linear_in, "attention.qkv_input", "attention", false, true, x.kbit_fp32);
    bool q_rg = linear_out(n_rg, LoraTarget::q_proj);
    bool k_rg = linear_out(n_rg, LoraTarget::k_proj);
    const bool v_rg = linear_out(n_rg, LoraTarget::v_proj);
    if (c.qk_layernorm) {
      // A norm over each head (transformers' q_norm / k_norm, torchtune's, torchtitan's).
      q_rg = norm(q_rg, k, a_l * T, "attention.q_norm_input", "attention.q_norm_stats",
                  "attention.q_norm_normed", true);
      k_rg = norm(k_rg, k, g_l * T, "attention.k_norm_input", "attention.k_norm_stats",
                  "attention.k_norm_normed", true);
    }
    const bool p_rg = q_rg || k_rg;  // the scores (and probabilities) need a gradient
    bool context_rg = false, context_kept = false;
    if (c.attention_backend == AttentionBackend::unfused) {
      const double scores = a_l * T * x.s;  // one [b, a_l, s/c, s] tensor
      const double one_kv = g_l == 1 && x.b == 1 ? 1 : a_l;  // reshapes are views (README: a')
      if (kind == Eager::hf) {
        // Under autocast the key after rope is fp32 and the matmul's cast copies all a heads; so
        // under QLoRA with fp32 norms (Linear4bit returns the k and v projections .to(fp32), the
        // trainer's autocast casts them for the matmuls: k_src_kbit_fp32_residual), where the
        // value's cast is all a heads as well.
        const double key_heads = x.autocast || x.kbit_fp32 ? a_l : one_kv;
        const double value_heads = x.kbit_fp32 ? a_l : one_kv;
        if (q_rg) out.add("attention.k", "attention", x.e * key_heads * k * T, x.act_dtype, k_src_hf_eager_qk);
        if (k_rg) out.add("attention.q", "attention", x.e * q_width * T, x.act_dtype, k_src_hf_eager_qk);
        const bool cast = x.e != 4;  // the fp32 softmax is cast back to the compute dtype
        if (c.attention_sinks && !compiled) {
          // gpt-oss: the softmax over the scores and the sink column, in the scores' dtype.
          const double combined = a_l * T * (x.s + 1);
          if (p_rg) out.add("attention.sinks_max_indices", "attention", 8 * a_l * T, "int64", k_src_hf_eager_sinks);
          if (p_rg || (!x.attention_dropout && v_rg))
            out.add("attention.softmax_output", "attention", x.e * combined, x.act_dtype, k_src_hf_eager_sinks);
          if (x.attention_dropout) {
            if (p_rg) out.add("attention.softmax_dropout_mask", "attention", scores, "mask", k_src_hf_eager_softmax);
            if (v_rg)
              out.add("attention.softmax_dropout_output", "attention", x.e * scores, x.act_dtype,
                      k_src_hf_eager_softmax);
          }
          if (p_rg) out.add("attention.v", "attention", x.e * value_heads * k * T, x.act_dtype, k_src_hf_eager_v);
        } else {
          if (compiled && cast) {
            // Recomputed in backward from the scores and the two row reductions.
            if (p_rg) {
              out.add("attention.scores", "attention", x.e * scores, x.act_dtype, k_src_compiled_softmax);
              out.add("attention.softmax_row_stats", "attention", 8 * a_l * T, "fp32", k_src_compiled_softmax);
            }
          } else if (p_rg || (!cast && !x.attention_dropout && v_rg)) {
            out.add("attention.softmax_output", "attention", 4 * scores, "fp32", k_src_hf_eager_softmax);
          }
          if (x.attention_dropout) {
            if (p_rg) out.add("attention.softmax_dropout_mask", "attention", scores, "mask", k_src_hf_eager_softmax);
            if (v_rg)
              out.add("attention.softmax_dropout_output", "attention", x.e * scores, x.act_dtype,
                      k_src_hf_eager_softmax);
          } else if (cast && v_rg) {
            out.add("attention.probs_cast", "attention", x.e * scores, x.act_dtype, k_src_hf_eager_softmax);
          }
          if (p_rg) out.add("attention.v", "attention", x.e * value_heads * k * T, x.act_dtype, k_src_hf_eager_v);
        }
      } else {
        if (q_rg) out.add("attention.k_scaled", "attention", x.e * q_width * T, x.act_dtype, k_src_sdpa_math);
        if (k_rg) out.add("attention.q_scaled", "attention", x.e * q_width * T, x.act_dtype, k_src_sdpa_math);
        if (p_rg || (!x.attention_dropout && v_rg))
          out.add("attention.softmax_output", "attention", x.e * scores, x.act_dtype, k_src_sdpa_math);
        if (x.attention_dropout) {
          if (p_rg) out.add("attention.softmax_dropout_mask", "attention", scores, "mask", k_src_sdpa_math);
          if (v_rg)
            out.add("attention.softmax_dropout_output", "attention", x.e * scores, x.act_dtype, k_src_sdpa_math);
        }
        if (p_rg) out.add("attention.v", "attention", x.e * one_kv * k * T, x.act_dtype, k_src_sdpa_math);
      }
      context_rg = p_rg || v_rg;
    } else {
      // A fused SDPA kernel (or flash-attn): q after rope, k and v, the output and the
      // logsumexp, whenever any of q, k, v needs a gradient.
      const double kv_heads = kind == Eager::hf ? g_l : g_l == 1 ? 1 : a_l;
      context_rg = q_rg || k_rg || v_rg;
      if (context_rg) {
        const std::string_view kv_src = kind == Eager::hf ? k_src_hf_sdpa_kv : k_src_eager_kv_expanded;
        out.add("attention.q", "attention", x.e * q_width * T, x.act_dtype, k_src_sdpa_fused);
        out.add("attention.k", "attention", x.e * kv_heads * k * T, x.act_dtype, kv_src);
        out.add("attention.v", "attention", x.e * kv_heads * k * T, x.act_dtype, kv_src);
        out.add("attention.softmax_stats", "attention", 4 * a_l * T, "fp32", k_src_sdpa_fused);
        out.add("attention.kernel_output", "attention", x.e * q_width * T, x.act_dtype, k_src_sdpa_fused);
        context_kept = true;
      }
    }
    linear_inputs({LoraTarget::o_proj}, context_rg, q_width, T, "attention.proj_input", "attention",
                  context_kept);
    const bool o_rg = linear_out(context_rg, LoraTarget::o_proj);
    if (x.hidden_dropout && o_rg)
      out.add("attention.output_dropout_mask", "attention", x.h * x.tokens_sp, "mask", k_src_dropout_mask);
    return o_rg;
  }

  // An MLP of width `f` over `tokens` rows (its input `in_tokens` rows wide as the linears keep
  // it); `adapters`: its linears are LoRA targets (the dense MLP, or transformers' experts).
  bool ffn(const ActivationNames& n, std::string_view input_name, std::string_view up_name,
           bool in_rg, double f, double tokens, double in_tokens, bool adapters) const {
    const bool gated = c.gated_linear_unit;
    // Linear4bit (or Linear8bitLt) experts only when the experts' base is quantised
    // (expert_params_dtype).
    const bool quantized = adapters || c.expert_params_dtype == Dtype::nf4 ||
                           (c.peft == Peft::qlora && c.expert_params_dtype == Dtype::int8);
    if (gated)
      linear_inputs({LoraTarget::gate_proj, LoraTarget::up_proj}, in_rg, x.h, in_tokens, input_name,
                    n.module, false, adapters, x.kbit_fp32, quantized);
    else
      linear_inputs({LoraTarget::up_proj}, in_rg, x.h, in_tokens, input_name, n.module, false, adapters,
                    x.kbit_fp32, quantized);
    const bool gate_rg = linear_out(in_rg, gated ? LoraTarget::gate_proj : LoraTarget::up_proj, adapters);
    const bool up_rg = linear_out(in_rg, LoraTarget::up_proj, adapters);
    // The gate, up and activation outputs: fp32 after an fp32 norm under QLoRA (Shape::ffn_e).
    const double one = x.ffn_e * f * tokens;
    const std::string_view one_dtype = x.ffn_dtype;
    const ActivationFunc act = c.activation_func;
    const bool relu = act == ActivationFunc::relu, squared = act == ActivationFunc::squared_relu,
               identity = act == ActivationFunc::identity;
    const std::string_view src = gated ? k_src_eager_glu : k_src_eager_mlp;
    bool product_rg = false, product_kept = false;
    if (gated && compiled) {
      // act(gate) is recomputed from the gate: the gate for either gradient (the identity's
      // output is the gate itself, needed for up's only), up for the gate's.
      const bool gate_kept = identity ? up_rg : gate_rg || up_rg;
      if (gate_kept) out.add(n.fc1_output, n.module, one, one_dtype, k_src_compiled_glu);
      if (gate_rg) out.add(up_name, n.module, one, one_dtype, k_src_compiled_glu);
      product_rg = gate_rg || up_rg;
    } else if (gated) {
      if (relu) {
        if (gate_rg || up_rg) out.add(n.relu_output, n.module, one, one_dtype, src);
      } else {
        if (gate_rg && squared) out.add(n.relu_output, n.module, one, one_dtype, k_src_sq_relu);
        if (gate_rg && !squared && !identity) out.add(n.fc1_output, n.module, one, one_dtype, src);
        if (up_rg) out.add(n.act_output, n.module, one, one_dtype, src);
      }
      if (gate_rg) out.add(up_name, n.module, one, one_dtype, src);
      product_rg = gate_rg || up_rg;
    } else {
      if (up_rg) {
        if (relu || squared) out.add(n.relu_output, n.module, one, one_dtype, relu ? k_src_relu : k_src_sq_relu);
        else if (!identity) out.add(n.fc1_output, n.module, one, one_dtype, src);
      }
      product_rg = up_rg;
      product_kept = relu && up_rg && !x.fp8;  // fc2's input is relu's result
    }
    linear_inputs({LoraTarget::down_proj}, product_rg, f, tokens, n.fc2_input, n.module, product_kept,
                  adapters, x.kbit_fp32, quantized);
    return linear_out(product_rg, LoraTarget::down_proj, adapters);
  }

  // transformers' MixtralSparseMoeBlock (Qwen2/Qwen3-MoE run the same loop) on the norm's output.
  bool mixtral_moe(bool n_rg) const {
    const double E = double(c.num_moe_experts), K = double(c.moe_router_topk), T = x.tokens_sp;
    // The block's input, routing weights, expert outputs and weighted outputs are in the norm
    // output's dtype: fp32 under QLoRA with fp32 norms (k_src_hf_moe_kbit).
    const double be = moe_block_bytes(x);
    const std::string_view bdtype = x.kbit_fp32 ? std::string_view("fp32") : x.act_dtype;
    const std::string_view bsrc = x.kbit_fp32 ? k_src_hf_moe_kbit : k_src_hf_moe_experts;
    if (full) out.add("moe.input", "moe", be * x.h * T, bdtype, x.kbit_fp32 ? k_src_hf_moe_kbit : k_src_eager_linear);
    const bool logits_rg = n_rg || full;
    // kbit_upcast "peft" leaves the unquantised router (an nn.Linear, not replaced by Linear4bit)
    // fp32: as for the output layer (k_src_kbit_lm_head_cast), the trainer's bf16 autocast casts
    // the frozen weight at every call and the matmul keeps that copy for its input's gradient
    // (the allocation timeline oracle's seed 13 q01: 2 · 96 · 4 = 768 B beside the router's
    // outputs).
    if (c.kbit_upcast == KbitUpcast::peft && c.peft == Peft::qlora && kind == Eager::hf && n_rg && !full)
      out.add("moe.router_weight_cast", "moe", x.e * x.h * E, x.act_dtype, k_src_kbit_lm_head_cast);
    if (logits_rg) {
      out.add("moe.router_probs", "moe", 4 * E * T, "fp32", k_src_hf_moe_router);
      out.add("moe.topk_indices", "moe", 8 * K * T, "int64", k_src_hf_moe_router);
      out.add("moe.topk_weights", "moe", 4 * K * T, "fp32", k_src_hf_moe_router);
      out.add("moe.topk_sum", "moe", 4 * T, "fp32", k_src_hf_moe_router);
    }
    const double N = expert_tokens(c, x);
    const double f_e = local_expert_ffn(c);
    // Adapters on the experts (lora_target_modules gate_proj, up_proj, down_proj in an MoE model):
    // each expert's lora.Linear runs on that expert's tokens only (current_state, a copy of its
    // rows), so the adapters of all local experts together see the N routed rows, as the
    // experts' own linears do.
    const bool expert_out_rg = ffn(k_expert_names, "moe.expert_input", "moe.expert_up_output", n_rg,
                                   f_e, N, N, true);
    if (n_rg || logits_rg || expert_out_rg)
      out.add("moe.expert_indices", "moe", 16 * N, "int64", k_src_hf_moe_experts);
    if (expert_out_rg)
      out.add("moe.routing_weights", "moe", be * N, bdtype, bsrc);
    if (logits_rg) out.add("moe.expert_output", "moe", be * x.h * N, bdtype, bsrc);
    const bool weighted_rg = expert_out_rg || logits_rg;
    if (weighted_rg)
      out.add("moe.weighted_output", "moe", be * x.h * N, bdtype, bsrc);
    return weighted_rg;
  }

  // One decoder layer whose input needs a gradient or not.
  void layer(bool moe_layer, bool in_rg) const {
    bool rg = in_rg;
    if (x.a > 0) {
      if (c.multi_latent_attention) {
        // MLA: Megatron Core's rules stand in for every implementation (not read from the
        // PyTorch implementations' code).
        latent_attention(c, x, Modules{}, out);
        rg = true;
      } else {
        const bool n_rg = norm(in_rg, x.h, x.tokens_sp, "norm.attention_input", "norm.attention_stats",
                               "norm.attention_normed");
        rg = attention(n_rg) || in_rg;
      }
    }
    const bool n_rg = norm(rg, x.h, x.tokens_sp, "norm.mlp_input", "norm.mlp_stats", "norm.mlp_normed");
    if (moe_layer) {
      if (kind == Eager::hf && c.moe_shared_expert_intermediate_size == 0 && c.moe_latent_size == 0)
        mixtral_moe(n_rg);
      else
        // torchtune's and torchtitan's MoE (grouped experts) and shared or latent experts: Megatron
        // Core's routed-expert rules stand in (not read from their code).
        moe_body(c, x, Modules{}, out);
      if (x.hidden_dropout)
        out.add("moe.output_dropout_mask", "moe", x.h * x.tokens_sp, "mask", k_src_dropout_mask);
    } else {
      const bool down_rg = ffn(k_mlp_names, "mlp.fc1_input", "mlp.up_output", n_rg, x.f / x.t, x.tokens,
                               x.tokens_linear_in, true);
      if (x.hidden_dropout && down_rg)
        out.add("mlp.output_dropout_mask", "mlp", x.h * x.tokens_sp, "mask", k_src_dropout_mask);
    }
  }
};

double eager_layer(const Config& c, const Shape& x, bool moe_layer, bool first_layer, Ledger& out) {
  const EagerWalk walk(c, x, out, c.torch_compile);
  walk.layer(moe_layer, layer_input_needs_grad(c, first_layer));
  return out.total();
}

// The checkpoint of one layer: its input, while its output needs a gradient.
double checkpoint_input_bytes(const Config& c, const Shape& x) {
  if (!c.eager_model()) return x.hidden;
  if (c.peft_on() && !layers_need_gradients(c)) return 0;
  return x.norm_e * x.h * x.tokens_sp;
}

// A layer under Megatron's policy (no recompute, or selective with `modules`).
double megatron_layer(const Config& c, const Shape& x, bool moe_layer, const Modules& m,
                      Ledger& out) {
  if (x.a > 0) {
    if (c.multi_latent_attention)
      latent_attention(c, x, m, out);
    else
      standard_attention(c, x, m, out);
  }
  if (moe_layer)
    moe_mlp(c, x, m, out);
  else
    dense_mlp(c, x, m, out);
  return out.total();
}

double policy_layer(const Config& c, bool moe_layer, bool first_layer, SavedTensors* detail) {
  const Shape x = shape_of(c);
  Ledger out(detail);
  switch (c.recompute_granularity) {
    case RecomputeGranularity::selective:
      // Megatron Core's recompute_modules (resolve() allows it with megatron-core only).
      return megatron_layer(c, x, moe_layer, modules_of(c.recompute_modules), out);
    case RecomputeGranularity::selective_op:
      selective_op_layer(c, x, moe_layer, out);
      return out.total();
    default:
      // none, or full granularity on a layer the method leaves alone (block method beyond
      // recompute_num_layers): everything is kept.
      if (c.eager_model()) return eager_layer(c, x, moe_layer, first_layer, out);
      return megatron_layer(c, x, moe_layer, Modules{}, out);
  }
}

// Everything a layer keeps without recompute (a layer that is not the model's first), listed.
double no_recompute_layer_detail(const Config& c, SavedTensors* detail, bool moe_layer = false) {
  const Shape x = shape_of(c);
  Ledger out(detail);
  if (c.eager_model()) return eager_layer(c, x, moe_layer, false, out);
  return megatron_layer(c, x, moe_layer, Modules{}, out);
}

// Everything a layer keeps without recompute (a layer that is not the model's first).
double no_recompute_layer(const Config& c, bool moe_layer) { return no_recompute_layer_detail(c, nullptr, moe_layer); }

}  // namespace

double layer_activation_bytes(const Config& config, bool moe_layer, LayerRecompute recompute,
                              SavedTensors* detail, bool first_layer) {
  switch (recompute) {
    case LayerRecompute::inside_group:
      return 0;
    case LayerRecompute::checkpointed: {
      const Shape x = shape_of(config);
      Ledger out(detail);
      // The first layer's input is the embedding's output (embedding_output_e).
      const double input = first_layer && config.eager_model() && checkpoint_input_bytes(config, x) > 0
                               ? embedding_output_e(config, x) * x.h * x.tokens_sp
                               : checkpoint_input_bytes(config, x);
      const bool input_in_compute_dtype =
          !config.eager_model() || (first_layer && embedding_output_e(config, x) == x.e);
      out.add("layer.input", "layer", input, input_in_compute_dtype ? x.act_dtype : x.norm_dtype,
              config.eager_model() ? k_src_eager_checkpoint : k_src_full_recompute);
      if (x.bnb_input && config.eager_model() && !config.checkpoint_reentrant) {
        // bitsandbytes < 0.43.2 under the non-reentrant checkpoint: every Linear4bit's A stays
        // beside the checkpoint (k_src_bnb_checkpoint); the layer's walk read for them alone.
        Shape every = x;
        every.bnb_outside_checkpoint = true;
        SavedTensors walked;
        Ledger all(&walked);
        eager_layer(config, every, moe_layer, first_layer, all);
        double kept = 0;
        for (const SavedTensor& t : walked)
          if (t.name == "bnb.matmul_input") kept += t.bytes;
        out.add("bnb.matmul_input", "layer", kept, x.act_dtype, k_src_bnb_checkpoint);
      }
      return out.total();
    }
    default:
      return policy_layer(config, moe_layer, first_layer, detail);
  }
}

double layer_recompute_working_bytes(const Config& config, bool moe_layer) {
  const double everything = no_recompute_layer(config, moe_layer);
  switch (config.recompute_granularity) {
    case RecomputeGranularity::full: {
      // Backward re-runs the layer's forward with grad enabled: its whole saved set exists
      // again, beside the checkpointed input it starts from. Where the first saving op keeps that
      // input itself (a LayerNorm, Megatron Core's and torchtitan's fused RMSNorm, a compiled
      // RMSNorm, an fp32 stream's RMSNorm, whose `x.to(float32)` returns x) the set counts it once with the
      // checkpoint; transformers' and torchtune's RMSNorm on a 16-bit stream save `x.float()`, a
      // new fp32 copy, and nothing in the layer saves the 16-bit input itself, so nothing is taken
      // out (the allocation timeline oracle's seed 7 q03, bf16 MoE: its recomputation read
      // e·T·h = 40,960 B under without it).
      const Shape x = shape_of(config);
      const Eager kind = eager_kind(config);
      const bool input_copied = config.eager_model() && kind != Eager::torchtitan && !config.torch_compile &&
                                config.normalization == Normalization::rms_norm && x.norm_e != 4;
      return std::max(0.0, everything - (input_copied ? 0.0 : checkpoint_input_bytes(config, x)));
    }
    case RecomputeGranularity::selective: {
      // Each recomputed module is re-run just before its own backward and freed after it, so
      // the working set is the largest single module's recomputed tensors, not their sum.
      double largest = 0;
      for (unsigned i = 0; i < unsigned(RecomputeModule::count); ++i) {
        if (!((config.recompute_modules >> i) & 1u)) continue;
        Config alone = config;
        alone.recompute_modules = 1u << i;
        const double kept = layer_activation_bytes(alone, moe_layer, LayerRecompute::policy);
        largest = std::max(largest, everything - kept);
      }
      return largest;
    }
    case RecomputeGranularity::selective_op: {
      // The non-reentrant checkpoint re-runs the whole block, materialising every tensor the
      // policy did not save.
      const double kept = layer_activation_bytes(config, moe_layer, LayerRecompute::policy);
      return std::max(0.0, everything - kept);
    }
    default:
      return 0;
  }
}

// The MoE dispatcher's buffers (the section "MoE at scale" above): Megatron Core's layer only;
// the PyTorch implementations' MoE blocks are their own code (mixtral_moe) or stand-ins whose
// dispatch is not Megatron's.
double moe_dispatch_transient_bytes(const Config& config) {
  if (!config.is_moe() || config.eager_model()) return 0;
  return moe_forward_transient(config, shape_of(config));
}

double moe_dispatcher_state_bytes(const Config& config, bool after_backward) {
  if (!config.is_moe() || config.eager_model()) return 0;
  return moe_dispatcher_state(config, shape_of(config), after_backward);
}

// What the dispatcher's kept probabilities hold of a recomputed MoE layer (Megatron Core,
// megatron-core only). Every dispatcher keeps a tensor computed from the router's probabilities
// on the dispatcher object until the layer's next forward: the all-to-all dispatcher `self.probs
// = probs`, the all-gather one `self.local_probs`, the flex one `self.token_probs` and
// `self.dispatched_probs` (megatron/core/transformer/moe/token_dispatcher.py @ core_r0.13.0,
// unchanged on main @ d98e8a64dd, 2026-08-22; nothing sets them to None). In a layer's first
// forward inside a recompute checkpoint (CheckpointFunction under no_grad) they carry no graph.
// The checkpoint's backward re-runs the layer with grad enabled
// (tensor_parallel/random.py @ core_r0.13.0 CheckpointFunction.backward; te_checkpoint under FP8
// alike), so the kept probabilities then carry the recomputed graph, whose edges run back
// through the router and the layer's residual stream to the checkpoint's detached input, a leaf
// that requires grad: its AccumulateGrad node holds that tensor (detach_variable shares the saved
// input's storage) and, once torch.autograd.backward has run, its .grad, the input gradient the
// checkpoint returns. Autograd releases the recomputed nodes' saved tensors, not the leaf nor its
// gradient, so both stay until the dispatcher's next forward replaces the probabilities: the next
// microbatch's forward of that layer, or, after the step's last microbatch, the next step's, with
// the optimizer step between. Per checkpoint whose layers include an MoE layer (a uniform group's
// one input; under selective recompute with the moe module MoELayer's own checkpoint of its
// pre-MLP norm output, the same shape): the input and its gradient, one residual-stream tensor
// each. Reported in runs: verl PR #5251 (Qwen3-30B-A3B under full uniform recompute of one layer
// per checkpoint leaves memory unreleased after the step, not with dense models, halved with two
// layers per checkpoint) and Megatron-LM PR #6117 / #6339 (the detached leaves' .grad kept while
// the recomputed graph is reachable).
bool moe_layer_checkpointed(const Config& config) {
  return config.recompute_granularity == RecomputeGranularity::full ||
         (config.recompute_granularity == RecomputeGranularity::selective &&
          ((config.recompute_modules >> unsigned(RecomputeModule::moe)) & 1u));
}

double moe_recompute_graph_bytes(const Config& config) {
  if (!config.is_moe() || config.eager_model() || !moe_layer_checkpointed(config)) return 0;
  const Shape x = shape_of(config);
  return 2 * x.hidden;
}

double moe_router_buffer_bytes(const Config& config) {
  if (!config.is_moe() || config.eager_model()) return 0;
  return moe_router_buffers(config);
}

double moe_gather_buffer_bytes(const Config& config) {
  if (!config.is_moe() || config.eager_model()) return 0;
  return moe_gather_buffer(config, shape_of(config));
}

double moe_dispatch_backward_bytes(const Config& config) {
  if (!config.is_moe() || config.eager_model()) return 0;
  return allgather_backward_transient(config, shape_of(config));
}

namespace {

constexpr std::string_view k_src_eager_embedding =
    "nn.Embedding: F.embedding keeps the int64 token ids for the weight's gradient "
    "(derivatives.yaml embedding); transformers' learned position ids come from a registered "
    "buffer (not an activation); dropout keeps a bool mask";

// transformers' LlamaModel computes cos/sin once and, with gradient checkpointing, passes them,
// the causal mask and the positions to every checkpointed layer: once per model.
// Full recompute on every layer of the stage: the block method's layers beyond
// recompute_num_layers keep their whole saved set.
bool every_layer_checkpointed(const Config& c) {
  if (c.recompute_granularity != RecomputeGranularity::full) return false;
  const int64_t per_stage = (c.num_layers + c.pipeline_model_parallel_size - 1) /
                            std::max<int64_t>(1, c.pipeline_model_parallel_size);
  return !(c.recompute_method == RecomputeMethod::block && c.recompute_num_layers > 0 &&
           c.recompute_num_layers < per_stage);
}

// The channels of each head RoPE rotates: transformers' rotary embedding builds its cos and sin
// int(head_dim · partial_rotary_factor) wide (src/transformers/modeling_rope_utils.py @
// ef46806472a64b0013ed413781e3afed82bfa047 _compute_default_rope_parameters: dim =
// int(head_dim * partial_rotary_factor)); the models with a
// partial factor rotate that slice and concatenate the rest unchanged, which keeps nothing.
double rotary_width(const Config& c, const Shape& x) { return std::floor(x.k * c.rotary_percent); }

// transformers' cos and sin (position_embeddings, one storage for the model, [s, rotary_width]
// each in the residual stream's dtype); 0 without RoPE (learned positions, MLA's own).
double rope_cos_sin_bytes(const Config& c, const Shape& x) {
  const bool rotary = c.max_position_embeddings == 0 && x.a > 0 && !c.multi_latent_attention;
  return rotary ? 2 * embedding_output_e(c, x) * (x.tokens / x.b) * rotary_width(c, x) : 0;
}

void hf_model_tensors(const Config& c, const Shape& x, Ledger& out) {
  const bool rotary = c.max_position_embeddings == 0 && x.a > 0 && !c.multi_latent_attention;
  const bool checkpointing = c.recompute_granularity == RecomputeGranularity::full;
  const bool layers_train = !c.peft_on() || layers_need_gradients(c);
  const bool args = checkpointing && layers_train;
  // Layers outside any checkpoint: no recompute, or the block method's layers beyond
  // recompute_num_layers.
  const bool plain_layers = !every_layer_checkpointed(c);
  const bool qk_grad = !c.peft_on() || c.lora_targets(LoraTarget::q_proj) ||
                       c.lora_targets(LoraTarget::k_proj) ||
                       layer_input_needs_grad(c, /*first_layer=*/c.num_layers <= 1);
  const double s_local = x.tokens / x.b;
  if (rotary && ((plain_layers && qk_grad) || args))
    out.add("attention.rope_cos_sin", "attention", rope_cos_sin_bytes(c, x),
            embedding_output_dtype(c, x),
            plain_layers && qk_grad ? k_src_hf_rope : k_src_hf_checkpoint_args);
  if (args && rotary) {
    if (c.attention_backend == AttentionBackend::unfused)
      out.add("layer.causal_mask", "layer", embedding_output_e(c, x) * x.b * s_local * x.s,
              embedding_output_dtype(c, x),
              k_src_hf_checkpoint_args);
    out.add("layer.position_ids", "layer", 8 * s_local, "int64", k_src_hf_checkpoint_args);
  } else if (args) {
    // Learned positions (BERT, GPT-2): the layers get the extended padding mask [b, 1, 1, s].
    out.add("layer.attention_mask", "layer", x.norm_e * x.b * x.s, x.norm_dtype,
            k_src_hf_checkpoint_mask);
  }
}

double eager_embedding(const Config& c, const Shape& x, Ledger& out) {
  if (!c.peft_on() || c.saves(SavedModule::embed_tokens)) {
    out.add("embedding.token_ids", "embedding", 8 * x.tokens, "int64", k_src_eager_embedding);
    if (x.t > 1) out.add("embedding.vocab_mask", "embedding", x.tokens, "mask", k_src_vocab_mask);
    if (x.hidden_dropout)
      out.add("embedding.dropout_mask", "embedding", x.h * x.tokens_sp, "mask", k_src_eager_embedding);
  }
  if (eager_kind(c) == Eager::hf) hf_model_tensors(c, x, out);
  return out.total();
}

// axolotl's chunked_cross_entropy over a transformers model (k_src_axolotl_chunks): the
// model's whole logits, cut into cross_entropy_chunks pieces by a compiled loss.
bool hf_chunked_loss(const Config& c) {
  return c.cross_entropy_chunks > 1 && c.model_implementation == ModelImplementation::hf_transformers &&
         !c.cross_entropy_loss_fusion && !c.fused_linear_cross_entropy && !c.cut_cross_entropy;
}

// transformers' losses that shift the logits (transformers_loss "shift-logits", 4.46-4.48, and
// "upcast-in-model", 4.45 and earlier; k_src_hf_shifted_loss): resolve() allows them only for the
// eager, whole loss of a transformers model on one tensor- and context-parallel rank. Their
// log-probabilities and gradients cover the b(s - 1) shifted rows. In training only: under Liger's
// fused linear cross entropy the training step's loss is Liger's kernel, and transformers_loss
// shapes the evaluation's loss alone (evaluation_bytes).
bool shifted_hf_loss(const Config& c) {
  return c.transformers_loss != TransformersLoss::pad_labels &&
         c.model_implementation == ModelImplementation::hf_transformers && !c.fused_linear_cross_entropy;
}
double shifted_loss_rows(const Shape& x) { return x.b * (x.s - 1); }
// The shifted fp32 logits' own copy: `logits[..., :-1, :].contiguous()` copies only when b > 1.
// With one sequence the slice [1, s - 1, V] of a contiguous [1, s, V] tensor is contiguous itself
// (PyTorch's contiguity check skips dimensions of size 1), so contiguous() returns the view and
// nothing is allocated; the allocation timeline oracle shows it (4 · (s - 1) · V fewer bytes at
// b = 1, tests/oracle/timeline.py's evaluation step).
double shifted_logits_copy_bytes(const Shape& x, double vocab) {
  return x.b > 1 ? 4 * shifted_loss_rows(x) * vocab : 0;
}

// Whether the loss runs compiled (k_src_compiled_loss): torchtune's compile_loss, the Hugging
// Face model compiled with its loss, and axolotl's chunked loss, which compiles its per-chunk
// cross entropy whatever torch_compile says; torchtitan's compiled loss is
// cross_entropy_loss_fusion (which version compiles it is the importer's to say), as is any fused
// loss.
bool compiled_loss(const Config& c) {
  if (hf_chunked_loss(c)) return true;
  if (!torchtune_recipe_uses_compiled_loss(c)) return false;
  return c.torch_compile && !c.cross_entropy_loss_fusion && !c.fused_linear_cross_entropy &&
         !c.cut_cross_entropy &&
         (c.model_implementation == ModelImplementation::torchtune ||
          c.model_implementation == ModelImplementation::hf_transformers);
}

// The final norm, the output layer and the loss of the PyTorch implementations. Compiled, only
// transformers' whole-model graph takes in the final norm (torchtune and torchtitan compile the
// layers one by one).
double eager_output(const Config& c, const Shape& x, Ledger& out) {
  const EagerWalk walk(c, x, out, c.torch_compile && eager_kind(c) == Eager::hf);
  const bool compiled = compiled_loss(c);
  const bool in_rg = !c.peft_on() || layers_need_gradients(c);
  const bool n_rg = walk.norm(in_rg, x.h, x.tokens_sp, "output.final_norm_input",
                              "output.final_norm_stats", "output.final_norm_normed");
  const bool gathered = c.framework == Framework::fsdp2 && c.sequence_parallel;
  const double input_tokens = gathered ? x.tokens : x.tokens_sp;
  // A trained copy of the output layer (modules_to_save lm_head) keeps its input for its weight's
  // gradient, as a trainable output layer does.
  const bool output_trains = walk.full || c.saves(SavedModule::lm_head);
  const bool logits_rg = n_rg || output_trains || x.targeted(LoraTarget::lm_head);
  const bool chunked = c.cross_entropy_chunks > 1 && walk.kind == Eager::torchtune &&
                       !c.cross_entropy_loss_fusion;
  if (c.cut_cross_entropy) {
    // Nothing is recorded when neither the norm's output nor the weight needs a gradient.
    if (!logits_rg) return out.total();
    // The final norm's output, kept by the function whether or not the output layer trains (a
    // frozen unfused output layer keeps no input).
    out.add("output.output_layer_input", "output", x.norm_e * x.h * x.tokens, x.norm_dtype, k_src_cce);
    out.add("loss.lse", "loss", 4 * x.tokens, "fp32", k_src_cce);
    out.add("loss.target", "loss", 8 * x.tokens, "int64", k_src_cce);
    out.add("loss.valids", "loss", 4 * x.tokens, "int32", k_src_cce);
    out.add("loss.logit_avg", "loss", 4 * padded_vocab(c), "fp32", k_src_cce);
    return out.total();
  }
  if (c.fused_linear_cross_entropy) {
    // The final norm's output goes to the fused function, which keeps the gradient of that input
    // (the norm's output dtype: the residual's) and, when the output layer trains, of its weight
    // (the weight as the forward sees it: params_dtype; resolve() rules out tensor parallelism
    // and an lm_head adapter).
    out.add("loss.grad_input", "loss", x.norm_e * x.h * x.tokens, x.norm_dtype, k_src_liger_flce);
    if (output_trains) {
      // The output layer's weight (a saved copy keeps the unquantised base's dtype).
      const Dtype w = unquantized_dtype(c);
      out.add("loss.grad_weight", "loss", bytes_per_element(w) * x.h * padded_vocab(c), name_of(w),
              k_src_liger_flce);
    }
    return out.total();
  }
  if (!chunked) {
    const bool copy_keeps = output_trains && !walk.full;
    if (copy_keeps)
      out.add("output.output_layer_input", "output", x.lin * x.h * input_tokens, x.lin_dtype, k_src_eager_linear);
    walk.linear_inputs({LoraTarget::lm_head}, n_rg, x.h, input_tokens, "output.output_layer_input",
                       "output", copy_keeps, true, x.kbit_fp32, c.quantize_lm_head);
    // kbit_upcast "peft" leaves an unquantised lm_head fp32: the trainer's bf16 autocast casts
    // the frozen weight for every call (cached_cast caches only leaf tensors that require grad)
    // and the matmul keeps that copy for its input's gradient (derivatives.yaml mm: self's
    // formula uses mat2).
    if (c.kbit_upcast == KbitUpcast::peft && c.peft == Peft::qlora && !c.quantize_lm_head &&
        walk.kind == Eager::hf && n_rg && !output_trains)
      out.add("output.output_layer_weight_cast", "output", x.e * x.h * padded_vocab(c), x.act_dtype,
              k_src_kbit_lm_head_cast);
    if (!logits_rg) return out.total();
    if (c.cross_entropy_loss_fusion) {
      out.add("loss.logits", "loss", x.e * x.logits, x.act_dtype, k_src_te_ce);
      out.add("loss.softmax_stats", "loss", 8 * x.tokens, "fp32", k_src_te_ce);
      out.add("loss.target", "loss", 8 * x.tokens, "int64", k_src_te_ce);
      return out.total();
    }
    const bool hf = walk.kind == Eager::hf;
    if (compiled) {
      // torchtune's model hands the loss output(h).float(); transformers' loss upcasts inside
      // the compiled graph, which then keeps the logits as the output layer made them. axolotl's
      // chunked loss keeps the same bytes, chunk by chunk: the chunks of the logits (views of
      // the whole when b = 1, copies summing to it otherwise) and one log-sum-exp per row.
      const bool fp32_in = walk.kind == Eager::torchtune;
      const std::string_view src = hf_chunked_loss(c) ? k_src_axolotl_chunks : k_src_compiled_loss;
      out.add("loss.logits", "loss", (fp32_in ? 4 : x.e) * x.logits, fp32_in ? "fp32" : x.act_dtype, src);
      out.add("loss.logsumexp", "loss", 4 * x.tokens, "fp32", src);
    } else if (shifted_hf_loss(c)) {
      const double rows = shifted_loss_rows(x);
      out.add("loss.log_softmax", "loss", 4 * rows * (x.logits / x.tokens), "fp32", k_src_hf_shifted_loss);
      out.add("loss.target", "loss", 8 * (x.b == 1 ? x.tokens : rows), "int64", k_src_hf_shifted_loss);
      return out.total();
    } else {
      out.add("loss.log_softmax", "loss", 4 * x.logits, "fp32", hf ? k_src_hf_labels : k_src_torch_ce);
    }
    const double labels = hf && x.b == 1 ? x.tokens + 1 : x.tokens;
    out.add("loss.target", "loss", 8 * labels, "int64", hf ? k_src_hf_labels : k_src_torch_ce);
    return out.total();
  }
  // torchtune's chunked output and CEWithChunkedOutputLoss.
  const LossChunks chunks = loss_chunks(c);
  const double vocab = x.logits / x.tokens;  // logits per token on this GPU
  const bool keep_input = output_trains || (x.targeted(LoraTarget::lm_head) && !x.lora_dropout && !x.adapter_copy);
  bool whole_input = false, whole_labels = false;
  const auto chunk = [&](int64_t length, int64_t count) {
    const bool view = x.b == 1 || length == 1 || chunks.count() == 1;
    const double rows = x.b * double(length) * double(count);  // b up to 10^12: not in int64
    if (keep_input) {
      if (view) whole_input = true;
      else out.add("output.output_layer_input", "output", x.e * x.h * rows, x.act_dtype, k_src_tt_chunks);
    }
    if (logits_rg && compiled) {
      // compute_cross_entropy compiled per chunk: the chunk's logits as output() made them.
      out.add("loss.logits", "loss", x.e * vocab * rows, x.act_dtype, k_src_compiled_loss);
      out.add("loss.logsumexp", "loss", 4 * rows, "fp32", k_src_compiled_loss);
    } else if (logits_rg) {
      out.add("loss.log_softmax", "loss", 4 * vocab * rows, "fp32", k_src_tt_chunks);
    }
    if (logits_rg && !view) out.add("loss.target", "loss", 8 * rows, "int64", k_src_tt_chunks);
    if (logits_rg && view) whole_labels = true;
  };
  if (chunks.whole > 0) chunk(chunks.size, chunks.whole);
  if (chunks.rest > 0) chunk(chunks.rest, 1);
  if (whole_input) out.add("output.output_layer_input", "output", x.e * x.h * x.tokens, x.act_dtype, k_src_tt_chunks);
  if (whole_labels) out.add("loss.target", "loss", 8 * x.tokens, "int64", k_src_tt_chunks);
  adapter_entries(x, LoraTarget::lm_head, x.h, x.tokens, n_rg, out);
  return out.total();
}

}  // namespace

double embedding_activation_bytes(const Config& config, SavedTensors* detail) {
  Ledger out(detail);
  if (config.vocab_size <= 0) return 0;
  if (config.eager_model()) return eager_embedding(config, shape_of(config), out);
  // peft: the embedding is frozen and nothing below it needs a gradient: autograd records none
  // of its ops (token ids for the weight gradient, masks, dropout), so it saves nothing.
  if (config.peft_on()) return 0;
  const Shape x = shape_of(config);
  out.add("embedding.token_ids", "embedding", 8 * x.tokens, "int64", k_src_token_ids);
  if (x.t > 1) out.add("embedding.vocab_mask", "embedding", x.tokens, "mask", k_src_vocab_mask);
  if (config.max_position_embeddings > 0)
    out.add("embedding.position_ids", "embedding", 8 * x.tokens, "int64", k_src_position_ids);
  // Megatron's embedding dropout uses hidden_dropout, on the sequence-parallel shard.
  if (x.hidden_dropout)
    out.add("embedding.dropout_mask", "embedding", x.h * x.tokens_sp, "mask", k_src_dropout_mask);
  return out.total();
}

// Megatron computes the loss with its vocab-parallel cross entropy; the PyTorch-native
// frameworks (fsdp2: torchtitan, ddp and deepspeed: HF Trainer / Accelerate models) with
// F.cross_entropy on the logits cast to fp32.
namespace {
bool torch_loss(const Config& config) { return config.framework != Framework::megatron; }
}  // namespace

double output_activation_bytes(const Config& config, SavedTensors* detail) {
  Ledger out(detail);
  if (config.vocab_size <= 0) return 0;
  const Shape x = shape_of(config);
  if (config.eager_model()) return eager_output(config, x, out);
  out.add("output.final_norm_input", "output", x.norm_e * x.h * x.tokens_sp, x.norm_dtype,
          x.autocast ? k_src_autocast_norm : k_src_norm_input);
  out.add("output.final_norm_stats", "output", x.norm_stats * x.tokens_sp, "fp32", k_src_norm_stats);
  // DTensor tensor parallelism (fsdp2) saves the gathered input; Megatron the local shard.
  const bool gathered = config.framework == Framework::fsdp2 && config.sequence_parallel;
  const double input_tokens = gathered ? x.tokens : x.tokens_sp;
  if (x.keeps_input({LoraTarget::lm_head}))
    out.add("output.output_layer_input", "output", x.e * x.h * input_tokens, x.act_dtype,
            x.peft ? k_src_lora : gathered ? k_src_dtensor_output : k_src_output_input);
  adapter_entries(x, LoraTarget::lm_head, x.h, input_tokens, true, out);
  const double logits = x.logits;
  if (config.cross_entropy_loss_fusion) {
    out.add("loss.logits", "loss", x.e * logits, x.act_dtype, k_src_te_ce);
    out.add("loss.softmax_stats", "loss", 8 * x.tokens, "fp32", k_src_te_ce);
    out.add("loss.target", "loss", 8 * x.tokens, "int64", k_src_te_ce);
  } else if (torch_loss(config)) {
    out.add("loss.log_softmax", "loss", 4 * logits, "fp32", k_src_torch_ce);
    out.add("loss.target", "loss", 8 * x.tokens, "int64", k_src_torch_ce);
  } else {
    out.add("loss.softmax", "loss", 4 * logits, "fp32", k_src_ce);
    out.add("loss.target_mask", "loss", x.tokens, "mask", k_src_ce);
    out.add("loss.masked_target", "loss", 8 * x.tokens, "int64", k_src_ce);
  }
  return out.total();
}

// The loss's forward, when its temporaries beside what it saves outgrow the backward's
// (loss_transient_bytes). transformers 4.46-4.48 (k_src_hf_shifted_loss): while cross_entropy
// makes the log-probabilities, the model's logits (e · T · V, held by the caller's frame), their
// fp32 upcast (none when the logits are fp32 already: .float() returns them) and the shifted
// fp32 copy (4 · b(s - 1) · V) are alive; they go when the loss returns. Worked by hand, bf16,
// b 4, s 4096, V 32000: 2·16384·32000 + 4·16384·32000 + 4·16380·32000 = 5,242,368,000 B beside
// the saved log-probabilities, against the backward's 2·4·16380·32000 = 4,193,280,000 B.
// 4.45 and earlier: the model's forward rebinds `logits = logits.float()`, which frees the 16-bit
// logits, so the fp32 logits (4 · T · V, the model's output) and the shifted copy. Elsewhere the
// forward's temporaries stay below the backward's (loss_transient_bytes) and this is 0.
double loss_forward_transient_bytes(const Config& config) {
  if (config.vocab_size <= 0 || config.model_implementation != ModelImplementation::hf_transformers) return 0;
  // transformers' default loss (ForCausalLMLoss, "pad-labels"): logits.float(), the labels padded
  // by one and shifted, cross_entropy. Its forward holds the model's logits, their fp32 upcast
  // (log_softmax's input, which it does not keep) and the final norm's output beside the saved
  // log-probabilities; larger than the backward's two fp32 logits-sized temporaries only for small
  // vocabularies (the allocation timeline oracle's seed 13 q01: V 175, at aten::_log_softmax).
  // The eager loss only (no chunks, no fused or cut cross entropy, one TP and CP rank; the
  // shifting releases are refused with the others, and under Liger's fused loss they shape the
  // evaluation alone).
  if (config.cross_entropy_chunks > 1 || config.cross_entropy_loss_fusion || config.fused_linear_cross_entropy ||
      config.cut_cross_entropy || config.tensor_model_parallel_size > 1 || config.context_parallel_size > 1 ||
      compiled_loss(config))
    return 0;
  const Shape x = shape_of(config);
  const double vocab = x.logits / x.tokens;
  const double shifted = shifted_logits_copy_bytes(x, vocab);
  // LlamaForCausalLM.forward computes the loss with the final norm's output still bound to its
  // `hidden_states`: beside the saved tensors where nothing saves it (under peft a frozen lm_head
  // without an adapter reading its input as it is; the allocation timeline oracle: seed 7 c14,
  // 4·T·h).
  const bool lm_head_keeps_input =
      !config.peft_on() || config.saves(SavedModule::lm_head) ||
      (x.targeted(LoraTarget::lm_head) && !x.lora_dropout && !x.adapter_copy);
  const double hidden = lm_head_keeps_input ? 0 : x.norm_e * x.h * x.tokens;
  if (config.transformers_loss == TransformersLoss::upcast_in_model) return hidden + 4 * x.logits + shifted;
  // pad-labels copies no logits; with more than one sequence the padded labels (8·b·(s + 1)) stay
  // bound beside the contiguous shifted ones the loss saves.
  if (config.transformers_loss == TransformersLoss::pad_labels)
    return hidden + x.e * x.logits + (x.e == 4 ? 0 : 4 * x.logits) + (x.b > 1 ? 8 * x.b * (x.s + 1) : 0);
  return hidden + x.e * x.logits + (x.e == 4 ? 0 : 4 * x.logits) + shifted;
}

// The model's output the training loop holds from the loss to the end of the optimizer step
// (model_output_kept; fsdp_qlora train.py @ 02586ac7 keeps `output` until `output = None` after
// optimizer.step()): its logits, fp32 when the model upcast them (transformers_loss
// "upcast-in-model", releases up to 4.45), else in the compute dtype. 0 when the loop drops it.
double kept_output_bytes(const Config& config) {
  if (config.vocab_size <= 0 || !config.model_output_kept) return 0;
  const Shape x = shape_of(config);
  return (config.transformers_loss == TransformersLoss::upcast_in_model ? 4 : x.e) * x.logits;
}

// Evaluation between training steps as transformers' Trainer runs it: evaluate() →
// evaluation_loop() (model.eval(); prediction_loss_only when no compute_metrics is given) →
// prediction_step(), which calls compute_loss(model, inputs, return_outputs=True) under
// torch.no_grad() and keeps the model's output (logits, past_key_values) until it returns
// (huggingface/transformers src/transformers/trainer.py @ 000945a9b726d87a93e61e873b88ff8f3cd411b5).
// No autograd graph: each op's output lives only while Python holds it.
//
// KV cache: LlamaModel.forward takes use_cache from config.use_cache (true in the released
// configs) and disables it only for `self.gradient_checkpointing and self.training`; each
// attention layer's past_key_value.update(key_states, value_states) keeps the keys after RoPE
// and the values, [b, g, s, k] each, and the output returns the cache to the caller
// (src/transformers/models/llama/modeling_llama.py @ 002272831fba584eb30dca9729c1be456836960a).
// Multi-latent attention caches the expanded heads: keys of qk_head_dim + qk_pos_emb_head_dim and
// values of v_head_dim per head. Liger's patched forward computes the logits and calls the
// model's loss_function whenever the module is not training (linkedin/Liger-Kernel
// src/liger_kernel/transformers/model/llama.py @ 0fa979842540dd93d7ef50bd458d9968ac8f9d6c
// lce_forward: "if in inference mode materialize logits"), so fused_linear_cross_entropy does not
// change this.
//
// The loss (exact, the sources of loss_forward_transient_bytes): LlamaForCausalLM.forward holds
// the final norm's output (`hidden_states = outputs[0]`) and the logits (e · T · V) while the
// loss runs. "pad-labels" (loss/loss_utils.py @ 0114da07): logits.float() (4 · T · V unless
// fp32), then cross_entropy's log_softmax (4 · T · V); the labels padded, [b, s + 1] int64, and
// their shifted slice, a copy when b > 1. "shift-logits": the fp32 upcast and the shifted copy
// (4 · b(s - 1) · V when b > 1, shifted_logits_copy_bytes), then the log-probabilities of those
// rows; the labels' slice a copy when b > 1. "upcast-in-model": the model's `logits =
// logits.float()` holds the 16-bit and the fp32 logits together, then frees the 16-bit; then the
// shifted copy and its log-probabilities.
// Worked by hand, bf16, b 8, s 2048, V 32000, h 4096, pad-labels: T = 16384; hidden 2·16384·4096
// = 134,217,728; logits 2 + 4 + 4 B each over 524,288,000 = 5,242,880,000; labels 8·8·2049 +
// 8·16384 = 262,208; in all 5,377,359,936 B.
//
// The decoder layers (an upper bound, not a walk): what a layer's forward holds at once under
// no_grad is at most what the same layer saves for backward when every weight trains, nothing is
// recomputed and nothing drops out (every intermediate of the layer; in fp32 where QLoRA's fp32
// norms make some of them fp32), plus the layer's output beside its input, plus for LoRA two
// base-output-sized temporaries (PEFT's `result = result + lora_B(lora_A(x)) * scaling` makes
// the scaled product and the sum while the base output lives), plus the eager causal mask
// [b, 1, s, s] and cos/sin that LlamaModel.forward holds through the layers. Checked against the
// allocation timeline oracle's no_grad evaluation (tests/oracle/timeline.py).
// The predictions compute_metrics needs, as transformers' Trainer keeps them
// (huggingface/transformers src/transformers/trainer.py @ 000945a9b726d87a93e61e873b88ff8f3cd411b5):
// evaluate() passes prediction_loss_only=None when compute_metrics is set, so prediction_step
// returns the model's logits (past_key_values dropped by keys_to_ignore_at_inference) and the
// labels; evaluation_loop pads them across processes, applies preprocess_logits_for_metrics (token
// ids with argmax: int64 [b, s]), gathers them from all W processes (gather_for_metrics: [W·b, s,
// ...] on every GPU) and adds the predictions, then the labels (int64 [W·b, s]), to its
// EvalLoopContainers. With eval_do_concat_batches (the default) add() is nested_concat, a torch.cat
// of the kept and the new (trainer_pt_utils.py torch_pad_and_concatenate at the same commit): the
// kept, the new and the result exist at once. eval_accumulation_steps moves the containers to the
// CPU every k steps; otherwise they stay on the GPU to the loop's end. So with S steps in a window
// (⌈eval_samples / (W·b)⌉, at most k) and P, L one step's gathered predictions and labels: during
// the last step's forward (S − 1)·(P + L) are kept; at its predictions' concatenation 2·S·P +
// (S − 1)·L + L/W (this GPU's labels, not yet gathered); at the labels' S·P + 2·S·L. The logits are
// the model's output dtype: fp32 with transformers_loss "upcast-in-model" (the model upcasts),
// else the compute dtype. Worked by hand in tests/core/job_moments.test.cpp.
EvaluationPredictions evaluation_predictions_bytes(const Config& config) {
  EvaluationPredictions out;
  if (config.eval_micro_batch_size <= 0 || config.eval_predictions == EvalPredictions::none ||
      config.eval_samples <= 0 || config.vocab_size <= 0)
    return out;
  Config ev = config;
  ev.micro_batch_size = config.eval_micro_batch_size;
  const Shape x = shape_of(ev);
  const double W = double(config.data_parallel_size), b = double(config.eval_micro_batch_size);
  const double logit_e = config.transformers_loss == TransformersLoss::upcast_in_model ? 4 : x.e;
  const double per_gpu = config.eval_predictions == EvalPredictions::argmax ? 8 * x.tokens : logit_e * x.logits;
  const double P = W * per_gpu, L = W * 8 * x.tokens;
  double S = std::ceil(double(config.eval_samples) / (W * b));
  if (config.eval_accumulation_steps > 0) S = std::min(S, double(config.eval_accumulation_steps));
  out.held = (S - 1) * (P + L);
  if (S >= 2)
    out.at_add = std::max(2 * S * P + (S - 1) * L + L / W, S * P + 2 * S * L);
  else  // the first add keeps the gathered tensors as they are: no concatenation
    out.at_add = std::max(P + (W > 1 ? per_gpu : 0.0) + L / W, P + L / W + L);
  return out;
}

EvaluationForward evaluation_forward_bytes(const Config& config) {
  EvaluationForward out;
  if (config.eval_micro_batch_size <= 0 || config.vocab_size <= 0) return out;
  Config ev = config;
  ev.micro_batch_size = config.eval_micro_batch_size;
  const Shape x = shape_of(ev);
  const double layers = double(config.num_layers);
  // The residual stream's and the projections' element bytes (fp32 under autocast over fp32
  // weights, or QLoRA's fp32 norms).
  const double stream_e = x.norm_e, proj_e = x.ffn_e;
  if (config.eval_kv_cache) {
    const double per_token = config.multi_latent_attention
                                 ? x.a * double(config.qk_head_dim + config.qk_pos_emb_head_dim + config.v_head_dim)
                                 : 2 * x.g * x.k;
    out.kv_cache = layers * x.tokens * per_token * proj_e;
  }
  // The decoder layers' bound, the larger layer kind.
  Config every = ev;
  every.peft = Peft::none;
  every.lora_dropout = 0;
  every.attention_dropout = 0;
  every.hidden_dropout = 0;
  every.recompute_granularity = RecomputeGranularity::none;
  every.torch_compile = false;
  if (x.kbit_fp32) every.compute_dtype = Dtype::fp32;
  if (every.params_dtype == Dtype::nf4 || every.params_dtype == Dtype::int8) every.params_dtype = every.compute_dtype;
  bool has_dense = false, has_moe = false;
  for (int64_t i = 0; i < config.num_layers; ++i) (config.is_moe_layer(i) ? has_moe : has_dense) = true;
  double layer = 0;
  if (has_dense) layer = no_recompute_layer(every, false);
  if (has_moe) layer = std::max(layer, no_recompute_layer(every, true));
  double widest = std::max({x.h, x.f, x.a * x.k});
  if (config.is_moe()) widest = std::max(widest, double(config.moe_ffn_hidden_size));
  const double lora_slack = x.peft ? 2 * x.tokens * widest * proj_e : 0;
  const double mask = config.attention_backend == AttentionBackend::unfused ? x.norm_e * x.b * x.s * x.s : 0;
  const double rope = rope_cos_sin_bytes(config, x);
  // The layer's output beside its input, in the residual stream's dtype.
  out.layers = layer + stream_e * x.h * x.tokens + lora_slack + mask + rope + out.kv_cache;
  // The loss.
  const double L = x.logits, V = L / x.tokens;
  const double hidden = stream_e * x.h * x.tokens;
  const double upcast = x.e == 4 ? 0 : 4 * L;
  double loss = 0, labels = 0;
  const double copy = shifted_logits_copy_bytes(x, V), log_probs = 4 * shifted_loss_rows(x) * V;
  switch (config.transformers_loss) {
    case TransformersLoss::pad_labels:
      loss = x.e * L + upcast + 4 * L;
      labels = 8 * x.b * (x.s + 1) + (x.b > 1 ? 8 * x.tokens : 0);
      break;
    case TransformersLoss::shift_logits:
      loss = x.e * L + upcast + copy + log_probs;
      labels = x.b > 1 ? 8 * shifted_loss_rows(x) : 0;
      break;
    case TransformersLoss::upcast_in_model:
      loss = std::max(x.e * L + upcast, 4 * L + copy + log_probs);
      labels = x.b > 1 ? 8 * shifted_loss_rows(x) : 0;
      break;
    case TransformersLoss::count: break;
  }
  // An adapter on the output layer (PEFT's lora.Linear, torchtune's LoRALinear; dropout is the
  // identity in eval mode): result + lora_B(lora_A(x)) · scaling holds the base logits, lora_B's
  // output and its scaled copy at the mul (lora_A's r-wide output is gone: nothing saves it under
  // no_grad), 3·e·L beside the final norm's output, before the loss and its labels exist (the
  // allocation timeline oracle's evaluation step: seed 5 c22 and seed 1 c14, 22,624 and 12,912 B
  // under before).
  const double adapter = config.peft == Peft::lora && x.targeted(LoraTarget::lm_head) && !x.autocast ? 3 * x.e * L : 0;
  out.loss = hidden + std::max(loss + labels, adapter) + out.kv_cache;
  out.logits = x.e * L;
  out.hidden = hidden;
  return out;
}

double stage_boundary_bytes(const Config& config) { return shape_of(config).hidden; }

double model_output_bytes(const Config& config) {
  if (config.vocab_size <= 0) return 0;
  const Shape x = shape_of(config);
  const bool fp32 = config.pipeline_outputs == PipelineOutputs::kept_fp32_merged;
  return (fp32 ? 4 : x.e) * x.logits;
}

double loss_transient_bytes(const Config& config) {
  if (config.vocab_size <= 0) return 0;
  const Shape x = shape_of(config);
  const double logits = x.logits;
  // Fused (TE, or a compiled loss): backward writes the logits' gradient into a new 16-bit
  // tensor.
  if (config.cross_entropy_loss_fusion) return x.e * logits;
  // Liger's fused linear cross entropy (k_src_liger_flce): one chunk of logits in the compute
  // dtype at a time, chunk_size = next_power_of_2(⌈BT / ⌈V / H⌉⌉), at most BT, which its
  // cross-entropy kernel overwrites with their gradient; grad_input and grad_weight fill in place
  // (mm and addmm with out=, torch 2.8 and later); loss_1d holds one fp32 loss per token.
  if (config.fused_linear_cross_entropy) {
    const double tokens = x.tokens, vocab = padded_vocab(config);
    const double factor = std::ceil(vocab / x.h);
    const double wanted = std::ceil(tokens / factor);
    double chunk = 1;
    while (chunk < wanted) chunk *= 2;
    return x.e * std::min(tokens, chunk) * vocab + 4 * tokens;
  }
  // Cut Cross Entropy's backward (apple/ml-cross-entropy cut_cross_entropy/cce_backward.py @
  // 18e76ada05706ad9bc672804a35a940a07a21a13, cce_backward_kernel), beside every tensor the
  // forward saved: de = zeros_like(e) (the norm's output's gradient, in its dtype: accum_e_fp32
  // is off in the default "cce" preset) when the layers below need a gradient; dc =
  // zeros_like(c), the output layer's weight gradient, which becomes its .grad (a gradient,
  // counted with the state); the vocabulary order argsort(logit_avg).to(int32) (cce.py
  // sort_logit_avg: int64 then int32, 12 B per entry); and int32 locks, one per 128 rows (of
  // tokens for de, of the vocabulary for dc) per 64 columns of h. The logits are recomputed
  // block by block inside the kernel and never exist whole. In the forward, the valid-token
  // indices pass through nonzero()'s int64 [n, 2] and its int32 copy (24 B per token), below
  // the backward's e · h per token.
  if (config.cut_cross_entropy) {
    const double tokens = x.tokens, vocab = padded_vocab(config);
    const bool input_rg = !config.peft_on() || layers_need_gradients(config);
    const double column_blocks = std::ceil(x.h / 64);
    const double locks = 4 * column_blocks * ((input_rg ? std::ceil(tokens / 128) : 0) + std::ceil(vocab / 128));
    return (input_rg ? x.norm_e * x.h * tokens : 0) + 12 * vocab + locks;
  }
  // PyTorch F.cross_entropy: in backward, nll_loss_backward materialises a dense fp32 gradient of
  // the log-probabilities and log_softmax_backward_data allocates its own fp32 result while the
  // saved log-probabilities are still alive: two fp32 logits-sized tensors beyond the saved one
  // (aten/src/ATen/native/LossNLL.cpp, SoftMax.cpp). The forward's 16-bit logits beside their
  // fp32 copy (2 + 4 bytes) stay below that. Under DTensor tensor parallelism (fsdp2 with TP,
  // torchtitan's loss_parallel) the backward is decomposed instead
  // (torch/distributed/tensor/parallel/loss.py, _nll_loss_and_log_softmax_backward):
  // zeros_like(x), exp(x), their sum and its product with the incoming gradient are each a new
  // fp32 logits-sized tensor, three beyond the saved log-probabilities at once.
  // torchtune CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py, 10ff7cd2): the
  // model returns its logits in chunks (loss_chunks) and the loss upcasts and differentiates one
  // chunk at a time, so these temporaries are the largest chunk's, a full one of `size` tokens
  // in s/c. (Eager, each chunk's F.cross_entropy still saves its fp32 log-probabilities: the
  // saved bytes stay.)
  if (torch_loss(config)) {
    const bool loss_parallel = config.framework == Framework::fsdp2 && x.t > 1;
    const LossChunks chunks = loss_chunks(config);
    const double s_local = double(config.seq_length / config.context_parallel_size);
    const double chunk_share = double(chunks.size) / s_local;  // the largest chunk's part
    // Compiled (k_src_compiled_loss), backward is one fused kernel writing the gradient of the
    // graph's input: the chunk's logits in the compute dtype, or torchtune's fp32 output(h).float()
    // unchunked (whose eager cast back to the compute dtype runs after the compiled backward has
    // freed the saved fp32 logits, so it adds nothing beyond them).
    // axolotl's chunked loss (k_src_axolotl_chunks) cuts the model's whole logits: each
    // chunk's compiled backward writes its gradient, and the chunks' gradients wait in the input
    // buffer of the chunk's SplitBackward0 until the last has run (when b = 1 the saved chunks
    // are views, whose whole storage lives until then), then are joined into one gradient of
    // the whole logits after every saved chunk is freed: e · T · V beyond the saved tensors at
    // either point (with b > 1 the forward's whole logits beside their chunk copies are the same
    // e · T · V).
    if (hf_chunked_loss(config)) return x.e * logits;
    if (compiled_loss(config)) {
      const bool fp32_in = config.model_implementation == ModelImplementation::torchtune &&
                           config.cross_entropy_chunks <= 1;
      return (fp32_in ? 4 : x.e) * logits * chunk_share;
    }
    // transformers' shifting losses (transformers_loss): the same two over the shifted rows.
    if (shifted_hf_loss(config)) return 2 * 4 * shifted_loss_rows(x) * (logits / x.tokens);
    return (loss_parallel ? 3 : 2) * 4 * logits * chunk_share;
  }
  // Megatron unfused: the 16-bit logits live beside their fp32 copy until the loss's forward
  // returns, and in backward the fp32 gradient (computed in place in the saved softmax) is cast
  // back to a new 16-bit tensor for the output layer. With fp32 compute .float() is a no-op:
  // nothing extra.
  if (x.e == 4) return 0;
  return x.e * logits;
}

// The loss's and the output layer's backward, node by node as the autograd engine runs them
// (pytorch/pytorch torch/csrc/autograd/engine.cpp, evaluate_function:
// a node's saved tensors are released once call_function has returned, unless retain_graph; the
// gradient it was given is its InputBuffer, moved into the call and freed with it; the gradients it
// returns go to the next nodes' buffers). The loss is F.cross_entropy = log_softmax + nll_loss
// (transformers' ForCausalLMLoss in loss/loss_utils.py; torchtune's recipe _loss_step), over
// logits the output layer made as one matmul (F.linear of a [b, s, h] input folds into
// reshape + mm: MmBackward0).
//  1. NllLossBackward0: a dense fp32 gradient of the log-probabilities; then the target it saved
//     (the labels as the loss shifted them, a tensor of its own: F.pad + contiguous in
//     transformers, hstack in torchtune) is freed.
//  2. LogSoftmaxBackward0: its fp32 result beside its input gradient and the saved
//     log-probabilities (loss_transient_bytes: 2 · 4 · T · V beside the saved tensors, of which
//     the target is gone); then the log-probabilities are freed.
//  3. ToCopyBackward0 (16-bit logits only, the .float() of the loss): the logits' gradient in the
//     compute dtype, below step 2.
//  4. MmBackward0 of the output layer (tools/autograd/derivatives.yaml mm: self
//     mm_mat1_backward, mat2 mm_mat2_backward): the input's gradient e · T · h, then the weight's
//     V · h (transposed back by TBackward0 into a contiguous tensor that AccumulateGrad keeps as
//     .grad), with the logits' gradient e · T · V still its input. Every tensor the loss saved is
//     gone. When the norm's output needs no gradient (peft with nothing trainable below), only the
//     weight's; when the weight is frozen too, no MmBackward0 runs.
// Under autocast (ddp with compute_dtype below params_dtype) the weight's gradient is made in the
// compute dtype and cast to the parameter's by the next node: both are counted at step 4, an upper
// bound of the two nodes. Not modelled (modelled false): torchtitan (its loop passes the batch's
// labels, which it holds itself, so freeing the saved target frees nothing), the chunked,
// compiled and fused losses, tensor or context parallelism, LoRA on the output layer.
OutputBackward output_backward_bytes(const Config& config) {
  OutputBackward out;
  if (config.vocab_size <= 0 || !config.eager_model()) return out;
  if (eager_kind(config) == Eager::torchtitan) return out;
  // torchtune's chunked output (k_src_tt_chunks): the model runs the output layer on each of the
  // n chunks of the final norm's output, and the loss sums the chunks' cross entropies. The
  // engine runs the ready node of the highest sequence number first (engine.h ReadyQueue,
  // CompareNodeTaskTime), and every loss node was made after every output-layer node, so all n
  // chunks' loss backward runs first (chunk n down to 1), each leaving its logits' gradient
  // (e · t · V) in its MmBackward0's buffer; then the chunks' MmBackward0 from chunk n down. Each
  // makes its input's gradient (e · t · h, kept until the chunks' SplitBackward0) and frees the
  // input it saved (its own copy when b > 1, else a view of the whole input, freed with the last
  // view's MmBackward0), and its weight gradient goes to the weight's one TBackward0, whose
  // InputBuffer adds it to the others' (torch/csrc/autograd/input_buffer.cpp accumulate: in place
  // only for a contiguous buffer it alone holds; mm_mat2_backward of the transposed weight returns
  // a transposed result, so old + new is a new tensor: three V · h at each add). Every point of
  // that phase is counted, beside the final norm's saved tensors (its backward comes after).
  // With torch_compile this phase runs as in eager mode: compile=True makes the recipe call
  // training.compile_model, which compiles each
  // TransformerSelfAttentionLayer on its own (the final norm and the output layer, plain or
  // TiedLinear, stay eager), and training.compile_loss, which for CEWithChunkedOutputLoss replaces
  // only compute_cross_entropy (one chunk's logits.float() and F.cross_entropy) with its compiled
  // form (pytorch/torchtune torchtune/training/_compile.py, compile_model and compile_loss;
  // recipes/full_finetune_single_device.py, _setup_model / setup; torchtune/modules/loss/
  // ce_chunked_output_loss.py, forward's per-chunk loop; all @ 1814feb17a9038e1a8053ce93111bd26774a8db6,
  // "add flags to readme", PR #2003, the commit that adds the README's 'Optimization flags' table).
  // Each chunk's compiled loss node is made after every output-layer node (the model returns before
  // the loss runs), so the engine still runs all of them first, each writing its chunk's logits' gradient in the logits'
  // dtype (the compiled function's input is the compute-dtype chunk; its upcast is inside) and
  // releasing the chunk's logits and log-sum-exp it saved once it has run; the output layers'
  // MmBackward0 and the weight gradients' sums then run as in eager mode. The one difference from
  // eager mode, what the loss saves (a compute-dtype chunk of logits and an fp32 log-sum-exp instead
  // of fp32 log-probabilities), is gone before that phase begins.
  if (config.cross_entropy_chunks > 1 && eager_kind(config) == Eager::torchtune && loss_chunks(config).count() > 1 &&
      !config.cross_entropy_loss_fusion && !config.fused_linear_cross_entropy &&
      !config.peft_on() && config.tensor_model_parallel_size == 1 && config.context_parallel_size == 1) {
    SavedTensors saved;
    output_activation_bytes(config, &saved);
    const Shape x = shape_of(config);
    double norm_saved = 0;
    for (const SavedTensor& t : saved)
      if (t.name.substr(0, 17) == "output.final_norm") norm_saved += t.bytes;
    const LossChunks chunks = loss_chunks(config);
    std::vector<double> rows;  // tokens of each chunk, in order
    std::vector<bool> view;    // whether the chunk's output-layer input is a view of the whole
    for (int64_t i = 0; i < chunks.count(); ++i) {
      const int64_t length = i < chunks.whole ? chunks.size : chunks.rest;
      rows.push_back(x.b * double(length));
      view.push_back(x.b == 1 || length == 1);
    }
    const double V = padded_vocab(config), wh = x.e * x.h * V;
    const auto logits_grad = [&](size_t i) { return x.e * rows[i] * V; };
    const auto input_grad = [&](size_t i) { return x.e * rows[i] * x.h; };
    // Saved inputs of chunks 0..last (inclusive): their copies, and the whole input if any is a view.
    const auto inputs_saved = [&](size_t count) {
      double bytes = 0;
      bool any_view = false;
      for (size_t i = 0; i < count; ++i) {
        if (view[i]) any_view = true;
        else bytes += input_grad(i);
      }
      return bytes + (any_view ? x.e * x.h * x.tokens : 0);
    };
    double peak = 0, done_inputs = 0;
    for (size_t j = rows.size(); j-- > 0;) {
      double waiting = 0;  // logits' gradients of the chunks below j
      for (size_t i = 0; i < j; ++i) waiting += logits_grad(i);
      const bool first_done = j + 1 == rows.size();
      // In chunk j's MmBackward0: its logits' gradient, its input's and weight's, the sum so far.
      const double in_mm = (first_done ? 1 : 2) * wh + logits_grad(j) + input_grad(j) + done_inputs + waiting +
                           inputs_saved(j + 1);
      done_inputs += input_grad(j);
      // Then the add in TBackward0's buffer (none after the first chunk).
      const double at_add = first_done ? 0 : 3 * wh + done_inputs + waiting + inputs_saved(j);
      peak = std::max({peak, in_mm, at_add});
    }
    out.chunked_weight_sum = norm_saved + peak;
    // Then SplitBackward0 joins the chunks' input gradients into one e·T·h and frees them, and the
    // final RMSNorm's nodes run as after an unchunked output layer (step 5 below): five 4·T·h
    // beside the input pow saved, every chunk's saved input and logits' gradient gone, the output
    // weight's gradient made (the allocation timeline oracle's seed 21 c21, fp32: 11,456 B under
    // with the chunks' phase alone). Under ddp only, where the oracle runs: under FSDP2 what the
    // output unit's post-backward holds by then (its reduce-scatter pair) is not walked.
    if (config.normalization == Normalization::rms_norm && config.framework == Framework::ddp)
      for (const SavedTensor& t : saved)
        if (t.name == "output.final_norm_input") out.final_norm = t.bytes + 5 * 4 * x.h * x.tokens;
    return out;
  }
  if (config.cross_entropy_chunks > 1 || config.cross_entropy_loss_fusion ||
      config.fused_linear_cross_entropy || config.cut_cross_entropy || compiled_loss(config) ||
      config.tensor_model_parallel_size > 1 || config.context_parallel_size > 1)
    return out;
  SavedTensors saved;
  output_activation_bytes(config, &saved);
  // An adapter on the output layer: its backward is not walked, but the loss's is the same, and
  // NllLossBackward0 frees the target it saved before LogSoftmaxBackward0's temporaries (the
  // allocation timeline oracle's seed 5 c11, torchtune LoRA on lm_head: the target, 8·T B, was
  // counted beside them).
  if (config.peft_on() && config.lora_targets(LoraTarget::lm_head)) {
    for (const SavedTensor& t : saved)
      if (t.name == "loss.target") out.target += t.bytes;
    return out;
  }
  bool logits_rg = false;
  for (const SavedTensor& t : saved) {
    if (t.module != "loss") continue;
    out.loss_saved += t.bytes;
    if (t.name == "loss.target") out.target += t.bytes;
    if (t.name == "loss.log_softmax") logits_rg = true;
  }
  if (!logits_rg) return OutputBackward{};
  out.modelled = true;
  const Shape x = shape_of(config);
  const bool input_rg = !config.peft_on() || layers_need_gradients(config);
  const bool weight_trains = !config.peft_on() || config.saves(SavedModule::lm_head);
  out.output_layer = x.e * x.logits + (input_rg ? x.e * x.h * x.tokens : 0);
  if (weight_trains && x.autocast) out.output_layer += x.e * x.h * padded_vocab(config);
  // 5. The final RMSNorm's backward, as both models write it (transformers LlamaRMSNorm:
  //    weight · (x · rsqrt(mean(x²) + eps)); torchtune RMSNorm: (x · rsqrt(mean(x²) + eps)) ·
  //    scale), the weight trained or frozen under peft (its MulBackward0 then writes the normalised
  //    output's gradient alone: the same tensors; the allocation timeline oracle's seed 1 c11,
  //    LoRA, -4.17 % -> exact); in 16 bits the norm works on x.float(), which pow saves (the
  //    norm's saved input is that fp32 copy), the cast back's backward runs before these nodes and
  //    x.float()'s after PowBackward0, so the point is the same (seed 21 c15, seed 5 c15, seed 1
  //    c23: -0.66 … -1.34 % -> exact). After the weight's MulBackward0 (its gradient summed to h, the
  //    incoming gradient freed) and the x · rsqrt MulBackward0 (x's gradient, 4·T·h, waiting to be
  //    added to the pow path's), RsqrtBackward0 and MeanBackward1 (mean_backward: the gradient
  //    expanded and divided, a new 4·T·h), PowBackward0 (derivatives.yaml pow.Tensor_Scalar:
  //    pow_backward, `grad * (exp * self.pow(exp - 1))`: self.pow(1), the product by 2 and the
  //    product by grad, three 4·T·h) with x, which pow saved, still alive: five 4·T·h beside x.
  if (config.normalization == Normalization::rms_norm)
    for (const SavedTensor& t : saved)
      if (t.name == "output.final_norm_input") out.final_norm = t.bytes + 5 * 4 * x.h * x.tokens;
  return out;
}

// The decoder layers' backward, node by node as the engine runs them (engine.cpp evaluate_function,
// as output_backward_bytes), for the dense SwiGLU layer both models write as
// down(silu(gate(x)) · up(x)) (transformers LlamaMLP.forward; torchtune FeedForward.forward:
// w2(silu(w1(x)) · w3(x))), on a residual stream whose gradient G (e · T · h) AddBackward0
// passes on unchanged and which lives through the whole layer (the residual branch's buffer).
// In the layer's backward, after G:
//  1. MmBackward0 of down_proj: the product's gradient e · T · f and down_proj's weight gradient
//     (the layer's first); then the product, which it saved, is freed.
//  2. MulBackward0 of silu(gate) · up (derivatives.yaml mul.Tensor: self grad * other, other
//     grad * self): two e · T · f gradients beside its input gradient: the layer's largest point
//     of the MLP, G + 3 · e · T · f, the saved tensors less the product.
// Gradients rise and saved tensors fall by a layer's worth per layer, so over the layers this
// point is largest in the last layer or the first (evaluate_stage takes both). Below the first
// layer, EmbeddingBackward0 (embedding_dense_backward) writes the embedding's gradient, which
// AccumulateGrad keeps as .grad, beside the embedding's incoming gradient G and the token ids
// it saved: every gradient made, nothing else saved. Not modelled with optimizer_in_backward,
// which frees each gradient as it is made.
// With every layer checkpointed (full recompute) the layer's saved set at that point is the one
// its recomputation made (the stage's recompute-working set, beside the checkpointed inputs),
// freed node by node as without checkpointing. Under LoRA the frozen base makes no gradients and
// keeps the product only for an adapter that reads it as it is; down_proj's adapter nodes run
// before MulBackward0 (made after the base's matmul in forward) and free their own saved
// tensors; the gradients made are the adapters' (r · (in + out) per target). Both checked by the
// allocation timeline oracle (tests/oracle/README.md: c11, c12, c19, c20, c22 exact).
// The layer's other points, each below with its own walk: eager attention's SoftmaxBackward0
// (eager_softmax_point), q_proj's MmBackward0 (qkv_point), the two RMSNorms' PowBackward0
// (norm_points), and in transformers' MoE block the expert loop's (moe_backward_points), which
// replaces the SwiGLU point. Each is three numbers (the bytes beyond G and the saved tensors, the
// saved bytes freed by then, the layer's parameters whose gradients are made), which
// trainmem_profile.cpp evaluate_stage turns into a candidate in the last layer and the first.
namespace {

// Whether a saved tensor's name starts with one of `prefixes` (the ledger's names: "mlp.",
// "lora.down_proj_input", ...), to tell which nodes of a layer have run at a point of its backward.
bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

// The saved bytes of `saved` whose names `freed` tells.
template <typename Freed>
double freed_bytes(const SavedTensors& saved, Freed freed) {
  double bytes = 0;
  for (const SavedTensor& t : saved)
    if (freed(t.name)) bytes += t.bytes;
  return bytes;
}

// transformers' eager attention (eager_attention_forward: softmax(q·kᵀ·scale + mask, fp32),
// cast to the query's dtype, dropout, matmul with the repeated values). Backward reaches it
// after the MLP, o_proj and the probabilities' matmul have run: that BmmBackward0 writes the
// values' gradient (e · a · k · T, every head) and the probabilities' (e · scores), and frees
// the output's gradient and the values it saved; dropout's and the cast's backward each replace
// the probabilities' gradient (the cast's as fp32); SoftmaxBackward0 then writes the scores'
// gradient in its input's dtype beside it, the fp32 probabilities it saved still alive. That
// input is fp32 (softmax(dtype=float32) casts a 16-bit input first), except for fp16 on CUDA,
// whose half_to_float kernel reads the fp16 scores directly (aten/src/ATen/native/SoftMax.cpp
// softmax(input, dim, dtype): `input_.is_cuda() && input_.scalar_type() == ScalarType::Half &&
// dtype == ScalarType::Float`; bf16 is cast). So 4 · scores and 4 (fp16: 2) · scores beyond
// the values' gradient (checked in fp32 by the allocation timeline oracle at
// aten::_softmax_backward_data).
// `made_params`: the layer's parameters whose gradients are made by then (the MLP's or the MoE
// block's, o_proj's, the post-attention norm's).
DecoderBackward::Point eager_softmax_point(const Config& config, const Shape& x, const SavedTensors& saved,
                                           double made_params) {
  if (config.attention_backend != AttentionBackend::unfused || config.attention_sinks || !(x.a > 0) ||
      config.torch_compile)
    return {};
  const double scores = x.a * x.tokens * x.s;
  const double values_gradient = x.e * x.a * x.k * x.tokens;
  // transformers: the fp32 probabilities' gradient and the scores' in the softmax input's dtype.
  // torchtune's and torchtitan's attention is scaled_dot_product_attention; unfused, its math
  // path (the reference's on the CPU): the softmax in the compute dtype, no fp32 copy, so the
  // probabilities' and the scores' gradients are e · scores each (the allocation timeline
  // oracle, torchtune draws: seed 7 c16, seed 21 c12).
  const double extra = eager_kind(config) == Eager::hf
                           ? values_gradient + (4 + (x.act_dtype == "fp16" ? 2 : 4)) * scores
                           : values_gradient + 2 * x.e * scores;
  // Kept until then: the input norm, q/k/v's inputs and adapters, q and k (the scores' matmul)
  // and the probabilities (the softmax); the rest of the layer's saved set is freed.
  const double freed = freed_bytes(saved, [](std::string_view n) {
    return !(starts_with_any(n, {"norm.attention_", "attention.qkv_input", "lora.q_proj", "lora.k_proj", "lora.v_proj"}) ||
             n == "attention.q" || n == "attention.k" || n == "attention.q_scaled" || n == "attention.k_scaled" ||
             n == "attention.softmax_output");
  });
  return {extra, freed, made_params};
}

// q_proj's MmBackward0, the last node of a layer's backward that makes a weight gradient (q is
// computed first in forward, so its nodes run after k's and v's): its output's gradient
// (e·T·a·k, the node's input) and its input gradient (e·T·h) beside the sum of k's and v's (e·T·h,
// the normalised input's buffer) and the residual gradient; of the layer's saved tensors only the
// input norm's and q/k/v's input remain, and the model's cos/sin, positions and mask are freed by
// the first layer's rotary and attention nodes. In the first layer, every gradient but the embedding's is made (the allocation timeline
// oracle: an MoE draw, c10, peaks there).
DecoderBackward::Point qkv_point(const Shape& x, const SavedTensors& saved, double model_tensors, double made_params) {
  const double freed = freed_bytes(saved, [](std::string_view n) {
    return !starts_with_any(n, {"norm.attention_", "attention.qkv_input"});
  });
  return {x.e * x.tokens * (2 * x.h + x.a * x.k), freed + model_tensors, made_params};
}

// A layer's two RMSNorms in backward (transformers' LlamaRMSNorm and torchtune's RMSNorm, which
// upcast to fp32 inside: x = input.float(); x · rsqrt(mean(x²) + eps), cast back, times the
// weight), as output_backward_bytes walks the final norm: after the weight's MulBackward0 (its
// gradient summed) and the cast's backward (the gradient in fp32), x · rsqrt's MulBackward0 writes
// x's gradient, mean's backward a 4·T·h, and PowBackward0 (pow_backward: `grad * (exp *
// self.pow(exp - 1))`) three more, beside the norm's fp32 input, which pow saved; the statistics
// (rsqrt's output) are freed by then. x's gradient waits for the cast's backward where the stream
// is 16-bit (five fp32 T·h); where it is fp32 the upcast is the stream itself, so that gradient is
// added at once into the residual gradient's buffer (out of place) and four remain (the
// allocation timeline oracle: a bf16 draw, c15, and an fp32 one, c10, at aten::mul in
// PowBackward0).
//  - the post-attention norm: the MLP's (or MoE block's) saved tensors and the norm's
//    normalised output freed, their gradients and the norm's weight's made;
//  - the input norm: every saved tensor of the layer freed but that norm's input,
//    and the model's cos/sin, positions and mask (freed by the first layer's rotary and attention
//    nodes), every gradient of the layer made.
void norm_points(const Config& config, const Shape& x, const SavedTensors& saved, double model_tensors,
                 double mlp_made_params, double layer_params, DecoderBackward& out) {
  if (config.normalization != Normalization::rms_norm) return;
  const bool fp32_stream = x.e == 4 || x.kbit_fp32;
  const double extra = (fp32_stream ? 4 : 5) * 4 * x.h * x.tokens;
  const double mlp_freed = freed_bytes(saved, [](std::string_view n) {
    return starts_with_any(n, {"mlp.", "moe.", "lora.gate_proj", "lora.up_proj", "lora.down_proj", "norm.mlp_normed",
                               "norm.mlp_stats"});
  });
  const double attention_freed =
      freed_bytes(saved, [](std::string_view n) { return !starts_with_any(n, {"norm.attention_input"}); });
  out.norm_mlp = {extra, mlp_freed, mlp_made_params};
  out.norm_attention = {extra, attention_freed + model_tensors, layer_params};
}

// transformers' MoE block (MixtralSparseMoeBlock.forward, modeling_mixtral.py @ af3efdd7) in
// backward, with every expert given T·K/E of the T·K routed rows (balanced routing, as the
// routing load's default). The loop's index_add_ nodes run in reverse, the last expert first;
// each expert's chain runs whole before the next expert's index_add_ node (higher sequence
// numbers first), as the allocation timeline oracle shows:
//  - IndexAddBackward0 selects the expert's rows of the block's output gradient (e·n·h) and frees
//    the weighted output it saved (e·n·h); the weighting's MulBackward0 writes two e·n·h and
//    frees the rows, its saved w2 output and routing weights; IndexBackward0 of the routing
//    weights writes their gradient (zeros like them, e·T·K, one buffer for the whole loop);
//    w2's MmBackward0 writes the product's gradient (e·n·f) and frees the product;
//  - silu · w3's MulBackward0 writes two e·n·f beside that gradient: the first point, with every
//    other expert's saved tensors alive and the first expert's product, w2 output, weighted
//    output and routing weights freed, w2's gradient made;
//  - w3's, silu's and w1's nodes then free the rest of the expert's tensors; IndexBackward0 of
//    hidden_states[top_x] writes a whole e·T·h input gradient, which the engine adds into the
//    block input's buffer out of place (input_buffer.cpp accumulate: the old and the new gradient
//    and their sum): the second point, at the second expert, 3·e·T·h with both experts' tensors
//    freed and their weights' gradients made; and the same at the last expert, every expert's
//    tensors freed and gradients made (saved tensors fall and gradients rise expert by expert,
//    so the largest of these sums is at one end).
// Not walked: the router's nodes after the loop (T·E-sized) and an expert's later points, which
// are smaller while the experts' tensors fall expert by expert.
// `expert_params`: one expert's trainable parameters (its weights, or its adapters under peft);
// `expert_down_params`: of them w2's (down_proj's), the first gradient an expert makes.
void moe_backward_points(const Config& config, const Shape& x, const SavedTensors& saved, double expert_params,
                         double expert_down_params, DecoderBackward& out) {
  const double E = double(config.num_moe_experts), K = double(config.moe_router_topk);
  const double f_e = double(config.moe_ffn_hidden_size), T = x.tokens;
  const double N = expert_tokens(config, x), n = N / E;
  const AdapterNames& down = k_adapter_names[size_t(LoraTarget::down_proj)];
  // Bytes per routed row: all an expert keeps, and what the first point has freed.
  const double per_row = freed_bytes(saved, [](std::string_view name) {
    return starts_with_any(name, {"moe.expert_", "lora.gate_proj", "lora.up_proj", "lora.down_proj"}) ||
           name == "moe.routing_weights" || name == "moe.weighted_output";
  }) / N;
  const double first_freed_per_row = freed_bytes(saved, [&](std::string_view name) {
    return name == k_expert_names.fc2_input || name == "moe.expert_output" || name == "moe.weighted_output" ||
           name == "moe.routing_weights" || name == down.input || name == down.mask || name == down.intermediate;
  }) / N;
  // Gradients in their tensors' dtypes: fp32 for the block's tensors and the experts' f-wide
  // ones under QLoRA with fp32 norms (moe_block_bytes, Shape::ffn_e; k_src_hf_moe_kbit).
  const double be = moe_block_bytes(x);
  const double routing_gradient = be * T * K;
  out.expert_first = {3 * x.ffn_e * n * f_e + routing_gradient, n * first_freed_per_row, expert_down_params};
  // The loop's first node in backward, the last expert's IndexAddBackward0 then its weighting's
  // MulBackward0 (`expert_layer(current_state) * routing_weights[top_x, idx, None]`): the selected
  // rows of the block's output gradient (be·n·h), the gradient of w2's output (grad · routing
  // weight) and the product grad · w2's output that sum() reduces to the routing weights' row
  // (be·n·h each), and that row (be·n), with the weighted output IndexAddBackward0 saved freed;
  // nothing of the expert's is made yet. It outgrows the first point where f_e is small beside h
  // (the allocation timeline oracle's seed 1 c10, f_e 40 and h 64: 33,608 B under before).
  const double weighted_per_row =
      freed_bytes(saved, [](std::string_view name) { return name == "moe.weighted_output"; }) / N;
  out.expert_weighting = {3 * be * n * x.h + be * n, n * weighted_per_row, 0};
  if (E >= 2) {
    const double summed = 3 * be * T * x.h + routing_gradient;
    out.expert_second = {summed, 2 * n * per_row, 2 * expert_params};
    out.expert_last = {summed, E * n * per_row, E * expert_params};
  }
}

// Reentrant checkpointing (checkpoint_reentrant: transformers' gradient_checkpointing_kwargs
// {"use_reentrant": True}), torch.utils.checkpoint.CheckpointFunction (torch/utils/checkpoint.py
// of torch 1.13, lines 71-161, and of pytorch/pytorch @ 0008d771a4015b0b43165ea470653b52e92b2148,
// the same code). Its forward saves the same tensor arguments as the non-reentrant mode
// (line 104, ctx.save_for_backward(*tensor_inputs)), so the saved activations do not change. Its
// backward, per layer, differs in what is live at each walked point:
//  - the recomputed output: `outputs = ctx.run_function(*detached_inputs)` (line 141) under
//    enable_grad, held by that local until backward() returns, through the whole inner
//    `torch.autograd.backward(outputs_with_grad, args_with_grad)` (line 157): the layer's output
//    (the residual stream, e · T · h) at every point of the layer. The non-reentrant mode keeps
//    only what the recomputation saved (1.13 discards the output; current PyTorch stops the
//    recomputation before it, early stop);
//  - the incoming gradient: the node's `*args` (line 111) hold the output's gradient G until it
//    returns, so where the engine sums G with the MLP's path into the post-attention residual's
//    gradient (fp32 stream: at the post-attention RMSNorm's x · rsqrt, before its PowBackward0;
//    16-bit: after its cast's backward), G stays beside the sum: one more e · T · h at the
//    attention's points and the norms' (the fp32 post-attention norm's included);
//  - unchanged: detach_variable's copies (line 137: x.detach(), views of the saved inputs); the
//    inner backward frees the recomputed graph's saved tensors node by node (retain_graph False),
//    as the engine does outside; the input gradient is AccumulateGrad's .grad of the detached
//    input (`grads = tuple(inp.grad ...)`, line 158), the same e · T · h the non-reentrant mode
//    hands to the layer below, returned when the layer's nodes have all run;
//  - the model's tensor arguments (the eager mask, the positions) are every layer's saved tensors:
//    one storage, released when the last node holding it, the first layer's, has run, so they
//    are still there at that layer's q_proj and input norm points (the non-reentrant mode frees
//    them with the first layer's rotary and attention nodes);
//  - the non-tensor arguments stay in `ctx.inputs` (lines 93-102), which the node keeps until
//    the graph is freed, not when it has run (save_for_backward's tensors are released then):
//    transformers passes position_embeddings, the (cos, sin) tuple, so cos/sin (2 · e · s · k,
//    one storage for every layer) live to the backward's end and, when the loop keeps the graph
//    (model_output_kept: the logits' grad_fn), through the optimizer step; the Trainer drops the
//    loss (training_step returns loss.detach()) before the step.
//  - under peft, transformers makes the embedding output need a gradient (enable_input_require_grads:
//    a reentrant checkpoint otherwise makes no gradient at all); that leaf, kept by its
//    AccumulateGrad node, gets its .grad when the first layer returns: 2 · e · T · h at the
//    backward's end, beside every gradient (not when PEFT trains the embedding whole: its output
//    is then no leaf).
// Checked by the allocation timeline oracle's reentrant draws (tests/oracle/README.md).
void reentrant_extras(const Config& config, const Shape& x, double model_tensors, DecoderBackward& out) {
  const double output = out.incoming;  // the recomputed layer's output: the residual stream
  // The model's tensors (mask, positions, cos/sin) stay through the first layer's backward.
  for (DecoderBackward::Point* p : {&out.qkv, &out.norm_attention})
    if (p->extra > 0) p->freed -= model_tensors;
  for (DecoderBackward::Point* p : {&out.swiglu, &out.expert_first, &out.expert_second, &out.expert_last,
                                    &out.expert_weighting, &out.nf4_down, &out.nf4_up})
    if (p->extra > 0) p->extra += output;
  // The fp32 stream adds the post-attention norm's x gradient into G's sum at once; a 16-bit
  // stream's waits for the cast's backward, after that norm's PowBackward0.
  const bool fp32_stream = x.e == 4 || x.kbit_fp32;
  if (out.norm_mlp.extra > 0) out.norm_mlp.extra += output + (fp32_stream ? output : 0);
  for (DecoderBackward::Point* p : {&out.softmax, &out.attention_dropout, &out.qkv, &out.norm_attention})
    if (p->extra > 0) p->extra += 2 * output;
  if (eager_kind(config) == Eager::hf) out.graph_held = rope_cos_sin_bytes(config, x);
  // A trained embedding (modules_to_save) already makes a non-leaf output that keeps no .grad.
  if (config.peft_on() && !config.saves(SavedModule::embed_tokens)) out.input_gradient_end = 2 * output;
}

// A checkpointed dense layer's recomputation, before its own backward: the layer's forward runs
// again, its saved tensors kept as they are made (the recomputed set, recompute_working), beside
// what its frames hold and nothing saves. The reentrant checkpoint (CheckpointFunction.backward,
// torch/utils/checkpoint.py of torch 1.13 lines 141-157 and @ 0008d771) runs the whole forward
// under enable_grad before its inner backward; the non-reentrant one (current PyTorch's
// _checkpoint_without_reentrant_generator with early stop, the default since 2.1) stops once the
// last saved tensor is packed, so it reaches down_proj only where down_proj saves something: its
// weight trains (the product) or an adapter reads it (lora_A's input). At down_proj, beyond the
// recomputed set: the product where nothing saves it (an adapter with dropout saves its own
// dropped copy, a frozen base nothing), the result or, with an adapter, the base result,
// lora_B's scaled output and the sum; the MLP's argument (the post-attention norm's output) and
// the layer's residual sum where nothing saves them; the reentrant mode then adds the MLP's
// output to the residual (the output beside it). The incoming gradient is there (the reentrant
// node's argument; the non-reentrant unpack comes from down_proj's node, whose output gradient
// it is). torch 1.13's non-reentrant mode recomputes the whole layer (no early stop); the
// allocation timeline oracle runs current PyTorch's (timeline.py checkpoint_early_stop).
DecoderBackward::Point recompute_forward_point(const Config& config, const Shape& x) {
  const bool peft = config.peft_on();
  // Not walked for QLoRA: with MatMul4Bit's points the oracle's QLoRA draws read over, as
  // Linear4bit's backward is not walked (the largest dequantised weight beside every point).
  if (config.peft == Peft::qlora) return {};
  const bool down_saves = !peft || x.targeted(LoraTarget::down_proj);
  if (!config.checkpoint_reentrant && !down_saves) return {};
  const double T = x.tokens, e = x.e, fe = x.ffn_e, out_e = x.norm_e;
  // The product, unless down_proj keeps it as it is (its weight trains, or an adapter reads it
  // undropped and uncast).
  const double product = x.keeps_input({LoraTarget::down_proj}) ? 0 : fe * T * x.f;
  const double result = out_e * T * x.h;
  // An adapter: the base result, lora_B's scaled output and the sum.
  const double adapter = x.targeted(LoraTarget::down_proj) ? 2 * out_e * T * x.h + e * T * x.h : 0;
  // The MLP's frame holds the post-attention norm's output (its argument x) and the layer's
  // frame the residual sum: the norm output is saved only where gate or up keeps its input as it
  // is, the residual sum only where the norm reads it without a copy (an fp32 stream: its fp32
  // upcast is the tensor itself).
  const double norm_output = x.keeps_input({LoraTarget::gate_proj, LoraTarget::up_proj}) ? 0 : x.norm_e * T * x.h;
  const double residual = x.norm_e == 4 ? 0 : x.norm_e * T * x.h;
  double extra = norm_output + residual + product + std::max(result, adapter);
  // The reentrant mode's residual sum: the MLP's output beside the layer's output.
  if (config.checkpoint_reentrant) extra = std::max(extra, 2 * out_e * T * x.h);
  return {extra, 0, 0};
}

// bitsandbytes' Linear4bit in backward (autograd/_functions.py MatMul4Bit.backward, 0.41.0
// a06a0f6a … 0.48.0 406fb6aa: `grad_A = torch.matmul(grad_output, F.dequantize_4bit(B,
// ctx.state).to(grad_output.dtype).t())`; nn/modules.py Linear4bit.forward: `x.to(compute_dtype)`,
// then `.to(inp_dtype)` on the output). The dequantised weight exists only inside that node, beside
// grad_output and grad_A: dequantize_4bit restores the double-quantised absmax (a new fp32 tensor,
// one per block of 64) and frees it when it returns, before the matmul writes grad_A. So the
// weight is not beside the SwiGLU product's or the softmax's node; it is at each Linear4bit's
// own node. Walked in a dense layer of transformers' Llama whose largest NF4 linear is an MLP one
// (h·f, f at least the query width), where MatMul4BitBackward of down_proj and of up_proj are the
// MLP's largest such points and q_proj's the attention's (qkv_point); elsewhere the largest
// dequantised weight stays beside every walked point (an upper bound). The allocation timeline
// oracle's QLoRA draws (tests/oracle/bnb.py's stand-in) peak at these nodes.
bool bnb_linear4bit_backward_walked(const Config& config, const Shape& x) {
  return config.peft == Peft::qlora && config.params_dtype == Dtype::nf4 &&
         config.model_implementation == ModelImplementation::hf_transformers && !config.is_moe() &&
         x.f >= x.a * x.k && x.f >= x.g * x.k;
}

// The fp32 absmax dequantize_4bit restores with double quantisation (4 B per block of 64), 0 without.
double nf4_absmax_bytes(const Config& c, double elements) {
  return c.nf4_double_quant ? 4 * std::ceil(elements / 64) : 0;
}

// The two MLP points of Linear4bit's backward (bnb_linear4bit_backward_walked), beyond the
// residual gradient G and the layer's saved tensors less `freed`:
//  - down_proj's MatMul4BitBackward, the layer's first node after its adapter's (made after the
//    base in forward: PEFT's lora.bnb.Linear4bit adds lora_B(lora_A(x)) to the base's clone), so
//    the adapter has written the product's gradient (ffn_e·T·f: lora_A's input gradient, cast back
//    to the product's dtype) and freed what it saved (as at the SwiGLU point, `product_freed`);
//    under fp32 norms Linear4bit's output `.to(fp32)` hands MatMul4Bit a compute-dtype copy of G
//    (ToCopyBackward0, e·T·h); then the weight dequantised (h·f·e, or the restored absmax first)
//    and grad_A (e·T·f);
//  - up_proj's, after MulBackward0 (the product's gradient freed, its two factors' made, the
//    factors it saved freed): SiLU's output gradient (ffn_e·T·f) waits for SiluBackward0; up's
//    gradient, in the compute dtype (ToCopyBackward0 replaced the fp32 one under fp32 norms),
//    e·T·f; up's adapter ran first and left its input gradient in the norm output's buffer
//    (norm_e·T·h); then the weight dequantised and grad_A (e·T·h). gate_proj's comes after
//    SiluBackward0 (SiLU's and up's factor gone), with less: not a point of its own.
void linear4bit_backward_points(const Config& config, const Shape& x, double product_freed, double up_freed,
                                double down_params, double up_params, DecoderBackward& out) {
  const double T = x.tokens, elements = x.h * x.f;
  const double weight = elements * x.e, absmax = nf4_absmax_bytes(config, elements);
  const double down_adapter = x.targeted(LoraTarget::down_proj) ? x.ffn_e * T * x.f : 0;
  const double output_cast = x.kbit_fp32 ? x.e * T * x.h : 0;
  out.nf4_down = {down_adapter + output_cast + weight + std::max(absmax, x.e * T * x.f), product_freed, down_params};
  const double up_adapter = x.targeted(LoraTarget::up_proj) ? x.norm_e * T * x.h : 0;
  out.nf4_up = {x.ffn_e * T * x.f + x.e * T * x.f + up_adapter + weight + std::max(absmax, x.e * T * x.h),
                product_freed + up_freed, down_params + up_params};
  out.nf4_walked = true;
}

// Every layer checkpointed: the recomputation's own forward at up_proj's MatMul4Bit
// (MatMul4Bit.forward: the weight dequantised, then F.linear's output e·T·f; under fp32 norms
// Linear4bit's `.to(fp32)` of it after the weight is freed), beside the recomputed set so far
// (`not_yet`: what is made after it), before the layer's own nodes have freed anything. The
// non-reentrant checkpoint recomputes at the layer's first unpack, after down_proj's nodes have
// written the product's gradient (ffn_e·T·f); the reentrant one before any of the layer's nodes.
void linear4bit_recompute_point(const Config& config, const Shape& x, double not_yet, DecoderBackward& out) {
  const double T = x.tokens, elements = x.h * x.f;
  const double output = x.e * T * x.f;
  const double product_gradient = config.checkpoint_reentrant ? 0 : x.ffn_e * T * x.f;
  const double matmul = x.e * elements + std::max(nf4_absmax_bytes(config, elements), output);
  const double upcast = x.kbit_fp32 ? output + 4 * T * x.f : 0;
  out.nf4_recompute_up = {product_gradient + std::max(matmul, upcast), not_yet, 0};
}

// transformers' MoE block recomputed (MixtralSparseMoeBlock.forward, every layer checkpointed): the
// expert loop saves at every expert (its indices, its rows), so the recomputation runs to the last
// expert in either mode. At the last expert's w2, beyond the recomputed set (every expert's saved
// tensors, counted whole): the block's frame holds final_hidden_states (zeros, the index_add_
// target, e_b·T·h), the one_hot expert mask (int64, T·K·E), the router's logits (e·T·E; softmax
// saves its fp32 output, not them) and its argument, the post-attention norm's output, which the
// router saves only when it trains; the layer's frame the residual sum (16-bit stream: the norm
// saves its fp32 copy); the last expert's rows and product where nothing saves them (frozen,
// no adapter reading them, no bitsandbytes A); w2's output (e·n·h, n = T·K/E rows).
// bitsandbytes' dequantised w2 is the backward's NF4 temporary already. The allocation timeline
// oracle's QLoRA MoE draws (seed 13, 21, 7 q03) peak there, in the recomputation the unpack at
// IndexAddBackward0 starts.
DecoderBackward::Point moe_recompute_forward_point(const Config& config, const Shape& x, const SavedTensors& saved) {
  const double T = x.tokens, e = x.e, E = double(config.num_moe_experts), K = double(config.moe_router_topk);
  const double n = expert_tokens(config, x) / E;
  const double block_e = moe_block_bytes(x);
  const double residual = x.norm_e == 4 ? 0 : x.norm_e * T * x.h;
  const double router_input = config.peft_on() ? x.norm_e * T * x.h : 0;  // a frozen router saves nothing
  // The last expert's rows (hidden_states[top_x]) and its product, where nothing saves them: its
  // weights frozen, no adapter reading them as they are, no bitsandbytes A kept.
  const bool bnb_kept = x.bnb_input && !config.checkpoint_reentrant;
  const double rows = bnb_kept || x.keeps_input({LoraTarget::gate_proj, LoraTarget::up_proj}) ? 0 : e * n * x.h;
  const double product = bnb_kept || x.keeps_input({LoraTarget::down_proj})
                             ? 0
                             : x.ffn_e * n * double(config.moe_ffn_hidden_size);
  // The recomputed set counts every expert's saved tensors whole; at the last expert's w2 its
  // weighted output and routing weight's row are not made yet, and w2's output is the one being
  // written (counted once, as the point's). routing_weights cast to the block's dtype (a new
  // tensor when the fp32 top-k weights are cast to a 16-bit stream) is held by the frame, saved by
  // nothing (IndexBackward0 of its rows keeps only their shape).
  const double per_row = freed_bytes(saved, [](std::string_view name) {
    return name == "moe.weighted_output" || name == "moe.routing_weights" || name == "moe.expert_output";
  }) / expert_tokens(config, x);
  const double routing_cast = block_e == 4 ? 0 : block_e * T * K;
  // bitsandbytes' w2 (NF4 experts): the stage's NF4 temporary counts the largest dequantised
  // weight with its restored absmax, but MatMul4Bit frees the absmax before F.linear writes w2's
  // output, so the two are not there together: the smaller is taken out (an upper bound still
  // where the temporary is a larger linear's; the allocation timeline oracle's seed 7 q03:
  // 6,528 B over otherwise).
  const bool nf4_experts = config.peft == Peft::qlora && config.params_dtype == Dtype::nf4 &&
                           config.expert_params_dtype == Dtype::nf4;
  const double absmax_apart =
      nf4_experts ? std::min(nf4_absmax_bytes(config, x.h * double(config.moe_ffn_hidden_size)), e * n * x.h) : 0;
  const double extra = residual + router_input + e * T * E + block_e * T * x.h + 8 * T * K * E + rows + product +
                       e * n * x.h + routing_cast - n * per_row - absmax_apart;
  return {extra, 0, 0};
}

}  // namespace

// FSDP1 with frozen decoder units (peft) checkpointed reentrantly (checkpoint_reentrant) around
// each unit (fsdp1_checkpoint_around_unit): a non-reentrant checkpoint recomputes from the
// original input, no leaf, so no input is kept. The layer's nodes run as under ddp (the gathered units are
// weights, counted apart; only the adapters, units of their own, make gradients), and its
// first-layer points are where the kept checkpoint inputs and input gradients peak
// (trainmem_profile.cpp, kept_inputs_first_layer).
bool fsdp1_kept_inputs(const Config& config) {
  return config.framework == Framework::fsdp2 && config.fsdp_version == 1 && config.fsdp1_checkpoint_around_unit &&
         config.checkpoint_reentrant && config.recompute_granularity == RecomputeGranularity::full &&
         config.peft_on() && config.zero_stage == 3;
}

namespace {
// The model code the walks below follow node by node (decoder_backward_bytes,
// checkpointed_layer_forward_bytes, output_lora_forward_bytes): transformers' and torchtune's
// eager modules.
bool walked_model_code(const Config& c) {
  return c.model_implementation == ModelImplementation::hf_transformers ||
         c.model_implementation == ModelImplementation::torchtune;
}

// The decoder layer those walks know: a Llama layer (SwiGLU, RMSNorm, no biases, no q/k norms, no
// MLA) on one GPU's whole layer (no TP, CP or pipeline stages), without hidden dropout, compile or
// a step inside backward.
bool walked_llama_layer(const Config& c) {
  return walked_model_code(c) && c.num_layers > 0 && c.gated_linear_unit &&
         c.activation_func == ActivationFunc::silu && c.normalization == Normalization::rms_norm &&
         !c.add_bias_linear && !c.add_qkv_bias && !c.qk_layernorm && !c.multi_latent_attention &&
         c.tensor_model_parallel_size <= 1 && c.context_parallel_size <= 1 && c.pipeline_model_parallel_size <= 1 &&
         !(c.hidden_dropout > 0) && !c.torch_compile && !c.optimizer_in_backward;
}
}  // namespace

DecoderBackward decoder_backward_bytes(const Config& config) {
  DecoderBackward out;
  // transformers' MoE block as MixtralSparseMoeBlock runs it: every layer an MoE layer, no shared
  // or latent experts, all experts on the GPU, dropless.
  bool every_layer_moe = config.is_moe();
  for (int64_t i = 0; every_layer_moe && i < config.num_layers; ++i) every_layer_moe = config.is_moe_layer(i);
  const bool hf_moe = every_layer_moe && config.model_implementation == ModelImplementation::hf_transformers &&
                      config.moe_shared_expert_intermediate_size == 0 && config.moe_latent_size == 0 &&
                      config.expert_model_parallel_size == 1 && config.expert_tensor_parallel_size == 1 &&
                      config.moe_expert_capacity_factor <= 0;
  if (!walked_llama_layer(config) || (config.is_moe() && !hf_moe) || config.vocab_size <= 0 ||
      !(config.recompute_granularity == RecomputeGranularity::none || every_layer_checkpointed(config)) ||
      !(config.framework == Framework::ddp || fsdp1_kept_inputs(config)))
    return out;
  const Shape x = shape_of(config);
  if (x.autocast) return out;
  out.modelled = true;
  out.incoming = x.e * x.h * x.tokens;
  // The layer's trainable parameters by where backward makes their gradients: under peft the
  // adapters only (r · (in + out) each; norms, router and base frozen), else every weight.
  const bool peft = config.peft_on();
  const auto adapter = [&](LoraTarget t, double in, double width) { return x.targeted(t) ? x.r * (in + width) : 0.0; };
  const double q = x.a * x.k, kv = x.g * x.k;
  const double norm = peft ? 0 : x.h;  // each RMSNorm's weight
  const double qkv_params = peft ? adapter(LoraTarget::q_proj, x.h, q) + adapter(LoraTarget::k_proj, x.h, kv) +
                                       adapter(LoraTarget::v_proj, x.h, kv)
                                 : x.h * (q + 2 * kv);
  const double o_params = peft ? adapter(LoraTarget::o_proj, q, x.h) : q * x.h;
  // An MLP of width f: gate and up (h → f), down (f → h); transformers' experts are MLPs of f_e.
  const auto mlp = [&](double f) {
    return peft ? adapter(LoraTarget::gate_proj, x.h, f) + adapter(LoraTarget::up_proj, x.h, f) +
                      adapter(LoraTarget::down_proj, f, x.h)
                : 3 * x.h * f;
  };
  const auto down = [&](double f) { return peft ? adapter(LoraTarget::down_proj, f, x.h) : f * x.h; };
  const double E = double(config.num_moe_experts), f_e = double(config.moe_ffn_hidden_size);
  const double mlp_params = hf_moe ? (peft ? 0 : x.h * E) + E * mlp(f_e) : mlp(x.f);  // MoE: the router too
  out.layer_params = norm + qkv_params + o_params + norm + mlp_params;
  out.norm_params = norm;
  out.token_ids = peft ? 0 : 8 * x.tokens;  // a frozen embedding runs no backward
  // The layer's saved tensors, listed once: each point reads which of them its nodes have freed;
  // the model's cos/sin, positions and mask go with the first layer's rotary and attention nodes.
  SavedTensors saved;
  no_recompute_layer_detail(config, &saved, hf_moe);
  // transformers' only (as eager_embedding counts them): torchtune's rope cache is a module
  // buffer, not among the saved tensors, so nothing of it is freed (the allocation timeline
  // oracle's seed 5 c15, torchtune bf16: its cos/sin-sized 17,152 B were taken out of the first
  // layer's input norm point, which read that much under).
  Ledger model(nullptr);
  if (eager_kind(config) == Eager::hf) hf_model_tensors(config, x, model);
  if (hf_moe) {
    moe_backward_points(config, x, saved, mlp(f_e), down(f_e), out);
  } else {
    // What down_proj's nodes free once they have run: the product it saved (a frozen base saves
    // it only for an adapter that reads it as it is: Shape::keeps_input) and its adapter's own
    // saved tensors (dropout mask, copy, r-wide intermediate). Under bitsandbytes < 0.43.2
    // (Shape::bnb_input) the product, or its compute-dtype cast, is MatMul4Bit's A on ctx.tensors,
    // which the engine does not release: it stays until the graph is dropped (the allocation
    // timeline oracle, seed 5 q00: 22,528 B over at down_proj's MatMul4BitBackward otherwise).
    const AdapterNames& d = k_adapter_names[size_t(LoraTarget::down_proj)];
    const double product = freed_bytes(saved, [&](std::string_view n) {
      return (n == k_mlp_names.fc2_input && !x.bnb_input) || n == d.input || n == d.mask || n == d.intermediate;
    });
    // The product's gradient and its factors': in the MLP's dtype (fp32 after QLoRA's fp32 norms:
    // the allocation timeline oracle's trl draw, seed 21 q02, three 4·T·f at MulBackward0).
    out.swiglu = {3 * x.ffn_e * x.f * x.tokens, product, down(x.f)};
    // down_proj's adapter with dropout (PEFT lora.Linear: lora_B(lora_A(dropout(x)))): lora_A's
    // MmBackward0 writes the dropped copy's gradient and frees the copy it saved; then
    // NativeDropoutBackward0 (grad · mask · scale) writes two more such tensors beside it, the bool
    // mask still saved: the SwiGLU point's three f-wide tensors with the mask not yet freed (the
    // allocation timeline oracle's seed 7 c19: −64,680 B, the mask, under before). Not under QLoRA's
    // casts (kbit_fp32) nor where the copy is a cast.
    if (x.targeted(LoraTarget::down_proj) && x.lora_dropout && !x.kbit_fp32 && config.peft == Peft::lora) {
      const double mask = freed_bytes(saved, [&](std::string_view n) { return n == d.mask; });
      if (mask > 0) out.down_lora_dropout = {3 * x.e * x.f * x.tokens, product - mask, down(x.f)};
    }
    // Full training: up_proj's MmBackward0 writes its weight's gradient and its input's (e·T·h,
    // waiting in the norm output's buffer) and frees up's output gradient; SiluBackward0 writes
    // the gate's gradient (e·T·f) and frees SiLU's; gate_proj's MmBackward0 then writes its
    // weight's and its input's gradients beside them: e·T·f + 2·e·T·h, with every weight gradient
    // of the MLP made and the product, SiLU's output, up's output and the gate (saved by SiLU)
    // freed, the MLP's input still saved until the node returns. Where the weight gradients
    // outgrow the two f-wide gradients the SwiGLU point holds (few tokens), the layer's largest
    // (the allocation timeline oracle's full-training GQA draws: seed 7 c01 and c04, seed 5 c05,
    // seed 13 c17 and seed 21 c17 at aten::mm in MmBackward0).
    if (!peft) {
      const double after_silu = freed_bytes(saved, [&](std::string_view n) {
        return n == k_mlp_names.act_output || n == "mlp.up_output" || n == k_mlp_names.fc1_output;
      });
      out.gate_mm = {x.ffn_e * x.f * x.tokens + 2 * x.e * x.h * x.tokens, product + after_silu, mlp(x.f)};
    }
    if (bnb_linear4bit_backward_walked(config, x)) {
      const auto adapter_names = [](LoraTarget t) {
        const AdapterNames& a = k_adapter_names[size_t(t)];
        return std::array<std::string_view, 3>{a.input, a.mask, a.intermediate};
      };
      const auto names = adapter_names(LoraTarget::up_proj);
      const double up_freed = freed_bytes(saved, [&](std::string_view n) {
        return n == k_mlp_names.act_output || n == "mlp.up_output" || n == names[0] || n == names[1] || n == names[2];
      });
      linear4bit_backward_points(config, x, product, up_freed, down(x.f), adapter(LoraTarget::up_proj, x.h, x.f), out);
      if (every_layer_checkpointed(config)) {
        // The recomputation reaches up_proj's MatMul4Bit forward: the gate, SiLU's output and the
        // norm's are made, up's output, the product and up's and down's adapters' tensors not yet.
        const auto down_names = adapter_names(LoraTarget::down_proj);
        const double not_yet = freed_bytes(saved, [&](std::string_view n) {
          return n == "mlp.up_output" || n == k_mlp_names.fc2_input || n == names[0] || n == names[1] ||
                 n == names[2] || n == down_names[0] || n == down_names[1] || n == down_names[2];
        });
        linear4bit_recompute_point(config, x, not_yet, out);
      }
    }
  }
  out.softmax = eager_softmax_point(config, x, saved, o_params + mlp_params + norm);
  // Attention dropout's backward, before the softmax's: BmmBackward0 has written the values'
  // gradient and the dropped probabilities' and freed the dropped probabilities and the values it
  // saved; NativeDropoutBackward0 (native_dropout_backward: grad · mask · scale) writes two
  // score-sized tensors in the probabilities' dtype (the compute dtype: transformers casts the
  // fp32 softmax to the query's dtype first, SDPA's math path stays in it) beside the incoming
  // one, the bool mask still saved. Larger than the softmax's point in fp32 and on SDPA's math
  // path (the allocation timeline oracle: seed 1 c21 and c20, seed 21 c21, at aten::mul in
  // NativeDropoutBackward0).
  if (out.softmax.extra > 0 && x.attention_dropout) {
    const double scores = x.a * x.tokens * x.s;
    const double mask = freed_bytes(saved, [](std::string_view n) { return n == "attention.softmax_dropout_mask"; });
    out.attention_dropout = {x.e * x.a * x.k * x.tokens + 3 * x.e * scores, out.softmax.freed - mask,
                             out.softmax.made_params};
  }
  out.qkv = qkv_point(x, saved, model.total(), out.layer_params - norm);  // the input norm's is made after
  // The adapters' autocast casts (DecoderBackward::adapter_cast_bytes): bitsandbytes QLoRA's fp32
  // adapters under the trainer's bf16 autocast (PEFT lora.bnb.Linear4bit: no cast of its own under
  // autocast), each lora_A and lora_B weight cast once per outermost autocast region
  // (autocast_mode.cpp cached_cast: a leaf that requires grad is cached; the cache is cleared when
  // the region exits, at the forward's end). mm saves the cast weight for its input's gradient
  // only, so lora_A's cast is kept only where lora_A's input needs a gradient: in the first layer
  // under QLoRA's non-reentrant checkpoint, or without checkpointing, the layer's input needs none
  // (layer_input_needs_grad), and an adapter's input needs one only once an earlier trainable
  // adapter made the stream need it (q, k, v before o; the attention before the MLP).
  // Taken out in the dense layers whose Linear4bit backward is walked (nf4_walked) and in
  // transformers' MoE block, whose recomputation point counts the loop's tensors now (the
  // allocation timeline oracle's q03 draws: seed 7 +14,720 -> +6,528 B, seed 1 +34,208 ->
  // +10,144 B; the q01 rows 0.2 pp nearer). Not with bitsandbytes < 0.43.2's kept A under the
  // non-reentrant checkpoint, where the MoE recomputation still misses tensors of its own (seed
  // 21 q03 reads 18,912 B under with the casts out; 31,738 B before its loop was walked): the
  // casts stay counted there.
  // Under ddp only, where the state counts the casts (trainmem_profile.cpp k_ddp_copies,
  // weight_copies); FSDP's mixed precision makes its own copies of the units.
  const bool moe_casts_walked =
      hf_moe && !(x.bnb_input && every_layer_checkpointed(config) && !config.checkpoint_reentrant);
  if ((out.nf4_walked || moe_casts_walked) && config.framework == Framework::ddp &&
      bytes_per_element(lora_adapter_dtype(config)) > x.e) {
    out.adapter_cast_bytes = x.e;
    out.casts_recomputed = every_layer_checkpointed(config);
    if (!layer_input_needs_grad(config, true)) {
      const auto lora_a = [&](LoraTarget t, double in) { return x.targeted(t) ? x.r * in : 0.0; };
      const bool attention_rg = x.targeted(LoraTarget::q_proj) || x.targeted(LoraTarget::k_proj) ||
                                x.targeted(LoraTarget::v_proj);
      const bool mlp_rg = attention_rg || x.targeted(LoraTarget::o_proj);
      const bool product_rg = mlp_rg || x.targeted(LoraTarget::gate_proj) || x.targeted(LoraTarget::up_proj);
      double unsaved = lora_a(LoraTarget::q_proj, x.h) + lora_a(LoraTarget::k_proj, x.h) + lora_a(LoraTarget::v_proj, x.h);
      if (!attention_rg) unsaved += lora_a(LoraTarget::o_proj, x.a * x.k);
      if (!mlp_rg) unsaved += lora_a(LoraTarget::gate_proj, x.h) + lora_a(LoraTarget::up_proj, x.h);
      if (!product_rg) unsaved += lora_a(LoraTarget::down_proj, x.f);
      out.unsaved_casts = x.e * unsaved;
    }
  }
  // q_proj is a Linear4bit: its MatMul4BitBackward dequantises the weight before grad_A (the
  // absmax restored first and freed before the matmul).
  if (out.nf4_walked) {
    const double elements = x.h * x.a * x.k;
    out.qkv.extra += elements * x.e + std::max(nf4_absmax_bytes(config, elements) - x.e * x.tokens * x.h, 0.0);
  }
  norm_points(config, x, saved, model.total(), mlp_params + norm, out.layer_params, out);
  if (every_layer_checkpointed(config))
    out.recompute_forward = hf_moe ? moe_recompute_forward_point(config, x, saved) : recompute_forward_point(config, x);
  if (config.checkpoint_reentrant && every_layer_checkpointed(config)) reentrant_extras(config, x, model.total(), out);
  return out;
}

// The output layer's LoRA forward (an adapter on lm_head: PEFT's lora.Linear, torchtune's
// LoRALinear; the whole logits, an eager loss, the base unquantised). Before the loss exists the
// adapter's sum holds the base logits, lora_B's output and its scaled copy (the mul; then the
// base, the scaled copy and the sum), 3·e·T·V, beside the saved tensors but the loss's, and the
// final norm's output, held by the caller's frame, where nothing saves it (the adapter drops or
// casts its own copy; a frozen base keeps nothing). The allocation timeline oracle's torchtune
// draw with an adapter on the output (seed 21 c14) peaks there: the bytes beyond the saved
// tensors but the loss's; 0 where not walked.
double output_lora_forward_bytes(const Config& config) {
  if (!walked_model_code(config) || config.vocab_size <= 0 || config.peft != Peft::lora || config.cross_entropy_chunks > 1 ||
      config.cross_entropy_loss_fusion || config.fused_linear_cross_entropy || config.cut_cross_entropy ||
      config.tensor_model_parallel_size > 1 || config.context_parallel_size > 1 || config.torch_compile ||
      config.saves(SavedModule::lm_head))
    return 0;
  const Shape x = shape_of(config);
  if (!x.targeted(LoraTarget::lm_head) || x.autocast) return 0;
  const double norm_output = x.keeps_input({LoraTarget::lm_head}) ? 0 : x.norm_e * x.h * x.tokens;
  return norm_output + 3 * x.e * x.logits;
}

// The transient of dequantising the largest NF4 linear (`elements`): QLoRA dequantises one NF4
// weight at a time to the compute dtype, in forward and again in backward (bitsandbytes
// autograd/_functions.py MatMul4Bit, 012c6606 and every release 0.41.0 … 0.48.0 (406fb6aa):
// F.dequantize_4bit(B, quant_state).to(A.dtype) in forward, .to(grad_output.dtype) in backward;
// torchtune linear_nf4 likewise). The dequantised tensor has quant_state.dtype, the weight's
// dtype when it was quantised, which is the compute dtype here (unquantized_dtype), so .to()
// makes no second copy. With double quantisation dequantize_4bit first restores the absmax as a
// new fp32 tensor, one per block of 64 (functional.py @ 0.48.0: dequantize_blockwise(absmax,
// state2), then `absmax += offset`); without it the stored fp32 absmax is read as it is.
double nf4_dequant_bytes(const Config& c, double elements) {
  if (elements <= 0) return 0;
  const double absmax = c.nf4_double_quant ? 4 * std::ceil(elements / 64) : 0;
  return elements * bytes_per_element(c.compute_dtype) + absmax;
}

// What transformers' frames hold in the last decoder layer's forward (no checkpointing) where
// nothing saves it, beside the QLoRA layer-forward candidate (trainmem_profile.cpp
// layer_forward_dequant): LlamaModel.forward keeps `inputs_embeds`, the embedding output, bound
// until it returns (modeling_llama.py: `hidden_states = inputs_embeds` before the layers' loop),
// and the decoder layer's frame the attention's residual sum (`residual`) until the MLP's residual
// add. The first layer's RMSNorm saves the embedding output as it is only when it is fp32 and the
// layer's input needs a gradient (else its fp32 upcast, or nothing); the post-attention norm saves
// the sum as it is only in an fp32 stream (QLoRA's fp32 norms). The allocation timeline oracle's
// QLoRA draw seed 13 q00 (bf16, kbit_upcast none) holds both at down_proj's MatMul4Bit in the
// last layer (12,288 B each); without them the candidate read 10,752 B under (with them 13,824 B
// over: the bound's output as wide as f and the restored absmax, where down_proj writes h wide
// after the absmax is freed).
double qlora_forward_frame_bytes(const Config& config) {
  if (config.model_implementation != ModelImplementation::hf_transformers || config.num_layers <= 0 ||
      config.recompute_granularity != RecomputeGranularity::none || config.vocab_size <= 0)
    return 0;
  const Shape x = shape_of(config);
  const double embedding_e = embedding_output_e(config, x);
  const bool embedding_saved = embedding_e == 4 && layer_input_needs_grad(config, true);
  const double embedding = embedding_saved ? 0 : embedding_e * x.h * x.tokens;
  // A 16-bit stream: the norm saves its fp32 upcast, the 16-bit sum is the frame's alone.
  const bool fp32_stream = x.e == 4 || x.norm_e == 4;
  const double residual = fp32_stream ? 0 : x.e * x.h * x.tokens;
  return embedding + residual;
}

// The last checkpointed decoder layer's own forward (every layer checkpointed; the eager
// transformers and torchtune Llama layers as decoder_backward_bytes walks them). Inside a
// checkpoint nothing is saved: torch 1.13's _checkpoint_without_reentrant packs every saved tensor
// into an empty holder (current PyTorch's _checkpoint_without_reentrant_generator alike) and the
// reentrant CheckpointFunction.forward runs the layer under no_grad, so what exists while the
// layer runs is what its Python frames hold: the locals of LlamaDecoderLayer.forward,
// LlamaAttention.forward, eager_attention_forward and LlamaMLP.forward (transformers
// modeling_llama.py), of torchtune's TransformerSelfAttentionLayer, MultiHeadAttention and
// FeedForward (scaled_dot_product_attention's math path unfused), of PEFT's lora.Linear and
// lora.bnb.Linear4bit and torchtune's LoRALinear. Every earlier layer's checkpoint (and the last
// layer's input, the model's mask, positions and cos/sin) is there beside it. The bytes returned
// are the largest of these points beyond those checkpoints (activations.hpp); 0 when not walked.
//  - the softmax (attention_backend unfused; not under fp32 norms, whose casts are not walked):
//    the input norm's output, q and k after RoPE, v, transformers' repeat_kv copies beside the
//    unrepeated k and v (with groups) or torchtune's expanded k and v (which replace them), the
//    scaled q and the e·s² additive mask of the math path; then the masked scores and the
//    probabilities: transformers' softmax(dtype=float32) upcasts 16-bit scores (their fp32 copy
//    beside the fp32 output: 2 + 4 + 4 bytes per score; 4 + 4 in fp32), the math path's softmax
//    stays in the compute dtype (2·e); attention dropout's mask and output beside the
//    probabilities (fp32 transformers: 4 + 1 + 4).
//  - transformers' o_proj: eager_attention_forward's probabilities are returned to
//    LlamaAttention.forward's `_`, alive with q, k and v until it returns, beside the attention
//    output and o_proj's result (with an adapter the base result, lora_B's and the sum: 3·e·T·h).
//  - the MLP, beside the attention's residual sum and the post-attention norm's output (the MLP's
//    argument, held by its frame): SiLU's output beside up_proj's result, then the product
//    (3·e_f·T·f, e_f fp32 under QLoRA's fp32 norms); an adapter on up_proj: the base result
//    (PEFT's bitsandbytes layer: its clone), lora_B's output scaled (in the compute dtype under
//    autocast) and the sum, beside SiLU's output; down_proj: the product beside its result, or
//    with an adapter the base result, the scaled lora_B output and the sum. bitsandbytes < 0.43.2
//    under the non-reentrant checkpoint
//    keeps down_proj's A (its input cast, or the product itself) beside the checkpoint from
//    down_proj on: counted among the checkpoints already, so it is taken out of the points
//    before down_proj, and the product is not counted twice where A is the product itself.
//  - bitsandbytes' NF4 MLP linears (MatMul4Bit.forward): the input's compute-dtype copy (fp32
//    norms), the weight dequantised whole (nf4_dequant_bytes) and the matmul's output, then
//    Linear4bit's .to(fp32) beside that output, with SiLU's output at up_proj and the product at
//    down_proj.
// Not walked: the MoE block's loop under fp32 norms or with adapters on the experts, the norms' fp32 temporaries
// (below the MLP's while f >= h), the attention's NF4 linears (h·(a + 2g)·k and a·k·h elements,
// below the MLP's h·f; trainmem_profile.cpp's QLoRA layer-forward candidate bounds the largest),
// the adapters' autocast casts of their weights.
double checkpointed_layer_forward_bytes(const Config& config) {
  if (!walked_llama_layer(config) || config.recompute_granularity != RecomputeGranularity::full ||
      !every_layer_checkpointed(config) || config.framework != Framework::ddp || config.params_dtype == Dtype::int8)
    return 0;
  const Shape x = shape_of(config);
  if (x.autocast) return 0;
  const bool hf = eager_kind(config) == Eager::hf;
  // bitsandbytes' NF4 linears (transformers' Linear4bit; not torchao's linear_nf4).
  const bool nf4 = hf && config.peft == Peft::qlora && config.params_dtype == Dtype::nf4;
  const double T = x.tokens, e = x.e;
  const double stream = x.norm_e * x.h * T;  // the residual stream and the norms' outputs
  const double q = e * T * x.a * x.k, kv = e * T * x.g * x.k;
  const double scores = x.a * T * x.s;
  // bitsandbytes < 0.43.2 under the non-reentrant checkpoint: the last layer's kept A (counted
  // among the checkpoints) exist only from their linear on. q/k/v's (the input norm's output, or
  // each one's copy of it in fp32) are there at the attention's points, the rest are not.
  const bool bnb_kept = x.bnb_input && !config.checkpoint_reentrant;
  const double kept_layer =
      bnb_kept ? layer_activation_bytes(config, config.is_moe(), LayerRecompute::checkpointed, nullptr, false) -
                     checkpoint_input_bytes(config, x)
               : 0;
  const double kept_qkv = bnb_kept ? (x.kbit_fp32 ? 3 : 1) * e * T * x.h : 0;
  double best = 0;
  if (config.attention_backend == AttentionBackend::unfused && !config.attention_sinks && x.a > 0 && !x.kbit_fp32) {
    const bool grouped = x.g < x.a;
    double projections = 0, per_score = 0;
    if (hf) {
      projections = q + 2 * kv + (grouped ? 2 * q : 0);
      per_score = e + (e == 4 ? 4 : 8);
      if (x.attention_dropout) per_score = std::max(per_score, (e == 4 ? 4 : 2 * e) + 1 + e);
    } else {
      projections = q + (grouped ? 2 * q : 2 * kv) + q;  // + the scaled q
      per_score = 2 * e + (x.attention_dropout ? 1 : 0);
    }
    const double mask = hf ? 0 : e * x.s * x.s;
    // Under bitsandbytes' kept A, the input norm's output is q/k/v's A, counted already.
    const double later_kept = kept_layer - kept_qkv, norm_output = bnb_kept ? 0 : stream;
    best = std::max(best, norm_output + projections + mask + per_score * scores - later_kept);
    if (hf) {
      const double probabilities = (e == 4 ? 4 : e) * scores;
      const double o_proj = x.targeted(LoraTarget::o_proj) ? 3 * e * T * x.h : e * T * x.h;
      best = std::max(best, norm_output + q + 2 * kv + probabilities + q + o_proj - later_kept);
    }
  }
  // transformers' MoE block (MixtralSparseMoeBlock.forward; Qwen2/Qwen3-MoE run the same loop),
  // where no expert linear has an adapter and the stream is in the compute dtype (fp32 norms' casts
  // are not walked, as above). Beside the residual sum and the post-attention norm's output (the
  // block's `hidden_states`) the block's frame holds router_logits (e·T·E), selected_experts
  // (topk's int64 indices, 8·T·K), routing_weights cast to the stream's dtype (e·T·K: the fp32
  // topk values are unbound by the cast), final_hidden_states (the index_add_ target) and the
  // one_hot expert_mask (int64, 8·T·K·E; permute is a view). In the loop, at every expert after
  // the first, the previous expert's weighted output stays bound to current_hidden_states until
  // the new one is assigned: beside the expert's torch.where indices (nonzero's int64 [n, 2], idx
  // and top_x its views), its rows (current_state, e·n·h, n = T·K/E) and the expert's own points:
  // w1's output (or bitsandbytes' MatMul4Bit: the weight dequantised whole, then the restored
  // absmax freed before F.linear writes its output, so weight + the larger of the two); SiLU's
  // output beside w3's; the product beside both; the product beside w2's; w2's output, the
  // routing weights' row (e·n) and the new weighted output. Inside the checkpoint nothing saves
  // w1's output, so it goes once SiLU has read it. Every expert gets n rows (balanced routing), so
  // the last expert's points are the largest. bitsandbytes < 0.43.2 keeps each expert's rows and
  // product as A, counted among the checkpoints already: not counted again, and the last
  // expert's product taken out of the points before it is made. The allocation timeline oracle's
  // seed 1 q03 (nf4 experts, bf16) peaks at the last expert's w3 MatMul4Bit: 34,752 B under before.
  if (config.is_moe() && hf && !x.kbit_fp32 &&
      !(x.targeted(LoraTarget::gate_proj) || x.targeted(LoraTarget::up_proj) || x.targeted(LoraTarget::down_proj))) {
    const double E = double(config.num_moe_experts), K = double(config.moe_router_topk);
    const double n = expert_tokens(config, x) / E, ef = double(config.moe_ffn_hidden_size);
    const bool nf4_experts = nf4 && config.expert_params_dtype == Dtype::nf4;
    const bool experts_kept = bnb_kept && nf4_experts;
    const double residual_sum = (config.num_layers == 1 ? embedding_output_e(config, x) : x.norm_e) * x.h * T;
    const double block = e * T * E + 8 * T * K + e * T * K + moe_block_bytes(x) * T * x.h + 8 * T * K * E;
    const double rows = experts_kept ? 0 : e * n * x.h;
    const double loop = residual_sum + stream + block + e * n * x.h + 16 * n + rows;
    const double weight = nf4_experts ? e * x.h * ef : 0;
    const double absmax = nf4_experts ? nf4_absmax_bytes(config, x.h * ef) : 0;
    const auto linear = [&](double width) { return weight + std::max(absmax, e * n * width); };
    const double wide = e * n * ef, product_not_yet = experts_kept ? wide : 0;
    const double product = experts_kept ? 0 : wide;
    best = std::max(best, loop + linear(ef) - product_not_yet);                   // w1
    best = std::max(best, loop + wide + linear(ef) - product_not_yet);            // w3, SiLU's output beside
    best = std::max(best, loop + 2 * wide + product);                             // the product
    best = std::max(best, loop + product + linear(x.h));                          // w2
    best = std::max(best, loop + 2 * e * n * x.h + e * n);                         // the weighted output
  }
  if (!config.is_moe()) {
    const double fe = x.ffn_e, wide = fe * T * x.f;
    // down_proj's A: its own copy of the product in fp32, else the product itself; gate's and
    // up's, in 16 bits, the post-attention norm's output itself.
    const double down_kept = bnb_kept ? e * T * x.f : 0;
    const double norm_kept = bnb_kept && !x.kbit_fp32 ? e * T * x.h : 0;
    // An adapter's sum on a linear whose result is `out_e` bytes per element, `width` wide: the
    // base result (or its clone), lora_B's scaled output and the sum. An fp32 result plus a bf16
    // adapter output is cast as the CUDA kernel reads it (TensorIterator's dynamic casting; its
    // CPU path copies the bf16 operand first, which the allocation timeline oracle takes out).
    const auto adapter_sum = [&](double width, double out_e) { return T * width * (2 * out_e + e); };
    // The residual sum and the post-attention norm's output. The sum is the embedding's dtype in
    // a one-layer model (its input, plus o_proj's compute-dtype output under fp32 norms).
    const double residual_sum = (config.num_layers == 1 ? embedding_output_e(config, x) : x.norm_e) * x.h * T;
    const double base = residual_sum + stream - norm_kept;
    const double up = x.targeted(LoraTarget::up_proj) ? adapter_sum(x.f, fe) : wide;
    best = std::max(best, base + wide + up - down_kept);     // SiLU's output beside up_proj's
    best = std::max(best, base + 3 * wide - down_kept);      // the product
    const double product = bnb_kept && !x.kbit_fp32 ? 0 : wide;
    const double down = x.targeted(LoraTarget::down_proj) ? adapter_sum(x.h, x.norm_e) : x.norm_e * T * x.h;
    best = std::max(best, base + product + down);
    if (nf4) {
      // Each NF4 linear inside MatMul4Bit.forward: its input's compute-dtype copy (an fp32
      // input's; it is A, counted among the checkpoints, under bnb_kept), the weight dequantised
      // whole and the matmul's output in the compute dtype; then Linear4bit's .to(fp32) beside that
      // output under fp32 norms.
      const double dequantised = nf4_dequant_bytes(config, x.h * x.f);
      const auto input_copy = [&](double width) { return x.kbit_fp32 && !bnb_kept ? e * T * width : 0.0; };
      const auto upcast = [&](double width) { return x.kbit_fp32 ? 4 * T * width : 0.0; };
      best = std::max(best, base + input_copy(x.h) + dequantised + e * T * x.f - down_kept);          // gate
      best = std::max(best, base + e * T * x.f + upcast(x.f) - down_kept);
      best = std::max(best, base + wide + input_copy(x.h) + dequantised + e * T * x.f - down_kept);   // up
      best = std::max(best, base + wide + e * T * x.f + upcast(x.f) - down_kept);
      best = std::max(best, base + product + input_copy(x.f) + dequantised + e * T * x.h);             // down
      best = std::max(best, base + product + e * T * x.h + upcast(x.h));
    }
  }
  return best;
}

// ------------------------------------------- torchtune's recipes and compile_loss's result ----
// Whether a torchtune recipe run with compile=True computes its loss with the compiled module.
// training.compile_loss compiles a CEWithChunkedOutputLoss in place (it sets the instance's
// compute_cross_entropy to the compiled function) but any other loss, torch.nn.CrossEntropyLoss
// among them, as a new module, `loss = torch.compile(loss, backend=backend)`, which it returns
// (pytorch/torchtune torchtune/training/_compile.py compile_loss @
// 1814feb17a9038e1a8053ce93111bd26774a8db6; the same at 9c06c8bda3, 2025-04-30, for a loss
// without apply_compile_strategy). lora_finetune_single_device keeps that module
// (`self._loss_fn = training.compile_loss(self._loss_fn)`); full_finetune_single_device,
// full_finetune_distributed and lora_finetune_distributed call `training.compile_loss(self._loss_fn)`
// and drop what it returns (recipes/*.py @ 1814feb17, from c169bcddd, 2024-09-07, "compile utils
// and version-gating", to the recipes' last versions @ dc0441a09, 2025-08-08), so there an
// unchunked loss runs eager: F.cross_entropy keeps the fp32 log-probabilities and its backward
// writes two fp32 logits-sized gradients, as without compile. Here torchtune's single-device
// LoRA/QLoRA recipe is framework ddp with peft; full fine-tuning (peft none) and framework fsdp2
// are the recipes that drop it. Only an unchunked loss is concerned; true for every other
// implementation (their own rules in compiled_loss).
bool torchtune_recipe_uses_compiled_loss(const Config& config) {
  if (config.model_implementation != ModelImplementation::torchtune || !config.torch_compile) return true;
  if (config.cross_entropy_chunks > 1) return true;
  return config.peft_on() && config.framework == Framework::ddp;
}

}  // namespace trainmem
