// Importing configurations from where people already have them (exporting them back:
// export.hpp).
//
//   import_over_base      any source below, over a base config: the one call the shells make
//   import_hf_config      a Hugging Face config.json  -> the model fields (shape, MoE, MLA)
//   import_megatron_args  a Megatron-LM command line  -> model, training and parallel fields
//   torchtune, torchtitan, deepspeed, axolotl: a framework's own config file (YAML, TOML or JSON,
//                         handed over as one JSON tree) plus what the file cannot say (ImportOptions)
//
// An import never throws and never guesses silently: every field it sets is listed in `read`
// (taken from the source) or `assumed` (a default or a convention applied), every key that
// matters for memory but has no trainmem field is listed in `ignored`, and anything it cannot
// use is an Issue whose message starts with the key or argument and states the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem {

struct ImportResult {
  ConfigInput input;                 // only the fields the source determines are set
  std::vector<std::string> read;     // "num_attention_heads ← num_attention_heads = 64"
  // The source's own key (or command-line flag) for each field it read from one key, as
  // {field, key}, the first read of a field kept: the framework's words for the field
  // ("micro_batch_size" ← torchtune's "batch_size"). A field made from several keys has none.
  std::vector<std::pair<std::string, std::string>> keys;
  std::vector<std::string> assumed;  // "kv_channels ← hidden_size / num_attention_heads = 128
                                     //  (no head_dim)": defaults and conventions applied
  std::vector<std::string> ignored;  // "sliding_window = 4096: ... not modelled ..."
  std::vector<Issue> issues;         // when not empty, `input` must not be used
  // The Hugging Face repository the source names for its model when it is no preset's: the model
  // must be given as a config.json (the CLI's --model, the page's model box). Its issue carries
  // rule k_model_not_a_preset, so a view asks for it without reading the message.
  std::string model_asked;
  // What the source leaves for the user to give, each as {field, why}: "seq_length" with "the
  // recipe's tokenizer.max_seq_len is null and dataset.packed is false, so the length follows the
  // data". import_over_base adds the why to the merged config's problem on that field.
  std::vector<Issue> open_fields;
  // What the source does not fix and the estimate needs even where a default would let the config
  // resolve, each as {field, why}: a sharded run's GPU count, which the launcher gives, not the
  // file. import_over_base lists each as unresolved, so the page and the CLI ask for it.
  std::vector<Issue> asked;
  // true when the source describes the whole model (a config.json, or a Megatron line that gives
  // the model's shape): merging then replaces the base's model fields instead of overlaying them.
  bool whole_model = false;
  // true when the source describes the run's whole parallel layout (a framework's config file,
  // which launches on its own world): merging then returns the base's layout fields the import
  // does not set (and sequence_parallel, which needs TP) to their defaults instead of keeping
  // them; the base's gpus_per_node, a fact of the machine, stays.
  bool whole_layout = false;
  bool ok() const { return issues.empty(); }
};

// The sources an import reads. Their names, enum_names<ImportKind>() ("hf", "megatron-args",
// "torchtune", "torchtitan", "deepspeed", "axolotl"), are the CLI's `trainmem import KIND`. An
// importer is one value here, its name in src/import/import.cpp, its reader in a file of its own
// under src/import/, and one case in import.cpp's dispatch.
enum class ImportKind : uint8_t { hf, megatron_args, torchtune, torchtitan, deepspeed, axolotl, accelerate, ms_swift_megatron, count };
template <>
std::span<const std::string_view> enum_names<ImportKind>();

// An import over a base config (JSON text): what the CLI's `import` and the module's
// importHfConfig / importMegatronArgs show, in one call. `issues` are the import's; when it has
// none, the base's, each as "--base: <message>" (the CLI's option; in the module, the page's
// config). With issues nothing else is set.
// Without issues, `config` either estimates (`unresolved` is empty) or `unresolved` names what
// it still lacks: resolve()'s problems with the merged config, each on its field, with the
// source's reason where it left that field open ("seq_length: is required: the recipe's
// tokenizer.max_seq_len is null ..."). The CLI refuses such an import with those messages (exit
// 2); the page loads the config and asks for each field in the form.
// Issue::rule of the issue that asks for a model's config.json (ImportResult::model_asked).
inline constexpr std::string_view k_model_not_a_preset = "import/model-not-a-preset";
// The rule of an ImportResult::asked question (a sharded run's GPU count): a view asks for its
// field and shows no figure until it is given, as the CLI stops on it.
inline constexpr std::string_view k_import_asked = "import/asked";

struct ImportOverBase : ImportResult {
  ConfigInput config;  // `input` over the base (merge_import)
  std::vector<Issue> unresolved;
};
ImportOverBase import_over_base(ImportKind kind, std::string_view text, std::string_view base_json);

// What a framework's config file cannot say, given beside it (the CLI's flags, the page's inputs).
// The framework kinds read their file as a JSON tree (`text`: JSON text): the CLI turns YAML and
// TOML into it with libyaml-cpp and toml++ (documents.hpp), the page with the npm packages yaml
// and smol-toml; every mapping rule is applied here, once, to that tree.
struct ImportOptions {
  int64_t gpus = 0;                    // the world size (torchrun's); 0: not given
  std::vector<std::string> overrides;  // torchtune "key=value" / "~key"; torchtitan "section.key[=value]"
  std::string version;                 // the framework's version; empty: from the file, else current
  std::string model_json;              // a Hugging Face config.json (deepspeed, axolotl)
  std::string preset;                  // a model preset id (deepspeed, axolotl)
  std::string hf_args_json;            // transformers TrainingArguments as JSON (deepspeed)
  std::string deepspeed_json;          // the DeepSpeed config an axolotl file names (axolotl)
  std::string launch;                  // a launch command as text, split as the shell splits it,
                                       // before `overrides` (accelerate)
};
ImportOverBase import_over_base(ImportKind kind, std::string_view text, std::string_view base_json,
                                const ImportOptions& options);

