// Embind layer of the trainmem modules. The estimator module (what the page loads first) speaks
// numbers (core/include/trainmem/slots.hpp) and links no JSON library; the tools module adds the
// core's JSON entry points (json_io.hpp), the importers, the exporters and the planner.
//
// Nothing here computes, validates or defaults a field: the profile travels inside the config
// JSON ("profile": "megatron-lm") and the core checks it like any other field, so an unknown
// name comes back as {"ok": false, "issues": [{"field": "profile", ...}]}.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <exception>
#include <span>
#include <string>
#include <vector>


// TRAINMEM_WASM_TOOLS (CMake option, default on): also bind the importers, the exporters and the
// planner. Off, the module is the estimator alone (see wasm/README.md for the size of each).
#ifndef TRAINMEM_WASM_TOOLS
#define TRAINMEM_WASM_TOOLS 1
#endif

#include "trainmem/json_io.hpp"  // presets_json, gpus_json, setups_json: the embedded data as text
#include "trainmem/slots.hpp"
#if TRAINMEM_WASM_TOOLS
#include <nlohmann/json.hpp>
#include "trainmem/export.hpp"
#include "trainmem/import.hpp"
#include "trainmem/planner.hpp"
#endif

namespace {

// Runs f and turns any C++ exception into a JavaScript Error carrying what(). Without this,
// Emscripten 3.1.6 hands JS a bare number (the exception pointer) and the message is lost.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  static std::string last_error;  // static: nothing to destroy when throw_() leaves this frame
  try {
    return f();
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown C++ exception";
  }
  emscripten::val::global("Error").new_(emscripten::val(last_error)).throw_();
  __builtin_unreachable();
}

std::string version() { return TRAINMEM_VERSION; }

// How many fields the core's table has: the page checks its build-time data
// (web/wasm/trainmem-data.json: the field specs the slots follow) against the module it loaded.
double field_count() { return double(trainmem::field_specs().size()); }

// ---- the page's fast path: numbers in, numbers out (core/include/trainmem/slots.hpp) ----
// The page writes a config's slots (then the list channel) into the view slotInput returns,
// calls estimateSlots, and reads the views of resultNumbers and the lines of resultText. The
// buffers live here so that a call copies nothing; a view is asked for after any call that may
// grow memory (the views of a grown memory are detached).
std::vector<double> g_input;
trainmem::SlotResult g_result;

emscripten::val slot_input(size_t n_values) {
  g_input.resize(n_values);
  return emscripten::val(emscripten::typed_memory_view(g_input.size(), g_input.data()));
}

// A config value no slot carries, as the page's slots.js describes it: [name, kind, value] with
// kind "null", "number", "boolean", "string", "numbers", "strings", or "shape" (value: "an
// object" or "a list", a shape no field takes).
trainmem::OtherValue other_value(const emscripten::val& entry) {
  trainmem::OtherValue out;
  out.name = entry[0].as<std::string>();
  const std::string kind = entry[1].as<std::string>();
  const emscripten::val value = entry[2];
  if (kind == "null") out.value = std::monostate{};
  else if (kind == "number") out.value = value.as<double>();
  else if (kind == "boolean") out.value = value.as<bool>();
  else if (kind == "string") out.value = value.as<std::string>();
  else if (kind == "numbers") out.value = emscripten::vecFromJSArray<double>(value);
  else if (kind == "strings") out.value = emscripten::vecFromJSArray<std::string>(value);
  else out.shape = value.as<std::string>();
  return out;
}

// The input holds n_slots fields' slots, then n_order numbers (the config's order of keys), then
// the list channel (slots.hpp); `others` the values no slot carries. Calls f(slots, lists, others,
// order) with them.
template <class F>
void with_slot_input(size_t n_slots, size_t n_order, const emscripten::val& others, F&& f) {
  const std::span<const double> input(g_input);
  const size_t slots_end = std::min(n_slots, input.size());
  const size_t order_end = std::min(slots_end + n_order, input.size());
  std::vector<trainmem::OtherValue> other_values;
  const size_t n_others = others["length"].as<size_t>();
  for (size_t i = 0; i < n_others; ++i) other_values.push_back(other_value(others[i]));
  f(input.first(slots_end), input.subspan(order_end), std::span<const trainmem::OtherValue>(other_values),
    input.subspan(slots_end, order_end - slots_end));
}

// Runs one of slots.hpp's calls on the input (`call(slots, lists, others, order, g_result)`) and
// returns how many result numbers it wrote: every numeric binding below is this, with its call.
template <class Call>
size_t slot_call(size_t n_slots, size_t n_order, const emscripten::val& others, Call&& call) {
  return guarded([&] {
    with_slot_input(n_slots, n_order, others, [&](auto slots, auto lists, auto other_values, auto order) {
      call(slots, lists, other_values, order, g_result);
    });
    return g_result.numbers.size();
  });
}

// The whole estimate of the input (slots.hpp estimate_slots).
size_t estimate_slots(size_t n_slots, size_t n_order, const emscripten::val& others, bool verbose) {
  return slot_call(n_slots, n_order, others, [&](auto slots, auto lists, auto other_values, auto order, auto& out) {
    trainmem::estimate_slots(slots, lists, other_values, order, verbose, out);
  });
}

