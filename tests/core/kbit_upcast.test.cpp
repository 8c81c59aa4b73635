// QLoRA as PEFT, TRL, axolotl and bitsandbytes run it (issue 29 item 4): kbit_upcast (what
// prepare_model_for_kbit_training and the trainer after it leave of the unquantised parameters'
// dtype, and the fp32 residual stream that fp32 norm weights make) and bnb_keeps_matmul_input
// (bitsandbytes 0.41.0 … 0.43.1 keeping every Linear4bit's input). Every expected figure is worked
// out by hand in the comments from docs/trainmem-profile.md §7 ("QLoRA's unquantised parameters"),
// and the Llama 3 8B ones are the hand computation of the qlora notes' §7 rows 4-6.
#include <string>
#include <vector>

#include "support.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/import.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// The small Llama-style model of qlora.test.cpp: 2 layers, h = 1024, 8 heads of 128 (MHA), SwiGLU
// f = 4096, vocabulary 32,000, RMSNorm, no biases, tied embeddings; one sequence of 1,024 tokens
// (T = 1,024). flash attention (SDPA's fused kernel keeps o_proj's input as its output).
std::string small(const std::string& more) {
  return small_llama(R"("attention_backend": "flash", "framework": "ddp", "peft": "qlora",
      "lora_target_modules": ["q_proj", "v_proj"])" + (more.empty() ? "" : ", " + more));
}

// Llama 3 8B (the notes' §7): h 4096, 32 layers, 32 heads / 8 KV heads of 128, SwiGLU 14336,
// vocabulary 128,256, untied; seq 2048, batch 1; every linear of the decoder a LoRA target.
const std::string k_llama3_8b = R"({"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_query_groups": 8, "kv_channels": 128, "ffn_hidden_size": 14336, "vocab_size": 128256,
    "share_embeddings_and_output_weights": false, "normalization": "RMSNorm", "swiglu": true,
    "add_bias_linear": false, "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 2048,
    "micro_batch_size": 1, "gpus_per_node": 1, "attention_backend": "flash", "framework": "ddp",
    "peft": "qlora", "recompute_granularity": "full", "recompute_method": "uniform",
    "recompute_num_layers": 1, "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj",
    "gate_proj", "up_proj", "down_proj"]})";

std::string llama3(const std::string& more) {
  std::string json = k_llama3_8b;
  json.pop_back();
  return json + ", " + more + "}";
}

double saved_named(const SavedTensors& saved, std::string_view name) {
  double sum = 0;
  for (const SavedTensor& s : saved)
    if (s.name == name) sum += s.bytes;
  return sum;
}


}  // namespace

TEST_CASE("kbit_upcast: derived from who runs the QLoRA model", "[qlora][kbit]") {
  // ddp with transformers: PEFT's call, nothing undone (the most bytes: the trainer is unknown).
  CHECK(config_from(small("")).kbit_upcast == KbitUpcast::peft);
  // DeepSpeed below ZeRO-3: TRL and axolotl still call it (the model is loaded on the GPU).
  CHECK(config_from(small(R"("framework": "deepspeed", "zero_stage": 2)")).kbit_upcast == KbitUpcast::peft);
  // Sharded QLoRA (FSDP, ZeRO-3): TRL and axolotl skip it.
  CHECK(config_from(small(R"("framework": "deepspeed", "zero_stage": 3)")).kbit_upcast == KbitUpcast::none);
  CHECK(config_from(small(R"("framework": "fsdp2", "model_implementation": "hf-transformers")")).kbit_upcast ==
        KbitUpcast::none);
  // torchtune never calls PEFT.
  CHECK(config_from(small(R"("model_implementation": "torchtune")")).kbit_upcast == KbitUpcast::none);
  // bitsandbytes' released behaviour since 0.43.2 by default.
  CHECK_FALSE(config_from(small("")).bnb_keeps_matmul_input);
}

