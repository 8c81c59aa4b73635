// Megatron-LM command lines in (import_megatron_args; export_megatron_args, their inverse, is
// megatron_export.cpp). Argument names, defaults and derivations follow NVIDIA Megatron-LM
// megatron/training/arguments.py (_add_network_size_args, _add_moe_args, _add_mla_args,
// validate_args) as read at the commit cited in ../shared/reference/megatron-formulas.md §1.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <span>

#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "mapping.hpp"
#include "trainmem/import.hpp"

namespace trainmem {

namespace {

using mapping::shell_words;
using Words = mapping::ShellWords;


// ---- --moe-layer-freq expressions ----------------------------------------------------------
//
// Megatron-LM's moe_freq_type() eval()s the text after checking that it holds only digits,
// commas, brackets, parentheses, + and * (_eval_pattern). Those characters admit this grammar:
//   sum     := product ('+' product)*
//   product := atom ('*' atom)*
//   atom    := integer | '[' [sum (',' sum)* [',']] ']' | '(' sum ')'
// evaluated with Python's meaning: int + int, int * int, list + list (concatenation), list * int
// and int * list (repetition; a count <= 0 gives []). Other combinations are Python TypeErrors.

constexpr int64_t k_max_pattern = 1'000'000;  // config.cpp accepts at most 10^6 layers
constexpr int64_t k_max_number = 1'000'000'000;
constexpr int k_max_depth = 100;

struct PyValue {
  bool is_list = false;
  int64_t number = 0;
  std::vector<int64_t> list;
};

class FreqParser {
 public:
  explicit FreqParser(std::string_view text) : s_(text) {}

  bool parse(PyValue& out, std::string& error) {
    const bool ok = sum(out) && (pos_ == s_.size() || unexpected());
    if (!ok) error = error_;
    return ok;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;

  bool fail(const std::string& e) {
    if (error_.empty()) error_ = e;
    return false;
  }
  bool unexpected() {
    if (pos_ >= s_.size()) return fail("the expression ends too early");
    return fail("unexpected \"" + std::string(1, s_[pos_]) + "\" at position " +
                std::to_string(pos_ + 1));
  }
  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  bool sum(PyValue& v) {
    if (!product(v)) return false;
    while (at('+')) {
      ++pos_;
      PyValue r;
      if (!product(r)) return false;
      if (v.is_list != r.is_list) return fail("cannot add a list and an integer");
      if (v.is_list) {
        if (int64_t(v.list.size() + r.list.size()) > k_max_pattern)
          return fail("the list is longer than " + number_text(double(k_max_pattern)) + " entries");
        v.list.insert(v.list.end(), r.list.begin(), r.list.end());
      } else {
        v.number += r.number;
        if (v.number > k_max_number)
          return fail("a number exceeds " + number_text(double(k_max_number)));
      }
    }
    return true;
  }

  bool product(PyValue& v) {
    if (!atom(v)) return false;
    while (at('*')) {
      ++pos_;
      PyValue r;
      if (!atom(r)) return false;
      if (v.is_list && r.is_list) return fail("cannot multiply two lists");
      if (!v.is_list && !r.is_list) {
        if (v.number != 0 && r.number > k_max_number / v.number)
          return fail("a number exceeds " + number_text(double(k_max_number)));
        v.number *= r.number;
        continue;
      }
      const std::vector<int64_t> items = v.is_list ? v.list : r.list;
      const int64_t times = v.is_list ? r.number : v.number;
      if (times > 0 && int64_t(items.size()) > k_max_pattern / times)
        return fail("the list is longer than " + number_text(double(k_max_pattern)) + " entries");
      v.is_list = true;
      v.list.clear();
      for (int64_t i = 0; i < times; ++i) v.list.insert(v.list.end(), items.begin(), items.end());
    }
    return true;
  }

  bool atom(PyValue& v) {
    if (pos_ >= s_.size()) return unexpected();
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      v = PyValue{};
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        v.number = v.number * 10 + (s_[pos_++] - '0');
        if (v.number > k_max_number)
          return fail("a number exceeds " + number_text(double(k_max_number)));
      }
      return true;
    }
    if (c != '(' && c != '[') return unexpected();
    if (++depth_ > k_max_depth) return fail("the expression is nested too deeply");
    ++pos_;
    bool ok = true;
    if (c == '(') {
      ok = sum(v) && (at(')') || unexpected());
      if (ok) ++pos_;
    } else {
      v = PyValue{};
      v.is_list = true;
      while (ok && !at(']')) {
        PyValue item;
        ok = sum(item);
        if (ok && item.is_list) ok = fail("lists inside lists are not supported");
        if (ok) v.list.push_back(item.number);
        if (ok && int64_t(v.list.size()) > k_max_pattern)
          ok = fail("the list is longer than " + number_text(double(k_max_pattern)) + " entries");
        if (ok && at(','))
          ++pos_;
        else if (ok && !at(']'))
          ok = unexpected();
      }
      if (ok) ++pos_;
    }
    --depth_;
    return ok;
  }
};


// A decimal number as Python's float() reads one for argparse's type=float: digits with an
// optional sign, point and exponent, or inf / nan (which the field's range then refuses). No hex
// floats, which strtod alone would take.
std::optional<double> parse_float(std::string_view s) {
  std::string lower;
  for (char c : s) lower += char(std::tolower(static_cast<unsigned char>(c)));
  const std::string_view bare = !lower.empty() && (lower[0] == '+' || lower[0] == '-') ? std::string_view(lower).substr(1)
                                                                                        : std::string_view(lower);
  const bool special = bare == "inf" || bare == "infinity" || bare == "nan";
  if (bare.empty() || (!special && bare.find_first_not_of("0123456789.e+-") != std::string_view::npos)) return std::nullopt;
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// What a user wrote, cut to 60 characters for a message (it may be a whole pasted script).
std::string cut(std::string_view s) {
  return s.size() > 60 ? std::string(s.substr(0, 60)) + "…" : std::string(s);
}
std::string shown(std::string_view s) { return trainmem::quoted(cut(s)); }

// An argument's values as they were written, separated by blanks.
std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " ") + v;
  return cut(out);
}

// arguments.py's choices for the arguments that take a name; a message lists them.
constexpr std::string_view k_normalizations[] = {"LayerNorm", "RMSNorm"};
constexpr std::string_view k_recompute_granularities[] = {"full", "selective"};

bool one_of(std::string_view word, std::span<const std::string_view> choices) {
  return std::find(choices.begin(), choices.end(), word) != choices.end();
}

// Arguments that matter for memory but have no trainmem field, with the reason; any other
// unknown argument is reported as "not used by the estimate".
struct Unmodelled {
  std::string_view arg;
  std::string_view why;
};
constexpr Unmodelled k_unmodelled[] = {
    {"--fp4-format", "FP4 training is not modelled (the estimate assumes bf16 weights)"},
    {"--fp4-param", "FP4 weights are not modelled (the estimate assumes bf16 weights)"},
    {"--window-size", "sliding-window attention is not modelled"},
    {"--window-attn-skip-freq", "sliding-window attention is not modelled"},
    {"--use-torch-fsdp2", "Megatron-LM's FSDP2 wrapping is not modelled (trainmem's fsdp2 follows torchtitan's)"},
    {"--use-megatron-fsdp", "Megatron FSDP's sharding is not modelled"},
    {"--data-parallel-sharding-strategy", "Megatron FSDP's sharding is not modelled"},
    {"--cpu-offloading", "not imported: set activation_offload (trainmem offloads every layer but one, "
                         "whatever --cpu-offloading-num-layers says)"},
    {"--account-for-embedding-in-pipeline-split", "custom pipeline layouts are not modelled"},
    {"--account-for-loss-in-pipeline-split", "custom pipeline layouts are not modelled"},
    {"--encoder-num-layers", "encoder-decoder models are not modelled"},
    {"--decoder-num-layers", "encoder-decoder models are not modelled (use --num-layers)"},
    {"--apply-layernorm-1p", "LayerNorm1p has LayerNorm's parameters (counted as LayerNorm)"},
    {"--num-query-groups",
     "ignored without --group-query-attention (Megatron-LM then uses num_attention_heads)"},
    {"--rotary-base", "rotary embeddings have no parameters"},
    // MoE options whose memory trainmem does not model (docs/trainmem-profile.md §9): said so,
    // not "not used", since each changes what the GPU holds.
    {"--moe-router-dtype", "not modelled: fp64 routing (trainmem models the compute dtype and fp32)"},
    {"--moe-router-score-function", "not modelled: the sqrtsoftplus router (trainmem models softmax and sigmoid)"},
    // The router's options that keep nothing more (moe_utils.py @ 00611e6eeb0b09b5ee074750956855215ddbd67f,
    // topk_routing_with_score_function, group_limited_topk; router.py at the same commit).
    {"--moe-router-pre-softmax",
     "not modelled: the softmax router's softmax over every expert before the top-k keeps fp32 "
     "[T_sp, E] where the default keeps [T_sp, K]; the sigmoid router ignores it"},
    {"--moe-router-topk-scaling-factor",
     "changes no memory: probs * scaling_factor multiplies by a Python float, which keeps nothing"},
    {"--moe-router-bias-update-rate",
     "changes no memory: the expert bias is updated under no_grad once per step (get_updated_expert_bias)"},
    {"--moe-router-num-groups",
     "group-limited routing: changes no memory with --moe-router-enable-expert-bias (the group choice "
     "is made on scores whose topk values are dropped); without it masked_fill keeps a bool mask "
     "[T_sp, E] per MoE layer (not modelled)"},
    {"--moe-router-group-topk",
     "group-limited routing: changes no memory with --moe-router-enable-expert-bias (the group choice "
     "is made on scores whose topk values are dropped); without it masked_fill keeps a bool mask "
     "[T_sp, E] per MoE layer (not modelled)"},
    {"--moe-enable-deepep", "not modelled: the flex dispatcher (DeepEP) keeps other buffers than "
                            "the alltoall dispatcher trainmem counts"},
};

