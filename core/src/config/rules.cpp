// The rules between fields, one row each (issue 30, item 1): the rule's id, the field a broken
// rule's message names, the other fields it involves, its words for the field documentation and
// its check. resolve() derives the defaults first (resolve.cpp) and then walks the rows in order;
// the documentation's rule text for a field is generated from its rows (fields.cpp rules_text), so
// a rule is written once, with its source cited above its row.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "config/field_table.hpp"
#include "internal.hpp"
#include "trainmem/config.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/tables.hpp"

namespace trainmem {

namespace {

using Broken = std::optional<std::string>;

std::string n(double v) { return number_text(v); }
template <class E>
std::string q(E value) {
  return quoted(name_of(value));
}
const Broken ok = std::nullopt;

bool sharding_framework(const Config& c) {
  return c.framework == Framework::deepspeed || c.framework == Framework::fsdp2;
}
bool torchtune(const Config& c) { return c.model_implementation == ModelImplementation::torchtune; }
bool hf(const Config& c) { return c.model_implementation == ModelImplementation::hf_transformers; }
bool megatron_core(const Config& c) { return c.model_implementation == ModelImplementation::megatron_core; }
// A loss other than transformers' own ForCausalLMLoss.
bool other_hf_loss(const Config& c) {
  return c.cross_entropy_loss_fusion || c.fused_linear_cross_entropy || c.cut_cross_entropy || c.cross_entropy_chunks > 1;
}
bool qlora(const Config& c) { return c.peft == Peft::qlora; }
bool lm_head_adapter(const Config& c) { return c.peft_on() && c.lora_targets(LoraTarget::lm_head); }
bool mlp_target(const Config& c) {
  return c.lora_targets(LoraTarget::gate_proj) || c.lora_targets(LoraTarget::up_proj) ||
         c.lora_targets(LoraTarget::down_proj);
}
bool attention_target(const Config& c) {
  return c.lora_targets(LoraTarget::q_proj) || c.lora_targets(LoraTarget::k_proj) ||
         c.lora_targets(LoraTarget::v_proj) || c.lora_targets(LoraTarget::o_proj);
}
bool sixteen_or_32(Dtype d) { return d == Dtype::fp32 || d == Dtype::bf16 || d == Dtype::fp16; }
bool half(Dtype d) { return d == Dtype::bf16 || d == Dtype::fp16; }
// PEFT's prepare_model_for_kbit_training is skipped for sharded QLoRA (see kbit_upcast below).
bool sharded_qlora_run(const Config& c) {
  return c.framework == Framework::fsdp2 || (c.framework == Framework::deepspeed && c.zero_stage == 3);
}
// The narrowest LoRA target's (in, out), for the rank rule; {0, 0} when no target has both sides.
struct Side {
  LoraTarget target;
  double in, out;  // doubles: products of sizes up to 10^12 each
};
std::optional<Side> narrowest_target(const Config& c) {
  // Sides of 0 are targets other rules reject (no attention, no gate); in an MoE model the MLP
  // targets are the experts'.
  const double h = double(c.hidden_size), qd = double(c.num_attention_heads) * double(c.kv_channels),
               kv = double(c.num_query_groups) * double(c.kv_channels),
               f = c.is_moe() ? double(c.moe_ffn_hidden_size) : double(c.ffn_hidden_size);
  const Side sides[] = {{LoraTarget::q_proj, h, qd},
                        {LoraTarget::k_proj, h, kv},
                        {LoraTarget::v_proj, h, kv},
                        {LoraTarget::o_proj, qd, h},
                        {LoraTarget::gate_proj, h, c.gated_linear_unit ? f : 0},
                        {LoraTarget::up_proj, h, f},
                        {LoraTarget::down_proj, f, h},
                        {LoraTarget::lm_head, h, double(c.vocab_size)}};
  std::optional<Side> narrowest;
  for (const Side& side : sides)
    if (c.lora_targets(side.target) && side.in > 0 && side.out > 0 &&
        (!narrowest || std::min(side.in, side.out) < std::min(narrowest->in, narrowest->out)))
      narrowest = side;
  return narrowest;
}

struct Rule {
  std::string_view id;            // stable, append-only: Issue::rule, which the page keys on
  FieldName field;                // the field the message names
  std::array<FieldName, 4> related;  // the other fields the rule involves (Issue::related)
  std::string_view words;         // the field documentation's words for the rule
  Broken (*check)(const ConfigInput&, const Config&);  // the rule's message when it is broken
};

using F = FieldName;
namespace f = field;

// The model's shape, MoE and parallelism (Megatron-LM's arguments.py and Megatron Core's
// TransformerConfig/ModelParallelConfig, ../shared/reference/megatron-formulas.md §2 and §6
// item 8), checked once resolve() has derived every default; in the order resolve() reports them.

bool have_shape(const Config& c) { return c.num_layers > 0 && c.hidden_size > 0 && c.num_attention_heads > 0; }
std::string i(int64_t v) { return number_text(double(v)); }
// TP × PP × CP, or nothing when it cannot be counted.
std::optional<int64_t> model_parallel(const Config& c) {
  std::optional<int64_t> mp = checked_mul(c.tensor_model_parallel_size, c.pipeline_model_parallel_size);
  if (mp) mp = checked_mul(*mp, c.context_parallel_size);
  return mp;
}
std::string tp_pp_cp(const Config& c) {
  return i(c.tensor_model_parallel_size) + " × " + i(c.pipeline_model_parallel_size) + " × " + i(c.context_parallel_size);
}
// Whether some layer has a dense MLP (an MoE model's layers by moe_layer_freq).
bool has_dense_mlp(const Config& c) {
  if (!c.is_moe()) return true;
  if (c.num_layers <= 0) return false;
  if (!c.moe_layer_freq_list.empty()) {
    for (uint8_t x : c.moe_layer_freq_list)
      if (x == 0) return true;
    return false;
  }
  return c.moe_layer_freq > 1 && c.num_layers > 1;
}
// The uneven split's middle stages: the layers and stages left after the first/last stages.
struct UnevenSplit {
  int64_t first, last, rest_layers, rest_stages;
  bool even() const { return rest_stages > 0 && rest_layers > 0 && rest_layers % rest_stages == 0; }
  int64_t middle() const { return even() ? rest_layers / rest_stages : 0; }
};
UnevenSplit uneven_split(const Config& c) {
  const int64_t first = c.num_layers_in_first_pipeline_stage, last = c.num_layers_in_last_pipeline_stage;
  return {first, last, c.num_layers - first - last,
          c.pipeline_model_parallel_size - (first ? 1 : 0) - (last ? 1 : 0)};
}
// Uneven first or last stages given as counts (pipeline_stage_layers is the other way to say it).
bool first_or_last(const Config& c) {
  return c.num_layers_in_first_pipeline_stage > 0 || c.num_layers_in_last_pipeline_stage > 0;
}
bool uneven_applies(const Config& c) {
  return c.pipeline_stage_layers.empty() && c.uneven_pipeline() && c.pipeline_model_parallel_size > 1 && c.num_layers > 0;
}
bool even_split_applies(const Config& c) {
  return c.pipeline_stage_layers.empty() && !c.uneven_pipeline() && c.pipeline_model_parallel_size > 1 && c.num_layers > 0;
}
// EP × ETP and DP × TP × CP, or nothing when either cannot be counted.
std::optional<std::pair<int64_t, int64_t>> expert_and_dense_ranks(const Config& c) {
  auto dense = checked_mul(c.data_parallel_size, c.tensor_model_parallel_size);
  if (dense) dense = checked_mul(*dense, c.context_parallel_size);
  auto expert = checked_mul(c.expert_model_parallel_size, c.expert_tensor_parallel_size);
  if (!dense || !expert) return std::nullopt;
  return std::pair{*expert, *dense};
}
// What seq_length must be divisible by, and why in words (divisor 0: it cannot be counted).
std::pair<int64_t, std::string> sequence_divisor(const Config& c) {
  const int64_t cp = c.context_parallel_size, t = c.tensor_model_parallel_size;
  int64_t divisor = 1;
  std::string why;
  if (cp > 1) divisor = 2 * cp, why = "2 × context_parallel_size (" + i(cp) + ")";
  if (c.sequence_parallel) {
    divisor = checked_mul(divisor, t).value_or(0);
    why += (why.empty() ? "" : " × ") + std::string("tensor_model_parallel_size (") + i(t) + ") with sequence_parallel";
  }
  return {divisor, why};
}
// A field of Megatron Core's MoE layer (router, dispatcher), `set` beyond the value that changes
// nothing, on an MoE model of a PyTorch implementation, whose MoE blocks are their own code; for a
// dense model every MoE field is dropped. `what`: the part of Megatron Core it is.
Broken megatron_core_moe(bool set, const Config& c, std::string_view what) {
  if (!c.is_moe() || !set || !c.eager_model()) return ok;
  return "applies to MoE with model_implementation megatron-core (" + std::string(what) + ")";
}

Broken sequence_rule(const Config& c, bool with_cp, bool with_sp) {
  if (c.seq_length <= 0 || (c.context_parallel_size > 1) != with_cp || (with_cp && c.sequence_parallel != with_sp)) return ok;
  const auto [divisor, why] = sequence_divisor(c);
  if (divisor != 0 && (divisor <= 1 || c.seq_length % divisor == 0)) return ok;
  return "must be divisible by " + why + ", got " + i(c.seq_length);
}

const Rule k_model_rules[] = {
    // Blocks without attention and models without embeddings are the trainmem profile's.
    {"num_attention_heads/profile", f::num_attention_heads, {f::profile}, "0 only in the trainmem profile",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (c.profile == Profile::trainmem || in.num_attention_heads != 0) return ok;
       return std::string("must be at least 1, got 0 (blocks without attention need the trainmem profile)");
     }},
    {"vocab_size/profile", f::vocab_size, {f::profile}, "0 only in the trainmem profile",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (c.profile == Profile::trainmem || in.vocab_size != 0) return ok;
       return std::string("must be at least 1, got 0 (a model without embeddings needs the trainmem profile)");
     }},
    {"normalization/profile", f::normalization, {f::profile}, "\"none\" only in the trainmem profile",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (c.profile == Profile::trainmem || in.normalization != Normalization::none) return ok;
       return std::string("\"none\" needs the trainmem profile");
     }},
    {"activation_func/profile", f::activation_func, {f::profile}, "\"identity\" only in the trainmem profile",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (c.profile == Profile::trainmem || in.activation_func != ActivationFunc::identity) return ok;
       return std::string("\"identity\" needs the trainmem profile");
     }},
    {"swiglu/gated", f::swiglu, {f::gated_linear_unit}, "consistent with gated_linear_unit",
     [](const ConfigInput& in, const Config&) -> Broken {
       if (!in.swiglu.value_or(false) || in.gated_linear_unit != false) return ok;
       return std::string("contradicts gated_linear_unit = false (SwiGLU is a gated MLP)");
     }},
    {"swiglu/silu", f::swiglu, {f::activation_func}, "consistent with activation_func (silu)",
     [](const ConfigInput& in, const Config&) -> Broken {
       if (!in.swiglu.value_or(false) || !in.activation_func || *in.activation_func == ActivationFunc::silu) return ok;
       return "contradicts activation_func = \"" + std::string(name_of(*in.activation_func)) + "\" (SwiGLU uses silu)";
     }},
    // Megatron's RotaryEmbedding rotates int(kv_channels · rotary_percent) channels (rotary_pos_embedding.py
    // @ 00611e6eeb0b09b5ee074750956855215ddbd67f): 0 would rotate none, which no model does.
    {"rotary_percent/positive", f::rotary_percent, {}, "above 0",
     [](const ConfigInput& in, const Config&) -> Broken {
       if (!in.rotary_percent || *in.rotary_percent > 0) return ok;
       return std::string("must be above 0 (the fraction of each head's channels RoPE rotates), got 0");
     }},
    {"num_query_groups/divides-heads", f::num_query_groups, {f::num_attention_heads}, "divides num_attention_heads",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!in.num_query_groups || !have_shape(c) || c.num_attention_heads % c.num_query_groups == 0) return ok;
       return "must divide num_attention_heads (" + i(c.num_attention_heads) + "), got " + i(c.num_query_groups);
     }},
    // Megatron-LM arguments.py: kv_channels defaults to h / a and requires divisibility.
    {"hidden_size/heads", f::hidden_size, {f::num_attention_heads, f::kv_channels},
     "divisible by num_attention_heads when kv_channels is unset",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (in.kv_channels || !have_shape(c) || c.hidden_size % c.num_attention_heads == 0) return ok;
       return "must be divisible by num_attention_heads (" + i(c.num_attention_heads) + ") when kv_channels is unset, got " +
              i(c.hidden_size);
     }},
    // Megatron-LM arguments.py with --swiglu: int((4h · 2/3) / 64) · 64, which is 0 below h = 24.
    {"ffn_hidden_size/swiglu-zero", f::ffn_hidden_size, {f::hidden_size}, "set when Megatron-LM's SwiGLU default is 0",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (in.ffn_hidden_size || c.profile != Profile::megatron_lm || !c.gated_linear_unit ||
           c.activation_func != ActivationFunc::silu || c.hidden_size <= 0 || c.ffn_hidden_size >= 1)
         return ok;
       return "resolves to 0 for hidden_size " + i(c.hidden_size) + " with SwiGLU; set it explicitly";
     }},
    {"moe_layer_freq/per-layer", f::moe_layer_freq, {f::num_layers}, "a list has one 0/1 entry per layer",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.is_moe() || c.moe_layer_freq_list.empty() || c.num_layers <= 0 ||
           int64_t(c.moe_layer_freq_list.size()) == c.num_layers)
         return ok;
       return "list must have one entry per layer (num_layers = " + i(c.num_layers) + "), got " +
              i(int64_t(c.moe_layer_freq_list.size()));
     }},
    {"moe_router_topk/experts", f::moe_router_topk, {f::num_moe_experts}, "at most num_moe_experts",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.is_moe() || c.moe_router_topk <= c.num_moe_experts) return ok;
       return "must be at most num_moe_experts (" + i(c.num_moe_experts) + "), got " + i(c.moe_router_topk);
     }},
    // moe_routing_imbalance scales the tokens the most-loaded GPU's experts receive; with a
    // capacity factor the trainmem profile counts every expert at its capacity (padded to it with
    // moe_pad_expert_input_to_capacity, else the most it can take), so an imbalance would have no
    // effect: a mistake. Values above what one GPU's experts can receive are capped in
    // activations.cpp (routing_load), not rejected: the planner tries smaller EP with the same value.
    {"moe_routing_imbalance/capacity", f::moe_routing_imbalance, {f::moe_expert_capacity_factor},
     "not with moe_expert_capacity_factor (every expert is counted at the capacity)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!c.is_moe() || !in.moe_routing_imbalance || !(c.moe_expert_capacity_factor > 0) || c.moe_routing_imbalance == 1.0)
         return ok;
       return "has no effect with moe_expert_capacity_factor (" + number_text(c.moe_expert_capacity_factor) +
              "): every expert is counted at the capacity; leave it unset";
     }},
    // Megatron Core's dispatch fields (activations.cpp, "MoE at scale"): the PyTorch
    // implementations' MoE blocks have no such dispatcher, so there they are a mistake (for a
    // dense model they mean nothing and are dropped, as every MoE field). Megatron asserts a
    // capacity factor for padding (token_dispatcher.py: drop_and_pad needs
    // moe_expert_capacity_factor).
    {"moe_router_dtype/megatron-core", f::moe_router_dtype, {f::model_implementation},
     "MoE with model_implementation megatron-core (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       return megatron_core_moe(in.moe_router_dtype && *in.moe_router_dtype != MoeRouterDtype::none, c,
                                "Megatron Core's router; the PyTorch implementations route in the compute dtype");
     }},
    {"moe_permute_fusion/megatron-core", f::moe_permute_fusion, {f::model_implementation},
     "MoE with model_implementation megatron-core (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       return megatron_core_moe(in.moe_permute_fusion.value_or(false), c,
                                "Transformer Engine's fused permutation in Megatron Core's dispatcher");
     }},
    {"moe_token_dispatcher_type/megatron-core", f::moe_token_dispatcher_type, {f::model_implementation},
     "MoE with model_implementation megatron-core (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       return megatron_core_moe(
           in.moe_token_dispatcher_type && *in.moe_token_dispatcher_type != MoeTokenDispatcher::alltoall, c,
           "Megatron Core's token dispatcher; the PyTorch implementations' MoE blocks route on each GPU");
     }},
    // Megatron Core's router (router.py, moe_utils.py topk_routing_with_score_function @
    // 00611e6eeb0b09b5ee074750956855215ddbd67f); transformer_config.py at the same commit raises
    // for an expert bias without the sigmoid (or sqrtsoftplus) score function.
    {"moe_router_score_function/megatron-core", f::moe_router_score_function, {f::model_implementation},
     "MoE with model_implementation megatron-core (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       return megatron_core_moe(
           in.moe_router_score_function && *in.moe_router_score_function != MoeRouterScoreFunction::softmax, c,
           "Megatron Core's router; the PyTorch implementations' routers are modelled as softmax routers");
     }},
    {"moe_router_enable_expert_bias/sigmoid", f::moe_router_enable_expert_bias, {f::moe_router_score_function},
     "MoE with moe_router_score_function \"sigmoid\" (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!c.is_moe() || !in.moe_router_enable_expert_bias.value_or(false) ||
           c.moe_router_score_function == MoeRouterScoreFunction::sigmoid)
         return ok;
       return "needs moe_router_score_function \"sigmoid\" (Megatron Core raises for an expert bias with the " +
              q(c.moe_router_score_function) + " score function)";
     }},
    {"moe_router_enable_expert_bias/megatron-core", f::moe_router_enable_expert_bias, {f::model_implementation},
     "MoE with model_implementation megatron-core (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       return megatron_core_moe(in.moe_router_enable_expert_bias.value_or(false), c, "Megatron Core's router");
     }},
    {"moe_pad_expert_input_to_capacity/capacity", f::moe_pad_expert_input_to_capacity,
     {f::model_implementation, f::moe_expert_capacity_factor},
     "MoE with model_implementation megatron-core and moe_expert_capacity_factor (ignored for a dense model)",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!c.is_moe() || !in.moe_pad_expert_input_to_capacity.value_or(false) ||
           (!c.eager_model() && c.moe_expert_capacity_factor > 0))
         return ok;
       return std::string("applies to MoE with model_implementation megatron-core and moe_expert_capacity_factor "
                          "(the padding is to the capacity)");
     }},
    // The world: DP = world_size / (TP·PP·CP) when the world is given (Megatron-LM's
    // initialize_model_parallel: data_parallel_size = world_size / (tp × pp × cp)).
    {"world_size/divisible", f::world_size,
     {f::tensor_model_parallel_size, f::pipeline_model_parallel_size, f::context_parallel_size},
     "divisible by tensor_model_parallel_size × pipeline_model_parallel_size × context_parallel_size",
     [](const ConfigInput& in, const Config& c) -> Broken {
       const auto mp = model_parallel(c);
       if (!in.world_size || !mp || *in.world_size % *mp == 0) return ok;
       return "must be divisible by tensor_model_parallel_size × pipeline_model_parallel_size × context_parallel_size (" +
              tp_pp_cp(c) + " = " + i(*mp) + "), got " + i(*in.world_size);
     }},
    {"world_size/equal", f::world_size,
     {f::tensor_model_parallel_size, f::pipeline_model_parallel_size, f::context_parallel_size, f::data_parallel_size},
     "equal to that × data_parallel_size when both are given",
     [](const ConfigInput& in, const Config& c) -> Broken {
       const auto mp = model_parallel(c);
       if (!in.world_size || !mp || *in.world_size % *mp != 0 || !in.data_parallel_size) return ok;
       const auto product = checked_mul(*in.data_parallel_size, *mp);
       if (product && *product == *in.world_size) return ok;
       return "must equal tensor_model_parallel_size × pipeline_model_parallel_size × context_parallel_size × "
              "data_parallel_size (" + tp_pp_cp(c) + " × " + i(*in.data_parallel_size) + " = " +
              number_text(double(*in.data_parallel_size) * double(*mp)) + "), got " + i(*in.world_size) + "; give one of them";
     }},
    // The product is the world_size field's value (to_input writes it): beyond that field's range
    // the configuration could not be written back and read again.
    {"world_size/at-most", f::world_size,
     {f::tensor_model_parallel_size, f::pipeline_model_parallel_size, f::context_parallel_size, f::data_parallel_size},
     "the product at most 1,000,000,000",
     [](const ConfigInput&, const Config& c) -> Broken {
       const auto mp = model_parallel(c);
       const auto world = mp ? checked_mul(*mp, c.data_parallel_size) : std::nullopt;
       const double most = find_field(field::world_size.text)->max;
       if (!world || double(*world) <= most) return ok;
       return "must be at most " + number_text(most) + " GPUs, got tensor_model_parallel_size × "
              "pipeline_model_parallel_size × context_parallel_size × data_parallel_size = " + tp_pp_cp(c) + " × " +
              i(c.data_parallel_size) + " = " + i(*world);
     }},
    // Also what an MoE model's DP × TP × CP would overflow on: it is at most the world.
    {"data_parallel_size/countable", f::data_parallel_size, {}, "the parallel sizes countable",
     [](const ConfigInput&, const Config& c) -> Broken {
       const auto mp = model_parallel(c);
       if (mp && checked_mul(*mp, c.data_parallel_size)) return ok;
       return std::string("the parallel sizes multiply to more ranks than can be counted");
     }},
    {"num_attention_heads/tensor-parallel", f::num_attention_heads, {f::tensor_model_parallel_size},
     "divisible by tensor_model_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!have_shape(c) || c.num_attention_heads % c.tensor_model_parallel_size == 0) return ok;
       return "must be divisible by tensor_model_parallel_size (" + i(c.tensor_model_parallel_size) + "), got " +
              i(c.num_attention_heads);
     }},
    {"num_query_groups/tensor-parallel", f::num_query_groups, {f::tensor_model_parallel_size},
     "divisible by tensor_model_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!have_shape(c) || c.multi_latent_attention || c.num_query_groups % c.tensor_model_parallel_size == 0) return ok;
       return "must be divisible by tensor_model_parallel_size (" + i(c.tensor_model_parallel_size) + "), got " +
              i(c.num_query_groups);
     }},
    // Megatron's column-parallel linears split their output evenly over the tensor-parallel ranks
    // (ColumnParallelLinear: divide(output_size, world_size) asserts): TP divides the MLP and the
    // shared experts' widths, ETP the routed experts'.
    {"ffn_hidden_size/tensor-parallel", f::ffn_hidden_size, {f::tensor_model_parallel_size},
     "divisible by tensor_model_parallel_size when a layer has a dense MLP",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!has_dense_mlp(c) || c.ffn_hidden_size <= 0 || c.ffn_hidden_size % c.tensor_model_parallel_size == 0) return ok;
       return "must be divisible by tensor_model_parallel_size (" + i(c.tensor_model_parallel_size) + "), got " +
              i(c.ffn_hidden_size);
     }},
    {"moe_shared_expert_intermediate_size/tensor-parallel", f::moe_shared_expert_intermediate_size,
     {f::tensor_model_parallel_size}, "divisible by tensor_model_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.is_moe() || c.moe_shared_expert_intermediate_size % c.tensor_model_parallel_size == 0) return ok;
       return "must be divisible by tensor_model_parallel_size (" + i(c.tensor_model_parallel_size) + "), got " +
              i(c.moe_shared_expert_intermediate_size);
     }},
    {"moe_ffn_hidden_size/expert-tensor-parallel", f::moe_ffn_hidden_size, {f::expert_tensor_parallel_size},
     "divisible by expert_tensor_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.is_moe() || c.moe_ffn_hidden_size <= 0 || c.moe_ffn_hidden_size % c.expert_tensor_parallel_size == 0) return ok;
       return "must be divisible by expert_tensor_parallel_size (" + i(c.expert_tensor_parallel_size) + "), got " +
              i(c.moe_ffn_hidden_size);
     }},
    {"virtual_pipeline_model_parallel_size/pipeline", f::virtual_pipeline_model_parallel_size,
     {f::pipeline_model_parallel_size}, "needs pipeline_model_parallel_size > 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.virtual_pipeline_model_parallel_size <= 0 || c.pipeline_model_parallel_size != 1) return ok;
       return std::string("requires pipeline_model_parallel_size > 1 (the interleaved schedule needs pipeline stages)");
     }},
    // Megatron's PipelineParallelLayerLayout: len(layout) % PP == 0 gives VPP, every decoder layer
    // placed once (validate_layer_layout: the count equals num_layers); a stage may be empty.
    {"pipeline_stage_layers/pipeline", f::pipeline_stage_layers, {f::pipeline_model_parallel_size},
     "needs pipeline_model_parallel_size > 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.pipeline_stage_layers.empty() || c.pipeline_model_parallel_size != 1) return ok;
       return std::string("requires pipeline_model_parallel_size > 1");
     }},
    {"pipeline_stage_layers/not-uneven", f::pipeline_stage_layers,
     {f::num_layers_in_first_pipeline_stage, f::num_layers_in_last_pipeline_stage},
     "not with num_layers_in_first/last_pipeline_stage",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.pipeline_stage_layers.empty() || c.pipeline_model_parallel_size == 1 || !first_or_last(c)) return ok;
       return std::string("cannot be combined with num_layers_in_first_pipeline_stage or "
                          "num_layers_in_last_pipeline_stage (the list gives every stage's layers)");
     }},
    {"pipeline_stage_layers/entries", f::pipeline_stage_layers,
     {f::pipeline_model_parallel_size, f::virtual_pipeline_model_parallel_size}, "PP × VPP entries",
     [](const ConfigInput&, const Config& c) -> Broken {
       const int64_t p = c.pipeline_model_parallel_size, v = c.virtual_pipeline_model_parallel_size;
       const int64_t stages = p * (v > 0 ? v : 1);
       if (c.pipeline_stage_layers.empty() || p == 1 || first_or_last(c) ||
           int64_t(c.pipeline_stage_layers.size()) == stages)
         return ok;
       return "must have one entry per virtual pipeline stage: pipeline_model_parallel_size × "
              "virtual_pipeline_model_parallel_size = " + i(p) + (v > 0 ? " × " + i(v) : std::string()) + " = " +
              i(stages) + " entries, got " + i(int64_t(c.pipeline_stage_layers.size()));
     }},
    {"pipeline_stage_layers/placed", f::pipeline_stage_layers, {f::num_layers}, "adding up to num_layers",
     [](const ConfigInput&, const Config& c) -> Broken {
       const int64_t p = c.pipeline_model_parallel_size, v = c.virtual_pipeline_model_parallel_size;
       const auto& list = c.pipeline_stage_layers;
       if (list.empty() || p == 1 || first_or_last(c) || int64_t(list.size()) != p * (v > 0 ? v : 1) ||
           c.num_layers <= 0)
         return ok;
       int64_t placed = 0;
       for (int64_t e : list) placed += e;  // at most 10^6 entries of at most 10^6 each
       if (placed == c.num_layers) return ok;
       return "places " + i(placed) + " decoder layers, but num_layers is " + i(c.num_layers);
     }},
    // Uneven first and last stages (Megatron-LM's --decoder-first/last-pipeline-num-layers): the
    // other layers divide evenly over the middle stages.
    {"num_layers_in_first_pipeline_stage/pipeline", f::num_layers_in_first_pipeline_stage,
     {f::pipeline_model_parallel_size}, "needs pipeline_model_parallel_size > 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.pipeline_stage_layers.empty() || c.num_layers_in_first_pipeline_stage == 0 ||
           c.pipeline_model_parallel_size != 1)
         return ok;
       return std::string("requires pipeline_model_parallel_size > 1");
     }},
    {"num_layers_in_last_pipeline_stage/pipeline", f::num_layers_in_last_pipeline_stage,
     {f::pipeline_model_parallel_size}, "needs pipeline_model_parallel_size > 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.pipeline_stage_layers.empty() || c.num_layers_in_first_pipeline_stage != 0 ||
           c.num_layers_in_last_pipeline_stage == 0 || c.pipeline_model_parallel_size != 1)
         return ok;
       return std::string("requires pipeline_model_parallel_size > 1");
     }},
    {"num_layers/first-last-only", f::num_layers,
     {f::num_layers_in_first_pipeline_stage, f::num_layers_in_last_pipeline_stage},
     "the sum of the first and last stages' layers when they are the only stages",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!uneven_applies(c)) return ok;
       const UnevenSplit s = uneven_split(c);
       if (s.rest_stages != 0 || s.rest_layers == 0) return ok;
       return "must equal num_layers_in_first_pipeline_stage + num_layers_in_last_pipeline_stage (" + i(s.first + s.last) +
              ") when they are the only stages, got " + i(c.num_layers);
     }},
    {"num_layers/middle-empty", f::num_layers, {}, "with uneven first/last stages at least one layer each for the middle stages",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!uneven_applies(c)) return ok;
       const UnevenSplit s = uneven_split(c);
       if (s.rest_stages == 0 || s.rest_layers > 0) return ok;
       return "the first/last pipeline stages take " + i(s.first + s.last) + " layers of " + i(c.num_layers) +
              ", which leaves none for the other " + i(s.rest_stages) + " stage" + (s.rest_stages == 1 ? "" : "s");
     }},
    {"num_layers/middle-even", f::num_layers, {}, "the rest divides evenly over the middle stages",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!uneven_applies(c)) return ok;
       const UnevenSplit s = uneven_split(c);
       if (s.rest_stages == 0 || s.rest_layers <= 0 || s.rest_layers % s.rest_stages == 0) return ok;
       return "the " + i(s.rest_layers) + " layers left after the first/last pipeline stages must divide evenly (and at "
              "least one each) over the " + i(s.rest_stages) + " remaining stages";
     }},
    {"virtual_pipeline_model_parallel_size/uneven", f::virtual_pipeline_model_parallel_size, {},
     "divides every stage's layer count",
     [](const ConfigInput&, const Config& c) -> Broken {
       const int64_t v = c.virtual_pipeline_model_parallel_size;
       if (!uneven_applies(c) || v <= 0) return ok;
       const UnevenSplit s = uneven_split(c);
       const int64_t middle = s.middle();
       if (s.first % v == 0 && s.last % v == 0 && middle % v == 0) return ok;
       return "must divide the layer count of every pipeline stage (first " + i(s.first ? s.first : middle) +
              ", middle " + i(middle) + ", last " + i(s.last ? s.last : middle) + "), got " + i(v);
     }},
    {"num_layers/pipeline-virtual", f::num_layers,
     {f::pipeline_model_parallel_size, f::virtual_pipeline_model_parallel_size},
     "divisible by pipeline_model_parallel_size × virtual_pipeline_model_parallel_size for an even split",
     [](const ConfigInput&, const Config& c) -> Broken {
       const int64_t p = c.pipeline_model_parallel_size, v = c.virtual_pipeline_model_parallel_size;
       if (!even_split_applies(c) || v <= 0 || c.num_layers % (p * v) == 0) return ok;  // p, v <= 10^9, 10^6
       return "must be divisible by pipeline_model_parallel_size × virtual_pipeline_model_parallel_size (" + i(p) +
              " × " + i(v) + "), got " + i(c.num_layers);
     }},
    {"num_layers/pipeline", f::num_layers, {f::pipeline_model_parallel_size},
     "divisible by pipeline_model_parallel_size for an even split",
     [](const ConfigInput&, const Config& c) -> Broken {
       const int64_t p = c.pipeline_model_parallel_size;
       if (!even_split_applies(c) || c.virtual_pipeline_model_parallel_size > 0 || c.num_layers % p == 0) return ok;
       return "must be divisible by pipeline_model_parallel_size (" + i(p) + "), got " + i(c.num_layers);
     }},
    {"num_moe_experts/expert-parallel", f::num_moe_experts, {f::expert_model_parallel_size},
     "divisible by expert_model_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.is_moe() || c.num_moe_experts % c.expert_model_parallel_size == 0) return ok;
       return "must be divisible by expert_model_parallel_size (" + i(c.expert_model_parallel_size) + "), got " +
              i(c.num_moe_experts);
     }},
    // Expert data-parallel size = DP·TP·CP / (EP·ETP) must be a whole number of ranks.
    {"expert_model_parallel_size/ranks", f::expert_model_parallel_size,
     {f::expert_tensor_parallel_size, f::data_parallel_size, f::tensor_model_parallel_size, f::context_parallel_size},
     "EP × ETP divides DP × TP × CP",
     [](const ConfigInput&, const Config& c) -> Broken {
       const auto ranks = expert_and_dense_ranks(c);
       if (!c.is_moe() || !ranks || ranks->second % ranks->first == 0) return ok;
       return "expert_model_parallel_size × expert_tensor_parallel_size (" + i(c.expert_model_parallel_size) + " × " +
              i(c.expert_tensor_parallel_size) + ") must divide data_parallel_size × tensor_model_parallel_size × "
              "context_parallel_size (" + i(c.data_parallel_size) + " × " + i(c.tensor_model_parallel_size) + " × " +
              i(c.context_parallel_size) + ")";
     }},
    {"expert_model_parallel_size/dense", f::expert_model_parallel_size, {f::num_moe_experts}, "1 for a dense model",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.is_moe() || c.expert_model_parallel_size <= 1) return ok;
       return "must be 1 for a dense model (num_moe_experts is unset), got " + i(c.expert_model_parallel_size);
     }},
    {"sequence_parallel/moe", f::sequence_parallel, {f::tensor_model_parallel_size, f::expert_model_parallel_size},
     "ignored at TP = 1; required for MoE with TP > 1 and EP > 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.is_moe() || c.tensor_model_parallel_size <= 1 || c.expert_model_parallel_size <= 1 || c.sequence_parallel) return ok;
       return std::string("must be true when an MoE model uses both tensor_model_parallel_size > 1 and "
                          "expert_model_parallel_size > 1 (Megatron requires it)");
     }},
    // Context parallelism splits each sequence into 2 × CP chunks (load balancing); sequence
    // parallelism splits it over the TP ranks.
    {"seq_length/context-and-sequence-parallel", f::seq_length,
     {f::context_parallel_size, f::tensor_model_parallel_size, f::sequence_parallel},
     "divisible by 2 × context_parallel_size × tensor_model_parallel_size with both",
     [](const ConfigInput&, const Config& c) -> Broken { return sequence_rule(c, true, true); }},
    {"seq_length/context-parallel", f::seq_length, {f::context_parallel_size},
     "divisible by 2 × context_parallel_size when CP > 1",
     [](const ConfigInput&, const Config& c) -> Broken { return sequence_rule(c, true, false); }},
    {"seq_length/sequence-parallel", f::seq_length, {f::tensor_model_parallel_size, f::sequence_parallel},
     "divisible by tensor_model_parallel_size with sequence_parallel",
     [](const ConfigInput&, const Config& c) -> Broken { return sequence_rule(c, false, true); }},
};

