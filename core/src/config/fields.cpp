// The field table and reading or writing single fields of a ConfigInput.
#include <limits>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <variant>

#include "config/field_table.hpp"
#include "config/name_tables.hpp"
#include "internal.hpp"
#include "trainmem/config.hpp"
#include "trainmem/field_names.hpp"

namespace trainmem {

namespace {

// Largest accepted count. Larger values are not meaningful for any run and keep every product
// the estimator forms far from overflow in double arithmetic.
constexpr int64_t k_max_count = 1'000'000'000'000;      // 10^12
constexpr int64_t k_max_layers = 1'000'000;              // loops over layers stay bounded
constexpr int64_t k_max_parallel = 1'000'000'000;        // 10^9 ranks in one dimension

using IntMember = std::optional<int64_t> ConfigInput::*;
using BoolMember = std::optional<bool> ConfigInput::*;
using NumberMember = std::optional<double> ConfigInput::*;
// A choice field of any enumeration, reached through its index in the enumeration's name table.
struct ChoiceTarget {
  std::optional<size_t> (*get)(const ConfigInput&);
  void (*set)(ConfigInput&, std::optional<size_t>);
};
template <auto Member>
constexpr ChoiceTarget choice_target() {
  using E = typename std::remove_reference_t<decltype(ConfigInput{}.*Member)>::value_type;
  return {[](const ConfigInput& in) -> std::optional<size_t> {
            if (auto v = in.*Member) return size_t(*v);
            return std::nullopt;
          },
          [](ConfigInput& in, std::optional<size_t> v) {
            if (v) in.*Member = E(*v);
            else (in.*Member).reset();
          }};
}
using MaskMember = std::optional<uint32_t> ConfigInput::*;  // a set of choices (bit i: choice i)
struct MoeFreqTarget {};  // moe_layer_freq: an integer or a 0/1 list
using IntListMember = std::optional<std::vector<int64_t>> ConfigInput::*;  // a list of counts
using Target = std::variant<IntMember, BoolMember, NumberMember, ChoiceTarget, MaskMember, MoeFreqTarget,
                            IntListMember>;

// How a field's unset value resolves, and what the docs say about it. Simple defaults live in
// one place, `Config{}`: resolve() leaves such a field at Config{}'s value when it is unset, and
// the field documentation prints that value. Only defaults that follow from other fields keep
// prose (and a rule in resolve()).
struct Default {
  enum Kind : uint8_t { required, from_config, none_when_zero, derived } kind;
  std::string_view text;  // none_when_zero: what none means; derived: the rule in words
};
constexpr Default required() { return {Default::required, {}}; }
constexpr Default from_config() { return {Default::from_config, {}}; }
// 0 in Config stands for Megatron's None (config.hpp): unset, and not written back.
constexpr Default none_means(std::string_view meaning) { return {Default::none_when_zero, meaning}; }
constexpr Default derived(std::string_view rule) { return {Default::derived, rule}; }

// The Config member a field resolves into, reached without knowing its type: the two member
// pointers as data (`members`, a MemberLink of static storage) and functions of their types,
// shared by every field of those types (issue 31). A lambda per field and operation, as before,
// was ~260 functions that a page's first estimate compiled one at a time (wasm's lazy
// compilation, ~30 us each on the 2-core machine, 664 in all for a link's first answer).
struct ConfigLink {
  const void* members = nullptr;
  void (*copy_in_of)(const void*, const ConfigInput&, Config&) = nullptr;
  void (*copy_out_of)(const void*, const Config&, ConfigInput&) = nullptr;
  bool (*is_zero_of)(const void*, const Config&) = nullptr;
  FieldValue (*default_value_of)(const void*) = nullptr;

