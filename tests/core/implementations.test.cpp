// The model's own code (issue 13 item 11): model_implementation hf-transformers, torchtune and
// torchtitan keep what their eager op sequences keep for backward (activations.cpp, "The model's
// own code"; tests/oracle/README.md lists the tensors). Every expected figure is worked out by
// hand in the comments from those lists, not read back from the implementation; the eager-path
// figures are also what tests/oracle/formulas.py gives for the same configs (and what torch 1.13
// measures, less the x² of each RMSNorm that only 1.13 keeps). The fused-kernel cases (flash,
// fused) cannot run in the oracle (torch 1.13 has no SDPA): they are source-derived.
#include <string>
#include <vector>

#include "support.hpp"
#include "worked_example.hpp"
#include "trainmem/activations.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

Config example(const std::string& more) { return config_from("{" + k_example + ", " + more + "}"); }

double layer(const Config& c, bool first = false) {
  return layer_activation_bytes(c, false, LayerRecompute::policy, nullptr, first);
}
double moe_layer(const Config& c) { return layer_activation_bytes(c, true, LayerRecompute::policy); }
double total(const Config& c) { return estimate_training_memory(c, c.num_microbatches).activation_bytes; }

}  // namespace

TEST_CASE("model_implementation follows the framework unless set", "[implementations][rules]") {
  const std::string base = R"("num_layers": 2, "hidden_size": 128, "num_attention_heads": 4,
      "vocab_size": 500, "seq_length": 64, "micro_batch_size": 1)";
  auto impl = [&](const std::string& more) {
    return config_from("{" + base + (more.empty() ? "" : ", " + more) + "}").model_implementation;
  };
  CHECK(impl("") == ModelImplementation::megatron_core);
  CHECK(impl(R"("framework": "megatron")") == ModelImplementation::megatron_core);
  CHECK(impl(R"("framework": "fsdp2")") == ModelImplementation::torchtitan);
  CHECK(impl(R"("framework": "ddp")") == ModelImplementation::hf_transformers);
  CHECK(impl(R"("framework": "deepspeed")") == ModelImplementation::hf_transformers);
  CHECK(impl(R"("framework": "fsdp2", "model_implementation": "torchtune")") == ModelImplementation::torchtune);
  CHECK(impl(R"("framework": "ddp", "model_implementation": "megatron-core")") ==
        ModelImplementation::megatron_core);

  auto messages = [&](const std::string& more) { return messages_for("{" + base + ", " + more + "}"); };
  using V = std::vector<std::string>;
  CHECK(messages(R"("framework": "megatron", "model_implementation": "hf-transformers")") ==
        V{"model_implementation: must be \"megatron-core\" with framework megatron (Megatron trains "
          "its own GPTModel), got \"hf-transformers\""});
  CHECK(messages(R"("framework": "ddp", "recompute_granularity": "selective")") ==
        V{"recompute_granularity: \"selective\" recomputes Megatron Core's modules "
          "(recompute_modules); model_implementation \"hf-transformers\" checkpoints whole layers "
          "(\"full\")"});
  CHECK(messages(R"("framework": "fsdp2", "recompute_granularity": "selective")") ==
        V{"recompute_granularity: \"selective\" recomputes Megatron Core's modules "
          "(recompute_modules); model_implementation \"torchtitan\" checkpoints whole layers "
          "(\"full\") or per op (\"selective_op\")"});
  CHECK(messages(R"("framework": "ddp", "recompute_granularity": "selective_op")") ==
        V{"recompute_granularity: \"selective_op\" is torchtitan's per-op checkpointing: needs "
          "model_implementation \"torchtitan\", got \"hf-transformers\""});
  // transformers' models take the field as axolotl's chunked_cross_entropy
  // (refused_fields.test.cpp); torchtitan's do not.
  CHECK(messages(R"("framework": "ddp", "cross_entropy_chunks": 8)").empty());
  CHECK(messages(R"("framework": "fsdp2", "cross_entropy_chunks": 8)") ==
        V{"cross_entropy_chunks: is torchtune's CEWithChunkedOutputLoss (or axolotl's copy of it for "
          "transformers' models): needs model_implementation \"torchtune\", \"hf-transformers\" "
          "(or \"megatron-core\"), got \"torchtitan\""});
  CHECK(messages(R"("model_implementation": "fused")") ==
        V{"model_implementation: must be one of \"megatron-core\", \"hf-transformers\", "
          "\"torchtune\", \"torchtitan\", got the string \"fused\""});
  CHECK(messages(R"("profile": "megatron-lm", "model_implementation": "torchtune")") ==
        V{"model_implementation: is read only by the trainmem profile (profile is \"megatron-lm\")"});
}

