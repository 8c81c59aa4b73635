// Hugging Face config.json -> trainmem model fields.
//
// Each supported model_type is one row of a table (model_types() below) that records what its
// transformers configuration class and modeling file fix: the defaults of keys a config.json may
// omit, whether the MLP is gated, the norm, and the biases and q/k norms the modeling code always
// builds. Sources (huggingface/transformers, src/transformers/models/<type>/): the
// configuration_<type>.py defaults and the modeling_<type>.py layer definitions cited per row.
#include <algorithm>
#include <cmath>
#include <span>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "mapping.hpp"
#include "trainmem/export.hpp"
#include "trainmem/import.hpp"

namespace trainmem {
namespace {

using json = nlohmann::json;

enum class MoeKind : uint8_t {
  none,
  local_experts,  // mixtral, gpt_oss: num_local_experts, every layer, experts of intermediate_size
  qwen,           // qwen2_moe, qwen3_moe: num_experts, decoder_sparse_step, mlp_only_layers
  deepseek,       // deepseek_v2/v3: n_routed_experts, n_shared_experts, first_k_dense_replace
};

struct ModelType {
  std::string_view name;
  std::string_view source;       // the transformers class whose defaults and layers are used
  bool gated;                    // gate_proj, up_proj, down_proj (3 matrices) vs fc1/fc2 (2)
  Normalization norm;
  std::string_view act_default;  // the config class's default activation
  bool tie_default;              // tie_word_embeddings default of the config class
  int64_t kv_heads_default;      // num_key_value_heads default; 0: num_attention_heads (MHA)
  int64_t head_dim_default;      // head_dim default; 0: hidden_size / num_attention_heads
  int64_t vocab_default;         // vocab_size used when absent; 0: the key is required
  bool qkv_bias;                 // q/k/v projections always have biases (no attention_bias key)
  bool all_bias;                 // every linear layer has a bias
  bool qk_norm;                  // a norm on queries and keys is always built
  MoeKind moe;
  bool mla;                      // DeepSeek multi-latent attention
  bool gpt2_names;               // n_layer, n_embd, n_head, n_inner, n_positions
};

constexpr Normalization rms = Normalization::rms_norm;
constexpr Normalization ln = Normalization::layer_norm;

const std::vector<ModelType>& model_types() {
  // Defaults are the __init__ defaults of each configuration class; gated/norm/bias/qk-norm
  // facts are the modules each modeling file builds (LlamaMLP gate/up/down, GPT2MLP c_fc/c_proj,
  // Qwen2Attention q/k/v bias=True, Qwen3Attention q_norm/k_norm, ...).
  // clang-format off
  static const std::vector<ModelType> table = {
      // name       source              gated  norm act default          tie    kv  head vocab   qkv_bias all_bias qk_norm moe                 mla    gpt2_names
      {"llama",       "LlamaConfig",      true,  rms, "silu",              false, 0,  0,   0,      false, false, false, MoeKind::none,          false, false},
      {"mistral",     "MistralConfig",    true,  rms, "silu",              false, 8,  0,   0,      false, false, false, MoeKind::none,          false, false},
      {"mixtral",     "MixtralConfig",    true,  rms, "silu",              false, 8,  0,   0,      false, false, false, MoeKind::local_experts, false, false},
      {"qwen2",       "Qwen2Config",      true,  rms, "silu",              false, 32, 0,   0,      true,  false, false, MoeKind::none,          false, false},
      {"qwen2_moe",   "Qwen2MoeConfig",   true,  rms, "silu",              false, 16, 0,   0,      true,  false, false, MoeKind::qwen,          false, false},
      {"qwen3",       "Qwen3Config",      true,  rms, "silu",              false, 32, 128, 0,      false, false, true,  MoeKind::none,          false, false},
      {"qwen3_moe",   "Qwen3MoeConfig",   true,  rms, "silu",              false, 4,  0,   0,      false, false, true,  MoeKind::qwen,          false, false},
      {"deepseek_v2", "DeepseekV2Config", true,  rms, "silu",              false, 0,  0,   0,      false, false, false, MoeKind::deepseek,      true,  false},
      {"deepseek_v3", "DeepseekV3Config", true,  rms, "silu",              false, 0,  0,   0,      false, false, false, MoeKind::deepseek,      true,  false},
      {"gemma",       "GemmaConfig",      true,  rms, "gelu_pytorch_tanh", true,  16, 256, 0,      false, false, false, MoeKind::none,          false, false},
      {"gemma2",      "Gemma2Config",     true,  rms, "gelu_pytorch_tanh", true,  4,  256, 0,      false, false, false, MoeKind::none,          false, false},
      {"gemma3_text", "Gemma3TextConfig", true,  rms, "gelu_pytorch_tanh", true,  4,  256, 262208, false, false, true,  MoeKind::none,          false, false},
      {"phi3",        "Phi3Config",       true,  rms, "silu",              false, 0,  0,   0,      false, false, false, MoeKind::none,          false, false},
      {"gpt_oss",     "GptOssConfig",     true,  rms, "silu",              false, 8,  64,  0,      false, true,  false, MoeKind::local_experts, false, false},
      {"olmo2",       "Olmo2Config",      true,  rms, "silu",              false, 0,  0,   0,      false, false, true,  MoeKind::none,          false, false},
      {"gpt2",        "GPT2Config",       false, ln,  "gelu_new",          true,  0,  0,   0,      false, true,  false, MoeKind::none,          false, true},
      {"gpt_neox",    "GPTNeoXConfig",    false, ln,  "gelu",              false, 0,  0,   0,      false, true,  false, MoeKind::none,          false, false},
      {"nemotron",    "NemotronConfig",   false, ln,  "relu2",             false, 0,  0,   0,      false, false, false, MoeKind::none,          false, false},
  };
  // clang-format on
  return table;
}

// Multimodal wrappers whose text decoder is a supported type: the text_config's model_type when
// it names one, else this default (Gemma3Config.sub_configs: text_config is Gemma3TextConfig).
struct Wrapper {
  std::string_view name;
  std::string_view text_type;
};
constexpr Wrapper k_wrappers[] = {{"gemma3", "gemma3_text"}};

const ModelType* find_type(std::string_view name) {
  for (const ModelType& t : model_types())
    if (t.name == name) return &t;
  return nullptr;
}

// HF activation names (transformers/activations.py ACT2CLS) -> trainmem's activation family.
constexpr std::pair<std::string_view, ActivationFunc> k_activations[] = {
    {"silu", ActivationFunc::silu},
    {"swish", ActivationFunc::silu},
    {"gelu", ActivationFunc::gelu},
    {"gelu_new", ActivationFunc::gelu},
    {"gelu_pytorch_tanh", ActivationFunc::gelu},
    {"gelu_fast", ActivationFunc::gelu},
    {"gelu_python", ActivationFunc::gelu},
    {"gelu_accurate", ActivationFunc::gelu},
    {"quick_gelu", ActivationFunc::gelu},
    {"relu", ActivationFunc::relu},
    {"relu2", ActivationFunc::squared_relu},
};

std::optional<ActivationFunc> activation_of(std::string_view name) {
  for (const auto& [n, a] : k_activations)
    if (n == name) return a;
  return std::nullopt;
}

// Messages call trainmem::quoted by its full name: nlohmann/json.hpp brings in std::quoted, which
// argument-dependent lookup would prefer for a std::string.
std::string show(const json& v) {
  if (v.is_string()) return trainmem::quoted(v.get<std::string>());
  if (v.is_number()) return number_text(v.get<double>());
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return v.dump();
}

// Names as a message lists what is supported: "llama, mistral, ...".
std::string comma_list(std::span<const std::string_view> names) {
  std::string list;
  for (std::string_view name : names) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

std::string supported_model_types() { return comma_list(hf_model_types()); }

std::string supported_activations() {
  std::vector<std::string_view> names;
  for (const auto& activation : k_activations) names.push_back(activation.first);
  return comma_list(names);
}

// Reads one config.json object for one model type and fills an ImportResult.
class HfReader {
 public:
  HfReader(const json& cfg, const ModelType& type, ImportResult& out)
      : cfg_(cfg), type_(type), out_(out) {}

  void run();

 private:
  const json& cfg_;
  const ModelType& type_;
  ImportResult& out_;

  // The value of `key`, or nullptr when absent or null (HF treats null as "use the default").
  const json* find(std::string_view key) const {
    auto it = cfg_.find(std::string(key));
    if (it == cfg_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void fail(std::string_view key, const std::string& rule) {
    out_.issues.push_back(issue(key, rule));
  }
  void missing(std::string_view key) {
    fail(key, "missing from config.json (model_type " + std::string(type_.name) + " needs it)");
  }

  // An integer at least `min`; an issue (and nullopt) when it is of the wrong type or range.
  std::optional<int64_t> integer(std::string_view key, bool required, int64_t min = 1) {
    const json* v = find(key);
    if (!v) {
      if (required) missing(key);
      return std::nullopt;
    }
    const std::optional<int64_t> n = mapping::whole_number(*v, min);
    if (!n) fail(key, "must be " + mapping::integer_kind(min) + ", got " + show(*v));
    return n;
  }
  std::optional<bool> boolean(std::string_view key) {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) {
      fail(key, "must be true or false, got " + show(*v));
      return std::nullopt;
    }
    return v->get<bool>();
  }

  // Sets a trainmem field; a value the field rejects is reported against the HF key.
  bool put(FieldName field, const FieldValue& value, std::string_view key) {
    if (auto problem = set_field(out_.input, field, value)) {
      const std::string rule(rule_of(*problem));
      fail(key, rule);
      return false;
    }
    return true;
  }
  void put_int(FieldName field, int64_t value, std::string_view key) {
    if (!put(field, double(value), key)) return;
    out_.read.push_back(std::string(field) + " ← " + std::string(key) + " = " + number_text(double(value)));
    mapping::note_key(out_, field, key);
  }
  // A class default: "vocab_size ← 262208 (no vocab_size: Gemma3TextConfig default)".
  void assume_default(FieldName field, int64_t value, std::string_view key) {
    if (put(field, double(value), key))
      out_.assumed.push_back(std::string(field) + " ← " + number_text(double(value)) + " (no " +
                             std::string(key) + ": " + std::string(type_.source) + " default)");
  }
  // A derived value: "kv_channels ← hidden_size / num_attention_heads = 128 (no head_dim)".
  void assume_formula(FieldName field, int64_t value, std::string_view key,
                      const std::string& formula) {
    if (put(field, double(value), key))
      out_.assumed.push_back(std::string(field) + " ← " + formula + " = " +
                             number_text(double(value)) + " (no " + std::string(key) + ")");
  }
  void ignore(std::string_view key, const std::string& why) {
    const json* v = find(key);
    out_.ignored.push_back(std::string(key) +
                           (v && !v->is_object() && !v->is_array() ? " = " + show(*v) : "") + ": " +
                           why);
  }

  std::string key(std::string_view usual, std::string_view gpt2) const {
    return std::string(type_.gpt2_names ? gpt2 : usual);
  }

  void read_shape(int64_t& layers, int64_t& hidden, int64_t& heads);
  void read_attention(int64_t hidden, int64_t heads);
  void read_mlp(int64_t hidden);
  void read_moe(int64_t layers);
  void read_mla();
  void read_embeddings();
  void read_unmodelled();
  void set_layer_pattern(const std::vector<uint8_t>& pattern, const std::string& how);
};

void HfReader::read_shape(int64_t& layers, int64_t& hidden, int64_t& heads) {
  const std::string k_layers = key("num_hidden_layers", "n_layer");
  const std::string k_hidden = key("hidden_size", "n_embd");
  const std::string k_heads = key("num_attention_heads", "n_head");
  if (auto v = integer(k_layers, true)) put_int(field::num_layers, layers = *v, k_layers);
  if (auto v = integer(k_hidden, true)) put_int(field::hidden_size, hidden = *v, k_hidden);
  if (auto v = integer(k_heads, true)) put_int(field::num_attention_heads, heads = *v, k_heads);
}

void HfReader::read_attention(int64_t hidden, int64_t heads) {
  // Query groups: num_key_value_heads, else the class default (LlamaConfig and others: None ->
  // num_attention_heads; MistralConfig 8, Qwen2Config 32, ...). GPT-2 and GPT-NeoX are MHA.
  if (type_.gpt2_names || type_.name == "gpt_neox") {
    if (heads > 0 && put(field::num_query_groups, double(heads), "num_attention_heads"))
      out_.assumed.push_back(
          "num_query_groups ← num_attention_heads = " + number_text(double(heads)) +
          " (model_type " + std::string(type_.name) + " has multi-head attention)");
  } else if (auto v = integer("num_key_value_heads", false)) {
    put_int(field::num_query_groups, *v, "num_key_value_heads");
  } else if (!find("num_key_value_heads")) {
    if (type_.kv_heads_default > 0)
      assume_default(field::num_query_groups, type_.kv_heads_default, "num_key_value_heads");
    else if (heads > 0)
      assume_formula(field::num_query_groups, heads, "num_key_value_heads", "num_attention_heads");
  }

  // Head size: head_dim (NeMo-converted Nemotron configs write kv_channels), else the class
  // default, else hidden_size / num_attention_heads as every modeling file computes it.
  if (!type_.mla) {  // read_mla sets kv_channels for MLA
    std::string_view head_key = "head_dim";
    std::optional<int64_t> head_dim = integer("head_dim", false);
    if (!head_dim && !find("head_dim") && type_.name == "nemotron" && find("kv_channels")) {
      head_key = "kv_channels";
      head_dim = integer("kv_channels", false);
    }
    if (head_dim) {
      put_int(field::kv_channels, *head_dim, head_key);
    } else if (find(head_key)) {
      // wrong type: already reported
    } else if (type_.head_dim_default > 0) {
      assume_default(field::kv_channels, type_.head_dim_default, "head_dim");
    } else if (hidden > 0 && heads > 0) {
      if (hidden % heads != 0)
        fail("head_dim", "missing from config.json, and hidden_size (" + number_text(double(hidden)) +
                             ") is not divisible by num_attention_heads (" +
                             number_text(double(heads)) + ")");
      else
        assume_formula(field::kv_channels, hidden / heads, "head_dim",
                       "hidden_size / num_attention_heads");
    }
  }

  // Biases. GPT-2, GPT-NeoX and GPT-OSS put a bias on every linear layer (GPT2Attention c_attn,
  // GPTNeoXAttention query_key_value, GptOssAttention attention_bias=True, GptOssExperts
  // gate_up_proj_bias, GptOssTopKRouter bias). Qwen2/Qwen2-MoE: q/k/v only (Qwen2Attention).
  // Others: attention_bias (q, k, v, o) and mlp_bias, both False by default.
  if (type_.all_bias) {
    put(field::add_bias_linear, true, "attention_bias");
    out_.assumed.push_back("add_bias_linear ← true (model_type " + std::string(type_.name) +
                           ": every linear layer has a bias)");
  } else if (type_.qkv_bias) {
    put(field::add_bias_linear, false, "attention_bias");
    const bool qkv = boolean("qkv_bias").value_or(true);
    put(field::add_qkv_bias, qkv, "qkv_bias");
    if (find("qkv_bias"))
      out_.read.push_back(std::string("add_qkv_bias ← qkv_bias = ") + (qkv ? "true" : "false"));
    else
      out_.assumed.push_back("add_qkv_bias ← true (model_type " + std::string(type_.name) +
                             ": q, k and v projections have biases, o and the MLP none)");
  } else {
    const std::optional<bool> attention = boolean("attention_bias");
    const std::optional<bool> mlp = boolean("mlp_bias");
    const bool a = attention.value_or(false), m = mlp.value_or(false);
    put(field::add_bias_linear, a && m, "attention_bias");
    put(field::add_qkv_bias, a && !m, "attention_bias");
    if (a && m) {
      out_.read.push_back("add_bias_linear ← attention_bias = true, mlp_bias = true");
    } else if (a) {
      out_.read.push_back("add_qkv_bias ← attention_bias = true");
      ignore("attention_bias",
             "the o_proj bias (hidden_size per layer) is not modelled; "
             "add_qkv_bias counts q, k and v");
    } else {
      if (m) ignore("mlp_bias", "MLP biases without attention biases are not modelled");
      if (attention)
        out_.read.push_back("add_bias_linear ← attention_bias = false");
      else
        out_.assumed.push_back("add_bias_linear ← false (no attention_bias: " +
                               std::string(type_.source) + " default)");
    }
  }

  // Norms on queries and keys: Qwen3/Qwen3-MoE/Gemma 3 per head (q_norm, k_norm over head_dim),
  // OLMo 2 over the whole q and k projections (Olmo2Attention q_norm over heads·head_dim).
  if (type_.qk_norm) {
    put(field::qk_layernorm, true, "model_type");
    out_.assumed.push_back("qk_layernorm ← true (model_type " + std::string(type_.name) +
                           (type_.name == "olmo2"
                                ? ": q_norm and k_norm over the whole q and k projections, counted "
                                  "as per-head norms)"
                                : ": q_norm and k_norm on every head)"));
  } else {
    put(field::qk_layernorm, false, "model_type");
  }
}

void HfReader::read_mlp(int64_t hidden) {
  // Activation: GPT-2 names it activation_function; Gemma 2/3 hidden_activation; Gemma reads
  // hidden_activation before hidden_act (GemmaMLP); the rest hidden_act.
  std::string_view act_key = type_.gpt2_names ? "activation_function" : "hidden_act";
  if (type_.name == "gemma2" || type_.name == "gemma3_text")
    act_key = find("hidden_activation") || !find("hidden_act") ? "hidden_activation" : "hidden_act";
  else if (type_.name == "gemma" && find("hidden_activation"))
    act_key = "hidden_activation";
  std::string act_name(type_.act_default);
  const json* act = find(act_key);
  if (act && !act->is_string()) {
    fail(act_key, "must be the name of an activation, got " + show(*act));
    return;
  }
  if (act) act_name = act->get<std::string>();
  std::optional<ActivationFunc> func = activation_of(act_name);
  if (!func) {
    fail(act_key, trainmem::quoted(act_name) + " is not a supported activation (" +
                      supported_activations() + ")");
    return;
  }
  const std::string gated = type_.gated ? "true" : "false";
  put(field::gated_linear_unit, type_.gated, "model_type");
  out_.assumed.push_back(
      "gated_linear_unit ← " + gated + " (model_type " + std::string(type_.name) +
      (type_.gated ? ": gate_proj, up_proj and down_proj)" : ": two MLP matrices)"));
  if (type_.name == "gpt_oss") {
    // GptOssExperts: gate · sigmoid(1.702 · gate) · (up + 1), clamped at swiglu_limit: a gated
    // quick-GELU, which Megatron-Bridge's GPTOSSProvider models as quick_gelu (counted as gelu).
    put(field::activation_func, std::string("gelu"), act_key);
    out_.assumed.push_back(
        "activation_func ← \"gelu\" (model_type gpt_oss: the clamped gate is "
        "x·σ(1.702x), quick-GELU, as Megatron-Bridge's GPTOSSProvider; " +
        std::string(act_key) + " = " + trainmem::quoted(act_name) + " not used)");
  } else {
    put(field::activation_func, std::string(name_of(*func)), act_key);
    if (act) {
      out_.read.push_back("activation_func ← " + std::string(act_key) + " = " +
                          trainmem::quoted(act_name));
      mapping::note_key(out_, "activation_func", act_key);
    }
    else
      out_.assumed.push_back("activation_func ← " + trainmem::quoted(name_of(*func)) + " (no " +
                             std::string(act_key) + ": " + std::string(type_.source) + " default " +
                             trainmem::quoted(act_name) + ")");
  }

  put(field::normalization, std::string(name_of(type_.norm)), "model_type");
  out_.assumed.push_back(
      "normalization ← " + std::string(name_of(type_.norm)) + " (model_type " +
      std::string(type_.name) +
      (type_.name == "nemotron" ? ": LayerNorm1p, LayerNorm's parameters)" : ")"));

  // MLP width: intermediate_size (GPT-2: n_inner, None -> 4 · n_embd, GPT2MLP).
  if (type_.gpt2_names) {
    if (auto v = integer("n_inner", false))
      put_int(field::ffn_hidden_size, *v, "n_inner");
    else if (!find("n_inner") && hidden > 0)
      assume_formula(field::ffn_hidden_size, 4 * hidden, "n_inner", "4 × n_embd");
  } else if (auto v = integer("intermediate_size", true)) {
    put_int(field::ffn_hidden_size, *v, "intermediate_size");
  }
}

void HfReader::set_layer_pattern(const std::vector<uint8_t>& pattern, const std::string& how) {
  // Megatron's integer form (layer i is MoE iff i % n == 0) when it fits, else the 0/1 list.
  const size_t L = pattern.size();
  for (size_t n = 1; n <= L; ++n) {
    bool fits = true;
    for (size_t i = 0; i < L && fits; ++i) fits = (pattern[i] != 0) == (i % n == 0);
    if (fits) {
      put(field::moe_layer_freq, double(n), "moe_layer_freq");
      out_.read.push_back("moe_layer_freq ← " + how + ": " + number_text(double(n)) +
                          (n == 1 ? " (every layer)" : ""));
      return;
    }
  }
  put(field::moe_layer_freq, std::vector<double>(pattern.begin(), pattern.end()), "moe_layer_freq");
  out_.read.push_back("moe_layer_freq ← " + how + ": " + moe_layer_freq_expression(pattern));
}

void HfReader::read_moe(int64_t layers) {
  if (type_.moe == MoeKind::none) return;
  const bool qwen = type_.moe == MoeKind::qwen, deepseek = type_.moe == MoeKind::deepseek;
  const std::string experts_key = deepseek ? "n_routed_experts"
                                  : qwen   ? "num_experts"
                                           : "num_local_experts";
  if (auto v = integer(experts_key, true)) put_int(field::num_moe_experts, *v, experts_key);
  // GptOssConfig also writes experts_per_token (its original name) next to num_experts_per_tok.
  std::string topk_key = "num_experts_per_tok";
  if (type_.name == "gpt_oss" && !find(topk_key) && find("experts_per_token"))
    topk_key = "experts_per_token";
  if (auto v = integer(topk_key, true)) put_int(field::moe_router_topk, *v, topk_key);
  // GptOssExperts keeps every expert in 3D parameters (gate_up_proj, down_proj) that its training
  // loop indexes per expert (modeling_gpt_oss.py @ 00d4b3d2); Mixtral and Qwen-MoE have one
  // nn.Linear per expert.
  if (type_.name == "gpt_oss" && put(field::moe_fused_expert_params, true, "model_type"))
    out_.assumed.push_back("moe_fused_expert_params ← true (model_type gpt_oss: GptOssExperts' "
                           "gate_up_proj and down_proj are 3D parameters indexed per expert)");

  std::optional<int64_t> expert_width;
  if (qwen || deepseek) {
    expert_width = integer("moe_intermediate_size", true);
    if (expert_width) put_int(field::moe_ffn_hidden_size, *expert_width, "moe_intermediate_size");
  } else if (auto v = integer("intermediate_size", false)) {
    put_int(field::moe_ffn_hidden_size, *v, "intermediate_size");  // the experts are the MLP
  }

  // Shared experts: Qwen2-MoE one shared expert of shared_expert_intermediate_size with a sigmoid
  // gate (Qwen2MoeSparseMoeBlock.shared_expert_gate, Linear(hidden, 1)); DeepSeek n_shared_experts
  // experts of moe_intermediate_size each (DeepseekV2MoE.shared_experts).
  if (type_.name == "qwen2_moe") {
    if (auto v = integer("shared_expert_intermediate_size", true, 0))
      put_int(field::moe_shared_expert_intermediate_size, *v, "shared_expert_intermediate_size");
    put(field::moe_shared_expert_gate, true, "shared_expert_intermediate_size");
    out_.assumed.push_back(
        "moe_shared_expert_gate ← true (model_type qwen2_moe: shared_expert_gate)");
  } else if (deepseek) {
    const std::optional<int64_t> shared = integer("n_shared_experts", true, 0);
    if (shared && expert_width) {
      if (put(field::moe_shared_expert_intermediate_size, double(*shared * *expert_width),
              "n_shared_experts"))
        out_.read.push_back(
            "moe_shared_expert_intermediate_size ← n_shared_experts × "
            "moe_intermediate_size = " +
            number_text(double(*shared)) + " × " + number_text(double(*expert_width)) + " = " +
            number_text(double(*shared * *expert_width)));
    }
    put(field::moe_shared_expert_gate, false, "n_shared_experts");
  } else {
    put(field::moe_shared_expert_intermediate_size, 0.0, experts_key);
    put(field::moe_shared_expert_gate, false, experts_key);
  }
  if (layers <= 0 || !out_.issues.empty()) return;

  std::vector<uint8_t> pattern(size_t(layers), 1);
  if (qwen) {
    // Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer: sparse iff the layer is not in mlp_only_layers
    // and (layer_idx + 1) % decoder_sparse_step == 0.
    const int64_t step = integer("decoder_sparse_step", false).value_or(1);
    std::vector<int64_t> dense;
    if (const json* v = find("mlp_only_layers")) {
      bool ok = v->is_array();
      if (ok)
        for (const json& x : *v) ok = ok && x.is_number_integer() && x.get<int64_t>() >= 0;
      if (!ok) return fail("mlp_only_layers", "must be a list of layer indices, got " + show(*v));
      for (const json& x : *v) dense.push_back(x.get<int64_t>());
    }
    for (int64_t i = 0; i < layers; ++i)
      pattern[size_t(i)] =
          (i + 1) % step == 0 && std::find(dense.begin(), dense.end(), i) == dense.end();
    std::string how = "decoder_sparse_step = " + number_text(double(step));
    if (!find("decoder_sparse_step")) how = "decoder_sparse_step (default 1)";
    if (!dense.empty()) how += ", mlp_only_layers";
    set_layer_pattern(pattern, how);
  } else if (deepseek) {
    // DeepseekV2DecoderLayer: MoE iff layer_idx >= first_k_dense_replace and
    // layer_idx % moe_layer_freq == 0 (both config classes default to 0 and 1).
    const int64_t first_dense = integer("first_k_dense_replace", false, 0).value_or(0);
    const int64_t freq = integer("moe_layer_freq", false).value_or(1);
    for (int64_t i = 0; i < layers; ++i) pattern[size_t(i)] = i >= first_dense && i % freq == 0;
    set_layer_pattern(pattern, "first_k_dense_replace = " + number_text(double(first_dense)) +
                                   ", moe_layer_freq = " + number_text(double(freq)));
  } else {
    put(field::moe_layer_freq, 1.0, "model_type");
    out_.assumed.push_back("moe_layer_freq ← 1 (model_type " + std::string(type_.name) +
                           ": every layer is MoE)");
  }
}

void HfReader::read_mla() {
  if (!type_.mla) return;
  put(field::multi_latent_attention, true, "model_type");
  out_.assumed.push_back("multi_latent_attention ← true (model_type " + std::string(type_.name) +
                         ")");
  // q_lora_rank: null means full-rank queries (DeepSeek-V2-Lite); absent, the config classes'
  // default 1536.
  auto q_rank = cfg_.find("q_lora_rank");
  if (q_rank != cfg_.end() && q_rank->is_null()) {
    out_.read.push_back("q_lora_rank ← q_lora_rank = null (full-rank queries)");
  } else if (q_rank == cfg_.end()) {
    assume_default(field::q_lora_rank, 1536, "q_lora_rank");
  } else if (auto v = integer("q_lora_rank", false)) {
    put_int(field::q_lora_rank, *v, "q_lora_rank");
  }
  if (auto v = integer("kv_lora_rank", true)) put_int(field::kv_lora_rank, *v, "kv_lora_rank");
  if (auto v = integer("qk_nope_head_dim", true)) put_int(field::qk_head_dim, *v, "qk_nope_head_dim");
  if (auto v = integer("qk_rope_head_dim", true, 0))
    put_int(field::qk_pos_emb_head_dim, *v, "qk_rope_head_dim");
  if (auto v = integer("v_head_dim", true)) {
    put_int(field::v_head_dim, *v, "v_head_dim");
    // Megatron's DeepSeek recipes pass --kv-channels equal to v_head_dim; only the Bridge
    // profile's MHA-shaped attention count reads it.
    if (put(field::kv_channels, double(*v), "v_head_dim"))
      out_.assumed.push_back("kv_channels ← v_head_dim = " + number_text(double(*v)) +
                             " (MLA: as Megatron's DeepSeek recipes set --kv-channels)");
  }
}

void HfReader::read_embeddings() {
  if (auto v = integer("vocab_size", type_.vocab_default == 0)) {
    put_int(field::vocab_size, *v, "vocab_size");
  } else if (!find("vocab_size") && type_.vocab_default > 0) {
    assume_default(field::vocab_size, type_.vocab_default, "vocab_size");
  }
  if (auto tie = boolean("tie_word_embeddings")) {
    put(field::share_embeddings_and_output_weights, *tie, "tie_word_embeddings");
    out_.read.push_back(
        std::string("share_embeddings_and_output_weights ← tie_word_embeddings = ") +
        (*tie ? "true" : "false"));
  } else if (!find("tie_word_embeddings")) {
    put(field::share_embeddings_and_output_weights, type_.tie_default, "tie_word_embeddings");
    out_.assumed.push_back(std::string("share_embeddings_and_output_weights ← ") +
                           (type_.tie_default ? "true" : "false") +
                           " (no tie_word_embeddings: " + std::string(type_.source) + " default)");
  }
  // Learned absolute positions exist only in GPT-2 (wpe: n_positions × n_embd); the others use
  // rotary embeddings, which have no parameters.
  if (type_.gpt2_names) {
    if (auto v = integer("n_positions", true))
      put_int(field::max_position_embeddings, *v, "n_positions");
  } else if (find("max_position_embeddings")) {
    ignore("max_position_embeddings",
           "rotary positions have no parameters (the sequence length comes from the training "
           "settings)");
  }
  // partial_rotary_factor (GLM-4.5, Phi, StableLM, Nemotron): RoPE rotates int(head_dim · factor)
  // channels (modeling_rope_utils.py @ ef46806472a64b0013ed413781e3afed82bfa047), so the cos and sin
  // a transformers model keeps are that much narrower (rotary_percent).
  if (const json* f = find("partial_rotary_factor")) {
    if (!f->is_number())
      fail("partial_rotary_factor", "must be a number, got " + show(*f));
    else if (put(field::rotary_percent, f->get<double>(), "partial_rotary_factor")) {
      out_.read.push_back("rotary_percent ← partial_rotary_factor = " + number_text(f->get<double>()));
      mapping::note_key(out_, field::rotary_percent, "partial_rotary_factor");
    }
  }
  // Multi-token prediction (DeepSeek-V3: the MTP module after the decoder, which transformers
  // does not instantiate but the checkpoint and Megatron's --mtp-num-layers carry).
  if (auto v = integer("num_nextn_predict_layers", false, 0))
    put_int(field::mtp_num_layers, *v, "num_nextn_predict_layers");
}

void HfReader::read_unmodelled() {
  const std::string name(type_.name);
  // Sliding windows: Qwen configs carry sliding_window even when use_sliding_window is false
  // (Qwen3MoeConfig.__post_init__ then drops it).
  const bool qwen = name.rfind("qwen", 0) == 0;
  if (find("sliding_window") && (!qwen || boolean("use_sliding_window").value_or(false)))
    ignore("sliding_window",
           "sliding-window attention is not modelled (every layer is counted "
           "as full attention)");
  if (find("layer_types")) ignore("layer_types", "per-layer attention types are not modelled");
  if (find("sliding_window_pattern"))
    ignore("sliding_window_pattern", "the local/global attention pattern is not modelled");
  if (const json* q = find("quantization_config")) {
    std::string method =
        q->is_object() && q->contains("quant_method") ? show((*q)["quant_method"]) : "?";
    out_.ignored.push_back("quantization_config (quant_method " + method +
                           "): the checkpoint's storage format; the estimate assumes bf16 "
                           "training weights");
  }
  for (const char* dtype_key : {"torch_dtype", "dtype"})
    if (const json* d = find(dtype_key); d && d->is_string() && d->get<std::string>() != "bfloat16")
      ignore(dtype_key,
             "the checkpoint's dtype; the estimate assumes bf16 weights with fp32 "
             "gradients and optimizer states");
  if (const json* t = find("topk_method");
      t && t->is_string() && t->get<std::string>() == "noaux_tc")
    ignore("topk_method",
           "the per-expert score-correction bias (n_routed_experts per MoE layer) "
           "is not modelled for the PyTorch implementations; under megatron-core set "
           "moe_router_score_function \"sigmoid\" and moe_router_enable_expert_bias");
  if (name == "gemma2" || name == "gemma3_text")
    out_.ignored.push_back(
        "post_attention_layernorm, post_feedforward_layernorm (model_type " + name +
        "): the two extra RMSNorms per layer (2 × hidden_size) are not modelled");
  // GptOssAttention.sinks, a learned logit per head (modeling_gpt_oss.py @
  // 00d4b3d2142cb4ced2f51b90614b5d26bc045015): in the parameters, and in eager attention.
  if (name == "gpt_oss" && put(field::attention_sinks, true, "model_type"))
    out_.assumed.push_back(
        "attention_sinks ← true (model_type gpt_oss: GptOssAttention.sinks, a learned logit per "
        "head joining each row's softmax; transformers' gpt-oss has no SDPA path, so attention is "
        "eager unless a kernel that takes the sinks is asked for)");
}

void HfReader::run() {
  int64_t layers = 0, hidden = 0, heads = 0;
  read_shape(layers, hidden, heads);
  read_attention(hidden, heads);
  read_mlp(hidden);
  read_mla();
  read_moe(layers);
  read_embeddings();
  read_unmodelled();
}

}  // namespace

std::vector<std::string_view> hf_model_types() {
  std::vector<std::string_view> names;
  for (const ModelType& t : model_types()) {
    names.push_back(t.name);
    for (const Wrapper& w : k_wrappers)
      if (w.text_type == t.name) names.push_back(w.name);
  }
  return names;
}

ImportResult import_hf_config(std::string_view text) {
  ImportResult out;
  out.whole_model = true;
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // Malformed text, or a number beyond double ("number overflow parsing '1e705'", found by
    // fuzzing: tests/fuzz/regressions/hf).
    out.issues.push_back(issue("config.json", "malformed JSON: " + json_error_text(e)));
    return out;
  }
  if (!doc.is_object()) {
    out.issues.push_back(issue("config.json", std::string("must be a JSON object, got ") +
                                                  (doc.is_array() ? "a list" : "a single value")));
    return out;
  }
  auto type_it = doc.find("model_type");
  if (type_it == doc.end() || !type_it->is_string()) {
    out.issues.push_back(issue(
        "model_type", "missing from config.json (supported: " + supported_model_types() + ")"));
    return out;
  }
  const std::string type_name = type_it->get<std::string>();
  const json* cfg = &doc;
  const ModelType* type = find_type(type_name);
  if (!type) {
    // A multimodal wrapper: import its text decoder (text_config).
    std::string_view text_type;
    for (const Wrapper& w : k_wrappers)
      if (w.name == type_name) text_type = w.text_type;
    auto text_it = doc.find("text_config");
    if (text_it != doc.end() && text_it->is_object()) {
      auto inner = text_it->find("model_type");
      if (inner != text_it->end() && inner->is_string() && find_type(inner->get<std::string>()))
        text_type = find_type(inner->get<std::string>())->name;
      if (!text_type.empty()) {
        cfg = &*text_it;
        type = find_type(text_type);
      }
    } else if (!text_type.empty()) {
      out.issues.push_back(
          issue("text_config", "missing from config.json (model_type " + type_name + " needs it)"));
      return out;
    }
    if (!type) {
      out.issues.push_back(
          issue("model_type", trainmem::quoted(type_name) +
                                  " is not supported; supported: " + supported_model_types()));
      return out;
    }
    out.read.push_back("model ← text_config (model_type " + type_name + ": the " +
                       std::string(type->name) + " text decoder)");
    if (doc.contains("vision_config"))
      out.ignored.push_back(
          "vision_config: the vision tower and projector are not modelled (text "
          "decoder only)");
  }
  HfReader(*cfg, *type, out).run();
  if (!out.ok()) out.input = ConfigInput{};
  return out;
}

}  // namespace trainmem
