// Storage formats and optimizer states, one row each with its source.
#include "trainmem/tables.hpp"

#include <array>
#include <cmath>

namespace trainmem {
namespace {

constexpr std::array<DtypeInfo, size_t(Dtype::count)> k_dtypes = {{
    {Dtype::fp32, 1, 4, "IEEE 754 binary32"},
    {Dtype::bf16, 1, 2, "bfloat16: 8 exponent, 7 mantissa bits"},
    {Dtype::fp16, 1, 2, "IEEE 754 binary16"},
    // Per-tensor scaled FP8 (E4M3/E5M2): the scale is one fp32 per tensor, negligible.
    {Dtype::fp8, 1, 1, "OCP FP8 E4M3/E5M2 (Micikevicius et al. 2022), per-tensor scale"},
    // OCP Microscaling v1.0: 32 elements share one 8-bit E8M0 scale.
    {Dtype::mxfp8, 32, 33, "OCP Microscaling Formats (MX) v1.0: 32 × 1 B + 1 B E8M0 scale"},
    {Dtype::mxfp4, 32, 17, "OCP Microscaling Formats (MX) v1.0: 32 × 4 bit + 1 B E8M0 scale"},
    // bitsandbytes block-wise 8-bit optimizer states: one uint8 per element and one fp32 absmax per
    // block of 256 (optim/optimizer.py @ 51294d909e914f80d2f2c85f9e9229dd4386ef85,
    // Optimizer2State/Optimizer1State.init_state: blocks = n // 256, a partial block counted
    // whole). The paper's block was 2,048 (Dettmers et al. 2022), bitsandbytes' until PR #1365
    // (merged 2024-09-20, release 0.44.0); torchao's low-bit optimizers followed (pytorch/ao #927).
    {Dtype::int8, 256, 256 + 4, "bitsandbytes >= 0.44 block-wise 8-bit optimizer states (block 256, fp32 absmax; Dettmers et al. 2022 used 2048)"},
    // bitsandbytes functional.quantize_4bit (01327aa0119fa503ea16322dd72f69f202e4502e) with
    // compress_statistics (QLoRA's double quantisation): two 4-bit values per byte ((n + 1) // 2
    // uint8), one absmax per block of 64 quantised again by quantize_blockwise(absmax,
    // blocksize=256) to one uint8 each plus one fp32 absmax per 256 of them. 64 · 256 = 16,384
    // elements take 8,192 + 256 + 4 = 8,452 bytes: 0.515869140625 B per element (tensor_bytes
    // counts a tensor's partial blocks whole). Per tensor a 16-entry fp32 NF4 code table and an
    // fp32 offset (68 B) are left out. torchao's NF4Tensor (block_size 64, scaler_block_size 256;
    // torchao/dtypes/nf4tensor.py @ 0598012907d6f6e88734088a65f788c38d294a65) asserts a multiple
    // of 16,384 elements and keeps its per-256-blocks factor in the weight's dtype: 2 B less per
    // 16,384 in bf16, which is not modelled.
    {Dtype::nf4, 64 * 256, 64 * 256 / 2 + 256 + 4,
     "bitsandbytes quantize_4bit (blocksize 64, compress_statistics: absmax in uint8 with an fp32 "
     "absmax per 256 blocks)"},
}};

constexpr StateRule k_end = StateRule::count;
constexpr std::array<OptimizerInfo, size_t(Optimizer::count)> k_optimizers = {{
    {Optimizer::adam, {StateRule::exp_avg, StateRule::exp_avg_sq, k_end},
     "Kingma & Ba 2015; torch.optim.Adam keeps exp_avg and exp_avg_sq per parameter"},
    {Optimizer::adamw, {StateRule::exp_avg, StateRule::exp_avg_sq, k_end},
     "Loshchilov & Hutter 2019; torch.optim.AdamW keeps exp_avg and exp_avg_sq per parameter"},
    {Optimizer::sgd, {StateRule::momentum, k_end, k_end},
     "torch.optim.SGD: a momentum_buffer per parameter only when momentum > 0"},
    {Optimizer::adafactor, {StateRule::factored, k_end, k_end},
     "Shazeer & Stern 2018: factored second moment (row and column sums) for matrices, no first "
     "moment (beta1 = None, the default)"},
    {Optimizer::adam8bit, {StateRule::quantized, StateRule::quantized, k_end},
     "Dettmers et al. 2022 (bitsandbytes Adam8bit): both states in block-wise int8; tensors "
     "under 4096 elements keep fp32 states (min_8bit_size)"},
    {Optimizer::lion, {StateRule::exp_avg, k_end, k_end},
     "Chen et al. 2023 (Lion): one momentum state per parameter"},
    {Optimizer::muon, {StateRule::muon_momentum, StateRule::muon_adam_exp_avg, StateRule::muon_adam_exp_avg_sq},
     "Jordan et al. 2024 (Muon), Liu et al. 2025 (Moonlight): momentum for hidden 2-D matrices; "
     "AdamW for embeddings, the output layer and vectors"},
}};

constexpr std::array<Fp8RecipeInfo, size_t(Fp8Recipe::count)> k_fp8_recipes = {{
    {Fp8Recipe::none, 0, 0, "no FP8"},
    {Fp8Recipe::delayed, 1, 2,
     "Transformer Engine DelayedScaling: FP8 weight cast cached across microbatches, rowwise and "
     "transposed (per-tensor scale)"},
    {Fp8Recipe::tensorwise, 1, 2,
     "Transformer Engine Float8CurrentScaling: per-tensor scaled FP8 weight and its transpose"},
    // 128×128 weight blocks with one fp32 scale each (DeepSeek-V3 §3.3.2).
    {Fp8Recipe::blockwise, 1 + 4.0 / (128 * 128), 2,
     "Transformer Engine Float8BlockScaling / DeepSeek-V3 §3.3.2: 128×128 blocks, fp32 scale per block"},
    {Fp8Recipe::mxfp8, 33.0 / 32, 2,
     "Transformer Engine MXFP8BlockScaling: rowwise and columnwise MXFP8 copies (OCP MX v1.0)"},
}};

}  // namespace

std::span<const Fp8RecipeInfo> fp8_recipe_table() { return k_fp8_recipes; }
const Fp8RecipeInfo& fp8_recipe_info(Fp8Recipe recipe) { return k_fp8_recipes[size_t(recipe)]; }

std::span<const DtypeInfo> dtype_table() { return k_dtypes; }
double bytes_per_element(Dtype dtype) { return k_dtypes[size_t(dtype)].bytes_per_element(); }
double tensor_bytes(Dtype dtype, double elements, bool nf4_double_quant) {
  if (dtype != Dtype::nf4) return elements * bytes_per_element(dtype);
  // bitsandbytes functional.py @ 01327aa0119fa503ea16322dd72f69f202e4502e (the same at release
  // 0.48.0, 406fb6aa): quantize_4bit makes `out` of (n + 1) // 2 uint8 and its absmax.
  return std::ceil(elements / 2) + nf4_quant_state_bytes(elements, nf4_double_quant);
}
double nf4_quant_state_bytes(double elements, bool double_quant) {
  // quantize_4bit's absmax: one fp32 per ceil(n / 64) blocks. With compress_statistics it is
  // quantised by quantize_blockwise(absmax - offset, blocksize=256): one uint8 per block
  // (zeros_like(A, dtype=torch.uint8)) and an fp32 absmax per ceil(blocks / 256); without it
  // the fp32 absmax stays (bitsandbytes 0.48.0 406fb6aa, functional.quantize_4bit).
  const double blocks = std::ceil(elements / 64);
  if (!double_quant) return 4 * blocks;
  return blocks + 4 * std::ceil(blocks / 256);
}
Dtype lora_adapter_dtype(const Config& c) {
  // peft/tuners/tuners_utils.py (831fd03e) _cast_adapter_dtype: "Currently, this only upcasts
  // float16 and bfloat16 to float32" (get_peft_model's autocast_adapter_dtype defaults to True).
  // That is the Hugging Face PEFT library's; torchtune's single-device recipes (framework ddp,
  // model_implementation torchtune) build their own adapters, below, and torchtitan has none.
  const bool own_adapters = c.model_implementation == ModelImplementation::torchtune ||
                            c.model_implementation == ModelImplementation::torchtitan;
  if (c.framework == Framework::ddp && !own_adapters) return Dtype::fp32;
  // torchtune LoRALinear (031d89b8) creates lora_a/lora_b as nn.Linear under the recipe's
  // set_default_dtype; Megatron-Bridge's adapters are model parameters; DeepSpeed's engine casts
  // the module to bf16/fp16.
  return unquantized_dtype(c);
}
// modelscope/ms-swift swift/megatron/tuners/lora.py @ 710553d85464c7d2be85f35fa19d9d5476619d6f
// (and 67fcc33641fbef6937bffe47da1833205d5df685): dispatch_megatron wraps each
// TELayerNormColumnParallelLinear / TELinear / TEGroupedLinear in one LoraParallelLinear, and
// find_all_linears names Megatron's modules (linear_qkv, linear_proj, linear_fc1, linear_fc2), so
// q, k and v (gate and up) share one adapter: lora_A in → r, lora_B r → the fused output.
// A subset of the fused linear's parts names no Megatron module; it keeps PEFT's per-linear count.
bool megatron_fused_qkv_adapter(const Config& c) {
  return c.peft_on() && c.model_implementation == ModelImplementation::megatron_core &&
         c.lora_targets(LoraTarget::q_proj) && c.lora_targets(LoraTarget::k_proj) &&
         c.lora_targets(LoraTarget::v_proj);
}
bool megatron_fused_fc1_adapter(const Config& c) {
  return c.peft_on() && c.model_implementation == ModelImplementation::megatron_core && c.gated_linear_unit &&
         c.lora_targets(LoraTarget::gate_proj) && c.lora_targets(LoraTarget::up_proj);
}
Dtype unquantized_dtype(const Config& c) {
  return c.params_dtype == Dtype::nf4 ? c.compute_dtype : c.params_dtype;
}

std::span<const OptimizerInfo> optimizer_table() { return k_optimizers; }
const OptimizerInfo& optimizer_info(Optimizer optimizer) { return k_optimizers[size_t(optimizer)]; }

}  // namespace trainmem
