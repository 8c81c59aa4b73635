// Configs as JSON documents, partial and resolved (config_input_json, export_config_json): what
// the CLI's `import` and `export` and the module's import and export bindings write.
#include <nlohmann/json.hpp>

#include "trainmem/json_io.hpp"

#include "json/json_values.hpp"

namespace trainmem {

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
