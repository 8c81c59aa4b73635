// Per-tensor activation accounting (trainmem profile): what the forward pass of one microbatch
// keeps alive for backward on one GPU, tensor by tensor.
//
// The layer is Megatron Core's GPT layer built from the Transformer Engine module spec
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
#include <initializer_list>
#include <iterator>

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
constexpr std::string_view k_src_permute =
    "Megatron moe_utils.permute/unpermute: index_select / index_add save the int64 sorted "
    "indices (K per token)";
constexpr std::string_view k_src_expert_input =
    "Megatron TEGroupedMLP linear_fc1 keeps the dispatched tokens: K copies per token after the "
    "EP all-to-all, gathered over ETP; capacity factor pads/drops to cf × average";
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

void adapter_entries(const Shape& x, LoraTarget t, double in_width, double in_tokens,
                     double inter_tokens, Ledger& out) {
  if (!x.targeted(t)) return;
  const AdapterNames& n = k_adapter_names[size_t(t)];
  if (x.lora_dropout) out.add(n.mask, "lora", in_width * in_tokens, "mask", k_src_lora_dropout);
  if (x.lora_dropout || x.adapter_copy)
    out.add(n.input, "lora", x.e * in_width * in_tokens, x.act_dtype, k_src_lora_copy);
  out.add(n.intermediate, "lora", x.e * x.r * inter_tokens, x.act_dtype, k_src_lora);
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
void activation_and_fc2(const Config& c, const Shape& x, const ActivationNames& n, double width,
                        double tokens, bool recomputed, bool fc2_input_needed, Ledger& out) {
  const double one = x.e * width * tokens;  // one f-wide tensor in the activation dtype
  const double fc1_width = c.gated_linear_unit ? 2 : 1;
  if (recomputed) {
    out.add(n.fc1_output, n.module, fc1_width * one, x.act_dtype, k_src_checkpoint_input);
    return;
  }
  const bool relu = c.activation_func == ActivationFunc::relu;
  const bool squared = c.activation_func == ActivationFunc::squared_relu;
  bool fc2_input_shared = false;  // fc2's input is a tensor the activation already keeps
  if (c.gated_linear_unit) {
    // The gate and the linear half are one 2f-wide fc1 output.
    out.add(n.fc1_output, n.module, 2 * one, x.act_dtype,
            relu || squared ? k_src_glu_unfused : k_src_glu);
    if (squared) out.add(n.relu_output, n.module, one, x.act_dtype, k_src_sq_relu);
    if (relu || squared) out.add(n.act_output, n.module, one, x.act_dtype, k_src_glu_unfused);
  } else if (relu) {
    // relu keeps its result, which is fc2's input: one storage in 16-bit, two under FP8.
    if (x.fp8)
      out.add(n.act_output, n.module, one, x.act_dtype, k_src_relu);
    else
      fc2_input_shared = true;
  } else if (squared) {
    out.add(n.relu_output, n.module, one, x.act_dtype, k_src_sq_relu);
  } else if (c.activation_func == ActivationFunc::identity) {
    // No activation: fc2 reads fc1's output directly, kept once as fc2's input.
  } else {
    out.add(n.fc1_output, n.module, one, x.act_dtype, k_src_act_input);
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
  adapter_entries(x, LoraTarget::o_proj, proj_width, x.tokens, x.tokens, out);
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
  for (LoraTarget t : {LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj})
    adapter_entries(x, t, x.h, x.tokens_linear_in, x.tokens_linear_in, out);
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
    for (LoraTarget t : {LoraTarget::gate_proj, LoraTarget::up_proj})
      adapter_entries(x, t, x.h, x.tokens_linear_in, x.tokens_linear_in, out);
    activation_and_fc2(c, x, k_mlp_names, x.f / x.t, x.tokens, false,
                       x.keeps_input({LoraTarget::down_proj}), out);
    // down_proj is row-parallel: its adapter's A takes the local f/t-wide input.
    adapter_entries(x, LoraTarget::down_proj, x.f / x.t, x.tokens, x.tokens, out);
  }
  output_dropout(x, "mlp.output_dropout_mask", "mlp", out);
}

// Tokens one GPU's experts process for one microbatch: its T_sp tokens, K assignments each,
// balanced over the EP ranks (each receives as many as it sends), gathered over the ETP group,
// padded or truncated to the capacity factor.
double expert_tokens(const Config& c, const Shape& x) {
  const double capacity = c.moe_expert_capacity_factor > 0 ? c.moe_expert_capacity_factor : 1.0;
  return x.tokens_sp * double(c.moe_router_topk) * double(c.expert_tensor_parallel_size) * capacity;
}

// MoE block (Megatron MoELayer with the all-to-all dispatcher and TEGroupedMLP; pre-MLP norm
// is a separate TENorm).
void moe_mlp(const Config& c, const Shape& x, const Modules& m, Ledger& out) {
  norm_entries(x, "norm.mlp_input", "norm.mlp_stats", !m.layernorm, out);
  // The norm output is the MoE input: kept by the router's gating linear and by the shared
  // experts' fc1 (one storage), or by the moe checkpoint as its input.
  // With peft the router, the experts and the shared experts are frozen (resolve() allows no
  // adapters on them): their linears keep no inputs of their own.
  if (!m.layernorm && (m.moe || !x.peft))
    out.add("moe.input", "moe", x.hidden, x.act_dtype,
            m.moe ? k_src_checkpoint_input : k_src_linear_input);
  if (!m.moe) {
    const double n_experts = double(c.num_moe_experts), topk = double(c.moe_router_topk);
    out.add("moe.router_probs", "moe", 4 * n_experts * x.tokens_sp, "fp32", k_src_router);
    out.add("moe.permutation_indices", "moe", 8 * topk * x.tokens_sp, "int64", k_src_permute);
    const double width_in = c.moe_latent_size > 0 ? double(c.moe_latent_size) : x.h;
    const double n = expert_tokens(c, x);
    if (!x.peft)
      out.add("moe.expert_input", "moe", x.lin * width_in * n, x.lin_dtype, k_src_expert_input);
    const double f_e = double(c.moe_ffn_hidden_size) / double(c.expert_tensor_parallel_size);
    activation_and_fc2(c, x, k_expert_names, f_e, n, m.moe_act, !x.peft, out);
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

// ---- torchtitan per-op selective checkpointing ----
//
// torchtitan wraps each block in a non-reentrant checkpoint whose policy MUST_SAVEs the outputs
// of aten.mm (except every second one, counted per block from the first), the SDPA kernels,
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
      const double width = c.moe_latent_size > 0 ? double(c.moe_latent_size) : x.h;
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

double policy_layer(const Config& c, bool moe_layer, SavedTensors* detail) {
  const Shape x = shape_of(c);
  Ledger out(detail);
  switch (c.recompute_granularity) {
    case RecomputeGranularity::selective:
      return megatron_layer(c, x, moe_layer, modules_of(c.recompute_modules), out);
    case RecomputeGranularity::selective_op:
      selective_op_layer(c, x, moe_layer, out);
      return out.total();
    default:
      // none, or full granularity on a layer the method leaves alone (block method beyond
      // recompute_num_layers): everything is kept.
      return megatron_layer(c, x, moe_layer, Modules{}, out);
  }
}

double no_recompute_layer(const Config& c, bool moe_layer) {
  const Shape x = shape_of(c);
  Ledger out(nullptr);
  return megatron_layer(c, x, moe_layer, Modules{}, out);
}

}  // namespace

double layer_activation_bytes(const Config& config, bool moe_layer, LayerRecompute recompute,
                              SavedTensors* detail) {
  switch (recompute) {
    case LayerRecompute::inside_group:
      return 0;
    case LayerRecompute::checkpointed: {
      const Shape x = shape_of(config);
      Ledger out(detail);
      out.add("layer.input", "layer", x.hidden, x.act_dtype, k_src_full_recompute);
      return out.total();
    }
    default:
      return policy_layer(config, moe_layer, detail);
  }
}

double layer_recompute_working_bytes(const Config& config, bool moe_layer) {
  const double everything = no_recompute_layer(config, moe_layer);
  switch (config.recompute_granularity) {
    case RecomputeGranularity::full: {
      // Backward re-runs the layer's forward with grad enabled: its whole saved set exists
      // again, beside the checkpointed input it starts from.
      const Shape x = shape_of(config);
      return std::max(0.0, everything - x.hidden);
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

double embedding_activation_bytes(const Config& config, SavedTensors* detail) {
  Ledger out(detail);
  if (config.vocab_size <= 0) return 0;
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
  out.add("output.final_norm_input", "output", x.norm_e * x.h * x.tokens_sp, x.norm_dtype,
          x.autocast ? k_src_autocast_norm : k_src_norm_input);
  out.add("output.final_norm_stats", "output", x.norm_stats * x.tokens_sp, "fp32", k_src_norm_stats);
  // DTensor tensor parallelism (fsdp2) saves the gathered input; Megatron the local shard.
  const bool gathered = config.framework == Framework::fsdp2 && config.sequence_parallel;
  const double input_tokens = gathered ? x.tokens : x.tokens_sp;
  if (x.keeps_input({LoraTarget::lm_head}))
    out.add("output.output_layer_input", "output", x.e * x.h * input_tokens, x.act_dtype,
            x.peft ? k_src_lora : gathered ? k_src_dtensor_output : k_src_output_input);
  adapter_entries(x, LoraTarget::lm_head, x.h, input_tokens, input_tokens, out);
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
  // model returns its logits in cross_entropy_chunks chunks and the loss upcasts and
  // differentiates one chunk at a time, so these temporaries are one chunk's. (Eager, each
  // chunk's F.cross_entropy still saves its fp32 log-probabilities: the saved bytes stay.)
  if (torch_loss(config)) {
    const bool loss_parallel = config.framework == Framework::fsdp2 && x.t > 1;
    return (loss_parallel ? 3 : 2) * 4 * logits / double(config.cross_entropy_chunks);
  }
  // Megatron unfused: the 16-bit logits live beside their fp32 copy until the loss's forward
  // returns, and in backward the fp32 gradient (computed in place in the saved softmax) is cast
  // back to a new 16-bit tensor for the output layer. With fp32 compute .float() is a no-op:
  // nothing extra.
  if (x.e == 4) return 0;
  return x.e * logits;
}

}  // namespace trainmem
