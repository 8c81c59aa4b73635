// Fields a fine-tuning user was refused (issue 29 item 6): LoRA on MoE experts, Cut Cross
// Entropy, the chunked loss of the Hugging Face models. Every expected figure is worked out by
// hand in the comments from the rules of docs/trainmem-profile.md §7-8, not read back from the
// implementation.
#include <string>
#include <vector>

#include "support.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/import.hpp"

using namespace trainmem;
using namespace trainmem::test;
using trainmem::test::has_line;

namespace {

// A small Mixtral-style model under Hugging Face PEFT (framework ddp: model_implementation
// hf-transformers): 2 layers, h = 1024, 8 heads of 128, every layer MoE with E = 4 experts of
// f_e = 4096 (SwiGLU), top-2, vocabulary 32,000, RMSNorm, no biases, no dropout; one sequence of
// 1,024 tokens, bf16 everywhere.
const std::string k_moe = R"("num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
    "ffn_hidden_size": 4096, "vocab_size": 32000, "normalization": "RMSNorm", "swiglu": true,
    "add_bias_linear": false, "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 1024,
    "micro_batch_size": 1, "gpus_per_node": 1, "num_moe_experts": 4, "moe_router_topk": 2,
    "framework": "ddp", "params_dtype": "bf16", "peft": "lora")";


std::string moe(const std::string& more) { return "{" + k_moe + ", " + more + "}"; }

double named(const SavedTensors& saved, const std::string& name) {
  double bytes = 0;
  for (const SavedTensor& t : saved)
    if (t.name == name) bytes += t.bytes;
  return bytes;
}

}  // namespace

