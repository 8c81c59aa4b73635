// The framework importers' shared reading and noting (mapping.hpp).
#include "mapping.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "json/json_values.hpp"
#include "trainmem/json_io.hpp"

namespace trainmem::mapping {

const json* at(const json& tree, std::string_view dotted) {
  const json* node = &tree;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string part(dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!node->is_object()) return nullptr;
    auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string_view::npos) return node;
    start = dot + 1;
  }
}

std::string show(const json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > 80) {
      // Cut at a character boundary: half a UTF-8 sequence is not text (the module's JSON).
      size_t cut = 77;
      while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
      s = s.substr(0, cut) + "...";
    }
    return trainmem::quoted(s);
  }
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return number_text(v.get<double>());
  if (v.is_null()) return "null";
  if (v.is_array()) {
    std::string list;
    for (const json& item : v) {
      if (item.is_array() || item.is_object()) return "a list";
      list += (list.empty() ? "" : ", ") + show(item);
      if (list.size() > 120) return "a list";
    }
    return "[" + list + "]";
  }
  return "an object";
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view last_part(std::string_view text, char separator) {
  const size_t at = text.rfind(separator);
  return at == std::string_view::npos ? text : text.substr(at + 1);
}

std::optional<json> object_tree(std::string_view text, std::string_view what, std::vector<Issue>& issues) {
  json tree;
  try {
    tree = json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {
    issues.push_back(issue(what, "malformed JSON: " + json_error_text(e)));
    return std::nullopt;
  }
  if (!tree.is_object()) {
    issues.push_back(issue(what, "must be a mapping of keys to values, got " +
                                     std::string(tree.is_array() ? "a list" : "a single value")));
    return std::nullopt;
  }
  return tree;
}

std::optional<int64_t> whole_number(const json& v, int64_t min) {
  if (!v.is_number() || v.is_boolean()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < double(min) || d > 9.0e15) return std::nullopt;
  if (min == k_fill && d == 0) return std::nullopt;
  return int64_t(d);
}

std::string integer_kind(int64_t min) {
  return min > 0 ? "a positive integer" : min == 0 ? "a non-negative integer" : "-1 or a positive integer";
}

namespace {

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_octal(char c) { return c >= '0' && c <= '7'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, YAML 1.2's core float.
bool core_float(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t fraction = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++fraction;
    if (digits == 0 && fraction == 0) return false;
  } else if (digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!all_of(s.substr(std::min(i, s.size())), is_digit)) return false;
    return true;
  }
  return i == s.size();
}

// YAML 1.2 core schema (yaml.org/spec/1.2.2 §10.3.2), which the npm yaml package applies by
// default: the value a plain scalar resolves to. Written as character tests, not std::regex
// (libstdc++'s regex recurses per character: a long scalar would exhaust the stack).
}  // namespace

json plain_scalar(std::string_view s) {
  const std::string text(s);
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const std::string_view unsigned_part = (s[0] == '-' || s[0] == '+') ? s.substr(1) : s;
  if (all_of(unsigned_part, is_digit)) {
    // Beyond int64 the value is kept as a double, as JavaScript keeps it as a number.
    errno = 0;
    const long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == 0) return int64_t(v);
    return std::strtod(text.c_str(), nullptr);
  }
  if (s.size() > 2 && s.substr(0, 2) == "0o" && all_of(s.substr(2), is_octal))
    return double(std::strtoull(text.c_str() + 2, nullptr, 8));
  if (s.size() > 2 && s.substr(0, 2) == "0x" && all_of(s.substr(2), is_hex))
    return double(std::strtoull(text.c_str() + 2, nullptr, 16));
  if (core_float(s)) {
    const double v = std::strtod(text.c_str(), nullptr);
    if (std::isfinite(v)) return v;
    return v > 0 ? "inf" : "-inf";
  }
  for (std::string_view inf : {".inf", ".Inf", ".INF"}) {
    if (unsigned_part == inf) return s[0] == '-' ? "-inf" : "inf";
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return "nan";
  return text;
}

namespace {

// core/data/presets.json, each preset's config without its seq_length (a training setting).
const json& presets() {
  static const json data = [] {
    json parsed = json::parse(presets_json());
    for (json& p : parsed["presets"]) p["config"].erase("seq_length");
    return parsed;
  }();
  return data;
}

const json* preset(std::string_view id) {
  for (const json& p : presets()["presets"])
    if (p.value("id", "") == id) return &p;
  return nullptr;
}

}  // namespace

const json* preset_model(std::string_view id) {
  const json* p = preset(id);
  return p ? &(*p)["config"] : nullptr;
}

