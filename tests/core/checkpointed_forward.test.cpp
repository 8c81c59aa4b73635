// The last checkpointed decoder layer's own forward (activations.cpp
// checkpointed_layer_forward_bytes): with every layer checkpointed nothing inside a layer is
// saved, so while the last layer runs its Python frames' tensors sit beside every checkpoint.
// Every expected figure is worked by hand in the comments from the frames' locals (transformers'
// LlamaDecoderLayer / LlamaAttention / eager_attention_forward / LlamaMLP, torchtune's
// TransformerSelfAttentionLayer / MultiHeadAttention / FeedForward on the math SDPA path, PEFT's
// lora.bnb.Linear4bit), not read back from the implementation.
#include <string>

#include "support.hpp"
#include "trainmem/activations.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// The small Llama of support.hpp: 2 layers, h = 1,024, 8 heads of 128, f = 4,096, one sequence
// of 1,024 tokens (T = s = 1,024), vocabulary 32,000; every layer checkpointed, ddp, eager
// attention (unfused).
std::string checkpointed(const std::string& more) {
  return small_llama(R"("framework": "ddp", "recompute_granularity": "full", "recompute_method": "uniform",
      "recompute_num_layers": 1, "attention_backend": "unfused", )" + more);
}

bool has_trace(const Trace& trace, const std::string& name) {
  for (const TraceEntry& e : trace)
    if (e.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE("The last checkpointed layer's forward: torchtune's math attention at the softmax",
          "[activations][checkpoint]") {
  // fp32 (e = 4), MHA. The softmax's frame holds: the input norm's output 4·T·h = 4,194,304;
  // q and k after RoPE and v, 3 · 4,194,304; the scaled q, 4,194,304; the e·s² additive mask
  // 4 · 1,024² = 4,194,304; the masked scores and the probabilities, 2 · 4 · a·T·s =
  // 2 · 4 · 8,388,608 = 67,108,864. Sum 4,194,304 · 6 + 67,108,864 = 92,274,688.
  // The MLP's points are smaller: the product's, beside the residual sum and the norm output
  // (2 · 4,194,304), 3 · 4·T·f = 50,331,648: 58,720,256.
  const std::string json = checkpointed(R"("model_implementation": "torchtune", "compute_dtype": "fp32",
      "params_dtype": "fp32")");
  const Config c = config_from(json);
  CHECK(checkpointed_layer_forward_bytes(c) == 92274688.0);
  Trace trace;
  const FullEstimate e = full_estimate(c, &trace);
  CHECK(trace_value(trace, "trainmem.checkpointed_layer_forward") == 92274688.0);
  // The forward moment holds it beside every checkpoint (the activations less the output layer's
  // and the loss's) and the model state.
  CHECK(e.moments.forward >= e.weight_and_optimizer_bytes + c.workspace_bytes +
                                 (e.activation_bytes - output_activation_bytes(c)) + 92274688.0);
}

TEST_CASE("The last checkpointed layer's forward: transformers' eager attention in bf16 with groups",
          "[activations][checkpoint]") {
  // bf16 (e = 2), 2 query groups. The softmax's frame: the norm output 2·T·h = 2,097,152; q
  // after RoPE 2,097,152; k and v (2 groups of 128) 2 · 524,288; repeat_kv's copies of k and v
  // for all 8 heads 2 · 2,097,152: 7,340,032 with q. softmax(dtype=float32) upcasts the
  // bf16 masked scores: the scores (2), their fp32 copy (4) and the fp32 output (4) per score,
  // 10 · 8,388,608 = 83,886,080. Sum 2,097,152 + 7,340,032 + 83,886,080 = 93,323,264.
  // o_proj's point (the probabilities cast to bf16, 16,777,216, beside q, k, v, the output and
  // o_proj's result) is 26,214,400; the product's 2 · 2,097,152 + 3 · 8,388,608 = 29,360,128.
  const Config c = config_from(checkpointed(R"("model_implementation": "hf-transformers",
      "compute_dtype": "bf16", "params_dtype": "bf16", "num_query_groups": 2)"));
  CHECK(checkpointed_layer_forward_bytes(c) == 93323264.0);
}

TEST_CASE("The last checkpointed layer's forward: QLoRA's fp32 MLP with an adapter on up_proj",
          "[activations][checkpoint][qlora]") {
  // kbit_upcast trl (fp32 norms: the norm outputs, the residual stream and Linear4bit's outputs
  // .to(fp32), ffn e 4; the adapter runs in bf16 under autocast), bitsandbytes < 0.43.2, the
  // non-reentrant checkpoint. At up_proj's adapter sum, beside SiLU's fp32 output 4·T·f =
  // 16,777,216: PEFT's clone of the base result 16,777,216, lora_B's scaled bf16 output
  // 8,388,608, its fp32 promotion 16,777,216 and the sum 16,777,216 (14·T·f = 58,720,256), the
  // residual sum and the norm output 2 · 4·T·h = 8,388,608. down_proj's A (its bf16 copy of the
  // product, 2·T·f = 8,388,608) is counted among the checkpoints but made only at down_proj:
  // taken out. 8,388,608 + 16,777,216 + 58,720,256 − 8,388,608 = 75,497,472. The attention's
  // points are not walked under fp32 norms (autocast's casts of q, k and v).
  const Config c = config_from(checkpointed(R"("model_implementation": "hf-transformers", "peft": "qlora",
      "kbit_upcast": "trl", "bnb_keeps_matmul_input": true, "lora_target_modules": ["up_proj"],
      "lora_dropout": 0, "checkpoint_reentrant": false)"));
  CHECK(checkpointed_layer_forward_bytes(c) == 75497472.0);
  // The reentrant checkpoint (transformers' default) runs the layer under no_grad: no A is kept,
  // so down_proj's is not taken out: 83,886,080.
  const Config reentrant = config_from(checkpointed(R"("model_implementation": "hf-transformers", "peft": "qlora",
      "kbit_upcast": "trl", "bnb_keeps_matmul_input": true, "lora_target_modules": ["up_proj"],
      "lora_dropout": 0, "checkpoint_reentrant": true)"));
  CHECK(checkpointed_layer_forward_bytes(reentrant) == 83886080.0);
}

TEST_CASE("The last checkpointed layer's forward: only with every layer checkpointed", "[activations][checkpoint]") {
  // Without checkpointing the layer's tensors are its saved activations (no candidate of its own).
  const Config kept = config_from(small_llama(R"("framework": "ddp", "model_implementation": "torchtune",
      "attention_backend": "unfused", "compute_dtype": "fp32", "params_dtype": "fp32")"));
  CHECK(checkpointed_layer_forward_bytes(kept) == 0);
  Trace trace;
  full_estimate(kept, &trace);
  CHECK_FALSE(has_trace(trace, "trainmem.checkpointed_layer_forward"));
}
