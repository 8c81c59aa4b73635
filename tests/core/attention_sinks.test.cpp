// gpt-oss's attention sinks (attention_sinks, issue 29 item 5): a learned logit per head and
// layer (GptOssAttention.sinks) that joins each row's softmax. Expected figures are worked out by
// hand from transformers' modeling_gpt_oss.py @ 00d4b3d2142cb4ced2f51b90614b5d26bc045015 (its
// eager_attention_forward) in the comments, not read back from the implementation.
#include <string>

#include "support.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/import.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {
// The small Llama-style model (support.hpp): 2 layers, h 1,024, 8 heads of 128, one sequence of
// 1,024 tokens; full fine-tuning in bf16 under FSDP2 on one GPU (no autocast: the compute dtype is
// the weights').
std::string run(const std::string& more) {
  return small_llama(R"("framework": "fsdp2", "model_implementation": "hf-transformers", "params_dtype": "bf16")" +
                     (more.empty() ? "" : ", " + more));
}
}  // namespace

TEST_CASE("attention sinks: a parameter per head and layer, and eager attention by default", "[sinks]") {
  const Config with = config_from(run(R"("attention_sinks": true)"));
  const Config without = config_from(run(""));
  // transformers' gpt-oss has no SDPA path (_supports_sdpa = False): eager attention.
  CHECK(with.attention_backend == AttentionBackend::unfused);
  CHECK(without.attention_backend == AttentionBackend::flash);
  // A kernel asked for wins (vllm-flash-attn3 takes the sinks).
  CHECK(config_from(run(R"("attention_sinks": true, "attention_backend": "flash")")).attention_backend ==
        AttentionBackend::flash);
  // Megatron Core keeps its own default (TE picks the kernel).
  CHECK(config_from(small_llama(R"("framework": "megatron", "attention_sinks": true)")).attention_backend ==
        AttentionBackend::flash);
  // 8 heads × 2 layers = 16 parameters more.
  CHECK(full_estimate(with).params.total - full_estimate(without).params.total == 16);
}

TEST_CASE("attention sinks: the softmax over s + 1 columns in the scores' dtype", "[sinks]") {
  // Per layer, b = 1, a = 8, s = T = 1,024, bf16 (2 B):
  // - gpt-oss's eager path keeps max's int64 indices, 8 · 8 · 1,024 = 65,536 B, and the softmax's
  //   bf16 output over s + 1 columns, 2 · 8 · 1,024 · 1,025 = 16,793,600 B (the matmul with V keeps
  //   a view of it): 16,859,136 B;
  // - Llama's eager path keeps the fp32 softmax, 4 · 8 · 1,024² = 33,554,432 B, and its bf16 cast,
  //   2 · 8 · 1,024² = 16,777,216 B: 50,331,648 B.
  // Everything else is the same (q, k, v kept by the matmuls alike): two layers,
  // 2 · (16,859,136 − 50,331,648) = −66,945,024 B.
  const Estimate sinks = estimate_of(run(R"("attention_sinks": true)"));
  const Estimate llama = estimate_of(run(R"("attention_backend": "unfused")"));
  CHECK(sinks.activation_bytes - llama.activation_bytes == -66945024.0);
}

TEST_CASE("attention sinks: read from gpt-oss's config.json and Megatron-LM's --softmax-type", "[sinks][import]") {
  const ImportResult megatron = import_megatron_args(
      "--num-layers 2 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --vocab-size 32000 --softmax-type learnable");
  REQUIRE(megatron.ok());
  CHECK(get_field(megatron.input, field::attention_sinks.text) == FieldValue(true));
  const ImportResult wrong = import_megatron_args(
      "--num-layers 2 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --vocab-size 32000 --softmax-type sinks");
  REQUIRE(wrong.issues.size() == 1);
  CHECK(wrong.issues[0].message == "--softmax-type: must be vanilla, off-by-one or learnable, got \"sinks\"");
}
