// The importers' one entry point: the name of each kind of source, which importer reads it, and
// the import written over a base config, so that the CLI and the module do the same thing.
#include <array>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "mapping.hpp"
#include "trainmem/import.hpp"
#include "trainmem/json_io.hpp"

namespace trainmem {
namespace {

// What users type after `trainmem import`, in ImportKind's order.
constexpr std::array<std::string_view, 6> k_import_kinds = {"hf", "megatron-args", "torchtune",
                                                            "torchtitan", "deepspeed", "axolotl"};
static_assert(k_import_kinds.size() == size_t(ImportKind::count), "one name per ImportKind");

ImportResult import_source(ImportKind kind, std::string_view text, const ImportOptions& options) {
  switch (kind) {
    case ImportKind::hf:
      return import_hf_config(text);
    case ImportKind::megatron_args:
      return import_megatron_args(text);
    case ImportKind::torchtune:
      return import_torchtune(text, options);
    case ImportKind::torchtitan:
      return import_torchtitan(text, options);
    case ImportKind::deepspeed:
      return import_deepspeed(text, options);
    case ImportKind::axolotl:
      return import_axolotl(text, options);
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
    return out;
  }
  // The base is read only for a good import, so a bad source is reported alone.
  const ParsedConfig base = parse_config_json(base_json);
  if (!base.issues.empty()) {
    for (const Issue& problem : base.issues) out.issues.push_back(issue("--base", problem.message));
    return out;
  }
  out.config = merge_import(base.input, imported);
  static_cast<ImportResult&>(out) = std::move(imported);
  return out;
}

ParsedImportOptions parse_import_options(std::string_view options_json) {
  ParsedImportOptions out;
  if (options_json.empty()) return out;
  std::optional<nlohmann::json> tree = mapping::object_tree(options_json, "options", out.issues);
  if (!tree) return out;
  const auto text_of = [&](const char* key, std::string& into) {
    auto it = tree->find(key);
    if (it == tree->end() || it->is_null()) return;
    if (it->is_string()) into = it->get<std::string>();
    else if (it->is_object()) into = it->dump();
    else out.issues.push_back(issue(key, "must be a string or an object, got " + mapping::show(*it)));
  };
  for (const auto& [key, value] : tree->items()) {
    if (key == "gpus") {
      if (value.is_null()) continue;
      if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 10'000'000)
        out.issues.push_back(issue("gpus", "must be a positive integer, got " + mapping::show(value)));
      else
        out.options.gpus = value.get<int64_t>();
    } else if (key == "overrides") {
      if (value.is_null()) continue;
      if (!value.is_array()) {
        out.issues.push_back(issue("overrides", "must be a list of strings, got " + mapping::show(value)));
        continue;
      }
      for (const nlohmann::json& item : value) {
        if (item.is_string()) out.options.overrides.push_back(item.get<std::string>());
        else out.issues.push_back(issue("overrides", "must be a list of strings, got " + mapping::show(item)));
      }
    } else if (key == "version" || key == "preset") {
      if (value.is_null()) continue;
      if (!value.is_string()) out.issues.push_back(issue(key, "must be a string, got " + mapping::show(value)));
      else (key == "version" ? out.options.version : out.options.preset) = value.get<std::string>();
    } else if (key == "model") {
      text_of("model", out.options.model_json);
    } else if (key == "hf_args") {
      text_of("hf_args", out.options.hf_args_json);
    } else if (key == "deepspeed") {
      text_of("deepspeed", out.options.deepspeed_json);
    } else {
      out.issues.push_back(issue(key, "is not an import option (gpus, overrides, version, model, preset, hf_args, deepspeed)"));
    }
  }
  return out;
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
