// LoRA on Megatron Core's grouped experts as ms-swift runs it (issue 29 items 5 and 6):
// modelscope/ms-swift swift/megatron/tuners/lora.py @ 710553d85464c7d2be85f35fa19d9d5476619d6f
// (LoraParallelLinear on TEGroupedLinear), Transformer Engine grouped_linear.py @ v2.5 (a frozen
// grouped linear saves no input, a trainable one its input). Every expected figure is worked out
// by hand in the comments, not read back from the implementation.
#include <algorithm>
#include <string>

#include "support.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/import.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// A small Megatron MoE: 2 layers, h = 256, 8 heads, every layer MoE with E = 4 experts of
// f_e = 512 (SwiGLU), top-2, RMSNorm, no biases, no dropout, vocabulary 1,024; one sequence of
// 128 tokens; TP 1, EP 2 over DP 2 (2 local experts, expert-DP 2·1 / (2·1) = 1), ETP 1, bf16.
const std::string k_megatron_moe = R"("num_layers": 2, "hidden_size": 256, "num_attention_heads": 8,
    "ffn_hidden_size": 1024, "moe_ffn_hidden_size": 512, "num_moe_experts": 4, "moe_router_topk": 2,
    "vocab_size": 1024, "normalization": "RMSNorm", "swiglu": true, "add_bias_linear": false,
    "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 128, "micro_batch_size": 1,
    "framework": "megatron", "data_parallel_size": 2, "expert_model_parallel_size": 2,
    "expert_tensor_parallel_size": 1, "peft": "lora", "lora_rank": 8)";

std::string megatron_moe(const std::string& more) { return "{" + k_megatron_moe + ", " + more + "}"; }

double named(const SavedTensors& saved, const std::string& name) {
  double bytes = 0;
  for (const SavedTensor& t : saved)
    if (t.name == name) bytes += t.bytes;
  return bytes;
}

const char* k_experts = R"("lora_target_modules": ["q_proj", "gate_proj", "up_proj", "down_proj"])";
const char* k_attention_only = R"("lora_target_modules": ["q_proj"])";

}  // namespace

TEST_CASE("Megatron expert LoRA: one adapter per grouped linear, per local expert", "[experts][megatron]") {
  // ms-swift wraps linear_fc1 (gate and up in one) and linear_fc2 once each:
  //   fc1: A 256·8 = 2,048, B 8·(2·512) = 8,192 → 10,240;
  //   fc2: A 512·8 = 4,096, B 8·256 = 2,048 → 6,144.
  //   Per expert 16,384; × 4 experts × 2 layers = 131,072, of which 2 local experts per GPU:
  //   65,536. The q_proj adapter (dense): A 256·8 = 2,048, B 8·256 = 2,048 → 4,096 per layer,
  //   8,192 in all, on every GPU.
  const FullEstimate both = full_estimate(config_from(megatron_moe(k_experts)));
  const FullEstimate q = full_estimate(config_from(megatron_moe(k_attention_only)));
  CHECK(both.params.adapter - q.params.adapter == 131072);
  CHECK(both.params.adapter_per_gpu - q.params.adapter_per_gpu == 65536);
  CHECK(q.params.adapter_per_gpu == 8192);
}

TEST_CASE("Megatron expert LoRA: the adapters' state in their own dtype", "[experts][megatron]") {
  // The 65,536 expert-adapter parameters on a GPU sit in the experts' part. In bf16 (the
  // default, as the dense adapters): weights 2 B, fp32 main gradients 4 B, fp32 master weights
  // 4 B and Adam's two fp32 moments 8 B, the last two over expert-DP 1 (whole):
  //   131,072 + 262,144 + 262,144 + 524,288.
  const Config bf16 = config_from(megatron_moe(k_experts));
  CHECK(bf16.lora_expert_dtype == Dtype::bf16);
  const FullEstimate b = full_estimate(bf16);
  CHECK(b.state.adapter_weights.expert == 131072);
  CHECK(b.state.adapter_gradients.expert == 262144);
  CHECK(b.state.adapter_master_weights.expert == 262144);
  CHECK(b.state.adapter_optimizer_states.expert == 524288);
  // ms-swift of July-August 2025: fp32 expert adapters, which need no master copy:
  //   weights 262,144, gradients 262,144, masters 0, moments 524,288. The dense adapter (q_proj)
  //   stays bf16.
  const FullEstimate f = full_estimate(config_from(megatron_moe(std::string(k_experts) + R"(, "lora_expert_dtype": "fp32")")));
  CHECK(f.state.adapter_weights.expert == 262144);
  CHECK(f.state.adapter_gradients.expert == 262144);
  CHECK(f.state.adapter_master_weights.expert == 0);
  CHECK(f.state.adapter_optimizer_states.expert == 524288);
  CHECK(f.state.adapter_weights.dense == b.state.adapter_weights.dense);
}

