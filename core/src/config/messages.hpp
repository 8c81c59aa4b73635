// The core's one funnel for messages. Every problem a user sees is an Issue made by `issue()`:
// "<field>: <rule>", the field (or option, or source key) first, then the rule it breaks and,
// where it helps, what was given. The helpers below write the pieces those rules quote, so that
// the same value reads the same in every message (config fields, planner options, importers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "trainmem/config.hpp"

namespace trainmem {

// "<field>: <rule>", with `field` as the Issue's field.
Issue issue(std::string_view field, std::string_view rule);

// The rule of an Issue made by issue(): its message without the "<field>: " in front, for
// restating a field's problem under another name (an importer's source key).
std::string_view rule_of(const Issue& made);

// A number as people read it in messages: integers without a fraction, others with up to
// 15 significant digits.
std::string number_text(double value);

// printf's "%.2f" of `value`, byte for byte (the reference log lines are Python's f"{x:.2f}",
// which rounds the same way: the exact binary value, ties to even), without printf, which costs
// about a microsecond a number in WebAssembly and runs on every estimate.
std::string two_decimals(double value);

// An integer with thousands separators: 1000000 -> "1,000,000".
std::string grouped_digits(int64_t n);

// "\"text\"". The std::string and C-string overloads keep an unqualified call from picking
// std::quoted (found by argument-dependent lookup, and an exact match) instead.
std::string quoted(std::string_view text);
inline std::string quoted(const std::string& text) { return quoted(std::string_view(text)); }
inline std::string quoted(const char* text) { return quoted(std::string_view(text)); }

// What a value is, for "got ..." in a message: null, true, 4096, the string "4096", a list.
std::string describe(const FieldValue& value);

// The accepted names, quoted and joined: "\"a\", \"b\" or \"c\"" (or with ", " before the last).
std::string choices_text(std::span<const std::string_view> names, std::string_view last_separator = " or ");
template <class E>
std::string choices_text(std::string_view last_separator = " or ") {
  return choices_text(enum_names<E>(), last_separator);
}

// Levenshtein distance between two names.
size_t edit_distance(std::string_view a, std::string_view b);

// The known name nearest to `name`, when it is a near miss (fewer than 4 edits), for
// "unknown ...; did you mean \"...\"?".
std::optional<std::string_view> nearest_name(std::string_view name,
                                             std::span<const std::string_view> known);

// "<name>: unknown <what>" with the nearest known name suggested; the shown name is cut to 60
// characters (a key can be any text a user pasted).
Issue unknown_name(std::string_view name, std::string_view what,
                   std::span<const std::string_view> known);

}  // namespace trainmem
