// One test per validation rule, each asserting its exact message: a message is part of the
// contract (it names the field and the rule).
#include "support.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// A valid base configuration; each case appends or overrides fields (later JSON keys win).
std::string with(const std::string& extra) {
  std::string base = R"({"num_layers": 8, "hidden_size": 64, "num_attention_heads": 8,
      "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 1)";
  return base + (extra.empty() ? "" : ", " + extra) + "}";
}


}  // namespace

TEST_CASE("the base configuration of these tests is valid", "[validation]") {
  CHECK(messages_for(with("")).empty());
}

TEST_CASE("reading fields: names and types and ranges", "[validation]") {
  SECTION("an unknown field names the nearest known one") {
    CHECK(messages_for(with(R"("num_layer": 8)")) ==
          one("num_layer: unknown field; did you mean \"num_layers\"?"));
  }
  SECTION("an unknown field with no near miss") {
    CHECK(messages_for(with(R"("colour": "red")")) == one("colour: unknown field"));
  }
  SECTION("a required field that is missing") {
    CHECK(messages_for(R"({"hidden_size": 64, "num_attention_heads": 8, "vocab_size": 1000,
        "seq_length": 128, "micro_batch_size": 1})") ==
          one("num_layers: is required (a positive integer)"));
  }
  SECTION("zero where a positive count is needed") {
    CHECK(messages_for(with(R"("num_layers": 0)")) == one("num_layers: must be at least 1, got 0"));
  }
  SECTION("a negative count") {
    CHECK(messages_for(with(R"("data_parallel_size": -2)")) ==
          one("data_parallel_size: must be at least 1, got -2"));
  }
  SECTION("a fraction where an integer is needed") {
    CHECK(messages_for(with(R"("hidden_size": 64.5)")) ==
          one("hidden_size: must be an integer, got 64.5"));
  }
  SECTION("a count beyond the accepted range") {
    CHECK(messages_for(with(R"("num_layers": 1e7)")) ==
          one("num_layers: must be at most 1000000, got 10000000"));
  }
  SECTION("a string where a number is needed") {
    CHECK(messages_for(with(R"("seq_length": "4096")")) ==
          one("seq_length: must be an integer, got the string \"4096\""));
  }
  SECTION("a number where a boolean is needed") {
    CHECK(messages_for(with(R"("use_distributed_optimizer": 1)")) ==
          one("use_distributed_optimizer: must be true or false, got 1"));
  }
  SECTION("an unknown choice lists the accepted ones") {
    CHECK(messages_for(with(R"("normalization": "rmsnorm")")) ==
          one("normalization: must be one of \"LayerNorm\", \"RMSNorm\", \"none\", got the string \"rmsnorm\""));
  }
  SECTION("an unknown profile") {
    CHECK(messages_for(with(R"("profile": "deepspeed")")) ==
          one("profile: must be one of \"megatron-bridge\", \"megatron-lm\", \"trainmem\", got the string \"deepspeed\""));
  }
  SECTION("an object where a value is needed") {
    CHECK(messages_for(with(R"("hidden_size": {"value": 64})")) ==
          one("hidden_size: must be a single value, got an object"));
  }
  SECTION("moe_layer_freq list entries must be 0 or 1") {
    CHECK(messages_for(with(R"("num_moe_experts": 4, "moe_layer_freq": [0, 2, 1, 1, 1, 1, 1, 1])")) ==
          one("moe_layer_freq: list entries must be 0 or 1, got 2 at index 1"));
  }
  SECTION("moe_layer_freq must be an integer or a list") {
    CHECK(messages_for(with(R"("num_moe_experts": 4, "moe_layer_freq": "1/2")")) ==
          one("moe_layer_freq: must be a positive integer or a list of 0/1 per layer, got the string \"1/2\""));
  }
  SECTION("a non-finite value cannot reach a field") {
    ConfigInput input;
    auto problem = set_field(input, "hidden_size", std::numeric_limits<double>::infinity());
    REQUIRE(problem);
    CHECK(problem->message == "hidden_size: must be a finite integer, got inf");
  }
  SECTION("null unsets a field, as in Megatron's config objects") {
    CHECK(messages_for(with(R"("num_query_groups": null, "virtual_pipeline_model_parallel_size": null)")).empty());
  }
}

