// Prints estimates per second for the reference profiles (a benchmark, not a test: it asserts
// nothing). Target from the core issue: under 70 ns per reference-profile estimate.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/json_io.hpp"
#include "trainmem/slots.hpp"

namespace {

trainmem::Config llama3_70b(trainmem::Profile profile) {
  trainmem::ConfigInput in;
  in.profile = profile;
  in.num_layers = 80;
  in.hidden_size = 8192;
  in.num_attention_heads = 64;
  in.num_query_groups = 8;
  in.ffn_hidden_size = 28672;
  in.vocab_size = 128256;
  in.swiglu = true;
  in.seq_length = 8192;
  in.micro_batch_size = 1;
  in.tensor_model_parallel_size = 8;
  in.pipeline_model_parallel_size = 4;
  in.virtual_pipeline_model_parallel_size = 5;
  in.data_parallel_size = 4;
  in.use_distributed_optimizer = true;
  in.sequence_parallel = true;
  in.recompute_granularity = trainmem::RecomputeGranularity::selective;
  const trainmem::Resolved resolved = trainmem::resolve(in);
  if (!resolved.ok()) {
    for (const auto& issue : resolved.issues) std::fprintf(stderr, "%s\n", issue.message.c_str());
    std::exit(2);
  }
  return resolved.config;
}

void run(const char* label, trainmem::Config config, int n = 2'000'000) {
  using clock = std::chrono::steady_clock;
  volatile double sink = 0;
  const auto start = clock::now();
  for (int i = 0; i < n; ++i) {
    config.micro_batch_size = 1 + (i & 3);  // vary an input so nothing is hoisted out of the loop
    sink = sink + trainmem::estimate_training_memory(config, 0).total_bytes;
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("%-44s %8.1f ns/estimate  %6.2f M estimates/s\n", label, seconds / n * 1e9,
              n / seconds / 1e6);
}

// The page's call: config JSON in, result JSON out (parse, resolve, estimate, serialise), for the
// page's start configuration (Llama 3.1 8B, TP 2, DP 4, distributed optimizer, SP, selective
// recompute, 8192 tokens, an 80 GiB GPU).
void run_json(int n = 5'000) {
  const std::string config = R"({"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
      "num_query_groups": 8, "ffn_hidden_size": 14336, "swiglu": true, "vocab_size": 128256,
      "normalization": "RMSNorm", "add_bias_linear": false, "share_embeddings_and_output_weights": false,
      "seq_length": 8192, "micro_batch_size": 1, "tensor_model_parallel_size": 2, "data_parallel_size": 4,
      "use_distributed_optimizer": true, "sequence_parallel": true, "recompute_granularity": "selective",
      "gpu_memory_bytes": 85520809984})";
  using clock = std::chrono::steady_clock;
  size_t sink = 0;
  auto start = clock::now();
  for (int i = 0; i < n; ++i) sink += trainmem::estimate_json(config).size();
  double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("%-44s %8.2f us/call\n", "estimate_json, the page's start config", seconds / n * 1e6);
  const trainmem::Run run = trainmem::run_estimate(config);
  start = clock::now();
  for (int i = 0; i < n; ++i) sink += trainmem::full_estimate(run.config).stages.size();
  seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("%-44s %8.2f us/call  (%zu)\n", "  of which full_estimate", seconds / n * 1e6, sink % 10);
  // The page's numeric path after decoding the slots: resolve, full_estimate and the result slots
  // (what estimate_slots does in the module; the page bench times the module call itself).
  trainmem::SlotResult slots;
  const trainmem::ConfigInput input = trainmem::parse_config_json(config).input;
  start = clock::now();
  for (int i = 0; i < n; ++i) {
    const trainmem::Resolved resolved = trainmem::resolve(input);
    trainmem::write_result_slots(resolved.config, trainmem::full_estimate(resolved.config), slots);
    sink += slots.numbers.size();
  }
  seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("%-44s %8.2f us/call  (%zu)\n", "resolve + full_estimate + result slots", seconds / n * 1e6, sink % 10);
}