TEST_CASE("Megatron expert LoRA: what the adapters keep for backward", "[experts][megatron]") {
  // The rows one GPU's experts run: N = T·K = 128·2 = 256 (ETP 1, even routing).
  const auto extra = [](const std::string& more, SavedTensors* detail = nullptr) {
    const double with = layer_activation_bytes(config_from(megatron_moe(std::string(k_experts) + more)), true,
                                               LayerRecompute::policy, detail);
    const double without = layer_activation_bytes(config_from(megatron_moe(std::string(k_attention_only) + more)),
                                                  true, LayerRecompute::policy);
    return with - without;
  };
  // bf16, no dropout: lora_A reads the bases' own inputs, which are then kept: the experts'
  // input G, 2·256·256 = 131,072, and fc2's input, 2·512·256 = 262,144; lora_B keeps each r-wide
  // intermediate, 2·8·256 = 4,096 twice. 131,072 + 262,144 + 8,192 = 401,408.
  SavedTensors plain;
  CHECK(extra("", &plain) == 401408);
  CHECK(named(plain, "moe.expert_input") == 131072);
  CHECK(named(plain, "lora.expert_fc1_intermediate") == 4096);
  // fp32 adapters with dropout 0.05: each adapter keeps the dropout's bool mask and the dropped
  // fp32 copy of its input, and an fp32 intermediate; the bases' inputs are not kept.
  //   fc1: 256·256 = 65,536 + 4·256·256 = 262,144 + 4·8·256 = 8,192
  //   fc2: 512·256 = 131,072 + 4·512·256 = 524,288 + 8,192          → 999,424.
  SavedTensors dropped;
  CHECK(extra(R"(, "lora_dropout": 0.05, "lora_expert_dtype": "fp32")", &dropped) == 999424);
  CHECK(named(dropped, "lora.expert_fc2_dropout_mask") == 131072);
  CHECK(named(dropped, "lora.expert_fc2_input") == 524288);
  CHECK(named(dropped, "moe.expert_input") == 0);
  // fp32 adapters without dropout: lora_A keeps the fp32 cast of its input instead:
  //   262,144 + 524,288 + 8,192 · 2 = 802,816.
  CHECK(extra(R"(, "lora_expert_dtype": "fp32")") == 802816);
}

TEST_CASE("Megatron expert LoRA: the dispatcher's transient with the adapters' forward", "[experts][megatron]") {
  // The all-to-all dispatcher (EP 2, two local experts: sorted copies), rows of e·h = 512 B over
  // N = 256 rows: every one-row tensor is 131,072 B. Frozen experts, no adapter on them: P, A, G
  // (not saved: frozen linear_fc1), O and B at combine_preprocess, 5 · 131,072 = 655,360.
  CHECK(moe_dispatch_transient_bytes(config_from(megatron_moe(k_attention_only))) == 655360);
  // With bf16 adapters and no dropout, linear_fc1's lora_A keeps G (counted as saved), and the
  // adapter on linear_fc1 holds the base output, lora_B's output and its scaled copy, each
  // [256, 2·512] bf16 (2,048 B a row): P + A + 256 · 3 · 2,048 = 262,144 + 1,572,864 = 1,835,008,
  // above combine_preprocess (P, A, O, B: 524,288).
  CHECK(moe_dispatch_transient_bytes(config_from(megatron_moe(k_experts))) == 1835008);
  // fp32 adapters with dropout: G is not saved (the adapter keeps its dropped copy); fc1's moment
  // is (2 + 2·4)·1,024 = 10,240 B a row, fc2's O (512 B) and two fp32 rows of 256 (2,048 B):
  // P + A + G + 256 · 10,240 = 393,216 + 2,621,440 = 3,014,656.
  CHECK(moe_dispatch_transient_bytes(config_from(megatron_moe(std::string(k_experts) +
                                                              R"(, "lora_dropout": 0.05, "lora_expert_dtype": "fp32")"))) ==
        3014656);
}

