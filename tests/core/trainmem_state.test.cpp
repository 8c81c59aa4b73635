// Model state in the trainmem profile: each framework's byte model, precisions, optimizers and
// offload, as golden rows worked out by hand, and the properties the byte model must keep.
#include "support.hpp"
#include "trainmem/tables.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

namespace {

// A small dense model: 2 layers, h 64, 4 heads (k 16), GELU MLP f 256, vocab 1000, tied,
// LayerNorm, no linear biases. Per layer: norms 2·2·64 = 256, QKV 64·192 = 12,288, output
// 64·64 = 4,096, fc1 64·256 = 16,384, fc2 256·64 = 16,384: 49,408. Two layers 98,816, final
// norm 128. Embedding: Megatron pads the vocabulary to 1,024 rows (65,536 parameters, 164,480 in
// all); PyTorch frameworks keep 1,000 rows (64,000; 162,944 in all, the model's own count).
constexpr double k_megatron_params = 164'480;
constexpr double k_torch_params = 162'944;
constexpr double k_linear_params = 2 * (12'288 + 4'096 + 16'384 + 16'384);  // 98,304

std::string small(const std::string& extra) {
  return R"({"profile": "trainmem", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "ffn_hidden_size": 256, "vocab_size": 1000, "add_bias_linear": false, "seq_length": 128,
      "micro_batch_size": 1)" + (extra.empty() ? "" : ", " + extra) + "}";
}

Estimate state_of(const std::string& json) {
  return estimate_training_memory(config_from(json), 0, /*include_activation=*/false);
}

}  // namespace

TEST_CASE("trainmem counts the model's own parameters", "[trainmem][params]") {
  const Estimate est = state_of(small(""));
  CHECK(est.params.total == k_torch_params);
  CHECK(est.params.per_gpu == k_megatron_params);  // Megatron allocates the padded rows
}

