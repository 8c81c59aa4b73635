// The small MoE block the MoE tests count by hand (moe_scale.test.cpp, router.test.cpp): h 64,
// s 128, b 2, TP 2 with SP, so T_sp = 128·2/2 = 128 tokens enter each MoE layer on a GPU; E 8
// experts, K 2, f_e 32 (SwiGLU: fc1 2·f_e = 64 wide), EP 2, ETP 1, bf16 (e = 2), no vocabulary and
// no workspaces. `extra`: fields added to it ("" for none).
#pragma once

#include <string>
#include <string_view>

#include "support.hpp"
#include "trainmem/activations.hpp"

namespace trainmem::test {

inline std::string moe(const std::string& extra = "") {
  return R"({"profile": "trainmem", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "num_query_groups": 2, "ffn_hidden_size": 128, "vocab_size": 0, "gated_linear_unit": true,
      "activation_func": "silu", "normalization": "RMSNorm", "num_moe_experts": 8,
      "moe_router_topk": 2, "moe_ffn_hidden_size": 32, "expert_model_parallel_size": 2,
      "expert_tensor_parallel_size": 1, "seq_length": 128, "micro_batch_size": 2,
      "tensor_model_parallel_size": 2, "sequence_parallel": true, "workspace_bytes": 0)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

// The block as a PyTorch implementation (transformers' MoE block) on one GPU: where Megatron
// Core's MoE fields are named errors.
inline const std::string k_hf_moe = R"("framework": "ddp", "model_implementation": "hf-transformers",
      "tensor_model_parallel_size": 1, "sequence_parallel": false, "expert_model_parallel_size": 1)";

// The bytes of the saved tensor named `name` in a layer's detail (0 when it has none).
inline double row_bytes(const SavedTensors& detail, std::string_view name) {
  for (const SavedTensor& t : detail)
    if (t.name == name) return t.bytes;
  return 0;
}

// One MoE layer's saved tensors under the config's recompute policy.
inline SavedTensors moe_layer(const Config& c) {
  SavedTensors d;
  layer_activation_bytes(c, true, LayerRecompute::policy, &d);
  return d;
}

}  // namespace trainmem::test
