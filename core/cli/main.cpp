// trainmem: the command-line shell around the estimator core. It reads files and prints; every
// number comes from core/.
#include <cstdio>
#include <fstream>
#include <algorithm>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainmem/documents.hpp"
#include "trainmem/export.hpp"
#include "trainmem/import.hpp"
#include "trainmem/json_io.hpp"
#include "trainmem/planner.hpp"
#include "trainmem/report.hpp"

namespace {

constexpr const char* k_usage =
    "usage: trainmem estimate CONFIG.json|- [--format json|text] [--profile NAME] [--verbose]\n"
    "       trainmem plan CONFIG.json|- --gpus N --gpu-memory 80GiB [--headroom 0.1] [--keep FIELD,...] [--format json|text]\n"
    "            [--max-results K] [--solve max-micro-batch|max-seq-length|min-gpus] [--gpus-per-node N]\n"
    "            [--metric allocated|reserved|device] [--search tp,pp,...] [--uneven] [--max-evaluations N]\n"
    "            the layouts that fit, best first (or the largest micro batch, longest sequence, fewest GPUs)\n"
    "       trainmem fields [--format markdown]   the input fields (type, range, unit, default)\n"
    "       trainmem import hf CONFIG.json [--base TRAINING.json]   Hugging Face config.json -> config\n"
    "       trainmem import megatron-args [FILE|-] [--base TRAINING.json]   Megatron-LM arguments -> config\n"
    "       trainmem import megatron-args MODEL_CONFIG.yaml [--gpus N] [--base TRAINING.json]   Megatron-LM's test config\n"
    "       trainmem import ms-swift-megatron [RUN.sh|-] [--gpus N] [--version YYYY-MM-DD] [--model CONFIG.json | --preset ID]\n"
    "            [--base TRAINING.json]\n"
    "            a Megatron-SWIFT command (NPROC_PER_NODE=N megatron sft --model HUB_ID ...) -> config\n"
    "       trainmem import torchtune RECIPE.yaml [--gpus N] [--version V] [--base TRAINING.json] [key=value ...]\n"
    "       trainmem import torchtitan JOB.toml [--gpus N] [--version V] [--base TRAINING.json] [--section.key[=value] ...]\n"
    "       trainmem import deepspeed DS_CONFIG.json [--hf-args TRAINING_ARGS.json] (--model CONFIG.json | --preset ID)\n"
    "            [--launch RUN.sh | -- torchrun ... train.py --deepspeed DS_CONFIG.json --flag value ...]\n"
    "            [--gpus N] [--base TRAINING.json]\n"
    "       trainmem import axolotl CONFIG.yaml [--gpus N] [--model CONFIG.json] [--deepspeed DS_CONFIG.json] [--base TRAINING.json]\n"
    "       trainmem import accelerate CONFIG.yaml [--gpus N] [--model CONFIG.json | --preset ID] [--hf-args TRAINING_ARGS.json]\n"
    "            [--deepspeed DS_CONFIG.json] [--base TRAINING.json] [--launch RUN.sh] [-- LAUNCH COMMAND ...]\n"
    "            a framework's config file -> config (read:, key:, assumed:, ignored: on stderr)\n"
    "       trainmem export CONFIG.json|- [--format megatron-args|json]\n"
    "       trainmem presets    the model presets (JSON)\n"
    "       trainmem setups [ID]   the fine-tuning setups (JSON); with ID, that setup's config and its GPU's memory\n"
    "       trainmem gpus       the GPU table (JSON)\n"
    "       trainmem --version\n"
    "Exit status: 0 on success, 2 on bad input or usage (one message per problem on stderr).\n";

int usage_error(const std::string& message) {
  std::cerr << "trainmem: " << message << "\n" << k_usage;
  return 2;
}

bool read_input(const std::string& path, std::string& text) {
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream buffer;
  buffer << file.rdbuf();
  text = buffer.str();
  return true;
}

// Reads the command's CONFIG argument (a path, or - for stdin): 0, or the usage error's status.
int read_config(const std::string& command, const std::string& path, std::string& text) {
  if (path.empty()) return usage_error(command + " needs a CONFIG.json path (or - for stdin)");
  if (!read_input(path, text)) return usage_error("cannot read " + path);
  return 0;
}

int estimate_command(const std::vector<std::string>& args) {
  std::string path, format = "json";
  trainmem::RunOptions options;
  options.indent = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (arg == "--format") {
      const std::string* v = value();
      if (!v || (*v != "json" && *v != "text"))
        return usage_error("--format: must be \"json\" or \"text\"");
      format = *v;
    } else if (arg == "--profile") {
      // The profile field's own rule and message (every profile named).
      const std::string* v = value();
      trainmem::ConfigInput with_profile;
      if (!v) return usage_error("--profile needs a value");
      if (auto problem = trainmem::set_field(with_profile, "profile", *v))
        return usage_error("--" + problem->message);
      options.profile = with_profile.profile;
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return usage_error("unknown option " + arg);
    } else if (path.empty()) {
      path = arg;
    } else {
      return usage_error("expected one CONFIG argument, got also " + arg);
    }
  }
  std::string text;
  if (const int status = read_config("estimate", path, text)) return status;