  bool input_only() const { return copy_in_of == nullptr; }  // a shorthand resolve() reads (swiglu)
  void copy_in(const ConfigInput& in, Config& c) const { copy_in_of(members, in, c); }      // when the input sets it
  void copy_out(const Config& c, ConfigInput& in) const { copy_out_of(members, c, in); }    // to_input
  bool is_zero(const Config& c) const { return is_zero_of(members, c); }  // Megatron's None, for none_when_zero
  FieldValue default_value() const { return default_value_of(members); }  // Config{}'s value, for the docs
};

// A Config value as a field value: enumerations by name, a set of choices as a bit mask.
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
FieldValue field_value_of(T v) {
  if constexpr (is_optional<T>::value) return v ? field_value_of(*v) : FieldValue(std::monostate{});
  else if constexpr (is_vector<T>::value) return std::monostate{};  // a list's default is none
  else if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_enum_v<T>) return std::string(name_of(v));
  else return double(v);
}

template <class InMember, class OutMember>
struct MemberLink {
  InMember in;    // std::optional<T> ConfigInput::*
  OutMember out;  // T Config::*
};
template <auto In, auto Out>
inline constexpr MemberLink<decltype(In), decltype(Out)> member_link{In, Out};

// The operations of one pair of member types.
template <class L>
struct LinkOps {
  static const L& of(const void* members) { return *static_cast<const L*>(members); }
  static void copy_in(const void* members, const ConfigInput& in, Config& c) {
    const L& l = of(members);
    if (const auto& v = in.*l.in) c.*l.out = *v;
  }
  static void copy_out(const void* members, const Config& c, ConfigInput& in) {
    const L& l = of(members);
    in.*l.in = c.*l.out;
  }
  static bool is_zero(const void* members, const Config& c) {  // a list: empty
    const L& l = of(members);
    return c.*l.out == std::remove_reference_t<decltype(c.*l.out)>{};
  }
  static FieldValue default_value(const void* members) { return field_value_of(Config{}.*of(members).out); }
};

template <auto In, auto Out>
constexpr ConfigLink config_link() {
  if constexpr (std::is_same_v<decltype(Out), std::nullptr_t>) {
    return {};  // an input-only shorthand (swiglu): resolve() reads it
  } else {
    using Ops = LinkOps<MemberLink<decltype(In), decltype(Out)>>;
    return {&member_link<In, Out>, &Ops::copy_in, &Ops::copy_out, &Ops::is_zero, &Ops::default_value};
  }
}

// What a row is called: its name (the config's key), its link key (short, stable, append-only:
// never reuse or rename one; a link may also use the name), its label (what a form shows, the
// name beside it) and, for a choice field whose names are a framework's words, the form's words
// for its choices (a table beside the names, name_tables.hpp).
struct FieldNames {
  FieldName name;  // a constant of trainmem/field_names.hpp
  std::string_view link_key, label;
  std::span<const std::string_view> choice_labels = {};
};

// Where the page's form shows a row (FormPlace), written next to its group: among its section's
// inputs or under the section's "More", at `order` (smaller first, unique in the section; steps
// of 10 leave room for a new row between two).
using S = FormSection;
constexpr FormPlace shown(FormSection section, uint16_t order) { return {section, false, order}; }
constexpr FormPlace in_more(FormSection section, uint16_t order) { return {section, true, order}; }
// The page sets the field itself and shows no input for it.
constexpr FormPlace set_by_page() { return {}; }

struct Field {
  FieldSpec spec;
  Target target;          // the ConfigInput member
  Default fallback;       // what an unset field resolves to
  ConfigLink config;      // the Config member
  // When the field means something for a resolved config: to_input writes it back only then,
  // and resolve() rejects it set otherwise with `applies_rule` (when there is one).
  bool (*applies)(const Config&) = nullptr;
  std::string_view applies_rule = {};
  std::array<FieldName, 2> applies_by = {};  // the fields `applies` reads (the rule's related fields)
  // For a field the core accepts anywhere: when it has an effect (a view shows it only then; set
  // elsewhere it is no error, it changes nothing). See fields_in_effect.
  bool (*in_effect)(const Config&) = nullptr;
};

constexpr std::span<const std::string_view> no_choices{};

template <auto In, auto Out = nullptr>
constexpr Field int_field(FieldNames names, FieldGroup group, FormPlace form, int64_t min, int64_t max,
                std::string_view unit, Default fallback, std::string_view description) {
  return {{names.name, FieldType::integer, group, fallback.kind == Default::required, double(min),
           double(max), no_choices, unit, {}, description, false, {}, names.link_key, names.label, form},
          IntMember(In), fallback, config_link<In, Out>()};
}
template <auto In, auto Out = nullptr>
constexpr Field number_field(FieldNames names, FieldGroup group, FormPlace form, double min, double max,
                   std::string_view unit, Default fallback, std::string_view description) {
  return {{names.name, FieldType::number, group, false, min, max, no_choices, unit, {}, description, false, {}, names.link_key, names.label, form},
          NumberMember(In), fallback, config_link<In, Out>()};
}
template <auto In, auto Out = nullptr>
constexpr Field bool_field(FieldNames names, FieldGroup group, FormPlace form, Default fallback,
                 std::string_view description) {
  return {{names.name, FieldType::boolean, group, false, 0, 1, no_choices, "", {}, description, false, {}, names.link_key, names.label, form},
          BoolMember(In), fallback, config_link<In, Out>()};
}
template <auto In, auto Out = nullptr>
constexpr Field choice_field(FieldNames names, FieldGroup group, FormPlace form, Default fallback,
                   std::string_view description) {
  using E = typename std::remove_reference_t<decltype(ConfigInput{}.*In)>::value_type;
  return {{names.name, FieldType::choice, group, false, 0, 0, enum_table<E>(), "", {}, description, false, {}, names.link_key, names.label, form,
           names.choice_labels},
          choice_target<In>(), fallback, config_link<In, Out>()};
}
template <class E, auto In, auto Out = nullptr>
constexpr Field choice_list_field(FieldNames names, FieldGroup group, FormPlace form, Default fallback,
                        std::string_view description) {
  // Config's member is the bit mask (uint32_t): its default_value is that number.
  return {{names.name, FieldType::choice_list, group, false, 0, 0, enum_table<E>(), "", {}, description, false, {}, names.link_key, names.label, form,
           names.choice_labels},
          MaskMember(In), fallback, config_link<In, Out>()};
}
// A list of whole numbers from `min` to `max`, at most k_max_layers of them.
template <auto In, auto Out>
constexpr Field int_list_field(FieldNames names, FieldGroup group, FormPlace form, int64_t min, int64_t max,
                     std::string_view unit, Default fallback, std::string_view description) {
  return {{names.name, FieldType::integer_list, group, false, double(min), double(max), no_choices, unit, {}, description, false, {}, names.link_key, names.label, form},
          IntListMember(In), fallback, config_link<In, Out>()};
}
// Marks a field as read only by the trainmem profile.
constexpr Field trainmem_only(Field f) {
  f.spec.trainmem_only = true;
  return f;
}
// Marks when a field means something (see Field::applies).
constexpr Field applies_when(Field f, bool (*applies)(const Config&), std::string_view rule = {},
                   std::initializer_list<FieldName> by = {}) {
  f.applies = applies;
  f.applies_rule = rule;
  // The table is built once at start: a rule naming more fields than the row holds is the core's
  // own mistake, found by every test, never a silently shorter list.
  if (by.size() > f.applies_by.size()) throw std::logic_error(std::string(f.spec.name) + ": applies_by holds 2 fields");
  std::copy(by.begin(), by.end(), f.applies_by.begin());
  return f;
}

// Marks when a field the core accepts anywhere has an effect (see Field::in_effect).
constexpr Field in_effect_when(Field f, bool (*in_effect)(const Config&)) {
  f.in_effect = in_effect;
  return f;
}

// The conditions under which fields apply.
bool moe_model(const Config& c) { return c.is_moe(); }
bool hf_moe(const Config& c) {
  return c.is_moe() && c.model_implementation == ModelImplementation::hf_transformers;
}
bool latent_attention(const Config& c) { return c.multi_latent_attention; }
bool shards_with_zero_stage(const Config& c) {
  return c.framework == Framework::deepspeed || c.framework == Framework::fsdp2;
}
bool fsdp2(const Config& c) { return c.framework == Framework::fsdp2; }
bool fsdp1(const Config& c) { return c.framework == Framework::fsdp2 && c.fsdp_version == 1; }
bool sgd(const Config& c) { return c.optimizer == Optimizer::sgd; }
bool torch_optim(const Config& c) { return c.pytorch_native(); }
bool full_recompute(const Config& c) { return c.recompute_granularity == RecomputeGranularity::full; }
bool selective_recompute(const Config& c) {
  return c.recompute_granularity == RecomputeGranularity::selective;
}
bool per_op_recompute(const Config& c) {
  return c.recompute_granularity == RecomputeGranularity::selective_op;
}
bool torch_pipelining(const Config& c) { return c.torch_pipelining(); }
bool peft_on(const Config& c) { return c.peft_on(); }
bool qlora_on(const Config& c) { return c.peft == Peft::qlora; }
// bitsandbytes' 4-bit fields (double quantisation, MatMul4Bit's kept input): an NF4 base.
bool qlora_nf4(const Config& c) { return c.peft == Peft::qlora && c.params_dtype == Dtype::nf4; }
// When fields the core accepts anywhere have an effect (the page showed them by rules of its
// own, web/js/layout.js APPLIES, until these rows carried them).
bool pipelined(const Config& c) { return c.pipeline_model_parallel_size > 1; }
bool deepspeed(const Config& c) { return c.framework == Framework::deepspeed; }
bool deepspeed_contiguous(const Config& c) { return deepspeed(c) && c.contiguous_gradients; }
bool ddp(const Config& c) { return c.framework == Framework::ddp; }
// Megatron's distributed optimizer: what the reference profiles read, and the trainmem profile
// under Megatron (the PyTorch frameworks shard by their own rules).
bool megatron_optimizer(const Config& c) {
  return c.profile != Profile::trainmem || c.framework == Framework::megatron;
}
bool fp8_on(const Config& c) { return c.fp8_recipe != Fp8Recipe::none; }
// Megatron's distributed optimizer under the trainmem profile (the precision-aware optimizer needs it).
bool megatron_distributed_optimizer(const Config& c) {
  return c.framework == Framework::megatron && c.use_distributed_optimizer;
}
bool ddp_or_fsdp2(const Config& c) { return ddp(c) || c.framework == Framework::fsdp2; }
bool pytorch_framework(const Config& c) { return c.framework != Framework::megatron; }
bool pageable_optimizer(const Config& c) {
  return pytorch_framework(c) && (c.optimizer == Optimizer::adam || c.optimizer == Optimizer::adamw ||
                                  c.optimizer == Optimizer::adam8bit || c.optimizer == Optimizer::lion);
}
bool chunkable_loss(const Config& c) {
  return pytorch_framework(c) && c.model_implementation != ModelImplementation::torchtitan;
}
bool compilable(const Config& c) {
  return pytorch_framework(c) && c.model_implementation != ModelImplementation::megatron_core;
}
// A Hugging Face transformers model under a PyTorch framework (the Trainer's loop).
bool hf_trainer_model(const Config& c) {
  return pytorch_framework(c) && c.model_implementation == ModelImplementation::hf_transformers;
}
// Liger and Cut Cross Entropy patch Hugging Face transformers' models.
bool liger_patchable(const Config& c) { return hf_trainer_model(c); }
// The Trainer evaluating between steps (prediction_step), where the KV cache matters.
bool hf_evaluates(const Config& c) { return hf_trainer_model(c) && c.eval_micro_batch_size > 0; }
// ... and keeping each step's predictions for compute_metrics.
bool hf_keeps_predictions(const Config& c) {
  return hf_evaluates(c) && c.eval_predictions != EvalPredictions::none;
}
// transformers' own ForCausalLMLoss: a Hugging Face model whose loss nothing replaces or compiles.
bool plain_hf_loss(const Config& c) {
  return liger_patchable(c) && !c.cut_cross_entropy && !c.fused_linear_cross_entropy && !c.cross_entropy_loss_fusion &&
         c.cross_entropy_chunks <= 1 && !c.torch_compile;
}
// transformers' own loss somewhere in the job: in every step (plain_hf_loss), or in the evaluation
// only, under Liger's fused linear cross entropy, whose forward materialises the logits outside
// training and calls the model's loss_function (transformers >= 4.46.1) or upcasts and shifts them
// in its own lce_forward_deprecated (earlier releases) (linkedin/Liger-Kernel
// src/liger_kernel/transformers/monkey_patch.py @ v0.5.8, SUPPORTED_TRANSFORMER_VERSION "4.46.1";
// model/qwen2.py @ 98d77e07, v0.4.0 on).
bool hf_loss_somewhere(const Config& c) {
  return liger_patchable(c) && !c.cut_cross_entropy && !c.cross_entropy_loss_fusion && c.cross_entropy_chunks <= 1 &&
         !c.torch_compile;
}
bool fsdp2_full_shard(const Config& c) { return c.framework == Framework::fsdp2 && c.zero_stage == 3; }

// moe_layer_freq: an integer or a 0/1 list, each with its own member on both sides.
constexpr ConfigLink moe_layer_freq_link() {
  return {nullptr,
          [](const void*, const ConfigInput& in, Config& c) {
            if (in.moe_layer_freq) c.moe_layer_freq = *in.moe_layer_freq;
            if (in.moe_layer_freq_list) c.moe_layer_freq_list = *in.moe_layer_freq_list;
          },
          [](const void*, const Config& c, ConfigInput& in) {
            if (c.moe_layer_freq_list.empty()) in.moe_layer_freq = c.moe_layer_freq;
            else in.moe_layer_freq_list = c.moe_layer_freq_list;
          },
          nullptr, [](const void*) { return FieldValue(double(Config{}.moe_layer_freq)); }};
}

using G = FieldGroup;
using C = ConfigInput;

// The rows are constant data (issue 31: built at run time they were the wasm module's largest
// function, compiled on the first call).
constexpr Field k_field_rows[] = {
      choice_field<&C::profile, &Config::profile>(
          {field::profile, "prof", "Estimator profile"}, G::profile, shown(S::training, 20), from_config(),
          "Which estimator to reproduce: megatron-bridge (Megatron-Bridge "
          "estimate_training_memory), megatron-lm (Megatron-LM theoretical_memory_usage) "
          "or trainmem (the default: every framework, precision, optimizer, per-tensor "
          "activations on every pipeline stage, runtime overheads)."),
      // Model shape.
      int_field<&C::num_layers, &Config::num_layers>(
          {field::num_layers, "L", "Layers"}, G::model, shown(S::model, 10), 1, k_max_layers, "layers", required(),
          "Transformer (decoder) layers, L."),
      int_field<&C::hidden_size, &Config::hidden_size>(
          {field::hidden_size, "h", "Hidden size"}, G::model, shown(S::model, 20), 1, k_max_count, "", required(),
          "Hidden size h."),
      int_field<&C::num_attention_heads, &Config::num_attention_heads>(
          {field::num_attention_heads, "a", "Attention heads"}, G::model, shown(S::model, 30), 0, k_max_count, "heads", required(),
          "Attention (query) heads a; 0: blocks without attention (trainmem profile)."),
      int_field<&C::num_query_groups, &Config::num_query_groups>(
          {field::num_query_groups, "g", "KV heads (query groups)"}, G::model, shown(S::model, 40),
          1, k_max_count, "groups", derived("num_attention_heads (MHA)"),
          "Key/value head groups g (GQA); must divide the heads."),
      int_field<&C::kv_channels, &Config::kv_channels>(
          {field::kv_channels, "kv", "Head dimension"}, G::model, shown(S::model, 50),
          1, k_max_count, "", derived("hidden_size / num_attention_heads"),
          "Channels per attention head k (head_dim)."),
      int_field<&C::ffn_hidden_size, &Config::ffn_hidden_size>(
          {field::ffn_hidden_size, "ffn", "FFN hidden size"}, G::model, shown(S::model, 60),
          1, k_max_count, "", derived("4 × hidden_size (megatron-lm with SwiGLU: int(8h/3/64)·64)"),
          "MLP intermediate size f."),
      int_field<&C::vocab_size, &Config::vocab_size>(
          {field::vocab_size, "V", "Vocabulary size"}, G::model, shown(S::model, 70), 0, k_max_count, "tokens", required(),
          "Vocabulary size V (before padding); 0: no embedding or output layer (trainmem "
          "profile)."),
      int_field<&C::make_vocab_size_divisible_by, &Config::make_vocab_size_divisible_by>(
          {field::make_vocab_size_divisible_by, "Vdiv", "Pad vocabulary to a multiple of"}, G::model, in_more(S::model, 260),
          1, k_max_count, "", from_config(),
          "Vocabulary padding multiple m; padded V = ceil(V / (m·TP))·m·TP."),
      int_field<&C::max_position_embeddings, &Config::max_position_embeddings>(
          {field::max_position_embeddings, "maxpos", "Learned position embeddings"}, G::model, in_more(S::model, 300),
          1, k_max_count, "tokens", none_means(""),
          "Learned absolute position embeddings (GPT-2/3 style); the reference profiles do "
          "not count them (reference §3.2)."),
      trainmem_only(number_field<&C::rotary_percent, &Config::rotary_percent>(
          {field::rotary_percent, "rotp", "RoPE fraction of head channels"}, G::model, in_more(S::model, 310), 0, 1, "", from_config(),
          "Megatron --rotary-percent (transformers' partial_rotary_factor): the fraction of each "
          "head's channels RoPE rotates; the rest pass through. Only the rotary tables narrow: "
          "the cos and sin a transformers model keeps (int(k·this) wide); q and k keep their "
          "width, and Megatron Core's shared frequency table is not counted.")),
      bool_field<&C::should_pad_vocab, &Config::should_pad_vocab>(
          {field::should_pad_vocab, "Vpad", "Pad vocabulary"}, G::model, in_more(S::model, 270), from_config(),
          "megatron-bridge: pad the vocabulary before counting (megatron-lm always pads)."),
      bool_field<&C::share_embeddings_and_output_weights, &Config::share_embeddings_and_output_weights>(
          {field::share_embeddings_and_output_weights, "tied", "Tied input/output embeddings"}, G::model, shown(S::model, 100), from_config(),
          "Tie the input embedding and the output layer."),
      bool_field<&C::gated_linear_unit, &Config::gated_linear_unit>(
          {field::gated_linear_unit, "glu", "Gated MLP (GLU)"}, G::model, shown(S::model, 80), from_config(),
          "Gated MLP (GLU): fc1 has two halves."),
      choice_field<&C::activation_func, &Config::activation_func>(
          {field::activation_func, "act", "Activation"}, G::model, shown(S::model, 90), from_config(),
          "MLP activation; with gated_linear_unit, silu is SwiGLU and gelu GeGLU."),
      bool_field<&C::swiglu>(
          {field::swiglu, "swiglu", "SwiGLU (Megatron-LM flag)"}, G::model, in_more(S::model, 250), derived("false"),
          "Megatron-LM's --swiglu: shorthand for gated_linear_unit=true, activation_func=silu."),
      choice_field<&C::normalization, &Config::normalization>(
          {field::normalization, "norm", "Normalization"}, G::model, in_more(S::model, 230), from_config(),
          "Normalization layer (megatron-lm counts RMSNorm as h, LayerNorm as 2h)."),
      bool_field<&C::add_bias_linear, &Config::add_bias_linear>(
          {field::add_bias_linear, "bias", "Linear layers have biases"}, G::model, in_more(S::model, 240), from_config(),
          "Linear layers have biases (megatron-lm counts the router bias)."),
      bool_field<&C::add_qkv_bias, &Config::add_qkv_bias>(
          {field::add_qkv_bias, "qkvb", "Biases on Q, K, V (Qwen2)"}, G::model, in_more(S::model, 320), from_config(),
          "Biases on the query/key/value projections only (Qwen2); not counted by the "
          "reference profiles."),
      bool_field<&C::qk_layernorm, &Config::qk_layernorm>(
          {field::qk_layernorm, "qkln", "Norm on each query and key head"}, G::model, in_more(S::model, 330), from_config(),
          "A norm on each query and key head (Qwen3, OLMo 2); not counted by the reference "
          "profiles."),
      bool_field<&C::attention_sinks, &Config::attention_sinks>(
          {field::attention_sinks, "sink", "Learned attention sinks (gpt-oss)"}, G::model, in_more(S::model, 340), from_config(),
          "A learned sink logit per head and layer that joins each row of scores before the softmax "
          "(gpt-oss, GptOssAttention.sinks): num_attention_heads parameters a layer, and in eager "
          "attention a softmax over s + 1 columns. transformers' gpt-oss has no SDPA path, so "
          "model_implementation hf-transformers defaults attention_backend to unfused (eager). Not "
          "counted by the reference profiles."),
      // MoE and MTP.
      int_field<&C::num_moe_experts, &Config::num_moe_experts>(
          {field::num_moe_experts, "E", "Routed experts (0 = dense)"}, G::moe, shown(S::model, 110),
          0, k_max_count, "experts", none_means("dense model"),
          "Routed experts per MoE layer E; unset or 0 for a dense model."),
      applies_when({{field::moe_layer_freq, FieldType::integer_or_list, G::moe, false, 1, k_max_layers,
                     no_choices, "", {},
                     "Which layers are MoE: every n-th layer (layer i is MoE iff i % n == 0), or a "
                     "0/1 list with one entry per layer.", false, {}, "freq", "MoE layer pattern", shown(S::model, 150)},
                    MoeFreqTarget{}, from_config(), moe_layer_freq_link()},
                   moe_model),
      applies_when(int_field<&C::moe_ffn_hidden_size, &Config::moe_ffn_hidden_size>(
          {field::moe_ffn_hidden_size, "fe", "Expert FFN size"}, G::moe, shown(S::model, 120), 1, k_max_count, "", derived("ffn_hidden_size"),
          "Intermediate size of one routed expert f_e."), moe_model),
      applies_when(int_field<&C::moe_router_topk, &Config::moe_router_topk>(
          {field::moe_router_topk, "topk", "Experts per token (top-k)"}, G::moe, shown(S::model, 130), 1, k_max_count, "experts", from_config(),
          "Experts each token is routed to K."), moe_model),
      applies_when(trainmem_only(number_field<&C::moe_routing_imbalance, &Config::moe_routing_imbalance>(
          {field::moe_routing_imbalance, "mri", "Routing imbalance (most-loaded GPU / mean)"}, G::moe, in_more(S::model, 350),
          1, 1e6, "", from_config(),
          "Routing imbalance: the tokens the most-loaded GPU's experts receive over the balanced "
          "share T·K·ETP (max over GPUs / mean). 1.0 = perfectly balanced (no published "
          "per-GPU, per-microbatch measurement to default from); capped at what one GPU's "
          "experts can receive, EP·min(K, E/EP)/K.")), moe_model),
      applies_when(int_field<&C::moe_shared_expert_intermediate_size, &Config::moe_shared_expert_intermediate_size>(
          {field::moe_shared_expert_intermediate_size, "fs", "Shared expert FFN size"}, G::moe, shown(S::model, 140),
          0, k_max_count, "", from_config(),
          "Total intermediate size of the shared experts f_s."), moe_model),
      applies_when(int_field<&C::moe_latent_size, &Config::moe_latent_size>(
          {field::moe_latent_size, "lat", "MoE latent size"}, G::moe, in_more(S::model, 280), 1, k_max_count, "", none_means(""),
          "Latent MoE: experts work in a latent space of this size."), moe_model),
      applies_when(bool_field<&C::moe_shared_expert_gate, &Config::moe_shared_expert_gate>(
          {field::moe_shared_expert_gate, "sgate", "Shared expert gate"}, G::moe, in_more(S::model, 290), from_config(),
          "Shared experts have a gate (megatron-lm counts h parameters for it)."), moe_model),
      in_effect_when(trainmem_only(bool_field<&C::moe_fused_expert_params, &Config::moe_fused_expert_params>(
          {field::moe_fused_expert_params, "mfep", "Experts as one 3D parameter (gpt-oss)"}, G::moe, in_more(S::model, 360), from_config(),
          "transformers' experts are 3D parameters indexed per expert (GptOssExperts: "
          "gate_up_proj[expert_idx]), not one nn.Linear per expert (Mixtral, Qwen-MoE): each "
          "expert's backward makes a gradient the size of the whole parameter, one more at a "
          "time in an MoE layer's backward. `trainmem import hf` sets it for model_type gpt_oss.")), hf_moe),
      int_field<&C::mtp_num_layers, &Config::mtp_num_layers>(
          {field::mtp_num_layers, "mtp", "Multi-token prediction layers"}, G::moe, shown(S::model, 160), 0, k_max_layers, "layers", from_config(),
          "Multi-token-prediction layers after the decoder."),
      // Multi-latent attention.
      bool_field<&C::multi_latent_attention, &Config::multi_latent_attention>(
          {field::multi_latent_attention, "mla", "Multi-latent attention (MLA)"}, G::mla, shown(S::model, 170), from_config(),
          "DeepSeek multi-latent attention (counted by megatron-lm only)."),
      applies_when(int_field<&C::q_lora_rank, &Config::q_lora_rank>(
          {field::q_lora_rank, "qr", "Query LoRA rank"}, G::mla, shown(S::model, 180), 1, k_max_count, "", none_means("full-rank queries"),
          "MLA query low-rank size r_q; unset: full-rank queries."), latent_attention),
      applies_when(int_field<&C::kv_lora_rank, &Config::kv_lora_rank>(
          {field::kv_lora_rank, "kvr", "KV LoRA rank"}, G::mla, shown(S::model, 190), 1, k_max_count, "", from_config(),
          "MLA key/value low-rank size r_kv."), latent_attention),
      applies_when(int_field<&C::qk_head_dim, &Config::qk_head_dim>(
          {field::qk_head_dim, "qkd", "QK head dimension"}, G::mla, shown(S::model, 200), 1, k_max_count, "", from_config(),
          "MLA query/key head size without the rotary part."), latent_attention),
      applies_when(int_field<&C::qk_pos_emb_head_dim, &Config::qk_pos_emb_head_dim>(
          {field::qk_pos_emb_head_dim, "roped", "RoPE head dimension"}, G::mla, shown(S::model, 210), 0, k_max_count, "", from_config(),
          "MLA rotary (decoupled) head size."), latent_attention),
      applies_when(int_field<&C::v_head_dim, &Config::v_head_dim>(
          {field::v_head_dim, "vd", "V head dimension"}, G::mla, shown(S::model, 220), 1, k_max_count, "", from_config(),
          "MLA value head size."), latent_attention),
      // Training.
      int_field<&C::seq_length, &Config::seq_length>(
          {field::seq_length, "s", "Sequence length"}, G::training, shown(S::run, 30), 1, k_max_count, "tokens", required(),
          "Sequence length s."),
      int_field<&C::micro_batch_size, &Config::micro_batch_size>(
          {field::micro_batch_size, "b", "Micro-batch size"}, G::training, shown(S::run, 40), 1, k_max_count, "sequences", required(),
          "Micro batch size b."),
      int_field<&C::global_batch_size, &Config::global_batch_size>(
          {field::global_batch_size, "gbs", "Global batch size"}, G::training, shown(S::training, 10), 1, k_max_count, "sequences", none_means(""),
          "Global batch size; gives num_microbatches = global / (micro × DP)."),
      int_field<&C::num_microbatches, &Config::num_microbatches>(
          {field::num_microbatches, "nmb", "Microbatches per step"}, G::training, in_more(S::training, 30),
          1, k_max_count, "microbatches", none_means(""),
          "Microbatches per step per pipeline (limits the in-flight ones when PP > 1)."),
      in_effect_when(bool_field<&C::use_distributed_optimizer, &Config::use_distributed_optimizer>(
          {field::use_distributed_optimizer, "dopt", "Distributed optimizer (ZeRO-1)"}, G::training, shown(S::parallelism, 120), from_config(),
          "Megatron's distributed optimizer (ZeRO-1): master weights and Adam states "
          "sharded over data-parallel ranks."), megatron_optimizer),
      bool_field<&C::sequence_parallel, &Config::sequence_parallel>(
          {field::sequence_parallel, "sp", "Sequence parallel"}, G::training, shown(S::parallelism, 110), from_config(),
          "Megatron sequence parallelism (only with TP > 1)."),
      choice_field<&C::recompute_granularity, &Config::recompute_granularity>(
          {field::recompute_granularity, "rc", "Activation recompute (checkpointing)", k_recompute_labels}, G::training, shown(S::run, 60),
          from_config(),
          "Activation recomputation, also called activation checkpointing (full: every layer, "
          "as FSDP/Hugging Face gradient checkpointing; selective: Megatron's core attention; "
          "selective_op: torchtitan's per-op checkpointing, trainmem profile only)."),
      // Frameworks, precisions, optimizers, offload: the trainmem profile (issue 4).
      trainmem_only(choice_field<&C::framework, &Config::framework>(
          {field::framework, "fw", "Framework"}, G::training, shown(S::run, 50), from_config(),
          "Whose memory behaviour to follow: megatron (distributed optimizer optional), "
          "deepspeed (ZeRO 0-3), fsdp2 (PyTorch FSDP2, full or grad/optimizer sharding), ddp "
          "(plain PyTorch DDP with AMP).")),
      trainmem_only(choice_field<&C::model_implementation, &Config::model_implementation>(
          {field::model_implementation, "mimpl", "Model code (what autograd keeps)"}, G::training, shown(S::finetuning, 10),
          derived("megatron-core (framework fsdp2: torchtitan; ddp and deepspeed: hf-transformers)"),
          "Whose model code runs the layers, which decides what autograd keeps for backward: "
          "megatron-core (Megatron Core's Transformer Engine layers, norms fused into the "
          "linears), hf-transformers (Hugging Face transformers' modeling code as the Llama "
          "family has it: unfused fp32 RMSNorm, rotary cos/sin, repeat_kv, SwiGLU as four "
          "tensors, fp32 loss), torchtune (its llama3 modules) or torchtitan (its llama3 model, "
          "nn.RMSNorm). For the three PyTorch ones attention_backend unfused is eager attention "
          "(torchtune and torchtitan: SDPA's math path) and flash or fused is SDPA's fused kernel "
          "(Hugging Face sdpa or flash_attention_2).")),
      applies_when(trainmem_only(int_field<&C::zero_stage, &Config::zero_stage>(
          {field::zero_stage, "zero", "ZeRO / FSDP stage"}, G::training, shown(S::framework, 10), 0, 3, "", derived("deepspeed 0; fsdp2 3"),
          "ZeRO stage: deepspeed 0-3; fsdp2 3 = full shard, 2 = shard gradients and optimizer.")), shards_with_zero_stage),
      applies_when(trainmem_only(int_field<&C::data_parallel_shard_size, &Config::data_parallel_shard_size>(
          {field::data_parallel_shard_size, "dps", "Shard group size (HSDP)"}, G::parallelism, shown(S::framework, 20),
          1, k_max_parallel, "GPUs", derived("data_parallel_size"),
          "fsdp2: ranks one shard group spans (HSDP replicates the "
          "shards over data_parallel_size / this).")), fsdp2,
          "applies to fsdp2 (hybrid sharding) only", {field::framework}),
      applies_when(trainmem_only(int_field<&C::fsdp_version, &Config::fsdp_version>(
          {field::fsdp_version, "fsdpv", "FSDP version"}, G::training, in_more(S::training, 40), 1, 2, "", from_config(),
          "fsdp2: which PyTorch FSDP runs it, as accelerate's fsdp_version names them: 2 = "
          "fully_shard (FSDP2, per-parameter DTensor shards), 1 = FullyShardedDataParallel "
          "(FSDP1: one FlatParameter per wrapped unit; no forward prefetch, so one gathered unit "
          "in forward and two in backward with BACKWARD_PRE; gathered units and unsharded "
          "gradients freed with record_stream, at most two all-gathers in flight under "
          "limit_all_gathers; the gradient cast to reduce_dtype only when it differs). "
          "zero_stage 3 is FULL_SHARD, 2 SHARD_GRAD_OP; data_parallel_shard_size "
          "HYBRID_SHARD; NO_SHARD is framework ddp with gradient_as_bucket_view.")), fsdp2,
          "applies to fsdp2 only", {field::framework}),
      applies_when(trainmem_only(bool_field<&C::fsdp1_checkpoint_around_unit, &Config::fsdp1_checkpoint_around_unit>(
          {field::fsdp1_checkpoint_around_unit, "f1cu", "Checkpoint around each FSDP1 unit"}, G::training, in_more(S::training, 50),
          derived("true with model_implementation hf-transformers and recompute_granularity full "
                  "(transformers' gradient_checkpointing), else false"),
          "FSDP1 with recompute_granularity full: each decoder layer's checkpoint wraps its "
          "FullyShardedDataParallel unit, as transformers' gradient_checkpointing does under "
          "accelerate (the model checkpoints decoder_layer.__call__, the FSDP wrapper), not inside "
          "it (apply_activation_checkpointing after wrapping: accelerate's "
          "fsdp_activation_checkpointing, fsdp_qlora's train.py: false). With frozen units (peft) "
          "and a reentrant checkpoint (checkpoint_reentrant), FSDP1 hooks the recomputed layer's "
          "detached input, which then keeps that input and its gradient until backward ends.")), fsdp1,
          "applies with fsdp_version 1 only", {field::framework, field::fsdp_version}),
      trainmem_only(int_field<&C::gpus_per_node, &Config::gpus_per_node>(
          {field::gpus_per_node, "gpn", "GPUs per node"}, G::parallelism, in_more(S::framework, 190), 1, 1024, "GPUs", from_config(),
          "GPUs per node, for CPU memory per node.")),
      trainmem_only(choice_field<&C::params_dtype, &Config::params_dtype>(
          {field::params_dtype, "dt", "Weights dtype"}, G::training, shown(S::framework, 30), derived("bf16 (ddp: fp32; peft qlora: nf4)"),
          "Storage type of the model weights (nf4: the frozen base linears of peft qlora; int8: "
          "those of peft qlora as bitsandbytes LLM.int8 stores them, load_in_8bit).")),
      in_effect_when(trainmem_only(choice_field<&C::expert_params_dtype, &Config::expert_params_dtype>(
          {field::expert_params_dtype, "edt", "Expert weights dtype"}, G::training, shown(S::framework, 80), derived("params_dtype"),
          "Storage type of routed-expert weights (e.g. mxfp4 for GPT-OSS).")), moe_model),
      trainmem_only(choice_field<&C::compute_dtype, &Config::compute_dtype>(
          {field::compute_dtype, "cdt", "Compute dtype"}, G::training, shown(S::framework, 40),
          derived("params_dtype (ddp, nf4 or int8 weights: bf16)"),
          "Type the matmuls run in; below params_dtype it "
          "is autocast, which caches low-precision weight copies.")),
      trainmem_only(bool_field<&C::master_weights, &Config::master_weights>(
          {field::master_weights, "mw", "Master weights"}, G::training, shown(S::framework, 50), from_config(),
          "Keep higher-precision master weights (main_params_dtype) when params_dtype is lower.")),
      trainmem_only(choice_field<&C::main_params_dtype, &Config::main_params_dtype>(
          {field::main_params_dtype, "mdt", "Master weights dtype"}, G::training, in_more(S::framework, 90), from_config(),
          "Master weights type (Megatron --main-params-dtype).")),
      trainmem_only(choice_field<&C::main_grads_dtype, &Config::main_grads_dtype>(
          {field::main_grads_dtype, "gdt", "Gradient dtype"}, G::training, in_more(S::framework, 100), from_config(),
          "Gradient accumulation type (Megatron --main-grads-dtype; FSDP2 reduce_dtype).")),
      trainmem_only(choice_field<&C::exp_avg_dtype, &Config::exp_avg_dtype>(
          {field::exp_avg_dtype, "m1dt", "First moment dtype"}, G::training, in_more(S::framework, 110), from_config(),
          "First-moment (momentum) state type (Megatron --exp-avg-dtype).")),
      trainmem_only(choice_field<&C::exp_avg_sq_dtype, &Config::exp_avg_sq_dtype>(
          {field::exp_avg_sq_dtype, "m2dt", "Second moment dtype"}, G::training, in_more(S::framework, 120), from_config(),
          "Second-moment state type (Megatron --exp-avg-sq-dtype).")),
      trainmem_only(choice_field<&C::fp8_recipe, &Config::fp8_recipe>(
          {field::fp8_recipe, "fp8", "FP8 recipe"}, G::training, shown(S::framework, 60), from_config(),
          "FP8 training recipe (Transformer Engine): extra FP8 weight copies and transposes.")),
      in_effect_when(trainmem_only(bool_field<&C::fp8_param_gather, &Config::fp8_param_gather>(
          {field::fp8_param_gather, "fp8pg", "FP8 weights (param gather)"}, G::training, shown(S::framework, 70), from_config(),
          "Keep the weights themselves in FP8 (Megatron --fp8-param-gather).")), fp8_on),
      in_effect_when(trainmem_only(bool_field<&C::store_param_remainders, &Config::store_param_remainders>(
          {field::store_param_remainders, "spr", "Master weights as remainders"}, G::training, in_more(S::framework, 105), from_config(),
          "Megatron's precision-aware optimizer (--use-precision-aware-optimizer, Megatron Core 0.11+ with "
          "Transformer Engine 2.1+) keeps only the low 16 bits of each bf16 weight's fp32 master "
          "(store_param_remainders, on there by default): 2 bytes, not 4. Not with an FP8 recipe other "
          "than delayed, fp32-only states offloaded, or main_params_dtype other than fp32.")),
                     megatron_distributed_optimizer),
      trainmem_only(choice_field<&C::optimizer, &Config::optimizer>(
          {field::optimizer, "opt", "Optimizer"}, G::training, shown(S::optimizer, 10), from_config(),
          "Optimizer; its states per parameter come from the optimizer table.")),
      applies_when(trainmem_only(choice_field<&C::optimizer_implementation, &Config::optimizer_implementation>(
          {field::optimizer_implementation, "oimpl", "Adam implementation (torch.optim)"}, G::training, shown(S::optimizer, 30), from_config(),
          "How torch.optim Adam/AdamW steps (frameworks ddp and fsdp2; torchtitan's "
          "optimizer.implementation): foreach keeps a copy of every exp_avg_sq as the "
          "denominator, for-loop one tensor's at a time, fused none. Megatron and DeepSpeed step "
          "with their fused multi-tensor Adam.")), torch_optim),
      applies_when(trainmem_only(number_field<&C::momentum, &Config::momentum>(
          {field::momentum, "mom", "SGD momentum"}, G::training, shown(S::optimizer, 20), 0, 1, "", from_config(),
          "SGD momentum; 0 keeps no momentum buffer.")), sgd,
          "applies to optimizer \"sgd\" only", {field::optimizer}),
      trainmem_only(number_field<&C::optimizer_offload_fraction, &Config::optimizer_offload_fraction>(
          {field::optimizer_offload_fraction, "ooff", "Optimizer offload to CPU (fraction)"}, G::training, shown(S::optimizer, 40),
          0, 1, "", from_config(),
          "Share of master weights and optimizer states kept in CPU memory "
          "(Megatron --optimizer-offload-fraction; deepspeed offload_optimizer = 1).")),
      trainmem_only(bool_field<&C::offload_params, &Config::offload_params>(
          {field::offload_params, "poff", "Offload weights to CPU"}, G::training, shown(S::optimizer, 50), from_config(),
          "Keep sharded weights in CPU memory (ZeRO-3 offload_param, FSDP2 CPUOffloadPolicy).")),
      in_effect_when(trainmem_only(bool_field<&C::fsdp_embedding_units, &Config::fsdp_embedding_units>(
          {field::fsdp_embedding_units, "feu", "FSDP: embedding and output layer as their own units"}, G::training, in_more(S::training, 60),
          from_config(),
          "fsdp2: the embedding and the output layer are FSDP units of their own, gathered for "
          "their forward and backward and resharded after each (torchtune custom_sharded_layers "
          "['tok_embeddings', 'output']), instead of staying unsharded in the root unit from the "
          "forward to the end of backward.")), fsdp2_full_shard),
      in_effect_when(trainmem_only(bool_field<&C::zero_init, &Config::zero_init>(
          {field::zero_init, "zinit", "Partitioned init (zero.Init)"}, G::training, in_more(S::framework, 130), from_config(),
          "deepspeed: construct the model partitioned (zero.Init), as DeepSpeed's estimator asks.")), deepspeed),
      in_effect_when(trainmem_only(number_field<&C::reduce_bucket_size, &Config::reduce_bucket_size>(
          {field::reduce_bucket_size, "rbs", "Reduce bucket (elements)"}, G::training, in_more(S::framework, 150), 0, 1e13, "elements", from_config(),
          "deepspeed: zero_optimization.reduce_bucket_size (default 5e8). With contiguous_gradients "
          "ZeRO-3 keeps a bucket of this many elements in the gradients' type for the whole run "
          "(stage3.py __ipg_bucket_flat_buffer); ZeRO-1/2 allocate one, two with overlap_comm, "
          "for each backward pass (stage_1_and_2.py ipg_buffer).")), deepspeed_contiguous),
      in_effect_when(trainmem_only(bool_field<&C::contiguous_gradients, &Config::contiguous_gradients>(
          {field::contiguous_gradients, "cgr", "Contiguous gradients (reduce bucket)"}, G::training, in_more(S::framework, 140), from_config(),
          "deepspeed: zero_optimization.contiguous_gradients (default true): gradients are copied "
          "into the reduce bucket (reduce_bucket_size); false keeps no bucket.")), deepspeed),
      in_effect_when(trainmem_only(bool_field<&C::overlap_comm, &Config::overlap_comm>(
          {field::overlap_comm, "ovc", "Overlap communication"}, G::training, in_more(S::framework, 160),
          derived("true at zero_stage 3, else false (DeepSpeed's default)"),
          "deepspeed: zero_optimization.overlap_comm: ZeRO-1/2 double the backward's reduce bucket.")), deepspeed),
      in_effect_when(trainmem_only(number_field<&C::additional_buffer_factor, &Config::additional_buffer_factor>(
          {field::additional_buffer_factor, "abf", "DeepSpeed CPU buffer factor"}, G::training, in_more(S::framework, 170), 1, 100, "", from_config(),
          "deepspeed: CPU buffer factor of DeepSpeed's estimator.")), deepspeed),
      in_effect_when(trainmem_only(bool_field<&C::gradient_as_bucket_view, &Config::gradient_as_bucket_view>(
          {field::gradient_as_bucket_view, "gbv", "Gradients as bucket views"}, G::training, in_more(S::framework, 180), from_config(),
          "ddp: gradients are views into the all-reduce buckets (no second gradient copy).")), ddp),
      // Read by every profile: the verdict (fit_verdict) judges any profile's figure against it.
      number_field<&C::gpu_memory_bytes, &Config::gpu_memory_bytes>(
          {field::gpu_memory_bytes, "gpu_memory_bytes", "GPU memory"}, G::training, set_by_page(), 0, 1e15, "bytes", none_means(""),
          "Capacity of one GPU: whether the figure fits (every profile); the trainmem profile also "
          "gives the minimum number of devices and what of paged optimizer states stays on it."),
      // Runtime overheads: what max_memory_reserved and nvidia-smi add (trainmem profile).
      trainmem_only(number_field<&C::allocator_fragmentation, &Config::allocator_fragmentation>(
          {field::allocator_fragmentation, "frag", "Allocator fragmentation (fraction)"}, G::training, shown(S::runtime, 10), 0, 10, "",
          none_means("the larger of 5 % over the allocated peak and the simulated allocator"),
          "PyTorch's caching allocator. Unset: reserved is the larger of the allocated peak × 1.05 "
          "and a model of the allocator (c10/cuda/CUDACachingAllocator.cpp: 512 B rounding, small "
          "and large pools, 2 MiB and 20 MiB segments, best fit with splitting, freed blocks kept "
          "cached, each stream its own blocks, record_stream'ed frees waiting for their streams; "
          "expandable segments where the launcher sets them: expandable_segments) run over two steps' "
          "allocations. The factor is a floor where the model sees lumps (backward and optimizer "
          "temporaries it does not know as separate tensors); the model is the mechanism "
          "elsewhere. Set above 0: reserved = allocated × (1 + this) alone (from "
          "torch.cuda.memory_stats of a run); 0: the model alone, never below the allocated peak.")),
      trainmem_only(bool_field<&C::expandable_segments, &Config::expandable_segments>(
          {field::expandable_segments, "exseg", "Allocator expandable segments"}, G::training, shown(S::runtime, 15),
          derived("true with model_implementation torchtitan (its launcher sets it), else false (PyTorch's default)"),
          "PYTORCH_CUDA_ALLOC_CONF=\"expandable_segments:True\" (PYTORCH_ALLOC_CONF from PyTorch 2.9), "
          "as many launchers set it (torchtitan's run_train.sh, ms-swift's examples): the simulated "
          "caching allocator maps pages at the end of one segment per pool and stream instead of "
          "allocating new segments, so reserved stays closer to allocated (Note [Expandable "
          "Segments], c10/cuda/CUDACachingAllocator.cpp). Reserved is still at least the allocated "
          "peak × 1.05 unless allocator_fragmentation is set.")),
      trainmem_only(number_field<&C::cuda_context_bytes, &Config::cuda_context_bytes>(
          {field::cuda_context_bytes, "ctx", "CUDA context"}, G::training, shown(S::runtime, 20), 0, 1e12, "bytes", from_config(),
          "CUDA context and loaded kernels (lazy module loading, PyTorch's default since 1.13); "
          "counted in nvidia-smi, not in PyTorch's figures.")),
      trainmem_only(number_field<&C::nccl_bytes_per_communicator, &Config::nccl_bytes_per_communicator>(
          {field::nccl_bytes_per_communicator, "nccl", "NCCL per communicator"}, G::training, shown(S::runtime, 30), 0, 1e12, "bytes", from_config(),
          "NCCL ring and tree buffers of one communicator: per channel one "
          "ring and two tree (chain) receive connections, each holding the Simple (NCCL_BUFFSIZE "
          "4 MiB), LL128 (4.6875 MiB) and LL (0.5 MiB) buffers in one 10 MiB allocation (2 MiB "
          "cuMem granularity; NVIDIA/nccl#1685), 24 channels on 8-GPU H100/H200 boards. "
          "Communicators: the world and each process group that runs a collective (the result's "
          "nccl_groups).")),
      trainmem_only(bool_field<&C::nccl_nvls, &Config::nccl_nvls>(
          {field::nccl_nvls, "nvls", "NVLink SHARP buffers (NVSwitch)"}, G::training, shown(S::runtime, 40), from_config(),
          "NVLink SHARP (NVSwitch boards: H100/H200/B200 SXM): a communicator of more than two "
          "GPUs on one node also binds 24 channels x 2 x (4 + 2) MiB per GPU of it (288 MiB x "
          "GPUs; NCCL 2.17-2.20 nvls.cc, NCCL_NVLS_ENABLE=0 turns it off).")),
      trainmem_only(number_field<&C::workspace_bytes, &Config::workspace_bytes>(
          {field::workspace_bytes, "ws", "Library workspaces"}, G::training, shown(S::runtime, 50), 0, 1e12, "bytes", from_config(),
          "Library workspaces PyTorch allocates through its caching allocator: the cuBLAS and "
          "cuBLASLt workspaces (32 MiB each on Hopper and newer; CUBLAS_WORKSPACE_CONFIG=:4096:8) "
          "and Transformer Engine's cuBLASLt workspace (32 MiB on sm90+, 4 MiB before). Megatron "
          "CI's after-step allocation sits 99 MiB above model state on H100.")),
      // Activations: the trainmem profile (issue 5).
      trainmem_only(choice_field<&C::attention_backend, &Config::attention_backend>(
          {field::attention_backend, "attn", "Attention kernel"}, G::training, shown(S::activations, 10),
          derived("flash (attention_sinks with model_implementation hf-transformers: unfused, transformers' eager)"),
          "Attention kernel: flash keeps the softmax statistics; fused (cuDNN's fused attention: "
          "Transformer Engine FusedAttention, PyTorch SDPA's cuDNN backend, which torchtitan puts "
          "first on sm100 GPUs such as B200 since its PR #1196) keeps the same; unfused keeps the "
          "s² scores.")),
      applies_when(trainmem_only(bool_field<&C::op_sac_saves_cudnn_attention, &Config::op_sac_saves_cudnn_attention>(
          {field::op_sac_saves_cudnn_attention, "sacc", "Per-op SAC saves cuDNN attention (torchtitan 0.2.1+)"}, G::training, in_more(S::activations, 90),
          from_config(),
          "selective_op: torchtitan's per-op save list names cuDNN's SDPA kernel "
          "(_scaled_dot_product_cudnn_attention), as it does since PR #2095 (December 2025, "
          "torchtitan 0.2.1). Before, with attention_backend fused the attention output and its "
          "statistics are not saved: backward recomputes them.")), per_op_recompute,
          "applies to recompute_granularity \"selective_op\" only", {field::recompute_granularity}),
      trainmem_only(number_field<&C::attention_dropout, &Config::attention_dropout>(
          {field::attention_dropout, "adrop", "Attention dropout"}, G::training, in_more(S::activations, 100), 0, 1, "", from_config(),
          "Attention dropout probability (a mask is saved when above 0).")),
      trainmem_only(number_field<&C::hidden_dropout, &Config::hidden_dropout>(
          {field::hidden_dropout, "hdrop", "Hidden dropout"}, G::training, in_more(S::activations, 110), 0, 1, "", from_config(),
          "Hidden dropout probability (a mask is saved when above 0).")),
      in_effect_when(trainmem_only(number_field<&C::moe_expert_capacity_factor, &Config::moe_expert_capacity_factor>(
          {field::moe_expert_capacity_factor, "cf", "Expert capacity factor"}, G::moe, in_more(S::activations, 120),
          0, 1e6, "", none_means("dropless"),
          "Expert capacity factor: an expert takes at most this multiple of the average tokens "
          "(padded to it with moe_pad_expert_input_to_capacity).")), moe_model),
      applies_when(trainmem_only(bool_field<&C::moe_pad_expert_input_to_capacity, &Config::moe_pad_expert_input_to_capacity>(
          {field::moe_pad_expert_input_to_capacity, "mpad", "Pad experts to capacity"}, G::moe, in_more(S::model, 370), from_config(),
          "Megatron Core: pad every expert's tokens to the capacity, so each GPU permutes and sends "
          "E·capacity token copies (without it: the routed copies, T·K at most).")), moe_model),
      applies_when(trainmem_only(choice_field<&C::moe_router_dtype, &Config::moe_router_dtype>(
          {field::moe_router_dtype, "mrdt", "MoE router dtype"}, G::moe, in_more(S::model, 380), from_config(),
          "Megatron Core --moe-router-dtype: the router's logits and the routing probabilities the "
          "dispatcher keeps per MoE layer in fp32, or (none) in the compute dtype.")), moe_model),
      applies_when(trainmem_only(bool_field<&C::moe_permute_fusion, &Config::moe_permute_fusion>(
          {field::moe_permute_fusion, "mpf", "Fused MoE permutation (TE)"}, G::moe, in_more(S::model, 390), from_config(),
          "Megatron Core --moe-permute-fusion: Transformer Engine's fused permutation keeps an "
          "index map per token and expert instead of two int64 indices per routed copy.")), moe_model),
      applies_when(trainmem_only(choice_field<&C::moe_token_dispatcher_type, &Config::moe_token_dispatcher_type>(
          {field::moe_token_dispatcher_type, "mtd", "MoE token dispatcher"}, G::moe, in_more(S::model, 400), from_config(),
          "Megatron Core --moe-token-dispatcher-type. \"alltoall\": each GPU sends its routed "
          "token copies to the experts' GPUs (Megatron-Bridge's and NeMo's MoE recipes, "
          "ms-swift). \"allgather\": every GPU gathers all tokens of its expert-TP x EP group "
          "and keeps those routed to its own experts (Megatron-LM's command-line default), so "
          "the gathered tokens, their routing map and probabilities are G times one GPU's.")), moe_model),
      applies_when(trainmem_only(choice_field<&C::moe_router_score_function, &Config::moe_router_score_function>(
          {field::moe_router_score_function, "mrsf", "MoE router score function"}, G::moe, in_more(S::model, 410), from_config(),
          "Megatron Core --moe-router-score-function. \"softmax\": the top-k of the logits, "
          "softmax over the k chosen (and the load-balancing loss's softmax over all experts). "
          "\"sigmoid\" (DeepSeek-V3, GLM-4.5): a sigmoid per expert over all experts, kept in "
          "fp32 for backward, the k chosen scores normalised to sum to 1 (and the load-balancing "
          "loss's own sigmoid).")), moe_model),
      applies_when(trainmem_only(bool_field<&C::moe_router_enable_expert_bias, &Config::moe_router_enable_expert_bias>(
          {field::moe_router_enable_expert_bias, "mreb", "MoE router expert bias"}, G::moe, in_more(S::model, 420), from_config(),
          "Megatron Core --moe-router-enable-expert-bias (sigmoid router only): a per-expert bias "
          "added to the scores for choosing the experts (DeepSeek-V3's auxiliary-loss-free "
          "balancing). Each MoE layer keeps the bias and a token count per expert (fp32, "
          "8·E bytes); the scores of the chosen experts are gathered, as many as without it.")), moe_model),
      applies_when(trainmem_only(choice_field<&C::recompute_method, &Config::recompute_method>(
          {field::recompute_method, "rcm", "Recompute method"}, G::training, shown(S::activations, 20), from_config(),
          "With full recompute: uniform (groups of recompute_num_layers) or block (the first "
          "recompute_num_layers of each stage).")), full_recompute,
          "applies to recompute_granularity \"full\" only", {field::recompute_granularity}),
      applies_when(trainmem_only(int_field<&C::recompute_num_layers, &Config::recompute_num_layers>(
          {field::recompute_num_layers, "rcn", "Recompute layers"}, G::training, shown(S::activations, 30),
          1, k_max_layers, "layers", none_means("all layers"),
          "Layers per recompute group (uniform) or recomputed per stage (block).")), full_recompute,
          "applies to recompute_granularity \"full\" only", {field::recompute_granularity}),
      applies_when(trainmem_only(choice_list_field<RecomputeModule, &C::recompute_modules, &Config::recompute_modules>(
          {field::recompute_modules, "rcmod", "Recomputed modules"}, G::training, shown(S::activations, 40), from_config(),
          "With selective recompute: the submodules recomputed.")), selective_recompute,
          "applies to recompute_granularity \"selective\" only", {field::recompute_granularity}),
      // The default follows each model's own checkpointing (resolve.cpp derive_trainmem_defaults):
      // transformers' gradient_checkpointing_enable takes {"use_reentrant": True} when given no
      // gradient_checkpointing_kwargs (src/transformers/modeling_utils.py @
      // 040ba146759afc625c77f49d04982bb54873995f, explicit from PR #28538, January 2024, and
      // torch's own default True before it; PR #43203, merged 2026-01-09 after the 4.x releases, makes
      // it False); TRL's
      // SFTTrainer passes False from v0.28 (PR #4811, trl @ f2cd5771: setdefault("use_reentrant",
      // False) below transformers 5.0.0; True for PEFT under ZeRO-3), which an importer cannot see;
      // torchtune's and torchtitan's checkpoint_wrapper run CheckpointImpl.NO_REENTRANT.
      applies_when(trainmem_only(bool_field<&C::checkpoint_reentrant, &Config::checkpoint_reentrant>(
          {field::checkpoint_reentrant, "rcre", "Reentrant checkpointing (use_reentrant)"}, G::training, in_more(S::activations, 80),
          derived("true with model_implementation hf-transformers (transformers 4.x's "
                  "gradient_checkpointing_enable default), else false"),
          "torch.utils.checkpoint's reentrant mode (transformers gradient_checkpointing_kwargs "
          "{\"use_reentrant\": true}, its default in transformers 4.x): each checkpointed layer "
          "saves the same inputs, but its backward holds the recomputed layer's output and the "
          "incoming gradient until the layer's backward ends, and the layer's non-tensor arguments "
          "(transformers' cos/sin) until the step's graph is freed. torchtune and torchtitan "
          "checkpoint non-reentrantly.")), full_recompute,
          "applies to recompute_granularity \"full\" only", {field::recompute_granularity}),
      in_effect_when(trainmem_only(choice_field<&C::pipeline_schedule, &Config::pipeline_schedule>(
          {field::pipeline_schedule, "sched", "Pipeline schedule"}, G::parallelism, shown(S::activations, 50),
          derived("interleaved with VPP, else 1f1b"),
          "Pipeline schedule: how many microbatches each "
          "stage keeps in flight.")), pipelined),
      applies_when(trainmem_only(choice_field<&C::pipeline_outputs, &Config::pipeline_outputs>(
          {field::pipeline_outputs, "ppout", "Last stage keeps outputs (torch pipelining)"}, G::parallelism, shown(S::activations, 60), from_config(),
          "Frameworks ddp and fsdp2 with PP (torch.distributed.pipelining): the last stage keeps "
          "every microbatch's model output until the step ends. kept: the logits in the compute "
          "dtype (torchtitan 2025 on: 16-bit logits, step(return_outputs=False)); "
          "kept_fp32_merged: fp32 logits, concatenated once more when step() returns them "
          "(torchtitan and torch of December 2024: the model's .float(), _merge_outputs).")), torch_pipelining,
          "applies to frameworks ddp and fsdp2 with pipeline_model_parallel_size > 1 "
          "(torch.distributed.pipelining)", {field::framework, field::pipeline_model_parallel_size}),
      trainmem_only(bool_field<&C::cross_entropy_loss_fusion, &Config::cross_entropy_loss_fusion>(
          {field::cross_entropy_loss_fusion, "cef", "Fused cross entropy"}, G::training, shown(S::activations, 70), from_config(),
          "Fused cross entropy: no fp32 copy of the logits.")),
      // Parallelism.
      int_field<&C::tensor_model_parallel_size, &Config::tensor_model_parallel_size>(
          {field::tensor_model_parallel_size, "tp", "Tensor parallel (TP)"}, G::parallelism, shown(S::parallelism, 10),
          1, k_max_parallel, "GPUs", from_config(),
          "Tensor parallel size TP."),
      int_field<&C::pipeline_model_parallel_size, &Config::pipeline_model_parallel_size>(
          {field::pipeline_model_parallel_size, "pp", "Pipeline parallel (PP)"}, G::parallelism, shown(S::parallelism, 20),
          1, k_max_parallel, "stages", from_config(),
          "Pipeline parallel size PP."),
      in_effect_when(int_field<&C::virtual_pipeline_model_parallel_size, &Config::virtual_pipeline_model_parallel_size>(
          {field::virtual_pipeline_model_parallel_size, "vpp", "Virtual stages per GPU (VPP)"}, G::parallelism, shown(S::parallelism, 70),
          1, k_max_layers, "chunks", none_means("no interleaving"),
          "Virtual pipeline stages per rank (interleaved schedule)."), pipelined),
      in_effect_when(int_field<&C::num_layers_in_first_pipeline_stage, &Config::num_layers_in_first_pipeline_stage>(
          {field::num_layers_in_first_pipeline_stage, "ppf", "Layers in first stage"}, G::parallelism, shown(S::parallelism, 80),
          1, k_max_layers, "layers", none_means("even split"),
          "Layers on the first pipeline stage (uneven split)."), pipelined),
      in_effect_when(int_field<&C::num_layers_in_last_pipeline_stage, &Config::num_layers_in_last_pipeline_stage>(
          {field::num_layers_in_last_pipeline_stage, "ppl", "Layers in last stage"}, G::parallelism, shown(S::parallelism, 90),
          1, k_max_layers, "layers", none_means("even split"),
          "Layers on the last pipeline stage (uneven split)."), pipelined),
      in_effect_when(trainmem_only(int_list_field<&C::pipeline_stage_layers, &Config::pipeline_stage_layers>(
          {field::pipeline_stage_layers, "ppsl", "Layers per virtual stage"}, G::parallelism, shown(S::parallelism, 100),
          0, k_max_layers, "layers", none_means("the split the fields above give"),
          "Decoder layers in each virtual pipeline stage, for any split: one entry per stage, "
          "pipeline_model_parallel_size × virtual_pipeline_model_parallel_size of them, stage s "
          "on rank s mod PP as its chunk s / PP (the order of Megatron's "
          "--pipeline-model-parallel-layout and torchtitan's looped stages). An entry may be 0. "
          "The embedding is on stage 0; MTP, the output layer and the loss on the last.")), pipelined),
      int_field<&C::context_parallel_size, &Config::context_parallel_size>(
          {field::context_parallel_size, "cp", "Context parallel (CP)"}, G::parallelism, shown(S::parallelism, 40),
          1, k_max_parallel, "GPUs", from_config(),
          "Context parallel size CP."),
      in_effect_when(int_field<&C::expert_model_parallel_size, &Config::expert_model_parallel_size>(
          {field::expert_model_parallel_size, "ep", "Expert parallel (EP)"}, G::parallelism, shown(S::parallelism, 50),
          1, k_max_parallel, "GPUs", from_config(),
          "Expert parallel size EP."), moe_model),
      in_effect_when(int_field<&C::expert_tensor_parallel_size, &Config::expert_tensor_parallel_size>(
          {field::expert_tensor_parallel_size, "etp", "Expert tensor parallel (ETP)"}, G::parallelism, shown(S::parallelism, 60),
          1, k_max_parallel, "GPUs", derived("tensor_model_parallel_size"),
          "Tensor parallel size inside experts ETP."), moe_model),
      int_field<&C::data_parallel_size, &Config::data_parallel_size>(
          {field::data_parallel_size, "dp", "Data parallel (DP)"}, G::parallelism, shown(S::parallelism, 30),
          1, k_max_parallel, "GPUs", from_config(),
          "Data parallel size DP."),
      int_field<&C::world_size, &Config::world_size>(
          {field::world_size, "world", "GPUs in all"}, G::parallelism, shown(S::run, 20), 1, k_max_parallel, "GPUs",
          derived("tensor_model_parallel_size × pipeline_model_parallel_size × context_parallel_size × data_parallel_size"),
          "Total GPUs of the run (torchrun's world size). Given, data_parallel_size follows as "
          "world_size / (TP × PP × CP) (Megatron's data-parallel size)."),
      // Fine-tuning and memory-saving techniques: the trainmem profile (issue 13).
      trainmem_only(choice_field<&C::peft, &Config::peft>(
          {field::peft, "peft", "Method (full, LoRA or QLoRA)", k_peft_labels}, G::finetuning, shown(S::run, 10), from_config(),
          "Parameter-efficient fine-tuning: lora freezes the base weights (no gradients, "
          "optimizer states or master weights for them) and trains low-rank adapters A (in × r) "
          "and B (r × out) on lora_target_modules; qlora also stores the frozen base linears in "
          "4-bit NF4 (params_dtype nf4, bitsandbytes Linear4bit / torchtune QLoRA).")),
      applies_when(trainmem_only(int_field<&C::lora_rank, &Config::lora_rank>(
          {field::lora_rank, "lr", "LoRA rank"}, G::finetuning, shown(S::finetuning, 30), 1, 1'000'000, "", from_config(),
          "LoRA rank r (Hugging Face PEFT LoraConfig.r, default 8).")), peft_on,
          "applies to peft \"lora\" or \"qlora\" only", {field::peft}),
      applies_when(trainmem_only(choice_list_field<LoraTarget, &C::lora_target_modules, &Config::lora_target_modules>(
          {field::lora_target_modules, "ltm", "LoRA target modules"}, G::finetuning, shown(S::finetuning, 20), from_config(),
          "Linear layers that get adapters, by Hugging Face PEFT's names (q_proj, v_proj is "
          "PEFT's default for Llama); lm_head is the output layer. In an MoE model gate_proj, "
          "up_proj and down_proj are every routed expert's (Mixtral's w1, w3, w2); with "
          "model_implementation megatron-core, ms-swift's adapters on the grouped experts' "
          "linear_fc1 (gate_proj and up_proj together) and linear_fc2 (down_proj), and q_proj, "
          "k_proj and v_proj together are one adapter on the fused linear_qkv.")), peft_on,
          "applies to peft \"lora\" or \"qlora\" only", {field::peft}),
      applies_when(trainmem_only(choice_list_field<SavedModule, &C::lora_modules_to_save, &Config::lora_modules_to_save>(
          {field::lora_modules_to_save, "lms", "Modules trained whole (PEFT modules_to_save)"}, G::finetuning, in_more(S::finetuning, 110),
          from_config(),
          "Modules PEFT trains whole beside the adapters (LoraConfig.modules_to_save): each gets a "
          "trainable copy in the base's dtype, with gradients and optimizer states, while the "
          "frozen original stays (often embed_tokens and lm_head when new tokens are added).")), peft_on,
          "applies to peft \"lora\" or \"qlora\" only", {field::peft}),
      applies_when(trainmem_only(number_field<&C::lora_dropout, &Config::lora_dropout>(
          {field::lora_dropout, "ldrop", "LoRA dropout"}, G::finetuning, in_more(S::finetuning, 120), 0, 1, "", from_config(),
          "Dropout on each adapter's input (PEFT LoraConfig.lora_dropout, default 0): above 0 "
          "every adapter saves its own dropped input and a mask.")), peft_on,
          "applies to peft \"lora\" or \"qlora\" only", {field::peft}),
      applies_when(in_effect_when(trainmem_only(choice_field<&C::lora_expert_dtype, &Config::lora_expert_dtype>(
          {field::lora_expert_dtype, "ledt", "Expert adapters dtype"}, G::finetuning, in_more(S::finetuning, 125),
          derived("the other adapters' dtype"),
          "Storage and compute type of the adapters on routed experts (gate_proj, up_proj, "
          "down_proj in an MoE model). ms-swift's Megatron LoRA from 2025-07-10 (ea766ff5b) to "
          "2025-08-20 (e2f4d85a9) built them in fp32 and cast back only adapters whose base has a "
          "single weight, which the grouped experts have not: fp32 adapters there, and their "
          "input cast to fp32.")), moe_model), peft_on,
          "applies to peft \"lora\" or \"qlora\" only", {field::peft}),
      applies_when(trainmem_only(bool_field<&C::nf4_double_quant, &Config::nf4_double_quant>(
          {field::nf4_double_quant, "dq", "Double quantisation (bnb_4bit_use_double_quant)"}, G::finetuning, in_more(S::finetuning, 130),
          derived("true with model_implementation torchtune (torchao NF4 always), else false "
                  "(transformers BitsAndBytesConfig)"),
          "QLoRA's double quantisation (bitsandbytes compress_statistics; transformers "
          "bnb_4bit_use_double_quant, TRL use_bnb_nested_quant, PEFT's examples use_nested_quant): "
          "each NF4 block of 64 keeps its absmax as one uint8 plus an fp32 per 256 blocks "
          "(0.516 B per parameter) instead of one fp32 (0.5625 B).")), qlora_nf4,
          "applies to peft \"qlora\" with params_dtype \"nf4\" only", {field::peft, field::params_dtype}),
      applies_when(trainmem_only(bool_field<&C::quantize_lm_head, &Config::quantize_lm_head>(
          {field::quantize_lm_head, "qlmh", "Output layer in 4 bits too (lm_head quantised)"}, G::finetuning, in_more(S::finetuning, 140),
          derived("true with model_implementation torchtune when lm_head is among "
                  "lora_target_modules, else false"),
          "QLoRA: the output layer is an NF4 linear too, dequantised whole in its forward and "
          "backward (transformers: llm_int8_skip_modules given without \"lm_head\"; torchtune: "
          "an adapter on the output with quantize_base). Otherwise it stays in the compute dtype "
          "(transformers keeps lm_head out of the 4-bit conversion by default).")), qlora_on,
          "applies to peft \"qlora\" only", {field::peft}),
      applies_when(trainmem_only(bool_field<&C::bnb_keeps_matmul_input, &Config::bnb_keeps_matmul_input>(
          {field::bnb_keeps_matmul_input, "bkmi", "bitsandbytes before 0.43.2 (keeps each 4-bit linear's input)"}, G::finetuning, in_more(S::finetuning, 160),
          from_config(),
          "QLoRA on bitsandbytes 0.41.0 to 0.43.1: MatMul4Bit keeps every Linear4bit's input "
          "(ctx.tensors, beside autograd's saved tensors) until backward, even for a linear "
          "without an adapter; fixed in 0.43.2 (PR #1270, 2024-07), which the default follows. "
          "Under reentrant gradient checkpointing only the recomputed layer's inputs stay; under "
          "the non-reentrant one (checkpoint_reentrant false) every checkpointed layer's stay "
          "beside the checkpoints.")),
          qlora_nf4, "applies to peft \"qlora\" with params_dtype \"nf4\" only", {field::peft, field::params_dtype}),
      applies_when(trainmem_only(choice_field<&C::kbit_upcast, &Config::kbit_upcast>(
          {field::kbit_upcast, "kbu", "Unquantised weights after prepare_model_for_kbit_training"}, G::finetuning, in_more(S::finetuning, 150),
          derived("\"none\" with model_implementation torchtune, framework fsdp2 or deepspeed "
                  "zero_stage 3 (sharded QLoRA: TRL and axolotl skip the call); else \"peft\""),
          "QLoRA: PEFT's prepare_model_for_kbit_training upcasts every unquantised fp16/bf16 "
          "parameter to fp32 (\"peft\": embeddings, lm_head, norms, biases); TRL's SFTTrainer "
          "(v0.8 to v0.21) with --bf16 casts embeddings and lm_head back (\"trl\": norms and "
          "biases fp32); axolotl leaves embeddings and lm_head and casts norms back (\"axolotl\": "
          "biases fp32); \"none\": not called. fp32 norm weights make the residual stream, the "
          "checkpointed layer inputs and the MLP's intermediates fp32.")),
          qlora_on, "applies to peft \"qlora\" only", {field::peft}),
      in_effect_when(trainmem_only(bool_field<&C::optimizer_in_backward, &Config::optimizer_in_backward>(
          {field::optimizer_in_backward, "oib", "Optimizer step in backward"}, G::finetuning, shown(S::finetuning, 40), from_config(),
          "Step each parameter as soon as its gradient is accumulated and free the gradient "
          "(torchtune optimizer_in_bwd, register_post_accumulate_grad_hook): the gradients never "
          "hold more than the largest parameter's.")), ddp_or_fsdp2),
      trainmem_only(bool_field<&C::activation_offload, &Config::activation_offload>(
          {field::activation_offload, "aoff", "Offload activations to CPU"}, G::finetuning, shown(S::finetuning, 50), from_config(),
          "Move the layers' saved activations to CPU memory as the forward pass produces them and "
          "bring them back for backward (torchtune OffloadActivations, Megatron CPU offloading, "
          "DeepSpeed cpu_checkpointing); the GPU keeps one layer's in flight.")),
      in_effect_when(trainmem_only(bool_field<&C::paged_optimizer, &Config::paged_optimizer>(
          {field::paged_optimizer, "paged", "Paged optimizer (bitsandbytes)"}, G::finetuning, shown(S::finetuning, 60), from_config(),
          "bitsandbytes paged optimizer (PagedAdamW, PagedAdamW8bit, PagedLion): the states of "
          "tensors of 100,000 elements or more live in CUDA unified memory, outside PyTorch's "
          "allocator, and are evicted to CPU memory when the GPU is full.")), pageable_optimizer),
      in_effect_when(trainmem_only(bool_field<&C::torch_compile, &Config::torch_compile>(
          {field::torch_compile, "tc", "torch.compile"}, G::finetuning, shown(S::finetuning, 70), from_config(),
          "Run the decoder layers through torch.compile (torchtune compile=True, torchtitan "
          "training.compile, Hugging Face TrainingArguments torch_compile): what backward keeps "
          "follows the min-cut partitioner, which recomputes cheap pointwise results (norms, "
          "activation functions) instead of saving them. torchtune and Hugging Face also compile "
          "the loss.")), compilable),
      in_effect_when(trainmem_only(int_field<&C::cross_entropy_chunks, &Config::cross_entropy_chunks>(
          {field::cross_entropy_chunks, "cec", "Loss chunks (chunked cross entropy)"}, G::finetuning, shown(S::finetuning, 80),
          1, 1'000'000, "chunks", from_config(),
          "Compute the loss in this many chunks of tokens (torchtune CEWithChunkedOutputLoss, "
          "8 there; axolotl chunked_cross_entropy_num_chunks for transformers' models, 8 by "
          "default): the fp32 upcast and the loss's gradient exist one chunk at a time.")), chunkable_loss),
      in_effect_when(trainmem_only(bool_field<&C::fused_linear_cross_entropy, &Config::fused_linear_cross_entropy>(
          {field::fused_linear_cross_entropy, "flce", "Fused linear cross entropy (Liger)"}, G::finetuning, shown(S::finetuning, 90), from_config(),
          "Liger Kernel's fused linear cross entropy (transformers use_liger_kernel, axolotl "
          "liger_fused_linear_cross_entropy): the output layer and the loss run chunk by chunk "
          "of tokens in the forward pass, which computes their gradients there; no logits are "
          "kept, only the gradients of the output layer's input and weight.")), liger_patchable),
      in_effect_when(trainmem_only(bool_field<&C::cut_cross_entropy, &Config::cut_cross_entropy>(
          {field::cut_cross_entropy, "cce", "Cut Cross Entropy (no logits kept)"}, G::finetuning, shown(S::finetuning, 100), from_config(),
          "Apple's Cut Cross Entropy (the cut-cross-entropy package's cce_patch; axolotl "
          "CutCrossEntropyPlugin with cut_cross_entropy: true): the output layer and the loss "
          "run as one kernel that never materialises the logits; forward keeps the output "
          "layer's input and one fp32 log-sum-exp per token, backward recomputes the logits "
          "block by block.")), liger_patchable),
      in_effect_when(trainmem_only(choice_field<&C::transformers_loss, &Config::transformers_loss>(
          {field::transformers_loss, "tfl", "transformers release's loss"}, G::finetuning, in_more(S::finetuning, 170), from_config(),
          "Which ForCausalLMLoss the transformers release runs. \"pad-labels\": pads the labels "
          "and keeps the logits whole (after transformers PR #35646). \"shift-logits\": 4.46 to "
          "4.48 (loss/loss_utils.py), which upcasts the logits to fp32 and copies them shifted by "
          "one token, so the model's logits, the upcast and the shifted copy are alive together. "
          "\"upcast-in-model\": 4.45 and earlier, whose model forward turns the logits to fp32 "
          "(the model's output is fp32) and shifts them in place of the loss. With "
          "fused_linear_cross_entropy it is the evaluation's loss only: Liger's forward makes the "
          "logits outside training and calls the release's loss (4.46.1 on), or upcasts and "
          "shifts them in its own forward before 4.46.1, as upcast-in-model.")), hf_loss_somewhere),
      in_effect_when(trainmem_only(bool_field<&C::model_output_kept, &Config::model_output_kept>(
          {field::model_output_kept, "mok", "Loop keeps the model's output through the step"}, G::finetuning, in_more(S::finetuning, 180),
          from_config(),
          "The training loop holds the model's output, its logits, until after the optimizer step "
          "(fsdp_qlora's train.py sets output = None after optimizer.step()); transformers' "
          "Trainer drops it when compute_loss returns, before backward (false).")), plain_hf_loss),
      in_effect_when(trainmem_only(int_field<&C::eval_micro_batch_size, &Config::eval_micro_batch_size>(
          {field::eval_micro_batch_size, "evb", "Evaluation batch per GPU (0 = no evaluation)"}, G::finetuning, in_more(S::finetuning, 190), 0,
          k_max_count, "sequences", none_means("the job does not evaluate"),
          "Sequences per GPU in each evaluation step between training steps (transformers "
          "TrainingArguments per_device_eval_batch_size, 8 unless set; axolotl eval_batch_size, "
          "its micro_batch_size unless set), at seq_length tokens. Evaluation runs the model's "
          "forward and its loss under torch.no_grad(), after zero_grad has freed the gradients: "
          "nothing is saved for backward, but the evaluation batch's logits and the loss's fp32 "
          "copies exist at once, and may outgrow the training step. Unset or 0: the job does not "
          "evaluate (eval_strategy \"no\").")), hf_trainer_model),
      in_effect_when(trainmem_only(bool_field<&C::eval_kv_cache, &Config::eval_kv_cache>(
          {field::eval_kv_cache, "evkv", "Evaluation builds the KV cache"}, G::finetuning, in_more(S::finetuning, 200), from_config(),
          "The model's forward builds its key/value cache during evaluation (transformers "
          "config.use_cache, true in the released Llama, Mistral and Qwen configs; gradient "
          "checkpointing turns it off only in training mode): every layer's keys and values stay "
          "until the evaluation step returns. false when the script sets model.config.use_cache = "
          "False.")), hf_evaluates),
      in_effect_when(trainmem_only(choice_field<&C::eval_predictions, &Config::eval_predictions>(
          {field::eval_predictions, "evp", "Evaluation keeps predictions for compute_metrics"}, G::finetuning, in_more(S::finetuning, 210),
          from_config(),
          "What transformers' Trainer keeps of every evaluation step when the script passes "
          "compute_metrics (evaluation_loop: each step's predictions and labels are gathered from "
          "every GPU and concatenated on the GPU until the loop ends or eval_accumulation_steps "
          "moves them to the CPU). \"none\": no compute_metrics (or prediction_loss_only), the "
          "loss alone. \"logits\": the logits, the whole vocabulary per token. \"argmax\": a "
          "preprocess_logits_for_metrics that returns token ids (logits.argmax(-1)), 8 bytes per "
          "token.")), hf_evaluates),
      in_effect_when(trainmem_only(int_field<&C::eval_samples, &Config::eval_samples>(
          {field::eval_samples, "evn", "Evaluation set (sequences)"}, G::finetuning, in_more(S::finetuning, 220), 1, k_max_count,
          "sequences", none_means("required when predictions are kept"),
          "Sequences in the evaluation set, each of seq_length tokens: with eval_predictions, the "
          "predictions of all of them (of eval_accumulation_steps steps at most) are on every GPU "
          "at the end of the evaluation loop.")), hf_keeps_predictions),
      in_effect_when(trainmem_only(int_field<&C::eval_accumulation_steps, &Config::eval_accumulation_steps>(
          {field::eval_accumulation_steps, "eva", "Evaluation steps kept on the GPU"}, G::finetuning, in_more(S::finetuning, 230), 1,
          k_max_count, "steps", none_means("every step, to the loop's end"),
          "TrainingArguments eval_accumulation_steps: the kept predictions are moved to the CPU "
          "every this many evaluation steps (unset: they stay on the GPU until the loop ends). "
          "batch_eval_metrics keeps one step's, as 1 does.")), hf_keeps_predictions),
};

std::span<const Field> fields() { return k_field_rows; }

// What an unset field resolves to, in words, for the field documentation.
std::string default_text(const Field& f) {
  switch (f.fallback.kind) {
    case Default::required: return "required";
    case Default::derived: return std::string(f.fallback.text);
    case Default::none_when_zero:
      return f.fallback.text.empty() ? "none" : "none (" + std::string(f.fallback.text) + ")";
    case Default::from_config: break;
  }
  const FieldValue value = f.config.default_value();
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  const double number = std::get<double>(value);
  if (f.spec.type == FieldType::choice_list) {  // a bit mask of the choices
    std::string list;
    for (size_t i = 0; i < f.spec.choices.size(); ++i)
      if ((uint64_t(number) >> i) & 1u) list += (list.empty() ? "" : ", ") + quoted(f.spec.choices[i]);
    return "[" + list + "]";
  }
  if (f.spec.unit == "bytes" && number >= 1024.0 * 1024 && std::fmod(number, 1024.0 * 1024) == 0)
    return number_text(number) + " (" + number_text(number / (1024.0 * 1024)) + " MiB)";
  return number_text(number);
}

// The cross-field rules a field takes part in, in words: its own applies_rule and the words of the
// rule rows that name it (rules.cpp), so each rule's words are written once, beside its check.
std::string rules_text(const Field& f) {
  const std::string rows = rule_words(f.spec.name);
  if (f.applies_rule.empty()) return rows;
  return std::string(f.applies_rule) + (rows.empty() ? "" : "; " + rows);
}

// The public specs: the table's, with the generated default and rules texts (whose strings the
// specs' views point into; moving the vectors keeps their elements in place).
struct SpecTable {
  std::vector<std::string> defaults, rules;
  std::vector<FieldSpec> specs;
};

const std::vector<FieldSpec>& spec_table() {
  static const SpecTable table = [] {
    SpecTable t;
    for (const Field& f : fields()) {
      t.defaults.push_back(default_text(f));
      t.rules.push_back(rules_text(f));
    }
    for (size_t i = 0; i < fields().size(); ++i) {
      t.specs.push_back(fields()[i].spec);
      t.specs.back().default_text = t.defaults[i];
      t.specs.back().rules = t.rules[i];
    }
    return t;
  }();
  return table.specs;
}

// An integer field's value: finite, integral and within [min, max].
std::optional<Issue> read_integer(const FieldSpec& spec, double d, int64_t& out) {
  if (!std::isfinite(d)) return issue(spec.name, "must be a finite integer, got " + number_text(d));
  if (d != std::floor(d)) return issue(spec.name, "must be an integer, got " + number_text(d));
  if (d < double(spec.min))
    return issue(spec.name, "must be at least " + number_text(double(spec.min)) + ", got " +
                                number_text(d));
  if (d > double(spec.max))
    return issue(spec.name, "must be at most " + number_text(double(spec.max)) + ", got " +
                                number_text(d));
  out = static_cast<int64_t>(d);
  return std::nullopt;
}

std::optional<size_t> choice_index(const FieldSpec& spec, std::string_view text) {
  for (size_t i = 0; i < spec.choices.size(); ++i)
    if (spec.choices[i] == text) return i;
  return std::nullopt;
}

struct FieldSetter {
  const FieldSpec& spec;
  const FieldValue& value;
  bool is_null;
  ConfigInput& input;