TEST_CASE("malformed documents", "[validation]") {
  SECTION("broken JSON reports the position") {
    CHECK(messages_for(R"({"num_layers": 8,})") ==
          one("config: malformed JSON: parse error at line 1, column 18: syntax error while parsing "
              "object key - unexpected '}'; expected string literal"));
  }
  SECTION("a document that is not an object") {
    CHECK(messages_for("[1, 2]") == one("config: must be a JSON object of fields, got a list"));
  }
  SECTION("every problem is reported, each once") {
    CHECK(messages_for(R"({"num_layers": 0, "hidden_size": "big", "num_attention_heads": 8,
        "vocab_size": 1000, "seq_length": 128})") ==
          std::vector<std::string>{"num_layers: must be at least 1, got 0",
                                   "hidden_size: must be an integer, got the string \"big\"",
                                   "micro_batch_size: is required (a positive integer)"});
  }
}

TEST_CASE("model shape rules", "[validation]") {
  SECTION("query groups must divide the heads") {
    CHECK(messages_for(with(R"("num_query_groups": 3)")) ==
          one("num_query_groups: must divide num_attention_heads (8), got 3"));
  }
  SECTION("the hidden size must split over the heads when kv_channels is unset") {
    CHECK(messages_for(with(R"("hidden_size": 60)")) ==
          one("hidden_size: must be divisible by num_attention_heads (8) when kv_channels is unset, got 60"));
  }
  SECTION("swiglu contradicts an explicit non-gated MLP") {
    CHECK(messages_for(with(R"("swiglu": true, "gated_linear_unit": false)")) ==
          one("swiglu: contradicts gated_linear_unit = false (SwiGLU is a gated MLP)"));
  }
  SECTION("swiglu contradicts another activation") {
    CHECK(messages_for(with(R"("swiglu": true, "activation_func": "gelu")")) ==
          one("swiglu: contradicts activation_func = \"gelu\" (SwiGLU uses silu)"));
  }
  SECTION("megatron-lm's SwiGLU default FFN size cannot be zero") {
    CHECK(messages_for(R"({"profile": "megatron-lm", "num_layers": 2, "hidden_size": 8,
        "num_attention_heads": 2, "vocab_size": 10, "seq_length": 8, "micro_batch_size": 1,
        "swiglu": true})") ==
          one("ffn_hidden_size: resolves to 0 for hidden_size 8 with SwiGLU; set it explicitly"));
  }
}

