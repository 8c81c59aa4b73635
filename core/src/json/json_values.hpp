// JSON values shared by the core's readers and writers (json/, planner/io.cpp).
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trainmem/config.hpp"

namespace trainmem::detail {

using ordered_json = nlohmann::ordered_json;

// A count or byte figure: an integer where exact (|x| < 2^53), never NaN or Infinity (null).
ordered_json json_number(double x);

// A field's value as it would be written in a config (null when unset).
ordered_json json_field_value(const FieldValue& value);

// The reverse, for a key's value in a config or options document: null, a boolean, a number, a
// string, or a list of numbers or of strings. Objects and mixed lists fit no field: nullopt.
std::optional<FieldValue> field_value_of_json(const ordered_json& value);

// "an object", "a list" or "a value", for "got ..." in a message.
std::string_view json_type_name(const ordered_json& value);

// A document that must be a JSON object of `noun` ("fields", "options"): the object, or the
// issue named `what` ("config", "options") saying why it is not one.
struct JsonObject {
  ordered_json object;
  std::optional<Issue> problem;
  bool malformed = false;  // the text is not JSON at all (else: JSON, but not an object)
};
JsonObject parse_json_object(std::string_view text, std::string_view what, std::string_view noun);

}  // namespace trainmem::detail
