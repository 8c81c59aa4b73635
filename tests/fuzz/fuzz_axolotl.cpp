// libFuzzer harness: any bytes as an axolotl config (YAML), through the native document parser
// and the importer as `trainmem import axolotl` runs them (framework_harness.hpp; axolotl reads
// no overrides, so a leading "#!overrides" line is only split off).
#include "framework_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return trainmem_fuzz::import_document(data, size, trainmem::ImportKind::axolotl, trainmem::yaml_document_tree,
                                        "fuzz.yaml");
}
