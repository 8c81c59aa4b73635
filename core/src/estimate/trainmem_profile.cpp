// Profile "trainmem": the estimator that goes beyond the references.
//
// 1. Inventory: every parameter tensor of a layer, with its local shape on one GPU after tensor
//    and expert parallelism (Megatron Core's column/row-parallel split), counted as the model has
//    it (norm types, biases, qk-norm, router, MLA structure, MTP projections, padded vocabulary).
// 2. Placement: decoder layers on pipeline stages as Megatron places them (layout.hpp); the
//    embedding on the first stage; final norm, output layer (or the tied copy) and MTP on the last.
// 3. Bytes per tensor class: each framework's rule (below) gives every tensor class a dtype
//    (tables.hpp) and a sharding group; optimizer states come from the optimizer table.
// 4. Activations per microbatch (activations.cpp) times the microbatches the schedule keeps in
//    flight on each stage; the peak of a stage is the largest of the moments of a step.
// The most-loaded GPU is the stage whose device figure is largest (trainmem_estimate).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <span>
#include <vector>

#include "estimate/caching_allocator.hpp"
#include "layout.hpp"
#include "profiles.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/deepspeed.hpp"
#include "trainmem/nccl.hpp"
#include "trainmem/tables.hpp"

namespace trainmem::detail {
namespace {

enum class Part : uint8_t { dense, embedding, expert };

// A QLoRA base stored by bitsandbytes: NF4 (Linear4bit, or torchao's NF4Tensor under torchtune)
// or, with params_dtype int8, LLM.int8 (Linear8bitLt with Int8Params: transformers'
// load_in_8bit, axolotl's load_in_8bit, PEFT's "int8 training").
bool quantized_base(const Config& c, Dtype stored) {
  return stored == Dtype::nf4 || (stored == Dtype::int8 && c.peft == Peft::qlora);
}

// Identical parameter tensors on one GPU. cols == 1 for vectors (norms, biases).
// Trivially constructible on purpose: an Inventory's slots stay uninitialised until add() fills
// them (the planner builds millions of inventories).
struct Tensors {
  Part part;
  double count;
  double rows, cols;
  bool linear;   // a GEMM weight: FP8 copies and autocast casts apply
  bool hidden;   // a hidden-layer matrix (Muon's momentum; everything else gets AdamW)
  bool adapter;  // trainable under peft (a LoRA matrix or a saved copy); every other tensor is then frozen
  bool saved_copy;  // PEFT modules_to_save: a trainable whole copy of a module, in the base's dtype
  bool bias = false;  // a linear layer's bias (not a norm's vector): QLoRA's kbit_upcast tells them apart
  double elements() const { return rows * cols; }
  double params() const { return count * rows * cols; }
};

struct Inventory {
  std::array<Tensors, 112> items;  // the first n are set
  int n = 0;
  // The output layer's weight on the last stage (the input embedding when a one-stage model ties
  // them): the first gradient a backward pass creates. -1 elsewhere.
  int output_item = -1;
  // Returns the group's index, -1 for an empty group (not added).
  int add(Part part, double count, double rows, double cols, bool linear, bool hidden,
          bool adapter = false, bool saved_copy = false) {
    if (count <= 0 || rows <= 0 || cols <= 0) return -1;
    // At most ~45 groups exist (an MTP MoE layer on a dense last stage), and with peft up to 14
    // adapter matrices per kind of layer, 2 for the output layer and one more group per kind of
    // layer for NF4's separate q and k/v; the bound is structural.
    if (n == int(items.size())) std::abort();
    items[size_t(n)] = {part, count, rows, cols, linear, hidden, adapter, saved_copy};
    return n++;
  }
  void add_vectors(Part part, double count, double length) { add(part, count, length, 1, false, false); }
  void add_biases(Part part, double count, double length) {
    const int i = add(part, count, length, 1, false, false);
    if (i >= 0) items[size_t(i)].bias = true;
  }
  // The model's own parameters of one part (adapters are not the model's).
  double params(Part part) const {
    double sum = 0;
    for (int i = 0; i < n; ++i)
      if (items[size_t(i)].part == part && !items[size_t(i)].adapter) sum += items[size_t(i)].params();
    return sum;
  }
  double params() const { return params(Part::dense) + params(Part::embedding) + params(Part::expert); }
  double adapter_params() const {
    double sum = 0;
    for (int i = 0; i < n; ++i)
      if (items[size_t(i)].adapter) sum += items[size_t(i)].params();
    return sum;
  }
};

// How a GPU's share of the model is cut: 1 everywhere gives the whole model.
struct Shard {
  double t = 1;   // tensor parallel
  double e = 1;   // expert parallel
  double te = 1;  // expert tensor parallel
};

// Parameter vectors of one norm: RMSNorm a weight, LayerNorm a weight and a bias.
double norm_vectors(const Config& c) {
  switch (c.normalization) {
    case Normalization::rms_norm: return 1;
    case Normalization::layer_norm: return 2;
    default: return 0;
  }
}

// LoRA adapters of one decoder layer, `layers` times (peft). Each target linear (in → out) gets
// A: in × r and B: r × out (Hugging Face PEFT lora/layer.py update_layer, 00336949; torchtune
// LoRALinear, 031d89b8). Under tensor parallelism they split as PEFT's LoraParallelLinear does
// (lora/tp_layer.py, 03e6fa33): a column-parallel base keeps A whole and splits B's output, a
// row-parallel base splits A's input and keeps B whole. Names are PEFT's for Llama-style models:
// q/k/v/gate/up column-parallel, o/down row-parallel; without a gated MLP up_proj is fc1.
void add_adapters(Inventory& inv, const Config& c, const Shard& s, bool moe, double layers) {
  if (!c.peft_on() || layers <= 0) return;
  const double r = double(c.lora_rank), h = double(c.hidden_size);
  const double q_out = double(c.num_attention_heads) * double(c.kv_channels);
  const double kv_out = double(c.num_query_groups) * double(c.kv_channels);
  const auto column = [&](LoraTarget t, double in, double out) {
    if (!c.lora_targets(t)) return;
    inv.add(Part::dense, layers, in, r, true, true, true);
    inv.add(Part::dense, layers, r, out / s.t, true, true, true);
  };
  const auto row = [&](LoraTarget t, double in, double out) {
    if (!c.lora_targets(t)) return;
    inv.add(Part::dense, layers, in / s.t, r, true, true, true);
    inv.add(Part::dense, layers, r, out, true, true, true);
  };
  // ms-swift on Megatron Core: one adapter on the fused linear_qkv / linear_fc1
  // (megatron_fused_qkv_adapter), B split by TP as the fused weight.
  const auto fused = [&](double in, double out) {
    inv.add(Part::dense, layers, in, r, true, true, true);
    inv.add(Part::dense, layers, r, out / s.t, true, true, true);
  };
  if (c.num_attention_heads > 0) {
    if (megatron_fused_qkv_adapter(c)) {
      fused(h, q_out + 2 * kv_out);
    } else {
      column(LoraTarget::q_proj, h, q_out);
      column(LoraTarget::k_proj, h, kv_out);
      column(LoraTarget::v_proj, h, kv_out);
    }
    row(LoraTarget::o_proj, q_out, h);
  }
  if (!moe) {
    const double f = double(c.ffn_hidden_size);
    if (megatron_fused_fc1_adapter(c)) {
      fused(h, 2 * f);
    } else {
      if (c.gated_linear_unit) column(LoraTarget::gate_proj, h, f);
      column(LoraTarget::up_proj, h, f);
    }
    row(LoraTarget::down_proj, f, h);
    return;
  }
  // In an MoE layer the MLP targets are the routed experts' linears (resolve(): transformers'
  // per-expert loop, no shared or latent experts): PEFT wraps each expert's gate/up (h → f_e)
  // and down (f_e → h) in its own lora.Linear (huggingface/peft src/peft/tuners/lora/model.py
  // _create_and_replace, layer.py update_layer @ b28a09c44695163806dc2d560ec2faa1ce2949c5), so
  // every expert gets its A and B, held where the expert is: E/EP experts per GPU, split by ETP
  // as the expert's own weight.
  const double local_experts = double(c.num_moe_experts) / s.e, fe = double(c.moe_ffn_hidden_size);
  if (c.model_implementation == ModelImplementation::megatron_core) {
    // ms-swift's LoRA on Megatron Core's grouped experts (modelscope/ms-swift
    // swift/megatron/tuners/lora.py @ 710553d85464c7d2be85f35fa19d9d5476619d6f, and alike @
    // 67fcc33641fbef6937bffe47da1833205d5df685, LoraParallelLinear.update_layer): linear_fc1
    // (TEColumnParallelGroupedLinear, gate and up in one) gets lora_A = TEGroupedLinear(h → r)
    // and lora_B = TEColumnParallelGroupedLinear(r → glu·f_e), split by ETP; linear_fc2
    // (TERowParallelGroupedLinear) gets lora_A = TERowParallelGroupedLinear(f_e → r), split by
    // ETP, and lora_B = TEGroupedLinear(r → h). Each holds num_gemms = the local experts' weights,
    // made with is_expert (ETP's size, Megatron's expert data-parallel group).
    const double glu = c.gated_linear_unit ? 2 : 1;
    if (c.lora_targets(LoraTarget::up_proj)) {  // gate_proj with it (rule experts-fc1-megatron)
      inv.add(Part::expert, layers * local_experts, h, r, true, true, true);
      inv.add(Part::expert, layers * local_experts, r, glu * fe / s.te, true, true, true);
    }
    if (c.lora_targets(LoraTarget::down_proj)) {
      inv.add(Part::expert, layers * local_experts, fe / s.te, r, true, true, true);
      inv.add(Part::expert, layers * local_experts, r, h, true, true, true);
    }
    return;
  }
  const auto expert = [&](LoraTarget t, double in, double out) {
    if (!c.lora_targets(t)) return;
    inv.add(Part::expert, layers * local_experts, in, r, true, true, true);
    inv.add(Part::expert, layers * local_experts, r, out, true, true, true);
  };
  if (c.gated_linear_unit) expert(LoraTarget::gate_proj, h, fe / s.te);
  expert(LoraTarget::up_proj, h, fe / s.te);
  expert(LoraTarget::down_proj, fe / s.te, h);
}

// Attention, MLP / MoE and norms of one decoder layer, `layers` times (Megatron Core
// TransformerLayer: column-parallel QKV and fc1, row-parallel projection and fc2; biases of
// row-parallel layers and norms are replicated).
void add_layer(Inventory& inv, const Config& c, const Shard& s, bool moe, double layers) {
  add_adapters(inv, c, s, moe, layers);
  const double h = double(c.hidden_size), a = double(c.num_attention_heads);
  const double g = double(c.num_query_groups), k = double(c.kv_channels);
  const double n = norm_vectors(c);
  const double glu = c.gated_linear_unit ? 2 : 1;
  const bool bias = c.add_bias_linear;

  // QLoRA's base is a PyTorch model (resolve(): no megatron), whose q/k/v and gate/up are separate
  // linears (transformers LlamaAttention and LlamaMLP, torchtune MultiHeadAttention and
  // FeedForward), each quantised (NF4, or int8 for LLM.int8) and dequantised by itself: one tensor
  // each here, where Megatron Core fuses them (linear_qkv, linear_fc1). The parameters are the same.
  const bool separate = quantized_base(c, c.params_dtype);
  const double fc1_linears = separate ? glu : 1;  // gate and up as one tensor, or two

  const bool attention = c.num_attention_heads > 0;  // 0: a block without attention
  inv.add_vectors(Part::dense, (attention ? 2 : 1) * n * layers, h);  // input / pre-MLP norms
  if (!attention) {
    // nothing: the block is its MLP
  } else if (c.multi_latent_attention) {
    // DeepSeek-V2 MLA (Megatron Core MLASelfAttention): down projections and their norms are
    // replicated; up projections are column-parallel; the output projection row-parallel.
    const double dqk = double(c.qk_head_dim), drope = double(c.qk_pos_emb_head_dim);
    const double dv = double(c.v_head_dim), rkv = double(c.kv_lora_rank);
    if (c.q_lora_rank > 0) {
      const double rq = double(c.q_lora_rank);
      inv.add(Part::dense, layers, h, rq, true, true);
      inv.add_vectors(Part::dense, n * layers, rq);
      inv.add(Part::dense, layers, rq, a * (dqk + drope) / s.t, true, true);
    } else {
      inv.add(Part::dense, layers, h, a * (dqk + drope) / s.t, true, true);
    }
    inv.add(Part::dense, layers, h, rkv + drope, true, true);
    inv.add_vectors(Part::dense, n * layers, rkv);
    inv.add(Part::dense, layers, rkv, a * (dqk + dv) / s.t, true, true);
    inv.add(Part::dense, layers, a * dv / s.t, h, true, true);
    if (bias) inv.add_biases(Part::dense, layers, h);
  } else {
    if (separate) {
      inv.add(Part::dense, layers, h, a * k / s.t, true, true);      // q_proj
      inv.add(Part::dense, 2 * layers, h, g * k / s.t, true, true);  // k_proj, v_proj
    } else {
      inv.add(Part::dense, layers, h, (a + 2 * g) * k / s.t, true, true);  // fused QKV
    }
    inv.add(Part::dense, layers, a * k / s.t, h, true, true);            // output projection
    if (bias || c.add_qkv_bias) inv.add_biases(Part::dense, layers, (a + 2 * g) * k / s.t);
    if (bias) inv.add_biases(Part::dense, layers, h);
  }
  // gpt-oss's sinks: one logit per head and layer (GptOssAttention.sinks, nn.Parameter of
  // num_attention_heads; modeling_gpt_oss.py @ 00d4b3d2142cb4ced2f51b90614b5d26bc045015), split
  // with the heads under TP.
  if (attention && c.attention_sinks) inv.add_vectors(Part::dense, layers, a / s.t);
  if (attention && c.qk_layernorm) {
    const double head = c.multi_latent_attention ? double(c.qk_head_dim + c.qk_pos_emb_head_dim) : k;
    inv.add_vectors(Part::dense, 2 * n * layers, head);
  }

  if (!moe) {
    const double f = double(c.ffn_hidden_size);
    inv.add(Part::dense, layers * fc1_linears, h, glu / fc1_linears * f / s.t, true, true);
    inv.add(Part::dense, layers, f / s.t, h, true, true);
    if (bias) inv.add_biases(Part::dense, layers, glu * f / s.t), inv.add_biases(Part::dense, layers, h);
    return;
  }
  // MoE layer (Megatron Core MoELayer): a replicated router, E/EP local experts split by ETP,
  // optional latent projections and shared experts.
  const double E = double(c.num_moe_experts), fe = double(c.moe_ffn_hidden_size);
  const double hr = c.moe_latent_size > 0 ? double(c.moe_latent_size) : h;
  inv.add(Part::dense, layers, h, E, false, false);  // router (kept on AdamW by Muon recipes)
  if (bias) inv.add_biases(Part::dense, layers, E);
  const double local_experts = E / s.e;
  inv.add(Part::expert, layers * local_experts * fc1_linears, hr, glu / fc1_linears * fe / s.te, true, true);
  inv.add(Part::expert, layers * local_experts, fe / s.te, hr, true, true);
  if (bias) {
    inv.add_biases(Part::expert, layers * local_experts, glu * fe / s.te);
    inv.add_biases(Part::expert, layers * local_experts, hr);
  }
  if (c.moe_latent_size > 0) {
    inv.add(Part::dense, layers, h, hr, true, true);
    inv.add(Part::dense, layers, hr, h, true, true);
  }
  const double fs = double(c.moe_shared_expert_intermediate_size);
  if (fs > 0) {
    inv.add(Part::dense, layers * fc1_linears, h, glu / fc1_linears * fs / s.t, true, true);
    inv.add(Part::dense, layers, fs / s.t, h, true, true);
    if (c.moe_shared_expert_gate) inv.add(Part::dense, layers, h, 1, false, false);
  }
}

// Embedding rows allocated: Megatron pads the vocabulary to a multiple of m·TP
// (vocab_utils.calculate_padded_vocab_size); PyTorch models keep the vocabulary as it is.
double vocab_rows(const Config& c) {
  if (c.framework != Framework::megatron) return double(c.vocab_size);
  return double(padded_vocab_size(c.vocab_size, c.make_vocab_size_divisible_by,
                                  c.tensor_model_parallel_size));
}

// Embedding on the first stage; final norm, output layer (or the tied copy Megatron keeps on
// the last stage when PP > 1) and the MTP layers on the last.
void add_stage_extras(Inventory& inv, const Config& c, const Shard& s, bool first, bool last,
                      bool mtp_is_moe, double v) {
  const double h = double(c.hidden_size);
  const bool one_stage = first && last;
  if (first) {
    const int embedding = inv.add(Part::embedding, 1, v / s.t, h, false, false);
    if (last && c.share_embeddings_and_output_weights) inv.output_item = embedding;
    if (c.max_position_embeddings > 0) inv.add(Part::embedding, 1, double(c.max_position_embeddings), h, false, false);
    // PEFT modules_to_save (huggingface/peft src/peft/utils/other.py @
    // 012c0d5a96744096ab28f87cde9bd9918f5367a1, ModulesToSaveWrapper.update): the module is
    // deep-copied, the copy trains and runs the forward, the original stays frozen beside it.
    if (c.saves(SavedModule::embed_tokens)) inv.add(Part::embedding, 1, v / s.t, h, false, false, true, true);
  }
  if (last) {
    inv.add_vectors(Part::dense, norm_vectors(c), h);  // final norm
    if (!c.share_embeddings_and_output_weights || !one_stage)
      inv.output_item = inv.add(Part::embedding, 1, v / s.t, h, true, false);
    if (c.saves(SavedModule::lm_head) && v > 0) inv.add(Part::embedding, 1, v / s.t, h, true, false, true, true);
    // The output layer's adapter (target lm_head): column-parallel, A whole, B split by TP.
    if (c.lora_targets(LoraTarget::lm_head) && v > 0) {
      const double r = double(c.lora_rank);
      inv.add(Part::embedding, 1, h, r, true, true, true);
      inv.add(Part::embedding, 1, r, v / s.t, true, true, true);
    }
    const double m = double(c.mtp_num_layers);
    if (m > 0) {
      // Megatron Core MultiTokenPredictionLayer: enorm, hnorm, eh_proj (2h -> h, column
      // parallel), a transformer layer, and its final norm.
      inv.add_vectors(Part::dense, 3 * norm_vectors(c) * m, h);
      inv.add(Part::dense, m, 2 * h, h / s.t, true, true);
      add_layer(inv, c, s, mtp_is_moe, m);
    }
  }
}

struct StageLayers {
  double dense = 0, moe = 0;
};

StageLayers stage_layers(const Config& c, const PipelineLayout& layout, int64_t r) {
  StageLayers out;
  if (!c.is_moe()) {
    out.dense = double(layout.count(r));
    return out;
  }
  layout.for_each_layer(r, [&](int64_t i, int64_t, int64_t) { (c.is_moe_layer(i) ? out.moe : out.dense) += 1; });
  return out;
}

Inventory stage_inventory(const Config& c, const Shard& s, const PipelineLayout& layout, int64_t r) {
  Inventory inv;
  const StageLayers layers = stage_layers(c, layout, r);
  add_layer(inv, c, s, false, layers.dense);
  add_layer(inv, c, s, true, layers.moe);
  const int64_t L = c.num_layers;
  add_stage_extras(inv, c, s, r == 0, r == layout.p - 1, L > 0 && c.is_moe_layer(L - 1),
                   vocab_rows(c));
  return inv;
}

// ---- Bytes per tensor class ----

double part_add(PartBytes& bytes, Part part, double value) {
  (part == Part::dense ? bytes.dense : part == Part::embedding ? bytes.embedding : bytes.expert) += value;
  return value;
}

// Bytes of the optimizer's states for one group of tensors (whole, before any sharding).
double optimizer_state_bytes(const Config& c, const Tensors& t) {
  const OptimizerInfo& info = optimizer_info(c.optimizer);
  const bool muon_matrix = t.hidden && t.cols > 1;
  double bytes = 0;
  for (StateRule rule : info.states) {
    switch (rule) {
      case StateRule::exp_avg: bytes += t.params() * bytes_per_element(c.exp_avg_dtype); break;
      case StateRule::exp_avg_sq: bytes += t.params() * bytes_per_element(c.exp_avg_sq_dtype); break;
      case StateRule::momentum:
        if (c.momentum > 0) bytes += t.params() * bytes_per_element(c.main_params_dtype);
        break;
      case StateRule::factored:
        bytes += t.count * (t.cols > 1 ? t.rows + t.cols : t.rows) * bytes_per_element(Dtype::fp32);
        break;
      case StateRule::quantized:
        // bitsandbytes keeps 32-bit states for tensors under min_8bit_size = 4096 elements.
        bytes += t.params() * bytes_per_element(t.elements() < 4096 ? Dtype::fp32 : Dtype::int8);
        break;
      case StateRule::muon_momentum:
        if (muon_matrix) bytes += t.params() * bytes_per_element(c.exp_avg_dtype);
        break;
      case StateRule::muon_adam_exp_avg:
        if (!muon_matrix) bytes += t.params() * bytes_per_element(c.exp_avg_dtype);
        break;
      case StateRule::muon_adam_exp_avg_sq:
        if (!muon_matrix) bytes += t.params() * bytes_per_element(c.exp_avg_sq_dtype);
        break;
      case StateRule::count: break;
    }
  }
  return bytes;
}

// The part of a tensor group's optimizer states that a bitsandbytes paged optimizer allocates in
// CUDA unified memory (bitsandbytes optim/optimizer.py, 06029dd6, get_state_buffer: F.get_paged
// when p.numel() >= 1e5, else torch.zeros_like; functional.py, 01327aa0, get_paged:
// cget_managed_ptr, cudaMallocManaged, outside PyTorch's caching allocator). The 8-bit states'
// fp32 absmax per 256 elements stays a torch.zeros on the GPU (Optimizer2State.init_state).
// `local_elements`: one tensor's elements as this GPU's optimizer sees them (its shard).
double paged_state_bytes(const Config& c, const Tensors& t, double local_elements) {
  if (!c.paged_optimizer || local_elements < 1e5) return 0;
  double bytes = 0;
  for (StateRule rule : optimizer_info(c.optimizer).states) {
    switch (rule) {
      case StateRule::exp_avg: bytes += t.params() * bytes_per_element(c.exp_avg_dtype); break;
      case StateRule::exp_avg_sq: bytes += t.params() * bytes_per_element(c.exp_avg_sq_dtype); break;
      // quantized: 1e5 elements are past min_8bit_size (4,096): uint8 states, 1 B each.
      case StateRule::quantized: bytes += t.params(); break;
      default: break;  // resolve() allows paged states for adam, adamw, adam8bit and lion only
    }
  }
  return bytes;
}

struct StageState {
  StateBreakdown gpu;
  CpuBytes cpu;                    // offloaded to host memory, for this GPU (activations: 0 here)
  double optimizer_temporary = 0;  // allocated during the optimizer step only
  // Of it, Transformer Engine's FusedAdam fp32 copies of the narrow moments
  // (megatron_fused_adam_unscaled): one tensor per parameter and moment, all alive together,
  // for the allocator's timeline as each kind of matrix's copy and how many of them (the larger
  // group's, in inventory order), then one parameter's bf16 write-back.
  struct FusedAdamCopies {
    double bytes = 0, count = 0;
  };
  std::vector<FusedAdamCopies> fused_adam_copies;
  double fused_adam_unscaled = 0, fused_adam_write_back = 0;
  int fused_adam_moments = 0;
  double backward_temporary = 0;   // allocated during backward (in-backward steps, NF4 dequant)
  // Of it, the largest NF4 decoder linear dequantised (nf4_dequant_bytes), which the walk of
  // Linear4bit's backward (DecoderBackward::nf4_walked) places at its own nodes instead.
  double nf4_backward_dequant = 0;
  // A quantised output layer (quantize_lm_head): its weight dequantised whole in the compute
  // dtype (nf4_dequant_bytes) and its local vocabulary rows, for the loss's moment.
  double output_dequant = 0, output_rows = 0;
  double forward_backward_only = 0;  // state bytes freed before the optimizer step
  // fsdp2: of the buffers, a unit's unsharded gradient and its reduce-scatter copy. FSDP2 takes
  // both in the unit's post_backward, once the unit's gradient is in `.grad`
  // (FSDPParamGroup.post_backward: `unsharded_param.grad`, then foreach_reduce's reduce-scatter
  // input and copy-in; pytorch/pytorch torch/distributed/_composable/fsdp/_fsdp_param_group.py and
  // _fsdp_collectives.py, as indexed @ 012c62d62004bbd4896475c11315199d43b037ef), so they do not
  // exist while torchtune's chunked output layer sums its weight gradients (the output layer's
  // gradients reach its AccumulateGrad only when all chunks' are summed in its input buffer; the
  // walk, chunked_weight_sum, counts them itself).
  double unit_reduce = 0;
  // Gradients that do not exist while the forward runs (gradients_start_each_step_empty), and of
  // them the output layer's, the model's own and its adapter's (both in the embedding part),
  // which the loss's backward creates before any decoder layer's.
  double gradients_freed_between_steps = 0;
  double output_gradients = 0, output_adapter_gradients = 0;
  double paged = 0;                // paged optimizer states (unified memory, not allocated bytes)
  // For the job's moments outside the step (job_moments): the largest NF4 linear's elements
  // (the output layer's too) and, under fsdp2, the largest single tensor a full state dict
  // gathers whole on the GPU (bytes, with NF4's dequantised copy where the saver makes one).
  double largest_nf4_elements = 0, largest_gathered_bytes = 0;
  double largest_int8_elements = 0;  // the largest LLM.int8 linear (peft qlora, params_dtype int8)
  // LLM.int8: the largest linear's forward transients over one microbatch (int8_forward_bytes),
  // each term a multiple of the tokens, so an evaluation batch's is this times its share.
  double int8_forward = 0;
  double params_local = 0;         // parameters held (whole or sharded) by this GPU's stage share
  double params_stored = 0;        // of them, what this GPU stores at rest (ZeRO-3/FSDP2 shards)
  double dense_local = 0, expert_local = 0;
  double embedding_local = 0;      // of dense_local, the embedding and output layer's (Part::embedding)
  double adapter_local = 0;        // peft: adapter parameters on this GPU
  // FSDP1 (fsdp_version 1) at zero_stage 3, for the allocation sequence: one unit's unsharded
  // flat parameter (`gather`), its unsharded gradient as autograd makes it (`gradient`) and the
  // reduce_dtype copy of it (`reduce_copy`, 0 when the dtypes agree). 0: not FSDP1 full shard.
  struct {
    double gather = 0, gradient = 0, reduce_copy = 0;
  } fsdp1_unit;
};

// Sharding group sizes for dense and expert parameters' data-parallel state.
struct Groups {
  double dense = 1, expert = 1;
};

Groups data_parallel_groups(const Config& c) {
  Groups g;
  const double cp = double(c.context_parallel_size);
  // Megatron shards over the DP × CP group (intra_dp_cp); FSDP2's shard group spans
  // data_parallel_shard_size ranks (HSDP replicates over the rest).
  const double dp = c.framework == Framework::fsdp2 ? double(c.data_parallel_shard_size)
                                                    : double(c.data_parallel_size);
  g.dense = dp * cp;
  // Expert data parallel: DP·TP·CP / (EP·ETP) ranks hold the same experts.
  g.expert = std::max(1.0, dp * double(c.tensor_model_parallel_size) * cp /
                               (double(c.expert_model_parallel_size) *
                                double(c.expert_tensor_parallel_size)));
  return g;
}

// The temporaries of one torch.optim Adam/AdamW step over `elements` parameters whose largest
// tensor has `largest` (torch/optim/adam.py @ dc80ccded5385cca3e777472d64cfe3d874fad89 and the
// torch.optim docs on foreach: "uses more peak memory since the intermediates are a tensorlist vs
// just one tensor"):
//   foreach   _multi_tensor_adam: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), divided and
//             offset in place: one exp_avg_sq-sized copy of the whole group.
//   for-loop  _single_tensor_adam: `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`
//             inside `for i, param in enumerate(params)`: tensor i's sqrt and quotient exist
//             together while the previous iteration's quotient is still bound to `denom` (it is
//             rebound only once the new quotient exists), so the temporaries peak at
//             max_i (2·s_i + s_(i−1)) over the tensors in the optimizer's order (`forloop_peak`,
//             elements, when the order is known: eager_step_order). Without the order, an upper
//             bound: the previous tensor is at most the largest, 3·largest. The allocation
//             timeline oracle (tests/oracle/timeline.py) shows the rule to the byte.
//             (transformers' AdamW, the Trainer's adamw_hf, keeps one: sqrt().add_(eps).)
//   fused     _fused_adamw_ updates in one kernel per group: no temporaries.
// A paged optimizer is bitsandbytes', which updates in its own kernel: no temporaries either.
// Megatron's optimizer CPU offload copies each offloaded parameter back after the CPU step:
// HybridDeviceOptimizer's step post-hook runs gpu_param.data.copy_(param.data, non_blocking=True)
// from its fp32 CPU copy (param_update_in_fp32=True, which Megatron always passes) into the
// 16-bit parameter, one parameter at a time (NVIDIA/Megatron-LM
// megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py @ 0d41ecd8b5388da7e8ea98ff88086e43d3371b30,
// _register_param_copy_back_gpu_hook; megatron/core/optimizer/__init__.py @
// 020d85e50ddf0f0282802002acb3662129a519c5). A non-blocking copy between dtypes converts on the
// GPU since PyTorch PR #121341 (2024-03, PyTorch 2.3): copy_kernel_cuda makes
// at::empty_like(dst, <the source's dtype>) on the GPU, copies into it and converts from it
// (pytorch/pytorch aten/src/ATen/native/cuda/Copy.cu @ 007aa8aee7ee70454229698ca4b2e45283f15239),
// so the step holds one fp32 buffer of the parameter being copied. The largest trainable tensor
// on this GPU is taken whole (a distributed-optimizer shard is at most that; high when it is
// split across ranks). With fp32 parameters the copy is a plain cudaMemcpyAsync: nothing.
double megatron_offload_copy_back_bytes(const Config& c, double largest_trainable_elements) {
  if (c.framework != Framework::megatron || !(c.optimizer_offload_fraction > 0)) return 0;
  if (c.params_dtype == Dtype::fp32) return 0;
  return bytes_per_element(Dtype::fp32) * largest_trainable_elements;
}

// Transformer Engine's FusedAdam steps a moment kept narrower than fp32 (Megatron's
// --exp-avg-dtype / --exp-avg-sq-dtype bf16, fp16 or fp8, which only its precision-aware optimizer
// keeps, through that FusedAdam) through an fp32 copy of it: step() calls get_unscaled_state(p,
// name), which is state.float() for bf16, fp16 and FP8 states alike, for every parameter of a
// param group, keeps the copies in unscaled_lists until the multi-tensor kernel has run over the
// whole group, then writes each back through _apply_scale (a bf16 state: scaled_state.copy_(
// unscaled_state.bfloat16()), one parameter's bf16 copy at a time) and only then deletes the lists
// (transformer_engine/pytorch/optimizers/fused_adam.py @ 40c69e751a47ec87786283e125c5eb264101270f,
// v2.8; the same code at v2.3 and v2.5). Megatron's param groups put the weights that decay
// (matrices, the embedding among them) apart from those that do not (norms, biases), and its
// expert parameters step in an optimizer of their own (megatron/core/optimizer/__init__.py
// _get_param_groups and get_megatron_optimizer @ 23e00ed0963c35382dfe8a5a94fb3cda4d21e133,
// core_v0.14.0): the larger group of matrices on this GPU sets the transient, with the
// largest one's bf16 write-back (its even share of a distributed-optimizer shard). The offloaded
// optimizer (HybridDeviceOptimizer) was not read here: nothing is counted for it.
struct FusedAdamUnscaled {
  int moments = 0;               // narrow moments: one fp32 copy each per parameter
  double write_back_bytes = 0;   // per element of one parameter: the bf16 copy back
  double copy_bytes() const { return bytes_per_element(Dtype::fp32) * moments; }  // per element
  double bytes(double group_elements, double largest_elements) const {
    return copy_bytes() * group_elements + write_back_bytes * largest_elements;
  }
};
FusedAdamUnscaled megatron_fused_adam_unscaled(const Config& c) {
  FusedAdamUnscaled out;
  if (c.framework != Framework::megatron || c.optimizer_offload_fraction > 0) return out;
  if (c.optimizer != Optimizer::adam && c.optimizer != Optimizer::adamw) return out;
  for (const Dtype state : {c.exp_avg_dtype, c.exp_avg_sq_dtype}) {
    if (state == Dtype::fp32) continue;
    out.moments += 1;
    if (state == Dtype::bf16) out.write_back_bytes = bytes_per_element(Dtype::bf16);
  }
  return out;
}

struct TorchStep {
  double elements = 0;      // parameters this GPU steps
  double largest = 0;       // elements of its largest tensor (shard)
  double forloop_peak = 0;  // max_i (2·s_i + s_(i−1)) in the optimizer's order; 0: order unknown
};
double torch_adam_temporary(const Config& c, const TorchStep& step) {
  if (c.optimizer != Optimizer::adam && c.optimizer != Optimizer::adamw) return 0;
  if (c.paged_optimizer) return 0;
  const double bytes = bytes_per_element(c.exp_avg_sq_dtype);
  switch (c.optimizer_implementation) {
    case OptimizerImplementation::foreach: return step.elements * bytes;
    case OptimizerImplementation::for_loop:
      return (step.forloop_peak > 0 ? step.forloop_peak : 3 * step.largest) * bytes;
    default: return 0;
  }
}

// The trainable tensors of an eager model (elements each) in the order torch.optim steps them:
// model.parameters(), the order the modules registered their parameters, which the training
// loops hand to the optimizer whole (transformers' Trainer.create_optimizer splits decay and
// no-decay groups by name, which keeps the for-loop's order within each group; torchtune's
// recipes pass model.parameters()). transformers (models/llama/modeling_llama.py):
// LlamaForCausalLM = model (embed_tokens, layers, norm) then lm_head; LlamaDecoderLayer = self_attn
// (q_proj, k_proj, v_proj, o_proj), mlp (gate_proj, up_proj, down_proj) or Mixtral's
// block_sparse_moe (gate, then each expert's w1, w2, w3; models/mixtral/modeling_mixtral.py), then
// input_layernorm, post_attention_layernorm. torchtune (modules/transformer.py, TransformerDecoder:
// tok_embeddings, layers, norm, output; TransformerSelfAttentionLayer: attn, mlp, sa_norm,
// mlp_norm; modules/attention.py: q_proj, k_proj, v_proj, output_proj; modules/feed_forward.py:
// w1 (gate), w2 (down), w3 (up)). With peft only the adapters train, each in its linear's place:
// PEFT's lora_A then lora_B (tuners/lora/layer.py LoraLayer.__init__), torchtune's lora_a then
// lora_b (modules/peft/lora.py), and a modules_to_save copy in its module's place.
// Under peft an MoE layer's router and experts are frozen (transformers' MoE blocks with adapters
// on the attention only): they add nothing to the order. Empty when the layout is not one of these
// (biases, MLA, qk norms, tied or pipelined embeddings, tensor parallelism, torchtune MoE, MoE
// under peft with MLP targets, which may name experts): the upper bound applies then.
std::vector<double> eager_step_order(const Config& c) {
  std::vector<double> out;
  const bool hf = c.model_implementation == ModelImplementation::hf_transformers;
  const bool tt = c.model_implementation == ModelImplementation::torchtune;
  if (!(hf || tt) || c.multi_latent_attention || c.qk_layernorm || c.add_bias_linear || c.add_qkv_bias ||
      !c.gated_linear_unit || c.normalization != Normalization::rms_norm ||
      c.share_embeddings_and_output_weights || c.num_attention_heads <= 0 ||
      c.pipeline_model_parallel_size > 1 || c.tensor_model_parallel_size > 1 || c.mtp_num_layers > 0 ||
      (c.is_moe() && (tt || c.moe_shared_expert_intermediate_size > 0 ||
                      (c.peft_on() && (c.lora_targets(LoraTarget::gate_proj) || c.lora_targets(LoraTarget::up_proj) ||
                                       c.lora_targets(LoraTarget::down_proj))))))
    return {};
  const double h = double(c.hidden_size), V = double(c.vocab_size);
  const double q = double(c.num_attention_heads * c.kv_channels), kv = double(c.num_query_groups * c.kv_channels);
  const double f = double(c.ffn_hidden_size), fe = double(c.moe_ffn_hidden_size);
  const double r = double(c.lora_rank);
  const bool peft = c.peft_on();
  // A linear of `in` → `out`: its weight, or its adapters.
  const auto linear = [&](double in, double width, LoraTarget t) {
    if (!peft) {
      out.push_back(in * width);
    } else if (c.lora_targets(t)) {
      out.push_back(r * in);     // lora_A / lora_a
      out.push_back(width * r);  // lora_B / lora_b
    }
  };
  if (!peft || c.saves(SavedModule::embed_tokens)) out.push_back(V * h);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    linear(h, q, LoraTarget::q_proj);
    linear(h, kv, LoraTarget::k_proj);
    linear(h, kv, LoraTarget::v_proj);
    linear(q, h, LoraTarget::o_proj);
    if (c.is_moe_layer(i)) {
      if (peft) continue;  // frozen router and experts; the layer's norms are frozen too
      out.push_back(double(c.num_moe_experts) * h);  // the router
      for (int64_t e = 0; e < c.num_moe_experts; ++e) {
        out.push_back(fe * h);
        out.push_back(h * fe);
        out.push_back(fe * h);
      }
    } else if (hf) {
      linear(h, f, LoraTarget::gate_proj);
      linear(h, f, LoraTarget::up_proj);
      linear(f, h, LoraTarget::down_proj);
    } else {
      linear(h, f, LoraTarget::gate_proj);
      linear(f, h, LoraTarget::down_proj);
      linear(h, f, LoraTarget::up_proj);
    }
    if (!peft) out.insert(out.end(), {h, h});  // the two norms' weights
  }
  if (!peft) out.push_back(h);  // the final norm
  if (!peft || c.saves(SavedModule::lm_head)) out.push_back(V * h);
  else linear(h, V, LoraTarget::lm_head);
  return out;
}

// max_i (2·s_i + s_(i−1)) over tensors in step order (torch_adam_temporary, for-loop).
double forloop_peak(const std::vector<double>& order) {
  double peak = 0, previous = 0;
  for (double s : order) {
    peak = std::max(peak, 2 * s + previous);
    previous = s;
  }
  return peak;
}


// The storage type of a frozen tensor (peft): QLoRA quantises the linear layers to NF4
// (bitsandbytes replaces nn.Linear with Linear4bit; transformers keeps every embedding, norm and
// bias, and the output layer unless quantize_lm_head, in the compute dtype; torchtune quantises
// its LoRALinear bases); LoRA keeps the model's weights as they are. The output layer is the
// only linear of Part::embedding (the input embedding is a lookup, not a GEMM weight).
//
// QLoRA's unquantised tensors then take the dtype kbit_upcast says (kbit_upcast_dtype).
Dtype kbit_upcast_dtype(const Config& c, const Tensors& t);
Dtype frozen_dtype(const Config& c, const Tensors& t) {
  const Dtype stored = t.part == Part::expert ? c.expert_params_dtype : c.params_dtype;
  if (!quantized_base(c, stored)) return stored;
  if (t.linear && (t.part != Part::embedding || c.quantize_lm_head)) return stored;
  return kbit_upcast_dtype(c, t);
}

// An unquantised tensor of a QLoRA model (embedding, an unquantised lm_head, a norm's vector, a
// bias, a router): loaded in the compute dtype (unquantized_dtype), then
// - peft: PEFT's prepare_model_for_kbit_training casts every fp16/bf16 parameter that is not a
//   Params4bit to fp32 (huggingface/peft src/peft/utils/other.py @ 5d602fdb: `param.data =
//   param.data.to(torch.float32)`; the Params4bit exclusion since 6008f272, PR #1550);
// - trl: then TRL's peft_module_casting_to_bf16 (trl/trainer/utils.py @ v0.12.0 80cf468a, called
//   by SFTTrainer with --bf16 for a non-sharded 4-bit model) casts modules named *norm* to fp32
//   and lm_head / embed_tokens back to bf16: the embedding part in the compute dtype, norms and
//   biases fp32;
// - axolotl: its patched prepare_model_for_kbit_training (src/axolotl/monkeypatch/peft/utils.py @
//   067b021c) leaves embed_tokens and lm_head alone and _convert_embedding_modules_dtype
//   (loaders/model.py) casts modules named *norm* and the embeddings to the training dtype: only
//   the biases stay fp32;
// - none: as loaded.
Dtype kbit_upcast_dtype(const Config& c, const Tensors& t) {
  switch (c.kbit_upcast) {
    case KbitUpcast::peft: return Dtype::fp32;
    case KbitUpcast::trl: return t.part == Part::embedding ? c.compute_dtype : Dtype::fp32;
    case KbitUpcast::axolotl: return t.bias ? Dtype::fp32 : c.compute_dtype;
    default: return c.compute_dtype;
  }
}

// A trainable tensor under peft: a LoRA matrix in lora_adapter_dtype; a saved copy keeps the
// dtype of the module it copies (copy.deepcopy; PEFT's _cast_adapter_dtype upcasts only the
// adapters of BaseTunerLayer modules, tuners_utils.py @ 831fd03e).
// The routed experts' adapters in lora_expert_dtype (ms-swift's fp32 grouped adapters of 2025,
// fields.cpp; otherwise the same dtype).
Dtype trainable_dtype(const Config& c, const Tensors& t) {
  if (t.saved_copy) return unquantized_dtype(c);
  return t.part == Part::expert ? c.lora_expert_dtype : lora_adapter_dtype(c);
}

// A frozen LLM.int8 linear (peft qlora, params_dtype int8): Int8Params._quantize keeps CB, the
// int8 weight ([out, in], 1 B an element), and SCB, one fp32 absmax per output row
// (bitsandbytes-foundation/bitsandbytes bitsandbytes/nn/modules.py @
// 95f9af309d4d5793847169c39288dcd3fcbdf564: `CB, SCB, _ = bnb.functional.int8_vectorwise_quant(B)`),
// not the block-wise absmax of int8 optimizer states (tensor_bytes' int8). A Tensors group is
// [in (rows) → out (cols)], so one tensor is elements + 4 · cols bytes.
bool llm_int8_weight(const Config& c, const Tensors& t, Dtype dtype) {
  return !t.adapter && dtype == Dtype::int8 && quantized_base(c, dtype);
}

// What bitsandbytes' QuantState holds per Params4bit beyond the absmax (nf4_quant_state_bytes),
// whatever the weight's size: the NF4 code quantize_4bit takes from get_4bit_type, a new
// torch.tensor of 16 fp32 on the weight's device (64 B), and with double quantisation
// (compress_statistics) the offset `_absmax.mean()`, a 0-dim fp32 (4 B), and the nested state's
// code, `code.to(A.device, copy=True)` of the 256-entry dynamic map (1,024 B)
// (bitsandbytes-foundation/bitsandbytes bitsandbytes/functional.py quantize_4bit,
// quantize_blockwise, get_4bit_type @ 0.48.0 406fb6aaeb92509540ccbbb2013518b6eea2fc7c).
// Measured by the allocation timeline oracle's stand-in (tests/oracle/bnb.py): 64 B per linear,
// 1,092 B with double quantisation. torchao's NF4Tensor (torchtune) is not bitsandbytes': 0.
double bnb_quant_state_constant_bytes(const Config& c) {
  if (c.model_implementation == ModelImplementation::torchtune) return 0;
  return 64 + (c.nf4_double_quant ? 4 + 1024 : 0);
}

// The bytes of a tensor group in its storage type (peft): a trainable one in trainable_dtype, a
// frozen one in frozen_dtype, each tensor counted whole (NF4's partial blocks: tensor_bytes, and
// bitsandbytes' per-tensor QuantState constants).
double stored_bytes(const Config& c, const Tensors& t) {
  const Dtype dtype = t.adapter ? trainable_dtype(c, t) : frozen_dtype(c, t);
  if (llm_int8_weight(c, t, dtype)) return t.count * (t.elements() + 4 * t.cols);
  const double constants = !t.adapter && dtype == Dtype::nf4 ? bnb_quant_state_constant_bytes(c) : 0;
  return t.count * (tensor_bytes(dtype, t.elements(), c.nf4_double_quant) + constants);
}

// The part of a frozen NF4 tensor group that every rank keeps whole when the weights are sharded
// (peft qlora, fsdp2 and ZeRO-3). bitsandbytes' Params4bit._quantize stores the QuantState (the
// absmax of every block) on the Linear4bit module as well as on the parameter, and
// Linear4bit.forward restores it from there "when the parameter got converted. This happens for
// example for fsdp" (bitsandbytes-foundation/bitsandbytes bitsandbytes/nn/modules.py @
// 005a63c2badadd7fb2c45a4b67c1dcbabb72b297, fix_4bit_weight_quant_state_from_module): FSDP and
// ZeRO-3 partition and gather the packed data, an ordinary tensor, and never the QuantState, which
// stays on the GPU where it was made (parameter offload moves the packed data only). torchtune's
// NF4 (torchao NF4Tensor, model_implementation torchtune) shards its scalers with its data
// (torchao/dtypes/nf4tensor.py @ 0598012907d6f6e88734088a65f788c38d294a65,
// _INNER_TENSOR_NAMES_FOR_SHARDING: quantized_scalers, quantization_factor, quantized_data).
double replicated_quant_state_bytes(const Config& c, const Tensors& t) {
  if (t.adapter || frozen_dtype(c, t) != Dtype::nf4) return 0;
  if (c.model_implementation == ModelImplementation::torchtune) return 0;
  return t.count * (nf4_quant_state_bytes(t.elements(), c.nf4_double_quant) + bnb_quant_state_constant_bytes(c));
}

// LLM.int8 (params_dtype int8 under peft qlora) around one frozen int8 linear of `in` → `out`
// features over `tokens` rows whose input is of dtype `input` (A's dtype, int8_input_dtype), from
// bitsandbytes-foundation/bitsandbytes @ 95f9af309d4d5793847169c39288dcd3fcbdf564,
// autograd/_functions.py MatMul8bitLt (the same since c5c38ca1, 2023-02) and
// backends/cuda/ops.py, backends/default/ops.py:
// - forward: A.to(torch.float16) (a copy unless A is fp16), then int8_vectorwise_quant's CA
//   (int8, [tokens, in]) and SCA (fp32 per row); int8_scaled_mm makes int8_linear_matmul's
//   int32 product [tokens, out] and, while it is referenced, int8_mm_dequant's fp16 output,
//   cast to A's dtype (that cast is the linear's output, counted with the activations). Beyond
//   the output: 2·tokens·in (A ≠ fp16) + tokens·in + 4·tokens + 4·tokens·out + 2·tokens·out
//   (A ≠ fp16). The outlier columns above the 6.0 threshold (A[:, outlier_cols] and the
//   dequantised weight columns) depend on the data, a few columns: left out.
// - backward (grad_A): state.CB.to(dtype_A, copy=True).mul_(state.SCB.unsqueeze(1).mul(1/127)):
//   the whole weight dequantised in A's dtype and an fp32 [out] factor; grad_output is in A's
//   dtype already (the output's).
double int8_forward_bytes(double tokens, double in, double out, Dtype input) {
  const double not_fp16 = input == Dtype::fp16 ? 0 : 1;
  return tokens * in * (1 + 2 * not_fp16) + 4 * tokens + tokens * out * (4 + 2 * not_fp16);
}
double int8_backward_bytes(double in, double out, Dtype input) {
  return in * out * bytes_per_element(input) + 4 * out;
}
// A's dtype at an int8 linear: fp32 when PEFT's or TRL's upcast leaves the norms fp32 (the norm
// outputs, the MLP product and what follows are fp32: activations.cpp k_src_kbit_fp32_residual),
// else the compute dtype.
Dtype int8_input_dtype(const Config& c) {
  return kbit_fp32_activations(c) ? Dtype::fp32 : c.compute_dtype;
}

// ---- Framework byte models: one row per framework, one line per copy of a trainable tensor ----
//
// What a framework keeps of each tensor, as data: each copy's class (the StateBreakdown row), its
// bytes per element, the group it is sharded over, what moves it to CPU memory, whether a paged
// optimizer pages it, and how long it lives. A trainable tensor (the model's own, or an adapter
// under peft) has every copy of its framework's row; a frozen one (peft's base model,
// requires_grad False) has only the copies of its weight (frozen_has_copy): no gradient, no
// master, no optimizer state, no bucket. stage_state walks the row of the config's framework for
// each tensor; what is not per tensor (gathered layers, buckets, reduce buffers) is the
// framework's buffer function (FrameworkByteModel::buffers), called once after the walk.
// Adding a framework is a row here, its buffer function, and its tests.

// The StateBreakdown row a copy adds to (the adapters' rows for an adapter).
enum class CopyClass : uint8_t {
  weights,
  gradients,
  master_weights,
  optimizer_states,
  buffers,
  weight_copies,
  stored,  // FSDP2's shard: the fp32 master where there is one, else the weight itself
};
// Bytes per element of a copy (optimizer: the states' bytes, optimizer_state_bytes, whatever
// their element count).
enum class CopyWidth : uint8_t {
  weight,         // as stored: the weight's dtype, or its FP8 copy (fp8_param_gather)
  params_dtype,   // the weight's dtype (the 16-bit gradients DeepSpeed reduces)
  main_grads,     // main_grads_dtype (Megatron's main_grad, FSDP2's reduce_dtype)
  fp32,           // DeepSpeed's fp32 gradient partition
  master,         // main_params_dtype where a master copy is needed, else 0
  stored,         // FSDP2's shard: master where needed, else the weight as stored
  compute,        // compute_dtype (autocast's casts)
  optimizer,      // the optimizer's states
};
// The group a copy is divided over (Groups: DP·CP for dense tensors, expert DP for experts).
enum class CopyShard : uint8_t {
  none,
  always,                 // FSDP2 shards everything
  distributed_optimizer,  // Megatron's distributed optimizer
  zero_1,                 // DeepSpeed zero_stage ≥ 1
  zero_2,                 // zero_stage ≥ 2
  zero_3,                 // zero_stage 3
  zero_fp32_gradients,    // ZeRO's fp32 gradients: stage ≥ 1 in mixed precision, ≥ 2 in pure fp32
};
// What moves a copy to CPU memory, and into which CpuBytes row.
enum class CopyOffload : uint8_t {
  none,
  optimizer,          // optimizer_offload_fraction of it
  optimizer_dropped,  // optimizer_offload_fraction of it is never made on the GPU, nor kept on the CPU
  params,             // offload_params: all of it
  params_then_optimizer,  // offload_params all of it, else optimizer_offload_fraction of it
};
// When a copy exists.
enum class CopyWhen : uint8_t {
  always,
  mixed_below_zero_3,  // DeepSpeed's 16-bit gradients: mixed precision and zero_stage < 3
  ddp_buckets,         // DDP's all-reduce buckets: data_parallel_size > 1 without gradient_as_bucket_view
  zero_stage_2,        // FSDP2 zero_stage 2 (reshard_after_forward=False)
  narrower_compute,    // a linear whose compute dtype is narrower than its weight (autocast's cast)
};

struct StateCopy {
  CopyClass cls;
  CopyWidth width;
  CopyShard shard = CopyShard::none;
  CopyOffload offload = CopyOffload::none;
  CopyWhen when = CopyWhen::always;
  bool paged = false;                // optimizer states: bitsandbytes' paged part in unified memory
  bool forward_to_backward = false;  // freed before the optimizer step
  bool one_at_a_time = false;        // gradients: optimizer_in_backward frees each as it is made
  bool unsharded_under_pipeline = false;  // gradients: FSDP2 under PP keeps them whole until the last backward
  // The unsharded copy an all-gather makes: only what is sharded is gathered, so a frozen
  // tensor's replicated part (bitsandbytes' QuantState, replicated_quant_state_bytes) is not in it.
  bool gathered = false;
};

// A frozen tensor has the copies of its weight only: the weight as stored (whole or sharded) and
// the unsharded copy gathered from it, and autocast's compute-dtype cast. Autocast caches a cast
// only for a weight that requires grad (pytorch/pytorch aten/src/ATen/autocast_mode.cpp @
// 008ec6b1840c94ff6d0f685bc10fbf585167c673, cached_cast: can_try_cache needs arg.requires_grad()
// && arg.is_leaf()), so a frozen linear's cast is made anew in each forward; the matmul saves it
// for the input gradient, so it lives from the forward to the backward all the same.
constexpr bool frozen_has_copy(CopyClass cls) {
  return cls == CopyClass::weights || cls == CopyClass::stored || cls == CopyClass::weight_copies;
}

// What torch.optim's step iterates over on a GPU (TorchStep): nothing of torch.optim's (Megatron's
// and DeepSpeed's own optimizers), each whole tensor less an offloaded share (DDP), or each rank's
// shards, one DTensor per parameter sharded on dim 0 (FSDP2).
enum class TorchStepOver : uint8_t { none, whole_tensors, shards };

// What one FSDP2 unit (a decoder layer) gathers and reduces (framework fsdp2), from one layer of
// each kind on this GPU: `params` its parameters; with peft `gather_bytes` its frozen weights in
// their storage type and adapters in theirs, `adapter_params` the adapters (the only gradients).
struct LayerSize {
  double params = 0, gather_bytes = 0, adapter_params = 0;
};

// What the framework's buffer function reads of the stage, once its tensors are walked.
struct StageExtremes {
  const Config& c;
  const Inventory& inv;
  const LayerSize& largest_layer;
  Trace* trace;
  double largest_tensor = 0;         // elements of the largest tensor (ZeRO-3 gathers it whole)
  double largest_frozen_bytes = 0;   // peft: the largest frozen tensor as gathered (its sharded part)
  double largest_adapter_bytes = 0;  // peft: the largest trainable tensor, in its dtype
  // PEFT modules_to_save under FSDP2: each saved copy's unsharded gradient and reduce_dtype copy,
  // all of them and the largest one.
  double copies_reduce = 0, largest_copy_reduce = 0;
};
using BufferFunction = void (*)(const StageExtremes&, StageState&);

struct FrameworkByteModel {
  std::span<const StateCopy> copies;
  BufferFunction buffers = nullptr;   // gathered layers, buckets, reduce buffers; none: nullptr
  TorchStepOver step_over = TorchStepOver::none;
  bool full_state_dict_gathers = false;  // a full state dict gathers each tensor whole (job_moments)
  bool te_fp8_weight_caches = false;     // Transformer Engine's FP8 weight copies
};

using CC = CopyClass;
using CW = CopyWidth;
using CS = CopyShard;
using CO = CopyOffload;

// Megatron DDP: the weights and an unsharded main-gradient buffer (main_grads_dtype) on every rank;
// the distributed optimizer shards master weights and optimizer states over DP × CP (docs:
// dist_optimizer.md); optimizer_offload_fraction moves that share to CPU.
constexpr StateCopy k_megatron_copies[] = {
    {CC::weights, CW::weight},
    {CC::gradients, CW::main_grads},
    {CC::master_weights, CW::master, CS::distributed_optimizer, CO::optimizer},
    {CC::optimizer_states, CW::optimizer, CS::distributed_optimizer, CO::optimizer},
};
// DeepSpeed ZeRO (stage_1_and_2.py / stage3.py estimators): 16-bit params (sharded at stage 3;
// offload_params moves them), 16-bit gradients (sharded at stage >= 2; reduced straight into the
// fp32 partition at stage 3, and only passing through reduce buckets when the optimizer is
// offloaded), fp32 gradients, fp32 master params and optimizer states (sharded at stage >= 1;
// offload_optimizer moves the fp32 gradients, master and states). Pure fp32 training has one fp32
// copy of weights and gradients. A paged client optimizer (bitsandbytes) keeps the paged part of
// its partition's states in unified memory (resolve() rules out offload with it).
constexpr StateCopy k_deepspeed_copies[] = {
    {CC::weights, CW::weight, CS::zero_3, CO::params},
    {CC::gradients, CW::params_dtype, CS::zero_2, CO::optimizer_dropped, CopyWhen::mixed_below_zero_3},
    {CC::gradients, CW::fp32, CS::zero_fp32_gradients, CO::optimizer},
    {CC::master_weights, CW::master, CS::zero_1, CO::optimizer},
    {.cls = CC::optimizer_states, .width = CW::optimizer, .shard = CS::zero_1, .offload = CO::optimizer, .paged = true},
};
// FSDP2 (torch.distributed.fsdp.fully_shard): each rank stores its shard of every parameter in the
// original dtype (the fp32 master when MixedPrecisionPolicy casts to a lower param_dtype), sharded
// gradients in reduce_dtype and sharded optimizer states; offload_params (CPUOffloadPolicy) moves
// all three. With pipeline parallelism, torch.distributed.pipelining turns gradient sync off until
// the last microbatch's backward (stage.py, backward_maybe_with_nosync): FSDP2 keeps each
// parameter's unsharded gradient, upcast to reduce_dtype (FSDPParam.to_accumulated_grad_if_needed),
// and reduce-scatters once at the end, so the optimizer sees the shards. zero_stage 2
// (reshard_after_forward=False) keeps the unsharded copy of every layer from the forward to the end
// of backward (reshard_after_backward, True by default and for the last microbatch under PP); the
// gathered copy is param_dtype's with or without a master (FSDP2 all-gathers into an unsharded
// parameter of its own either way), beside the shard.
constexpr StateCopy k_fsdp2_copies[] = {
    {CC::stored, CW::stored, CS::always, CO::params},
    {.cls = CC::gradients, .width = CW::main_grads, .shard = CS::always, .offload = CO::params_then_optimizer,
     .one_at_a_time = true, .unsharded_under_pipeline = true},
    {.cls = CC::optimizer_states, .width = CW::optimizer, .shard = CS::always, .offload = CO::params_then_optimizer,
     .paged = true},
    {.cls = CC::weights, .width = CW::weight, .when = CopyWhen::zero_stage_2, .forward_to_backward = true,
     .gathered = true},
};
// PyTorch DDP: full weights and .grad in the parameter dtype on every rank, plus the all-reduce
// buckets unless gradient_as_bucket_view (DDP docs); the buckets belong to the
// DistributedDataParallel wrapper, so a single-GPU run (HF Trainer with one device, torchtune's
// single-device recipes) trains the bare module and has none (data_parallel_size 1). Autocast
// caches a compute_dtype cast of each linear weight for the forward and its backward; the casts
// live from the forward to the backward that consumes them: the cache is cleared on leaving the
// autocast region and autograd frees the saved casts in backward (torch.autocast docs,
// cache_enabled), so the optimizer step has none.
constexpr StateCopy k_ddp_copies[] = {
    {CC::weights, CW::weight},
    {.cls = CC::gradients, .width = CW::params_dtype, .one_at_a_time = true},
    {.cls = CC::buffers, .width = CW::params_dtype, .when = CopyWhen::ddp_buckets},
    {CC::master_weights, CW::master, CS::none, CO::optimizer},
    {.cls = CC::optimizer_states, .width = CW::optimizer, .offload = CO::optimizer, .paged = true},
    {.cls = CC::weight_copies, .width = CW::compute, .when = CopyWhen::narrower_compute, .forward_to_backward = true},
};

// Whether a copy is divided over its group (Groups) in this config; `needs_master`: the tensor
// has an fp32 master copy (mixed precision), for ZeRO's fp32 gradients.
bool copy_sharded(const Config& c, const StateCopy& copy, bool needs_master) {
  switch (copy.shard) {
    case CS::none: return false;
    case CS::always: return true;
    case CS::distributed_optimizer: return c.use_distributed_optimizer;
    case CS::zero_1: return c.zero_stage >= 1;
    case CS::zero_2: return c.zero_stage >= 2;
    case CS::zero_3: return c.zero_stage == 3;
    case CS::zero_fp32_gradients: return needs_master ? c.zero_stage >= 1 : c.zero_stage >= 2;
  }
  return false;
}

// DeepSpeed ZeRO-3 with each decoder layer checkpointed: the most bytes of weights gathered at
// once, from a replay of the parameter coordinator over one training step's module trace
// (deepspeedai/DeepSpeed deepspeed/runtime/zero/partitioned_param_coordinator.py @
// edaa7221267243c7be7fb49c5d5f5c4fb97b4641):
// - fetch_sub_module gathers the current module's weight, pops its entry off the trace queue,
//   then pops further entries and gathers those not gathered yet (whole tensors) until
//   stage3_prefetch_bucket_size elements are in flight; an entry popped for a tensor already
//   gathered is skipped but remembered (__most_recent_step_id_param_fetched_for);
// - release_sub_module (__params_to_release) frees the weight after the module's forward or
//   backward unless its next use was already popped by the prefetch, or it recurs within
//   stage3_max_reuse_distance elements of the trace that follows.
// Because the prefetch counts only what it newly gathers, small tensors (k and v under GQA) let
// several large ones be in flight; and a checkpointed layer's recomputation is followed by its
// own backward, so its last linears stay gathered from one to the other (Llama 2 70B: gate, up
// and down, 705 M elements, while o_proj is prefetched). The trace: the embedding, each layer's
// linears in module order (transformers' Llama-style q, k, v, o; gate, up, down, or fc1, fc2;
// norms and biases stay gathered, under stage3_param_persistence_threshold, and are not counted),
// the output layer; in backward the output layer, each layer from the last its recomputation then
// its backward (linears in reverse), the embedding; every layer of the model, since the prefetch
// runs ahead over whatever is still gathered until stage3_max_live_parameters stops it (its
// documented meaning: "the maximum number of parameters resident per GPU before releasing").
// DeepSpeed's defaults, which no field sets yet
// (runtime/zero/config.py: prefetch_bucket_size 5e7, max_reuse_distance 1e9, max_live_parameters
// 1e9). Bytes are the weights as ZeRO-3 gathers them: the 16-bit parameters, or under peft each
// frozen tensor in its storage less bitsandbytes' quantisation state, which no rank gathers.
// 0 where this does not apply (another framework or stage, another model implementation,
// recompute that is not per layer, experts): the caller keeps its own count there.
double zero3_checkpointed_gather_bytes(const Config& c) {
  constexpr double k_prefetch_bucket = 5e7, k_max_reuse_distance = 1e9, k_max_live = 1e9;
  if (c.framework != Framework::deepspeed || c.zero_stage != 3 || c.is_moe() ||
      c.model_implementation != ModelImplementation::hf_transformers)
    return 0;
  if (c.recompute_granularity != RecomputeGranularity::full || c.recompute_method != RecomputeMethod::uniform ||
      c.recompute_num_layers > 1 || c.num_layers <= 0)
    return 0;
  const double h = double(c.hidden_size), ffn = double(c.ffn_hidden_size), vocab = double(c.vocab_size);
  const double q_out = double(c.num_attention_heads) * double(c.kv_channels);
  const double kv_out = double(c.num_query_groups) * double(c.kv_channels);
  const double tp = double(std::max<int64_t>(1, c.tensor_model_parallel_size));
  // The tensors: one layer's linears, then the embedding and the output layer (one when tied).
  std::array<double, 9> numel{}, bytes{};
  int m = 0;
  const auto gathered_bytes = [&](Part part, double rows, double cols, bool linear) {
    if (!c.peft_on()) return rows * cols * bytes_per_element(c.params_dtype);
    const Tensors t{part, 1, rows, cols, linear, part == Part::dense, false, false};
    return stored_bytes(c, t) - replicated_quant_state_bytes(c, t);
  };
  const auto linear = [&](double in, double out) {
    numel[size_t(m)] = in * out / tp;
    bytes[size_t(m)] = gathered_bytes(Part::dense, in, out / tp, true);
    ++m;
  };
  linear(h, q_out), linear(h, kv_out), linear(h, kv_out), linear(q_out, h);
  if (c.gated_linear_unit) linear(h, ffn), linear(h, ffn), linear(ffn, h);
  else linear(h, ffn), linear(ffn, h);
  const int embedding = m, output = c.share_embeddings_and_output_weights ? m : m + 1;
  numel[size_t(embedding)] = vocab * h / tp;
  bytes[size_t(embedding)] = gathered_bytes(Part::embedding, vocab / tp, h, false);
  numel[size_t(output)] = vocab * h / tp;
  bytes[size_t(output)] = gathered_bytes(Part::embedding, vocab / tp, h, true);
  // The trace of one step; a tensor is (layer, index), layer -1 for the embedding side. At most
  // 160 layers are replayed (Llama 3.1 405B has 126): the window and the live limit span
  // 1e9 elements, so beyond that only a model of layers under 6 M elements would change, and the
  // replay stays a few thousand uses.
  const int layers = int(std::min<int64_t>(c.num_layers, 160));
  struct Use { int layer, index; };
  std::vector<Use> trace(size_t(3 * m * layers + 4));
  int n = 0;
  trace[size_t(n++)] = {-1, embedding};
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < m; ++i) trace[size_t(n++)] = {l, i};
  trace[size_t(n++)] = {-1, output};
  trace[size_t(n++)] = {-1, output};
  for (int l = layers - 1; l >= 0; --l) {
    for (int i = 0; i < m; ++i) trace[size_t(n++)] = {l, i};
    for (int i = m - 1; i >= 0; --i) trace[size_t(n++)] = {l, i};
  }
  trace[size_t(n++)] = {-1, embedding};
  const auto id = [&](const Use& u) { return u.layer < 0 ? layers * m + (u.index - m) : u.layer * m + u.index; };
  const auto size_of = [&](const Use& u) { return numel[size_t(u.index)]; };
  std::vector<char> gathered(size_t(layers * m + 2), 0);
  std::vector<int> fetched_for(size_t(layers * m + 2), -1);
  double live = 0, live_bytes = 0, peak = 0;
  const auto gather = [&](const Use& u) {
    if (gathered[size_t(id(u))]) return;
    gathered[size_t(id(u))] = true;
    live += size_of(u);
    live_bytes += bytes[size_t(u.index)];
  };
  int queue = 0;  // the next entry of the trace queue
  for (int s = 0; s < n; ++s) {
    const Use& u = trace[size_t(s)];
    gather(u);
    if (fetched_for[size_t(id(u))] < s && queue == s) fetched_for[size_t(id(u))] = queue++;
    const double budget = std::min(k_max_live - live, k_prefetch_bucket);
    double prefetched = 0;
    while (queue < n && prefetched < budget) {
      const Use& next = trace[size_t(queue)];
      fetched_for[size_t(id(next))] = std::max(fetched_for[size_t(id(next))], queue);
      ++queue;
      if (gathered[size_t(id(next))]) continue;
      gather(next);
      prefetched += size_of(next);
    }
    peak = std::max(peak, live_bytes);
    // Release after the module ran, unless its next use was popped or recurs within the window.
    if (fetched_for[size_t(id(u))] > s + 1) continue;
    bool recurs = false;
    double traversed = 0;
    for (int t = s + 1; t < n && traversed < k_max_reuse_distance; ++t) {
      if (id(trace[size_t(t)]) == id(u)) { recurs = true; break; }
      traversed += size_of(trace[size_t(t)]);
    }
    if (recurs) continue;
    gathered[size_t(id(u))] = false;
    live -= size_of(u);
    live_bytes -= bytes[size_t(u.index)];
  }
  return peak;
}

