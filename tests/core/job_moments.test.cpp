// The job's moments outside the steady training step (issue 29 item 2): loading a bitsandbytes
// 4-bit model with transformers' from_pretrained, and saving a full state dict under FSDP2. Every
// expected figure is worked out by hand in the comments from the rules of
// docs/trainmem-profile.md §4 ("The job's moments"), not read back from the implementation.
#include <string>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// The small Llama-style model of finetune.test.cpp (support.hpp): 2 layers, h = 1024, 8 heads of
// 128 (MHA), SwiGLU f = 4096, vocabulary 32,000, RMSNorm, no biases, tied embedding; one sequence
// of 1,024 tokens. Per layer q, k, v, o of 1,048,576 elements and gate, up, down of 4,194,304,
// two norms of 1,024: 16,779,264; the model 2 · 16,779,264 + 32,768,000 + 1,024 = 66,327,552.
constexpr double k_params = 66327552;
constexpr double k_workspaces = 96.0 * 1024 * 1024;  // workspace_bytes' default, 100,663,296 B

}  // namespace

TEST_CASE("loading a bitsandbytes 4-bit model: the weights and one 16-bit linear at a time", "[job_moments][qlora]") {
  // transformers' Bnb4BitHfQuantizer builds Params4bit(...).to(device) per checkpoint tensor:
  // the 16-bit weight is copied to the GPU and quantised there, with an fp32 absmax per block of
  // 64 before double quantisation. One GPU, kbit_upcast none, no double quantisation (the
  // transformers default): the frozen base is 84,421,504 B (qlora.test.cpp works it out: NF4
  // linears 18,874,368 and their 14 NF4 codes 896 + the bf16 rest 65,546,240). The largest NF4
  // linear is gate/up/down, 4,194,304 elements: 2 B each = 8,388,608, and 4 · 65,536 = 262,144 B
  // of absmax.
  //   84,421,504 + 8,388,608 + 262,144 = 93,072,256 B
  Trace trace;
  const FullEstimate est = full_estimate(
      config_from(small_llama(R"("framework": "ddp", "peft": "qlora", "kbit_upcast": "none")")), &trace);
  CHECK(est.moments.loading == 93072256);
  CHECK(trace_value(trace, "trainmem.loading_moment") == 93072256);
  // The step holds the same weights, the adapters and the activations, and dequantises that
  // linear in the compute dtype: loading is below it, and the result says so.
  CHECK(est.total_bytes > est.moments.loading);
  CHECK(est.has(Assumption::trainmem_job_moments_below));
  CHECK_FALSE(est.has(Assumption::trainmem_peak_at_loading));
  CHECK(est.moments.checkpoint_save == 0);
}

TEST_CASE("loading: only where each rank loads the whole model onto its GPU", "[job_moments][qlora]") {
  // torchtune builds its own NF4 (torchao), FSDP2 and ZeRO-3 partition the model: not this path.
  for (const char* more : {R"("framework": "ddp", "peft": "qlora", "model_implementation": "torchtune")",
                           R"("framework": "fsdp2", "peft": "qlora", "model_implementation": "hf-transformers",
                               "data_parallel_size": 2, "data_parallel_shard_size": 2)",
                           R"("framework": "ddp", "peft": "lora")"}) {
    INFO(more);
    CHECK(full_estimate(config_from(small_llama(more))).moments.loading == 0);
  }
}

