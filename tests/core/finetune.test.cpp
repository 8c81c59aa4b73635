// Fine-tuning and memory-saving techniques (issue 13, items 1-5): PEFT (LoRA, QLoRA), the optimizer
// step in backward, activation offloading, paged optimizers, the chunked loss, and DDP on one GPU.
// Every expected figure is worked out by hand in the comments from the rules of
// docs/trainmem-profile.md §7, not read back from the implementation.
#include <string>
#include <vector>

#include "moe_block.hpp"
#include "support.hpp"
#include "trainmem/activations.hpp"
#include "trainmem/tables.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// A small Llama-style model: 2 layers, h = 1024, 8 heads of 128 (MHA: 8 query groups),
// SwiGLU f = 4096, vocabulary 32,000, tied embeddings, RMSNorm, no biases, no dropout;
// one sequence of 1,024 tokens.
//   per layer, linear weights: qkv 1024 × (8 + 2·8)·128 = 3,145,728; o 1024 × 1024 = 1,048,576;
//     fc1 (gate + up) 1024 × 2·4096 = 8,388,608; fc2 4096 × 1024 = 4,194,304: 16,777,216.
//   2 layers: 33,554,432 linear weights; norms 2 × 2 × 1024 + final 1024 = 5,120;
//   embedding 32,000 × 1024 = 32,768,000 (tied: the output layer is the same matrix).
//   total 33,554,432 + 5,120 + 32,768,000 = 66,327,552 parameters.
std::string small(const std::string& more) { return small_llama(more); }


}  // namespace

TEST_CASE("LoRA adapters: Llama-3.2-1B with r = 8 on q_proj and v_proj", "[finetune][peft]") {
  // Llama 3.2 1B: 16 layers, h 2048, 32 heads of 64, 8 KV heads, f 8192.
  //   q_proj 2048 → 32·64 = 2048: A 2048·8 = 16,384, B 8·2048 = 16,384 → 32,768
  //   v_proj 2048 →  8·64 =  512: A 2048·8 = 16,384, B 8·512  =  4,096 → 20,480
  //   per layer 53,248; 16 layers: 851,968 (what PEFT's print_trainable_parameters reports).
  const std::string json = R"({"num_layers": 16, "hidden_size": 2048, "num_attention_heads": 32,
      "num_query_groups": 8, "kv_channels": 64, "ffn_hidden_size": 8192, "vocab_size": 128256,
      "normalization": "RMSNorm", "swiglu": true, "add_bias_linear": false, "seq_length": 2048,
      "micro_batch_size": 1, "framework": "ddp", "params_dtype": "bf16", "peft": "lora"})";
  const FullEstimate est = full_estimate(config_from(json));
  CHECK(est.params.adapter == 851968);
  CHECK(est.params.adapter_per_gpu == 851968);
  // The base model's own count is unchanged: 1,235,814,400 (Llama 3.2 1B, tied).
  CHECK(est.params.total == 1235814400);
  // Of them on the one GPU, the tied embedding: 128,256 · 2,048 = 262,668,288.
  CHECK(est.params.embedding_per_gpu == 262668288);
  REQUIRE(est.n_components == 2);
  CHECK(est.components[1].kind == ComponentKind::adapters);
  CHECK(est.components[1].parameter_count == 851968);
  // ddp is Hugging Face PEFT: fp32 adapters (autocast_adapter_dtype), fp32 gradients, AdamW fp32:
  //   851,968 × (4 + 4 + 8) = 13,631,488 B; no master weights (already fp32).
  CHECK(est.state.adapter_weights.total() == 851968.0 * 4);
  CHECK(est.state.adapter_gradients.total() == 851968.0 * 4);
  CHECK(est.state.adapter_master_weights.total() == 0);
  CHECK(est.state.adapter_optimizer_states.total() == 851968.0 * 8);
  CHECK(est.components[1].memory_bytes == 13631488);
  // The frozen bf16 base: 1,235,814,400 × 2 B, and nothing else of the base.
  CHECK(est.state.frozen_weights.total() == 2471628800.0);
  CHECK(est.state.weights.total() == 0);
  CHECK(est.state.gradients.total() == 0);
  CHECK(est.state.optimizer_states.total() == 0);
  CHECK(est.state.master_weights.total() == 0);
}