TEST_CASE("LoRA on MoE experts: one adapter per expert linear", "[refused][experts]") {
  // r = 8 on gate_proj, up_proj, down_proj of every expert (PEFT lora.Linear per expert):
  //   gate: A 1024·8 = 8,192, B 8·4096 = 32,768 → 40,960; up the same 40,960;
  //   down: A 4096·8 = 32,768, B 8·1024 = 8,192 → 40,960. Per expert 122,880;
  //   × 4 experts = 491,520 per layer; × 2 layers = 983,040.
  const FullEstimate est = full_estimate(config_from(moe(R"("lora_target_modules": ["gate_proj", "up_proj", "down_proj"])")));
  CHECK(est.params.adapter == 983040);
  // With expert parallelism 2 (data_parallel_size 2) each GPU holds 2 experts and their
  // adapters: 491,520.
  const FullEstimate ep = full_estimate(config_from(moe(R"("lora_target_modules": ["gate_proj", "up_proj", "down_proj"],
      "data_parallel_size": 2, "expert_model_parallel_size": 2)")));
  CHECK(ep.params.adapter == 983040);
  CHECK(ep.params.adapter_per_gpu == 491520);
  // The rank bound reads the experts' sides: min(1024, 4096) = 1024.
  CHECK(messages_for(moe(R"("lora_target_modules": ["down_proj"], "lora_rank": 2048)")) ==
        one("lora_rank: must be at most the smaller dimension of every target (rank(B·A) ≤ min(in, "
            "out)); down_proj is 4096 → 1024, got 2048"));
}

TEST_CASE("LoRA on MoE experts: what the experts keep for backward", "[refused][experts]") {
  // The MoE layer with adapters on q_proj, v_proj only (frozen experts) against one with the
  // experts' gate, up and down too. N = T · K = 1,024 · 2 = 2,048 routed rows; bf16 (e = 2);
  // fp32 PEFT adapters under ddp with bf16 weights make lora_A read its own fp32-cast copy
  // (adapter_copy), so the expert's input is not the base's: each adapter keeps
  //   its input copy e · in · N and its r-wide intermediate e · 8 · N.
  //   gate: 2·1024·2048 = 4,194,304 + 2·8·2048 = 32,768
  //   up:   4,194,304 + 32,768
  //   down: 2·4096·2048 = 16,777,216 + 32,768
  //   sum 25,165,824 + 98,304 = 25,264,128 B more per MoE layer.
  const Config frozen = config_from(moe(R"("lora_target_modules": ["q_proj", "v_proj"])"));
  const Config experts = config_from(moe(R"("lora_target_modules": ["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"])"));
  SavedTensors a, b;
  const double without = layer_activation_bytes(frozen, true, LayerRecompute::policy, &a);
  const double with = layer_activation_bytes(experts, true, LayerRecompute::policy, &b);
  CHECK(with - without == 25264128);
  CHECK(named(b, "lora.down_proj_input") == 16777216);
  CHECK(named(b, "lora.gate_proj_intermediate") == 32768);
}

TEST_CASE("LoRA on MoE experts: named errors", "[refused][experts]") {
  CHECK(messages_for(moe(R"("model_implementation": "torchtune", "lora_target_modules": ["up_proj"])")) ==
        one("lora_target_modules: \"gate_proj\", \"up_proj\" and \"down_proj\" on the experts of an "
            "MoE model are modelled for model_implementation \"hf-transformers\" (PEFT on each "
            "expert's linears) and \"megatron-core\" (ms-swift's adapters on the grouped experts) only, "
            "got \"torchtune\""));
  CHECK(messages_for(moe(R"("moe_shared_expert_intermediate_size": 1024, "lora_target_modules": ["gate_proj"])")) ==
        one("lora_target_modules: \"gate_proj\", \"up_proj\" and \"down_proj\" on an MoE model with "
            "shared or latent experts are not modelled (adapters on the routed experts only, Mixtral "
            "and Qwen3-MoE style; ms-swift's all-linear would also wrap a shared expert's linear_fc1 "
            "and linear_fc2)"));
}

TEST_CASE("LoRA on MoE experts: the importers", "[refused][experts][import]") {
  // axolotl on Mixtral: PEFT names its experts' linears w1 (gate), w2 (down), w3 (up)
  // (transformers MixtralBlockSparseTop2MLP: w2(act(w1(x)) * w3(x))).
  const std::string mixtral = R"({"base_model": "mistralai/Mixtral-8x7B-v0.1", "adapter": "lora",
      "lora_r": 8, "sequence_len": 1024, "micro_batch_size": 1, "bf16": true, )";
  const ImportResult experts = import_axolotl(mixtral + R"("lora_target_modules": ["q_proj", "w1", "w2", "w3"]})", {});
  REQUIRE(experts.ok());
  CHECK(get_field(experts.input, field::lora_target_modules.text) ==
        FieldValue(std::vector<std::string>{"q_proj", "gate_proj", "up_proj", "down_proj"}));
  // Mixtral 8x7B, r = 8: per layer q_proj 4096·8 + 8·4096 = 65,536 and per expert
  // gate 4096·8 + 8·14336 = 147,456, up 147,456, down 14336·8 + 8·4096 = 147,456: 442,368;
  // × 8 experts = 3,538,944; per layer 3,604,480; × 32 layers = 115,343,360.
  const Resolved resolved = resolve(experts.input);
  REQUIRE(resolved.issues.empty());
  const FullEstimate est = full_estimate(resolved.config);
  CHECK(est.params.adapter == 115343360);
  // PEFT's target_parameters (fused 3-D experts) is a named error in axolotl and TRL.
  const ImportResult params = import_axolotl(mixtral + R"("lora_target_modules": ["q_proj"],
      "lora_target_parameters": ["mlp.experts.gate_up_proj"]})", {});
  REQUIRE(params.issues.size() == 1);
  CHECK(params.issues[0].message.rfind("lora_target_parameters: PEFT's target_parameters (lora.ParamWrapper", 0) == 0);
}

namespace {

// The dense Llama-style model of finetune.test.cpp (2 layers, h = 1024, 8 heads, SwiGLU f = 4096,
// vocabulary 32,000, one sequence of 1,024 tokens) under the transformers Trainer (ddp,
// hf-transformers), pure bf16.
const std::string k_dense = R"("num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
    "ffn_hidden_size": 4096, "vocab_size": 32000, "normalization": "RMSNorm", "swiglu": true,
    "add_bias_linear": false, "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 1024,
    "micro_batch_size": 1, "gpus_per_node": 1, "framework": "ddp", "params_dtype": "bf16",
    "compute_dtype": "bf16")";

std::string dense(const std::string& more) { return "{" + k_dense + (more.empty() ? "" : ", " + more) + "}"; }

double module_bytes(const SavedTensors& saved, const std::string& module) {
  double bytes = 0;
  for (const SavedTensor& t : saved)
    if (t.module == module) bytes += t.bytes;
  return bytes;
}

}  // namespace