// DeepSpeed ZeRO's buffers. ZeRO-3 gathers the largest module's 16-bit params and gradients
// (4 × largest_layer_params in DeepSpeed's estimator); with peft the gather carries the frozen
// weights in their storage type (NF4 included) and the adapters in theirs.
// Its reduce bucket is in the trainable parameters' type (the optimizer's first param's dtype:
// the adapters' with peft), reduce_bucket_size elements whatever the model's size. ZeRO-3
// (zero/stage3.py _setup_for_real_optimizer: with contiguous_gradients, __ipg_bucket_flat_buffer =
// torch.empty(reduce_bucket_size, dtype=self.dtype)) keeps it from the engine's start; ZeRO-1/2
// (zero/stage_1_and_2.py backward(): with contiguous_gradients, ipg_buffer gets one such tensor,
// two with overlap_comm, released after the reduction) hold it through each backward pass. ZeRO-0
// has no ZeRO optimizer and no bucket.
void deepspeed_buffers(const StageExtremes& x, StageState& out) {
  const Config& c = x.c;
  StateBreakdown& st = out.gpu;
  const bool peft = c.peft_on();
  const double w16 = bytes_per_element(c.params_dtype);
  const double adapter_w = bytes_per_element(lora_adapter_dtype(c));
  if (c.zero_stage == 3) {
    // With each layer checkpointed, the parameter coordinator's replay where it applies
    // (zero3_checkpointed_gather_bytes, 0 elsewhere).
    const double replayed = zero3_checkpointed_gather_bytes(c);
    if (peft)
      st.buffers.dense += std::max(x.largest_frozen_bytes, replayed) + 2 * x.largest_adapter_bytes;
    else
      st.buffers.dense += std::max(2 * w16 * x.largest_tensor, replayed);
  }
  if (c.zero_stage >= 1 && c.contiguous_gradients) {
    const double bucket = c.reduce_bucket_size * (peft ? adapter_w : w16);
    if (c.zero_stage == 3) st.buffers.dense += bucket;
    else out.backward_temporary += bucket * (c.overlap_comm ? 2 : 1);
  }
}

