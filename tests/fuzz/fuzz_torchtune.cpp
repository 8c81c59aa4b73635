// libFuzzer harness: any bytes as a torchtune config file, through the native document parser
// (documents.hpp, yaml_document_tree) and the importer over a training config, as `trainmem import torchtune`
// runs them; the first line of a multi-line input is also split into command-line overrides.
// Parsers and importer must return issues, never throw or crash, and an imported config must
// survive resolution.
#include <cstdint>
#include <string>
#include <string_view>

#include "trainmem/documents.hpp"
#include "trainmem/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainmem::ImportOptions options;
  options.gpus = 8;
  // A leading "#!overrides a=b c=d" line: the overrides (so the fuzzer reaches their parser too).
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
  const trainmem::DocumentTree tree = trainmem::yaml_document_tree(body, "fuzz.yaml");
  if (!tree.ok()) return 0;
  const trainmem::ImportOverBase imported = trainmem::import_over_base(
      trainmem::ImportKind::torchtune, tree.json, R"({"seq_length": 4096, "micro_batch_size": 1})", options);
  if (imported.ok()) (void)trainmem::resolve(imported.config);
  return 0;
}
