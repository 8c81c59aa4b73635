// The numeric form of a config and a result (slots.hpp, which has the layout). No JSON library:
// the estimator module the page loads first reads and writes only this.
#include "trainmem/slots.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "internal.hpp"
#include "json/result_rows.hpp"

namespace trainmem {
namespace {

constexpr double k_unset = std::numeric_limits<double>::quiet_NaN();

// A text for one line, or one part of a tab-separated line: a message may quote a value with a
// tab, a newline or a backslash in it (a hand-edited link), which are written as backslash-t,
// backslash-n and two backslashes (web/js/slots.js unescapes them).
void append_escaped(std::string& out, std::string_view text) {
  const auto special = [](char ch) { return ch == '\\' || ch == '\n' || ch == '\t'; };
  if (std::none_of(text.begin(), text.end(), special)) {
    out += text;  // the usual case: nothing to escape
    return;
  }
  for (char ch : text) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else out += ch;
  }
}
std::string escaped(std::string_view text) {
  std::string out;
  append_escaped(out, text);
  return out;
}

// The list channel (slots.hpp): each list field's length and entries, in the table's order.
struct ListReader {
  std::span<const double> lists;
  size_t at = 0;
  // The next list, or nothing when the channel ends before it (a caller's mistake, named by
  // read_slots rather than read past the end).
  std::optional<std::vector<double>> next() {
    if (at >= lists.size()) return std::nullopt;
    const double n = lists[at];
    if (!(n >= 0) || n != std::floor(n) || n > double(lists.size() - at - 1)) return std::nullopt;
    std::vector<double> out(lists.begin() + std::ptrdiff_t(at + 1), lists.begin() + std::ptrdiff_t(at + 1 + size_t(n)));
    at += 1 + size_t(n);
    return out;
  }
};

bool takes_list(FieldType type) { return type == FieldType::integer_or_list || type == FieldType::integer_list; }

// A field's slot as the value set_field takes, but a list field's -1 (read_slots takes its list
// from the channel).
FieldValue slot_value(const FieldSpec& spec, double slot) {
  if (std::isnan(slot)) return std::monostate{};
  switch (spec.type) {
    case FieldType::boolean:
      if (slot == 0 || slot == 1) return slot == 1;
      return slot;  // set_field names the field: "must be true or false, got 2"
    case FieldType::choice:
      if (slot >= 0 && slot < double(spec.choices.size()) && slot == std::floor(slot))
        return std::string(spec.choices[size_t(slot)]);
      return slot;  // "must be one of ..., got 7"
    case FieldType::choice_list: {
      std::vector<std::string> names;
      const uint64_t mask = slot >= 0 && slot < 4294967296.0 ? uint64_t(slot) : 0;
      for (size_t i = 0; i < spec.choices.size(); ++i)
        if ((mask >> i) & 1u) names.emplace_back(spec.choices[i]);
      if (double(mask) != slot || (mask >> spec.choices.size()) != 0) return slot;  // not a mask
      return names;
    }
    case FieldType::integer_or_list:
    case FieldType::integer_list:
    case FieldType::integer:
    case FieldType::number:
      return slot;
  }
  return slot;
}

// What write_result_slots writes with (slots.hpp has the layout): numbers and escaped text lines.
class SlotWriter {
 public:
  explicit SlotWriter(SlotResult& out) : n_(out.numbers), text_(out.text) {
    n_.clear();
    text_.clear();
    n_.reserve(512);
  }
  // A figure as JSON writes it (json_number): not finite is null (NaN), -0 is 0.
  void figure(double x) { n_.push_back(!std::isfinite(x) ? k_unset : x == 0 ? 0.0 : x); }
  void figures(std::initializer_list<double> xs) {
    for (double x : xs) figure(x);
  }
  // A count, a flag or an index.
  void whole(double x) { n_.push_back(x); }
  void wholes(std::initializer_list<double> xs) { n_.insert(n_.end(), xs); }
  void flag(bool on) { n_.push_back(on ? 1 : 0); }
  template <class T, size_t N>
  void rows(const T& from, const detail::FigureRow<T> (&table)[N]) {
    for (const auto& row : table) figure(from.*row.member);
  }
  void moments(const Moments& m) {
    figures({m.forward, m.backward, m.optimizer_step});
    whole(double(m.peak_moment));
    figures({m.peak_activation_bytes, m.peak_temporary_bytes});
  }
  void line(std::string_view text) {
    append_escaped(text_, text);
    text_ += '\n';
  }
  void line(std::string_view first, std::string_view second) {
    append_escaped(text_, first);
    text_ += '\t';
    append_escaped(text_, second);
    text_ += '\n';
  }
  // A suggested field's value as its config slot (the inverse of slot_value). Suggestions change
  // single values, never a list; a value its field cannot take is the core's own mistake: an
  // error, never a wrong slot. (The resolved config's slots come from get_field_slot_at.)
  void field_slot(const FieldSpec& spec, const FieldValue& value);