// FSDP2's buffers, as torchtitan and the fully_shard docs apply it (each transformer block, then
// the model): the root group is what no block holds, the embedding and the output layer of this
// stage; its reshard_after_forward is forced to False ("the root FSDP state has its value
// specially set to False", fully_shard docs), so it stays unsharded in param_dtype from the
// forward to the end of backward. Full shard (3) gathers the current block and prefetches the
// next (2 × param_dtype); reduce-scattering a block's gradient takes its unsharded gradient in
// param_dtype and the reduce_dtype copy FSDP2 casts it to (foreach_reduce). zero_stage 2 holds
// every weight unsharded already (its row in k_fsdp2_copies). With peft the gathers carry the
// frozen weights in their storage type (NF4 included) and the adapters in theirs; only the
// adapters have gradients to reduce.
void fsdp2_buffers(const StageExtremes& x, StageState& out) {
  const Config& c = x.c;
  const Inventory& inv = x.inv;
  const LayerSize& largest_layer = x.largest_layer;
  Trace* trace = x.trace;
  StateBreakdown& st = out.gpu;
  const bool peft = c.peft_on();
  const int64_t stage = c.zero_stage;
  const double w16 = bytes_per_element(c.params_dtype);
  const double adapter_w = bytes_per_element(lora_adapter_dtype(c));
  const double largest_copy_reduce = x.largest_copy_reduce, copies_reduce = x.copies_reduce;
  // All of them live from the forward to the end of backward, none in the optimizer step.
  // With fsdp_embedding_units (torchtune shard_model, training/_distributed.py @
  // 3e5b0408e636e20ca18e9c6c58c68b4da9339129: fully_shard on each module custom_sharded_layers
  // names, then the root) the root holds no weight: the embedding and the output layer are
  // gathered like blocks, one at a time beside the next block, and reduce their gradients as a
  // block does; the largest of them sets the gathered pair and the reduce-scatter.
  const double before = st.buffers.total();
  const bool units = c.fsdp_embedding_units;
  // The root's bytes; the largest embedding-side tensor's bytes and parameters.
  double root = 0, largest_unit = 0, largest_unit_params = 0;
  for (int i = 0; i < inv.n; ++i) {
    const Tensors& t = inv.items[size_t(i)];
    if (t.part != Part::embedding) continue;
    // bitsandbytes' QuantState of a quantised output layer is not gathered (every rank has it).
    const double bytes = peft ? stored_bytes(c, t) - replicated_quant_state_bytes(c, t) : w16 * t.params();
    root += bytes;
    largest_unit = std::max(largest_unit, bytes / t.count);
    largest_unit_params = std::max(largest_unit_params, t.elements());
  }
  const double layer_gather = peft ? largest_layer.gather_bytes : w16 * largest_layer.params;
  // FSDP1 (FullyShardedDataParallel), docs/trainmem-profile.md "FSDP1". Its forward does not
  // prefetch (forward_prefetch False by default): _pre_forward unshards the unit and
  // _post_forward reshards it, freeing the unsharded flat parameter with record_stream
  // (pytorch/pytorch torch/distributed/fsdp/_runtime_utils.py @
  // 3ade90a6aaa939cd6238e314c321b9f920db1471, _pre_forward_unshard, _post_forward_reshard;
  // _flat_param.py @ fe03cf693c7c774a88c01cd0bc52f80402b8437f, _free_unsharded_flat_param),
  // which takes it out of the allocated figure at once: one gathered unit in forward. Its
  // backward with BACKWARD_PRE (the default) unshards the next unit in the pre-backward hook
  // before computing this one's gradient (_pre_backward_hook, _prefetch_handles): two, the
  // second only in backward. FSDP2 instead keeps the previous all-gather's output until the
  // next one's copy-in (no record_stream; RFC pytorch/pytorch#114299), two in both.
  const bool fsdp1 = c.fsdp_version == 1;
  if (stage == 3) {
    if (units) {
      st.buffers.dense += layer_gather + std::max(layer_gather, largest_unit);
    } else {
      st.buffers.embedding += root;
      st.buffers.dense += fsdp1 ? layer_gather : 2 * layer_gather;
      if (fsdp1) out.backward_temporary += layer_gather;
    }
  }
  const double grad_bytes = bytes_per_element(c.main_grads_dtype);
  // FSDP1's post-backward casts the unsharded gradient to reduce_dtype only when it differs
  // (_post_backward_hook: `if ... flat_param.grad.dtype != handle._reduce_dtype`); FSDP2's
  // foreach_reduce is counted with its copy.
  const auto reduce_copy = [&](double unsharded_bytes) {
    return fsdp1 && unsharded_bytes == grad_bytes ? 0.0 : grad_bytes;
  };
  if (fsdp1 && stage == 3 && !units) {
    out.fsdp1_unit.gather = layer_gather;
    out.fsdp1_unit.gradient = peft ? adapter_w * largest_layer.adapter_params : w16 * largest_layer.params;
    out.fsdp1_unit.reduce_copy = peft ? reduce_copy(adapter_w) * largest_layer.adapter_params
                                      : reduce_copy(w16) * largest_layer.params;
  }
  if (peft) {
    // A layer's adapter gradients, unsharded in their dtype, and their reduce_dtype copy.
    const double layer_reduce = (adapter_w + reduce_copy(adapter_w)) * largest_layer.adapter_params;
    st.buffers.dense += layer_reduce;
    // The saved copies (modules_to_save) belong to the root, whose post-backward runs when the
    // whole backward has: their unsharded gradients, in their own dtype, are made first (the
    // output layer's) and wait for it, then take their reduce_dtype copy. As units of their
    // own they reduce as a block does, one at a time.
    const double copies = units && stage == 3 ? std::max(0.0, largest_copy_reduce - layer_reduce) : copies_reduce;
    out.backward_temporary += copies;
    if (copies > 0)
      note(trace, "trainmem.saved_copy_reduce_bytes", copies,
           "modules_to_save: the copies' unsharded gradients and reduce_dtype copies in backward");
  } else {
    // A unit's unsharded gradient (param_dtype) and its reduce_dtype copy.
    const double reduced = units && stage == 3 ? std::max(largest_layer.params, largest_unit_params)
                                               : largest_layer.params;
    st.buffers.dense += (w16 + reduce_copy(w16)) * reduced;
    out.unit_reduce = (w16 + reduce_copy(w16)) * reduced;
    // The root group (no units) runs its post-backward in the final callback, at the end of
    // backward: its forward inputs, the token ids, need no gradient, so no hook fires earlier
    // (torch/distributed/fsdp/_fully_shard/_fsdp_state.py _root_post_backward_final_callback:
    // "Run post-backward in case forward inputs did not require gradient so the autograd
    // backward did not run"). The output layer's unsharded gradient, in param_dtype, is made
    // first and waits there through the backward. Under pipelining every gradient stays
    // unsharded already (above).
    if (!(units && stage == 3) && c.pipeline_model_parallel_size == 1 && inv.output_item >= 0)
      out.backward_temporary += w16 * inv.items[size_t(inv.output_item)].params();
  }
  out.forward_backward_only += st.buffers.total() - before;
}

// Indexed by Framework. Transformer Engine FP8 recipes (megatron, deepspeed) cache rowwise and
// columnwise FP8 weights; torchao's Float8Linear (fsdp2, ddp) casts the weight inside each matmul
// and keeps no copy (torchao float8_linear.py).
constexpr FrameworkByteModel k_byte_models[] = {
    {.copies = k_megatron_copies, .te_fp8_weight_caches = true},
    {.copies = k_deepspeed_copies, .buffers = deepspeed_buffers, .te_fp8_weight_caches = true},
    {.copies = k_fsdp2_copies, .buffers = fsdp2_buffers, .step_over = TorchStepOver::shards,
     .full_state_dict_gathers = true},
    {.copies = k_ddp_copies, .step_over = TorchStepOver::whole_tensors},
};
static_assert(std::size(k_byte_models) == size_t(Framework::count));

