// Properties that must hold for every configuration, checked over grids of layouts.
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "support.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

namespace {

// An MoE model small enough to vary every parallel size over a grid.
Config moe_config(Profile profile, int64_t t, int64_t p, int64_t e, int64_t d, int64_t c, int64_t b,
                  bool distributed) {
  ConfigInput in;
  in.profile = profile;
  in.num_layers = 8;
  in.hidden_size = 256;
  in.num_attention_heads = 8;
  in.num_query_groups = 8;
  in.ffn_hidden_size = 1024;
  in.vocab_size = 5000;
  in.swiglu = true;
  in.num_moe_experts = 8;
  in.moe_router_topk = 2;
  in.moe_layer_freq = 2;
  in.moe_ffn_hidden_size = 256;
  in.moe_shared_expert_intermediate_size = 256;
  in.seq_length = 1024;
  in.micro_batch_size = b;
  in.tensor_model_parallel_size = t;
  in.pipeline_model_parallel_size = p;
  in.expert_model_parallel_size = e;
  in.expert_tensor_parallel_size = 1;
  in.data_parallel_size = d;
  in.context_parallel_size = c;
  in.sequence_parallel = t > 1;
  in.recompute_granularity = RecomputeGranularity::selective;
  in.use_distributed_optimizer = distributed;
  in.num_microbatches = 8;
  Resolved r = resolve(in);
  std::string problems;
  for (const Issue& i : r.issues) problems += i.message + "\n";
  INFO(problems);
  REQUIRE(r.ok());
  return r.config;
}

}  // namespace

TEST_CASE("components and tensor classes and stages add up to the totals", "[property]") {
  const Profile profile = GENERATE(Profile::megatron_bridge, Profile::megatron_lm);
  const int64_t t = GENERATE(1, 2, 4), p = GENERATE(1, 2, 4), e = GENERATE(1, 2, 4, 8);
  const bool distributed = GENERATE(false, true);
  CAPTURE(name_of(profile), t, p, e, distributed);
  const Config c = moe_config(profile, t, p, e, 8, 1, 1, distributed);
  const Estimate est = estimate_training_memory(c, c.num_microbatches);
  CAPTURE(est);
  double components = 0;
  for (int i = 0; i < est.n_components; ++i) components += est.components[size_t(i)].memory_bytes;
  CHECK(components == est.weight_and_optimizer_bytes);
  CHECK(est.weight_and_optimizer_bytes + est.activation_bytes == est.total_bytes);
  REQUIRE_THAT(est.state.total(), WithinRel(est.weight_and_optimizer_bytes, k_rel_tol_exact));
  CHECK(est.params.dense_per_gpu + est.params.routed_per_gpu == est.params.per_gpu);
  CHECK(est.params.embedding_per_gpu <= est.params.dense_per_gpu);
  CHECK(est.params.dense_transformer + est.params.embedding + est.params.routed_experts ==
        est.params.total);
  CHECK(est.params.active <= est.params.total);
  // The most-loaded GPU's model state is the largest of the stages' (Bridge lists them).
  double heaviest_stage = 0;
  const std::vector<StageParams> stages = pipeline_stages(c);
  for (const StageParams& s : stages) heaviest_stage = std::max(heaviest_stage, s.weight_and_optimizer_bytes);
  // Bridge lists stages only with PP > 1 (README, output "stages"); megatron-lm lists none.
  const bool listed = profile == Profile::megatron_bridge && p > 1;
  REQUIRE(stages.empty() == !listed);
  if (listed) REQUIRE_THAT(heaviest_stage, WithinRel(est.weight_and_optimizer_bytes, k_rel_tol_exact));
}

TEST_CASE("model state per GPU never grows with TP or PP or EP", "[property]") {
  const Profile profile = GENERATE(Profile::megatron_bridge, Profile::megatron_lm);
  const bool distributed = GENERATE(false, true);
  auto weights = [&](int64_t t, int64_t p, int64_t e) {
    // DP fixed at 8 keeps the optimizer shard constant while the model-parallel sizes vary.
    return estimate_training_memory(moe_config(profile, t, p, e, 8, 1, 1, distributed), 8)
        .weight_and_optimizer_bytes;
  };
  for (int64_t t : {1, 2, 4})
    for (int64_t p : {1, 2, 4})
      for (int64_t e : {1, 2, 4}) {
        CAPTURE(name_of(profile), distributed, t, p, e);
        CHECK(weights(2 * t, p, e) <= weights(t, p, e));
        CHECK(weights(t, 2 * p, e) <= weights(t, p, e));
        CHECK(weights(t, p, 2 * e) <= weights(t, p, e));
      }
}

TEST_CASE("activations are linear in the micro batch size", "[property]") {
  const Profile profile = GENERATE(Profile::megatron_bridge, Profile::megatron_lm);
  const int64_t p = GENERATE(1, 2, 4);
  CAPTURE(name_of(profile), p);
  const double one = estimate_training_memory(moe_config(profile, 2, p, 2, 8, 1, 1, true), 8).activation_bytes;
  for (int64_t b : {2, 3, 8}) {
    const double many = estimate_training_memory(moe_config(profile, 2, p, 2, 8, 1, b, true), 8).activation_bytes;
    REQUIRE_THAT(many, WithinRel(double(b) * one, k_rel_tol_exact));
  }
}

