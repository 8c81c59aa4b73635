// libFuzzer harness: any bytes as an accelerate config (YAML) with a launch command, through the
// native document parser and the importer as `trainmem import accelerate` runs them
// (framework_harness.hpp: a leading "#!overrides" line gives the launch command's words).
#include "framework_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return trainmem_fuzz::import_document(data, size, trainmem::ImportKind::accelerate, trainmem::yaml_document_tree,
                                        "fuzz.yaml");
}
