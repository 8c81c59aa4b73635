// JSON reading and writing with nlohmann::json (Debian nlohmann-json3-dev 3.11).
#include "trainmem/json_io.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "json/json_values.hpp"
#include "json/result_rows.hpp"

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

ordered moments_json(const Moments& m) {
  return ordered{{"forward", num(m.forward)},
                 {"backward", num(m.backward)},
                 {"optimizer_step", num(m.optimizer_step)},
                 {"peak", moment_name(m.peak_moment)},
                 {"peak_activation_bytes", num(m.peak_activation_bytes)},
                 {"peak_temporary_bytes", num(m.peak_temporary_bytes)}};
}

// The closest validation group (trainmem profile), or null when the core has none for the run.
ordered confidence_json(const Confidence& confidence) {
  if (!confidence.known) return nullptr;
  const ConfidenceGroup& g = confidence.group;
  return ordered{{"group", confidence_group_name(g.key)},
                 {"run_group", confidence_group_name(confidence.run)},
                 {"match", confidence_match_name(confidence.match)},
                 {"points", g.points},
                 {"median_abs_error", num(g.median_abs_error)},
                 {"p90_abs_error", num(g.p90_abs_error)},
                 {"median_signed_error", num(g.median_signed_error)},
                 {"leans_low", leans_low(g)},
                 {"source", k_confidence_source}};
}

// A struct's figures under their keys, in the rows' order (result_rows.hpp).
template <class T, size_t N>
void put_figures(ordered& out, const T& from, const detail::FigureRow<T> (&rows)[N]) {
  for (const auto& [key, member] : rows) out[std::string(key)] = num(from.*member);
}

ordered part_json(const PartBytes& part) {
  return ordered{{"dense", num(part.dense)}, {"embedding", num(part.embedding)},
                 {"expert", num(part.expert)}, {"total", num(part.total())}};
}

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
  for (const Issue& issue : issues) list.push_back({{"field", issue.field}, {"message", issue.message}});
  return ordered{{"ok", false}, {"issues", list}}.dump(indent, ' ', false,
                                                       nlohmann::json::error_handler_t::replace);
}

