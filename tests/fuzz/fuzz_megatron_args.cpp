// libFuzzer harness: any bytes as a Megatron-LM command line (and as a --moe-layer-freq
// expression). Issues, never a throw, a crash or a hang.
#include <cstdint>
#include <string_view>

#include "trainmem/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const trainmem::ImportResult imported = trainmem::import_megatron_args(text);
  if (imported.issues.empty()) {
    const trainmem::Resolved resolved = trainmem::resolve(imported.input);
    if (resolved.ok()) (void)trainmem::export_megatron_args(resolved.config);
  }
  (void)trainmem::parse_moe_layer_freq(text);
  return 0;
}
