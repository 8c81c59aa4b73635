// torch_compile (issue 13 item 6): what a compiled module keeps for backward follows AOTAutograd's
// min-cut partitioner (activations.cpp, "torch.compile"). Every expected figure is worked out by
// hand in the comments from the partitioner's rules (torch/_functorch/partitioners.py @ 00c07b93:
// matmul and SDPA outputs and reductions are not recomputed, a matmul's input is kept for the
// weight gradient, pointwise chains are recomputed from the cheapest cut), tensor by tensor, on
// the worked example of tests/core/implementations.test.cpp. torch 1.13 (the oracle) has no
// torch.compile: these are source-derived.
#include <string>
#include <vector>

#include "support.hpp"
#include "worked_example.hpp"
#include "trainmem/activations.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// The worked example (worked_example.hpp) in bf16: T = 128 tokens, e = 2.
Config example(const std::string& more) { return config_from("{" + k_example + ", " + k_bf16 + ", " + more + "}"); }

double layer(const Config& c) { return layer_activation_bytes(c, false, LayerRecompute::policy); }

}  // namespace

TEST_CASE("compiled layers: norms keep their input, the MLP its gate, up and product", "[compile]") {
  // torchtune, flash attention, compiled, per layer:
  //   input norm: the bf16 input e·T·h = 32,768 and the mean of squares 4·T = 512 (the fp32
  //   upcast and the normalised input before the weight are recomputed): 33,280
  //   q/k/v input (the weighted norm output, a matmul's input) 32,768
  //   q, k and v expanded to a = 4 heads, the kernel's output: 4 · 32,768; logsumexp 4·a·T =
  //   2,048 (o_proj reads the output's storage)
  //   post-attention norm 33,280; gate/up input 32,768
  //   gate, up and their product e·T·f = 88,064 each (SiLU's output is recomputed from the gate)
  //   = 33,280 + 32,768 + 133,120 + 33,280 + 32,768 + 264,192 = 529,408
  const Config tt = example(R"("model_implementation": "torchtune", "attention_backend": "flash",
      "torch_compile": true)");
  CHECK(layer(tt) == 529408);
  // Eager (implementations.test.cpp) keeps 748,544: each norm's fp32 input and normalised copy
  // (65,536 more per norm) and SiLU's output (88,064): 748,544 − 131,072 − 88,064 = 529,408.
  const Config tt_eager = example(R"("model_implementation": "torchtune", "attention_backend": "flash")");
  CHECK(layer(tt_eager) - layer(tt) == 131072 + 88064);
  // torchtitan's eager norms already keep input and rstd (fused rms_norm): compiling drops only
  // SiLU's output, 617,472 − 88,064; its k and v are repeated to a heads like torchtune's.
  const Config tn = example(R"("framework": "fsdp2", "model_implementation": "torchtitan",
      "attention_backend": "flash", "torch_compile": true)");
  CHECK(layer(tn) == 529408);
  // transformers' sdpa keeps k and v at g = 2 heads: 529,408 − 2 · 16,384.
  const Config hf = example(R"("attention_backend": "flash", "torch_compile": true)");
  REQUIRE(hf.model_implementation == ModelImplementation::hf_transformers);
  CHECK(layer(hf) == 496640);
}

TEST_CASE("compiled eager attention keeps the bf16 scores, not the fp32 softmax", "[compile]") {
  // transformers' eager attention in bf16 (implementations.test.cpp: 943,104 per layer eager).
  // Compiled: the norms −2 · 65,536 and SiLU's output −88,064 as above; the fp32 softmax
  // 4·b·a·s² = 131,072 becomes the bf16 scores e·b·a·s² = 65,536 and the row max and sum
  // 8·a·T = 4,096 (−61,440); the bf16 probabilities stay (the bmm with V reads them):
  // 943,104 − 131,072 − 88,064 − 61,440 = 662,528.
  const Config c = example(R"("attention_backend": "unfused", "torch_compile": true)");
  CHECK(layer(c) == 662528);
}

