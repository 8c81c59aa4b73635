// Megatron Core's sigmoid router and its expert bias (moe_router_score_function,
// moe_router_enable_expert_bias), and partial RoPE (rotary_percent). Rules:
// core/src/estimate/activations.cpp (k_src_router_sigmoid and its neighbours, moe_router_buffers,
// rotary_width), docs/trainmem-profile.md §9 ("Sigmoid router", "Partial RoPE"). Every golden value
// is worked out by hand in the comment beside it.
//
// The MoE block is moe_scale.test.cpp's: T_sp = 128·2/2 = 128 tokens enter each MoE layer on a
// GPU (TP 2 with SP), E 8 experts, K 2, bf16.
#include <string>

#include "moe_block.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

double moe_layer_bytes(const std::string& json) {
  return layer_activation_bytes(config_from(json), true, LayerRecompute::policy);
}


}  // namespace

TEST_CASE("the sigmoid router keeps its fp32 scores over all experts, the chosen scores and their sum",
          "[moe][router][golden]") {
  const Config c = config_from(moe(R"("moe_router_score_function": "sigmoid")"));
  CHECK(c.moe_router_score_function == MoeRouterScoreFunction::sigmoid);
  const SavedTensors d = moe_layer(c);
  // sigmoid(logits.float()): fp32 [T_sp, E] = 4·8·128.
  CHECK(row_bytes(d, "moe.router_scores") == 4'096.0);
  // topk's int64 indices [T_sp, K] = 8·2·128 (gather and scatter keep the same storage).
  CHECK(row_bytes(d, "moe.router_topk_indices") == 2'048.0);
  // K > 1: the division keeps the K chosen fp32 scores, 4·2·128, and the [T_sp, 1] sum, 4·128.
  CHECK(row_bytes(d, "moe.router_topk_scores") == 1'024.0);
  CHECK(row_bytes(d, "moe.router_topk_sum") == 512.0);
  // The load-balancing loss's own sigmoid, 4·8·128, and its normalisation's sum, 4·128.
  CHECK(row_bytes(d, "moe.router_aux_scores") == 4'096.0);
  CHECK(row_bytes(d, "moe.router_aux_sum") == 512.0);
  // The softmax router's rows are gone.
  CHECK(row_bytes(d, "moe.router_probs") == 0.0);
  CHECK(row_bytes(d, "moe.router_topk_probs") == 0.0);
  // Softmax: 4,096 + 2,048 + 1,024 = 7,168; sigmoid: 4,096 + 2,048 + 1,024 + 512 + 4,096 + 512 =
  // 12,288; the rest of the layer is the same: 5,120 more.
  CHECK(moe_layer_bytes(moe(R"("moe_router_score_function": "sigmoid")")) - moe_layer_bytes(moe()) ==
        5'120.0);
}

TEST_CASE("the sigmoid router with one expert per token keeps no normalisation", "[moe][router][golden]") {
  // K = 1: probs = scores (no division). Scores 4·8·128 = 4,096, indices 8·1·128 = 1,024, the
  // loss's scores 4,096 and sum 512.
  const SavedTensors d = moe_layer(config_from(moe(R"("moe_router_score_function": "sigmoid",
      "moe_router_topk": 1)")));
  CHECK(row_bytes(d, "moe.router_scores") == 4'096.0);
  CHECK(row_bytes(d, "moe.router_topk_indices") == 1'024.0);
  CHECK(row_bytes(d, "moe.router_topk_scores") == 0.0);
  CHECK(row_bytes(d, "moe.router_topk_sum") == 0.0);
  CHECK(row_bytes(d, "moe.router_aux_scores") == 4'096.0);
  CHECK(row_bytes(d, "moe.router_aux_sum") == 512.0);
}

TEST_CASE("the expert bias saves nothing more and keeps a bias and a count per expert in each MoE layer",
          "[moe][router][golden]") {
  const std::string sigmoid = R"("moe_router_score_function": "sigmoid")";
  const std::string biased = sigmoid + R"(, "moe_router_enable_expert_bias": true)";
  // The chosen scores are gathered from the sigmoid's output: as many bytes as without the bias.
  CHECK(moe_layer_bytes(moe(biased)) == moe_layer_bytes(moe(sigmoid)));
  // expert_bias and local_tokens_per_expert, fp32 [E] each: 2·4·8 = 64 per MoE layer.
  CHECK(moe_router_buffer_bytes(config_from(moe(biased))) == 64.0);
  CHECK(moe_router_buffer_bytes(config_from(moe(sigmoid))) == 0.0);
  // Two MoE layers on the stage (moe_scale.test.cpp's moments: the dispatcher's state is
  // 2·3,072 in backward, 2·5,120 at the optimizer step; the transient 131,072): + 2·64 = 128 at
  // every moment.
  const StageParams s = stages_of(moe(biased)).at(0);
  const Moments& m = s.moments;
  CHECK(m.forward - s.weight_and_optimizer_bytes - s.activation_bytes == 137'216.0 + 128);
  CHECK(m.backward - s.weight_and_optimizer_bytes - s.activation_bytes == 6'144.0 + 128);
  CHECK(m.optimizer_step - s.weight_and_optimizer_bytes == 10'240.0 + 128);
}

TEST_CASE("router fields: named errors, and nothing for a dense model", "[moe][router][validation]") {
  // Megatron Core raises for an expert bias with the softmax score function
  // (transformer_config.py @ 00611e6e).
  CHECK(messages_for(moe(R"("moe_router_enable_expert_bias": true)")) ==
        one("moe_router_enable_expert_bias: needs moe_router_score_function \"sigmoid\" (Megatron Core "
            "raises for an expert bias with the \"softmax\" score function)"));
  CHECK(messages_for(moe(R"("moe_router_score_function": "sqrtsoftplus")")).size() == 1);
  const std::string& hf = k_hf_moe;
  CHECK(messages_for(moe(R"("moe_router_score_function": "sigmoid", )" + hf)) ==
        one("moe_router_score_function: applies to MoE with model_implementation megatron-core (Megatron "
            "Core's router; the PyTorch implementations' routers are modelled as softmax routers)"));
  CHECK(messages_for(moe(R"("moe_router_score_function": "softmax", )" + hf)).empty());
  CHECK(messages_for(moe(R"("moe_router_score_function": "sigmoid", "moe_router_enable_expert_bias": true, )" + hf)) ==
        std::vector<std::string>{
            "moe_router_score_function: applies to MoE with model_implementation megatron-core (Megatron "
            "Core's router; the PyTorch implementations' routers are modelled as softmax routers)",
            "moe_router_enable_expert_bias: applies to MoE with model_implementation megatron-core "
            "(Megatron Core's router)"});
  // A dense model: no error, not written back, no buffers.
  const std::string dense = R"({"profile": "trainmem", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 0, "seq_length": 128, "micro_batch_size": 2,
      "moe_router_score_function": "sigmoid", "moe_router_enable_expert_bias": true})";
  CHECK(messages_for(dense).empty());
  const ConfigInput written = to_input(config_from(dense));
  CHECK_FALSE(written.moe_router_score_function.has_value());
  CHECK_FALSE(written.moe_router_enable_expert_bias.has_value());
  CHECK(moe_router_buffer_bytes(config_from(dense)) == 0.0);
}

TEST_CASE("rotary_percent narrows a transformers model's cos and sin, nothing else", "[rope][golden]") {
  // tiny_llama: k = 32, s = 8, fp32 (e = 4): cos and sin [1, s, k·p] each, 2·4·8·int(32·p).
  const auto cos_sin = [](const std::string& more) {
    SavedTensors d;
    embedding_activation_bytes(config_from(tiny_llama("hf-transformers", more)), &d);
    double bytes = 0;
    for (const SavedTensor& t : d)
      if (t.name == "attention.rope_cos_sin") bytes += t.bytes;
    return bytes;
  };
  CHECK(cos_sin("") == 2'048.0);                          // 2·4·8·32
  CHECK(cos_sin(R"("rotary_percent": 0.5)") == 1'024.0);  // 2·4·8·16
  CHECK(cos_sin(R"("rotary_percent": 0.3)") == 576.0);    // int(9.6) = 9: 2·4·8·9
  // The layers keep q and k at full width: the same bytes.
  const Config full = config_from(tiny_llama("hf-transformers", ""));
  const Config half = config_from(tiny_llama("hf-transformers", R"("rotary_percent": 0.5)"));
  CHECK(layer_activation_bytes(half, false, LayerRecompute::policy) ==
        layer_activation_bytes(full, false, LayerRecompute::policy));
  // Megatron Core: its frequency table is not counted at any width; nothing changes.
  const std::string megatron = moe();
  const std::string half_megatron = moe(R"("rotary_percent": 0.5)");
  CHECK(estimate_of(half_megatron).total_bytes == estimate_of(megatron).total_bytes);
  CHECK(estimate_of(half_megatron).activation_bytes == estimate_of(megatron).activation_bytes);
}

TEST_CASE("rotary_percent: named errors", "[rope][validation]") {
  CHECK(messages_for(moe(R"("rotary_percent": 0)")) ==
        one("rotary_percent: must be above 0 (the fraction of each head's channels RoPE rotates), got 0"));
  CHECK(messages_for(moe(R"("rotary_percent": 1.5)")).size() == 1);
  CHECK(messages_for(moe(R"("rotary_percent": 1)")).empty());
}
