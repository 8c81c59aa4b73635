// The trainmem profile's activations on every stage, the peak over the moments of a step, and
// the seed's worked example (shared/seeds/003: an FFN-only model on H100s and TPU v5p).
#include "support.hpp"
#include "trainmem/activations.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// The seed's model: 126 blocks, each a single two-matrix FFN (d_model 16,384, d_ff 53,248), no
// attention, norms, activation function or embeddings; fp32 weights, gradients and AdamW states;
// each linear layer's input kept in bf16; batch 128 × 1,024 tokens.
std::string seed(const std::string& extra) {
  return R"({"profile": "trainmem", "num_layers": 126, "hidden_size": 16384,
      "num_attention_heads": 0, "ffn_hidden_size": 53248, "vocab_size": 0,
      "normalization": "none", "activation_func": "identity", "add_bias_linear": false,
      "attention_dropout": 0, "hidden_dropout": 0, "params_dtype": "fp32",
      "compute_dtype": "bf16", "optimizer": "adamw", "seq_length": 1024, )" + extra + "}";
}

}  // namespace

TEST_CASE("the seed's FFN-only model needs 68 H100s of 80 GiB", "[trainmem][golden][seed]") {
  const Estimate est = estimate_of(seed(R"("micro_batch_size": 128, "gpu_memory_bytes": 85899345920)"));
  CAPTURE(est);
  // Parameters: 126 · 2 · 16,384 · 53,248 = 219,848,638,464.
  CHECK(est.params.total == 219'848'638'464.0);
  // Static: 4 B weights + 4 B gradients + 8 B AdamW = 16 B per parameter = 3,276 GiB.
  CHECK(est.weight_and_optimizer_bytes == 16 * 219'848'638'464.0);
  CHECK(est.weight_and_optimizer_bytes / GiB == 3276.0);
  // Activations: 126 · (16,384 + 53,248) bf16 values per token · 131,072 tokens = 2,142 GiB.
  CHECK(est.activation_bytes == 126.0 * (16'384 + 53'248) * 2 * 131'072);
  CHECK(est.activation_bytes / GiB == 2142.0);
  // ceil((3,276 + 2,142) / 80) = ceil(67.725) = 68.
  CHECK(full_estimate(config_from(seed(R"("micro_batch_size": 128, "gpu_memory_bytes": 85899345920)"))).minimum_devices == 68);
}

TEST_CASE("with half the activations alive the seed's model fits 46 TPU v5p of 95 GiB", "[trainmem][golden][seed]") {
  // The seed shards the weights, the optimizer and half of the activations n ways. Half the
  // activations alive at once is the same global batch as two microbatches of 64.
  const Estimate est = estimate_of(seed(R"("micro_batch_size": 64, "global_batch_size": 128,
      "gpu_memory_bytes": 102005473280)"));
  CHECK(est.activation_bytes / GiB == 1071.0);
  // ceil((3,276 + 1,071) / 95) = ceil(45.76) = 46.
  CHECK(full_estimate(config_from(seed(R"("micro_batch_size": 64, "global_batch_size": 128,
      "gpu_memory_bytes": 102005473280)"))).minimum_devices == 46);
}

TEST_CASE("each pipeline stage holds the microbatches its schedule keeps in flight", "[trainmem][pipeline]") {
  const std::string model = R"("profile": "trainmem", "num_layers": 8, "hidden_size": 256,
      "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096, "seq_length": 512,
      "micro_batch_size": 1, "pipeline_model_parallel_size": 4)";
  SECTION("1F1B: stage r keeps p − r microbatches, never more than there are") {
    auto stages = stages_of("{" + model + R"(, "num_microbatches": 16})");
    REQUIRE(stages.size() == 4);
    for (int r = 0; r < 4; ++r) CHECK(stages[size_t(r)].microbatches_in_flight == 4 - r);
    stages = stages_of("{" + model + R"(, "num_microbatches": 2})");
    CHECK(stages[0].microbatches_in_flight == 2);
    CHECK(stages[3].microbatches_in_flight == 1);
  }
  SECTION("GPipe keeps every microbatch") {
    const auto stages = stages_of("{" + model + R"(, "num_microbatches": 6, "pipeline_schedule": "gpipe"})");
    for (const StageParams& s : stages) CHECK(s.microbatches_in_flight == 6);
  }
  SECTION("interleaving: (p − r − 1)·2 + (v − 1)·p + 1 chunks of L/(p·v) layers") {
    const auto stages = stages_of("{" + model + R"(, "num_microbatches": 16,
        "virtual_pipeline_model_parallel_size": 2})");
    // Stage 0: 3·2 + 1·4 + 1 = 11 chunk-microbatches of one layer = 5.5 stage-microbatches.
    CHECK(stages[0].microbatches_in_flight == 6);  // rounded up for display
    const auto plain = stages_of("{" + model + R"(, "num_microbatches": 16})");
    // Each chunk here is one layer of identical size: 11 layer-microbatches against 1F1B's 4 × 2.
    const double layer_stage0 = plain[0].activation_bytes;  // 4 microbatches × (2 layers + embedding)
    CHECK(stages[0].activation_bytes > layer_stage0);
    // Exactly: rank 0's chunks are c0 = ℓ + e (the embedding is in chunk 0) and c1 = ℓ. Forwards
    // 0-10 run chunks (i mod 8) / 4 = 0,0,0,0,1,1,1,1,0,0,0 = 7 c0 + 4 c1; backward 0 then frees a
    // c1 (chunk 1 − 0) and forward 11 adds a c0: 8 c0 + 3 c1 = 11ℓ + 8e, the peak (the moments
    // after repeat every 8 iterations and never hold more c0).
    const Config c = config_from("{" + model + R"(, "num_microbatches": 16, "virtual_pipeline_model_parallel_size": 2})");
    const double l = layer_activation_bytes(c, false, LayerRecompute::policy), e = embedding_activation_bytes(c);
    CHECK_THAT(stages[0].activation_bytes, WithinRel(11 * l + 8 * e, k_rel_tol_exact));
  }
  SECTION("the most-loaded GPU is the stage with the largest peak, not a sum of maxima") {
    const std::string json = "{" + model + R"(, "num_microbatches": 16})";
    const Estimate est = estimate_of(json);
    const auto stages = stages_of(json);
    double largest = 0;
    int64_t arg = 0;
    for (size_t r = 0; r < stages.size(); ++r)
      if (stages[r].total_bytes > largest) largest = stages[r].total_bytes, arg = int64_t(r);
    CHECK(est.total_bytes == largest);
    CHECK(est.most_loaded_stage == arg);
    CHECK(est.weight_and_optimizer_bytes == stages[size_t(arg)].weight_and_optimizer_bytes);
    CHECK(est.activation_bytes == stages[size_t(arg)].activation_bytes);
  }
}

TEST_CASE("torch.distributed.pipelining keeps receive buffers and the last stage's outputs", "[trainmem][pipeline][golden]") {
  // fsdp2 (torchtitan's pipeline parallelism) over 2 stages of 2 layers. The hidden state passed
  // between stages is A = 2 B × 512 tokens × 256 = 262,144 B; the last stage's model output is
  // bf16 logits, 2 B × 512 × 4,096 = 4,194,304 B per microbatch (fp32: 8,388,608 B).
  const auto config = [](const std::string& framework, int microbatches, const std::string& extra = "") {
    return R"({"profile": "trainmem", "framework": ")" + framework + R"(", "num_layers": 4,
        "hidden_size": 256, "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096,
        "seq_length": 512, "micro_batch_size": 1, "pipeline_model_parallel_size": 2,
        "num_microbatches": )" + std::to_string(microbatches) + extra + "}";
  };
  constexpr double A = 262'144, logits = 4'194'304, logits32 = 8'388'608;
  const auto four = stages_of(config("fsdp2", 4)), eight = stages_of(config("fsdp2", 8));
  REQUIRE((four.size() == 2 && eight.size() == 2));
  SECTION("stage 0: per microbatch one gradient receive buffer; each in-flight output cached") {
    // Layers × 2 in flight, plus 4 gradient buffers (4A) and the 2 in-flight outputs (2A).
    const Config c = config_from(config("fsdp2", 4));
    const double layers = 2 * layer_activation_bytes(c, false, LayerRecompute::policy) + embedding_activation_bytes(c);
    CHECK_THAT(four[0].activation_bytes, WithinRel(2 * layers + 4 * A + 2 * A, k_rel_tol_exact));
    // Four more microbatches: four more buffers, the same two in flight.
    CHECK(eight[0].activation_bytes - four[0].activation_bytes == 4 * A);
  }
  SECTION("last stage: an activation buffer per microbatch and every microbatch's output") {
    const Config c = config_from(config("fsdp2", 4));
    const double layers = 2 * layer_activation_bytes(c, false, LayerRecompute::policy) + output_activation_bytes(c);
    // One microbatch in flight: its buffer is the input its first layer saves, counted once.
    CHECK_THAT(four[1].activation_bytes, WithinRel(layers + (4 - 1) * A + 4 * logits, k_rel_tol_exact));
    CHECK(eight[1].activation_bytes - four[1].activation_bytes == 4 * (A + logits));
    // At the end of the step each microbatch also left its input gradient in the buffer's .grad:
    // 4 × (A + A + logits) more.
    CHECK(eight[1].moments.optimizer_step - four[1].moments.optimizer_step == 4 * (2 * A + logits));
  }
  SECTION("December 2024 torchtitan: fp32 outputs, concatenated once more when the step returns") {
    const std::string old = R"(, "pipeline_outputs": "kept_fp32_merged")";
    const auto four32 = stages_of(config("fsdp2", 4, old)), eight32 = stages_of(config("fsdp2", 8, old));
    CHECK(eight32[1].activation_bytes - four32[1].activation_bytes == 4 * (A + logits32));
    // 4 × (A + A + 2 × logits32): the merged copy outweighs the foreach Adam temporary here.
    CHECK(eight32[1].moments.optimizer_step - four32[1].moments.optimizer_step == 4 * (2 * A + 2 * logits32));
  }
  SECTION("Megatron frees its pipeline tensors with each microbatch") {
    const auto m4 = stages_of(config("megatron", 4)), m8 = stages_of(config("megatron", 8));
    CHECK(m8[0].activation_bytes == m4[0].activation_bytes);
    CHECK(m8[1].moments.optimizer_step == m4[1].moments.optimizer_step);
  }
  SECTION("the result says so among its assumptions, only where it applies") {
    CHECK(estimate_of(config("fsdp2", 4)).has(Assumption::trainmem_torch_pipeline));
    CHECK_FALSE(estimate_of(config("megatron", 4)).has(Assumption::trainmem_torch_pipeline));
  }
}

TEST_CASE("fsdp2 with pipeline stages steps on sharded gradients", "[trainmem][pipeline][golden]") {
  // Without gradient sync until the last microbatch a stage keeps every unsharded gradient in
  // fp32 (4 B per parameter); the last backward reduce-scatters them, so the optimizer step holds
  // 4 B / DP 4: 3 B per parameter less. The gathered buffers are freed after backward too.
  const Estimate est = estimate_of(R"({"profile": "trainmem", "framework": "fsdp2", "num_layers": 4,
      "hidden_size": 256, "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096,
      "seq_length": 512, "micro_batch_size": 1, "pipeline_model_parallel_size": 2,
      "data_parallel_size": 4, "num_microbatches": 4, "optimizer_implementation": "fused"})");
  REQUIRE(est.most_loaded_stage == 1);  // the last stage: it holds every microbatch's logits
  const double P = est.params.per_gpu;
  CHECK(est.state.gradients.total() == 4 * P);
  // The last stage's end-of-step pipeline tensors (as in the test above, A = 262,144 B and bf16
  // logits 4,194,304 B): 4 activation buffers and their 4 input gradients, 4 outputs; the fused
  // optimizer adds nothing. Workspaces 96 MiB.
  const double pipeline_end = 8 * 262'144.0 + 4 * 4'194'304.0;
  CHECK_THAT(est.moments.optimizer_step,
             WithinRel(est.weight_and_optimizer_bytes - 3 * P - est.state.buffers.total() + 100'663'296.0 + pipeline_end,
                       k_rel_tol_exact));
}

TEST_CASE("the peak is the largest moment of a step", "[trainmem][property]") {
  const std::string recompute = GENERATE(as<std::string>{}, "none", "selective", "full");
  const std::string framework = GENERATE(as<std::string>{}, "megatron", "fsdp2", "ddp");
  CAPTURE(recompute, framework);
  // Megatron's selective recompute (recompute_modules) runs Megatron Core's layer only.
  const std::string implementation =
      recompute == "selective" ? R"(, "model_implementation": "megatron-core")" : "";
  const std::string json = R"({"profile": "trainmem", "num_layers": 4, "hidden_size": 256,
      "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096, "seq_length": 512,
      "micro_batch_size": 2, "data_parallel_size": 2, "framework": ")" + framework +
                           R"(", "recompute_granularity": ")" + recompute + "\"" + implementation + "}";
  const Estimate est = estimate_of(json);
  CHECK(est.total_bytes == est.moments.peak());
  // The peak's split adds back up to it; an optimizer-step peak holds no activations.
  REQUIRE_THAT(est.weight_and_optimizer_bytes + est.moments.peak_activation_bytes +
                   est.moments.peak_temporary_bytes,
               WithinRel(est.total_bytes, k_rel_tol_exact));
  if (est.moments.peak_moment == Moment::optimizer_step) CHECK(est.moments.peak_activation_bytes == 0);
  CHECK(est.moments.forward >= est.weight_and_optimizer_bytes + est.activation_bytes);
  CHECK(est.moments.optimizer_step >= est.weight_and_optimizer_bytes);
  SECTION("full recompute never keeps more than selective, selective never more than none") {
    auto activation = [&](const std::string& rc) {
      return estimate_of(R"({"profile": "trainmem", "num_layers": 4, "hidden_size": 256,
          "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096,
          "seq_length": 512, "micro_batch_size": 2, "recompute_granularity": ")" + rc + "\"}")
          .activation_bytes;
    };
    CHECK(activation("full") <= activation("selective"));
    CHECK(activation("selective") <= activation("none"));
  }
}

TEST_CASE("a per-stage list places any split, in Megatron's virtual-stage order", "[trainmem][pipeline]") {
  // 8 layers on PP 2 with 2 chunks per rank: virtual stage s runs on rank s mod 2 as chunk s / 2
  // and holds the layers after those of stages 0 … s − 1 (PipelineParallelLayerLayout).
  const std::string model = R"("profile": "trainmem", "num_layers": 8, "hidden_size": 256,
      "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096, "seq_length": 512,
      "micro_batch_size": 1, "num_microbatches": 16, "pipeline_model_parallel_size": 2,
      "virtual_pipeline_model_parallel_size": 2)";
  SECTION("the even split written out is the even split") {
    const std::string even = "{" + model + "}";
    const std::string listed = "{" + model + R"(, "pipeline_stage_layers": [2, 2, 2, 2]})";
    CHECK(estimate_of(listed).total_bytes == estimate_of(even).total_bytes);
    const auto a = stages_of(even), b = stages_of(listed);
    REQUIRE((a.size() == 2 && b.size() == 2));
    for (size_t r = 0; r < 2; ++r) {
      CHECK(b[r].total_bytes == a[r].total_bytes);
      CHECK(b[r].activation_bytes == a[r].activation_bytes);
    }
  }
  SECTION("[3, 1, 2, 2]: rank 0 holds stages 0 and 2 (5 layers), rank 1 stages 1 and 3 (3)") {
    const std::string json = "{" + model + R"(, "pipeline_stage_layers": [3, 1, 2, 2]})";
    const auto stages = stages_of(json);
    REQUIRE(stages.size() == 2);
    CHECK(stages[0].num_layers == 5);
    CHECK(stages[1].num_layers == 3);
    // Every layer here is the same dense layer ℓ; e is the embedding's, o the loss chunk's.
    // Megatron's interleaved schedule (get_model_chunk_id): forward i runs chunk (i mod 4) / 2,
    // backward j chunk 1 − (j mod 4) / 2; after W warm-up forwards, iteration j runs forward
    // W + j and then backward j. The peak is the largest moment after a forward.
    //  - Rank 0, chunks c0 = 3ℓ + e (stage 0) and c1 = 2ℓ (stage 2). Warm-up W = (p − r − 1)·2 +
    //    (v − 1)·p = 4: forwards 0-4 run chunks 0,0,1,1,0 = 3 c0 + 2 c1 = 13ℓ + 3e. Then
    //    backward 0 frees a c1 and forward 5 adds a c0: 4 c0 + c1 = 14ℓ + 4e, the peak (backward 2
    //    frees a c0 and forward 7 adds a c1: back to 13ℓ + 3e).
    //  - Rank 1, chunks c0 = ℓ (stage 1) and c1 = 2ℓ (stage 3). W = 2: forwards 0-2 run chunks
    //    0,0,1 = 4ℓ; backward 0 frees a c1, forward 3 adds a c1: 4ℓ; backward 1 frees a c1,
    //    forward 4 adds a c0: 3ℓ; … the peak is 4ℓ, and the loss chunk once.
    // (The rank's average chunk would say 2.5 × (5ℓ + e) and 1.5 × 3ℓ.)
    const Config c = config_from(json);
    const double l = layer_activation_bytes(c, false, LayerRecompute::policy);
    const double e = embedding_activation_bytes(c), o = output_activation_bytes(c);
    CHECK_THAT(stages[0].activation_bytes, WithinRel(14 * l + 4 * e, k_rel_tol_exact));
    CHECK_THAT(stages[1].activation_bytes, WithinRel(4 * l + o, k_rel_tol_exact));
  }
  SECTION("layer indices follow the list: the MoE layers land where Megatron builds them") {
    // moe_layer_freq [0,0,0,0,1,1,1,1] with [4, 1, 1, 2]: rank 0 builds layers 0-3 (stage 0) and
    // 5 (stage 2), rank 1 layer 4 (stage 1) and 6-7 (stage 3): one MoE layer against three. Each
    // MoE layer holds 4 experts of 2 × 256 × 512 weights (no biases) = 1,048,576 routed parameters.
    const std::string json = "{" + model + R"(, "num_moe_experts": 4, "moe_ffn_hidden_size": 512,
        "moe_router_topk": 1, "add_bias_linear": false, "moe_layer_freq": [0, 0, 0, 0, 1, 1, 1, 1],
        "pipeline_stage_layers": [4, 1, 1, 2]})";
    const auto stages = stages_of(json);
    REQUIRE(stages.size() == 2);
    CHECK(stages[0].routed == 1 * 1'048'576.0);
    CHECK(stages[1].routed == 3 * 1'048'576.0);
  }
  SECTION("an empty stage holds no layers, and the rank keeps its other chunk's") {
    const auto stages = stages_of("{" + model + R"(, "pipeline_stage_layers": [0, 4, 4, 0]})");
    CHECK(stages[0].num_layers == 4);
    CHECK(stages[1].num_layers == 4);
  }
}
