// What the framework importers (torchtune.cpp, torchtitan.cpp, deepspeed.cpp, axolotl.cpp) share:
// the path from the tree's text to the result (import_tree), reading a config tree by dotted key,
// setting trainmem fields with a note for each, the keys accounted for, the model presets, the
// --version option, and the "no field yet" rule.
//
// A field the field table does not have yet (find_field) is never guessed: the key that would set
// it is listed under ignored: with "trainmem has no field for this yet", so an importer works
// before and after the field lands.
#pragma once

#include "trainmem/field_names.hpp"

#include <functional>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "internal.hpp"
#include "trainmem/import.hpp"

namespace trainmem::mapping {

using json = nlohmann::json;

// Records `key` as the source's word for `field` (ImportResult::keys): the first key a field is
// read from; the page labels the field with it.
inline void note_key(ImportResult& out, std::string_view field, std::string_view key) {
  for (const auto& [known, _] : out.keys)
    if (known == field) return;
  out.keys.emplace_back(std::string(field), std::string(key));
}

inline constexpr std::string_view k_no_field = "trainmem has no field for this yet";

// The start of the note an importer writes when neither the file nor an option names a model, so
// the base config's is kept; import_over_base rewrites it when the base has no model either.
inline constexpr std::string_view k_model_from_base = "model ← the base config's";

// Asks for the GPU count of a run that `what` shards over every GPU its launcher starts, where
// `unsaid` ("the file does not say") is what leaves the count open (ImportResult::asked).
void ask_gpu_count(ImportResult& out, std::string_view what, std::string_view unsaid);

// The value at a dotted key ("model._component_"), or nullptr when a part is absent. A null
// value is returned as such (callers decide what null means).
const json* at(const json& tree, std::string_view dotted);

// A plain YAML scalar as YAML 1.2's core schema resolves it (yaml.org/spec/1.2.2 §10.3.2), as the
// npm yaml package does by default: null, a boolean, an integer, a float, else the text. Infinite
// and NaN floats become the strings "inf", "-inf", "nan" (JSON has no such numbers).
json plain_scalar(std::string_view text);

// A value as messages show it: "bf16", 8, true, a list, an object.
std::string show(const json& value);

// `text` in lower case (ASCII), for names the frameworks compare without case.
std::string lowercase(std::string_view text);
// What follows the last `separator` in `text` ("AdamW" of "torch.optim.AdamW"), or all of it.
std::string_view last_part(std::string_view text, char separator);

// Parses JSON text into an object tree; an Issue naming `what` when it is not one.
std::optional<json> object_tree(std::string_view text, std::string_view what, std::vector<Issue>& issues);

// A number that is a whole number from `min` to 9e15 (a YAML "2.0" or a TOML 2.0 too, as Python's
// int() is not asked to), or nullopt: not a number, a boolean, a fraction, out of range. `min`
// k_fill (-1) is the frameworks' "fill in the rest" sentinel: -1 or a positive integer.
inline constexpr int64_t k_fill = -1;
std::optional<int64_t> whole_number(const json& value, int64_t min);
// What whole_number asks for, as messages say it: "a positive integer" (min above 0), "a
// non-negative integer" (0), "-1 or a positive integer" (k_fill).
std::string integer_kind(int64_t min);

// The model presets (core/data/presets.json): the config of `id` without its seq_length (a
// training setting), or nullptr.
const json* preset_model(std::string_view id);
// The Hugging Face repository a preset was taken from ("meta-llama/Llama-3.1-8B"), from its
// source URL; "" when the source is not a Hub config.json.
std::string preset_hf_repo(std::string_view id);
// Every preset id, in the file's order.
std::vector<std::string> preset_ids();

class Mapper {
 public:
  Mapper(const json& tree, ImportResult& out) : tree_(tree), out_(out) {}

  const json& tree() const { return tree_; }
  ImportResult& out() { return out_; }

  // The value at `key` (dotted), marked as accounted for; nullptr when absent or null.
  const json* get(std::string_view key);
  // Marks a key (and everything under it) accounted for without reading it.
  void touch(std::string_view key) {
    used_.insert(std::string(key));
    asked_.insert(std::string(key));
  }
  // Whether the key is there with a value. A null (YAML's empty `key:`) is the framework's
  // default, as get() and the typed readers take it, so a rule's "absent: assume the default"
  // branch covers it too; asked for, it is accounted for.
  bool has(std::string_view key);

