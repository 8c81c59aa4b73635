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
// A RESULT is numbers and text lines, both read front to back. Below, a figure is a number that
// JSON writes with json_number: NaN is its null (unset, or not finite), -0 is written as 0. A
// count, flag or index is a whole number; an index names an entry of a slot_tables() list
// ("table x"). [text: ...] is a text line, written where the numbers it belongs to are. The rows
// this path and estimate_to_json share are written once, in core/src/json/result_rows.hpp.
//
//   1                                         (0: issues, see below)
//   [text: summary] [text: report; empty: null]
//   profile                                   index into the profile field's choices
//   weight_and_optimizer_bytes, activation_bytes (NaN when not computed), total_bytes
//   has_activation                            flag: the components end with the activation's
//   count of components, each: kind (table component: its name, component_kind: its kind),
//                               its figures (table component_figure)
//   state: per row of table state, dense, embedding, expert, total
//   cpu_bytes
//   trainmem profile only:
//     cpu: per row of table cpu, the figure (they add up to cpu_bytes)
//     reserved_bytes, device_bytes
//     overheads: allocator_bytes, cuda_context_bytes, nccl_bytes, count of NCCL groups
//       (nccl_communicators), workspace_bytes, then each group: gpus, gpus_on_node, bytes [text: name]
//     count of overhead lines, each: key (table overhead), bytes, adds_to (table figure)
//     most_loaded_stage, moments (below)
//     minimum_devices                         NaN: null
//     has_deepspeed_estimator, and when 1: gpu_bytes, cpu_bytes
//     has_confidence, and when 1: match (table confidence_match), points, median_abs_error,
//                                 p90_abs_error, median_signed_error, leans_low
//                                 [text: group] [text: run_group]
//   params: per row of table param, the figure
//   layers: total, dense, moe
//   count of stages, each: num_layers, dense_params, routed_params, weight_and_optimizer_bytes,
//     trainmem: activation_bytes, microbatches_in_flight, moments, total_bytes, reserved_bytes,
//               device_bytes, overhead_bytes: reserved, device
//     else:     activation_bytes (NaN: null; the reference formulas know the first stage only)
//   count of assumptions, each: its index (table assumption)
//   count of verdicts (0 without a capacity; trainmem: allocated, reserved, device; else total),
//     each: fit (table fit), reason (table fit_reason), figure_bytes, capacity_bytes, headroom,
//     spread, limit_bytes, upper_bytes
//   count of capacity fits (view_slots' capacities; 0 otherwise), each: capacity_bytes, count of
//     figures (as the verdicts), each figure's verdict as above (its figure_bytes: the figure at
//     that capacity)
//   count of suggestions, each: rank, figure (device_bytes in the trainmem profile, else
//     total_bytes), count of fields, each: field index, the value as that field's config slot
//     [text: what]
//   the resolved config: one slot per field as above, then the list channel as on input (for
//     each field at -1, in the field table's order, its list's length and entries)
//   has_trace, and when 1: count of entries, each: value [text: name TAB formula]
//
//   moments: forward, backward, optimizer_step, peak (table moment), peak_activation_bytes,
//            peak_temporary_bytes
//
// With issues the numbers are just 0 and the text is one "field TAB message" line per issue.
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
// "field TAB message TAB related" line per issue of the config as given, related being the other
// fields its rule names, comma-separated (fields_an_issue_names).
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
void write_result_slots(const Config& config, const Estimate& estimate, SlotResult& out,
                        const Trace* trace = nullptr);

// The field table, once, one line per field: name, type, group, required (0/1), min, max (empty
// unless numeric), choices (comma-separated), unit, default, description, trainmem_only (0/1),
// link key, label, separated by tabs, texts escaped: what field_specs_json says, without a JSON
// library.
std::string field_specs_text();

// The tables the result's indices name, once: one "<table>\t<entry>" line per entry (escaped), each
// table in index order: assumption, component, component_kind, component_figure, state, cpu, moment,
// overhead, figure, confidence_match, param, and confidence_source (one entry).
std::string slot_tables();

}  // namespace trainmem
