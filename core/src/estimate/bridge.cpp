// Profile "megatron-bridge": NVIDIA Megatron-Bridge estimate_training_memory
// (src/megatron/bridge/training/utils/theoretical_memory_utils.py at f43e405a), reproduced
// step by step from ../shared/reference/megatron-formulas.md §3, quirks included.
// Association order follows §7 so that results agree to the last bit in practice.
#include <algorithm>
#include <cmath>

#include "layout.hpp"
#include "profiles.hpp"

namespace trainmem::detail {
namespace {

// §3.2: MLP matrix factor. Only SwiGLU counts three matrices; GeGLU gets two (quirk 4).
double mlp_matrix_factor(const Config& c) {
  return c.gated_linear_unit && c.activation_func == ActivationFunc::silu ? 3.0 : 2.0;
}

// §3.4: bytes per parameter for an optimizer sharded over n ranks.
double bytes_per_parameter(const Config& c, double n) {
  return c.use_distributed_optimizer ? 6.0 + 12.0 / std::max(1.0, n) : 18.0;
}

// The vocabulary the estimator uses: padded only when should_pad_vocab (§2, §6 item 8).
double vocab_used(const Config& c) {
  return c.should_pad_vocab ? double(padded_vocab_size(c.vocab_size, c.make_vocab_size_divisible_by,
                                                       c.tensor_model_parallel_size))
                            : double(c.vocab_size);
}

struct BridgeParams {
  double attention = 0, layer_norms = 0, dense_mlp = 0, shared = 0, routed = 0, latent = 0;
  double dense_layer = 0;      // non-expert parameters of a dense layer
  double moe_layer_dense = 0;  // non-expert parameters of an MoE layer
  double final_norm = 0;
  double embedding_matrix = 0;  // h · V'
  bool mtp_is_moe = false;
  LayerCounts layers;
};

// §3.1 layer pattern: decoder layers by moe_layer_freq, then M MTP copies of the last one.
LayerCounts bridge_layer_counts(const Config& c) {
  const int64_t L = c.num_layers, M = c.mtp_num_layers;
  int64_t decoder_moe = 0;
  if (c.is_moe()) {
    if (!c.moe_layer_freq_list.empty()) {
      for (uint8_t x : c.moe_layer_freq_list) decoder_moe += x;
    } else {
      decoder_moe = (L - 1) / c.moe_layer_freq + 1;  // i in [0, L) with i % freq == 0
    }
  }
  const bool mtp_is_moe = L > 0 && c.is_moe_layer(L - 1);
  LayerCounts layers;
  layers.total = L + M;
  layers.moe = decoder_moe + (mtp_is_moe ? M : 0);
  layers.dense = layers.total - layers.moe;
  return layers;
}

BridgeParams count_bridge(const Config& c, Trace* trace) {
  BridgeParams b;
  const double h = double(c.hidden_size), a = double(c.num_attention_heads);
  const double g = double(c.num_query_groups), k = double(c.kv_channels);
  const double F = mlp_matrix_factor(c);
  const int64_t L = c.num_layers;

  b.layers = bridge_layer_counts(c);
  b.mtp_is_moe = L > 0 && c.is_moe_layer(L - 1);

  // §3.2 per-layer parameters.
  b.attention = 2 * h * h * ((1 + g / a) * (k * a / h));
  b.layer_norms = 4 * h;
  b.final_norm = 2 * h;
  b.dense_mlp = F * h * double(c.ffn_hidden_size);
  b.shared = F * h * double(c.moe_shared_expert_intermediate_size);
  if (c.is_moe() && b.layers.moe > 0) {
    const double fe = double(c.moe_ffn_hidden_size), E = double(c.num_moe_experts);
    if (c.moe_latent_size > 0) {
      const double latent = double(c.moe_latent_size);
      b.routed = F * latent * fe * E;
      b.latent = 2 * h * latent;
    } else {
      b.routed = F * h * fe * E;
    }
  }
  b.dense_layer = b.attention + b.layer_norms + b.dense_mlp;
  b.moe_layer_dense = b.attention + b.layer_norms + (b.shared + b.latent);
  b.embedding_matrix = h * vocab_used(c);

  note(trace, "bridge.attention_per_layer", b.attention,
       "2·h·h·((1 + g/a)·(k·a/h))  [§3.2: Q,O = 2·h·k·a; K,V = 2·h·k·g]");
  note(trace, "bridge.layernorms_per_layer", b.layer_norms, "4·h  [two LayerNorms, weight + bias]");
  note(trace, "bridge.mlp_matrix_factor", F, "3 if gated_linear_unit and silu (SwiGLU), else 2");
  note(trace, "bridge.dense_mlp_per_layer", b.dense_mlp, "F·h·f");
  if (c.is_moe()) {
    note(trace, "bridge.shared_expert_per_moe_layer", b.shared, "F·h·f_s");
    note(trace, "bridge.routed_experts_per_moe_layer", b.routed,
         "F·h·f_e·E  (latent MoE: F·ℓ·f_e·E)");
    note(trace, "bridge.latent_projections_per_moe_layer", b.latent, "2·h·ℓ (latent MoE only)");
  }
  note(trace, "bridge.layers_total", double(b.layers.total), "L + mtp_num_layers");
  note(trace, "bridge.layers_moe", double(b.layers.moe), "layers with i % moe_layer_freq == 0 (or list) + MoE MTP layers");
  return b;
}

}  // namespace

ModelState bridge_model_state(const Config& c, Trace* trace, std::vector<StageParams>* stages) {
  const BridgeParams b = count_bridge(c, trace);
  const double t = double(c.tensor_model_parallel_size), p = double(c.pipeline_model_parallel_size);
  const double e = double(c.expert_model_parallel_size), te = double(c.expert_tensor_parallel_size);
  const double d = double(c.data_parallel_size), cp = double(c.context_parallel_size);
  const int64_t L = c.num_layers, M = c.mtp_num_layers;

  ModelState s;
  s.layers = b.layers;
  // Sums over all L + M layers plus the final norm (§3.2).
  const double dense_sum =
      double(b.layers.dense) * b.dense_layer + double(b.layers.moe) * b.moe_layer_dense;
  s.params.dense_transformer = dense_sum + b.final_norm;
  s.params.routed_experts = double(b.layers.moe) * b.routed;
  const double emb = b.embedding_matrix;
  s.params.embedding = c.share_embeddings_and_output_weights ? emb : 2 * emb;
  s.params.total = s.params.dense_transformer + s.params.routed_experts + s.params.embedding;
  // Active: top-K of E routed experts per MoE layer (not in Bridge's output; same counting).
  s.params.active = s.params.total - s.params.routed_experts +
                    (c.is_moe() ? s.params.routed_experts * double(c.moe_router_topk) /
                                      double(c.num_moe_experts)
                                : 0.0);

  if (!c.uneven_pipeline()) {
    // Even split: every stage holds 1/p of the dense layers; the heaviest also one embedding
    // matrix; untied input and output embedding share a GPU only when p = 1.
    s.params.embedding_per_gpu = emb / t;
    if (!c.share_embeddings_and_output_weights && c.pipeline_model_parallel_size == 1)
      s.params.embedding_per_gpu += emb / t;
    s.params.dense_per_gpu = s.params.dense_transformer / (p * t) + s.params.embedding_per_gpu;
    s.params.routed_per_gpu = s.params.routed_experts / (p * e * te);
    note(trace, "bridge.dense_per_gpu", s.params.dense_per_gpu,
         "dense_transformer/(p·t) + Emb/t (+ Emb/t if untied and p = 1)  [§3.3 even split]");
    if (stages && c.pipeline_model_parallel_size > 1) {
      for (int64_t r = 0; r < c.pipeline_model_parallel_size; ++r) {
        StageParams stage;
        stage.num_layers = L / c.pipeline_model_parallel_size;
        stage.dense = s.params.dense_transformer / p + (r == 0 ? emb : 0.0) +
                      (r == c.pipeline_model_parallel_size - 1 ? emb : 0.0);
        stage.routed = s.params.routed_experts / p;
        stages->push_back(stage);
      }
    }
  } else {
    // Uneven split (§3.3): per-stage sums; MTP layers and the final norm on the last stage;
    // an embedding matrix on the first and on the last stage whatever the tying.
    const PipelineLayout split(c);
    double dense_max = -1, routed_max = -1;
    int64_t dense_arg = 0, routed_arg = 0;
    for (int64_t r = 0; r < split.p; ++r) {
      StageParams stage;
      stage.num_layers = split.count(r);
      split.for_each_layer(r, [&](int64_t i, int64_t, int64_t) {
        const bool moe = c.is_moe_layer(i);
        stage.dense += moe ? b.moe_layer_dense : b.dense_layer;
        stage.routed += moe ? b.routed : 0.0;
      });
      if (r == split.p - 1) {
        stage.dense += double(M) * (b.mtp_is_moe ? b.moe_layer_dense : b.dense_layer);
        stage.routed += b.mtp_is_moe ? double(M) * b.routed : 0.0;
        stage.dense += b.final_norm;
      }
      if (r == 0) stage.dense += emb;
      if (r == split.p - 1) stage.dense += emb;
      // Python's max() keeps the first of equal values.
      if (stage.dense > dense_max) dense_max = stage.dense, dense_arg = r;
      if (stage.routed > routed_max) routed_max = stage.routed, routed_arg = r;
      if (stages) stages->push_back(stage);
    }
    s.params.dense_per_gpu = dense_max / t;
    s.params.routed_per_gpu = routed_max / (e * te);
    const bool holds_embedding = dense_arg == 0 || dense_arg == split.p - 1;
    s.params.embedding_per_gpu = holds_embedding ? emb / t : 0.0;
    s.independent_maxima = s.params.routed_experts > 0 && dense_arg != routed_arg;
    note(trace, "bridge.dense_per_gpu", s.params.dense_per_gpu,
         "max over stages of dense_stage[r] / t  [§3.3 uneven split]");
    note(trace, "bridge.dense_max_stage", double(dense_arg), "stage with the most dense parameters");
    note(trace, "bridge.routed_max_stage", double(routed_arg), "stage with the most routed parameters");
  }
  s.params.per_gpu = s.params.dense_per_gpu + s.params.routed_per_gpu;

  // §3.4 optimizer shards and bytes per parameter.
  const double dense_shard = d * cp;
  const double expert_shard = std::max(
      1.0, std::floor(d * t * cp / std::max(1.0, e * te)));
  s.dense_shard = dense_shard;
  s.expert_shard = expert_shard;
  s.dense_bpp = bytes_per_parameter(c, dense_shard);
  s.expert_bpp = bytes_per_parameter(c, expert_shard);
  note(trace, "bridge.dense_optimizer_shard", dense_shard, "d·c");
  note(trace, "bridge.expert_optimizer_shard", expert_shard, "max(1, floor(d·t·c / (e·t_e)))");
  note(trace, "bridge.dense_bytes_per_parameter", s.dense_bpp,
       "18 without the distributed optimizer, else 6 + 12/max(1, n)");
  note(trace, "bridge.expert_bytes_per_parameter", s.expert_bpp,
       "18 without the distributed optimizer, else 6 + 12/max(1, n)");
  return s;
}

double bridge_activation(const Config& c, int64_t num_microbatches, Trace* trace) {
  const LayerCounts layers = bridge_layer_counts(c);
  const double s = double(c.seq_length), mb = double(c.micro_batch_size), h = double(c.hidden_size);
  const double p = double(c.pipeline_model_parallel_size), t = double(c.tensor_model_parallel_size);
  const double cp = double(c.context_parallel_size);
  const double f = double(c.ffn_hidden_size);

  // §3.5 step 1: average MLP width ratio over all layers (MoE: active width f_e·K + f_s).
  double mlp_width = double(layers.dense) * f;
  if (c.is_moe() && layers.moe > 0)
    mlp_width += double(layers.moe) *
                 (double(c.moe_ffn_hidden_size) * double(c.moe_router_topk) +
                  double(c.moe_shared_expert_intermediate_size));
  const double ratio = mlp_width / (double(layers.total) * h);
  // Step 2: Korthikanti et al. 2022 Table 2, SP + selective recompute: sbh(18 + 4·f/h) bytes.
  const double per_layer = s * mb * h * (18 + 4 * ratio);
  // Step 3: the first stage keeps p microbatches of L/p layers: L layers' worth.
  double x = per_layer * double(layers.total);
  note(trace, "bridge.mlp_width_ratio", ratio, "(L_dense·f + L_moe·(f_e·K + f_s)) / (L_tot·h)");
  note(trace, "bridge.activation_per_layer", per_layer, "s·b·h·(18 + 4·r)  [Korthikanti Table 2]");
  note(trace, "bridge.activation_layers", x, "per_layer · L_tot");
  // Step 4: embedding input (8 B per token) and embedding dropout mask, p microbatches in flight.
  x += 8 * s * mb * p;
  x += s * mb * h * p;
  note(trace, "bridge.activation_with_embedding", x, "+ 8·s·b·p + s·b·h·p");
  // Step 5: pipeline schedule factor.
  x *= reference_schedule_factor(c, num_microbatches, trace, "bridge");
  // Step 6: final-norm output and fp32 logits for the loss, only when p = 1.
  if (c.pipeline_model_parallel_size == 1) {
    x += s * mb * h * 4 * (1 + vocab_used(c) / h);
    note(trace, "bridge.activation_with_output_layer", x, "+ s·b·h·4·(1 + V'/h)  (p = 1 only)");
  }
  // Step 7: divided over tensor (sequence) and context parallel ranks.
  const double bytes = x / (t * cp);
  note(trace, "bridge.activation_bytes", bytes, "X / (t·c)");
  return bytes;
}

}  // namespace trainmem::detail
