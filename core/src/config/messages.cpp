#include "messages.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <variant>
#include <vector>

namespace trainmem {

Issue issue(std::string_view field, std::string_view rule) {
  return {std::string(field), std::string(field) + ": " + std::string(rule)};
}

std::string_view rule_of(const Issue& made) {
  return std::string_view(made.message).substr(std::min(made.message.size(), made.field.size() + 2));
}

std::string number_text(double value) {
  char buf[64];
  if (std::isfinite(value) && std::fabs(value) < 9.007199254740992e15 &&
      value == std::floor(value)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(buf, sizeof buf, "%.15g", value);
  }
  return buf;
}

std::string two_decimals(double value) {
  const double magnitude = std::fabs(value);
  // Beyond 2^53 / 100 the hundredths are not exact integers in a double: printf does it there.
  if (!(magnitude < 9.0e13)) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.2f", value);
    return buf;
  }
  // magnitude·100 = scaled + error exactly (fma rounds once). Rounding the exact value to an
  // integer can differ from rounding `scaled` only when `scaled` sits exactly on a half: any
  // other double is at least one ulp from the nearest half, and |error| is at most half an ulp.
  const double scaled = magnitude * 100.0;
  const double error = std::fma(magnitude, 100.0, -scaled);
  const double whole = std::floor(scaled);
  const double fraction = scaled - whole;  // exact: scaled < 2^53
  auto hundredths = static_cast<uint64_t>(whole);
  const bool up = fraction > 0.5 ||
                  (fraction == 0.5 && (error > 0 || (error == 0 && (hundredths & 1) != 0)));
  if (up) ++hundredths;
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof buf, hundredths / 100).ptr;
  *end++ = '.';
  *end++ = char('0' + hundredths % 100 / 10);
  *end++ = char('0' + hundredths % 10);
  std::string out;
  out.reserve(size_t(end - buf) + 1);
  if (std::signbit(value)) out += '-';  // printf keeps the sign of -0.001 and -0.0: "-0.00"
  out.append(buf, end);
  return out;
}

std::string grouped_digits(int64_t n) {
  const std::string digits = std::to_string(n);
  const size_t sign = digits[0] == '-' ? 1 : 0;
  std::string out = digits.substr(0, sign);
  for (size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string describe(const FieldValue& value) {
  struct {
    std::string operator()(std::monostate) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(double d) const { return number_text(d); }
    std::string operator()(const std::string& s) const {
      if (s.size() <= 40) return "the string " + quoted(s);
      // Cut at a character boundary: half a UTF-8 sequence would reach the reader as U+FFFD.
      size_t cut = 40;
      while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
      return "the string " + quoted(s.substr(0, cut) + "…");
    }
    std::string operator()(const std::vector<double>&) const { return "a list"; }
    std::string operator()(const std::vector<std::string>&) const { return "a list"; }
  } visitor;
  return std::visit(visitor, value);
}

std::string choices_text(std::span<const std::string_view> names, std::string_view last_separator) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last_separator : std::string_view(", ");
    out += quoted(names[i]);
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t(0));
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string_view> nearest_name(std::string_view name,
                                             std::span<const std::string_view> known) {
  std::optional<std::string_view> best;
  size_t best_distance = 4;  // suggest only near misses
  for (std::string_view candidate : known) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  }
  return best;
}

Issue unknown_name(std::string_view name, std::string_view what,
                   std::span<const std::string_view> known) {
  const std::string_view shown = name.substr(0, 60);
  std::string rule = "unknown " + std::string(what);
  if (const auto best = nearest_name(name, known)) rule += "; did you mean " + quoted(*best) + "?";
  return issue(shown, rule);
}

}  // namespace trainmem