// Megatron's precision-aware optimizer stores a bf16 weight's fp32 master as its low 16 bits
// (store_param_remainders): the weight itself holds the high 16, so each master element costs an
// int16. Megatron hands Transformer Engine's FusedAdam the master weights (master_weights=True,
// store_param_remainders from OptimizerConfig, default True) only when
// use_precision_aware_optimizer_no_fp8_or_ds_fp8 holds: main_params_dtype other than fp32, or no
// FP8 recipe or the delayed one, or the optimizer offloaded (megatron/core/optimizer/__init__.py
// and optimizer_config.py @ 23e00ed0963c35382dfe8a5a94fb3cda4d21e133, core_v0.14.0; on with
// TE 2.1+ since f2ece182d8, 2025-02-10, core_v0.11.0; an OptimizerConfig field since
// core_v0.13.0). With another recipe Megatron builds fp32 main params itself
// (distrib_optimizer.py @ the same commit: shard_model_param.clone().float(), or the whole
// dequantised weight's view for an FP8 one). FusedAdam keeps remainders only for fp32 masters of
// bf16 parameters (transformer_engine/pytorch/optimizers/fused_adam.py @
// 40c69e751a47ec87786283e125c5eb264101270f, v2.8: `store_param_remainders and master_weights and
// master_weight_dtype == torch.float32`, then `p.dtype == torch.bfloat16`; _initialize_state:
// torch.zeros_like(param, dtype=torch.int16)). A delayed-scaling FP8 weight (a Float8Tensor whose
// nominal dtype is bf16) keeps its fp32 master here: whether the remainder path serves it was not
// settled, and the fp32 figure cannot under-count. The offloaded optimizer's masters live on the
// CPU (HybridDeviceOptimizer), so only offload 0 is modelled.
bool master_as_remainders(const Config& c, Dtype weight_dtype, bool fp8_weight) {
  return c.store_param_remainders && c.framework == Framework::megatron && c.use_distributed_optimizer &&
         c.main_params_dtype == Dtype::fp32 && weight_dtype == Dtype::bf16 && !fp8_weight &&
         (c.fp8_recipe == Fp8Recipe::none || c.fp8_recipe == Fp8Recipe::delayed) &&
         c.optimizer_offload_fraction == 0 && (c.optimizer == Optimizer::adam || c.optimizer == Optimizer::adamw);
}

// `largest_layer`: the largest decoder layer on this GPU (FSDP2's unit of gathering).
StageState stage_state(const Config& c, const Inventory& inv, const LayerSize& largest_layer,
                       Trace* trace) {
  StageState out;
  StateBreakdown& st = out.gpu;
  const Groups groups = data_parallel_groups(c);
  const Framework fw = c.framework;
  const int64_t stage = c.zero_stage;
  const Fp8RecipeInfo& fp8 = fp8_recipe_info(c.fp8_recipe);
  const double offload = c.optimizer_offload_fraction;
  const bool peft = c.peft_on();

  // The largest tensor a GPU must gather whole (ZeRO-3 module) and the largest layer (FSDP unit).
  double largest_tensor = 0;
  for (int i = 0; i < inv.n; ++i) largest_tensor = std::max(largest_tensor, inv.items[size_t(i)].elements());
  // peft: the largest frozen tensor as ZeRO-3 gathers it (bytes: its storage less what every rank
  // keeps whole), the largest trainable tensor (an adapter matrix or a saved copy, bytes in its
  // dtype) and the largest NF4 linear (elements), which bitsandbytes dequantises whole in the
  // compute dtype.
  double largest_frozen_bytes = 0, largest_adapter_bytes = 0, largest_quantized = 0;
  // LLM.int8: the largest transient of one int8 linear, forward (with its recomputation) and
  // backward (int8_forward_bytes, int8_backward_bytes), over one microbatch's tokens.
  double int8_forward = 0, int8_backward = 0;
  const Dtype int8_input = int8_input_dtype(c);
  const double tokens = double(c.seq_length) * double(c.micro_batch_size) / double(c.context_parallel_size);
  // PEFT modules_to_save under FSDP2: each trainable copy's unsharded gradient (its dtype) and
  // reduce_dtype copy, all of them and the largest one.
  double copies_reduce = 0, largest_copy_reduce = 0;

  // optimizer_in_backward: only one parameter's gradient exists at a time (the row and part of
  // the largest, and its bytes on this GPU).
  struct {
    double bytes = 0;
    PartBytes* row = nullptr;
    Part part = Part::dense;
  } in_backward_grad;
  auto add_gradient = [&](PartBytes& row, Part part, double group_bytes, double count) {
    if (!c.optimizer_in_backward) {
      part_add(row, part, group_bytes);
      return;
    }
    const double one = group_bytes / count;
    if (one > in_backward_grad.bytes) in_backward_grad = {one, &row, part};
  };

  // The framework's row (k_byte_models). It keeps only a shard of each weight between uses when
  // the weight's copy that always exists is sharded: DeepSpeed ZeRO-3 (stage3.py partitions every
  // parameter) and FSDP2 (fully_shard); Megatron, DDP and ZeRO-1/2 keep the whole of it.
  const FrameworkByteModel& model = k_byte_models[size_t(fw)];
  bool weights_sharded = false;
  for (const StateCopy& copy : model.copies)
    if ((copy.cls == CC::weights || copy.cls == CC::stored) && copy.when == CopyWhen::always)
      weights_sharded = copy_sharded(c, copy, false);
  const double on_gpu = c.offload_params ? 0 : 1;
  const double compute = bytes_per_element(c.compute_dtype);

  TorchStep step;  // what a torch.optim step (ddp, fsdp2) iterates over on this GPU
  // Elements of Megatron's dense and expert groups of matrices on this GPU, and its largest one;
  // each group's matrices (one parameter's shard, and how many).
  struct {
    double dense = 0, expert = 0, largest = 0;
    std::vector<StageState::FusedAdamCopies> dense_kinds, expert_kinds;
  } fused_adam_matrices;
  const FusedAdamUnscaled fused_adam = megatron_fused_adam_unscaled(c);
  double largest_trainable = 0;  // elements of the largest trainable tensor on this GPU
  for (int i = 0; i < inv.n; ++i) {
    const Tensors& t = inv.items[size_t(i)];
    const double P = t.params();
    const Part part = t.part;
    const double n = part == Part::expert ? groups.expert : groups.dense;
    // A frozen base tensor (peft, requires_grad False): only its weight's copies (frozen_has_copy).
    const bool frozen = peft && !t.adapter;
    if (t.adapter) {
      out.adapter_local += P;
      const double bytes = stored_bytes(c, t);
      largest_adapter_bytes = std::max(largest_adapter_bytes, bytes / t.count);
      if (t.saved_copy) {
        const double reduce = bytes + P * bytes_per_element(c.main_grads_dtype);
        copies_reduce += reduce;
        largest_copy_reduce = std::max(largest_copy_reduce, reduce / t.count);
      }
    } else {
      out.params_local += P;
      (part == Part::expert ? out.expert_local : out.dense_local) += P;
      if (part == Part::embedding) out.embedding_local += P;
      // offload_params moves the shards to CPU memory.
      out.params_stored += !weights_sharded ? P : c.offload_params ? 0 : P / n;
    }

    // What a copy of the weight as stored weighs, and of it the part every rank keeps whole
    // (`replicated`: bitsandbytes' QuantState of a frozen NF4 tensor, replicated_quant_state_bytes),
    // which is never sharded, gathered or offloaded; the rest is what ZeRO-3 and FSDP2 partition,
    // gather and offload. A frozen tensor's weight is its storage (frozen_dtype, NF4 included);
    // a trainable one's the FP8 copy itself with fp8_param_gather.
    const Dtype weight_dtype = frozen      ? frozen_dtype(c, t)
                               : t.adapter ? trainable_dtype(c, t)
                               : part == Part::expert ? c.expert_params_dtype
                                                      : c.params_dtype;
    const double w = bytes_per_element(weight_dtype);
    const double frozen_bytes = frozen ? stored_bytes(c, t) : 0;
    const double replicated_bytes = frozen ? replicated_quant_state_bytes(c, t) : 0;
    if (frozen) {
      const double sharded = frozen_bytes - replicated_bytes;
      largest_frozen_bytes = std::max(largest_frozen_bytes, sharded / t.count);
      // The output layer (the only linear of Part::embedding) is dequantised beside the logits,
      // not beside a decoder layer's recomputation: it has its own moment (stage_moments).
      if (weight_dtype == Dtype::nf4) out.largest_nf4_elements = std::max(out.largest_nf4_elements, t.elements());
      // A full state dict gathers each frozen tensor whole in its storage type (the packed NF4
      // data; bitsandbytes' QuantState is on every rank already); torchtune's saver then
      // dequantises an NF4 tensor to its original dtype on the GPU beside it (job_moments).
      if (model.full_state_dict_gathers) {
        const bool dequantised =
            weight_dtype == Dtype::nf4 && c.model_implementation == ModelImplementation::torchtune;
        const double whole_tensor =
            sharded / t.count + (dequantised ? t.elements() * bytes_per_element(unquantized_dtype(c)) : 0);
        out.largest_gathered_bytes = std::max(out.largest_gathered_bytes, whole_tensor);
      }
      if (weight_dtype == Dtype::nf4 && t.part == Part::embedding) {
        out.output_dequant = nf4_dequant_bytes(c, t.elements());
        out.output_rows = t.rows;
      } else if (weight_dtype == Dtype::nf4) {
        largest_quantized = std::max(largest_quantized, t.elements());
      } else if (weight_dtype == Dtype::int8 && t.linear) {
        out.largest_int8_elements = std::max(out.largest_int8_elements, t.elements());
        int8_forward = std::max(int8_forward, int8_forward_bytes(tokens, t.rows, t.cols, int8_input));
        int8_backward = std::max(int8_backward, int8_backward_bytes(t.rows, t.cols, int8_input));
      }
    }

    // The output layer's weight, its adapter or its saved copy (not the embedding's copy, whose
    // gradient is the backward's last).
    const bool output_side = i == inv.output_item || (t.adapter && part == Part::embedding && t.linear);
    const double gradients_so_far = st.gradients.total(), adapter_gradients_so_far = st.adapter_gradients.total();
    PartBytes& weights = frozen ? st.frozen_weights : t.adapter ? st.adapter_weights : st.weights;
    PartBytes& gradients = t.adapter ? st.adapter_gradients : st.gradients;
    PartBytes& master_weights = t.adapter ? st.adapter_master_weights : st.master_weights;
    PartBytes& optimizer_states = t.adapter ? st.adapter_optimizer_states : st.optimizer_states;

    // FP8 weights (fp8_param_gather) are the low-precision copy itself.
    const bool fp8_weight = !frozen && c.fp8_param_gather && t.linear && part != Part::embedding;
    const double stored_w = fp8_weight ? fp8.copy_bytes_per_element : w;
    const bool needs_master =
        !frozen && c.master_weights && (fp8_weight || bytes_per_element(c.main_params_dtype) > w);
    const double master = !needs_master                                      ? 0
                          : master_as_remainders(c, weight_dtype, fp8_weight) ? bytes_per_element(Dtype::bf16)
                                                                              : bytes_per_element(c.main_params_dtype);
    const double grad = bytes_per_element(c.main_grads_dtype);
    const double optimizer = frozen ? 0 : optimizer_state_bytes(c, t);

    if (!frozen && model.te_fp8_weight_caches && c.fp8_recipe != Fp8Recipe::none && t.linear && part != Part::embedding)
      part_add(st.weight_copies, part, P * fp8.copy_bytes_per_element * (fp8.copies - (fp8_weight ? 1 : 0)));
    for (const StateCopy& copy : model.copies) {
      if (frozen && !frozen_has_copy(copy.cls)) continue;
      // QLoRA: the unquantised frozen linears the trainer's autocast casts (an fp32 lm_head under
      // kbit_upcast peft) are not in autocast's cache (cached_cast caches leaf tensors that
      // require grad only); the cast is a saved activation where its matmul keeps it
      // (activations.cpp output_layer_weight_cast, k_src_kbit_lm_head_cast), a transient
      // otherwise. Counting it here as well counted it twice (the allocation timeline oracle's
      // QLoRA draws under kbit_upcast peft: one copy, tests/oracle/bnb.py).
      if (frozen && copy.cls == CC::weight_copies && c.peft == Peft::qlora) continue;
      const bool exists = copy.when == CopyWhen::always ||
                          (copy.when == CopyWhen::mixed_below_zero_3 && needs_master && stage < 3) ||
                          (copy.when == CopyWhen::ddp_buckets && !c.gradient_as_bucket_view && c.data_parallel_size > 1) ||
                          (copy.when == CopyWhen::zero_stage_2 && stage == 2) ||
                          (copy.when == CopyWhen::narrower_compute && t.linear && compute < w);
      if (!exists) continue;
      double per_element = 0;
      switch (copy.width) {
        case CW::weight: per_element = stored_w; break;
        case CW::params_dtype: per_element = w; break;
        case CW::main_grads: per_element = grad; break;
        case CW::fp32: per_element = bytes_per_element(Dtype::fp32); break;
        case CW::master: per_element = master; break;
        case CW::stored: per_element = needs_master ? master : stored_w; break;
        case CW::compute: per_element = compute; break;
        case CW::optimizer: break;
      }
      // A frozen tensor's weight copies weigh its storage; its cast, P × compute_dtype.
      const bool frozen_storage = frozen && copy.width != CW::compute;
      const double bytes = frozen_storage ? frozen_bytes : copy.width == CW::optimizer ? optimizer : P * per_element;
      const double shardable = bytes - (frozen_storage ? replicated_bytes : 0);
      const double replicated = frozen_storage && !copy.gathered ? replicated_bytes : 0;
      const double shard = copy_sharded(c, copy, needs_master) ? n : 1;
      // The share on the GPU, the share kept in CPU memory, and the share of the parameters on
      // the GPU (what a paged optimizer can page).
      double gpu = 1, cpu = 0, params_on_gpu = 1;
      switch (copy.offload) {
        case CO::none: break;
        case CO::optimizer: gpu = 1 - offload, cpu = offload; break;
        case CO::optimizer_dropped: gpu = 1 - offload; break;
        case CO::params: gpu = on_gpu, cpu = 1 - on_gpu; break;
        case CO::params_then_optimizer:
          gpu = on_gpu * (1 - offload), cpu = 1 - on_gpu + on_gpu * offload, params_on_gpu = on_gpu;
          break;
      }
      const double paged = copy.paged ? params_on_gpu * paged_state_bytes(c, t, t.elements() / shard) : 0;
      out.paged += paged / shard;
      const bool stored_master = copy.cls == CC::stored && needs_master;
      PartBytes& row = copy.cls == CC::weights                           ? weights
                       : copy.cls == CC::gradients                       ? gradients
                       : copy.cls == CC::master_weights || stored_master ? master_weights
                       : copy.cls == CC::optimizer_states                ? optimizer_states
                       : copy.cls == CC::buffers                         ? st.buffers
                       : copy.cls == CC::weight_copies                   ? st.weight_copies
                                                                         : weights;
      const double on_device = replicated + (shardable - paged) / shard * gpu;
      if (copy.unsharded_under_pipeline && c.pipeline_model_parallel_size > 1) {
        // Whole until the last microbatch's backward reduce-scatters it.
        add_gradient(row, part, bytes, t.count);
        out.forward_backward_only += bytes - on_device;
      } else if (copy.one_at_a_time) {
        add_gradient(row, part, on_device, t.count);
      } else {
        const double added = part_add(row, part, on_device);
        if (copy.forward_to_backward) out.forward_backward_only += added;
      }
      // The CPU row of what moved there (buffers and weight copies never move: their share is 0).
      double& cpu_row = copy.cls == CC::gradients                         ? out.cpu.gradients
                        : copy.cls == CC::master_weights || stored_master ? out.cpu.master_weights
                        : copy.cls == CC::optimizer_states                ? out.cpu.optimizer_states
                                                                          : out.cpu.weights;
      cpu_row += shardable / shard * cpu;
    }
    if (frozen) continue;  // torch.optim steps only what trains; a state dict's frozen part is above
    largest_trainable = std::max(largest_trainable, t.elements());
    // Megatron's FusedAdam groups of matrices, sharded as the optimizer states are
    // (megatron_fused_adam_unscaled).
    if (fw == Framework::megatron && t.cols > 1 && fused_adam.moments > 0) {
      const double shard = c.use_distributed_optimizer ? n : 1;
      const bool expert = part == Part::expert;
      (expert ? fused_adam_matrices.expert : fused_adam_matrices.dense) += P / shard;
      (expert ? fused_adam_matrices.expert_kinds : fused_adam_matrices.dense_kinds)
          .push_back({fused_adam.copy_bytes() * t.elements() / shard, t.count});
      fused_adam_matrices.largest = std::max(fused_adam_matrices.largest, t.elements() / shard);
    }
    // What a torch.optim step iterates over on this GPU (TorchStepOver), and what a full state
    // dict gathers whole (job_moments: each parameter in its sharded storage type, then each
    // optimizer state, one at a time).
    if (model.step_over == TorchStepOver::whole_tensors) {
      step.elements += P * (1 - offload);
      step.largest = std::max(step.largest, t.elements() * (1 - offload));
    } else if (model.step_over == TorchStepOver::shards) {
      step.elements += P / n * on_gpu;
      step.largest = std::max(step.largest, t.elements() / n * on_gpu);
    }
    if (model.full_state_dict_gathers)
      out.largest_gathered_bytes = std::max(
          {out.largest_gathered_bytes, t.elements() * (needs_master ? master : stored_w), optimizer / t.count});
    if (output_side) {
      out.output_gradients += st.gradients.total() - gradients_so_far;
      out.output_adapter_gradients += st.adapter_gradients.total() - adapter_gradients_so_far;
    }
  }
  if (c.optimizer_in_backward) {
    // torchtune (recipes/full_finetune_single_device.py, 01067f61; training/memory.py
    // register_optim_in_bwd_hooks): one optimizer per parameter, stepped and zero_grad()-ed in
    // its post-accumulate-grad hook, so a gradient is freed as soon as it is complete: at most the
    // largest parameter's exists, and the step's temporaries are one tensor's, during backward.
    if (in_backward_grad.row) part_add(*in_backward_grad.row, in_backward_grad.part, in_backward_grad.bytes);
    // One parameter per optimizer: its step's `denom` dies with the call, no previous one.
    out.backward_temporary += torch_adam_temporary(c, TorchStep{step.largest, step.largest, 2 * step.largest});
  } else {
    // A whole unsharded copy of the model steps on each rank (ddp): its eager order is known.
    if (model.step_over == TorchStepOver::whole_tensors && !(c.optimizer_offload_fraction > 0))
      step.forloop_peak = forloop_peak(eager_step_order(c));
    out.optimizer_temporary += torch_adam_temporary(c, step);
  }
  out.optimizer_temporary += megatron_offload_copy_back_bytes(c, largest_trainable);
  {
    const bool expert_larger = fused_adam_matrices.expert > fused_adam_matrices.dense;
    out.fused_adam_unscaled =
        fused_adam.bytes(expert_larger ? fused_adam_matrices.expert : fused_adam_matrices.dense, fused_adam_matrices.largest);
    out.fused_adam_write_back = fused_adam.bytes(0, fused_adam_matrices.largest);
    out.fused_adam_copies = expert_larger ? fused_adam_matrices.expert_kinds : fused_adam_matrices.dense_kinds;
    out.fused_adam_moments = fused_adam.moments;
    out.optimizer_temporary += out.fused_adam_unscaled;
  }
  if (gradients_start_each_step_empty(c))
    out.gradients_freed_between_steps = st.gradients.total() + st.adapter_gradients.total();
  out.nf4_backward_dequant = nf4_dequant_bytes(c, largest_quantized);
  out.backward_temporary += out.nf4_backward_dequant;
  // LLM.int8's transients, the larger of one linear's forward and its backward, at the backward
  // moment: where gradient checkpointing recomputes the forward beside the backward's state, and
  // high by the forward's when nothing is recomputed (the forward's moment holds less).
  out.backward_temporary += std::max(int8_forward, int8_backward);
  out.int8_forward = int8_forward;
  // transformers' experts as 3D parameters (moe_fused_expert_params; GptOssExperts.forward's
  // training loop, huggingface/transformers src/transformers/models/gpt_oss/modeling_gpt_oss.py @
  // 00d4b3d2142cb4ced2f51b90614b5d26bc045015): each hit expert multiplies by
  // self.gate_up_proj[expert_idx] and self.down_proj[expert_idx], indexing with a LongTensor. Its
  // backward (IndexBackward0, tools/autograd/derivatives.yaml: index_backward, a zeros tensor of the
  // whole parameter's size with index_put_(accumulate=True)) hands autograd a gradient the size of
  // every local expert's gate_up_proj, which the engine adds into the parameter's input buffer
  // (in place once the buffer holds one): the buffer is the parameter's gradient, counted with
  // the gradients, and one more such tensor exists while it is added, the larger (gate_up_proj,
  // E/EP × h × 2·f_e/ETP) at most, in the gradients' dtype. Only when the experts train.
  const bool moe_here = std::any_of(inv.items.begin(), inv.items.begin() + inv.n,
                                    [](const Tensors& t) { return t.part == Part::expert; });
  if (c.moe_fused_expert_params && moe_here && !peft &&
      c.model_implementation == ModelImplementation::hf_transformers) {
    const double local_experts = double(c.num_moe_experts) / double(c.expert_model_parallel_size);
    const double width = double(c.moe_ffn_hidden_size) / double(c.expert_tensor_parallel_size) *
                         (c.gated_linear_unit ? 2 : 1);
    out.backward_temporary += local_experts * double(c.hidden_size) * width * bytes_per_element(c.params_dtype);
  }

  if (model.buffers)
    model.buffers({c, inv, largest_layer, trace, largest_tensor, largest_frozen_bytes, largest_adapter_bytes,
                   copies_reduce, largest_copy_reduce},
                  out);
  note(trace, "trainmem.params_on_gpu", out.params_local, "Σ tensors of the stage, after TP/EP split");
  note(trace, "trainmem.dense_shard_group", groups.dense, "DP·CP (fsdp2: shard size·CP)");
  note(trace, "trainmem.expert_shard_group", groups.expert, "DP·TP·CP / (EP·ETP)");
  if (peft) {
    note(trace, "trainmem.adapter_params_on_gpu", out.adapter_local,
         "Σ LoRA A (in × r) and B (r × out) of the stage's targets, after the TP split");
    note(trace, "trainmem.nf4_dequant_bytes", nf4_dequant_bytes(c, largest_quantized),
         "largest NF4 decoder linear's elements × compute dtype (dequantised one at a time), with "
         "double quantisation + its fp32 absmax (4 B per block of 64)");
  if (int8_forward > 0 || int8_backward > 0)
    note(trace, "trainmem.int8_transient_bytes", std::max(int8_forward, int8_backward),
         "LLM.int8, the largest int8 linear: max(forward: tokens × in × (1 + 2 unless the input is fp16) + "
         "4 × tokens + tokens × out × (4 + 2 unless fp16); backward: in × out × the input's bytes + 4 × out)");
  if (out.output_dequant > 0)
    note(trace, "trainmem.nf4_output_dequant_bytes", out.output_dequant,
         "quantize_lm_head: the output layer dequantised whole (elements × compute dtype, + fp32 "
         "absmax with double quantisation)");
  }
  if (c.paged_optimizer)
    note(trace, "trainmem.paged_optimizer_bytes", out.paged,
         "states of tensors ≥ 100,000 elements (bitsandbytes get_paged), 8-bit absmax excluded");
  return out;
}

// ---- Activations per stage ----

LayerRecompute layer_policy(const Config& c, int64_t position_in_chunk) {
  if (c.recompute_granularity != RecomputeGranularity::full) return LayerRecompute::policy;
  const int64_t n = std::max<int64_t>(1, c.recompute_num_layers);
  if (c.recompute_method == RecomputeMethod::block)
    return position_in_chunk < n ? LayerRecompute::checkpointed : LayerRecompute::policy;
  return position_in_chunk % n == 0 ? LayerRecompute::checkpointed : LayerRecompute::inside_group;
}

struct StageActivation {
  double per_microbatch = 0;  // every layer of the stage for one microbatch
  double recompute_working = 0;
  double in_flight = 0;       // microbatches (or microbatch-chunk pairs / v) held at the peak
  double bytes = 0;
  // torch.distributed.pipelining's own tensors (torch_pipeline_bytes): during the forward and
  // backward passes (counted in `bytes`), and at the end of the step (the optimizer-step moment).
  double pipeline_step = 0, pipeline_end = 0;
  double pipeline_merged = 0;  // the part of pipeline_end freed before the optimizer runs
  double cpu = 0;              // activation_offload: saved activations moved to CPU memory
  double moe_layers = 0;       // MoE layers on the stage, MTP included (the dispatcher's buffers)
  double moe_checkpoints = 0;  // recompute checkpoints whose layers include an MoE layer
  // One microbatch's loss chunk (MTP, output layer, loss): its backward runs first and frees it
  // before any decoder layer's backward (and recomputation) starts.
  double loss_chunk = 0;
  // Saved when the stage's first decoder layer runs its backward (StageMicrobatch::first_layer,
  // no more than the GPU keeps under activation offloading).
  double first_layer = 0;
};

// A figure per virtual chunk of a rank, held inline for up to 16 chunks (no allocation on the
// planner's path), in a vector beyond.
class ChunkBytes {
 public:
  void assign(int64_t n) {
    n_ = n;
    if (n > k_inline) more_.assign(size_t(n), 0.0);
    else small_.fill(0.0);
  }
  void clear() { n_ = 0; }
  bool empty() const { return n_ == 0; }
  int64_t size() const { return n_; }
  double* data() { return n_ > k_inline ? more_.data() : small_.data(); }
  const double* data() const { return n_ > k_inline ? more_.data() : small_.data(); }
  double& operator[](int64_t i) { return data()[i]; }
  bool all_equal() const {
    const double* x = data();
    for (int64_t i = 1; i < n_; ++i)
      if (x[i] != x[0]) return false;
    return true;
  }

 private:
  static constexpr int64_t k_inline = 16;
  int64_t n_ = 0;
  std::array<double, k_inline> small_{};
  std::vector<double> more_;
};