// The same numeric path for an FSDP2 run whose reserved figure comes from the caching allocator
// simulation (torchtitan's Llama 3.1 8B on 8 GPUs, selective recompute, 8192 tokens; validation
// TT-T1's shape), with allocator_fragmentation as given (0: simulate).
void run_simulated(const char* label, const char* fragmentation, int n = 2'000) {
  const std::string config = std::string(R"({"framework": "fsdp2", "zero_stage": 3, "num_layers": 32,
      "hidden_size": 4096, "num_attention_heads": 32, "num_query_groups": 8, "ffn_hidden_size": 14336,
      "swiglu": true, "vocab_size": 128256, "normalization": "RMSNorm", "add_bias_linear": false,
      "share_embeddings_and_output_weights": false, "seq_length": 8192, "micro_batch_size": 1,
      "data_parallel_size": 8, "model_implementation": "torchtitan", "recompute_granularity": "selective_op", "gpu_memory_bytes": 85520809984)") +
                             (fragmentation ? std::string(", \"allocator_fragmentation\": ") + fragmentation : "") + "}";
  trainmem::SlotResult slots;
  const trainmem::ConfigInput input = trainmem::parse_config_json(config).input;
  size_t sink = 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (int i = 0; i < n; ++i) {
    const trainmem::Resolved resolved = trainmem::resolve(input);
    if (!resolved.ok()) {
      std::fprintf(stderr, "%s\n", resolved.issues.front().message.c_str());
      std::exit(2);
    }
    trainmem::write_result_slots(resolved.config, trainmem::full_estimate(resolved.config), slots);
    sink += slots.numbers.size();
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("%-44s %8.2f us/call  (%zu)\n", label, seconds / n * 1e6, sink % 10);
}

// A result that does not fit (issue 31's shared link: Llama 3.1 70B, TP 8, PP 2, DP 4, 8192 tokens,
// no recompute, an 80 GB GPU): the whole answer, its suggestions and minimum GPU count included,
// each change tested with the allocator factor's figure first (suggest.cpp).
void run_does_not_fit(int n = 200) {
  const std::string config = R"({"num_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
      "num_query_groups": 8, "ffn_hidden_size": 28672, "swiglu": true, "vocab_size": 128256,
      "normalization": "RMSNorm", "add_bias_linear": false, "share_embeddings_and_output_weights": false,
      "seq_length": 8192, "micro_batch_size": 1, "tensor_model_parallel_size": 8,
      "pipeline_model_parallel_size": 2, "data_parallel_size": 4, "gpu_memory_bytes": 85520809984})";
  const trainmem::Run run = trainmem::run_estimate(config);
  size_t sink = 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (int i = 0; i < n; ++i) sink += trainmem::full_estimate(run.config).suggestions.size() + 1;
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("%-44s %8.2f us/call  (%zu)\n", "full_estimate, 70B link that does not fit", seconds / n * 1e6, sink % 10);
}

}  // namespace

int main() {
  auto bridge = llama3_70b(trainmem::Profile::megatron_bridge);
  run("megatron-bridge, Llama-3 70B TP8 PP4 VPP5", bridge);
  bridge.pipeline_model_parallel_size = 1;
  bridge.virtual_pipeline_model_parallel_size = 0;
  run("megatron-bridge, Llama-3 70B TP8 PP1", bridge);
  run("megatron-lm, Llama-3 70B TP8 PP4 VPP5", llama3_70b(trainmem::Profile::megatron_lm));
  // The default profile evaluates every stage, tensor by tensor: far more work per estimate.
  run("trainmem, Llama-3 70B TP8 PP4 VPP5", llama3_70b(trainmem::Profile::trainmem), 20'000);
  run_json();
  run_simulated("  the same, fsdp2 8B, reserved factor 0.05", "0.05");
  run_simulated("  the same, fsdp2 8B, reserved simulated", "0");
  run_does_not_fit();
  return 0;
}