  // Typed readers: an Issue naming the key when the value has the wrong type or range.
  std::optional<int64_t> integer(std::string_view key, int64_t min = 1);
  std::optional<double> number(std::string_view key, double min, double max);
  std::optional<bool> boolean(std::string_view key);
  std::optional<std::string> string(std::string_view key);

  void fail(std::string_view key, const std::string& rule) { out_.issues.push_back(issue(key, rule)); }

  // The product of `factors` (counts read from the file, each up to 9e15), or an Issue on `key`
  // when it overflows: "<key>: <formula> = a × b × c overflows a 64-bit integer".
  std::optional<int64_t> product(std::string_view key, std::string_view formula, std::initializer_list<int64_t> factors);
  // put() of that product into `field`, noted as "field ← formula = a × b × c = N"; a product
  // the field rejects is an Issue on `key` naming the field and the formula. The value, or nullopt.
  std::optional<int64_t> put_product(FieldName field, std::string_view key, std::string_view formula,
                                     std::initializer_list<int64_t> factors);

  // Sets a trainmem field. When the field table has no such field, or the field has no such
  // value, the source key is listed under ignored: with k_no_field and false is returned; a
  // value the field rejects otherwise is an Issue naming the source key.
  bool put(FieldName field, const FieldValue& value, std::string_view key);
  // put() with a note: "field ← key = value" (read), or "field ← value (why)" (assumed).
  bool read(FieldName field, const FieldValue& value, std::string_view key,
            const std::string& shown_value);
  bool read(FieldName field, const FieldValue& value, std::string_view key);
  bool assume(FieldName field, const FieldValue& value, const std::string& why,
              std::string_view key = {});
  // Full recomputation with one checkpoint per `layer` ("decoder layer", "TransformerBlock"):
  // recompute_granularity "full" read from `key` (noted as "<shown> (every <layer>)"), and
  // recompute_method uniform with recompute_num_layers 1 assumed.
  void full_recompute_per_layer(std::string_view key, const std::string& shown, std::string_view layer);
  void ignore(std::string_view key, const std::string& why);
  void ignore_value(std::string_view key, const std::string& why);  // "key = value: why"

  // The whole model from a preset: every model field of its config, one note.
  bool model_from_preset(std::string_view id, std::string_view key, const std::string& how);
  // The whole model from the preset whose Hugging Face repository `name` is
  // ("meta-llama/Llama-2-70b-hf"), or one of the same name ("NousResearch/Meta-Llama-3-8B" reads
  // as Llama 3.1 8B); an Issue on `key` when no preset has it.
  bool model_from_hub_name(const std::string& name, std::string_view key);
  // The whole model from a Hugging Face config.json (import_hf_config), its notes prefixed.
  bool model_from_hf(std::string_view config_json, std::string_view option);

  // Lists, under ignored:, each top-level key (and each key under the objects in `sections`)
  // that no rule read: the ones in `no_memory` as not changing memory, the others as unknown.
  // A key at the wrong nesting is named with the place it is read from instead (misplaced_keys).
  void account(const std::vector<std::string_view>& no_memory,
               const std::vector<std::string_view>& sections = {});