TEST_CASE("Hugging Face eager Llama: the oracle's worked example", "[implementations][hf]") {
  const Config c = example(k_fp32 + R"(, "attention_backend": "unfused")");
  REQUIRE(c.model_implementation == ModelImplementation::hf_transformers);
  // Per layer (e = 4, T = 128, a' = a = 4 since g = 2):
  //   input_layernorm: fp32 input 4·T·h = 65,536, rstd 4·T = 512, normalised e·T·h = 65,536
  //   q/k/v input (the norm's output, one storage) 65,536
  //   query after rope 65,536; key repeated to 4 heads 65,536; fp32 softmax 4·b·a·s² = 131,072
  //   (fp32: the probabilities are the softmax output itself); value repeated 65,536;
  //   context (o_proj input) 65,536
  //   post_attention_layernorm 65,536 + 512 + 65,536; gate/up input 65,536
  //   SwiGLU: gate output, SiLU output, up output, product: 4 · e·T·f = 4 · 176,128 = 704,512
  //   = 131,584 + 5 · 65,536 + 131,072 + 131,584 + 65,536 + 704,512 = 1,491,968
  CHECK(layer(c) == 1491968);
  // Once: int64 token ids 8·T = 1,024; cos and sin [1, s, k] each 2 · 4·64·32 = 16,384.
  CHECK(embedding_activation_bytes(c) == 17408);
  // Final norm 65,536 + 512 + 65,536; lm_head input 65,536; fp32 log-probabilities
  // 4·T·V = 256,000; shifted int64 labels 8·T = 1,024: 454,144.
  CHECK(output_activation_bytes(c) == 454144);
  // 2 · 1,491,968 + 17,408 + 454,144 = 3,455,488 (README; torch 1.13 measures 3,783,168, the
  // difference being mean's input 4·T·h in each of the 5 RMSNorms: 5 · 65,536 = 327,680).
  CHECK(total(c) == 3455488);
  // b = 1: ForCausalLMLoss keeps the padded [1, s + 1] labels: 8 · 65 = 520 instead of 8 · 64.
  const Config one = example(k_fp32 + R"(, "attention_backend": "unfused", "micro_batch_size": 1)");
  SavedTensors d;
  output_activation_bytes(one, &d);
  CHECK(d.back().name == "loss.target");
  CHECK(d.back().bytes == 520);
}

TEST_CASE("torchtune's llama3 on SDPA's math path: the worked example less cos/sin", "[implementations][torchtune]") {
  const Config c = example(k_fp32 + R"(, "model_implementation": "torchtune", "attention_backend": "unfused")");
  // The math path keeps q·√scale and k·√scale (a heads) 65,536 each, the softmax in the model
  // dtype (fp32 here: 131,072), v repeated 65,536: in fp32 the same bytes as the eager layer.
  CHECK(layer(c) == 1491968);
  // No cos/sin (the rope cache is a buffer): token ids only.
  CHECK(embedding_activation_bytes(c) == 1024);
  CHECK(output_activation_bytes(c) == 454144);
  CHECK(total(c) == 3439104);  // README: 3,455,488 − 16,384
}

TEST_CASE("pure bf16: fp32 norm inputs and softmax beside their 16-bit copies", "[implementations][hf]") {
  const Config c = example(k_bf16 + R"(, "attention_backend": "unfused")");
  // Per layer (e = 2): (8 + 4e)·T·h = 16 · 16,384 = 262,144 (two norms: fp32 input 4·T·h and
  // normalised e·T·h; q/k/v input and gate/up input e·T·h), 8·T = 1,024 (two rstd),
  // e·T·(2a + 2a')·k = 2·128·16·32 = 131,072 (q, k, v, context), (4 + 2)·b·a·s² = 196,608 (the
  // fp32 softmax and its bf16 copy), 4e·T·f = 352,256: 943,104.
  CHECK(layer(c) == 943104);
  // Once: token ids 1,024, cos/sin 2 · 2·64·32 = 8,192; final norm 65,536 + 512 + 32,768, lm_head
  // input 32,768, fp32 log-probabilities 256,000, labels 1,024.
  CHECK(embedding_activation_bytes(c) == 9216);
  CHECK(output_activation_bytes(c) == 388608);
  CHECK(total(c) == 2284032);  // 2 · 943,104 + 9,216 + 388,608
}