TEST_CASE("the dense optimizer shard divides master weights and Adam states by DP·CP", "[property]") {
  // Bridge shards dense optimizer state over DP × CP (reference §3.4).
  const Config base = moe_config(Profile::megatron_bridge, 1, 1, 1, 1, 1, 1, true);
  const Estimate one = estimate_training_memory(base, 8);
  for (int64_t d : {2, 4, 8})
    for (int64_t c : {1, 2, 4}) {
      const Estimate est = estimate_training_memory(moe_config(Profile::megatron_bridge, 1, 1, 1, d, c, 1, true), 8);
      CAPTURE(d, c, est);
      const double n = double(d * c);
      REQUIRE_THAT(est.state.optimizer_states.dense, WithinRel(one.state.optimizer_states.dense / n, k_rel_tol_exact));
      REQUIRE_THAT(est.state.master_weights.embedding, WithinRel(one.state.master_weights.embedding / n, k_rel_tol_exact));
      // Weights and the fp32 main gradients stay whole on every rank.
      CHECK(est.state.weights.dense == one.state.weights.dense);
      CHECK(est.state.gradients.dense == one.state.gradients.dense);
    }
}

TEST_CASE("a resolved configuration survives the round trip through its input form", "[property]") {
  const Config c = moe_config(Profile::megatron_bridge, 2, 2, 4, 8, 2, 2, true);
  const Resolved again = resolve(to_input(c));
  REQUIRE(again.ok());
  CHECK(again.config == c);
}

TEST_CASE("the JSON result's config reproduces the same estimate", "[property][json]") {
  const std::string first = estimate_json(R"({"num_layers": 80, "hidden_size": 8192,
      "num_attention_heads": 64, "num_query_groups": 8, "ffn_hidden_size": 28672,
      "vocab_size": 128256, "swiglu": true, "seq_length": 8192, "micro_batch_size": 1,
      "tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4,
      "virtual_pipeline_model_parallel_size": 5, "data_parallel_size": 4,
      "use_distributed_optimizer": true, "global_batch_size": 64})");
  const auto doc = nlohmann::json::parse(first);
  REQUIRE(doc["ok"] == true);
  const auto again = nlohmann::json::parse(estimate_json(doc["config"].dump()));
  CHECK(again["total_bytes"] == doc["total_bytes"]);
  CHECK(again["config"] == doc["config"]);
  CHECK(doc["config"]["num_microbatches"] == 16);  // 64 / (1 · 4)
}

// The log lines' figures are printf's "%.2f" (Megatron prints f"{x:.2f}": the same rounding of the
// exact binary value, ties to even). The core formats them without printf (two_decimals, cheaper
// in wasm); this holds it to the C library's printf, natively and in the wasm build (musl).
TEST_CASE("the log lines' two-decimal figures are printf's %.2f, byte for byte", "[properties]") {
  auto printed = [](double v) {
    Estimate est;  // no components, no activation: the line is "...: total=<v> MB"
    est.total_bytes = v * NUM_BYTES_IN_MEGABYTE;  // a power of two: the line divides it back exactly
    return format_training_memory_estimate(est, "MB");
  };
  auto expected = [](double v) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "Theoretical memory footprints: total=%.2f MB", v);
    return std::string(buf);
  };
  // Exact ties (k/8 and k/200 that are dyadic), values just off a tie, the sign of -0.001 and
  // -0.0, the largest magnitude done without printf (9e13) and beyond it.
  const std::vector<double> edges = {0.0, -0.0, 0.125, 0.375, 0.625, 2.675, 1.005, 0.005, 0.015,
                                     -0.001, -0.005, -0.125, 99.995, 12345.675, 0.994999999999,
                                     1e13 + 0.125, 8.999999999e13, 9e13, 9.5e13, 1e300,
                                     std::nextafter(0.125, 1.0), std::nextafter(0.125, 0.0),
                                     std::numeric_limits<double>::denorm_min(),
                                     std::numeric_limits<double>::infinity()};
  for (double v : edges) {
    INFO(v);
    CHECK(printed(v) == expected(v));
  }
  // Random values over every magnitude the figures take (bytes / 2^20 up to ~1e9), and values
  // built to sit on halves: n/8 and n·2^-k.
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t r = next();
    double v = 0;
    switch (r % 3) {
      case 0: v = std::ldexp(double(next() >> 11), -int(r % 60)); break;  // up to 2^53 / 2^k
      case 1: v = double(next() % 8000000) / 8.0; break;                   // exact eighths
      case 2: v = double(next() % 100000000) / 200.0; break;               // near halves
    }
    if (r & 8) v = -v;
    if (printed(v) != expected(v)) {
      ++mismatches;
      INFO(v);
      CHECK(printed(v) == expected(v));
      if (mismatches > 5) break;
    }
  }
  CHECK(mismatches == 0);
}