TEST_CASE("cut_cross_entropy: what the fused function keeps and makes", "[refused][loss]") {
  // Full fine-tuning, T = 1,024 tokens, h = 1,024, V = 32,000, bf16 (e = 2).
  // Unfused (transformers ForCausalLMLoss): the fp32 log-probabilities 4·1024·32000 =
  //   131,072,000 and the padded labels' view 8·1025 = 8,200: 131,080,200 B in the loss.
  // Cut Cross Entropy (LinearCrossEntropyFunction.forward's save_for_backward): lse 4·1024 =
  //   4,096, the labels 8·1024 = 8,192, valids 4·1024 = 4,096, logit_avg 4·32000 = 128,000:
  //   144,384 B in the loss; the output layer's input (the final norm's output) 2·1024·1024 =
  //   2,097,152 either way (a trainable output layer keeps it too).
  SavedTensors unfused, cce;
  output_activation_bytes(config_from(dense("")), &unfused);
  output_activation_bytes(config_from(dense(R"("cut_cross_entropy": true)")), &cce);
  CHECK(module_bytes(unfused, "loss") == 131080200);
  CHECK(module_bytes(cce, "loss") == 144384);
  CHECK(named(cce, "output.output_layer_input") == 2097152);
  CHECK(module_bytes(cce, "output") == module_bytes(unfused, "output"));
  // Backward's transients beside them: de = zeros_like(e) 2·1024·1024 = 2,097,152; the
  // vocabulary order 12·32,000 = 384,000; locks 4 · ⌈1024/64⌉ · (⌈1024/128⌉ + ⌈32000/128⌉) =
  //   4·16·(8 + 250) = 16,512: 2,497,664 B (unfused: two fp32 logits 2·4·1024·32000 = 262,144,000).
  CHECK(loss_transient_bytes(config_from(dense(R"("cut_cross_entropy": true)"))) == 2497664);
  CHECK(loss_transient_bytes(config_from(dense(""))) == 262144000);
  // LoRA on q_proj, v_proj: the output layer is frozen, so the unfused model keeps no input for
  // it, but the fused function still saves e: 2,097,152 B.
  SavedTensors lora;
  output_activation_bytes(config_from(dense(R"("peft": "lora", "cut_cross_entropy": true)")), &lora);
  CHECK(named(lora, "output.output_layer_input") == 2097152);
  CHECK(module_bytes(lora, "loss") == 144384);
}