// The batch (Megatron-LM's arguments.py: global batch = micro batch × DP × microbatches), checked
// after every field's applicability.
const Rule k_batch_rules[] = {
    {"global_batch_size/divisible", f::global_batch_size, {f::micro_batch_size, f::data_parallel_size},
     "divisible by micro_batch_size × data_parallel_size",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!in.global_batch_size || c.micro_batch_size <= 0) return ok;
       const auto per_step = checked_mul(c.micro_batch_size, c.data_parallel_size);
       if (per_step && c.global_batch_size % *per_step == 0) return ok;
       return "must be divisible by micro_batch_size × data_parallel_size (" + i(c.micro_batch_size) + " × " +
              i(c.data_parallel_size) + "), got " + i(c.global_batch_size);
     }},
    {"num_microbatches/derived", f::num_microbatches, {f::global_batch_size, f::micro_batch_size, f::data_parallel_size},
     "equals global_batch_size / (micro_batch_size × data_parallel_size) when both are given",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!in.global_batch_size || !in.num_microbatches || c.micro_batch_size <= 0) return ok;
       const auto per_step = checked_mul(c.micro_batch_size, c.data_parallel_size);
       if (!per_step || c.global_batch_size % *per_step != 0) return ok;
       const int64_t derived = c.global_batch_size / *per_step;
       if (*in.num_microbatches == derived) return ok;
       return "must equal global_batch_size / (micro_batch_size × data_parallel_size) = " + i(derived) + ", got " +
              i(*in.num_microbatches);
     }},
    // torchtune: "Gradient accumulation is not supported with optimizer in bwd" (its recipes raise).
    {"optimizer_in_backward/one-microbatch", f::optimizer_in_backward, {f::num_microbatches},
     "one microbatch per step (no gradient accumulation)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.profile != Profile::trainmem || !c.optimizer_in_backward || c.num_microbatches <= 1 ||
           c.pipeline_model_parallel_size != 1)
         return ok;
       return "needs one microbatch per step (gradient accumulation keeps every gradient until the last microbatch), "
              "got num_microbatches " + i(c.num_microbatches);
     }},
};