TEST_CASE("a full state dict under FSDP2: the state without gradients, one tensor whole", "[job_moments]") {
  // torchtune's full fine-tune on 2 GPUs, bf16 weights, gradients and Adam states, no master.
  // Between steps the gradients are freed (zero_grad(set_to_none=True)) and every layer is
  // resharded, so the state at rest is the weight shards 66,327,552 · 2 / 2 = 66,327,552 B and
  // the Adam shards 66,327,552 · 4 / 2 = 132,655,104 B, with the library workspaces 100,663,296.
  // gather_cpu_state_dict gathers one parameter at a time (largest: the embedding, 32,768,000 ·
  // 2 = 65,536,000 B) and the full optimizer state dict one state tensor at a time; a
  // parameter's two states are taken together (high by one), 32,768,000 · 4 = 131,072,000 B.
  //   66,327,552 + 132,655,104 + 100,663,296 + 131,072,000 = 430,717,952 B
  Trace trace;
  const FullEstimate est = full_estimate(config_from(small_llama(
      R"("framework": "fsdp2", "model_implementation": "torchtune", "data_parallel_size": 2,
         "data_parallel_shard_size": 2, "params_dtype": "bf16", "master_weights": false,
         "main_grads_dtype": "bf16", "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16",
         "optimizer": "adamw")")),
      &trace);
  CHECK(est.state.weights.total() == k_params);
  CHECK(est.moments.checkpoint_save == 66327552 + 132655104 + k_workspaces + 131072000);
  CHECK(trace_value(trace, "trainmem.checkpoint_save_moment") == est.moments.checkpoint_save);
  CHECK(est.total_bytes > est.moments.checkpoint_save);
  CHECK(est.has(Assumption::trainmem_job_moments_below));
}

TEST_CASE("a full state dict can be the job's peak: the figure is that moment's", "[job_moments]") {
  // The small model with a 128,000-token vocabulary (tied, a multiple of 128: no padding) on 64
  // GPUs, an fp32 master and fp32 Adam states, 16-token sequences: the shards are small and the
  // step holds little, while saving gathers the embedding's two fp32 states whole.
  //   P = 2 · 16,779,264 + 128,000 · 1,024 + 1,024 = 33,558,528 + 131,072,000 + 1,024 = 164,631,552
  //   at rest: master shards P · 4 / 64 = 10,289,472, Adam shards P · 8 / 64 = 20,578,944,
  //   workspaces 100,663,296; the embedding's states whole 131,072,000 · 8 = 1,048,576,000
  //   10,289,472 + 20,578,944 + 100,663,296 + 1,048,576,000 = 1,180,107,712 B
  // The step's largest moment holds those shards, the gradient shards (10,289,472), the unsharded
  // root in bf16 (about 262 MB), two gathered layers and a layer's gradient with its fp32 copy
  // (16,779,264 · (2 + 2 + 2 + 4) = 167,792,640) and the output layer's bf16 gradient (262 MB):
  // under 0.9 GB, below the save.
  const std::string run = R"({"num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
      "ffn_hidden_size": 4096, "vocab_size": 128000, "normalization": "RMSNorm", "swiglu": true,
      "add_bias_linear": false, "attention_dropout": 0, "hidden_dropout": 0, "seq_length": 16,
      "micro_batch_size": 1, "gpus_per_node": 8, "framework": "fsdp2", "model_implementation": "torchtune",
      "data_parallel_size": 64, "data_parallel_shard_size": 64, "params_dtype": "bf16",
      "master_weights": true, "main_params_dtype": "fp32", "main_grads_dtype": "fp32",
      "exp_avg_dtype": "fp32", "exp_avg_sq_dtype": "fp32", "optimizer": "adamw"})";
  Trace trace;
  const FullEstimate est = full_estimate(config_from(run), &trace);
  CHECK(est.moments.checkpoint_save == 10289472 + 20578944 + k_workspaces + 1048576000);
  CHECK(est.moments.peak() < est.moments.checkpoint_save);
  CHECK(est.total_bytes == est.moments.checkpoint_save);
  CHECK(est.has(Assumption::trainmem_peak_at_checkpoint_save));
  CHECK_FALSE(est.has(Assumption::trainmem_job_moments_below));
  // The result names the job's peak moment (the JSON's moments.job_peak), the step's peak beside it.
  CHECK(est.moments.job_peak() == JobMoment::checkpoint_save);
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(estimate_to_json(config_from(run), est, nullptr));
  CHECK(doc["moments"]["job_peak"] == "checkpoint_save");
  CHECK(doc["moments"]["checkpoint_save"] == est.moments.checkpoint_save);
  CHECK(doc["moments"]["peak"] == std::string(moment_name(est.moments.peak_moment)));
  // The breakdown keeps the step's rows; the difference shows among the temporaries.
  CHECK(est.moments.peak_temporary_bytes ==
        est.total_bytes - est.weight_and_optimizer_bytes - est.moments.peak_activation_bytes);
}

