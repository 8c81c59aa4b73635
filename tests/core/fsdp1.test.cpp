// FSDP1 (fsdp_version 1: torch's FullyShardedDataParallel) against FSDP2 (fully_shard), and the
// reserved figure's default (the larger of the 5 % factor and the simulated caching allocator).
// Every difference worked out by hand from the rules in docs/trainmem-profile.md ("FSDP1").
#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// k_small_llama on 2 GPUs under fsdp2 full shard, pure bf16 (weights, gradients and AdamW states
// bf16, no master: the reduce dtype equals the parameters'), no recomputation, no runtime
// overheads beyond the allocator's.
std::string pure_bf16(const std::string& more) {
  return small_llama(R"("framework": "fsdp2", "zero_stage": 3, "data_parallel_size": 2, "params_dtype": "bf16",
      "master_weights": false, "main_grads_dtype": "bf16", "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16",
      "optimizer": "adamw", "model_implementation": "hf-transformers")" + (more.empty() ? "" : ", " + more));
}

}  // namespace

TEST_CASE("fsdp1: one gathered unit in forward, two in backward, no reduce copy in the same dtype", "[fsdp1]") {
  // One decoder layer of k_small_llama: attention 4 · 1024² = 4,194,304, SwiGLU MLP
  // 3 · 1024 · 4096 = 12,582,912, two RMSNorm weights 2 · 1024 = 2,048: P = 16,779,264
  // parameters, 2 B each in bf16: a gathered unit is 33,558,528 B, its unsharded gradient too.
  constexpr double P = 16779264, unit = 2 * P;
  const Estimate two = estimate_of(pure_bf16(R"("fsdp_version": 2)"));
  const Estimate one = estimate_of(pure_bf16(R"("fsdp_version": 1)"));
  // FSDP2 holds from forward to backward two gathered units (2 · unit) and a unit's unsharded
  // gradient with its reduce_dtype copy (2 · unit). FSDP1 holds one gathered unit in forward (no
  // forward prefetch; the previous one freed with record_stream) and no reduce copy (the cast
  // to reduce_dtype happens only when the dtypes differ): forward 2 · unit less.
  CHECK(two.moments.forward - one.moments.forward == Approx(2 * unit).margin(1));
  // Backward: FSDP1's BACKWARD_PRE prefetch brings the second gathered unit back: only the reduce
  // copy (one unit's bytes) is missing.
  CHECK(two.moments.backward - one.moments.backward == Approx(unit).margin(1));
}

TEST_CASE("fsdp1: a reduce dtype other than the parameters' keeps the copy", "[fsdp1]") {
  // bf16 parameters with fp32 gradients (main_grads_dtype fp32 = reduce_dtype): FSDP1 casts the
  // unsharded bf16 gradient to fp32 as FSDP2 does, so the backward moments agree and the forward
  // differs by the one gathered unit (2 B · P).
  constexpr double P = 16779264;
  const std::string fp32_grads = R"("main_grads_dtype": "fp32")";
  const Estimate two = estimate_of(pure_bf16(fp32_grads + R"(, "fsdp_version": 2)"));
  const Estimate one = estimate_of(pure_bf16(fp32_grads + R"(, "fsdp_version": 1)"));
  CHECK(two.moments.forward - one.moments.forward == Approx(2 * P).margin(1));
  CHECK(two.moments.backward == Approx(one.moments.backward).margin(1));
}

TEST_CASE("fsdp_version: applies to fsdp2 only, and not with pipelining", "[fsdp1]") {
  const std::vector<std::string> ddp = messages_for(small_llama(R"("framework": "ddp", "fsdp_version": 1)"));
  REQUIRE(ddp.size() == 1);
  CHECK(ddp[0] == "fsdp_version: applies to fsdp2 only");
  const std::vector<std::string> pp = messages_for(pure_bf16(R"("fsdp_version": 1, "pipeline_model_parallel_size": 2)"));
  REQUIRE(pp.size() == 1);
  CHECK(pp[0] == "fsdp_version: 1 (FullyShardedDataParallel) is not modelled with pipeline_model_parallel_size above 1 "
                 "(torch.distributed.pipelining runs with fully_shard, fsdp_version 2)");
  CHECK(messages_for(pure_bf16(R"("fsdp_version": 3)")).size() == 1);
}

