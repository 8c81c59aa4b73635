// Name tables for the enumerations of config.hpp. Names are what users write in JSON; the order of
// each table follows its enumeration (append-only).
#include <array>

#include "config/name_tables.hpp"
#include "internal.hpp"
#include "trainmem/config.hpp"

namespace trainmem {

// One name per enumerator (the enumerations with a count; FieldType and FieldGroup have none).
template <class E>
constexpr bool complete() {
  if constexpr (requires { E::count; }) return enum_table<E>().size() == size_t(E::count);
  else return true;
}
#define TRAINMEM_ENUM_NAMES(E, table)                                                   \
  static_assert(complete<E>(), "one name per enumerator of " #E);                       \
  template <> std::span<const std::string_view> enum_names<E>() { return enum_table<E>(); }
TRAINMEM_ENUM_TABLES(TRAINMEM_ENUM_NAMES)
#undef TRAINMEM_ENUM_NAMES
static_assert(k_field_types.size() == 7 && k_field_groups.size() == 7, "one name per enumerator");

}  // namespace trainmem