TEST_CASE("Megatron LoRA: one adapter on the fused linear_qkv and a dense linear_fc1", "[megatron]") {
  // ms-swift wraps linear_qkv whole when q, k and v are all targets: A 256·8 = 2,048 and B
  // 8·(256 + 2·256) = 6,144 per layer (8 heads and 8 groups of 32), 8,192; × 2 layers = 16,384
  // (three adapters apart would be 3 · (2,048 + 2,048) · 2 = 24,576).
  const FullEstimate qkv = full_estimate(config_from(megatron_moe(R"("lora_target_modules": ["q_proj", "k_proj", "v_proj"])")));
  CHECK(qkv.params.adapter == 16384);
  // One dropout on the fused input: with lora_dropout 0.05 the layer keeps one mask (256·128 =
  // 32,768), one bf16 copy (65,536) and one intermediate (2·8·128 = 2,048), as for q_proj alone.
  const std::string dropout = R"(, "lora_dropout": 0.05)";
  SavedTensors fused;
  const double with_qkv = layer_activation_bytes(
      config_from(megatron_moe(R"("lora_target_modules": ["q_proj", "k_proj", "v_proj"])" + dropout)), true,
      LayerRecompute::policy, &fused);
  const double with_q = layer_activation_bytes(config_from(megatron_moe(R"("lora_target_modules": ["q_proj"])" + dropout)),
                                               true, LayerRecompute::policy);
  CHECK(with_qkv == with_q);
  CHECK(named(fused, "lora.linear_qkv_dropout_mask") == 32768);
  CHECK(named(fused, "lora.linear_qkv_input") == 65536);
  CHECK(named(fused, "lora.linear_qkv_intermediate") == 2048);
  // A dense linear_fc1 (gate and up, f = 1,024): A 256·8 = 2,048, B 8·2,048 = 16,384 per layer,
  // 18,432; × 2 layers = 36,864.
  const std::string dense = R"({"num_layers": 2, "hidden_size": 256, "num_attention_heads": 8,
      "ffn_hidden_size": 1024, "vocab_size": 1024, "normalization": "RMSNorm", "swiglu": true,
      "add_bias_linear": false, "seq_length": 128, "micro_batch_size": 1, "framework": "megatron",
      "peft": "lora", "lora_rank": 8, "lora_target_modules": ["gate_proj", "up_proj"]})";
  CHECK(full_estimate(config_from(dense)).params.adapter == 36864);
}

TEST_CASE("Megatron expert LoRA: named errors", "[experts][megatron]") {
  CHECK(messages_for(megatron_moe(R"("lora_target_modules": ["up_proj", "down_proj"])")) ==
        one("lora_target_modules: \"gate_proj\" and \"up_proj\" on Megatron Core's experts are one grouped "
            "linear_fc1, which ms-swift's LoRA wraps whole: name both or neither"));
  CHECK(messages_for(megatron_moe(std::string(k_experts) + R"(, "moe_shared_expert_intermediate_size": 512)")) ==
        one("lora_target_modules: \"gate_proj\", \"up_proj\" and \"down_proj\" on an MoE model with shared or "
            "latent experts are not modelled (adapters on the routed experts only, Mixtral and Qwen3-MoE style; "
            "ms-swift's all-linear would also wrap a shared expert's linear_fc1 and linear_fc2)"));
  CHECK(messages_for(megatron_moe(std::string(k_experts) + R"(, "lora_expert_dtype": "nf4")")) ==
        one("lora_expert_dtype: must be \"fp32\", \"bf16\" or \"fp16\", got \"nf4\""));
  // PEFT's per-expert lora.Linear under transformers are made as the other adapters (fp32 under
  // ddp: PEFT's autocast_adapter_dtype).
  CHECK(messages_for(megatron_moe(std::string(k_experts) +
                                  R"(, "framework": "ddp", "data_parallel_size": 1, "expert_model_parallel_size": 1, "lora_expert_dtype": "bf16")")) ==
        one("lora_expert_dtype: differs from the other adapters' dtype (\"fp32\") only with model_implementation "
            "\"megatron-core\" (ms-swift's grouped experts); with \"hf-transformers\" every adapter is made alike"));
}

TEST_CASE("megatron-args names ms-swift's LoRA arguments instead of calling them unused", "[experts][megatron][import]") {
  // ms-swift's `megatron sft` spells its arguments with underscores; Megatron-LM has none of them.
  const ImportResult r = import_megatron_args(
      "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
      "--micro-batch-size 1 --vocab-size 1024 --bf16 --train_type lora --lora_rank 32 --target_modules all-linear");
  const auto has = [&](const std::string& line) {
    return std::find(r.ignored.begin(), r.ignored.end(), line) != r.ignored.end();
  };
  CHECK(has("--train_type lora: ms-swift's LoRA, not read here: read the `megatron sft` command with "
            "`trainmem import ms-swift-megatron` (peft, lora_rank, lora_dropout, lora_target_modules)"));
  CHECK(has("--lora_rank 32: not a Megatron-LM argument (Megatron-LM spells them with dashes; read an "
            "ms-swift `megatron sft` command with `trainmem import ms-swift-megatron`)"));
  CHECK_FALSE(r.input.peft.has_value());
}