 private:
  std::vector<double>& n_;
  std::string& text_;
};

// The position of `name` among `names`; a name the table lacks is an error (see field_slot).
double index_in(std::span<const std::string_view> names, std::string_view name, std::string_view what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return double(i);
  throw std::logic_error(std::string(what) + ": " + quoted(name) + " has no slot");
}

void SlotWriter::field_slot(const FieldSpec& spec, const FieldValue& value) {
  const bool numeric = spec.type == FieldType::integer || spec.type == FieldType::number ||
                       spec.type == FieldType::integer_or_list;
  if (std::holds_alternative<std::monostate>(value)) return whole(k_unset);
  if (const bool* b = std::get_if<bool>(&value); b && spec.type == FieldType::boolean) return flag(*b);
  if (const double* d = std::get_if<double>(&value); d && numeric) return figure(*d);
  if (const auto* name = std::get_if<std::string>(&value); name && spec.type == FieldType::choice)
    return whole(index_in(spec.choices, *name, spec.name));
  if (const auto* names = std::get_if<std::vector<std::string>>(&value); names && spec.type == FieldType::choice_list) {
    uint32_t mask = 0;
    for (const std::string& entry : *names) mask |= uint32_t(1) << unsigned(index_in(spec.choices, entry, spec.name));
    return whole(double(mask));
  }
  throw std::logic_error(std::string(spec.name) + ": " + describe(value) + " has no slot");
}

// The trainmem profile's figures besides the model state (slots.hpp: "trainmem profile only").
void write_trainmem_figures(SlotWriter& w, const Config& config, const Estimate& est) {
  for (const double* row : est.cpu.rows()) w.figure(*row);
  w.figures({est.reserved_bytes, est.device_bytes, detail::allocator_bytes(est), config.cuda_context_bytes,
             est.nccl.bytes()});
  w.whole(double(est.nccl.count));
  w.figure(config.workspace_bytes);
  for (int i = 0; i < est.nccl.count; ++i) {
    const NcclCommunicator& g = est.nccl.list[size_t(i)];
    w.wholes({double(g.gpus), double(g.gpus_on_node)});
    w.figure(g.bytes);
    w.line(g.name);
  }
  w.whole(double(est.n_overhead_lines));
  for (int i = 0; i < est.n_overhead_lines; ++i) {
    const OverheadLine& line = est.overhead_lines[size_t(i)];
    w.whole(index_in(k_overhead_keys, line.key, "overhead line"));
    w.figure(line.bytes);
    w.whole(index_in(k_figure_names, line.adds_to, "overhead line"));
  }
  w.whole(double(est.most_loaded_stage));
  w.moments(est.moments);
  w.figure(est.minimum_devices > 0 ? est.minimum_devices : k_unset);
  w.flag(est.deepspeed_gpu_bytes > 0);
  if (est.deepspeed_gpu_bytes > 0) w.figures({est.deepspeed_gpu_bytes, est.deepspeed_cpu_bytes});
  const Confidence& conf = est.confidence;
  w.flag(conf.known);
  if (!conf.known) return;
  w.wholes({double(conf.match), double(conf.group.points)});
  w.figures({conf.group.median_abs_error, conf.group.p90_abs_error, conf.group.median_signed_error});
  w.flag(leans_low(conf.group));
  w.line(confidence_group_name(conf.group.key));
  w.line(confidence_group_name(conf.run));
}

// Each figure's verdict against the capacity (estimate.hpp FitVerdict), in the JSON's order.
void write_verdict(SlotWriter& w, const FitVerdict& v) {
  w.wholes({double(v.fit), double(v.reason)});
  w.figures({v.figure_bytes, v.capacity_bytes, v.headroom, v.spread, v.limit_bytes, v.upper_bytes});
}
void write_verdicts(SlotWriter& w, const Estimate& est) {
  w.whole(double(est.n_verdicts));
  for (int i = 0; i < est.n_verdicts; ++i) write_verdict(w, est.verdicts[size_t(i)]);
}
// The run at each capacity asked for (estimate.hpp fits_at_capacities): each figure's verdict
// (figure_bytes is the figure at that capacity).
void write_capacity_fits(SlotWriter& w, const Estimate& est) {
  w.whole(double(est.capacity_fits.size()));
  for (const CapacityFit& fit : est.capacity_fits) {
    w.figure(fit.capacity_bytes);
    w.whole(double(fit.n_figures));
    for (int i = 0; i < fit.n_figures; ++i) write_verdict(w, fit.verdicts[size_t(i)]);
  }
}

// What to change when the run does not fit: each change's fields as their config slots.
// A resolved config: one slot per field (to_input: Megatron's None stays unset), then the list
// channel (each list's length and entries).
void write_config_slots(SlotWriter& w, const Config& config) {
  const ConfigInput resolved = to_input(config);
  const std::span<const FieldSpec> specs = field_specs();
  std::vector<double> lists;
  for (size_t i = 0; i < specs.size(); ++i) w.figure(get_field_slot_at(resolved, i, lists));
  for (double entry : lists) w.figure(entry);
}

void write_suggestions(SlotWriter& w, const std::vector<Suggestion>& suggestions) {
  const std::span<const FieldSpec> specs = field_specs();
  w.whole(double(suggestions.size()));
  for (const Suggestion& s : suggestions) {
    w.whole(double(s.rank));
    w.figure(s.figure_bytes);
    w.whole(double(s.fields.size()));
    for (const auto& [name, value] : s.fields) {
      const FieldSpec* spec = find_field(name);
      if (!spec) throw std::logic_error("suggestion: " + quoted(name) + " is no field");
      w.whole(double(spec - specs.data()));
      w.field_slot(*spec, value);
    }
    w.line(s.what);
  }
}

}  // namespace

