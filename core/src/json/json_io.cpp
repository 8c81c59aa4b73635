// JSON reading and writing with nlohmann::json (Debian nlohmann-json3-dev 3.11).
#include "trainmem/json_io.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "json/json_values.hpp"
#include "json/result_rows.hpp"
#include "json/result_schema.hpp"

namespace trainmem {
namespace {

using ordered = nlohmann::ordered_json;

ordered num(double x) { return detail::json_number(x); }

ordered config_json(const Config& config) {
  const ConfigInput input = to_input(config);
  const std::span<const FieldSpec> specs = field_specs();
  ordered out = ordered::object();
  for (size_t i = 0; i < specs.size(); ++i)
    out[std::string(specs[i].name)] = detail::json_field_value(get_field_at(input, i));
  return out;
}

// The result schema (result_schema.hpp) as a JSON document: each node under its key.
class JsonOut {
 public:
  explicit JsonOut(ordered& root) : top_(&root) {}
  void figure(std::string_view key, double x) { put(key, num(x)); }
  void count(std::string_view key, double x) { put(key, num(x)); }
  void flag(std::string_view key, bool on) { put(key, on); }
  void text(std::string_view key, std::string_view s) { put(key, std::string(s)); }
  void text_or_null(std::string_view key, std::string_view s) {
    put(key, s.empty() ? ordered(nullptr) : ordered(std::string(s)));
  }
  void entry(std::string_view key, std::string_view, size_t, std::string_view name) { put(key, std::string(name)); }
  template <class F>
  void object(std::string_view key, std::string_view, F f) {
    put(key, inside(ordered::object(), [&] { f(); }));
  }
  template <class Range, class F>
  void array(std::string_view key, std::string_view, const Range& xs, F f) {
    put(key, inside(ordered::array(), [&] {
          for (size_t i = 0; i < xs.size(); ++i) f(xs[i], i);
        }));
  }
  template <class F>
  void maybe(std::string_view key, detail::Absent absent, bool on, F f) {
    if (on) f();
    else if (absent == detail::Absent::null) put(key, nullptr);
  }
  template <class F>
  void branch(std::string_view, bool on, F f) {
    if (on) f();
  }
  template <class Range, class Key, class F>
  void keyed(std::string_view key, std::string_view, std::string_view, std::span<const std::string_view> keys,
             const Range& xs, Key key_of, F f) {
    put(key, inside(ordered::object(), [&] {
          for (size_t i = 0; i < xs.size(); ++i) {
            element_key_ = keys[key_of(i)];
            f(xs[i], i);
          }
        }));
  }
  void config(std::string_view key, const Config& c) { put(key, config_json(c)); }
  void fields(std::string_view key, const std::vector<std::pair<std::string, FieldValue>>& pairs) {
    ordered values = ordered::object();
    for (const auto& [name, value] : pairs) values[name] = detail::json_field_value(value);
    put(key, std::move(values));
  }

 private:
  // A node's value: pushed onto a list, or put in an object under its key (a keyed object's
  // element, written with the key "", under the key of its table entry).
  void put(std::string_view key, ordered value) {
    if (top_->is_array()) top_->push_back(std::move(value));
    else (*top_)[std::string(key.empty() ? element_key_ : key)] = std::move(value);
  }
  template <class F>
  ordered inside(ordered container, F f) {
    ordered* outer = top_;
    top_ = &container;
    f();
    top_ = outer;
    return container;
  }
  ordered* top_;
  std::string_view element_key_;
};

}  // namespace

namespace detail {

ordered_json json_number(double x) {
  if (!std::isfinite(x)) return nullptr;
  if (std::fabs(x) < 9.007199254740992e15 && x == std::floor(x)) return static_cast<int64_t>(x);
  return x;
}

ordered_json json_field_value(const FieldValue& value) {
  struct {
    ordered_json operator()(std::monostate) const { return nullptr; }
    ordered_json operator()(bool b) const { return b; }
    ordered_json operator()(double d) const { return json_number(d); }
    ordered_json operator()(const std::string& s) const { return s; }
    ordered_json operator()(const std::vector<double>& list) const {
      ordered_json out = ordered_json::array();
      for (double d : list) out.push_back(json_number(d));
      return out;
    }
    ordered_json operator()(const std::vector<std::string>& list) const { return list; }
  } visitor;
  return std::visit(visitor, value);
}

std::optional<FieldValue> field_value_of_json(const ordered_json& value) {
  if (value.is_null()) return std::monostate{};
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array() && std::all_of(value.begin(), value.end(), [](const auto& x) { return x.is_number(); })) {
    std::vector<double> list;
    for (const auto& x : value) list.push_back(x.get<double>());
    return list;
  }
  if (value.is_array() && std::all_of(value.begin(), value.end(), [](const auto& x) { return x.is_string(); }))
    return value.get<std::vector<std::string>>();
  return std::nullopt;
}

std::string_view json_type_name(const ordered_json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  return "a value";
}

JsonObject parse_json_object(std::string_view text, std::string_view what, std::string_view noun) {
  JsonObject out;
  try {
    out.object = ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // Malformed text ("parse error at line 1, column 2: ...") or a number beyond double
    // ("number overflow parsing '1e400'", found by fuzzing).
    out.problem = issue(what, "malformed JSON: " + json_error_text(e));
    out.malformed = true;
    return out;
  }
  if (!out.object.is_object())
    out.problem = issue(what, "must be a JSON object of " + std::string(noun) + ", got " +
                                  (out.object.is_array() ? "a list" : "a single value"));
  return out;
}

}  // namespace detail

