// torchtune recipe configs (YAML, as a JSON tree) plus `tune run` overrides -> trainmem fields.
//
// Sources (pytorch/torchtune):
//   [parse]   torchtune/config/_utils.py @ 0383a7306c5ed5bd68d4439a5785b845351f8a7b
//             (_merge_yaml_and_cli_args: key=value, ~key, a component's shorthand key=path)
//   [dist]    recipes/full_finetune_distributed.py @ 1bf50ae24f99d453a40380d6f272f024a3122048
//             (the recipe keys and their cfg.get defaults; dtype=bf16 keeps activations,
//             gradients and optimizer states in bf16; optimizer_in_bwd refuses gradient
//             accumulation and clipping; activation offloading needs checkpointing)
//   [single]  recipes/full_finetune_single_device.py @ 56bfafa9011fd4d8a0464fc01470af2b20228e31,
//             recipes/lora_finetune_single_device.py @ 0e906b8a05f0891776681bcd8570a8b8234d341e
//   [l32]     torchtune/models/llama3_2/_model_builders.py @ 2cb2470f999a69bba530021e0e35dfce5b5b90e5
//             (lora_* builders: lora_attn_modules, apply_lora_to_mlp, apply_lora_to_output,
//             lora_rank 8, lora_dropout 0.0, use_dora, quantize_base; qlora_* =
//             partial(lora_*, quantize_base=True))
//   builders of the other families: torchtune/models/<family>/_model_builders.py at the commits
//             in k_builders below.
#include <algorithm>

#include "mapping.hpp"