TEST_CASE("kbit_upcast: named errors for combinations that do not exist", "[qlora][kbit]") {
  std::string lora = small(R"("kbit_upcast": "trl")");
  lora.replace(lora.find("\"peft\": \"qlora\""), 15, "\"peft\": \"lora\"");
  CHECK(messages_for(lora) == one("kbit_upcast: applies to peft \"qlora\" only"));
  std::string lora_bnb = small(R"("bnb_keeps_matmul_input": true)");
  lora_bnb.replace(lora_bnb.find("\"peft\": \"qlora\""), 15, "\"peft\": \"lora\"");
  CHECK(messages_for(lora_bnb) == one("bnb_keeps_matmul_input: applies to peft \"qlora\" with params_dtype \"nf4\" only"));
  CHECK(messages_for(small(R"("model_implementation": "torchtune", "kbit_upcast": "peft")")) ==
        one("kbit_upcast: must be \"none\" with model_implementation \"torchtune\" (torchtune does not "
            "call PEFT's prepare_model_for_kbit_training)"));
  CHECK(messages_for(small(R"("model_implementation": "torchtune", "bnb_keeps_matmul_input": true)")) ==
        one("bnb_keeps_matmul_input: must be false with model_implementation \"torchtune\" (torchao's "
            "NF4Tensor and linear_nf4, not bitsandbytes' MatMul4Bit)"));
  CHECK(messages_for(small(R"("framework": "fsdp2", "model_implementation": "hf-transformers",
      "kbit_upcast": "trl")")) ==
        one("kbit_upcast: \"trl\" does not exist with framework fsdp2 or deepspeed zero_stage 3 (TRL and "
            "axolotl skip prepare_model_for_kbit_training for sharded QLoRA): use \"none\", or \"peft\" "
            "for a script that calls it itself"));
  CHECK(messages_for(small(R"("framework": "deepspeed", "zero_stage": 3, "kbit_upcast": "axolotl")")) ==
        one("kbit_upcast: \"axolotl\" does not exist with framework fsdp2 or deepspeed zero_stage 3 (TRL "
            "and axolotl skip prepare_model_for_kbit_training for sharded QLoRA): use \"none\", or "
            "\"peft\" for a script that calls it itself"));
  CHECK(messages_for(small(R"("framework": "fsdp2", "model_implementation": "hf-transformers",
      "kbit_upcast": "peft")")).empty());
}

TEST_CASE("kbit_upcast: the unquantised parameters' bytes", "[qlora][kbit]") {
  // The small model, no double quantisation: NF4 decoder linears 18,874,368 B with their 14 NF4
  // codes, 896 B: 18,875,264 B (qlora.test.cpp).
  // The rest: the tied embedding 32,000 × 1,024 = 32,768,000 elements and 5 norms of 1,024
  // (2 per layer + the final one) = 5,120.
  //   none:    (32,768,000 + 5,120) × 2 = 65,546,240       → 84,421,504 B
  //   peft:    (32,768,000 + 5,120) × 4 = 131,092,480      → 149,967,744 B
  //   trl:     32,768,000 × 2 + 5,120 × 4 = 65,556,480      → 84,431,744 B
  //   axolotl: no biases: as none                           → 84,421,504 B
  const auto frozen = [](const std::string& mode) {
    return full_estimate(config_from(small(R"("kbit_upcast": ")" + mode + "\""))).state.frozen_weights.total();
  };
  CHECK(frozen("none") == 84421504);
  CHECK(frozen("peft") == 149967744);
  CHECK(frozen("trl") == 84431744);
  CHECK(frozen("axolotl") == 84421504);
  SECTION("axolotl: biases stay fp32, norms go back") {
    // q/k/v biases (add_qkv_bias): (8 + 2 · 8) · 128 = 3,072 per layer, 6,144 in all:
    // none 6,144 × 2 = 12,288 more (84,433,792 B), axolotl 6,144 × 4 = 24,576 more (84,446,080 B).
    const auto with_bias = [](const std::string& mode) {
      return full_estimate(config_from(small(R"("add_qkv_bias": true, "kbit_upcast": ")" + mode + "\"")))
          .state.frozen_weights.total();
    };
    CHECK(with_bias("none") == 84433792);
    CHECK(with_bias("axolotl") == 84446080);
  }
}

TEST_CASE("kbit_upcast: fp32 norm weights make the residual stream and the MLP fp32", "[qlora][kbit]") {
  // A layer after the first (its input needs a gradient), no recompute, adapters on q and v.
  // With fp32 norm weights ("trl", "peft") the post-attention norm's output is fp32, gate and up
  // (Linear4bit) return fp32, and the three f-wide tensors the SwiGLU keeps (the gate output for
  // SiLU, the activation and the up output for the product) double: 3 × 4,096 × 1,024 × (4 − 2)
  // = 25,165,824 B more. The adapters: with "none" PEFT's bitsandbytes LoRA layer hands the bf16
  // norm output to lora_A as it is under autocast, one storage for both, 2,097,152 B; with an
  // fp32 norm output each adapter keeps its own bf16 cast, 2 × 2,097,152: 2,097,152 B more.
  // 25,165,824 + 2,097,152 = 27,262,976 B. The norms' saved fp32 inputs are fp32 already (LlamaRMSNorm's
  // hidden.to(float32)); attention's q, k, v reach the kernel in bf16 (autocast / flash's cast).
  const double none = layer_activation_bytes(config_from(small(R"("kbit_upcast": "none")")), false,
                                             LayerRecompute::policy);
  const double trl = layer_activation_bytes(config_from(small(R"("kbit_upcast": "trl")")), false,
                                            LayerRecompute::policy);
  const double axolotl = layer_activation_bytes(config_from(small(R"("kbit_upcast": "axolotl")")), false,
                                                LayerRecompute::policy);
  CHECK(trl - none == 27262976);
  SavedTensors none_saved;
  layer_activation_bytes(config_from(small(R"("kbit_upcast": "none")")), false, LayerRecompute::policy, &none_saved);
  CHECK(saved_named(none_saved, "attention.qkv_input") == 2097152);
  CHECK(saved_named(none_saved, "lora.q_proj_input") == 0);
  CHECK(saved_named(none_saved, "lora.v_proj_input") == 0);
  CHECK(axolotl == none);
  // A checkpointed layer keeps its input, the residual stream: 1,024 × 1,024 × 4 = 4,194,304 B
  // in fp32, 2,097,152 in bf16.
  const std::string full = R"("recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1, )";
  CHECK(layer_activation_bytes(config_from(small(full + R"("kbit_upcast": "trl")")), false,
                               LayerRecompute::checkpointed) == 4194304);
  CHECK(layer_activation_bytes(config_from(small(full + R"("kbit_upcast": "none")")), false,
                               LayerRecompute::checkpointed) == 2097152);
  SECTION("peft leaves lm_head fp32: autocast's bf16 copy of it is kept for the input's gradient") {
    // Untied: 32,000 × 1,024 × 2 = 65,536,000 B, only with "peft" ("trl" casts lm_head back).
    const std::string untied = R"("share_embeddings_and_output_weights": false, "kbit_upcast": )";
    SavedTensors peft_saved, trl_saved;
    output_activation_bytes(config_from(small(untied + "\"peft\"")), &peft_saved);
    output_activation_bytes(config_from(small(untied + "\"trl\"")), &trl_saved);
    CHECK(saved_named(peft_saved, "output.output_layer_weight_cast") == 65536000);
    CHECK(saved_named(trl_saved, "output.output_layer_weight_cast") == 0);
    // That copy is counted once: as the saved activation, not also as a weight copy. Autocast
    // caches only the casts of leaves that require grad, the fp32 adapters (q and v, r = 8:
    // 65,536 elements, 131,072 B in bf16); the frozen lm_head's cast is the matmul's saved
    // tensor (the allocation timeline oracle's QLoRA draws under kbit_upcast peft hold one
    // copy). Weight copies: 131,072 B under both (trl's bf16 lm_head needs no cast).
    const FullEstimate peft = full_estimate(config_from(small(untied + "\"peft\"")));
    const FullEstimate trl = full_estimate(config_from(small(untied + "\"trl\"")));
    CHECK(peft.state.weight_copies.total() == 131072);
    CHECK(trl.state.weight_copies.total() == 131072);
  }
}