// Arguments read into a field as they are (dashes become underscores except where named).
struct IntArg {
  std::string_view arg;
  FieldName field;
};
constexpr IntArg k_int_args[] = {
    {"--num-layers", field::num_layers},
    {"--hidden-size", field::hidden_size},
    {"--ffn-hidden-size", field::ffn_hidden_size},
    {"--num-attention-heads", field::num_attention_heads},
    {"--kv-channels", field::kv_channels},
    {"--vocab-size", field::vocab_size},
    {"--make-vocab-size-divisible-by", field::make_vocab_size_divisible_by},
    {"--num-experts", field::num_moe_experts},  // Megatron-LM's name for num_moe_experts
    {"--moe-ffn-hidden-size", field::moe_ffn_hidden_size},
    {"--moe-router-topk", field::moe_router_topk},
    {"--moe-shared-expert-intermediate-size", field::moe_shared_expert_intermediate_size},
    {"--moe-latent-size", field::moe_latent_size},
    {"--mtp-num-layers", field::mtp_num_layers},
    {"--q-lora-rank", field::q_lora_rank},
    {"--kv-lora-rank", field::kv_lora_rank},
    {"--qk-head-dim", field::qk_head_dim},
    {"--qk-pos-emb-head-dim", field::qk_pos_emb_head_dim},
    {"--v-head-dim", field::v_head_dim},
    {"--seq-length", field::seq_length},
    {"--micro-batch-size", field::micro_batch_size},
    {"--global-batch-size", field::global_batch_size},
    {"--tensor-model-parallel-size", field::tensor_model_parallel_size},
    {"--pipeline-model-parallel-size", field::pipeline_model_parallel_size},
    {"--context-parallel-size", field::context_parallel_size},
    {"--expert-model-parallel-size", field::expert_model_parallel_size},
    {"--expert-tensor-parallel-size", field::expert_tensor_parallel_size},
    {"--decoder-first-pipeline-num-layers", field::num_layers_in_first_pipeline_stage},
    {"--decoder-last-pipeline-num-layers", field::num_layers_in_last_pipeline_stage},
    {"--data-parallel-size", field::data_parallel_size},  // trainmem's own: Megatron derives DP
};

// Flags that set one boolean field (store_true / store_false in arguments.py).
struct FlagArg {
  std::string_view arg;
  FieldName field;
  bool value;
};
constexpr FlagArg k_flag_args[] = {
    {"--untie-embeddings-and-output-weights", field::share_embeddings_and_output_weights, false},
    {"--disable-bias-linear", field::add_bias_linear, false},  // store_false, dest add_bias_linear
    {"--add-qkv-bias", field::add_qkv_bias, true},
    {"--qk-layernorm", field::qk_layernorm, true},
    {"--moe-shared-expert-gate", field::moe_shared_expert_gate, true},
    {"--multi-latent-attention", field::multi_latent_attention, true},
    {"--use-distributed-optimizer", field::use_distributed_optimizer, true},
    {"--sequence-parallel", field::sequence_parallel, true},
    {"--moe-permute-fusion", field::moe_permute_fusion, true},
    {"--moe-pad-expert-input-to-capacity", field::moe_pad_expert_input_to_capacity, true},
    {"--moe-router-enable-expert-bias", field::moe_router_enable_expert_bias, true},
};

struct Arg {
  std::string name;  // "--num-layers"
  std::vector<std::string> values;
  bool used = false;
};

class MegatronReader {
 public:
  explicit MegatronReader(ImportResult& out) : out_(out) {}
  void run(std::string_view text);
  void run_words(const std::vector<std::string>& words);  // already split as a shell splits them

 private:
  ImportResult& out_;
  std::vector<Arg> args_;
  std::optional<int64_t> world_size_;
  std::string world_source_;
  // Transformer Engine's attention switches set before the launcher (NVTE_FLASH_ATTN=0, ...).
  std::optional<bool> nvte_flash_, nvte_fused_;
  std::vector<std::pair<std::string_view, int64_t>> ints_;  // fields read from k_int_args

  // A problem with `field`, told in the words the user wrote: the message starts with `source`
  // (the argument, the launcher's world size, "command line"), the Issue names the field.
  void fail(std::string_view field, std::string_view source, const std::string& rule) {
    Issue problem = issue(source, rule);
    problem.field = field;
    out_.issues.push_back(std::move(problem));
  }
  // The last occurrence of `name` (argparse keeps the last); every occurrence counts as used.
  Arg* get(std::string_view name) {
    Arg* last = nullptr;
    for (Arg& a : args_)
      if (a.name == name) a.used = true, last = &a;
    return last;
  }
  // A one-word argument read into `field` when its value is one of `modelled`; another value is
  // left unused, for the not-modelled list at the end. The argument, if given.
  Arg* modelled_choice(std::string_view name, FieldName field, std::initializer_list<std::string_view> modelled) {
    Arg* a = get(name);
    if (!a) return nullptr;
    if (a->values.size() == 1 && std::find(modelled.begin(), modelled.end(), a->values[0]) != modelled.end()) {
      if (put(field, a->values[0], name)) note_read(field, std::string(name) + " " + a->values[0]);
    } else {
      a->used = false;
    }
    return a;
  }
  bool flag(std::string_view name, FieldName field) {
    Arg* a = get(name);
    if (a && !a->values.empty())
      fail(field, name, "takes no value, got " + shown(joined(a->values)));
    return a != nullptr;
  }
  std::optional<std::string> word(std::string_view name, FieldName field) {
    Arg* a = get(name);
    if (!a) return std::nullopt;
    if (a->values.empty()) {
      fail(field, name, "needs a value");
      return std::nullopt;
    }
    if (a->values.size() > 1) {
      fail(field, name,
           "takes one value, got " + std::to_string(a->values.size()) + " (" +
               shown(joined(a->values)) + ")");
      return std::nullopt;
    }
    return a->values[0];
  }
  // An argument with one of Megatron-LM's choices, read into `field`; false when it is absent.
  bool choice(std::string_view name, FieldName field, std::span<const std::string_view> choices) {
    std::optional<std::string> w = word(name, field);
    if (!w) return get(name) != nullptr;
    if (!one_of(*w, choices))
      fail(field, name, "must be " + choices_text(choices) + " (Megatron-LM's choices), got " + shown(*w));
    else if (put(field, *w, name))
      note_read(field, std::string(name) + " " + *w);
    return true;
  }
  std::optional<int64_t> integer(std::string_view name, FieldName field) {
    std::optional<std::string> w = word(name, field);
    if (!w) return std::nullopt;
    std::optional<int64_t> v = mapping::parse_int(*w);
    if (!v)
      fail(field, name,
           "must be an integer, got " + shown(*w) +
               (w->find('$') != std::string::npos ? " (shell variables are not expanded)" : ""));
    return v;
  }
  std::optional<double> number(std::string_view name, FieldName field) {
    std::optional<std::string> w = word(name, field);
    if (!w) return std::nullopt;
    std::optional<double> v = parse_float(*w);
    if (!v) fail(field, name, "must be a number, got " + shown(*w));
    return v;
  }
  std::optional<int64_t> int_field(FieldName field) const {
    for (const auto& [f, v] : ints_)
      if (f == field) return v;
    return std::nullopt;
  }
  // Sets a field; a value the field rejects is reported with the argument's name.
  bool put(FieldName field, const FieldValue& value, std::string_view arg) {
    if (auto problem = set_field(out_.input, field, value)) {
      fail(field, arg, std::string(rule_of(*problem)));
      return false;
    }
    if (arg.starts_with("--")) mapping::note_key(out_, field, arg);  // a flag, not "command line"
    return true;
  }
  void note_read(std::string_view field, const std::string& from) {
    out_.read.push_back(std::string(field) + " ← " + from);
  }