  std::optional<Issue> operator()(IntMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const double* d = std::get_if<double>(&value);
    if (!d) return issue(spec.name, "must be an integer, got " + describe(value));
    int64_t out = 0;
    if (auto problem = read_integer(spec, *d, out)) return problem;
    input.*m = out;
    return std::nullopt;
  }
  std::optional<Issue> operator()(BoolMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const bool* b = std::get_if<bool>(&value);
    if (!b) return issue(spec.name, "must be true or false, got " + describe(value));
    input.*m = *b;
    return std::nullopt;
  }
  std::optional<Issue> operator()(NumberMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const double* d = std::get_if<double>(&value);
    if (!d) return issue(spec.name, "must be a number, got " + describe(value));
    if (!std::isfinite(*d)) return issue(spec.name, "must be a finite number, got " + number_text(*d));
    if (*d < spec.min || *d > spec.max)
      return issue(spec.name, "must be between " + number_text(spec.min) + " and " +
                                  number_text(spec.max) + ", got " + number_text(*d));
    input.*m = *d == 0 ? 0.0 : *d;  // -0 reads as 0
    return std::nullopt;
  }
  std::optional<Issue> operator()(const ChoiceTarget& target) const {
    if (is_null) return target.set(input, std::nullopt), std::nullopt;
    const auto* text = std::get_if<std::string>(&value);
    const std::optional<size_t> index = text ? choice_index(spec, *text) : std::nullopt;
    if (!index)
      return issue(spec.name, "must be one of " + choices_text(spec.choices, ", ") + ", got " + describe(value));
    target.set(input, index);
    return std::nullopt;
  }
  std::optional<Issue> operator()(MaskMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const auto* list = std::get_if<std::vector<std::string>>(&value);
    const auto* empty = std::get_if<std::vector<double>>(&value);  // [] parses as a number list
    if (!list && !(empty && empty->empty()))
      return issue(spec.name, "must be a list of " + choices_text(spec.choices, ", ") + ", got " + describe(value));
    uint32_t mask = 0;
    if (list)
      for (const std::string& text : *list) {
        const std::optional<size_t> index = choice_index(spec, text);
        if (!index)
          return issue(spec.name, "entries must be among " + choices_text(spec.choices, ", ") + ", got " +
                                      quoted(text));
        mask |= 1u << *index;
      }
    input.*m = mask;
    return std::nullopt;
  }
  std::optional<Issue> operator()(MoeFreqTarget) const {
    input.moe_layer_freq.reset();
    input.moe_layer_freq_list.reset();
    if (is_null) return std::nullopt;
    if (const double* d = std::get_if<double>(&value)) {
      int64_t out = 0;
      if (auto problem = read_integer(spec, *d, out)) return problem;
      input.moe_layer_freq = out;
      return std::nullopt;
    }
    if (const auto* list = std::get_if<std::vector<double>>(&value)) {
      if (list->size() > size_t(k_max_layers))
        return issue(spec.name, "list must have at most " + number_text(double(k_max_layers)) +
                                    " entries");
      std::vector<uint8_t> pattern;
      pattern.reserve(list->size());
      for (size_t i = 0; i < list->size(); ++i) {
        double e = (*list)[i];
        if (e != 0.0 && e != 1.0)
          return issue(spec.name, "list entries must be 0 or 1, got " + number_text(e) +
                                      " at index " + std::to_string(i));
        pattern.push_back(e == 1.0 ? 1 : 0);
      }
      input.moe_layer_freq_list = std::move(pattern);
      return std::nullopt;
    }
    return issue(spec.name,
                 "must be a positive integer or a list of 0/1 per layer, got " + describe(value));
  }
  std::optional<Issue> operator()(IntListMember m) const {
    if (is_null) return (input.*m).reset(), std::nullopt;
    const auto* list = std::get_if<std::vector<double>>(&value);
    if (!list) return issue(spec.name, "must be a list of whole numbers, got " + describe(value));
    if (list->empty()) return issue(spec.name, "must have at least one entry");
    if (list->size() > size_t(k_max_layers))
      return issue(spec.name, "must have at most " + number_text(double(k_max_layers)) + " entries");
    std::vector<int64_t> out;
    out.reserve(list->size());
    for (size_t i = 0; i < list->size(); ++i) {
      const double e = (*list)[i];
      if (!(e >= spec.min && e <= spec.max) || e != std::floor(e))
        return issue(spec.name, "entries must be whole numbers from " + number_text(spec.min) + " to " +
                                    number_text(spec.max) + ", got " + number_text(e) + " at index " +
                                    std::to_string(i));
      out.push_back(int64_t(e));
    }
    input.*m = std::move(out);
    return std::nullopt;
  }
};

struct FieldGetter {
  const FieldSpec& spec;
  const ConfigInput& input;
  FieldValue operator()(IntMember m) const {
    if (auto v = input.*m) return double(*v);
    return std::monostate{};
  }
  FieldValue operator()(BoolMember m) const {
    if (auto v = input.*m) return *v;
    return std::monostate{};
  }
  FieldValue operator()(NumberMember m) const {
    if (auto v = input.*m) return *v;
    return std::monostate{};
  }
  FieldValue operator()(const ChoiceTarget& target) const {
    if (auto index = target.get(input)) return std::string(spec.choices[*index]);
    return std::monostate{};
  }
  FieldValue operator()(MaskMember m) const {
    if (!(input.*m)) return std::monostate{};
    std::vector<std::string> names;
    for (size_t i = 0; i < spec.choices.size(); ++i)
      if ((*(input.*m) >> i) & 1u) names.emplace_back(spec.choices[i]);
    return names;
  }
  FieldValue operator()(MoeFreqTarget) const {
    if (input.moe_layer_freq_list)
      return std::vector<double>(input.moe_layer_freq_list->begin(), input.moe_layer_freq_list->end());
    if (input.moe_layer_freq) return double(*input.moe_layer_freq);
    return std::monostate{};
  }
  FieldValue operator()(IntListMember m) const {
    if (!(input.*m)) return std::monostate{};
    return std::vector<double>((input.*m)->begin(), (input.*m)->end());
  }
};

}  // namespace

