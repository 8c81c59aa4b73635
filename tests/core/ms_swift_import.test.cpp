// The Megatron-SWIFT importer (`trainmem import ms-swift-megatron`): hand-written `megatron sft`
// commands, read as ms-swift builds Megatron-LM's argv (modelscope/ms-swift
// swift/megatron/argument/megatron_args.py @ 00840e65ad861f8157eddc27d7ddfeac0ebb3d7a). Each
// expected value is ms-swift's default or the command's, as the comments say.
#include <string>
#include <vector>

#include "support.hpp"
#include "trainmem/import.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// The bit mask of LoRA targets (ConfigInput::lora_target_modules).
uint32_t targets(std::initializer_list<LoraTarget> list) {
  uint32_t mask = 0;
  for (LoraTarget t : list) mask |= 1u << unsigned(t);
  return mask;
}

ImportResult swift(const std::string& command, const ImportOptions& options = {}) {
  return import_ms_swift_megatron(command, options);
}

// Whether an Issue of `r` says all of `parts`.
bool names(const ImportResult& r, std::initializer_list<std::string_view> parts) {
  for (const Issue& i : r.issues) {
    bool all = true;
    for (std::string_view part : parts) all = all && i.message.find(part) != std::string::npos;
    if (all) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("ms-swift-megatron: a dense full fine-tune takes ms-swift's defaults where Megatron-LM's differ") {
  // Qwen/Qwen2.5-7B is the qwen2.5-7b preset (28 layers); TP 2 on 4 GPUs leaves DP 2.
  const ImportResult r = swift(
      "NPROC_PER_NODE=4 CUDA_VISIBLE_DEVICES=0,1,2,3 megatron sft --model Qwen/Qwen2.5-7B "
      "--dataset some/data --tensor_model_parallel_size 2 --max_length 4096 --lr 1e-5");
  REQUIRE(r.ok());
  CHECK(r.input.num_layers == 28);
  CHECK(r.input.tensor_model_parallel_size == 2);
  CHECK(r.input.data_parallel_size == 2);  // 4 / (2 × 1 × 1)
  CHECK(r.input.seq_length == 4096);        // --max_length
  // MegatronArguments' defaults: micro 1, global 16 (8 microbatches), the distributed optimizer,
  // selective recomputation of core_attn, flash attention, no dropout.
  CHECK(r.input.micro_batch_size == 1);
  CHECK(r.input.global_batch_size == 16);
  CHECK(r.input.use_distributed_optimizer == true);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::selective);
  CHECK(r.input.recompute_modules == (1u << unsigned(RecomputeModule::core_attn)));
  CHECK(r.input.attention_backend == AttentionBackend::flash);
  CHECK(r.input.attention_dropout == 0.0);
  CHECK(r.input.hidden_dropout == 0.0);
  // bf16 from the checkpoint's torch_dtype; Megatron Core's GPTModel; full fine-tuning.
  CHECK(r.input.params_dtype == Dtype::bf16);
  CHECK(r.input.model_implementation == ModelImplementation::megatron_core);
  CHECK(r.input.framework == Framework::megatron);
  CHECK(r.input.peft == Peft::none);
  // A dense model gets none of the MoE defaults.
  CHECK_FALSE(r.input.moe_router_dtype.has_value());
  CHECK_FALSE(r.input.expert_tensor_parallel_size.has_value());
  CHECK(has_line(r.assumed, "use_distributed_optimizer = true: the distributed optimizer (ZeRO-1) is on (ms-swift's default"));
  // Nothing dropped silently: ms-swift's data argument and Megatron-LM's learning rate are named.
  CHECK(has_line(r.ignored, "--dataset some/data: no memory"));
  CHECK(has_line(r.ignored, "--lr 1e-5: not used by the estimate"));
  // The notes and keys use ms-swift's spelling of each argument, and --max_length for the length.
  CHECK(has_line(r.read, "tensor_model_parallel_size ← --tensor_model_parallel_size 2"));
  const auto key_of = [&](std::string_view field) {
    for (const auto& [f, k] : r.keys)
      if (f == field) return k;
    return std::string();
  };
  CHECK(key_of("tensor_model_parallel_size") == "--tensor_model_parallel_size");
  CHECK(key_of("seq_length") == "--max_length");
  CHECK(has_line(r.read, "CUDA_VISIBLE_DEVICES=0,1,2,3"));
}

TEST_CASE("ms-swift-megatron: false booleans, --torch_dtype and the world from NNODES") {
  const ImportResult r = swift(
      "NNODES=2 NPROC_PER_NODE=8 megatron sft --model Qwen/Qwen2.5-7B --max_length 2048 "
      "--use_distributed_optimizer false --sequence_parallel False --tensor_model_parallel_size 4 "
      "--torch_dtype float16 --recompute_granularity full --recompute_method uniform --recompute_num_layers 1");
  REQUIRE(r.ok());
  CHECK(r.input.use_distributed_optimizer == false);
  CHECK(r.input.sequence_parallel == false);
  CHECK(r.input.data_parallel_size == 4);     // 16 / 4
  CHECK(r.input.params_dtype == Dtype::fp16);  // float16 trains in fp16
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  CHECK_FALSE(r.input.recompute_modules.has_value());  // core_attn is selective recomputation's
}

TEST_CASE("ms-swift-megatron: LoRA all-linear on an MoE model adapts the routed experts") {
  // Qwen3-30B-A3B: 128 experts; EP 4 on 4 GPUs, packed 8192-token rows.
  const ImportResult r = swift(
      "PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' NPROC_PER_NODE=4 megatron sft "
      "--model Qwen/Qwen3-30B-A3B --train_type lora --lora_rank 32 --lora_alpha 64 "
      "--target_modules all-linear --expert_model_parallel_size 4 --packing true --max_length 8192 "
      "--sequence_parallel true");
  REQUIRE(r.ok());
  CHECK(r.input.peft == Peft::lora);
  CHECK(r.input.lora_rank == 32);
  CHECK(r.input.lora_dropout == 0.05);  // ms-swift's default, not PEFT's 0
  CHECK(r.input.lora_target_modules == targets({LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj, LoraTarget::o_proj,
                                                  LoraTarget::gate_proj, LoraTarget::up_proj, LoraTarget::down_proj}));
  // ms-swift's MoE defaults: fp32 router, alltoall dispatcher, experts not split by TP.
  CHECK(r.input.moe_router_dtype == MoeRouterDtype::fp32);
  CHECK(r.input.moe_token_dispatcher_type == MoeTokenDispatcher::alltoall);
  CHECK(r.input.expert_tensor_parallel_size == 1);
  CHECK(r.input.expert_model_parallel_size == 4);
  CHECK(r.input.data_parallel_size == 4);
  CHECK(r.input.seq_length == 8192);
  CHECK(r.input.expandable_segments == true);
  CHECK(has_line(r.read, "seq_length ← --max_length 8192 (--packing true"));
  CHECK(has_line(r.read, "routed experts' grouped linear_fc1 / linear_fc2"));
  CHECK(has_line(r.ignored, "--lora_alpha 64: no memory"));
  // The import estimates as it is.
  const ImportOverBase merged = import_over_base(ImportKind::ms_swift_megatron,
                                                 "NPROC_PER_NODE=4 megatron sft --model Qwen/Qwen3-30B-A3B --train_type lora "
                                                 "--expert_model_parallel_size 4 --packing true --max_length 8192",
                                                 "{}");
  REQUIRE(merged.ok());
  CHECK(merged.unresolved.empty());
}

TEST_CASE("ms-swift-megatron: --version dates the fp32 expert adapters of 2025-07-10 to 2025-08-20") {
  const std::string command =
      "NPROC_PER_NODE=4 megatron sft --model Qwen/Qwen3-30B-A3B --train_type lora --expert_model_parallel_size 4 "
      "--max_length 2048";
  ImportOptions options;
  options.version = "2025-07-31";  // between ea766ff5b and e2f4d85a9
  CHECK(swift(command, options).input.lora_expert_dtype == Dtype::fp32);
  options.version = "2025-08-20";  // e2f4d85a9: the adapters in the training dtype again
  CHECK_FALSE(swift(command, options).input.lora_expert_dtype.has_value());
  CHECK_FALSE(swift(command).input.lora_expert_dtype.has_value());  // 00840e65's behaviour
  // Attention-only adapters are not the experts'.
  options.version = "2025-07-31";
  CHECK_FALSE(swift(command + " --target_modules linear_qkv", options).input.lora_expert_dtype.has_value());
  options.version = "v3.7";
  CHECK(names(swift(command, options), {"--version: must be the date of the ms-swift commit the run used, YYYY-MM-DD"}));
  // A day the calendar has not (2025 is no leap year) is named, not read as a date in the window.
  options.version = "2025-02-29";
  CHECK(names(swift(command, options), {"--version: must be the date of the ms-swift commit the run used, YYYY-MM-DD"}));
  options.version = "2025-07-32";
  CHECK(names(swift(command, options), {"--version: must be the date of the ms-swift commit the run used, YYYY-MM-DD"}));
  options.version = "2024-02-29";  // a leap day: a date, before the window
  CHECK(swift(command, options).ok());
}

TEST_CASE("ms-swift-megatron: a repeated boolean is read as its last occurrence, as argparse does") {
  const std::string command = "NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --max_length 1024 "
                              "--tensor_model_parallel_size 2";
  CHECK(swift(command + " --sequence_parallel false --sequence_parallel true").input.sequence_parallel == true);
  CHECK(swift(command + " --sequence_parallel true --sequence_parallel false").input.sequence_parallel == false);
  // Every translated argument alike: the last value of a repeated one is the run's.
  CHECK(swift(command + " --micro_batch_size 4 --micro_batch_size 2").input.micro_batch_size == 2);
  CHECK_FALSE(swift(command + " --use_precision_aware_optimizer true --use_precision_aware_optimizer false "
                              "--exp_avg_dtype bf16").ok());  // narrow states need the flag, which the last says off
}

TEST_CASE("ms-swift-megatron: Megatron Core's module names select their adapters") {
  // linear_qkv is q, k and v in one linear; linear_proj the output projection.
  const ImportResult r = swift(
      "NPROC_PER_NODE=1 megatron sft --model Qwen/Qwen2.5-7B --max_length 1024 --train_type lora "
      "--target_modules linear_qkv linear_proj --lora_dropout 0");
  REQUIRE(r.ok());
  CHECK(r.input.lora_target_modules == targets({LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj, LoraTarget::o_proj}));
  CHECK(r.input.lora_dropout == 0.0);
  CHECK(r.input.lora_rank == 8);  // ms-swift's default
}

TEST_CASE("ms-swift-megatron: bad values and unmodelled choices are named") {
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --sequence_parallel maybe"),
              {"--sequence_parallel: must be true or false", "\"maybe\""}));
  CHECK(names(swift("NPROC_PER_NODE=two megatron sft --model Qwen/Qwen2.5-7B"), {"NPROC_PER_NODE: must be a positive integer"}));
  CHECK(names(swift("NPROC_PER_NODE=$GPUS megatron sft --model Qwen/Qwen2.5-7B"), {"shell variables are not expanded"}));
  CHECK(names(swift("megatron sft --model Qwen/Qwen2.5-7B --max_length 1024"), {"NPROC_PER_NODE: missing", "Please set torchrun args"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --train_type qlora"), {"--train_type: must be lora or full"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --train_type lora --target_modules all-router"),
              {"--target_modules: all-router is not modelled"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --train_type lora --target_modules q_proj"),
              {"--target_modules: \"q_proj\" is not a module trainmem has adapters for on Megatron Core"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --train_type lora --lora_dropout 2"),
              {"--lora_dropout: must be a number from 0 to 1"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --train_type lora --target_regex '.*qkv'"),
              {"--target_regex: not modelled"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --max_length 0"), {"--max_length: must be a positive integer"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron pt --model Qwen/Qwen2.5-7B"), {"reads `megatron sft`, got `megatron pt`"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --torch_dtype int8"), {"--torch_dtype: must be bfloat16"}));
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --max_length 512 --tuner_type lora"),
              {"--tuner_type: is a later ms-swift's name for --train_type"}));
  // A value Megatron-LM's reader refuses is named as the command spells it.
  CHECK(names(swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --recompute_granularity some"),
              {"--recompute_granularity: must be"}));
  // A model no preset has asks for its config.json.
  const ImportResult unknown = swift("NPROC_PER_NODE=2 megatron sft --model org/Unknown-Model-7B");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.model_asked == "org/Unknown-Model-7B");
  CHECK(unknown.issues[0].rule == k_model_not_a_preset);
  // Arguments trainmem does not know are listed by name, never dropped.
  const ImportResult odd = swift("NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-7B --max_length 512 --some_new_flag 3");
  REQUIRE(odd.ok());
  CHECK(has_line(odd.ignored, "--some_new_flag 3: not an argument of `megatron sft` trainmem reads"));
}

TEST_CASE("ms-swift-megatron: --load NAME-mcore names the model; --gpus sets the world") {
  ImportOptions options;
  options.gpus = 8;
  const ImportResult r = swift("megatron sft --load Qwen2.5-7B-mcore --max_length 1024 --tensor_model_parallel_size 2", options);
  REQUIRE(r.ok());
  CHECK(r.input.num_layers == 28);
  CHECK(r.input.data_parallel_size == 4);  // 8 / 2
}

TEST_CASE("megatron-args: ms-swift's underscored arguments point at the ms-swift-megatron importer") {
  const ImportResult r = import_megatron_args(
      "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
      "--micro-batch-size 1 --vocab-size 1024 --bf16 --lora_rank 32");
  CHECK(has_line(r.ignored, "--lora_rank 32: not a Megatron-LM argument (Megatron-LM spells them with dashes; read an "
                            "ms-swift `megatron sft` command with `trainmem import ms-swift-megatron`)"));
}