// The input checked without an estimate (slots.hpp check_slots).
size_t check_slots(size_t n_slots, size_t n_order, const emscripten::val& others) {
  return slot_call(n_slots, n_order, others, [](auto slots, auto lists, auto other_values, auto order, auto& out) {
    trainmem::check_slots(slots, lists, other_values, order, out);
  });
}

double estimator_passes() { return double(trainmem::estimator_passes()); }

// What a view shows for the input, in one pass (slots.hpp view_slots): one 0/1 per field (in
// effect or not), then the result of the config without the fields not in effect, with the run
// at each of `capacities` (a JS array of bytes).
size_t view_slots(size_t n_slots, size_t n_order, const emscripten::val& others,
                  const emscripten::val& capacities, bool verbose) {
  const std::vector<double> compare = emscripten::vecFromJSArray<double>(capacities);
  return slot_call(n_slots, n_order, others, [&](auto slots, auto lists, auto other_values, auto order, auto& out) {
    trainmem::view_slots(slots, lists, other_values, order, compare, verbose, out);
  });
}

// The same input: which fields mean something for it (slots.hpp fields_in_effect_slots), one 0/1
// per field in resultNumbers.
size_t fields_in_effect_slots(size_t n_slots, size_t n_order, const emscripten::val& others) {
  return slot_call(n_slots, n_order, others, [](auto slots, auto lists, auto other_values, auto order, auto& out) {
    trainmem::fields_in_effect_slots(slots, lists, other_values, order, out);
  });
}

emscripten::val result_numbers() {
  return emscripten::val(emscripten::typed_memory_view(g_result.numbers.size(), g_result.numbers.data()));
}

std::string result_text() { return g_result.text; }

#if TRAINMEM_WASM_TOOLS
// ---- what the page reads once, before its first estimate ----
// Only the tools module has these: web/scripts/engine-data.mjs writes them at build time into
// web/wasm/trainmem-data.json, which the page fetches beside the estimator module (issue 31: the
// first answer does not wait for the module to format its own tables, and the module carries
// neither these texts' code nor the presets, GPUs and setups).
std::string presets() {
  return guarded([] { return std::string(trainmem::presets_json()); });
}

std::string gpus() {
  return guarded([] { return std::string(trainmem::gpus_json()); });
}

std::string setups() {
  return guarded([] { return std::string(trainmem::setups_json()); });
}

std::string method_settings_text() {
  return guarded([] { return trainmem::method_settings_text(); });
}
std::string slot_tables() {
  return guarded([] { return trainmem::slot_tables(); });
}

std::string result_schema_text() {
  return guarded([] { return trainmem::result_schema_text(); });
}

std::string field_specs_text() {
  return guarded([] { return trainmem::field_specs_text(); });
}

// ---- the JSON API (json_io.hpp): the CLI's documents, for tools and tests ----

std::string estimate(const std::string& config_json, bool verbose) {
  return guarded([&] {
    trainmem::RunOptions options;
    options.verbose = verbose;
    return trainmem::estimate_json(config_json, options);
  });
}

std::string field_specs() {
  return guarded([] { return trainmem::field_specs_json(); });
}

// ---- imports and exports (core/include/trainmem/import.hpp, export.hpp) ----
// Each returns {"ok": true, ...} or {"ok": false, "issues": [...]}, like estimate().

nlohmann::json issues_json(const std::vector<trainmem::Issue>& issues) {
  return nlohmann::json::parse(trainmem::issues_to_json(issues));
}