TEST_CASE("no full-state-dict moment for torchtitan (sharded saves) or pipelined FSDP2", "[job_moments]") {
  for (const char* more : {R"("framework": "fsdp2", "model_implementation": "torchtitan", "data_parallel_size": 2,
                               "data_parallel_shard_size": 2)",
                           R"("framework": "megatron", "data_parallel_size": 2)"}) {
    INFO(more);
    CHECK(full_estimate(config_from(small_llama(more))).moments.checkpoint_save == 0);
  }
}

namespace {
// The small model's full fine-tune on one GPU in pure bf16 (weights, gradients and AdamW states;
// no master copy), FlashAttention, with `more` fields added.
std::string small_bf16_eval(const std::string& more, const std::string& framework = "ddp") {
  return small_llama(R"("framework": ")" + framework + R"(", "params_dtype": "bf16", "compute_dtype": "bf16",
      "master_weights": false, "main_grads_dtype": "bf16", "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16",
      "optimizer": "adamw", "attention_backend": "flash", )" + more);
}
// At rest between steps: bf16 weights 2 · 66,327,552 = 132,655,104 and AdamW states
// 4 · 66,327,552 = 265,310,208, with the workspaces 100,663,296; zero_grad(set_to_none=True) has
// freed the gradients (ddp on one GPU).
constexpr double k_eval_at_rest = 132655104 + 265310208 + k_workspaces;  // 498,628,608
}  // namespace

TEST_CASE("evaluation: the evaluation batch's logits and the loss's fp32 copies under no_grad", "[job_moments][evaluation]") {
  // transformers' Trainer.prediction_step, current ForCausalLMLoss ("pad-labels"), evaluation
  // batch 8 of 1,024 tokens (T = 8,192), no KV cache. At the loss: the final norm's output
  // 2 · 8,192 · 1,024 = 16,777,216; the logits 8,192 · 32,000 = 262,144,000 elements at 2 B, their
  // fp32 upcast and log-probabilities at 4 B each, 10 · 262,144,000 = 2,621,440,000; the labels
  // padded, 8 · 8 · 1,025 = 65,600, and their shifted copy 8 · 8,192 = 65,536.
  //   498,628,608 + 16,777,216 + 2,621,440,000 + 65,600 + 65,536 = 3,136,976,960 B
  // The training step (one sequence of 1,024 tokens) holds far less, so evaluation is the job's
  // peak, and the result says so.
  Trace trace;
  const std::string run = small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": false)");
  const FullEstimate est = full_estimate(config_from(run), &trace);
  CHECK(est.moments.evaluation == 3136976960.0);
  CHECK(k_eval_at_rest + 16777216 + 2621440000 + 65600 + 65536 == 3136976960.0);
  CHECK(trace_value(trace, "trainmem.evaluation_moment") == est.moments.evaluation);
  CHECK(est.moments.peak() < est.moments.evaluation);
  CHECK(est.total_bytes == est.moments.evaluation);
  CHECK(est.moments.job_peak() == JobMoment::evaluation);
  CHECK(est.has(Assumption::trainmem_peak_at_evaluation));
  CHECK_FALSE(est.has(Assumption::trainmem_job_moments_below));
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(estimate_to_json(config_from(run), est, nullptr));
  CHECK(doc["moments"]["job_peak"] == "evaluation");
  CHECK(doc["moments"]["evaluation"] == est.moments.evaluation);
  // Without evaluation (the default) the moment is 0 and the peak is the step's.
  const FullEstimate none = full_estimate(config_from(small_bf16_eval(R"("eval_kv_cache": false)")));
  CHECK(none.moments.evaluation == 0);
  CHECK(none.moments.job_peak() == JobMoment(none.moments.peak_moment));
}

