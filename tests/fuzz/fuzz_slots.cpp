// libFuzzer harness: any bytes as the page's numeric input (slots.hpp): the fields' slots, an
// order of keys and the list channel, each number taken from the bytes as a double (NaN, infinities,
// huge and negative values included). The invariants: nothing crashes (ASan/UBSan), a rejected
// input names its fields, an accepted one gives finite figures and a well-formed result.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "trainmem/slots.hpp"

namespace {
void require(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input as a crash
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<double> numbers(size / sizeof(double));
  if (!numbers.empty()) std::memcpy(numbers.data(), data, numbers.size() * sizeof(double));
  const size_t n_fields = trainmem::field_specs().size();
  // The first fields' slots come from the bytes; the rest stay unset; what is left over is the
  // order of keys (first half) and the list channel.
  std::vector<double> slots(n_fields, std::nan(""));
  const size_t taken = std::min(n_fields, numbers.size());
  std::copy(numbers.begin(), numbers.begin() + taken, slots.begin());
  const std::span<const double> rest(numbers.data() + taken, numbers.size() - taken);
  const std::span<const double> order = rest.first(rest.size() / 2);
  const std::span<const double> layers = rest.subspan(rest.size() / 2);
  trainmem::SlotResult result;
  trainmem::estimate_slots(slots, layers, {}, order, (size & 1) != 0, result);
  require(!result.numbers.empty());
  if (result.numbers[0] == 0) {
    require(!result.text.empty());
    return 0;
  }
  for (size_t i = 0; i < 5 && i < result.numbers.size(); ++i)
    require(!std::isinf(result.numbers[i]));
  require(std::isfinite(result.numbers[4]) && result.numbers[4] >= 0);  // total bytes
  return 0;
}