  size_t split(const std::vector<std::string>& words);
  void read_launcher(const std::vector<std::string>& words, size_t end);
  void read_allocator_conf(const std::string& word);
  void read_model(bool defines_model);
  void read_parallel();
  bool read_layout();
  void read_precision(bool defines_model);
  void read_recompute();
  void read_attention(bool defines_model);
  void read_rest();
};

// Splits the words into launcher and Megatron arguments: the arguments start after the training
// script (the first word ending in .py), else at the first --option. Returns the start.
size_t MegatronReader::split(const std::vector<std::string>& words) {
  std::optional<size_t> script;
  for (size_t i = 0; i < words.size() && !script; ++i)
    if (words[i].size() > 3 && words[i].compare(words[i].size() - 3, 3, ".py") == 0) script = i;
  size_t start = words.size();
  if (script)
    start = *script + 1;
  else
    for (size_t i = 0; i < words.size() && start == words.size(); ++i)
      if (words[i].rfind("--", 0) == 0) start = i;
  for (size_t i = start; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) == 0 && w.size() > 2) {
      Arg a;
      const size_t eq = w.find('=');
      a.name = w.substr(0, eq);
      if (eq != std::string::npos) a.values.push_back(w.substr(eq + 1));
      args_.push_back(std::move(a));
    } else if (!args_.empty()) {
      args_.back().values.push_back(w);
    } else {
      out_.ignored.push_back(shown(w) + ": not an argument (no --name before it)");
    }
  }
  return start;
}

// The launcher before the script: WORLD_SIZE=N, or torchrun's --nproc_per_node × --nnodes. Megatron
// reads WORLD_SIZE from the environment the launcher sets (arguments.py parse_args).
void MegatronReader::read_launcher(const std::vector<std::string>& words, size_t end) {
  std::optional<int64_t> nproc, nnodes;
  bool launcher_unclear = false;
  for (size_t i = 0; i < end; ++i) {
    const std::string& w = words[i];
    if (w.rfind("WORLD_SIZE=", 0) == 0) {
      if (auto v = mapping::parse_int(w.substr(11)); v && *v > 0) {
        world_size_ = *v;
        world_source_ = "WORLD_SIZE";
      } else {
        out_.ignored.push_back(w + ": not a positive integer; the world size is unknown");
      }
      continue;
    }
    if (w.rfind("NVTE_FLASH_ATTN=", 0) == 0 || w.rfind("NVTE_FUSED_ATTN=", 0) == 0) {
      // Transformer Engine reads these as integers, 0 turning a backend off (attention/
      // dot_product_attention/utils.py get_attention_backend: int(os.getenv(..., "1"))).
      const bool flash = w.rfind("NVTE_FLASH_ATTN=", 0) == 0;
      const std::string value = w.substr(w.find('=') + 1);
      if (value == "0" || value == "1") {
        (flash ? nvte_flash_ : nvte_fused_) = value == "1";
      } else {
        out_.ignored.push_back(w + ": not 0 or 1; Transformer Engine's choice of attention is unknown");
      }
      continue;
    }
    if (w.rfind("PYTORCH_CUDA_ALLOC_CONF=", 0) == 0 || w.rfind("PYTORCH_ALLOC_CONF=", 0) == 0) {
      read_allocator_conf(w);
      continue;
    }
    const size_t eq = w.find('=');
    const std::string name = w.substr(0, eq);
    if (name != "--nproc_per_node" && name != "--nproc-per-node" && name != "--nnodes") continue;
    std::string value =
        eq != std::string::npos ? w.substr(eq + 1) : (i + 1 < end ? words[i + 1] : "");
    std::optional<int64_t> v = mapping::parse_int(value);
    if (!v || *v <= 0) {
      out_.ignored.push_back(name + " " + value + ": not a fixed count; the world size is unknown");
      launcher_unclear = true;
    }
    (name == "--nnodes" ? nnodes : nproc) = v;
  }
  if (nproc && !launcher_unclear && !world_size_) {
    world_size_ = checked_mul(*nproc, nnodes.value_or(1));
    world_source_ = nnodes ? "--nproc_per_node × --nnodes" : "--nproc_per_node";
  }
}

// PyTorch's caching allocator settings before the launcher (PYTORCH_ALLOC_CONF from 2.9, the
// older name still read): comma-separated "option:value" pairs (c10/core/AllocatorConfig.cpp,
// CUDAAllocatorConfig::parseArgs). expandable_segments is the field of that name; the others
// (max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions, ...) are not modelled.
void MegatronReader::read_allocator_conf(const std::string& word) {
  const std::string variable = word.substr(0, word.find('='));
  std::string rest = word.substr(word.find('=') + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string option = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t colon = option.find(':');
    const std::string key = option.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : option.substr(colon + 1);
    if (key != "expandable_segments") {
      if (!option.empty()) out_.ignored.push_back(variable + " " + option + ": not modelled (the simulated allocator reads expandable_segments only)");
      continue;
    }
    if (value != "True" && value != "False") {
      out_.ignored.push_back(variable + " " + option + ": PyTorch takes True or False; expandable_segments is unknown");
      continue;
    }
    if (put(field::expandable_segments, value == "True", variable)) note_read(field::expandable_segments, variable + " " + option);
  }
}