TEST_CASE("reserved: unset fragmentation takes the larger of the factor and the simulation", "[fsdp1][reserved]") {
  // The definition, checked against the two overrides: 0.05 gives the factor alone
  // (max(allocated, moments with every gradient) × 1.05), 0 the simulation alone (never below
  // those moments); unset is the larger of the two, for FSDP2 and FSDP1 alike.
  for (const char* version : {"1", "2"}) {
    const std::string v = std::string(R"("fsdp_version": )") + version;
    const Estimate unset = estimate_of(pure_bf16(v));
    const Estimate factor = estimate_of(pure_bf16(v + R"(, "allocator_fragmentation": 0.05)"));
    const Estimate simulated = estimate_of(pure_bf16(v + R"(, "allocator_fragmentation": 0)"));
    CHECK(unset.reserved_bytes == std::max(factor.reserved_bytes, simulated.reserved_bytes));
    CHECK(unset.total_bytes == factor.total_bytes);
    CHECK(unset.reserved_bytes >= unset.total_bytes * 1.05);
  }
}

TEST_CASE("reserved: FSDP1's record_stream'ed units reserve more than FSDP2's gathered pair", "[fsdp1][reserved]") {
  // The simulated allocator alone (fragmentation 0): FSDP1 allocates each unit on the unshard
  // stream, freed after use, with at most two all-gathers in flight: three unit-sized blocks of
  // that stream in backward (the caching_allocator case "FSDP1's backward prefetch"), where
  // FSDP2's pair sits in one default-stream buffer. Its allocated peak is lower (one unit less
  // in forward, no reduce copy): reserved over allocated grows.
  const Estimate two = estimate_of(pure_bf16(R"("fsdp_version": 2, "allocator_fragmentation": 0)"));
  const Estimate one = estimate_of(pure_bf16(R"("fsdp_version": 1, "allocator_fragmentation": 0)"));
  CHECK(one.total_bytes < two.total_bytes);
  CHECK(one.reserved_bytes - one.total_bytes > two.reserved_bytes - two.total_bytes);
}

TEST_CASE("reserved: expandable segments, the run's PYTORCH_CUDA_ALLOC_CONF, reach the simulated allocator",
          "[reserved][expandable_segments]") {
  // Derived: torchtitan's launcher sets it (resolve.cpp cites run_train.sh), the other frameworks'
  // leave PyTorch's default; a run's own setting wins.
  const std::string titan = R"("framework": "fsdp2", "data_parallel_size": 2, "model_implementation": "torchtitan")";
  CHECK(config_from(small_llama(titan)).expandable_segments);
  CHECK_FALSE(config_from(small_llama(titan + R"(, "expandable_segments": false)")).expandable_segments);
  CHECK_FALSE(config_from(pure_bf16(R"("fsdp_version": 1)")).expandable_segments);
  CHECK(config_from(pure_bf16(R"("fsdp_version": 1, "expandable_segments": true)")).expandable_segments);
  // The simulation alone (fragmentation 0) over FSDP1's run above, whose record_stream'ed units
  // leave unit-sized blocks cached on the unshard stream: with expandable segments each pool and
  // stream maps pages at the end of one segment (the caching_allocator cases "expandable segments
  // grow in pages" and "are one per stream"), so reserved falls while allocated stays.
  const Estimate off = estimate_of(pure_bf16(R"("fsdp_version": 1, "allocator_fragmentation": 0)"));
  const Estimate on = estimate_of(pure_bf16(R"("fsdp_version": 1, "allocator_fragmentation": 0, "expandable_segments": true)"));
  CHECK(on.total_bytes == off.total_bytes);
  CHECK(on.reserved_bytes < off.reserved_bytes);
  CHECK(on.reserved_bytes >= on.total_bytes);
}

