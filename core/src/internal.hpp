// Declarations shared between the core's translation units; not part of the public API.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainmem {


// A number as people read it in messages: integers without a fraction, others with up to
// 15 significant digits.
std::string number_text(double value);

// a·b, or nullopt when it does not fit in int64 (inputs may be absurdly large).
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace trainmem
