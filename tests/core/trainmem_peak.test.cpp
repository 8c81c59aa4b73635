// The trainmem profile's activations on every stage, the peak over the moments of a step, and
// the seed's worked example (shared/seeds/003: an FFN-only model on H100s and TPU v5p).
#include "support.hpp"

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
  CHECK(est.minimum_devices == 68);
}

TEST_CASE("with half the activations alive the seed's model fits 46 TPU v5p of 95 GiB", "[trainmem][golden][seed]") {
  // The seed shards the weights, the optimizer and half of the activations n ways. Half the
  // activations alive at once is the same global batch as two microbatches of 64.
  const Estimate est = estimate_of(seed(R"("micro_batch_size": 64, "global_batch_size": 128,
      "gpu_memory_bytes": 102005473280)"));
  CHECK(est.activation_bytes / GiB == 1071.0);
  // ceil((3,276 + 1,071) / 95) = ceil(45.76) = 46.
  CHECK(est.minimum_devices == 46);
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

TEST_CASE("the peak is the largest moment of a step", "[trainmem][property]") {
  const std::string recompute = GENERATE(as<std::string>{}, "none", "selective", "full");
  const std::string framework = GENERATE(as<std::string>{}, "megatron", "fsdp2", "ddp");
  CAPTURE(recompute, framework);
  const std::string json = R"({"profile": "trainmem", "num_layers": 4, "hidden_size": 256,
      "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096, "seq_length": 512,
      "micro_batch_size": 2, "data_parallel_size": 2, "framework": ")" + framework +
                           R"(", "recompute_granularity": ")" + recompute + "\"}";
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