TEST_CASE("megatron: the precision-aware optimizer keeps a bf16 weight's master as 16-bit remainders",
          "[trainmem][golden][megatron][remainders]") {
  // Transformer Engine's FusedAdam with store_param_remainders keeps an int16 per master element
  // beside the bf16 weight (fused_adam.py @ v2.8 _initialize_state), where Megatron's own main
  // params are fp32.
  const std::string sharded = R"("use_distributed_optimizer": true, "data_parallel_size": 4)";
  SECTION("bf16 weights, DP 4: master 2/4 B, not 4/4 B: 2 + 4 + (2 + 8)/4 = 8.5 B per parameter") {
    const Estimate est = state_of(small(sharded + R"(, "store_param_remainders": true)"));
    CAPTURE(est);
    // 164,480 parameters × 2 B / 4 ranks = 82,240 B of masters (164,480 fp32 masters would be 164,480 B).
    CHECK(est.state.master_weights.total() == 82'240);
    CHECK(est.weight_and_optimizer_bytes == 8.5 * k_megatron_params);
  }
  SECTION("off by default (Megatron Core before 0.11 or Transformer Engine before 2.1 kept fp32): 9 B") {
    CHECK(state_of(small(sharded)).weight_and_optimizer_bytes == 9 * k_megatron_params);
  }
  SECTION("a blockwise FP8 recipe: Megatron builds fp32 main params itself, whole: FP8 weights 1 + 1 B") {
    // Linear weights as FP8 with their columnwise copy (2 B), the embedding and norms bf16
    // (164,480 - 98,304 = 66,176 × 2 B); 4 B gradients; (4 + 8)/4 = 3 B of master and states.
    const Estimate est = state_of(small(sharded + R"(, "store_param_remainders": true, "fp8_recipe": "blockwise",
        "fp8_param_gather": true)"));
    CHECK(est.state.master_weights.total() == k_megatron_params);  // 4 B / 4 ranks each
  }
  SECTION("delayed FP8 weights keep their fp32 master; the bf16 embedding and norms take remainders") {
    const Estimate est = state_of(small(sharded + R"(, "store_param_remainders": true, "fp8_recipe": "delayed",
        "fp8_param_gather": true)"));
    // 98,304 × 4 / 4 + 66,176 × 2 / 4 = 98,304 + 33,088 = 131,392 B.
    CHECK(est.state.master_weights.total() == 131'392);
  }
  SECTION("fp32 weights, bf16 main params or the optimizer offloaded (its masters on the CPU): no remainders") {
    CHECK(state_of(small(sharded + R"(, "store_param_remainders": true, "params_dtype": "fp32")"))
              .state.master_weights.total() == 0);
    // bf16 main params: the bf16 weight is its own master, no copy at all.
    CHECK(state_of(small(sharded + R"(, "store_param_remainders": true, "main_params_dtype": "bf16")"))
              .state.master_weights.total() == 0);
    const Estimate offloaded = state_of(small(sharded + R"(, "store_param_remainders": true,
        "optimizer_offload_fraction": 0.5)"));
    CHECK(offloaded.state.master_weights.total() == 4 * k_megatron_params / 4 * 0.5);
  }
  SECTION("not Megatron's: DeepSpeed keeps fp32 masters") {
    const Estimate ds = state_of(small(R"("framework": "deepspeed", "zero_stage": 1, "data_parallel_size": 4,
        "store_param_remainders": true)"));
    CHECK(ds.state.master_weights.total() == 4 * k_torch_params / 4);  // PyTorch's 1,000 rows
  }
}

TEST_CASE("megatron: FusedAdam steps bf16 moments through fp32 copies of a whole param group",
          "[trainmem][golden][megatron][fused_adam]") {
  // Transformer Engine's FusedAdam (fused_adam.py @ v2.8 step): each non-fp32 moment of every
  // parameter of a group is copied to fp32 (state.float()) and kept until the group's kernel has
  // run; each bf16 moment is then written back through a bf16 copy, one parameter at a time.
  // Megatron's group of matrices holds the linear weights (98,304) and the padded tied embedding
  // (65,536): 163,840 elements; the norms' 640 are the other group. The step's other
  // temporaries are the same with fp32 moments, so the difference of (step − state) is the copies.
  auto step_extra = [](const std::string& fields) {
    const Estimate est = state_of(small(fields));
    return est.moments.optimizer_step - est.weight_and_optimizer_bytes;
  };
  const std::string dp4 = R"("use_distributed_optimizer": true, "data_parallel_size": 4)";
  const double fp32_moments = step_extra(dp4);
  SECTION("both moments bf16, DP 4: 2 × 4 B × 163,840 / 4 + 2 B × 65,536 / 4 = 327,680 + 32,768") {
    CHECK(step_extra(dp4 + R"(, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")") - fp32_moments == 360'448);
  }
  SECTION("only the first moment bf16: 4 B × 40,960 + 32,768 = 196,608") {
    CHECK(step_extra(dp4 + R"(, "exp_avg_dtype": "bf16")") - fp32_moments == 196'608);
  }
  SECTION("one GPU, no sharding: 8 B × 163,840 + 2 B × 65,536 = 1,441,792") {
    CHECK(step_extra(R"("exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")") - step_extra("") == 1'441'792);
  }
  SECTION("not counted with the optimizer offloaded (HybridDeviceOptimizer, not read)") {
    const std::string offloaded = dp4 + R"(, "optimizer_offload_fraction": 1)";
    CHECK(step_extra(offloaded + R"(, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")") ==
          step_extra(offloaded));
  }
}

TEST_CASE("megatron: FusedAdam's copies of many layers stay within the simulated allocator's event bound",
          "[trainmem][megatron][fused_adam][reserved]") {
  // The allocator's sequence takes a stage's layers together in groups beyond k_max_events; the
  // FusedAdam copies (one per matrix and narrow moment) do the same. Unbounded, a stage of a
  // million layers made tens of millions of events and ran the wasm module out of memory (a
  // tampered link with mtp_num_layers 982,355: tests/wasm/views.test.mjs, seed 661241347).
  // Grouped, the estimate is made, and the simulated reserved figure still covers the peak.
  const std::string many = small(R"("num_layers": 200000, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")");
  const FullEstimate est = full_estimate(config_from(many));
  CHECK(est.moments.optimizer_step > 0);
  CHECK(est.reserved_bytes >= est.total_bytes);
  // The allocated figure counts every copy, grouped or not: the matrices' group is 200,000 layers
  // × 49,152 linear elements + the padded embedding's 65,536 = 9,830,465,536, two fp32 copies
  // each (8 B) and one bf16 write-back of the largest matrix (2 B × 65,536): 78,643,855,360 B.
  auto step_extra = [](const std::string& fields) {
    const Estimate e = state_of(small(fields));
    return e.moments.optimizer_step - e.weight_and_optimizer_bytes;
  };
  CHECK(step_extra(R"("num_layers": 200000, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")") -
            step_extra(R"("num_layers": 200000)") ==
        78'643'855'360.0);
}

TEST_CASE("megatron: bf16 weights and fp32 main gradients with master weights and Adam", "[trainmem][golden][megatron]") {
  SECTION("without the distributed optimizer: 2 + 4 + 4 + 8 = 18 B per parameter") {
    const Estimate est = state_of(small(""));
    CAPTURE(est);
    CHECK(est.state.weights.total() == 2 * k_megatron_params);
    CHECK(est.state.gradients.total() == 4 * k_megatron_params);
    CHECK(est.state.master_weights.total() == 4 * k_megatron_params);
    CHECK(est.state.optimizer_states.total() == 8 * k_megatron_params);
    CHECK(est.weight_and_optimizer_bytes == 18 * k_megatron_params);
    // The embedding part is the padded matrix: 65,536 × 18.
    CHECK(est.state.total() - est.state.weights.dense - est.state.gradients.dense -
              est.state.master_weights.dense - est.state.optimizer_states.dense ==
          65'536.0 * 18);
  }
  SECTION("with the distributed optimizer over DP 4: 6 + 12/4 = 9 B per parameter") {
    CHECK(state_of(small(R"("use_distributed_optimizer": true, "data_parallel_size": 4)")).weight_and_optimizer_bytes ==
          9 * k_megatron_params);
  }
  SECTION("context-parallel ranks join the optimizer shard: DP 2 × CP 2 gives the same 9 B") {
    CHECK(state_of(small(R"("use_distributed_optimizer": true, "data_parallel_size": 2,
        "context_parallel_size": 2)")).weight_and_optimizer_bytes == 9 * k_megatron_params);
  }
  SECTION("fp32 training keeps no master copy: 4 + 4 + 8 = 16 B") {
    CHECK(state_of(small(R"("params_dtype": "fp32")")).weight_and_optimizer_bytes == 16 * k_megatron_params);
  }
  SECTION("half of the sharded optimizer offloaded to CPU") {
    const Estimate est = state_of(small(R"("use_distributed_optimizer": true, "data_parallel_size": 4,
        "optimizer_offload_fraction": 0.5)"));
    // GPU: 2 + 4 + (4 + 8)/4 · 0.5 = 7.5 B; CPU per GPU 1.5 B. The run's 4 GPUs share one node
    // (of 8): 6 B per node. On 16 GPUs (two full nodes) each GPU offloads (4 + 8)/16 · 0.5 =
    // 0.375 B: 3 B per node of 8.
    CHECK(est.weight_and_optimizer_bytes == 7.5 * k_megatron_params);
    CHECK(est.cpu_bytes == 6 * k_megatron_params);
    const Estimate two_nodes = state_of(small(R"("use_distributed_optimizer": true, "data_parallel_size": 16,
        "optimizer_offload_fraction": 0.5)"));
    CHECK(two_nodes.cpu_bytes == 3 * k_megatron_params);
  }
  SECTION("FP8 with delayed scaling caches an FP8 weight and its transpose per linear layer") {
    // 2 × 1 B × 98,304 linear parameters on top of the 18 B model.
    CHECK(state_of(small(R"("fp8_recipe": "delayed")")).weight_and_optimizer_bytes ==
          18 * k_megatron_params + 2 * k_linear_params);
  }
  SECTION("MXFP8 copies carry one scale byte per 32 elements") {
    CHECK(state_of(small(R"("fp8_recipe": "mxfp8")")).state.weight_copies.total() ==
          2 * k_linear_params * 33 / 32);
  }
}

TEST_CASE("deepspeed: the reduce bucket (contiguous_gradients, reduce_bucket_size, overlap_comm)", "[trainmem][golden][deepspeed]") {
  // DeepSpeed's defaults: contiguous_gradients true, reduce_bucket_size 5e8, overlap_comm true
  // at stage 3 only (zero/config.py).
  const auto zero = [](const std::string& extra) {
    return config_from(small(R"("framework": "deepspeed", "data_parallel_size": 4, )" + extra));
  };
  CHECK(zero(R"("zero_stage": 3)").overlap_comm);
  CHECK_FALSE(zero(R"("zero_stage": 2)").overlap_comm);
  CHECK_FALSE(zero(R"("zero_stage": 3, "overlap_comm": false)").overlap_comm);
  CHECK(zero(R"("zero_stage": 3)").reduce_bucket_size == 5e8);
  SECTION("ZeRO-3 keeps one bucket in the 16-bit type all along (stage3.py __ipg_bucket_flat_buffer)") {
    // 1,000 elements × 2 B = 2,000 B beside the gathered module's 256,000.
    const Estimate est = state_of(small(R"("framework": "deepspeed", "zero_stage": 3, "data_parallel_size": 4,
        "reduce_bucket_size": 1000)"));
    CHECK(est.state.buffers.total() == 258'000.0);
    // The default: 5e8 × 2 B = 1e9 B.
    CHECK(state_of(small(R"("framework": "deepspeed", "zero_stage": 3, "data_parallel_size": 4)")).state.buffers.total() ==
          256'000.0 + 1e9);
  }
  SECTION("ZeRO-1/2 allocate it for each backward pass, twice with overlap_comm (stage_1_and_2.py ipg_buffer)") {
    const auto backward = [](const std::string& extra) {
      const FullEstimate est = full_estimate(config_from(small(R"("framework": "deepspeed", "zero_stage": 2,
          "data_parallel_size": 4, "reduce_bucket_size": 1000000)" + extra)));
      return est.stages[0].moments.backward;
    };
    // One bucket: 1e6 × 2 B = 2e6 B; with overlap_comm two; without contiguous_gradients none.
    CHECK(backward(R"(, "overlap_comm": true)") - backward("") == 2e6);
    CHECK(backward("") - backward(R"(, "contiguous_gradients": false)") == 2e6);
  }
}

TEST_CASE("deepspeed: ZeRO stages agree with DeepSpeed's estimator", "[trainmem][golden][deepspeed]") {
  SECTION("ZeRO-2 over 4 ranks: 2P + 18P/4 (stage_1_and_2.py)") {
    const Estimate est = state_of(small(R"("framework": "deepspeed", "zero_stage": 2, "data_parallel_size": 4)"));
    CAPTURE(est);
    // 162,944 · 6.5 = 1,059,136 = 2·162,944 + int(18·162,944/4).
    CHECK(est.weight_and_optimizer_bytes == 1'059'136.0);
  }
  // DeepSpeed's estimator counts no reduce bucket: these sections turn contiguous_gradients off
  // (the bucket has a section of its own below).
  SECTION("ZeRO-3 over 4 ranks: 18P/4 plus the largest module gathered (4 B per parameter)") {
    const Estimate est = state_of(small(R"("framework": "deepspeed", "zero_stage": 3, "data_parallel_size": 4,
        "contiguous_gradients": false)"));
    // 733,248 + 4 · 64,000 (the embedding is the largest module) = 989,248.
    CHECK(est.weight_and_optimizer_bytes == 989'248.0);
    CHECK(est.state.buffers.total() == 256'000.0);
  }
  SECTION("ZeRO-1 shards the fp32 gradients, master weights and Adam only: 2 + 2 + 16/4") {
    CHECK(state_of(small(R"("framework": "deepspeed", "zero_stage": 1, "data_parallel_size": 4)")).weight_and_optimizer_bytes ==
          8 * k_torch_params);
  }
  SECTION("ZeRO-3 with the optimizer offloaded keeps only the 16-bit shard and the gathered module") {
    const Estimate est = state_of(small(R"("framework": "deepspeed", "zero_stage": 3, "data_parallel_size": 4,
        "optimizer_offload_fraction": 1, "contiguous_gradients": false)"));
    // GPU 2P/4 + 4·64,000 = 81,472 + 256,000; CPU per GPU (4 + 4 + 8)P/4 = 4P, ×4 (the run's GPUs
    // on its node).
    CHECK(est.weight_and_optimizer_bytes == 337'472.0);
    CHECK(est.cpu_bytes == 4 * 4 * k_torch_params);
    // By class: fp32 gradients 4P/4, master 4P/4 and Adam 8P/4 per GPU, ×4.
    CHECK(est.cpu.gradients == 4 * k_torch_params);
    CHECK(est.cpu.master_weights == 4 * k_torch_params);
    CHECK(est.cpu.optimizer_states == 8 * k_torch_params);
    CHECK(est.cpu.weights == 0);
    CHECK(est.cpu.activations == 0);
    CHECK(est.cpu.total() == est.cpu_bytes);
  }
}

TEST_CASE("fsdp2: sharded fp32 storage with bf16 compute copies of the current layers", "[trainmem][golden][fsdp2]") {
  const Estimate est = state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4)"));
  CAPTURE(est);
  // Sharded: fp32 master 4/4 + fp32 gradients 4/4 + Adam 8/4 = 4 B per parameter = 651,776.
  CHECK(est.state.master_weights.total() == k_torch_params);
  CHECK(est.state.gradients.total() == k_torch_params);
  CHECK(est.state.optimizer_states.total() == 2 * k_torch_params);
  // Buffers: the root group (the tied embedding, 64,000) stays unsharded in bf16, 128,000; the
  // current and prefetched layer (49,408 each) in bf16, 2·2·49,408 = 197,632; one layer's
  // unsharded gradient in bf16 and its fp32 reduce-scatter copy, (2 + 4)·49,408 = 296,448.
  CHECK(est.state.buffers.embedding == 128'000.0);
  CHECK(est.state.buffers.total() == 622'080.0);
  // The library workspaces (workspace_bytes, 96 MiB) are allocated through the caching
  // allocator and stay. The buffers live from the forward to the end of backward (FSDP2 reshards
  // after backward): the optimizer step holds the shards and torch's foreach Adam temporary, a
  // copy of exp_avg_sq (4 B × P/4), so the state peaks with the buffers. Backward adds the
  // root's unsharded output-layer gradient (the tied matrix in bf16, 2 B × 64,000 = 128,000),
  // which waits for the root's post-backward at the end of backward: the state peaks there.
  CHECK(est.moments.forward == 651'776.0 + 622'080.0 + 100'663'296.0);
  CHECK(est.moments.backward == est.moments.forward + 128'000.0);
  CHECK(est.moments.optimizer_step == 651'776.0 + k_torch_params + 100'663'296.0);
  CHECK(est.total_bytes == est.moments.backward);
  SECTION("CPUOffloadPolicy: the fp32 shards, their gradients and Adam in CPU memory, by class") {
    // Per GPU fp32 master 4P/4, fp32 gradients 4P/4, Adam 8P/4; ×4, the run's GPUs on its node.
    const Estimate off = state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "offload_params": true)"));
    CHECK(off.cpu.master_weights == 4 * k_torch_params);
    CHECK(off.cpu.gradients == 4 * k_torch_params);
    CHECK(off.cpu.optimizer_states == 8 * k_torch_params);
    CHECK(off.cpu_bytes == 16 * k_torch_params);
  }
  SECTION("fsdp_embedding_units: the embedding is gathered like a layer, not held by the root") {
    // torchtune custom_sharded_layers ['tok_embeddings', 'output']: the root holds nothing; the
    // tied embedding (64,000 params, 128,000 B in bf16) is the largest unit, gathered beside one
    // layer: 2·49,408 + 128,000 = 226,816; its unsharded gradient and fp32 copy (2 + 4)·64,000 =
    // 384,000 set the reduce-scatter: 610,816 (the root's way: 622,080).
    const Estimate units = state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "fsdp_embedding_units": true)"));
    CHECK(units.state.buffers.embedding == 0);
    CHECK(units.state.buffers.total() == 610'816.0);
    // Backward: the root's post-backward waits for the final callback (its input, the token ids,
    // needs no gradient), so the output layer's unsharded bf16 gradient, 2 B × 64,000 = 128,000,
    // is there through the whole backward; as a unit it is reduced as soon as it is made. With
    // the buffers' difference, 622,080 − 610,816 = 11,264: 139,264.
    CHECK(est.moments.backward - units.moments.backward == 139'264.0);
    CHECK(messages_for(small(R"("framework": "ddp", "fsdp_embedding_units": true)")) ==
          std::vector<std::string>{"fsdp_embedding_units: needs framework fsdp2 with zero_stage 3 "
                                   "(units resharded after their forward)"});
  }
  SECTION("zero_stage 2 keeps the gathered copy of every weight, with a master or without") {
    // reshard_after_forward=False: FSDP2 all-gathers each parameter into an unsharded tensor of
    // its own, in param_dtype, and keeps it from the forward to the end of backward, beside the
    // shard. bf16 compute: 2 B × 162,944 = 325,888 B.
    //   fp32 master (mixed precision): the weights row is the gathered copy alone, 325,888;
    //   pure bf16 (no master): the bf16 shard 2 B × 162,944 / 4 = 81,472 and the copy: 407,360.
    // No gathers are left to buffer: one layer's unsharded gradient and its fp32 reduce-scatter
    // copy, (2 + 4)·49,408 = 296,448.
    const Estimate mixed = state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "zero_stage": 2)"));
    const Estimate pure = state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "zero_stage": 2, "master_weights": false)"));
    CHECK(mixed.state.weights.total() == 325'888.0);
    CHECK(pure.state.weights.total() == 407'360.0);
    CHECK(mixed.state.buffers.total() == 296'448.0);
    CHECK(pure.state.buffers.total() == 296'448.0);
    // The copies are gone at the optimizer step: the pure-bf16 step holds the sharded state,
    //   bf16 weights 81,472 + gradients (reduce dtype fp32) 162,944 + Adam's fp32 states 8 B / 4
    //   = 325,888,
    // and foreach Adam's copy of the fp32 exp_avg_sq shards, 4 B × 162,944 / 4 = 162,944.
    CHECK(pure.moments.optimizer_step == 81'472.0 + 162'944.0 + 325'888.0 + 162'944.0 + 100'663'296.0);
  }
  SECTION("hybrid sharding over groups of 2 doubles the sharded state") {
    const Estimate hsdp = state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4,
        "data_parallel_shard_size": 2)"));
    CHECK(hsdp.state.optimizer_states.total() == 4 * k_torch_params);
  }
}

TEST_CASE("torch.optim implementations set the Adam step's temporaries", "[trainmem][golden][optimizer]") {
  // fsdp2 over DP 4 as above: at the step, sharded state 651,776 + workspaces 100,663,296 B (the
  // gathered buffers are gone); the step adds the temporaries of torch/optim/adam.py.
  const auto step = [](const std::string& implementation) {
    return state_of(small(R"("framework": "fsdp2", "data_parallel_size": 4, "optimizer": "adamw",
        "optimizer_implementation": ")" + implementation + "\"")).moments.optimizer_step -
           (651'776.0 + 100'663'296.0);
  };
  // foreach: _foreach_sqrt copies every exp_avg_sq shard: 4 B × 162,944 / 4 = 162,944.
  CHECK(step("foreach") == k_torch_params);
  // for-loop: one parameter at a time; tensor i's sqrt and quotient beside tensor i−1's denom,
  // max_i (2·s_i + s_(i−1)). This model's parameter order is not one trainmem knows (tied
  // embeddings, LayerNorm: trainmem_profile.cpp eager_step_order), so the bound: the previous
  // tensor at most the largest, the embedding, 1,000 × 64 = 64,000 elements, 16,000 per shard:
  // 3 × 4 B × 16,000.
  CHECK(step("for-loop") == 192'000.0);
  // fused: one kernel per group, nothing allocated.
  CHECK(step("fused") == 0.0);
  SECTION("ddp steps the whole model: the for-loop bound is the whole embedding's") {
    const Estimate loop = state_of(small(R"("framework": "ddp", "optimizer_implementation": "for-loop")"));
    const Estimate fused = state_of(small(R"("framework": "ddp", "optimizer_implementation": "fused")"));
    // The same bound over the whole embedding: 3 × 4 B × 64,000.
    CHECK(loop.moments.optimizer_step - fused.moments.optimizer_step == 3 * 4 * 64'000.0);
  }
  SECTION("optimizers without Adam's denominator get none") {
    CHECK(state_of(small(R"("framework": "ddp", "optimizer": "sgd", "optimizer_implementation": "foreach")")).moments.optimizer_step ==
          state_of(small(R"("framework": "ddp", "optimizer": "sgd", "optimizer_implementation": "fused")")).moments.optimizer_step);
  }
}

TEST_CASE("ddp: fp32 weights with bf16 autocast", "[trainmem][golden][ddp]") {
  const Estimate est = state_of(small(R"("framework": "ddp", "data_parallel_size": 2)"));
  CAPTURE(est);
  // fp32 weights 4 + .grad 4 + all-reduce buckets 4 + Adam 8 = 20 B; autocast caches a bf16
  // copy of each linear weight: 2 B × 98,304.
  CHECK(est.weight_and_optimizer_bytes == 20 * k_torch_params + 2 * k_linear_params);
  CHECK(est.state.weight_copies.total() == 2 * k_linear_params);
  SECTION("gradient_as_bucket_view removes the bucket copy") {
    CHECK(state_of(small(R"("framework": "ddp", "data_parallel_size": 2, "gradient_as_bucket_view": true)"))
              .weight_and_optimizer_bytes == 16 * k_torch_params + 2 * k_linear_params);
  }
  SECTION("one GPU trains the bare module: no DistributedDataParallel, no buckets") {
    CHECK(state_of(small(R"("framework": "ddp")")).weight_and_optimizer_bytes ==
          16 * k_torch_params + 2 * k_linear_params);
  }
}

TEST_CASE("optimizers take their states from the optimizer table", "[trainmem][golden][optimizer]") {
  // Megatron without the distributed optimizer: 2 + 4 + 4 = 10 B per parameter before states.
  const double base = 10 * k_megatron_params;
  SECTION("SGD without momentum keeps no state; with momentum one fp32 buffer") {
    CHECK(state_of(small(R"("optimizer": "sgd")")).weight_and_optimizer_bytes == base);
    CHECK(state_of(small(R"("optimizer": "sgd", "momentum": 0.9)")).weight_and_optimizer_bytes ==
          base + 4 * k_megatron_params);
  }
  SECTION("Lion keeps one momentum") {
    CHECK(state_of(small(R"("optimizer": "lion")")).weight_and_optimizer_bytes == base + 4 * k_megatron_params);
  }
  SECTION("Adam with bf16 moments (Megatron's precision-aware optimizer)") {
    CHECK(state_of(small(R"("exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")")).weight_and_optimizer_bytes ==
          base + 4 * k_megatron_params);
  }
  SECTION("Adafactor keeps row and column statistics per matrix") {
    // Per layer: QKV 64 + 192, output 64 + 64, fc1 64 + 256, fc2 256 + 64 = 1,024; two layers
    // 2,048; embedding 1,024 + 64 = 1,088; vectors 8 · 64 + 2 · 64 = 640. 3,776 fp32 values.
    CHECK(state_of(small(R"("optimizer": "adafactor")")).weight_and_optimizer_bytes == base + 4 * 3'776);
  }
  SECTION("8-bit Adam quantizes tensors of 4096 elements or more") {
    // Vectors (640 elements) keep two fp32 states: 5,120 B; the other 163,840 elements (every
    // matrix a whole number of 256-element blocks) two uint8 states with an fp32 absmax per 256
    // (bitsandbytes >= 0.44): 2 · 163,840 · 260/256 = 332,800 B.
    CHECK(state_of(small(R"("optimizer": "adam8bit")")).weight_and_optimizer_bytes == base + 5'120 + 332'800);
  }
  SECTION("Muon: momentum for hidden matrices, AdamW for the embedding and vectors") {
    // 98,304 × 4 B + (65,536 + 640) × 8 B = 393,216 + 529,408.
    CHECK(state_of(small(R"("optimizer": "muon")")).weight_and_optimizer_bytes == base + 393'216 + 529'408);
  }
  SECTION("every optimizer row names its source") {
    for (const OptimizerInfo& row : optimizer_table()) CHECK_FALSE(row.source.empty());
    for (const DtypeInfo& row : dtype_table()) CHECK(name_of(row.dtype).size() > 0);
  }
}

TEST_CASE("byte-model properties across frameworks", "[trainmem][property]") {
  const std::string framework = GENERATE(as<std::string>{}, "megatron", "deepspeed", "fsdp2", "ddp");
  const std::string stage = framework == "deepspeed" ? R"(, "zero_stage": 2)" : "";
  const std::string base = R"("framework": ")" + framework + "\"" + stage + R"(, "data_parallel_size": 4)";
  CAPTURE(framework);
  SECTION("fp32 training never stores fewer weight bytes than mixed precision") {
    const Estimate mixed = state_of(small(base + R"(, "params_dtype": "bf16")"));
    const Estimate full = state_of(small(base + R"(, "params_dtype": "fp32")"));
    CHECK(full.state.weights.total() + full.state.master_weights.total() >=
          mixed.state.weights.total());
  }
  SECTION("offload moves optimizer bytes from GPU to CPU without losing any") {
    const Estimate on_gpu = state_of(small(base));
    const Estimate offloaded = state_of(small(base + R"(, "optimizer_offload_fraction": 0.25)"));
    const double moved = on_gpu.weight_and_optimizer_bytes - offloaded.weight_and_optimizer_bytes;
    CHECK(moved > 0);
    // deepspeed's 16-bit gradient partition only passes through buckets when offloading.
    if (framework != "deepspeed")
      REQUIRE_THAT(offloaded.cpu_bytes / 4, WithinRel(moved, k_rel_tol_exact));  // 4 GPUs on the node
  }
}

TEST_CASE("deepspeed ZeRO-3 with each layer checkpointed: the coordinator's gathered weights", "[trainmem][golden][deepspeed]") {
  // DeepSpeed's partitioned_param_coordinator.py (@ edaa7221) replayed by hand for a
  // transformers model (separate q, k, v linears) whose
  // every weight is X = 8192 · 8192 = 67,108,864 elements: 2 layers of q, k, v, o (MHA, 64 heads
  // of 128), fc1, fc2 (f = 8192, no gate), an untied embedding E and output layer H of 8192 ·
  // 8192. DeepSpeed's defaults: prefetch bucket 5e7 (< X: each prefetch gathers one tensor),
  // reuse distance and live parameters 1e9 (14.9 X). The step's trace (40 module uses): E,
  // layer 0, layer 1, H, H (its backward), layer 1 recomputed then backward (fc2 … q), layer 0
  // likewise, E.
  //   forward: each use gathers the next tensor; layer 0's linears recur 25 uses later (25 X,
  //     past the window) and are released; layer 1's recur 7 uses later (their recomputation
  //     follows H) and stay: at the second H, layer 1's six linears, H, and the prefetched
  //     layer-0 q and k: 9 X;
  //   H's backward: H is released (its next use is beyond the trace);
  //   layer 1's recomputation: each use prefetches one more of layer 0's recomputation (k, v, o,
  //     fc1, fc2) and the last reaches E, whose backward ends the trace; every tensor popped ahead
  //     stays, so at layer 1's fc1 all but H are gathered: 13 X, the peak.
  // 13 · 67,108,864 · 2 B (bf16) = 1,744,830,464 B, beside a reduce bucket of 1,000 · 2 B.
  const std::string model = R"("profile": "trainmem", "num_layers": 2, "hidden_size": 8192, "num_attention_heads": 64,
      "ffn_hidden_size": 8192, "vocab_size": 8192, "make_vocab_size_divisible_by": 1,
      "share_embeddings_and_output_weights": false, "swiglu": false, "normalization": "RMSNorm",
      "add_bias_linear": false, "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 1024,
      "micro_batch_size": 1, "gpus_per_node": 1, "framework": "deepspeed", "zero_stage": 3,
      "data_parallel_size": 4, "params_dtype": "bf16", "reduce_bucket_size": 1000,
      "model_implementation": "hf-transformers")";
  const Estimate checkpointed = state_of("{" + model + R"(, "recompute_granularity": "full",
      "recompute_method": "uniform", "recompute_num_layers": 1})");
  CHECK(checkpointed.state.buffers.total() == 1'744'830'464.0 + 2'000.0);
  // Without recompute the count stays the largest tensor group gathered twice (current and next),
  // the inventory's q, k and v of 3 X elements: 2 · 3 · 67,108,864 · 2 B = 805,306,368 B.
  const Estimate plain = state_of("{" + model + "}");
  CHECK(plain.state.buffers.total() == 805'306'368.0 + 2'000.0);
}

TEST_CASE("megatron: the offloaded optimizer's copy back holds one fp32 parameter on the GPU", "[trainmem][golden][megatron]") {
  // HybridDeviceOptimizer copies each fp32 CPU parameter back into its bf16 GPU parameter with a
  // non-blocking copy_, which converts on the GPU through a buffer of the source's dtype
  // (hybrid_optimizer.py @ 0d41ecd8, Copy.cu @ 007aa8ae): one parameter at a time, so the step
  // holds 4 B × the largest trainable tensor. Here the tied embedding, Megatron's padded
  // 1,024 × 64 = 65,536 elements: 262,144 B. Nothing else of the step depends on the offload,
  // so the optimizer-step moment less the model state grows by exactly that.
  const std::string dist = R"("use_distributed_optimizer": true, "data_parallel_size": 4)";
  const Estimate kept = state_of(small(dist));
  const Estimate offloaded = state_of(small(dist + R"(, "optimizer_offload_fraction": 0.5)"));
  const auto beyond_state = [](const Estimate& e) {
    return e.moments.optimizer_step - e.weight_and_optimizer_bytes;
  };
  CHECK(beyond_state(offloaded) - beyond_state(kept) == 4.0 * 1'024 * 64);
  // fp32 parameters: the copy is a plain cudaMemcpyAsync, no buffer.
  const std::string fp32 = dist + R"(, "params_dtype": "fp32")";
  CHECK(beyond_state(state_of(small(fp32 + R"(, "optimizer_offload_fraction": 0.5)"))) ==
        beyond_state(state_of(small(fp32))));
}
