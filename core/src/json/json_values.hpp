// JSON values shared by the core's writers (json_io.cpp, planner.cpp, import_megatron.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "trainmem/config.hpp"

namespace trainmem::detail {

using ordered_json = nlohmann::ordered_json;

// A count or byte figure: an integer where exact (|x| < 2^53), never NaN or Infinity (null).
ordered_json json_number(double x);

// A field's value as it would be written in a config (null when unset).
ordered_json json_field_value(const FieldValue& value);

}  // namespace trainmem::detail