std::vector<Issue> read_slots(std::span<const double> slots, std::span<const double> lists,
                              std::span<const OtherValue> others, std::span<const double> order,
                              ConfigInput& input) {
  std::vector<Issue> issues;
  const std::span<const FieldSpec> specs = field_specs();
  if (slots.size() != specs.size()) {
    issues.push_back(issue("config", "must have one slot per field (" + number_text(double(specs.size())) +
                                         "), got " + number_text(double(slots.size()))));
    return issues;
  }
  // The channel's lists belong to the list fields at -1 in the table's order, whatever order the
  // fields are read in: take them out first. A channel that ends early (the caller's mistake) is
  // named on the field whose list it lacks.
  ListReader channel{lists};
  std::vector<FieldValue> values(slots.size());
  std::vector<std::optional<Issue>> missing(slots.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (slots[i] != -1 || !takes_list(specs[i].type)) {
      values[i] = slot_value(specs[i], slots[i]);
    } else if (std::optional<std::vector<double>> list = channel.next()) {
      values[i] = *std::move(list);
    } else {
      missing[i] = issue(specs[i].name, "its list is missing from the list channel (slots.hpp)");
    }
  }
  auto read = [&](size_t i) {
    std::optional<Issue> problem;
    if (i < specs.size()) {
      if (missing[i]) problem = missing[i];
      else if (!std::isnan(slots[i])) problem = set_field_at(input, i, values[i]);
    } else if (i - specs.size() < others.size()) {
      const OtherValue& other = others[i - specs.size()];
      problem = set_read_field(input, other.name, other.value, other.shape);
    }
    if (problem) issues.push_back(std::move(*problem));
  };
  if (order.empty()) {
    for (size_t i = 0; i < specs.size() + others.size(); ++i) read(i);
  } else {
    // Only whole numbers that name a slot or another value: any double may arrive (found by
    // fuzzing: a huge one converted to size_t is undefined behaviour).
    const double count = double(specs.size() + others.size());
    for (double i : order)
      if (i >= 0 && i < count && i == std::floor(i)) read(size_t(i));
  }
  return issues;
}

