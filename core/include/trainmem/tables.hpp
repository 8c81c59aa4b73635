// The trainmem profile's data tables: storage formats and optimizer states. Every byte count of
// model state comes from these rows (no per-dtype or per-optimizer constants elsewhere).
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "trainmem/config.hpp"

namespace trainmem {

// A storage format: `block_bytes` bytes hold `block_elements` elements, scales included.
struct DtypeInfo {
  Dtype dtype;
  double block_elements;
  double block_bytes;
  std::string_view source;
  double bytes_per_element() const { return block_bytes / block_elements; }
};
std::span<const DtypeInfo> dtype_table();
double bytes_per_element(Dtype dtype);
// Bytes of one tensor of `elements` elements: elements × bytes_per_element, except nf4, whose
// packing and block scales are counted as bitsandbytes allocates them for that size (a partial
// block takes a whole scale): with `nf4_double_quant` the table's rate is the limit for a
// multiple of 16,384 elements, without it each block of 64 keeps an fp32 absmax.
double tensor_bytes(Dtype dtype, double elements, bool nf4_double_quant);
// The part of an nf4 tensor's bytes that is its quantisation state, not its packed 4-bit values:
// with double quantisation a uint8 absmax per block of 64 and an fp32 absmax per 256 of them,
// without it an fp32 absmax per block of 64.
double nf4_quant_state_bytes(double elements, bool double_quant);

// The dtype of the model's tensors that are not NF4: params_dtype, or compute_dtype when the base is
// nf4 (QLoRA keeps embeddings, the output layer, norms and biases unquantised, in the compute dtype).
Dtype unquantized_dtype(const Config& config);

// The storage type of LoRA adapter weights (peft): Hugging Face PEFT (frameworks ddp and deepspeed
// start from it, unless model_implementation is torchtune, whose recipes build their own) upcasts
// fp16/bf16 adapters to fp32 (autocast_adapter_dtype=True); DeepSpeed then
// casts the whole module to its 16-bit type, torchtune (fsdp2) builds them under the model's
// default dtype and Megatron-Bridge as parameters of the model: params_dtype, or compute_dtype
// when the base is nf4.
Dtype lora_adapter_dtype(const Config& config);
// ms-swift's LoRA on Megatron Core (model_implementation megatron-core) wraps a fused linear whole:
// linear_qkv when q_proj, k_proj and v_proj are all targets, a dense linear_fc1 when gate_proj and
// up_proj both are: one A and one B, one dropout, one intermediate (tables.cpp).
bool megatron_fused_qkv_adapter(const Config& config);
bool megatron_fused_fc1_adapter(const Config& config);

// How one optimizer state is sized for a parameter tensor.
enum class StateRule : uint8_t {
  exp_avg,          // one element per parameter, in exp_avg_dtype
  exp_avg_sq,       // one element per parameter, in exp_avg_sq_dtype
  momentum,         // one element per parameter, in the master dtype (SGD with momentum > 0)
  factored,         // matrices: rows + cols fp32 statistics; vectors: one per element (Adafactor)
  quantized,        // int8 with an fp32 absmax per 2048-element block (8-bit Adam); fp32 below 4096 elements
  muon_momentum,    // hidden matrices: one momentum element per parameter in exp_avg_dtype
  muon_adam_exp_avg,     // everything else (embeddings, output layer, vectors): AdamW's two states
  muon_adam_exp_avg_sq,
  count
};

struct OptimizerInfo {
  Optimizer optimizer;
  std::array<StateRule, 3> states;  // StateRule::count ends the list
  std::string_view source;
};
std::span<const OptimizerInfo> optimizer_table();
const OptimizerInfo& optimizer_info(Optimizer optimizer);

// What an FP8 recipe keeps besides the weights (Transformer Engine): FP8 copies of each linear
// weight, rowwise for the forward GEMM and columnwise (the transpose) for the backward GEMM.
struct Fp8RecipeInfo {
  Fp8Recipe recipe;
  double copy_bytes_per_element;  // one copy, scales included
  double copies;                  // copies kept per weight (0 for no FP8)
  std::string_view source;
};
std::span<const Fp8RecipeInfo> fp8_recipe_table();
const Fp8RecipeInfo& fp8_recipe_info(Fp8Recipe recipe);

}  // namespace trainmem