TEST_CASE("kbit_upcast: eager attention's key and value reach the matmuls as fp32 and are cast whole", "[qlora][kbit]") {
  // transformers' eager attention, MQA (one key/value head of 128 for 8 query heads), one
  // sequence of 1,024, adapters on q and v, a layer after the first. With "none" the bf16 key
  // and value are repeat_kv's views of their one head (b = 1, g = 1) and the matmuls keep them:
  // 2 · 1 · 128 · 1,024 = 262,144 B each. With fp32 norms ("trl") Linear4bit returns k and v
  // .to(fp32), and the trainer's autocast casts them for QKᵀ and PV: _to_copy of the expanded
  // view writes all 8 heads, 2 · 8 · 128 · 1,024 = 2,097,152 B each (the allocation timeline
  // oracle's QLoRA draw seed 7 q01: 92,160 B per layer closer with this rule).
  const std::string mqa = R"("attention_backend": "unfused", "num_query_groups": 1, "kv_channels": 128, "kbit_upcast": )";
  SavedTensors none_saved, trl_saved;
  layer_activation_bytes(config_from(small(mqa + "\"none\"")), false, LayerRecompute::policy, &none_saved);
  layer_activation_bytes(config_from(small(mqa + "\"trl\"")), false, LayerRecompute::policy, &trl_saved);
  CHECK(saved_named(none_saved, "attention.k") == 262144);
  CHECK(saved_named(none_saved, "attention.v") == 262144);
  CHECK(saved_named(trl_saved, "attention.k") == 2097152);
  CHECK(saved_named(trl_saved, "attention.v") == 2097152);
}