std::string preset_hf_repo(std::string_view id) {
  const json* p = preset(id);
  if (!p) return "";
  const std::string source = p->value("source", "");
  const std::string prefix = "https://huggingface.co/";
  if (source.rfind(prefix, 0) != 0) return "";
  const size_t blob = source.find("/blob/");
  if (blob == std::string::npos) return "";
  return source.substr(prefix.size(), blob - prefix.size());
}

std::vector<std::string> preset_ids() {
  std::vector<std::string> ids;
  for (const json& p : presets()["presets"]) ids.push_back(p["id"].get<std::string>());
  return ids;
}

std::string value_text(const FieldValue& value) {
  if (std::holds_alternative<std::string>(value)) return trainmem::quoted(std::get<std::string>(value));
  if (std::holds_alternative<bool>(value)) return std::get<bool>(value) ? "true" : "false";
  if (std::holds_alternative<double>(value)) return number_text(std::get<double>(value));
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    std::string text;
    for (const std::string& s : *list) text += (text.empty() ? "" : ", ") + trainmem::quoted(s);
    return "[" + text + "]";
  }
  if (const auto* list = std::get_if<std::vector<double>>(&value)) {
    std::string text;
    for (double d : *list) text += (text.empty() ? "" : ", ") + number_text(d);
    return "[" + text + "]";
  }
  return "null";
}

std::optional<size_t> version_index(std::string_view version, const std::vector<std::string_view>& known) {
  for (size_t i = 0; i < known.size(); ++i) {
    // "0.6" also matches "0.6.1": a patch release behaves as its minor release.
    if (version == known[i]) return i;
    if (version.size() > known[i].size() && version.substr(0, known[i].size()) == known[i] &&
        version[known[i].size()] == '.')
      return i;
  }
  return std::nullopt;
}

std::optional<size_t> chosen_version(Mapper& m, std::string_view version, const std::vector<std::string_view>& known,
                                     std::string_view framework, std::string_view noun) {
  const std::optional<size_t> v = version_index(version, known);
  if (!v) {
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    m.fail("--version", trainmem::quoted(std::string(version)) + " is not a " + std::string(framework) + " " +
                            std::string(noun) + " this importer knows (" + list + ")");
    return std::nullopt;
  }
  m.out().assumed.push_back("version ← " + std::string(framework) + " " + std::string(known[*v]) + " (--version)");
  return v;
}

KindCheck requires_key(std::string_view key, std::string_view what) {
  return [key = std::string(key), what = std::string(what)](const json& tree) -> std::optional<Issue> {
    if (at(tree, key)) return std::nullopt;
    return issue(key, "missing: this is not " + what + " (" + kind_hint(tree) + ")");
  };
}

ImportResult import_tree(std::string_view tree_json, std::string_view document, const KindCheck& kind,
                         const std::function<void(json& tree, ImportResult& out)>& read) {
  ImportResult out;
  std::optional<json> tree = object_tree(tree_json, document, out.issues);
  if (!tree) return out;
  if (std::optional<Issue> problem = kind(*tree)) {
    out.issues.push_back(std::move(*problem));
    return out;
  }
  read(*tree, out);
  out.whole_layout = true;  // a framework's file launches the whole run
  if (!out.ok()) out.input = ConfigInput{};
  return out;
}

const json* Mapper::get(std::string_view key) {
  used_.insert(std::string(key));
  asked_.insert(std::string(key));
  const json* v = at(tree_, key);
  return v && !v->is_null() ? v : nullptr;
}

bool Mapper::has(std::string_view key) {
  asked_.insert(std::string(key));
  const json* v = at(tree_, key);
  if (v && v->is_null()) used_.insert(std::string(key));
  return v && !v->is_null();
}

std::optional<int64_t> Mapper::integer(std::string_view key, int64_t min) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  const std::optional<int64_t> n = whole_number(*v, min);
  if (!n) fail(key, "must be " + integer_kind(min) + ", got " + show(*v));
  return n;
}