 private:
  const json& tree_;
  ImportResult& out_;
  std::set<std::string> used_;
  std::set<std::string> asked_;  // every key a rule looked for, found or not
  bool accounted(const std::string& key) const;
  // Where the tree has a key that a rule looked for at another place and did not find there: the
  // key's path ("datasets[0].sequence_len") → the place it is read from ("sequence_len").
  std::map<std::string, std::string> misplaced_keys() const;
  // put(), with `context` before the field's rule in the Issue ("global_batch_size = ...: ").
  bool put(FieldName field, const FieldValue& value, std::string_view key, std::string_view context);
};

// The text of a FieldValue for notes.
std::string value_text(const FieldValue& value);

// A version named as "major.minor" (or a label such as "2024"): its position in `known` (oldest
// first), or nullopt.
std::optional<size_t> version_index(std::string_view version, const std::vector<std::string_view>& known);
// The version --version chose: its position in `known`, noted as "version ← <framework> V
// (--version)"; or an Issue on --version ("... is not a <framework> <noun> this importer knows
// (<known>)") and nullopt.
std::optional<size_t> chosen_version(Mapper& m, std::string_view version, const std::vector<std::string_view>& known,
                                     std::string_view framework, std::string_view noun);

// Enough of POSIX sh word splitting for pasted launch commands (megatron_args.cpp): blanks
// separate words; backslash-newline joins lines; '...' is literal; "..." allows \" \\ \$ \`
// escapes; a backslash outside quotes escapes the next character; a word starting with # comments
// out the rest of the line. Nothing is expanded ($VAR stays as written). `error` names an
// unterminated quote.
struct ShellWords {
  std::vector<std::string> words;
  std::string error;
};
ShellWords shell_words(std::string_view text);

// A signed decimal integer as Python's int() reads one (no blanks; at most 15 digits), else nothing.
std::optional<int64_t> parse_int(std::string_view text);

// A training run's launch command: ImportOptions::launch as text (shell words; a one-line
// input's "backslash, blanks, flag" is the continuation it was), then ImportOptions::overrides
// word by word (quotes taken off, lone backslashes dropped). It starts with a launcher
// (`accelerate launch`, `torchrun`, `deepspeed`, `python`, `trl sft`) and its flags, then the
// script, then the script's flags; or it is the script's flags alone. Environment assignments
// before it (NAME=value) are skipped.
struct LaunchCommand {
  std::string launcher;                                     // "" when the command has none
  std::vector<std::pair<std::string, std::string>> flags;   // the launcher's: name (_ for -), value ("" for a switch)
  json script_args = json::object();                        // the script's flags, typed by argument_value
};
// nullopt, with an Issue on "launch command", when the command cannot be read.
std::optional<LaunchCommand> read_launch_command(const ImportOptions& options, std::vector<Issue>& issues);
// A flag's value as HfArgumentParser types it: a boolean (string_to_bool's words), a number, or
// the text.
json argument_value(const std::string& text);
// The Trainer's arguments: --hf-args (a TrainingArguments JSON) with the script's flags over it.
std::optional<json> trainer_arguments(const ImportOptions& options, const json& script_args, std::vector<Issue>& issues);
// The world a launcher's flags give: torchrun --nproc_per_node × --nnodes, deepspeed --num_gpus ×
// --num_nodes; nullopt when they do not say. Read only without --gpus: a count that is none
// (torchrun's "gpu", "auto", an elastic "1:4") is an Issue that asks for --gpus.
std::optional<int64_t> launcher_world(const LaunchCommand& command, std::vector<Issue>& issues);

// What each framework's reader holds: a Mapper over the tree, the options, the result it fills.
class Reader {
 public:
  Reader(const json& tree, const ImportOptions& options, ImportResult& out)
      : m_(tree, out), options_(options), out_(out) {}