// The trainmem profile's fields, in the order resolve() reports them.
const Rule k_trainmem_rules[] = {
    // Sharding: DeepSpeed's ZeRO stages and FSDP2's two reshard policies (zero_stage 2: reshard
    // after forward off; 3: on); Megatron shards with its distributed optimizer.
    {"zero_stage/fsdp2-stage", f::zero_stage, {f::optimizer}, "fsdp2 2 or 3",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.framework != Framework::fsdp2 || c.zero_stage >= 2) return ok;
       return "must be 2 (shard gradients and optimizer) or 3 (full shard) with fsdp2, got " + std::to_string(c.zero_stage);
     }},
    {"zero_stage/framework", f::zero_stage, {f::framework, f::use_distributed_optimizer}, "deepspeed or fsdp2 only",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (sharding_framework(c) || !in.zero_stage) return ok;
       return "applies to deepspeed and fsdp2; framework " + std::string(name_of(c.framework)) +
              (c.framework == Framework::megatron ? " shards with use_distributed_optimizer" : " does not shard");
     }},
    // FSDP1 (fsdp_version 1) is modelled without pipelining only: torch.distributed.pipelining,
    // as torchtitan runs it, composes with fully_shard (FSDP2).
    {"fsdp_version/pipeline", f::fsdp_version, {f::pipeline_model_parallel_size}, "1 only with pipeline_model_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.framework != Framework::fsdp2 || c.fsdp_version != 1 || c.pipeline_model_parallel_size <= 1) return ok;
       return std::string("1 (FullyShardedDataParallel) is not modelled with pipeline_model_parallel_size above 1 "
                          "(torch.distributed.pipelining runs with fully_shard, fsdp_version 2)");
     }},
    // The checkpoint is one per decoder layer (transformers' gradient_checkpointing).
    {"fsdp1_checkpoint_around_unit/recompute", f::fsdp1_checkpoint_around_unit, {f::recompute_granularity},
     "recompute_granularity full",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fsdp1_checkpoint_around_unit || c.recompute_granularity == RecomputeGranularity::full) return ok;
       return "needs recompute_granularity \"full\" (a checkpoint around each decoder layer), got " +
              q(c.recompute_granularity);
     }},
    {"use_distributed_optimizer/framework", f::use_distributed_optimizer, {f::framework, f::zero_stage}, "framework megatron only",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.use_distributed_optimizer || c.framework == Framework::megatron) return ok;
       if (c.framework == Framework::ddp)
         return std::string("is Megatron's; framework ddp does not shard (deepspeed and fsdp2 shard with zero_stage)");
       return "is Megatron's; with framework " + std::string(name_of(c.framework)) + " use zero_stage instead";
     }},
    // torchtitan's dp_shard divides the data-parallel ranks (HSDP: dp_replicate × dp_shard).
    {"data_parallel_shard_size/divides", f::data_parallel_shard_size, {f::data_parallel_size}, "divides data_parallel_size",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!in.data_parallel_shard_size || c.framework != Framework::fsdp2 ||
           c.data_parallel_size % c.data_parallel_shard_size == 0)
         return ok;
       return "must divide data_parallel_size (" + std::to_string(c.data_parallel_size) + "), got " +
              std::to_string(c.data_parallel_shard_size);
     }},
    // QLoRA stores the frozen base linears in NF4 (bitsandbytes Linear4bit, torchtune's
    // LoRALinear(quantize_base=True)) and computes in a 16-bit dtype.
    {"params_dtype/nf4-needs-qlora", f::params_dtype, {f::peft}, "nf4 needs peft \"qlora\"",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.params_dtype != Dtype::nf4 || qlora(c)) return ok;
       return "\"nf4\" needs peft \"qlora\" (a frozen 4-bit base), got peft " + q(c.peft);
     }},
    // LLM.int8 (bitsandbytes Linear8bitLt, transformers' and axolotl's load_in_8bit) is QLoRA's
    // 8-bit base, as LLaMA-Factory names it ("QLoRA 8-bit", quantization_bit 8).
    {"params_dtype/int8-needs-qlora", f::params_dtype, {f::peft}, "int8 needs peft \"qlora\"",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.params_dtype != Dtype::int8 || qlora(c)) return ok;
       return "\"int8\" needs peft \"qlora\" (a frozen 8-bit base: bitsandbytes LLM.int8), got peft " + q(c.peft);
     }},
    {"params_dtype/dtype", f::params_dtype, {f::fp8_param_gather}, "fp32, bf16 or fp16 otherwise",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.params_dtype == Dtype::nf4 || c.params_dtype == Dtype::int8 || sixteen_or_32(c.params_dtype)) return ok;
       return "must be \"fp32\", \"bf16\" or \"fp16\" (FP8 weights: fp8_param_gather), got " + q(c.params_dtype);
     }},
    {"params_dtype/qlora-needs-nf4", f::params_dtype, {f::peft}, "nf4 (or int8, LLM.int8) with peft \"qlora\"",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !sixteen_or_32(c.params_dtype)) return ok;
       return "must be \"nf4\" (or \"int8\": LLM.int8) with peft \"qlora\" (the frozen base linears in 4 or 8 "
              "bits), got " + q(c.params_dtype);
     }},
    // LLM.int8 keeps whole Int8Params on every GPU: transformers' BitsAndBytesConfig has a storage
    // type for FSDP and ZeRO-3 to shard (bnb_4bit_quant_storage) for 4-bit weights only
    // (src/transformers/utils/quantization_config.py @ 000e2231167497a632d7661a78f13e27b5d67a5d),
    // and torchtune's QLoRA is torchao's NF4.
    {"params_dtype/int8-whole", f::params_dtype, {f::framework, f::zero_stage, f::model_implementation},
     "int8: framework ddp, or deepspeed below zero_stage 3, with model_implementation hf-transformers",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.params_dtype != Dtype::int8 || !qlora(c)) return ok;
       const bool whole = c.framework == Framework::ddp || (c.framework == Framework::deepspeed && c.zero_stage < 3);
       if (whole && hf(c)) return ok;
       return "\"int8\" (LLM.int8) is modelled with framework \"ddp\", or \"deepspeed\" below zero_stage 3, and "
              "model_implementation \"hf-transformers\" (bitsandbytes' Linear8bitLt is not sharded), got framework " +
              q(c.framework) + ", model_implementation " + q(c.model_implementation);
     }},
    {"expert_params_dtype/nf4-needs-qlora", f::expert_params_dtype, {f::peft}, "nf4 needs peft \"qlora\"",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (in.expert_params_dtype != Dtype::nf4 || qlora(c)) return ok;
       return "\"nf4\" needs peft \"qlora\" (a frozen 4-bit base), got peft " + q(c.peft);
     }},
    // Defaulted from a valid params_dtype it is valid; from an invalid one that field is named.
    {"compute_dtype/dtype", f::compute_dtype, {f::fp8_recipe}, "fp32, bf16 or fp16",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!in.compute_dtype || sixteen_or_32(c.compute_dtype)) return ok;
       return "must be \"fp32\", \"bf16\" or \"fp16\" (FP8 matmuls: fp8_recipe), got " + q(c.compute_dtype);
     }},
    {"main_params_dtype/dtype", f::main_params_dtype, {}, "fp32, bf16 or fp16",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (sixteen_or_32(c.main_params_dtype)) return ok;
       return "must be \"fp32\", \"bf16\" or \"fp16\", got " + q(c.main_params_dtype);
     }},
    {"main_grads_dtype/dtype", f::main_grads_dtype, {}, "fp32, bf16 or fp16",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (sixteen_or_32(c.main_grads_dtype)) return ok;
       return "must be \"fp32\", \"bf16\" or \"fp16\", got " + q(c.main_grads_dtype);
     }},
    // 8-bit optimizer states are bitsandbytes' blockwise states, optimizer adam8bit.
    {"exp_avg_dtype/dtype", f::exp_avg_dtype, {f::optimizer}, "fp32, bf16, fp16 or fp8 (8-bit states: optimizer adam8bit)",
     [](const ConfigInput&, const Config& c) -> Broken {
       const Dtype d = c.exp_avg_dtype;
       if (d != Dtype::mxfp4 && d != Dtype::mxfp8 && d != Dtype::int8 && d != Dtype::nf4) return ok;
       return "must be \"fp32\", \"bf16\", \"fp16\" or \"fp8\" (8-bit states: optimizer \"adam8bit\"), got " + q(d);
     }},
    {"exp_avg_sq_dtype/dtype", f::exp_avg_sq_dtype, {f::optimizer}, "fp32, bf16, fp16 or fp8 (8-bit states: optimizer adam8bit)",
     [](const ConfigInput&, const Config& c) -> Broken {
       const Dtype d = c.exp_avg_sq_dtype;
       if (d != Dtype::mxfp4 && d != Dtype::mxfp8 && d != Dtype::int8 && d != Dtype::nf4) return ok;
       return "must be \"fp32\", \"bf16\", \"fp16\" or \"fp8\" (8-bit states: optimizer \"adam8bit\"), got " + q(d);
     }},
    {"fp8_param_gather/recipe", f::fp8_param_gather, {f::fp8_recipe}, "needs an fp8_recipe",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fp8_param_gather || c.fp8_recipe != Fp8Recipe::none) return ok;
       return std::string("needs an fp8_recipe");
     }},
    {"optimizer_implementation/framework", f::optimizer_implementation, {f::framework}, "frameworks ddp and fsdp2 only",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!in.optimizer_implementation || c.pytorch_native()) return ok;
       return "applies to frameworks ddp and fsdp2 (torch.optim); framework " + std::string(name_of(c.framework)) +
              " steps with its own fused Adam";
     }},
    // torchtune shard_model fully_shards the modules custom_sharded_layers names before the root;
    // resharding after forward is what full sharding (zero_stage 3) does.
    {"fsdp_embedding_units/full-shard", f::fsdp_embedding_units, {f::framework, f::zero_stage}, "framework fsdp2 with zero_stage 3",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fsdp_embedding_units || (c.framework == Framework::fsdp2 && c.zero_stage == 3)) return ok;
       return std::string("needs framework fsdp2 with zero_stage 3 (units resharded after their forward)");
     }},
    {"offload_params/sharded", f::offload_params, {f::framework, f::zero_stage}, "deepspeed or fsdp2 with zero_stage 3",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.offload_params || (sharding_framework(c) && c.zero_stage == 3)) return ok;
       return std::string("needs sharded weights: framework deepspeed or fsdp2 with zero_stage 3");
     }},

    // The model's own code (issue 13 item 11): Megatron trains its own GPTModel.
    {"model_implementation/megatron", f::model_implementation, {f::framework}, "megatron-core with framework megatron",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.framework != Framework::megatron || c.model_implementation == ModelImplementation::megatron_core) return ok;
       return "must be \"megatron-core\" with framework megatron (Megatron trains its own GPTModel), got " +
              q(c.model_implementation);
     }},
    {"recompute_granularity/selective-megatron", f::recompute_granularity, {f::recompute_modules, f::model_implementation},
     "\"selective\" (Megatron's recompute_modules) needs model_implementation megatron-core",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.recompute_granularity != RecomputeGranularity::selective || !c.eager_model()) return ok;
       return "\"selective\" recomputes Megatron Core's modules (recompute_modules); model_implementation " +
              q(c.model_implementation) + " checkpoints whole layers (\"full\")" +
              (c.model_implementation == ModelImplementation::torchtitan ? " or per op (\"selective_op\")" : "");
     }},
    {"recompute_granularity/selective-op-torchtitan", f::recompute_granularity, {f::model_implementation},
     "\"selective_op\" needs model_implementation torchtitan",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.recompute_granularity != RecomputeGranularity::selective_op ||
           c.model_implementation == ModelImplementation::torchtitan)
         return ok;
       return "\"selective_op\" is torchtitan's per-op checkpointing: needs model_implementation \"torchtitan\", got " +
              q(c.model_implementation);
     }},

    // Fine-tuning and memory-saving techniques (issue 13): where each framework supports them,
    // from the sources cited in docs/trainmem-profile.md §7.
    {"peft/qlora-framework", f::peft, {f::framework}, "qlora needs framework ddp, fsdp2 or deepspeed",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || c.framework != Framework::megatron) return ok;
       return std::string("\"qlora\" needs framework ddp, fsdp2 or deepspeed (bitsandbytes or torchao NF4 "
                          "linears; Megatron has none), got framework megatron");
     }},
    {"fp8_recipe/peft", f::fp8_recipe, {f::peft}, "\"none\" with peft",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.fp8_recipe == Fp8Recipe::none) return ok;
       return "must be \"none\" with peft " + q(c.peft) + " (FP8 copies of frozen weights are not modelled), got " +
              q(c.fp8_recipe);
     }},
    {"peft/latent-attention", f::peft, {f::multi_latent_attention, f::lora_target_modules}, "not with multi_latent_attention",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || !c.multi_latent_attention) return ok;
       return std::string("is not modelled with multi_latent_attention (its projections are not among lora_target_modules)");
     }},
    {"recompute_granularity/selective-op-peft", f::recompute_granularity, {f::peft}, "not \"selective_op\" with peft",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.recompute_granularity != RecomputeGranularity::selective_op) return ok;
       return "\"selective_op\" (torchtitan's per-op policy) is not modelled with peft " + q(c.peft);
     }},
    {"lora_target_modules/some", f::lora_target_modules, {f::peft}, "at least one with peft",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.lora_target_modules != 0) return ok;
       return "must name at least one module with peft " + q(c.peft);
     }},
    {"lora_target_modules/gate", f::lora_target_modules, {f::gated_linear_unit}, "gate_proj needs gated_linear_unit",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || !c.lora_targets(LoraTarget::gate_proj) || c.gated_linear_unit) return ok;
       return std::string("\"gate_proj\" needs gated_linear_unit (the MLP has no gate)");
     }},
    // Adapters on experts: in an MoE model the MLP targets are the routed experts' linears, as
    // PEFT's suffix match finds them in transformers' per-expert loop (Mixtral's
    // block_sparse_moe.experts.N.w1/w3/w2, Qwen3-MoE's mlp.experts.N.gate_proj/up_proj/down_proj:
    // one lora.Linear per expert; tuners/lora/model.py _create_and_replace; activations.cpp
    // mixtral_moe), or as ms-swift's Megatron LoRA wraps Megatron Core's grouped experts
    // (linear_fc1 and linear_fc2 of TEGroupedMLP: one LoraParallelLinear each, whose A and B are
    // grouped linears of one GEMM per local expert; modelscope/ms-swift
    // swift/megatron/tuners/lora.py @ 710553d85464c7d2be85f35fa19d9d5476619d6f and
    // 67fcc33641fbef6937bffe47da1833205d5df685; activations.cpp moe_body). torchtune's and
    // torchtitan's grouped experts have no such adapters here.
    {"lora_target_modules/experts-hf", f::lora_target_modules, {f::model_implementation},
     "MLP targets in an MoE model only with model_implementation hf-transformers or megatron-core",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || !c.is_moe() || !mlp_target(c) || hf(c) || megatron_core(c)) return ok;
       return "\"gate_proj\", \"up_proj\" and \"down_proj\" on the experts of an MoE model are modelled for "
              "model_implementation \"hf-transformers\" (PEFT on each expert's linears) and \"megatron-core\" "
              "(ms-swift's adapters on the grouped experts) only, got " +
              q(c.model_implementation);
     }},
    // Megatron Core's expert linear_fc1 is one grouped linear holding gate and up: ms-swift's LoRA
    // wraps it whole (one A of h × r, one B of r × 2·f_e per expert), so naming only one half
    // describes no run (ms-swift names the module, linear_fc1).
    {"lora_target_modules/experts-fc1-megatron", f::lora_target_modules, {f::model_implementation, f::gated_linear_unit},
     "gate_proj and up_proj together on Megatron Core's experts (one linear_fc1)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || !c.is_moe() || !megatron_core(c) || !c.gated_linear_unit) return ok;
       if (c.lora_targets(LoraTarget::gate_proj) == c.lora_targets(LoraTarget::up_proj)) return ok;
       return std::string("\"gate_proj\" and \"up_proj\" on Megatron Core's experts are one grouped linear_fc1, "
                          "which ms-swift's LoRA wraps whole: name both or neither");
     }},
    {"lora_target_modules/experts-shared", f::lora_target_modules, {}, "and no shared or latent experts",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || !c.is_moe() || !mlp_target(c) || !(hf(c) || megatron_core(c)) ||
           (c.moe_shared_expert_intermediate_size == 0 && c.moe_latent_size == 0))
         return ok;
       return std::string("\"gate_proj\", \"up_proj\" and \"down_proj\" on an MoE model with shared or latent "
                          "experts are not modelled (adapters on the routed experts only, Mixtral and Qwen3-MoE style; "
                          "ms-swift's all-linear would also wrap a shared expert's linear_fc1 and linear_fc2)");
     }},
    // The experts' adapters in a dtype of their own are modelled where ms-swift made them so
    // (fields.cpp lora_expert_dtype); PEFT's per-expert lora.Linear are made as the others.
    {"lora_expert_dtype/dtype", f::lora_expert_dtype, {}, "fp32, bf16 or fp16",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!c.peft_on() || !in.lora_expert_dtype || sixteen_or_32(c.lora_expert_dtype)) return ok;
       return "must be \"fp32\", \"bf16\" or \"fp16\", got " + q(c.lora_expert_dtype);
     }},
    {"lora_expert_dtype/megatron", f::lora_expert_dtype, {f::model_implementation},
     "the other adapters' dtype unless model_implementation is megatron-core",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!c.peft_on() || !in.lora_expert_dtype || megatron_core(c) || c.lora_expert_dtype == lora_adapter_dtype(c))
         return ok;
       return "differs from the other adapters' dtype (" + q(lora_adapter_dtype(c)) +
              ") only with model_implementation \"megatron-core\" (ms-swift's grouped experts); with " +
              q(c.model_implementation) + " every adapter is made alike";
     }},
    {"lora_target_modules/attention", f::lora_target_modules, {f::num_attention_heads}, "attention targets need attention heads",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.num_attention_heads != 0 || !attention_target(c)) return ok;
       return std::string("q_proj, k_proj, v_proj and o_proj need attention (num_attention_heads is 0)");
     }},
    {"lora_target_modules/lm-head", f::lora_target_modules, {f::vocab_size}, "lm_head needs a vocabulary",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.vocab_size != 0 || !c.lora_targets(LoraTarget::lm_head)) return ok;
       return std::string("\"lm_head\" needs an output layer (vocab_size is 0)");
     }},
    // modules_to_save is Hugging Face PEFT's (ModulesToSaveWrapper); torchtune, torchtitan and
    // Megatron-Bridge have no such option.
    {"lora_modules_to_save/hf", f::lora_modules_to_save, {f::model_implementation},
     "model_implementation hf-transformers (Hugging Face PEFT)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.lora_modules_to_save == 0 || hf(c)) return ok;
       return "is Hugging Face PEFT's modules_to_save: needs model_implementation \"hf-transformers\", got " +
              q(c.model_implementation);
     }},
    {"lora_modules_to_save/vocabulary", f::lora_modules_to_save, {f::vocab_size}, "a vocabulary",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || c.lora_modules_to_save == 0 || c.vocab_size != 0) return ok;
       return std::string("embed_tokens and lm_head need a vocabulary (vocab_size is 0)");
     }},
    {"lora_modules_to_save/lm-head-adapter", f::lora_modules_to_save, {f::lora_target_modules},
     "lm_head not also among lora_target_modules",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on() || !c.saves(SavedModule::lm_head) || !c.lora_targets(LoraTarget::lm_head)) return ok;
       return std::string("\"lm_head\" is also in lora_target_modules: PEFT trains a module to save whole and "
                          "puts no adapter on it; name it in one of the two");
     }},
    // A target in → out gets A: in × r and B: r × out (PEFT lora/layer.py update_layer), and
    // rank(B·A) ≤ min(in, out): a larger r adds parameters and memory but no rank. PEFT does not
    // refuse it; a rank above a target's smaller side is taken for a mistake (often lora_alpha
    // given as the rank) rather than counted.
    {"lora_rank/rank", f::lora_rank, {}, "at most the smaller dimension (in or out) of every target",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.peft_on()) return ok;
       const auto side = narrowest_target(c);
       if (!side || double(c.lora_rank) <= std::min(side->in, side->out)) return ok;
       return "must be at most the smaller dimension of every target (rank(B·A) ≤ min(in, out)); " +
              std::string(name_of(side->target)) + " is " + n(side->in) + " → " + n(side->out) + ", got " +
              n(double(c.lora_rank));
     }},

    // QLoRA's quantisation options (docs/trainmem-profile.md §7, "PEFT: LoRA and QLoRA"); their
    // defaults are derived in resolve.cpp (derive_qlora_defaults), with their sources.
    {"nf4_double_quant/torchao", f::nf4_double_quant, {f::model_implementation},
     "true with model_implementation torchtune (torchao always double-quantises)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !torchtune(c) || c.nf4_double_quant) return ok;
       return std::string("must be true with model_implementation \"torchtune\" (torchao's NF4Tensor always "
                          "double-quantises its block scales)");
     }},
    {"quantize_lm_head/nf4", f::quantize_lm_head, {f::params_dtype}, "an NF4 base",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !c.quantize_lm_head || c.params_dtype == Dtype::nf4) return ok;
       return "models an NF4 output layer only, got params_dtype " + q(c.params_dtype) + " (LLM.int8's lm_head is not modelled)";
     }},
    {"quantize_lm_head/vocabulary", f::quantize_lm_head, {f::vocab_size}, "an output layer",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !c.quantize_lm_head || c.vocab_size != 0) return ok;
       return std::string("needs an output layer (vocab_size is 0)");
     }},
    {"quantize_lm_head/untied", f::quantize_lm_head, {f::share_embeddings_and_output_weights}, "an untied output layer",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !c.quantize_lm_head || c.vocab_size == 0 || !c.share_embeddings_and_output_weights) return ok;
       return std::string("is not modelled with share_embeddings_and_output_weights (a quantised lm_head no "
                          "longer shares the embedding's weight; transformers keeps tied weights unconverted by default)");
     }},
    {"quantize_lm_head/liger", f::quantize_lm_head, {f::fused_linear_cross_entropy}, "not with fused_linear_cross_entropy",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !c.quantize_lm_head || !c.fused_linear_cross_entropy) return ok;
       return std::string("is not modelled with fused_linear_cross_entropy (Liger multiplies by lm_head.weight "
                          "itself, not by a 4-bit linear)");
     }},
    {"quantize_lm_head/torchtune", f::quantize_lm_head, {f::model_implementation, f::lora_target_modules},
     "with model_implementation torchtune exactly when lm_head is among lora_target_modules",
     [](const ConfigInput&, const Config& c) -> Broken {
       const bool output_adapter = c.lora_targets(LoraTarget::lm_head);
       if (!qlora(c) || !torchtune(c) || c.quantize_lm_head == output_adapter) return ok;
       return std::string(output_adapter ? "must be true with model_implementation \"torchtune\" and an lm_head "
                                           "adapter (the output is a LoRALinear with quantize_base)"
                                         : "needs lm_head among lora_target_modules with model_implementation "
                                           "\"torchtune\" (only a LoRALinear base is quantised)");
     }},
    {"bnb_keeps_matmul_input/torchao", f::bnb_keeps_matmul_input, {f::model_implementation},
     "not with model_implementation torchtune (torchao's NF4, not bitsandbytes' MatMul4Bit)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !torchtune(c) || !c.bnb_keeps_matmul_input) return ok;
       return std::string("must be false with model_implementation \"torchtune\" (torchao's NF4Tensor and "
                          "linear_nf4, not bitsandbytes' MatMul4Bit)");
     }},
    {"kbit_upcast/torchtune", f::kbit_upcast, {f::model_implementation}, "\"none\" with model_implementation torchtune",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !torchtune(c) || c.kbit_upcast == KbitUpcast::none) return ok;
       return std::string("must be \"none\" with model_implementation \"torchtune\" (torchtune does not call "
                          "PEFT's prepare_model_for_kbit_training)");
     }},
    // TRL's SFTTrainer (v0.8.0 … v0.21.0, trl/trainer/sft_trainer.py @ v0.12.0 80cf468a) and
    // axolotl (src/axolotl/loaders/model.py @ 067b021c, _prepare_model_for_quantization) skip
    // prepare_model_for_kbit_training for sharded QLoRA (FSDP, ZeRO-3).
    {"kbit_upcast/sharded", f::kbit_upcast, {f::framework, f::zero_stage, f::peft},
     "not \"trl\" or \"axolotl\" with framework fsdp2 or deepspeed zero_stage 3 (both skip the call for sharded QLoRA)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!qlora(c) || !sharded_qlora_run(c) || (c.kbit_upcast != KbitUpcast::trl && c.kbit_upcast != KbitUpcast::axolotl))
         return ok;
       if (torchtune(c)) return ok;  // the rule above names the field already
       return "\"" + std::string(name_of(c.kbit_upcast)) +
              "\" does not exist with framework fsdp2 or deepspeed zero_stage 3 (TRL and axolotl skip "
              "prepare_model_for_kbit_training for sharded QLoRA): use \"none\", or \"peft\" for a script that calls it itself";
     }},

    // torchtune has two kinds of recipe and no DDP (pytorch/torchtune @ bd2a0fc7c): the
    // *_single_device recipes hold a plain module on one device (framework ddp, DP 1), and `tune
    // run` refuses them a torchrun launch ("Recipe ... does not support distributed training",
    // torchtune/_cli/run.py, _recipe_registry.py supports_distributed=False); the *_distributed
    // recipes (lora_finetune_distributed.py, full_finetune_distributed.py) call
    // training.shard_model, which applies FSDP2's fully_shard (torchtune/training/_distributed.py).
    {"framework/torchtune-distributed", f::framework, {f::model_implementation, f::world_size},
     "fsdp2 with model_implementation torchtune on more than one GPU (torchtune's distributed recipes)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.framework != Framework::ddp || !torchtune(c) || c.world_size <= 1) return ok;
       return "must be \"fsdp2\" with model_implementation torchtune on " + n(double(c.world_size)) +
              " GPUs: torchtune runs more than one GPU with its distributed recipes, which shard the model "
              "with FSDP2 (training.shard_model); \"ddp\" is its single-device recipes, one GPU";
     }},
    // torchtune has no pipeline parallelism: its ParallelDims are dp_replicate, dp_shard, tp and cp
    // (pytorch/torchtune torchtune/training/_distributed.py @ bd2a0fc7c, ParallelDims), and no
    // recipe splits the model into stages.
    {"pipeline_model_parallel_size/torchtune", f::pipeline_model_parallel_size, {f::model_implementation},
     "1 with model_implementation torchtune (its recipes have no pipeline parallelism)",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!torchtune(c) || c.pipeline_model_parallel_size <= 1) return ok;
       return "must be 1 with model_implementation torchtune, got " + n(double(c.pipeline_model_parallel_size)) +
              ": torchtune's recipes shard with FSDP2 and split over tensor and context parallelism, never into "
              "pipeline stages (ParallelDims: dp_replicate, dp_shard, tp, cp)";
     }},
    // torchtune optimizer_in_bwd (recipes/full_finetune_single_device.py and
    // full_finetune_distributed.py with FSDP2) steps in post-accumulate-grad hooks. Megatron and
    // DeepSpeed step after backward.
    {"optimizer_in_backward/framework", f::optimizer_in_backward, {f::framework, f::optimizer}, "frameworks ddp and fsdp2",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.optimizer_in_backward || (c.framework != Framework::megatron && c.framework != Framework::deepspeed)) return ok;
       return "applies to frameworks ddp and fsdp2 (torchtune's optimizer_in_bwd); framework " +
              std::string(name_of(c.framework)) + " steps its optimizer after backward";
     }},
    {"optimizer_in_backward/ddp-one-rank", f::optimizer_in_backward, {f::framework, f::data_parallel_size},
     "data_parallel_size 1 with framework ddp",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.optimizer_in_backward || c.framework != Framework::ddp || c.data_parallel_size <= 1) return ok;
       return "with framework ddp needs data_parallel_size 1 (DDP all-reduces its gradient buckets after the hooks "
              "have run), got " + n(double(c.data_parallel_size));
     }},
    {"optimizer_in_backward/pipeline", f::optimizer_in_backward, {f::pipeline_model_parallel_size},
     "pipeline_model_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.optimizer_in_backward || c.pipeline_model_parallel_size <= 1) return ok;
       return "needs pipeline_model_parallel_size 1 (a pipeline accumulates gradients over its microbatches), got " +
              n(double(c.pipeline_model_parallel_size));
     }},

    // Megatron TransformerConfig.__post_init__ (002526d81b81): no CPU offloading with pipeline
    // parallelism or with activation recomputation. DeepSpeed offloads what its activation
    // checkpointing saves (checkpointing.py, CPU_CHECKPOINT). torchtune pipelines nothing.
    {"activation_offload/pipeline", f::activation_offload, {f::pipeline_model_parallel_size}, "pipeline_model_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.activation_offload || c.pipeline_model_parallel_size <= 1) return ok;
       return "needs pipeline_model_parallel_size 1 (Megatron has no pipeline parallelism with CPU offloading), got " +
              n(double(c.pipeline_model_parallel_size));
     }},
    {"activation_offload/megatron-recompute", f::activation_offload, {f::framework, f::recompute_granularity},
     "megatron without recompute",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.activation_offload || c.framework != Framework::megatron ||
           c.recompute_granularity == RecomputeGranularity::none)
         return ok;
       return "with framework megatron needs recompute_granularity \"none\" (Megatron's CPU offloading does not "
              "work with activation recomputation), got " + q(c.recompute_granularity);
     }},
    {"activation_offload/deepspeed-recompute", f::activation_offload, {f::framework, f::recompute_granularity},
     "deepspeed with recompute_granularity \"full\"",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.activation_offload || c.framework != Framework::deepspeed ||
           c.recompute_granularity == RecomputeGranularity::full)
         return ok;
       return "with framework deepspeed needs recompute_granularity \"full\" (cpu_checkpointing moves the "
              "checkpointed layer inputs), got " + q(c.recompute_granularity);
     }},

    // torch.compile runs the PyTorch implementations' own modules (torchtune training/_compile.py
    // compile_model, torchtitan apply_compile, transformers Trainer torch_compile); Megatron Core's
    // Transformer Engine layers are not torch.compile'd. MLA's rules are Megatron Core's standing
    // in for every implementation, so what a compiled MLA layer keeps is not derived.
    {"torch_compile/eager", f::torch_compile, {f::model_implementation}, "model_implementation hf-transformers, torchtune or torchtitan",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.torch_compile || c.eager_model()) return ok;
       return std::string("needs model_implementation hf-transformers, torchtune or torchtitan (Megatron Core's "
                          "Transformer Engine layers are not torch.compile'd)");
     }},
    {"torch_compile/latent-attention", f::torch_compile, {f::multi_latent_attention}, "no multi_latent_attention",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.torch_compile || !c.multi_latent_attention) return ok;
       return std::string("is not modelled with multi_latent_attention (its saved tensors are Megatron Core's rules "
                          "standing in for every implementation)");
     }},

    // Liger Kernel's fused linear cross entropy replaces the output layer and the loss of the
    // Hugging Face models it patches (liger_kernel/transformers/model/*.py lce_forward, which
    // hands LigerForCausalLMLoss the hidden states and lm_head.weight), on one GPU's whole
    // vocabulary.
    {"fused_linear_cross_entropy/hf", f::fused_linear_cross_entropy, {f::model_implementation},
     "model_implementation hf-transformers",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fused_linear_cross_entropy || hf(c)) return ok;
       return "patches Hugging Face transformers' models: needs model_implementation \"hf-transformers\", got " +
              q(c.model_implementation);
     }},
    {"fused_linear_cross_entropy/tensor-parallel", f::fused_linear_cross_entropy, {f::tensor_model_parallel_size},
     "tensor_model_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fused_linear_cross_entropy || c.tensor_model_parallel_size <= 1) return ok;
       return "multiplies by the whole output layer on each GPU: needs tensor_model_parallel_size 1, got " +
              n(double(c.tensor_model_parallel_size));
     }},
    {"fused_linear_cross_entropy/loss-fusion", f::fused_linear_cross_entropy, {f::cross_entropy_loss_fusion},
     "not with cross_entropy_loss_fusion",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fused_linear_cross_entropy || !c.cross_entropy_loss_fusion) return ok;
       return std::string("is a loss of its own: not with cross_entropy_loss_fusion");
     }},
    {"fused_linear_cross_entropy/lm-head-adapter", f::fused_linear_cross_entropy, {f::lora_target_modules},
     "not with an lm_head adapter",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.fused_linear_cross_entropy || !lm_head_adapter(c)) return ok;
       return std::string("reads lm_head.weight directly, so an lm_head adapter would not take part: drop lm_head "
                          "from lora_target_modules");
     }},
    // Apple's Cut Cross Entropy replaces the output layer and the loss of the transformers models
    // its cce_patch patches (cut_cross_entropy/transformers/*.py: apply_lce(hidden_states,
    // lm_head.weight, labels)); axolotl's CutCrossEntropyPlugin applies it. Its backward asserts
    // 16-bit embeddings and classifier (apple/ml-cross-entropy cut_cross_entropy/cce_backward.py @
    // 18e76ada05706ad9bc672804a35a940a07a21a13, cce_backward_kernel: "Backwards requires
    // embeddings to be bf16 or fp16"), and axolotl refuses it without bf16 or fp16
    // (integrations/cut_cross_entropy/args.py @ 1188fdc1185e0c5c2c1b6082cb9e40021fcd1f47,
    // check_dtype_is_half).
    {"cut_cross_entropy/hf", f::cut_cross_entropy, {f::model_implementation}, "model_implementation hf-transformers",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.cut_cross_entropy || hf(c)) return ok;
       return "patches Hugging Face transformers' models (cce_patch): needs model_implementation \"hf-transformers\", got " +
              q(c.model_implementation);
     }},
    {"cut_cross_entropy/tensor-parallel", f::cut_cross_entropy, {f::tensor_model_parallel_size},
     "tensor_model_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.cut_cross_entropy || c.tensor_model_parallel_size <= 1) return ok;
       return "is modelled on the whole output layer on each GPU: needs tensor_model_parallel_size 1, got " +
              n(double(c.tensor_model_parallel_size));
     }},
    {"cut_cross_entropy/16-bit", f::cut_cross_entropy, {f::params_dtype, f::compute_dtype},
     "a 16-bit output layer and compute dtype",
     [](const ConfigInput&, const Config& c) -> Broken {
       const Dtype weight = c.params_dtype == Dtype::nf4 ? c.compute_dtype : c.params_dtype;
       if (!c.cut_cross_entropy || (half(weight) && half(c.compute_dtype))) return ok;
       return "needs the output layer's weight and the compute dtype in bf16 or fp16 (its backward kernel asserts "
              "16-bit inputs), got params_dtype " + q(c.params_dtype) + " and compute_dtype " + q(c.compute_dtype);
     }},
    {"cut_cross_entropy/other-loss", f::cut_cross_entropy,
     {f::cross_entropy_loss_fusion, f::fused_linear_cross_entropy, f::cross_entropy_chunks},
     "not with cross_entropy_loss_fusion, fused_linear_cross_entropy or cross_entropy_chunks",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.cut_cross_entropy ||
           !(c.cross_entropy_loss_fusion || c.fused_linear_cross_entropy || c.cross_entropy_chunks > 1))
         return ok;
       return std::string("is a loss of its own: not with cross_entropy_loss_fusion, fused_linear_cross_entropy or "
                          "cross_entropy_chunks");
     }},
    {"cut_cross_entropy/lm-head-adapter", f::cut_cross_entropy, {f::lora_target_modules}, "not with an lm_head adapter",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.cut_cross_entropy || !lm_head_adapter(c)) return ok;
       return std::string("with an lm_head adapter is not modelled (newer releases fold the adapter into a wider "
                          "classifier); drop lm_head from lora_target_modules");
     }},
    {"cut_cross_entropy/quantized-lm-head", f::cut_cross_entropy, {f::quantize_lm_head}, "not with quantize_lm_head",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.cut_cross_entropy || !c.quantize_lm_head) return ok;
       return std::string("is not modelled with quantize_lm_head (the kernel reads a 16-bit lm_head.weight)");
     }},

    // transformers' ForCausalLMLoss of a release (activations.cpp, k_src_hf_shifted_loss) and a loop
    // that keeps the model's output are about transformers' own models and their eager, whole
    // loss; the other losses replace it.
    {"transformers_loss/hf", f::transformers_loss, {f::model_implementation}, "model_implementation hf-transformers",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.transformers_loss == TransformersLoss::pad_labels || hf(c)) return ok;
       return "is transformers' ForCausalLMLoss: needs model_implementation \"hf-transformers\", got " +
              q(c.model_implementation);
     }},
    // Liger's fused linear cross entropy replaces the loss in training only: evaluating, its
    // forward makes the logits and runs the release's loss (fields.cpp hf_loss_somewhere), so
    // transformers_loss is the evaluation's there. The other losses replace it throughout.
    {"transformers_loss/other-loss", f::transformers_loss,
     {f::cross_entropy_loss_fusion, f::cut_cross_entropy, f::cross_entropy_chunks},
     "\"pad-labels\" with cross_entropy_loss_fusion, cut_cross_entropy or cross_entropy_chunks",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.transformers_loss == TransformersLoss::pad_labels ||
           !(c.cross_entropy_loss_fusion || c.cut_cross_entropy || c.cross_entropy_chunks > 1))
         return ok;
       return std::string("is transformers' own loss; with cross_entropy_loss_fusion, cut_cross_entropy or "
                          "cross_entropy_chunks another loss replaces it: leave it \"pad-labels\"");
     }},
    {"transformers_loss/compile", f::transformers_loss, {f::torch_compile}, "\"pad-labels\" with torch_compile",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.transformers_loss == TransformersLoss::pad_labels || !c.torch_compile) return ok;
       return std::string("is modelled eager: compiled, the partitioner decides what the loss keeps (torch_compile "
                          "false, or transformers_loss \"pad-labels\")");
     }},
    {"transformers_loss/parallel", f::transformers_loss, {f::tensor_model_parallel_size, f::context_parallel_size},
     "\"pad-labels\" unless tensor_model_parallel_size and context_parallel_size are 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.transformers_loss == TransformersLoss::pad_labels ||
           (c.tensor_model_parallel_size <= 1 && c.context_parallel_size <= 1))
         return ok;
       return "is modelled on whole logits on each GPU: needs tensor_model_parallel_size and context_parallel_size 1, "
              "got " + n(double(c.tensor_model_parallel_size)) + " and " + n(double(c.context_parallel_size));
     }},
    // torch.utils.checkpoint's reentrant mode is what transformers' gradient_checkpointing_enable
    // passes; torchtune's and torchtitan's checkpoint_wrapper(..., CheckpointImpl.NO_REENTRANT)
    // and Megatron's own recompute never run it (resolve.cpp derives the default).
    {"checkpoint_reentrant/hf", f::checkpoint_reentrant, {f::model_implementation}, "model_implementation hf-transformers",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.checkpoint_reentrant || hf(c)) return ok;
       return "is transformers' gradient_checkpointing_kwargs {\"use_reentrant\": true}: needs model_implementation "
              "\"hf-transformers\" (torchtune's and torchtitan's checkpoint_wrapper are non-reentrant), got " +
              q(c.model_implementation);
     }},
    {"model_output_kept/hf", f::model_output_kept, {f::model_implementation}, "model_implementation hf-transformers",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.model_output_kept || hf(c)) return ok;
       return "is modelled for transformers' models (their output's logits): needs model_implementation "
              "\"hf-transformers\", got " + q(c.model_implementation);
     }},
    {"model_output_kept/other-loss", f::model_output_kept,
     {f::cross_entropy_loss_fusion, f::fused_linear_cross_entropy, f::cut_cross_entropy, f::cross_entropy_chunks},
     "not with cross_entropy_loss_fusion, fused_linear_cross_entropy, cut_cross_entropy or cross_entropy_chunks",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.model_output_kept || !other_hf_loss(c)) return ok;
       return std::string("is modelled for transformers' own loss, whose output holds the whole logits; with "
                          "cross_entropy_loss_fusion, fused_linear_cross_entropy, cut_cross_entropy or "
                          "cross_entropy_chunks set it false");
     }},
    {"model_output_kept/parallel", f::model_output_kept, {f::tensor_model_parallel_size, f::context_parallel_size},
     "tensor_model_parallel_size and context_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.model_output_kept || (c.tensor_model_parallel_size <= 1 && c.context_parallel_size <= 1)) return ok;
       return "is modelled on whole logits on each GPU: needs tensor_model_parallel_size and context_parallel_size 1, "
              "got " + n(double(c.tensor_model_parallel_size)) + " and " + n(double(c.context_parallel_size));
     }},

    // Evaluation is modelled as transformers' Trainer runs it (prediction_step under no_grad) on
    // a Hugging Face model whose logits are whole on each GPU (activations.cpp
    // evaluation_forward_bytes, trainmem_profile.cpp job_moments): another loop, a split model, or a loss whose evaluation path is not
    // read is a named gap, never a silent figure.
    {"eval_micro_batch_size/hf", f::eval_micro_batch_size, {f::model_implementation, f::framework},
     "model_implementation hf-transformers under a PyTorch framework",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.eval_micro_batch_size == 0 || (hf(c) && c.framework != Framework::megatron)) return ok;
       return "is modelled for transformers' Trainer (prediction_step) on a Hugging Face model: needs "
              "model_implementation \"hf-transformers\" and framework ddp, fsdp2 or deepspeed, got " +
              q(c.model_implementation) + " under " + q(c.framework);
     }},
    {"eval_micro_batch_size/parallel", f::eval_micro_batch_size,
     {f::tensor_model_parallel_size, f::context_parallel_size, f::pipeline_model_parallel_size},
     "tensor_model_parallel_size, pipeline_model_parallel_size and context_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.eval_micro_batch_size == 0 || (c.tensor_model_parallel_size <= 1 && c.context_parallel_size <= 1 &&
                                            c.pipeline_model_parallel_size <= 1))
         return ok;
       return "is modelled with the whole model and its logits on each GPU: needs tensor_model_parallel_size, "
              "pipeline_model_parallel_size and context_parallel_size 1, got " + tp_pp_cp(c);
     }},
    {"eval_micro_batch_size/loss", f::eval_micro_batch_size,
     {f::cut_cross_entropy, f::cross_entropy_chunks, f::torch_compile, f::cross_entropy_loss_fusion},
     "not with cut_cross_entropy, cross_entropy_chunks, torch_compile or cross_entropy_loss_fusion",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.eval_micro_batch_size == 0 || !(c.cut_cross_entropy || c.cross_entropy_chunks > 1 || c.torch_compile ||
                                             c.cross_entropy_loss_fusion))
         return ok;
       return std::string("is modelled with transformers' own loss in evaluation (Liger's fused loss materialises "
                          "the logits there too); what cut_cross_entropy, chunked, compiled or fused losses do "
                          "under no_grad is not modelled: leave those off or eval_micro_batch_size unset");
     }},
    // The predictions compute_metrics keeps grow with the evaluation set: without its size the
    // figure would be one step's, an under-estimate, so it is asked for, never assumed.
    {"eval_samples/needed", f::eval_samples, {f::eval_predictions, f::eval_micro_batch_size},
     "set when eval_predictions keeps logits or token ids",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.eval_micro_batch_size == 0 || c.eval_predictions == EvalPredictions::none || c.eval_samples > 0) return ok;
       return "is needed with eval_predictions " + q(c.eval_predictions) +
              ": the Trainer keeps every evaluation step's predictions on the GPU, so their bytes grow with "
              "the evaluation set's sequences; set eval_samples (or eval_predictions \"none\")";
     }},

    // bitsandbytes has paged Adam, AdamW, their 8-bit forms and Lion (bitsandbytes/optim).
    {"paged_optimizer/optimizer", f::paged_optimizer, {f::optimizer}, "optimizer adam, adamw, adam8bit or lion",
     [](const ConfigInput&, const Config& c) -> Broken {
       const Optimizer o = c.optimizer;
       if (!c.paged_optimizer || o == Optimizer::adam || o == Optimizer::adamw || o == Optimizer::adam8bit ||
           o == Optimizer::lion)
         return ok;
       return "bitsandbytes pages the states of adam, adamw, adam8bit and lion, got optimizer " + q(o);
     }},
    {"paged_optimizer/framework", f::paged_optimizer, {f::optimizer, f::framework}, "not with framework megatron",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.paged_optimizer || c.framework != Framework::megatron) return ok;
       return std::string("applies to frameworks ddp, fsdp2 and deepspeed (a bitsandbytes optimizer); framework "
                          "megatron steps with its own optimizer");
     }},
    {"paged_optimizer/offload", f::paged_optimizer, {f::optimizer_offload_fraction}, "not with optimizer_offload_fraction",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (!c.paged_optimizer || !(c.optimizer_offload_fraction > 0)) return ok;
       return "cannot be combined with optimizer_offload_fraction (the states are paged, not offloaded), got " +
              n(c.optimizer_offload_fraction);
     }},
    {"optimizer_implementation/paged", f::optimizer_implementation, {f::paged_optimizer}, "not with paged_optimizer",
     [](const ConfigInput& in, const Config& c) -> Broken {
       if (!c.paged_optimizer || !in.optimizer_implementation || !c.pytorch_native()) return ok;
       return std::string("does not apply with paged_optimizer (bitsandbytes steps in its own kernel)");
     }},

    // Chunked cross entropy: torchtune's CEWithChunkedOutputLoss; axolotl's chunked_cross_entropy
    // (src/axolotl/monkeypatch/loss/chunked.py @ 01b75c129d7b3014c2524cd270075b5653fe6735)
    // replaces transformers' ForCausalLMLoss: it chunks the model's whole logits, on one GPU's
    // whole vocabulary.
    {"cross_entropy_chunks/framework", f::cross_entropy_chunks, {f::framework}, "above 1 only with frameworks ddp, fsdp2 and deepspeed",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.cross_entropy_chunks <= 1 || c.framework != Framework::megatron) return ok;
       return std::string("applies to frameworks ddp, fsdp2 and deepspeed (torchtune's CEWithChunkedOutputLoss); "
                          "framework megatron computes a vocab-parallel cross entropy");
     }},
    {"cross_entropy_chunks/loss-fusion", f::cross_entropy_chunks, {f::cross_entropy_loss_fusion},
     "not with cross_entropy_loss_fusion",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.cross_entropy_chunks <= 1 || c.framework == Framework::megatron || !c.cross_entropy_loss_fusion) return ok;
       return std::string("chunks the fp32 copy of the unfused loss; cross_entropy_loss_fusion keeps none");
     }},
    {"cross_entropy_chunks/implementation", f::cross_entropy_chunks, {f::model_implementation},
     "model_implementation torchtune, hf-transformers or megatron-core",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.cross_entropy_chunks <= 1 || c.framework == Framework::megatron || c.cross_entropy_loss_fusion ||
           c.model_implementation != ModelImplementation::torchtitan)
         return ok;
       return std::string("is torchtune's CEWithChunkedOutputLoss (or axolotl's copy of it for transformers' "
                          "models): needs model_implementation \"torchtune\", \"hf-transformers\" (or \"megatron-core\"), got \"torchtitan\"");
     }},
    {"cross_entropy_chunks/liger", f::cross_entropy_chunks, {f::fused_linear_cross_entropy},
     "with hf-transformers not with fused_linear_cross_entropy",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.cross_entropy_chunks <= 1 || c.framework == Framework::megatron || c.cross_entropy_loss_fusion || !hf(c) ||
           !c.fused_linear_cross_entropy)
         return ok;
       return std::string("chunks the logits of transformers' loss; fused_linear_cross_entropy makes none");
     }},
    {"cross_entropy_chunks/tensor-parallel", f::cross_entropy_chunks, {f::model_implementation, f::tensor_model_parallel_size},
     "with hf-transformers tensor_model_parallel_size 1",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.cross_entropy_chunks <= 1 || c.framework == Framework::megatron || c.cross_entropy_loss_fusion || !hf(c) ||
           c.tensor_model_parallel_size <= 1)
         return ok;
       return "with model_implementation \"hf-transformers\" (axolotl's chunked_cross_entropy) is modelled on one GPU's "
              "whole vocabulary: needs tensor_model_parallel_size 1, got " + n(double(c.tensor_model_parallel_size));
     }},

    // Megatron-LM's interleaved schedule is the one with virtual pipeline stages.
    {"pipeline_schedule/needs-vpp", f::pipeline_schedule, {f::virtual_pipeline_model_parallel_size},
     "interleaved only with virtual_pipeline_model_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.pipeline_schedule != PipelineSchedule::interleaved || c.virtual_pipeline_model_parallel_size > 0) return ok;
       return std::string("\"interleaved\" needs virtual_pipeline_model_parallel_size");
     }},
    {"pipeline_schedule/vpp-needs-interleaved", f::pipeline_schedule, {f::virtual_pipeline_model_parallel_size},
     "interleaved with virtual_pipeline_model_parallel_size",
     [](const ConfigInput&, const Config& c) -> Broken {
       if (c.pipeline_schedule == PipelineSchedule::interleaved || c.virtual_pipeline_model_parallel_size == 0) return ok;
       return "must be \"interleaved\" with virtual_pipeline_model_parallel_size, got " + q(c.pipeline_schedule);
     }},
};

