// Numbers in, numbers out: the page's path to an estimate on every keystroke, without building,
// parsing and freeing JSON (which costs twenty times the estimate itself). web/js/slots.js encodes
// a config and decodes a result into exactly the object estimate_to_json writes; a test
// (tests/wasm/slots.test.mjs) holds the two equal for every preset and thousands of configs.
//
// A CONFIG is one slot per field in the field table's order (field_specs()): NaN when unset; the
// value for a number; 0 or 1 for a boolean; the index into the field's choices for a choice; the
// bit mask of the chosen entries for a choice list (Config holds it in 32 bits); -1 for a list
// (moe_layer_freq given as a 0/1 list, pipeline_stage_layers), the list travelling apart in the
// list channel (`lists`): for each field at -1, in the field table's order, its length and then
// its entries. A list field's slot is never -1 for a plain number (slots.js sends a -1 as a
// value no slot carries).
//
// A RESULT is numbers and text lines, both read front to back, in the order of the result
// schema (core/src/json/result_schema.hpp walk_result, the one declaration of a result's keys,
// which estimate_to_json walks too); result_schema_text() gives that walk as text, and
// web/js/slots.js decodes by it. Per node: a figure is a number, NaN for JSON's null (unset, or not
// finite), -0 written as 0; a count or flag is a whole number; an entry is an index into one of
// slot_tables()'s tables; a text is a text line (an empty line: null for text_or_null); an object
// writes its keys' nodes; an array its length, then each element; maybe and branch a flag, then
// their nodes when it is 1; keyed its length, then per element its key's index and the element;
// config one slot per field as on input, then the list channel (for each field at -1, in the field
// table's order, its list's length and entries); fields a count, then per field its index in the
// field table and its value as that field's config slot. The first node is the flag "ok", 1.
//
// With issues the numbers are just 0 and the text is one "field TAB message TAB related TAB rule"
// line per issue (as check_slots writes them).
// Every text (each part of a line with a tab) is escaped(): a tab, a newline and a backslash are
// written as backslash-t, backslash-n and two backslashes; slots.js unescapes them.
#pragma once

#include <optional>
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
  std::vector<double> numbers;  // the layout above
  std::string text;             // its text lines
};

// Reads a config's slots and other values, one issue per field that does not take its value, in
// `order`: the config's own order of keys (i < slots: slot i; else others[i - slots.size()]), so
// that issues follow the config as the JSON path's do. An empty order reads the slots in the
// field table's order, then the others.
std::vector<Issue> read_slots(std::span<const double> slots, std::span<const double> lists,
                              std::span<const OtherValue> others, std::span<const double> order,
                              ConfigInput& input);

// The whole path: slots → resolve → full_estimate → result slots (or the issues); `verbose` adds
// the trace.
void estimate_slots(std::span<const double> slots, std::span<const double> lists,
                    std::span<const OtherValue> others, std::span<const double> order, bool verbose,
                    SlotResult& out);

// A config checked without an estimate (resolve() alone): for a share link's restore, which drops
// the link's values the core rejects. Numbers: 1 when the config as given resolves, else 0; then
// 1 and the resolved config of the fields in effect (without_fields_out_of_effect; one slot per
// field, then the list channel, as in a result) when that resolves, else 0. Text: one
// "field TAB message TAB related TAB rule" line per issue of the config as given, related being the
// other fields its rule involves, comma-separated (Issue::related, as resolve()'s rules declare
// them), and rule the rule's id where the rule is a row (Issue::rule, config/rules.cpp).
void check_slots(std::span<const double> slots, std::span<const double> lists,
                 std::span<const OtherValue> others, std::span<const double> order, SlotResult& out);

// What a view shows for the state on screen, in one pass: the fields in effect for the config in
// the slots (fields_in_effect: one 1/0 number per field in field_specs() order), then, for the
// config without the fields that are set but not in effect (without_fields_out_of_effect: a form
// remembers them), the result as estimate_slots writes it, with the run at each of `capacities`
// (bytes: "on every GPU"; fits_at_capacities).
void view_slots(std::span<const double> slots, std::span<const double> lists,
                std::span<const OtherValue> others, std::span<const double> order,
                std::span<const double> capacities, bool verbose, SlotResult& out);

// Which fields mean something for the config in the slots (config.hpp fields_in_effect, whatever
// its problems): one number per field in field_specs() order, 1 or 0, in `out.numbers`.
void fields_in_effect_slots(std::span<const double> slots, std::span<const double> lists,
                            std::span<const OtherValue> others, std::span<const double> order,
                            SlotResult& out);

// A resolved config and its full estimate as result slots, with the trace when given. Throws
// std::logic_error for a value the core itself made that the layout cannot carry (a choice that is
// not among its field's choices, an index a table lacks): never a wrong number.
void write_result_slots(const Config& config, const FullEstimate& estimate, SlotResult& out,
                        const Trace* trace = nullptr);

// The field table, once, one line per field: name, type, group, required (0/1), min, max (empty
// unless numeric), choices (comma-separated), unit, default, description, trainmem_only (0/1),
// link key, label, the form's section, more (0/1) and order (the three empty for a field the page
// sets itself), the choices' labels (newline-separated; empty: the names), separated by tabs,
// texts escaped: what field_specs_json says, without a JSON library.
std::string field_specs_text();

// method_settings(), one line each: peft, field, value, why, separated by tabs, texts escaped.
std::string method_settings_text();

// The tables the result's entries index, once: one "<table>\t<entry>" line per entry (escaped),
// each table in index order: assumption, component and component_kind (ComponentKind, then
// "activation"), moment, overhead, figure, confidence_match, fit, fit_reason, profile and
// verdict_key (the figures, then "total").
std::string slot_tables();

// The result schema (result_schema.hpp) as text, one line per node in the walk's order:
// depth TAB kind TAB key TAB a TAB b (escaped), kind one of figure, count, flag, text,
// text_or_null, entry (a: its table), object (a: its interface in wasm/trainmem.d.ts), array (a:
// the element's interface; the element follows, one level deeper, key ""), maybe (a: "null" or
// "omitted": what an absent value is; its node follows with the same key), branch (key: its
// condition's name; its nodes follow), keyed (a: the values' interface, b: the table of its keys;
// the element follows), config, fields.
std::string result_schema_text();

}  // namespace trainmem