TEST_CASE("cut_cross_entropy: named errors", "[refused][loss]") {
  CHECK(messages_for(dense(R"("model_implementation": "torchtune", "cut_cross_entropy": true)")) ==
        one("cut_cross_entropy: patches Hugging Face transformers' models (cce_patch): needs "
            "model_implementation \"hf-transformers\", got \"torchtune\""));
  CHECK(messages_for(dense(R"("params_dtype": "fp32", "cut_cross_entropy": true)")) ==
        one("cut_cross_entropy: needs the output layer's weight and the compute dtype in bf16 or fp16 "
            "(its backward kernel asserts 16-bit inputs), got params_dtype \"fp32\" and compute_dtype "
            "\"bf16\""));
  CHECK(messages_for(dense(R"("fused_linear_cross_entropy": true, "cut_cross_entropy": true)")) ==
        one("cut_cross_entropy: is a loss of its own: not with cross_entropy_loss_fusion, "
            "fused_linear_cross_entropy or cross_entropy_chunks"));
  CHECK(messages_for(dense(R"("peft": "lora", "lora_target_modules": ["q_proj", "lm_head"],
      "cut_cross_entropy": true)")) ==
        one("cut_cross_entropy: with an lm_head adapter is not modelled (newer releases fold the "
            "adapter into a wider classifier); drop lm_head from lora_target_modules"));
}

TEST_CASE("transformers_loss: transformers 4.46-4.48's loss, by hand", "[refused][loss]") {
  // The dense model above (b = 1, s = 1,024, V = 32,000, bf16, full fine-tuning): the loss of
  // transformers 4.46 to 4.48 shifts the upcast logits into a copy of b(s - 1) = 1,023 rows.
  // Saved: the log-probabilities 4·1023·32000 = 130,944,000 and labels[..., 1:] (contiguous
  // when b = 1: a view of the batch's [1, 1024] labels) 8·1024 = 8,192: 130,952,192 B (current
  // transformers: 131,080,200, the cut_cross_entropy case above).
  SavedTensors shifted;
  output_activation_bytes(config_from(dense(R"("transformers_loss": "shift-logits")")), &shifted);
  CHECK(module_bytes(shifted, "loss") == 130952192);
  CHECK(named(shifted, "loss.log_softmax") == 130944000);
  // Backward's two fp32 temporaries over the shifted rows: 2·4·1023·32000 = 261,888,000.
  CHECK(loss_transient_bytes(config_from(dense(R"("transformers_loss": "shift-logits")"))) == 261888000);
  // Forward, beside the saved ones: the bf16 logits 2·1024·32000 = 65,536,000 and their fp32
  // upcast 4·1024·32000 = 131,072,000: 196,608,000. With one sequence the shifted slice
  // [1, 1023, V] of the contiguous upcast is contiguous itself, so .contiguous() copies nothing
  // (the allocation timeline oracle's evaluation step measures it so).
  CHECK(loss_forward_transient_bytes(config_from(dense(R"("transformers_loss": "shift-logits")"))) == 196608000);
  // Current transformers ("pad-labels") copies no logits: the same logits and upcast, 196,608,000
  // B with one sequence (full fine-tuning: lm_head keeps the final norm's output), below the
  // backward's 8 B per logit here; with a small vocabulary beside a frozen lm_head's unsaved input
  // it is the larger (the allocation timeline oracle's seed 13 q01).
  CHECK(loss_forward_transient_bytes(config_from(dense(""))) == 196608000);
  // Two sequences: the copy exists, 4·2·1023·32000 = 261,888,000, beside the logits
  // 2·2048·32000 = 131,072,000 and their upcast 4·2048·32000 = 262,144,000: 655,104,000.
  CHECK(loss_forward_transient_bytes(config_from(dense(R"("transformers_loss": "shift-logits", "micro_batch_size": 2)"))) ==
        655104000);
  // The forward moment: the loss's part is saved + max(backward − target, forward).
  //   current: 131,080,200 + (262,144,000 − 8,200) = 393,216,000;
  //   shifted: 130,952,192 + max(261,888,000 − 8,192, 196,608,000) = 392,832,000;
  //   384,000 B less (one row fewer of log-probabilities and of backward's temporaries), the rest alike.
  const FullEstimate now = full_estimate(config_from(dense("")));
  const FullEstimate old = full_estimate(config_from(dense(R"("transformers_loss": "shift-logits")")));
  CHECK(now.moments.forward - old.moments.forward == 384000);
  // Two sequences (b = 2): the shifted labels are a [2, 1023] copy, 8·2046 = 16,368 B.
  SavedTensors two;
  output_activation_bytes(config_from(dense(R"("transformers_loss": "shift-logits", "micro_batch_size": 2)")), &two);
  CHECK(named(two, "loss.target") == 16368);
  // fp32 logits: .float() returns them, so no upcast, and no copy at b = 1: 4·1024·32000 = 131,072,000.
  CHECK(loss_forward_transient_bytes(config_from(dense(R"("transformers_loss": "shift-logits", "params_dtype": "fp32",
      "compute_dtype": "fp32")"))) == 131072000);
}

TEST_CASE("transformers_loss and model_output_kept: named errors", "[refused][loss]") {
  CHECK(messages_for(dense(R"("model_implementation": "torchtune", "transformers_loss": "shift-logits")")) ==
        one("transformers_loss: is transformers' ForCausalLMLoss: needs model_implementation \"hf-transformers\", "
            "got \"torchtune\""));
  CHECK(messages_for(dense(R"("cross_entropy_chunks": 4, "transformers_loss": "upcast-in-model")")) ==
        one("transformers_loss: is transformers' own loss; with cross_entropy_loss_fusion, cut_cross_entropy or "
            "cross_entropy_chunks another loss replaces it: leave it \"pad-labels\""));
  // Liger's fused loss replaces it in training only: evaluating, its forward runs the release's
  // loss (job_moments.test.cpp), so the field is the evaluation's there.
  CHECK(messages_for(dense(R"("fused_linear_cross_entropy": true, "transformers_loss": "shift-logits")")).empty());
  CHECK(messages_for(dense(R"("torch_compile": true, "transformers_loss": "shift-logits")")) ==
        one("transformers_loss: is modelled eager: compiled, the partitioner decides what the loss keeps (torch_compile "
            "false, or transformers_loss \"pad-labels\")"));
  CHECK(messages_for(dense(R"("fused_linear_cross_entropy": true, "model_output_kept": true)")) ==
        one("model_output_kept: is modelled for transformers' own loss, whose output holds the whole logits; with "
            "cross_entropy_loss_fusion, fused_linear_cross_entropy, cut_cross_entropy or cross_entropy_chunks set it "
            "false"));
}

TEST_CASE("transformers_loss upcast-in-model and model_output_kept: fsdp_qlora's loop, by hand", "[refused][loss]") {
  // The dense model (b = 1, s = 1,024, V = 32,000, bf16, full fine-tuning). transformers 4.45 and
  // earlier: the model's forward rebinds logits = logits.float() (the bf16 logits freed) and
  // shifts them: 4·1024·32000 = 131,072,000 of fp32 logits, whose shifted slice is a view at b = 1
  // (no copy), beside the saved tensors (as the shifted loss's: 130,952,192).
  const Config upcast = config_from(dense(R"("transformers_loss": "upcast-in-model")"));
  CHECK(loss_forward_transient_bytes(upcast) == 131072000);
  SavedTensors saved;
  output_activation_bytes(upcast, &saved);
  CHECK(module_bytes(saved, "loss") == 130952192);
  // The loop keeps the output: the fp32 logits, 131,072,000 B; with the later losses the
  // compute dtype's, 2·1024·32000 = 65,536,000 B; dropped before backward (the Trainer): 0.
  CHECK(kept_output_bytes(config_from(dense(R"("transformers_loss": "upcast-in-model", "model_output_kept": true)"))) ==
        131072000);
  CHECK(kept_output_bytes(config_from(dense(R"("model_output_kept": true)"))) == 65536000);
  CHECK(kept_output_bytes(upcast) == 0);
  // Held from the loss to the step's end: the optimizer step and the backward moments grow by the
  // output exactly; the forward moment's loss part, max(backward 261,888,000 − 8,192 + 131,072,000,
  // forward 131,072,000) = 392,951,808 against max(261,879,808, 131,072,000) = 261,879,808:
  // 131,072,000 B more.
  const FullEstimate without = full_estimate(upcast);
  const FullEstimate with = full_estimate(config_from(dense(R"("transformers_loss": "upcast-in-model", "model_output_kept": true)")));
  CHECK(with.moments.optimizer_step - without.moments.optimizer_step == 131072000);
  CHECK(with.moments.backward - without.moments.backward == 131072000);
  CHECK(with.moments.forward - without.moments.forward == 131072000);
}

TEST_CASE("cut_cross_entropy: axolotl's CutCrossEntropyPlugin", "[refused][loss][import]") {
  const std::string base = R"({"base_model": "NousResearch/Meta-Llama-3-8B", "adapter": "lora",
      "lora_target_linear": true, "sequence_len": 1024, "micro_batch_size": 1, "bf16": true, )";
  const ImportResult with = import_axolotl(base + R"("plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"],
      "cut_cross_entropy": true})", {});
  REQUIRE(with.ok());
  CHECK(with.input.cut_cross_entropy == true);
  CHECK(has_line(with.read, "cut_cross_entropy ← cut_cross_entropy"));
  // The plugin alone: its cut_cross_entropy defaults to true.
  const ImportResult plugin = import_axolotl(base + R"("plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]})", {});
  REQUIRE(plugin.ok());
  CHECK(plugin.input.cut_cross_entropy == true);
  // Without the plugin the key does nothing.
  const ImportResult without = import_axolotl(base + R"("cut_cross_entropy": true})", {});
  REQUIRE(without.ok());
  CHECK_FALSE(without.input.cut_cross_entropy.has_value());
  CHECK(has_line(without.ignored, "CutCrossEntropyPlugin"));
  const ImportResult fp32 = import_axolotl(base + R"("plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"],
      "cut_cross_entropy_accum_c_fp32": true})", {});
  REQUIRE(fp32.issues.size() == 1);
  CHECK(fp32.issues[0].message.rfind("cut_cross_entropy_accum_c_fp32: an fp32 accumulator", 0) == 0);
}

