// QLoRA as bitsandbytes, transformers and torchao run it (issue 29 item 4 and item 6's fields):
// double quantisation (nf4_double_quant) and a quantised output layer (quantize_lm_head). Every
// expected figure is worked out by hand in the comments from the rules of
// docs/trainmem-profile.md §7 ("PEFT: LoRA and QLoRA"), not read back from the implementation.
#include <string>
#include <vector>

#include "moe_block.hpp"
#include "support.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/import.hpp"
#include "trainmem/tables.hpp"

using namespace trainmem;
using namespace trainmem::test;
using trainmem::test::has_line;

namespace {

// The small Llama-style model of finetune.test.cpp: 2 layers, h = 1024, 8 heads of 128 (MHA),
// SwiGLU f = 4096, vocabulary 32,000 (a multiple of 128: no padding), RMSNorm, no biases; one
// sequence of 1,024 tokens. Per layer the PyTorch model's separate linears: q, k, v, o of
// 1024 × 1024 = 1,048,576 elements; gate, up, down of 1024 × 4096 = 4,194,304.
std::string small(const std::string& more) { return small_llama(more); }



}  // namespace

TEST_CASE("NF4 without double quantisation: an fp32 absmax per block of 64", "[qlora]") {
  // quantize_4bit without compress_statistics: (n + 1) // 2 packed bytes and one fp32 absmax per
  // ceil(n / 64) blocks.
  //   n = 16,384: 8,192 + 4 · 256 = 9,216 B (0.5625 B per element)
  //   n = 1: 1 + 4 = 5 B
  //   n = 1023² = 1,046,529: 523,265 + 4 · 16,353 = 588,677 B
  CHECK(tensor_bytes(Dtype::nf4, 16384, false) == 9216);
  CHECK(tensor_bytes(Dtype::nf4, 1, false) == 5);
  CHECK(tensor_bytes(Dtype::nf4, 1023.0 * 1023, false) == 588677);
  CHECK(nf4_quant_state_bytes(16384, false) == 1024);
  // With it: 256 uint8 and one fp32 per 256 blocks (the table's 8,452 B per 16,384).
  CHECK(nf4_quant_state_bytes(16384, true) == 260);
}

