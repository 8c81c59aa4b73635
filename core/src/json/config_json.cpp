// Configs as JSON documents, partial and resolved (config_input_json, export_config_json), and
// an import merged over a base config (merge_import): what the CLI's `import` and `export` and the
// module's import and export bindings write.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainmem/import.hpp"
#include "trainmem/json_io.hpp"

#include "json/json_values.hpp"

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

std::string config_input_json(const ConfigInput& input, int indent) {
  // One field per line when indented, each value compact (a 61-layer moe_layer_freq list stays
  // on its line): the object is flat, so this is all the layout there is.
  std::string out;
  for (const FieldSpec& spec : field_specs()) {
    const FieldValue value = get_field(input, spec.name);
    if (std::holds_alternative<std::monostate>(value)) continue;
    out += out.empty() ? "{" : ",";
    if (indent >= 0) out += "\n" + std::string(size_t(indent), ' ');
    out += detail::ordered_json(std::string(spec.name)).dump() + (indent >= 0 ? ": " : ":") +
           detail::json_field_value(value).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace);
  }
  if (out.empty()) return "{}";
  return out + (indent >= 0 ? "\n}" : "}");
}

std::string export_config_json(const Config& config, int indent) {
  return config_input_json(to_input(config), indent);
}

}  // namespace trainmem
