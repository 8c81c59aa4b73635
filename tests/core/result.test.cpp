// full_estimate computes everything a result shows once; the writers only read it.
#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;
using Catch::Matchers::WithinRel;

namespace {

const char* k_llama_8b = R"("num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_query_groups": 8, "ffn_hidden_size": 14336, "swiglu": true, "vocab_size": 128256,
    "normalization": "RMSNorm", "share_embeddings_and_output_weights": false,
    "seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64)";

std::string with(const std::string& profile, const std::string& layout) {
  return std::string("{") + k_llama_8b + R"(, "profile": ")" + profile + "\", " + layout + "}";
}

}  // namespace

// Whether a type has what only a result has (full_estimate's stages, log line, suggestions).
template <class T>
constexpr bool has_result_parts = requires(const T& e) {
  e.stages;
  e.reference_line;
  e.suggestions;
  e.verdicts;
};

TEST_CASE("full_estimate holds the stages and the log line the separate calls give", "[result]") {
  const std::string profile = GENERATE(as<std::string>{}, "trainmem", "megatron-bridge", "megatron-lm");
  const std::string layout = GENERATE(as<std::string>{},
      R"("tensor_model_parallel_size": 2, "sequence_parallel": true, "data_parallel_size": 4,
         "use_distributed_optimizer": true, "recompute_granularity": "selective")",
      R"("pipeline_model_parallel_size": 4, "data_parallel_size": 2)",
      R"("pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 4,
         "tensor_model_parallel_size": 4, "sequence_parallel": true)");
  CAPTURE(profile, layout);
  const Config c = config_from(with(profile, layout));
  const FullEstimate full = full_estimate(c);
  const Estimate plain = estimate_training_memory(c, c.num_microbatches);
  CHECK(full.total_bytes == plain.total_bytes);
  CHECK(full.weight_and_optimizer_bytes == plain.weight_and_optimizer_bytes);
  // A pass's Estimate is its own type, with nothing of a result's to leave half-filled.
  static_assert(!has_result_parts<Estimate> && has_result_parts<FullEstimate>);
  const std::vector<StageParams> stages = pipeline_stages(c);
  REQUIRE(full.stages.size() == stages.size());
  for (size_t r = 0; r < stages.size(); ++r) {
    CAPTURE(r);
    CHECK(full.stages[r].num_layers == stages[r].num_layers);
    CHECK(full.stages[r].weight_and_optimizer_bytes == stages[r].weight_and_optimizer_bytes);
    CHECK(full.stages[r].total_bytes == stages[r].total_bytes);
    CHECK(full.stages[r].device_bytes == stages[r].device_bytes);
  }
  // Stages are listed by the trainmem profile always and by Bridge with PP > 1 (README).
  const bool listed = profile == "trainmem" || (profile == "megatron-bridge" && c.pipeline_model_parallel_size > 1);
  CHECK(full.stages.empty() == !listed);
  CHECK(full.reference_line == report_theoretical_memory(c, c.num_microbatches));
  CHECK(full.reference_line.rfind("Theoretical memory footprints: weight and optimizer=", 0) == 0);
}

TEST_CASE("the training log's line is shown only for runs Megatron-LM would launch", "[result]") {
  // Issue 32 item 6: a torchtune LoRA run was shown "compare with your run's log: 1,211,157 MB".
  const std::string model = R"({"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
      "vocab_size": 32000, "seq_length": 1024, "micro_batch_size": 1)";
  CHECK_FALSE(full_estimate(config_from(model + "}")).reference_line.empty());  // trainmem, Megatron
  CHECK(full_estimate(config_from(model + R"(, "framework": "fsdp2", "data_parallel_size": 2})")).reference_line.empty());
  CHECK(full_estimate(config_from(model + R"(, "framework": "deepspeed", "zero_stage": 3, "data_parallel_size": 2})"))
            .reference_line.empty());
  CHECK(full_estimate(config_from(model + R"(, "framework": "ddp", "peft": "lora", "lora_rank": 8})")).reference_line.empty());
  // The reference profiles are the log's formula: always.
  CHECK_FALSE(full_estimate(config_from(model + R"(, "profile": "megatron-lm"})")).reference_line.empty());
}

TEST_CASE("the overhead lines add allocated up to reserved and reserved up to device", "[result]") {
  const std::string layout = GENERATE(as<std::string>{},
      R"("tensor_model_parallel_size": 2, "sequence_parallel": true, "data_parallel_size": 4,
         "use_distributed_optimizer": true, "recompute_granularity": "selective")",
      R"("framework": "fsdp2", "data_parallel_size": 8, "allocator_fragmentation": 0.2,
         "cuda_context_bytes": 1073741824, "nccl_nvls": true)",
      R"("framework": "deepspeed", "zero_stage": 3, "data_parallel_size": 16, "gpus_per_node": 4)");
  CAPTURE(layout);
  // The allocator line by hand needs the factor alone: 5 % where the layout sets none (unset,
  // reserved is the larger of it and the simulated allocator, fsdp1.test.cpp).
  Config c = config_from(with("trainmem", layout));
  c.allocator_fragmentation = c.allocator_fragmentation.value_or(0.05);
  const FullEstimate e = full_estimate(c);
  REQUIRE(e.n_overhead_lines == 3);
  CHECK(e.overhead_lines[0].key == "caching_allocator");
  CHECK(e.overhead_lines[1].key == "cuda_context");
  CHECK(e.overhead_lines[2].key == "nccl");
  double reserved = e.total_bytes, device = 0;
  for (int i = 0; i < e.n_overhead_lines; ++i) {
    const OverheadLine& line = e.overhead_lines[size_t(i)];
    CHECK(line.bytes >= 0);
    if (line.adds_to == "reserved") reserved += line.bytes;
  }
  CHECK_THAT(reserved, WithinRel(e.reserved_bytes, 1e-12));
  device = e.reserved_bytes;
  for (int i = 0; i < e.n_overhead_lines; ++i)
    if (e.overhead_lines[size_t(i)].adds_to == "device") device += e.overhead_lines[size_t(i)].bytes;
  CHECK_THAT(device, WithinRel(e.device_bytes, 1e-12));
  // By hand: the allocator line is allocated × fragmentation; the
  // context is the field's value.
  CHECK_THAT(e.overhead_lines[0].bytes, WithinRel(e.total_bytes * *c.allocator_fragmentation, 1e-9));
  CHECK(e.overhead_lines[1].bytes == c.cuda_context_bytes);
  CHECK(e.overhead_lines[2].bytes == e.nccl.bytes());
  // Each stage's bars above allocated: the allocator share of its own peak (× fragmentation), and
  // with the context and NCCL buffers for device (no paged states here).
  for (const StageParams& s : e.stages) {
    CHECK_THAT(s.reserved_overhead_bytes, WithinRel(s.total_bytes * *c.allocator_fragmentation, 1e-9));
    CHECK_THAT(s.device_overhead_bytes,
               WithinRel(s.reserved_overhead_bytes + c.cuda_context_bytes + e.nccl.bytes(), 1e-9));
  }
}

TEST_CASE("the reference profiles have no overhead lines", "[result]") {
  const std::string profile = GENERATE(as<std::string>{}, "megatron-bridge", "megatron-lm");
  const FullEstimate e = full_estimate(config_from(with(profile, R"("data_parallel_size": 2)")));
  CHECK(e.n_overhead_lines == 0);
}