std::optional<double> Mapper::number(std::string_view key, double min, double max) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number() || v->is_boolean() || v->get<double>() < min || v->get<double>() > max) {
    fail(key, "must be a number from " + number_text(min) + " to " + number_text(max) + ", got " + show(*v));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<bool> Mapper::boolean(std::string_view key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    fail(key, "must be true or false, got " + show(*v));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> Mapper::string(std::string_view key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    fail(key, "must be a string, got " + show(*v));
    return std::nullopt;
  }
  return v->get<std::string>();
}

namespace {
// "formula = a × b × c", as the notes and messages of a product show it.
std::string derivation(std::string_view formula, std::initializer_list<int64_t> factors) {
  std::string shown;
  for (int64_t f : factors) shown += (shown.empty() ? "" : " × ") + number_text(double(f));
  return std::string(formula) + " = " + shown;
}
}  // namespace

std::optional<int64_t> Mapper::product(std::string_view key, std::string_view formula,
                                       std::initializer_list<int64_t> factors) {
  std::optional<int64_t> out = 1;
  for (int64_t f : factors)
    if (out) out = checked_mul(*out, f);
  if (!out) fail(key, derivation(formula, factors) + " overflows a 64-bit integer");
  return out;
}

std::optional<int64_t> Mapper::put_product(FieldName field, std::string_view key, std::string_view formula,
                                           std::initializer_list<int64_t> factors) {
  const std::optional<int64_t> value = product(key, formula, factors);
  if (!value) return std::nullopt;
  const std::string derivation = mapping::derivation(formula, factors);
  if (!put(field, double(*value), key, std::string(field) + " = " + derivation + ": ")) return std::nullopt;
  out_.read.push_back(std::string(field) + " ← " + derivation + " = " + number_text(double(*value)));
  return value;
}

bool Mapper::put(FieldName field, const FieldValue& value, std::string_view key) {
  return put(field, value, key, "");
}

bool Mapper::put(FieldName field, const FieldValue& value, std::string_view key, std::string_view context) {
  const FieldSpec* spec = find_field(field);
  if (!spec) {
    out_.ignored.push_back(std::string(key) + " → " + std::string(field) + " " + value_text(value) + ": " +
                           std::string(k_no_field));
    return false;
  }
  // A value the field's choices do not have yet (params_dtype "nf4" before it lands).
  const auto missing_choice = [&](const std::string& name) {
    return !spec->choices.empty() &&
           std::find(spec->choices.begin(), spec->choices.end(), name) == spec->choices.end();
  };
  bool unknown_choice = false;
  if (const auto* s = std::get_if<std::string>(&value)) unknown_choice = missing_choice(*s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&value))
    for (const std::string& s : *list) unknown_choice = unknown_choice || missing_choice(s);
  if (unknown_choice) {
    out_.ignored.push_back(std::string(key) + " → " + std::string(field) + " " + value_text(value) + ": " +
                           std::string(k_no_field) + " (no such value)");
    return false;
  }
  if (auto problem = set_field(out_.input, field, value)) {
    fail(key, std::string(context) + std::string(rule_of(*problem)));
    return false;
  }
  return true;
}

bool Mapper::read(FieldName field, const FieldValue& value, std::string_view key,
                  const std::string& shown_value) {
  if (!put(field, value, key)) return false;
  out_.read.push_back(std::string(field) + " ← " + std::string(key) + " = " + shown_value);
  note_key(out_, field, key);
  return true;
}

bool Mapper::read(FieldName field, const FieldValue& value, std::string_view key) {
  return read(field, value, key, value_text(value));
}

bool Mapper::assume(FieldName field, const FieldValue& value, const std::string& why,
                    std::string_view key) {
  if (!put(field, value, key.empty() ? field : key)) return false;
  out_.assumed.push_back(std::string(field) + " ← " + value_text(value) + " (" + why + ")");
  return true;
}

void Mapper::full_recompute_per_layer(std::string_view key, const std::string& shown, std::string_view layer) {
  const std::string why = "one checkpoint per " + std::string(layer);
  read(field::recompute_granularity, std::string("full"), key, shown + " (every " + std::string(layer) + ")");
  assume(field::recompute_method, std::string("uniform"), why, key);
  assume(field::recompute_num_layers, 1.0, why, key);
}

void Mapper::ignore(std::string_view key, const std::string& why) {
  used_.insert(std::string(key));
  out_.ignored.push_back(std::string(key) + ": " + why);
}

void Mapper::ignore_value(std::string_view key, const std::string& why) {
  used_.insert(std::string(key));
  const json* v = at(tree_, key);
  out_.ignored.push_back(std::string(key) + (v && !v->is_object() ? " = " + show(*v) : "") + ": " + why);
}

