// Per-tensor activation accounting of the trainmem profile (core/src/activations.cpp).
// Golden values are worked out by hand in the comments from the rule each entry cites:
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models") §4
// and Table 2 for the dense block, the framework code otherwise.
#include <string_view>
#include <vector>

#include "support.hpp"
#include "trainmem/activations.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

namespace {

// The trainmem profile is not selectable in resolve() yet: resolve as megatron-bridge and switch
// the profile by hand. The activation fields keep their Megatron defaults (dropout 0.1, flash
// attention, recompute_modules = core_attn) unless a test sets them.
Config trainmem_config(const std::string& json) {
  Config c = config_from(json);
  c.profile = Profile::trainmem;
  return c;
}

double sum_of(const SavedTensors& detail) {
  double sum = 0;
  for (const SavedTensor& t : detail) sum += t.bytes;
  return sum;
}

double bytes_of(const SavedTensors& detail, std::string_view name) {
  for (const SavedTensor& t : detail)
    if (t.name == name) return t.bytes;
  return 0;
}

bool has(const SavedTensors& detail, std::string_view name) {
  for (const SavedTensor& t : detail)
    if (t.name == name) return true;
  return false;
}

// The norms' per-token statistics, which Korthikanti §4.1 sets aside (2sb next to sbh).
double norm_statistics(const SavedTensors& detail) {
  double sum = 0;
  for (const SavedTensor& t : detail)
    if (t.name.size() > 6 && t.name.substr(t.name.size() - 6) == "_stats" && t.module == "norm")
      sum += t.bytes;
  return sum;
}

struct Row {
  std::string_view name, module;
  double bytes;
  std::string_view dtype;
};

void check_rows(const SavedTensors& got, const std::vector<Row>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i, want[i].name);
    CHECK(got[i].name == want[i].name);
    CHECK(got[i].module == want[i].module);
    CHECK(got[i].bytes == want[i].bytes);
    CHECK(got[i].dtype == want[i].dtype);
    CHECK(!got[i].source.empty());
  }
}

// GPT-3 175B shapes as in Korthikanti et al. Table 3: h 12288, a 96 (k·a = h), f = 4h GELU,
// LayerNorm, s 2048, b 1, t 8.
Config paper_config() {
  Config c = trainmem_config(R"({"num_layers": 96, "hidden_size": 12288,
      "num_attention_heads": 96, "vocab_size": 51200, "seq_length": 2048, "micro_batch_size": 1,
      "tensor_model_parallel_size": 8, "sequence_parallel": true})");
  REQUIRE(c.ffn_hidden_size == 4 * 12288);
  REQUIRE(c.normalization == Normalization::layer_norm);
  REQUIRE(c.activation_func == ActivationFunc::gelu);
  REQUIRE_FALSE(c.gated_linear_unit);
  return c;
}

// A small dense block: GQA (a 4, g 2, k 16), SwiGLU f 128, RMSNorm, TP 2 with SP, s 128, b 2.
constexpr const char* k_small_dense = R"({"num_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "num_query_groups": 2, "ffn_hidden_size": 128, "vocab_size": 1000,
    "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
    "seq_length": 128, "micro_batch_size": 2, "tensor_model_parallel_size": 2,
    "sequence_parallel": true})";

// The same block with an MoE MLP: 8 experts of 32, top-2, one shared expert of 64, EP 2, ETP 1.
constexpr const char* k_small_moe = R"({"num_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "num_query_groups": 2, "ffn_hidden_size": 128, "vocab_size": 1000,
    "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
    "num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 32,
    "moe_shared_expert_intermediate_size": 64, "expert_model_parallel_size": 2,
    "expert_tensor_parallel_size": 1, "seq_length": 128, "micro_batch_size": 2,
    "tensor_model_parallel_size": 2, "sequence_parallel": true})";

Config with_granularity(Config c, RecomputeGranularity g, uint32_t modules = 0) {
  c.recompute_granularity = g;
  if (g == RecomputeGranularity::selective) c.recompute_modules = modules;
  return c;
}

constexpr uint32_t bit(RecomputeModule m) { return 1u << unsigned(m); }

}  // namespace

// ---- Korthikanti et al. 2022, Table 2 ----