// The two wrap cases' run, without its closing brace: a model whose root unit (embedding and
// output layer, 128 MiB each) dwarfs its two layers, LoRA on q and v, FSDP1 full shard over 2 GPUs.
const std::string k_big_root_lora = R"({"profile": "trainmem", "framework": "fsdp2", "fsdp_version": 1, "zero_stage": 3,
    "data_parallel_size": 2, "model_implementation": "hf-transformers", "num_layers": 2, "hidden_size": 256,
    "num_attention_heads": 4, "num_query_groups": 4, "ffn_hidden_size": 512, "vocab_size": 262144,
    "share_embeddings_and_output_weights": false, "gated_linear_unit": true, "activation_func": "silu",
    "normalization": "RMSNorm", "add_bias_linear": false, "params_dtype": "bf16", "compute_dtype": "bf16",
    "master_weights": false, "main_grads_dtype": "bf16", "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16",
    "optimizer": "adamw", "attention_backend": "flash", "attention_dropout": 0, "hidden_dropout": 0,
    "peft": "lora", "lora_rank": 8, "lora_target_modules": ["q_proj", "v_proj"], "lora_dropout": 0,
    "seq_length": 16, "micro_batch_size": 1, "global_batch_size": 2)";

TEST_CASE("FSDP1's wrap leaves its blocks reserved, and the root is unsharded on the unshard stream",
          "[fsdp1][allocator]") {
  // A model whose root unit (embedding and output layer) dwarfs its layers: 2 layers of h = 256
  // (4 heads of 64, SwiGLU f = 512), vocabulary 262,144 untied, bf16, LoRA r 8 on q and v, FSDP1
  // full shard over 2 GPUs, one sequence of 16 tokens. The embedding and the output layer are
  // each 262,144 · 256 · 2 = 134,217,728 B = 128 MiB; the final norm 512 B.
  // The wrap (fsdp1_wrap_units; docs/trainmem-profile.md §4): the root comes last. Its two
  // tensors arrive on the GPU whole, 128 MiB each, each a segment of its own (above 10 MiB a
  // request is its own segment, rounded to 2 MiB); the flat parameter, 256 MiB + 512 B, needs a
  // new 258 MiB segment; the shard, half of it, a new 130 MiB one. Then the flat parameter and
  // the originals are freed but stay reserved: 128 + 128 + 258 + 130 = 644 MiB.
  // The step: the root's unsharded flat parameter (258 MiB) is allocated on the unshard stream,
  // whose requests cannot take the default stream's cached blocks: a new 258 MiB segment.
  //   at least 644 + 258 = 902 MiB.
  // The rest can add at most: the layers' flat parameters (1,311,744 B each, one 20 MiB segment
  // on the default stream at the wrap, one or two on the unshard stream in the step), the small
  // pool's 2 MiB segments (every other layer tensor is under 1 MiB), and nothing for the
  // activations and the loss (16 tokens: fp32 logits 16 MiB, which the cached 128 MiB blocks
  // hold): below 902 + 20 + 40 + 8 = 970 MiB.
  // Without the wrap and with the root on the default stream, the step alone reserves about
  // the allocated peak (about 531 MiB here).
  const std::string json = k_big_root_lora + "}";
  constexpr double MiB = 1024.0 * 1024;
  const FullEstimate fsdp1 = full_estimate(config_from(json));
  CHECK(fsdp1.reserved_bytes >= 902 * MiB);
  CHECK(fsdp1.reserved_bytes < 970 * MiB);
  // train.py resets the peak statistics after the wrap: the allocated figure is the step's.
  CHECK(fsdp1.total_bytes < 644 * MiB);
  // FSDP2 (fully_shard) has no such wrap: its reserved stays near its allocated peak.
  std::string fsdp2 = json;
  fsdp2.replace(fsdp2.find(R"("fsdp_version": 1)"), 17, R"("fsdp_version": 2)");
  const FullEstimate two = full_estimate(config_from(fsdp2));
  CHECK(two.reserved_bytes < 644 * MiB);
}