bool Mapper::model_from_preset(std::string_view id, std::string_view key, const std::string& how) {
  const json* config = preset_model(id);
  if (!config) {
    fail(key, "names preset " + trainmem::quoted(std::string(id)) + ", which trainmem does not have");
    return false;
  }
  std::string shape;
  for (const auto& [name, value] : config->items()) {
    // Every value, the lists (moe_layer_freq) and nulls (q_lora_rank: none) included.
    const std::optional<FieldValue> v = detail::field_value_of_json(detail::ordered_json(value));
    if (!v) fail(key, "preset " + std::string(id) + ": " + name + " has a value no field takes");
    if (!v || !put(FieldName{name}, *v, key)) return false;  // a preset's keys are the field table's (data.test)
    if (name == "num_layers" || name == "hidden_size" || name == "num_attention_heads" ||
        name == "num_query_groups" || name == "ffn_hidden_size" || name == "vocab_size" ||
        name == "num_moe_experts")
      shape += (shape.empty() ? "" : ", ") + name + " " + value_text(*v);
  }
  out_.whole_model = true;
  out_.read.push_back("model ← " + how + ": preset " + std::string(id) + " (" + shape + ")");
  return true;
}

bool Mapper::model_from_hf(std::string_view config_json, std::string_view option) {
  ImportResult hf = import_hf_config(config_json);
  if (!hf.ok()) {
    for (const Issue& problem : hf.issues) out_.issues.push_back(issue(option, problem.message));
    return false;
  }
  for (size_t i = 0; i < field_specs().size(); ++i) {
    const FieldValue v = get_field_at(hf.input, i);
    if (!std::holds_alternative<std::monostate>(v)) (void)set_field_at(out_.input, i, v);
  }
  const std::string prefix = std::string(option) + ": ";
  for (const std::string& note : hf.read) out_.read.push_back(prefix + note);
  for (const std::string& note : hf.assumed) out_.assumed.push_back(prefix + note);
  for (const std::string& note : hf.ignored) out_.ignored.push_back(prefix + note);
  out_.whole_model = true;
  return true;
}

namespace {

// A Hub repository's name as comparable: "meta-llama/Meta-Llama-3-8B-Instruct" and
// "NousResearch/Meta-Llama-3-8B" both read "llama-3.1-8b" (Llama 3 has the Llama 3.1 shape).
std::string normalized_model(std::string_view repo) {
  std::string name = lowercase(last_part(repo, '/'));
  if (name.rfind("meta-", 0) == 0) name.erase(0, 5);
  for (std::string_view suffix : {"-instruct", "-hf", "-fp16", "-bf16", "-chat", "-base", "-it", "-pt"})
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      name.erase(name.size() - suffix.size());
  if (name.rfind("llama-3-", 0) == 0) name = "llama-3.1-" + name.substr(8);
  if (name.rfind("llama-3.3-", 0) == 0) name = "llama-3.1-" + name.substr(10);
  return name;
}

}  // namespace

bool Mapper::model_from_hub_name(const std::string& name, std::string_view key) {
  const std::string wanted = normalized_model(name);
  for (const std::string& id : preset_ids()) {
    const std::string repo = preset_hf_repo(id);
    if (repo.empty()) continue;
    const bool same = lowercase(repo) == lowercase(name);
    if (same || normalized_model(repo) == wanted)
      return model_from_preset(id, key, std::string(key) + " = " + trainmem::quoted(name) +
                                            (same ? "" : " (matched by name to " + repo + ")"));
  }
  fail(key, trainmem::quoted(name) + " is not the Hugging Face repository of a trainmem preset; give its config.json with --model");
  out_.issues.back().rule = std::string(k_model_not_a_preset);
  out_.model_asked = name;
  return false;
}

bool Mapper::accounted(const std::string& key) const {
  if (used_.count(key)) return true;
  // A key under one that was read whole ("model" read as a component covers "model.x").
  for (size_t dot = key.rfind('.'); dot != std::string::npos; dot = key.rfind('.', dot - 1)) {
    if (used_.count(key.substr(0, dot))) return true;
    if (dot == 0) break;
  }
  return false;
}

std::map<std::string, std::string> Mapper::misplaced_keys() const {
  // YAML and TOML accept a key at any nesting, and the frameworks read each at one place: a
  // mis-indented axolotl `sequence_len` (under `datasets`) or a torchtune `max_seq_len` at the top
  // level (read under `tokenizer`) is no error there, and the run silently takes the default.
  // So a key the importer looked for and did not find, present elsewhere under the same name, is
  // named with the place it is read from.
  std::map<std::string, std::string> wanted;  // last name → the place a rule read it from
  for (const std::string& key : asked_) {
    if (at(tree_, key)) continue;
    const size_t dot = key.rfind('.');
    wanted.emplace(dot == std::string::npos ? key : key.substr(dot + 1), key);
  }
  std::map<std::string, std::string> found;
  if (wanted.empty()) return found;
  // Depth-first over objects and arrays; bounded by the tree, which the reader already holds.
  const std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& path) {
    if (node.is_object()) {
      for (const auto& [name, value] : node.items()) {
        const std::string here = path.empty() ? name : path + "." + name;
        if (auto it = wanted.find(name); it != wanted.end() && here != it->second) found.emplace(here, it->second);
        walk(value, here);
      }
    } else if (node.is_array()) {
      for (size_t i = 0; i < node.size(); ++i) walk(node[i], path + "[" + std::to_string(i) + "]");
    }
  };
  walk(tree_, "");
  return found;
}

