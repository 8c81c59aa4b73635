// Shared helpers for the Catch2 tests of the core.
#pragma once

#include <catch2/catch.hpp>
#include <string>

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

// Whether any of an import's notes (read:, assumed:, ignored:) contains `part`.
inline bool has_line(const std::vector<std::string>& notes, std::string_view part) {
  for (const std::string& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace trainmem::test
