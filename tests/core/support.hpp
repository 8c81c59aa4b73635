// Shared helpers for the Catch2 tests of the core.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/json_io.hpp"

namespace trainmem::test {

// Results of the reference profiles must agree with the references to the byte: relative error
// at most 1e-12 (reference §7), exact where the value is an integer.
inline constexpr double k_rel_tol_exact = 1e-12;

// A resolved Config from JSON text; fails the test (printing the issues) if it is not valid.
inline Config config_from(const std::string& json) {
  ParsedConfig parsed = parse_config_json(json);
  Resolved resolved = resolve(parsed.input);
  std::string problems;
  for (const Issue& i : parsed.issues) problems += i.message + "\n";
  for (const Issue& i : resolved.issues) problems += i.message + "\n";
  INFO(problems);
  REQUIRE(problems.empty());
  return resolved.config;
}

// A single expected message, as messages_for returns one.
inline std::vector<std::string> one(const std::string& message) { return {message}; }

// The messages estimate_json / run_estimate report for a config.
inline std::vector<std::string> messages_for(const std::string& json) {
  std::vector<std::string> out;
  for (const Issue& i : run_estimate(json).issues) out.push_back(i.message);
  return out;
}

inline Estimate estimate_of(const std::string& json) {
  const Config c = config_from(json);
  return estimate_training_memory(c, c.num_microbatches);
}

inline std::vector<StageParams> stages_of(const std::string& json) {
  return pipeline_stages(config_from(json));
}

// The small Llama-style model the fine-tuning tests count by hand (finetune, qlora, kbit_upcast):
// 2 layers, h = 1024, 8 heads of 128 (MHA), SwiGLU f = 4096, vocabulary 32,000 (a multiple of
// 128: no padding; tied embeddings unless `more` says otherwise), RMSNorm, no biases, no dropout;
// one sequence of 1,024 tokens on a one-GPU node. `more`: fields added to it ("" for none).
inline const std::string k_small_llama = R"("num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
    "ffn_hidden_size": 4096, "vocab_size": 32000, "normalization": "RMSNorm", "swiglu": true,
    "add_bias_linear": false, "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 1024,
    "micro_batch_size": 1, "gpus_per_node": 1)";
inline std::string small_llama(const std::string& more) {
  return "{" + k_small_llama + (more.empty() ? "" : ", " + more) + "}";
}

// The value of a trace entry (fails the test when there is none).
inline double trace_value(const Trace& trace, const std::string& name) {
  for (const TraceEntry& e : trace)
    if (e.name == name) return e.value;
  FAIL("no trace entry " << name);
  return 0;
}

// A one-layer eager Llama small enough to count by hand: h 64, 2 heads of 32 (no GQA), f 128,
// V 512, one sequence of 8 tokens (T = 8), fp32, AdamW, one microbatch per step (the gradients
// freed by zero_grad between steps), no library workspace: as the timeline oracle runs it
// (tests/oracle/timeline.py), in the given model_implementation, with `more` fields added.
inline std::string tiny_llama(std::string_view implementation, const std::string& more) {
  return R"({"profile": "trainmem", "framework": "ddp", "data_parallel_size": 1,
      "model_implementation": ")" + std::string(implementation) + R"(", "num_layers": 1, "hidden_size": 64,
      "num_attention_heads": 2, "num_query_groups": 2, "kv_channels": 32, "ffn_hidden_size": 128,
      "vocab_size": 512, "make_vocab_size_divisible_by": 1, "share_embeddings_and_output_weights": false,
      "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
      "add_bias_linear": false, "seq_length": 8, "micro_batch_size": 1, "global_batch_size": 1,
      "params_dtype": "fp32", "compute_dtype": "fp32", "optimizer": "adamw",
      "attention_backend": "unfused", "attention_dropout": 0, "hidden_dropout": 0,
      "workspace_bytes": 0)" +
         (more.empty() ? "" : ", " + more) + "}";
}

// A command line split at single spaces, as the importers' tests give one (no quotes in them).
inline std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    const size_t space = std::min(text.find(' ', start), text.size());
    out.push_back(text.substr(start, space - start));
    start = space + 1;
  }
  return out;
}

// Whether any of an import's notes (read:, assumed:, ignored:) contains `part`.
inline bool has_line(const std::vector<std::string>& notes, std::string_view part) {
  for (const std::string& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace trainmem::test
