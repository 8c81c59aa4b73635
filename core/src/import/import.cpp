// The importers' one entry point: the name of each kind of source, which importer reads it, and
// the import written over a base config (merge_import), so that the CLI and the module do the
// same thing.
#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "json/json_values.hpp"
#include "mapping.hpp"
#include "trainmem/import.hpp"
#include "trainmem/json_io.hpp"

namespace trainmem {

std::vector<std::string_view> import_fields_left_out(const ConfigInput& base, const ImportResult& imported) {
  // The reference profiles reject the trainmem profile's fields (resolve: "applies to the trainmem
  // profile only"); a source that says them (a Megatron line's precision, recompute grouping,
  // attention kernel) still describes the same run, so over such a base they are left out.
  std::vector<std::string_view> out;
  if (!base.profile || *base.profile == Profile::trainmem) return out;
  for (const FieldSpec& spec : field_specs())
    if (spec.trainmem_only && !std::holds_alternative<std::monostate>(get_field(imported.input, spec.name)))
      out.push_back(spec.name);
  return out;
}

ConfigInput merge_import(const ConfigInput& base, const ImportResult& imported) {
  ConfigInput out = base;
  const std::vector<std::string_view> left_out = import_fields_left_out(base, imported);
  for (const FieldSpec& spec : field_specs()) {
    if (std::find(left_out.begin(), left_out.end(), spec.name) != left_out.end()) continue;
    const FieldValue value = get_field(imported.input, spec.name);
    const bool model_field = spec.group == FieldGroup::model || spec.group == FieldGroup::moe ||
                             spec.group == FieldGroup::mla;
    // The padding policy and the vocabulary a tokenizer gives are the run's, not the model file's.
    const bool kept = spec.name == "make_vocab_size_divisible_by" ||
                      spec.name == "should_pad_vocab" || spec.name == "vocab_size";
    const bool layout_field = (spec.group == FieldGroup::parallelism && spec.name != "gpus_per_node") ||
                              spec.name == "sequence_parallel";
    if (!std::holds_alternative<std::monostate>(value))
      set_field(out, spec.name, value);  // the value came out of a field: it fits
    else if ((imported.whole_model && model_field && !kept) || (imported.whole_layout && layout_field))
      set_field(out, spec.name, std::monostate{});
  }
  return out;
}

namespace {

// What users type after `trainmem import`, in ImportKind's order.
constexpr std::array<std::string_view, 8> k_import_kinds = {"hf", "megatron-args", "torchtune", "torchtitan",
                                                            "deepspeed", "axolotl", "accelerate", "ms-swift-megatron"};
static_assert(k_import_kinds.size() == size_t(ImportKind::count), "one name per ImportKind");

ImportResult import_source(ImportKind kind, std::string_view text, const ImportOptions& options) {
  switch (kind) {
    case ImportKind::hf:
      return import_hf_config(text);
    case ImportKind::megatron_args: {
      // A command line, or Megatron-LM's functional-test config as a tree (what `trainmem import
      // megatron-args model_config.yaml` and the page make of the YAML): a JSON object.
      const size_t first = text.find_first_not_of(" \t\r\n");
      if (first != std::string_view::npos && text[first] == '{') return import_megatron_test_config(text, options);
      return import_megatron_args(text);
    }
    case ImportKind::torchtune:
      return import_torchtune(text, options);
    case ImportKind::torchtitan:
      return import_torchtitan(text, options);
    case ImportKind::deepspeed:
      return import_deepspeed(text, options);
    case ImportKind::axolotl:
      return import_axolotl(text, options);
    case ImportKind::accelerate:
      return import_accelerate(text, options);
    case ImportKind::ms_swift_megatron:
      return import_ms_swift_megatron(text, options);
    case ImportKind::count:
      break;
  }
  return {};  // not reached: every kind has its case
}

}  // namespace

template <>
std::span<const std::string_view> enum_names<ImportKind>() {
  return k_import_kinds;
}

ImportOverBase import_over_base(ImportKind kind, std::string_view text, std::string_view base_json) {
  return import_over_base(kind, text, base_json, ImportOptions{});
}

ImportOverBase import_over_base(ImportKind kind, std::string_view text, std::string_view base_json,
                                const ImportOptions& options) {
  ImportOverBase out;
  ImportResult imported = import_source(kind, text, options);
  if (!imported.ok()) {
    out.issues = std::move(imported.issues);
    out.model_asked = std::move(imported.model_asked);
    return out;
  }
  // The base is read only for a good import, so a bad source is reported alone.
  const ParsedConfig base = parse_config_json(base_json);
  if (!base.issues.empty()) {
    for (const Issue& problem : base.issues) out.issues.push_back(issue("--base", problem.message));
    return out;
  }
  out.config = merge_import(base.input, imported);
  // An importer without a model (no --model, --preset or model in the file) keeps the base's; a
  // base without one (the page's, for a run's own file) gives none, and the note says so rather
  // than that a model was kept (a newcomer's QA at stop 46: mapping::k_model_from_base's note
  // above a form whose model fields the import had emptied).
  if (!base.input.num_layers && !base.input.hidden_size)
    for (std::string& note : imported.assumed)
      if (note.starts_with(mapping::k_model_from_base))
        note = "model: none (the file names none, no --model or --preset gives one, and there is no base config): its shapes are asked for";
  for (std::string_view field : import_fields_left_out(base.input, imported))
    imported.ignored.push_back(std::string(field) + " = " + detail::json_field_value(get_field(imported.input, field)).dump() + ": the " +
                               std::string(name_of(*base.input.profile)) + " profile does not read it (trainmem profile only)");
  // One step from a source to a config: the merged config is resolved here, as the estimate will
  // resolve it, so that an import never hands on a config that fails later without its reason.
  for (Issue& problem : resolve(out.config).issues) {
    for (const Issue& open : imported.open_fields) {
      if (open.field != problem.field) continue;
      const std::string prefix = open.field + ": ";  // the funnel's (issue()); said once
      problem.message += ": " + (open.message.starts_with(prefix) ? open.message.substr(prefix.size()) : open.message);
    }
    out.unresolved.push_back(std::move(problem));
  }
  // A question is asked, not answered by the importer's working default: the merged config keeps
  // no GPU count for it, and the notes do not say the data-parallel size the import derived from
  // one GPU (Mapper::assume's note starts with the field's name and " ← ").
  for (Issue question : imported.asked) {
    if (question.field == "world_size") {
      out.config.data_parallel_size.reset();
      std::erase_if(imported.assumed, [](const std::string& note) { return note.starts_with("data_parallel_size ← "); });
      std::erase_if(imported.keys, [](const auto& key) { return key.first == "data_parallel_size"; });
    }
    question.rule = std::string(k_import_asked);
    out.unresolved.push_back(std::move(question));
  }
  static_cast<ImportResult&>(out) = std::move(imported);
  return out;
}

namespace {

// The options' names, as parse_import_options reads them.
constexpr std::array<std::string_view, 8> k_option_names = {"gpus", "overrides", "version", "model",
                                                            "preset", "hf_args", "deepspeed", "launch"};

// One option's value into `options`, or the Issue naming the option.
std::optional<Issue> set_option(ImportOptions& options, std::string_view name, const nlohmann::json& value) {
  if (value.is_null()) return std::nullopt;
  const auto text = [&](std::string& into, bool object_too) -> std::optional<Issue> {
    if (value.is_string()) into = value.get<std::string>();
    else if (object_too && value.is_object()) into = value.dump();
    else return issue(name, std::string(object_too ? "must be a string or an object" : "must be a string") + ", got " + mapping::show(value));
    return std::nullopt;
  };
  if (name == "gpus") {
    // The world size: torchrun's processes, at most 10^7.
    const std::optional<int64_t> n = mapping::whole_number(value, 1);
    if (!n) return issue(name, "must be a positive integer, got " + mapping::show(value));
    if (*n > 10'000'000) return issue(name, "must be at most 10000000, got " + mapping::show(value));
    options.gpus = *n;
    return std::nullopt;
  }
  if (name == "overrides") {
    if (!value.is_array()) return issue(name, "must be a list of strings, got " + mapping::show(value));
    for (const nlohmann::json& item : value) {
      if (!item.is_string()) return issue(name, "must be a list of strings, got " + mapping::show(item));
      options.overrides.push_back(item.get<std::string>());
    }
    return std::nullopt;
  }
  if (name == "version") return text(options.version, false);
  if (name == "preset") return text(options.preset, false);
  if (name == "model") return text(options.model_json, true);
  if (name == "hf_args") return text(options.hf_args_json, true);
  if (name == "deepspeed") return text(options.deepspeed_json, true);
  if (name == "launch") return text(options.launch, false);
  return unknown_name(name, "import option", k_option_names);
}

}  // namespace

ParsedImportOptions parse_import_options(std::string_view options_json) {
  ParsedImportOptions out;
  if (options_json.empty()) return out;
  std::optional<nlohmann::json> tree = mapping::object_tree(options_json, "options", out.issues);
  if (!tree) return out;
  for (const auto& [key, value] : tree->items())
    if (std::optional<Issue> problem = set_option(out.options, key, value)) out.issues.push_back(std::move(*problem));
  return out;
}

std::optional<Issue> set_import_option_text(ImportOptions& options, std::string_view name, std::string_view text) {
  if (name == "gpus") {
    const nlohmann::json value = mapping::plain_scalar(text);  // "8" a number, "abc" a string
    return set_option(options, name, value.is_null() ? nlohmann::json(std::string(text)) : value);
  }
  if (name == "overrides") return set_option(options, name, nlohmann::json::array({std::string(text)}));
  return set_option(options, name, std::string(text));
}

ImportOverBase import_framework_over_base(std::string_view kind_name, std::string_view tree_json,
                                          std::string_view options_json, std::string_view base_json) {
  static constexpr std::array<std::string_view, 7> k_frameworks = {"torchtune", "torchtitan", "deepspeed", "axolotl",
                                                                   "accelerate", "megatron-args", "ms-swift-megatron"};
  ImportOverBase out;
  const std::optional<ImportKind> kind = from_name<ImportKind>(kind_name);
  if (!kind || *kind == ImportKind::hf) {
    out.issues.push_back(issue("kind", "must be " + choices_text(k_frameworks)));
    return out;
  }
  ParsedImportOptions options = parse_import_options(options_json);
  if (!options.issues.empty()) {
    out.issues = std::move(options.issues);
    return out;
  }
  return import_over_base(*kind, tree_json, base_json, options.options);
}

std::vector<std::string_view> framework_versions(ImportKind kind) {
  if (kind == ImportKind::torchtune) return torchtune_versions();
  if (kind == ImportKind::torchtitan) return torchtitan_versions();
  return {};
}

std::string_view detect_framework_kind(std::string_view tree_json) {
  try {
    return mapping::detect_kind(nlohmann::json::parse(tree_json.begin(), tree_json.end()));
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace trainmem
