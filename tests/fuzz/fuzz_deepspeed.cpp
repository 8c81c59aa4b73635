// libFuzzer harness: any bytes as a DeepSpeed config (JSON), imported with a preset model and
// Trainer arguments over a training config, as `trainmem import deepspeed` runs it. A second
// JSON object after a line "#!hf-args" is the Trainer's arguments (so "auto" values are reached).
// The importer must return issues, never throw or crash; an imported config must survive
// resolution.
#include <cstdint>
#include <string_view>

#include "trainmem/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainmem::ImportOptions options;
  options.gpus = 8;
  options.preset = "llama-3.1-8b";
  std::string_view config = text;
  if (const size_t split = text.find("\n#!hf-args\n"); split != std::string_view::npos) {
    config = text.substr(0, split);
    options.hf_args_json = std::string(text.substr(split + 11));
  }
  const trainmem::ImportOverBase imported = trainmem::import_over_base(
      trainmem::ImportKind::deepspeed, config, R"({"seq_length": 4096})", options);
  if (imported.ok()) (void)trainmem::resolve(imported.config);
  return 0;
}