TEST_CASE("the Korthikanti Table 2 rows are reproduced tensor by tensor", "[activations][golden]") {
  Config c = paper_config();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;  // 25,165,824
  SavedTensors d;

  SECTION("sequence parallelism plus selective recompute keeps 34sbh/t") {
    // The reference's own assumptions: SP, selective core_attn, bf16, dropout on. Attention
    // 11sbh (QKV input 2, Q and K 4, V 2, projection input 2, dropout mask 1), two LayerNorm
    // inputs 4sbh, MLP 19sbh (input 2, GeLU input 8, fc2 input 8, mask 1), all divided by t:
    // 34·25,165,824/8 = 106,954,752.
    c.recompute_granularity = RecomputeGranularity::selective;  // recompute_modules = core_attn
    const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
    CHECK(total - norm_statistics(d) == 34 * sbh / t);
    CHECK(total - norm_statistics(d) == 106'954'752.0);
    // Beside them the two LayerNorms keep fp32 mean and rstd per token: 2·8·s·b/t = 4,096.
    CHECK(norm_statistics(d) == 4'096.0);
    CHECK(total == 106'958'848.0);
  }
  SECTION("the flash kernel makes no difference once core attention is recomputed") {
    c.recompute_granularity = RecomputeGranularity::selective;
    Config unfused = c;
    unfused.attention_backend = AttentionBackend::unfused;
    CHECK(layer_activation_bytes(c, false, LayerRecompute::policy) ==
          layer_activation_bytes(unfused, false, LayerRecompute::policy));
  }
  SECTION("tensor parallelism alone with unfused attention keeps sbh(10 + 24/t + 5as/(ht))") {
    // Stays whole: LayerNorm inputs 4, QKV and fc1 inputs 2 + 2, two dropout masks 1 + 1 = 10;
    // split: Q, K, V 6, projection input 2, GeLU input 8, fc2 input 8 = 24; softmax output 2,
    // its dropout mask 1 and output 2 per a·s² element: 5as/(ht) = 5·96·2048/(12288·8) = 10.
    // 25,165,824·(10 + 3 + 10) = 578,813,952.
    c.sequence_parallel = false;
    c.attention_backend = AttentionBackend::unfused;
    c.recompute_granularity = RecomputeGranularity::none;
    const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
    CHECK(total - norm_statistics(d) == sbh * (10 + 24 / t + 5 * a * s / (h * t)));
    CHECK(total - norm_statistics(d) == 578'813'952.0);
    CHECK(norm_statistics(d) == 2 * 8 * s * b);  // not split without SP
  }
  SECTION("tensor and sequence parallelism with unfused attention keeps sbh(34/t + 5as/(ht))") {
    // 25,165,824·(4.25 + 10) = 358,612,992.
    c.attention_backend = AttentionBackend::unfused;
    c.recompute_granularity = RecomputeGranularity::none;
    const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
    CHECK(total - norm_statistics(d) == 358'612'992.0);
  }
  SECTION("tensor parallelism with selective recompute keeps sbh(10 + 24/t)") {
    // 25,165,824·13 = 327,155,712.
    c.sequence_parallel = false;
    c.recompute_granularity = RecomputeGranularity::selective;
    const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
    CHECK(total - norm_statistics(d) == 327'155'712.0);
  }
  SECTION("no parallelism with unfused attention keeps sbh(34 + 5as/h)") {
    // t = 1: 5·96·2048/12288 = 80, so 25,165,824·114 = 2,868,903,936.
    c.tensor_model_parallel_size = 1;
    c.sequence_parallel = false;
    c.attention_backend = AttentionBackend::unfused;
    c.recompute_granularity = RecomputeGranularity::none;
    const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
    CHECK(total - norm_statistics(d) == 2'868'903'936.0);
  }
  SECTION("full recompute keeps the layer input 2sbh (2sbh/t with sequence parallelism)") {
    c.recompute_granularity = RecomputeGranularity::full;
    CHECK(layer_activation_bytes(c, false, LayerRecompute::checkpointed, &d) == 2 * sbh / t);
    REQUIRE(d.size() == 1);
    CHECK(d[0].name == "layer.input");
    c.sequence_parallel = false;
    CHECK(layer_activation_bytes(c, false, LayerRecompute::checkpointed) == 2 * sbh);
    CHECK(layer_activation_bytes(c, false, LayerRecompute::inside_group) == 0);
  }
}

// ---- Golden rows for small blocks, one tensor per line ----

TEST_CASE("a small GQA SwiGLU block on TP2 with SP lists every saved tensor", "[activations][golden]") {
  const Config c = trainmem_config(k_small_dense);
  REQUIRE(c.kv_channels == 16);
  SavedTensors d;
  const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
  // T = s·b = 256 tokens in the TP region, T_sp = 128 in the SP region; bf16 = 2 bytes.
  check_rows(d, {
      {"norm.attention_input", "norm", 16'384, "bf16"},   // 2·h·T_sp = 2·64·128
      {"norm.attention_stats", "norm", 512, "fp32"},      // RMSNorm rsigma: 4·T_sp
      {"attention.qkv_input", "attention", 16'384, "bf16"},  // 2·64·128
      {"attention.q", "attention", 16'384, "bf16"},       // 2·(a·k/t = 32)·256
      {"attention.k", "attention", 8'192, "bf16"},        // 2·(g·k/t = 16)·256
      {"attention.v", "attention", 8'192, "bf16"},
      {"attention.softmax_stats", "attention", 2'048, "fp32"},  // 4·(a/t = 2)·256
      // flash-attn with b = 2 > 1: its saved bshd `out` beside linear_proj's sbhd copy.
      {"attention.kernel_output", "attention", 16'384, "bf16"},  // 2·32·256
      {"attention.proj_input", "attention", 16'384, "bf16"},    // 2·32·256
      {"attention.output_dropout_mask", "attention", 8'192, "mask"},  // 1·64·128
      {"norm.mlp_input", "norm", 16'384, "bf16"},
      {"norm.mlp_stats", "norm", 512, "fp32"},
      {"mlp.fc1_input", "mlp", 16'384, "bf16"},
      {"mlp.fc1_output", "mlp", 65'536, "bf16"},  // gated: 2·(2f/t = 128)·256
      {"mlp.fc2_input", "mlp", 32'768, "bf16"},   // 2·(f/t = 64)·256
      {"mlp.output_dropout_mask", "mlp", 8'192, "mask"},
  });
  // Attention half 109,056 + MLP half 139,776.
  CHECK(total == 248'832.0);
  CHECK(sum_of(d) == total);

  SECTION("selective core_attn recompute drops the softmax statistics and the kernel's own out") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::core_attn));
    SavedTensors s;
    // 248,832 − 2,048 − 16,384: the checkpoint's output is the sbhd copy linear_proj keeps.
    CHECK(layer_activation_bytes(sel, false, LayerRecompute::policy, &s) == 230'400.0);
    CHECK_FALSE(has(s, "attention.softmax_stats"));
    CHECK_FALSE(has(s, "attention.kernel_output"));
    // Re-running core attention in backward materialises both again: 2,048 + 16,384.
    CHECK(layer_recompute_working_bytes(sel, false) == 18'432.0);
  }
  SECTION("the cuDNN kernel works in sbhd and keeps one storage for out and linear_proj's input") {
    Config fused = c;
    fused.attention_backend = AttentionBackend::fused;
    CHECK(layer_activation_bytes(fused, false, LayerRecompute::policy) == 248'832.0 - 16'384);
  }
  SECTION("full recompute keeps the input and re-materialises the rest in backward") {
    const Config full = with_granularity(c, RecomputeGranularity::full);
    CHECK(layer_activation_bytes(full, false, LayerRecompute::checkpointed) == 16'384.0);
    CHECK(layer_recompute_working_bytes(full, false) == 248'832.0 - 16'384);
    // The block method leaves layers beyond recompute_num_layers alone: everything is kept.
    CHECK(layer_activation_bytes(full, false, LayerRecompute::policy) == 248'832.0);
  }
  SECTION("selective mlp recompute keeps the residual stream entering the fused norm and MLP") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::mlp));
    SavedTensors s;
    // Attention half 109,056 + norm.mlp_input 16,384 + mask 8,192.
    CHECK(layer_activation_bytes(sel, false, LayerRecompute::policy, &s) == 133'632.0);
    CHECK_FALSE(has(s, "mlp.fc1_output"));
    CHECK_FALSE(has(s, "norm.mlp_stats"));
    CHECK(layer_recompute_working_bytes(sel, false) == 248'832.0 - 133'632.0);
  }
  SECTION("layernorm recompute changes nothing where TE fuses the norm into the linear") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::layernorm));
    CHECK(layer_activation_bytes(sel, false, LayerRecompute::policy) == 248'832.0);
  }
}

TEST_CASE("torchtitan per-op checkpointing keeps every other matmul output and the attention output",
          "[activations][golden]") {
  const Config c = with_granularity(trainmem_config(k_small_dense), RecomputeGranularity::selective_op);
  SavedTensors d;
  const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
  // mm order wq(1, kept) wk(2) wv(3, kept) wo(4) w1(5, kept) w3(6) w2(7, kept); SDPA output and
  // logsumexp and the reduce-scatter outputs are always kept; the block input is the argument.
  check_rows(d, {
      {"layer.input", "layer", 16'384, "bf16"},                   // 2·64·128
      {"attention.wq_output", "attention", 16'384, "bf16"},       // 2·32·256
      {"attention.wv_output", "attention", 8'192, "bf16"},        // 2·16·256
      {"attention.sdpa_output", "attention", 16'384, "bf16"},     // 2·32·256
      {"attention.sdpa_logsumexp", "attention", 2'048, "fp32"},   // 4·2·256
      {"attention.wo_reduce_scatter", "attention", 16'384, "bf16"},  // 2·64·128
      {"mlp.w1_output", "mlp", 32'768, "bf16"},                   // 2·64·256
      {"mlp.w2_output", "mlp", 32'768, "bf16"},                   // partial sums 2·64·256
      {"mlp.w2_reduce_scatter", "mlp", 16'384, "bf16"},           // 2·64·128
  });
  CHECK(total == 157'696.0);
  // The block is re-run whole in backward: the difference to keeping everything (the dense
  // golden's 248,832 under this test's Megatron defaults).
  CHECK(layer_recompute_working_bytes(c, false) == 248'832.0 - 157'696.0);

  SECTION("under FP8 the linears run _scaled_mm, which the policy does not save") {
    Config fp8 = c;
    fp8.fp8_recipe = Fp8Recipe::tensorwise;
    SavedTensors f;
    // 16,384 + 16,384 + 2,048 + 16,384 + 16,384.
    CHECK(layer_activation_bytes(fp8, false, LayerRecompute::policy, &f) == 67'584.0);
    CHECK_FALSE(has(f, "attention.wq_output"));
  }
  SECTION("cuDNN attention before torchtitan's save list named it: recomputed, not saved") {
    Config cudnn = c;
    cudnn.attention_backend = AttentionBackend::fused;
    // With the kernel in the list (today's torchtitan) cuDNN is saved like flash.
    CHECK(layer_activation_bytes(cudnn, false, LayerRecompute::policy) == 157'696.0);
    cudnn.op_sac_saves_cudnn_attention = false;
    SavedTensors n;
    // 157,696 less the output (16,384) and the logsumexp (2,048); the block's re-run in backward
    // makes both again. The whole block under cuDNN keeps 248,832 less flash-attn's 16,384-byte
    // bshd copy of its output (Megatron layout at b > 1), 232,448: the working set is the rest.
    CHECK(layer_activation_bytes(cudnn, false, LayerRecompute::policy, &n) == 139'264.0);
    CHECK_FALSE(has(n, "attention.sdpa_output"));
    CHECK_FALSE(has(n, "attention.sdpa_logsumexp"));
    CHECK(has(n, "attention.wq_output"));  // the matmul alternation does not count the SDPA
    CHECK(layer_recompute_working_bytes(cudnn, false) == 232'448.0 - 139'264.0);
    // Flash attention is in every version's list: the field does not touch it.
    Config flash = cudnn;
    flash.attention_backend = AttentionBackend::flash;
    CHECK(layer_activation_bytes(flash, false, LayerRecompute::policy) == 157'696.0);
  }
}

TEST_CASE("op_sac_saves_cudnn_attention is torchtitan's per-op policy's own", "[activations][fields]") {
  const std::string base = R"({"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "ffn_hidden_size": 128, "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 2,
      "profile": "trainmem", "framework": "fsdp2", "model_implementation": "torchtitan",
      "op_sac_saves_cudnn_attention": false, "recompute_granularity": )";
  CHECK(messages_for(base + R"("selective_op"})").empty());
  CHECK(messages_for(base + R"("full"})") ==
        std::vector<std::string>{"op_sac_saves_cudnn_attention: applies to recompute_granularity "
                                 "\"selective_op\" only"});
}

TEST_CASE("a small MoE block lists router dispatch experts and shared experts", "[activations][golden]") {
  const Config c = trainmem_config(k_small_moe);
  REQUIRE(c.expert_tensor_parallel_size == 1);
  SavedTensors d;
  const double total = layer_activation_bytes(c, true, LayerRecompute::policy, &d);
  // The attention half is the dense golden's 109,056; the MoE half follows. Expert tokens per
  // GPU N = T_sp·K·ETP = 128·2·1 = 256 (balanced routing, EP does not change it).
  std::vector<Row> moe_half = {
      {"norm.mlp_input", "norm", 16'384, "bf16"},
      {"norm.mlp_stats", "norm", 512, "fp32"},
      {"moe.input", "moe", 16'384, "bf16"},                 // norm output, router + shared fc1
      {"moe.router_probs", "moe", 4'096, "fp32"},           // 4·E·T_sp = 4·8·128
      {"moe.router_topk_indices", "moe", 2'048, "int64"},   // 8·K·T_sp = 8·2·128
      {"moe.router_topk_probs", "moe", 1'024, "fp32"},      // 4·K·T_sp = 4·2·128
      {"moe.permutation_indices", "moe", 2'048, "int64"},   // 8·N_s = 8·K·T_sp = 8·2·128
      {"moe.permuted_probs_indices", "moe", 2'048, "int64"},  // 8·N_s, moe_utils.permute's probs index
      {"moe.expert_input", "moe", 32'768, "bf16"},          // 2·h·N = 2·64·256
      {"moe.expert_fc1_output", "moe", 32'768, "bf16"},     // 2·2f_e·N = 2·64·256
      {"moe.expert_fc2_input", "moe", 16'384, "bf16"},      // 2·f_e·N = 2·32·256
      {"moe.expert_probs", "moe", 1'024, "fp32"},           // 4·N
      {"moe.shared_fc1_output", "moe", 32'768, "bf16"},     // 2·(2f_s/t = 64)·T = 2·64·256
      {"moe.shared_fc2_input", "moe", 16'384, "bf16"},      // 2·(f_s/t = 32)·256
      {"moe.output_dropout_mask", "moe", 8'192, "mask"},    // 1·64·128
  };
  const std::vector<SavedTensor> tail(d.begin() + 10, d.end());
  check_rows(tail, moe_half);
  CHECK(total == 109'056.0 + 184'832.0);  // 179,712 + the router's top-k 3,072 + the probs index 2,048
  CHECK(sum_of(d) == total);

  SECTION("moe recompute keeps the norm and its output, the checkpoint's input") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::moe));
    // 109,056 + 16,384 + 512 + 16,384 + 8,192.
    CHECK(layer_activation_bytes(sel, true, LayerRecompute::policy) == 150'528.0);
  }
  SECTION("moe_act recompute drops the experts' fc2 input but keeps the fc1 output") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::moe_act));
    SavedTensors s;
    CHECK(layer_activation_bytes(sel, true, LayerRecompute::policy, &s) == total - 16'384);
    CHECK(bytes_of(s, "moe.expert_fc1_output") == 32'768.0);
    CHECK_FALSE(has(s, "moe.expert_fc2_input"));
  }
  SECTION("non-gated experts weight their activation's output unfused: three f-wide tensors") {
    // Megatron mlp.py MLP.forward @ 93aa335b: GELU without a bias cannot be fused, so
    // gelu(fc1 output) is multiplied by the probabilities on its own; that product keeps the
    // GELU output (the router trains) and is fc2's input. Per GPU f_e = 32, N = 256 rows:
    // fc1 output 2·32·256 = 16,384 (kept by gelu), GELU output 16,384 (kept by the product),
    // fc2 input 16,384. The dense MLP is unweighted: its GELU output is fc2's input.
    Config gelu = c;
    gelu.gated_linear_unit = false;
    gelu.activation_func = ActivationFunc::gelu;
    SavedTensors s;
    layer_activation_bytes(gelu, true, LayerRecompute::policy, &s);
    CHECK(bytes_of(s, "moe.expert_fc1_output") == 16'384.0);
    CHECK(bytes_of(s, "moe.expert_activation_output") == 16'384.0);
    CHECK(bytes_of(s, "moe.expert_fc2_input") == 16'384.0);
    CHECK_FALSE(has(s, "moe.shared_activation_output"));
    SECTION("relu keeps its result, the product is fc2's input") {
      Config relu = gelu;
      relu.activation_func = ActivationFunc::relu;
      SavedTensors r;
      layer_activation_bytes(relu, true, LayerRecompute::policy, &r);
      CHECK_FALSE(has(r, "moe.expert_fc1_output"));
      CHECK(bytes_of(r, "moe.expert_activation_output") == 16'384.0);
      CHECK(bytes_of(r, "moe.expert_fc2_input") == 16'384.0);
    }
  }
  SECTION("shared_experts recompute drops the shared expert's tensors") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::shared_experts));
    CHECK(layer_activation_bytes(sel, true, LayerRecompute::policy) == total - 32'768 - 16'384);
  }
  SECTION("layernorm recompute applies to the separate pre-MLP norm of an MoE layer") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::layernorm));
    // Drops the statistics 512 and the norm output moe.input 16,384.
    CHECK(layer_activation_bytes(sel, true, LayerRecompute::policy) == total - 512 - 16'384);
  }
  SECTION("a capacity factor bounds every expert's tokens (EP 2: cf 1.5 is below the cap 2)") {
    Config cf = c;
    cf.moe_expert_capacity_factor = 1.5;
    SavedTensors s;
    layer_activation_bytes(cf, true, LayerRecompute::policy, &s);
    CHECK(bytes_of(s, "moe.expert_input") == 1.5 * 32'768);
    CHECK(bytes_of(s, "moe.expert_fc1_output") == 1.5 * 32'768);
  }
  SECTION("expert tensor parallelism gathers the tokens and splits the width") {
    Config etp = c;
    etp.expert_tensor_parallel_size = 2;
    etp.expert_model_parallel_size = 1;
    SavedTensors s;
    layer_activation_bytes(etp, true, LayerRecompute::policy, &s);
    CHECK(bytes_of(s, "moe.expert_input") == 2 * 32'768.0);       // N doubles, h whole
    CHECK(bytes_of(s, "moe.expert_fc1_output") == 32'768.0);      // N doubles, f_e halves
  }
}

TEST_CASE("a small MLA block keeps the latents, the up-projected heads and the kernel stats",
          "[activations][golden]") {
  Config c = trainmem_config(k_small_dense);
  c.multi_latent_attention = true;
  c.q_lora_rank = 32;
  c.kv_lora_rank = 16;
  c.qk_head_dim = 16;
  c.qk_pos_emb_head_dim = 8;
  c.v_head_dim = 16;
  c.qk_layernorm = true;
  c.hidden_dropout = 0;
  SavedTensors d;
  const double total = layer_activation_bytes(c, false, LayerRecompute::policy, &d);
  const std::vector<SavedTensor> attention(d.begin(), d.begin() + 15);
  check_rows(attention, {
      {"norm.attention_input", "norm", 16'384, "bf16"},        // 2·64·128
      {"norm.attention_stats", "norm", 512, "fp32"},
      {"attention.down_proj_input", "attention", 16'384, "bf16"},  // shared by both down projs
      {"attention.q_latent", "attention", 8'192, "bf16"},      // 2·r_q·T_sp = 2·32·128
      {"attention.q_latent_stats", "attention", 512, "fp32"},
      {"attention.q_up_input", "attention", 8'192, "bf16"},
      {"attention.kv_latent", "attention", 4'096, "bf16"},     // 2·16·128
      {"attention.kv_latent_stats", "attention", 512, "fp32"},
      {"attention.kv_up_input", "attention", 4'096, "bf16"},
      {"attention.q", "attention", 24'576, "bf16"},            // 2·(a(d_qk + d_rope)/t = 48)·256
      {"attention.k", "attention", 24'576, "bf16"},
      {"attention.v", "attention", 16'384, "bf16"},            // 2·(a·d_v/t = 32)·256
      {"attention.softmax_stats", "attention", 2'048, "fp32"},
      {"attention.kernel_output", "attention", 16'384, "bf16"},  // flash-attn, b = 2: bshd out
      {"attention.proj_input", "attention", 16'384, "bf16"},
  });
  CHECK(sum_of(attention) == 159'232.0);
  CHECK(sum_of(d) == total);

  SECTION("mla_up_proj recompute keeps the latents and the rope key instead of q, k, v") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::mla_up_proj));
    SavedTensors s;
    layer_activation_bytes(sel, false, LayerRecompute::policy, &s);
    // 16,384 + 512 + 16,384 + q_latent 8,192 + kv_latent 4,096 + k_rope 2·8·256 = 4,096
    // + 2,048 + kernel output 16,384 + 16,384 = 84,480.
    CHECK(sum_of(std::vector<SavedTensor>(s.begin(), s.begin() + 9)) == 84'480.0);
    CHECK(bytes_of(s, "attention.k_rope_input") == 4'096.0);
    CHECK_FALSE(has(s, "attention.q"));
  }
  SECTION("layernorm recompute drops the separate input norm's output and statistics") {
    const Config sel = with_granularity(c, RecomputeGranularity::selective, bit(RecomputeModule::layernorm));
    CHECK(layer_activation_bytes(sel, false, LayerRecompute::policy) == total - 16'384 - 512);
  }
}

TEST_CASE("the embedding keeps token ids, the vocabulary mask and the dropout mask",
          "[activations][golden]") {
  const Config c = trainmem_config(k_small_dense);
  SavedTensors d;
  // ids 8·T = 8·256; TP > 1 mask 1·256; dropout mask h·T_sp = 64·128.
  CHECK(embedding_activation_bytes(c, &d) == 2'048.0 + 256 + 8'192);
  check_rows(d, {{"embedding.token_ids", "embedding", 2'048, "int64"},
                 {"embedding.vocab_mask", "embedding", 256, "mask"},
                 {"embedding.dropout_mask", "embedding", 8'192, "mask"}});
  Config learned = c;
  learned.max_position_embeddings = 4096;
  learned.hidden_dropout = 0;
  CHECK(embedding_activation_bytes(learned) == 2'048.0 + 256 + 2'048);
}

TEST_CASE("the output layer keeps fp32 logits for the loss unless cross entropy is fused",
          "[activations][golden]") {
  Config c = trainmem_config(k_small_dense);
  REQUIRE_FALSE(c.should_pad_vocab);  // V = 1000, V/t = 500 per GPU
  SavedTensors d;
  const double total = output_activation_bytes(c, &d);
  check_rows(d, {
      {"output.final_norm_input", "output", 16'384, "bf16"},
      {"output.final_norm_stats", "output", 512, "fp32"},
      {"output.output_layer_input", "output", 16'384, "bf16"},
      {"loss.softmax", "loss", 512'000, "fp32"},   // 4·500·256
      {"loss.target_mask", "loss", 256, "mask"},
      {"loss.masked_target", "loss", 2'048, "int64"},
  });
  CHECK(total == 547'584.0);
  // The 16-bit logits beside their fp32 copy: 2·500·256.
  CHECK(loss_transient_bytes(c) == 256'000.0);

  SECTION("fused cross entropy keeps the 16-bit logits and per-token statistics") {
    c.cross_entropy_loss_fusion = true;
    // 16,384 + 512 + 16,384 + 2·500·256 + 8·256 + 8·256.
    CHECK(output_activation_bytes(c) == 293'376.0);
    CHECK(loss_transient_bytes(c) == 256'000.0);  // the logits' gradient in backward
  }
  SECTION("fp32 compute has no 16-bit logits to cast from") {
    c.compute_dtype = Dtype::fp32;
    CHECK(loss_transient_bytes(c) == 0.0);
  }
  SECTION("no vocabulary means no embedding and no output layer") {
    c.vocab_size = 0;
    CHECK(output_activation_bytes(c) == 0.0);
    CHECK(embedding_activation_bytes(c) == 0.0);
    CHECK(loss_transient_bytes(c) == 0.0);
  }
}

// ---- Rules that are not golden rows ----

TEST_CASE("GQA keeps smaller keys and values and unfused attention expands them",
          "[activations][rule]") {
  Config c = trainmem_config(k_small_dense);  // a 4, g 2
  SavedTensors flash, unfused;
  layer_activation_bytes(c, false, LayerRecompute::policy, &flash);
  CHECK(bytes_of(flash, "attention.k") == bytes_of(flash, "attention.q") / 2);
  c.attention_backend = AttentionBackend::unfused;
  layer_activation_bytes(c, false, LayerRecompute::policy, &unfused);
  CHECK(bytes_of(unfused, "attention.k") == bytes_of(unfused, "attention.q"));
  CHECK(bytes_of(unfused, "attention.v") == bytes_of(unfused, "attention.q"));
}

TEST_CASE("heads times kv_channels wider than hidden sizes the attention tensors", "[activations][rule]") {
  // Qwen3-style: h 64, a 8, k 16 gives a·k = 128 ≠ h.
  Config c = trainmem_config(R"({"num_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
      "num_query_groups": 2, "kv_channels": 16, "vocab_size": 1000, "seq_length": 128,
      "micro_batch_size": 1})");
  c.qk_layernorm = true;
  SavedTensors d;
  layer_activation_bytes(c, false, LayerRecompute::policy, &d);
  CHECK(bytes_of(d, "attention.q") == 2.0 * 128 * 128);         // 2·a·k·T
  CHECK(bytes_of(d, "attention.k") == 2.0 * 32 * 128);          // 2·g·k·T
  CHECK(bytes_of(d, "attention.proj_input") == 2.0 * 128 * 128);
  CHECK(bytes_of(d, "attention.qkv_input") == 2.0 * 64 * 128);  // h wide
  CHECK(bytes_of(d, "attention.q_norm_input") == 2.0 * 128 * 128);
  CHECK(bytes_of(d, "attention.qk_norm_stats") == 4.0 * 10 * 128);  // fp32 per head, a + g
}

TEST_CASE("dropout masks exist only when their probability is above zero", "[activations][rule]") {
  Config c = trainmem_config(k_small_dense);
  c.attention_backend = AttentionBackend::unfused;
  c.attention_dropout = 0;
  c.hidden_dropout = 0;
  SavedTensors d;
  layer_activation_bytes(c, false, LayerRecompute::policy, &d);
  embedding_activation_bytes(c, &d);
  for (const SavedTensor& t : d) {
    CAPTURE(t.name);
    CHECK(t.name.find("dropout") == std::string_view::npos);
  }
  // Without attention dropout the unfused kernel keeps only the softmax output: 2·a/t·T·s.
  CHECK(bytes_of(d, "attention.softmax_output") == 2.0 * 2 * 256 * 128);
}

TEST_CASE("FP8 recipes store linear inputs in one byte plus their scales", "[activations][rule]") {
  Config c = trainmem_config(k_small_dense);
  const auto fc1_input = [&](Fp8Recipe r) {
    c.fp8_recipe = r;
    SavedTensors d;
    layer_activation_bytes(c, false, LayerRecompute::policy, &d);
    return bytes_of(d, "mlp.fc1_input");
  };
  CHECK(fc1_input(Fp8Recipe::none) == 16'384.0);
  CHECK(fc1_input(Fp8Recipe::delayed) == 8'192.0);
  CHECK(fc1_input(Fp8Recipe::tensorwise) == 8'192.0);
  REQUIRE_THAT(fc1_input(Fp8Recipe::blockwise), WithinRel(8'192.0 * (1 + 4.0 / 128), k_rel_tol_exact));
  REQUIRE_THAT(fc1_input(Fp8Recipe::mxfp8), WithinRel(8'192.0 * (1 + 1.0 / 32), k_rel_tol_exact));
  // The attention kernel's 16-bit output is then a storage of its own.
  c.fp8_recipe = Fp8Recipe::delayed;
  SavedTensors d;
  layer_activation_bytes(c, false, LayerRecompute::policy, &d);
  CHECK(bytes_of(d, "attention.kernel_output") == 16'384.0);
  CHECK(bytes_of(d, "attention.proj_input") == 8'192.0);
}

TEST_CASE("fp32 compute doubles the activation tensors but not masks ids or statistics",
          "[activations][rule]") {
  Config c = trainmem_config(k_small_dense);
  SavedTensors bf16, fp32;
  layer_activation_bytes(c, false, LayerRecompute::policy, &bf16);
  c.compute_dtype = Dtype::fp32;
  layer_activation_bytes(c, false, LayerRecompute::policy, &fp32);
  REQUIRE(bf16.size() == fp32.size());
  for (size_t i = 0; i < bf16.size(); ++i) {
    CAPTURE(bf16[i].name);
    CHECK(fp32[i].bytes == (bf16[i].dtype == "bf16" ? 2 : 1) * bf16[i].bytes);
    CHECK(fp32[i].dtype == (bf16[i].dtype == "bf16" ? "fp32" : bf16[i].dtype));
  }
}

// ---- Properties over grids ----

namespace {

// A grid of small models: dense GQA, MoE and MLA, each under TP 1/2 (with SP), CP 1/2.
Config grid_config(int kind, int64_t t, int64_t c) {
  Config cfg = trainmem_config(kind == 1 ? k_small_moe : k_small_dense);
  cfg.seq_length = 1024;
  cfg.tensor_model_parallel_size = t;
  cfg.sequence_parallel = t > 1;
  cfg.context_parallel_size = c;
  cfg.expert_tensor_parallel_size = 1;
  if (kind == 2) {
    cfg.multi_latent_attention = true;
    cfg.q_lora_rank = 32;
    cfg.kv_lora_rank = 16;
    cfg.qk_head_dim = 16;
    cfg.qk_pos_emb_head_dim = 8;
    cfg.v_head_dim = 16;
    cfg.qk_layernorm = true;
  }
  return cfg;
}

const std::vector<uint32_t>& module_sets() {
  static const std::vector<uint32_t> sets = {
      0u,
      bit(RecomputeModule::core_attn),
      bit(RecomputeModule::core_attn) | bit(RecomputeModule::mlp),
      bit(RecomputeModule::moe_act) | bit(RecomputeModule::layernorm),
      bit(RecomputeModule::moe) | bit(RecomputeModule::mla_up_proj),
      bit(RecomputeModule::shared_experts) | bit(RecomputeModule::core_attn),
      (1u << unsigned(RecomputeModule::count)) - 1,
  };
  return sets;
}

}  // namespace

TEST_CASE("detail entries sum to every total", "[activations][property]") {
  const int kind = GENERATE(0, 1, 2);
  const int64_t t = GENERATE(1, 2);
  const auto backend = GENERATE(AttentionBackend::flash, AttentionBackend::fused, AttentionBackend::unfused);
  const auto recipe = GENERATE(Fp8Recipe::none, Fp8Recipe::mxfp8);
  const auto granularity = GENERATE(RecomputeGranularity::none, RecomputeGranularity::selective,
                                    RecomputeGranularity::full, RecomputeGranularity::selective_op);
  Config c = grid_config(kind, t, 1);
  c.attention_backend = backend;
  c.fp8_recipe = recipe;
  c.recompute_granularity = granularity;
  c.recompute_modules = module_sets().back();
  CAPTURE(kind, t, name_of(backend), name_of(recipe), name_of(granularity));
  for (const LayerRecompute r :
       {LayerRecompute::policy, LayerRecompute::checkpointed, LayerRecompute::inside_group}) {
    SavedTensors d;
    const double total = layer_activation_bytes(c, kind == 1, r, &d);
    CHECK(sum_of(d) == total);
    CHECK(total >= 0);
  }
  SavedTensors e, o;
  const double embedding = embedding_activation_bytes(c, &e);
  const double output = output_activation_bytes(c, &o);
  CHECK(embedding == sum_of(e));
  CHECK(output == sum_of(o));
  CHECK(layer_recompute_working_bytes(c, kind == 1) >= 0);
}

TEST_CASE("full recompute never keeps more than selective recompute or none", "[activations][property]") {
  const int kind = GENERATE(0, 1, 2);
  const int64_t t = GENERATE(1, 2);
  const auto backend = GENERATE(AttentionBackend::flash, AttentionBackend::unfused);
  const auto recipe = GENERATE(Fp8Recipe::none, Fp8Recipe::delayed);
  Config c = grid_config(kind, t, 1);
  c.attention_backend = backend;
  c.fp8_recipe = recipe;
  CAPTURE(kind, t, name_of(backend), name_of(recipe));
  const bool moe = kind == 1;
  const double none = layer_activation_bytes(with_granularity(c, RecomputeGranularity::none), moe,
                                             LayerRecompute::policy);
  const double full = layer_activation_bytes(with_granularity(c, RecomputeGranularity::full), moe,
                                             LayerRecompute::checkpointed);
  for (const uint32_t modules : module_sets()) {
    CAPTURE(modules);
    const double selective = layer_activation_bytes(
        with_granularity(c, RecomputeGranularity::selective, modules), moe, LayerRecompute::policy);
    CHECK(full <= selective);
    CHECK(selective <= none);
  }
  const double op = layer_activation_bytes(with_granularity(c, RecomputeGranularity::selective_op),
                                           moe, LayerRecompute::policy);
  CHECK(full <= op);
  CHECK(layer_activation_bytes(c, moe, LayerRecompute::inside_group) == 0);
}

TEST_CASE("flash attention never keeps more than unfused attention", "[activations][property]") {
  const int kind = GENERATE(0, 1, 2);
  const int64_t t = GENERATE(1, 2), cp = GENERATE(1, 2);
  const auto recipe = GENERATE(Fp8Recipe::none, Fp8Recipe::delayed);
  const double attention_dropout = GENERATE(0.0, 0.1);
  const auto granularity = GENERATE(RecomputeGranularity::none, RecomputeGranularity::selective,
                                    RecomputeGranularity::selective_op);
  Config c = grid_config(kind, t, cp);
  c.fp8_recipe = recipe;
  c.attention_dropout = attention_dropout;
  c.recompute_granularity = granularity;
  CAPTURE(kind, t, cp, name_of(recipe), attention_dropout, name_of(granularity));
  Config unfused = c;
  unfused.attention_backend = AttentionBackend::unfused;
  for (const AttentionBackend b : {AttentionBackend::flash, AttentionBackend::fused}) {
    c.attention_backend = b;
    CHECK(layer_activation_bytes(c, kind == 1, LayerRecompute::policy) <=
          layer_activation_bytes(unfused, kind == 1, LayerRecompute::policy));
  }
}

TEST_CASE("context parallelism divides every sequence-proportional tensor", "[activations][property]") {
  const int kind = GENERATE(0, 1, 2);
  const int64_t t = GENERATE(1, 2);
  const auto backend = GENERATE(AttentionBackend::flash, AttentionBackend::unfused);
  const auto granularity = GENERATE(RecomputeGranularity::none, RecomputeGranularity::selective,
                                    RecomputeGranularity::full, RecomputeGranularity::selective_op);
  const int64_t cp = GENERATE(2, 4);
  Config one = grid_config(kind, t, 1);
  one.attention_backend = backend;
  one.recompute_granularity = granularity;
  one.recompute_modules = bit(RecomputeModule::core_attn) | bit(RecomputeModule::moe_act);
  Config split = one;
  split.context_parallel_size = cp;
  CAPTURE(kind, t, cp, name_of(backend), name_of(granularity));
  const bool moe = kind == 1;
  const double n = double(cp);
  for (const LayerRecompute r : {LayerRecompute::policy, LayerRecompute::checkpointed}) {
    REQUIRE_THAT(layer_activation_bytes(split, moe, r) * n,
                 WithinRel(layer_activation_bytes(one, moe, r), k_rel_tol_exact));
  }
  REQUIRE_THAT(layer_recompute_working_bytes(split, moe) * n,
               WithinRel(layer_recompute_working_bytes(one, moe), k_rel_tol_exact));
  REQUIRE_THAT(embedding_activation_bytes(split) * n,
               WithinRel(embedding_activation_bytes(one), k_rel_tol_exact));
  REQUIRE_THAT(output_activation_bytes(split) * n,
               WithinRel(output_activation_bytes(one), k_rel_tol_exact));
  REQUIRE_THAT(loss_transient_bytes(split) * n, WithinRel(loss_transient_bytes(one), k_rel_tol_exact));
}

TEST_CASE("tensor parallelism with sequence parallelism divides the whole layer", "[activations][property]") {
  // Korthikanti Table 2: with SP every per-layer term is divided by t. For MoE this holds with
  // ETP 1 (ETP > 1 all-gathers the dispatched tokens over the expert TP group). mla_up_proj is
  // left out: its rope key is gathered over the sequence and shared by all heads.
  const int kind = GENERATE(0, 1, 2);
  const int64_t t = GENERATE(2, 4);
  const auto backend = GENERATE(AttentionBackend::flash, AttentionBackend::unfused);
  const auto granularity = GENERATE(RecomputeGranularity::none, RecomputeGranularity::selective,
                                    RecomputeGranularity::full);
  Config one = grid_config(kind, 1, 1);
  one.attention_backend = backend;
  one.recompute_granularity = granularity;
  one.recompute_modules = bit(RecomputeModule::core_attn) | bit(RecomputeModule::moe_act);
  Config split = one;
  split.tensor_model_parallel_size = t;
  split.sequence_parallel = true;
  CAPTURE(kind, t, name_of(backend), name_of(granularity));
  const bool moe = kind == 1;
  for (const LayerRecompute r : {LayerRecompute::policy, LayerRecompute::checkpointed}) {
    REQUIRE_THAT(layer_activation_bytes(split, moe, r) * double(t),
                 WithinRel(layer_activation_bytes(one, moe, r), k_rel_tol_exact));
  }
}

TEST_CASE("tensor parallelism without sequence parallelism leaves the paper's whole part whole",
          "[activations][property]") {
  // Korthikanti Table 2: the LayerNorm inputs, the QKV and fc1 inputs and the dropout masks (10sbh)
  // are replicated on every TP rank; everything else is split by t.
  Config one = trainmem_config(k_small_dense);
  one.tensor_model_parallel_size = 1;
  one.sequence_parallel = false;
  const int64_t t = GENERATE(2, 4);
  Config split = one;
  split.tensor_model_parallel_size = t;
  SavedTensors d1, dt;
  layer_activation_bytes(one, false, LayerRecompute::policy, &d1);
  layer_activation_bytes(split, false, LayerRecompute::policy, &dt);
  REQUIRE(d1.size() == dt.size());
  for (size_t i = 0; i < d1.size(); ++i) {
    const std::string_view n = d1[i].name;
    CAPTURE(n, t);
    const bool whole = d1[i].module == "norm" || n == "attention.qkv_input" ||
                       n == "mlp.fc1_input" || n.find("output_dropout_mask") != std::string_view::npos;
    CHECK(dt[i].bytes * (whole ? 1 : double(t)) == d1[i].bytes);
  }
}

TEST_CASE("expert parallelism does not change the tokens an expert rank processes under balance",
          "[activations][property]") {
  Config c = trainmem_config(k_small_moe);
  const double ep2 = layer_activation_bytes(c, true, LayerRecompute::policy);
  c.expert_model_parallel_size = 1;
  CHECK(layer_activation_bytes(c, true, LayerRecompute::policy) == ep2);
  // Under torchtitan's policy EP adds the two all-to-all outputs it saves.
  c.recompute_granularity = RecomputeGranularity::selective_op;
  const double without = layer_activation_bytes(c, true, LayerRecompute::policy);
  c.expert_model_parallel_size = 2;
  // dispatch and combine: 2 · 2·h·T_sp·K = 2 · 2·64·128·2.
  CHECK(layer_activation_bytes(c, true, LayerRecompute::policy) == without + 2 * 32'768.0);
}

TEST_CASE("activations grow linearly with the micro batch", "[activations][property]") {
  // From b = 2 on: with b = 1 flash-attn's bshd layout is Megatron's sbhd, so the kernel's `out`
  // and linear_proj's input are one storage (the section below).
  const int kind = GENERATE(0, 1, 2);
  const auto granularity = GENERATE(RecomputeGranularity::none, RecomputeGranularity::selective,
                                    RecomputeGranularity::selective_op);
  Config two = grid_config(kind, 2, 1);
  two.recompute_granularity = granularity;
  two.micro_batch_size = 2;
  Config eight = two;
  eight.micro_batch_size = 8;
  CAPTURE(kind, name_of(granularity));
  REQUIRE_THAT(layer_activation_bytes(eight, kind == 1, LayerRecompute::policy),
               WithinRel(4 * layer_activation_bytes(two, kind == 1, LayerRecompute::policy),
                         k_rel_tol_exact));
  REQUIRE_THAT(output_activation_bytes(eight), WithinRel(4 * output_activation_bytes(two), k_rel_tol_exact));
  SECTION("b = 1 under flash-attn keeps one storage less: the bshd copy of the output") {
    Config one = two;
    one.micro_batch_size = 1;
    SavedTensors d1, d2;
    const double b1 = layer_activation_bytes(one, kind == 1, LayerRecompute::policy, &d1);
    const double b2 = layer_activation_bytes(two, kind == 1, LayerRecompute::policy, &d2);
    CHECK_FALSE(has(d1, "attention.kernel_output"));
    CHECK(2 * b1 + bytes_of(d2, "attention.kernel_output") == b2);
  }
}