void Mapper::account(const std::vector<std::string_view>& no_memory,
                     const std::vector<std::string_view>& sections) {
  std::vector<std::string> quiet, unknown;
  const std::map<std::string, std::string> misplaced = misplaced_keys();
  for (const auto& [path, read_at] : misplaced)
    out_.ignored.push_back(path + ": at the wrong nesting, not read; the framework reads it as " + read_at +
                           ", which the file does not set");
  const auto visit = [&](const std::string& key) {
    if (accounted(key) || misplaced.count(key)) return;
    const bool listed = std::find(no_memory.begin(), no_memory.end(), key) != no_memory.end();
    (listed ? quiet : unknown).push_back(key);
  };
  for (const auto& [key, value] : tree_.items()) {
    const bool section = std::find(sections.begin(), sections.end(), key) != sections.end();
    if (section && value.is_object() && !accounted(key)) {
      for (const auto& [inner, _] : value.items()) visit(key + "." + inner);
    } else {
      visit(key);
    }
  }
  const auto join = [](const std::vector<std::string>& keys) {
    std::string text;
    for (const std::string& k : keys) text += (text.empty() ? "" : ", ") + k;
    return text;
  };
  if (!quiet.empty()) out_.ignored.push_back(join(quiet) + ": do not change memory");
  for (const std::string& key : unknown) out_.ignored.push_back(key + ": not a key trainmem reads");
}

namespace {

// The launchers' flags that take no value (accelerate commands/launch.py, torch
// distributed/run.py, deepspeed launcher/runner.py); any other takes the next word unless that
// is a flag or the script.
const std::vector<std::string_view> k_launcher_switches = {
    "use_deepspeed", "use_fsdp", "multi_gpu", "cpu", "same_network", "debug", "module", "m", "no_python",
    "quiet", "q", "tpu", "use_megatron_lm", "use_xpu", "enable_cpu_affinity", "standalone", "run_path",
    "no_local_rank", "force_multi", "bind_cores_to_rank", "no_ssh_check", "save_pid",
};

std::string unquoted(std::string word) {
  if (word.size() >= 2 && (word.front() == '"' || word.front() == '\'') && word.back() == word.front())
    return word.substr(1, word.size() - 2);
  return word;
}

bool is_script(const std::string& word) {
  return word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0;
}

}  // namespace

json argument_value(const std::string& text) {
  const std::string lower = lowercase(text);
  if (lower == "true" || lower == "yes" || lower == "y" || lower == "t") return true;
  if (lower == "false" || lower == "no" || lower == "n" || lower == "f") return false;
  const json scalar = plain_scalar(text);
  if (scalar.is_number()) return scalar;
  return text;
}

