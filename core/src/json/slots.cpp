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
#include "json/result_schema.hpp"

namespace trainmem {
namespace {


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

// An issue as the page reads it: "field\tmessage\trelated,fields\trule id" (slots.hpp).
std::string issue_line(const Issue& problem) {
  std::string related;
  for (const std::string& name : problem.related) related += (related.empty() ? "" : ",") + name;
  return escaped(problem.field) + "\t" + escaped(problem.message) + "\t" + escaped(related) + "\t" +
         escaped(problem.rule) + "\n";
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
  void figure(double x) { n_.push_back(!std::isfinite(x) ? detail::k_not_a_number : x == 0 ? 0.0 : x); }
  // A count, a flag or an index.
  void whole(double x) { n_.push_back(x); }
  void flag(bool on) { n_.push_back(on ? 1 : 0); }
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
  if (std::holds_alternative<std::monostate>(value)) return whole(detail::k_not_a_number);
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

// A resolved config: one slot per field (to_input: Megatron's None stays unset), then the list
// channel (each list's length and entries).
void write_config_slots(SlotWriter& w, const Config& config) {
  const ConfigInput resolved = to_input(config);
  const std::span<const FieldSpec> specs = field_specs();
  std::vector<double> lists;
  for (size_t i = 0; i < specs.size(); ++i) w.figure(get_field_slot_at(resolved, i, lists));
  for (double entry : lists) w.figure(entry);
}

// The result schema (result_schema.hpp) as slots: each node's value in the walk's order, keys
// left out (the schema text gives them to the decoder).
class SlotOut {
 public:
  explicit SlotOut(SlotWriter& w) : w_(w) {}
  void figure(std::string_view, double x) { w_.figure(x); }
  void count(std::string_view, double x) { w_.whole(x); }
  void flag(std::string_view, bool on) { w_.flag(on); }
  void text(std::string_view, std::string_view s) { w_.line(s); }
  void text_or_null(std::string_view, std::string_view s) { w_.line(s); }
  // An entry the core cannot name is its own mistake (a new overhead key missing from its table):
  // an error, never a wrong index.
  void entry(std::string_view key, std::string_view table, size_t i, std::string_view name) {
    if (i == detail::k_no_entry)
      throw std::logic_error(std::string(table) + " " + quoted(key) + ": " + quoted(name) + " has no slot");
    w_.whole(double(i));
  }
  template <class F>
  void object(std::string_view, std::string_view, F f) { f(); }
  template <class Range, class F>
  void array(std::string_view, std::string_view, const Range& xs, F f) {
    w_.whole(double(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) f(xs[i], i);
  }
  template <class F>
  void maybe(std::string_view, detail::Absent, bool on, F f) {
    w_.flag(on);
    if (on) f();
  }
  template <class F>
  void branch(std::string_view, bool on, F f) {
    w_.flag(on);
    if (on) f();
  }
  template <class Range, class Key, class F>
  void keyed(std::string_view key, std::string_view, std::string_view table, std::span<const std::string_view> keys,
             const Range& xs, Key key_of, F f) {
    w_.whole(double(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      const size_t k = key_of(i);
      if (k >= keys.size()) throw std::logic_error(std::string(table) + " " + quoted(key) + ": no key " + number_text(double(k)));
      w_.whole(double(k));
      f(xs[i], i);
    }
  }
  void config(std::string_view, const Config& c) { write_config_slots(w_, c); }
  // Suggested fields: each one's index in the field table and its value as its config slot.
  void fields(std::string_view, const std::vector<std::pair<std::string, FieldValue>>& pairs) {
    const std::span<const FieldSpec> specs = field_specs();
    w_.whole(double(pairs.size()));
    for (const auto& [name, value] : pairs) {
      const FieldSpec* spec = find_field(name);
      if (!spec) throw std::logic_error("suggestion: " + quoted(name) + " is no field");
      w_.whole(double(spec - specs.data()));
      w_.field_slot(*spec, value);
    }
  }

 private:
  SlotWriter& w_;
};

// The result schema as text (slots.hpp result_schema_text): one line per node, its depth first.
class SchemaOut {
 public:
  explicit SchemaOut(std::string& text) : text_(text) {}
  void figure(std::string_view key, double) { node("figure", key); }
  void count(std::string_view key, double) { node("count", key); }
  void flag(std::string_view key, bool) { node("flag", key); }
  void text(std::string_view key, std::string_view) { node("text", key); }
  void text_or_null(std::string_view key, std::string_view) { node("text_or_null", key); }
  void entry(std::string_view key, std::string_view table, size_t, std::string_view) { node("entry", key, table); }
  template <class F>
  void object(std::string_view key, std::string_view type, F f) {
    node("object", key, type);
    nested(f);
  }
  template <class Range, class F>
  void array(std::string_view key, std::string_view type, const Range&, F f) {
    node("array", key, type);
    const typename Range::value_type element{};
    nested([&] { f(element, 0); });
  }
  template <class F>
  void maybe(std::string_view key, detail::Absent absent, bool, F f) {
    node("maybe", key, absent == detail::Absent::null ? "null" : "omitted");
    nested(f);
  }
  template <class F>
  void branch(std::string_view name, bool, F f) {
    node("branch", name);
    nested(f);
  }
  template <class Range, class Key, class F>
  void keyed(std::string_view key, std::string_view type, std::string_view table, std::span<const std::string_view>,
             const Range&, Key, F f) {
    node("keyed", key, type, table);
    const typename Range::value_type element{};
    nested([&] { f(element, 0); });
  }
  void config(std::string_view key, const Config&) { node("config", key); }
  void fields(std::string_view key, const std::vector<std::pair<std::string, FieldValue>>&) { node("fields", key); }

 private:
  void node(std::string_view kind, std::string_view key, std::string_view a = {}, std::string_view b = {}) {
    text_ += std::to_string(depth_);
    for (std::string_view part : {kind, key, a, b}) {
      text_ += '\t';
      append_escaped(text_, part);
    }
    text_ += '\n';
  }
  template <class F>
  void nested(F f) {
    ++depth_;
    f();
    --depth_;
  }
  std::string& text_;
  int depth_ = 0;
};

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
      out.text += issue_line(problem);
    return;
  }
  Trace trace;
  const FullEstimate estimate = full_estimate(resolved.config, verbose ? &trace : nullptr);
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
    out.text += issue_line(problem);
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
      result.text += issue_line(problem);
  } else {
    Trace trace;
    FullEstimate estimate = full_estimate(resolved.config, verbose ? &trace : nullptr);
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

// The result schema's walk (result_schema.hpp), which estimate_to_json walks too and
// web/js/slots.js decodes with result_schema_text().
void write_result_slots(const Config& config, const FullEstimate& est, SlotResult& out, const Trace* trace) {
  SlotWriter w(out);
  SlotOut slots(w);
  detail::walk_result(slots, config, est, trace);
}

std::string result_schema_text() {
  std::string out;
  SchemaOut schema(out);
  const Trace no_trace;
  detail::walk_result(schema, Config{}, FullEstimate{}, &no_trace);
  return out;
}

std::string field_specs_text() {
  std::string out;
  for (const FieldSpec& spec : field_specs()) {
    const bool numeric = has_range(spec.type);
    const std::string min = numeric ? number_text(spec.min) : "", max = numeric ? number_text(spec.max) : "";
    std::string choices, labels;
    for (size_t i = 0; i < spec.choices.size(); ++i) choices += (i ? "," : "") + std::string(spec.choices[i]);
    for (size_t i = 0; i < spec.choice_labels.size(); ++i) labels += (i ? "\n" : "") + std::string(spec.choice_labels[i]);
    const bool on_form = spec.form.section != FormSection::none;
    const std::string order = on_form ? std::to_string(spec.form.order) : "";
    const std::string_view columns[] = {spec.name, name_of(spec.type), name_of(spec.group), spec.required ? "1" : "0",
                                        min, max, choices, spec.unit, spec.default_text, spec.description,
                                        spec.trainmem_only ? "1" : "0", spec.link_key, spec.label,
                                        on_form ? name_of(spec.form.section) : "", on_form ? (spec.form.more ? "1" : "0") : "",
                                        order, labels};
    for (size_t i = 0; i < std::size(columns); ++i) out += (i ? "\t" : "") + escaped(columns[i]);
    out += "\n";
  }
  return out;
}

std::string method_settings_text() {
  std::string out;
  for (const MethodSetting& m : method_settings())
    out += escaped(name_of(m.peft)) + "\t" + escaped(m.field) + "\t" + escaped(m.value) + "\t" + escaped(m.why) + "\n";
  return out;
}

std::string slot_tables() {
  std::string out;
  auto entry = [&](std::string_view table, std::string_view name) { out += std::string(table) + "\t" + escaped(name) + "\n"; };
  for (size_t i = 0; i < size_t(Assumption::count); ++i) entry("assumption", assumption_text(Assumption(i)));
  for (size_t i = 0; i <= size_t(ComponentKind::count); ++i) entry("component", detail::component_row_name(i));
  for (size_t i = 0; i <= size_t(ComponentKind::count); ++i) entry("component_kind", detail::component_row_kind(i));
  for (size_t i = 0; i < size_t(Moment::count); ++i) entry("moment", moment_name(Moment(i)));
  for (size_t i = 0; i < size_t(JobMoment::count); ++i) entry("job_moment", job_moment_name(JobMoment(i)));
  for (std::string_view key : k_overhead_keys) entry("overhead", key);
  for (std::string_view figure : k_figure_names) entry("figure", figure);
  for (size_t i = 0; i < size_t(ConfidenceMatch::count); ++i) entry("confidence_match", confidence_match_name(ConfidenceMatch(i)));
  for (size_t i = 0; i < size_t(Fit::count); ++i) entry("fit", fit_name(Fit(i)));
  for (size_t i = 0; i < size_t(FitReason::count); ++i) entry("fit_reason", fit_reason_name(FitReason(i)));
  for (size_t i = 0; i < size_t(Profile::count); ++i) entry("profile", name_of(Profile(i)));
  for (std::string_view key : detail::k_verdict_keys) entry("verdict_key", key);
  for (std::string_view id : rule_ids()) entry("rule", id);
  return out;
}

}  // namespace trainmem