TEST_CASE("LoRA on the eager model: the first layer keeps only its adapters' paths", "[implementations][peft]") {
  const Config c = example(k_fp32 + R"(, "attention_backend": "unfused", "peft": "lora",
      "lora_rank": 4, "lora_target_modules": ["q_proj", "v_proj"])");
  // Layer 0: its input (the frozen embedding's output) needs no gradient, the norm weights are
  // frozen: input_layernorm keeps nothing. q_proj and v_proj adapters read the norm output as it
  // is (65,536, kept once) and keep r-wide intermediates 2 · 4·4·128 = 4,096. q and v need
  // gradients, k does not: QK^T keeps the key (65,536), not the query; the softmax (131,072) and
  // PV's value (65,536) stay; the context is nobody's (o_proj frozen). The residual now needs a
  // gradient: post_attention_layernorm keeps its fp32 input and rstd (65,536 + 512), not the
  // normalised input; gate/up frozen keep no input; SwiGLU keeps gate, SiLU and up outputs
  // 3 · 176,128 = 528,384, the product is nobody's (down frozen).
  //   65,536 + 4,096 + 65,536 + 131,072 + 65,536 + 66,048 + 528,384 = 926,208
  CHECK(layer(c, true) == 926208);
  // Layer 1: its input needs a gradient: the norm keeps 65,536 + 512, QK^T keeps the query too:
  //   926,208 + 66,048 + 65,536 = 1,057,792
  CHECK(layer(c) == 1057792);
  // Frozen embedding: no token ids; q needs a gradient: cos/sin 16,384.
  CHECK(embedding_activation_bytes(c) == 16384);
  // Final norm 65,536 + 512, frozen lm_head keeps no input, log-probabilities 256,000, labels
  // 1,024: 323,072.
  CHECK(output_activation_bytes(c) == 323072);
  CHECK(total(c) == 2323456);  // 926,208 + 1,057,792 + 16,384 + 323,072
  // Megatron Core's layer counts the first layer like the others (unchanged by this item).
  const Config core = example(k_fp32 + R"(, "attention_backend": "unfused", "peft": "lora",
      "lora_rank": 4, "lora_target_modules": ["q_proj", "v_proj"], "model_implementation": "megatron-core")");
  CHECK(layer(core, true) == layer(core));
}

TEST_CASE("gradient checkpointing: layer inputs, and transformers' shared arguments once", "[implementations][checkpoint]") {
  const std::string ckpt = R"(, "attention_backend": "unfused", "recompute_granularity": "full",
      "recompute_method": "uniform", "recompute_num_layers": 1)";
  const Config hf = example(k_fp32 + ckpt);
  // Each layer keeps its input 4·T·h = 65,536.
  CHECK(layer_activation_bytes(hf, false, LayerRecompute::checkpointed) == 65536);
  // transformers passes the eager 4-D causal mask [b, 1, s, s] in fp32 (4·2·64·64 = 32,768), the
  // positions 8·64 = 512 and cos/sin 16,384 to every checkpointed layer: kept once; token ids
  // 1,024.
  CHECK(embedding_activation_bytes(hf) == 1024 + 32768 + 512 + 16384);
  CHECK(total(hf) == 635904);  // 2 · 65,536 + 50,688 + 454,144
  // torchtune's checkpoint wrapper passes the hidden state only.
  const Config tt = example(k_fp32 + ckpt + R"(, "model_implementation": "torchtune")");
  CHECK(total(tt) == 586240);  // 2 · 65,536 + 1,024 + 454,144
  // With SDPA (a fused kernel) transformers builds no causal mask for a causal batch.
  const Config sdpa = example(k_fp32 + R"(, "attention_backend": "flash", "recompute_granularity": "full")");
  CHECK(embedding_activation_bytes(sdpa) == 1024 + 512 + 16384);
}