void estimate_slots(std::span<const double> slots, std::span<const double> lists,
                    std::span<const OtherValue> others, std::span<const double> order, bool verbose,
                    SlotResult& out) {
  ConfigInput input;
  Resolved resolved = resolve_read(input, read_slots(slots, lists, others, order, input));
  if (!resolved.ok()) {
    out.numbers.assign(1, 0);
    out.text.clear();
    for (const Issue& problem : resolved.issues)
      out.text += escaped(problem.field) + "\t" + escaped(problem.message) + "\n";
    return;
  }
  Trace trace;
  const Estimate estimate = full_estimate(resolved.config, verbose ? &trace : nullptr);
  write_result_slots(resolved.config, estimate, out, verbose ? &trace : nullptr);
}

void check_slots(std::span<const double> slots, std::span<const double> lists,
                 std::span<const OtherValue> others, std::span<const double> order, SlotResult& out) {
  ConfigInput input;
  std::vector<Issue> read_issues = read_slots(slots, lists, others, order, input);
  const Resolved as_given = resolve_read(input, read_issues);
  const Resolved in_effect = resolve_read(without_fields_out_of_effect(input), std::move(read_issues));
  SlotWriter w(out);
  w.whole(as_given.ok() ? 1 : 0);
  w.flag(in_effect.ok());
  if (in_effect.ok()) write_config_slots(w, in_effect.config);
  for (const Issue& problem : as_given.issues) {
    std::string related;
    for (const std::string& name : fields_an_issue_names(problem)) related += (related.empty() ? "" : ",") + name;
    out.text += escaped(problem.field) + "\t" + escaped(problem.message) + "\t" + escaped(related) + "\n";
  }
}

void view_slots(std::span<const double> slots, std::span<const double> lists,
                std::span<const OtherValue> others, std::span<const double> order,
                std::span<const double> capacities, bool verbose, SlotResult& out) {
  ConfigInput input;
  std::vector<Issue> read_issues = read_slots(slots, lists, others, order, input);
  std::vector<bool> in_effect;
  ConfigInput used = without_fields_out_of_effect(input, &in_effect);
  Resolved resolved = resolve_read(used, std::move(read_issues));
  SlotResult result;
  if (!resolved.ok()) {
    result.numbers.assign(1, 0);
    for (const Issue& problem : resolved.issues)
      result.text += escaped(problem.field) + "\t" + escaped(problem.message) + "\n";
  } else {
    Trace trace;
    Estimate estimate = full_estimate(resolved.config, verbose ? &trace : nullptr);
    estimate.capacity_fits = fits_at_capacities(resolved.config, estimate, capacities);
    write_result_slots(resolved.config, estimate, result, verbose ? &trace : nullptr);
  }
  out.numbers.assign(in_effect.begin(), in_effect.end());
  out.numbers.insert(out.numbers.end(), result.numbers.begin(), result.numbers.end());
  out.text = std::move(result.text);
}

void fields_in_effect_slots(std::span<const double> slots, std::span<const double> lists,
                            std::span<const OtherValue> others, std::span<const double> order,
                            SlotResult& out) {
  ConfigInput input;
  read_slots(slots, lists, others, order, input);  // a value a field rejects stays unset here
  const std::vector<bool> flags = fields_in_effect(input);
  out.numbers.assign(flags.begin(), flags.end());
  out.text.clear();
}

