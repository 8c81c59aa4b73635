// Importing configurations from where people already have them, and exporting them back.
//
//   import_hf_config      a Hugging Face config.json  -> the model fields (shape, MoE, MLA)
//   import_megatron_args  a Megatron-LM command line  -> model, training and parallel fields
//   export_megatron_args  a resolved Config           -> a Megatron-LM argument line
//   export_config_json    a resolved Config           -> trainmem's own JSON (every field)
//
// An import never throws and never guesses silently: every field it sets is listed in `read`
// (taken from the source) or `assumed` (a default or a convention applied), every key that
// matters for memory but has no trainmem field is listed in `ignored`, and anything it cannot
// use is an Issue whose message starts with the key or argument and states the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmem/config.hpp"

namespace trainmem {

struct ImportResult {
  ConfigInput input;                 // only the fields the source determines are set
  std::vector<std::string> read;     // "num_attention_heads ← num_attention_heads = 64"
  std::vector<std::string> assumed;  // "kv_channels ← hidden_size / num_attention_heads = 128
                                     //  (no head_dim)": defaults and conventions applied
  std::vector<std::string> ignored;  // "sliding_window = 4096: ... not modelled ..."
  std::vector<Issue> issues;         // when not empty, `input` must not be used
  // true when the source describes the whole model (a config.json, or a Megatron line that gives
  // the model's shape): merging then replaces the base's model fields instead of overlaying them.
  bool whole_model = false;
  bool ok() const { return issues.empty(); }
};

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

// `base` with the import applied: every field the import set replaces the base's; when the
// import describes the whole model, the base's other model fields are cleared too, except the
// run's vocabulary (vocab_size, which a Megatron tokenizer supplies) and its padding policy
// (make_vocab_size_divisible_by, should_pad_vocab).
ConfigInput merge_import(const ConfigInput& base, const ImportResult& imported);

struct MegatronExport {
  std::string args;                // one line of Megatron-LM arguments
  std::vector<std::string> notes;  // what the arguments cannot carry (e.g. the data-parallel size)
};

// The arguments that make Megatron-LM train `config`. import_megatron_args(args) resolves to the
// same Config when the launcher supplies the world size the notes give.
MegatronExport export_megatron_args(const Config& config);

// `config` as trainmem's input JSON: every field that is not Megatron's None, in the field table's
// order (the same values as estimate_to_json's "config" object). -1: compact.
std::string export_config_json(const Config& config, int indent = -1);

// A (possibly partial) input as JSON: the fields that are set, in the field table's order.
std::string config_input_json(const ConfigInput& input, int indent = -1);

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

// A 0/1 list as the shortest run-length expression Megatron-LM accepts: "([0]*3+[1]*58)".
std::string moe_layer_freq_expression(const std::vector<uint8_t>& pattern);

}  // namespace trainmem