  const trainmem::Run run = trainmem::run_estimate(text, options);
  if (!run.ok()) {
    for (const trainmem::Issue& issue : run.issues) std::cerr << issue.message << "\n";
    return 2;
  }
  const trainmem::Trace* trace = options.verbose ? &run.trace : nullptr;
  if (format == "text")
    std::cout << trainmem::text_report(run.config, run.estimate, trace);
  else
    std::cout << trainmem::estimate_to_json(run.config, run.estimate, trace, options.indent) << "\n";
  return 0;
}

void print_issues(const std::vector<trainmem::Issue>& issues) {
  for (const trainmem::Issue& issue : issues) std::cerr << issue.message << "\n";
}

// What `trainmem import` prints: the issues (exit 2), or the notes on stderr ("read: ", "key: ",
// "assumed: ", "ignored: ") and the config on stdout (exit 0). A framework's file describes a
// whole run (core: whole_layout): one whose config would not estimate (`unresolved`) is refused
// with what it lacks, each on its field (exit 2, nothing on stdout), as the page asks for the
// same fields. A config.json or a Megatron-LM command line overlays only what it says, meant for
// a --base: its config is printed, with what it lacks as "needs:" notes.
int print_imported(const trainmem::ImportOverBase& imported) {
  if (!imported.ok()) return print_issues(imported.issues), 2;
  for (const std::string& note : imported.read) std::cerr << "read: " << note << "\n";
  // The source's own key for each field read from one key (ImportResult::keys): its words.
  for (const auto& [field, key] : imported.keys) std::cerr << "key: " << field << " ← " << key << "\n";
  for (const std::string& note : imported.assumed) std::cerr << "assumed: " << note << "\n";
  for (const std::string& note : imported.ignored) std::cerr << "ignored: " << note << "\n";
  if (imported.whole_layout && !imported.unresolved.empty()) {
    print_issues(imported.unresolved);
    // A question the source cannot answer (the GPU count) names its flag in its own message.
    const bool only_asked = imported.unresolved.size() == imported.asked.size();
    if (!only_asked)
      std::cerr << "give " << (imported.unresolved.size() == 1 ? "it" : "them")
                << " with --base TRAINING.json (or the framework's own overrides)\n";
    return 2;
  }
  for (const trainmem::Issue& need : imported.unresolved) std::cerr << "needs: " << need.message << "\n";
  std::cout << trainmem::config_input_json(imported.config, 2) << "\n";
  return 0;
}