TEST_CASE("cross_entropy_chunks on transformers' models: axolotl's chunked loss", "[refused][loss]") {
  // Full fine-tuning, b = 1, T = 1,024, V = 32,000, bf16, 8 chunks. axolotl's compiled
  // compute_cross_entropy keeps each chunk's 16-bit logits (views of the whole when b = 1):
  //   2·1024·32000 = 65,536,000; one fp32 log-sum-exp per token 4·1024 = 4,096; the padded
  //   labels' view 8·1025 = 8,200: 65,548,296 B in the loss (unfused: 131,080,200).
  SavedTensors chunked;
  output_activation_bytes(config_from(dense(R"("cross_entropy_chunks": 8)")), &chunked);
  CHECK(module_bytes(chunked, "loss") == 65548296);
  // Backward: the chunks' 16-bit gradients, joined into the whole logits' gradient:
  //   2·1024·32000 = 65,536,000 beyond the saved tensors (unfused: 262,144,000).
  CHECK(loss_transient_bytes(config_from(dense(R"("cross_entropy_chunks": 8)"))) == 65536000);
  // b = 2 (T = 2,048): chunk copies 2·2048·32000 = 131,072,000, log-sum-exp 8,192, label chunks
  //   8·2048 = 16,384: 131,096,576.
  SavedTensors two;
  output_activation_bytes(config_from(dense(R"("cross_entropy_chunks": 8, "micro_batch_size": 2)")), &two);
  CHECK(module_bytes(two, "loss") == 131096576);
  CHECK(messages_for(dense(R"("framework": "fsdp2", "cross_entropy_chunks": 8)")) ==
        one("cross_entropy_chunks: is torchtune's CEWithChunkedOutputLoss (or axolotl's copy of it "
            "for transformers' models): needs model_implementation \"torchtune\", \"hf-transformers\" "
            "(or \"megatron-core\"), got \"torchtitan\""));
  CHECK(messages_for(dense(R"("fused_linear_cross_entropy": true, "cross_entropy_chunks": 8)")) ==
        one("cross_entropy_chunks: chunks the logits of transformers' loss; fused_linear_cross_entropy "
            "makes none"));
}