void MegatronReader::read_model(bool defines_model) {
  // Group-query attention: --num-query-groups counts only with --group-query-attention, and then
  // defaults to 1 (arguments.py: --num-query-groups default=1).
  if (flag("--group-query-attention", field::num_query_groups)) {
    if (get("--num-query-groups")) {
      if (auto g = integer("--num-query-groups", field::num_query_groups);
          g && put(field::num_query_groups, double(*g), "--num-query-groups"))
        note_read(field::num_query_groups,
                  "--group-query-attention --num-query-groups " + number_text(double(*g)));
    } else if (put(field::num_query_groups, 1.0, "--group-query-attention")) {
      out_.assumed.push_back(
          "num_query_groups ← 1 (--group-query-attention without "
          "--num-query-groups: Megatron-LM's default)");
    }
  }

  // Activation (megatron/training/arguments.py core_transformer_config_from_args): --swiglu is
  // gated SiLU, --quick-geglu gated quick-GELU (counted as gelu), --squared-relu squared ReLU;
  // the default is GELU without a gate. They exclude each other (asserted there).
  const bool swiglu = flag("--swiglu", field::activation_func);
  const bool geglu = flag("--quick-geglu", field::activation_func);
  const bool sq_relu = flag("--squared-relu", field::activation_func);
  flag("--openai-gelu", field::activation_func);  // GELU's tanh variant: still gelu
  if (int(swiglu) + int(geglu) + int(sq_relu) > 1) {
    fail(field::activation_func, swiglu ? "--swiglu" : "--quick-geglu",
         std::string("cannot be combined with ") + (sq_relu ? "--squared-relu" : "--quick-geglu") +
             " (Megatron-LM asserts it)");
  } else if (swiglu || geglu || sq_relu || defines_model) {
    const bool gated = swiglu || geglu;
    const std::string act = swiglu ? "silu" : sq_relu ? "squared_relu" : "gelu";
    put(field::gated_linear_unit, gated, "--swiglu");
    put(field::activation_func, act, "--swiglu");
    const std::string what = std::string("gated_linear_unit = ") + (gated ? "true" : "false") +
                             ", activation_func = \"" + act + "\"";
    if (swiglu || geglu || sq_relu)
      out_.read.push_back(what + " ← " +
                          (swiglu  ? "--swiglu"
                           : geglu ? "--quick-geglu (quick-GELU counted as gelu)"
                                   : "--squared-relu"));
    else
      out_.assumed.push_back(what + " (Megatron-LM's default MLP: no --swiglu)");
  }

  for (const FlagArg& f : k_flag_args)
    if (flag(f.arg, f.field) && put(f.field, f.value, f.arg))
      note_read(f.field, std::string(f.value ? "true" : "false") + " (" + std::string(f.arg) + ")");
  if (defines_model) {
    // Megatron-LM's defaults when the flags are absent; set so the output shows them.
    if (!out_.input.share_embeddings_and_output_weights &&
        put(field::share_embeddings_and_output_weights, true, ""))
      out_.assumed.push_back(
          "share_embeddings_and_output_weights ← true (no "
          "--untie-embeddings-and-output-weights: Megatron-LM ties them)");
    if (!out_.input.add_bias_linear && put(field::add_bias_linear, true, ""))
      out_.assumed.push_back(
          "add_bias_linear ← true (no --disable-bias-linear: Megatron-LM's default)");
  }

  if (!choice("--normalization", field::normalization, k_normalizations) && defines_model &&
      put(field::normalization, std::string("LayerNorm"), ""))
    out_.assumed.push_back("normalization ← LayerNorm (no --normalization: Megatron-LM's default)");

  {
    if (auto text = word("--moe-layer-freq", field::moe_layer_freq)) {
      LayerFreqValue v = parse_moe_layer_freq(*text);
      if (!v.error.empty()) {
        fail(field::moe_layer_freq, "--moe-layer-freq", v.error);
      } else if (v.every) {
        if (put(field::moe_layer_freq, double(*v.every), "--moe-layer-freq"))
          note_read(field::moe_layer_freq, "--moe-layer-freq " + *text);
      } else {
        std::vector<double> list(v.pattern.begin(), v.pattern.end());
        if (put(field::moe_layer_freq, list, "--moe-layer-freq"))
          note_read(field::moe_layer_freq,
                    "--moe-layer-freq " + *text + " (" + std::to_string(list.size()) + " layers)");
      }
    }
  }

  // Position embeddings: Megatron-LM's default type is learned_absolute, whose table
  // (max_position_embeddings × hidden) is a parameter; rope and none have none.
  std::string pos_type = "learned_absolute";
  bool pos_given = false;
  if (auto t = word("--position-embedding-type", field::max_position_embeddings))
    pos_type = *t, pos_given = true;
  if (flag("--use-rotary-position-embeddings", field::max_position_embeddings))
    pos_type = "rope", pos_given = true;
  if (flag("--no-position-embedding", field::max_position_embeddings))
    pos_type = "none", pos_given = true;
  if (Arg* a = get("--max-position-embeddings")) {
    a->used = false;
    if (auto n = integer("--max-position-embeddings", field::max_position_embeddings)) {
      if (pos_type == "learned_absolute") {
        if (put(field::max_position_embeddings, double(*n), "--max-position-embeddings"))
          note_read(field::max_position_embeddings,
                    "--max-position-embeddings " + number_text(double(*n)) +
                        (pos_given ? " (--position-embedding-type learned_absolute)"
                                   : " (learned absolute positions: Megatron-LM's "
                                     "default --position-embedding-type)"));
      } else {
        out_.ignored.push_back("--max-position-embeddings " + number_text(double(*n)) + ": " +
                               pos_type + " positions have no parameters");
      }
    }
  }

  // --ffn-hidden-size defaults to 4h, or int(4h · 2/3 / 64) · 64 with --swiglu (arguments.py).
  const std::optional<int64_t> hidden = int_field(field::hidden_size);
  if (!int_field(field::ffn_hidden_size) && hidden && *hidden > 0) {
    const int64_t ffn = swiglu
                            ? static_cast<int64_t>((4.0 * double(*hidden) * 2.0 / 3.0) / 64.0) * 64
                            : 4 * *hidden;
    if (ffn > 0 && put(field::ffn_hidden_size, double(ffn), "--ffn-hidden-size"))
      out_.assumed.push_back(
          "ffn_hidden_size ← " +
          std::string(swiglu ? "int(4 × hidden_size × 2/3 / 64) × 64" : "4 × hidden_size") + " = " +
          number_text(double(ffn)) + " (no --ffn-hidden-size: Megatron-LM's default" +
          (swiglu ? " with --swiglu)" : ")"));
  }
}

// --pipeline-model-parallel-layout (megatron/core/transformer/pipeline_parallel_layer_layout.py,
// parse_str_to_list and __init__): commas are cosmetic; "(…)*n" and "x*n" repeat; "|" ends a
// stage; E embedding, t a decoder layer, m an MTP layer, L the loss. Stage s runs on pipeline rank
// s % PP as its virtual chunk s / PP, so PP × VPP stages. A split Megatron's arguments can also
// say (equal chunks, or first and last ranks of their own size with every chunk of a rank equal)
// is read as those arguments, which every profile reads; any other as pipeline_stage_layers, one
// count per stage (the trainmem profile). MTP layers must be in the last stage, with the loss:
// trainmem places them there.
bool MegatronReader::read_layout() {
  const std::string_view arg = "--pipeline-model-parallel-layout";
  const FieldName vpp = field::virtual_pipeline_model_parallel_size;
  const std::optional<std::string> text = word(arg, vpp);
  if (!text) return false;
  std::string expanded;
  for (char c : *text) if (c != ',') expanded += c;
  auto bad = [&](const std::string& rule) { fail(vpp, arg, rule + ", got " + shown(*text)); return false; };
  // (group)*n first, then x*n, as Megatron's two re.sub passes (no nesting).
  for (int pass = 0; pass < 2; ++pass) {
    std::string out;
    for (size_t i = 0; i < expanded.size();) {
      size_t body_start = i, body_end = i + 1, next = i + 1;
      if (pass == 0 && expanded[i] == '(') {
        const size_t close = expanded.find(')', i);
        if (close == std::string::npos) return bad("has an unclosed '('");
        body_start = i + 1, body_end = close, next = close + 1;
      }
      if ((pass == 1 || expanded[i] == '(') && next < expanded.size() && expanded[next] == '*') {
        size_t d = next + 1;
        while (d < expanded.size() && std::isdigit(static_cast<unsigned char>(expanded[d]))) ++d;
        const std::optional<int64_t> count = mapping::parse_int(expanded.substr(next + 1, d - next - 1));
        if (!count || *count > 100000) return bad("has a repeat count that is not a whole number up to 100000");
        for (int64_t k = 0; k < *count; ++k) out += expanded.substr(body_start, body_end - body_start);
        if (out.size() > 10'000'000) return bad("expands past 10,000,000 characters");
        i = d;
      } else {
        out += expanded.substr(i, next - i);
        i = next;
      }
    }
    expanded = std::move(out);
  }
  std::vector<std::string> stages(1);
  for (char c : expanded) {
    if (c == '|') stages.emplace_back();
    else if (c == 'E' || c == 't' || c == 'm' || c == 'L') stages.back() += c;
    else return bad(std::string("has '") + c + "', which is no layer (E, t, m, L; Megatron-LM's characters)");
  }
  const int64_t pp = int_field(field::pipeline_model_parallel_size).value_or(1);
  const int64_t n_stages = int64_t(stages.size());
  auto n = [](int64_t v) { return number_text(double(v)); };
  if (pp < 1 || n_stages % pp != 0)
    return bad("has " + n(n_stages) + " stages, which pipeline_model_parallel_size (" + n(pp) + ") must divide");
  if (expanded.empty() || expanded.front() != 'E' || expanded.back() != 'L' ||
      std::count(expanded.begin(), expanded.end(), 'E') != 1 || std::count(expanded.begin(), expanded.end(), 'L') != 1)
    return bad("must start with the embedding E and end with the loss L, each once (Megatron-LM asserts it)");
  const int64_t chunks = n_stages / pp;
  std::vector<int64_t> count(stages.size());
  int64_t total = 0, mtp = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    count[i] = std::count(stages[i].begin(), stages[i].end(), 't');
    total += count[i];
    mtp += std::count(stages[i].begin(), stages[i].end(), 'm');
  }
  if (mtp > std::count(stages.back().begin(), stages.back().end(), 'm'))
    return bad("places MTP layers (m) outside the last stage; trainmem keeps them with the loss in the last stage");
  if (const std::optional<int64_t> layers = int_field(field::num_layers); layers && *layers != total)
    return bad("places " + n(total) + " decoder layers where --num-layers is " + n(*layers));
  if (mtp != int_field(field::mtp_num_layers).value_or(0))
    return bad("places " + n(mtp) + " MTP layers where --mtp-num-layers is " + n(int_field(field::mtp_num_layers).value_or(0)));
  // Every chunk of a rank equal, and the middle ranks alike: rank r's chunk v is stage v·PP + r.
  auto chunk = [&](int64_t rank, int64_t v) { return count[size_t(v * pp + rank)]; };
  std::optional<int64_t> first, middle, last;
  bool expressible = true;
  for (int64_t r = 0; r < pp && expressible; ++r) {
    for (int64_t v = 1; v < chunks; ++v) expressible = expressible && chunk(r, v) == chunk(r, 0);
    const int64_t per_rank = chunk(r, 0) * chunks;
    if (r == 0) first = per_rank;
    else if (r == pp - 1) last = per_rank;
    else if (!middle) middle = per_rank;
    else expressible = expressible && *middle == per_rank;
  }
  std::string split;
  for (size_t i = 0; i < count.size(); ++i) split += (i ? ", " : "") + n(count[i]);
  // The first/last arguments take at least one layer each: an empty rank needs the list.
  expressible = expressible && *first > 0 && last.value_or(1) > 0;
  if (chunks > 1 && put(vpp, double(chunks), arg))
    note_read(vpp, std::string(arg) + " " + *text + ": " + n(n_stages) + " stages over PP " + n(pp) + " = " + n(chunks));
  if (!expressible) {
    if (put(field::pipeline_stage_layers, std::vector<double>(count.begin(), count.end()), arg))
      note_read(field::pipeline_stage_layers, "[" + split + "] (" + std::string(arg) + ": decoder layers per stage)");
    return true;
  }
  // Even when every rank holds the first rank's count (with PP 2 there is no middle rank).
  const bool uneven = pp > 1 && (*last != *first || middle.value_or(*first) != *first);
  if (uneven) {
    if (put(field::num_layers_in_first_pipeline_stage, double(*first), arg) &&
        put(field::num_layers_in_last_pipeline_stage, double(*last), arg))
      note_read("num_layers_in_first_pipeline_stage, num_layers_in_last_pipeline_stage",
                n(*first) + ", " + n(*last) + " (" + std::string(arg) + ": " + split + " layers per stage)");
  } else if (pp > 1) {
    out_.read.push_back("the pipeline's layers ← " + std::string(arg) + ": " + n(*first) + " on every rank (" + split + " per stage)");
  }
  return true;
}