TEST_CASE("nf4_double_quant: off by default as transformers' BitsAndBytesConfig, on for torchao", "[qlora]") {
  // hf-transformers (ddp's default implementation): bnb_4bit_use_double_quant defaults to False.
  // kbit_upcast "none": the unquantised rest as loaded, in bf16 (kbit_upcast.test.cpp has the rest).
  const Config hf = config_from(small(R"("framework": "ddp", "peft": "qlora", "kbit_upcast": "none")"));
  CHECK_FALSE(hf.nf4_double_quant);
  // torchtune: torchao's NF4Tensor always double-quantises its scalers.
  const Config tt = config_from(small(R"("framework": "ddp", "peft": "qlora", "model_implementation": "torchtune")"));
  CHECK(tt.nf4_double_quant);
  // The frozen base on one GPU without double quantisation, per layer:
  //   q, k, v, o: 524,288 packed + 4 · 16,384 = 589,824 B each, 2,359,296
  //   gate, up, down: 2,097,152 + 4 · 65,536 = 2,359,296 B each, 7,077,888
  //   per layer 9,437,184 (= 16,777,216 × 0.5625), 2 layers 18,874,368
  // and bitsandbytes' per-tensor QuantState constants, 14 linears × 64 B (each one's NF4 code,
  // 16 fp32) = 896 B; with double quantisation 14 × (64 + 4 + 1,024) = 15,288 B (the 0-dim fp32
  // offset and the nested state's copy of the 256-entry dynamic map as well);
  // and the bf16 rest (tied embedding 32,768,000, norms 5,120): 32,773,120 × 2 = 65,546,240.
  //   18,874,368 + 896 + 65,546,240 = 84,421,504 B (with double quantisation 17,309,696 +
  //   15,288 + 65,546,240 = 82,871,224).
  Trace trace;
  const FullEstimate off = full_estimate(hf, &trace);
  CHECK(off.state.frozen_weights.total() == 84421504);
  const FullEstimate on = full_estimate(config_from(small(R"("framework": "ddp", "peft": "qlora",
      "nf4_double_quant": true, "kbit_upcast": "none")")));
  CHECK(on.state.frozen_weights.total() == 82871224);
  // The dequantised gate (4,194,304 elements in bf16) reads the stored fp32 absmax as it is:
  // 8,388,608 B, no absmax copy.
  CHECK(trace_value(trace, "trainmem.nf4_dequant_bytes") == 8388608);
}

TEST_CASE("nf4_double_quant off under FSDP2: the larger state stays whole on every rank", "[qlora]") {
  // bitsandbytes keeps the QuantState whole on each rank. Without double quantisation it is the
  // fp32 absmax: per layer 4 · 4 · 16,384 + 3 · 4 · 65,536 = 262,144 + 786,432 = 1,048,576 B,
  // 2 layers 2,097,152 B, and each of the 14 linears' NF4 code (64 B): 2,098,048 B. The packed
  // data (16,777,216) and the bf16 rest (65,546,240) are sharded over DP 4: 20,580,864. Frozen
  // weights: 2,098,048 + 20,580,864 = 22,678,912 B.
  const FullEstimate fsdp = full_estimate(config_from(small(R"("framework": "fsdp2", "data_parallel_size": 4,
      "peft": "qlora", "model_implementation": "hf-transformers")")));
  CHECK(fsdp.state.frozen_weights.total() == 22678912);
}

TEST_CASE("quantize_lm_head: the output layer in NF4, and the largest dequantised weight", "[qlora]") {
  // The small model untied: the output layer is its own 32,000 × 1,024 = 32,768,000-element
  // linear. Frozen weights, no double quantisation (transformers' default):
  //   NF4 decoder linears 18,874,368 + 14 NF4 codes of 64 B (896); bf16 embedding 65,536,000;
  //   bf16 norms 5,120 × 2 = 10,240
  //   output layer bf16: 65,536,000 → 149,957,504 B
  //   output layer NF4: 16,384,000 packed + 4 · 512,000 absmax + its code 64 = 18,432,064
  //   → 102,853,568 B
  const std::string untied = R"("framework": "ddp", "peft": "qlora", "share_embeddings_and_output_weights": false,
      "kbit_upcast": "none")";
  Trace kept_trace, quantized_trace;
  const FullEstimate kept = full_estimate(config_from(small(untied)), &kept_trace);
  const FullEstimate quantized = full_estimate(config_from(small(untied + R"(, "quantize_lm_head": true)")), &quantized_trace);
  CHECK(kept.state.frozen_weights.total() == 149957504);
  CHECK(quantized.state.frozen_weights.total() == 102853568);
  // MatMul4Bit dequantises the output layer whole in its forward and backward, 32,768,000 × 2 =
  // 65,536,000 B, beside the logits rather than a decoder layer's recomputation; the decoder's
  // largest dequantised weight stays the gate's, 8,388,608 B.
  CHECK(trace_value(kept_trace, "trainmem.nf4_dequant_bytes") == 8388608);
  CHECK(trace_value(quantized_trace, "trainmem.nf4_dequant_bytes") == 8388608);
  CHECK(trace_value(quantized_trace, "trainmem.nf4_output_dequant_bytes") == 65536000);
  SECTION("with double quantisation its absmax is restored to fp32 beside it") {
    // 65,536,000 + 4 · 512,000 = 67,584,000 B.
    Trace trace;
    full_estimate(config_from(small(untied + R"(, "quantize_lm_head": true, "nf4_double_quant": true)")), &trace);
    CHECK(trace_value(trace, "trainmem.nf4_output_dequant_bytes") == 67584000);
  }
  SECTION("on short sequences the dequantised output layer is the forward's largest transient") {
    // seq 64, one sequence (T = 64 tokens). Beside the output layer's matmul: its dequantised
    // weight 65,536,000, the logits it writes 2 · 64 · 32,000 = 4,096,000 (in backward, their
    // gradient, and the input's gradient 2 · 64 · 1,024 = 131,072): 69,763,072 B. What the loss
    // saves is not there yet (Hugging Face's loss: fp32 log-softmax 4 · 64 · 32,000 = 8,192,000
    // and the int64 labels, 65 for one sequence, 520: 8,192,520 B), while the unquantised loss's
    // backward transient is 2 fp32 logits, 16,384,000 B, below it. The forward's temporaries:
    // the library workspaces (96 MiB, 100,663,296 B) + 69,763,072 − 8,192,520 = 162,233,848 B.
    std::string json = small(untied + R"(, "quantize_lm_head": true)");
    json.replace(json.find("\"seq_length\": 1024"), 18, "\"seq_length\": 64");
    const FullEstimate est = full_estimate(config_from(json));
    CHECK(est.moments.peak_moment == Moment::forward);
    CHECK(est.moments.peak_temporary_bytes == 162233848);
  }
  SECTION("FSDP2 gathers the packed output layer; its state stays whole on every rank") {
    // DP 4, double quantisation off. The output layer's state, 2,048,000 + its code 64 B, stays
    // whole; its packed 16,384,000 B are sharded with the rest. Frozen: the decoder's state
    // 2,097,152 + 14 · 64 + the output's 2,048,064 + (16,777,216 + 16,384,000 + 65,536,000 +
    // 10,240) / 4 = 4,146,112 + 24,676,864 = 28,822,976 B.
    // The root unit gathers the embedding (65,536,000) and the packed output layer (16,384,000):
    // 81,920,000 B.
    const FullEstimate fsdp = full_estimate(config_from(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "peft": "qlora", "model_implementation": "hf-transformers", "share_embeddings_and_output_weights": false,
        "quantize_lm_head": true)")));
    CHECK(fsdp.state.frozen_weights.total() == 28822976);
    CHECK(fsdp.state.buffers.embedding == 81920000);
  }
}

TEST_CASE("quantize_lm_head follows torchtune's LoRA on the output", "[qlora]") {
  // torchtune builds the output as LoRALinear(quantize_base=True) only with apply_lora_to_output.
  const Config with_adapter = config_from(small(R"("framework": "ddp", "peft": "qlora",
      "model_implementation": "torchtune", "share_embeddings_and_output_weights": false,
      "lora_target_modules": ["q_proj", "v_proj", "lm_head"])"));
  CHECK(with_adapter.quantize_lm_head);
  const Config without = config_from(small(R"("framework": "ddp", "peft": "qlora",
      "model_implementation": "torchtune", "share_embeddings_and_output_weights": false)"));
  CHECK_FALSE(without.quantize_lm_head);
}

TEST_CASE("QLoRA quantisation fields: named errors", "[qlora]") {
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "lora", "nf4_double_quant": true)")) ==
        one("nf4_double_quant: applies to peft \"qlora\" with params_dtype \"nf4\" only"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "lora", "quantize_lm_head": true)")) ==
        one("quantize_lm_head: applies to peft \"qlora\" only"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "model_implementation": "torchtune",
      "nf4_double_quant": false)")) ==
        one("nf4_double_quant: must be true with model_implementation \"torchtune\" (torchao's "
            "NF4Tensor always double-quantises its block scales)"));
  // k_small_llama ties the embeddings (share_embeddings_and_output_weights defaults to true).
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "quantize_lm_head": true)")) ==
        one("quantize_lm_head: is not modelled with share_embeddings_and_output_weights (a "
            "quantised lm_head no longer shares the embedding's weight; transformers keeps tied "
            "weights unconverted by default)"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "quantize_lm_head": true,
      "share_embeddings_and_output_weights": false, "fused_linear_cross_entropy": true)")) ==
        one("quantize_lm_head: is not modelled with fused_linear_cross_entropy (Liger multiplies by "
            "lm_head.weight itself, not by a 4-bit linear)"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "model_implementation": "torchtune",
      "share_embeddings_and_output_weights": false, "quantize_lm_head": true)")) ==
        one("quantize_lm_head: needs lm_head among lora_target_modules with model_implementation "
            "\"torchtune\" (only a LoRALinear base is quantised)"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "model_implementation": "torchtune",
      "share_embeddings_and_output_weights": false, "lora_target_modules": ["q_proj", "lm_head"],
      "quantize_lm_head": false)")) ==
        one("quantize_lm_head: must be true with model_implementation \"torchtune\" and an lm_head "
            "adapter (the output is a LoRALinear with quantize_base)"));
}

TEST_CASE("importers read double quantisation and a quantised lm_head where the frameworks name them", "[qlora][import]") {
  // PEFT's examples/sft: --use_nested_quant (default False) is bnb_4bit_use_double_quant.
  ImportOptions o;
  const std::string script = "accelerate launch train.py --model_name_or_path meta-llama/Llama-2-70b-hf --bf16 True "
                             "--use_peft_lora True --use_4bit_quantization True";
  o.overrides = split_words(script + " --use_nested_quant True");
  ImportResult r = import_accelerate(R"({"distributed_type": "NO"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.nf4_double_quant == true);
  CHECK(has_line(r.read, "nf4_double_quant ← --use_nested_quant = true"));
  o.overrides = split_words(script);
  r = import_accelerate(R"({"distributed_type": "NO"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.nf4_double_quant == false);
  CHECK(has_line(r.assumed, "nf4_double_quant ← false (no --use_nested_quant: BitsAndBytesConfig's "
                            "bnb_4bit_use_double_quant defaults to False)"));
  // TRL's ModelConfig names it use_bnb_nested_quant.
  o.overrides = split_words("accelerate launch sft.py --model_name_or_path meta-llama/Llama-2-70b-hf --bf16 True --use_peft "
                       "--load_in_4bit --use_bnb_nested_quant");
  r = import_accelerate(R"({"distributed_type": "NO"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.nf4_double_quant == true);

  // axolotl: adapter qlora builds BitsAndBytesConfig with bnb_4bit_use_double_quant True;
  // bnb_config_kwargs overrides it, and an llm_int8_skip_modules without lm_head quantises it.
  const std::string axolotl = R"({"base_model": "meta-llama/Llama-2-70b-hf", "adapter": "qlora", "load_in_4bit": true,
      "lora_target_linear": true, "sequence_len": 2048, "micro_batch_size": 1, "bf16": true)";
  r = import_axolotl(axolotl + "}", {});
  REQUIRE(r.ok());
  CHECK(r.input.nf4_double_quant == true);
  CHECK_FALSE(r.input.quantize_lm_head.has_value());  // transformers keeps lm_head: resolve()'s false
  r = import_axolotl(axolotl + R"(, "bnb_config_kwargs": {"bnb_4bit_use_double_quant": false,
      "llm_int8_skip_modules": ["mamba"]}})", {});
  REQUIRE(r.ok());
  CHECK(r.input.nf4_double_quant == false);
  CHECK(r.input.quantize_lm_head == true);
  CHECK(has_line(r.ignored, "bnb_config_kwargs.llm_int8_skip_modules: \"mamba\": names no module trainmem counts in NF4"));
  r = import_axolotl(axolotl + R"(, "bnb_config_kwargs": {"llm_int8_skip_modules": ["lm_head"]}})", {});
  REQUIRE(r.ok());
  CHECK(r.input.quantize_lm_head == false);
  r = import_axolotl(axolotl + R"(, "bnb_config_kwargs": {"llm_int8_skip_modules": ["lm_head", "self_attn"]}})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "bnb_config_kwargs.llm_int8_skip_modules");
  CHECK(r.issues[0].message == "bnb_config_kwargs.llm_int8_skip_modules: \"self_attn\" keeps decoder linears out of the 4-bit conversion, which is not "
                               "modelled (trainmem counts every decoder linear in NF4); only \"lm_head\" is read");
}

// LLM.int8 (params_dtype "int8" under peft "qlora": bitsandbytes Linear8bitLt, load_in_8bit).
// The small model above, kbit_upcast "none" (the rest as loaded, bf16), one sequence of 1,024
// tokens. Int8Params keeps CB (1 B an element) and SCB (fp32, one per output row).
TEST_CASE("LLM.int8: int8 weights with fp32 row statistics, and MatMul8bitLt's transients", "[qlora][int8]") {
  const std::string base = R"("framework": "ddp", "peft": "qlora", "params_dtype": "int8", "kbit_upcast": "none")";
  // Per layer: q, k, v, o 1,048,576 + 4 · 1,024 = 1,052,672 B each (4,210,688); gate and up
  // (1,024 → 4,096) 4,194,304 + 4 · 4,096 = 4,210,688 each, down (4,096 → 1,024) 4,194,304 +
  // 4,096 = 4,198,400: 12,619,776. Per layer 16,830,464, two layers 33,660,928, and the bf16 rest
  // 65,546,240 (as for NF4 above): 99,207,168 B.
  Trace trace;
  const Config c = config_from(small(base));
  CHECK(c.compute_dtype == Dtype::bf16);
  const FullEstimate e = full_estimate(c, &trace);
  CHECK(e.state.frozen_weights.total() == 99207168);
  // Forward of gate or up (the largest): the bf16 input's fp16 copy and CA, 1,024 · 1,024 · 3 =
  // 3,145,728; SCA 4 · 1,024 = 4,096; the int32 product and the fp16 result, 1,024 · 4,096 · 6 =
  // 25,165,824: 28,315,648 B. Backward: the dequantised gate in bf16, 4,194,304 · 2, and the
  // fp32 factor per row, 4 · 4,096: 8,404,992. The larger: 28,315,648.
  CHECK(trace_value(trace, "trainmem.int8_transient_bytes") == 28315648);
  // Loading: the weights at rest and one fp16 copy of the largest int8 linear, 2 · 4,194,304.
  CHECK(e.moments.loading == 99207168.0 + 8388608);
  // Evaluating 3 sequences per step: the forward's transients, each a multiple of the tokens,
  // over 3,072 tokens, 3 · 28,315,648 = 84,946,944 B beside the decoder layers' bound (both
  // phases hold the same state at rest, so it cancels out of the difference).
  Trace eval_trace;
  const Config ev = config_from(small(base + R"(, "eval_micro_batch_size": 3)"));
  full_estimate(ev, &eval_trace);
  const EvaluationForward forward = evaluation_forward_bytes(ev);
  const double at_rest = trace_value(eval_trace, "trainmem.evaluation_loss") - forward.loss;
  CHECK(trace_value(eval_trace, "trainmem.evaluation_layers") - at_rest - forward.layers == 84946944);

  // fp16 compute: no fp16 copy of the input, no second cast of the result: gate's forward is
  // 1,048,576 (CA) + 4,096 + 1,024 · 4,096 · 4 = 17,829,888; backward 4,194,304 · 2 + 16,384.
  Trace fp16;
  full_estimate(config_from(small(base + R"(, "compute_dtype": "fp16")")), &fp16);
  CHECK(trace_value(fp16, "trainmem.int8_transient_bytes") == 17829888);
  // PEFT's upcast (the default): the norms fp32, so every int8 linear's input is fp32 and the
  // dequantised weight is too: gate's backward 4,194,304 · 4 + 16,384 = 16,793,600, below its
  // forward (the same 28,315,648 as bf16: an fp32 input is not fp16 either).
  Trace upcast;
  full_estimate(config_from(small(R"("framework": "ddp", "peft": "qlora", "params_dtype": "int8")")), &upcast);
  CHECK(trace_value(upcast, "trainmem.int8_transient_bytes") == 28315648);
}

TEST_CASE("LLM.int8: MatMul8bitLt keeps every int8 linear's input", "[qlora][int8]") {
  // An adapter on q_proj only, no dropout, no recomputation. MatMul8bitLt keeps the input of each
  // int8 linear whose input needs a gradient (ctx.tensors, outside autograd's saved tensors),
  // unless something keeps that storage already; bitsandbytes ≥ 0.43.2 keeps none on an NF4 base:
  // - q, k, v read the norm output, which q's adapter keeps (under autocast PEFT's
  //   bitsandbytes LoRA layer, Linear8bitLt as Linear4bit, hands x to lora_A as it is):
  //   nothing more;
  // - o_proj reads SDPA's output, which SDPA keeps: nothing more;
  // - gate and up read the MLP's norm output, 1,024 · 1,024 · 2 = 2,097,152 B, and down the
  //   product, 1,024 · 4,096 · 2 = 8,388,608 B, in both layers.
  // 2 · 10,485,760 = 20,971,520 B more than the same run on an NF4 base.
  const std::string run = R"("framework": "ddp", "peft": "qlora", "kbit_upcast": "none",
      "lora_target_modules": ["q_proj"], "lora_dropout": 0)";
  const Estimate int8 = estimate_of(small(run + R"(, "params_dtype": "int8")"));
  const Estimate nf4 = estimate_of(small(run));
  CHECK(int8.activation_bytes - nf4.activation_bytes == 20971520);
}

TEST_CASE("LLM.int8: named errors", "[qlora][int8]") {
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "lora", "params_dtype": "int8")")) ==
        one("params_dtype: \"int8\" needs peft \"qlora\" (a frozen 8-bit base: bitsandbytes LLM.int8), got peft \"lora\""));
  CHECK(messages_for(small(R"("framework": "fsdp2", "data_parallel_size": 2, "peft": "qlora", "params_dtype": "int8",
      "model_implementation": "hf-transformers")")) ==
        one("params_dtype: \"int8\" (LLM.int8) is modelled with framework \"ddp\", or \"deepspeed\" below zero_stage 3, "
            "and model_implementation \"hf-transformers\" (bitsandbytes' Linear8bitLt is not sharded), got framework "
            "\"fsdp2\", model_implementation \"hf-transformers\""));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "params_dtype": "int8", "quantize_lm_head": true,
      "share_embeddings_and_output_weights": false)")) ==
        one("quantize_lm_head: models an NF4 output layer only, got params_dtype \"int8\" (LLM.int8's lm_head is not modelled)"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "params_dtype": "int8", "nf4_double_quant": true)")) ==
        one("nf4_double_quant: applies to peft \"qlora\" with params_dtype \"nf4\" only"));
}