std::optional<LaunchCommand> read_launch_command(const ImportOptions& options, std::vector<Issue>& issues) {
  std::vector<std::string> words;
  if (!options.launch.empty()) {
    std::string text = options.launch;
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      if (text[i] != '\\' || (text[i + 1] != ' ' && text[i + 1] != '\t')) continue;
      const size_t next = text.find_first_not_of(" \t", i + 1);
      if (next != std::string::npos && text[next] == '-') text[i] = ' ';
    }
    ShellWords split = shell_words(text);
    if (!split.error.empty()) {
      issues.push_back(issue("launch command", split.error));
      return std::nullopt;
    }
    words = std::move(split.words);
  }
  for (std::string w : options.overrides) {
    if (w == "\\") continue;
    if (w.size() > 2 && w[0] == '\\' && w[1] == '-') w.erase(0, 1);
    words.push_back(unquoted(w));
  }
  LaunchCommand out;
  size_t i = 0;
  // CUDA_VISIBLE_DEVICES=0,1 accelerate launch …: the environment the shell sets for the command.
  const auto assignment = [](const std::string& w) {
    const size_t eq = w.find('=');
    return eq != std::string::npos && eq > 0 && !std::isdigit(static_cast<unsigned char>(w[0])) &&
           std::all_of(w.begin(), w.begin() + std::ptrdiff_t(eq),
                       [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); });
  };
  while (!words.empty() && assignment(words.front())) words.erase(words.begin());
  const auto take_flags = [&](size_t from) {
    for (i = from; i < words.size() && words[i].rfind("-", 0) == 0 && words[i] != "--"; ++i) {
      std::string name = words[i].substr(words[i].rfind("--", 0) == 0 ? 2 : 1), value;
      const size_t eq = name.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
      std::replace(name.begin(), name.end(), '-', '_');
      const bool is_switch = std::find(k_launcher_switches.begin(), k_launcher_switches.end(), name) != k_launcher_switches.end();
      if (!inline_value && !is_switch) {
        if (i + 1 >= words.size()) {
          issues.push_back(issue(out.launcher + " --" + name, "needs a value"));
          return false;
        }
        if (words[i + 1].rfind("-", 0) != 0 && !is_script(words[i + 1])) value = words[++i];
      }
      out.flags.emplace_back(name, value);
    }
    if (i < words.size() && words[i] == "--") ++i;
    return true;
  };
  if (words.size() >= 2 && words[0] == "accelerate" && words[1] == "launch") {
    out.launcher = "accelerate launch";
    if (!take_flags(2)) return std::nullopt;
    if (i < words.size()) ++i;  // the script
  } else if (!words.empty() && (words[0] == "torchrun" || words[0] == "deepspeed")) {
    out.launcher = words[0];
    if (!take_flags(1)) return std::nullopt;
    if (i < words.size()) ++i;
  } else if (words.size() >= 2 && words[0] == "trl" && words[1] == "sft") {
    out.launcher = "trl sft";
    i = 2;
  } else if (!words.empty() && words[0].rfind("-", 0) != 0) {
    // python [-m] SCRIPT, or the script alone.
    if (words[0] == "python" || words[0] == "python3") {
      out.launcher = "python";
      i = 1;
    }
    if (i < words.size() && words[i] == "-m") ++i;
    if (i < words.size()) ++i;
  }
  // The script's flags as HfArgumentParser reads them: --name value, --name=value, a bare --name
  // (a bool field's true), several values for a list field (nargs="+": TRL's lora_target_modules,
  // lora_modules_to_save); a reader that wants one value names a list.
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2) {
      issues.push_back(issue("launch command", trainmem::quoted(word) + " is not a flag of the script (--name value)"));
      return std::nullopt;
    }
    std::string name = word.substr(2);
    std::vector<std::string> values;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      values.push_back(name.substr(eq + 1));
      name.resize(eq);
    }
    std::replace(name.begin(), name.end(), '-', '_');
    while (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) values.push_back(words[++i]);
    if (values.empty()) out.script_args[name] = true;
    else if (values.size() == 1) out.script_args[name] = argument_value(values[0]);
    else out.script_args[name] = values;
  }
  return out;
}

std::optional<json> trainer_arguments(const ImportOptions& options, const json& script_args, std::vector<Issue>& issues) {
  json args = json::object();
  if (!options.hf_args_json.empty()) {
    std::optional<json> parsed = object_tree(options.hf_args_json, "--hf-args", issues);
    if (!parsed) return std::nullopt;
    args = std::move(*parsed);
  }
  for (const auto& [name, value] : script_args.items()) args[name] = value;
  return args;
}

std::optional<int64_t> launcher_world(const LaunchCommand& command, std::vector<Issue>& issues) {
  const auto count = [&](std::string_view wanted) -> std::optional<int64_t> {
    for (const auto& [name, value] : command.flags) {
      if (name != wanted) continue;
      const std::optional<int64_t> n = whole_number(plain_scalar(value), 1);
      if (!n)
        issues.push_back(issue(command.launcher + " --" + name, "must be a count of processes, got " + trainmem::quoted(value) +
                                                                   " (for torchrun's gpu, auto or an elastic range, give the world with --gpus)"));
      return n;
    }
    return std::nullopt;
  };
  const bool torchrun = command.launcher == "torchrun";
  const std::optional<int64_t> per_node = count(torchrun ? "nproc_per_node" : "num_gpus");
  const std::optional<int64_t> nodes = count(torchrun ? "nnodes" : "num_nodes");
  if (!per_node) return std::nullopt;
  const std::optional<int64_t> world = checked_mul(*per_node, nodes.value_or(1));
  if (!world) issues.push_back(issue(command.launcher, "the processes overflow a 64-bit integer"));
  return world;
}