 protected:
  Mapper m_;
  const ImportOptions& options_;
  ImportResult& out_;
};

// An Issue when a tree is not the importer's kind of file, else nullopt.
using KindCheck = std::function<std::optional<Issue>(const json& tree)>;
// The KindCheck of a file that always has `key`: "<key>: missing: this is not <what> (<kind_hint>)".
KindCheck requires_key(std::string_view key, std::string_view what);

// Every framework importer's path: `tree_json` parsed as an object tree (object_tree, named
// `document` in messages), checked by `kind`, then `read` on it (which may change the tree: the
// command-line overrides) filling the result. A failed import sets no fields.
ImportResult import_tree(std::string_view tree_json, std::string_view document, const KindCheck& kind,
                         const std::function<void(json& tree, ImportResult& out)>& read);

// Adds the adapters one PEFT target-module name stands for to `targets` (each once): a module
// name trainmem has adapters for, "all-linear" (PEFT: every linear layer but the output; axolotl's
// lora_target_linear alike), or a fused name split into its parts (Phi-3's qkv_proj,
// gate_up_proj), or Mixtral's expert names (w1 gate, w2 down, w3 up). False for a name trainmem
// has no adapter for.
bool add_lora_targets(std::vector<std::string>& targets, std::string_view name);

// Adds the module one PEFT modules_to_save name stands for to `saved` (each once): PEFT wraps
// every module whose name ends with it (utils/other.py _set_trainable: key.endswith), so
// "embed_tokens", "model.embed_tokens" and "lm_head" name the Llama-style embedding and output
// layer. False for any other module (trainmem has no trained copy of it).
bool add_saved_module(std::vector<std::string>& saved, std::string_view name);
// Reads a modules_to_save list (`key`, as the source names it) into lora_modules_to_save; the
// names trainmem has no copy for go under ignored:. A value that is not a name or a list of
// names fails the import.
void read_modules_to_save(Mapper& m, ImportResult& out, const json& value, std::string_view key);

// transformers' TrainingArguments.optim names (training_args.py OptimizerNames) -> optimizer,
// paged_optimizer and optimizer_implementation; false (and an ignored note) when the name has no
// trainmem states.
bool hf_optimizer(Mapper& m, const std::string& name, std::string_view key);
// A file's gradient_accumulation_steps (the Trainer's and torchtune's recipes' per-rank knob,
// which stays when the GPU count changes) -> num_microbatches; absent, 1 is assumed with
// `default_why`. Checked (a positive integer) either way; written only when `write` (false when the
// file fixes the batch another way, e.g. a DeepSpeed train_batch_size). The count, if valid.
std::optional<int64_t> read_accumulation(Mapper& m, std::string_view default_why, bool write = true);
// transformers' attn_implementation (`value`, given under `key`) -> attention_backend: "eager"
// keeps the s² scores (unfused); a fused kernel keeps the output and its softmax statistics
// (flash): "sdpa", "flash_attention_2"/"_3" (any name starting "flash" or holding "flash_attn"),
// "flex_attention", a Hub kernel path "org/name" (which transformers passes to the kernels library,
// as gpt-oss's kernels-community/vllm-flash-attn3), and `also_fused`, a framework's own names for
// fused kernels (axolotl's xformers, sage, fp8). Any other value fails, naming `key`: false.
bool hf_attention(Mapper& m, const json& value, std::string_view key, std::initializer_list<std::string_view> also_fused = {});
// The ignored note of an optimizer `key` names that trainmem has no states for (the base's
// optimizer is kept).
void unknown_optimizer(Mapper& m, std::string_view key);

// The Hugging Face Trainer's arguments (transformers TrainingArguments, TRL's SFTConfig and
// ModelConfig, a script's own dataclasses) as a JSON object, and how notes name one: `prefix`
// "--hf-args " (a TRAINING_ARGS.json) or "--" (a launch command's flags).
struct TrainerArguments {
  const json& args;
  std::string prefix;
  // The argument given (not null), or nullptr.
  const json* given(std::string_view name) const;
  std::string key(std::string_view name) const { return prefix + std::string(name); }
  // A switch (an Issue naming the argument when it is not a boolean) or a positive integer.
  std::optional<bool> flag(Mapper& m, const char* name) const;
  std::optional<int64_t> count(Mapper& m, const char* name) const;
};
// What every Trainer run reads from its arguments (deepspeed.cpp): gradient_checkpointing,
// torch_compile, use_liger_kernel, the sequence length (max_length, max_seq_length or max_seq_len
// with packing) and, unless `optimizer_read`, the optimizer (optim).
void read_trainer_arguments(Mapper& m, const TrainerArguments& args, bool optimizer_read);

// The DeepSpeed mapping (deepspeed.cpp) on a Mapper over a DeepSpeed config, with the Trainer's
// arguments (possibly none), on `gpus` ranks (0: not given). Shared by the DeepSpeed importer,
// axolotl's deepspeed: key and accelerate's deepspeed_config.
void read_deepspeed(Mapper& m, const TrainerArguments& args, int64_t gpus);

// "it looks like an axolotl config" or "it has none of the keys of a framework config", for the
// message when a file of the wrong kind is given (detect_framework_kind).
std::string kind_hint(const json& tree);
std::string_view detect_kind(const json& tree);

}  // namespace trainmem::mapping

namespace trainmem {
std::vector<std::string_view> torchtune_versions();
// Megatron-LM's argv, already split into words (environment assignments, then `--name value`),
// read as import_megatron_args reads a command line, into `out` (megatron_args.cpp).
void read_megatron_words(const std::vector<std::string>& words, ImportResult& out);
std::vector<std::string_view> torchtitan_versions();
}  // namespace trainmem