namespace trainmem {
namespace {

using mapping::json;
using mapping::show;

// torchtune releases this importer distinguishes, oldest first; the last is the current one.
const std::vector<std::string_view> k_versions = {"0.1", "0.2", "0.3", "0.4", "0.5", "0.6"};
constexpr size_t k_current = 5;
// Recipe keys and components that appeared in a release: reading them names that release.
struct Since {
  std::string_view what;  // a recipe key, or a loss component
  size_t version;         // index in k_versions
  std::string_view source;
};
const std::vector<Since> k_since = {
    // v0.4.0 release notes: "stable support for ... activation offloading" (README @ a9ea6d5).
    {"enable_activation_offloading", 3, "torchtune 0.4 added activation offloading"},
    // LinearCrossEntropyLoss (torchtune/modules/loss/ce_chunked_output_loss.py's successor)
    // arrived with 0.6's loss refactor.
    {"torchtune.modules.loss.LinearCrossEntropyLoss", 5, "torchtune 0.6 added LinearCrossEntropyLoss"},
    {"tensor_parallel_dim", 5, "torchtune 0.6 added tensor parallelism to full_finetune_distributed"},
};

// Model builders -> presets. Each row is a builder function's name (the lora_ and qlora_ builders
// of the same model share its shape) and the preset whose shape it builds; the shapes were checked
// against the builder's arguments (vocab_size, num_layers, num_heads, num_kv_heads, embed_dim,
// intermediate_dim, tie_word_embeddings) at the commit cited.
struct Builder {
  std::string_view name;
  std::string_view preset;
  std::string_view source;
};
// clang-format off
const std::vector<Builder> k_builders = {
  {"llama2_7b",            "llama-2-7b",      "models/llama2/_model_builders.py @ ed281c751c50045234f69d09875940c2f6f53c75"},
  {"llama2_13b",           "llama-2-13b",     "models/llama2/_model_builders.py @ ed281c751c50045234f69d09875940c2f6f53c75"},
  {"llama2_70b",           "llama-2-70b",     "models/llama2/_model_builders.py @ ed281c751c50045234f69d09875940c2f6f53c75"},
  // Llama 3 and 3.1 differ only in RoPE scaling (no parameters): the same shape.
  {"llama3_8b",            "llama-3.1-8b",    "models/llama3/_model_builders.py (the Llama 3.1 8B shape)"},
  {"llama3_70b",           "llama-3.1-70b",   "models/llama3/_model_builders.py (the Llama 3.1 70B shape)"},
  {"llama3_1_8b",          "llama-3.1-8b",    "models/llama3_1/_model_builders.py @ 8bc40c0a71d518acc9a79178905883ae2e007c6e"},
  {"llama3_1_70b",         "llama-3.1-70b",   "models/llama3_1/_model_builders.py @ 8bc40c0a71d518acc9a79178905883ae2e007c6e"},
  {"llama3_1_405b",        "llama-3.1-405b",  "models/llama3_1/_model_builders.py @ 8bc40c0a71d518acc9a79178905883ae2e007c6e"},
  {"llama3_2_1b",          "llama-3.2-1b",    "models/llama3_2/_model_builders.py @ 2cb2470f999a69bba530021e0e35dfce5b5b90e5"},
  {"llama3_2_3b",          "llama-3.2-3b",    "models/llama3_2/_model_builders.py @ 2cb2470f999a69bba530021e0e35dfce5b5b90e5"},
  {"llama3_3_70b",         "llama-3.1-70b",   "models/llama3_3/_model_builders.py @ b11e742088a5d62e7e8dd183d040aa3a412d0afc (llama3_1_70b's shape)"},
  {"mistral_7b",           "mistral-7b-v0.1", "models/mistral/_model_builders.py @ 6adf9349882d263fe5b198925e7a49bc1e1ad8fc"},
  {"qwen2_5_7b_base",      "qwen2.5-7b",      "models/qwen2_5/_model_builders.py @ 47a9e1989d7b1434b5a6dbaaa4b829283ba86281"},
  {"qwen2_5_7b_instruct",  "qwen2.5-7b",      "models/qwen2_5/_model_builders.py @ 47a9e1989d7b1434b5a6dbaaa4b829283ba86281"},
  {"qwen2_5_72b_base",     "qwen2.5-72b",     "models/qwen2_5/_model_builders.py @ 47a9e1989d7b1434b5a6dbaaa4b829283ba86281"},
  {"qwen2_5_72b_instruct", "qwen2.5-72b",     "models/qwen2_5/_model_builders.py @ 47a9e1989d7b1434b5a6dbaaa4b829283ba86281"},
  {"qwen3_8b_base",        "qwen3-8b",        "models/qwen3/_model_builders.py @ 0c8c12960510786db6555175ca63352104ebd197"},
  {"qwen3_8b_instruct",    "qwen3-8b",        "models/qwen3/_model_builders.py @ 0c8c12960510786db6555175ca63352104ebd197"},
  {"qwen3_32b",            "qwen3-32b",       "models/qwen3/_model_builders.py @ 0c8c12960510786db6555175ca63352104ebd197"},
  {"gemma2_9b",            "gemma-2-9b",      "models/gemma2/_model_builders.py @ 38698e392100927ece4134dd8137feca19f6ec0e"},
  {"gemma2_27b",           "gemma-2-27b",     "models/gemma2/_model_builders.py @ 38698e392100927ece4134dd8137feca19f6ec0e"},
  {"phi3_mini",            "phi-3-mini-4k",   "models/phi3/_model_builders.py @ 9f37b169622320f76f1d5125c1665830928766a1"},
};
// clang-format on

// Keys the recipes read that do not change memory (logging, checkpoints, schedules, data order).
const std::vector<std::string_view> k_no_memory = {
    "output_dir", "checkpointer", "resume_from_checkpoint", "save_adapter_weights_only",
    "save_last_epoch_only", "epochs_to_save", "seed", "shuffle", "epochs", "max_steps_per_epoch",
    "lr_scheduler", "metric_logger", "log_every_n_steps", "log_peak_memory_stats", "log_level",
    "profiler", "device", "clip_grad_norm", "enable_async_checkpointing", "save_every_n_steps",
    "run_val_every_n_steps", "dataset_val", "cudnn_deterministic_mode", "collate_fn",
    "activation_offloading_use_streams", "tensor_parallel_plan", "context_parallel_rotate_method",
    "enable_kv_cache", "quantizer", "recipe_checkpoint", "log_level",
};

// The recipe keys an override may add when the file lacks them ([dist] cfg.get(...) keys).
const std::vector<std::string_view> k_recipe_keys = {
    "batch_size", "gradient_accumulation_steps", "optimizer_in_bwd", "enable_activation_checkpointing",
    "enable_activation_offloading", "compile", "loss", "dtype", "fsdp_cpu_offload",
    "fsdp_reshard_after_forward", "custom_sharded_layers", "tensor_parallel_dim",
    "context_parallel_dim", "data_parallel_shard_dim", "data_parallel_replicate_dim", "ac_mode",
    "ac_option", "enable_fp8_training", "fp8_recipe_name", "clip_grad_norm", "epochs",
    "max_steps_per_epoch", "seed", "shuffle", "output_dir", "resume_from_checkpoint",
    "log_every_n_steps", "log_peak_memory_stats", "device", "optimizer", "model", "tokenizer",
    "dataset", "checkpointer", "metric_logger", "profiler", "lr_scheduler", "resize_token_embeddings",
    "activation_offloading_use_streams", "enable_async_checkpointing", "save_every_n_steps",
    "log_level", "cudnn_deterministic_mode",
};

// An override's value as OmegaConf.from_dotlist types it ([parse]: it loads the value as YAML):
// a plain scalar, a quoted string or a flow list of those. Nested mappings are not accepted on
// the command line by this importer (put them in the file).
std::optional<json> override_value(std::string_view text, std::string& problem) {
  const auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  const auto scalar = [&](std::string_view s) -> std::optional<json> {
    s = trim(s);
    if (s.size() >= 2 && ((s.front() == '\'' && s.back() == '\'') || (s.front() == '"' && s.back() == '"')))
      return json(std::string(s.substr(1, s.size() - 2)));
    if (!s.empty() && (s.front() == '{' || s.front() == '[' || s.front() == '\'' || s.front() == '"')) {
      problem = "a nested value is not read from the command line (write it in the YAML file)";
      return std::nullopt;
    }
    return mapping::plain_scalar(s);
  };
  text = trim(text);
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    json list = json::array();
    std::string_view inner = trim(text.substr(1, text.size() - 2));
    while (!inner.empty()) {
      const size_t comma = inner.find(',');
      auto item = scalar(inner.substr(0, comma));
      if (!item) return std::nullopt;
      list.push_back(*item);
      if (comma == std::string_view::npos) break;
      inner = inner.substr(comma + 1);
    }
    return list;
  }
  return scalar(text);
}

bool has_component(const json& node) { return node.is_object() && node.contains("_component_"); }

// The mapping that holds the last part of a dotted key ("dataset.packed": the "dataset" object)
// and that part, or nullptr when a part is empty or a value on the way is not a mapping. `create`
// adds the missing mappings on the way (a null becomes one), as OmegaConf does for a new key;
// without it a missing part is nullptr too.
json* parent_of(json& tree, std::string_view dotted, bool create, std::string& last) {
  json* node = &tree;
  while (true) {
    const size_t dot = dotted.find('.');
    const std::string part(dotted.substr(0, dot));
    if (part.empty() || !node->is_object()) return nullptr;
    if (dot == std::string_view::npos) {
      last = part;
      return node;
    }
    if (!create && !node->contains(part)) return nullptr;
    json& child = (*node)[part];
    if (create && child.is_null()) child = json::object();
    node = &child;
    dotted.remove_prefix(dot + 1);
  }
}

// [parse] _merge_yaml_and_cli_args, on the tree.
void apply_overrides(json& tree, const std::vector<std::string>& overrides, ImportResult& out) {
  for (const std::string& arg : overrides) {
    if (!arg.empty() && arg[0] == '~') {
      const std::string path = arg.substr(1, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 1);
      if (path.find("_component_") != std::string::npos) {
        out.issues.push_back(issue(arg, "removing components from the command line is not supported"));
        continue;
      }
      std::string last;
      json* parent = parent_of(tree, path, false, last);
      if (!parent || !parent->contains(last))
        out.issues.push_back(issue(arg, "could not find key " + path + " in the config to remove"));
      else
        parent->erase(last), out.read.push_back("override " + arg + ": removed " + path);
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || arg.find('=', eq + 1) != std::string::npos || eq == 0) {
      out.issues.push_back(issue(arg.empty() ? std::string("override") : arg,
                                 "command-line overrides must be in the form key=value"));
      continue;
    }
    std::string key = arg.substr(0, eq);
    const std::string text = arg.substr(eq + 1);
    std::string problem;
    std::optional<json> value = override_value(text, problem);
    if (!value) {
      out.issues.push_back(issue(key, problem));
      continue;
    }
    // A component's shorthand: model=torchtune.models.x sets model._component_.
    if (key.find('.') == std::string::npos && tree.contains(key) && has_component(tree[key]))
      key += "._component_";
    // The key must name something: a key of the file, a recipe key, or an argument of a
    // component the file has.
    const std::string top = key.substr(0, key.find('.'));
    const bool in_file = mapping::at(tree, key) != nullptr;
    const bool recipe_key = std::find(k_recipe_keys.begin(), k_recipe_keys.end(), top) != k_recipe_keys.end();
    if (!in_file && !recipe_key) {
      out.issues.push_back(issue(key, "the override names no key of the config or of torchtune's recipes"));
      continue;
    }
    std::string last;
    json* parent = parent_of(tree, key, true, last);
    if (!parent) {
      out.issues.push_back(issue(key, "the override names a key under a value that is not a mapping"));
      continue;
    }
    (*parent)[last] = *value;
    out.read.push_back("override " + key + " = " + show(*value));
  }
}

// The builder name of a _component_ path and what its prefix says.
struct BuilderRef {
  const Builder* builder = nullptr;
  bool lora = false;
  bool qlora = false;
};
BuilderRef find_builder(std::string_view component) {
  BuilderRef ref;
  std::string_view name = mapping::last_part(component, '.');
  if (name.rfind("qlora_", 0) == 0) {
    ref.qlora = ref.lora = true;
    name.remove_prefix(6);
  } else if (name.rfind("lora_", 0) == 0) {
    ref.lora = true;
    name.remove_prefix(5);
  }
  for (const Builder& b : k_builders)
    if (b.name == name) ref.builder = &b;
  return ref;
}

std::string builder_list() {
  std::string list;
  for (const Builder& b : k_builders) list += (list.empty() ? "" : ", ") + std::string(b.name);
  return list;
}

class TorchtuneReader : mapping::Reader {
 public:
  using Reader::Reader;
  void run();