TEST_CASE("mixture-of-experts rules", "[validation][moe]") {
  SECTION("a moe_layer_freq list needs one entry per layer") {
    CHECK(messages_for(with(R"("num_moe_experts": 4, "moe_layer_freq": [1, 1])")) ==
          one("moe_layer_freq: list must have one entry per layer (num_layers = 8), got 2"));
  }
  SECTION("top-k cannot exceed the experts") {
    CHECK(messages_for(with(R"("num_moe_experts": 4, "moe_router_topk": 6)")) ==
          one("moe_router_topk: must be at most num_moe_experts (4), got 6"));
  }
  SECTION("experts must divide over expert-parallel ranks") {
    CHECK(messages_for(with(R"("num_moe_experts": 6, "expert_model_parallel_size": 4, "data_parallel_size": 4)")) ==
          one("num_moe_experts: must be divisible by expert_model_parallel_size (4), got 6"));
  }
  SECTION("the expert data-parallel size must be whole") {
    CHECK(messages_for(with(R"("num_moe_experts": 8, "expert_model_parallel_size": 4, "data_parallel_size": 2)")) ==
          one("expert_model_parallel_size: expert_model_parallel_size × expert_tensor_parallel_size "
              "(4 × 1) must divide data_parallel_size × tensor_model_parallel_size × "
              "context_parallel_size (2 × 1 × 1)"));
  }
  SECTION("expert parallelism needs experts") {
    CHECK(messages_for(with(R"("expert_model_parallel_size": 2, "data_parallel_size": 2)")) ==
          one("expert_model_parallel_size: must be 1 for a dense model (num_moe_experts is unset), got 2"));
  }
  SECTION("MoE with TP and EP needs sequence parallelism") {
    CHECK(messages_for(with(R"("num_moe_experts": 8, "tensor_model_parallel_size": 2,
        "expert_model_parallel_size": 2, "expert_tensor_parallel_size": 1)")) ==
          one("sequence_parallel: must be true when an MoE model uses both "
              "tensor_model_parallel_size > 1 and expert_model_parallel_size > 1 (Megatron requires it)"));
  }
  SECTION("absurd parallel sizes are reported, not overflowed") {
    CHECK(messages_for(with(R"("num_moe_experts": 8, "num_attention_heads": 1000000000,
        "hidden_size": 1000000000, "kv_channels": 1, "tensor_model_parallel_size": 1000000000,
        "data_parallel_size": 1000000000, "context_parallel_size": 1000000000, "seq_length": 4000000000,
        "sequence_parallel": true)")) ==
          std::vector<std::string>{
              "data_parallel_size: the parallel sizes multiply to more ranks than can be counted",
              "seq_length: must be divisible by 2 × context_parallel_size (1000000000) × "
              "tensor_model_parallel_size (1000000000) with sequence_parallel, got 4000000000"});
  }
}

TEST_CASE("tensor and pipeline parallel rules", "[validation][pipeline]") {
  SECTION("heads must divide over tensor-parallel ranks") {
    CHECK(messages_for(with(R"("num_attention_heads": 4, "num_query_groups": 4, "hidden_size": 64,
        "tensor_model_parallel_size": 8)")) ==
          std::vector<std::string>{
              "num_attention_heads: must be divisible by tensor_model_parallel_size (8), got 4",
              "num_query_groups: must be divisible by tensor_model_parallel_size (8), got 4"});
  }
  SECTION("query groups must divide over tensor-parallel ranks") {
    CHECK(messages_for(with(R"("num_query_groups": 2, "tensor_model_parallel_size": 4)")) ==
          one("num_query_groups: must be divisible by tensor_model_parallel_size (4), got 2"));
  }
  SECTION("layers must divide over pipeline stages") {
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 3)")) ==
          one("num_layers: must be divisible by pipeline_model_parallel_size (3), got 8"));
  }
  SECTION("layers must divide over pipeline stages times virtual stages") {
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3)")) ==
          one("num_layers: must be divisible by pipeline_model_parallel_size × "
              "virtual_pipeline_model_parallel_size (2 × 3), got 8"));
  }
  SECTION("virtual stages need pipeline stages") {
    CHECK(messages_for(with(R"("virtual_pipeline_model_parallel_size": 2)")) ==
          one("virtual_pipeline_model_parallel_size: requires pipeline_model_parallel_size > 1 "
              "(the interleaved schedule needs pipeline stages)"));
  }
  SECTION("uneven stages need pipeline stages") {
    CHECK(messages_for(with(R"("num_layers_in_last_pipeline_stage": 2)")) ==
          one("num_layers_in_last_pipeline_stage: requires pipeline_model_parallel_size > 1"));
  }
  SECTION("uneven first and last stages must cover all layers when they are the only ones") {
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 3,
        "num_layers_in_last_pipeline_stage": 3)")) ==
          one("num_layers: must equal num_layers_in_first_pipeline_stage + "
              "num_layers_in_last_pipeline_stage (6) when they are the only stages, got 8"));
  }
  SECTION("the layers left must divide over the middle stages") {
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 3)")) ==
          one("num_layers: the 5 layers left after the first/last pipeline stages must divide "
              "evenly (and at least one each) over the 3 remaining stages"));
  }
  SECTION("the first and last stages must leave layers for the middle ones") {
    // 8 layers, PP 4: a last stage of 100 layers leaves none for the other 3 stages.
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 4, "num_layers_in_last_pipeline_stage": 100)")) ==
          one("num_layers: the first/last pipeline stages take 100 layers of 8, which leaves none for the other 3 stages"));
  }
  SECTION("virtual stages must divide every uneven stage") {
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 3, "num_layers_in_first_pipeline_stage": 2,
        "num_layers_in_last_pipeline_stage": 2, "virtual_pipeline_model_parallel_size": 4)")) ==
          one("virtual_pipeline_model_parallel_size: must divide the layer count of every pipeline "
              "stage (first 2, middle 4, last 2), got 4"));
  }
  SECTION("a per-stage list: one entry per virtual stage, every layer placed once, needs a pipeline") {
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2,
        "pipeline_stage_layers": [3, 2, 3])")) ==
          one("pipeline_stage_layers: must have one entry per virtual pipeline stage: "
              "pipeline_model_parallel_size × virtual_pipeline_model_parallel_size = 2 × 2 = 4 entries, got 3"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [5, 2])")) ==
          one("pipeline_stage_layers: places 7 decoder layers, but num_layers is 8"));
    CHECK(messages_for(with(R"("pipeline_stage_layers": [8])")) ==
          one("pipeline_stage_layers: requires pipeline_model_parallel_size > 1"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 3,
        "pipeline_stage_layers": [3, 5])")) ==
          one("pipeline_stage_layers: cannot be combined with num_layers_in_first_pipeline_stage or "
              "num_layers_in_last_pipeline_stage (the list gives every stage's layers)"));
    // Entries: whole numbers from 0; an empty stage is legal (Megatron's layouts allow one), and
    // no divisibility rule applies (8 layers as 7 + 1 on PP 2 with VPP 1).
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [8, -1])")) ==
          one("pipeline_stage_layers: entries must be whole numbers from 0 to 1000000, got -1 at index 1"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [7.5, 0.5])")) ==
          one("pipeline_stage_layers: entries must be whole numbers from 0 to 1000000, got 7.5 at index 0"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [])")) ==
          one("pipeline_stage_layers: must have at least one entry"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": 4)")) ==
          one("pipeline_stage_layers: must be a list of whole numbers, got 4"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [7, 1])")).empty());
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3,
        "pipeline_stage_layers": [0, 3, 1, 1, 3, 0])")).empty());
  }
  SECTION("the reference profiles take no per-stage list") {
    CHECK(messages_for(with(R"("profile": "megatron-bridge", "pipeline_model_parallel_size": 2,
        "pipeline_stage_layers": [7, 1])")) ==
          one("pipeline_stage_layers: is read only by the trainmem profile (profile is \"megatron-bridge\")"));
  }
}