// What one microbatch keeps on stage r, before the schedule multiplies it. `loss_chunk` is the
// part in the last chunk (MTP, output layer, loss), which the schedule treats apart.
struct StageMicrobatch {
  double per_microbatch = 0, loss_chunk = 0, recompute_working = 0;
  double largest_layer = 0;  // the most one decoder layer keeps (what offloading keeps in flight)
  // What is still saved when the stage's first decoder layer runs its backward: that layer's
  // tensors and, on the first stage, the embedding's.
  double first_layer = 0;
  double moe_layers = 0;     // MoE layers on the stage, MTP included
  // Megatron's recompute checkpoints on the stage whose layers include an MoE layer, each of
  // which the dispatcher's kept probabilities hold after its backward (moe_recompute_graph_bytes).
  double moe_checkpoints = 0;
  // With virtual stages, what each chunk keeps (per_microbatch less the loss chunk, split by
  // chunk; the embedding is in chunk 0 of rank 0); empty when every chunk keeps the same.
  ChunkBytes chunk;
};

StageMicrobatch stage_microbatch(const Config& c, const PipelineLayout& layout, int64_t r) {
  StageMicrobatch a;
  const int64_t p = layout.p;
  const bool any_recompute = c.recompute_granularity != RecomputeGranularity::none;
  // Full recompute with the uniform method re-runs a whole group of recompute_num_layers layers
  // from its checkpoint, so the group's layers are live together during its backward.
  const double group = c.recompute_granularity == RecomputeGranularity::full &&
                               c.recompute_method == RecomputeMethod::uniform
                           ? double(std::max<int64_t>(1, c.recompute_num_layers))
                           : 1.0;
  // A layer's figures depend only on whether it is MoE and on its recompute treatment: compute
  // each combination once per stage (the planner estimates millions of layouts).
  constexpr int k_policies = 3;  // LayerRecompute::policy, checkpointed, inside_group
  double kept[2][k_policies];
  double working[2] = {-1, -1};
  for (auto& row : kept)
    for (double& v : row) v = -1;
  // The model's first layer differs under peft with the PyTorch implementations: its input,
  // the frozen embedding's output, needs no gradient (activations.cpp layer_input_needs_grad).
  const bool first_differs = c.peft_on() && c.eager_model();
  bool first_visit = true;
  // A checkpoint starts at a checkpointed layer and runs through the inside_group layers after it
  // (a uniform group); a layer the method leaves out (policy under full) is in none. Under
  // selective recompute with the moe module each MoE layer is its own checkpoint.
  const bool counts_checkpoints = moe_recompute_graph_bytes(c) > 0;
  const bool full = c.recompute_granularity == RecomputeGranularity::full;
  bool in_checkpoint = false, checkpoint_has_moe = false;
  if (layout.rounds > 1) a.chunk.assign(layout.rounds);
  layout.for_each_layer(r, [&](int64_t i, int64_t round, int64_t pos) {
    const int moe = c.is_moe_layer(i) ? 1 : 0;
    const LayerRecompute policy = layer_policy(c, pos);
    if (counts_checkpoints && full) {
      if (policy == LayerRecompute::checkpointed) in_checkpoint = true, checkpoint_has_moe = false;
      else if (policy == LayerRecompute::policy) in_checkpoint = false;
      if (in_checkpoint && moe && !checkpoint_has_moe) a.moe_checkpoints += 1, checkpoint_has_moe = true;
    } else if (counts_checkpoints) {
      a.moe_checkpoints += moe;
    }
    double first = -1;
    if (i == 0 && first_differs) first = layer_activation_bytes(c, moe == 1, policy, nullptr, true);
    double& cached = kept[moe][int(policy)];
    if (first < 0 && cached < 0) cached = layer_activation_bytes(c, moe == 1, policy);
    const double bytes = first >= 0 ? first : cached;
    a.moe_layers += moe;
    a.per_microbatch += bytes;
    if (!a.chunk.empty()) a.chunk[round] += bytes;
    a.largest_layer = std::max(a.largest_layer, bytes);
    if (first_visit) a.first_layer = bytes;  // for_each_layer visits the stage's layers in order
    first_visit = false;
    if (any_recompute) {
      if (working[moe] < 0) working[moe] = layer_recompute_working_bytes(c, moe == 1);
      a.recompute_working = std::max(a.recompute_working, group * working[moe]);
    }
  });
  // The MTP layers, the output layer and the loss sit in the last stage's last chunk.
  double loss_chunk = 0;
  if (r == p - 1 && c.mtp_num_layers > 0) {
    const int64_t L = c.num_layers;
    loss_chunk += double(c.mtp_num_layers) *
                  layer_activation_bytes(c, L > 0 && c.is_moe_layer(L - 1), LayerRecompute::policy);
    if (L > 0 && c.is_moe_layer(L - 1)) a.moe_layers += double(c.mtp_num_layers);
  }
  if (r == 0) {
    a.per_microbatch += embedding_activation_bytes(c);
    a.first_layer += embedding_activation_bytes(c);
    if (!a.chunk.empty()) a.chunk[0] += embedding_activation_bytes(c);
  }
  if (a.chunk.all_equal()) a.chunk.clear();
  if (r == p - 1) loss_chunk += output_activation_bytes(c);
  a.loss_chunk = loss_chunk;
  return a;
}

// What torch.distributed.pipelining (torchtitan's pipeline parallelism; frameworks fsdp2 and ddp)
// holds beyond the layers' saved tensors, from torch/distributed/pipelining/stage.py and
// schedules.py. A is the hidden state passed between stages (stage_boundary_bytes), n the
// microbatches of a step, v the stages (chunks) this rank holds.
//  - Receive buffers: _prepare_forward_infra and _prepare_backward_infra create one _RecvInfo
//    buffer per microbatch and chunk, for the activation received from the previous stage and
//    for the gradient received from the next, and keep them across steps: n·A for each chunk
//    that receives (every chunk but stage 0's), n·A for each chunk that is sent a gradient
//    (every chunk but the last stage's). An in-flight microbatch's received buffer is the input
//    its first layer saves (counted with the layers), so those are not counted twice.
//  - fwd_cache keeps each in-flight microbatch's stage output until its backward: A per pair.
//  - stage_backward accumulates each input's gradient into the receive buffer's .grad, which
//    clear_runtime_states frees only when the next step starts: n·A per receiving chunk at the
//    end of the step.
//  - The last stage appends every microbatch's model output to output_chunks (kept until the
//    next step): n outputs during the step. With pipeline_outputs "kept_fp32_merged" (torch and
//    torchtitan of December 2024) they are fp32 and step() also returns them concatenated
//    (_merge_outputs, a second copy) before the optimizer runs: 2n at its end. torchtitan now
//    passes step(return_outputs=False) and its model returns 16-bit logits.
void torch_pipeline_bytes(const Config& c, int64_t r, int64_t p, double n, double pairs,
                          StageActivation& a) {
  const double A = stage_boundary_bytes(c);
  const double v = double(std::max<int64_t>(1, c.virtual_pipeline_model_parallel_size));
  const bool first = r == 0, last = r == p - 1;
  const double receiving = first ? v - 1 : v, sending = last ? v - 1 : v;
  const double buffers = n * A * (receiving + sending);
  // The in-flight pairs whose output is a hidden state: all but the last stage's last chunk,
  // whose output (the logits) is counted below.
  const double hidden_outputs = !last ? pairs : v > 1 ? std::max(0.0, pairs - 1) : 0.0;
  const double outputs = last ? n * model_output_bytes(c) : 0;
  const double received_in_flight = pairs * receiving / v;
  a.pipeline_step = buffers - received_in_flight * A + hidden_outputs * A + outputs;
  const bool merged = c.pipeline_outputs == PipelineOutputs::kept_fp32_merged;
  a.pipeline_merged = merged ? outputs : 0;
  a.pipeline_end = buffers + n * A * receiving + outputs + a.pipeline_merged;
}

// The most a rank's chunks keep in flight under Megatron's interleaved schedule when its chunks
// differ (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_
// interleaving): forward i runs chunk (i mod p·v) / p and backward j chunk v − 1 − (j mod p·v) / p
// (get_model_chunk_id); after `warmup` forwards, iteration j runs forward warmup + j, then
// backward j, until all `forwards` have run. The peak is the largest sum over the moments after a
// forward; the pattern repeats every p·v iterations. With equal chunks every moment holds
// warmup + 1 chunks' worth, the in-flight count the caller uses.
double interleaved_chunk_peak(const ChunkBytes& chunks, int64_t p, int64_t warmup, int64_t forwards) {
  const double* chunk = chunks.data();
  const int64_t v = chunks.size(), group = p * v;
  // The forwards before the first backward: forward i runs chunk (i mod p·v) / p, so chunk k ran
  // whole groups' p each plus what the last, partial group gave it.
  const int64_t first = std::min(warmup + 1, forwards);
  double now = 0;
  for (int64_t k = 0; k < v; ++k)
    now += chunk[k] * double(first / group * p + std::clamp(first % group - k * p, int64_t(0), p));
  double peak = now;
  // Then iteration j adds forward first + j's chunk and frees backward j's. Both chunk ids hold for
  // runs of p steps, so the change is constant over each stretch where neither changes: a stretch
  // peaks at its first or its last step. One period (p·v iterations) has at most 2v + 1 stretches,
  // which keeps this O(v) per rank however long the pipeline.
  const int64_t steps = std::min(group, forwards - first);
  for (int64_t j = 0; j < steps;) {
    const int64_t f = (first + j) % group, b = j % group;
    const int64_t run = std::min({p - f % p, p - b % p, steps - j});
    const double change = chunk[f / p] - chunk[v - 1 - b / p];
    peak = std::max({peak, now + change, now + double(run) * change});
    now += double(run) * change;
    j += run;
  }
  return peak;
}

StageActivation stage_activation(const Config& c, const PipelineLayout& layout, int64_t r,
                                 const StageMicrobatch& micro) {
  StageActivation a;
  const int64_t p = layout.p;
  a.recompute_working = micro.recompute_working;
  a.moe_layers = micro.moe_layers;
  a.moe_checkpoints = micro.moe_checkpoints;
  const double loss_chunk = micro.loss_chunk;
  a.per_microbatch = micro.per_microbatch;
  if (c.activation_offload) {
    // The layers' (and the embedding's) saved tensors go to CPU memory as the forward pass saves
    // them; the GPU keeps what is in flight, which is never more than one layer's set: torchtune
    // OffloadActivations (training/_activation_offloading.py, e511d5a2) keeps the last
    // max_fwd_stash_size = 5 offloaded tensors alive until their copy is done and, in backward,
    // the current and the previous autograd node's; Megatron offloads cpu_offloading_num_layers
    // < num_layers layers (transformer_config.py, 002526d8); DeepSpeed's cpu_checkpointing brings
    // one checkpointed input back at a time. torchtune runs the output layer under NoOpManager
    // and the loss outside the context: the loss chunk stays. resolve() requires PP = 1.
    const double kept = std::min(a.per_microbatch, micro.largest_layer);
    a.cpu = a.per_microbatch - kept;
    a.per_microbatch = kept;
  }

  // Microbatches in flight at the stage's peak. 1F1B: stage r runs p − r warm-up forwards
  // (Narayanan et al. 2021 §2.2); GPipe keeps every microbatch; Megatron's interleaved schedule
  // warms up (p − r − 1)·2 + (v − 1)·p chunk-microbatches, +1 in steady state
  // (megatron/core/pipeline_parallel/schedules.py); without PP one microbatch at a time.
  const double m = double(c.num_microbatches);
  const double v = double(std::max<int64_t>(1, c.virtual_pipeline_model_parallel_size));
  double pairs = 1;
  if (p > 1) {
    switch (c.pipeline_schedule) {
      case PipelineSchedule::one_f_one_b: pairs = double(p - r); break;
      case PipelineSchedule::gpipe: pairs = m > 0 ? m : double(p); break;
      case PipelineSchedule::interleaved: pairs = double((p - r - 1) * 2) + (v - 1) * double(p) + 1; break;
      case PipelineSchedule::count: break;
    }
    const double all = (m > 0 ? m : pairs) * (c.pipeline_schedule == PipelineSchedule::interleaved ? v : 1);
    pairs = std::min(pairs, all);
  }
  a.in_flight = c.pipeline_schedule == PipelineSchedule::interleaved ? pairs / v : pairs;
  // The loss chunk holds one microbatch at a time except under GPipe: 1F1B gives the last stage
  // p − r = 1 microbatch, and in the interleaved schedule the last rank's warm-up
  // ((p − r − 1)·2 + (v − 1)·p forwards) ends just before its first last-chunk forward, after
  // which every forward of the last chunk is followed by that microbatch's backward
  // (schedules.py: backward chunk ids run from v − 1 down).
  const double loss_chunk_in_flight =
      c.pipeline_schedule == PipelineSchedule::gpipe && p > 1 ? pairs : 1.0;
  a.first_layer = std::min(micro.first_layer, a.per_microbatch);
  a.per_microbatch += loss_chunk;
  a.loss_chunk = loss_chunk;
  a.bytes = (a.per_microbatch - loss_chunk) * a.in_flight + loss_chunk * loss_chunk_in_flight;
  if (!micro.chunk.empty() && c.pipeline_schedule == PipelineSchedule::interleaved && p > 1)
    a.bytes = interleaved_chunk_peak(micro.chunk, p, int64_t(pairs) - 1, m > 0 ? int64_t(m * v) : int64_t(pairs)) +
              loss_chunk * loss_chunk_in_flight;
  if (c.torch_pipelining()) torch_pipeline_bytes(c, r, p, m > 0 ? m : pairs, pairs, a);
  a.bytes += a.pipeline_step;
  return a;
}

// What nvidia-smi shows beyond PyTorch's reserved memory: the CUDA context and NCCL's buffers
// (nccl.cpp: one entry per communicator the run uses).
// The library workspaces are not here: PyTorch allocates the cuBLAS/cuBLASLt workspace of each
// handle and stream through its caching allocator (ATen CublasHandlePool.cpp; they show in
// memory_allocated until torch._C._cuda_clearCublasWorkspaces()), and Transformer Engine its
// cuBLAS workspace with torch.empty, so they are part of the allocated figure (evaluate_stage).
double runtime_overhead(const Config& c, const NcclCommunicators& nccl) {
  return c.cuda_context_bytes + nccl.bytes();
}

// The part of the paged optimizer states the GPU holds: all of them without a capacity (the
// unpressured figure, said in the assumptions), else what gpu_memory_bytes leaves after
// `device_without_paged`; the driver pages the rest out to CPU memory.
double paged_resident_bytes(const Config& c, double device_without_paged, double paged) {
  return detail::paged_resident_bytes(c.gpu_memory_bytes, device_without_paged, paged);
}

struct StageResult {
  StageParams summary;
  StageState state;
  StageActivation activation;
};

// The largest decoder layer on one GPU (FSDP2's unit of gathering): its parameters, and with peft
// what it gathers (frozen weights in their storage type, adapters in theirs) and its adapters.
LayerSize largest_layer_size(const Config& c) {
  const Shard gpu{double(c.tensor_model_parallel_size), double(c.expert_model_parallel_size),
                  double(c.expert_tensor_parallel_size)};
  Inventory one_dense, one_moe;
  add_layer(one_dense, c, gpu, false, 1);
  if (c.is_moe()) add_layer(one_moe, c, gpu, true, 1);
  LayerSize out;
  out.params = std::max(one_dense.params(), one_moe.params());
  if (!c.peft_on()) return out;
  for (const Inventory* one : {&one_dense, &one_moe}) {
    double gather = 0;  // bitsandbytes' QuantState is not gathered: every rank has it whole
    for (int i = 0; i < one->n; ++i)
      gather += stored_bytes(c, one->items[size_t(i)]) - replicated_quant_state_bytes(c, one->items[size_t(i)]);
    if (gather > out.gather_bytes) {
      out.gather_bytes = gather;
      out.adapter_params = one->adapter_params();
    }
  }
  return out;
}

// Stages with the same layers and neither the first nor the last stage's extras hold the same
// model state and keep the same per-microbatch activations: only the schedule's in-flight count
// differs. The estimate evaluates one of each kind (a 16-stage pipeline: 3 kinds).
struct StageKind {
  bool valid = false;
  double dense = 0, moe = 0;
  StageState state;
  StageMicrobatch micro;
  double dense_params = 0, routed_params = 0;
};

// Megatron Core's MoE dispatcher on a stage (activations.cpp, "MoE at scale"), per moment:
//  - forward: one MoE layer's transient buffers (moe_dispatch_transient_bytes), alive while that
//    layer runs; at the end of the forward passes in flight they are the last MoE layer's, which
//    runs before the output layer and the loss save anything (GPTModel's decoder, then
//    _postprocess), so on the last stage they sit beside the activations less one microbatch's
//    loss chunk (MTP, output layer, loss), and never beside the loss's own transient (which comes
//    after);
//  - backward: when recomputation re-runs an MoE layer's forward (full recompute, or selective with
//    the moe module: the dispatcher runs again inside the checkpoint), the same buffers on top of
//    the recomputed working set; backward's own gradients through the dispatcher are not counted,
//    as a dense layer's are not;
//  - every moment: what the dispatcher object keeps of each MoE layer until its next forward, and
//    after backward (the optimizer step) the permutation indices as well; the all-gather
//    dispatcher's global buffer of gathered tokens, once per GPU; the router's expert bias and
//    token count per expert (moe_router_buffer_bytes), per MoE layer;
//  - backward, the all-gather dispatcher: one MoE layer's gradients of the gathered tokens
//    (moe_dispatch_backward_bytes), beside the working set of the layer's backward.
struct StageMoe {
  double forward = 0, recompute = 0, backward = 0, state = 0, state_after_backward = 0;
  // What the dispatchers' kept probabilities hold of the recomputed graphs
  // (moe_recompute_graph_bytes): every checkpoint's after the backward (in state_after_backward),
  // and at the stage's first layer's backward those of the checkpoints above it.
  double recompute_graph = 0, recompute_graph_above_first = 0;
};

StageMoe stage_moe(const Config& c, const StageActivation& act, bool include_activation, bool last) {
  StageMoe m;
  if (!include_activation || !(act.moe_layers > 0)) return m;
  const double transient = moe_dispatch_transient_bytes(c);
  m.forward = std::max(0.0, transient - (last ? act.loss_chunk : 0.0));
  if (moe_layer_checkpointed(c)) m.recompute = transient;
  m.backward = moe_dispatch_backward_bytes(c);
  const double buffer = moe_gather_buffer_bytes(c);
  const double router = moe_router_buffer_bytes(c);  // the expert bias and its token count
  m.state = act.moe_layers * (moe_dispatcher_state_bytes(c, false) + router) + buffer;
  const double per_checkpoint = moe_recompute_graph_bytes(c);
  m.recompute_graph = act.moe_checkpoints * per_checkpoint;
  m.recompute_graph_above_first = std::max(0.0, act.moe_checkpoints - 1) * per_checkpoint;
  m.state_after_backward = act.moe_layers * (moe_dispatcher_state_bytes(c, true) + router) + buffer +
                           m.recompute_graph;
  return m;
}

// ---- Reserved memory by mechanism: the step's allocations through the caching allocator ----
//
// The allocation sequence of two training steps on one GPU of stage r, built from what the
// estimator already knows, in the order a step runs it; simulate_caching_allocator (the model of
// PyTorch's allocator, caching_allocator.hpp) turns it into the peak reserved bytes. Two steps,
// because the second step's reuse of the blocks the first one cached (activations, gradients
// freed by zero_grad, temporaries) is what decides reserved.
//
// Granularity, chosen to be as fine as the estimator's own figures and no finer:
//  - Model state: one allocation per parameter tensor and tensor class (weights, master weights,
//    frozen weights, adapters, gradients, optimizer states), its bytes the class's bytes of its
//    part (dense, embedding, expert) shared over that part's tensors by their elements: torch
//    keeps one storage per parameter, its .grad and each optimizer state (ddp, fsdp2's sharded
//    DTensors). Megatron's and DeepSpeed's flat buffers are coarser than this; not modelled.
//    What the rows hold beyond that (DDP buckets, the library workspaces) is one allocation each.
//  - Saved activations: one allocation per saved tensor of each layer (activations.cpp's
//    SavedTensors of a dense layer, standing for every layer of the stage, MoE ones included,
//    scaled to the stage's per-microbatch figure), microbatch after microbatch for
//    the microbatches in flight (rounded up), freed by backward in reverse layer order.
//  - The estimator's lumped figures stay lumped where their tensors are not known: the
//    forward-to-backward buffers (forward_backward_only: FSDP's gathered layers, autocast's
//    weight copies; per parameter for FSDP2 at zero_stage 2 or under pipelining), backward's
//    working set (recomputation, temporaries, MoE dispatch) and the optimizer's temporaries are
//    one allocation each, at the moment evaluate_stage counts them; the loss's transient is
//    its tensors. A lump that a small tensor of the previous step was carved from cannot be held
//    again, so the model reserves a second one where PyTorch, allocating the real tensors, does
//    not: a lump errs high.
//  - Streams: FSDP2's sharded gradients are made on the reduce-scatter stream (below); the rest
//    on the default stream.
// Gradients freed between steps (gradients_start_each_step_empty) are made layer by layer in
// backward and freed after the optimizer step; the others exist from the first backward on.
// Optimizer states are created by the first step. The event count is bounded (k_max_events):
// beyond it, layers are taken together in groups, each group's tensors of one name one allocation.
struct StageSequenceInputs {
  const Config* c;
  const PipelineLayout* layout;
  int64_t r;
  const StageState* state;
  const StageActivation* act;
  double loss_transient, backward_working, moe_forward;
  double kept_output = 0;  // the model's output the loop holds from the loss to the step's end
};

constexpr size_t k_max_events = 16384;
// A pipeline's stages are each simulated (trainmem_estimate): their bound shrinks to share
// k_pipeline_events when there are more than 64 stages, never below k_min_stage_events, so that
// an estimate's simulations stay linear in the stage count at a bounded cost per stage.
constexpr size_t k_pipeline_events = 64 * k_max_events;
constexpr size_t k_min_stage_events = 256;

// allocator_fragmentation above 0: reserved is the factor over the allocated peak alone, and no
// stage is simulated (unset: the larger of the 5 % factor and the simulation; 0: the simulation).
bool factor_alone(const Config& c) { return c.allocator_fragmentation && *c.allocator_fragmentation > 0; }

// The last sequence simulated in an estimate and its peak reserved: a stage whose sequence is
// the same event for event (the middle stages of a pipeline whose schedule keeps as many
// microbatches in flight on each, gpipe, or where the microbatch count caps them) takes its
// result without running it again. Exact: the comparison is of the whole sequence.
struct SimulationMemo {
  std::vector<AllocatorEvent> events;
  AllocatorOptions options;
  double reserved = 0;
  bool valid = false;
};

bool same_events(std::span<const AllocatorEvent> a, std::span<const AllocatorEvent> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const AllocatorEvent& x, const AllocatorEvent& y) {
    return x.kind == y.kind && x.stream == y.stream && x.id == y.id && x.bytes == y.bytes;
  });
}

// FSDP1's wrap (fsdp_version 1 at zero_stage 3), which runs before the first step and leaves its
// blocks in the caching allocator: the units in the order FullyShardedDataParallel builds them
// (the auto-wrap policy wraps children first: the decoder layers in order, the root, the
// embedding and output layer with the final norm, last), each the bytes of its parameters as
// they arrive on the GPU whole, one allocation per tensor group of a layer. For each unit
// (pytorch/pytorch torch/distributed/fsdp/_init_utils.py @ 00743e70eda2c19bf968748cb3e9c3630594b26e,
// _init_param_handle_from_module): the module's parameters come to the GPU whole, moved from
// the CPU to device_id (_move_module_to_device) or materialised there by param_init_fn (a
// meta-device module on the ranks that receive sync_module_states' broadcast); FlatParamHandle
// concatenates them into one unsharded flat parameter (torch.cat in
// flatten_tensors_into_flat_param); handle.shard() clones this rank's chunk and frees the
// unsharded storage (_flat_param.py, shard: orig_storage._resize_(0)); the original parameters
// die only when _init_param_handle_from_params returns, since its `params` list holds them; with
// CPUOffload(offload_params) the shard then moves to the CPU (flat_param_to(cpu_device)).
// sync_module_states' broadcast flattens at most a bucket of the unit's parameters before the
// flat parameter exists, so the flat parameter, at least as large, takes its block: not counted.
// Adapters form units of their own (fsdp_qlora train.py's lambda policy, PEFT's
// fsdp_auto_wrap_policy) of a few MiB: not counted. Bytes are the weights as stored (a QLoRA
// base's packed NF4 data; bitsandbytes' QuantState stays out of the flat parameter).
// `master`: the sharded flat parameter is the fp32 master copy (main_params_dtype; FSDP1 keeps
// the model's dtype in the flat parameter and makes MixedPrecision's low-precision copy per
// unshard), otherwise the weights in params_dtype (expert_params_dtype for experts).
// `rounds`: the sequence's rounds of layers (simulated_reserved_bytes), one decoder unit each, so
// that the wrap keeps to the sequence's event bound (a round is several layers beyond it).
std::vector<std::vector<double>> fsdp1_wrap_units(const Config& c, const Inventory& inv, int64_t rounds, bool master) {
  std::vector<std::vector<double>> units;
  if (!(c.framework == Framework::fsdp2 && c.fsdp_version == 1 && c.zero_stage == 3 &&
        c.pipeline_model_parallel_size == 1 && !c.fsdp_embedding_units))
    return units;
  const bool peft = c.peft_on();
  const auto whole_bytes = [&](const Tensors& t) {
    if (peft) return stored_bytes(c, t) - replicated_quant_state_bytes(c, t);
    const Dtype stored = master ? c.main_params_dtype : t.part == Part::expert ? c.expert_params_dtype : c.params_dtype;
    return bytes_per_element(stored) * t.params();
  };
  const int64_t decoder_units = std::max<int64_t>(1, rounds);
  units.assign(size_t(decoder_units) + 1, {});
  for (int i = 0; i < inv.n; ++i) {
    const Tensors& t = inv.items[size_t(i)];
    if (t.adapter) continue;
    const double bytes = whole_bytes(t);
    if (!(bytes > 0)) continue;
    if (t.part == Part::embedding) {
      // The root's tensors one by one (embedding, output layer, final norm).
      for (double k = 0; k < t.count; ++k) units.back().push_back(bytes / t.count);
    } else {
      for (auto& unit : std::span(units).first(size_t(decoder_units))) unit.push_back(bytes / double(decoder_units));
    }
  }
  return units;
}

