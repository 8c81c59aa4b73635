// libFuzzer harness: any bytes as a DeepSpeed config (JSON), imported with a preset model and
// Trainer arguments as `trainmem import deepspeed` runs it (framework_harness.hpp). A second JSON
// object after a line "#!hf-args" is the Trainer's arguments (so "auto" values are reached).
#include <string>

#include "framework_harness.hpp"

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
  return trainmem_fuzz::import_and_resolve(trainmem::ImportKind::deepspeed, config, R"({"seq_length": 4096})", options);
}