ParsedConfig parse_config_json(std::string_view text) {
  ParsedConfig out;
  // An ordered object keeps the document's order, so issues follow it.
  const detail::JsonObject doc = detail::parse_json_object(text, "config", "fields");
  if (doc.problem) {
    out.issues.push_back(*doc.problem);
    return out;
  }
  for (const auto& [key, value] : doc.object.items())
    if (auto problem = set_read_field(out.input, key, detail::field_value_of_json(value),
                                      detail::json_type_name(value)))
      out.issues.push_back(std::move(*problem));
  return out;
}

std::string issues_to_json(const std::vector<Issue>& issues, int indent) {
  ordered list = ordered::array();
  // Each issue as every view carries it (slots.cpp issue_line): the field, the message, the other
  // fields its rule involves and the rule's id ("" for a reading problem or a rule in code).
  for (const Issue& issue : issues)
    list.push_back({{"field", issue.field}, {"message", issue.message}, {"related", issue.related}, {"rule", issue.rule}});
  return ordered{{"ok", false}, {"issues", list}}.dump(indent, ' ', false,
                                                       nlohmann::json::error_handler_t::replace);
}

std::string estimate_to_json(const Config& config, const FullEstimate& est, const Trace* trace,
                             int indent) {
  ordered out = ordered::object();
  JsonOut json(out);
  detail::walk_result(json, config, est, trace);
  return out.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Resolved resolve_config_json(std::string_view text, std::optional<Profile> profile) {
  ParsedConfig parsed = parse_config_json(text);
  if (profile) parsed.input.profile = profile;
  Resolved out;
  out.issues = std::move(parsed.issues);
  for (const Issue& issue : out.issues)
    if (issue.field == "config") return out;  // malformed document: nothing more to check

  Resolved resolved = resolve_read(parsed.input, std::move(out.issues));
  out.issues = std::move(resolved.issues);
  if (out.issues.empty()) out.config = std::move(resolved.config);
  return out;
}

Run run_estimate(std::string_view config_json_text, const RunOptions& options) {
  Run run;
  Resolved resolved = resolve_config_json(config_json_text, options.profile);
  run.issues = std::move(resolved.issues);
  if (!run.issues.empty()) return run;
  run.config = std::move(resolved.config);
  run.estimate = full_estimate(run.config, options.verbose ? &run.trace : nullptr);
  return run;
}

std::string estimate_json(std::string_view config_json_text, const RunOptions& options) {
  const Run run = run_estimate(config_json_text, options);
  if (!run.ok()) return issues_to_json(run.issues, options.indent);
  return estimate_to_json(run.config, run.estimate, options.verbose ? &run.trace : nullptr,
                          options.indent);
}

std::string field_specs_json() {
  ordered list = ordered::array();
  for (const FieldSpec& spec : field_specs()) {
    ordered choices = ordered::array();
    for (std::string_view c : spec.choices) choices.push_back(c);
    ordered entry = {{"name", spec.name},
                     {"link_key", spec.link_key},
                     {"label", spec.label},
                     {"type", name_of(spec.type)},
                     {"group", name_of(spec.group)},
                     {"required", spec.required}};
    if (has_range(spec.type)) {
      entry["min"] = num(spec.min);
      entry["max"] = num(spec.max);
    }
    if (!choices.empty()) entry["choices"] = choices;
    if (!spec.choice_labels.empty()) {
      ordered labels = ordered::array();
      for (std::string_view label : spec.choice_labels) labels.push_back(label);
      entry["choice_labels"] = labels;
    }
    entry["unit"] = spec.unit;
    entry["default"] = spec.default_text;
    entry["description"] = spec.description;
    entry["trainmem_only"] = spec.trainmem_only;
    if (spec.form.section != FormSection::none)
      entry["form"] = {{"section", name_of(spec.form.section)}, {"more", spec.form.more}, {"order", spec.form.order}};
    list.push_back(entry);
  }
  return list.dump();
}

}  // namespace trainmem