TEST_CASE("torchtune's chunked loss keeps the same bytes, except a one-token chunk's view", "[implementations][loss]") {
  // s = 25, b = 2, 8 chunks: chunk length ceil(25 / 8) = 4, so 6 chunks of 4 and one of 1.
  // Each 4-token chunk's rows are a copy (b > 1): 6 · 4·128·2·4 = 24,576 B of output-layer
  // input, 6 · 8·2·4 = 384 B of labels; the 1-token chunk is a view, so its savers keep the whole
  // norm output 4·128·50 = 25,600 and the whole labels 8·50 = 400. Unchunked: 25,600 and 400.
  // The fp32 log-probabilities add up to 4·50·500 = 100,000 either way.
  const std::string shape = R"(, "attention_backend": "unfused", "model_implementation": "torchtune",
      "seq_length": 25)";
  const Config whole = example(k_fp32 + shape);
  const Config chunked = example(k_fp32 + shape + R"(, "cross_entropy_chunks": 8)");
  CHECK(output_activation_bytes(chunked) - output_activation_bytes(whole) == 24576 + 384);
  // s = 64, 8 chunks of 8 tokens: copies that add up to the unchunked bytes.
  const Config even = example(k_fp32 + R"(, "attention_backend": "unfused", "model_implementation": "torchtune",
      "cross_entropy_chunks": 8)");
  CHECK(output_activation_bytes(even) == 454144);
}

TEST_CASE("Hugging Face Mixtral-style MoE block", "[implementations][moe]") {
  const Config c = example(k_fp32 + R"(, "attention_backend": "unfused", "num_moe_experts": 4,
      "moe_router_topk": 2, "moe_ffn_hidden_size": 172)");
  // N = T·K = 256 token-expert pairs, E = 4, f_e = 172. After post_attention_layernorm
  // (131,584, as in the dense layer):
  //   router input 65,536; fp32 router probabilities 4·T·E = 2,048; top-k indices 8·T·K = 2,048;
  //   top-k weights before renormalising 4·T·K = 1,024 and their sum 4·T = 512;
  //   torch.where indices 16·N = 4,096; gathered expert inputs e·N·h = 131,072;
  //   gate, SiLU, up outputs and product 4·e·N·f_e = 704,512; routing weight per pair e·N =
  //   1,024; expert output 131,072; weighted output 131,072: 1,174,016.
  // Attention as in the dense layer: 131,584 + 5 · 65,536 + 131,072 = 590,336.
  CHECK(moe_layer(c) == 590336 + 131584 + 1174016);
}

TEST_CASE("fused attention kernels: q, k, v, output and logsumexp (source-derived)", "[implementations][sdpa]") {
  // bf16, the worked example's shape. transformers' sdpa: enable_gqa keeps k and v at g = 2
  // heads; the kernel's output is o_proj's input (one storage):
  //   input_layernorm 4·T·h + 4·T + e·T·h = 65,536 + 512 + 32,768 = 98,816; q/k/v input 32,768
  //   q 2·128·128 = 32,768; k, v 2·128·64 = 16,384 each; logsumexp 4·a·T = 2,048;
  //   output 32,768; post_attention_layernorm 98,816; gate/up input 32,768; SwiGLU 4e·T·f =
  //   352,256: 715,776
  const Config hf = example(k_bf16 + R"(, "attention_backend": "flash")");
  CHECK(layer(hf) == 715776);
  // torchtune expands k and v to a heads before SDPA: +2 · 16,384.
  const Config tt = example(k_bf16 + R"(, "attention_backend": "flash", "model_implementation": "torchtune")");
  CHECK(layer(tt) == 748544);
  // torchtitan: nn.RMSNorm runs PyTorch's fused rms_norm, which keeps its bf16 input and rstd
  // (32,768 + 512 per norm) and no normalised copy; k and v repeated to a heads:
  //   33,280 + 32,768 (q/k/v input) + 4 · 32,768 (q, k, v, output) + 2,048 + 33,280 + 32,768 +
  //   352,256 = 617,472
  const Config tn = example(k_bf16 + R"(, "attention_backend": "flash", "model_implementation": "torchtitan")");
  CHECK(layer(tn) == 617472);
  // No cos/sin for torchtitan (freqs_cis is a buffer); the output side as torchtune's.
  CHECK(embedding_activation_bytes(tn) == 1024);
}

