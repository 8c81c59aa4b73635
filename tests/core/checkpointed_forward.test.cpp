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
  // 8,388,608 and the fp32 sum 16,777,216 (10·T·f = 41,943,040; the bf16 operand is cast as the
  // CUDA kernel reads it, no copy), the residual sum and the norm output 2 · 4·T·h = 8,388,608.
  // down_proj's A (its bf16 copy of the product, 2·T·f = 8,388,608) is counted among the
  // checkpoints but made only at down_proj: taken out. 8,388,608 + 16,777,216 + 41,943,040 −
  // 8,388,608 = 58,720,256 (the product's point: 8,388,608 + 3 · 16,777,216 − 8,388,608 =
  // 50,331,648). The attention's points are not walked under fp32 norms (autocast's casts of q,
  // k and v).
  const Config c = config_from(checkpointed(R"("model_implementation": "hf-transformers", "peft": "qlora",
      "kbit_upcast": "trl", "bnb_keeps_matmul_input": true, "lora_target_modules": ["up_proj"],
      "lora_dropout": 0, "checkpoint_reentrant": false)"));
  CHECK(checkpointed_layer_forward_bytes(c) == 58720256.0);
  // The reentrant checkpoint (transformers' default) runs the layer under no_grad: no A is kept,
  // so down_proj's is not taken out: 67,108,864.
  const Config reentrant = config_from(checkpointed(R"("model_implementation": "hf-transformers", "peft": "qlora",
      "kbit_upcast": "trl", "bnb_keeps_matmul_input": true, "lora_target_modules": ["up_proj"],
      "lora_dropout": 0, "checkpoint_reentrant": true)"));
  CHECK(checkpointed_layer_forward_bytes(reentrant) == 67108864.0);
}

TEST_CASE("The last checkpointed layer's forward: transformers' MoE loop with bitsandbytes' experts",
          "[activations][checkpoint][moe][qlora]") {
  // The allocation timeline oracle's QLoRA draw seed 1 q03 (tests/oracle/bnb.py): transformers'
  // Mixtral block, 3 layers, h 192, 6 heads of 32 in 1 group, T = 24, 4 experts, top 2,
  // f_e 376, NF4 with double quantisation, bf16 compute (e = 2), kbit_upcast none, adapters on
  // q/k/v/o (none on the experts), the non-reentrant checkpoint, bitsandbytes >= 0.43.2.
  // Balanced routing: n = T·K/E = 12 rows per expert. At the last expert's w3 MatMul4Bit,
  // beyond the checkpoints:
  //   the layer's residual sum and the post-attention norm's output 2 · 2·T·h = 18,432
  //   router_logits e·T·E = 192; selected_experts 8·T·K = 384; routing_weights e·T·K = 96;
  //   final_hidden_states e·T·h = 9,216; the one_hot mask 8·T·K·E = 1,536       (11,424)
  //   the previous expert's weighted output e·n·h = 4,608; torch.where's indices 16·n = 192;
  //   the expert's rows e·n·h = 4,608                                            (9,408)
  //   SiLU's output e·n·f_e = 9,024; w3's weight dequantised e·h·f_e = 144,384; its restored
  //   absmax 4·ceil(h·f_e/64) = 4,512 is freed before F.linear's output e·n·f_e = 9,024 (162,432)
  // 18,432 + 11,424 + 9,408 + 162,432 = 201,696 B, the oracle's forward moment to the byte (it
  // read 34,752 B under with the attention's points alone: the softmax's, 74,496 B).
  const std::string q03 = R"({"profile": "trainmem", "framework": "ddp", "data_parallel_size": 1,
      "model_implementation": "hf-transformers", "num_layers": 3, "hidden_size": 192, "num_attention_heads": 6,
      "num_query_groups": 1, "kv_channels": 32, "ffn_hidden_size": 376, "vocab_size": 465,
      "make_vocab_size_divisible_by": 1, "share_embeddings_and_output_weights": false, "gated_linear_unit": true,
      "activation_func": "silu", "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 24,
      "micro_batch_size": 1, "global_batch_size": 1, "params_dtype": "nf4", "compute_dtype": "bf16",
      "optimizer": "adamw", "attention_backend": "unfused", "attention_dropout": 0, "hidden_dropout": 0,
      "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
      "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 376, "moe_layer_freq": 1,
      "peft": "qlora", "lora_rank": 4, "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
      "lora_dropout": 0, "checkpoint_reentrant": false, "kbit_upcast": "none", "nf4_double_quant": true,
      "workspace_bytes": 0, "bnb_keeps_matmul_input": )";
  CHECK(checkpointed_layer_forward_bytes(config_from(q03 + "false}")) == 201696.0);
  // bitsandbytes < 0.43.2: each expert's rows (w1's and w3's A) and product (w2's) stay on ctx,
  // counted among the checkpoints: the rows are not counted again (-4,608) and the last expert's
  // product, counted there but made after w3, is taken out (-9,024): 188,064 B. w2's point is
  // below: 18,432 + 11,424 + 4,800 + 144,384 + max(4,512, e·n·h = 4,608) = 183,648.
  CHECK(checkpointed_layer_forward_bytes(config_from(q03 + "true}")) == 188064.0);
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

TEST_CASE("QLoRA under TRL's casting: the embedding's output, mask and cos/sin stay in bf16",
          "[activations][checkpoint][qlora]") {
  // kbit_upcast trl casts embed_tokens back to bf16 (the norms stay fp32), so the first layer's
  // checkpointed input, the causal mask and cos/sin (LlamaModel builds both in inputs_embeds'
  // dtype) are bf16; under kbit_upcast peft the embedding is fp32 and so are they.
  //   cos and sin 2 · e · s · k: trl 2 · 2 · 1,024 · 128 = 524,288, peft 1,048,576;
  //   mask e · b · s²: trl 2 · 1,024² = 2,097,152, peft 4,194,304; positions 8 · 1,024 = 8,192.
  //   the frozen embedding keeps no token ids: trl 2,629,632, peft 5,251,072.
  //   the first layer's input e · T · h: trl 2 · 1,024 · 1,024 = 2,097,152, peft 4,194,304
  //   (bitsandbytes ≥ 0.43.2: no kept A; the reentrant checkpoint).
  const auto run = [](const std::string& upcast) {
    return config_from(checkpointed(R"("model_implementation": "hf-transformers", "peft": "qlora",
        "lora_target_modules": ["q_proj"], "bnb_keeps_matmul_input": false, "checkpoint_reentrant": true,
        "kbit_upcast": ")" + upcast + "\""));
  };
  const Config trl = run("trl"), peft = run("peft");
  CHECK(embedding_activation_bytes(trl) == 2629632.0);
  CHECK(embedding_activation_bytes(peft) == 5251072.0);
  CHECK(layer_activation_bytes(trl, false, LayerRecompute::checkpointed, nullptr, true) == 2097152.0);
  CHECK(layer_activation_bytes(peft, false, LayerRecompute::checkpointed, nullptr, true) == 4194304.0);
  // The later layers' inputs are the fp32 stream in both.
  CHECK(layer_activation_bytes(trl, false, LayerRecompute::checkpointed, nullptr, false) == 4194304.0);
}

TEST_CASE("A checkpointed layer's recomputation at down_proj, before its own backward", "[activations][checkpoint]") {
  // fp32, an adapter on down_proj only with dropout 0.1, the reentrant checkpoint (its backward
  // re-runs the whole layer). At down_proj's adapter sum, beyond the recomputed set (every tensor
  // the layer saves): the product, which nothing saves (the frozen base keeps nothing, the
  // adapter its own dropped copy), 4·T·f = 16,777,216; the MLP's argument, the post-attention
  // norm's output, which nothing saves either (gate and up are frozen, without adapters),
  // 4·T·h = 4,194,304; the base result, lora_B's scaled output and the sum, 3 · 4,194,304 =
  // 12,582,912. The residual sum is the fp32 norm's saved input itself. 33,554,432 B.
  const Config reentrant = config_from(checkpointed(R"("model_implementation": "hf-transformers",
      "compute_dtype": "fp32", "params_dtype": "fp32", "peft": "lora", "lora_target_modules": ["down_proj"],
      "lora_dropout": 0.1, "checkpoint_reentrant": true)"));
  CHECK(decoder_backward_bytes(reentrant).recompute_forward.extra == 33554432.0);
  // The non-reentrant checkpoint stops recomputing once the last saved tensor is packed (early
  // stop): with adapters on q_proj only, down_proj saves nothing, so the recomputation ends at
  // the SwiGLU product (walked as that node's point): no point of its own.
  const Config early_stop = config_from(checkpointed(R"("model_implementation": "hf-transformers",
      "compute_dtype": "fp32", "params_dtype": "fp32", "peft": "lora", "lora_target_modules": ["q_proj"],
      "checkpoint_reentrant": false)"));
  CHECK(decoder_backward_bytes(early_stop).recompute_forward.extra == 0);
  // bf16 full fine-tuning, reentrant: down_proj and gate/up keep the product and the norm output
  // (their weights train); the bf16 norm saves its fp32 copy, so the residual sum 2·T·h =
  // 2,097,152 is the layer frame's alone, beside down_proj's result 2,097,152: 4,194,304 B, as
  // the residual add's point (the MLP's output and the layer's output, 2 · 2,097,152).
  const Config full = config_from(checkpointed(R"("model_implementation": "hf-transformers",
      "compute_dtype": "bf16", "params_dtype": "bf16", "checkpoint_reentrant": true)"));
  CHECK(decoder_backward_bytes(full).recompute_forward.extra == 4194304.0);
}

TEST_CASE("A checkpointed MoE layer's recomputation at the last expert's w2", "[activations][checkpoint][moe]") {
  // transformers' MoE block, 4 experts, top 2, f_e 1,024, bf16 (e = 2), LoRA on q_proj only (the
  // router and the experts frozen), the non-reentrant checkpoint (the loop saves at every expert,
  // so the recomputation runs to the last one). Balanced routing: n = T·K/E = 512 rows per
  // expert. Beyond the recomputed set, at the last expert's w2:
  //   the residual sum (a bf16 stream: the norm saves its fp32 copy) 2·T·h = 2,097,152
  //   the router's argument, the norm output (a frozen router saves nothing) 2,097,152
  //   the router's logits e·T·E = 2 · 1,024 · 4 = 8,192
  //   final_hidden_states e·T·h = 2,097,152; the one_hot mask 8·T·K·E = 65,536
  //   the last expert's rows e·n·h = 1,048,576 and product e·n·f_e = 1,048,576 (frozen: unsaved)
  //   w2's output e·n·h = 1,048,576
  //   routing_weights cast to bf16, held by the block's frame and saved by nothing, e·T·K = 4,096
  // 3 · 2,097,152 + 8,192 + 65,536 + 3 · 1,048,576 + 4,096 = 9,515,008 B, less what the
  // recomputed set counts of the last expert but is not there: its weighted output e·n·h =
  // 1,048,576 and routing row e·n = 1,024 (made after w2), and its w2 output, which the set
  // counts as the weighting's saved operand (counted once, as the point's), 1,048,576:
  // 9,515,008 − 2,098,176 = 7,416,832 B.
  const Config c = config_from(checkpointed(R"("model_implementation": "hf-transformers",
      "compute_dtype": "bf16", "params_dtype": "bf16", "num_moe_experts": 4, "moe_router_topk": 2,
      "moe_ffn_hidden_size": 1024, "peft": "lora", "lora_target_modules": ["q_proj"],
      "checkpoint_reentrant": false)"));
  CHECK(decoder_backward_bytes(c).recompute_forward.extra == 7416832.0);
  // The same under QLoRA (NF4 experts with double quantisation, bf16 norms, bitsandbytes >=
  // 0.43.2): w2's dequantised weight is the stage's NF4 temporary, counted with its restored absmax
  // 4 · ⌈1,024 · 1,024 / 64⌉ = 65,536 B, which MatMul4Bit frees before F.linear writes w2's
  // output (1,048,576 B): the smaller of the two is taken out, 7,416,832 − 65,536 = 7,351,296 B.
  const Config q = config_from(checkpointed(R"("model_implementation": "hf-transformers",
      "compute_dtype": "bf16", "params_dtype": "nf4", "num_moe_experts": 4, "moe_router_topk": 2,
      "moe_ffn_hidden_size": 1024, "peft": "qlora", "lora_target_modules": ["q_proj"], "kbit_upcast": "none",
      "nf4_double_quant": true, "bnb_keeps_matmul_input": false, "checkpoint_reentrant": false)"));
  CHECK(decoder_backward_bytes(q).recompute_forward.extra == 7351296.0);
}

TEST_CASE("The output layer's LoRA forward: the adapter's sum over the whole logits", "[activations][lora]") {
  // torchtune, fp32 (e = 4), an adapter on the output layer with dropout 0.1. While LoRALinear
  // makes `out + lora_out` the base logits, lora_b's output and its scaled copy are there,
  // 3 · 4 · T·V = 3 · 4 · 1,024 · 32,000 = 393,216,000, beside the final norm's output, which
  // nothing saves (the frozen base keeps nothing, the adapter its own dropped copy), 4·T·h =
  // 4,194,304: 397,410,304 B beyond the saved tensors but the loss's. Without dropout lora_a
  // keeps the norm output itself: 393,216,000 B.
  const std::string run = R"("framework": "ddp", "model_implementation": "torchtune", "compute_dtype": "fp32",
      "params_dtype": "fp32", "peft": "lora", "lora_target_modules": ["q_proj", "lm_head"], )";
  CHECK(output_lora_forward_bytes(config_from(small_llama(run + R"("lora_dropout": 0.1)"))) == 397410304.0);
  CHECK(output_lora_forward_bytes(config_from(small_llama(run + R"("lora_dropout": 0)"))) == 393216000.0);
  // No adapter on the output layer: not a point of its own.
  CHECK(output_lora_forward_bytes(config_from(small_llama(R"("framework": "ddp", "model_implementation": "torchtune",
      "compute_dtype": "fp32", "params_dtype": "fp32", "peft": "lora", "lora_target_modules": ["q_proj"])"))) == 0);
}

TEST_CASE("transformers' shifting loss: the final norm's output beside the loss's forward", "[activations][lora]") {
  // LlamaForCausalLM.forward computes the loss with the final norm's output still bound to its
  // hidden_states. bf16 (e = 2), one sequence (no shifted copy: the slice is contiguous),
  // "shift-logits": the logits e·T·V = 2 · 1,024 · 32,000 = 65,536,000 and their fp32 upcast
  // 131,072,000, and, under LoRA with a frozen lm_head that keeps nothing, the norm output
  // 2·T·h = 2,097,152: 198,705,152 B. A trained lm_head copy (modules_to_save) saves its input:
  // 196,608,000 B.
  const std::string run = R"("framework": "ddp", "model_implementation": "hf-transformers", "compute_dtype": "bf16",
      "params_dtype": "bf16", "peft": "lora", "lora_target_modules": ["q_proj"], "transformers_loss": "shift-logits")";
  CHECK(loss_forward_transient_bytes(config_from(small_llama(run))) == 198705152.0);
  CHECK(loss_forward_transient_bytes(config_from(small_llama(run + R"(, "lora_modules_to_save": ["lm_head"])"))) ==
        196608000.0);
}

TEST_CASE("A checkpointed layer's recomputed set beside its checkpoint: the 16-bit input is not among it",
          "[activations][checkpoint]") {
  // transformers' RMSNorm saves `x.float()`: in an fp32 stream that is x itself, the checkpoint's
  // input (4·T·h = 4·1,024·1,024 = 4,194,304 B, counted once, with the checkpoint); in bf16 a new
  // fp32 copy, and nothing in the layer saves the bf16 input, so the recomputed set is the layer's
  // whole saved set (the allocation timeline oracle's seed 7 q03 read e·T·h under otherwise).
  const auto working_and_set = [](const std::string& dtype) {
    const std::string run = R"("framework": "ddp", "model_implementation": "hf-transformers", "attention_backend": "unfused",
        "compute_dtype": ")" + dtype + R"(", "params_dtype": ")" + dtype + "\"";
    const Config checkpointed_run = config_from(checkpointed(run));
    const Config kept = config_from(small_llama(run));
    return std::pair{layer_recompute_working_bytes(checkpointed_run, false),
                     layer_activation_bytes(kept, false, LayerRecompute::policy)};
  };
  const auto [bf16_working, bf16_set] = working_and_set("bf16");
  CHECK(bf16_working == bf16_set);
  const auto [fp32_working, fp32_set] = working_and_set("fp32");
  CHECK(fp32_set - fp32_working == 4194304.0);
}