double simulated_reserved_bytes(const StageSequenceInputs& in, SimulationMemo* memo = nullptr) {
  const Config& c = *in.c;
  const StageState& st = *in.state;
  const StageActivation& act = *in.act;
  const Shard gpu{double(c.tensor_model_parallel_size), double(c.expert_model_parallel_size),
                  double(c.expert_tensor_parallel_size)};
  const Inventory inv = stage_inventory(c, gpu, *in.layout, in.r);
  const StateBreakdown& b = st.gpu;
  const bool freed = st.gradients_freed_between_steps > 0;
  const double layers = std::max<double>(1, double(in.layout->count(in.r)));

  // Elements of each part, the model's own tensors and the adapters apart.
  double own[3] = {0, 0, 0}, adapter[3] = {0, 0, 0};
  for (int i = 0; i < inv.n; ++i) {
    const Tensors& t = inv.items[size_t(i)];
    (t.adapter ? adapter : own)[int(t.part)] += t.params();
  }
  const auto part_of = [](const PartBytes& row, Part p) {
    return p == Part::dense ? row.dense : p == Part::embedding ? row.embedding : row.expert;
  };

  // One buffer per thread, cleared and reused: a pipeline's stages and a planner's candidates do
  // not fault in a fresh one for each sequence.
  static thread_local std::vector<AllocatorEvent> events;
  events.clear();
  events.reserve(4096);
  int32_t next_id = 0;
  // A tensor beyond any device (above 2^44 bytes, 16 TiB) is not simulated: the run fits no GPU,
  // and the factor's figure stands (the caller takes the larger). The bound also keeps the
  // simulator's byte sums (a few times k_max_events tensors) far inside uint64_t.
  constexpr double k_largest_simulated = 17592186044416.0;
  bool beyond_any_device = false;
  const auto alloc = [&](double bytes, uint8_t stream = 0) {
    const int32_t id = next_id++;
    if (!(bytes <= k_largest_simulated)) beyond_any_device = true;
    else if (bytes >= 1) events.push_back(AllocatorEvent::allocate(id, uint64_t(std::ceil(bytes)), stream));
    return id;
  };
  const auto release = [&](int32_t id) { events.push_back(AllocatorEvent::free(id)); };
  // A free after use on another stream (record_stream): cached only once complete_pending says
  // the work before it has completed.
  const auto release_after_use = [&](int32_t id) { events.push_back(AllocatorEvent::free_after_use(id)); };

  // Layer groups: how many of the stage's layers one round of allocations covers.
  double tensors_per_layer = 0;
  for (int i = 0; i < inv.n; ++i) tensors_per_layer += inv.items[size_t(i)].count / layers;
  SavedTensors dense_layer, moe_layer, embedding, loss;
  const bool full = c.recompute_granularity == RecomputeGranularity::full;
  if (!full) {
    layer_activation_bytes(c, false, LayerRecompute::policy, &dense_layer);
    if (c.is_moe()) layer_activation_bytes(c, true, LayerRecompute::policy, &moe_layer);
  } else {
    layer_activation_bytes(c, false, LayerRecompute::checkpointed, &dense_layer);
    moe_layer = dense_layer;
  }
  if (in.r == 0) embedding_activation_bytes(c, &embedding);
  if (in.r == in.layout->p - 1) output_activation_bytes(c, &loss);
  const double microbatches = std::max(1.0, std::ceil(act.in_flight - 1e-9));
  const double saved_per_layer = double(std::max(dense_layer.size(), moe_layer.size()));
  const double estimate = 8 * tensors_per_layer * layers + 4 * microbatches * saved_per_layer * layers;
  const double stage_events = std::max(double(k_min_stage_events),
                                       std::min(double(k_max_events),
                                                double(k_pipeline_events) / double(std::max<int64_t>(1, in.layout->p))));
  const double group = std::max(1.0, std::ceil(estimate / stage_events));
  const int64_t rounds = int64_t(std::ceil(layers / group));
  // With every layer in one round and still too many microbatches in flight for the bound (a
  // pipeline of thousands of stages), the microbatches after the first are taken together in
  // groups, each group's tensors of one name one allocation (freed together at the end of the
  // backward, as each of them is). The first stays alone: backward frees its tensors layer by
  // layer. Elsewhere each microbatch is its own (later_group 1).
  const double later = microbatches - 1;
  const double later_group = rounds == 1 && 4 * later * saved_per_layer > stage_events
                                 ? std::ceil(4 * later * saved_per_layer / stage_events)
                                 : 1.0;

  // One round's share of a tensor class: each item's tensors of that round (count / rounds of
  // them, group times larger when layers are grouped), or for items of fewer tensors than rounds
  // (embedding, output layer) all of them in the round their position falls in.
  // The rows' bytes that forward_backward_only also counts (FSDP2's gathered weights at
  // zero_stage 2 sit in the weights row, unsharded gradients under pipelining in the gradients
  // row) are allocated once, as that lump: the per-tensor rows are scaled down to what remains.
  const double state_budget = b.total() - b.optimizer_states.total() - b.adapter_optimizer_states.total() -
                              st.forward_backward_only;
  const double per_tensor_rows = b.weights.total() + b.master_weights.total() + b.frozen_weights.total() +
                                 b.adapter_weights.total() + b.adapter_master_weights.total() +
                                 b.gradients.total() + b.adapter_gradients.total();
  const double row_scale = per_tensor_rows > state_budget && per_tensor_rows > 0
                               ? std::max(0.0, state_budget) / per_tensor_rows : 1.0;
  // FSDP2 makes a unit's sharded gradients as views of one tensor, reduce_output, allocated on
  // the reduce-scatter stream (pytorch/pytorch torch/distributed/fsdp/_fully_shard/
  // _fsdp_collectives.py @ 010ae4a89516fa3be548ab16dff711414ec12d0b, foreach_reduce:
  // reduce_output = reduce_scatter_comm.allocate(...) inside `with
  // device_handle.stream(reduce_scatter_stream)`, then new_sharded_grad = torch.as_strided(
  // grad_output, ...); a reduce_dtype other than the parameters' casts it in the same stream,
  // post_reduce_stream). Its blocks are that stream's (caching_allocator.hpp, streams): the
  // default stream's activations and temporaries never share them. One allocation per round,
  // the round's layers standing for their units. Not under pipelining, where the gradients row
  // holds the unsharded gradients autograd accumulates on the default stream.
  constexpr uint8_t k_reduce_scatter_stream = 2;
  const bool gradients_on_reduce_stream = c.framework == Framework::fsdp2 && c.pipeline_model_parallel_size == 1;
  double fused_bytes = 0;
  const bool range_sharded = c.framework == Framework::megatron && c.use_distributed_optimizer;
  const Groups groups = data_parallel_groups(c);
  const double states_per_parameter =
      c.optimizer == Optimizer::adam || c.optimizer == Optimizer::adamw || c.optimizer == Optimizer::adam8bit ? 2 : 1;
  const auto class_round = [&](const PartBytes& row, bool adapters, int64_t round, std::vector<int32_t>* ids,
                               bool fused = false) {
    fused_bytes = 0;
    for (int i = 0; i < inv.n; ++i) {
      const Tensors& t = inv.items[size_t(i)];
      if (t.adapter != adapters) continue;
      const double part_elements = (adapters ? adapter : own)[int(t.part)];
      if (!(part_elements > 0)) continue;
      const bool optimizer_row = &row == &b.optimizer_states || &row == &b.adapter_optimizer_states;
      const bool master_row = &row == &b.master_weights || &row == &b.adapter_master_weights;
      const double per_tensor = part_of(row, t.part) * t.elements() / part_elements * (optimizer_row ? 1.0 : row_scale);
      if (!(per_tensor > 0)) continue;
      const double per_round = t.count / double(rounds);
      double n = 0, size = per_tensor;
      if (per_round >= 1) {
        n = std::floor(t.count * double(round + 1) / double(rounds)) - std::floor(t.count * double(round) / double(rounds));
      } else if (round == 0) {
        n = t.count;
      }
      if (per_round >= 1 && group > 1) { size *= n; n = n > 0 ? 1 : 0; }
      // Megatron's distributed optimizer shards the buffers by contiguous ranges (NVIDIA/Megatron-LM
      // megatron/core/optimizer/distrib_optimizer.py @ 001199898c4badd01eaf0785c212d8ed7ce83042,
      // _build_model_gbuf_range: each bucket split into DP equal pieces, a parameter's shard its
      // intersection with the rank's piece; _build_model_and_main_param_groups:
      // shard_model_param.clone().float() over that range), so a rank's fp32 main parameters and
      // states are mostly whole parameters, not a 1/DP slice of each: here whole tensors, as many
      // as the rank's share holds, one slice for the rest at the class's last round.
      double rest = 0;
      if (range_sharded && (master_row || optimizer_row) && per_round >= 1 && group <= 1) {
        const double shards = t.part == Part::expert ? groups.expert : groups.dense;
        if (shards > 1) {
          const double before = std::floor(t.count * double(round) / double(rounds));
          const double after = std::floor(t.count * double(round + 1) / double(rounds));
          size = per_tensor * shards;
          n = std::floor(after / shards) - std::floor(before / shards);
          if (round == rounds - 1) rest = (t.count / shards - std::floor(t.count / shards)) * size;
        }
      }
      if (fused) { fused_bytes += size * n; continue; }
      // Each optimizer state is a tensor of its own: torch's Adam and AdamW make exp_avg and
      // exp_avg_sq, each torch.zeros_like(p) (pytorch/pytorch torch/optim/adam.py @
      // dc80ccded5385cca3e777472d64cfe3d874fad89, Adam._init_group), bitsandbytes' 8-bit Adam
      // state1 and state2; the others one (momentum) or factored ones, left as one.
      if (optimizer_row && states_per_parameter > 1) {
        size /= states_per_parameter;
        n *= states_per_parameter;
        rest /= states_per_parameter;
      }
      for (double k = 0; k < n; ++k) {
        const int32_t id = alloc(size);
        if (ids) ids->push_back(id);
      }
      for (double k = 0; rest >= 1 && k < (optimizer_row ? states_per_parameter : 1); ++k) {
        const int32_t id = alloc(rest);
        if (ids) ids->push_back(id);
      }
    }
    if (fused && fused_bytes >= 1) {
      const int32_t id = alloc(fused_bytes, k_reduce_scatter_stream);
      if (ids) ids->push_back(id);
    }
  };
  const auto whole_class = [&](const PartBytes& row, bool adapters, std::vector<int32_t>* ids) {
    for (int64_t k = 0; k < rounds; ++k) class_round(row, adapters, k, ids);
  };

  const bool per_parameter_buffers = c.framework == Framework::fsdp2 &&
                                     (c.zero_stage == 2 || c.pipeline_model_parallel_size > 1) &&
                                     st.forward_backward_only > 0;
  PartBytes buffer_row{};
  if (per_parameter_buffers) {
    const double total = own[0] + own[1] + own[2];
    // class_round scales the state rows by row_scale: undo it for this row.
    const double unscale = row_scale > 0 ? st.forward_backward_only / row_scale / total : 0.0;
    if (total > 0) buffer_row = PartBytes{own[int(Part::dense)] * unscale, own[int(Part::embedding)] * unscale,
                                          own[int(Part::expert)] * unscale};
  }
  // FSDP1's wrap before the training (fsdp1_wrap_units): per unit its whole parameters, the
  // unsharded flat parameter and this rank's shard, then the flat parameter and the originals
  // freed. Each shard stays: it is the unit's sharded weights for the rest of the run (a PEFT
  // base's frozen row, the master row when there is one, the weights row otherwise), which the
  // setup below then does not allocate again; with offload_params it moves to the CPU. No
  // empty_cache follows the wrap (fsdp_qlora's train.py, accelerate's prepare), so every block it
  // made stays reserved.
  const bool master_shards = !c.peft_on() && b.master_weights.total() > 0;
  const std::vector<std::vector<double>> wrap_units = fsdp1_wrap_units(c, inv, rounds, master_shards);
  const PartBytes* wrapped_row = wrap_units.empty() ? nullptr
                                 : c.peft_on()      ? &b.frozen_weights
                                 : master_shards    ? &b.master_weights
                                                    : &b.weights;
  double wrapped_shards = 0;
  {
    const double shard_count = data_parallel_groups(c).dense;
    std::vector<int32_t> params;
    for (const std::vector<double>& unit : wrap_units) {
      params.clear();
      double sum = 0;
      for (double bytes : unit) { params.push_back(alloc(bytes)); sum += bytes; }
      const int32_t flat = alloc(sum);
      const int32_t shard = alloc(sum / shard_count);
      release(flat);
      for (int32_t id : params) release(id);
      if (c.offload_params) release(shard);
      else wrapped_shards += sum / shard_count;
    }
  }
  // Megatron's DDP (NVIDIA/Megatron-LM megatron/core/distributed/param_and_grad_buffer.py @
  // 001199898c4badd01eaf0785c212d8ed7ce83042, _ParamAndGradBuffer.__init__): the model is built
  // first, each trainable parameter a tensor of its own; DDP then allocates each buffer's
  // grad_data (torch.zeros(numel, grad_dtype)) and, with the distributed optimizer, param_data
  // (torch.zeros(numel, param_dtype)), copies every parameter into its slice of param_data and
  // frees the original (`del old_param_data`); main_grad is a view of grad_data, so no gradient is
  // made in backward. One buffer for the dense and embedding parameters, one for the experts
  // (their own data-parallel group). The originals' blocks stay cached, for whatever later fits in
  // them (the distributed optimizer's fp32 copies and states of whole parameters do not).
  const bool megatron_buffers = c.framework == Framework::megatron;
  const bool param_buffer = megatron_buffers && c.use_distributed_optimizer;
  std::vector<int32_t> originals;
  // Setup: the model state that lives through the run, and the library workspaces.
  // (Megatron's optimizer makes its fp32 main parameters after DDP has wrapped the model:
  // megatron/training/training.py setup_model_and_optimizer, get_model then get_megatron_optimizer.)
  for (const PartBytes* row : {&b.weights, &b.master_weights, &b.frozen_weights})
    if (row != wrapped_row && !(megatron_buffers && row == &b.master_weights))
      whole_class(*row, false, param_buffer && row == &b.weights ? &originals : nullptr);
  // What the wrapped row holds beyond the shards (bitsandbytes' QuantState, on every rank).
  if (wrapped_row) alloc(std::max(0.0, row_scale * wrapped_row->total() - wrapped_shards));
  for (const PartBytes* row : {&b.adapter_weights, &b.adapter_master_weights})
    if (!(megatron_buffers && row == &b.adapter_master_weights))
      whole_class(*row, true, param_buffer && row == &b.adapter_weights ? &originals : nullptr);
  if (megatron_buffers) {
    const auto buffers = [&](const PartBytes& own_row, const PartBytes& adapter_row) {
      alloc(row_scale * (own_row.dense + own_row.embedding + adapter_row.dense + adapter_row.embedding));
      alloc(row_scale * (own_row.expert + adapter_row.expert));
    };
    if (param_buffer) buffers(b.weights, b.adapter_weights);
    buffers(b.gradients, b.adapter_gradients);
    for (int32_t id : originals) release(id);
    whole_class(b.master_weights, false, nullptr);
    whole_class(b.adapter_master_weights, true, nullptr);
  }
  alloc(state_budget - row_scale * per_tensor_rows);  // buffers and whatever else lives through the run
  alloc(c.workspace_bytes);
  std::vector<int32_t> gradients, saved, loss_ids;
  bool have_gradients = megatron_buffers, have_states = false;
  const double saved_scale = [&] {
    double sum = 0;
    for (const SavedTensor& t : embedding) sum += t.bytes;
    for (const SavedTensor& t : dense_layer) sum += t.bytes * layers;  // the scale covers MoE layers too
    return sum > 0 ? (act.per_microbatch - act.loss_chunk) / sum : 0.0;
  }();
  const double loss_scale = [&] {
    double sum = 0;
    for (const SavedTensor& t : loss) sum += t.bytes;
    return sum > 0 ? act.loss_chunk / sum : 0.0;
  }();

  // FSDP1 at full shard (fsdp_version 1, zero_stage 3; StageState::fsdp1_unit): each unit's
  // unsharded flat parameter is allocated on the unshard stream (_runtime_utils.py @ 3ade90a6,
  // _unshard: `with state._device_handle.stream(unshard_stream): handle.unshard()`, whose
  // _alloc_padded_unsharded_flat_param allocates it) and freed after its use on the compute
  // stream with record_stream (_flat_param.py @ fe03cf69, _free_unsharded_flat_param), so its
  // block waits for its event. limit_all_gathers (True by default) bounds the waiting: _reshard
  // records and enqueues a free event after each free, and _unshard, when two are queued,
  // dequeues the oldest and event.synchronize()s it before allocating (_limiter_utils.py @
  // e6401a21c0a1c8bad6dc3a8a27d90fd3d555320a, _FreeEventQueue, _max_num_inflight_all_gathers = 2):
  // here complete_pending(1) before each unit's allocation, every pending free but the newest
  // completing (a host wait on the compute stream's later event finds the earlier ones done). The
  // unit's unsharded gradient, made by autograd on the compute stream, is record_stream'ed on the
  // post-backward stream that reduce-scatters it (_post_backward_hook: _no_dispatch_record_stream(
  // autograd_computed_grad, post_backward)): pending in the same order, completing at the same
  // host waits (no later sync orders the post-backward stream before them: erring high, it is
  // not reused sooner). The reduce_dtype copy and the sharded gradient are made on the
  // post-backward stream. These leave the lumps: the gathered unit and the gradient buffers
  // (forward_backward_only) and the backward prefetch (backward's working set).
  const auto& unit = st.fsdp1_unit;
  const bool fsdp1_units = unit.gather > 0;
  constexpr uint8_t k_unshard_stream = 1;
  const double fsdp1_lump = fsdp1_units ? unit.gather + unit.gradient + unit.reduce_copy : 0.0;
  const double backward_lump = fsdp1_units ? std::max(0.0, in.backward_working - unit.gather) : in.backward_working;
  // With CPUOffload(offload_params) each unshard first copies the unit's CPU shard to the GPU on
  // the pre-unshard stream (_flat_param.py @ fe03cf69, pre_unshard: `self.flat_param_to(
  // self.device, non_blocking=True)`, "This creates a new tensor distinct from any attributes",
  // run by _unshard under `stream(pre_unshard_stream)`), all-gathers from it, and drops it when
  // the unsharded flat parameter takes its place (_use_unsharded_flat_param): one shard-sized
  // block of a third stream per unshard, freed at once.
  constexpr uint8_t k_pre_unshard_stream = 3;
  const double offloaded_shard_share = c.offload_params ? 1.0 / data_parallel_groups(c).dense : 0.0;
  const auto unshard = [&](double bytes) {
    events.push_back(AllocatorEvent::complete_pending(1));
    const int32_t shard_copy = offloaded_shard_share > 0 ? alloc(bytes * offloaded_shard_share, k_pre_unshard_stream) : -1;
    const int32_t unsharded = alloc(bytes, k_unshard_stream);
    if (shard_copy >= 0) release(shard_copy);
    return unsharded;
  };
  // The root's unsharded flat parameter (fsdp2_buffers counts it in the embedding buffers).
  const double fsdp1_root = fsdp1_units ? b.buffers.embedding : 0.0;

  for (int step = 0; step < 2; ++step) {
    // The forward-to-backward buffers. FSDP2 with zero_stage 2 (reshard_after_forward=False)
    // holds every parameter unsharded, and under pipelining every parameter's unsharded
    // gradient, each a tensor of its own (FSDPParam.alloc_all_gather_outputs per parameter in
    // foreach_all_gather_copy_out, _fsdp_collectives.py @ 010ae4a8; to_accumulated_grad_if_needed
    // per parameter, _fsdp_param.py): spread over the stage's tensors by their elements, layer
    // round by layer round, as the state rows are. As one lump, the block the optimizer's first
    // states are carved from could not hold it in the next step (TT-T5-b: a second 28.6 GiB).
    // Elsewhere they stay one allocation.
    std::vector<int32_t> gathered;
    if (per_parameter_buffers) {
      for (int64_t k = 0; k < rounds; ++k) class_round(buffer_row, false, k, &gathered);
    } else {
      gathered.push_back(alloc(std::max(0.0, st.forward_backward_only - fsdp1_lump - fsdp1_root)));
    }
    // FSDP1's root unit (the embedding and output layer) is unsharded on the unshard stream too
    // (_root_pre_forward, then _pre_forward_unshard: the same _unshard as every unit), and kept
    // unsharded until its post-backward frees it with record_stream (_post_forward_reshard
    // leaves the root: `free_unsharded_flat_param = not state._is_root and ...`): blocks the
    // default stream cached, such as the wrap's, cannot hold it.
    const int32_t root_unsharded = fsdp1_root > 0 ? unshard(fsdp1_root) : -1;
    const int32_t pipeline = alloc(act.pipeline_step);
    // Forward: every microbatch in flight saves its layers' tensors.
    saved.clear();
    for (double m = 0; m < microbatches;) {
      const double together = m == 0 ? 1.0 : std::min(later_group, microbatches - m);
      for (const SavedTensor& t : embedding) saved.push_back(alloc(t.bytes * saved_scale * together));
      for (int64_t k = 0; k < rounds; ++k) {
        const double in_round = std::min(group, layers - double(k) * group);
        const int32_t unit_params = fsdp1_units ? unshard(unit.gather) : -1;
        for (const SavedTensor& t : dense_layer) saved.push_back(alloc(t.bytes * saved_scale * in_round * together));
        if (fsdp1_units) release_after_use(unit_params);
      }
      m += together;
    }
    loss_ids.clear();
    // The model's output, made before the loss's tensors and held to the step's end (model_output_kept).
    const int32_t kept_output = in.kept_output > 0 ? alloc(in.kept_output) : -1;
    for (const SavedTensor& t : loss) loss_ids.push_back(alloc(t.bytes * loss_scale));
    // The loss's backward temporaries are tensors of their own, each at most the size of the
    // largest tensor the loss saved (loss_transient_bytes, activations.cpp: PyTorch's
    // cross_entropy makes two or three fp32 tensors the size of the saved fp32
    // log-probabilities; the fused losses one tensor below it). As one lump, a block the
    // optimizer's small tensors were carved from in the step before could never hold it again,
    // and the allocator would reserve a second one (torchtitan, validation TT-T*: +12 to +21 %).
    if (in.loss_transient >= in.moe_forward) {
      double piece = 0;
      for (const SavedTensor& t : loss) piece = std::max(piece, t.bytes * loss_scale);
      const double n = piece > 0 ? std::max(1.0, std::ceil(in.loss_transient / piece - 1e-9)) : 1.0;
      std::vector<int32_t> pieces;
      for (double k = 0; k < n; ++k) pieces.push_back(alloc(in.loss_transient / n));
      for (int32_t id : pieces) release(id);
    } else {
      release(alloc(in.moe_forward));
    }
    // Backward: the loss chunk's first, then the layers' in reverse, making their gradients.
    for (int32_t id : loss_ids) release(id);
    const int32_t working = alloc(backward_lump);
    const bool make_gradients = freed || !have_gradients;
    if (make_gradients) gradients.clear();
    const size_t per_microbatch = embedding.size() + size_t(rounds) * dense_layer.size();  // the first's
    int32_t prefetched = -1;
    for (int64_t k = rounds - 1; k >= 0; --k) {
      // FSDP1: the unit (prefetched by the one after it, the last one unsharded here), the next
      // unit's prefetch (BACKWARD_PRE), then this unit's unsharded gradient.
      int32_t unit_params = -1, unit_gradient = -1;
      if (fsdp1_units) {
        unit_params = k == rounds - 1 ? unshard(unit.gather) : prefetched;
        prefetched = k > 0 ? unshard(unit.gather) : -1;
        unit_gradient = alloc(unit.gradient);
      }
      if (make_gradients) {
        class_round(b.gradients, false, k, &gradients, gradients_on_reduce_stream);
        class_round(b.adapter_gradients, true, k, &gradients, gradients_on_reduce_stream);
      }
      // The first microbatch's saved tensors of round k (the others are freed after it).
      const size_t from = size_t(embedding.size()) + size_t(k) * dense_layer.size();
      for (size_t j = 0; j < dense_layer.size() && from + j < per_microbatch; ++j) release(saved[from + j]);
      if (fsdp1_units) {
        release_after_use(unit_params);
        release(alloc(unit.reduce_copy, k_reduce_scatter_stream));
        release_after_use(unit_gradient);
      }
    }
    for (size_t j = 0; j < embedding.size() && j < per_microbatch; ++j) release(saved[j]);
    for (size_t j = per_microbatch; j < saved.size(); ++j) release(saved[j]);
    have_gradients = true;
    release(working);
    for (int32_t id : gathered) release(id);
    if (root_unsharded >= 0) release_after_use(root_unsharded);
    // The loop reads the loss on the host after backward (fsdp_qlora train.py @ 50efa1ef:
    // `ddp_loss[0] += loss.item() * bs * gradient_accumulation_steps` before optimizer.step();
    // transformers' Trainer tests torch.isnan(tr_loss_step) in a Python condition under its
    // default logging_nan_inf_filter): the host waits for the backward, so every block freed
    // after its use on another stream is free again before the next unshard.
    if (fsdp1_units) events.push_back(AllocatorEvent::complete_pending(0));
    // Optimizer step: the states at the first one, the temporaries, then zero_grad.
    if (!have_states) {
      whole_class(b.optimizer_states, false, nullptr);
      whole_class(b.adapter_optimizer_states, true, nullptr);
      have_states = true;
    }
    release(alloc(st.optimizer_temporary - st.fused_adam_unscaled));
    // FusedAdam's fp32 copies: one per parameter and narrow moment, layer by layer, all kept
    // until the group's kernel has run, then one parameter's bf16 write-back. Within the stage's
    // event bound as the layers are (k_max_events): beyond it, `per` layers' copies of a kind and
    // moment are one allocation.
    if (st.fused_adam_unscaled > 0) {
      std::vector<int32_t> copies;
      double rounds_of_kinds = 0, tensors = 0;
      for (const auto& kind : st.fused_adam_copies) {
        rounds_of_kinds = std::max(rounds_of_kinds, kind.count);
        tensors += kind.count * st.fused_adam_moments;
      }
      const double per = std::max(1.0, std::ceil(tensors / stage_events));
      for (double k = 0; k < rounds_of_kinds; k += per)
        for (const auto& kind : st.fused_adam_copies) {
          if (k >= kind.count) continue;  // this kind's matrices are all copied
          const double n = std::min(per, kind.count - k);
          for (int m = 0; m < st.fused_adam_moments; ++m) copies.push_back(alloc(n * kind.bytes / st.fused_adam_moments));
        }
      release(alloc(st.fused_adam_write_back));
      for (int32_t id : copies) release(id);
    }
    if (freed)
      for (int32_t id : gradients) release(id);
    if (kept_output >= 0) release(kept_output);
    release(pipeline);
  }
  // The run's PYTORCH_CUDA_ALLOC_CONF (expandable_segments: derived true for torchtitan's
  // launcher, resolve.cpp).
  AllocatorOptions options;
  options.expandable_segments = c.expandable_segments;
  if (beyond_any_device) return 0.0;
  if (memo && memo->valid && memo->options.expandable_segments == options.expandable_segments &&
      memo->options.max_split_size == options.max_split_size && same_events(memo->events, events))
    return memo->reserved;
  const double reserved = double(simulate_caching_allocator(events, options).reserved);
  if (memo) {
    memo->events.assign(events.begin(), events.end());
    memo->options = options;
    memo->reserved = reserved;
    memo->valid = true;
  }
  return reserved;
}