// {"ok", "config": the import merged over base, "input": the import alone, "read", "keys" (each
// field's key in the source, ImportResult::keys), "assumed",
// "ignored", "unresolved" (what the config still lacks, each on its field), "whole_model"} (core
// import_over_base), or {"ok": false, "issues"} with "model_asked" when the source names a model
// that is no preset (ImportResult::model_asked; its issue's rule is k_model_not_a_preset).
std::string imported_result_json(const trainmem::ImportOverBase& imported) {
  if (!imported.ok()) {
    nlohmann::json refused = issues_json(imported.issues);
    if (!imported.model_asked.empty()) refused["model_asked"] = imported.model_asked;
    return refused.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  nlohmann::json out;
  out["ok"] = true;
  out["config"] = nlohmann::json::parse(trainmem::config_input_json(imported.config));
  out["input"] = nlohmann::json::parse(trainmem::config_input_json(imported.input));
  out["read"] = imported.read;
  out["keys"] = nlohmann::json::object();
  for (const auto& [field, key] : imported.keys) out["keys"][field] = key;
  out["assumed"] = imported.assumed;
  out["ignored"] = imported.ignored;
  out["unresolved"] = issues_json(imported.unresolved)["issues"];
  out["whole_model"] = imported.whole_model;
  // A note quotes the file's text, which the core cuts at character boundaries; replace keeps a
  // stray byte from turning into an exception.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// An import of `text` over the page's current config base_json (training and parallel settings
// the import does not describe), as imported_result_json.
std::string imported_json(trainmem::ImportKind kind, const std::string& text,
                          const std::string& base_json) {
  return guarded([&] { return imported_result_json(trainmem::import_over_base(kind, text, base_json)); });
}

std::string import_hf_config(const std::string& config_json, const std::string& base_json) {
  return imported_json(trainmem::ImportKind::hf, config_json, base_json);
}

std::string import_megatron_args(const std::string& command_line, const std::string& base_json) {
  return imported_json(trainmem::ImportKind::megatron_args, command_line, base_json);
}

// A framework's config file as the page's own parser made it (yaml / smol-toml -> JSON text),
// with the options it cannot say ({"gpus", "overrides", "version", "model", "preset", "hf_args",
// "deepspeed", "launch"}), over the page's config: core import_framework_over_base, which checks the kind
// and the options. Same result as importHfConfig.
std::string import_framework(const std::string& kind_name, const std::string& tree_json,
                             const std::string& options_json, const std::string& base_json) {
  return guarded([&] {
    return imported_result_json(trainmem::import_framework_over_base(kind_name, tree_json, options_json, base_json));
  });
}

// "torchtune", "torchtitan", "deepspeed", "axolotl", "accelerate", "megatron-args", "hf" or "": what a config tree is.
std::string detect_framework(const std::string& tree_json) {
  return guarded([&] { return std::string(trainmem::detect_framework_kind(tree_json)); });
}

// {"ok", "args": one Megatron-LM argument line, "notes": what the arguments cannot carry}.
std::string export_megatron_args(const std::string& config_json) {
  return guarded([&] {
    const trainmem::Resolved resolved = trainmem::resolve_config_json(config_json);
    if (!resolved.ok()) return issues_json(resolved.issues).dump();
    const trainmem::MegatronExport exported = trainmem::export_megatron_args(resolved.config);
    nlohmann::json out;
    out["ok"] = true;
    out["args"] = exported.args;
    out["notes"] = exported.notes;
    return out.dump();
  });
}

// {"ok", "config": every resolved field that is not Megatron's None}.
std::string export_config_json(const std::string& config_json) {
  return guarded([&] {
    const trainmem::Resolved resolved = trainmem::resolve_config_json(config_json);
    if (!resolved.ok()) return issues_json(resolved.issues).dump();
    return R"({"ok":true,"config":)" + trainmem::export_config_json(resolved.config) + "}";
  });
}

// {"ok", "config": the fields that are set, in the field table's order} (no resolution).
std::string config_input_json(const std::string& config_json) {
  return guarded([&] {
    const trainmem::ParsedConfig parsed = trainmem::parse_config_json(config_json);
    if (!parsed.issues.empty()) return issues_json(parsed.issues).dump();
    return R"({"ok":true,"config":)" + trainmem::config_input_json(parsed.input) + "}";
  });
}

// The planner (core/include/trainmem/planner.hpp): {"ok", "layouts": [...], ...} or issues.
std::string plan(const std::string& config_json, const std::string& options_json) {
  return guarded([&] { return trainmem::plan_json(config_json, options_json); });
}

// ["llama", "mistral", ...]: the model types importHfConfig understands.
std::string hf_model_types() {
  return guarded([] {
    nlohmann::json out = nlohmann::json::array();
    for (std::string_view t : trainmem::hf_model_types()) out.push_back(std::string(t));
    return out.dump();
  });
}

#endif  // TRAINMEM_WASM_TOOLS

}  // namespace

EMSCRIPTEN_BINDINGS(trainmem) {
  emscripten::function("version", &version);
  emscripten::function("fieldCount", &field_count);
  emscripten::function("slotInput", &slot_input);
  emscripten::function("estimateSlots", &estimate_slots);
  emscripten::function("fieldsInEffectSlots", &fields_in_effect_slots);
  emscripten::function("viewSlots", &view_slots);
  emscripten::function("checkSlots", &check_slots);
  emscripten::function("estimatorPasses", &estimator_passes);
  emscripten::function("resultNumbers", &result_numbers);
  emscripten::function("resultText", &result_text);
#if TRAINMEM_WASM_TOOLS
  emscripten::function("fieldSpecsText", &field_specs_text);
  emscripten::function("presets", &presets);
  emscripten::function("gpus", &gpus);
  emscripten::function("setups", &setups);
  emscripten::function("slotTables", &slot_tables);
  emscripten::function("methodSettingsText", &method_settings_text);
  emscripten::function("resultSchemaText", &result_schema_text);
  emscripten::function("estimate", &estimate);
  emscripten::function("fieldSpecs", &field_specs);
  emscripten::function("importHfConfig", &import_hf_config);
  emscripten::function("importMegatronArgs", &import_megatron_args);
  emscripten::function("importFramework", &import_framework);
  emscripten::function("detectFramework", &detect_framework);
  emscripten::function("exportMegatronArgs", &export_megatron_args);
  emscripten::function("exportConfigJson", &export_config_json);
  emscripten::function("configInputJson", &config_input_json);
  emscripten::function("hfModelTypes", &hf_model_types);
  emscripten::function("plan", &plan);
#endif
}