TEST_CASE("FSDP1 with CPUOffload copies each unit's shard to the GPU on a stream of its own",
          "[fsdp1][allocator]") {
  // The run of the case above with offload_params. The wrap makes the same segments (the shard,
  // moved to the CPU at once, still took its 130 MiB segment): 644 MiB. Each unshard first
  // copies the unit's CPU shard to the GPU on the pre-unshard stream (_flat_param.py
  // pre_unshard, flat_param_to(device)) and frees it once the all-gather's output replaces it:
  // the root's, 128 MiB + 256 B, is a 130 MiB segment of that stream, beside the root's
  // unsharded 258 MiB on the unshard stream.
  //   at least 644 + 258 + 130 = 1,032 MiB,
  // and the rest as above (the layers' shard copies, 0.6 MiB, are split from the root's block or
  // a 2 MiB small segment): below 1,032 + 68 = 1,100 MiB.
  const std::string json = k_big_root_lora + R"(, "offload_params": true})";
  constexpr double MiB = 1024.0 * 1024;
  const FullEstimate offloaded = full_estimate(config_from(json));
  CHECK(offloaded.reserved_bytes >= 1032 * MiB);
  CHECK(offloaded.reserved_bytes < 1100 * MiB);
}

TEST_CASE("Megatron's DDP buffers: the parameters move into param_data, their old blocks stay reserved",
          "[megatron][allocator]") {
  // Megatron-LM param_and_grad_buffer.py @ 001199898c (docs/trainmem-profile.md §5): the model is
  // built with each parameter a tensor of its own; DDP then allocates grad_data (fp32 here) and,
  // with the distributed optimizer, param_data (bf16), copies each parameter in and frees the
  // original; the fp32 main parameters come after. A model whose embedding and output layer
  // dwarf its layers: 2 layers of h = 256 (4 heads of 64, SwiGLU f = 512), vocabulary 262,144
  // untied, bf16 weights, fp32 main parameters, gradients and Adam states, one GPU, one sequence
  // of 16 tokens; the simulated allocator alone (allocator_fragmentation 0). Embedding and output
  // layer: 262,144 · 256 = 67,108,864 elements each, 128 MiB in bf16, each its own segment (above
  // 10 MiB a request is a segment of its own, rounded to 2 MiB); the layers about 1.3 M elements
  // more (the buffers: 258.5 MiB bf16, 517 MiB fp32, each one segment rounded up to 2 MiB).
  // With the distributed optimizer the segments that stay:
  //   the originals 2 · 128 = 256 MiB (freed, cached: the fp32 copies below are larger),
  //   param_data 260 MiB, grad_data 518 MiB,
  //   the main parameters of the embedding and output layer, 256 MiB each in fp32: 512 MiB,
  //   their Adam states, four of 256 MiB: 1,024 MiB;
  //   at least 256 + 260 + 518 + 512 + 1,024 = 2,570 MiB, and what the rest adds (the layers'
  //   tensors in 2 MiB segments, the 16 tokens' 16 MiB fp32 logits in a cached original) below
  //   2,570 + 40 = 2,610 MiB.
  // Without it the parameters stay where they were built (256 MiB, live) and no param_data is
  // made: at least 256 + 518 + 512 + 1,024 = 2,310 MiB. The allocated peak is the same (one GPU:
  // both keep every element once in each class).
  const std::string base = R"({"profile": "trainmem", "framework": "megatron", "num_layers": 2, "hidden_size": 256,
    "num_attention_heads": 4, "ffn_hidden_size": 512, "vocab_size": 262144, "make_vocab_size_divisible_by": 128,
    "share_embeddings_and_output_weights": false, "swiglu": true, "normalization": "RMSNorm",
    "add_bias_linear": false, "params_dtype": "bf16", "attention_dropout": 0, "hidden_dropout": 0,
    "seq_length": 16, "micro_batch_size": 1, "global_batch_size": 1, "data_parallel_size": 1,
    "allocator_fragmentation": 0, "use_distributed_optimizer": )";
  constexpr double MiB = 1024.0 * 1024;
  const FullEstimate plain = full_estimate(config_from(base + "false}"));
  const FullEstimate sharded = full_estimate(config_from(base + "true}"));
  CHECK(sharded.total_bytes == plain.total_bytes);
  CHECK(sharded.reserved_bytes >= 2570 * MiB);
  CHECK(sharded.reserved_bytes < 2610 * MiB);
  CHECK(plain.reserved_bytes >= 2310 * MiB);
  CHECK(plain.reserved_bytes < sharded.reserved_bytes);
}