TEST_CASE("evaluation: the KV cache transformers builds when config.use_cache is true", "[job_moments][evaluation]") {
  // LlamaModel.forward disables use_cache only for gradient checkpointing in training mode; each
  // layer's cache keeps its keys and values, [8, 8, 1,024, 128] each in bf16:
  //   2 layers · 2 · 8,192 tokens · 8 groups · 128 · 2 B = 67,108,864 B beside the loss.
  const FullEstimate with = full_estimate(config_from(small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": true)")));
  const FullEstimate without = full_estimate(config_from(small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": false)")));
  CHECK(with.moments.evaluation - without.moments.evaluation == 67108864.0);
}

TEST_CASE("evaluation: the losses of earlier transformers releases", "[job_moments][evaluation]") {
  // Shifted rows b(s - 1) = 8 · 1,023 = 8,184, their logits 8,184 · 32,000 = 261,888,000; the
  // labels' slice a copy (b > 1), 8 · 8,184 = 65,472; the final hidden state 16,777,216.
  // "shift-logits" (4.46-4.48): the 16-bit logits 524,288,000, their fp32 upcast 1,048,576,000,
  // the shifted copy and its log-probabilities 2 · 4 · 261,888,000 = 2,095,104,000:
  //   498,628,608 + 16,777,216 + 524,288,000 + 1,048,576,000 + 2,095,104,000 + 65,472 = 4,183,439,296 B
  // "upcast-in-model" (4.45 and earlier): the model's logits.float() holds 2 + 4 B per logit
  // (1,572,864,000), then frees the 16-bit ones; the loss's shifted copy and log-probabilities
  // beside the fp32 logits, 1,048,576,000 + 2,095,104,000 = 3,143,680,000, is the larger:
  //   498,628,608 + 16,777,216 + 3,143,680,000 + 65,472 = 3,659,151,296 B
  const FullEstimate shift = full_estimate(config_from(
      small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": false, "transformers_loss": "shift-logits")")));
  CHECK(shift.moments.evaluation == 4183439296.0);
  const FullEstimate model = full_estimate(config_from(
      small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": false, "transformers_loss": "upcast-in-model")")));
  CHECK(model.moments.evaluation == 3659151296.0);
  // Under Liger's fused linear cross entropy the evaluation is the same: outside training Liger's
  // forward makes the logits and calls the release's loss_function (transformers >= 4.46.1), or
  // upcasts and shifts them in its own deprecated forward (earlier releases), as these two do
  // (linkedin/Liger-Kernel monkey_patch.py @ v0.5.8; model/qwen2.py @ 98d77e07). The training
  // step's loss is Liger's kernel, which the field does not touch.
  const std::string liger = R"("fused_linear_cross_entropy": true, "eval_micro_batch_size": 8, "eval_kv_cache": false)";
  const FullEstimate liger_shift = full_estimate(config_from(small_bf16_eval(liger + R"(, "transformers_loss": "shift-logits")")));
  const FullEstimate liger_model = full_estimate(config_from(small_bf16_eval(liger + R"(, "transformers_loss": "upcast-in-model")")));
  const FullEstimate liger_pad = full_estimate(config_from(small_bf16_eval(liger)));
  CHECK(liger_shift.moments.evaluation == 4183439296.0);
  CHECK(liger_model.moments.evaluation == 3659151296.0);
  CHECK(liger_shift.moments.forward == liger_pad.moments.forward);
  CHECK(liger_shift.moments.backward == liger_pad.moments.backward);
  CHECK(liger_model.moments.forward == liger_pad.moments.forward);
}