bool add_lora_targets(std::vector<std::string>& targets, std::string_view name) {
  static const std::vector<std::string_view> modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"};
  std::vector<std::string_view> parts;
  if (name == "all-linear") parts.assign(modules.begin(), modules.end() - 1);
  else if (name == "qkv_proj") parts = {"q_proj", "k_proj", "v_proj"};
  else if (name == "gate_up_proj") parts = {"gate_proj", "up_proj"};
  // Mixtral's experts (transformers MixtralBlockSparseTop2MLP: w2(act(w1(x)) * w3(x))) and the
  // dense MLPs written the same way name gate w1, down w2 and up w3.
  else if (name == "w1") parts = {"gate_proj"};
  else if (name == "w2") parts = {"down_proj"};
  else if (name == "w3") parts = {"up_proj"};
  else if (std::find(modules.begin(), modules.end(), name) != modules.end()) parts = {name};
  else return false;
  for (std::string_view part : parts)
    if (std::find(targets.begin(), targets.end(), part) == targets.end()) targets.emplace_back(part);
  return true;
}

bool add_saved_module(std::vector<std::string>& saved, std::string_view name) {
  const auto ends_with = [&](std::string_view module) {
    return name == module || (name.size() > module.size() && name.ends_with(module) &&
                              name[name.size() - module.size() - 1] == '.');
  };
  for (std::string_view module : {std::string_view("embed_tokens"), std::string_view("lm_head")}) {
    if (!ends_with(module)) continue;
    if (std::find(saved.begin(), saved.end(), module) == saved.end()) saved.emplace_back(module);
    return true;
  }
  return false;
}

void read_modules_to_save(Mapper& m, ImportResult& out, const json& value, std::string_view key) {
  const json items = value.is_string() ? json::array({value}) : value;
  if (!items.is_array()) return m.fail(key, "must be a list of module names, got " + show(value));
  std::vector<std::string> saved;
  for (const json& item : items) {
    if (!item.is_string()) return m.fail(key, "must be a list of module names, got " + show(item) + " in it");
    if (!add_saved_module(saved, item.get<std::string>()))
      out.ignored.push_back(std::string(key) + ": " + show(item) + ": a trained copy of a module trainmem does not "
                            "model (it has embed_tokens and lm_head)");
  }
  if (saved.empty()) return;
  if (m.put(field::lora_modules_to_save, saved, key)) {
    // The modules as trainmem names them, where they differ from what the source wrote.
    const std::string as_read = show(json(saved)) == show(value) ? std::string() : ": " + value_text(saved);
    out.read.push_back("lora_modules_to_save ← " + std::string(key) + " = " + show(value) + as_read);
  }
}

std::optional<int64_t> read_accumulation(Mapper& m, std::string_view default_why, bool write) {
  const std::optional<int64_t> steps = m.integer("gradient_accumulation_steps");
  if (!write) return steps;
  if (steps) m.read(field::num_microbatches, double(*steps), "gradient_accumulation_steps");
  else if (!m.has("gradient_accumulation_steps"))
    m.assume(field::num_microbatches, 1.0, std::string(default_why), "gradient_accumulation_steps");
  return steps;
}

bool hf_attention(Mapper& m, const json& value, std::string_view key, std::initializer_list<std::string_view> also_fused) {
  const std::string name = value.is_string() ? value.get<std::string>() : "";
  if (name == "eager") return m.read(field::attention_backend, std::string("unfused"), key, show(value));
  const bool fused = name == "sdpa" || name == "flex_attention" || name.rfind("flash", 0) == 0 ||
                     name.find("flash_attn") != std::string::npos || name.find('/') != std::string::npos ||
                     std::find(also_fused.begin(), also_fused.end(), name) != also_fused.end();
  if (fused) return m.read(field::attention_backend, std::string("flash"), key, show(value));
  std::string known = "eager, sdpa, flash_attention_2, flash_attention_3, flex_attention";
  for (std::string_view extra : also_fused) known += ", " + std::string(extra);
  m.fail(key, "must be " + known + " or a Hub kernel path, got " + show(value));
  return false;
}