std::span<const FieldSpec> field_specs() { return spec_table(); }

const FieldSpec* find_field(std::string_view name) {
  for (const FieldSpec& spec : spec_table())
    if (spec.name == name) return &spec;
  return nullptr;
}

const FieldSpec* find_field_by_link_key(std::string_view key) {
  for (const FieldSpec& spec : spec_table())
    if (spec.link_key == key) return &spec;
  return find_field(key);
}

std::optional<Issue> set_field(ConfigInput& input, std::string_view name, const FieldValue& value) {
  const Field* field = nullptr;
  for (const Field& f : fields())
    if (f.spec.name == name) field = &f;
  if (!field) {
    // A typo must never fall back to a default silently: name the closest known field.
    static const std::vector<std::string_view> names = [] {
      std::vector<std::string_view> out;
      for (const Field& f : fields()) out.push_back(f.spec.name);
      return out;
    }();
    return unknown_name(name, "field", names);
  }
  const FieldSpec& spec = field->spec;
  const bool is_null = std::holds_alternative<std::monostate>(value);

  return std::visit(FieldSetter{spec, value, is_null, input}, field->target);
}

std::optional<Issue> set_read_field(ConfigInput& input, std::string_view name,
                                    const std::optional<FieldValue>& value, std::string_view shape) {
  if (value) return set_field(input, name, *value);
  const FieldSpec* spec = find_field(name);
  if (!spec) return set_field(input, name, std::monostate{});  // an unknown name is named as such
  // Objects and lists of non-numbers fit no field.
  const std::string_view rule = spec->type == FieldType::integer_or_list ? "must be a positive integer or a list of 0/1 per layer"
                                : spec->type == FieldType::integer_list  ? "must be a list of whole numbers"
                                                                         : "must be a single value";
  return issue(name, std::string(rule) + ", got " + std::string(shape));
}

