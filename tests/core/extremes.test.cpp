// Absurd but syntactically valid inputs: a finite answer or a named error, never NaN, infinity,
// an overflow or a hang. Each case says which it must be: a case that should be answered and is
// rejected fails, and so does a rejection with another message.
#include <cmath>

#include "support.hpp"
#include "trainmem/report.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

struct Extreme {
  const char* what;
  const char* fields;
  std::vector<std::string> messages;  // empty: the estimate must be answered
};

const std::vector<Extreme>& extremes() {
  static const std::vector<Extreme> cases = {
      {"10^7 GPUs of data parallelism, a 10^9 vocabulary, a 10^8-token sequence",
       R"("data_parallel_size": 10000000, "vocab_size": 1000000000, "seq_length": 100000000)", {}},
      {"10^6 layers (the largest accepted) with a wide model",
       R"("num_layers": 1000000, "hidden_size": 1000000, "num_attention_heads": 1000)", {}},
      // The product of the parallel sizes is world_size, a field of at most 10^9 GPUs: beyond it
      // the resolved config could not be written back (to_input) and read again.
      {"every parallel size at its limit: more GPUs than world_size takes",
       R"("tensor_model_parallel_size": 1000000000, "num_attention_heads": 1000000000,
          "hidden_size": 1000000000, "kv_channels": 1, "context_parallel_size": 1000000000,
          "seq_length": 1000000000000)",
       {"world_size: must be at most 1000000000 GPUs, got tensor_model_parallel_size × "
        "pipeline_model_parallel_size × context_parallel_size × data_parallel_size = 1000000000 "
        "× 1 × 1000000000 × 1 = 1e+18"}},
      {"the largest world in tensor parallelism, the longest accepted sequence",
       R"("tensor_model_parallel_size": 1000000000, "num_attention_heads": 1000000000,
          "hidden_size": 1000000000, "kv_channels": 1, "seq_length": 1000000000000)",
       {}},
      {"the largest world in context parallelism (10^12 = 500 × 2·CP)",
       R"("context_parallel_size": 1000000000, "seq_length": 1000000000000)", {}},
      {"a sequence beyond the accepted range",
       R"("seq_length": 2000000000000)",
       {"seq_length: must be at most 1000000000000, got 2000000000000"}},
      {"layers far beyond the range", R"("num_layers": 1e308)",
       {"num_layers: must be at most 1000000, got 1e+308"}},
      {"negative zero", R"("hidden_size": -0)", {"hidden_size: must be at least 1, got 0"}},
      {"a fractional batch", R"("micro_batch_size": 1.5)",
       {"micro_batch_size: must be an integer, got 1.5"}},
      {"a number as a string", R"("seq_length": "4096")",
       {"seq_length: must be an integer, got the string \"4096\""}},
      {"the most negative double", R"("vocab_size": -1e308)",
       {"vocab_size: must be at least 0, got -1e+308"}},
  };
  return cases;
}

}  // namespace

TEST_CASE("absurd sizes give finite figures or a named error in every profile", "[extremes]") {
  const std::string profile = GENERATE(as<std::string>{}, "trainmem", "megatron-bridge", "megatron-lm");
  const size_t index = GENERATE(range(size_t(0), extremes().size()));
  const Extreme& extreme = extremes()[index];
  CAPTURE(profile, extreme.what);
  const std::string json = R"({"profile": ")" + profile + R"(", "num_layers": 4, "hidden_size": 256,
      "num_attention_heads": 8, "vocab_size": 4096, "seq_length": 512, "micro_batch_size": 1, )" +
                           extreme.fields + "}";
  const Run run = run_estimate(json);
  std::vector<std::string> messages;
  for (const Issue& issue : run.issues) messages.push_back(issue.message);
  REQUIRE(messages == extreme.messages);
  if (!run.ok()) return;  // rejected as the case says

  const FullEstimate& e = run.estimate;
  CHECK(std::isfinite(e.total_bytes));
  CHECK(std::isfinite(e.weight_and_optimizer_bytes));
  CHECK(std::isfinite(e.activation_bytes));
  CHECK(std::isfinite(e.params.total));
  CHECK(e.total_bytes > 0);
  CHECK(e.params.total > 0);
  // The JSON never carries NaN or Infinity.
  const std::string out = estimate_to_json(run.config, e, nullptr);
  CHECK(out.find("NaN") == std::string::npos);
  CHECK(out.find("Infinity") == std::string::npos);
  // The text report writes counts out in full: past 2^63 a long long turned them negative.
  const std::string text = text_report(run.config, e, nullptr);
  CHECK(text.find("(-") == std::string::npos);
  CHECK(text.find(", -") == std::string::npos);
  CHECK(text.find("nan") == std::string::npos);
}

TEST_CASE("a per-stage list on a 20,000-rank interleaved pipeline stays linear in its length", "[extremes][pipeline]") {
  // 40,000 virtual stages (PP 20,000 × VPP 2) of one layer each, but for rank 0's first chunk of
  // two: every rank's chunks are walked in O(VPP) (interleaved_chunk_peak), not O(PP × VPP), or
  // this would take 20,000² steps. The figures are finite and every rank is listed.
  std::string list = "[2";
  for (int i = 1; i < 40'000; ++i) list += i == 20'000 ? ", 0" : ", 1";
  list += "]";
  const std::string json = R"({"profile": "trainmem", "num_layers": 40000, "hidden_size": 256,
      "num_attention_heads": 8, "vocab_size": 4096, "seq_length": 512, "micro_batch_size": 1,
      "num_microbatches": 40000, "pipeline_model_parallel_size": 20000, "virtual_pipeline_model_parallel_size": 2,
      "pipeline_stage_layers": )" + list + "}";
  const Run run = run_estimate(json);
  REQUIRE(run.ok());
  CHECK(std::isfinite(run.estimate.total_bytes));
  const std::vector<StageParams>& stages = run.estimate.stages;
  REQUIRE(stages.size() == 20'000);
  CHECK(stages[0].num_layers == 2);  // stage 0 (2 layers) and stage 20,000 (none)
  CHECK(stages[1].num_layers == 2);
}