std::string estimate_to_json(const Config& config, const Estimate& est, const Trace* trace,
                             int indent) {
  ordered out;
  out["ok"] = true;
  out["profile"] = name_of(est.profile);
  out["weight_and_optimizer_bytes"] = num(est.weight_and_optimizer_bytes);
  out["activation_bytes"] = est.has_activation ? num(est.activation_bytes) : ordered(nullptr);
  out["total_bytes"] = num(est.total_bytes);

  ordered components = ordered::array();
  for (int i = 0; i < est.n_components; ++i) {
    const ModelStateComponent& c = est.components[size_t(i)];
    ordered component = {{"name", c.name}, {"kind", component_kind_name(c.kind)}};
    put_figures(component, c, detail::k_component_figures);
    components.push_back(std::move(component));
  }
  if (est.has_activation)
    components.push_back({{"name", "activation"}, {"kind", "activation"},
                          {"memory_bytes", num(est.activation_bytes)}});
  out["components"] = components;

  ordered state = ordered::object();
  const auto rows = est.state.rows();
  for (size_t i = 0; i < rows.size(); ++i) state[std::string(k_state_rows[i])] = part_json(*rows[i]);
  out["state"] = std::move(state);
  out["cpu_bytes"] = num(est.cpu_bytes);
  if (est.profile == Profile::trainmem) {
    ordered cpu = ordered::object();
    const auto cpu_rows = est.cpu.rows();
    for (size_t i = 0; i < cpu_rows.size(); ++i) cpu[std::string(k_cpu_rows[i])] = num(*cpu_rows[i]);
    out["cpu"] = std::move(cpu);
    out["allocated_bytes"] = num(est.total_bytes);
    out["reserved_bytes"] = num(est.reserved_bytes);
    out["device_bytes"] = num(est.device_bytes);
    out["overheads"] = {{"allocator_bytes", num(detail::allocator_bytes(est))},
                        {"cuda_context_bytes", num(config.cuda_context_bytes)},
                        {"nccl_bytes", num(est.nccl.bytes())},
                        {"nccl_communicators", est.nccl.count},
                        {"workspace_bytes", num(config.workspace_bytes)}};
    auto groups = ordered::array();
    for (int i = 0; i < est.nccl.count; ++i) {
      const NcclCommunicator& g = est.nccl.list[size_t(i)];
      groups.push_back({{"name", g.name}, {"gpus", g.gpus}, {"gpus_on_node", g.gpus_on_node},
                        {"bytes", num(g.bytes)}});
    }
    out["overheads"]["nccl_groups"] = std::move(groups);
    auto lines = ordered::array();
    for (int i = 0; i < est.n_overhead_lines; ++i) {
      const OverheadLine& line = est.overhead_lines[size_t(i)];
      lines.push_back({{"key", line.key}, {"bytes", num(line.bytes)}, {"adds_to", line.adds_to}});
    }
    out["overheads"]["lines"] = std::move(lines);
    out["most_loaded_stage"] = est.most_loaded_stage;
    out["moments"] = moments_json(est.moments);
    out["minimum_devices"] = est.minimum_devices > 0 ? num(est.minimum_devices) : ordered(nullptr);
    if (est.deepspeed_gpu_bytes > 0)
      out["deepspeed_estimator"] = {{"gpu_bytes", num(est.deepspeed_gpu_bytes)},
                                    {"cpu_bytes", num(est.deepspeed_cpu_bytes)}};
    out["confidence"] = confidence_json(est.confidence);
  }
  // One verdict per figure, keyed as the figures are ("total" for the reference profiles).
  auto verdicts_json = [&](std::span<const FitVerdict> list) {
    ordered verdicts = ordered::object();
    for (size_t i = 0; i < list.size(); ++i) {
      const FitVerdict& v = list[i];
      const std::string_view key = est.profile == Profile::trainmem ? k_figure_names[i] : "total";
      verdicts[std::string(key)] = {{"fit", fit_name(v.fit)}, {"reason", fit_reason_name(v.reason)},
                                    {"figure_bytes", num(v.figure_bytes)}, {"capacity_bytes", num(v.capacity_bytes)},
                                    {"headroom", v.headroom}, {"spread", v.spread},
                                    {"limit_bytes", num(v.limit_bytes)}, {"upper_bytes", num(v.upper_bytes)}};
    }
    return verdicts;
  };
  if (est.n_verdicts > 0) out["verdicts"] = verdicts_json(std::span(est.verdicts).first(size_t(est.n_verdicts)));
  if (!est.capacity_fits.empty()) {
    ordered fits = ordered::array();
    for (const CapacityFit& fit : est.capacity_fits)
      fits.push_back({{"capacity_bytes", num(fit.capacity_bytes)},
                      {"verdicts", verdicts_json(std::span(fit.verdicts).first(size_t(fit.n_figures)))}});
    out["capacity_fits"] = std::move(fits);
  }
  ordered params = ordered::object();
  put_figures(params, est.params, detail::k_param_rows);
  out["params"] = std::move(params);
  out["layers"] = {{"total", est.layers.total}, {"dense", est.layers.dense}, {"moe", est.layers.moe}};

  ordered stages = ordered::array();
  for (size_t r = 0; r < est.stages.size(); ++r) {
    const StageParams& s = est.stages[r];
    ordered stage = {{"stage", r},
                     {"num_layers", s.num_layers},
                     {"dense_params", num(s.dense)},
                     {"routed_params", num(s.routed)},
                     {"weight_and_optimizer_bytes", num(s.weight_and_optimizer_bytes)}};
    if (est.profile == Profile::trainmem) {
      stage["activation_bytes"] = num(s.activation_bytes);
      stage["microbatches_in_flight"] = s.microbatches_in_flight;
      stage["moments"] = moments_json(s.moments);
      stage["total_bytes"] = num(s.total_bytes);
      stage["allocated_bytes"] = num(s.total_bytes);
      stage["reserved_bytes"] = num(s.reserved_bytes);
      stage["device_bytes"] = num(s.device_bytes);
      stage["overhead_bytes"] = {{"reserved", num(s.reserved_overhead_bytes)},
                                 {"device", num(s.device_overhead_bytes)}};
    } else {
      // The reference formulas compute activations for the first stage only.
      stage["activation_bytes"] = r == 0 && est.has_activation ? num(est.activation_bytes) : ordered(nullptr);
    }
    stages.push_back(stage);
  }
  out["stages"] = stages;

  ordered assumptions = ordered::array();
  for (std::string_view text : est.assumption_texts()) assumptions.push_back(text);
  out["assumptions"] = assumptions;
  // What to change when it does not fit: each change's fields, the figure it gives (device bytes
  // in the trainmem profile, the total in the reference ones) and what it is.
  ordered suggestions = ordered::array();
  for (const Suggestion& s : est.suggestions) {
    ordered fields = ordered::object();
    for (const auto& [name, value] : s.fields) fields[name] = detail::json_field_value(value);
    ordered one = ordered::object();
    one["fields"] = fields;
    one[est.profile == Profile::trainmem ? "device_bytes" : "total_bytes"] = num(s.figure_bytes);
    one["what"] = s.what;
    one["rank"] = s.rank;
    suggestions.push_back(one);
  }
  out["suggestions"] = suggestions;
  out["report"] = est.reference_line.empty() ? ordered(nullptr) : ordered(est.reference_line);
  out["summary"] = format_training_memory_estimate(est, "GB");
  out["config"] = config_json(config);
  if (trace) {
    ordered entries = ordered::array();
    for (const TraceEntry& e : *trace)
      entries.push_back({{"name", e.name}, {"value", num(e.value)}, {"formula", e.formula}});
    out["trace"] = entries;
  }
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
    entry["unit"] = spec.unit;
    entry["default"] = spec.default_text;
    entry["description"] = spec.description;
    entry["trainmem_only"] = spec.trainmem_only;
    list.push_back(entry);
  }
  return list.dump();
}

}  // namespace trainmem
