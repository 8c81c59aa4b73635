// Golden rows for the megatron-lm profile, worked by hand from
// ../shared/reference/megatron-formulas.md §4.
#include "support.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

TEST_CASE("megatron-lm: a dense RMSNorm model without sequence parallelism", "[megatron-lm][golden]") {
  const Config c = config_from(R"({"profile": "megatron-lm", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "ffn_hidden_size": 256, "vocab_size": 1000,
      "normalization": "RMSNorm", "seq_length": 128, "micro_batch_size": 2,
      "tensor_model_parallel_size": 2, "data_parallel_size": 2})");
  const Estimate est = estimate_training_memory(c, 0);
  CAPTURE(est);
  // §2: V_pad = ceil(1000/(128·2))·256 = 1,024. §4.1: A = 2·64·64·(2·1) = 16,384;
  // dense layer TP part = A + 2·64·256 = 49,152; replicated 2h·n = 128 (RMSNorm n = 1);
  // final norm 64; tied Emb = 64·1024 = 65,536; total = 2·49,152 + 2·128 + 64 + 65,536.
  CHECK(est.params.total == 164'160.0);
  // §4.2: (98,304/1 + 65,536)/2 + 320/1 = 82,240 per GPU; 18 B each.
  CHECK(est.params.per_gpu == 82'240.0);
  CHECK(est.weight_and_optimizer_bytes == 82'240.0 * 18);
  // §4.3 without SP: 128·2·64·(10 + 24/2) = 360,448 per layer; ×2 = 720,896; + 8·128·2 + 128·2·64
  // = 739,328; p = 1: logits 128·2·1024/2 = 131,072, final norm 16,384, ×2 B = 294,912
  // → 1,034,240; × 1.05 = 1,085,952.
  REQUIRE_THAT(est.activation_bytes, WithinRel(1'085'952.0, k_rel_tol_exact));
  CHECK(est.has(Assumption::lm_no_sp_formula));
  SECTION("its log line always includes the activation") {
    // 1,480,320 / 2^20 = 1.4117; 1,085,952 / 2^20 = 1.0356; their sum 2.4474 prints as 2.45.
    CHECK(report_theoretical_memory(c, 0) ==
          "Theoretical memory footprints: weight and optimizer=1.41 MB, activation=1.04 MB, "
          "total=2.45 MB");
  }
}

TEST_CASE("megatron-lm: MLA and MoE with router and shared gate and an MTP layer", "[megatron-lm][golden][moe]") {
  const Estimate est = estimate_of(R"({"profile": "megatron-lm", "num_layers": 2,
      "hidden_size": 32, "num_attention_heads": 2, "ffn_hidden_size": 64, "vocab_size": 100,
      "swiglu": true, "normalization": "RMSNorm", "add_bias_linear": false,
      "share_embeddings_and_output_weights": false,
      "multi_latent_attention": true, "q_lora_rank": 16, "kv_lora_rank": 8, "qk_head_dim": 8,
      "qk_pos_emb_head_dim": 4, "v_head_dim": 8,
      "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 16,
      "moe_shared_expert_intermediate_size": 16, "moe_shared_expert_gate": true,
      "moe_layer_freq": [0, 1], "mtp_num_layers": 1, "seq_length": 16, "micro_batch_size": 1,
      "expert_model_parallel_size": 2, "data_parallel_size": 2, "use_distributed_optimizer": true})");
  CAPTURE(est);
  // §4.1 MLA: q = 16·(32 + 2·(8 + 4) + 1) = 912; kv = 8·(32 + 2·(8 + 8) + 1) = 520;
  // + h·d_rope = 128 + a·d_v·h = 512 → A = 2,072. γ = 3/2, n = 1.
  // Dense layer: TP = 2,072 + 2·32·64·1.5 = 8,216, replicated 2·32 = 64.
  // MoE layer: TP = 2,072 + 2·32·16·1.5 = 3,608; replicated = 64 + router 32·4 (no bias) + gate 32
  // = 224; experts 2·32·16·4·1.5 = 6,144 (active, K = 2: 3,072).
  // The MTP layer copies the last (MoE) layer. V_pad = 128 → Emb 4,096, untied ×2.
  // total = (8,216 + 3,608 + 3,608) + (64 + 224 + 224 + final 32) + 2·6,144 + 8,192 = 36,456.
  CHECK(est.params.total == 36'456.0);
  CHECK(est.params.active == 36'456.0 - 12'288.0 + 6'144.0);
  // §4.2 shard (p = t = 1): (11,824 + 3,608 + 4,096) + 320 + 224 + untied 4,096 = 24,168 dense;
  // experts (6,144 + 6,144)/(ETP 1 · EP 2) = 6,144.
  CHECK(est.params.dense_per_gpu == 24'168.0);
  CHECK(est.params.routed_per_gpu == 6'144.0);
  // Bytes: dense bpp 6 + 12/d = 12; expert shard W // (t_e·e·p) = 2 // 2 = 1 → 18.
  CHECK(est.weight_and_optimizer_bytes == 24'168.0 * 12 + 6'144.0 * 18);
  // §4.3 without SP: 16·32·(10 + 24) = 17,408 per layer; ×2 = 34,816; + 128 + 512 = 35,456;
  // p = 1: (16·128/1 + 16·32)·2 = 5,120 → 40,576; × 1.05 = 42,604.8.
  REQUIRE_THAT(est.activation_bytes, WithinRel(42'604.8, k_rel_tol_exact));
}

TEST_CASE("megatron-lm: the SP + selective formula divides by TP only and ignores MoE width",
          "[megatron-lm][golden]") {
  const Estimate est = estimate_of(R"({"profile": "megatron-lm", "num_layers": 4,
      "hidden_size": 64, "num_attention_heads": 4, "ffn_hidden_size": 128, "vocab_size": 256,
      "make_vocab_size_divisible_by": 64, "seq_length": 64, "micro_batch_size": 1,
      "tensor_model_parallel_size": 2, "context_parallel_size": 2, "sequence_parallel": true,
      "recompute_granularity": "selective"})");
  CAPTURE(est);
  // §4.3: P = 64·64·(18 + 4·128/64) = 4,096·26 = 106,496; ×4 = 425,984; + 8·64 + 64·64
  // = 430,592; p = 1: + 64·64·4·(1 + 256/64) = 81,920 → 512,512; ÷ t = 2 → 256,256 (CP ignored).
  CHECK(est.activation_bytes == 256'256.0);
  CHECK(est.has(Assumption::lm_ignores_cp_and_uneven));
}
