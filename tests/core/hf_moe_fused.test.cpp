// transformers' MoE experts as 3D parameters indexed per expert (moe_fused_expert_params,
// GptOssExperts; issue 29 item 5). Expected figures by hand in the comments from
// docs/trainmem-profile.md §8 ("The model's own code"), not read back from the implementation.
#include <string>

#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// A small MoE model under transformers on one GPU: 2 layers, h = 1,024, 8 heads, every layer
// MoE with 4 experts of width 512, top-2, SwiGLU; bf16 weights and gradients.
std::string small_moe(const std::string& more) {
  return small_llama(R"("num_moe_experts": 4, "moe_ffn_hidden_size": 512, "moe_router_topk": 2,
      "framework": "ddp", "model_implementation": "hf-transformers", "params_dtype": "bf16",
      "main_grads_dtype": "bf16", "master_weights": false)" +
                     (more.empty() ? std::string() : ", " + more));
}

}  // namespace

TEST_CASE("fused expert parameters: one whole-parameter gradient more in an MoE layer's backward", "[moe][hf]") {
  // IndexBackward0 of gate_up_proj[expert_idx] is a zeros tensor of the whole [E, h, 2·f_e]
  // parameter: 4 · 1,024 · 1,024 elements · 2 B = 8,388,608 B, one at a time beside the
  // parameter's gradient. Every backward moment carries it; nothing else changes.
  const FullEstimate per_expert = full_estimate(config_from(small_moe("")));
  const FullEstimate fused = full_estimate(config_from(small_moe(R"("moe_fused_expert_params": true)")));
  CHECK(fused.moments.backward - per_expert.moments.backward == 8388608);
  CHECK(fused.moments.forward == per_expert.moments.forward);
  CHECK(fused.moments.optimizer_step == per_expert.moments.optimizer_step);
}

TEST_CASE("fused expert parameters: nothing when the experts are frozen or the code is not transformers'", "[moe][hf]") {
  // LoRA leaves the experts frozen: no gradient for them, no IndexBackward0 for the weight.
  const FullEstimate lora = full_estimate(config_from(small_moe(R"("peft": "lora", "moe_fused_expert_params": true)")));
  const FullEstimate lora_off = full_estimate(config_from(small_moe(R"("peft": "lora")")));
  CHECK(lora.moments.backward == lora_off.moments.backward);
  // Accepted on any MoE model (in effect with hf-transformers only): torchtune's grouped experts
  // are another code.
  const FullEstimate tt = full_estimate(config_from(small_llama(R"("num_moe_experts": 4, "moe_ffn_hidden_size": 512,
      "moe_router_topk": 2, "framework": "ddp", "model_implementation": "torchtune", "moe_fused_expert_params": true)")));
  const FullEstimate tt_off = full_estimate(config_from(small_llama(R"("num_moe_experts": 4, "moe_ffn_hidden_size": 512,
      "moe_router_topk": 2, "framework": "ddp", "model_implementation": "torchtune")")));
  CHECK(tt.total_bytes == tt_off.total_bytes);
}
