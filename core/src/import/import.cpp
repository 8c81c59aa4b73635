// The importers' one entry point: the name of each kind of source, which importer reads it, and
// the import written over a base config, so that the CLI and the module do the same thing.
#include <array>

#include "internal.hpp"
#include "trainmem/import.hpp"
#include "trainmem/json_io.hpp"

namespace trainmem {
namespace {

// What users type after `trainmem import`, in ImportKind's order.
constexpr std::array<std::string_view, 2> k_import_kinds = {"hf", "megatron-args"};
static_assert(k_import_kinds.size() == size_t(ImportKind::count), "one name per ImportKind");

ImportResult import_source(ImportKind kind, std::string_view text) {
  switch (kind) {
    case ImportKind::hf:
      return import_hf_config(text);
    case ImportKind::megatron_args:
      return import_megatron_args(text);
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

ImportOverBase import_over_base(ImportKind kind, std::string_view text,
                                std::string_view base_json) {
  ImportOverBase out;
  ImportResult imported = import_source(kind, text);
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

}  // namespace trainmem
