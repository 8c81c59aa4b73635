// libFuzzer harness: any bytes as a JSON config, through the whole pipeline in every profile.
// The invariants: nothing throws, nothing crashes (ASan/UBSan), and an accepted config gives
// finite, non-negative figures.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trainmem/json_io.hpp"

namespace {
void require(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input as a crash
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto profile : {trainmem::Profile::megatron_bridge, trainmem::Profile::megatron_lm,
                       trainmem::Profile::trainmem}) {
    trainmem::RunOptions options;
    options.profile = profile;
    const trainmem::Run run = trainmem::run_estimate(text, options);
    if (!run.ok()) {
      for (const trainmem::Issue& issue : run.issues) require(!issue.message.empty());
      continue;
    }
    const trainmem::FullEstimate& e = run.estimate;
    require(std::isfinite(e.total_bytes) && e.total_bytes >= 0);
    require(std::isfinite(e.weight_and_optimizer_bytes) && std::isfinite(e.activation_bytes));
    require(std::isfinite(e.params.total));
    // The JSON writer must accept every successful result.
    require(!trainmem::estimate_to_json(run.config, e, nullptr).empty());
  }
  return 0;
}