TEST_CASE("QLoRA's last decoder layer's forward: the largest NF4 linear dequantised beside the saved tensors",
          "[qlora]") {
  // The small model's largest NF4 linears are gate, up and down, 4,194,304 elements. MatMul4Bit
  // dequantises one whole to bf16, 8,388,608 B, and writes an output at most 4,194,304 / 1,024 =
  // 4,096 wide over the 1,024 tokens, in bf16 (kbit_upcast none), 8,388,608 B: 16,777,216 B. With
  // double quantisation the restored fp32 absmax adds 4 · 65,536 = 262,144 B; under fp32 norms
  // (kbit_upcast trl) the output is fp32, 16,777,216 B. Beside them transformers' frames hold
  // what nothing saves (activations.cpp qlora_forward_frame_bytes): LlamaModel.forward's
  // inputs_embeds, the bf16 embedding output 2 · 1,024 · 1,024 = 2,097,152 B, and in a bf16 stream
  // the layer's residual sum, another 2,097,152 B (under fp32 norms the stream is fp32 and the
  // post-attention norm saves the sum itself: none).
  const std::string base = R"("framework": "ddp", "peft": "qlora", "lora_target_modules": ["q_proj"], )";
  Trace none_trace, dq_trace, trl_trace;
  const FullEstimate none = full_estimate(
      config_from(small(base + R"("kbit_upcast": "none", "nf4_double_quant": false)")), &none_trace);
  full_estimate(config_from(small(base + R"("kbit_upcast": "none", "nf4_double_quant": true)")), &dq_trace);
  full_estimate(config_from(small(base + R"("kbit_upcast": "trl", "nf4_double_quant": false)")), &trl_trace);
  CHECK(trace_value(none_trace, "trainmem.qlora_layer_forward") == 16777216.0 + 2 * 2097152.0);
  CHECK(trace_value(dq_trace, "trainmem.qlora_layer_forward") == 16777216.0 + 262144 + 2 * 2097152.0);
  CHECK(trace_value(trl_trace, "trainmem.qlora_layer_forward") == 8388608.0 + 16777216 + 2097152);
  // The forward moment holds at least that beside the decoder layers' saved tensors (the
  // activations less the output layer's and the loss's).
  const Config c = config_from(small(base + R"("kbit_upcast": "none", "nf4_double_quant": false)"));
  CHECK(none.moments.forward >= none.weight_and_optimizer_bytes + c.workspace_bytes +
                                    (none.activation_bytes - output_activation_bytes(c)) + 16777216.0 + 2 * 2097152.0);
}