TEST_CASE("compiled loss: torchtune's fp32 output, a chunk's bf16 logits, transformers' graph", "[compile][loss]") {
  // torchtune unchunked, full fine-tuning: full_finetune_single_device calls
  // training.compile_loss(self._loss_fn) and drops the compiled module it returns
  // (torchtune_recipe_uses_compiled_loss), so the loss runs eager: the final norm (eager: fp32
  // input 65,536, rstd 512, normalised 32,768), lm_head input 32,768, log_softmax's fp32 output
  // 4·T·V = 256,000, labels 8·T = 1,024: 388,608; its backward writes two fp32 gradients, 512,000.
  const Config tt = example(R"("model_implementation": "torchtune", "attention_backend": "flash",
      "torch_compile": true)");
  CHECK(output_activation_bytes(tt) == 388608);
  CHECK(loss_transient_bytes(tt) == 512000);
  const Config tt_eager = example(R"("model_implementation": "torchtune", "attention_backend": "flash")");
  CHECK(loss_transient_bytes(tt_eager) == 512000);
  // lora_finetune_single_device keeps the compiled module: the compiled loss keeps the fp32
  // logits output(h).float() hands it, 4·T·V = 256,000 (as many bytes as the eager
  // log-probabilities), and the log-sum-exp 4·T = 512; its backward writes one fp32 gradient of
  // the logits, 4·T·V = 256,000.
  const std::string lora = R"(, "peft": "lora", "lora_rank": 2, "lora_target_modules": ["q_proj", "v_proj"])";
  const Config tt_lora = example(R"("model_implementation": "torchtune", "attention_backend": "flash",
      "torch_compile": true)" + lora);
  const Config tt_lora_eager = example(R"("model_implementation": "torchtune", "attention_backend": "flash")" + lora);
  CHECK(output_activation_bytes(tt_lora) - output_activation_bytes(tt_lora_eager) == 512);
  CHECK(loss_transient_bytes(tt_lora) == 256000);
  CHECK(loss_transient_bytes(tt_lora_eager) == 512000);

  // Chunked in 8 (chunks of 8 tokens per sequence, b = 2: copies): the output layer's input
  // 32,768 in chunk copies, each chunk's bf16 logits e·V·rows (all chunks: 2·500·128 = 128,000)
  // and log-sum-exp (4·128 = 512), the labels' chunk copies 1,024; final norm 98,816: 261,120.
  const Config chunked = example(R"("model_implementation": "torchtune", "attention_backend": "flash",
      "torch_compile": true, "cross_entropy_chunks": 8)");
  CHECK(output_activation_bytes(chunked) == 261120);
  // One chunk's bf16 gradient at a time: e·V·(b·8) = 2·500·16 = 16,000.
  CHECK(loss_transient_bytes(chunked) == 16000);

  // transformers, the whole model compiled: the final norm compiled (33,280), lm_head input
  // 32,768, the bf16 logits e·T·V = 128,000, log-sum-exp 512, labels 1,024: 195,584; its
  // backward writes the bf16 gradient, 128,000.
  const Config hf = example(R"("attention_backend": "flash", "torch_compile": true)");
  CHECK(output_activation_bytes(hf) == 195584);
  CHECK(loss_transient_bytes(hf) == 128000);

  // torchtitan's loss is cross_entropy_loss_fusion's to say: compiling the blocks leaves it eager.
  const Config tn = example(R"("framework": "fsdp2", "model_implementation": "torchtitan",
      "attention_backend": "flash", "torch_compile": true)");
  const Config tn_eager = example(R"("framework": "fsdp2", "model_implementation": "torchtitan",
      "attention_backend": "flash")");
  CHECK(output_activation_bytes(tn) == output_activation_bytes(tn_eager));
  CHECK(loss_transient_bytes(tn) == loss_transient_bytes(tn_eager));
}

TEST_CASE("full recompute re-runs the compiled layer; the loss is freed before it", "[compile][recompute]") {
  const Config c = example(R"("model_implementation": "torchtune", "attention_backend": "flash",
      "torch_compile": true, "recompute_granularity": "full", "recompute_method": "uniform",
      "recompute_num_layers": 1)");
  // The checkpoint keeps each layer's bf16 input, e·T·h = 32,768; re-running one compiled layer
  // in backward materialises its saved set less that input: 529,408 − 32,768 = 496,640.
  CHECK(layer_recompute_working_bytes(c, false) == 496640);
  // Activations: token ids 8·T = 1,024, two checkpoints 65,536, the output side 388,608 (the
  // loss eager: full_finetune_single_device drops the compiled loss module, as above).
  const Estimate est = estimate_training_memory(c, c.num_microbatches);
  CHECK(est.activation_bytes == 1024 + 65536 + 388608);
  // End of forward: activations + the eager loss's two fp32 gradients 512,000 after
  // NllLossBackward0 has freed the labels it saved (1,024). In backward the loss chunk
  // (388,608) is gone before the top layer is re-run: 1,024 + 65,536 + 496,640. Both moments
  // hold the same model state, so backward − forward = 563,200 − (455,168 + 510,976).
  CHECK(est.moments.backward - est.moments.forward == -402944);
}

TEST_CASE("torch_compile: where it applies", "[compile][rules]") {
  const std::string base = "{" + k_example + ", " + k_bf16;
  using V = std::vector<std::string>;
  CHECK(messages_for(base + R"(, "model_implementation": "megatron-core", "torch_compile": true})") ==
        V{"torch_compile: needs model_implementation hf-transformers, torchtune or torchtitan "
          "(Megatron Core's Transformer Engine layers are not torch.compile'd)"});
  CHECK(messages_for(base + R"(, "torch_compile": "yes"})").size() == 1);
  CHECK(messages_for(R"({"profile": "megatron-lm", "num_layers": 2, "hidden_size": 128,
      "num_attention_heads": 4, "vocab_size": 500, "seq_length": 64, "micro_batch_size": 1,
      "torch_compile": true})")
            .front()
            .rfind("torch_compile: ", 0) == 0);
}