void MegatronReader::read_parallel() {
  const int64_t layers = int_field(field::num_layers).value_or(0);
  const int64_t tp = int_field(field::tensor_model_parallel_size).value_or(1);
  const int64_t pp = int_field(field::pipeline_model_parallel_size).value_or(1);
  const int64_t cp = int_field(field::context_parallel_size).value_or(1);
  const bool uneven = int_field(field::num_layers_in_first_pipeline_stage) ||
                      int_field(field::num_layers_in_last_pipeline_stage);
  auto n = [](int64_t v) { return number_text(double(v)); };
  const FieldName vpp = field::virtual_pipeline_model_parallel_size;

  // A custom layout places every layer itself; it excludes the other ways of giving VPP.
  if (get("--pipeline-model-parallel-layout")) {
    for (std::string_view other : {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
                                   "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"})
      if (get(other))
        return fail(vpp, "--pipeline-model-parallel-layout",
                    "cannot be combined with " + std::string(other) + " (Megatron-LM accepts one way of placing layers)");
    if (!read_layout()) return;
  } else {
  // Virtual pipeline (validate_args): --num-layers-per-virtual-pipeline-stage gives
  // (num_layers / PP) / that; --num-virtual-stages-per-pipeline-rank gives it directly (and is
  // the one uneven pipelines need); a result of 1 means no interleaving (None).
  const std::string_view per_arg = "--num-layers-per-virtual-pipeline-stage";
  const std::string_view stages_arg = "--num-virtual-stages-per-pipeline-rank";
  const bool per_given = get(per_arg) != nullptr;
  const bool stages_given = get(stages_arg) != nullptr;
  std::optional<int64_t> v;
  std::string how;
  if (per_given && stages_given) {
    fail(vpp, per_arg,
         "cannot be combined with --num-virtual-stages-per-pipeline-rank (Megatron-LM accepts one "
         "of them)");
  } else if (per_given) {
    const std::optional<int64_t> per = integer(per_arg, vpp);
    if (!per) {
    } else if (*per < 1) {
      fail(vpp, per_arg, "must be at least 1, got " + n(*per));
    } else if (uneven) {
      fail(vpp, per_arg,
           "cannot be combined with --decoder-first/last-pipeline-num-layers (Megatron-LM needs "
           "--num-virtual-stages-per-pipeline-rank for uneven pipelines)");
    } else if (layers <= 0) {
      fail(vpp, per_arg, "needs --num-layers to give virtual_pipeline_model_parallel_size");
    } else if (pp < 1 || layers % pp != 0) {
      fail(vpp, per_arg,
           "num_layers (" + n(layers) + ") must be divisible by pipeline_model_parallel_size (" +
               n(pp) + ")");
    } else if ((layers / pp) % *per != 0) {
      fail(vpp, per_arg,
           "must divide num_layers / pipeline_model_parallel_size (" + n(layers) + " / " + n(pp) +
               " = " + n(layers / pp) + "), got " + n(*per));
    } else {
      v = layers / pp / *per;
      how =
          "(num_layers / pipeline_model_parallel_size) / --num-layers-per-virtual-pipeline-stage = "
          "(" +
          n(layers) + " / " + n(pp) + ") / " + n(*per) + " = " + n(*v);
    }
  } else if (stages_given) {
    v = integer(stages_arg, vpp);
    if (v) how = "--num-virtual-stages-per-pipeline-rank " + n(*v);
  }
  if (v && *v == 1) {
    out_.read.push_back(std::string(vpp) + ": none (" + how + "; Megatron-LM drops a size of 1)");
  } else if (v && put(vpp, double(*v), per_given ? per_arg : stages_arg)) {
    note_read(vpp, how);
  }
  }

  // Data-parallel size: trainmem's --data-parallel-size, else WORLD_SIZE / (TP · PP · CP) as
  // validate_args computes it from the launcher's world size.
  if (int_field(field::data_parallel_size)) return;
  if (!world_size_) {
    out_.assumed.push_back(
        "data_parallel_size: not set (Megatron derives it from the launcher as "
        "WORLD_SIZE / (TP × PP × CP); give WORLD_SIZE=N, torchrun "
        "--nproc_per_node/--nnodes, or --data-parallel-size)");
    return;
  }
  if (tp < 1 || pp < 1 || cp < 1) return;  // already reported
  const int64_t model = tp * pp * cp;
  const std::string sizes = "(" + n(tp) + " × " + n(pp) + " × " + n(cp) + ")";
  if (*world_size_ % model != 0) {
    fail(field::data_parallel_size, world_source_,
         "the world size " + n(*world_size_) +
             " must be divisible by tensor × pipeline × context parallel sizes " + sizes);
    return;
  }
  if (put(field::data_parallel_size, double(*world_size_ / model), world_source_))
    note_read(field::data_parallel_size, world_source_ + " / (TP × PP × CP) = " + n(*world_size_) +
                                        " / " + sizes + " = " + n(*world_size_ / model));
}

// ---- What the trainmem profile reads beyond the model and the layout ------------------------
// megatron/training/arguments.py (the argument table and validate_args) at the commit cited in
// ../shared/reference/megatron-formulas.md §1; each rule names its line of thought.

constexpr std::string_view k_grad_dtypes[] = {"fp32", "bf16"};                   // --main-grads-dtype
constexpr std::string_view k_main_param_dtypes[] = {"fp32", "fp16"};             // --main-params-dtype
constexpr std::string_view k_state_dtypes[] = {"fp32", "fp16", "bf16", "fp8"};   // --exp-avg(-sq)-dtype
constexpr std::string_view k_recompute_methods[] = {"uniform", "block"};
constexpr std::string_view k_attention_backends[] = {"flash", "fused", "unfused", "local", "auto"};
constexpr std::string_view k_fp8_recipes[] = {"delayed", "tensorwise", "mxfp8", "blockwise"};
constexpr std::string_view k_fp8_formats[] = {"e4m3", "hybrid"};  // both keep one byte a value

