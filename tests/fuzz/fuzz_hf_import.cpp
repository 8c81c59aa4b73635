// libFuzzer harness: any bytes as a Hugging Face config.json, imported over a training config as
// the CLI and the module import it. The importer must return issues, never throw or crash, and
// an imported model must survive resolution without crashing.
#include <cstdint>
#include <string_view>

#include "trainmem/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const trainmem::ImportOverBase imported = trainmem::import_over_base(
      trainmem::ImportKind::hf, text, R"({"seq_length": 4096, "micro_batch_size": 1})");
  if (imported.ok()) (void)trainmem::resolve(imported.config);
  return 0;
}