// The options as the module receives them: a JSON object {"gpus", "overrides", "version",
// "model", "preset", "hf_args", "deepspeed", "launch"} ("model", "hf_args" and "deepspeed" are objects or
// JSON text). Problems are Issues naming the option.
struct ParsedImportOptions {
  ImportOptions options;
  std::vector<Issue> issues;
};
ParsedImportOptions parse_import_options(std::string_view options_json);
// One option as a command-line flag gives it: "gpus" (text read as a YAML scalar, so "abc" is a
// string the rule names), "overrides" (one more), the others as text. The Issue of the option's
// rule, as parse_import_options says it.
std::optional<Issue> set_import_option_text(ImportOptions& options, std::string_view name, std::string_view text);

// The page's call: a framework `kind_name` ("torchtune", "torchtitan", "deepspeed", "axolotl", "accelerate"; an
// Issue on "kind" otherwise), its tree, the options as JSON (parse_import_options), over the base.
ImportOverBase import_framework_over_base(std::string_view kind_name, std::string_view tree_json,
                                          std::string_view options_json, std::string_view base_json);

// The framework importers, each over its config file as a JSON tree (text). The versions each
// understands, in the order its messages list them: framework_versions(kind).
ImportResult import_torchtune(std::string_view tree_json, const ImportOptions& options);
ImportResult import_torchtitan(std::string_view tree_json, const ImportOptions& options);
ImportResult import_deepspeed(std::string_view tree_json, const ImportOptions& options);
ImportResult import_axolotl(std::string_view tree_json, const ImportOptions& options);
// An accelerate config with its launch command in `options.overrides`, one word each (accelerate.cpp).
ImportResult import_accelerate(std::string_view tree_json, const ImportOptions& options);
std::vector<std::string_view> framework_versions(ImportKind kind);

// The kind a framework config file is, from its tree (JSON text): "torchtune" (a model with a
// _component_), "torchtitan" (sections job/model/training with model.name), "deepspeed"
// (zero_optimization, train_micro_batch_size_per_gpu, ...), "axolotl" (base_model), "accelerate" (distributed_type),
// "megatron-args" (MODEL_ARGS: Megatron-LM's test config), "hf" (model_type), or "" when none fits. The page's panel and the CLI's messages use it.
std::string_view detect_framework_kind(std::string_view tree_json);

// The model types import_hf_config understands, in the order its messages list them.
std::vector<std::string_view> hf_model_types();

// A Hugging Face config.json (text). Produces model fields only: the caller merges them with its
// training and parallelism settings (merge_import). A multimodal config whose text_config is a
// supported model type (gemma3) imports the text decoder.
ImportResult import_hf_config(std::string_view config_json);

// A Megatron-LM command line: `--num-layers 32 --hidden-size 4096 --swiglu ...`, optionally
// preceded by a launcher (`torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py`, environment
// assignments such as `WORLD_SIZE=16`), with backslash-newline continuations, quotes, `#` comments
// and `--flag=value`. The data-parallel size comes from `--data-parallel-size` (trainmem's own
// argument) or from the launcher's world size, as Megatron derives it.
ImportResult import_megatron_args(std::string_view command_line);
// ms-swift's Megatron-SWIFT command line (`NPROC_PER_NODE=8 megatron sft --model Qwen/Qwen3-8B
// --train_type lora ...`, ms_swift.cpp): ms-swift's arguments as the Megatron-LM argv it builds,
// with its own defaults; the model by its Hub id (a preset), options.model_json or options.preset;
// the world from NPROC_PER_NODE × NNODES or options.gpus.
ImportResult import_ms_swift_megatron(std::string_view command_line, const ImportOptions& options);
// Megatron-LM's functional-test config (model_config.yaml: MODEL_ARGS, ENV_VARS) as a JSON tree,
// read as the command its test launcher runs; options.gpus is GPUS_PER_NODE (default 8).
ImportResult import_megatron_test_config(std::string_view tree_json, const ImportOptions& options);

// `base` with the import applied: every field the import set replaces the base's; when the
// import describes the whole model, the base's other model fields are cleared too, except the
// run's vocabulary (vocab_size, which a Megatron tokenizer supplies) and its padding policy
// (make_vocab_size_divisible_by, should_pad_vocab).
ConfigInput merge_import(const ConfigInput& base, const ImportResult& imported);
// The trainmem profile's fields the import sets that merge_import leaves out because the base
// names a reference profile, which rejects them (import_over_base lists each under ignored).
std::vector<std::string_view> import_fields_left_out(const ConfigInput& base, const ImportResult& imported);

// Megatron-LM's --moe-layer-freq value (arguments.py moe_freq_type): an integer, or a Python list
// expression such as "([0]*3+[1]*58)". Only integers, lists, +, * and parentheses are evaluated
// (the characters Megatron-LM's _eval_pattern admits); nothing else is. `error` is a rule
// ("only digits, ... are allowed") when the text is not such an expression.
struct LayerFreqValue {
  std::optional<int64_t> every;  // an integer: layer i is MoE iff i % every == 0
  std::vector<int64_t> pattern;  // a list: one entry per layer (Megatron wants 0 or 1)
  std::string error;
};
LayerFreqValue parse_moe_layer_freq(std::string_view text);

}  // namespace trainmem