TEST_CASE("sequence and batch rules", "[validation]") {
  SECTION("context parallelism splits the sequence in 2·CP chunks") {
    CHECK(messages_for(with(R"("seq_length": 100, "context_parallel_size": 4)")) ==
          one("seq_length: must be divisible by 2 × context_parallel_size (4), got 100"));
  }
  SECTION("sequence parallelism splits the sequence over TP ranks") {
    CHECK(messages_for(with(R"("seq_length": 126, "tensor_model_parallel_size": 4, "sequence_parallel": true)")) ==
          one("seq_length: must be divisible by tensor_model_parallel_size (4) with sequence_parallel, got 126"));
  }
  SECTION("the global batch must split into micro batches on every DP rank") {
    CHECK(messages_for(with(R"("global_batch_size": 30, "micro_batch_size": 2, "data_parallel_size": 4)")) ==
          one("global_batch_size: must be divisible by micro_batch_size × data_parallel_size (2 × 4), got 30"));
  }
  SECTION("num_microbatches must agree with the global batch") {
    CHECK(messages_for(with(R"("global_batch_size": 32, "micro_batch_size": 2, "data_parallel_size": 4,
        "num_microbatches": 3)")) ==
          one("num_microbatches: must equal global_batch_size / (micro_batch_size × data_parallel_size) = 4, got 3"));
  }
  SECTION("the global batch gives the number of microbatches") {
    const Config c = config_from(with(R"("global_batch_size": 32, "micro_batch_size": 2, "data_parallel_size": 4)"));
    CHECK(c.num_microbatches == 4);
  }
  SECTION("sequence parallelism is off at TP = 1, as Megatron does") {
    const Config c = config_from(with(R"("sequence_parallel": true)"));
    CHECK_FALSE(c.sequence_parallel);
  }
}

TEST_CASE("the reference profiles reject the trainmem profile's fields", "[validation]") {
  SECTION("a framework choice would silently not be modelled") {
    CHECK(messages_for(with(R"("profile": "megatron-bridge", "framework": "deepspeed", "zero_stage": 2)")) ==
          std::vector<std::string>{
              "framework: is read only by the trainmem profile (profile is \"megatron-bridge\")",
              "zero_stage: is read only by the trainmem profile (profile is \"megatron-bridge\")"});
  }
  SECTION("torchtitan's per-op selective recompute") {
    CHECK(messages_for(with(R"("profile": "megatron-lm", "recompute_granularity": "selective_op")")) ==
          one("recompute_granularity: \"selective_op\" is read only by the trainmem profile "
              "(profile is \"megatron-lm\")"));
  }
  SECTION("a number field out of range is named with its range") {
    CHECK(messages_for(with(R"("attention_dropout": 1.5)")) ==
          std::vector<std::string>{"attention_dropout: must be between 0 and 1, got 1.5"});
  }
  SECTION("a list of choices with an unknown entry") {
    CHECK(messages_for(with(R"("recompute_modules": ["core_attn", "everything"])")) ==
          one("recompute_modules: entries must be among \"core_attn\", \"mlp\", \"moe_act\", "
              "\"layernorm\", \"moe\", \"shared_experts\", \"mla_up_proj\", got \"everything\""));
  }
}

TEST_CASE("a number beyond double is malformed JSON, not a crash (found by fuzzing)", "[validation][fuzz]") {
  CHECK(messages_for(R"({"num_layers": 1e400, "hidden_size": 64})") ==
        one("config: malformed JSON: number overflow parsing '1e400'"));
}

TEST_CASE("column-parallel widths must split over their tensor-parallel ranks", "[validation]") {
  SECTION("the MLP width over TP") {
    CHECK(messages_for(with(R"("ffn_hidden_size": 100, "tensor_model_parallel_size": 8)")) ==
          one("ffn_hidden_size: must be divisible by tensor_model_parallel_size (8), got 100"));
  }
  SECTION("the routed experts' width over ETP") {
    CHECK(messages_for(with(R"("num_moe_experts": 8, "moe_ffn_hidden_size": 100,
        "expert_tensor_parallel_size": 8, "data_parallel_size": 8)")) ==
          one("moe_ffn_hidden_size: must be divisible by expert_tensor_parallel_size (8), got 100"));
  }
  SECTION("the shared experts' width over TP") {
    CHECK(messages_for(with(R"("num_moe_experts": 8, "moe_shared_expert_intermediate_size": 100,
        "tensor_model_parallel_size": 8, "sequence_parallel": true)")) ==
          one("moe_shared_expert_intermediate_size: must be divisible by tensor_model_parallel_size (8), got 100"));
  }
  SECTION("an MoE model whose every layer is MoE has no dense MLP to split") {
    CHECK(messages_for(with(R"("num_moe_experts": 8, "ffn_hidden_size": 100, "moe_ffn_hidden_size": 64,
        "tensor_model_parallel_size": 8, "sequence_parallel": true)")).empty());
  }
}

TEST_CASE("trainmem profile rules: frameworks, sharding, precisions and optimizers", "[validation][trainmem]") {
  SECTION("zero_stage belongs to deepspeed and fsdp2") {
    CHECK(messages_for(with(R"("zero_stage": 1)")) ==
          one("zero_stage: applies to deepspeed and fsdp2; framework megatron shards with use_distributed_optimizer"));
    CHECK(messages_for(with(R"("framework": "ddp", "zero_stage": 1)")) ==
          one("zero_stage: applies to deepspeed and fsdp2; framework ddp does not shard"));
  }
  SECTION("fsdp2 shards at stage 2 or 3") {
    CHECK(messages_for(with(R"("framework": "fsdp2", "zero_stage": 1)")) ==
          one("zero_stage: must be 2 (shard gradients and optimizer) or 3 (full shard) with fsdp2, got 1"));
  }
  SECTION("the distributed optimizer is Megatron's") {
    CHECK(messages_for(with(R"("framework": "fsdp2", "use_distributed_optimizer": true)")) ==
          one("use_distributed_optimizer: is Megatron's; with framework fsdp2 use zero_stage instead"));
    CHECK(messages_for(with(R"("framework": "ddp", "use_distributed_optimizer": true)")) ==
          one("use_distributed_optimizer: is Megatron's; framework ddp does not shard (deepspeed and "
              "fsdp2 shard with zero_stage)"));
  }
  SECTION("hybrid sharding is fsdp2's and divides the data-parallel ranks") {
    CHECK(messages_for(with(R"("data_parallel_shard_size": 1)")) ==
          one("data_parallel_shard_size: applies to fsdp2 (hybrid sharding) only"));
    CHECK(messages_for(with(R"("framework": "fsdp2", "data_parallel_size": 4, "data_parallel_shard_size": 3)")) ==
          one("data_parallel_shard_size: must divide data_parallel_size (4), got 3"));
  }
  SECTION("weights are stored in fp32 or 16 bits; an invalid one is named once") {
    CHECK(messages_for(with(R"("params_dtype": "fp8")")) ==
          one("params_dtype: must be \"fp32\", \"bf16\" or \"fp16\" (FP8 weights: fp8_param_gather), got \"fp8\""));
    CHECK(messages_for(with(R"("compute_dtype": "mxfp4")")) ==
          one("compute_dtype: must be \"fp32\", \"bf16\" or \"fp16\" (FP8 matmuls: fp8_recipe), got \"mxfp4\""));
  }
  SECTION("fp8_param_gather needs a recipe; momentum needs SGD; offloaded weights need full sharding") {
    CHECK(messages_for(with(R"("fp8_param_gather": true)")) == one("fp8_param_gather: needs an fp8_recipe"));
    CHECK(messages_for(with(R"("momentum": 0.9)")) == one("momentum: applies to optimizer \"sgd\" only"));
    CHECK(messages_for(with(R"("framework": "fsdp2", "zero_stage": 2, "offload_params": true)")) ==
          one("offload_params: needs sharded weights: framework deepspeed or fsdp2 with zero_stage 3"));
  }
  SECTION("optimizer_implementation is torch.optim's: ddp and fsdp2 only") {
    CHECK(messages_for(with(R"("optimizer_implementation": "fused")")) ==
          one("optimizer_implementation: applies to frameworks ddp and fsdp2 (torch.optim); framework "
              "megatron steps with its own fused Adam"));
    CHECK(messages_for(with(R"("framework": "deepspeed", "optimizer_implementation": "for-loop")")) ==
          one("optimizer_implementation: applies to frameworks ddp and fsdp2 (torch.optim); framework "
              "deepspeed steps with its own fused Adam"));
    CHECK(messages_for(with(R"("framework": "ddp", "optimizer_implementation": "loop")")) ==
          one("optimizer_implementation: must be one of \"foreach\", \"for-loop\", \"fused\", got the string \"loop\""));
    CHECK(messages_for(with(R"("framework": "fsdp2", "optimizer_implementation": "for-loop")")).empty());
  }
  SECTION("pipeline_outputs is torch.distributed.pipelining's: ddp and fsdp2 with PP only") {
    CHECK(messages_for(with(R"("framework": "fsdp2", "pipeline_outputs": "kept")")) ==
          one("pipeline_outputs: applies to frameworks ddp and fsdp2 with pipeline_model_parallel_size > 1 "
              "(torch.distributed.pipelining)"));
    CHECK(messages_for(with(R"("pipeline_model_parallel_size": 2, "pipeline_outputs": "kept")")) ==
          one("pipeline_outputs: applies to frameworks ddp and fsdp2 with pipeline_model_parallel_size > 1 "
              "(torch.distributed.pipelining)"));
    CHECK(messages_for(with(R"("framework": "fsdp2", "pipeline_model_parallel_size": 2,
        "pipeline_outputs": "kept_fp32_merged")")).empty());
  }
}

TEST_CASE("world_size: DP follows as world / (TP·PP·CP); it must divide and agree with a given DP",
          "[validation][world]") {
  // 32 GPUs with TP 2, PP 2: DP = 32 / (2 × 2 × 1) = 8.
  const Config c = config_from(with(R"("world_size": 32, "tensor_model_parallel_size": 2,
      "pipeline_model_parallel_size": 2, "data_parallel_size": null)"));
  CHECK(c.data_parallel_size == 8);
  CHECK(c.world_size == 32);
  // Without it, the world is the product: TP 2 × PP 1 × CP 1 × DP 4 = 8.
  const Config d = config_from(with(R"("tensor_model_parallel_size": 2, "data_parallel_size": 4)"));
  CHECK(d.world_size == 8);
  // Written back and read again, the config is the same (both fields agree).
  CHECK(resolve(to_input(c)).config == c);
  CHECK(messages_for(with(R"("world_size": 30, "tensor_model_parallel_size": 4, "data_parallel_size": null)")) ==
        std::vector<std::string>{"world_size: must be divisible by tensor_model_parallel_size × "
                                 "pipeline_model_parallel_size × context_parallel_size (4 × 1 × 1 = 4), got 30"});
  CHECK(messages_for(with(R"("world_size": 32, "tensor_model_parallel_size": 2, "data_parallel_size": 8)")) ==
        std::vector<std::string>{"world_size: must equal tensor_model_parallel_size × pipeline_model_parallel_size "
                                 "× context_parallel_size × data_parallel_size (2 × 1 × 1 × 8 = 16), got 32; "
                                 "give one of them"});
  // The product is world_size's value, within its range (10^9): TP 2 × DP 10^9 = 2·10^9 GPUs
  // would resolve to a config that to_input writes and resolve rejects.
  CHECK(messages_for(with(R"("tensor_model_parallel_size": 2, "data_parallel_size": 1000000000)")) ==
        std::vector<std::string>{"world_size: must be at most 1000000000 GPUs, got tensor_model_parallel_size × "
                                 "pipeline_model_parallel_size × context_parallel_size × data_parallel_size = "
                                 "2 × 1 × 1 × 1000000000 = 2000000000"});
  const Config widest = config_from(with(R"("data_parallel_size": 1000000000)"));
  CHECK(widest.world_size == 1000000000);
  CHECK(resolve(to_input(widest)).config == widest);
}