TEST_CASE("bnb_keeps_matmul_input: MatMul4Bit's ctx keeps each Linear4bit's input", "[qlora][kbit]") {
  // A layer after the first, no recompute, bf16 residual ("none"). Under autocast PEFT's
  // bitsandbytes LoRA layer hands x to lora_A as it is, so q's adapter keeps the q/k/v input
  // (nothing more for A there); A is each other input itself, one storage per input: o_proj's
  // input is the flash kernel's saved output (nothing more); gate/up input
  // 1,024 × 1,024 × 2 = 2,097,152; down input 4,096 × 1,024 × 2 = 8,388,608 → 10,485,760 B.
  SavedTensors saved;
  layer_activation_bytes(config_from(small(R"("kbit_upcast": "none", "bnb_keeps_matmul_input": true)")), false,
                         LayerRecompute::policy, &saved);
  CHECK(saved_named(saved, "bnb.matmul_input") == 10485760);
  SECTION("under the non-reentrant checkpoint every checkpointed layer keeps every A") {
    // ctx.tensors is outside the checkpoint's saved-tensor hooks and the checkpointed forward
    // runs with grad enabled: beside the checkpoint (the bf16 residual, 2,097,152 B) each input
    // itself, as nothing else of the layer is kept: q/k/v 2,097,152, o_proj's (SDPA's output)
    // 2,097,152, gate/up 2,097,152, down 8,388,608 → 14,680,064 B. The reentrant checkpoint runs
    // that forward without a graph: the checkpoint alone.
    const std::string full = R"("kbit_upcast": "none", "bnb_keeps_matmul_input": true,
        "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
        "checkpoint_reentrant": )";
    SavedTensors non_reentrant;
    CHECK(layer_activation_bytes(config_from(small(full + "false")), false, LayerRecompute::checkpointed,
                                 &non_reentrant) == 2097152 + 14680064);
    CHECK(saved_named(non_reentrant, "bnb.matmul_input") == 14680064);
    CHECK(layer_activation_bytes(config_from(small(full + "true")), false, LayerRecompute::checkpointed) == 2097152);
    // The first layer: nothing calls enable_input_require_grads for a 4-bit model under the
    // non-reentrant checkpoint (PEFT's _prepare_model_for_gradient_checkpointing skips quantised
    // models; prepare_model_for_kbit_training calls it only for the reentrant one), so the frozen
    // embedding's output needs no gradient and q/k/v keep no A: o_proj's input (the adapters on
    // q and v make it need one), gate/up's and down's, 2,097,152 + 2,097,152 + 8,388,608 =
    // 12,582,912 B beside the checkpoint.
    SavedTensors first;
    layer_activation_bytes(config_from(small(full + "false")), false, LayerRecompute::checkpointed, &first, true);
    CHECK(saved_named(first, "bnb.matmul_input") == 12582912);
  }
  SECTION("after an fp32 norm each Linear4bit keeps its own bf16 copy") {
    // q, k, v: 3 × 2,097,152; gate, up: 2 × 2,097,152; down (fp32 product): 8,388,608
    //   → 6,291,456 + 4,194,304 + 8,388,608 = 18,874,368 B.
    SavedTensors fp32_saved;
    layer_activation_bytes(config_from(small(R"("kbit_upcast": "trl", "bnb_keeps_matmul_input": true)")), false,
                           LayerRecompute::policy, &fp32_saved);
    CHECK(saved_named(fp32_saved, "bnb.matmul_input") == 18874368);
  }
  SECTION("an adapter keeping the input already: nothing more") {
    // Under fsdp2 the adapters are bf16 (no copy): q's adapter keeps the q/k/v input and the
    // flash kernel o_proj's; gate/up 2,097,152 and down 8,388,608 remain: 10,485,760 B.
    SavedTensors fsdp_saved;
    layer_activation_bytes(config_from(small(R"("framework": "fsdp2", "model_implementation": "hf-transformers",
        "bnb_keeps_matmul_input": true)")), false, LayerRecompute::policy, &fsdp_saved);
    CHECK(saved_named(fsdp_saved, "bnb.matmul_input") == 10485760);
  }
}

TEST_CASE("Llama 3 8B QLoRA: the qlora notes' §7 rows 4-6 by hand", "[qlora][kbit]") {
  // Row 5: prepare_model_for_kbit_training's embeddings and lm_head, 2 × 525,336,576 elements,
  // from bf16 to fp32: 2 × 525,336,576 × 2 = 2,101,346,304 B; the 65 norms (2 per layer + the
  // final) 65 × 4,096 × 2 = 532,480 B more with both "peft" and "trl".
  const double none = full_estimate(config_from(llama3(R"("kbit_upcast": "none")"))).state.frozen_weights.total();
  const double peft = full_estimate(config_from(llama3(R"("kbit_upcast": "peft")"))).state.frozen_weights.total();
  const double trl = full_estimate(config_from(llama3(R"("kbit_upcast": "trl")"))).state.frozen_weights.total();
  CHECK(peft - none == 2101346304.0 + 532480);
  CHECK(trl - none == 532480);
  // Row 6: the checkpointed inputs of 32 layers, T = 2,048, h = 4,096, fp32 instead of bf16:
  // 32 × 2,048 × 4,096 × (4 − 2) = 536,870,912 B.
  const double cp_trl = layer_activation_bytes(config_from(llama3(R"("kbit_upcast": "trl")")), false,
                                               LayerRecompute::checkpointed);
  const double cp_none = layer_activation_bytes(config_from(llama3(R"("kbit_upcast": "none")")), false,
                                                LayerRecompute::checkpointed);
  CHECK(32 * (cp_trl - cp_none) == 536870912);
  // Row 4: with full (reentrant) recompute only the recomputed layer keeps MatMul4Bit's inputs.
  // The notes' bound (3h + f) · T · 2 = 109,051,904 B counts o_proj's input, which is the flash
  // kernel's saved output (no more bytes); every other linear has an adapter, and under the
  // trainer's autocast PEFT's bitsandbytes LoRA layer hands its bf16 input to lora_A as it is,
  // which keeps that storage already: A adds nothing beside the recomputation.
  const double with_a = layer_recompute_working_bytes(
      config_from(llama3(R"("kbit_upcast": "none", "bnb_keeps_matmul_input": true)")), false);
  const double without = layer_recompute_working_bytes(config_from(llama3(R"("kbit_upcast": "none")")), false);
  CHECK(with_a - without == 0);
}

TEST_CASE("importers say who ran prepare_model_for_kbit_training", "[qlora][kbit][import]") {
  const std::string trl = "accelerate launch trl/scripts/sft.py --model_name_or_path meta-llama/Llama-2-7b-hf "
                          "--use_peft --load_in_4bit";
  ImportOptions o;
  // TRL's SFTTrainer (v0.8 … v0.21) with --bf16: norms fp32, embeddings and lm_head back to bf16.
  o.overrides = split_words(trl + " --bf16 True");
  ImportResult r = import_accelerate(R"({"distributed_type": "NO"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.kbit_upcast == KbitUpcast::trl);
  // Without --bf16 nothing is cast back.
  o.overrides = split_words(trl);
  r = import_accelerate(R"({"distributed_type": "NO"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.kbit_upcast == KbitUpcast::peft);
  // FSDP QLoRA is TRL's sharded QLoRA: neither call.
  o.overrides = split_words(trl + " --bf16 True");
  r = import_accelerate(R"({"distributed_type": "FSDP", "num_processes": 2,
      "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.kbit_upcast == KbitUpcast::none);
  // axolotl, adapter qlora on one GPU: its patched call and the cast back.
  ImportOptions a;
  a.preset = "llama-2-7b";
  ImportResult ax = import_axolotl(R"({"base_model": "meta-llama/Llama-2-7b-hf", "adapter": "qlora", "load_in_4bit": true, "lora_target_linear": true,
      "sequence_len": 2048, "micro_batch_size": 1, "bf16": true})", a);
  REQUIRE(ax.ok());
  CHECK(ax.input.kbit_upcast == KbitUpcast::axolotl);
}