TEST_CASE("cross_entropy_chunks: axolotl's chunked_cross_entropy", "[refused][loss][import]") {
  const std::string base = R"({"base_model": "NousResearch/Meta-Llama-3-8B", "adapter": "lora",
      "lora_target_linear": true, "sequence_len": 1024, "micro_batch_size": 1, "bf16": true, )";
  const ImportResult fallback = import_axolotl(base + R"("chunked_cross_entropy": true})", {});
  REQUIRE(fallback.ok());
  CHECK(get_field(fallback.input, field::cross_entropy_chunks.text) == FieldValue(8.0));
  CHECK(has_line(fallback.assumed, "patch_chunked_ce_loss_fn's default 8"));
  const ImportResult four = import_axolotl(base + R"("chunked_cross_entropy": true, "chunked_cross_entropy_num_chunks": 4})", {});
  REQUIRE(four.ok());
  CHECK(get_field(four.input, field::cross_entropy_chunks.text) == FieldValue(4.0));
  const ImportResult off = import_axolotl(base + R"("chunked_cross_entropy_num_chunks": 4})", {});
  REQUIRE(off.ok());
  CHECK_FALSE(off.input.cross_entropy_chunks.has_value());
  CHECK(has_line(off.ignored, "chunked_cross_entropy_num_chunks"));
}

TEST_CASE("FSDP1 NO_SHARD: DDP's memory without the bucket copy", "[refused][import]") {
  // FSDP1 NO_SHARD all-reduces each unit's flat gradient in place (_reduce_grad_no_shard): the
  // importers read it as ddp with gradient_as_bucket_view (no second gradient copy).
  ImportOptions o;
  o.gpus = 8;
  const ImportResult axolotl = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1,
      "fsdp": ["full_shard", "auto_wrap"], "fsdp_config": {"fsdp_sharding_strategy": "NO_SHARD"}})", o);
  REQUIRE(axolotl.ok());
  CHECK(axolotl.input.framework == Framework::ddp);
  CHECK(axolotl.input.gradient_as_bucket_view == true);
  CHECK(has_line(axolotl.assumed, "_reduce_grad_no_shard"));
  // A sharded strategy says nothing about buckets.
  const ImportResult full = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1,
      "fsdp": ["full_shard", "auto_wrap"], "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}})", o);
  REQUIRE(full.ok());
  CHECK_FALSE(full.input.gradient_as_bucket_view.has_value());
}
