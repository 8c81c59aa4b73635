// The numeric form of a config and a result (slots.hpp). No JSON library: the estimator module
// the page loads first reads and writes only this.
#include "trainmem/slots.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "internal.hpp"

namespace trainmem {
namespace {

constexpr double k_unset = std::numeric_limits<double>::quiet_NaN();

// A field's slot as the value set_field takes.
FieldValue slot_value(const FieldSpec& spec, double slot, std::span<const double> layer_list) {
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
      if (slot == -1) return std::vector<double>(layer_list.begin(), layer_list.end());
      return slot;
    case FieldType::integer:
    case FieldType::number:
      return slot;
  }
  return slot;
}

// A resolved field's value as its slot (the inverse of slot_value); a layer list goes to `list`.
double slot_of(const FieldSpec& spec, const FieldValue& value, std::vector<double>& list) {
  if (std::holds_alternative<std::monostate>(value)) return k_unset;
  if (const bool* b = std::get_if<bool>(&value)) return *b ? 1 : 0;
  if (const double* d = std::get_if<double>(&value)) return *d;
  if (const auto* text = std::get_if<std::string>(&value)) {
    for (size_t i = 0; i < spec.choices.size(); ++i)
      if (spec.choices[i] == *text) return double(i);
    return k_unset;
  }
  if (const auto* names = std::get_if<std::vector<std::string>>(&value)) {
    double mask = 0;
    for (const std::string& name : *names)
      for (size_t i = 0; i < spec.choices.size(); ++i)
        if (spec.choices[i] == name) mask += double(1u << i);
    return mask;
  }
  const auto& layers = std::get<std::vector<double>>(value);
  list = layers;
  return -1;
}

void put_moments(std::vector<double>& out, const Moments& m) {
  out.insert(out.end(), {m.forward, m.backward, m.optimizer_step, double(m.peak_moment),
                         m.peak_activation_bytes, m.peak_temporary_bytes});
}

void put_part(std::vector<double>& out, const PartBytes& p) {
  out.insert(out.end(), {p.dense, p.embedding, p.expert});
}

// A text for one tab-separated line: a message may quote a value with a tab, a newline or a
// backslash in it (a hand-edited link), which are written as backslash-t, backslash-n and two
// backslashes (web/js/slots.js unescapes them).
std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else out += ch;
  }
  return out;
}

double index_of(std::string_view name, std::span<const std::string_view> names) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return double(i);
  return -1;
}

}  // namespace