TEST_CASE("torchtitan's per-op checkpointing is unchanged by the eager layer", "[implementations][torchtitan]") {
  // selective_op keeps the block input and the policy's saved outputs, whatever the layer's
  // eager saves; the recompute working set is the eager layer less those.
  const std::string json = R"({"profile": "trainmem", "framework": "fsdp2", "num_layers": 2,
      "hidden_size": 1024, "num_attention_heads": 8, "ffn_hidden_size": 4096, "vocab_size": 32000,
      "swiglu": true, "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 1024,
      "micro_batch_size": 1, "attention_dropout": 0, "hidden_dropout": 0,
      "recompute_granularity": "selective_op"})";
  const Config c = config_from(json);
  Config core = c;
  core.model_implementation = ModelImplementation::megatron_core;
  CHECK(layer(c) == layer(core));
  // The eager layer without recompute (bf16, flash, T = 1,024, h 1,024, f 4,096):
  //   norms 2 · (2,097,152 + 4,096); q/k/v input, q, k, v, output, gate/up input 6 · 2,097,152;
  //   logsumexp 4·8·1,024 = 32,768; SwiGLU 4 · 8,388,608: 50,372,608
  Config none = c;
  none.recompute_granularity = RecomputeGranularity::none;
  CHECK(layer(none) == 50372608);
  CHECK(layer_recompute_working_bytes(c, false) == 50372608 - layer(c));
}

namespace {

// The one-layer Llama of support.hpp (tiny_llama), as transformers' model.
std::string tiny(const std::string& more) { return tiny_llama("hf-transformers", more); }

}  // namespace

TEST_CASE("for-loop AdamW: the previous tensor's denom beside the current one's two temporaries",
          "[implementations][moments][optimizer]") {
  // torch/optim/adam.py @ dc80ccde, _single_tensor_adam: `denom = (exp_avg_sq.sqrt() / c).add_(eps)`
  // in the loop over the parameters: tensor i's sqrt and quotient beside tensor i−1's denom.
  // The parameters in model.parameters() order (elements): embed_tokens 512·64 = 32,768;
  // q, k, v, o 64·64 = 4,096 each; gate, up, down 64·128 = 8,192 each; input and post-attention
  // norms 64 each; the final norm 64; lm_head 32,768. Total 65,536 + 16,384 + 24,576 + 192
  // = 106,688.
  //   max_i (2·s_i + s_(i−1)): embed 65,536; q 8,192 + 32,768 = 40,960; gate 16,384 + 4,096;
  //   up and down 16,384 + 8,192 = 24,576; lm_head 65,536 + 64 = 65,600 (the largest).
  // for-loop: 65,600 · 4 = 262,400 B; foreach (one sqrt list of the whole group):
  // 106,688 · 4 = 426,752 B. The old rule, 2 × the largest tensor, gave 262,144: 256 B short.
  const Estimate loop = estimate_of(tiny(R"("optimizer_implementation": "for-loop")"));
  const Estimate each = estimate_of(tiny(R"("optimizer_implementation": "foreach")"));
  CHECK(each.moments.optimizer_step - loop.moments.optimizer_step == 426752 - 262400);
  // The whole moment: weights, gradients and the two moments, 4 · 4 · 106,688 = 1,707,008 B,
  // plus the temporaries.
  CHECK(loop.moments.optimizer_step == 1707008 + 262400);
  // torchtune's FeedForward registers w1 (gate), w2 (down), w3 (up): the same sizes here, the
  // same peak; with a vocabulary of 4 the MLP decides: down after gate or up after down,
  // 2 · 8,192 + 8,192 = 24,576 elements, 98,304 B, in both orders.
  const Estimate tt = estimate_of(tiny(R"("optimizer_implementation": "for-loop", "vocab_size": 4,
      "model_implementation": "torchtune")"));
  // Parameters: 4·64 · 2 = 512 + 16,384 + 24,576 + 192 = 41,664; 16 B each (weight, grad, two
  // moments) = 666,624 B.
  CHECK(tt.moments.optimizer_step == 666624 + 98304);
}

TEST_CASE("for-loop AdamW over an MoE model's adapters: the frozen experts add nothing to the order",
          "[implementations][moments][optimizer]") {
  // The tiny model with two Mixtral-style MoE layers (4 experts) and one key/value head of 32,
  // LoRA r = 8 on k_proj only (PEFT, fp32 adapters). The trainable tensors in order: per layer
  // lora_A 8 · 64 = 512 and lora_B 32 · 8 = 256 elements, 2,048 and 1,024 B; the router and
  // experts are frozen. for-loop: max_i (2·s_i + s_(i−1)) = 2 · 2,048 + 1,024 = 5,120 B (lora_A of
  // the second layer after the first layer's lora_B); foreach: the whole group, 6,144 B. Without
  // the order the bound 3 × the largest, 6,144 B, was used (the allocation timeline oracle's
  // QLoRA draw seed 7 q01: 7,680 B over, now exact).
  const std::string moe = R"("num_layers": 2, "num_query_groups": 1, "num_moe_experts": 4, "moe_router_topk": 1,
      "moe_ffn_hidden_size": 64, "moe_layer_freq": 1, "peft": "lora", "lora_rank": 8,
      "lora_target_modules": ["k_proj"], "lora_dropout": 0, "optimizer_implementation": )";
  const Estimate loop = estimate_of(tiny(moe + "\"for-loop\""));
  const Estimate each = estimate_of(tiny(moe + "\"foreach\""));
  CHECK(each.moments.optimizer_step - loop.moments.optimizer_step == 6144 - 5120);
}