namespace {

// The small Llama (h = 1024, 8 heads, SwiGLU f = 4096, V = 32,000) with `layers` decoder layers,
// LoRA r 8 on q and v over a frozen bf16 base, FSDP1 full shard over 2 GPUs, transformers'
// checkpoint around every layer, one sequence of 4,096 tokens per microbatch and two
// microbatches per step (global batch 4 over DP 2), so the gradients live through the step and
// no moment leaves any out.
std::string fsdp1_lora(int layers, bool reentrant_around_units) {
  return R"({"profile": "trainmem", "framework": "fsdp2", "fsdp_version": 1, "zero_stage": 3, "data_parallel_size": 2,
      "model_implementation": "hf-transformers", "num_layers": )" + std::to_string(layers) + R"(,
      "hidden_size": 1024, "num_attention_heads": 8, "ffn_hidden_size": 4096, "vocab_size": 32000,
      "normalization": "RMSNorm", "swiglu": true, "add_bias_linear": false, "attention_dropout": 0,
      "hidden_dropout": 0, "attention_backend": "flash", "params_dtype": "bf16", "compute_dtype": "bf16",
      "peft": "lora", "lora_rank": 8, "lora_target_modules": ["q_proj", "v_proj"], "lora_dropout": 0,
      "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
      "seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 4, "gpus_per_node": 2,
      "fsdp1_checkpoint_around_unit": )" + (reentrant_around_units ? "true" : "false") + "}";
}

}  // namespace

TEST_CASE("FSDP1's reshard-only hooks keep every checkpointed input and its gradient through backward",
          "[fsdp1][backward]") {
  // One layer's checkpointed input, and its gradient, is the bf16 residual stream of the
  // sequence: 4,096 tokens × 1,024 × 2 B = 8,388,608 B.
  constexpr double g = 4096.0 * 1024 * 2;
  // With 8 layers the first layer's backward holds the 7 input gradients of the layers above it
  // (trainmem.fsdp1_kept_input_gradients).
  Trace trace;
  const FullEstimate eight = full_estimate(config_from(fsdp1_lora(8, true)), &trace);
  CHECK(trace_value(trace, "trainmem.fsdp1_kept_input_gradients") == 7 * g);
  // BACKWARD_PRE with the adapters in units of their own: the layer below is gathered from
  // q_proj's LoRA branch on, so the walked points before it hold one decoder unit, not two. The
  // unit left out: a layer's frozen base in bf16, 16,779,264 · 2 = 33,558,528 B, and its adapters,
  // r 8 on q and v, 2 · 8 · (1,024 + 1,024) = 32,768 parameters in bf16 (fsdp2's adapter dtype is
  // the parameters'), 65,536 B: 33,624,064 B.
  CHECK(trace_value(trace, "trainmem.fsdp1_late_prefetch_unit") == 33558528.0 + 65536.0);
  // A ninth layer adds to the end of the forward its checkpointed input (g) and its state; to
  // the first layer's backward, where every input is still held, its input and the gradient of
  // its input (2g) and the same state. So the backward grows by g more than the forward. (The
  // kept point is the backward's largest at 8 layers: 7 gradients against the top layer's one
  // incoming gradient at the same walked point.)
  const FullEstimate nine = full_estimate(config_from(fsdp1_lora(9, true)));
  CHECK((nine.moments.backward - eight.moments.backward) - (nine.moments.forward - eight.moments.forward) ==
        Approx(g).margin(1));
  // Checkpointed inside the units (or not by FSDP1's hooks' reach), each layer's input is freed
  // by the time backward reaches the first layer: a ninth layer grows both moments alike.
  const FullEstimate eight_inside = full_estimate(config_from(fsdp1_lora(8, false)));
  const FullEstimate nine_inside = full_estimate(config_from(fsdp1_lora(9, false)));
  CHECK((nine_inside.moments.backward - eight_inside.moments.backward) -
            (nine_inside.moments.forward - eight_inside.moments.forward) ==
        Approx(0).margin(1));
  // And the kept moment lies above the backward without the hooks: at a walked point of the
  // first layer it holds the 7 gradients where the top layer's same point holds the one incoming
  // gradient (6g more). Without the field the backward is the coarser last-layer end (the walk
  // runs under ddp and with the kept inputs only), so this is a bound, with 3g of slack.
  CHECK(eight.moments.backward >= eight_inside.moments.backward + 7 * g - g - 3 * g);
}

