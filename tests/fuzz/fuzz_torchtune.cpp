// libFuzzer harness: any bytes as a torchtune recipe (YAML), through the native document parser
// and the importer as `trainmem import torchtune` runs them, with tune run's key=value overrides
// from a leading "#!overrides" line (framework_harness.hpp).
#include "framework_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return trainmem_fuzz::import_document(data, size, trainmem::ImportKind::torchtune, trainmem::yaml_document_tree,
                                        "fuzz.yaml");
}
