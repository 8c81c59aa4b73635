// Golden rows for the megatron-bridge profile. Every expected value is worked out by hand from
// ../shared/reference/megatron-formulas.md (section named at each step), not taken from the code.
#include "support.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

TEST_CASE("the reference's worked example (Llama-3 70B on TP8 PP4 VPP5 DP4) agrees to the byte",
          "[bridge][golden]") {
  // Reference §7, llama3_70b_tp8_pp4_vpp5_dp4.
  const Config c = config_from(R"({"profile": "megatron-bridge", 
    "num_layers": 80, "hidden_size": 8192, "num_attention_heads": 64, "num_query_groups": 8,
    "kv_channels": 128, "ffn_hidden_size": 28672, "vocab_size": 128256,
    "share_embeddings_and_output_weights": false, "gated_linear_unit": true, "activation_func": "silu",
    "seq_length": 8192, "micro_batch_size": 1, "tensor_model_parallel_size": 8,
    "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 5,
    "data_parallel_size": 4, "use_distributed_optimizer": true,
    "sequence_parallel": true, "recompute_granularity": "selective"})");
  const Estimate est = estimate_training_memory(c, 0);
  CAPTURE(est);
  // A = 150,994,944; layer = A + 32,768 + 3·8192·28672 = 855,670,784;
  // dense_transformer = 80·layer + 16,384 = 68,453,679,104; Emb = 8192·128256 = 1,050,673,152.
  CHECK(est.params.dense_transformer == 68'453'679'104.0);
  CHECK(est.params.embedding == 2 * 1'050'673'152.0);
  CHECK(est.params.total == 70'555'025'408.0);
  // dense_per_gpu = 68,453,679,104/32 + Emb/8 = 2,270,511,616; bpp = 6 + 12/4 = 9.
  CHECK(est.params.dense_per_gpu == 2'270'511'616.0);
  CHECK(est.components[0].bytes_per_parameter == 9.0);
  CHECK(est.weight_and_optimizer_bytes == 20'434'604'544.0);
  // P = 8192·8192·32; ×80 + 8·8192·4 + 8192·8192·4 = 172,067,389,440; ×1.15 ÷ 8.
  REQUIRE_THAT(est.activation_bytes, WithinRel(24'734'687'231.999996, k_rel_tol_exact));
  REQUIRE_THAT(est.total_bytes, WithinRel(45'169'291'776.0, k_rel_tol_exact));
  CHECK(est.n_components == 1);

  SECTION("the seed's API returns the same parts") {
    CHECK(compute_weight_and_optimizer_memory(c) == 20'434'604'544.0);
    REQUIRE_THAT(compute_activation_memory(c, 0), WithinRel(24'734'687'231.999996, k_rel_tol_exact));
  }
  SECTION("the training log line prints MB = 2^20 bytes with two decimals") {
    // 20,434,604,544 / 2^20 = 19,487.96; 24,734,687,232 / 2^20 = 23,588.84; sum 43,076.79.
    CHECK(report_theoretical_memory(c, 0) ==
          "Theoretical memory footprints: weight and optimizer=19487.96 MB, "
          "activation=23588.84 MB, total=43076.79 MB");
  }
  SECTION("format_training_memory_estimate names each component, in MB or GB") {
    // 45,169,291,776 / 2^30 = 42.07; 20,434,604,544 / 2^30 = 19.03; 24,734,687,232 / 2^30 = 23.04.
    CHECK(format_training_memory_estimate(est, "gb") ==
          "Theoretical memory footprints: dense parameters and optimizer=19.03 GB, "
          "activation=23.04 GB, total=42.07 GB");
    CHECK_THROWS_WITH(format_training_memory_estimate(est, "KB"), "Unsupported memory unit: KB");
  }
  SECTION("a verbose trace shows the intermediate quantities with their formulas") {
    Trace trace;
    estimate_training_memory(c, 0, true, &trace);
    bool found_attention = false;
    for (const TraceEntry& e : trace)
      if (e.name == "bridge.attention_per_layer") {
        found_attention = true;
        CHECK(e.value == 150'994'944.0);
        CHECK(e.formula.find("2·h·h") != std::string::npos);
      }
    CHECK(found_attention);
  }
}

TEST_CASE("a small dense model with tied embeddings on one GPU", "[bridge][golden]") {
  const Estimate est = estimate_of(R"({"profile": "megatron-bridge", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "ffn_hidden_size": 256, "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 2,
      "data_parallel_size": 2})");
  CAPTURE(est);
  // §3.2: k = 64/4 = 16, g = a: A = 2·64·64·((1 + 1)·(16·4/64)) = 16,384; norms 4·64 = 256;
  // MLP (GELU, F = 2) 2·64·256 = 32,768; layer 49,408; dense = 2·49,408 + 2·64 = 98,944.
  CHECK(est.params.dense_transformer == 98'944.0);
  // Tied: embeddings = 64·1000 = 64,000; total 162,944.
  CHECK(est.params.total == 162'944.0);
  // §3.3, p = t = 1: 98,944 + 64,000 = 162,944 per GPU; §3.4 18 B (no distributed optimizer).
  CHECK(est.weight_and_optimizer_bytes == 162'944.0 * 18);
  // §3.5: r = 256/64 = 4; P = 128·2·64·(18 + 16) = 557,056; ×2 = 1,114,112; + 8·128·2 = 2,048;
  // + 128·2·64 = 16,384 → 1,132,544; p = 1: + 128·2·64·4·(1 + 1000/64) = 1,089,536 → 2,222,080.
  CHECK(est.activation_bytes == 2'222'080.0);
  CHECK(est.total_bytes == 162'944.0 * 18 + 2'222'080.0);
  CHECK(pipeline_stages(config_from(R"({"profile": "megatron-bridge", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 2})")).empty());
}

TEST_CASE("an MoE model with shared experts and EP and the distributed optimizer on two stages",
          "[bridge][golden][moe]") {
  const std::string json = R"({"profile": "megatron-bridge", "num_layers": 4, "hidden_size": 32,
      "num_attention_heads": 4, "num_query_groups": 2, "kv_channels": 8, "ffn_hidden_size": 64,
      "vocab_size": 100, "gated_linear_unit": true, "activation_func": "silu",
      "num_moe_experts": 4, "moe_router_topk": 2, "moe_layer_freq": 2, "moe_ffn_hidden_size": 32,
      "moe_shared_expert_intermediate_size": 16, "seq_length": 64, "micro_batch_size": 1,
      "num_microbatches": 1, "pipeline_model_parallel_size": 2, "expert_model_parallel_size": 2,
      "data_parallel_size": 4, "use_distributed_optimizer": true})";
  const Estimate est = estimate_of(json);
  const std::vector<StageParams> stages = stages_of(json);
  CAPTURE(est);
  // §3.1: freq 2 → layers 0 and 2 are MoE. §3.2: A = 2·32·32·((1 + 2/4)·(8·4/32)) = 3,072;
  // dense layer = 3,072 + 128 + 3·32·64 = 9,344; MoE layer (non-expert) = 3,072 + 128 + 3·32·16
  // = 4,736; routed per MoE layer = 3·32·32·4 = 12,288.
  CHECK(est.layers.moe == 2);
  CHECK(est.params.dense_transformer == 2 * 9'344.0 + 2 * 4'736.0 + 64);  // 28,224
  CHECK(est.params.routed_experts == 24'576.0);
  CHECK(est.params.total == 28'224.0 + 24'576.0 + 3'200.0);
  // Active: the routed share scales by K/E = 2/4.
  CHECK(est.params.active == 28'224.0 + 12'288.0 + 3'200.0);
  // §3.3 even: 28,224/2 + 3,200 = 17,312 dense; 24,576/(2·2·1) = 6,144 routed (ETP = TP = 1).
  CHECK(est.params.dense_per_gpu == 17'312.0);
  CHECK(est.params.routed_per_gpu == 6'144.0);
  // §3.4: dense shard d·c = 4 → 9 B; expert shard floor(4·1·1/2) = 2 → 12 B.
  REQUIRE(est.n_components == 2);
  CHECK(est.components[0].memory_bytes == 17'312.0 * 9);
  CHECK(est.components[1].optimizer_shard_size == 2.0);
  CHECK(est.components[1].memory_bytes == 6'144.0 * 12);
  CHECK(est.weight_and_optimizer_bytes == 229'536.0);
  // §3.5: r = (2·64 + 2·(32·2 + 16))/(4·32) = 2.25; P = 64·32·27 = 55,296; ×4 = 221,184;
  // + 8·64·2 + 64·32·2 = 5,120 → 226,304; × min(1, 1/2) → 113,152; p > 1: no logits.
  CHECK(est.activation_bytes == 113'152.0);
  // Even split with p = 2: both stages hold 14,112 dense + one embedding matrix.
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].dense == 14'112.0 + 3'200.0);
  CHECK(stages[1].dense == 14'112.0 + 3'200.0);
}

TEST_CASE("latent MoE with an MTP layer and context and expert parallelism", "[bridge][golden][moe]") {
  const Estimate est = estimate_of(R"({"profile": "megatron-bridge", "num_layers": 2, "hidden_size": 32,
      "num_attention_heads": 4, "kv_channels": 8, "ffn_hidden_size": 64, "vocab_size": 64,
      "swiglu": true, "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 16,
      "moe_latent_size": 8, "mtp_num_layers": 1, "seq_length": 32, "micro_batch_size": 1,
      "tensor_model_parallel_size": 2, "context_parallel_size": 2, "expert_model_parallel_size": 2,
      "expert_tensor_parallel_size": 1, "data_parallel_size": 2, "use_distributed_optimizer": true,
      "sequence_parallel": true})");
  CAPTURE(est);
  // §3.1: freq 1 → both layers MoE, and the MTP layer copies the last: L_tot = 3, all MoE.
  CHECK(est.layers.total == 3);
  CHECK(est.layers.moe == 3);
  // §3.2: A = 2·32·32·(2·1) = 4,096; norms 128; latent projections 2·32·8 = 512 (dense);
  // routed = 3·8·16·4 = 1,536. dense = 3·(4,096 + 128 + 512) + 64 = 14,272.
  CHECK(est.params.dense_transformer == 14'272.0);
  CHECK(est.params.routed_experts == 4'608.0);
  CHECK(est.params.total == 14'272.0 + 4'608.0 + 2'048.0);
  // §3.3: 14,272/(1·2) + 2,048/2 = 8,160; routed 4,608/(1·2·1) = 2,304.
  CHECK(est.params.dense_per_gpu == 8'160.0);
  CHECK(est.params.routed_per_gpu == 2'304.0);
  // §3.4: dense shard d·c = 4 → 9 B; expert shard floor(2·2·2/(2·1)) = 4 → 9 B.
  CHECK(est.weight_and_optimizer_bytes == 8'160.0 * 9 + 2'304.0 * 9);
  // §3.5: r = 3·(16·2)/(3·32) = 1; P = 32·32·22 = 22,528; ×3 = 67,584; + 256 + 1,024 = 68,864;
  // p = 1: + 32·32·4·(1 + 64/32) = 12,288 → 81,152; ÷ (t·c = 4) = 20,288.
  CHECK(est.activation_bytes == 20'288.0);
  CHECK(est.has(Assumption::context_parallel_divides));
}

TEST_CASE("uneven pipeline stages with interleaving deal layers round-robin", "[bridge][golden][pipeline]") {
  // h = 16, a = 2, k = 8, f = 32, GELU: A = 2·16·16·(2·1) = 1,024, norms 64, MLP 2·16·32 = 1,024:
  // dense layer 2,112. MoE (E = 2, f_e = 32): non-expert 1,088, routed 2·16·32·2 = 2,048.
  // Untied, V = 50: Emb = 800 on the first and on the last stage (§3.3).
  const std::string model = R"("profile": "megatron-bridge", "num_layers": 6, "hidden_size": 16, "num_attention_heads": 2,
      "kv_channels": 8, "ffn_hidden_size": 32, "vocab_size": 50,
      "share_embeddings_and_output_weights": false, "seq_length": 16, "micro_batch_size": 1)";

  SECTION("first 1, last 1 on three stages: the middle stage is the heaviest") {
    const std::string json = "{" + model + R"(, "pipeline_model_parallel_size": 3,
        "num_layers_in_first_pipeline_stage": 1, "num_layers_in_last_pipeline_stage": 1})";
    const Estimate est = estimate_of(json);
    const std::vector<StageParams> stages = stages_of(json);
    CAPTURE(est);
    // Stages hold 1, 4, 1 layers: [2,112 + 800, 4·2,112, 2,112 + 2·16 + 800].
    REQUIRE(stages.size() == 3);
    CHECK(stages[0].dense == 2'912.0);
    CHECK(stages[1].dense == 8'448.0);
    CHECK(stages[2].dense == 2'944.0);
    CHECK(est.params.dense_per_gpu == 8'448.0);
    CHECK(est.weight_and_optimizer_bytes == 8'448.0 * 18);
  }
  SECTION("VPP 2 on stages of 2 and 4 layers with a dense-first MoE pattern") {
    const std::string json = "{" + model + R"(, "num_moe_experts": 2, "moe_router_topk": 1,
        "moe_layer_freq": [0, 0, 1, 1, 1, 1], "pipeline_model_parallel_size": 2,
        "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 2,
        "num_layers_in_last_pipeline_stage": 4})";
    const Estimate est = estimate_of(json);
    const std::vector<StageParams> stages = stages_of(json);
    CAPTURE(est);
    // Round 1: stage 0 gets layer 0, stage 1 layers 1-2; round 2: stage 0 layer 3, stage 1 4-5.
    // Stage 0 {0, 3}: 2,112 + 1,088 + 800 = 4,000 dense, 2,048 routed.
    // Stage 1 {1, 2, 4, 5}: 2,112 + 3·1,088 + 32 + 800 = 6,208 dense, 3·2,048 = 6,144 routed.
    REQUIRE(stages.size() == 2);
    CHECK(stages[0].dense == 4'000.0);
    CHECK(stages[0].routed == 2'048.0);
    CHECK(stages[1].dense == 6'208.0);
    CHECK(stages[1].routed == 6'144.0);
    CHECK(est.weight_and_optimizer_bytes == 6'208.0 * 18 + 6'144.0 * 18);
    CHECK_FALSE(est.has(Assumption::uneven_independent_maxima));
  }
  SECTION("the dense and routed maxima can come from different stages (quirk 1)") {
    const Estimate est = estimate_of("{" + model + R"(, "num_moe_experts": 2, "moe_router_topk": 1,
        "moe_layer_freq": [0, 0, 0, 0, 1, 1], "pipeline_model_parallel_size": 2,
        "num_layers_in_first_pipeline_stage": 4})");
    CAPTURE(est);
    // Stage 0 {0..3}: 4·2,112 + 800 = 9,248 dense, 0 routed. Stage 1 {4, 5}: 2·1,088 + 32 + 800
    // = 3,008 dense, 4,096 routed. The reference adds 9,248 and 4,096 from different stages.
    CHECK(est.params.dense_per_gpu == 9'248.0);
    CHECK(est.params.routed_per_gpu == 4'096.0);
    CHECK(est.has(Assumption::uneven_independent_maxima));
  }
}