// The job's moments outside the steady step, each as its framework's code runs it (docs
// trainmem-profile.md §4, "The job's moments"). `model_state`: the stage's model state at rest
// with the library workspaces, as every step moment counts it.
struct JobMoments {
  double loading = 0, checkpoint_save = 0, evaluation = 0;
  // The evaluation's two phases, each with the state at rest: the decoder layers (an upper bound)
  // and the output layer with the loss (exact).
  double evaluation_layers = 0, evaluation_loss = 0;
  double evaluation_predictions = 0;  // at the kept predictions' concatenation (compute_metrics)
};
JobMoments job_moments(const Config& c, const StageState& state, double model_state, bool include_activation) {
  JobMoments job;
  // Loading a QLoRA model with transformers' from_pretrained and a bitsandbytes 4-bit config,
  // where each rank loads the whole model onto its own GPU (frameworks ddp, and deepspeed below
  // ZeRO-3, which partitions at load). Bnb4BitHfQuantizer.create_quantized_param
  // (huggingface/transformers src/transformers/quantizers/quantizer_bnb_4bit.py @
  // 009ba7ca964c0049263bb4ad5d9eceb3674aaa0f) takes each checkpoint tensor to the CPU
  // (param_value.to("cpu")) and builds bnb.nn.Params4bit(...).to(target_device), which quantises
  // on the GPU: Params4bit._quantize copies the 16-bit weight to the device
  // (w = self.data.contiguous().to(device)) and quantize_4bit writes the packed data and one fp32
  // absmax per block of 64 before double quantisation compresses it
  // (bitsandbytes-foundation/bitsandbytes bitsandbytes/nn/modules.py and functional.py @ 0.48.0
  // 406fb6aa); the 16-bit copy dies when _quantize returns. One tensor at a time, so the moment
  // is the model's weights (counted as they are at rest, a kbit_upcast fp32 included: the upcast
  // comes after loading, so this is high) and one 16-bit copy of the largest NF4 linear with its
  // fp32 absmax. The adapters, their gradients and optimizer states come after loading.
  const bool hf = c.model_implementation == ModelImplementation::hf_transformers;
  const bool whole_model_per_gpu =
      c.framework == Framework::ddp || (c.framework == Framework::deepspeed && c.zero_stage < 3);
  if (c.peft == Peft::qlora && hf && whole_model_per_gpu && state.largest_nf4_elements > 0) {
    const double n = state.largest_nf4_elements;
    const StateBreakdown& st = state.gpu;
    // Autocast's weight copies are made by the forward, not by loading.
    const double base = st.weights.total() + st.frozen_weights.total();
    job.loading = base + n * bytes_per_element(unquantized_dtype(c)) + 4 * std::ceil(n / 64);
  }
  // LLM.int8 (params_dtype int8): Int8Params._quantize makes an fp16 copy of each weight on the
  // GPU (`B = self.data.contiguous().to(device=device, dtype=torch.float16)`), quantises it to CB
  // and SCB, and drops it (bitsandbytes nn/modules.py @ 95f9af309d4d5793847169c39288dcd3fcbdf564):
  // one tensor at a time, so the model at rest and one fp16 copy of the largest int8 linear.
  if (c.peft == Peft::qlora && hf && whole_model_per_gpu && state.largest_int8_elements > 0) {
    const StateBreakdown& st = state.gpu;
    job.loading = st.weights.total() + st.frozen_weights.total() + 2 * state.largest_int8_elements;
  }
  // Saving a full state dict under fsdp2 (torchtune's and transformers' models; torchtitan saves
  // sharded, through torch.distributed.checkpoint). torchtune's gather_cpu_state_dict
  // (pytorch/torchtune torchtune/training/_distributed.py @ 0696355d852611de9e136b4d236c08d2b46d25b5)
  // takes one parameter at a time: param.full_tensor() all-gathers it whole on the GPU (an NF4
  // weight through _gather_nf4_tensor, then param.to(param.dtype) dequantises it there), and
  // param.cpu() copies it out, the GPU copy dying with the next iteration; its full optimizer
  // state dict (get_full_optimizer_state_dict, StateDictOptions(full_state_dict=True,
  // cpu_offload=True)) gathers each state tensor the same way. The checkpoint is taken between
  // steps: zero_grad(set_to_none=True) has freed the gradients and FSDP2 has resharded every
  // layer (forward_backward_only). So: the model state at rest without gradients, plus the
  // largest tensor whole (largest_gathered_bytes; a parameter's two Adam states are taken
  // together, high by one). Pipelined runs keep unsharded gradients and their own buffers: not
  // modelled.
  const bool full_state_dict = c.model_implementation == ModelImplementation::torchtune || hf;
  if (c.framework == Framework::fsdp2 && full_state_dict && c.pipeline_model_parallel_size == 1) {
    const StateBreakdown& st = state.gpu;
    const double gradients = st.gradients.total() + st.adapter_gradients.total();
    job.checkpoint_save =
        std::max(0.0, model_state - gradients - state.forward_backward_only) + state.largest_gathered_bytes;
  }
  // Evaluation between steps (activations.cpp evaluation_forward_bytes: transformers' Trainer
  // evaluates from _maybe_log_save_evaluate, after optimizer.step() and model.zero_grad(), so the
  // gradients zero_grad frees are gone; trainer.py @ 000945a9b726d87a93e61e873b88ff8f3cd411b5). The
  // model state otherwise as at rest, with the layers FSDP or ZeRO-3 gather for the forward. At a
  // decoder layer a QLoRA linear's dequantised weight (MatMul4Bit.forward, nf4_dequant_bytes) sits
  // beside its forward (an LLM.int8 linear's forward transients over the evaluation batch,
  // int8_forward_bytes); a quantised output layer's, beside the final hidden state and the logits
  // its matmul writes, before the loss exists.
  const EvaluationForward ev = include_activation ? evaluation_forward_bytes(c) : EvaluationForward{};
  if (ev.loss > 0) {
    const StateBreakdown& st = state.gpu;
    const double freed = zero_grad_frees_gradients(c) ? st.gradients.total() + st.adapter_gradients.total() : 0;
    const double eval_share = double(c.eval_micro_batch_size) / double(c.micro_batch_size);
    const double at_layer = ev.layers + nf4_dequant_bytes(c, state.largest_nf4_elements) + state.int8_forward * eval_share;
    const double at_output_layer =
        state.output_dequant > 0 ? ev.hidden + state.output_dequant + ev.logits + ev.kv_cache : 0;
    const double at_rest = std::max(0.0, model_state - freed);
    // compute_metrics' kept predictions (evaluation_predictions_bytes): the earlier steps' beside
    // the last step's forward, and the concatenations after it.
    const EvaluationPredictions kept = evaluation_predictions_bytes(c);
    job.evaluation_layers = at_rest + kept.held + at_layer;
    job.evaluation_loss = at_rest + kept.held + std::max(ev.loss, at_output_layer);
    job.evaluation_predictions = kept.at_add > 0 ? at_rest + kept.at_add : 0;
    job.evaluation = std::max({job.evaluation_layers, job.evaluation_loss, job.evaluation_predictions});
  }
  return job;
}

// `simulate`: run the caching allocator's simulation for the reserved figure (trainmem_estimate
// asks it for every stage); `memo`: the estimate's last simulated sequence (SimulationMemo).
StageResult evaluate_stage(const Config& c, const PipelineLayout& layout, int64_t r, const LayerSize& largest_layer,
                           bool include_activation, Trace* trace, StageKind* middle = nullptr, bool simulate = true,
                           SimulationMemo* memo = nullptr) {
  StageResult out;
  const Shard gpu{double(c.tensor_model_parallel_size), double(c.expert_model_parallel_size),
                  double(c.expert_tensor_parallel_size)};
  const bool first = r == 0, last = r == layout.p - 1;
  // With full recompute the kept bytes depend on where MoE layers sit in a chunk: no sharing.
  // A per-stage list may give ranks of equal totals unequal chunks (which the interleaved
  // schedule weighs differently): no sharing either.
  const bool shareable = middle && !first && !last && !trace &&
                         c.recompute_granularity != RecomputeGranularity::full && c.pipeline_stage_layers.empty();
  const StageLayers layers = shareable ? stage_layers(c, layout, r) : StageLayers{};
  StageParams& s = out.summary;
  if (shareable && middle->valid && middle->dense == layers.dense && middle->moe == layers.moe) {
    out.state = middle->state;
    s.dense = middle->dense_params;
    s.routed = middle->routed_params;
    if (include_activation) out.activation = stage_activation(c, layout, r, middle->micro);
  } else {
    const Inventory inv = stage_inventory(c, gpu, layout, r);
    out.state = stage_state(c, inv, largest_layer, trace);
    const Inventory whole = stage_inventory(c, Shard{}, layout, r);
    s.dense = whole.params(Part::dense) + whole.params(Part::embedding);
    s.routed = whole.params(Part::expert);
    StageMicrobatch micro;
    if (include_activation) {
      micro = stage_microbatch(c, layout, r);
      out.activation = stage_activation(c, layout, r, micro);
    }
    if (shareable) *middle = StageKind{true, layers.dense, layers.moe, out.state, micro, s.dense, s.routed};
  }
  s.num_layers = layout.count(r);
  s.weight_and_optimizer_bytes = out.state.gpu.total();
  if (include_activation) {
    s.has_activation = true;
    s.activation_bytes = out.activation.bytes;
    s.microbatches_in_flight = int64_t(std::ceil(out.activation.in_flight));
  }
  // Every moment holds the model state and the library workspaces, which stay allocated once
  // created (workspace_bytes).
  const double model_state = s.weight_and_optimizer_bytes + c.workspace_bytes;
  const StageMoe moe = stage_moe(c, out.activation, include_activation, last);
  if (moe.state > 0 && c.moe_token_dispatcher_type == MoeTokenDispatcher::allgather) {
    note(trace, "trainmem.moe_dispatch_transient", moe_dispatch_transient_bytes(c),
         "one MoE layer's forward (allgather): gathered probs + max(P + O + U, U + its cast + R)");
    note(trace, "trainmem.moe_dispatch_backward", moe.backward,
         "one MoE layer's backward (allgather): gradients of the gathered tokens");
    note(trace, "trainmem.moe_dispatcher_state", moe.state,
         "MoE layers · (E/EP·N_g (self.local_map) + 8·E with the router's expert bias) + the global buffer e·h·N_g");
  } else if (moe.state > 0) {
    note(trace, "trainmem.moe_dispatch_transient", moe_dispatch_transient_bytes(c),
         "one MoE layer's forward: max(P + A + G + O + B + R, P + A + combine input + C)");
    note(trace, "trainmem.moe_dispatcher_state", moe.state,
         "MoE layers · ((e + 1)·E·T_sp (self.probs, self.routing_map) + 8·E with the router's expert bias)");
  }
  if (moe.recompute_graph > 0)
    note(trace, "trainmem.moe_recompute_graph", moe.recompute_graph,
         "recompute checkpoints with an MoE layer · 2·e·h·T_sp: each one's detached input and its gradient, held "
         "through the dispatcher's kept probabilities from its backward to the layer's next forward");
  const double loss_transient = include_activation && last ? loss_transient_bytes(c) : 0;
  // The loss's forward, where its temporaries outgrow the backward's (the shifted copy of
  // transformers 4.46-4.48); the target it saves is alive then.
  const double loss_forward = include_activation && last ? loss_forward_transient_bytes(c) : 0;
  if (loss_forward > 0)
    note(trace, "trainmem.loss_forward_transient", loss_forward,
         "transformers' shifting loss: the model's logits (+ fp32 upcast) + 4·b(s-1)·V shifted copy");
  // The model's output the loop holds from the loss through the optimizer step (model_output_kept):
  // beside every later moment; the loss's forward counts the logits already (loss_forward).
  const double kept = include_activation && last ? kept_output_bytes(c) : 0;
  if (kept > 0) note(trace, "trainmem.kept_output", kept, "the model's logits, held until after optimizer.step()");
  // Every moment from the loss's backward to the optimizer step's end holds the state and the kept output.
  const double state_after_loss = model_state + kept;
  // A quantised output layer (quantize_lm_head): MatMul4Bit dequantises its weight whole while
  // the matmul writes the logits in forward, and again in backward while the logits' gradient
  // (the compute dtype) and the input's gradient (tokens × h) are made, after the loss's backward
  // has freed what the loss saved (nf4_dequant_bytes' sources). The logits are counted whole
  // (torchtune's chunked output dequantises once per chunk beside one chunk's logits: high).
  const double output_tokens = double(c.micro_batch_size) * double(c.seq_length) /
                               double(c.context_parallel_size);
  const double output_transient =
      include_activation && last && out.state.output_dequant > 0
          ? out.state.output_dequant + bytes_per_element(c.compute_dtype) * output_tokens *
                                           (out.state.output_rows + double(c.hidden_size))
          : 0;
  // What the loss saves comes after the output layer's forward and is freed before its backward;
  // the final norm's and the output layer's own saved tensors are there throughout.
  // The output layer's LoRA forward (activations.cpp output_lora_forward_bytes): before the loss
  // exists, beside the saved tensors but the loss's.
  const double output_lora_forward = include_activation && last ? output_lora_forward_bytes(c) : 0;
  if (output_lora_forward > 0)
    note(trace, "trainmem.output_lora_forward", output_lora_forward,
         "the output layer's LoRA forward: base logits, lora_B's output and its scaled copy (+ the final norm's "
         "output where nothing saves it)");
  double loss_saved = 0;
  if (output_transient > 0 || output_lora_forward > 0) {
    SavedTensors detail;
    output_activation_bytes(c, &detail);
    for (const SavedTensor& t : detail)
      if (t.module == "loss") loss_saved += t.bytes;
  }
  // Gradients freed between steps (gradients_start_each_step_empty) are absent from the forward;
  // backward creates them as it goes down the layers and frees each layer's saved tensors.
  // Each moment: its bytes, the gradients not yet made, and the saved activations it holds.
  struct Candidate {
    double bytes, absent_gradients, activations;
    Moment moment;
  };
  const StageState& state = out.state;
  const StageActivation& act = out.activation;
  const double freed = state.gradients_freed_between_steps;
  const double A = s.activation_bytes;
  // The loss's backward temporaries come after NllLossBackward0 has freed the target it saved
  // (output_backward_bytes; 0 where that is not modelled). A quantised output layer's dequantised
  // weight sits beside the logits, after the loss's own saved tensors (output_transient).
  const OutputBackward output_bw = include_activation && last ? output_backward_bytes(c) : OutputBackward{};
  // The decoder layers' forward under QLoRA: at each Linear4bit, MatMul4Bit dequantises the weight
  // whole (nf4_dequant_bytes' sources) beside the layer's saved tensors so far and writes its
  // output, which Linear4bit returns .to(inp_dtype) (fp32 under fp32 norms). At the last layer
  // every decoder layer's saved tensors are there but the output layer's and the loss's. Counted
  // as the stage's saved tensors less those, the largest NF4 linear's dequantised weight and an
  // output as wide as its elements over h (at least its output's width): an upper bound, for the
  // runs whose loss is small (chunked or fused losses, small vocabularies), where the allocation
  // timeline oracle's QLoRA draws peak in the last layer's forward.
  double layer_forward_dequant = 0;
  if (include_activation && state.largest_nf4_elements > 0 && c.hidden_size > 0) {
    const double n = state.largest_nf4_elements;
    const double out_e = kbit_fp32_activations(c) ? 4.0 : bytes_per_element(c.compute_dtype);
    layer_forward_dequant = nf4_dequant_bytes(c, n) + out_e * output_tokens * (n / double(c.hidden_size)) +
                            qlora_forward_frame_bytes(c);
  }
  // What the output layer and the loss save (one microbatch's, the last stage's): the decoder
  // layers' saved tensors are the rest.
  const double output_saved = include_activation && last ? output_activation_bytes(c) : 0;
  const double before_output_layer = std::max(0.0, A - output_saved);
  if (layer_forward_dequant > 0)
    note(trace, "trainmem.qlora_layer_forward", layer_forward_dequant,
         "QLoRA's last decoder layer's forward: the largest NF4 linear dequantised + its output");
  // The last checkpointed layer's own forward (activations.cpp checkpointed_layer_forward_bytes):
  // its transients beside every layer's checkpoint, before the output layer and the loss exist.
  const double checkpointed_forward =
      include_activation && last && c.pipeline_model_parallel_size <= 1 ? checkpointed_layer_forward_bytes(c) : 0;
  if (checkpointed_forward > 0)
    note(trace, "trainmem.checkpointed_layer_forward", checkpointed_forward,
         "the last checkpointed layer's forward: its largest point (softmax, o_proj, SiLU, product, down_proj) "
         "beside every checkpoint");
  const Candidate forward{model_state - freed + moe.state +
                              std::max({A + std::max({loss_transient - output_bw.target + kept, loss_forward, moe.forward}),
                                        A - loss_saved + output_transient + kept,
                                        before_output_layer + layer_forward_dequant,
                                        before_output_layer + checkpointed_forward,
                                        A - loss_saved + output_lora_forward}),
                          freed, A, Moment::forward};
  // In backward the decoder layers' recomputation and temporaries come after the loss chunk's
  // backward has freed what it saved (autograd releases a node's saved tensors once it has run).
  // Saved tensors fall and gradients rise layer by layer, so the backward's peak is at one of its
  // ends: the stage's last layer (every activation, only the output layer's gradient made) or, when
  // the step started without gradients, its first (every gradient, that layer's activations).
  const double backward_working =
      act.recompute_working + state.backward_temporary + moe.recompute + moe.backward + moe.state;
  // Made before the decoder layers' backward: the output layer's gradients; stepped in backward,
  // the one gradient counted, which exists at every point of the backward pass.
  const double made_first =
      c.optimizer_in_backward ? freed : state.output_gradients + state.output_adapter_gradients;
  const double absent_at_last_layer = freed > 0 ? freed - made_first : 0;
  const Candidate last_layer{state_after_loss - absent_at_last_layer + A - act.loss_chunk + backward_working,
                             absent_at_last_layer, A - act.loss_chunk, Moment::backward};
  // At the first layer's backward the dispatchers still hold the recomputed graphs of the
  // checkpoints above it, each with its input and that input's gradient (stage_moe).
  const Candidate first_layer{state_after_loss + act.first_layer + backward_working + moe.recompute_graph_above_first,
                              0, act.first_layer + moe.recompute_graph_above_first, Moment::backward};
  // FSDP1 with a frozen unit per decoder layer (peft: PEFT's fsdp_auto_wrap_policy wraps the
  // adapters apart) and transformers' reentrant checkpoint around each unit
  // (fsdp1_checkpoint_around_unit). The recomputed forward calls the unit with the checkpoint's
  // detached input, a leaf that requires grad; FSDP1's pre-forward registers, for a FlatParameter
  // that needs no gradient, a multi-grad hook on the forward inputs that do, to reshard once
  // their gradients exist (pytorch/pytorch torch/distributed/fsdp/_runtime_utils.py,
  // _register_post_backward_reshard_only_hook). register_multi_grad_hook keeps each input's
  // grad_fn, for a leaf its AccumulateGrad, which holds the leaf (torch/autograd/graph.py,
  // `grad_fns` in the inner hook's closure; AccumulateGrad::variable), and the hook is removed
  // only by _finalize_params in the final callback after the whole backward. So every layer's
  // detached input (the checkpoint's saved input, whose storage it shares) and its .grad, which
  // the inner torch.autograd.backward made and CheckpointFunction.backward passed down
  // (torch/utils/checkpoint.py), stay until backward ends: at the first layer's backward every
  // layer's checkpointed input and the L − 1 input gradients above it (the incoming one among
  // them) beside that layer's recomputed working set, the output side's saved tensors freed.
  const double layers_here_all = double(layout.count(r));
  const bool kept_inputs_apply = include_activation && fsdp1_kept_inputs(c) && layers_here_all >= 2;
  const double kept_input_gradients =
      kept_inputs_apply ? (layers_here_all - 1) * layer_activation_bytes(c, false, LayerRecompute::checkpointed) : 0;
  const Candidate kept_inputs_first_layer{
      kept_inputs_apply ? state_after_loss + before_output_layer + kept_input_gradients + backward_working : 0, 0,
      before_output_layer + kept_input_gradients, Moment::backward};
  if (kept_inputs_apply)
    note(trace, "trainmem.fsdp1_kept_input_gradients", kept_input_gradients,
         "FSDP1 reshard-only hooks on reentrant checkpoints: (layers - 1) x one layer's input gradient, "
         "kept with every checkpointed input until backward ends");
  // The eager layers' backward walked node by node (activations.cpp decoder_backward_bytes): its
  // points in the last layer and in the first, and the embedding's backward, replace the two ends
  // above, whose first-layer end counts that layer's saved tensors beside every gradient (no such
  // moment exists). Gradients made so far: the output layer's and the final norm's, the layer's
  // made by that point, and every layer's above it.
  const DecoderBackward dec = include_activation && first && last ? decoder_backward_bytes(c) : DecoderBackward{};
  // Gradient bytes per trainable parameter of a decoder layer (under peft its adapters, whose
  // gradients are in the adapters' dtype; modules_to_save copies are the output side's or the
  // embedding's, not a layer's).
  const double grad_per_param = freed <= 0 ? 0
                                : c.peft_on() ? bytes_per_element(lora_adapter_dtype(c))
                                : state.params_local > 0 ? freed / state.params_local : 0;
  const auto absent_with = [&](double made) { return freed > 0 ? std::max(0.0, freed - made) : 0.0; };
  const double layers_here = double(layout.count(r));
  const double layer_saved =
      dec.modelled ? layer_activation_bytes(c, c.is_moe(), c.recompute_granularity == RecomputeGranularity::full
                                                           ? LayerRecompute::checkpointed
                                                           : LayerRecompute::policy)
                   : 0;
  // Each walked point of the layer (activations.cpp decoder_backward_bytes: the SwiGLU product,
  // eager attention's softmax, the MoE loop's first expert and summed input gradients, q_proj's
  // end, the two RMSNorms) in the last layer and in the first: beyond the residual gradient, its
  // extra bytes beside the saved tensors less those freed by then, with its layer's gradients made
  // and, in the first layer, every layer's above it (their saved tensors freed).
  std::array<Candidate, 3 * std::tuple_size_v<decltype(dec.points())>> layer_points{};
  size_t n_points = 0;
  // Each walked point, and whether it comes after q_proj's LoRA branch in backward.
  const std::array<std::pair<DecoderBackward::Point, bool>, std::tuple_size_v<decltype(dec.points())>> walked = {{
      {dec.swiglu, false}, {dec.softmax, false}, {dec.expert_first, false}, {dec.expert_second, false},
      {dec.expert_last, false}, {dec.expert_weighting, false}, {dec.qkv, true}, {dec.norm_mlp, false}, {dec.norm_attention, true},
      {dec.recompute_forward, false}, {dec.nf4_down, false}, {dec.nf4_up, false}, {dec.nf4_recompute_up, false},
      {dec.gate_mm, false}, {dec.attention_dropout, false}, {dec.down_lora_dropout, false}}};
  // Where Linear4bit's backward is walked, each point carries the dequantised weights its nodes
  // make (none at the SwiGLU product, the softmax or the norms); elsewhere the largest stays beside
  // every point.
  const double walked_dequant = dec.nf4_walked ? state.nf4_backward_dequant : 0;
  // FSDP1 with the adapters in units of their own (the walk runs under FSDP1 with fsdp1_kept_inputs
  // only): BACKWARD_PRE prefetches, from a unit's pre-backward hook, the unit before it in the
  // forward's post-forward order (torch/distributed/fsdp/_exec_order_utils.py,
  // get_handle_to_backward_prefetch: handles_post_forward_order[_post_forward_index - 1]). A
  // layer's adapters finish their forward before the layer does, so the layer prefetches its own
  // last adapter, and the layer below is prefetched only by the layer's first adapter, q_proj's
  // lora_A, whose hook fires when q_proj's LoRA branch gets its gradient: at the MLP's, the
  // post-attention norm's and the attention core's points one gathered decoder unit is held, the
  // second (backward_temporary) only from q_proj's end on.
  const double second_unit = kept_inputs_apply && dec.modelled ? state.fsdp1_unit.gather : 0;
  if (second_unit > 0)
    note(trace, "trainmem.fsdp1_late_prefetch_unit", second_unit,
         "FSDP1 BACKWARD_PRE with adapter units: the layer below is gathered from q_proj's LoRA branch on, "
         "so the MLP, post-attention norm and attention core points hold one decoder unit");
  for (const auto& [p, after_q_proj] : walked) {
    if (!(p.extra > 0)) continue;
    const double working = backward_working - walked_dequant - (after_q_proj ? 0 : second_unit);
    const double top = state.output_gradients + state.output_adapter_gradients +
                       grad_per_param * (dec.norm_params + p.made_params);
    const double bottom = top + (layers_here - 1) * grad_per_param * dec.layer_params;
    // The adapters' casts gone by then (DecoderBackward::adapter_cast_bytes), counted with the
    // state: the made adapters', the unsaved ones (until q_proj's adapter has run, when they are
    // among the made), and with every layer checkpointed every other layer's.
    const double checkpointed_others =
        dec.casts_recomputed && layers_here >= 2 ? (layers_here - 1) * dec.layer_params : 0;
    const double unsaved = after_q_proj ? 0 : dec.unsaved_casts;
    const double casts_top = dec.adapter_cast_bytes * (p.made_params + checkpointed_others) +
                             (checkpointed_others > 0 ? 0 : unsaved);
    const double casts_bottom = dec.adapter_cast_bytes * (p.made_params + (layers_here - 1) * dec.layer_params) + unsaved;
    const double saved = A - act.loss_chunk - p.freed - casts_top;
    const double below = A - act.loss_chunk - p.freed - casts_bottom - (layers_here - 1) * layer_saved;
    layer_points[n_points++] = {state_after_loss - absent_with(top) + saved + dec.incoming + p.extra + working,
                                absent_with(top), saved, Moment::backward};
    layer_points[n_points++] = {state_after_loss - absent_with(bottom) + below + dec.incoming + p.extra + working,
                                absent_with(bottom), below, Moment::backward};
    // FSDP1's kept inputs (kept_inputs_first_layer above): the first layer's point with every
    // checkpointed input and the L - 1 input gradients, the incoming one among them.
    if (kept_inputs_apply) {
      const double kept_saved = std::max(0.0, A - output_saved - p.freed) + kept_input_gradients;
      layer_points[n_points++] = {state_after_loss - absent_with(bottom) + kept_saved + p.extra + working,
                                  absent_with(bottom), kept_saved, Moment::backward};
    }
  }
  // Under reentrant checkpointing the layers' CheckpointFunction nodes still hold their non-tensor
  // arguments (cos/sin) there, and under peft the embedding output and its gradient are the
  // backward's last bytes (activations.cpp reentrant_extras).
  const Candidate embedding_backward{
      dec.token_ids > 0 ? state_after_loss + dec.token_ids + dec.incoming + dec.graph_held : 0, 0, dec.token_ids,
      Moment::backward};
  const Candidate backward_end{dec.input_gradient_end > 0 ? state_after_loss + dec.input_gradient_end + dec.graph_held
                                                          : 0,
                               0, 0, Moment::backward};
  // The final norm's PowBackward0 (output_backward_bytes), part of the forward moment as the
  // output layer's backward is: the output layer's and the norm's gradients made.
  // Under peft the norm is frozen: no gradient of its own (the output layer's adapter's are made).
  const double norm_made = state.output_gradients + state.output_adapter_gradients +
                           (c.peft_on() ? 0.0 : grad_per_param * double(c.hidden_size));
  const Candidate final_norm{state_after_loss - absent_with(norm_made) + A - act.loss_chunk + output_bw.final_norm,
                             absent_with(norm_made), A - act.loss_chunk, Moment::forward};
  const Candidate* backward_at =
      (freed > 0 || moe.recompute_graph_above_first > 0) && first_layer.bytes > last_layer.bytes ? &first_layer
                                                                                                 : &last_layer;
  if (dec.modelled) {
    backward_at = &last_layer;
    for (const Candidate& at : std::span(layer_points).first(n_points))
      if (at.bytes > backward_at->bytes) backward_at = &at;
    if (embedding_backward.bytes > backward_at->bytes) backward_at = &embedding_backward;
    if (backward_end.bytes > backward_at->bytes) backward_at = &backward_end;
  }
  // Where the layer is walked, its first-layer points with the kept inputs replace this end.
  if (!dec.modelled && kept_inputs_first_layer.bytes > backward_at->bytes) backward_at = &kept_inputs_first_layer;
  const Candidate& backward = *backward_at;
  // The output layer's backward (activations.cpp output_backward_bytes: MmBackward0, after the
  // loss's nodes have freed what they saved), part of the forward moment as the loss's backward
  // is: the state as at the last layer's backward (the output layer's weight gradient made), the
  // saved activations less the loss's, the logits' and the input's gradients.
  const Candidate output_layer{
      state_after_loss - absent_at_last_layer + A - output_bw.loss_saved + output_bw.output_layer + moe.state,
      absent_at_last_layer, A - output_bw.loss_saved, Moment::forward};
  const Candidate& forward_moment =
      output_bw.modelled && output_layer.bytes > forward.bytes ? output_layer : forward;
  const Candidate chunked_output{state_after_loss - freed - state.unit_reduce + A - act.loss_chunk +
                                     output_bw.chunked_weight_sum,
                                 freed,
                                 A - act.loss_chunk, Moment::forward};
  const Candidate& forward_end_or_output =
      output_bw.final_norm > 0 && final_norm.bytes > forward_moment.bytes ? final_norm : forward_moment;
  const Candidate& forward_at = output_bw.chunked_weight_sum > 0 && chunked_output.bytes > forward_end_or_output.bytes
                                    ? chunked_output
                                    : forward_end_or_output;
  // The optimizer step runs after the pipeline's end-of-step tensors (torch_pipeline_bytes): the
  // merged outputs are dropped by then, the rest stays; its temporaries come after the merge.
  // Stepped in backward, every gradient is gone by then.
  const double stepped = c.optimizer_in_backward ? freed : 0;
  // A loop that keeps the model's output keeps the step's graph through the optimizer step, and
  // with it what reentrant checkpoint nodes hold until the graph is freed (reentrant_extras).
  const double graph_kept = c.model_output_kept ? dec.graph_held + dec.input_gradient_end : 0;
  const Candidate optimizer_step{
      state_after_loss - stepped - state.forward_backward_only +
          std::max(act.pipeline_end, act.pipeline_end - act.pipeline_merged + state.optimizer_temporary) +
          moe.state_after_backward + graph_kept,
      stepped, 0, Moment::optimizer_step};
  Moments& m = s.moments;
  m.forward = forward_at.bytes;
  m.backward = backward.bytes;
  m.optimizer_step = optimizer_step.bytes;
  s.total_bytes = m.peak();
  const Candidate& peak = s.total_bytes == m.forward    ? forward_at
                          : s.total_bytes == m.backward ? backward
                                                        : optimizer_step;
  // The caching allocator simulated over two steps (simulated_reserved_bytes), from the stage's
  // state at rest, before the breakdown below takes out the gradients a peak moment has not made
  // yet: the sequence makes and frees them itself.
  const double simulated = factor_alone(c) || !simulate
                               ? 0.0
                               : simulated_reserved_bytes({&c, &layout, r, &out.state, &out.activation,
                                                           std::max(loss_transient, loss_forward),
                                                           backward_working, moe.forward, kept},
                                                          memo);
  // The job's moments outside the step, from the state at rest (before the breakdown below takes
  // out the gradients the step's peak has not made yet).
  const JobMoments job = job_moments(c, out.state, model_state, include_activation);
  // The peak's composition, for the breakdown: the model state as it is then (gradients not yet
  // made are not in it: none at the end of forward, the output layer's at the backward's start),
  // the saved activations it holds, and that moment's temporaries.
  if (peak.absent_gradients > 0) {
    const bool output_made = peak.absent_gradients < freed;
    out.state.gpu.gradients = PartBytes{0, output_made ? state.output_gradients : 0, 0};
    out.state.gpu.adapter_gradients = PartBytes{0, output_made ? state.output_adapter_gradients : 0, 0};
    s.weight_and_optimizer_bytes = out.state.gpu.total();
  }
  m.peak_moment = peak.moment;
  m.peak_activation_bytes = peak.activations;
  // The job's moments outside the step: when one is larger, it is the stage's total (allocated is
  // max_memory_allocated over the job); the breakdown keeps the step peak's rows and the excess
  // shows among the temporaries, and the assumptions say which moment it is.
  m.loading = job.loading;
  m.checkpoint_save = job.checkpoint_save;
  m.evaluation = job.evaluation;
  if (job.loading > 0)
    note(trace, "trainmem.loading_moment", job.loading,
         c.params_dtype == Dtype::int8
             ? "from_pretrained with bitsandbytes 8-bit: the weights + the largest int8 linear's fp16 copy"
             : "from_pretrained with bitsandbytes 4-bit: the weights + the largest NF4 linear's 16-bit copy and fp32 absmax");
  if (job.checkpoint_save > 0)
    note(trace, "trainmem.checkpoint_save_moment", job.checkpoint_save,
         "fsdp2 full state dict: the model state without gradients and gathered layers + the largest tensor whole");
  if (job.evaluation > 0) {
    note(trace, "trainmem.evaluation_layers", job.evaluation_layers,
         "the state at rest + a decoder layer's no_grad forward (bound: its saved set with every weight trained, "
         "its output, LoRA's two temporaries, the eager mask, cos/sin) + the KV cache + a dequantised NF4 linear "
         "or an int8 linear's forward transients");
    note(trace, "trainmem.evaluation_loss", job.evaluation_loss,
         "the state at rest + the final hidden state + the logits and the loss's fp32 copies + the labels + the KV cache");
    note(trace, "trainmem.evaluation_moment", job.evaluation,
         "transformers' prediction_step under no_grad: the larger of the two above");
  }
  s.total_bytes = std::max({s.total_bytes, job.loading, job.checkpoint_save, job.evaluation});
  m.peak_temporary_bytes = std::max(0.0, s.total_bytes - s.weight_and_optimizer_bytes - m.peak_activation_bytes);
  // Runtime overheads (documented defaults in the field table, adjustable). The caching allocator
  // keeps what it once reserved: the previous step's gradient blocks, freed by zero_grad, stay
  // reserved beside the next forward's activations, as the step-to-step peak reserved figures
  // show (torchtitan's Llama 3.1 8B at FSDP 8 and 128, validation TT-T1/TT-T3: 15.0-15.4 GiB
  // apart, what the sharded state with its gradients accounts for, 14.7 GiB, and not without
  // them, 11.0 GiB). So the reserved figure is taken over the moments with every gradient held.
  const double held = std::max({forward.bytes + forward.absent_gradients,
                                output_layer.bytes + output_layer.absent_gradients,
                                last_layer.bytes + last_layer.absent_gradients, first_layer.bytes,
                                optimizer_step.bytes + optimizer_step.absent_gradients});
  const double factor_floor = std::max(s.total_bytes, held) * (1 + Config::k_fragmentation_floor);
  if (factor_alone(c)) {
    // The override: reserved as a fraction over the allocated peak (allocator_fragmentation).
    s.reserved_bytes = std::max(s.total_bytes, held) * (1 + *c.allocator_fragmentation);
  } else if (c.allocator_fragmentation) {
    // 0: the caching allocator simulated over two steps' allocations (simulated_reserved_bytes)
    // alone, never below the moments with every gradient held, which the sequence's coarse parts
    // (lumped buffers and temporaries) could otherwise undercut.
    s.reserved_bytes = std::max({simulated, s.total_bytes, held});
  } else {
    // Unset (the default): the larger of the factor and the simulation. The simulation is the
    // mechanism where the sequence knows the tensors; where it sees lumps (backward's working
    // set, the optimizer's temporaries, the loss's transient as a few pieces) PyTorch carves
    // the same bytes out of many blocks and caches the remainders, which the model cannot
    // see, so the 5 % planning factor stays as a floor. The planner prunes with the factor
    // figure (a lower bound of this one) and simulates only what survives (planner/search.cpp).
    s.reserved_bytes = std::max({simulated, s.total_bytes, held, factor_floor});
  }
  if (!factor_alone(c) && simulate)
    note(trace, "trainmem.simulated_reserved_bytes", simulated,
         "peak reserved of PyTorch's caching allocator over two steps' allocations");
  return out;
}

}  // namespace