// The row at `index`; an index past the table is the caller's mistake, never a read past it.
static const Field& field_row(size_t index) {
  if (index >= fields().size()) throw std::out_of_range("field index " + std::to_string(index));
  return fields()[index];
}

std::optional<Issue> set_field_at(ConfigInput& input, size_t index, const FieldValue& value) {
  const Field& field = field_row(index);
  const bool is_null = std::holds_alternative<std::monostate>(value);
  return std::visit(FieldSetter{field.spec, value, is_null, input}, field.target);
}

FieldValue get_field_at(const ConfigInput& input, size_t index) {
  const Field& field = field_row(index);
  return std::visit(FieldGetter{field.spec, input}, field.target);
}

namespace {
// A list's slot: -1, the list going to the list channel as its length and its entries (slots.hpp).
template <class List>
double append_to_channel(const List& list, std::vector<double>& lists) {
  lists.push_back(double(list.size()));
  lists.insert(lists.end(), list.begin(), list.end());
  return -1;
}
}  // namespace

double get_field_slot_at(const ConfigInput& input, size_t index, std::vector<double>& lists) {
  constexpr double unset = std::numeric_limits<double>::quiet_NaN();
  struct SlotGetter {
    const ConfigInput& input;
    std::vector<double>& lists;
    double operator()(IntMember m) const { return input.*m ? double(*(input.*m)) : unset; }
    double operator()(BoolMember m) const { return input.*m ? (*(input.*m) ? 1.0 : 0.0) : unset; }
    double operator()(NumberMember m) const { return input.*m ? *(input.*m) : unset; }
    double operator()(const ChoiceTarget& target) const {
      const auto i = target.get(input);
      return i ? double(*i) : unset;
    }
    double operator()(MaskMember m) const { return input.*m ? double(*(input.*m)) : unset; }
    double operator()(MoeFreqTarget) const {
      if (input.moe_layer_freq_list) return append_to_channel(*input.moe_layer_freq_list, lists);
      return input.moe_layer_freq ? double(*input.moe_layer_freq) : unset;
    }
    double operator()(IntListMember m) const {
      return input.*m ? append_to_channel(*(input.*m), lists) : unset;
    }
  };
  return std::visit(SlotGetter{input, lists}, field_row(index).target);
}

