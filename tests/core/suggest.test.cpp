// What to change when a run does not fit (core/src/estimate/suggest.cpp): the cases the planner's
// test (planner.test.cpp, "suggestions: ...") does not cover.
#include <string>
#include <variant>
#include <vector>

#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {
// The config with a suggestion's fields written over it, resolved again (as the page and the CLI
// apply a suggestion).
Resolved with_suggestion(const Config& config, const Suggestion& s) {
  ConfigInput input = to_input(config);
  for (const auto& [field, value] : s.fields) REQUIRE_FALSE(set_field(input, field, value));
  return resolve(input);
}
}  // namespace

TEST_CASE("suggestions with a global batch: the microbatch count follows the change", "[suggest]") {
  // Global batch 128, micro batch 64: num_microbatches resolves to 2. A smaller micro batch
  // changes the count (micro 32: 4 microbatches), so the suggestion unsets it, as it must to be
  // written over the config; without that no micro batch (nor DP) change ever resolved.
  const Config config = config_from(R"({"num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
      "ffn_hidden_size": 4096, "vocab_size": 32000, "seq_length": 1024, "micro_batch_size": 64,
      "global_batch_size": 128, "gpu_memory_bytes": 20e9})");
  REQUIRE(config.num_microbatches == 2);
  const std::vector<Suggestion> all = suggest_changes(config);
  const Suggestion* micro = nullptr;
  for (const Suggestion& s : all)
    if (s.rank == 1) micro = &s;
  REQUIRE(micro != nullptr);
  // The divisors of 128 below 64 are 1, 2, 4, 8, 16 and 32; 32 fits 20 GB (the estimate below).
  REQUIRE(micro->fields.size() == 2);
  CHECK(micro->fields[0].first == "micro_batch_size");
  CHECK(std::get<double>(micro->fields[0].second) == 32);
  CHECK(micro->fields[1].first == "num_microbatches");
  CHECK(std::holds_alternative<std::monostate>(micro->fields[1].second));
  for (const Suggestion& s : all) {
    CAPTURE(s.what);
    const Resolved r = with_suggestion(config, s);
    REQUIRE(r.ok());
    CHECK(r.config.global_batch_size == 128);
    CHECK(estimate_training_memory(r.config, r.config.num_microbatches).device_bytes == s.figure_bytes);
    CHECK(s.figure_bytes <= config.gpu_memory_bytes);
  }
  // Holding the microbatch count holds the micro batch too (global = micro × DP × count).
  const std::vector<std::string> held = {"num_microbatches"};
  for (const Suggestion& s : suggest_changes(config, held)) CHECK(s.rank != 1);
}

TEST_CASE("the allocator factor's figure is a lower bound of the default one, which suggestions and the planner rely on",
          "[suggest][allocator]") {
  // factor_only (estimate.hpp): with allocator_fragmentation unset, reserved is the larger of the
  // 5 % factor and the simulated caching allocator, stage by stage, and the compared figure is the
  // largest stage's device bytes; so the factor-only config's figure can only be lower or equal.
  // suggest_changes drops a change too big by it without simulating it: a change that fits would
  // be lost only if this failed. Pipelines (stages whose simulations differ), FSDP1 and FSDP2,
  // DeepSpeed, QLoRA on a 20 GB GPU, and a run that does not fit a 12 GB GPU (13.2 GB), whose
  // suggestions are checked against their changes' own simulated figures.
  const std::string model = R"("profile": "trainmem", "num_layers": 8, "hidden_size": 2048, "num_attention_heads": 16,
      "num_query_groups": 4, "ffn_hidden_size": 5632, "swiglu": true, "vocab_size": 32000, "seq_length": 2048,
      "micro_batch_size": 2, "global_batch_size": 32, )";
  const char* runs[] = {
      R"("framework": "megatron", "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 4, "data_parallel_size": 1, "gpu_memory_bytes": 20e9)",
      R"("framework": "megatron", "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "data_parallel_size": 2, "gpu_memory_bytes": 20e9)",
      R"("framework": "fsdp2", "zero_stage": 3, "data_parallel_size": 4, "gpu_memory_bytes": 20e9)",
      R"("framework": "fsdp2", "fsdp_version": 1, "zero_stage": 3, "data_parallel_size": 2, "offload_params": true, "gpu_memory_bytes": 20e9)",
      R"("framework": "deepspeed", "zero_stage": 2, "data_parallel_size": 4, "gpu_memory_bytes": 20e9)",
      R"("framework": "ddp", "peft": "qlora", "params_dtype": "nf4", "model_implementation": "hf-transformers", "data_parallel_size": 1, "gpu_memory_bytes": 20e9)",
      R"("framework": "ddp", "data_parallel_size": 1, "gpu_memory_bytes": 12e9)",
  };
  int over = 0;
  for (const char* run : runs) {
    CAPTURE(run);
    const Config config = config_from("{" + model + run + "}");
    REQUIRE_FALSE(config.allocator_fragmentation.has_value());
    const Config floor = factor_only(config);
    REQUIRE(floor.allocator_fragmentation.has_value());
    const Estimate lower = estimate_training_memory(floor, floor.num_microbatches);
    const Estimate full = estimate_training_memory(config, config.num_microbatches);
    CHECK(compared_figure(floor, lower) <= compared_figure(config, full));
    // The allocated figure does not depend on the simulation.
    CHECK(lower.largest_stage_allocated_bytes == full.largest_stage_allocated_bytes);
    const double limit = fit_verdict(0, config.gpu_memory_bytes, 0).limit_bytes;
    if (compared_figure(config, full) <= limit) continue;
    // A run that does not fit: every suggestion carries the simulated figure of its change and
    // fits by it (the factor-first test never stands in for it).
    ++over;
    const std::vector<Suggestion> suggestions = suggest_changes(config);
    CHECK(suggestions.size() >= 2);  // full recompute; activations offloaded to the CPU
    for (const Suggestion& s : suggestions) {
      CAPTURE(s.what);
      const Resolved r = with_suggestion(config, s);
      REQUIRE(r.ok());
      CHECK(compared_figure(r.config, estimate_training_memory(r.config, r.config.num_microbatches)) == s.figure_bytes);
      CHECK(s.figure_bytes <= limit);
    }
  }
  CHECK(over == 1);
}