// Whether a step starts with no gradients on the GPU. PyTorch's optimizers free them after each
// step: Optimizer.zero_grad(set_to_none=True), the default since PyTorch 2.0
// (torch/optim/optimizer.py), which torchtune's recipes call after optimizer.step()
// (recipes/full_finetune_single_device.py @ 01067f61bd31f3a95a690be2e3bf94e905f2d4d3, train()),
// torchtitan at the start of each train_step (torchtitan/train.py, self.optimizers.zero_grad())
// and transformers' Trainer as model.zero_grad() after the step. With one microbatch per step the
// forward then runs with none, and backward creates them layer by layer while it frees that
// layer's saved activations (evaluate_stage). Not so where gradients live in buffers kept for the
// whole run: Megatron's DDP main_grad buffer, DeepSpeed's gradient partitions and DDP's
// gradient_as_bucket_view (the .grad tensors are views of the reducer's buckets); and not with
// gradient accumulation (or an unknown microbatch count), where every microbatch after the first
// runs its forward beside the gradients accumulated so far.
bool zero_grad_frees_gradients(const Config& c) {
  switch (c.framework) {
    case Framework::fsdp2: return true;
    case Framework::ddp: return !(c.gradient_as_bucket_view && c.data_parallel_size > 1);
    default: return false;
  }
}

bool gradients_start_each_step_empty(const Config& c) {
  // optimizer_in_backward requires one microbatch per step (resolve()).
  if (c.num_microbatches != 1 && !c.optimizer_in_backward) return false;
  return zero_grad_frees_gradients(c);
}

ModelState trainmem_param_counts(const Config& c) {
  ModelState ms;
  Inventory all;
  const Shard one;
  // The whole model: every decoder layer once, embedding, output layer, MTP.
  double dense_layers = 0, moe_layers = 0;
  for (int64_t i = 0; i < c.num_layers; ++i) (c.is_moe_layer(i) ? moe_layers : dense_layers) += 1;
  add_layer(all, c, one, false, dense_layers);
  add_layer(all, c, one, true, moe_layers);
  // The model's own parameter count: the vocabulary as published (no padding), one embedding
  // matrix when tied (the copy a tied model keeps on the last stage is not a parameter).
  add_stage_extras(all, c, one, true, true, c.num_layers > 0 && c.is_moe_layer(c.num_layers - 1),
                   double(c.vocab_size));
  ms.params.embedding = all.params(Part::embedding);
  ms.params.routed_experts = all.params(Part::expert);
  ms.params.dense_transformer = all.params(Part::dense);
  ms.params.total = all.params();
  ms.params.adapter = all.adapter_params();
  ms.params.active = ms.params.total - ms.params.routed_experts +
                     (c.is_moe() ? ms.params.routed_experts * double(c.moe_router_topk) / double(c.num_moe_experts) : 0);
  const bool mtp_moe = c.num_layers > 0 && c.is_moe_layer(c.num_layers - 1);
  ms.layers.total = c.num_layers + c.mtp_num_layers;
  ms.layers.moe = int64_t(moe_layers) + (mtp_moe ? c.mtp_num_layers : 0);
  ms.layers.dense = ms.layers.total - ms.layers.moe;
  return ms;
}

Estimate trainmem_estimate(const Config& c, bool include_activation, Trace* trace,
                           std::vector<StageParams>* stages) {
  count_trainmem_pass();
  const PipelineLayout layout(c);
  Estimate est;
  est.profile = Profile::trainmem;
  const ModelState counts = trainmem_param_counts(c);
  est.params = counts.params;
  est.layers = counts.layers;

  const LayerSize largest_layer = largest_layer_size(c);
  // Every rank holds the same communicators' buffers (the embedding group's two ranks aside, a
  // few hundred MiB on the first and last stage that the middle stages do not have).
  const NcclCommunicators nccl = nccl_communicators(c);
  const double runtime = runtime_overhead(c, nccl);
  StageKind middle;  // the middle stages' shared figures
  int64_t heaviest = -1;
  StageResult best;
  const auto overheads = [&](StageResult& stage) {
    stage.summary.device_bytes = stage.summary.reserved_bytes + runtime;
    // Paged optimizer states are in unified memory, not PyTorch's allocator: only in the device
    // figure, as far as the GPU holds them (the driver evicts pages to CPU memory when it is full).
    stage.summary.device_bytes += paged_resident_bytes(c, stage.summary.device_bytes, stage.state.paged);
    stage.summary.reserved_overhead_bytes = stage.summary.reserved_bytes - stage.summary.total_bytes;
    stage.summary.device_overhead_bytes = stage.summary.device_bytes - stage.summary.total_bytes;
  };
  // Every stage's caching allocator is simulated (but with allocator_fragmentation above 0,
  // where there is none), and the most-loaded stage is the one of the largest device figure, the
  // figure the user reads and the fit is judged by (compared_figure), its allocated figure
  // breaking ties. So no stage's reserved figure, listed or reported, is the factor's where its
  // simulation is larger, and the reported GPU is never one whose device figure another stage's
  // simulation exceeds: the figures are those of simulating every stage because every stage is
  // simulated. The cost is one simulation per stage, less where consecutive stages make the same
  // sequence (SimulationMemo), each bounded in events (k_max_events, k_pipeline_events).
  // Before, only the stage heaviest by the allocated figure was simulated, and a stage whose
  // simulation exceeded it read low.
  SimulationMemo memo;
  const auto heavier = [](const StageParams& a, const StageParams& b) {
    return a.device_bytes > b.device_bytes || (a.device_bytes == b.device_bytes && a.total_bytes > b.total_bytes);
  };
  for (int64_t r = 0; r < layout.p; ++r) {
    StageResult stage = evaluate_stage(c, layout, r, largest_layer, include_activation, nullptr, &middle, true, &memo);
    overheads(stage);
    if (stages) stages->push_back(stage.summary);
    est.largest_stage_allocated_bytes = std::max(est.largest_stage_allocated_bytes, stage.summary.total_bytes);
    if (heaviest < 0 || heavier(stage.summary, best.summary)) {
      heaviest = r;
      best = stage;
    }
  }
  if (trace) evaluate_stage(c, layout, heaviest, largest_layer, include_activation, trace);  // its intermediates

  est.most_loaded_stage = heaviest;
  est.state = best.state.gpu;
  est.moments = best.summary.moments;
  est.has_activation = include_activation;
  est.activation_bytes = best.summary.activation_bytes;
  est.weight_and_optimizer_bytes = est.state.total();
  est.total_bytes = best.summary.total_bytes;
  est.reserved_bytes = best.summary.reserved_bytes;
  est.device_bytes = best.summary.device_bytes;
  est.nccl = nccl;
  est.overhead_lines = {{{k_overhead_keys[0], est.reserved_bytes - est.total_bytes, k_figure_names[1]},
                         {k_overhead_keys[1], c.cuda_context_bytes, k_figure_names[2]},
                         {k_overhead_keys[2], nccl.bytes(), k_figure_names[2]}}};
  est.n_overhead_lines = 3;
  est.paged_optimizer_bytes = best.state.paged;
  est.paged_gpu_bytes = paged_resident_bytes(c, est.reserved_bytes + runtime, best.state.paged);
  if (c.paged_optimizer)
    est.overhead_lines[size_t(est.n_overhead_lines++)] = {k_overhead_keys[3], est.paged_gpu_bytes, k_figure_names[2]};
  est.cpu_activation_bytes = best.activation.cpu;
  // Per node: each GPU of the node holds the most-loaded stage's share, and a run on fewer GPUs
  // than a node has occupies only its own.
  CpuBytes per_gpu = best.state.cpu;
  per_gpu.activations = best.activation.cpu;
  per_gpu.paged_optimizer_states = best.state.paged - est.paged_gpu_bytes;
  est.cpu = per_gpu.scaled(double(std::min(c.gpus_per_node, c.world_size)));
  est.cpu_bytes = est.cpu.total();
  est.params.per_gpu = best.state.params_local;
  est.params.stored_per_gpu = best.state.params_stored;
  est.params.routed_per_gpu = best.state.expert_local;
  est.params.dense_per_gpu = best.state.dense_local;
  est.params.embedding_per_gpu = best.state.embedding_local;
  est.params.adapter_per_gpu = best.state.adapter_local;
  note(trace, "trainmem.cpu_activation_bytes", est.cpu_activation_bytes,
       "activation_offload: the stage's saved activations less the largest layer's");

  // The reference's two components, so that every profile has the same output contract.
  const StateBreakdown& st = est.state;
  // With peft the adapters are a component of their own (weights, gradients, master weights,
  // optimizer states); the frozen base stays with the dense or routed parameters it belongs to.
  const auto rows = st.rows();
  double dense_bytes = 0;
  for (size_t i = 0; i < rows.size() - StateBreakdown::k_adapter_rows; ++i) {
    dense_bytes += rows[i]->dense;  // two additions, in the order of the rows
    dense_bytes += rows[i]->embedding;
  }
  const double adapter_bytes = st.adapters();
  const double expert_bytes = st.total() - dense_bytes - adapter_bytes;
  const Groups groups = data_parallel_groups(c);
  auto per_parameter = [](double bytes, double params) { return params > 0 ? bytes / params : 0.0; };
  set_components(est, per_parameter(dense_bytes, est.params.dense_per_gpu), dense_bytes, groups.dense,
                 per_parameter(expert_bytes, est.params.routed_per_gpu), expert_bytes, groups.expert);
  if (c.peft_on()) {
    ModelStateComponent& adapters = est.components[size_t(est.n_components++)];
    adapters.kind = ComponentKind::adapters;
    adapters.name = component_name(ComponentKind::adapters);
    adapters.parameter_count = est.params.adapter;
    adapters.parameter_count_per_gpu = est.params.adapter_per_gpu;
    adapters.bytes_per_parameter = per_parameter(adapter_bytes, est.params.adapter_per_gpu);
    adapters.optimizer_shard_size = groups.dense;
    adapters.memory_bytes = adapter_bytes;
  }

  if (c.framework == Framework::deepspeed && c.zero_stage >= 2) {
    // DeepSpeed's estimator takes the model's parameter count, its largest module and the
    // cluster shape (nodes × GPUs per node).
    Inventory all;
    add_layer(all, c, Shard{}, false, 1);
    if (c.is_moe()) add_layer(all, c, Shard{}, true, 1);
    add_stage_extras(all, c, Shard{}, true, true, false, double(c.vocab_size));
    double largest = 0;
    for (int i = 0; i < all.n; ++i) largest = std::max(largest, all.items[size_t(i)].elements());
    const int64_t world = c.data_parallel_size * c.tensor_model_parallel_size *
                          c.pipeline_model_parallel_size * c.context_parallel_size;
    const int64_t per_node = world % c.gpus_per_node == 0 ? c.gpus_per_node : world;
    const int64_t nodes = world / per_node;
    const bool offload = c.optimizer_offload_fraction > 0;
    const DeepSpeedEstimate ds =
        c.zero_stage == 2
            ? deepspeed_zero2_estimate(est.params.total, per_node, nodes, offload, c.additional_buffer_factor)
            : deepspeed_zero3_estimate(est.params.total, largest, per_node, nodes, offload,
                                       c.offload_params, c.zero_init, c.additional_buffer_factor);
    est.deepspeed_gpu_bytes = ds.gpu_bytes;
    est.deepspeed_cpu_bytes = ds.cpu_bytes;
  }
  note(trace, "trainmem.most_loaded_stage", double(heaviest), "stage with the largest peak");
  return est;
}

// Minimum devices: the fewest GPUs of this capacity that could hold one replica's model state and
// one microbatch's activations if both were spread perfectly (no parallel split, no offload): a
// lower bound on any layout. A second estimate of the whole model on one GPU, so it is computed
// once per answer (full_estimate), not by every estimate a search or a suggestion makes.
double minimum_devices(const Config& c, const Estimate& now, Trace* trace) {
  if (!(c.gpu_memory_bytes > 0)) return 0;
  Config whole = c;
  whole.tensor_model_parallel_size = whole.pipeline_model_parallel_size = 1;
  whole.context_parallel_size = whole.expert_model_parallel_size = whole.expert_tensor_parallel_size = 1;
  whole.data_parallel_size = whole.data_parallel_shard_size = 1;
  whole.world_size = 1;  // one replica on one GPU: no other rank to talk to
  whole.virtual_pipeline_model_parallel_size = 0;
  whole.num_layers_in_first_pipeline_stage = whole.num_layers_in_last_pipeline_stage = 0;
  whole.pipeline_stage_layers.clear();
  whole.pipeline_schedule = PipelineSchedule::one_f_one_b;
  whole.sequence_parallel = false;
  whole.optimizer_offload_fraction = 0;
  whole.offload_params = false;
  whole.gpu_memory_bytes = 0;
  Config as_given = c;
  as_given.gpu_memory_bytes = 0;
  const bool one_replica_already = whole == as_given;
  const bool fits = compared_figure(c, now) <= fit_verdict(0, c.gpu_memory_bytes, 0).limit_bytes;
  if (!one_replica_already && fits) return 0;
  // Only the allocated total is read, which the simulated allocator does not change for one stage
  // (PP 1 here): the factor's estimate gives it without simulating the whole model.
  const double needed =
      one_replica_already ? now.total_bytes : trainmem_estimate(factor_only(whole), true, nullptr, nullptr).total_bytes;
  const double devices = std::ceil(needed / c.gpu_memory_bytes);
  note(trace, "trainmem.minimum_devices", devices,
       "ceil((one replica's model state + one microbatch's activations) / gpu_memory_bytes)");
  return devices;
}

}  // namespace trainmem::detail