TEST_CASE("the output layer's backward: logits', input's and weight's gradients together",
          "[implementations][moments][loss]") {
  // The tiny model (T = 8, V = 512, h = 64, fp32). Model state before the step: 106,688
  // parameters (the for-loop test above), weights and AdamW's two moments, 12 · 106,688
  // = 1,280,256 B. The loss saved 4·T·V = 16,384 (log-probabilities) and the labels ForCausalLMLoss
  // padded, 8 · 9 = 72 (b = 1).
  //  - LogSoftmaxBackward0: A − 72 (NllLossBackward0 has freed the target) + 2 · 16,384:
  //    1,280,256 + A + 32,696.
  //  - MmBackward0 of lm_head: the loss's tensors freed (A − 16,456); the logits' gradient
  //    16,384, the input's gradient 4·T·h = 2,048 and lm_head's weight gradient 4·V·h = 131,072:
  //    1,280,256 + A + 133,048, the larger: the forward moment.
  const Estimate est = estimate_of(tiny(R"("optimizer_implementation": "foreach")"));
  CHECK(est.moments.forward == est.activation_bytes + 1280256 + 133048);
  // With 256 tokens the loss's backward is the larger (2·T·V > T·h + V·h): the target is
  // 8 · 257 = 2,056; LogSoftmaxBackward0: A − 2,056 + 2 · 4·256·512 = A + 1,046,520; MmBackward0:
  // A − 2,056 + 4·256·64 + 131,072 = A + 194,552.
  const Estimate longer = estimate_of(tiny(R"("optimizer_implementation": "foreach", "seq_length": 256)"));
  CHECK(longer.moments.forward == longer.activation_bytes + 1280256 + 1046520);
}