// trainmem import torchtune|torchtitan|deepspeed|axolotl FILE [options]: the file read as a JSON
// tree (YAML and TOML through documents.hpp), the options beside it, then core import_over_base.
int import_framework_command(trainmem::ImportKind kind, const std::vector<std::string>& args) {
  using trainmem::ImportKind;
  const std::string kind_name(trainmem::name_of(kind));
  trainmem::ImportOptions options;
  std::vector<trainmem::Issue> issues;  // the options' own rules (core set_import_option_text)
  std::string path, base_path, model_path, hf_args_path, deepspeed_path, launch_path;
  const auto value_of = [&](size_t& i, std::string& into) {
    if (i + 1 >= args.size()) return false;
    into = args[++i];
    return true;
  };
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string value;
    if (arg == "--gpus") {
      if (!value_of(i, value)) return usage_error("--gpus needs a number");
      if (auto problem = trainmem::set_import_option_text(options, "gpus", value)) issues.push_back(*problem);
    } else if (arg == "--version") {
      if (!value_of(i, options.version)) return usage_error("--version needs a value");
    } else if (arg == "--base") {
      if (!value_of(i, base_path)) return usage_error("--base needs a TRAINING.json path");
    } else if (arg == "--launch" && (kind == ImportKind::accelerate || kind == ImportKind::deepspeed)) {
      if (!value_of(i, launch_path)) return usage_error("--launch needs a file with the launch command (a run_*.sh)");
    } else if (arg == "--" && (kind == ImportKind::accelerate || kind == ImportKind::deepspeed)) {
      // The launch command, word by word: accelerate launch [flags] SCRIPT [script flags].
      options.overrides.insert(options.overrides.end(), args.begin() + long(i) + 1, args.end());
      break;
    } else if (arg == "--model" && (kind == ImportKind::deepspeed || kind == ImportKind::axolotl || kind == ImportKind::accelerate)) {
      if (!value_of(i, model_path)) return usage_error("--model needs a CONFIG.json path");
    } else if (arg == "--preset" && (kind == ImportKind::deepspeed || kind == ImportKind::axolotl || kind == ImportKind::accelerate)) {
      if (!value_of(i, options.preset)) return usage_error("--preset needs a preset id (trainmem presets)");
    } else if (arg == "--hf-args" && (kind == ImportKind::deepspeed || kind == ImportKind::accelerate)) {
      if (!value_of(i, hf_args_path)) return usage_error("--hf-args needs a TRAINING_ARGS.json path");
    } else if (arg == "--deepspeed" && (kind == ImportKind::axolotl || kind == ImportKind::accelerate)) {
      if (!value_of(i, deepspeed_path)) return usage_error("--deepspeed needs a DS_CONFIG.json path");
    } else if (kind == ImportKind::torchtitan && arg.rfind("--", 0) == 0 && arg.find('.') != std::string::npos) {
      // --section.key=value, --section.key value, or a bare --section.key (true).
      std::string override = arg.substr(2);
      if (override.find('=') == std::string::npos && i + 1 < args.size() && args[i + 1].rfind("-", 0) != 0 &&
          (path.empty() ? args[i + 1].find(".toml") == std::string::npos : true))
        override += "=" + args[++i];
      options.overrides.push_back(override);
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      return usage_error("unknown option " + arg);
    } else if (path.empty()) {
      path = arg;
    } else if (kind == ImportKind::torchtune) {
      options.overrides.push_back(arg);  // tune run's key=value and ~key
    } else {
      return usage_error("expected one source, got also " + arg);
    }
  }
  if (path.empty()) return usage_error("import " + kind_name + " needs the framework's config file");
  if (!issues.empty()) return print_issues(issues), 2;
  if (kind == ImportKind::deepspeed && model_path.empty() && options.preset.empty() && base_path.empty() &&
      launch_path.empty() && options.overrides.empty())
    return usage_error("import deepspeed needs the model: --model CONFIG.json or --preset ID (or --base with the model's fields)");
  std::string text, base_text = "{}";
  if (!read_input(path, text)) return usage_error("cannot read " + path);
  if (!base_path.empty() && !read_input(base_path, base_text)) return usage_error("cannot read " + base_path);
  if (!model_path.empty() && !read_input(model_path, options.model_json)) return usage_error("cannot read " + model_path);
  if (!hf_args_path.empty() && !read_input(hf_args_path, options.hf_args_json)) return usage_error("cannot read " + hf_args_path);
  if (!deepspeed_path.empty() && !read_input(deepspeed_path, options.deepspeed_json)) return usage_error("cannot read " + deepspeed_path);
  if (!launch_path.empty() && !read_input(launch_path, options.launch)) return usage_error("cannot read " + launch_path);

  // The tree: YAML (torchtune, axolotl), TOML (torchtitan); a DeepSpeed config is JSON already.
  std::string tree = text;
  if (kind != ImportKind::deepspeed) {
    const trainmem::DocumentTree document = kind == ImportKind::torchtitan ? trainmem::toml_document_tree(text, path)
                                                                            : trainmem::yaml_document_tree(text, path);
    if (!document.ok()) return print_issues(document.issues), 2;
    tree = document.json;
  }
  // axolotl's deepspeed: names a JSON file relative to where axolotl runs: read it when it is
  // there (or beside the YAML file) and --deepspeed did not give one.
  if (kind == ImportKind::axolotl && options.deepspeed_json.empty()) {
    try {
      const auto doc = nlohmann::json::parse(tree);
      if (doc.is_object() && doc.contains("deepspeed") && doc["deepspeed"].is_string()) {
        const std::string named = doc["deepspeed"].get<std::string>();
        const std::string beside = path.substr(0, path.find_last_of('/') + 1) + named;
        // Never "-": that is stdin to read_input, not a file the YAML names.
        for (const std::string& candidate : {named, beside})
          if (!named.empty() && candidate != "-" && read_input(candidate, options.deepspeed_json)) break;
      }
    } catch (const std::exception&) {
      // the importer names the problem
    }
  }
  const trainmem::ImportOverBase imported = trainmem::import_over_base(kind, tree, base_text, options);
  return print_imported(imported);
}