// Weights, gradients and the precision-aware optimizer's states. validate_args: params_dtype is
// torch.float unless --fp16 (half) or --bf16 (bfloat16), which exclude each other; bf16 turns on
// accumulate_allreduce_grads_in_fp32 unless --main-grads-dtype bf16 says otherwise, and the
// gradient buffer is fp32 with it and the parameters' type without it
// (DistributedDataParallelConfig.grad_reduce_in_fp32). So fp16 keeps fp16 gradients unless
// --accumulate-allreduce-grads-in-fp32 is given.
void MegatronReader::read_precision(bool defines_model) {
  const bool bf16 = flag("--bf16", field::params_dtype);
  const bool fp16 = flag("--fp16", field::params_dtype);
  const bool fp32_grads = flag("--accumulate-allreduce-grads-in-fp32", field::main_grads_dtype);
  if (bf16 && fp16) {
    fail(field::params_dtype, "--bf16", "cannot be combined with --fp16 (Megatron-LM asserts it)");
    return;
  }
  if (bf16 && put(field::params_dtype, std::string("bf16"), "--bf16")) note_read(field::params_dtype, "bf16 (--bf16)");
  if (fp16 && put(field::params_dtype, std::string("fp16"), "--fp16")) {
    note_read(field::params_dtype, "fp16 (--fp16)");
    if (get("--main-grads-dtype")) {
      // read below, as given
    } else if (fp32_grads) {
      if (put(field::main_grads_dtype, std::string("fp32"), "--accumulate-allreduce-grads-in-fp32"))
        note_read(field::main_grads_dtype, "fp32 (--accumulate-allreduce-grads-in-fp32)");
    } else if (put(field::main_grads_dtype, std::string("fp16"), "--fp16")) {
      out_.assumed.push_back(
          "main_grads_dtype ← fp16 (--fp16 without --accumulate-allreduce-grads-in-fp32: Megatron-LM's "
          "gradient buffer takes the parameters' type)");
    }
  }
  if (!bf16 && !fp16 && defines_model && put(field::params_dtype, std::string("fp32"), "command line"))
    out_.assumed.push_back("params_dtype ← fp32 (no --bf16 or --fp16: Megatron-LM trains in fp32)");
  const struct {
    std::string_view arg;
    FieldName field;
    std::span<const std::string_view> choices;
  } dtypes[] = {{"--main-grads-dtype", field::main_grads_dtype, k_grad_dtypes},
                {"--main-params-dtype", field::main_params_dtype, k_main_param_dtypes},
                {"--exp-avg-dtype", field::exp_avg_dtype, k_state_dtypes},
                {"--exp-avg-sq-dtype", field::exp_avg_sq_dtype, k_state_dtypes}};
  for (const auto& d : dtypes) choice(d.arg, d.field, d.choices);
  // Megatron Core's OptimizerConfig asserts that a gradient, master weight or Adam state narrower
  // than fp32 comes with --use-precision-aware-optimizer, and that the flag comes with Adam
  // (optimizer_config.py __post_init__ @ d98e8a64, since 47a175b4, 2024-12-19, the flag's
  // introduction): without it such a command does not start.
  const bool precision_aware = flag("--use-precision-aware-optimizer", field::exp_avg_dtype);
  if (!precision_aware) {
    for (const auto& d : dtypes)
      if (Arg* a = get(d.arg); a && a->values.size() == 1 && a->values[0] != "fp32")
        fail(d.field, d.arg,
             "needs --use-precision-aware-optimizer (Megatron Core asserts it: OptimizerConfig keeps "
             "gradients, master weights and Adam states in fp32 without it), got " + shown(a->values[0]) + " without it");
  } else if (Arg* o = get("--optimizer"); o && o->values.size() == 1 && o->values[0] != "adam") {
    fail(field::optimizer, "--use-precision-aware-optimizer",
         "only with --optimizer adam (Megatron Core asserts it: Transformer Engine's FusedAdam), got --optimizer " +
             o->values[0]);
  } else if (bf16) {
    // With the flag, Megatron Core >= 0.11 and Transformer Engine >= 2.1 keep a bf16 weight's
    // master as its 16-bit remainder (OptimizerConfig.store_param_remainders, default True; off
    // before TE 2.1: optimizer_config.py @ 23e00ed0, core_v0.14.0). No argument says the
    // versions, so the field stays off: the full fp32 master, which cannot under-count.
    out_.assumed.push_back(
        "store_param_remainders ← false (--use-precision-aware-optimizer: Megatron Core >= 0.11 with Transformer "
        "Engine >= 2.1 keeps bf16 weights' masters as 2-byte remainders, which no argument says; set it true for such a run)");
  }

  // FP8 (Transformer Engine): --fp8-format turns it on, --fp8-recipe (default delayed) says how
  // the scales are kept; --fp8-param-gather keeps the weights themselves in FP8.
  if (auto format = word("--fp8-format", field::fp8_recipe)) {
    if (!one_of(*format, k_fp8_formats)) {
      fail(field::fp8_recipe, "--fp8-format", "must be " + choices_text(k_fp8_formats) + " (Megatron-LM's choices), got " + shown(*format));
      return;
    }
    std::string recipe = "delayed";
    std::string from = "--fp8-format (--fp8-recipe's default: delayed)";
    if (auto r = word("--fp8-recipe", field::fp8_recipe)) {
      if (!one_of(*r, k_fp8_recipes)) {
        fail(field::fp8_recipe, "--fp8-recipe", "must be " + choices_text(k_fp8_recipes) + " (Megatron-LM's choices), got " + shown(*r));
        return;
      }
      recipe = *r, from = "--fp8-recipe " + *r;
    }
    if (put(field::fp8_recipe, recipe, "--fp8-recipe")) note_read(field::fp8_recipe, from);
  } else if (Arg* r = get("--fp8-recipe")) {
    out_.ignored.push_back("--fp8-recipe " + joined(r->values) + ": FP8 is off without --fp8-format");
  }
  if (flag("--fp8-param-gather", field::fp8_param_gather) && put(field::fp8_param_gather, true, "--fp8-param-gather"))
    note_read(field::fp8_param_gather, "true (--fp8-param-gather)");
}

// Full recompute's grouping and selective recompute's modules (a list of words).
void MegatronReader::read_recompute() {
  choice("--recompute-method", field::recompute_method, k_recompute_methods);
  if (auto n = integer("--recompute-num-layers", field::recompute_num_layers);
      n && put(field::recompute_num_layers, double(*n), "--recompute-num-layers"))
    note_read(field::recompute_num_layers, "--recompute-num-layers " + number_text(double(*n)));
  if (Arg* a = get("--recompute-modules")) {
    if (a->values.empty()) {
      fail(field::recompute_modules, "--recompute-modules", "needs a value");
    } else if (put(field::recompute_modules, a->values, "--recompute-modules")) {
      note_read(field::recompute_modules, "--recompute-modules " + joined(a->values));
    }
  }
}

// The attention kernel. --attention-backend (flash, fused, unfused, local, auto; default auto)
// picks Transformer Engine's kernel; local is Megatron's own DotProductAttention, which keeps the
// softmax scores like unfused; --transformer-impl local builds the layers from that local spec;
// under auto, Transformer Engine picks by GPU and version unless NVTE_FLASH_ATTN=0 or
// NVTE_FUSED_ATTN=0 rules a kernel out (both off leaves its unfused attention).
void MegatronReader::read_attention(bool defines_model) {
  // --softmax-type (TransformerConfig.softmax_type, generated by ArgumentGroupFactory;
  // megatron/core/transformer/transformer_config.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553):
  // learnable is a per-head offset in each softmax's denominator, gpt-oss's sinks; off-by-one adds
  // a fixed 1 and no parameter, vanilla neither.
  if (auto type = word("--softmax-type", field::attention_sinks)) {
    if (*type != "vanilla" && *type != "off-by-one" && *type != "learnable") {
      fail(field::attention_sinks, "--softmax-type", "must be vanilla, off-by-one or learnable, got " + shown(*type));
    } else if (put(field::attention_sinks, *type == "learnable", "--softmax-type")) {
      note_read(field::attention_sinks, std::string(*type == "learnable" ? "true" : "false") + " (--softmax-type " + *type + ")");
    }
  }
  std::string backend = "auto";
  std::string from = "--attention-backend's default";
  if (auto b = word("--attention-backend", field::attention_backend)) {
    if (!one_of(*b, k_attention_backends)) {
      fail(field::attention_backend, "--attention-backend",
           "must be " + choices_text(k_attention_backends) + " (Megatron-LM's choices), got " + shown(*b));
      return;
    }
    backend = *b, from = "--attention-backend " + *b;
  }
  if (auto impl = word("--transformer-impl", field::attention_backend); impl && *impl == "local" && backend == "auto")
    backend = "local", from = "--transformer-impl local (Megatron's own DotProductAttention)";
  if (flag("--use-flash-attn", field::attention_backend) && backend == "auto")
    backend = "flash", from = "--use-flash-attn";
  if (backend == "auto") {
    const bool flash = nvte_flash_.value_or(true), fused = nvte_fused_.value_or(true);
    if (!flash && !fused) backend = "unfused", from = "NVTE_FLASH_ATTN=0 NVTE_FUSED_ATTN=0 (Transformer Engine's unfused attention)";
    else if (!flash) backend = "fused", from = "NVTE_FLASH_ATTN=0 (Transformer Engine's fused attention)";
    else if (!fused) backend = "flash", from = "NVTE_FUSED_ATTN=0 (Transformer Engine's flash attention)";
  }
  if (backend == "auto") {
    if (defines_model)
      out_.assumed.push_back(
          "attention_backend: not set (--attention-backend auto: Transformer Engine picks the kernel "
          "by GPU and version; set attention_backend for the GPU the run uses)");
    return;
  }
  const std::string field_value = backend == "local" ? "unfused" : backend;
  if (put(field::attention_backend, field_value, "--attention-backend"))
    note_read(field::attention_backend, field_value + " (" + from + ")");
}