std::vector<Issue> read_slots(std::span<const double> slots, std::span<const double> layer_list,
                              std::span<const OtherValue> others, std::span<const double> order,
                              ConfigInput& input) {
  std::vector<Issue> issues;
  const std::span<const FieldSpec> specs = field_specs();
  if (slots.size() != specs.size()) {
    issues.push_back(issue("config", "must have one slot per field (" + number_text(double(specs.size())) +
                                         "), got " + number_text(double(slots.size()))));
    return issues;
  }
  auto read = [&](size_t i) {
    std::optional<Issue> problem;
    if (i < specs.size()) {
      if (!std::isnan(slots[i])) problem = set_field_at(input, i, slot_value(specs[i], slots[i], layer_list));
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

void estimate_slots(std::span<const double> slots, std::span<const double> layer_list,
                    std::span<const OtherValue> others, std::span<const double> order, bool verbose,
                    SlotResult& out) {
  out.numbers.clear();
  out.text.clear();
  ConfigInput input;
  std::vector<Issue> read_issues = read_slots(slots, layer_list, others, order, input);
  Resolved resolved = resolve_read(input, std::move(read_issues));
  const std::vector<Issue>& issues = resolved.issues;
  if (!issues.empty()) {
    out.numbers.push_back(0);
    for (const Issue& problem : issues)
      out.text += escaped(problem.field) + "\t" + escaped(problem.message) + "\n";
    return;
  }
  Trace trace;
  write_result_slots(resolved.config, full_estimate(resolved.config, verbose ? &trace : nullptr), out);
  for (const TraceEntry& e : trace) {
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", e.value);  // 17 digits: the same double back
    out.text += e.name + "\t" + (std::isfinite(e.value) ? value : "null") + "\t" + e.formula + "\n";
  }
}

// The order below is the order web/js/slots.js reads; estimate_to_json (json_io.cpp) writes the
// same quantities as JSON.
void write_result_slots(const Config& config, const Estimate& est, SlotResult& out) {
  std::vector<double>& n = out.numbers;
  n.clear();
  out.text.clear();
  n.reserve(512);
  n.insert(n.end(), {1, double(est.profile), est.weight_and_optimizer_bytes,
                     est.has_activation ? est.activation_bytes : k_unset, est.total_bytes});
  n.push_back(double(est.n_components));
  for (int i = 0; i < est.n_components; ++i) {
    const ModelStateComponent& c = est.components[size_t(i)];
    n.insert(n.end(), {double(c.kind), c.parameter_count, c.parameter_count_per_gpu,
                       c.bytes_per_parameter, c.optimizer_shard_size, c.memory_bytes});
  }
  for (const PartBytes* part : est.state.rows()) put_part(n, *part);  // k_state_rows' order
  n.push_back(est.cpu_bytes);
  if (est.profile == Profile::trainmem) {
    n.insert(n.end(), {est.reserved_bytes, est.device_bytes, config.cuda_context_bytes,
                       est.nccl.bytes(), config.workspace_bytes, double(est.nccl.count)});
    for (int i = 0; i < est.nccl.count; ++i) {
      const NcclCommunicator& g = est.nccl.list[size_t(i)];
      n.insert(n.end(), {double(g.gpus), double(g.gpus_on_node), g.bytes});
    }
    n.push_back(double(est.n_overhead_lines));
    for (int i = 0; i < est.n_overhead_lines; ++i) {
      const OverheadLine& line = est.overhead_lines[size_t(i)];
      n.insert(n.end(), {index_of(line.key, k_overhead_keys), line.bytes,
                         index_of(line.adds_to, k_figure_names)});
    }
    n.push_back(double(est.most_loaded_stage));
    put_moments(n, est.moments);
    n.push_back(est.minimum_devices > 0 ? est.minimum_devices : k_unset);
    n.insert(n.end(), {est.deepspeed_gpu_bytes, est.deepspeed_cpu_bytes});
    // The closest validation group: known, then its match, points, median and p90 (its name and
    // the run's own group's name are text lines after the NCCL communicators').
    const Confidence& conf = est.confidence;
    n.push_back(conf.known ? 1 : 0);
    if (conf.known)
      n.insert(n.end(), {double(conf.match), double(conf.group.points), conf.group.median_abs_error,
                         conf.group.p90_abs_error});
  }
  const ParamCounts& p = est.params;
  n.insert(n.end(), {p.total, p.dense_transformer, p.embedding, p.routed_experts, p.active, p.per_gpu,
                     p.dense_per_gpu, p.embedding_per_gpu, p.routed_per_gpu});
  n.insert(n.end(), {double(est.layers.total), double(est.layers.dense), double(est.layers.moe)});
  n.push_back(double(est.stages.size()));
  for (size_t r = 0; r < est.stages.size(); ++r) {
    const StageParams& s = est.stages[r];
    n.insert(n.end(), {double(s.num_layers), s.dense, s.routed, s.weight_and_optimizer_bytes});
    if (est.profile == Profile::trainmem) {
      n.insert(n.end(), {s.activation_bytes, double(s.microbatches_in_flight)});
      put_moments(n, s.moments);
      n.insert(n.end(), {s.total_bytes, s.reserved_bytes, s.device_bytes});
    } else {
      // The reference formulas compute activations for the first stage only.
      n.push_back(r == 0 && est.has_activation ? est.activation_bytes : k_unset);
    }
  }
  n.push_back(double(__builtin_popcount(est.assumptions)));
  for (size_t i = 0; i < size_t(Assumption::count); ++i)
    if (est.has(Assumption(i))) n.push_back(double(i));
  // Suggestions: count, then each one's rank, figure and fields (field index, kind 0 null, 1
  // boolean, 2 number, 3 choice index, value); their texts are lines after the confidence's.
  n.push_back(double(est.suggestions.size()));
  for (const Suggestion& s : est.suggestions) {
    n.insert(n.end(), {double(s.rank), s.figure_bytes, double(s.fields.size())});
    for (const auto& [name, value] : s.fields) {
      const FieldSpec* spec = find_field(name);
      const size_t index = size_t(spec - field_specs().data());
      double kind = 0, number = 0;
      if (const bool* b = std::get_if<bool>(&value)) kind = 1, number = *b ? 1 : 0;
      else if (const double* d = std::get_if<double>(&value)) kind = 2, number = *d;
      else if (const std::string* t = std::get_if<std::string>(&value)) {
        kind = 3;
        for (size_t c = 0; c < spec->choices.size(); ++c)
          if (spec->choices[c] == *t) number = double(c);
      }
      n.insert(n.end(), {double(index), kind, number});
    }
  }
  // The config after resolution, one slot per field (to_input: Megatron's None stays unset).
  const ConfigInput resolved = to_input(config);
  const std::span<const FieldSpec> specs = field_specs();
  std::vector<double> layer_list;
  for (size_t i = 0; i < specs.size(); ++i) n.push_back(slot_of(specs[i], get_field_at(resolved, i), layer_list));
  n.push_back(double(layer_list.size()));
  n.insert(n.end(), layer_list.begin(), layer_list.end());

  out.text = format_training_memory_estimate(est, "GB") + "\n" + est.reference_line + "\n";
  for (int i = 0; i < est.nccl.count; ++i) out.text += std::string(est.nccl.list[size_t(i)].name) + "\n";
  if (est.profile == Profile::trainmem && est.confidence.known)
    out.text += confidence_group_name(est.confidence.group.key) + "\n" +
                confidence_group_name(est.confidence.run) + "\n";
  for (const Suggestion& s : est.suggestions) out.text += escaped(s.what) + "\n";
}

std::string field_specs_text() {
  std::string out;
  for (const FieldSpec& spec : field_specs()) {
    const bool numeric = spec.type == FieldType::integer || spec.type == FieldType::integer_or_list ||
                         spec.type == FieldType::number;
    std::string choices;
    for (size_t i = 0; i < spec.choices.size(); ++i) choices += (i ? "," : "") + std::string(spec.choices[i]);
    out += std::string(spec.name) + "\t" + std::string(name_of(spec.type)) + "\t" +
           std::string(name_of(spec.group)) + "\t" + (spec.required ? "1" : "0") + "\t" +
           (numeric ? number_text(spec.min) : "") + "\t" + (numeric ? number_text(spec.max) : "") + "\t" +
           choices + "\t" + std::string(spec.unit) + "\t" + std::string(spec.default_text) + "\t" +
           std::string(spec.description) + "\t" + (spec.trainmem_only ? "1" : "0") + "\n";
  }
  return out;
}

std::string slot_tables() {
  std::string out;
  for (size_t i = 0; i < size_t(Assumption::count); ++i)
    out += "assumption\t" + std::string(assumption_text(Assumption(i))) + "\n";
  for (size_t i = 0; i < size_t(ComponentKind::count); ++i)
    out += "component\t" + std::string(component_name(ComponentKind(i))) + "\n";
  for (size_t i = 0; i < size_t(ComponentKind::count); ++i)
    out += "component_kind\t" + std::string(component_kind_name(ComponentKind(i))) + "\n";
  for (std::string_view row : k_state_rows) out += "state\t" + std::string(row) + "\n";
  for (size_t i = 0; i < size_t(Moment::count); ++i)
    out += "moment\t" + std::string(moment_name(Moment(i))) + "\n";
  for (std::string_view key : k_overhead_keys) out += "overhead\t" + std::string(key) + "\n";
  for (std::string_view figure : k_figure_names) out += "figure\t" + std::string(figure) + "\n";
  for (size_t i = 0; i < size_t(ConfidenceMatch::count); ++i)
    out += "confidence_match\t" + std::string(confidence_match_name(ConfidenceMatch(i))) + "\n";
  out += "confidence_source\t" + std::string(k_confidence_source) + "\n";
  return out;
}

}  // namespace trainmem