// One issue per broken rule, in the table's order; `once`: an issue another rule found already
// (sizes too large to count) is not reported again.
void check_rules(std::span<const Rule> rules, const ConfigInput& in, const Config& c, std::vector<Issue>& issues,
                 bool once) {
  for (const Rule& rule : rules) {
    Broken broken = rule.check(in, c);
    if (!broken) continue;
    Issue made = issue(rule.field.text, *broken);
    made.rule = std::string(rule.id);
    for (FieldName name : rule.related)
      if (!name.text.empty() && name.text != made.field) made.related.emplace_back(name.text);
    if (once && std::find(issues.begin(), issues.end(), made) != issues.end()) continue;
    issues.push_back(std::move(made));
  }
}

const std::span<const Rule> k_tables[] = {k_model_rules, k_trainmem_rules, k_batch_rules};

}  // namespace

void check_model_rules(const ConfigInput& in, const Config& c, std::vector<Issue>& issues) {
  check_rules(k_model_rules, in, c, issues, true);
}
void check_trainmem_rules(const ConfigInput& in, const Config& c, std::vector<Issue>& issues) {
  check_rules(k_trainmem_rules, in, c, issues, false);
}
void check_batch_rules(const ConfigInput& in, const Config& c, std::vector<Issue>& issues) {
  check_rules(k_batch_rules, in, c, issues, true);
}

std::string rule_words(std::string_view field) {
  std::string words;
  for (std::span<const Rule> table : k_tables)
    for (const Rule& rule : table)
      if (rule.field.text == field) words += (words.empty() ? "" : "; ") + std::string(rule.words);
  return words;
}

std::vector<std::string_view> rule_ids() {
  std::vector<std::string_view> ids;
  for (std::span<const Rule> table : k_tables)
    for (const Rule& rule : table) ids.push_back(rule.id);
  return ids;
}

}  // namespace trainmem