FieldValue get_field(const ConfigInput& input, std::string_view name) {
  const Field* field = nullptr;
  for (const Field& f : fields())
    if (f.spec.name == name) field = &f;
  if (!field) return std::monostate{};
  return std::visit(FieldGetter{field->spec, input}, field->target);
}

ConfigInput to_input(const Config& c) {
  ConfigInput in;
  for (const Field& f : fields()) {
    if (f.config.input_only()) continue;
    if (f.spec.trainmem_only && c.profile != Profile::trainmem) continue;
    if (f.applies && !f.applies(c)) continue;
    if (f.fallback.kind == Default::none_when_zero && f.config.is_zero(c)) continue;
    f.config.copy_out(c, in);
  }
  return in;
}

void copy_set_fields(const ConfigInput& in, Config& c) {
  for (const Field& f : fields())
    if (!f.config.input_only()) f.config.copy_in(in, c);
}

std::vector<bool> fields_in_effect(const Config& c) {
  std::vector<bool> out;
  out.reserve(fields().size());
  for (const Field& f : fields()) {
    const bool read = !f.spec.trainmem_only || c.profile == Profile::trainmem;
    out.push_back(read && (!f.applies || f.applies(c)) && (!f.in_effect || f.in_effect(c)));
  }
  return out;
}