void MegatronReader::read_rest() {
  // Recomputation: --recompute-activations means selective (validate_args), and wins.
  choice("--recompute-granularity", field::recompute_granularity, k_recompute_granularities);
  if (flag("--recompute-activations", field::recompute_granularity) &&
      put(field::recompute_granularity, std::string("selective"), "--recompute-activations"))
    note_read(field::recompute_granularity, "selective (--recompute-activations)");

  // Dropout probabilities (default 0.1 each, as the fields'), the expert capacity factor: as given.
  for (const auto& [arg, field] : {std::pair<std::string_view, FieldName>{"--attention-dropout", field::attention_dropout},
                                   {"--hidden-dropout", field::hidden_dropout},
                                   {"--moe-expert-capacity-factor", field::moe_expert_capacity_factor}})
    if (auto v = number(arg, field); v && put(field, *v, arg))
      note_read(field, std::string(arg) + " " + get(arg)->values[0]);
  // --rotary-percent (Megatron-LM's default 1.0): the fraction of each head's channels RoPE rotates.
  if (auto v = number("--rotary-percent", field::rotary_percent);
      v && put(field::rotary_percent, *v, "--rotary-percent"))
    note_read(field::rotary_percent, "--rotary-percent " + get("--rotary-percent")->values[0]);
  // --moe-router-score-function softmax or sigmoid (Megatron-LM's choices add sqrtsoftplus, named
  // below as not modelled; default softmax, the field's).
  modelled_choice("--moe-router-score-function", field::moe_router_score_function, {"softmax", "sigmoid"});
  // --moe-router-dtype fp32 (Megatron-LM's choices fp32, fp64; default None: the compute dtype).
  modelled_choice("--moe-router-dtype", field::moe_router_dtype, {"fp32"});
  // --optimizer adam (the default: Adam with decoupled weight decay, two states) or sgd (momentum,
  // one state): the optimizer table's rows of the same names.
  modelled_choice("--optimizer", field::optimizer, {"adam", "sgd"});
  // --optimizer-cpu-offload keeps --optimizer-offload-fraction (default 1.0) of the master weights
  // and optimizer states in CPU memory (HybridDeviceOptimizer); the fraction alone does nothing.
  const std::string_view fraction_arg = "--optimizer-offload-fraction";
  const bool cpu_offload = flag("--optimizer-cpu-offload", field::optimizer_offload_fraction);
  if (cpu_offload && !get("--use-precision-aware-optimizer")) {
    // validate_args: the hybrid device optimizer reuses the precision-aware optimizer's path
    // (arguments.py @ d98e8a64).
    fail(field::optimizer_offload_fraction, "--optimizer-cpu-offload",
         "needs --use-precision-aware-optimizer (Megatron-LM asserts it: the hybrid device optimizer "
         "reuses its code path)");
  } else if (cpu_offload) {
    const bool given = get(fraction_arg) != nullptr;
    if (const std::optional<double> fraction = given ? number(fraction_arg, field::optimizer_offload_fraction) : 1.0;
        fraction && put(field::optimizer_offload_fraction, *fraction, fraction_arg))
      note_read(field::optimizer_offload_fraction,
                given ? "--optimizer-cpu-offload " + std::string(fraction_arg) + " " + get(fraction_arg)->values[0]
                      : "--optimizer-cpu-offload (" + std::string(fraction_arg) + "'s default: 1.0)");
  } else if (Arg* f = get(fraction_arg)) {
    out_.ignored.push_back(std::string(fraction_arg) + " " + joined(f->values) + ": nothing is offloaded without --optimizer-cpu-offload");
  }
  // --cross-entropy-loss-fusion picks --cross-entropy-fusion-impl (default "native",
  // TransformerConfig.cross_entropy_fusion_impl). trainmem's fused loss is Transformer Engine's
  // (te_parallel_cross_entropy: the 16-bit logits and per-token statistics). Megatron's native
  // fused_vocab_parallel_cross_entropy (megatron/core/fusions/fused_cross_entropy.py) still casts
  // the logits to fp32 and saves the fp32 exp_logits for backward, as the unfused loss does.
  const std::string_view impl_arg = "--cross-entropy-fusion-impl";
  const std::optional<std::string> impl = get(impl_arg) ? word(impl_arg, field::cross_entropy_loss_fusion) : std::nullopt;
  if (impl && *impl != "native" && *impl != "te") {
    fail(field::cross_entropy_loss_fusion, impl_arg, "must be native or te, got " + shown(*impl));
  } else if (flag("--cross-entropy-loss-fusion", field::cross_entropy_loss_fusion)) {
    if (impl && *impl == "te") {
      if (put(field::cross_entropy_loss_fusion, true, "--cross-entropy-loss-fusion"))
        note_read(field::cross_entropy_loss_fusion, "true (--cross-entropy-loss-fusion " + std::string(impl_arg) + " te)");
    } else if (put(field::cross_entropy_loss_fusion, false, "--cross-entropy-loss-fusion")) {
      out_.assumed.push_back("cross_entropy_loss_fusion ← false (--cross-entropy-loss-fusion with " + std::string(impl_arg) + " " +
                             (impl ? "native" : "native, its default") +
                             ": Megatron's native fused loss keeps the fp32 softmax of the logits, as the unfused one does)");
    }
  } else if (impl) {
    out_.ignored.push_back(std::string(impl_arg) + " " + *impl + ": no --cross-entropy-loss-fusion, the loss is unfused");
  }

  // --moe-token-dispatcher-type alltoall or allgather; without it an MoE model runs Megatron-LM's
  // default, allgather (NVIDIA/Megatron-LM megatron/training/arguments.py @
  // 020d85e50ddf0f0282802002acb3662129a519c5: default='allgather'; TransformerConfig's
  // moe_token_dispatcher_type the same). flex (DeepEP) is listed below as not modelled.
  if (!modelled_choice("--moe-token-dispatcher-type", field::moe_token_dispatcher_type, {"alltoall", "allgather"}) &&
      int_field(field::num_moe_experts).value_or(0) > 0 &&
      put(field::moe_token_dispatcher_type, std::string("allgather"), "")) {
    out_.assumed.push_back(
        "moe_token_dispatcher_type ← allgather (no --moe-token-dispatcher-type: Megatron-LM's default)");
  }

  // Megatron-LM's NullTokenizer (--tokenizer-type NullTokenizer, the tests' mock data) counts an
  // EOD token after the --vocab-size ids: its vocab_size is --vocab-size + 1
  // (megatron/training/tokenizer/tokenizer.py _NullTokenizer.vocab_size).
  if (auto type = word("--tokenizer-type", field::vocab_size); type && *type == "NullTokenizer") {
    if (const std::optional<int64_t> n = int_field(field::vocab_size); n && put(field::vocab_size, double(*n + 1), "--vocab-size")) {
      const std::string plain = "vocab_size ← --vocab-size " + number_text(double(*n));
      std::erase(out_.read, plain);
      note_read(field::vocab_size, "--vocab-size " + number_text(double(*n)) + " + 1 (--tokenizer-type NullTokenizer adds the EOD token)");
    }
  } else if (type) {
    get("--tokenizer-type")->used = false;  // listed below with the other tokenizer arguments
  }
  const bool has_vocab = int_field(field::vocab_size).has_value();
  for (Arg& a : args_) {
    if (a.used) continue;
    a.used = true;
    std::string why = "not used by the estimate";
    for (const Unmodelled& u : k_unmodelled)
      if (u.arg == a.name) why = u.why;
    if (!has_vocab &&
        (a.name == "--tokenizer-type" || a.name == "--tokenizer-model" || a.name == "--vocab-file"))
      why =
          "Megatron-LM takes the vocabulary size from the tokenizer: set vocab_size (or "
          "--vocab-size)";
    // trainmem counts Megatron Core's alltoall and allgather dispatchers (docs/trainmem-profile.md §9).
    if (a.name == "--moe-token-dispatcher-type")
      why = "not modelled: trainmem counts the alltoall and allgather dispatchers' buffers (flex, "
            "DeepEP's, keeps others)";
    if (a.name == "--optimizer" && a.values.size() == 1)
      why = "not modelled (trainmem's optimizer table has adam and sgd of Megatron-LM's choices)";
    // Megatron-LM spells its arguments with dashes; underscores are another launcher's, most often
    // ms-swift's `megatron sft` (swift/megatron/argument/megatron_args.py), which the
    // ms-swift-megatron importer reads (ms_swift.cpp), its LoRA included.
    if (a.name.find('_') != std::string::npos)
      why = "not a Megatron-LM argument (Megatron-LM spells them with dashes; read an ms-swift `megatron "
            "sft` command with `trainmem import ms-swift-megatron`)";
    if (a.name == "--train_type" && a.values.size() == 1 && a.values[0] == "lora")
      why = "ms-swift's LoRA, not read here: read the `megatron sft` command with `trainmem import "
            "ms-swift-megatron` (peft, lora_rank, lora_dropout, lora_target_modules)";
    out_.ignored.push_back(a.name + (a.values.empty() ? "" : " " + joined(a.values)) + ": " + why);
  }
}

