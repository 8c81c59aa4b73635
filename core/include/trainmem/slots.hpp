// Numbers in, numbers out: the page's path to an estimate on every keystroke, without building,
// parsing and freeing JSON (which costs twenty times the estimate itself).
//
// A config is one slot per field in the field table's order (field_specs()): NaN when unset; the
// value for a number; 0 or 1 for a boolean; the index into the field's choices for a choice; the
// bit mask of the chosen entries for a choice list. moe_layer_freq given as a 0/1 list has -1 in
// its slot and the list in `layer_list`.
//
// A result is the numbers write_result_slots() writes, in its order, and a few texts (the
// summary, the training log's line, the NCCL communicators' names, the validation group's name and
// the run's own group's), one per line. The names the
// numbers index (assumptions, components, moments, overhead lines) come once from slot_tables().
// web/js/slots.js reads them back into the object estimate_to_json writes; a test holds the two
// to the same object for every preset and thousands of share links.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"

namespace trainmem {

// A field whose value no slot carries (an unknown name, a string in a number field, an object):
// read as a reader of JSON reads it (set_read_field), so its message is the JSON path's.
struct OtherValue {
  std::string name;
  std::optional<FieldValue> value;  // empty: a shape no field takes
  std::string shape;                // "an object", "a list", "a value"
};

struct SlotResult {
  std::vector<double> numbers;  // first number: 1 for a result, 0 for issues
  std::string text;             // lines; with issues: "field<TAB>message" per issue, tabs,
                                // newlines and backslashes in them escaped (slots.cpp escaped())
};

// Reads a config's slots and other values, one issue per field that does not take its value, in
// `order`: the config's own order of keys (i < slots: slot i; else others[i - slots.size()]), so
// that issues follow the config as the JSON path's do. An empty order reads the slots in the
// field table's order, then the others.
std::vector<Issue> read_slots(std::span<const double> slots, std::span<const double> layer_list,
                              std::span<const OtherValue> others, std::span<const double> order,
                              ConfigInput& input);

// The whole path: slots → resolve → full_estimate → result slots (or the issues). With
// `verbose`, the text ends with the trace: "name\tvalue\tformula" per intermediate quantity.
void estimate_slots(std::span<const double> slots, std::span<const double> layer_list,
                    std::span<const OtherValue> others, std::span<const double> order, bool verbose,
                    SlotResult& out);

// A resolved config and its full estimate as result slots.
void write_result_slots(const Config& config, const Estimate& estimate, SlotResult& out);

// The field table, once, one line per field: name, type, group, required (0/1), min, max (empty
// unless numeric), choices (comma-separated), unit, default, description, trainmem_only (0/1),
// separated by tabs: what field_specs_json says, without a JSON library.
std::string field_specs_text();

// The names the result's numbers index, once: lines "assumption\t<text>", "component\t<name>",
// "component_kind\t<JSON kind>", "state\t<row>" (the state rows in the order their numbers come),
// "moment\t<name>", "overhead\t<key>", "figure\t<name>", "confidence_match\t<name>", each list
// in index order, and "confidence_source\t<text>".
std::string slot_tables();

}  // namespace trainmem
