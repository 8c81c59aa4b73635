// JSON in and out: the one path the CLI and the WebAssembly module share.
//
// Input is one flat JSON object whose keys are the field names of config.hpp (Megatron's);
// parsing uses nlohmann::json (Debian's nlohmann-json3-dev). Output is the estimate as a JSON
// object; on bad input, {"ok": false, "issues": [{"field": ..., "message": ...}, ...]}.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"

namespace trainmem {

struct ParsedConfig {
  ConfigInput input;
  std::vector<Issue> issues;  // malformed JSON, unknown fields, values of the wrong type or range
};

// Parses a JSON object of config fields. Never throws.
ParsedConfig parse_config_json(std::string_view text);

// Parses and resolves: the configuration, or every issue found (a malformed document stops at
// its own issue; a field rejected while reading is not reported again as missing). Never throws.
Resolved resolve_config_json(std::string_view text, std::optional<Profile> profile = std::nullopt);

struct RunOptions {
  std::optional<Profile> profile;  // overrides the config's "profile"
  bool verbose = false;            // include "trace": every intermediate quantity and its formula
  int indent = -1;                 // -1: compact JSON
};

// Parse, override the profile, resolve and estimate: the pipeline every shell runs.
struct Run {
  std::vector<Issue> issues;  // when not empty, nothing else is set
  Config config;
  FullEstimate estimate;
  Trace trace;  // filled when options.verbose
  bool ok() const { return issues.empty(); }
};
Run run_estimate(std::string_view config_json, const RunOptions& options = {});

// Everything in one call: parse, resolve, estimate, serialize. Never throws: any problem is
// returned as {"ok": false, "issues": [...]}. The output's keys are documented in README.md.
std::string estimate_json(std::string_view config_json, const RunOptions& options = {});

// The result of a successful estimate as JSON (the same document estimate_json returns).
std::string estimate_to_json(const Config& config, const FullEstimate& estimate, const Trace* trace,
                             int indent = -1);
std::string issues_to_json(const std::vector<Issue>& issues, int indent = -1);

// A (possibly partial) input as JSON: the fields that are set, in the field table's order.
std::string config_input_json(const ConfigInput& input, int indent = -1);

// `config` as trainmem's input JSON: every field that is not Megatron's None, in the field table's
// order (the same values as estimate_to_json's "config" object).
std::string export_config_json(const Config& config, int indent = -1);

// The field table (config.hpp) as JSON: [{"name", "type", "group", "required", "min", "max",
// "choices", "unit", "default", "description", "trainmem_only"}, ...], for the tools and the docs
// (the page reads the same table as text: slots.hpp field_specs_text).
std::string field_specs_json();

// Curated data shipped with the core (core/data/*.json, embedded at build time).
std::string_view presets_json();
std::string_view gpus_json();
// Fine-tuning setups (core/data/setups.json): complete runs, each a config, a GPU id and its source.
std::string_view setups_json();

}  // namespace trainmem