// trainmem import ms-swift-megatron [RUN.sh|-] [--gpus N] [--version YYYY-MM-DD] [--model CONFIG.json |
// --preset ID] [--base TRAINING.json]: a Megatron-SWIFT command line (a file or stdin), not a config tree.
int import_swift_command(const std::vector<std::string>& args) {
  trainmem::ImportOptions options;
  std::vector<trainmem::Issue> issues;
  std::string path, base_path, model_path;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--gpus") {
      if (!has_value) return usage_error("--gpus needs a number");
      if (auto problem = trainmem::set_import_option_text(options, "gpus", args[++i])) issues.push_back(*problem);
    } else if (arg == "--version") {
      if (!has_value) return usage_error("--version needs a value");
      options.version = args[++i];
    } else if (arg == "--base") {
      if (!has_value) return usage_error("--base needs a TRAINING.json path");
      base_path = args[++i];
    } else if (arg == "--model") {
      if (!has_value) return usage_error("--model needs a CONFIG.json path");
      model_path = args[++i];
    } else if (arg == "--preset") {
      if (!has_value) return usage_error("--preset needs a preset id (trainmem presets)");
      options.preset = args[++i];
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      return usage_error("unknown option " + arg);
    } else if (path.empty()) {
      path = arg;
    } else {
      return usage_error("expected one source, got also " + arg);
    }
  }
  if (!issues.empty()) return print_issues(issues), 2;
  if (path.empty()) path = "-";
  std::string text, base_text = "{}";
  if (!read_input(path, text)) return usage_error("cannot read " + path);
  if (!base_path.empty() && !read_input(base_path, base_text)) return usage_error("cannot read " + base_path);
  if (!model_path.empty() && !read_input(model_path, options.model_json)) return usage_error("cannot read " + model_path);
  return print_imported(trainmem::import_over_base(trainmem::ImportKind::ms_swift_megatron, text, base_text, options));
}

