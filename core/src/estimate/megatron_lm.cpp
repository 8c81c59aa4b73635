// Profile "megatron-lm": NVIDIA Megatron-LM megatron/training/theoretical_memory_usage.py
// (at 1bcb3b9e), reproduced from ../shared/reference/megatron-formulas.md §4, quirks included.
#include <algorithm>
#include <cmath>

#include "profiles.hpp"

namespace trainmem::detail {
namespace {

// §4.2: 18 B without the distributed optimizer, else 6 + 12/n (no guard: n >= 1 is validated).
double bytes_per_parameter(const Config& c, double n) {
  return c.use_distributed_optimizer ? 6.0 + 12.0 / n : 18.0;
}

// Parameters of one layer, by where they live (§4.2 buckets).
struct LayerBuckets {
  double tensor_parallel = 0;  // attention, dense MLP, shared experts: sharded over TP
  double replicated = 0;       // norms, latent projections, router, shared gate
  double expert = 0;           // routed experts: sharded over EP·ETP
  double active_expert = 0;    // the top-K routed experts a token uses
  double total() const { return tensor_parallel + replicated + expert; }
};

struct LmParams {
  LayerBuckets dense_layer, moe_layer;
  int64_t decoder_dense = 0, decoder_moe = 0;
  bool mtp_is_moe = false;
  double final_norm = 0, embedding_matrix = 0;
};

LmParams count_lm(const Config& c, Trace* trace) {
  LmParams lp;
  const double h = double(c.hidden_size), a = double(c.num_attention_heads);
  const double g = double(c.num_query_groups), k = double(c.kv_channels);
  const double gamma = c.gated_linear_unit && c.activation_func == ActivationFunc::silu ? 1.5 : 1.0;
  const double experts = c.is_moe() ? double(c.num_moe_experts) : 1.0;
  const double norm = c.normalization == Normalization::rms_norm ? 1.0 : 2.0;
  const int64_t L = c.num_layers;

  // §4.1 MoE pattern over the decoder only (MTP layers follow the last layer).
  if (c.is_moe()) {
    if (!c.moe_layer_freq_list.empty()) {
      for (uint8_t x : c.moe_layer_freq_list) lp.decoder_moe += x;
    } else {
      lp.decoder_moe = (L - 1) / c.moe_layer_freq + 1;
    }
  }
  lp.decoder_dense = L - lp.decoder_moe;
  lp.mtp_is_moe = L > 0 && c.is_moe_layer(L - 1);

  double attention = 0;
  if (c.multi_latent_attention) {
    const double dqk = double(c.qk_head_dim), drope = double(c.qk_pos_emb_head_dim);
    const double dv = double(c.v_head_dim), rkv = double(c.kv_lora_rank);
    const double q = c.q_lora_rank == 0
                         ? h * a * (dqk + drope)
                         : double(c.q_lora_rank) * (h + a * (dqk + drope) + norm);
    attention = q + rkv * (h + a * (dqk + dv) + norm) + h * drope + a * dv * h;
    note(trace, "lm.attention_per_layer", attention,
         "MLA: q + r_kv·(h + a·(d_qk + d_v) + n) + h·d_rope + a·d_v·h, q = h·a·(d_qk + d_rope) "
         "or r_q·(h + a·(d_qk + d_rope) + n)");
  } else {
    attention = 2 * h * h * ((1 + g / a) * (k * a / h));
    note(trace, "lm.attention_per_layer", attention, "2·h·h·((1 + g/a)·(k·a/h))");
  }
  const double layer_norms = 2 * h * norm;

  lp.dense_layer.tensor_parallel = attention + 2 * h * double(c.ffn_hidden_size) * gamma;
  lp.dense_layer.replicated = layer_norms;

  if (c.is_moe()) {
    const double fe = double(c.moe_ffn_hidden_size), fs = double(c.moe_shared_expert_intermediate_size);
    const double hr = c.moe_latent_size > 0 ? double(c.moe_latent_size) : h;
    lp.moe_layer.tensor_parallel = attention + 2 * h * fs * gamma;
    lp.moe_layer.replicated = layer_norms;
    if (c.moe_latent_size > 0) lp.moe_layer.replicated += 2 * h * double(c.moe_latent_size);
    lp.moe_layer.replicated += h * experts + (c.add_bias_linear ? experts : 0.0);  // router
    if (fs > 0 && c.moe_shared_expert_gate) lp.moe_layer.replicated += h;          // shared gate
    lp.moe_layer.expert = 2 * hr * fe * experts * gamma;
    lp.moe_layer.active_expert = 2 * hr * fe * double(c.moe_router_topk) * gamma;
    note(trace, "lm.routed_experts_per_moe_layer", lp.moe_layer.expert, "2·h_r·f_e·E·γ");
    note(trace, "lm.moe_layer_replicated", lp.moe_layer.replicated,
         "2h·n + 2h·ℓ + h·E (+E bias) + h (shared gate)");
  }
  lp.final_norm = norm * h;
  lp.embedding_matrix =
      h * double(padded_vocab_size(c.vocab_size, c.make_vocab_size_divisible_by,
                                   c.tensor_model_parallel_size));
  note(trace, "lm.gated_linear_multiplier", gamma, "3/2 with SwiGLU, else 1");
  note(trace, "lm.dense_layer_parameters", lp.dense_layer.total(), "A + 2h·f·γ + 2h·n");
  note(trace, "lm.padded_vocab_size", lp.embedding_matrix / h, "ceil(V / (m·t))·m·t");
  return lp;
}

}  // namespace

bool lm_uses_sp_formula(const Config& c) {
  return c.sequence_parallel && c.recompute_granularity == RecomputeGranularity::selective;
}

ModelState lm_model_state(const Config& c, Trace* trace) {
  const LmParams lp = count_lm(c, trace);
  const double t = double(c.tensor_model_parallel_size), p = double(c.pipeline_model_parallel_size);
  const double e = double(c.expert_model_parallel_size), te = double(c.expert_tensor_parallel_size);
  const double ld = double(lp.decoder_dense), lm = double(lp.decoder_moe);
  const double mtp = double(c.mtp_num_layers);

  // Decoder block buckets (final norm replicated) and the MTP block's.
  const double tp_block = lp.dense_layer.tensor_parallel * ld + lp.moe_layer.tensor_parallel * lm;
  const double rep_block =
      lp.dense_layer.replicated * ld + lp.moe_layer.replicated * lm + lp.final_norm;
  const double exp_block = lp.moe_layer.expert * lm;
  const LayerBuckets& mtp_layer = lp.mtp_is_moe ? lp.moe_layer : lp.dense_layer;
  const double tp_mtp = mtp_layer.tensor_parallel * mtp, rep_mtp = mtp_layer.replicated * mtp;
  const double exp_mtp = mtp_layer.expert * mtp;
  const double emb = lp.embedding_matrix;
  const bool untied = !c.share_embeddings_and_output_weights;

  ModelState s;
  s.layers.total = c.num_layers + c.mtp_num_layers;
  s.layers.moe = lp.decoder_moe + (lp.mtp_is_moe ? c.mtp_num_layers : 0);
  s.layers.dense = s.layers.total - s.layers.moe;
  s.params.embedding = untied ? 2 * emb : emb;
  s.params.routed_experts = exp_block + exp_mtp;
  s.params.dense_transformer = tp_block + rep_block + tp_mtp + rep_mtp;
  s.params.total = s.params.dense_transformer + s.params.routed_experts + s.params.embedding;
  s.params.active = s.params.total - s.params.routed_experts +
                    lp.moe_layer.active_expert * (lm + (lp.mtp_is_moe ? mtp : 0.0));
  note(trace, "lm.total_parameters", s.params.total,
       "dense_layer·L_dense + moe_layer·L_moe + n·h + MTP block + h·V_pad (×2 untied)");

  // §4.2: the most-loaded shard holds 1/p of the decoder, the whole MTP block and an embedding.
  s.params.embedding_per_gpu = emb / t + (untied && c.pipeline_model_parallel_size == 1 ? emb / t : 0.0);
  const double tensor_parallel_part = (tp_block / p + tp_mtp + emb) / t;
  const double replicated_part = rep_block / p + rep_mtp;
  s.params.dense_per_gpu = tensor_parallel_part + replicated_part;
  if (untied && c.pipeline_model_parallel_size == 1) s.params.dense_per_gpu += emb / t;
  s.params.routed_per_gpu = (exp_block / p + exp_mtp) / (te * e);
  s.params.per_gpu = s.params.dense_per_gpu + s.params.routed_per_gpu;
  note(trace, "lm.dense_per_gpu", s.params.dense_per_gpu,
       "(TP_block/p + TP_mtp + h·V_pad)/t + REP_block/p + REP_mtp (+ h·V_pad/t untied, p = 1)");
  note(trace, "lm.routed_per_gpu", s.params.routed_per_gpu, "(EXP_block/p + EXP_mtp)/(t_e·e)");

  // Dense optimizer over DP only (quirk 11); experts over W // (t_e·e·p), W = d·t·p·c.
  const double world = double(c.data_parallel_size) * t * p * double(c.context_parallel_size);
  s.dense_shard = double(c.data_parallel_size);
  s.expert_shard = std::floor(world / (te * e * p));
  s.dense_bpp = bytes_per_parameter(c, s.dense_shard);
  s.expert_bpp = bytes_per_parameter(c, s.expert_shard);
  note(trace, "lm.dense_optimizer_shard", s.dense_shard, "d");
  note(trace, "lm.expert_optimizer_shard", s.expert_shard, "W // (t_e·e·p), W = d·t·p·c");
  note(trace, "lm.dense_bytes_per_parameter", s.dense_bpp, "18, or 6 + 12/d with the distributed optimizer");
  return s;
}

double lm_activation(const Config& c, int64_t num_microbatches, Trace* trace) {
  const double s = double(c.seq_length), b = double(c.micro_batch_size), h = double(c.hidden_size);
  const double p = double(c.pipeline_model_parallel_size), t = double(c.tensor_model_parallel_size);
  const double L = double(c.num_layers);
  const double vpad = double(padded_vocab_size(c.vocab_size, c.make_vocab_size_divisible_by,
                                               c.tensor_model_parallel_size));
  const bool sp = lm_uses_sp_formula(c);

  double x = 0;
  if (sp) {
    // Korthikanti et al. Table 2 with r = f/h (MoE and MTP ignored, quirk 6).
    x = (s * b * h) * (18 + 4 * (double(c.ffn_hidden_size) / h));
    note(trace, "lm.activation_per_layer", x, "s·b·h·(18 + 4·f/h)  [SP + selective]");
  } else {
    x = s * b * h * (10 + 24 / t);
    note(trace, "lm.activation_per_layer", x, "s·b·h·(10 + 24/t)  [without SP, f ignored]");
  }
  x *= L;
  x += 8 * s * b * p;
  x += s * b * h * p;
  note(trace, "lm.activation_with_embedding", x, "per_layer·L + 8·s·b·p + s·b·h·p");
  x *= reference_schedule_factor(c, num_microbatches, trace, "lm");
  if (sp) {
    if (c.pipeline_model_parallel_size == 1) x += s * b * h * 4 * (1 + vpad / h);
    const double bytes = x / t;
    note(trace, "lm.activation_bytes", bytes, "(… + s·b·h·4·(1 + V_pad/h) if p = 1) / t");
    return bytes;
  }
  if (c.pipeline_model_parallel_size == 1) {
    double logits = s * b * vpad;
    logits /= t;
    const double final_norm_output = s * b * h;
    x += (logits + final_norm_output) * 2;
  }
  x *= 1.05;  // Megatron-LM's flat 5 % for optimizer and miscellaneous temporaries
  note(trace, "lm.activation_bytes", x, "(… + (s·b·V_pad/t + s·b·h)·2 if p = 1) × 1.05, no ÷t");
  return x;
}

}  // namespace trainmem::detail
