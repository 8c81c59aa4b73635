// Declarations shared between the core's translation units; not part of the public API.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <stdexcept>
#include <string_view>

#include "config/messages.hpp"

namespace trainmem {

// A JSON library error without its "[json.exception.parse_error.101] " tag: "parse error at
// line 1, column 2: ..." or "number overflow parsing '1e400'".
inline std::string json_error_text(const std::exception& e) {
  std::string what = e.what();
  const size_t tag_end = what.find("] ");
  if (what.rfind("[json.exception", 0) == 0 && tag_end != std::string::npos) what.erase(0, tag_end + 2);
  return what;
}

// a·b, or nullopt when it does not fit in int64 (inputs may be absurdly large).
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace trainmem
