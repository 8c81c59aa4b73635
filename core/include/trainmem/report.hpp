// Human-readable text for estimates. Formatting lives here, apart from the arithmetic.
#pragma once

#include <string>

#include "trainmem/estimate.hpp"

namespace trainmem {

enum class ByteUnits : uint8_t {
  binary,   // KiB, MiB, GiB, TiB (powers of 1024)
  decimal,  // kB, MB, GB, TB (powers of 1000)
};

// "42.07 GiB" or "45.17 GB": the largest unit that keeps the number at or above 1, 2 decimals.
std::string format_bytes(double bytes, ByteUnits units);
// "70.56 B" / "8.03 M" style parameter counts (decimal, as model sizes are quoted).
std::string format_count(double count);

// The CLI's --format text report: configuration summary, parameter counts, each component with
// its bytes per parameter and shard, activation, total (GiB and GB), the assumptions, every
// traced intermediate when `trace` is given, and last the reference's own log line.
std::string text_report(const Config& config, const FullEstimate& estimate, const Trace* trace);

// docs/fields.md: every input field by group, with type, range, unit, default and meaning.
std::string fields_markdown();

}  // namespace trainmem