// trainmem import KIND SOURCE [--base TRAINING.json]: the imported fields over the base's
// (core import_over_base), as a config on stdout; what was read, assumed and ignored on stderr.
int import_command(const std::vector<std::string>& args) {
  using trainmem::ImportKind;
  const std::optional<ImportKind> kind =
      args.empty() ? std::nullopt : trainmem::from_name<ImportKind>(args[0]);
  if (!kind) {
    const auto names = trainmem::enum_names<ImportKind>();
    std::string kinds;
    for (size_t i = 0; i < names.size(); ++i)
      kinds += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
    return usage_error("import needs a source kind: " + kinds);
  }
  if (*kind == ImportKind::ms_swift_megatron) return import_swift_command(args);
  if (*kind != ImportKind::hf && *kind != ImportKind::megatron_args) return import_framework_command(*kind, args);
  // Megatron-LM's functional-test config (model_config.yaml) is a YAML file read like a
  // framework's: parsed into a tree, with --gpus for the launcher's GPUS_PER_NODE.
  const auto yaml_name = [](const std::string& a) {
    return a.size() > 5 && (a.ends_with(".yaml") || a.ends_with(".yml"));
  };
  if (*kind == ImportKind::megatron_args && std::any_of(args.begin() + 1, args.end(), yaml_name))
    return import_framework_command(*kind, args);
  std::string path, base_path;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--base") {
      if (i + 1 >= args.size()) return usage_error("--base needs a TRAINING.json path");
      base_path = args[++i];
    } else if (args[i].size() > 1 && args[i][0] == '-' && args[i] != "-") {
      return usage_error("unknown option " + args[i]);
    } else if (path.empty()) {
      path = args[i];
    } else {
      return usage_error("expected one source, got also " + args[i]);
    }
  }
  // A command line is often piped in; a config.json is a file.
  if (path.empty() && kind == ImportKind::hf)
    return usage_error("import hf needs a CONFIG.json path (or - for stdin)");
  if (path.empty()) path = "-";
  std::string text, base_text = "{}";
  if (!read_input(path, text)) return usage_error("cannot read " + path);
  if (!base_path.empty() && !read_input(base_path, base_text)) return usage_error("cannot read " + base_path);

  const trainmem::ImportOverBase imported = trainmem::import_over_base(*kind, text, base_text);
  return print_imported(imported);
}

// trainmem export CONFIG.json [--format megatron-args|json]: the resolved config as Megatron-LM
// arguments (what they cannot carry goes to stderr as "note:") or as trainmem JSON.
int export_command(const std::vector<std::string>& args) {
  std::string path, format = "megatron-args";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--format") {
      if (i + 1 >= args.size() || (args[i + 1] != "megatron-args" && args[i + 1] != "json"))
        return usage_error("--format: must be \"megatron-args\" or \"json\"");
      format = args[++i];
    } else if (args[i].size() > 1 && args[i][0] == '-' && args[i] != "-") {
      return usage_error("unknown option " + args[i]);
    } else if (path.empty()) {
      path = args[i];
    } else {
      return usage_error("expected one CONFIG argument, got also " + args[i]);
    }
  }
  std::string text;
  if (const int status = read_config("export", path, text)) return status;
  const trainmem::Resolved resolved = trainmem::resolve_config_json(text);
  if (!resolved.ok()) return print_issues(resolved.issues), 2;
  if (format == "json") {
    std::cout << trainmem::export_config_json(resolved.config, 2) << "\n";
    return 0;
  }
  const trainmem::MegatronExport exported = trainmem::export_megatron_args(resolved.config);
  for (const std::string& note : exported.notes) std::cerr << "note: " << note << "\n";
  std::cout << exported.args << "\n";
  return 0;
}