 private:
  size_t version_ = k_current;
  int64_t layers_ = 0;
  int64_t gpus_ = 1;
  int64_t accumulation_ = 1;  // gradient_accumulation_steps (read_batch)

  bool newer_than_version(std::string_view what, std::string_view key) {
    for (const Since& s : k_since)
      if (s.what == what && s.version > version_) {
        m_.ignore_value(key, std::string(s.source) + "; the version chosen is torchtune " +
                                 std::string(k_versions[version_]));
        return true;
      }
    return false;
  }
  void read_version();
  void read_model();
  void read_precision();
  void read_batch();
  void read_memory_flags();
  void read_loss();
  void read_optimizer();
  void read_layout();
};

void TorchtuneReader::read_version() {
  if (!options_.version.empty()) {
    if (auto v = mapping::chosen_version(m_, options_.version, k_versions, "torchtune", "release")) version_ = *v;
    return;
  }
  // What the file shows: the newest feature it uses names the oldest release that can run it.
  size_t shown = 0;
  std::string evidence;
  for (const Since& s : k_since) {
    const json* v = mapping::at(m_.tree(), s.what);
    const json* loss = mapping::at(m_.tree(), "loss._component_");
    const bool uses = (v && !v->is_null() && !(v->is_boolean() && !v->get<bool>())) ||
                      (loss && loss->is_string() && loss->get<std::string>() == s.what);
    if (uses && s.version >= shown) {
      shown = s.version;
      evidence = std::string(s.what);
    }
  }
  version_ = k_current;
  out_.assumed.push_back("version ← torchtune " + std::string(k_versions[version_]) +
                         " (the current release" +
                         (evidence.empty() ? "" : "; the file uses " + evidence + ", torchtune " +
                                                      std::string(k_versions[shown]) + " or later") +
                         "; --version chooses another)");
}

void TorchtuneReader::read_model() {
  const std::optional<std::string> component = m_.string("model._component_");
  m_.touch("model");
  if (!component) {
    if (!m_.has("model._component_")) m_.fail("model._component_", "missing (the model builder, e.g. torchtune.models.llama3_2.lora_llama3_2_3b)");
    return;
  }
  const BuilderRef ref = find_builder(*component);
  if (!ref.builder) {
    m_.fail("model._component_", trainmem::quoted(*component) +
                                     " is not a builder trainmem has a preset for; known builders (also with lora_ and qlora_): " +
                                     builder_list());
    return;
  }
  if (!m_.model_from_preset(ref.builder->preset, "model._component_",
                            "model._component_ = " + trainmem::quoted(*component) + " (torchtune " +
                                std::string(ref.builder->source) + ")"))
    return;
  layers_ = mapping::preset_model(ref.builder->preset)->value("num_layers", int64_t(0));

  // torchtune's modules: SDPA attention without dropout (the builders pass attn_dropout=0.0) and
  // no dropout elsewhere.
  m_.assume(field::attention_backend, std::string("flash"), "torchtune's MultiHeadAttention calls scaled_dot_product_attention", "model._component_");
  m_.assume(field::attention_dropout, 0.0, "the builders pass attn_dropout=0.0", "model._component_");
  m_.assume(field::hidden_dropout, 0.0, "torchtune's decoder layers have no dropout", "model._component_");
  m_.put(field::model_implementation, std::string("torchtune"), "model._component_");

  const std::optional<bool> quantize = m_.boolean("model.quantize_base");
  const bool lora = ref.lora;
  const bool qlora = ref.qlora || quantize.value_or(false);
  if (!lora) {
    m_.assume(field::peft, std::string("none"), "a full fine-tuning builder: every weight trains", "model._component_");
    for (std::string_view k : {"model.lora_attn_modules", "model.lora_rank", "model.apply_lora_to_mlp"})
      if (m_.has(k)) m_.fail(k, "applies to lora_ and qlora_ builders only, got builder " + trainmem::quoted(*component));
    return;
  }
  if (qlora) {
    m_.read(field::peft, std::string("qlora"), ref.qlora ? "model._component_" : "model.quantize_base",
            ref.qlora ? "a qlora_ builder (partial(lora_..., quantize_base=True))" : "true");
    // [l32]: quantize_base quantizes "base model weights in linear layers that LoRA is applied to"
    // (to NF4, torchao); trainmem's params_dtype nf4 stores every frozen linear in NF4.
    m_.assume(field::params_dtype, std::string("nf4"), "quantize_base: NF4 base weights (torchao to_nf4)", "model._component_");
    out_.ignored.push_back(
        "model._component_: torchtune quantizes only the linears LoRA is applied to; trainmem's nf4 "
        "counts every frozen decoder linear in NF4");
    // torchao's NF4Tensor double-quantises its scalers always (torchao/dtypes/nf4tensor.py @
    // 0598012907d6f6e88734088a65f788c38d294a65, double_quantize_scalers).
    m_.assume(field::nf4_double_quant, true, "torchao's NF4Tensor always quantises its block scales again", "model._component_");
  } else {
    m_.read(field::peft, std::string("lora"), "model._component_", "a lora_ builder");
  }

  // Targets: lora_attn_modules (q_proj, k_proj, v_proj, output_proj), apply_lora_to_mlp (w1, w2,
  // w3: gate, down and up), apply_lora_to_output (the output projection) [l32].
  std::vector<std::string> targets;
  const json* attn = m_.get("model.lora_attn_modules");
  if (!attn) {
    m_.fail("model.lora_attn_modules", "missing (the lora_ builders require it: a list of q_proj, k_proj, v_proj, output_proj)");
    return;
  }
  if (!attn->is_array()) {
    m_.fail("model.lora_attn_modules", "must be a list of q_proj, k_proj, v_proj, output_proj, got " + show(*attn));
    return;
  }
  for (const json& item : *attn) {
    const std::string name = item.is_string() ? item.get<std::string>() : "";
    if (name == "q_proj" || name == "k_proj" || name == "v_proj") targets.push_back(name);
    else if (name == "output_proj") targets.push_back("o_proj");
    else return m_.fail("model.lora_attn_modules", show(item) + " is not one of q_proj, k_proj, v_proj, output_proj");
  }
  std::string how = "lora_attn_modules = " + show(*attn);
  if (m_.boolean("model.apply_lora_to_mlp").value_or(false)) {
    for (const char* t : {"gate_proj", "up_proj", "down_proj"}) targets.push_back(t);
    how += ", apply_lora_to_mlp = true (w1, w3, w2)";
  }
  const bool output_adapter = m_.boolean("model.apply_lora_to_output").value_or(false);
  if (output_adapter) {
    targets.push_back("lm_head");
    how += ", apply_lora_to_output = true";
  }
  // The output projection is a LoRALinear(quantize_base=quantize_base) only with
  // apply_lora_to_output, else a plain nn.Linear in the model's dtype
  // (torchtune/models/llama3/_component_builders.py @ d1c6963e9070adbbf0602c7632c4a40de82a03d2, lora_llama3).
  if (qlora)
    m_.assume(field::quantize_lm_head, output_adapter,
              output_adapter ? "apply_lora_to_output with quantize_base: the output's base is NF4"
                             : "no apply_lora_to_output: the output is an nn.Linear, not quantised",
              "model.apply_lora_to_output");
  if (m_.put(field::lora_target_modules, targets, "model.lora_attn_modules"))
    out_.read.push_back("lora_target_modules ← " + how + ": " + mapping::value_text(targets));
  if (auto r = m_.integer("model.lora_rank")) m_.read(field::lora_rank, double(*r), "model.lora_rank");
  else if (!m_.has("model.lora_rank")) m_.assume(field::lora_rank, 8.0, "no model.lora_rank: the builders' default 8", "model.lora_rank");
  if (auto d = m_.number("model.lora_dropout", 0, 1)) m_.read(field::lora_dropout, *d, "model.lora_dropout");
  else if (!m_.has("model.lora_dropout")) m_.assume(field::lora_dropout, 0.0, "no model.lora_dropout: the builders' default 0.0", "model.lora_dropout");
  if (m_.boolean("model.use_dora").value_or(false))
    out_.ignored.push_back("model.use_dora = true: DoRA's magnitude vectors (one per output feature of each adapted linear) are not modelled");
}

void TorchtuneReader::read_precision() {
  // [dist]: "When dtype=bf16, all activations, gradients and optimizer states are in bfloat16";
  // fp16 is refused. training.get_dtype(None) is fp32.
  std::string dtype = "fp32";
  const std::optional<std::string> given = m_.string("dtype");
  if (given) dtype = *given;
  if (dtype == "fp16") return m_.fail("dtype", "\"fp16\" is refused by torchtune's recipes (full fp16 training is not supported); use bf16 or fp32");
  if (dtype != "bf16" && dtype != "fp32") return m_.fail("dtype", "must be \"bf16\" or \"fp32\", got " + trainmem::quoted(dtype));
  const std::string why = given ? "dtype = " + trainmem::quoted(dtype) + ": the model is built in it" : "no dtype: training.get_dtype's default fp32";
  const bool qlora = out_.input.params_dtype && *out_.input.params_dtype == Dtype::nf4;
  if (!qlora) m_.assume(field::params_dtype, dtype, why, "dtype");
  m_.assume(field::compute_dtype, dtype, why, "dtype");
  m_.assume(field::master_weights, false, why + ", no fp32 master copy", "dtype");
  for (FieldName f : {field::main_grads_dtype, field::exp_avg_dtype, field::exp_avg_sq_dtype}) m_.assume(f, dtype, why, "dtype");
}

void TorchtuneReader::read_batch() {
  const std::optional<int64_t> batch = m_.integer("batch_size");
  if (batch) m_.read(field::micro_batch_size, double(*batch), "batch_size");
  else if (!m_.has("batch_size")) m_.fail("batch_size", "missing (torchtune's recipes read cfg.batch_size)");
  // The recipe's knob is the accumulation: each rank runs gradient_accumulation_steps batches of
  // batch_size per optimizer step, however many ranks there are ("Total Batch Size = batch_size *
  // number of GPUs * gradient accumulation steps", recipes/full_finetune_distributed.py's docstring
  // @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1; self._gradient_accumulation_steps =
  // cfg.gradient_accumulation_steps). So the microbatch count is what the file fixes; the global
  // batch follows from it and the GPU count, in trainmem as in torchtune.
  accumulation_ = mapping::read_accumulation(m_, "no gradient_accumulation_steps: one batch per optimizer step").value_or(1);

  // Sequence length: a packed dataset fills max_seq_len exactly; otherwise batches are padded to
  // their longest sample, at most max_seq_len.
  bool packed = false;
  const json* dataset = m_.get("dataset");
  m_.touch("dataset");
  if (dataset) {
    const auto packed_of = [&](const json& d) {
      auto it = d.is_object() ? d.find("packed") : d.end();
      return it != d.end() && it->is_boolean() && it->get<bool>();
    };
    if (dataset->is_array())
      for (const json& d : *dataset) packed = packed || packed_of(d);
    else
      packed = packed_of(*dataset);
  }
  m_.touch("tokenizer");
  const json* max_len = m_.get("tokenizer.max_seq_len");
  const std::optional<int64_t> length = max_len ? mapping::whole_number(*max_len, 1) : std::nullopt;
  if (max_len && !length)
    return m_.fail("tokenizer.max_seq_len", "must be a positive integer or null, got " + show(*max_len));
  if (packed && !length)
    return m_.fail("tokenizer.max_seq_len", "must be set with dataset.packed = true (PackedDataset packs to max_seq_len)");
  if (packed) {
    m_.read(field::seq_length, double(*length), "tokenizer.max_seq_len",
            number_text(double(*length)) + " (dataset.packed = true: every sample is packed to it)");
  } else if (length) {
    m_.assume(field::seq_length, double(*length),
              "tokenizer.max_seq_len: unpacked batches are padded to their longest sample, at most this", "tokenizer.max_seq_len");
  } else {
    out_.ignored.push_back("tokenizer.max_seq_len = null, dataset.packed = false: the sequence length "
                           "follows the data (batches padded to their longest sample); give seq_length "
                           "with --base, or override tokenizer.max_seq_len");
    out_.open_fields.push_back(issue("seq_length", "the recipe's tokenizer.max_seq_len is null and dataset.packed is false, "
                                     "so batches are padded to their longest sample: give that length"));
  }
}

void TorchtuneReader::read_memory_flags() {
  const bool checkpointing = m_.boolean("enable_activation_checkpointing").value_or(false);
  const std::optional<std::string> ac_mode = m_.has("ac_mode") ? m_.string("ac_mode") : std::nullopt;
  if (ac_mode && *ac_mode == "selective") {
    // training.apply_selective_activation_checkpointing: ac_option k checkpoints every k-th layer;
    // "op" applies torchtitan's per-op policy.
    const json* option = m_.get("ac_option");
    const std::optional<int64_t> every = option ? mapping::whole_number(*option, 1) : std::nullopt;
    if (option && option->is_string() && option->get<std::string>() == "op") {
      m_.read(field::recompute_granularity, std::string("selective_op"), "ac_mode", "\"selective\", ac_option = \"op\"");
    } else if (every && layers_ > 0 && layers_ / *every == 0) {
      m_.read(field::recompute_granularity, std::string("none"), "ac_mode",
              "\"selective\", ac_option = " + number_text(double(*every)) + " (more than the model's " + number_text(double(layers_)) +
                  " layers: none is checkpointed)");
    } else if (every && layers_ > 0) {
      m_.read(field::recompute_granularity, std::string("full"), "ac_mode", "\"selective\", ac_option = " + number_text(double(*every)));
      m_.assume(field::recompute_method, std::string("block"), "every " + number_text(double(*every)) + "-th layer is checkpointed", "ac_option");
      m_.assume(field::recompute_num_layers, double(layers_ / *every), "floor(num_layers / ac_option) layers checkpointed", "ac_option");
    } else {
      m_.fail("ac_option", "must be a positive integer or \"op\" with ac_mode \"selective\"");
    }
  } else if (checkpointing) {
    // training.set_activation_checkpointing wraps every TransformerSelfAttentionLayer.
    m_.full_recompute_per_layer("enable_activation_checkpointing", "true", "decoder layer");
  } else {
    m_.assume(field::recompute_granularity, std::string("none"),
              m_.has("enable_activation_checkpointing") ? "enable_activation_checkpointing = false" : "no enable_activation_checkpointing: the recipes' default false",
              "enable_activation_checkpointing");
  }

  if (m_.has("enable_activation_offloading") && newer_than_version("enable_activation_offloading", "enable_activation_offloading")) {
  } else if (auto offload = m_.boolean("enable_activation_offloading")) {
    if (*offload && gpus_ > 1 && !checkpointing)
      m_.fail("enable_activation_offloading", "needs enable_activation_checkpointing (full_finetune_distributed raises otherwise)");
    m_.read(field::activation_offload, *offload, "enable_activation_offloading");
  }

  const std::optional<bool> in_bwd = m_.boolean("optimizer_in_bwd");
  if (in_bwd) {
    if (*in_bwd && accumulation_ > 1)
      m_.fail("optimizer_in_bwd", "does not work with gradient_accumulation_steps above 1 (torchtune raises: \"Gradient accumulation is not supported with optimizer in bwd\")");
    const json* clip = mapping::at(m_.tree(), "clip_grad_norm");
    if (*in_bwd && clip && !clip->is_null())
      m_.fail("optimizer_in_bwd", "does not work with clip_grad_norm (torchtune raises: \"Gradient clipping is not supported with optimizer in bwd\")");
    m_.read(field::optimizer_in_backward, *in_bwd, "optimizer_in_bwd");
  }

  // compile: a bool, or {model, loss, optimizer_step, scale_grads} [dist].
  if (const json* compile = m_.get("compile")) {
    bool on = false;
    if (compile->is_object())
      on = m_.boolean("compile.model").value_or(true) || m_.boolean("compile.loss").value_or(true);
    else if (auto flag = m_.boolean("compile"))
      on = *flag;
    m_.put(field::torch_compile, on, "compile");
    if (find_field("torch_compile")) out_.read.push_back(std::string("torch_compile ← compile = ") + (on ? "true" : "false"));
  }

  if (auto offload = m_.boolean("fsdp_cpu_offload"); offload && *offload) {
    // FSDP2's CPUOffloadPolicy: sharded parameters, gradients and optimizer states live on the CPU
    // and the optimizer steps there.
    if (gpus_ == 1) {
      m_.ignore_value("fsdp_cpu_offload", "a single-device run has no FSDP (give --gpus for full_finetune_distributed)");
    } else {
      m_.read(field::offload_params, true, "fsdp_cpu_offload", "true (CPUOffloadPolicy)");
      m_.assume(field::optimizer_offload_fraction, 1.0, "fsdp_cpu_offload: the optimizer states and step are on the CPU", "fsdp_cpu_offload");
    }
  }
  // custom_sharded_layers: shard_model fully_shards each named module on its own. trainmem
  // counts the pair the recipes name (tok_embeddings and output: fsdp_embedding_units).
  if (const json* layers = m_.get("custom_sharded_layers")) {
    bool embedding = false, output = false, other = false;
    if (layers->is_array())
      for (const json& name : *layers) {
        if (name == "tok_embeddings") embedding = true;
        else if (name == "output") output = true;
        else other = true;
      }
    if (gpus_ == 1)
      m_.ignore_value("custom_sharded_layers", "a single-device run has no FSDP units");
    else if (embedding && output && !other)
      m_.read(field::fsdp_embedding_units, true, "custom_sharded_layers", "['tok_embeddings', 'output']");
    else if (layers->is_array() && layers->empty())
      m_.read(field::fsdp_embedding_units, false, "custom_sharded_layers", "[]");
    else
      m_.ignore_value("custom_sharded_layers", "trainmem models the pair ['tok_embeddings', 'output'] "
                                               "(fsdp_embedding_units); other lists are not modelled");
  }
  if (m_.boolean("enable_fp8_training").value_or(false)) {
    const std::string recipe = m_.string("fp8_recipe_name").value_or("tensorwise");
    if (recipe != "tensorwise")
      out_.assumed.push_back("fp8_recipe ← \"tensorwise\" (fp8_recipe_name " + trainmem::quoted(recipe) +
                             ": trainmem has no rowwise recipe; torchao keeps the same tensors)");
    m_.read(field::fp8_recipe, std::string("tensorwise"), "enable_fp8_training", "true");
  }
  if (m_.boolean("resize_token_embeddings").value_or(false))
    m_.ignore_value("resize_token_embeddings", "the vocabulary becomes the tokenizer's: the preset's vocab_size is kept");
}

void TorchtuneReader::read_loss() {
  const std::optional<std::string> loss = m_.string("loss._component_");
  m_.touch("loss");
  if (!loss) return;
  const std::string name(mapping::last_part(*loss, '.'));
  if (name == "CEWithChunkedOutputLoss" || name == "LinearCrossEntropyLoss") {
    if (name == "LinearCrossEntropyLoss" && newer_than_version(*loss, "loss._component_")) return;
    int64_t chunks = 8;  // both classes' num_output_chunks default
    if (auto c = m_.integer("loss.num_output_chunks")) chunks = *c;
    m_.read(field::cross_entropy_chunks, double(chunks), "loss._component_",
            trainmem::quoted(*loss) + (m_.has("loss.num_output_chunks") ? "" : " (num_output_chunks default 8)"));
    if (name == "LinearCrossEntropyLoss")
      out_.ignored.push_back("loss._component_ = LinearCrossEntropyLoss: it also computes the output "
                             "projection chunk by chunk (no whole bf16 logits); trainmem counts the "
                             "bf16 logits whole and chunks only their fp32 copy");
  } else if (name == "CrossEntropyLoss") {
    m_.read(field::cross_entropy_chunks, 1.0, "loss._component_", trainmem::quoted(*loss));
  } else {
    m_.ignore_value("loss._component_", "not a loss trainmem knows: the unchunked cross entropy is counted");
  }
}

void TorchtuneReader::read_optimizer() {
  const std::optional<std::string> component = m_.string("optimizer._component_");
  m_.touch("optimizer");
  if (!component) return;
  struct Known {
    std::string_view path;
    std::string_view optimizer;
    bool paged;
    bool torch;  // a torch.optim class: fused / foreach apply
  };
  // torch.optim classes; bitsandbytes.optim (PagedAdamW8bit: 8-bit states in paged memory);
  // torchao's low-bit optimizers (torchao/optim, formerly torchao/prototype/low_bit_optim).
  static const std::vector<Known> known = {
      {"torch.optim.AdamW", "adamw", false, true},
      {"torch.optim.Adam", "adam", false, true},
      {"torch.optim.SGD", "sgd", false, true},
      {"bitsandbytes.optim.PagedAdamW8bit", "adam8bit", true, false},
      {"bitsandbytes.optim.PagedAdam8bit", "adam8bit", true, false},
      {"bitsandbytes.optim.AdamW8bit", "adam8bit", false, false},
      {"bitsandbytes.optim.Adam8bit", "adam8bit", false, false},
      {"bitsandbytes.optim.PagedAdamW", "adamw", true, false},
      {"bitsandbytes.optim.PagedAdamW32bit", "adamw", true, false},
      {"bitsandbytes.optim.PagedAdam", "adam", true, false},
      {"bitsandbytes.optim.PagedLion", "lion", true, false},
      {"bitsandbytes.optim.Lion", "lion", false, false},
      {"torchao.prototype.low_bit_optim.AdamW8bit", "adam8bit", false, false},
      {"torchao.optim.AdamW8bit", "adam8bit", false, false},
  };
  const auto it = std::find_if(known.begin(), known.end(), [&](const Known& k) { return k.path == *component; });
  if (it == known.end()) {
    mapping::unknown_optimizer(m_, "optimizer._component_");
    return;
  }
  m_.read(field::optimizer, std::string(it->optimizer), "optimizer._component_", trainmem::quoted(*component));
  m_.read(field::paged_optimizer, it->paged, "optimizer._component_", it->paged ? "a bitsandbytes Paged optimizer" : trainmem::quoted(*component));
  if (it->torch) {
    // torch.optim: fused=True steps in one fused kernel; foreach=False one parameter at a time;
    // otherwise PyTorch picks foreach on CUDA (torch/optim/optimizer.py _default_to_fused_or_foreach).
    const std::optional<bool> fused = m_.boolean("optimizer.fused");
    const std::optional<bool> foreach = m_.boolean("optimizer.foreach");
    if (fused && *fused) m_.read(field::optimizer_implementation, std::string("fused"), "optimizer.fused", "true");
    else if (foreach && !*foreach) m_.read(field::optimizer_implementation, std::string("for-loop"), "optimizer.foreach", "false");
    else m_.assume(field::optimizer_implementation, std::string("foreach"), "torch.optim's default on CUDA", "optimizer._component_");
    if (it->optimizer == std::string_view("sgd"))
      if (auto momentum = m_.number("optimizer.momentum", 0, 1)) m_.read(field::momentum, *momentum, "optimizer.momentum");
  }
}

void TorchtuneReader::read_layout() {
  // --gpus is torchrun's world size: 1 is the single-device recipes (a plain module), more the
  // distributed ones (FSDP2 fully_shard on every layer and the root).
  gpus_ = options_.gpus > 0 ? options_.gpus : 1;
  if (options_.gpus <= 0) out_.assumed.push_back("gpus ← 1 (no --gpus: a single-device recipe)");
  if (gpus_ == 1) {
    m_.assume(field::framework, std::string("ddp"), "one device: a plain PyTorch module (single-device recipe)", "--gpus");
    m_.assume(field::data_parallel_size, 1.0, "one device", "--gpus");
    for (const char* k : {"tensor_parallel_dim", "context_parallel_dim", "fsdp_reshard_after_forward",
                          "data_parallel_shard_dim", "data_parallel_replicate_dim"})
      if (m_.has(k)) m_.ignore_value(k, "a single-device run has no mesh");
    return;
  }
  m_.assume(field::framework, std::string("fsdp2"), "--gpus " + number_text(double(gpus_)) + ": the distributed recipes shard with FSDP2", "--gpus");
  int64_t tp = 1, cp = 1, replicate = 1;
  if (m_.has("tensor_parallel_dim") && !newer_than_version("tensor_parallel_dim", "tensor_parallel_dim"))
    if (auto v = m_.integer("tensor_parallel_dim")) tp = *v;
  if (auto v = m_.integer("context_parallel_dim")) cp = *v;
  if (auto v = m_.integer("data_parallel_replicate_dim")) replicate = *v;
  int64_t shard = m_.integer("data_parallel_shard_dim", mapping::k_fill).value_or(mapping::k_fill);
  const std::optional<int64_t> rest = m_.product("tensor_parallel_dim", "tensor_parallel_dim × context_parallel_dim × data_parallel_replicate_dim", {tp, cp, replicate});
  if (!rest) return;
  if (shard == mapping::k_fill) {
    if (gpus_ % *rest != 0)
      return m_.fail("--gpus", number_text(double(gpus_)) + " is not divisible by tensor_parallel_dim × context_parallel_dim × data_parallel_replicate_dim = " + number_text(double(*rest)));
    shard = gpus_ / *rest;
  } else if (const std::optional<int64_t> all = checked_mul(shard, *rest); all != gpus_) {
    return m_.fail("data_parallel_shard_dim", "× the other dims (" + (all ? number_text(double(*all)) : std::string("over 2^63")) +
                                                  ") must equal --gpus " + number_text(double(gpus_)));
  }
  if (tp > 1) {
    m_.read(field::tensor_model_parallel_size, double(tp), "tensor_parallel_dim");
    m_.assume(field::sequence_parallel, true, "torchtune's tensor-parallel plans shard the norms' sequence (SequenceParallel)", "tensor_parallel_dim");
  }
  if (cp > 1) m_.read(field::context_parallel_size, double(cp), "context_parallel_dim");
  if (m_.put(field::data_parallel_size, double(shard * replicate), "--gpus"))
    out_.read.push_back("data_parallel_size ← data_parallel_shard_dim × data_parallel_replicate_dim = " +
                        number_text(double(shard)) + " × " + number_text(double(replicate)) +
                        (m_.has("data_parallel_shard_dim") ? "" : " (shard -1: fills --gpus)"));
  if (replicate > 1) m_.read(field::data_parallel_shard_size, double(shard), "data_parallel_shard_dim", number_text(double(shard)));
  const std::optional<bool> reshard = m_.boolean("fsdp_reshard_after_forward");
  if (reshard && !*reshard) m_.read(field::zero_stage, 2.0, "fsdp_reshard_after_forward", "false (weights stay gathered from forward to backward)");
  else m_.assume(field::zero_stage, 3.0, reshard ? "fsdp_reshard_after_forward = true" : "fsdp_reshard_after_forward's default true", "fsdp_reshard_after_forward");
}

void TorchtuneReader::run() {
  read_version();
  read_layout();
  read_model();
  read_precision();
  read_batch();
  read_memory_flags();
  read_loss();
  read_optimizer();
  if (out_.ok()) m_.account(k_no_memory);
}

}  // namespace

ImportResult import_torchtune(std::string_view tree_json, const ImportOptions& options) {
  return mapping::import_tree(tree_json, "RECIPE.yaml", mapping::requires_key("model._component_", "a torchtune recipe config"),
                              [&](json& tree, ImportResult& out) {
                                apply_overrides(tree, options.overrides, out);
                                if (out.ok()) TorchtuneReader(tree, options, out).run();
                              });
}

std::vector<std::string_view> torchtune_versions() { return k_versions; }

}  // namespace trainmem