bool hf_optimizer(Mapper& m, const std::string& name, std::string_view key) {
  // transformers/training_args.py OptimizerNames and trainer.py get_optimizer_cls_and_kwargs:
  // adamw_torch (foreach), adamw_torch_fused, adamw_hf (transformers' own per-parameter AdamW),
  // bitsandbytes' adamw_bnb_8bit / adamw_8bit / paged_adamw_8bit / paged_adamw_32bit, lion, sgd,
  // adafactor.
  struct Row {
    std::string_view name, optimizer;
    bool paged;
    std::string_view implementation;  // torch.optim only
  };
  static const std::vector<Row> rows = {
      {"adamw_torch", "adamw", false, "foreach"}, {"adamw_torch_fused", "adamw", false, "fused"},
      {"adamw_hf", "adamw", false, "for-loop"},   {"adamw_apex_fused", "adamw", false, ""},
      {"adamw_bnb_8bit", "adam8bit", false, ""},  {"adamw_8bit", "adam8bit", false, ""},
      {"paged_adamw_8bit", "adam8bit", true, ""}, {"paged_adamw_32bit", "adamw", true, ""},
      {"paged_adamw", "adamw", true, ""},         {"lion_32bit", "lion", false, ""},
      {"paged_lion_32bit", "lion", true, ""},     {"sgd", "sgd", false, "foreach"},
      {"adafactor", "adafactor", false, ""},
  };
  for (const Row& r : rows) {
    if (r.name != name) continue;
    m.read(field::optimizer, std::string(r.optimizer), key, trainmem::quoted(name));
    if (r.paged) m.read(field::paged_optimizer, true, key, trainmem::quoted(name));
    if (!r.implementation.empty() && m.out().input.framework &&
        (*m.out().input.framework == Framework::ddp || *m.out().input.framework == Framework::fsdp2))
      m.assume(field::optimizer_implementation, std::string(r.implementation), trainmem::quoted(name) + " steps with torch.optim", key);
    return true;
  }
  unknown_optimizer(m, key);
  return false;
}

void unknown_optimizer(Mapper& m, std::string_view key) {
  m.ignore_value(key, "an optimizer trainmem has no states for: " + std::string(k_no_field) + " (the base's optimizer is kept)");
}

std::string_view detect_kind(const json& tree) {
  if (!tree.is_object()) return "";
  if (at(tree, "model._component_")) return "torchtune";
  if (tree.contains("MODEL_ARGS")) return "megatron-args";  // Megatron-LM's functional-test config
  if (tree.contains("base_model")) return "axolotl";
  if (tree.contains("distributed_type")) return "accelerate";  // what `accelerate config` writes
  if (at(tree, "model.name") && (tree.contains("training") || tree.contains("job") || tree.contains("parallelism")))
    return "torchtitan";
  for (const char* k : {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "bf16", "fp16",
                        "zero_allow_untested_optimizer", "gradient_clipping"})
    if (tree.contains(k)) return "deepspeed";
  if (tree.contains("model_type")) return "hf";
  return "";
}

std::string kind_hint(const json& tree) {
  const std::string_view kind = detect_kind(tree);
  if (kind.empty()) return "it has none of the keys that name a framework's config";
  if (kind == "hf") return "it looks like a Hugging Face config.json: use import hf";
  return std::string(kind == "axolotl" || kind == "accelerate" ? "it looks like an " : "it looks like a ") + std::string(kind) +
         " config: use import " + std::string(kind);
}


// ---- Shell words ---------------------------------------------------------------------------
//
// Enough of POSIX sh word splitting for pasted launch commands: blanks separate words;
// backslash-newline joins lines; '...' is literal; "..." allows \" \\ \$ \` escapes; a backslash
// outside quotes escapes the next character; a word starting with # comments out the rest of
// the line. Nothing is expanded ($VAR stays as written).
ShellWords shell_words(std::string_view s) {
  ShellWords out;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      if (s[i + 1] == '\n') {
        ++i;
        continue;
      }
      if (s[i + 1] == '\r' && i + 2 < s.size() && s[i + 2] == '\n') {
        i += 2;
        continue;
      }
      word += s[++i];
      in_word = true;
    } else if (c == '\'') {
      const size_t end = s.find('\'', i + 1);
      if (end == std::string_view::npos) return out.error = "unterminated ' quote", out;
      word += s.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            std::string_view("\"\\$`\n").find(s[j + 1]) != std::string_view::npos) {
          if (s[j + 1] != '\n') word += s[j + 1];
          ++j;
        } else {
          word += s[j];
        }
      }
      if (j >= s.size()) return out.error = "unterminated \" quote", out;
      in_word = true;
      i = j;
    } else if (c == '#' && !in_word) {
      while (i + 1 < s.size() && s[i + 1] != '\n') ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) out.words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.words.push_back(word);
  return out;
}

// A signed decimal integer as Python's int() reads one (surrounding blanks are already gone).
std::optional<int64_t> parse_int(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size() || s.size() - i > 15) return std::nullopt;
  int64_t v = 0;
  for (size_t j = i; j < s.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return std::nullopt;
    v = v * 10 + (s[j] - '0');
  }
  return s[0] == '-' ? -v : v;
}

void ask_gpu_count(ImportResult& out, std::string_view what, std::string_view unsaid) {
  out.asked.push_back(issue("world_size", std::string(what) + " shards over every GPU the launcher starts, and " +
                                              std::string(unsaid) + " how many: give the GPU count (--gpus)"));
}

}  // namespace trainmem::mapping
