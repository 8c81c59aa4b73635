// libFuzzer harness: any bytes as a Hugging Face config.json. The importer must return issues,
// never throw or crash, and an imported model must survive resolution without crashing.
#include <cstdint>
#include <string_view>

#include "trainmem/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const trainmem::ImportResult imported = trainmem::import_hf_config(text);
  if (imported.issues.empty()) (void)trainmem::resolve(imported.input);
  return 0;
}