TEST_CASE("QLoRA's backward: Linear4bit's dequantised weight at its own MatMul4BitBackward", "[qlora][backward]") {
  // transformers' Llama under bitsandbytes QLoRA (the allocation timeline oracle's seed 5 q00
  // shape): 2 layers, h 160, 10 heads of 16 (MHA), f 352, 32 tokens, bf16 compute, kbit_upcast
  // none, double quantisation, bitsandbytes < 0.43.2 (MatMul4Bit keeps its input A), LoRA r 4 on
  // q, k, o, gate, up, down, no dropout. e = 2, T · f = 11,264, T · h = 5,120.
  const std::string base = R"({"model_implementation": "hf-transformers", "framework": "ddp", "num_layers": 2,
      "hidden_size": 160, "num_attention_heads": 10, "num_query_groups": 10, "kv_channels": 16,
      "ffn_hidden_size": 352, "vocab_size": 401, "make_vocab_size_divisible_by": 1, "gated_linear_unit": true,
      "activation_func": "silu", "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 32,
      "micro_batch_size": 1, "params_dtype": "nf4", "compute_dtype": "bf16", "attention_backend": "unfused",
      "hidden_dropout": 0, "peft": "qlora", "lora_rank": 4, "lora_dropout": 0,
      "lora_target_modules": ["q_proj", "k_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])";
  const DecoderBackward none = decoder_backward_bytes(config_from(base + R"(, "kbit_upcast": "none",
      "nf4_double_quant": true, "bnb_keeps_matmul_input": true})"));
  REQUIRE(none.modelled);
  REQUIRE(none.nf4_walked);
  // down_proj's MatMul4BitBackward, after its adapter's nodes: the adapter's input gradient
  // 2 · 11,264 = 22,528; the weight dequantised 160 · 352 · 2 = 112,640 (the restored absmax,
  // 4 · 56,320 / 64 = 3,520 B, is freed before grad_A); grad_A 2 · 11,264 = 22,528: 157,696 B.
  // Freed by then: the adapter's r-wide intermediate 4 · 32 · 2 = 256 B (the product stays: it is
  // bitsandbytes' A). Made: down's adapter, 4 · (352 + 160) = 2,048 parameters.
  CHECK(none.nf4_down.extra == 157696);
  CHECK(none.nf4_down.freed == 256);
  CHECK(none.nf4_down.made_params == 2048);
  // up_proj's: SiLU's output gradient 22,528 and up's 22,528, up's adapter's input gradient
  // 2 · 5,120 = 10,240, the weight 112,640 and grad_A 2 · 5,120 = 10,240 (above the absmax):
  // 178,176 B; MulBackward0 has freed the SiLU output and up's output it saved (22,528 each) and
  // up's adapter its intermediate (256): 256 + 45,312 = 45,568 B; made: down's and up's adapters,
  // 2,048 + 4 · (160 + 352) = 4,096.
  CHECK(none.nf4_up.extra == 178176);
  CHECK(none.nf4_up.freed == 45568);
  CHECK(none.nf4_up.made_params == 4096);
  // The SwiGLU product's MulBackward0 has no weight beside it: 3 · 22,528 = 67,584 B; q_proj's
  // MmBackward0 point (its output's gradient 2 · 32 · 160, two input gradients 2 · 2 · 5,120:
  // 30,720) gains q_proj's dequantised weight, 160 · 160 · 2 = 51,200: 81,920 B.
  CHECK(none.swiglu.extra == 67584);
  CHECK(none.qkv.extra == 81920);
  // The adapters' bf16 autocast casts (2 B per fp32 adapter parameter) are gone once their nodes
  // have run; lora_A of q and k in the first layer, whose input needs no gradient (QLoRA without
  // the reentrant checkpoint), never saved theirs: 2 · 4 · 160 · 2 = 2,560 B gone from the forward's
  // end (o's lora_A reads the attention output, which q's and k's adapters made need one).
  CHECK(none.adapter_cast_bytes == 2);
  CHECK(none.unsaved_casts == 2560);
  CHECK_FALSE(none.casts_recomputed);
  // Under the reentrant checkpoint the first layer's input needs a gradient
  // (enable_input_require_grads): every cast is saved; only the current layer's exist in backward.
  const DecoderBackward reentrant = decoder_backward_bytes(config_from(base + R"(, "kbit_upcast": "none",
      "nf4_double_quant": true, "recompute_granularity": "full", "checkpoint_reentrant": true})"));
  CHECK(reentrant.unsaved_casts == 0);
  CHECK(reentrant.casts_recomputed);

  // Under fp32 norms (kbit_upcast trl; the oracle's seed 5 q02 shape in its MLP: h 256, f 1024,
  // 48 tokens, adapters on o, gate, up, down): the product and its factors are fp32, so the
  // SwiGLU point is 3 · 4 · 48 · 1,024 = 589,824 B, and down_proj's point holds the adapter's fp32
  // product gradient 4 · 49,152 = 196,608, Linear4bit's output cast back to bf16 for MatMul4Bit
  // (ToCopyBackward0: 2 · 48 · 256 = 24,576), the weight 256 · 1,024 · 2 = 524,288 and grad_A
  // 2 · 49,152 = 98,304: 843,776 B (the oracle's events at that node, byte for byte).
  const DecoderBackward trl = decoder_backward_bytes(config_from(R"({"model_implementation": "hf-transformers",
      "framework": "ddp", "num_layers": 3, "hidden_size": 256, "num_attention_heads": 16, "num_query_groups": 16,
      "kv_channels": 16, "ffn_hidden_size": 1024, "vocab_size": 300, "make_vocab_size_divisible_by": 1,
      "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm", "add_bias_linear": false,
      "seq_length": 48, "micro_batch_size": 1, "params_dtype": "nf4", "compute_dtype": "bf16",
      "attention_backend": "unfused", "hidden_dropout": 0, "peft": "qlora", "lora_rank": 16, "lora_dropout": 0,
      "lora_target_modules": ["o_proj", "gate_proj", "up_proj", "down_proj"], "kbit_upcast": "trl",
      "nf4_double_quant": false})"));
  REQUIRE(trl.nf4_walked);
  CHECK(trl.swiglu.extra == 589824);
  CHECK(trl.nf4_down.extra == 843776);

  // An MoE model, or attention wider than the MLP, keeps the largest dequantised weight beside
  // every walked point (an upper bound): no Linear4bit points.
  CHECK_FALSE(decoder_backward_bytes(config_from(base + R"(, "ffn_hidden_size": 120})")).nf4_walked);
}

TEST_CASE("kbit_upcast peft: the fp32 router's autocast cast is saved; the default loss's forward", "[qlora][moe]") {
  // The allocation timeline oracle's seed 13 q01 shape: transformers' Mixtral block, h 96, 3 heads
  // of 32, 4 experts of 160, top-1, 40 tokens, vocabulary 175, bf16 compute, QLoRA with an adapter
  // on v_proj, kbit_upcast peft (prepare_model_for_kbit_training leaves the router and lm_head,
  // plain nn.Linear layers, in fp32).
  const Config c = config_from(R"({"model_implementation": "hf-transformers", "framework": "ddp", "num_layers": 1,
      "hidden_size": 96, "num_attention_heads": 3, "num_query_groups": 3, "kv_channels": 32, "ffn_hidden_size": 160,
      "num_moe_experts": 4, "moe_router_topk": 1, "moe_ffn_hidden_size": 160, "vocab_size": 175,
      "make_vocab_size_divisible_by": 1, "gated_linear_unit": true, "activation_func": "silu",
      "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 40, "micro_batch_size": 1,
      "params_dtype": "nf4", "compute_dtype": "bf16", "attention_backend": "unfused", "hidden_dropout": 0,
      "peft": "qlora", "lora_rank": 4, "lora_dropout": 0.05, "lora_target_modules": ["v_proj"],
      "kbit_upcast": "peft"})");
  // The trainer's bf16 autocast casts the frozen fp32 router weight at the call (not cached: it
  // needs no gradient) and the matmul keeps the copy for its input's gradient: 2 · 96 · 4 = 768 B.
  SavedTensors saved;
  layer_activation_bytes(c, true, LayerRecompute::policy, &saved);
  CHECK(row_bytes(saved, "moe.router_weight_cast") == 768);
  // The default loss's forward (pad-labels), beside the saved log-probabilities: the bf16 logits
  // 2 · 40 · 175 = 14,000, their fp32 upcast 28,000 and the final norm's fp32 output, which the
  // frozen lm_head does not keep, 4 · 40 · 96 = 15,360: 57,360 B, more than the backward's
  // 2 · 28,000 less the 8 · 41 B target.
  CHECK(loss_forward_transient_bytes(c) == 57360);
}