std::vector<bool> fields_in_effect(const ConfigInput& input) { return fields_in_effect(resolve(input).config); }

ConfigInput without_fields_out_of_effect(const ConfigInput& input, std::vector<bool>* in_effect) {
  const std::vector<bool> flags = fields_in_effect(input);
  ConfigInput out = input;
  for (size_t i = 0; i < flags.size(); ++i)
    if (!flags[i]) set_field(out, fields()[i].spec.name, std::monostate{});
  if (in_effect) *in_effect = flags;
  return out;
}

void check_fields_apply(const ConfigInput& in, const Config& c, std::vector<Issue>& issues) {
  for (const Field& f : fields()) {
    if (!f.applies || f.applies_rule.empty() || f.applies(c)) continue;
    if (f.spec.trainmem_only && c.profile != Profile::trainmem) continue;  // rejected as such
    if (std::holds_alternative<std::monostate>(std::visit(FieldGetter{f.spec, in}, f.target))) continue;
    Issue broken = issue(f.spec.name, f.applies_rule);
    for (FieldName by : f.applies_by)
      if (!by.text.empty()) broken.related.emplace_back(by.text);
    issues.push_back(std::move(broken));
  }
}

// The usual run of each adapter method (MethodSetting). LoRA and QLoRA are PEFT's, trained by
// transformers' Trainer (TRL's SFTTrainer) on PyTorch, one process per GPU through accelerate:
// framework ddp, model_implementation following it (hf-transformers). TRL's SFTConfig turns
// gradient checkpointing on by default ("gradient_checkpointing: Defaults to True instead of
// False", huggingface/trl trl/trainer/sft_config.py @ f2cd5771), which checkpoints whole layers:
// recompute_granularity full; so do the project's fine-tuning setups (core/data/setups.json).
// Full fine-tuning has no usual framework of its own: nothing.
constexpr std::string_view k_adapter_framework_why =
    "PEFT's adapters are trained with transformers' Trainer (TRL's SFTTrainer) on PyTorch DDP";
constexpr std::string_view k_adapter_recompute_why =
    "TRL's SFTConfig checkpoints every layer by default (gradient_checkpointing)";
constexpr MethodSetting k_method_settings[] = {
    {Peft::lora, field::framework.text, "ddp", k_adapter_framework_why},
    {Peft::lora, field::recompute_granularity.text, "full", k_adapter_recompute_why},
    {Peft::qlora, field::framework.text, "ddp", k_adapter_framework_why},
    {Peft::qlora, field::recompute_granularity.text, "full", k_adapter_recompute_why},
};

std::span<const MethodSetting> method_settings() { return k_method_settings; }

}  // namespace trainmem