void MegatronReader::run(std::string_view text) {
  Words words = shell_words(text);
  if (!words.error.empty()) return fail("command_line", "command line", words.error);
  run_words(words.words);
}

void MegatronReader::run_words(const std::vector<std::string>& command) {
  Words words{command, {}};
  const size_t start = split(words.words);
  if (args_.empty())
    return fail("command_line", "command line", "no Megatron-LM arguments (--name value) found");
  read_launcher(words.words, start);

  for (const IntArg& a : k_int_args)
    if (auto v = integer(a.arg, a.field)) {
      ints_.emplace_back(a.field, *v);
      if (put(a.field, double(*v), a.arg))
        note_read(a.field, std::string(a.arg) + " " + number_text(double(*v)));
    }
  // A line that gives the model's shape describes the whole model: Megatron-LM's defaults hold
  // for everything it leaves out.
  const bool defines_model = int_field(field::hidden_size) || int_field(field::num_layers);
  out_.whole_model = defines_model;
  read_model(defines_model);
  read_parallel();
  // A Megatron-LM line describes a Megatron run: the trainmem profile follows Megatron's byte
  // model (the reference profiles do not read the field; merge_import leaves it out for them).
  if (put(field::framework, std::string("megatron"), "command line"))
    note_read(field::framework, "megatron (a Megatron-LM command line)");
  read_precision(defines_model);
  read_recompute();
  read_attention(defines_model);
  read_rest();
}

}  // namespace

LayerFreqValue parse_moe_layer_freq(std::string_view text) {
  LayerFreqValue out;
  if (text.empty()) return out.error = "needs a value", out;
  if (text.find_first_not_of("0123456789,[]()+*") != std::string_view::npos) {
    out.error =
        "only digits, commas, [, ], (, ), + and * are allowed (Megatron-LM's _eval_pattern), got " +
        shown(text);
    return out;
  }
  if (text.find('[') == std::string_view::npos) {
    // moe_freq_type: without a bracket the text is int(x).
    std::optional<int64_t> v = mapping::parse_int(text);
    if (!v)
      out.error =
          "must be an integer or a list expression such as ([0]*3+[1]*58), got " + shown(text);
    else
      out.every = *v;
    return out;
  }
  PyValue value;
  std::string error;
  if (!FreqParser(text).parse(value, error)) {
    out.error = error + " in " + shown(text);
  } else if (!value.is_list) {
    out.error = "the expression gives an integer, not a list: " + shown(text);
  } else {
    out.pattern = std::move(value.list);
  }
  return out;
}

void read_megatron_words(const std::vector<std::string>& words, ImportResult& out) {
  MegatronReader(out).run_words(words);
}

ImportResult import_megatron_args(std::string_view command_line) {
  ImportResult out;
  MegatronReader(out).run(command_line);
  if (!out.ok()) out.input = ConfigInput{};
  return out;
}

// Megatron-LM's functional-test config (tests/functional_tests/test_cases/*/model_config.yaml)
// turned into the command its launcher runs, as tests/functional_tests/shell_test_utils/
// _run_training.sh builds it: ENV_VARS exported before the launcher; torchrun with
// --nproc_per_node GPUS_PER_NODE (default 8) and --nnodes NUM_NODES (default 1); each MODEL_ARGS
// entry as `--key value`, a true value as the bare flag, a list (or a "[a b]" text, its brackets
// stripped) as its items, an empty value dropped. Everything else in the file (MODEL_ARGS_2 of a resumed second run, TEST_TYPE, the
// scripts around the run) says nothing about memory.
ImportResult import_megatron_test_config(std::string_view tree_json, const ImportOptions& options) {
  ImportResult out;
  // The file is the whole run: nothing to override or to choose a version of.
  if (!options.overrides.empty())
    out.issues.push_back(issue("overrides", "Megatron-LM's test config takes none: edit its MODEL_ARGS"));
  if (!options.version.empty())
    out.issues.push_back(issue("version", "Megatron-LM's test config takes none: its arguments say what the run did"));
  if (!out.issues.empty()) return out;
  const std::optional<nlohmann::json> tree = mapping::object_tree(tree_json, "model_config", out.issues);
  if (!tree) return out;
  const nlohmann::json* args = tree->contains("MODEL_ARGS") ? &(*tree)["MODEL_ARGS"] : nullptr;
  if (!args || !args->is_object()) {
    out.issues.push_back(issue("MODEL_ARGS", std::string(args ? "must be a mapping of arguments, got " + mapping::show(*args)
                                                                : "missing: a Megatron-LM test config names its arguments there")));
    return out;
  }
  const auto scalar_text = [](const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::vector<std::string> words;
  if (const auto env = tree->find("ENV_VARS"); env != tree->end() && env->is_object())
    for (const auto& [key, value] : env->items()) words.push_back(key + "=" + scalar_text(value));
  const int64_t gpus = options.gpus > 0 ? options.gpus : 8;
  words.insert(words.end(), {"torchrun", "--nproc_per_node", std::to_string(gpus), "--nnodes", "1", "pretrain_gpt.py"});
  for (const auto& [key, value] : args->items()) {
    if (value.is_boolean() && value.get<bool>()) {
      words.push_back(key);
    } else if (value.is_array()) {
      words.push_back(key);
      for (const nlohmann::json& item : value) words.push_back(scalar_text(item));
    } else if (!(value.is_string() && value.get<std::string>().empty())) {
      words.push_back(key);  // yq's tostring: false as "false", null as "null"
      const std::string text = scalar_text(value);
      // "[a b c]": the brackets stripped and the rest split at blanks (the launcher leaves it
      // unquoted); anything else, "(…)" and text with blanks included, is one word.
      if (value.is_string() && text.size() > 2 && text.front() == '[' && text.back() == ']' &&
          text.find(']') == text.size() - 1) {
        for (const std::string& w : shell_words(text.substr(1, text.size() - 2)).words) words.push_back(w);
      } else {
        words.push_back(text);
      }
    }
  }
  MegatronReader(out).run_words(words);
  if (!out.ok()) {
    out.input = ConfigInput{};
    return out;
  }
  out.read.insert(out.read.begin(),
                  "the command ← MODEL_ARGS and ENV_VARS as Megatron-LM's test launcher passes them "
                  "(_run_training.sh)");
  if (options.gpus > 0)
    out.read.insert(out.read.begin() + 1, "GPUS_PER_NODE ← --gpus " + std::to_string(options.gpus));
  else
    out.assumed.insert(out.assumed.begin(), "GPUS_PER_NODE = 8, NUM_NODES = 1: the test launcher's defaults (--gpus N, or the import's GPU count, to change)");
  for (const auto& [key, value] : tree->items())
    if (key != "MODEL_ARGS" && key != "ENV_VARS")
      out.ignored.push_back(key + (key == "MODEL_ARGS_2" ? ": the arguments of a resumed second run (the first run's are read)"
                                                        : ": not used by the estimate"));
  return out;
}

}  // namespace trainmem
