// libFuzzer harness: any bytes as a Megatron-LM command line, imported as the CLI and the module
// import it (text that starts with '{' is read as a functional-test config's tree, as
// corpus/megatron/test-config.json seeds it), and as a --moe-layer-freq expression. Issues, never a throw, a crash or a hang; a
// line that resolves is exported back.
#include <cstdint>
#include <string_view>

#include "trainmem/export.hpp"
#include "trainmem/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const trainmem::ImportOverBase imported =
      trainmem::import_over_base(trainmem::ImportKind::megatron_args, text, "{}");
  if (imported.ok()) {
    const trainmem::Resolved resolved = trainmem::resolve(imported.config);
    if (resolved.ok()) (void)trainmem::export_megatron_args(resolved.config);
  }
  (void)trainmem::parse_moe_layer_freq(text);
  return 0;
}
