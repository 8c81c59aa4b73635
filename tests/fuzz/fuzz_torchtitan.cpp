// libFuzzer harness: any bytes as a torchtitan job config (TOML), through the native document
// parser and the importer as `trainmem import torchtitan` runs them, with --section.key=value
// overrides from a leading "#!overrides" line (framework_harness.hpp).
#include "framework_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return trainmem_fuzz::import_document(data, size, trainmem::ImportKind::torchtitan, trainmem::toml_document_tree,
                                        "fuzz.toml");
}