TEST_CASE("the decoder layers' backward: SwiGLU's gradients and the embedding's backward",
          "[implementations][moments][backward]") {
  // The tiny model (one layer, fp32, foreach, gradients freed between steps): weights and AdamW's
  // moments 12 · 106,688 = 1,280,256 B; all gradients 4 · 106,688 = 426,752 B.
  // In the layer's backward, at the SwiGLU product's MulBackward0, made: lm_head's 131,072, the
  // final norm's 4 · 64 and down_proj's 4 · 128 · 64 = 32,768 (164,096; 262,656 still absent);
  // live beyond the saved tensors (less the product, 4·T·f): the residual gradient 4·T·h and
  // three 4·T·f gradients.
  //  - T = 256: 4·T·f = 131,072, 4·T·h = 65,536: 1,280,256 + 426,752 − 262,656 − 131,072 +
  //    65,536 + 3 · 131,072 = 1,772,032 B beyond the saved tensors less the final norm's, the
  //    output layer's and the loss's. EmbeddingBackward0: every gradient (1,707,008) + the token
  //    ids 8 · 256 + the incoming 65,536 = 1,774,592, below once the layer keeps more than 2,560 B.
  //    With a fused attention kernel (flash) this point is the backward's largest:
  const Config fused = config_from(tiny(R"("optimizer_implementation": "foreach", "seq_length": 256,
      "attention_backend": "flash")"));
  const Estimate sdpa = estimate_training_memory(fused, fused.num_microbatches);
  CHECK(sdpa.moments.backward == 1772032 + sdpa.activation_bytes - output_activation_bytes(fused));
  //    With eager attention (the tiny model's own) the attention's SoftmaxBackward0 is larger:
  //    made by then, beyond the output layer's and the final norm's, o_proj's 4 · 64 · 64 =
  //    16,384, the MLP's 3 · 4 · 64 · 128 = 98,304 and its norm's 256 (246,272 in all); live the
  //    residual gradient 65,536, the values' gradient 4 · 2 · 32 · 256 = 65,536 and two fp32
  //    score-sized gradients 2 · 4 · 2 · 256 · 256 = 1,048,576; of the saved tensors only those
  //    before the softmax: the input norm's input, its rsqrt 4 · 256, its normalised output and
  //    q/k/v's input (3 · 65,536 + 1,024), q and k after rope (2 · 65,536), the fp32
  //    probabilities 4 · 2 · 256 · 256 = 524,288, and the model's cos/sin (65,536) and token
  //    ids (2,048): 920,576. 1,280,256 + 246,272 + 65,536 + 65,536 + 1,048,576 + 920,576
  //    = 3,626,752 B, above the SwiGLU point (1,772,032 B beyond the whole saved set).
  const Config longer = config_from(tiny(R"("optimizer_implementation": "foreach", "seq_length": 256)"));
  const Estimate est = estimate_training_memory(longer, longer.num_microbatches);
  CHECK(est.moments.backward == 3626752);
  CHECK(est.moments.backward > 1772032 + est.activation_bytes - output_activation_bytes(longer));
  //  - T = 8: the embedding's backward is the larger: 1,707,008 + 8 · 8 + 4 · 8 · 64 = 1,709,120
  //    (the layer's point: 1,280,256 + 164,096 + (A less the output's) − 4,096 + 2,048 + 12,288,
  //    about 1,494,000).
  CHECK(estimate_of(tiny(R"("optimizer_implementation": "foreach")")).moments.backward == 1709120);
}

TEST_CASE("the final RMSNorm's backward: PowBackward0 beside the norm's input", "[implementations][moments][loss]") {
  // The tiny model with a vocabulary of 4 (41,664 parameters: weights and AdamW's moments
  // 12 · 41,664 = 499,968 B), fp32, T = 8, h = 64. Made before the final norm's PowBackward0:
  // lm_head's gradient 4 · 4 · 64 = 1,024 and the norm's 4 · 64 = 256. Live beyond the decoder's
  // saved tensors: the norm's input 4·T·h = 2,048 (pow saved it) and five 4·T·h = 10,240 (x's
  // gradient from x · rsqrt, mean's backward, x.pow(1), 2 · x.pow(1), grad · that):
  // 499,968 + 1,024 + 256 + 2,048 + 10,240 = 513,536 B. The output layer's backward is below:
  // 499,968 + 1,024 + the output side's saved less the loss's (2,048 input, 32 stats, 2,048
  // normed, 2,048 lm_head input) + 4·T·V 128 + 4·T·h 2,048 = 509,344.
  const Config c = config_from(tiny(R"("optimizer_implementation": "foreach", "vocab_size": 4)"));
  const Estimate est = estimate_training_memory(c, c.num_microbatches);
  CHECK(est.moments.forward == 513536 + est.activation_bytes - output_activation_bytes(c));
}

TEST_CASE("torchtune's chunked output: every chunk's loss backward first, then the output layer's, summed in TBackward0's buffer",
          "[implementations][moments][loss]") {
  // The tiny model as torchtune's (the same 106,688 parameters: 1,280,256 B of weights and
  // moments), 2 chunks of 4 tokens (b = 1: each chunk's output-layer input is a view of the whole,
  // 4·T·h = 2,048). Both chunks' loss backward runs first, leaving each chunk's logits' gradient
  // 4·4·512 = 8,192 waiting; then chunk 2's MmBackward0 (input gradient 4·4·64 = 1,024, weight
  // gradient 4·512·64 = 131,072), then chunk 1's: 2 · 131,072 + 8,192 + 1,024 + 1,024 + 2,048
  // = 274,432; then the add in TBackward0's buffer: 3 · 131,072 + 2 · 1,024 = 395,264, the
  // largest. Beside them the final norm's saved fp32 input 2,048, rsqrt 4·8 = 32 and normalised
  // output 2,048: 399,392 B beyond the weights, moments and the decoder's saved tensors.
  const Config c = config_from(tiny(R"("optimizer_implementation": "foreach", "model_implementation": "torchtune",
      "cross_entropy_chunks": 2)"));
  const Estimate est = estimate_training_memory(c, c.num_microbatches);
  CHECK(est.moments.forward == 1280256 + 399392 + est.activation_bytes - output_activation_bytes(c));
}