TEST_CASE("evaluation: DeepSpeed keeps its gradient partitions, zero_grad frees plain gradients", "[job_moments][evaluation]") {
  // ZeRO-1 on one GPU: DeepSpeed's gradient partitions live for the whole run, so the moment
  // holds every byte of the state at rest; under ddp the gradients are gone. Both hold the same
  // loss (3,136,976,960 - 498,628,608 = 2,638,348,352 B above the state at rest).
  const FullEstimate ds = full_estimate(config_from(
      small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": false, "zero_stage": 1)", "deepspeed")));
  CHECK(ds.moments.evaluation == ds.weight_and_optimizer_bytes + k_workspaces + 2638348352.0);
  CHECK(ds.state.gradients.total() > 0);
  const FullEstimate plain = full_estimate(config_from(small_bf16_eval(R"("eval_micro_batch_size": 8, "eval_kv_cache": false)")));
  CHECK(plain.moments.evaluation == k_eval_at_rest + 2638348352.0);
}

TEST_CASE("evaluation: compute_metrics keeps every step's predictions on the GPU", "[job_moments][evaluation]") {
  // The batch of the tests above (8 sequences of 1,024 tokens a step, V 32,000, bf16 logits, no KV
  // cache) with eval_predictions "logits" over 32 sequences on one GPU: S = 4 steps, each gathering
  // P = 8,192 · 32,000 · 2 = 524,288,000 B of logits and L = 8 · 8,192 = 65,536 B of labels.
  //  - during the last step's forward the three earlier steps' 3 · (P + L) = 1,573,060,608 B sit
  //    beside the loss's 2,638,348,352 B: 4,211,408,960 B above the state at rest;
  //  - at the last predictions' torch.cat: 2 · 4 · P + 3 · L + L = 4,194,566,144 B (smaller here).
  const std::string base = R"("eval_micro_batch_size": 8, "eval_kv_cache": false, )";
  const FullEstimate kept = full_estimate(config_from(small_bf16_eval(base + R"("eval_predictions": "logits", "eval_samples": 32)")));
  CHECK(kept.moments.evaluation == k_eval_at_rest + 4211408960.0);
  CHECK(kept.moments.job_peak() == JobMoment::evaluation);
  // eval_accumulation_steps 1 moves each step's to the CPU: P + 2 · L = 524,419,072 B at most,
  // below the loss's, so the moment is the one without predictions (3,136,976,960 B).
  const FullEstimate moved = full_estimate(config_from(
      small_bf16_eval(base + R"("eval_predictions": "logits", "eval_samples": 32, "eval_accumulation_steps": 1)")));
  CHECK(moved.moments.evaluation == 3136976960.0);
  // argmax: 8 B per token, P = L = 65,536: three steps kept, 393,216 B beside the loss.
  const FullEstimate ids = full_estimate(config_from(small_bf16_eval(base + R"("eval_predictions": "argmax", "eval_samples": 32)")));
  CHECK(ids.moments.evaluation == 3136976960.0 + 393216);
  // Two GPUs: each gathers both GPUs' steps, S = ⌈32 / 16⌉ = 2, P = 2 · 524,288,000 =
  // 1,048,576,000, L = 131,072: at the last predictions' concatenation 2 · 2 · P + L + L / 2 =
  // 4,194,500,608 B, above the forward's P + L + 2,638,348,352 = 3,687,055,424 B: the moment is
  // 4,194,500,608 - 2,638,348,352 = 1,556,152,256 B above the run without predictions.
  const std::string two = R"("data_parallel_size": 2, )" + base;
  const FullEstimate pair = full_estimate(config_from(small_bf16_eval(two + R"("eval_predictions": "logits", "eval_samples": 32)")));
  const FullEstimate pair_none = full_estimate(config_from(small_bf16_eval(two + R"("eval_predictions": "none")")));
  CHECK(pair.moments.evaluation - pair_none.moments.evaluation == 1556152256.0);
  // Without eval_samples the figure would be one step's: the config is refused, naming the field.
  const std::vector<std::string> messages =
      messages_for(small_bf16_eval(base + R"("eval_predictions": "logits")"));
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].find("eval_samples") != std::string::npos);
}