// In slots.hpp's order, which web/js/slots.js reads; estimate_to_json (json_io.cpp) writes the
// same quantities as JSON.
void write_result_slots(const Config& config, const Estimate& est, SlotResult& out, const Trace* trace) {
  SlotWriter w(out);
  const bool trainmem = est.profile == Profile::trainmem;
  w.whole(1);
  w.line(format_training_memory_estimate(est, "GB"));
  w.line(est.reference_line);
  w.whole(double(est.profile));
  w.figure(est.weight_and_optimizer_bytes);
  w.figure(est.has_activation ? est.activation_bytes : k_unset);
  w.figure(est.total_bytes);
  w.flag(est.has_activation);
  w.whole(double(est.n_components));
  for (int i = 0; i < est.n_components; ++i) {
    const ModelStateComponent& c = est.components[size_t(i)];
    w.whole(double(c.kind));
    w.rows(c, detail::k_component_figures);
  }
  for (const PartBytes* part : est.state.rows()) w.figures({part->dense, part->embedding, part->expert, part->total()});
  w.figure(est.cpu_bytes);
  if (trainmem) write_trainmem_figures(w, config, est);
  w.rows(est.params, detail::k_param_rows);
  w.wholes({double(est.layers.total), double(est.layers.dense), double(est.layers.moe)});
  w.whole(double(est.stages.size()));
  for (size_t r = 0; r < est.stages.size(); ++r) {
    const StageParams& s = est.stages[r];
    w.whole(double(s.num_layers));
    w.figures({s.dense, s.routed, s.weight_and_optimizer_bytes});
    if (!trainmem) {
      w.figure(r == 0 && est.has_activation ? est.activation_bytes : k_unset);
      continue;
    }
    w.figure(s.activation_bytes);
    w.whole(double(s.microbatches_in_flight));
    w.moments(s.moments);
    w.figures({s.total_bytes, s.reserved_bytes, s.device_bytes, s.reserved_overhead_bytes, s.device_overhead_bytes});
  }
  w.whole(double(std::popcount(est.assumptions)));
  for (size_t i = 0; i < size_t(Assumption::count); ++i)
    if (est.has(Assumption(i))) w.whole(double(i));
  write_verdicts(w, est);
  write_capacity_fits(w, est);
  write_suggestions(w, est.suggestions);
  write_config_slots(w, config);
  w.flag(trace != nullptr);
  if (!trace) return;
  w.whole(double(trace->size()));
  for (const TraceEntry& e : *trace) {
    w.figure(e.value);
    w.line(e.name, e.formula);
  }
}

std::string field_specs_text() {
  std::string out;
  for (const FieldSpec& spec : field_specs()) {
    const bool numeric = has_range(spec.type);
    const std::string min = numeric ? number_text(spec.min) : "", max = numeric ? number_text(spec.max) : "";
    std::string choices;
    for (size_t i = 0; i < spec.choices.size(); ++i) choices += (i ? "," : "") + std::string(spec.choices[i]);
    const std::string_view columns[] = {spec.name, name_of(spec.type), name_of(spec.group), spec.required ? "1" : "0",
                                        min, max, choices, spec.unit, spec.default_text, spec.description,
                                        spec.trainmem_only ? "1" : "0", spec.link_key, spec.label};
    for (size_t i = 0; i < std::size(columns); ++i) out += (i ? "\t" : "") + escaped(columns[i]);
    out += "\n";
  }
  return out;
}

std::string slot_tables() {
  std::string out;
  auto entry = [&](std::string_view table, std::string_view name) { out += std::string(table) + "\t" + escaped(name) + "\n"; };
  for (size_t i = 0; i < size_t(Assumption::count); ++i) entry("assumption", assumption_text(Assumption(i)));
  for (size_t i = 0; i < size_t(ComponentKind::count); ++i) entry("component", component_name(ComponentKind(i)));
  for (size_t i = 0; i < size_t(ComponentKind::count); ++i) entry("component_kind", component_kind_name(ComponentKind(i)));
  for (const auto& row : detail::k_component_figures) entry("component_figure", row.key);
  for (std::string_view row : k_state_rows) entry("state", row);
  for (std::string_view row : k_cpu_rows) entry("cpu", row);
  for (size_t i = 0; i < size_t(Moment::count); ++i) entry("moment", moment_name(Moment(i)));
  for (std::string_view key : k_overhead_keys) entry("overhead", key);
  for (std::string_view figure : k_figure_names) entry("figure", figure);
  for (size_t i = 0; i < size_t(ConfidenceMatch::count); ++i) entry("confidence_match", confidence_match_name(ConfidenceMatch(i)));
  for (size_t i = 0; i < size_t(Fit::count); ++i) entry("fit", fit_name(Fit(i)));
  for (size_t i = 0; i < size_t(FitReason::count); ++i) entry("fit_reason", fit_reason_name(FitReason(i)));
  for (const auto& row : detail::k_param_rows) entry("param", row.key);
  entry("confidence_source", k_confidence_source);
  return out;
}

}  // namespace trainmem
