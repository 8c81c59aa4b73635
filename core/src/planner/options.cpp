// The planner's options: one table row per option, naming the PlanOptions member it sets and how
// a value is read into it; the names of the options' choices; byte sizes such as "80GiB".
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <variant>

#include "config/messages.hpp"
#include "planner/options.hpp"

namespace trainmem {
namespace {

constexpr std::array<std::string_view, 4> k_metrics = {"auto", "allocated", "reserved", "device"};
constexpr std::array<std::string_view, 9> k_knobs = {"tp", "pp", "vpp", "cp", "ep", "etp", "sharding",
                                                     "recompute", "micro_batch_size"};
constexpr std::array<std::string_view, 4> k_solves = {"none", "max-micro-batch", "max-seq-length",
                                                      "min-gpus"};
static_assert(k_metrics.size() == size_t(PlanMetric::count) && k_knobs.size() == size_t(PlanKnob::count) &&
                  k_solves.size() == size_t(PlanSolve::count),
              "one name per enumerator");

}  // namespace

template <> std::span<const std::string_view> enum_names<PlanMetric>() { return k_metrics; }
template <> std::span<const std::string_view> enum_names<PlanKnob>() { return k_knobs; }
template <> std::span<const std::string_view> enum_names<PlanSolve>() { return k_solves; }

namespace {

// The kinds of option. Each holds the PlanOptions member it sets; `read` below takes a value
// into it or says which rule the value breaks.
struct Count {  // a positive integer, at most `max`
  int64_t PlanOptions::*member;
  double max;
};
struct Bytes {  // more than 0 bytes: a number, or a size such as "80GiB"
  double PlanOptions::*member;
};
struct Share {  // a share of the GPU: 0 ≤ share < 1
  double PlanOptions::*member;
};
struct Flag {
  bool PlanOptions::*member;
};
template <class E>
struct Choice {  // one of enum_names<E>()
  E PlanOptions::*member;
};
struct Knobs {  // a list of knob names, stored as bit i for PlanKnob(i)
  uint32_t PlanOptions::*member;
};
struct Held {  // a list of config field names (the field table's), held at the base's values
  std::vector<std::string> PlanOptions::*member;
};
using Target = std::variant<Count, Bytes, Share, Flag, Choice<PlanMetric>, Choice<PlanSolve>, Knobs, Held>;

struct Option {
  std::string_view name;
  Target target;
};

using O = PlanOptions;

// In the order plan() reports bad numbers in (number_option_issues), as before the table.
constexpr std::array<Option, 17> k_options = {{
    {"gpus", Count{&O::gpus, 1e9}},
    {"gpus_per_node", Count{&O::gpus_per_node, 1024}},
    {"gpu_memory_bytes", Bytes{&O::gpu_memory_bytes}},
    {"headroom", Share{&O::headroom}},
    {"metric", Choice<PlanMetric>{&O::metric}},
    {"max_results", Count{&O::max_results, 100000}},
    {"max_evaluations", Count{&O::max_evaluations, 1e15}},
    {"allow_uneven_pipeline", Flag{&O::allow_uneven_pipeline}},
    {"search", Knobs{&O::search}},
    {"keep", Held{&O::keep}},
    {"max_micro_batch_size", Count{&O::max_micro_batch_size, 1e9}},
    {"solve", Choice<PlanSolve>{&O::solve}},
    {"max_seq_length", Count{&O::max_seq_length, 1e12}},
    {"seq_length_step", Count{&O::seq_length_step, 1e12}},
    {"max_gpus", Count{&O::max_gpus, 1e9}},
    {"prune", Flag{&O::prune}},
    {"progress_every", Count{&O::progress_every, 1e12}},
}};

constexpr auto k_option_names = [] {
  std::array<std::string_view, k_options.size()> names{};
  for (size_t i = 0; i < k_options.size(); ++i) names[i] = k_options[i].name;
  return names;
}();

// The rule a value breaks, "must be ..., got ..."; nothing when it was taken.
using Broken = std::optional<std::string>;

Broken read(const Count& count, PlanOptions& o, const FieldValue& value) {
  const double* number = std::get_if<double>(&value);
  if (!number || !std::isfinite(*number) || *number != std::floor(*number) || *number < 1)
    return "must be a positive integer, got " + describe(value);
  if (*number > count.max) return "must be at most " + number_text(count.max) + ", got " + describe(value);
  o.*count.member = int64_t(*number);
  return std::nullopt;
}

Broken read(const Bytes& bytes, PlanOptions& o, const FieldValue& value) {
  std::optional<double> size;
  if (const double* number = std::get_if<double>(&value); number && std::isfinite(*number) && *number >= 0)
    size = *number;
  else if (const std::string* text = std::get_if<std::string>(&value))
    size = parse_byte_size(*text);
  if (!size) return "must be a size such as 80GiB, 80GB or 85899345920 (bytes), got " + describe(value);
  if (*size <= 0) return "must be more than 0 bytes, got " + describe(value);
  o.*bytes.member = *size;
  return std::nullopt;
}

Broken read(const Share& share, PlanOptions& o, const FieldValue& value) {
  const double* number = std::get_if<double>(&value);
  if (!number || !(*number >= 0 && *number < 1))
    return "must be at least 0 and less than 1 (a share of the GPU), got " + describe(value);
  o.*share.member = *number;
  return std::nullopt;
}

Broken read(const Flag& flag, PlanOptions& o, const FieldValue& value) {
  const bool* given = std::get_if<bool>(&value);
  if (!given) return "must be true or false, got " + describe(value);
  o.*flag.member = *given;
  return std::nullopt;
}

template <class E>
Broken read(const Choice<E>& choice, PlanOptions& o, const FieldValue& value) {
  const std::string* text = std::get_if<std::string>(&value);
  const std::optional<E> chosen = text ? from_name<E>(*text) : std::nullopt;
  if (!chosen) return "must be " + choices_text<E>() + ", got " + describe(value);
  o.*choice.member = *chosen;
  return std::nullopt;
}

// `text` without the spaces around it.
std::string_view trimmed(std::string_view text) {
  const size_t begin = text.find_first_not_of(' ');
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(' ') - begin + 1);
}

// "tp, pp,,cp" → {"tp", "pp", "cp"}: the command line's form of a list.
std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = trimmed(text.substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

Broken read(const Knobs& knobs, PlanOptions& o, const FieldValue& value) {
  std::vector<std::string> names;
  if (const auto* text = std::get_if<std::string>(&value)) names = split_list(*text);
  else if (const auto* list = std::get_if<std::vector<std::string>>(&value)) names = *list;
  else if (const auto* numbers = std::get_if<std::vector<double>>(&value); numbers && numbers->empty()) names = {};
  else return "must be a list of knobs (" + choices_text<PlanKnob>() + "), got " + describe(value);
  uint32_t bits = 0;
  for (const std::string& name : names) {
    const std::optional<PlanKnob> knob = from_name<PlanKnob>(name);
    if (!knob) return "unknown knob " + quoted(name) + "; knobs are " + choices_text<PlanKnob>();
    bits |= 1u << unsigned(*knob);
  }
  o.*knobs.member = bits;
  return std::nullopt;
}

Broken read(const Held& held, PlanOptions& o, const FieldValue& value) {
  std::vector<std::string> names;
  if (const auto* text = std::get_if<std::string>(&value)) names = split_list(*text);
  else if (const auto* list = std::get_if<std::vector<std::string>>(&value)) names = *list;
  else if (const auto* numbers = std::get_if<std::vector<double>>(&value); numbers && numbers->empty()) names = {};
  else return "must be a list of config fields (e.g. tensor_model_parallel_size,data_parallel_size), got " + describe(value);
  for (const std::string& name : names) {
    if (find_field(name)) continue;
    std::vector<std::string_view> known;
    for (const FieldSpec& spec : field_specs()) known.push_back(spec.name);
    std::string rule = quoted(name) + " is not a config field";
    if (const auto best = nearest_name(name, known)) rule += "; did you mean " + quoted(*best) + "?";
    return rule;
  }
  o.*held.member = names;
  return std::nullopt;
}

// The value of a number option in `o`; nothing for the other kinds.
std::optional<double> number_in(const PlanOptions& o, const Target& target) {
  if (const auto* count = std::get_if<Count>(&target)) return double(o.*count->member);
  if (const auto* bytes = std::get_if<Bytes>(&target)) return o.*bytes->member;
  if (const auto* share = std::get_if<Share>(&target)) return o.*share->member;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_byte_size(std::string_view text) {
  std::string s(text);
  const char* begin = s.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string unit(trimmed(end));
  for (char& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::pair<std::string_view, double>, 10> units = {{
      {"", 1}, {"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}}};
  for (const auto& [name, scale] : units)
    if (unit == name) return value * scale;
  return std::nullopt;
}

std::optional<Issue> set_plan_option(PlanOptions& o, std::string_view name, const FieldValue& value) {
  const auto option = std::find_if(k_options.begin(), k_options.end(),
                                   [&](const Option& row) { return row.name == name; });
  if (option == k_options.end()) return unknown_name(name, "option", k_option_names);
  if (std::holds_alternative<std::monostate>(value)) {  // null: back to PlanOptions{}'s value
    std::visit([&](const auto& target) { o.*target.member = PlanOptions{}.*target.member; }, option->target);
    return std::nullopt;
  }
  const Broken broken = std::visit([&](const auto& target) { return read(target, o, value); }, option->target);
  if (broken) return issue(name, *broken);
  return std::nullopt;
}

std::optional<Issue> set_plan_option_text(PlanOptions& o, std::string_view name, std::string_view text) {
  if (name == "search" || name == "keep") return set_plan_option(o, name, split_list(text));
  if (text == "true") return set_plan_option(o, name, true);
  if (text == "false") return set_plan_option(o, name, false);
  const std::string s(text);
  char* end = nullptr;
  const double number = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && !std::isspace(static_cast<unsigned char>(s[0])))
    return set_plan_option(o, name, number);
  return set_plan_option(o, name, s);
}

namespace planning {

std::vector<Issue> number_option_issues(const PlanOptions& o) {
  const PlanOptions defaults;
  std::vector<Issue> out;
  for (const Option& option : k_options) {
    const std::optional<double> value = number_in(o, option.target);
    if (!value || *value == *number_in(defaults, option.target)) continue;
    PlanOptions scratch;
    if (auto problem = set_plan_option(scratch, option.name, *value)) out.push_back(*problem);
  }
  return out;
}

}  // namespace planning
}  // namespace trainmem