// trainmem plan CONFIG.json --gpus N --gpu-memory SIZE ...: flags map one to one onto the
// planner's options (planner.hpp), which checks their values.
int plan_command(const std::vector<std::string>& args) {
  static const std::vector<std::pair<std::string, std::string>> k_flags = {
      {"--gpus", "gpus"}, {"--gpu-memory", "gpu_memory_bytes"}, {"--headroom", "headroom"},
      {"--gpus-per-node", "gpus_per_node"}, {"--metric", "metric"}, {"--max-results", "max_results"},
      {"--max-evaluations", "max_evaluations"}, {"--search", "search"}, {"--keep", "keep"}, {"--solve", "solve"},
      {"--max-micro-batch", "max_micro_batch_size"}, {"--max-seq-length", "max_seq_length"},
      {"--seq-step", "seq_length_step"}, {"--max-gpus", "max_gpus"}};
  std::string path, format = "json";
  trainmem::PlanOptions options;
  std::vector<trainmem::Issue> issues;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string option;
    for (const auto& [flag, name] : k_flags)
      if (arg == flag) option = name;
    if (arg == "--format") {
      if (i + 1 >= args.size() || (args[i + 1] != "json" && args[i + 1] != "text"))
        return usage_error("--format: must be \"json\" or \"text\"");
      format = args[++i];
    } else if (arg == "--uneven") {
      options.allow_uneven_pipeline = true;
    } else if (!option.empty()) {
      if (i + 1 >= args.size()) return usage_error(arg + " needs a value");
      if (auto issue = trainmem::set_plan_option_text(options, option, args[++i])) issues.push_back(*issue);
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      return usage_error("unknown option " + arg);
    } else if (path.empty()) {
      path = arg;
    } else {
      return usage_error("expected one CONFIG argument, got also " + arg);
    }
  }
  std::string text;
  if (const int status = read_config("plan", path, text)) return status;
  const trainmem::PlanResult result = trainmem::plan_request(text, options, std::move(issues));
  if (!result.ok()) return print_issues(result.issues), 2;
  std::cout << (format == "text" ? trainmem::plan_text(result) : trainmem::plan_to_json(result, 2) + "\n");
  return 0;
}

// trainmem setups [ID]: the embedded setups document, or one setup's config with its GPU's
// capacity (gpu_memory_bytes, as the page adds it), ready for `trainmem estimate -`.
int setups_command(const std::vector<std::string>& args) {
  if (args.empty()) return std::cout << trainmem::setups_json(), 0;
  if (args.size() > 1) return usage_error("setups takes at most one setup ID");
  using ordered = nlohmann::ordered_json;
  const ordered setups = ordered::parse(trainmem::setups_json())["setups"];
  const ordered gpus = ordered::parse(trainmem::gpus_json())["gpus"];
  std::string ids;
  for (const ordered& setup : setups) {
    ids += (ids.empty() ? "" : ", ") + setup["id"].get<std::string>();
    // An id it had before (aliases) names it too, so that old commands and links keep working.
    const bool alias = setup.contains("aliases") &&
                       std::find(setup["aliases"].begin(), setup["aliases"].end(), args[0]) != setup["aliases"].end();
    if (setup["id"] != args[0] && !alias) continue;
    ordered config = setup["config"];
    for (const ordered& gpu : gpus)
      if (gpu["id"] == setup["gpu"]) config["gpu_memory_bytes"] = gpu["memory_bytes"];
    std::cout << config.dump(2) << "\n";
    return 0;
  }
  std::cerr << "setups: unknown setup \"" << args[0] << "\"; the setups are " << ids << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << k_usage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "--version") return std::cout << "trainmem " TRAINMEM_VERSION "\n", 0;
  if (command == "estimate") return estimate_command(args);
  if (command == "import") return import_command(args);
  if (command == "export") return export_command(args);
  if (command == "plan") return plan_command(args);
  if (command == "fields") {
    if (args.size() == 2 && args[0] == "--format" && args[1] == "markdown")
      return std::cout << trainmem::fields_markdown(), 0;
    if (!args.empty()) return usage_error("fields takes only --format markdown");
    return std::cout << trainmem::field_specs_json() << "\n", 0;
  }
  if (command == "presets") return std::cout << trainmem::presets_json(), 0;
  if (command == "gpus") return std::cout << trainmem::gpus_json(), 0;
  if (command == "setups") return setups_command(args);
  return usage_error("unknown command " + command);
}