TEST_CASE("LoRA adapters split under tensor parallelism as PEFT's LoraParallelLinear", "[finetune][peft]") {
  // r = 16 on q, v (column-parallel: A whole, B split) and o, down (row-parallel: A split, B
  // whole), TP 2, small model:
  //   q: A 1024·16 = 16,384, B 16·1024/2 = 8,192 → 24,576
  //   v: A 16,384,          B 16·1024/2 = 8,192 → 24,576
  //   o: A 1024/2·16 = 8,192, B 16·1024 = 16,384 → 24,576
  //   down: A 4096/2·16 = 32,768, B 16·1024 = 16,384 → 49,152
  //   per layer 122,880; 2 layers: 245,760 on a GPU.
  // The whole model: q 32,768, v 32,768, o 32,768, down 4096·16 + 16·1024 = 81,920: 180,224 per
  // layer, 360,448.
  const FullEstimate est = full_estimate(config_from(small(R"("framework": "fsdp2",
      "tensor_model_parallel_size": 2, "peft": "lora", "lora_rank": 16,
      "lora_target_modules": ["q_proj", "v_proj", "o_proj", "down_proj"])")));
  CHECK(est.params.adapter_per_gpu == 245760);
  CHECK(est.params.adapter == 360448);
}

TEST_CASE("QLoRA: NF4 bytes per parameter from bitsandbytes' block arithmetic", "[finetune][qlora]") {
  // quantize_4bit, blocksize 64, compress_statistics: 16,384 = 64 · 256 elements take 8,192 B of
  // packed 4-bit values, 256 uint8 absmax and one fp32 second-level absmax: 8,452 B.
  CHECK(bytes_per_element(Dtype::nf4) == 8452.0 / 16384.0);
  CHECK(bytes_per_element(Dtype::nf4) == 0.515869140625);
}

TEST_CASE("QLoRA on one GPU: the NF4 base, the bf16 rest, fp32 adapters", "[finetune][qlora]") {
  // ddp, peft qlora: params_dtype resolves to nf4 and compute_dtype to bf16; double quantisation
  // as QLoRA's paper runs it (transformers' default is off: tests/core/qlora.test.cpp).
  // kbit_upcast "none": the rest as loaded (PEFT's fp32 upcast: tests/core/kbit_upcast.test.cpp).
  const Config c = config_from(small(R"("framework": "ddp", "peft": "qlora", "nf4_double_quant": true,
      "kbit_upcast": "none")"));
  CHECK(c.params_dtype == Dtype::nf4);
  CHECK(c.compute_dtype == Dtype::bf16);
  Trace trace;
  const FullEstimate est = full_estimate(c, &trace);
  // Frozen: 33,554,432 linear weights in NF4: 33,554,432 / 16,384 = 2,048 blocks × 8,452 B =
  // 17,309,696 B, and each of the 14 Linear4bit's QuantState constants, its NF4 code (16 fp32),
  // offset (a 0-dim fp32) and nested code (256 fp32): 14 × 1,092 = 15,288 B; the embedding and
  // the norms (32,773,120 parameters) in bf16: 65,546,240 B.
  CHECK(est.state.frozen_weights.total() == 17309696.0 + 14 * 1092.0 + 65546240.0);
  // Adapters, r = 8 on q and v: q A 1024·8 + B 8·1024 = 16,384; v the same (8 KV heads of 128):
  // 32,768 per layer, 65,536 in all; fp32 weights and gradients, AdamW 8 B: 65,536 × 16 B.
  CHECK(est.params.adapter == 65536);
  CHECK(est.state.adapters() == 65536.0 * 16);
  // The base is the PyTorch model's, whose gate_proj and up_proj are two Linear4bit (not
  // Megatron's fused fc1): the largest NF4 linears are gate, up and down, 1024 × 4096 =
  // 4,194,304 elements each, dequantised one at a time in bf16 in backward: 8,388,608 B, and
  // the absmax dequantised to fp32 beside it, 4 · 65,536 = 262,144 B: 8,650,752 B.
  CHECK(trace_value(trace, "trainmem.nf4_dequant_bytes") == 4194304.0 * 2 + 4 * 65536);
}

TEST_CASE("QLoRA: an NF4 tensor of any size takes bitsandbytes' bytes for that size", "[finetune][qlora]") {
  // quantize_4bit: (n + 1) // 2 packed bytes, one uint8 absmax per ceil(n / 64) blocks, one fp32
  // absmax per ceil(blocks / 256).
  //   n = 16,384: 8,192 + 256 + 4 · 1 = 8,452 (the table's rate exactly)
  //   n = 1: 1 + 1 + 4 = 6
  //   n = 1023² = 1,046,529: 523,265 + 16,353 (16,352 blocks and a partial one) + 4 · 64 = 539,874
  CHECK(tensor_bytes(Dtype::nf4, 16384, true) == 8452);
  CHECK(tensor_bytes(Dtype::nf4, 1, true) == 6);
  CHECK(tensor_bytes(Dtype::nf4, 1023.0 * 1023, true) == 539874);
  CHECK(tensor_bytes(Dtype::bf16, 3, true) == 6);
  // One layer, h = 100, 4 heads of 25 (MHA), SwiGLU f = 300, RMSNorm, vocabulary 1,000 (tied,
  // unpadded):
  //   q, k, v, o: 100 × 100 = 10,000 each: 5,000 + 157 + 4 = 5,161 B, four of them 20,644
  //   gate, up, down: 30,000 each: 15,000 + 469 + 4 · 2 = 15,477 B, three of them 46,431
  //   bf16: two norms and the final norm 300, the embedding 100,000: 100,300 × 2 = 200,600
  //   each linear's QuantState constants (NF4 code 64 B, offset 4 B, nested code 1,024 B):
  //   7 × 1,092 = 7,644
  //   frozen_weights = 20,644 + 46,431 + 7,644 + 200,600 = 275,319 B (a whole number of bytes;
  //   the rate 0.515869140625 B would give 130,000 × it = 67,062.99 B for the linears).
  Trace trace;
  const FullEstimate est = full_estimate(
      config_from(R"({"num_layers": 1, "hidden_size": 100, "num_attention_heads": 4,
          "ffn_hidden_size": 300, "vocab_size": 1000, "make_vocab_size_divisible_by": 1,
          "swiglu": true, "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 64,
          "micro_batch_size": 1, "framework": "ddp", "peft": "qlora", "nf4_double_quant": true,
          "kbit_upcast": "none"})"),
      &trace);
  CHECK(est.state.frozen_weights.total() == 275319);
  // The largest NF4 linear, 30,000 elements, dequantised in bf16: 60,000 B, with its absmax in
  // fp32, 4 · 469 = 1,876 B: 61,876 B.
  CHECK(trace_value(trace, "trainmem.nf4_dequant_bytes") == 61876);
}

TEST_CASE("LoRA on ddp's fp32 weights: autocast casts of the frozen linears and of the adapters", "[finetune][peft]") {
  // ddp keeps fp32 weights and autocasts to bf16. A frozen linear's cast is not cached (not a
  // leaf that requires grad) but its matmul saves it for the input's gradient; the fp32
  // adapters' casts are cached. Both live from the forward to the backward:
  //   frozen linears 33,554,432 × 2 = 67,108,864; adapters 65,536 × 2 = 131,072: 67,239,936 B.
  const FullEstimate est = full_estimate(config_from(small(R"("framework": "ddp", "peft": "lora")")));
  CHECK(est.state.weight_copies.total() == 67239936);
  CHECK(est.state.frozen_weights.total() == 66327552.0 * 4);
}

TEST_CASE("PEFT gathers: ZeRO-3 and FSDP2 carry the frozen base in its storage type", "[finetune][peft]") {
  // deepspeed ZeRO-3, bf16, LoRA r = 8 on q and v: the largest frozen tensor gathered whole is
  // the embedding, 32,768,000 × 2 = 65,536,000 B, with no gradient; the largest adapter matrix
  // (1024 × 8 = 8,192 elements, bf16) gathered with its gradient: 2 · 2 · 8,192 = 32,768 B; and
  // the reduce bucket in the adapters' type (bf16), DeepSpeed's 5e8 elements: 1e9 B.
  const FullEstimate zero3 = full_estimate(config_from(small(R"("framework": "deepspeed",
      "zero_stage": 3, "data_parallel_size": 4, "peft": "lora")")));
  CHECK(zero3.state.buffers.total() == 65536000 + 32768 + 1e9);
  // fsdp2 (full shard), bf16: the root unit (the embedding) gathered, 65,536,000 B; two layers
  // gathered at once (current and prefetched), each its frozen weights 16,777,216 + 2 · 1,024
  // norms = 16,779,264 × 2 = 33,558,528 and its adapters 32,768 × 2 = 65,536: 2 · 33,624,064 =
  // 67,248,128; one layer's adapter gradients unsharded in bf16 and their fp32 reduce copy:
  // 32,768 · (2 + 4) = 196,608. 65,536,000 + 67,248,128 + 196,608 = 132,980,736.
  const FullEstimate fsdp = full_estimate(config_from(small(R"("framework": "fsdp2",
      "data_parallel_size": 4, "peft": "lora")")));
  CHECK(fsdp.state.buffers.total() == 132980736);
}

TEST_CASE("QLoRA sharded: bitsandbytes' quantisation state stays whole on every rank", "[finetune][qlora]") {
  // The small model's NF4 linears, per layer: q, k, v, o of 1,048,576 elements (16,384 blocks of
  // 64: state 16,384 uint8 + 4 · 64 fp32 = 16,640 B; packed 524,288 B) and gate, up, down of
  // 4,194,304 (65,536 blocks: state 65,536 + 4 · 256 = 66,560 B; packed 2,097,152 B).
  //   per layer: state 4 · 16,640 + 3 · 66,560 = 266,240; packed 4 · 524,288 + 3 · 2,097,152 =
  //   8,388,608 (with the state 8,654,848 = 16,777,216 × 8,452 / 16,384, the table's rate).
  //   2 layers: state 532,480, packed 16,777,216; bf16 embedding and norms 32,773,120 × 2 =
  //   65,546,240. bitsandbytes' QuantState also holds, per linear, its NF4 code (64 B), the
  //   offset (4 B) and the nested code (1,024 B): 14 × 1,092 = 15,288, whole with the state:
  //   547,768.
  // bitsandbytes (any implementation but torchtune's) shards the packed data and the bf16 rest
  // over DP 4 and keeps the state whole: 547,768 + (16,777,216 + 65,546,240) / 4 = 21,128,632.
  // torchao's NF4Tensor (torchtune) shards its scalers too: (17,309,696 + 65,546,240) / 4 =
  // 20,713,984.
  const std::string fsdp = R"("framework": "fsdp2", "data_parallel_size": 4, "peft": "qlora",
      "nf4_double_quant": true)";
  const FullEstimate bnb = full_estimate(config_from(small(fsdp + R"(, "model_implementation": "hf-transformers")")));
  const FullEstimate ao = full_estimate(config_from(small(fsdp + R"(, "model_implementation": "torchtune")")));
  CHECK(bnb.state.frozen_weights.total() == 21128632);
  CHECK(ao.state.frozen_weights.total() == 20713984);
  // The gathers carry what is sharded. Root: the tied bf16 embedding, 65,536,000. Two layers at
  // once, each its packed NF4 (8,388,608; torchao: 8,654,848), bf16 norms 2 · 1,024 · 2 = 4,096
  // and bf16 adapters 32,768 · 2 = 65,536; one layer's adapter gradients in bf16 and their fp32
  // reduce copy, 32,768 · 6 = 196,608.
  //   bitsandbytes: 65,536,000 + 2 · 8,458,240 + 196,608 = 82,649,088
  //   torchao:      65,536,000 + 2 · 8,724,480 + 196,608 = 83,181,568
  CHECK(bnb.state.buffers.total() == 82649088);
  CHECK(ao.state.buffers.total() == 83181568);
  SECTION("parameter offload moves the shards and leaves the state on the GPU") {
    const FullEstimate off = full_estimate(config_from(small(fsdp + R"(, "model_implementation": "hf-transformers",
        "offload_params": true)")));
    CHECK(off.state.frozen_weights.total() == 547768);  // the whole state
    // One GPU per node (k_small_llama): the CPU holds this GPU's shards, (16,777,216 + 65,546,240) / 4.
    CHECK(off.cpu.weights == 20580864);
  }
  SECTION("ZeRO-3 likewise; its largest gathered tensor is the embedding") {
    const FullEstimate zero3 = full_estimate(config_from(small(R"("framework": "deepspeed", "zero_stage": 3,
        "data_parallel_size": 4, "peft": "qlora", "nf4_double_quant": true)")));
    CHECK(zero3.state.frozen_weights.total() == 21128632);
    // Gathered: the bf16 embedding, 65,536,000 (a layer's largest packed NF4 is 2,097,152), the
    // largest adapter matrix with its gradient, 2 · 2 · 8,192 = 32,768, and the bf16 reduce
    // bucket of 5e8 elements, 1e9: 1,065,568,768.
    CHECK(zero3.state.buffers.total() == 1065568768);
  }
  SECTION("FSDP2 zero_stage 2 keeps the gathered base from forward to backward") {
    // Beside the shards (21,128,632) the whole sharded part, 16,777,216 + 65,546,240 = 82,323,456:
    // 103,452,088.
    const FullEstimate z2 = full_estimate(config_from(small(R"("framework": "fsdp2", "zero_stage": 2,
        "data_parallel_size": 4, "peft": "qlora", "model_implementation": "hf-transformers",
        "nf4_double_quant": true)")));
    CHECK(z2.state.frozen_weights.total() == 103452088);
  }
}

TEST_CASE("lora_modules_to_save: a trained copy of each module beside the frozen original", "[finetune][peft]") {
  // The small model (tied: the output layer is the embedding's matrix, 32,000 × 1,024 =
  // 32,768,000), ddp on one GPU, bf16 weights, no master, fused AdamW with fp32 states, two
  // microbatches per step (the gradients stay between them). PEFT's ModulesToSaveWrapper
  // deep-copies each named module: the copies are bf16 like the base, the LoRA matrices (q and v,
  // r 8: 65,536) fp32 (PEFT's upcast).
  //   trainable: 65,536 + 2 · 32,768,000 = 65,601,536 parameters
  //   adapter weights = gradients: 65,536 · 4 + 65,536,000 · 2 = 131,334,144 B
  //   AdamW's two fp32 states: 65,601,536 · 8 = 524,812,288 B
  //   frozen: the whole model stays, 66,327,552 · 2 = 132,655,104 B
  const std::string base = R"("framework": "ddp", "peft": "lora", "params_dtype": "bf16",
      "master_weights": false, "optimizer": "adamw", "optimizer_implementation": "fused",
      "global_batch_size": 2)";
  const FullEstimate est = full_estimate(config_from(small(base + R"(, "lora_modules_to_save": ["embed_tokens", "lm_head"])")));
  CHECK(est.params.adapter == 65601536);
  CHECK(est.state.adapter_weights.total() == 131334144);
  CHECK(est.state.adapter_gradients.total() == 131334144);
  CHECK(est.state.adapter_optimizer_states.total() == 524812288);
  CHECK(est.state.frozen_weights.total() == 132655104);
  CHECK(est.has(Assumption::trainmem_peft_saved_copies));
  CHECK_FALSE(full_estimate(config_from(small(base))).has(Assumption::trainmem_peft_saved_copies));
  SECTION("the copies keep what a trainable embedding and output layer keep for backward") {
    // lm_head: the output layer's input for its weight's gradient, 1,024 tokens × 1,024 × 2 B =
    // 2,097,152; embed_tokens: the int64 token ids, 1,024 × 8 = 8,192 B, and every decoder layer's
    // input then needs a gradient (the first one's too).
    const auto named = [](const Config& c, std::string_view name, bool output) {
      SavedTensors kept;
      if (output) output_activation_bytes(c, &kept);
      else embedding_activation_bytes(c, &kept);
      double bytes = 0;
      for (const SavedTensor& t : kept)
        if (t.name == name) bytes += t.bytes;
      return bytes;
    };
    const Config plain = config_from(small(base));
    const Config head = config_from(small(base + R"(, "lora_modules_to_save": ["lm_head"])"));
    const Config embed = config_from(small(base + R"(, "lora_modules_to_save": ["embed_tokens"])"));
    CHECK(named(plain, "output.output_layer_input", true) == 0);
    CHECK(named(head, "output.output_layer_input", true) == 2097152);
    CHECK(named(plain, "embedding.token_ids", false) == 0);
    CHECK(named(embed, "embedding.token_ids", false) == 8192);
  }
  SECTION("FSDP2: the root gathers the copies and their gradients wait for the end of backward") {
    // QLoRA (hf-transformers, bitsandbytes), DP 4, no master, lm_head saved: the copy is bf16
    // (the unquantised base's dtype). The root unit gathers the frozen tied embedding and the
    // copy: 2 · 65,536,000 = 131,072,000 B. The copy's unsharded bf16 gradient, made first in
    // backward, and its fp32 reduce copy: 65,536,000 + 32,768,000 · 4 = 196,608,000 B.
    //   adapter weights (bf16 adapters and copy, sharded): (65,536 + 32,768,000) · 2 / 4 =
    //   16,416,768 B.
    Trace trace;
    const FullEstimate fsdp = full_estimate(config_from(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "peft": "qlora", "model_implementation": "hf-transformers", "master_weights": false,
        "lora_modules_to_save": ["lm_head"])")), &trace);
    CHECK(fsdp.state.buffers.embedding == 131072000);
    CHECK(trace_value(trace, "trainmem.saved_copy_reduce_bytes") == 196608000);
    CHECK(fsdp.state.adapter_weights.total() == 16416768);
  }
  SECTION("named errors") {
    const auto one = [](const std::string& message) { return std::vector<std::string>{message}; };
    CHECK(messages_for(small(R"("framework": "ddp", "peft": "lora", "model_implementation": "torchtune",
        "lora_modules_to_save": ["lm_head"])")) ==
          one("lora_modules_to_save: is Hugging Face PEFT's modules_to_save: needs model_implementation "
              "\"hf-transformers\", got \"torchtune\""));
    CHECK(messages_for(small(R"("framework": "ddp", "peft": "lora", "lora_target_modules": ["q_proj", "lm_head"],
        "lora_modules_to_save": ["lm_head"])")) ==
          one("lora_modules_to_save: \"lm_head\" is also in lora_target_modules: PEFT trains a module to "
              "save whole and puts no adapter on it; name it in one of the two"));
    CHECK(messages_for(small(R"("framework": "ddp", "lora_modules_to_save": ["lm_head"])")) ==
          one("lora_modules_to_save: applies to peft \"lora\" or \"qlora\" only"));
    CHECK(messages_for(small(R"("framework": "ddp", "peft": "lora", "lora_modules_to_save": ["wte"])")) ==
          one("lora_modules_to_save: entries must be among \"embed_tokens\", \"lm_head\", got \"wte\""));
  }
}

TEST_CASE("lora_modules_to_save adds exactly the copies' parameters and never lowers a figure", "[finetune][property]") {
  // Over frameworks, stages, PEFT kinds and data-parallel sizes: each saved module adds its copy
  // (32,000 × 1,024 = 32,768,000 parameters) to the trainable count, and the peak, the model state
  // and every moment are at least what they are without it.
  const char* frameworks[] = {R"("framework": "ddp")", R"("framework": "fsdp2", "zero_stage": 3)",
                              R"("framework": "fsdp2", "zero_stage": 2)", R"("framework": "deepspeed", "zero_stage": 2)",
                              R"("framework": "deepspeed", "zero_stage": 3)"};
  const char* saved[] = {R"(["embed_tokens"])", R"(["lm_head"])", R"(["embed_tokens", "lm_head"])"};
  for (const char* fw : frameworks)
    for (const char* peft : {"lora", "qlora"})
      for (int dp : {1, 4})
        for (const char* save : saved) {
          const std::string base = std::string(fw) + R"(, "model_implementation": "hf-transformers", "peft": ")" + peft +
                                   R"(", "data_parallel_size": )" + std::to_string(dp) +
                                   R"(, "recompute_granularity": "full")";
          CAPTURE(base, save);
          const FullEstimate without = full_estimate(config_from(small(base)));
          const FullEstimate with = full_estimate(config_from(small(base + R"(, "lora_modules_to_save": )" + save)));
          const double modules = std::string(save).find(',') != std::string::npos ? 2 : 1;
          CHECK(with.params.adapter - without.params.adapter == modules * 32768000);
          CHECK(with.total_bytes > without.total_bytes);
          CHECK(with.weight_and_optimizer_bytes > without.weight_and_optimizer_bytes);
          CHECK(with.moments.forward >= without.moments.forward);
          CHECK(with.moments.backward >= without.moments.backward);
          CHECK(with.moments.optimizer_step >= without.moments.optimizer_step);
        }
}

TEST_CASE("FSDP2: keeping weights gathered (zero_stage 2) never holds less than resharding them (3)", "[finetune][property]") {
  // zero_stage 2 keeps every gathered weight from forward to backward, where zero_stage 3 holds
  // two layers and the root: over DP 4 and 8, with and without a master, with and without PEFT,
  // the forward moment of 2 is above 3's by at least the gathered weights less 3's gathers.
  for (const char* peft : {"none", "lora", "qlora"})
    for (const char* master : {"true", "false"})
      for (int dp : {4, 8}) {
        const std::string fields = std::string(R"("framework": "fsdp2", "peft": ")") + peft +
                                   R"(", "master_weights": )" + master +
                                   R"(, "data_parallel_size": )" + std::to_string(dp);
        CAPTURE(fields);
        const FullEstimate three = full_estimate(config_from(small(fields + R"(, "zero_stage": 3)")));
        const FullEstimate two = full_estimate(config_from(small(fields + R"(, "zero_stage": 2)")));
        CHECK(two.moments.forward > three.moments.forward);
      }
}

TEST_CASE("PEFT activations: a frozen linear keeps no input, adapters keep theirs", "[finetune][peft]") {
  // Megatron Core's layer (model_implementation megatron-core; the PyTorch implementations'
  // layers are in implementations.test.cpp).
  // One layer of the small model, fsdp2 (bf16, flash attention), T = 1,024 tokens:
  //   norm.attention_input 2·1024·1024 = 2,097,152   norm.attention_stats 4·1024 = 4,096
  //   attention.qkv_input  2,097,152 (kept: the q and v adapters read it)
  //   attention.q, .k, .v  3 × 2·1024·1024 = 6,291,456   softmax_stats 4·8·1024 = 32,768
  //   attention.proj_input 2,097,152 (flash's saved `out`, the same storage)
  //   lora q and v intermediates 2 × 2·8·1024 = 32,768
  //   norm.mlp_input 2,097,152   norm.mlp_stats 4,096
  //   mlp.fc1_input: gone (gate/up frozen, no adapter)   mlp.fc1_output 2·2·4096·1024 = 16,777,216
  //   mlp.fc2_input: gone (down frozen, SwiGLU keeps its own input)
  //   sum: 7 × 2,097,152 + 2 × 4,096 + 32,768 + 32,768 + 16,777,216 = 31,531,008
  const double lora = layer_activation_bytes(
      config_from(small(R"("framework": "fsdp2", "model_implementation": "megatron-core", "peft": "lora")")), false, LayerRecompute::policy);
  CHECK(lora == 31531008);
  // Without peft the layer also keeps fc1_input (2,097,152) and fc2_input (2·4096·1024 =
  // 8,388,608) and no adapter intermediates: 31,531,008 − 32,768 + 10,485,760 = 41,984,000.
  const double full = layer_activation_bytes(config_from(small(R"("framework": "fsdp2", "model_implementation": "megatron-core")")), false,
                                             LayerRecompute::policy);
  CHECK(full == 41984000);
  // lora_dropout > 0: each adapter drops its own copy of the input (2,097,152 B) and keeps the mask
  // (1,048,576 B); the qkv input is then nobody's: 31,531,008 − 2,097,152 + 2 × 3,145,728 =
  // 35,725,312.
  const double dropout = layer_activation_bytes(
      config_from(small(R"("framework": "fsdp2", "model_implementation": "megatron-core", "peft": "lora", "lora_dropout": 0.05)")), false,
      LayerRecompute::policy);
  CHECK(dropout == 35725312);
  // ddp (Hugging Face PEFT): fp32 adapters on a bf16 model see a cast copy each (2,097,152 B,
  // autocast's bf16), the base input is nobody's: 31,531,008 − 2,097,152 + 2 × 2,097,152 =
  // 33,628,160.
  const double hf = layer_activation_bytes(
      config_from(small(R"("framework": "ddp", "model_implementation": "megatron-core", "params_dtype": "bf16",
          "peft": "lora")")), false,
      LayerRecompute::policy);
  CHECK(hf == 33628160);
  // The frozen embedding saves nothing; the frozen output layer keeps no input: the last stage
  // keeps the final norm's input (2,097,152) and stats (4,096), and the loss: fsdp2's
  // F.cross_entropy saves fp32 log-probabilities 4 · 32,000 · 1,024 = 131,072,000 and int64
  // targets 8,192.
  const Config peft = config_from(small(R"("framework": "fsdp2", "model_implementation": "megatron-core", "peft": "lora")"));
  CHECK(embedding_activation_bytes(peft) == 0);
  CHECK(output_activation_bytes(peft) == 2097152.0 + 4096 + 131072000 + 8192);
  // With lm_head among the targets its input stays (2,097,152) and its intermediate (16,384) too.
  const Config head = config_from(small(R"("framework": "fsdp2", "model_implementation": "megatron-core", "peft": "lora",
      "lora_target_modules": ["lm_head"])"));
  CHECK(output_activation_bytes(head) == 2097152.0 + 4096 + 2097152 + 16384 + 131072000 + 8192);
}

TEST_CASE("PEFT sharding: ZeRO-3 shards the frozen base like any parameter", "[finetune][peft]") {
  // deepspeed ZeRO-3 over 4 GPUs, bf16 weights, fp32 master and Adam:
  //   frozen 66,327,552 × 2 B / 4 = 33,163,776
  //   adapters 65,536: bf16 weights / 4 = 32,768; fp32 gradient partition / 4 = 65,536 (no
  //   16-bit gradient buffer at stage 3); fp32 master / 4 = 65,536; Adam 8 B / 4 = 131,072.
  const FullEstimate est = full_estimate(config_from(small(R"("framework": "deepspeed",
      "zero_stage": 3, "data_parallel_size": 4, "peft": "lora")")));
  CHECK(est.state.frozen_weights.total() == 33163776);
  CHECK(est.state.adapter_weights.total() == 32768);
  CHECK(est.state.adapter_gradients.total() == 65536);
  CHECK(est.state.adapter_master_weights.total() == 65536);
  CHECK(est.state.adapter_optimizer_states.total() == 131072);
}

TEST_CASE("optimizer_in_backward keeps one parameter's gradient", "[finetune][optimizer_in_backward]") {
  // ddp on one GPU, pure bf16 (no master weights), AdamW: the largest parameter is the tied
  // embedding, 32,768,000 elements: its bf16 gradient is 65,536,000 B. Without the in-backward
  // step every gradient exists: 66,327,552 × 2 = 132,655,104 B.
  const std::string base = R"("framework": "ddp", "params_dtype": "bf16", "master_weights": false,
      "optimizer": "adamw")";
  const FullEstimate after = full_estimate(config_from(small(base)));
  CHECK(after.state.gradients.total() == 132655104);
  const FullEstimate in_bwd = full_estimate(config_from(small(base + R"(, "optimizer_in_backward": true)")));
  // Each gradient is stepped and freed in its hook (zero_grad(set_to_none=True)), so none exists
  // in the forward, where this run peaks: the breakdown shows none, and says why.
  CHECK(in_bwd.moments.peak_moment == Moment::forward);
  CHECK(in_bwd.state.gradients.total() == 0);
  CHECK(in_bwd.has(Assumption::trainmem_gradients_per_step));
  // torch.optim's foreach step runs per parameter inside backward: one exp_avg_sq-sized fp32
  // copy of the largest tensor, 32,768,000 × 4 = 131,072,000 B, beside the one gradient being
  // stepped; the optimizer-step moment holds the weights, the states and the workspaces only.
  CHECK(in_bwd.moments.optimizer_step == in_bwd.weight_and_optimizer_bytes + 96.0 * 1024 * 1024);
  // Without the in-backward step the backward's largest point is the last layer's SwiGLU
  // product backward (activations.cpp decoder_backward_bytes): beyond that layer's saved tensors,
  // less the bf16 product 2·T·f, the residual gradient 2·T·h and three 2·T·f gradients:
  // 2 · 1,024 · 1,024 + 2 · 2 · 1,024 · 4,096 = 18,874,368 B. With it, the layer is not walked
  // (every gradient is freed as it is made) and its last-layer candidate stays.
  CHECK(in_bwd.moments.backward - after.moments.backward ==
        Approx(131072000.0 - (132655104.0 - 65536000.0) - 18874368.0).margin(1));
  // Without a global batch the microbatch count is unknown and the run without the in-backward
  // step keeps every gradient through its forward (132,655,104 B); with it the forward has none.
  CHECK(after.moments.forward - in_bwd.moments.forward == Approx(132655104.0).margin(1));
}

TEST_CASE("activation_offload keeps one layer's saved tensors on the GPU", "[finetune][offload]") {
  // ddp, bf16, one GPU, Megatron Core's layer: each layer keeps 41,984,000 B (the full
  // fine-tune layer above), the embedding its int64 token ids 8 · 1,024 = 8,192 B. Offloaded:
  // both layers and the embedding less the one layer in flight: 2 · 41,984,000 + 8,192 −
  // 41,984,000 = 41,992,192 B.
  const std::string base = R"("framework": "ddp", "model_implementation": "megatron-core",
      "params_dtype": "bf16")";
  const FullEstimate kept = full_estimate(config_from(small(base)));
  const FullEstimate moved = full_estimate(config_from(small(base + R"(, "activation_offload": true)")));
  CHECK(moved.cpu_activation_bytes == 41992192);
  CHECK(kept.activation_bytes - moved.activation_bytes == 41992192);
  CHECK(moved.cpu_bytes == 41992192);  // gpus_per_node 1
}

TEST_CASE("paged optimizer states leave the allocator; what does not fit goes to CPU", "[finetune][paged]") {
  // ddp, bf16, AdamW8bit paged: tensors of 100,000 elements or more (the 8 linear weights and
  // the embedding: 66,322,432 elements) page their two uint8 states: 2 × 66,322,432 =
  // 132,644,864 B. On the GPU stay their fp32 absmax, one per 256 elements (bitsandbytes >= 0.44:
  // 2 × 66,322,432 × 4 / 256 = 2,072,576) and the norms' fp32 states (5,120 elements under 4,096
  // each: 2 × 4 B × 5,120 = 40,960): 2,113,536.
  const std::string base = R"("framework": "ddp", "params_dtype": "bf16", "master_weights": false,
      "optimizer": "adam8bit", "paged_optimizer": true)";
  const FullEstimate free = full_estimate(config_from(small(base)));
  CHECK(free.state.optimizer_states.total() == 2113536);
  CHECK(free.paged_optimizer_bytes == 132644864);
  CHECK(free.paged_gpu_bytes == 132644864);  // no capacity: the unpressured figure
  CHECK(free.has(Assumption::trainmem_paged_unpressured));
  REQUIRE(free.n_overhead_lines == 4);
  CHECK(free.overhead_lines[3].key == "paged_optimizer");
  CHECK(free.device_bytes - free.reserved_bytes - 512.0 * 1024 * 1024 == Approx(132644864).margin(1));
  // A capacity 32 MiB above everything else keeps 33,554,432 B resident and evicts
  // 132,644,864 − 33,554,432 = 99,090,432 B to CPU memory.
  const double others = free.device_bytes - 132644864;
  const FullEstimate tight = full_estimate(config_from(
      small(base + R"(, "gpu_memory_bytes": )" + std::to_string(int64_t(others) + 33554432))));
  CHECK(tight.paged_gpu_bytes == Approx(33554432).margin(1));
  CHECK(tight.cpu_bytes == Approx(99090432).margin(1));
  CHECK(tight.has(Assumption::trainmem_paged_evicted));
}

TEST_CASE("cross_entropy_chunks: the loss's fp32 temporaries one chunk at a time", "[finetune][loss]") {
  // ddp, F.cross_entropy: backward makes two fp32 logits-sized tensors beside the saved ones,
  // 2 · 4 · 32,000 · 1,024 = 262,144,000 B; in 8 chunks one chunk's: 32,768,000 B. The saved
  // fp32 log-probabilities stay (each chunk saves its own).
  const Config whole = config_from(small(R"("framework": "ddp", "model_implementation": "torchtune")"));
  const Config chunked = config_from(small(R"("framework": "ddp", "model_implementation": "torchtune",
      "cross_entropy_chunks": 8)"));
  CHECK(loss_transient_bytes(whole) == 262144000);
  CHECK(loss_transient_bytes(chunked) == 32768000);
  CHECK(output_activation_bytes(chunked) == output_activation_bytes(whole));
}

TEST_CASE("cross_entropy_chunks: never more chunks than tokens, the largest chunk's temporaries", "[finetune][loss]") {
  // torch.chunk cuts s = 1,024 tokens into chunks of ceil(1,024 / n): with n = 3 two of 342 and
  // one of 340, and the temporaries are the largest chunk's: 2 · 4 · 32,000 · 342 = 87,552,000 B
  // (not 262,144,000 / 3). With n = 5,000 there are 1,024 chunks of one token: 2 · 4 · 32,000 =
  // 256,000 B (not 262,144,000 / 5,000, a fraction of a token).
  const std::string base = R"("framework": "ddp", "model_implementation": "torchtune", )";
  CHECK(loss_transient_bytes(config_from(small(base + R"("cross_entropy_chunks": 3)"))) == 87552000);
  const Config many = config_from(small(base + R"("cross_entropy_chunks": 5000)"));
  CHECK(loss_transient_bytes(many) == 256000);
  // b = 1: the one-token chunks are views, so the saved bytes are the unchunked ones.
  CHECK(output_activation_bytes(many) ==
        output_activation_bytes(config_from(small(R"("framework": "ddp", "model_implementation": "torchtune")"))));
}

TEST_CASE("lora_rank: at most the smaller side of every target", "[finetune][validation]") {
  // Two KV heads of 128: v_proj is 1024 → 256, the narrowest of the default targets (q, v).
  CHECK(messages_for(small(R"("peft": "lora", "num_query_groups": 2, "lora_rank": 512)")) ==
        std::vector<std::string>{"lora_rank: must be at most the smaller dimension of every target "
                                 "(rank(B·A) ≤ min(in, out)); v_proj is 1024 → 256, got 512"});
  CHECK(messages_for(small(R"("peft": "lora", "num_query_groups": 2, "lora_rank": 256)")).empty());
  // lm_head against a vocabulary of 100.
  CHECK(messages_for(small(R"("peft": "lora", "vocab_size": 100, "lora_rank": 128,
      "lora_target_modules": ["q_proj", "lm_head"])")) ==
        std::vector<std::string>{"lora_rank: must be at most the smaller dimension of every target "
                                 "(rank(B·A) ≤ min(in, out)); lm_head is 1024 → 100, got 128"});
}

TEST_CASE("ddp with data_parallel_size 1 is plain single-device PyTorch", "[finetune][ddp]") {
  // fp32 weights (ddp's default), no DDP wrapper on one GPU: no gradient buckets. With two
  // ranks the buckets hold another fp32 copy of the gradients: 66,327,552 × 4 = 265,310,208 B.
  const FullEstimate one = full_estimate(config_from(small(R"("framework": "ddp")")));
  CHECK(one.state.buffers.total() == 0);
  CHECK(one.nccl.count == 0);
  const FullEstimate two = full_estimate(config_from(small(R"("framework": "ddp", "data_parallel_size": 2)")));
  CHECK(two.state.buffers.total() == 265310208);
}

TEST_CASE("fine-tuning rules name the field and the rule", "[finetune][validation]") {
  const auto one = [](const std::string& message) { return std::vector<std::string>{message}; };
  CHECK(messages_for(small(R"("framework": "megatron", "peft": "qlora")")) ==
        one("peft: \"qlora\" needs framework ddp, fsdp2 or deepspeed (bitsandbytes or torchao NF4 "
            "linears; Megatron has none), got framework megatron"));
  CHECK(messages_for(small(R"("framework": "ddp", "peft": "qlora", "params_dtype": "bf16")")) ==
        one("params_dtype: must be \"nf4\" (or \"int8\": LLM.int8) with peft \"qlora\" (the frozen base "
            "linears in 4 or 8 bits), got \"bf16\""));
  CHECK(messages_for(small(R"("params_dtype": "nf4")")) ==
        one("params_dtype: \"nf4\" needs peft \"qlora\" (a frozen 4-bit base), got peft \"none\""));
  CHECK(messages_for(small(R"("lora_rank": 16)")) ==
        one("lora_rank: applies to peft \"lora\" or \"qlora\" only"));
  CHECK(messages_for(small(R"("peft": "lora", "lora_target_modules": [])")) ==
        one("lora_target_modules: must name at least one module with peft \"lora\""));
  CHECK(messages_for(small(R"("peft": "lora", "swiglu": false, "lora_target_modules": ["gate_proj"])")) ==
        one("lora_target_modules: \"gate_proj\" needs gated_linear_unit (the MLP has no gate)"));
  // Megatron Core's experts take adapters (ms-swift's LoRA) on the whole linear_fc1 only.
  CHECK(messages_for(small(R"("peft": "lora", "num_moe_experts": 4, "lora_target_modules": ["up_proj"])")) ==
        one("lora_target_modules: \"gate_proj\" and \"up_proj\" on Megatron Core's experts are one grouped "
            "linear_fc1, which ms-swift's LoRA wraps whole: name both or neither"));
  CHECK(messages_for(small(R"("peft": "lora", "fp8_recipe": "delayed")")) ==
        one("fp8_recipe: must be \"none\" with peft \"lora\" (FP8 copies of frozen weights are not "
            "modelled), got \"delayed\""));
  CHECK(messages_for(small(R"("framework": "megatron", "optimizer_in_backward": true)")) ==
        one("optimizer_in_backward: applies to frameworks ddp and fsdp2 (torchtune's "
            "optimizer_in_bwd); framework megatron steps its optimizer after backward"));
  CHECK(messages_for(small(R"("framework": "ddp", "data_parallel_size": 2, "optimizer_in_backward": true)")) ==
        one("optimizer_in_backward: with framework ddp needs data_parallel_size 1 (DDP all-reduces "
            "its gradient buckets after the hooks have run), got 2"));
  CHECK(messages_for(small(R"("framework": "fsdp2", "data_parallel_size": 2, "global_batch_size": 8,
      "optimizer_in_backward": true)")) ==
        one("optimizer_in_backward: needs one microbatch per step (gradient accumulation keeps every "
            "gradient until the last microbatch), got num_microbatches 4"));
  CHECK(messages_for(small(R"("framework": "megatron", "activation_offload": true,
      "recompute_granularity": "selective")")) ==
        one("activation_offload: with framework megatron needs recompute_granularity \"none\" "
            "(Megatron's CPU offloading does not work with activation recomputation), got "
            "\"selective\""));
  CHECK(messages_for(small(R"("framework": "deepspeed", "activation_offload": true)")) ==
        one("activation_offload: with framework deepspeed needs recompute_granularity \"full\" "
            "(cpu_checkpointing moves the checkpointed layer inputs), got \"none\""));
  CHECK(messages_for(small(R"("framework": "fsdp2", "activation_offload": true,
      "pipeline_model_parallel_size": 2)")) ==
        one("activation_offload: needs pipeline_model_parallel_size 1 (Megatron has no pipeline "
            "parallelism with CPU offloading), got 2"));
  CHECK(messages_for(small(R"("framework": "ddp", "optimizer": "sgd", "paged_optimizer": true)")) ==
        one("paged_optimizer: bitsandbytes pages the states of adam, adamw, adam8bit and lion, got "
            "optimizer \"sgd\""));
  CHECK(messages_for(small(R"("framework": "megatron", "paged_optimizer": true)")) ==
        one("paged_optimizer: applies to frameworks ddp, fsdp2 and deepspeed (a bitsandbytes "
            "optimizer); framework megatron steps with its own optimizer"));
  CHECK(messages_for(small(R"("framework": "megatron", "cross_entropy_chunks": 8)")) ==
        one("cross_entropy_chunks: applies to frameworks ddp, fsdp2 and deepspeed (torchtune's "
            "CEWithChunkedOutputLoss); framework megatron computes a vocab-parallel cross entropy"));
  CHECK(messages_for(small(R"("cross_entropy_chunks": 0)")) ==
        one("cross_entropy_chunks: must be at least 1, got 0"));
  CHECK(messages_for(small(R"("peft": "lora", "lora_target_modules": ["qkv"])")) ==
        one("lora_target_modules: entries must be among \"q_proj\", \"k_proj\", \"v_proj\", "
            "\"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\", \"lm_head\", got \"qkv\""));
  // The reference profiles reject every one of these fields.
  CHECK(messages_for(R"({"num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
      "vocab_size": 32000, "seq_length": 1024, "micro_batch_size": 1, "profile": "megatron-bridge",
      "peft": "lora", "activation_offload": true})") ==
        std::vector<std::string>{
            "peft: is read only by the trainmem profile (profile is \"megatron-bridge\")",
            "activation_offload: is read only by the trainmem profile (profile is \"megatron-bridge\")"});
}

TEST_CASE("every fine-tuning field works on every framework where it is supported", "[finetune]") {
  // Each supported combination resolves and gives a finite estimate (no NaN, no crash).
  const std::vector<std::string> configs = {
      small(R"("framework": "megatron", "peft": "lora", "tensor_model_parallel_size": 2,
          "sequence_parallel": true, "use_distributed_optimizer": true, "data_parallel_size": 2)"),
      small(R"("framework": "megatron", "peft": "lora", "pipeline_model_parallel_size": 2,
          "lora_target_modules": ["q_proj", "o_proj", "lm_head"])"),
      small(R"("framework": "megatron", "activation_offload": true)"),
      small(R"("framework": "deepspeed", "zero_stage": 2, "data_parallel_size": 4, "peft": "qlora",
          "paged_optimizer": true, "optimizer": "adamw")"),
      small(R"("framework": "ddp", "model_implementation": "torchtune", "peft": "lora",
          "cross_entropy_chunks": 4, "recompute_granularity": "full")"),
      small(R"("framework": "deepspeed", "activation_offload": true, "recompute_granularity": "full")"),
      small(R"("framework": "fsdp2", "zero_stage": 2, "data_parallel_size": 8, "peft": "qlora",
          "optimizer_in_backward": true, "activation_offload": true, "lora_dropout": 0.1)"),
      small(R"("framework": "fsdp2", "peft": "lora", "pipeline_model_parallel_size": 2,
          "global_batch_size": 4)"),
      small(R"("framework": "ddp", "peft": "lora", "recompute_granularity": "full",
          "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
          "down_proj", "lm_head"])"),
      small(R"("framework": "ddp", "peft": "lora", "num_moe_experts": 4, "moe_router_topk": 2)"),
      small(R"("framework": "ddp", "optimizer": "lion", "paged_optimizer": true,
          "optimizer_in_backward": true, "gpu_memory_bytes": 1e9)"),
  };
  for (const std::string& json : configs) {
    CAPTURE(json);
    const FullEstimate est = full_estimate(config_from(json));
    CHECK(std::isfinite(est.total_bytes));
    CHECK(std::isfinite(est.device_bytes));
    CHECK(std::isfinite(est.cpu_bytes));
    CHECK(est.total_bytes > 0);
  }
}

TEST_CASE("gradients freed between steps: the forward runs without them", "[finetune][gradients]") {
  // ddp on one GPU, pure bf16, fused AdamW (no step temporaries), Megatron Core's layer: each
  // layer keeps 41,984,000 B, the embedding its token ids 8,192 B (the offload case above).
  //   weights 66,327,552 × 2 = 132,655,104; gradients the same; AdamW's two fp32 states
  //   66,327,552 × 8 = 530,620,416; workspaces 96 MiB = 100,663,296: the model state with every
  //   gradient is 896,593,920 B.
  // torch.optim's zero_grad(set_to_none=True) after each step: with one microbatch per step
  // (global batch 1) the forward holds none; with two, the second forward runs beside the first's.
  const std::string base = R"("framework": "ddp", "model_implementation": "megatron-core",
      "params_dtype": "bf16", "master_weights": false, "optimizer": "adamw",
      "optimizer_implementation": "fused")";
  const FullEstimate one = full_estimate(config_from(small(base + R"(, "global_batch_size": 1)")));
  const FullEstimate two = full_estimate(config_from(small(base + R"(, "global_batch_size": 2)")));
  CHECK(one.has(Assumption::trainmem_gradients_per_step));
  CHECK_FALSE(two.has(Assumption::trainmem_gradients_per_step));
  CHECK(two.moments.optimizer_step == 896593920);
  CHECK(one.moments.optimizer_step == 896593920);
  CHECK(two.moments.forward - one.moments.forward == 132655104);
  // Backward: at the last layer every activation but the loss's, and only the output layer's
  // gradient (the tied embedding, 32,768,000 × 2 = 65,536,000 B): two's backward less the other
  // 67,119,104 B; at the first layer every gradient and that layer's and the embedding's saved
  // tensors, 896,593,920 + 41,984,000 + 8,192 = 938,586,112 B, which is the larger here.
  CHECK(one.moments.backward == 938586112);
  CHECK(two.moments.backward - 67119104 < 938586112);
  // The peak is the forward: the breakdown holds no gradients and still adds up.
  CHECK(one.moments.peak_moment == Moment::forward);
  CHECK(one.state.gradients.total() == 0);
  CHECK(two.state.gradients.total() == 132655104);
  CHECK(one.state.total() + one.moments.peak_activation_bytes + one.moments.peak_temporary_bytes ==
        Approx(one.total_bytes).margin(1));
  // The caching allocator keeps the previous step's gradient blocks reserved: the reserved figure
  // is the forward with every gradient, two's forward (its peak), × 1.05 (the default
  // fragmentation): 1,377,992,704 × 1.05.
  CHECK(two.moments.forward == two.total_bytes);
  CHECK(one.reserved_bytes == Approx(two.total_bytes * 1.05).epsilon(1e-12));
  CHECK(one.reserved_bytes == Approx(two.reserved_bytes).epsilon(1e-12));
}

TEST_CASE("gradients freed between steps: a model without an output layer makes none before its layers", "[finetune][gradients]") {
  // vocab_size 0 with learned positions (found by review: the output layer's gradient was the
  // next tensor's, the position embedding's). Megatron Core's layer, bf16, fused AdamW, one
  // microbatch of 8 sequences of 1,024 tokens: each layer keeps 8 × 41,984,000 = 335,872,000 B,
  // the two 671,744,000 B; no embedding activations, no loss. Parameters: 33,554,432 linear +
  // 5,120 norm + 1,024 × 1,024 positions = 34,608,128: weights and gradients 69,216,256 B each,
  // AdamW 276,865,024 B, workspaces 100,663,296 B: model state 515,960,832 B.
  //   forward   = 515,960,832 − 69,216,256 + 671,744,000 = 1,118,488,576
  //   backward at the last layer: no gradient made yet, every activation: the same;
  //   at the first: 515,960,832 + 335,872,000 = 851,832,832, smaller.
  const FullEstimate e = full_estimate(config_from(small(R"("vocab_size": 0, "max_position_embeddings": 1024,
      "micro_batch_size": 8, "global_batch_size": 8, "framework": "ddp",
      "model_implementation": "megatron-core", "params_dtype": "bf16", "master_weights": false,
      "optimizer": "adamw", "optimizer_implementation": "fused")")));
  CHECK(e.moments.optimizer_step == 515960832);
  CHECK(e.moments.forward == 1118488576);
  CHECK(e.moments.backward == 1118488576);
  CHECK(e.moments.peak_moment == Moment::forward);
}

TEST_CASE("gradients kept for the whole run where a buffer holds them", "[finetune][gradients]") {
  // Megatron's main_grad buffer, DeepSpeed's partitions and DDP's bucket views outlive a step;
  // FSDP2's sharded gradients do not. One microbatch per step each (global batch = DP).
  auto freed = [](const std::string& more) {
    return full_estimate(config_from(small(R"("params_dtype": "bf16", "micro_batch_size": 1, )" + more)))
        .has(Assumption::trainmem_gradients_per_step);
  };
  CHECK(freed(R"("framework": "fsdp2", "data_parallel_size": 2, "global_batch_size": 2)"));
  CHECK(freed(R"("framework": "ddp", "data_parallel_size": 2, "global_batch_size": 2)"));
  CHECK_FALSE(freed(R"("framework": "ddp", "data_parallel_size": 2, "global_batch_size": 2,
      "gradient_as_bucket_view": true)"));
  CHECK(freed(R"("framework": "ddp", "data_parallel_size": 1, "global_batch_size": 1,
      "gradient_as_bucket_view": true)"));
  CHECK_FALSE(freed(R"("framework": "deepspeed", "data_parallel_size": 2, "global_batch_size": 2)"));
  CHECK_FALSE(freed(R"("framework": "megatron", "data_parallel_size": 2, "global_batch_size": 2)"));
  CHECK_FALSE(freed(R"("framework": "fsdp2", "data_parallel_size": 2)"));  // microbatches unknown
}

TEST_CASE("fused_linear_cross_entropy keeps the gradients of the output layer's input and weight", "[finetune][loss]") {
  // The small model, Hugging Face's code, pure bf16 (no autocast: the residual and the final
  // norm's output are bf16), one sequence of 1,024 tokens, vocabulary 32,000, h 1,024.
  //   grad_input  = zeros_like(final hidden): 1,024 × 1,024 × 2 = 2,097,152 B
  //   grad_weight = zeros_like(lm_head.weight): 32,000 × 1,024 × 2 = 65,536,000 B (full training)
  //   one chunk of logits: ⌈32,000 / 1,024⌉ = 32, ⌈1,024 / 32⌉ = 32 tokens (a power of two):
  //   32 × 32,000 × 2 = 2,048,000 B, and loss_1d 1,024 × 4 = 4,096 B: 2,052,096 B in flight.
  const std::string base = R"("framework": "ddp", "params_dtype": "bf16", "master_weights": false)";
  const Config fused = config_from(small(base + R"(, "fused_linear_cross_entropy": true)"));
  SavedTensors kept;
  output_activation_bytes(fused, &kept);
  double grad_input = 0, grad_weight = 0, logits = 0;
  for (const SavedTensor& t : kept) {
    if (t.name == "loss.grad_input") grad_input += t.bytes;
    if (t.name == "loss.grad_weight") grad_weight += t.bytes;
    if (t.name == "loss.log_softmax" || t.name == "loss.logits" || t.name == "output.output_layer_input") logits += t.bytes;
  }
  CHECK(grad_input == 2097152);
  CHECK(grad_weight == 65536000);
  CHECK(logits == 0);
  CHECK(loss_transient_bytes(fused) == 2052096);
  // Unfused, the loss keeps the fp32 log-probabilities (1,024 × 32,000 × 4 = 131,072,000 B) and
  // its backward two more fp32 logits-sized tensors: the fused loss keeps and needs far less.
  const Config plain = config_from(small(base));
  CHECK(loss_transient_bytes(plain) == 2 * 131072000.0);
  // Both keep the final norm's tensors; unfused, the output layer's input (1,024 × 1,024 × 2 =
  // 2,097,152 B, as large as grad_input), the log-probabilities and the labels, one more than the
  // tokens for a single sequence (1,025 × 8 = 8,200 B): 131,072,000 + 8,200 − 65,536,000 more.
  CHECK(output_activation_bytes(plain) - output_activation_bytes(fused) == 65544200);
  // LoRA: the output layer is frozen, so no grad_weight; the input's gradient is still made.
  const Config lora = config_from(small(base + R"(, "fused_linear_cross_entropy": true, "peft": "lora")"));
  SavedTensors lora_kept;
  output_activation_bytes(lora, &lora_kept);
  double lora_grads = 0;
  for (const SavedTensor& t : lora_kept)
    if (t.module == "loss") lora_grads += t.bytes;
  CHECK(lora_grads == 2097152);
}

TEST_CASE("fused_linear_cross_entropy: named errors", "[finetune][loss]") {
  const auto first = [](const std::string& more) {
    const std::vector<std::string> m = messages_for(small(more + R"(, "fused_linear_cross_entropy": true)"));
    return m.empty() ? std::string() : m.front();
  };
  CHECK_THAT(first(R"("framework": "megatron")"), Catch::Contains("model_implementation \"hf-transformers\""));
  CHECK_THAT(first(R"("framework": "fsdp2")"), Catch::Contains("got \"torchtitan\""));
  CHECK_THAT(first(R"("framework": "ddp", "tensor_model_parallel_size": 2, "data_parallel_size": 1,
      "num_attention_heads": 8)"), Catch::Contains("tensor_model_parallel_size 1"));
  CHECK_THAT(first(R"("framework": "ddp", "peft": "lora", "lora_target_modules": ["q_proj", "lm_head"])"),
             Catch::Contains("lm_head"));
  CHECK(first(R"("framework": "fsdp2", "model_implementation": "hf-transformers")").empty());
  CHECK(first(R"("framework": "deepspeed")").empty());
}

TEST_CASE("the decoder layers' backward is walked under LoRA and under checkpointing", "[finetune][peft][backward]") {
  // transformers' Llama layer in fp32, 2 layers, h 64, 4 heads of 16, f 200, 2 × 73 = 146
  // tokens, LoRA r 4 on down_proj only, no dropout (the timeline oracle's c19 shape, allocations
  // exact there). At the SwiGLU product's MulBackward0 (activations.cpp decoder_backward_bytes):
  //   the residual gradient 4 · 146 · 64 = 37,376 B, and three 4 · 146 · 200 = 116,800 B
  //   gradients: 350,400 B;
  //   down_proj's nodes have freed the product (kept because the adapter reads it as it is:
  //   116,800 B) and the adapter's r-wide intermediate 4 · 4 · 146 = 2,336 B: 119,136 B;
  //   the only gradients are the adapters': down_proj's r · (f + h) = 4 · 264 = 1,056, made
  //   before that point, out of the layer's 1,056; a frozen embedding runs no backward.
  const std::string base = R"({"model_implementation": "hf-transformers", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "num_query_groups": 4, "kv_channels": 16, "ffn_hidden_size": 200,
      "vocab_size": 413, "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
      "add_bias_linear": false, "seq_length": 73, "micro_batch_size": 2, "params_dtype": "fp32", "compute_dtype": "fp32",
      "framework": "ddp", "attention_backend": "unfused", "hidden_dropout": 0, "peft": "lora", "lora_rank": 4,
      "lora_target_modules": ["down_proj"], "lora_dropout": 0)";
  const DecoderBackward lora = decoder_backward_bytes(config_from(base + "}"));
  REQUIRE(lora.modelled);
  CHECK(lora.incoming == 37376);
  CHECK(lora.swiglu.extra == 350400);
  CHECK(lora.swiglu.freed == 119136);
  CHECK(lora.swiglu.made_params == 1056);
  CHECK(lora.layer_params == 1056);
  CHECK(lora.norm_params == 0);
  CHECK(lora.token_ids == 0);
  // With dropout the adapter reads a dropped-out copy (4 · 146 · 200 = 116,800 B) and keeps a
  // bool mask (146 · 200 = 29,200 B); the frozen base then keeps no product: 116,800 + 29,200 +
  // 2,336 = 148,336 B freed by down_proj's nodes.
  CHECK(decoder_backward_bytes(config_from(base + R"(, "lora_dropout": 0.1})")).swiglu.freed == 148336);
  // Before that, the adapter's NativeDropoutBackward0: lora_A's MmBackward0 has written the
  // dropped copy's gradient (4 · 146 · 200) and freed the copy; native_dropout_backward writes two
  // more: 3 · 116,800 = 350,400 B, with the mask still saved: 148,336 − 29,200 = 119,136 B freed.
  const DecoderBackward dropped = decoder_backward_bytes(config_from(base + R"(, "lora_dropout": 0.1})"));
  CHECK(dropped.down_lora_dropout.extra == 350400);
  CHECK(dropped.down_lora_dropout.freed == 119136);
  CHECK(dropped.down_lora_dropout.made_params == 1056);
  CHECK(lora.down_lora_dropout.extra == 0);  // no dropout: no such node
  // Every layer checkpointed (full recompute, uniform): walked, the recomputed layer's saved set
  // standing in for the kept one; the block method with one of the two layers is not.
  CHECK(decoder_backward_bytes(config_from(base + R"(, "recompute_granularity": "full",
      "recompute_method": "uniform", "recompute_num_layers": 1})")).modelled);
  CHECK_FALSE(decoder_backward_bytes(config_from(base + R"(, "recompute_granularity": "full",
      "recompute_method": "block", "recompute_num_layers": 1})")).modelled);
  // Eager attention's SoftmaxBackward0: the values' gradient over every head, e · 4 · 16 · 146,
  // the fp32 probabilities' gradient 4 · scores and the scores' gradient in the softmax input's
  // dtype, scores = 4 heads · 146 tokens · 73 = 42,632. fp32: 37,376 + 8 · 42,632 = 378,432 B;
  // bf16 (cast to fp32 before the softmax): 18,688 + 8 · 42,632 = 359,744 B; fp16 on CUDA
  // (half_to_float reads the fp16 scores): 18,688 + 6 · 42,632 = 274,480 B.
  CHECK(lora.softmax.extra == 378432);
  const auto in = [&](const char* dtype) {
    return decoder_backward_bytes(config_from(base + R"(, "params_dtype": ")" + dtype + R"(", "compute_dtype": ")" +
                                              dtype + R"("})")).softmax.extra;
  };
  CHECK(in("bf16") == 359744);
  CHECK(in("fp16") == 274480);
  // torchtune's attention (scaled_dot_product_attention's math path when unfused) keeps its
  // softmax in the compute dtype: in bf16 two 2 · scores, 18,688 + 4 · 42,632 = 189,216 B.
  CHECK(decoder_backward_bytes(config_from(base + R"(, "model_implementation": "torchtune", "params_dtype": "bf16",
      "compute_dtype": "bf16"})")).softmax.extra == 189216);
  // The RMSNorms' PowBackward0: in fp32 x's gradient joins the residual gradient at once, and
  // mean's and pow's four 4 · 146 · 64 = 37,376 B gradients remain: 149,504 B; in bf16 x's fp32
  // gradient waits for the cast's backward: five, 186,880 B. Under LoRA the post-attention norm's
  // point has down_proj's adapter gradients made (the norm's weight is frozen), the input norm's
  // every adapter gradient of the layer.
  CHECK(lora.norm_mlp.extra == 149504);
  CHECK(decoder_backward_bytes(config_from(base + R"(, "params_dtype": "bf16", "compute_dtype": "bf16"})")).norm_mlp.extra == 186880);
  CHECK(lora.norm_mlp.made_params == 1056);
  CHECK(lora.norm_attention.made_params == lora.layer_params);
  CHECK(lora.norm_attention.freed > lora.norm_mlp.freed);
  // At the input norm's PowBackward0 every saved tensor of the layer is freed but the norm's
  // input pow saved. torchtune's rope cache is a module buffer, not a saved tensor, so nothing
  // of it is taken out: in bf16 full training that input is the fp32 copy, 4 · 146 · 64 =
  // 37,376 B, all that is left of the layer's set (the allocation timeline oracle's seed 5 c15:
  // transformers' cos/sin, 2 · e · s · k, was taken out there, 17,152 B under).
  const Config tt = config_from(R"({"model_implementation": "torchtune", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "num_query_groups": 4, "kv_channels": 16, "ffn_hidden_size": 200,
      "vocab_size": 413, "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
      "add_bias_linear": false, "seq_length": 73, "micro_batch_size": 2, "params_dtype": "bf16",
      "compute_dtype": "bf16", "framework": "ddp", "attention_backend": "unfused", "hidden_dropout": 0})");
  CHECK(layer_activation_bytes(tt, false, LayerRecompute::policy) - decoder_backward_bytes(tt).norm_attention.freed ==
        37376);
}

TEST_CASE("transformers' MoE block's backward: the first expert, the summed input gradients, q_proj's end", "[finetune][moe][backward]") {
  // MixtralSparseMoeBlock in fp32, full training: h 64, 4 heads of 16, 4 experts of f 32, top-2,
  // 2 × 16 = 32 tokens, so 64 routed rows and, balanced, n = 16 per expert. Each row keeps
  // (activations.cpp mixtral_moe): the expert's input 4 · 64, w1's output, silu's output, w3's
  // output and the product 4 · 32 each, two int64 indices 16, its routing weight 4, w2's output
  // and the weighted output 4 · 64 each: 1,300 B.
  const std::string base = R"({"model_implementation": "hf-transformers", "num_layers": 1, "hidden_size": 64,
      "num_attention_heads": 4, "num_query_groups": 4, "kv_channels": 16, "ffn_hidden_size": 32,
      "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 32, "vocab_size": 100,
      "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm", "add_bias_linear": false,
      "seq_length": 16, "micro_batch_size": 2, "params_dtype": "fp32", "compute_dtype": "fp32",
      "framework": "ddp", "attention_backend": "flash", "hidden_dropout": 0)";
  const DecoderBackward moe = decoder_backward_bytes(config_from(base + "}"));
  REQUIRE(moe.modelled);
  CHECK(moe.swiglu.extra == 0);  // no dense MLP
  // The first expert's silu · w3 MulBackward0: three 4 · 16 · 32 gradients and the routing
  // weights' gradient 4 · 32 · 2 = 256: 6,400 B; its product, w2 output, weighted output and
  // routing weights freed, (128 + 256 + 256 + 4) · 16 = 10,304 B; w2's 32 · 64 gradient made.
  CHECK(moe.expert_first.extra == 6400);
  CHECK(moe.expert_first.freed == 10304);
  CHECK(moe.expert_first.made_params == 2048);
  // The second expert's input gradient added out of place: old, new and sum, 3 · 4 · 32 · 64,
  // with the routing weights' gradient: 24,832 B; two experts' 1,300 · 16 freed, their three
  // 2,048-element weights' gradients made; at the last expert all four.
  CHECK(moe.expert_second.extra == 24832);
  CHECK(moe.expert_second.freed == 41600);
  CHECK(moe.expert_second.made_params == 12288);
  CHECK(moe.expert_last.extra == 24832);
  CHECK(moe.expert_last.freed == 83200);
  CHECK(moe.expert_last.made_params == 24576);
  // The loop's first node in backward, the last expert's weighting MulBackward0: the selected
  // rows of the block's output gradient, the gradient of w2's output and grad · w2's output,
  // 3 · 4 · 16 · 64 = 12,288, and their sum over h, the routing weights' row 4 · 16 = 64:
  // 12,352 B; the weighted output IndexAddBackward0 saved, 4 · 16 · 64 = 4,096, freed; no
  // gradient made. It is above the first expert's point here, where f 32 < h 64: 12,352 − 4,096
  // = 8,256 B against 6,400 − 10,304 + w2's gradient 4 · 2,048 = 4,288 B (the allocation
  // timeline oracle's seed 1 c10, f 40 and h 64, peaks there).
  CHECK(moe.expert_weighting.extra == 12352);
  CHECK(moe.expert_weighting.freed == 4096);
  CHECK(moe.expert_weighting.made_params == 0);
  // q_proj's MmBackward0: its output's gradient 4 · 32 · 64 and two input gradients 2 · 4 · 32 · 64.
  CHECK(moe.qkv.extra == 24576);
  // The layer's parameters: q, k, v 64 · (64 + 2 · 64) = 12,288, o 64 · 64 = 4,096, the input
  // norm 64, the router 64 · 4 = 256, four experts 4 · 3 · 64 · 32 = 24,576, the post-attention
  // norm 64: 41,344.
  CHECK(moe.layer_params == 41344);

  SECTION("QLoRA with fp32 norms: the block's tensors and their gradients are fp32") {
    // kbit_upcast trl leaves the norms fp32, so the block's input is fp32 (k_src_hf_moe_kbit):
    // the routing weights 4 · 64 = 256, w2's output and the weighted output 4 · 64 · 64 = 16,384
    // each, and in backward the first expert's 3 · 4 · 16 · 32 + 4 · 32 · 2 = 6,400 B and the
    // summed input gradients 3 · 4 · 32 · 64 + 256 = 24,832 B: the fp32 figures above. With the
    // norms in bf16 (kbit_upcast none) half: 128, 8,192; 3 · 2 · 16 · 32 + 2 · 64 = 3,200 and
    // 3 · 2 · 32 · 64 + 128 = 12,416.
    const std::string qlora = base + R"(, "peft": "qlora", "params_dtype": "nf4", "compute_dtype": "bf16",
        "lora_target_modules": ["q_proj"], "kbit_upcast": )";
    const Config trl = config_from(qlora + R"("trl"})");
    const Config none = config_from(qlora + R"("none"})");
    SavedTensors st, sn;
    layer_activation_bytes(trl, true, LayerRecompute::policy, &st);
    layer_activation_bytes(none, true, LayerRecompute::policy, &sn);
    CHECK(row_bytes(st, "moe.routing_weights") == 256);
    CHECK(row_bytes(st, "moe.expert_output") == 16384);
    CHECK(row_bytes(st, "moe.weighted_output") == 16384);
    CHECK(row_bytes(sn, "moe.routing_weights") == 128);
    CHECK(row_bytes(sn, "moe.weighted_output") == 8192);
    const DecoderBackward bt = decoder_backward_bytes(trl), bn = decoder_backward_bytes(none);
    CHECK(bt.expert_first.extra == 6400);
    CHECK(bt.expert_second.extra == 24832);
    CHECK(bn.expert_first.extra == 3200);
    CHECK(bn.expert_second.extra == 12416);
    // The fp32 adapters' bf16 autocast casts (2 B a parameter) are taken out of the walked points
    // as their nodes run, as in a dense layer; not with bitsandbytes < 0.43.2's kept A under the
    // non-reentrant checkpoint, where the MoE recomputation is not walked whole: kept there.
    CHECK(bn.adapter_cast_bytes == 2);
    CHECK_FALSE(bn.casts_recomputed);
    const DecoderBackward kept = decoder_backward_bytes(config_from(qlora + R"("none", "bnb_keeps_matmul_input": true,
        "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
        "checkpoint_reentrant": false})"));
    CHECK(kept.adapter_cast_bytes == 0);
    const DecoderBackward recent = decoder_backward_bytes(config_from(qlora + R"("none", "bnb_keeps_matmul_input": false,
        "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
        "checkpoint_reentrant": false})"));
    CHECK(recent.adapter_cast_bytes == 2);
    CHECK(recent.casts_recomputed);
  }
}

TEST_CASE("reentrant checkpointing: the recomputed output, the incoming gradient and cos/sin", "[finetune][backward]") {
  // The LoRA test's transformers Llama layer trained whole, in fp32: 2 layers, h 64, 4 heads of
  // 16, f 200, 2 × 73 = 146 tokens, every layer checkpointed. The residual stream's e · T · h =
  // 4 · 146 · 64 = 37,376 B. torch.utils.checkpoint.CheckpointFunction.backward (activations.cpp
  // reentrant_extras) holds the recomputed output (37,376 B) through the layer's backward, and the
  // incoming gradient beside the post-attention residual's gradient from the post-attention
  // norm on (another 37,376 B). Non-reentrant, by hand (the LoRA test's walk, full training):
  //   SwiGLU MulBackward0  3 · 4 · 146 · 200                    = 350,400 B
  //   SoftmaxBackward0     37,376 + 8 · 4 · 146 · 73             = 378,432 B
  //   q_proj MmBackward0   4 · 146 · (2 · 64 + 4 · 16)           = 112,128 B
  //   each RMSNorm's PowBackward0 (fp32): 4 · 37,376            = 149,504 B
  // Reentrant: + 37,376 at the SwiGLU point, + 74,752 at the others.
  const std::string base = R"({"model_implementation": "hf-transformers", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "num_query_groups": 4, "kv_channels": 16, "ffn_hidden_size": 200,
      "vocab_size": 413, "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
      "add_bias_linear": false, "seq_length": 73, "micro_batch_size": 2, "params_dtype": "fp32", "compute_dtype": "fp32",
      "framework": "ddp", "attention_backend": "unfused", "hidden_dropout": 0, "recompute_granularity": "full",
      "recompute_method": "uniform", "recompute_num_layers": 1)";
  const DecoderBackward plain = decoder_backward_bytes(config_from(base + R"(, "checkpoint_reentrant": false})"));
  const DecoderBackward reentrant = decoder_backward_bytes(config_from(base + R"(, "checkpoint_reentrant": true})"));
  REQUIRE(plain.modelled);
  REQUIRE(reentrant.modelled);
  CHECK(plain.swiglu.extra == 350400);
  CHECK(reentrant.swiglu.extra == 387776);
  CHECK(plain.softmax.extra == 378432);
  CHECK(reentrant.softmax.extra == 453184);
  CHECK(plain.qkv.extra == 112128);
  CHECK(reentrant.qkv.extra == 186880);
  CHECK(plain.norm_mlp.extra == 149504);
  CHECK(reentrant.norm_mlp.extra == 224256);
  CHECK(reentrant.norm_attention.extra == 224256);
  // What each point has made is the same in both modes, and what it has freed but for the model's
  // tensor arguments: every layer's CheckpointFunction saved the eager mask 4 · 2 · 73 · 73 =
  // 42,632 B and the positions 8 · 73 = 584 B, and ctx.inputs holds cos/sin 2 · 4 · 73 · 16 =
  // 9,344 B, so the first layer's q_proj and input-norm points still have them: 52,560 B less freed.
  CHECK(reentrant.swiglu.freed == plain.swiglu.freed);
  CHECK(reentrant.qkv.made_params == plain.qkv.made_params);
  CHECK(plain.qkv.freed - reentrant.qkv.freed == 52560);
  CHECK(plain.norm_attention.freed - reentrant.norm_attention.freed == 52560);
  // The (cos, sin) tuple stays in ctx.inputs until the graph is freed: 2 · 4 · 73 · 16 = 9,344 B;
  // non-reentrant nothing. Trained whole, the embedding's own backward runs (no input gradient
  // at the end).
  CHECK(plain.graph_held == 0);
  CHECK(reentrant.graph_held == 9344);
  CHECK(reentrant.input_gradient_end == 0);
  // With partial RoPE the tuple is as narrow as the rotary tables: int(16 · 0.5) = 8 channels,
  // 2 · 4 · 73 · 8 = 4,672 B.
  CHECK(decoder_backward_bytes(config_from(base + R"(, "checkpoint_reentrant": true, "rotary_percent": 0.5})"))
            .graph_held == 4672);
  // In bf16 the post-attention norm's x gradient waits for its cast's backward, so only the
  // output (2 · 146 · 64 = 18,688 B) is beside its PowBackward0's five fp32 T · h (186,880 B).
  const std::string bf16 = R"(, "params_dtype": "bf16", "compute_dtype": "bf16")";
  CHECK(decoder_backward_bytes(config_from(base + bf16 + R"(, "checkpoint_reentrant": true})")).norm_mlp.extra == 205568);
  // Under LoRA transformers makes the embedding output need a gradient (enable_input_require_grads):
  // the leaf and its .grad, 2 · 37,376 = 74,752 B, at the backward's end.
  CHECK(decoder_backward_bytes(config_from(base + R"(, "peft": "lora", "lora_rank": 4, "lora_target_modules": ["down_proj"],
      "lora_dropout": 0, "checkpoint_reentrant": true})")).input_gradient_end == 74752);
  // With PEFT training the embedding whole (modules_to_save) its output is no leaf: no .grad kept.
  CHECK(decoder_backward_bytes(config_from(base + R"(, "peft": "lora", "lora_rank": 4, "lora_target_modules": ["down_proj"],
      "lora_dropout": 0, "lora_modules_to_save": ["embed_tokens"], "checkpoint_reentrant": true})")).input_gradient_end == 0);
  // The moments: the saved activations are the same (the same arguments are saved); a loop that
  // keeps the model's output keeps the graph, and cos/sin with it, through the optimizer step.
  const std::string kept = R"(, "model_output_kept": true)";
  const FullEstimate a = full_estimate(config_from(base + kept + R"(, "checkpoint_reentrant": false})"));
  const FullEstimate b = full_estimate(config_from(base + kept + R"(, "checkpoint_reentrant": true})"));
  CHECK(b.stages[0].activation_bytes == a.stages[0].activation_bytes);
  CHECK(b.moments.forward == a.moments.forward);
  CHECK(b.moments.optimizer_step - a.moments.optimizer_step == 9344);
  CHECK(b.moments.backward > a.moments.backward);
  // Without the kept output the Trainer frees the graph before the step.
  CHECK(full_estimate(config_from(base + R"(, "checkpoint_reentrant": true})")).moments.optimizer_step ==
        full_estimate(config_from(base + R"(, "checkpoint_reentrant": false})")).moments.optimizer_step);
}

TEST_CASE("checkpoint_reentrant: transformers' default, named errors elsewhere", "[finetune][backward]") {
  const std::string shape = R"({"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100,
      "seq_length": 16, "micro_batch_size": 1, "profile": "trainmem", "framework": "ddp")";
  // transformers' gradient_checkpointing_enable() without kwargs is reentrant (4.x releases).
  CHECK(config_from(shape + R"(, "recompute_granularity": "full"})").checkpoint_reentrant);
  CHECK_FALSE(config_from(shape + R"(, "recompute_granularity": "full", "model_implementation": "torchtune"})").checkpoint_reentrant);
  CHECK_FALSE(config_from(shape + "}").checkpoint_reentrant);
  const auto first = [&](const std::string& more) {
    const std::vector<std::string> m = messages_for(shape + more + "}");
    return m.empty() ? std::string() : m.front();
  };
  CHECK_THAT(first(R"(, "recompute_granularity": "full", "model_implementation": "torchtune", "checkpoint_reentrant": true)"),
             Catch::Contains("needs model_implementation \"hf-transformers\""));
  CHECK_THAT(first(R"(, "checkpoint_reentrant": true)"), Catch::Contains("recompute_granularity \"full\""));
  CHECK(first(R"(, "recompute_granularity": "full", "checkpoint_reentrant": false)").empty());
}

TEST_CASE("an adapter on the output layer: the loss's target freed first, and its forward in evaluation",
          "[finetune][peft][evaluation]") {
  // transformers' Llama in fp32 (the allocation timeline oracle's seed 1 c14 shape): 2 layers,
  // h 192, 3 heads of 64 with one key/value head, f 592, vocabulary 663, sequences of 126, LoRA
  // r 8 on every linear and lm_head, the loss upcast in the model (transformers_loss
  // "upcast-in-model").
  const std::string base = R"({"model_implementation": "hf-transformers", "framework": "ddp", "num_layers": 2,
      "hidden_size": 192, "num_attention_heads": 3, "num_query_groups": 1, "kv_channels": 64,
      "ffn_hidden_size": 592, "vocab_size": 663, "make_vocab_size_divisible_by": 1, "gated_linear_unit": true,
      "activation_func": "silu", "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 126,
      "micro_batch_size": 1, "params_dtype": "fp32", "compute_dtype": "fp32", "attention_backend": "unfused",
      "hidden_dropout": 0, "peft": "lora", "lora_rank": 8, "lora_dropout": 0,
      "transformers_loss": "upcast-in-model", "eval_micro_batch_size": 3, "eval_kv_cache": true, )";
  const std::string all = R"("lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
      "down_proj")";
  const Config with_head = config_from(base + all + R"(, "lm_head"]})");
  const Config without = config_from(base + all + "]}");
  // The loss's backward: NllLossBackward0 frees the target it saved (one sequence: the shifted
  // labels are a view of the labels' storage, 8 · 126 = 1,008 B) before LogSoftmaxBackward0's
  // temporaries, with or without an adapter on lm_head (whose backward is not walked).
  CHECK(output_backward_bytes(with_head).target == 1008);
  CHECK_FALSE(output_backward_bytes(with_head).modelled);
  // Evaluation, 3 sequences with the KV cache: T = 378 tokens, logits L = 378 · 663 = 250,614
  // elements. Beside the final norm's output 4 · 192 · 378 = 290,304 B and the cache 2 layers ·
  // 378 · 2 · 64 · 4 = 387,072 B, the loss: the fp32 logits 4 · 250,614 = 1,002,456, the shifted
  // copy and its log-probabilities 2 · 4 · 3 · 125 · 663 = 1,989,000, the shifted labels
  // 8 · 375 = 3,000: 2,994,456 B. The adapter on lm_head holds the base logits, lora_B's output
  // and its scaled copy at the mul, 3 · 1,002,456 = 3,007,368 B, before the loss exists: larger.
  CHECK(evaluation_forward_bytes(without).loss == 290304 + 2994456 + 387072);
  CHECK(evaluation_forward_bytes(with_head).loss == 290304 + 3007368 + 387072);
}

TEST_CASE("full training: gate_proj's MmBackward0 with the MLP's weight gradients made", "[finetune][backward]") {
  // transformers' Llama trained whole in fp32 (the allocation timeline oracle's seed 7 c01 shape):
  // h 192, 12 heads of 16 with one key/value head, f 496, 3 × 27 = 81 tokens. After the SwiGLU
  // product's MulBackward0, up_proj's MmBackward0 writes its weight's gradient and its input's
  // (4 · 81 · 192 = 62,208 B, waiting in the norm output's buffer) and frees up's output gradient;
  // SiluBackward0 writes the gate's gradient (4 · 81 · 496 = 160,704 B); gate_proj's MmBackward0
  // writes its input's gradient (62,208 B) beside them: 160,704 + 2 · 62,208 = 285,120 B. Freed
  // by then: the product, SiLU's output, up's output and the gate, 4 · 160,704 = 642,816 B; made:
  // the MLP's three weights, 3 · 192 · 496 = 285,696 parameters.
  const Config c = config_from(R"({"model_implementation": "hf-transformers", "framework": "ddp", "num_layers": 2,
      "hidden_size": 192, "num_attention_heads": 12, "num_query_groups": 1, "kv_channels": 16,
      "ffn_hidden_size": 496, "vocab_size": 300, "gated_linear_unit": true, "activation_func": "silu",
      "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 27, "micro_batch_size": 3,
      "params_dtype": "fp32", "compute_dtype": "fp32", "attention_backend": "unfused", "hidden_dropout": 0})");
  const DecoderBackward dec = decoder_backward_bytes(c);
  REQUIRE(dec.modelled);
  CHECK(dec.gate_mm.extra == 285120);
  CHECK(dec.gate_mm.freed == 642816);
  CHECK(dec.gate_mm.made_params == 285696);
  // The SwiGLU point for comparison: three 160,704 B gradients, the product freed, down's weight made.
  CHECK(dec.swiglu.extra == 482112);
  CHECK(dec.swiglu.made_params == 95232);
  // Under LoRA the frozen base makes no weight gradients: no such point.
  CHECK_FALSE(decoder_backward_bytes(config_from(R"({"model_implementation": "hf-transformers", "framework": "ddp",
      "num_layers": 2, "hidden_size": 192, "num_attention_heads": 12, "num_query_groups": 1, "kv_channels": 16,
      "ffn_hidden_size": 496, "vocab_size": 300, "gated_linear_unit": true, "activation_func": "silu",
      "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 27, "micro_batch_size": 3,
      "params_dtype": "fp32", "compute_dtype": "fp32", "attention_backend": "unfused", "hidden_dropout": 0,
      "peft": "lora", "lora_rank": 4, "lora_target_modules": ["q_proj"]})")).gate_mm.extra > 0);
}

TEST_CASE("the final RMSNorm's PowBackward0 under LoRA and in 16 bits", "[finetune][peft][backward]") {
  // transformers' Llama in fp32 (the allocation timeline oracle's seed 1 c11 shape): h 256,
  // 3 × 85 = 255 tokens, LoRA r 8 on v, gate, up and down. The frozen norm weight's MulBackward0
  // writes the normalised output's gradient as a trained one writes its weight's and the output's:
  // the walk is the same. At PowBackward0: the norm's input, which pow saved, 4 · 255 · 256 =
  // 261,120 B, beside five fp32 T·h gradients, 5 · 261,120 = 1,305,600 B: 1,566,720 B.
  const std::string base = R"({"model_implementation": "hf-transformers", "framework": "ddp", "num_layers": 2,
      "hidden_size": 256, "num_attention_heads": 4, "num_query_groups": 4, "kv_channels": 64, "ffn_hidden_size": 704,
      "vocab_size": 112, "make_vocab_size_divisible_by": 1, "gated_linear_unit": true, "activation_func": "silu",
      "normalization": "RMSNorm", "add_bias_linear": false, "seq_length": 85, "micro_batch_size": 3,
      "params_dtype": "fp32", "compute_dtype": "fp32", "attention_backend": "unfused", "hidden_dropout": 0)";
  CHECK(output_backward_bytes(config_from(base + R"(, "peft": "lora", "lora_rank": 8,
      "lora_target_modules": ["v_proj", "gate_proj", "up_proj", "down_proj"]})")).final_norm == 1566720);
  CHECK(output_backward_bytes(config_from(base + "}")).final_norm == 1566720);
  // In bf16 the norm upcasts its input (x.float(), the fp32 copy pow saves: the same 261,120 B)
  // and casts the result back: the cast's backward runs before the walked nodes, x.float()'s after
  // PowBackward0, so the point holds the same five fp32 T·h: 1,566,720 B (the oracle's seed 21 c15,
  // seed 5 c15, seed 1 c23).
  CHECK(output_backward_bytes(config_from(base + R"(, "params_dtype": "bf16", "compute_dtype": "bf16"})")).final_norm == 1566720);
}

TEST_CASE("attention dropout's backward: NativeDropoutBackward0 before the softmax's", "[finetune][backward]") {
  // transformers' eager attention in fp32, trained whole: 4 heads of 16, 2 × 73 = 146 tokens, s 73,
  // attention_dropout 0.1. BmmBackward0 writes the values' gradient 4 · 4 · 16 · 146 = 37,376 B
  // and the dropped probabilities' 4 · scores (scores = 4 · 146 · 73 = 42,632); native_dropout_backward
  // writes grad · mask and its product by the scale, two more 4 · scores: 37,376 + 3 · 170,528 =
  // 548,960 B, the bool mask (42,632 B) still saved, so freed by then: the softmax point's less it.
  const Config c = config_from(R"({"model_implementation": "hf-transformers", "framework": "ddp", "num_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "num_query_groups": 4, "kv_channels": 16, "ffn_hidden_size": 200,
      "vocab_size": 413, "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
      "add_bias_linear": false, "seq_length": 73, "micro_batch_size": 2, "params_dtype": "fp32",
      "compute_dtype": "fp32", "attention_backend": "unfused", "hidden_dropout": 0, "attention_dropout": 0.1})");
  const DecoderBackward dec = decoder_backward_bytes(c);
  REQUIRE(dec.modelled);
  CHECK(dec.attention_dropout.extra == 548960);
  CHECK(dec.attention_dropout.freed == dec.softmax.freed - 42632);
  CHECK(dec.attention_dropout.made_params == dec.softmax.made_params);
  // The softmax's point, for comparison: the values' gradient and two fp32 score-sized gradients.
  CHECK(dec.softmax.extra == 37376 + 8 * 42632);
}