TEST_CASE("fsdp1_checkpoint_around_unit: FSDP1 with full recompute only", "[fsdp1][refused]") {
  const std::vector<std::string> fsdp2 = messages_for(pure_bf16(
      R"("recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1, )"
      R"("fsdp1_checkpoint_around_unit": true)"));
  REQUIRE(fsdp2.size() == 1);
  CHECK(fsdp2[0] == "fsdp1_checkpoint_around_unit: applies with fsdp_version 1 only");
  const std::vector<std::string> none = messages_for(pure_bf16(R"("fsdp_version": 1, "fsdp1_checkpoint_around_unit": true)"));
  REQUIRE(none.size() == 1);
  CHECK(none[0] == "fsdp1_checkpoint_around_unit: needs recompute_granularity \"full\" (a checkpoint around each "
                   "decoder layer), got \"none\"");
}

TEST_CASE("fsdp1_checkpoint_around_unit: transformers' gradient_checkpointing by default, kept inputs only when reentrant",
          "[fsdp1][backward]") {
  // Unset, a Hugging Face model under FSDP1 with full recompute is checkpointed around each unit
  // (transformers' gradient_checkpointing wraps decoder_layer.__call__); other implementations
  // (torchtune's checkpoint_wrapper inside its units) are not.
  std::string hf = fsdp1_lora(8, true);
  const size_t key = hf.find(R"("fsdp1_checkpoint_around_unit")");
  REQUIRE(key != std::string::npos);
  const size_t comma = hf.rfind(',', key);
  hf.erase(comma, hf.find('}', key) - comma);
  CHECK(config_from(hf).fsdp1_checkpoint_around_unit);
  CHECK(config_from(hf).checkpoint_reentrant);
  // A non-reentrant checkpoint recomputes from the layer's original input, no leaf: FSDP1's
  // hooks keep nothing, so the estimate is the one with the checkpoint inside the units.
  std::string non = fsdp1_lora(8, true);
  non.insert(non.size() - 1, R"(, "checkpoint_reentrant": false)");
  std::string inside_non = fsdp1_lora(8, false);
  inside_non.insert(inside_non.size() - 1, R"(, "checkpoint_reentrant": false)");
  CHECK(full_estimate(config_from(non)).moments.backward ==
        full_estimate(config_from(inside_non)).moments.backward);
  Trace trace;
  full_estimate(config_from(non), &trace);
  for (const TraceEntry& e : trace) CHECK(e.name != "trainmem.fsdp1_kept_input_gradients");
}
