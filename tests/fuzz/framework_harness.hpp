// The body the framework harnesses share (fuzz_torchtune, fuzz_torchtitan, fuzz_axolotl,
// fuzz_deepspeed): any bytes as the framework's config file, imported over a training config on
// 8 GPUs as `trainmem import KIND` runs it. The parsers and the importer must return issues, never
// throw or crash (ASan/UBSan), and an imported config must survive resolution.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trainmem/documents.hpp"
#include "trainmem/import.hpp"

namespace trainmem_fuzz {

// The importer over a training config, then resolution of what it imported.
inline int import_and_resolve(trainmem::ImportKind kind, std::string_view source, std::string_view base,
                              const trainmem::ImportOptions& options) {
  const trainmem::ImportOverBase imported = trainmem::import_over_base(kind, source, base, options);
  if (imported.ok()) (void)trainmem::resolve(imported.config);
  return 0;
}

// A YAML or TOML file (yaml_document_tree / toml_document_tree, as the CLI parses it) through
// the importer. A leading line "#!overrides a=b c=d" gives command-line overrides, split at
// spaces, so that the fuzzer reaches their parser too.
inline int import_document(const uint8_t* data, size_t size, trainmem::ImportKind kind,
                           trainmem::DocumentTree (*parse)(std::string_view text, std::string_view name),
                           std::string_view name) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainmem::ImportOptions options;
  options.gpus = 8;
  std::string_view body = text;
  if (text.substr(0, 12) == "#!overrides ") {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(12, end == std::string_view::npos ? std::string_view::npos : end - 12);
    body = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    while (!line.empty()) {
      const size_t space = line.find(' ');
      options.overrides.emplace_back(line.substr(0, space));
      if (space == std::string_view::npos) break;
      line.remove_prefix(space + 1);
    }
  }
  const trainmem::DocumentTree tree = parse(body, name);
  if (!tree.ok()) return 0;
  return import_and_resolve(kind, tree.json, R"({"seq_length": 4096, "micro_batch_size": 1})", options);
}

}  // namespace trainmem_fuzz
