// Absurd but syntactically valid inputs: a finite answer or a named error, never NaN, infinity,
// an overflow or a hang.
#include <cmath>

#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;

TEST_CASE("absurd sizes give finite figures or a named error in every profile", "[extremes]") {
  const std::string profile = GENERATE(as<std::string>{}, "trainmem", "megatron-bridge", "megatron-lm");
  const std::string extreme = GENERATE(as<std::string>{},
      // 10^7 GPUs of data parallelism, a 10^9 vocabulary, a 10^8-token sequence.
      R"("data_parallel_size": 10000000, "vocab_size": 1000000000, "seq_length": 100000000)",
      // 10^6 layers (the largest accepted) with a wide model.
      R"("num_layers": 1000000, "hidden_size": 1000000, "num_attention_heads": 1000)",
      // Every parallel size at its limit.
      R"("tensor_model_parallel_size": 1000000000, "num_attention_heads": 1000000000,
         "hidden_size": 1000000000, "kv_channels": 1, "context_parallel_size": 1000000000,
         "seq_length": 2000000000000)",
      // Values far beyond any range.
      R"("num_layers": 1e308)", R"("hidden_size": -0)", R"("micro_batch_size": 1.5)",
      R"("seq_length": "4096")", R"("vocab_size": -1e308)");
  CAPTURE(profile, extreme);
  const std::string json = R"({"profile": ")" + profile + R"(", "num_layers": 4, "hidden_size": 256,
      "num_attention_heads": 8, "vocab_size": 4096, "seq_length": 512, "micro_batch_size": 1, )" +
                           extreme + "}";
  const Run run = run_estimate(json);
  if (!run.ok()) {
    for (const Issue& issue : run.issues) {
      CAPTURE(issue.message);
      CHECK(issue.message.rfind(issue.field + ": ", 0) == 0);  // names the field first
    }
    return;
  }
  const Estimate& e = run.estimate;
  CHECK(std::isfinite(e.total_bytes));
  CHECK(std::isfinite(e.weight_and_optimizer_bytes));
  CHECK(std::isfinite(e.activation_bytes));
  CHECK(std::isfinite(e.params.total));
  CHECK(e.total_bytes >= 0);
  // The JSON never carries NaN or Infinity.
  const std::string out = estimate_to_json(run.config, e, nullptr);
  CHECK(out.find("NaN") == std::string::npos);
  CHECK(out.find("Infinity") == std::string::npos);
}
