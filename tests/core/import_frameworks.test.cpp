// The framework importers (torchtune, torchtitan, DeepSpeed, axolotl) over their real config
// files: tests/import/fixtures/<framework>/, each with a .source file naming the repository,
// path and commit. The expected values are read off the fixture files by hand (the comment above
// each names the lines), never taken from the importer's own output.
//
// Natively the YAML and TOML fixtures go through documents.hpp (libyaml-cpp, toml++); the wasm
// build of these tests has no such parser (the page parses with the npm packages), so the cases
// that need one are native-only and the rest feed JSON trees written here.
#include "trainmem/import.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"
#include "trainmem/field_names.hpp"

#ifndef __EMSCRIPTEN__
#include <fstream>
#include <sstream>

#include "trainmem/documents.hpp"
#endif

using namespace trainmem;
using trainmem::test::has_line;
using json = nlohmann::json;

namespace {


std::vector<std::string> targets(const ConfigInput& in) {
  std::vector<std::string> out;
  const FieldValue v = get_field(in, field::lora_target_modules.text);
  if (const auto* list = std::get_if<std::vector<std::string>>(&v)) out = *list;
  return out;
}

#ifndef __EMSCRIPTEN__
std::string fixture(const std::string& relative) {
  const std::string here = __FILE__;
  const std::string path = here.substr(0, here.rfind("core/")) + "import/fixtures/" + relative;
  std::ifstream file(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  INFO(path);
  REQUIRE(!buffer.str().empty());
  return buffer.str();
}

std::string yaml_tree(const std::string& relative) {
  const DocumentTree tree = yaml_document_tree(fixture(relative), relative);
  REQUIRE(tree.ok());
  return tree.json;
}

std::string toml_tree(const std::string& relative) {
  const DocumentTree tree = toml_document_tree(fixture(relative), relative);
  REQUIRE(tree.ok());
  return tree.json;
}
#endif

}  // namespace

#ifndef __EMSCRIPTEN__
TEST_CASE("torchtune llama3_2 3B LoRA single device: the builder, its LoRA arguments and the recipe keys") {
  // llama3_2-3B_lora_single_device.yaml: lora_llama3_2_3b, lora_attn_modules [q_proj, v_proj,
  // output_proj], apply_lora_to_mlp True, lora_rank 64, lora_dropout 0.0, batch_size 4,
  // gradient_accumulation_steps 8, dtype bf16, enable_activation_checkpointing True,
  // torch.optim.AdamW fused True, LinearCrossEntropyLoss (num_output_chunks default 8).
  const ImportResult r = import_torchtune(yaml_tree("torchtune/llama3_2-3B_lora_single_device.yaml"), {});
  REQUIRE(r.ok());
  const ConfigInput& in = r.input;
  CHECK(in.num_layers == 28);  // llama3_2_3b: num_layers=28, embed_dim=3072, num_heads=24, num_kv_heads=8
  CHECK(in.hidden_size == 3072);
  CHECK(in.num_attention_heads == 24);
  CHECK(in.num_query_groups == 8);
  CHECK(in.share_embeddings_and_output_weights == true);
  CHECK(get_field(in, field::peft.text) == FieldValue(std::string("lora")));
  CHECK(targets(in) == std::vector<std::string>{"q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
  CHECK(get_field(in, field::lora_rank.text) == FieldValue(64.0));
  CHECK(in.micro_batch_size == 4);
  CHECK_FALSE(in.global_batch_size);  // the global batch follows the ranks (4 × 8 × ranks)
  CHECK(in.num_microbatches == 8);     // gradient_accumulation_steps: the recipe's knob
  CHECK(in.framework == Framework::ddp);
  CHECK(in.data_parallel_size == 1);
  CHECK(in.params_dtype == Dtype::bf16);
  CHECK(in.master_weights == false);
  CHECK(in.exp_avg_dtype == Dtype::bf16);
  CHECK(in.recompute_granularity == RecomputeGranularity::full);
  CHECK(in.optimizer == Optimizer::adamw);
  CHECK(in.optimizer_implementation == OptimizerImplementation::fused);
  CHECK(get_field(in, field::cross_entropy_chunks.text) == FieldValue(8.0));
  CHECK(!in.seq_length);  // max_seq_len null, not packed: the data decides
  CHECK(has_line(r.ignored, "tokenizer.max_seq_len = null"));
  // compile: False in the recipe reads as torch_compile false.
  CHECK(in.torch_compile == false);
  CHECK(has_line(r.read, "torch_compile ← compile = false"));
  CHECK(r.whole_model);
}

TEST_CASE("torchtune overrides in tune run's syntax: the README's QLoRA row") {
  // README @ a9ea6d5: tune run lora_finetune_single_device --config llama3_2/3B_qlora_single_device
  // dataset.packed=True compile=True loss=...CEWithChunkedOutputLoss enable_activation_checkpointing=True
  // optimizer_in_bwd=False enable_activation_offloading=True optimizer=torch.optim.AdamW
  // tokenizer.max_seq_len=4096 gradient_accumulation_steps=1 epochs=1 batch_size=2
  ImportOptions options;
  options.overrides = {"dataset.packed=True", "compile=True", "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
                       "enable_activation_checkpointing=True", "optimizer_in_bwd=False",
                       "enable_activation_offloading=True", "optimizer=torch.optim.AdamW",
                       "tokenizer.max_seq_len=4096", "gradient_accumulation_steps=1", "epochs=1", "batch_size=2"};
  const ImportResult r = import_torchtune(yaml_tree("torchtune/llama3_2-3B_qlora_single_device.yaml"), options);
  REQUIRE(r.ok());
  CHECK(get_field(r.input, field::peft.text) == FieldValue(std::string("qlora")));  // qlora_llama3_2_3b
  CHECK(get_field(r.input, field::params_dtype.text) == FieldValue(std::string("nf4")));
  CHECK(r.input.seq_length == 4096);       // packed to max_seq_len
  CHECK(r.input.micro_batch_size == 2);
  CHECK_FALSE(r.input.global_batch_size);
  CHECK(r.input.num_microbatches == 1);  // gradient_accumulation_steps 1
  CHECK(get_field(r.input, field::activation_offload.text) == FieldValue(true));
  CHECK(get_field(r.input, field::optimizer_in_backward.text) == FieldValue(false));
  CHECK(get_field(r.input, field::cross_entropy_chunks.text) == FieldValue(8.0));
  CHECK(r.input.optimizer_implementation == OptimizerImplementation::fused);  // optimizer.fused True kept
  CHECK(targets(r.input) == std::vector<std::string>{"q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
}

TEST_CASE("torchtune full fine-tune: optimizer in backward with paged 8-bit AdamW") {
  // llama3_2-3B_full_single_device.yaml: llama3_2_3b, bitsandbytes.optim.PagedAdamW8bit,
  // optimizer_in_bwd True, gradient_accumulation_steps 1, batch_size 4.
  const ImportResult r = import_torchtune(yaml_tree("torchtune/llama3_2-3B_full_single_device.yaml"), {});
  REQUIRE(r.ok());
  CHECK(get_field(r.input, field::peft.text) == FieldValue(std::string("none")));
  CHECK(r.input.optimizer == Optimizer::adam8bit);
  CHECK(get_field(r.input, field::paged_optimizer.text) == FieldValue(true));
  CHECK(get_field(r.input, field::optimizer_in_backward.text) == FieldValue(true));
  CHECK(!r.input.optimizer_implementation);  // bitsandbytes steps in its own kernel
}

TEST_CASE("torchtune distributed: --gpus gives FSDP2, fsdp_cpu_offload the CPU states") {
  // llama3_1-70B_full.yaml: llama3_1_70b, batch_size 2, fsdp_cpu_offload True,
  // custom_sharded_layers ['tok_embeddings', 'output']; run on 8 GPUs.
  ImportOptions options;
  options.gpus = 8;
  const ImportResult r = import_torchtune(yaml_tree("torchtune/llama3_1-70B_full.yaml"), options);
  REQUIRE(r.ok());
  CHECK(r.input.num_layers == 80);
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.data_parallel_size == 8);
  CHECK_FALSE(r.input.global_batch_size);  // was 16 = 2 × 1 × 8 ranks
  CHECK(r.input.num_microbatches == 1);
  CHECK(r.input.offload_params == true);
  CHECK(r.input.optimizer_offload_fraction == 1.0);
  // custom_sharded_layers ['tok_embeddings', 'output'] is the pair fsdp_embedding_units models.
  CHECK(r.input.fsdp_embedding_units == true);
  CHECK(has_line(r.read, "fsdp_embedding_units"));
  CHECK_FALSE(has_line(r.ignored, "custom_sharded_layers"));
  // Another list is named as not modelled; one device has no FSDP units at all.
  ImportOptions other = options;
  other.overrides = {"custom_sharded_layers=[output]"};
  const ImportResult o = import_torchtune(yaml_tree("torchtune/llama3_1-70B_full.yaml"), other);
  REQUIRE(o.ok());
  CHECK_FALSE(o.input.fsdp_embedding_units.has_value());
  CHECK(has_line(o.ignored, "custom_sharded_layers"));
}

TEST_CASE("torchtune bad input: an unknown builder, an override naming no key, gradient accumulation with optimizer_in_bwd") {
  const std::string tree = yaml_tree("torchtune/llama3_2-3B_full_single_device.yaml");
  ImportOptions o1;
  o1.overrides = {"model=torchtune.models.llama3_2.llama3_2_9b"};
  ImportResult r = import_torchtune(tree, o1);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("model._component_: \"torchtune.models.llama3_2.llama3_2_9b\" is not a builder", 0) == 0);
  ImportOptions o2;
  o2.overrides = {"batchsize=2"};
  r = import_torchtune(tree, o2);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "batchsize: the override names no key of the config or of torchtune's recipes");
  ImportOptions o3;
  o3.overrides = {"gradient_accumulation_steps=4"};
  r = import_torchtune(tree, o3);
  REQUIRE(!r.ok());
  CHECK(r.issues[0].field == "optimizer_in_bwd");
}

TEST_CASE("torchtitan 2024 layout: data_parallel_shard_degree -1 fills the world, per-op SAC") {
  // llama3_8b.toml @ 0011fb9: llama3 8B, batch_size 1, seq_len 8192, data_parallel_shard_degree
  // -1, activation_checkpoint selective / op; the benchmark's TT-T1-a runs it on 8 GPUs with local
  // batch 2.
  ImportOptions options;
  options.gpus = 8;
  options.overrides = {"training.batch_size=2"};
  const ImportResult r = import_torchtitan(toml_tree("torchtitan/llama3_8b.toml"), options);
  REQUIRE(r.ok());
  CHECK(r.input.num_layers == 32);
  CHECK(r.input.ffn_hidden_size == 14336);
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.data_parallel_size == 8);
  CHECK(r.input.micro_batch_size == 2);
  CHECK_FALSE(r.input.global_batch_size);  // was 16 = 2 × 1 × 8 ranks
  CHECK(r.input.num_microbatches == 1);
  CHECK(r.input.seq_length == 8192);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::selective_op);
  CHECK(r.input.params_dtype == Dtype::bf16);
  CHECK(r.input.main_params_dtype == Dtype::fp32);
  CHECK(r.input.zero_stage == 3);
  CHECK(has_line(r.assumed, "version ← torchtitan 2024"));
  // Before PR #2095 the per-op save list has no cuDNN SDPA kernel; 0.2 (0.2.1, current) has it.
  CHECK(r.input.op_sac_saves_cudnn_attention == false);
  CHECK(has_line(r.assumed, "op_sac_saves_cudnn_attention"));
  ImportOptions current = options;
  current.version = "0.2";
  const ImportResult now = import_torchtitan(toml_tree("torchtitan/llama3_8b.toml"), current);
  REQUIRE(now.ok());
  CHECK_FALSE(now.input.op_sac_saves_cudnn_attention.has_value());
}

TEST_CASE("torchtitan 405B on PP 8: torchtitan's 15/16/15 split, microbatches per stage, fp32 outputs") {
  // llama3_405b.toml: 126 layers, tensor_parallel_degree 8, mode full; the benchmark's Table 5
  // 1F1B row: 512 GPUs, PP 8, local batch 32, float8 with float8 all-gather.
  ImportOptions options;
  options.gpus = 512;
  options.overrides = {"experimental.pipeline_parallel_degree=8", "training.batch_size=32",
                       "float8.enable_float8_linear", "float8.enable_fsdp_float8_all_gather=true"};
  const ImportResult r = import_torchtitan(toml_tree("torchtitan/llama3_405b.toml"), options);
  REQUIRE(r.ok());
  CHECK(r.input.tensor_model_parallel_size == 8);
  CHECK(r.input.pipeline_model_parallel_size == 8);
  CHECK(r.input.data_parallel_size == 8);  // 512 / (8 × 8)
  CHECK(r.input.micro_batch_size == 4);    // 32 in 8 microbatches
  // No training.global_batch_size: the local batch per rank, 32 = 8 microbatches of 4, stays
  // when the ranks change (the global batch 256 = 32 × 8 ranks follows them).
  CHECK_FALSE(r.input.global_batch_size);
  CHECK(r.input.num_microbatches == 8);
  CHECK(r.input.num_layers_in_first_pipeline_stage == 15);  // 126 // 8
  CHECK(r.input.num_layers_in_last_pipeline_stage == 15);   // 126 − 15 − 6 × 16
  CHECK(r.input.zero_stage == 2);                           // reshard "default" with PP: never
  CHECK(r.input.pipeline_outputs == PipelineOutputs::kept_fp32_merged);
  CHECK(r.input.fp8_recipe == Fp8Recipe::tensorwise);
  CHECK(r.input.fp8_param_gather == true);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
}

TEST_CASE("torchtitan versions: the compiled loss from 0.1 on") {
  // llama3_8b-parallelism.toml has [parallelism]: read as 0.1, where training.compile compiles the
  // loss (components/loss.py); --version 2024 keeps it eager.
  const std::string tree = toml_tree("torchtitan/llama3_8b-parallelism.toml");
  ImportOptions options;
  options.gpus = 8;
  options.overrides = {"training.compile"};
  ImportResult r = import_torchtitan(tree, options);
  REQUIRE(r.ok());
  CHECK(has_line(r.assumed, "version ← torchtitan 0.1"));
  CHECK(r.input.cross_entropy_loss_fusion == true);
  options.version = "2024";
  r = import_torchtitan(tree, options);
  REQUIRE(r.ok());
  CHECK(!r.input.cross_entropy_loss_fusion);
  options.version = "1999";
  r = import_torchtitan(tree, options);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "--version");
}

TEST_CASE("torchtitan's uneven splits: first/last sizes when they say it, else the per-stage list") {
  // The benchmark's Table 5 Interleaved 1F1B row: 126 layers over 8 × 2 = 16 stages. torchtitan
  // 2024 generate_split_points: 126 // 16 = 7 on the first, 8 on the next 14 (126 % 16 = 14 extra),
  // the last the rest: 126 − 7 − 14 × 8 = 7.
  ImportOptions options;
  options.gpus = 512;
  options.version = "2024";
  options.overrides = {"experimental.pipeline_parallel_degree=8", "experimental.pipeline_parallel_schedule=Interleaved1F1B",
                       "training.batch_size=32"};
  const ImportResult r = import_torchtitan(toml_tree("torchtitan/llama3_405b.toml"), options);
  REQUIRE(r.ok());
  std::vector<int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  CHECK(r.input.pipeline_stage_layers == expected);
  CHECK(r.input.virtual_pipeline_model_parallel_size == 2);
  CHECK(!r.input.num_layers_in_first_pipeline_stage);
  // One stage per rank with unequal middle stages: 32 layers over 5 stages are 6, 7, 7, 6, 6
  // (32 // 5 = 6, 32 % 5 = 2 middle stages one longer, the last 32 − 6 − 3 × 6 − 2 = 6).
  ImportOptions five;
  five.gpus = 10;
  five.overrides = {"experimental.pipeline_parallel_degree=5", "training.tensor_parallel_degree=1", "training.batch_size=5"};
  const ImportResult uneven = import_torchtitan(toml_tree("torchtitan/llama3_8b.toml"), five);
  REQUIRE(uneven.ok());
  CHECK(uneven.input.pipeline_stage_layers == std::vector<int64_t>{6, 7, 7, 6, 6});
  // Explicit split points: a stage starts at each named layer (32 layers: 0-9, 10-19, 20-31).
  five.overrides = {"experimental.pipeline_parallel_degree=3", "training.tensor_parallel_degree=1", "training.batch_size=6",
                    "experimental.pipeline_parallel_split_points=layers.10,layers.20"};  // the CLI's comma list
  five.gpus = 3;
  const ImportResult points = import_torchtitan(toml_tree("torchtitan/llama3_8b.toml"), five);
  REQUIRE(points.ok());
  CHECK(!points.input.num_layers_in_first_pipeline_stage);  // 10, as the middle stage
  CHECK(points.input.num_layers_in_last_pipeline_stage == 12);
  five.overrides.back() = "experimental.pipeline_parallel_split_points=layers.20,layers.10";
  const ImportResult backwards = import_torchtitan(toml_tree("torchtitan/llama3_8b.toml"), five);
  REQUIRE(backwards.issues.size() == 1);
  CHECK(backwards.issues[0].field == "experimental.pipeline_parallel_split_points");
}

TEST_CASE("torchtitan 0.1+: the embedding and the output count as a layer each in the split") {
  // generate_llm_fqn_per_model_part (pipeline_parallel.py @ 02ef790c): 32 layers + 1 + 1 = 34
  // effective layers over 4 stages: 34 // 4 = 8, 34 % 4 = 2 stages one more: 9, 9, 8, 8 effective;
  // the first less the embedding's 1, the last less the output's 1: 8, 9, 8, 7 decoder layers.
  const std::string tree = toml_tree("torchtitan/llama3_8b-parallelism.toml");
  ImportOptions options;
  options.gpus = 4;
  options.overrides = {"parallelism.pipeline_parallel_degree=4", "parallelism.tensor_parallel_degree=1",
                       "parallelism.data_parallel_shard_degree=1", "training.local_batch_size=4"};
  ImportResult r = import_torchtitan(tree, options);
  REQUIRE(r.ok());
  CHECK(r.input.pipeline_stage_layers == std::vector<int64_t>{8, 9, 8, 7});
  // PP 2 (34 = 17 + 17): 16 and 16, the even split.
  options.gpus = 2;
  options.overrides[0] = "parallelism.pipeline_parallel_degree=2";
  r = import_torchtitan(tree, options);
  REQUIRE(r.ok());
  CHECK(!r.input.pipeline_stage_layers);
  CHECK(!r.input.num_layers_in_first_pipeline_stage);
  // Interleaved with layers_per_stage 4: ceil(34 / 4) = 9 stages, not a multiple of PP 2.
  options.overrides.push_back("parallelism.pipeline_parallel_schedule=Interleaved1F1B");
  options.overrides.push_back("parallelism.pipeline_parallel_layers_per_stage=4");
  r = import_torchtitan(tree, options);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "parallelism.pipeline_parallel_layers_per_stage");
  // layers_per_stage 5 with no less layers: ceil(32 / 5) = 7 … with 1 + 1: ceil(34 / 5) = 7, odd
  // again; 34 / 6 → 6 stages, 3 per rank: 34 // 6 = 5, 34 % 6 = 4: 6, 6, 6, 6, 5, 5 effective,
  // decoder layers 5, 6, 6, 6, 5, 4.
  options.overrides.back() = "parallelism.pipeline_parallel_layers_per_stage=6";
  r = import_torchtitan(tree, options);
  REQUIRE(r.ok());
  CHECK(r.input.virtual_pipeline_model_parallel_size == 3);
  CHECK(r.input.pipeline_stage_layers == std::vector<int64_t>{5, 6, 6, 6, 5, 4});
  // ZBV places stages in a V: an uneven split there is named, not looped.
  options.overrides.pop_back();
  options.overrides.back() = "parallelism.pipeline_parallel_schedule=ZBVZeroBubble";
  options.overrides[0] = "parallelism.pipeline_parallel_degree=4";
  options.gpus = 4;
  r = import_torchtitan(tree, options);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.find("placed in a V") != std::string::npos);
}

TEST_CASE("torchtitan bad input: an unknown flavor, an unknown key, a missing world") {
  const std::string tree = toml_tree("torchtitan/llama3_8b.toml");
  ImportOptions o;
  o.gpus = 8;
  o.overrides = {"model.flavor=9B"};
  ImportResult r = import_torchtitan(tree, o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("model.flavor: \"llama3\" \"9B\" has no trainmem preset", 0) == 0);
  o.overrides = {"training.bogus=1"};
  r = import_torchtitan(tree, o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--training.bogus: the override names no key of torchtitan's JobConfig");
  r = import_torchtitan(tree, {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "--gpus");
}

TEST_CASE("DeepSpeed ZeRO-3 bf16 with \"auto\" values from the Trainer's arguments") {
  // zero3_bf16.json (axolotl): stage 3, bf16 enabled, micro batch / accumulation / total "auto".
  ImportOptions options;
  options.gpus = 8;
  options.preset = "llama-2-70b";
  options.hf_args_json = R"({"per_device_train_batch_size": 8, "gradient_accumulation_steps": 4, "gradient_checkpointing": true})";
  const ImportResult r = import_deepspeed(fixture("deepspeed/zero3_bf16.json"), options);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::deepspeed);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.params_dtype == Dtype::bf16);
  CHECK(r.input.micro_batch_size == 8);
  // train_batch_size "auto": the Trainer's accumulation 4 is the knob, the global batch
  // (8 × 4 × 8 = 256) follows the ranks.
  CHECK_FALSE(r.input.global_batch_size);
  CHECK(r.input.num_microbatches == 4);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  CHECK(r.input.num_layers == 80);
  CHECK_FALSE(r.input.torch_compile.has_value());
  // TrainingArguments torch_compile: the Trainer compiles the whole model.
  ImportOptions compiled = options;
  compiled.hf_args_json = R"({"per_device_train_batch_size": 8, "torch_compile": true})";
  const ImportResult c = import_deepspeed(fixture("deepspeed/zero3_bf16.json"), compiled);
  REQUIRE(c.ok());
  CHECK(c.input.torch_compile == true);
  CHECK(has_line(c.read, "torch_compile"));
}

TEST_CASE("axolotl QLoRA with FSDP offload: the Llama 3 70B example") {
  // llama-3-qlora-fsdp-70b.yaml: base_model casperhansen/llama-3-70b-fp16, adapter qlora,
  // load_in_4bit, lora_r 8, lora_target_linear, sequence_len 512 padded, micro_batch_size 1,
  // gradient_accumulation_steps 4, fsdp full_shard with fsdp_offload_params.
  ImportOptions options;
  options.gpus = 2;
  const ImportResult r = import_axolotl(yaml_tree("axolotl/llama-3-qlora-fsdp-70b.yaml"), options);
  REQUIRE(r.ok());
  CHECK(r.input.num_layers == 80);  // Llama 3 70B: the Llama 3.1 70B shape
  CHECK(get_field(r.input, field::peft.text) == FieldValue(std::string("qlora")));
  CHECK(targets(r.input) == std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
  CHECK(get_field(r.input, field::lora_rank.text) == FieldValue(8.0));
  CHECK(r.input.seq_length == 512);
  CHECK(r.input.micro_batch_size == 1);
  CHECK_FALSE(r.input.global_batch_size);  // 1 × 4 × 2 ranks follows the ranks
  CHECK(r.input.num_microbatches == 4);
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.fsdp_version == 1);  // no fsdp_version: accelerate's FullyShardedDataParallel
  CHECK(r.input.offload_params == true);
  CHECK(r.input.optimizer_implementation == OptimizerImplementation::fused);
}

TEST_CASE("axolotl: fsdp_version at the top or in fsdp_config, 1 or 2", "[fsdp1]") {
  const auto with = [](const std::string& version) {
    ImportOptions o;
    o.gpus = 8;
    return import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1, "fsdp": ["full_shard", "auto_wrap"], )" +
                              version + "}",
                          o);
  };
  ImportResult r = with(R"("fsdp_version": 2)");
  REQUIRE(r.ok());
  CHECK(r.input.fsdp_version == 2);
  CHECK(has_line(r.read, "fsdp_version ← fsdp_version = 2 (fully_shard)"));
  r = with(R"("fsdp_config": {"version": 1})");
  REQUIRE(r.ok());
  CHECK(r.input.fsdp_version == 1);
  r = with(R"("fsdp_config": {"fsdp_version": 3})");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "fsdp_config.fsdp_version: must be 1 or 2, got 3");
}

TEST_CASE("axolotl LoRA on an 8-bit base: adamw_bnb_8bit, packing") {
  // llama-3-lora-8b.yml: load_in_8bit, adapter lora, lora_r 32, lora_target_linear,
  // lora_modules_to_save [embed_tokens, lm_head], sequence_len 4096 packed, micro 2 × accumulation 4.
  const ImportResult r = import_axolotl(yaml_tree("axolotl/llama-3-lora-8b.yml"), {});
  REQUIRE(r.ok());
  // load_in_8bit with adapter lora is LoRA over bitsandbytes' LLM.int8 base: peft qlora with
  // int8 weights (transformers' BitsAndBytesConfig(load_in_8bit=True)), prepared by axolotl's
  // patched prepare_model_for_kbit_training.
  CHECK(get_field(r.input, field::peft.text) == FieldValue(std::string("qlora")));
  CHECK(get_field(r.input, field::params_dtype.text) == FieldValue(std::string("int8")));
  CHECK(get_field(r.input, field::kbit_upcast.text) == FieldValue(std::string("axolotl")));
  CHECK(get_field(r.input, field::lora_rank.text) == FieldValue(32.0));
  CHECK(r.input.optimizer == Optimizer::adam8bit);
  CHECK(r.input.seq_length == 4096);
  CHECK_FALSE(r.input.global_batch_size);
  CHECK(r.input.num_microbatches == 4);  // micro 2 × accumulation 4
  CHECK_FALSE(has_line(r.ignored, "load_in_8bit"));
  // PEFT's modules_to_save: trained copies of the embedding and the output layer.
  CHECK(get_field(r.input, field::lora_modules_to_save.text) ==
        FieldValue(std::vector<std::string>{"embed_tokens", "lm_head"}));
  CHECK(has_line(r.read, "lora_modules_to_save ← lora_modules_to_save"));
  // A module trainmem has no copy for is listed, the others kept; a non-list is named.
  std::string yml = fixture("axolotl/llama-3-lora-8b.yml");
  const std::string listed = "lora_modules_to_save:\n  - embed_tokens\n  - lm_head\n";
  REQUIRE(yml.find(listed) != std::string::npos);
  const auto with_save = [&](const std::string& value) {
    std::string text = yml;
    text.replace(text.find(listed), listed.size(), "lora_modules_to_save: " + value + "\n");
    const DocumentTree tree = yaml_document_tree(text, "lora.yml");
    REQUIRE(tree.ok());
    return import_axolotl(tree.json, {});
  };
  const ImportResult other = with_save("[model.embed_tokens, norm]");
  REQUIRE(other.ok());
  CHECK(get_field(other.input, field::lora_modules_to_save.text) == FieldValue(std::vector<std::string>{"embed_tokens"}));
  CHECK(has_line(other.ignored, "lora_modules_to_save: \"norm\""));
  const ImportResult bad = with_save("{lm_head: 1}");
  REQUIRE(bad.issues.size() == 1);
  CHECK(bad.issues[0].message == "lora_modules_to_save: must be a list of module names, got an object");
}

TEST_CASE("Liger's fused linear cross entropy: axolotl with its LigerPlugin, the Trainer's use_liger_kernel") {
  // axolotl reads liger_* keys through its LigerPlugin (axolotl.integrations.liger): with the
  // plugin the key sets the field, without it the key does nothing and is listed as ignored.
  const std::string lora = fixture("axolotl/llama-3-lora-8b.yml");
  const auto axolotl = [&](const std::string& more) {
    const DocumentTree tree = yaml_document_tree(lora + "\n" + more, "lora.yml");
    REQUIRE(tree.ok());
    return import_axolotl(tree.json, {});
  };
  const ImportResult with = axolotl("plugins:\n  - axolotl.integrations.liger.LigerPlugin\nliger_fused_linear_cross_entropy: true\n");
  REQUIRE(with.ok());
  CHECK(with.input.fused_linear_cross_entropy == true);
  CHECK(has_line(with.read, "fused_linear_cross_entropy ← liger_fused_linear_cross_entropy"));
  const ImportResult without = axolotl("liger_fused_linear_cross_entropy: true\n");
  REQUIRE(without.ok());
  CHECK_FALSE(without.input.fused_linear_cross_entropy.has_value());
  CHECK(has_line(without.ignored, "LigerPlugin"));
  const ImportResult scalar = axolotl("plugins: axolotl.integrations.liger.LigerPlugin\nliger_fused_linear_cross_entropy: true\n");
  REQUIRE(scalar.issues.size() == 1);
  CHECK(scalar.issues[0].message == "plugins: must be a list of plugin names, got \"axolotl.integrations.liger.LigerPlugin\"");
  const ImportResult cce = axolotl("cut_cross_entropy: true\n");
  REQUIRE(cce.ok());
  CHECK(has_line(cce.ignored, "cut_cross_entropy"));
  // transformers' Trainer: use_liger_kernel applies Liger's defaults, fused_linear_cross_entropy
  // among them, unless liger_kernel_config turns it off.
  ImportOptions options;
  options.gpus = 8;
  options.preset = "llama-2-70b";
  const auto deepspeed = [&](const std::string& args) {
    ImportOptions o = options;
    o.hf_args_json = args;
    return import_deepspeed(fixture("deepspeed/zero3_bf16.json"), o);
  };
  const ImportResult on = deepspeed(R"({"per_device_train_batch_size": 1, "use_liger_kernel": true})");
  REQUIRE(on.ok());
  CHECK(on.input.fused_linear_cross_entropy == true);
  CHECK(has_line(on.ignored, "RMSNorm, SwiGLU and RoPE"));
  const ImportResult off = deepspeed(R"({"per_device_train_batch_size": 1, "use_liger_kernel": true,
      "liger_kernel_config": {"fused_linear_cross_entropy": false}})");
  REQUIRE(off.ok());
  CHECK(off.input.fused_linear_cross_entropy == false);
  const ImportResult bad = deepspeed(R"({"per_device_train_batch_size": 1, "use_liger_kernel": true,
      "liger_kernel_config": {"fused_linear_cross_entropy": "yes"}})");
  CHECK_FALSE(bad.ok());
  REQUIRE(bad.issues.size() == 1);
  CHECK(bad.issues[0].message.find("liger_kernel_config.fused_linear_cross_entropy") != std::string::npos);
  const ImportResult shape = deepspeed(R"({"per_device_train_batch_size": 1, "use_liger_kernel": true,
      "liger_kernel_config": "all"})");
  REQUIRE(shape.issues.size() == 1);
  CHECK(shape.issues[0].message.find("liger_kernel_config: must be a mapping") != std::string::npos);
}

TEST_CASE("documents: YAML and TOML syntax errors name the line and column") {
  DocumentTree t = yaml_document_tree("a: [1, 2\nb: 3\n", "bad.yaml");
  REQUIRE(t.issues.size() == 1);
  CHECK(t.issues[0].message.rfind("bad.yaml: line 2, column ", 0) == 0);
  t = toml_document_tree("[model]\nname = \"llama3\n", "bad.toml");
  REQUIRE(t.issues.size() == 1);
  CHECK(t.issues[0].message.rfind("bad.toml: line 2, column ", 0) == 0);
  t = yaml_document_tree("a: 1\na: 2\n", "dup.yaml");
  REQUIRE(t.issues.size() == 1);
  CHECK(t.issues[0].message.find("repeats") != std::string::npos);
  // YAML 1.2 core schema: True is a boolean, 3e-4 a float, '0.0' quoted a string, ~ null.
  t = yaml_document_tree("a: True\nb: 3e-4\nc: '0.0'\nd: ~\ne: 0x10\n", "s.yaml");
  REQUIRE(t.ok());
  CHECK(json::parse(t.json) == json::parse(R"({"a": true, "b": 0.0003, "c": "0.0", "d": null, "e": 16})"));
}

TEST_CASE("documents: YAML that is not UTF-8 is an issue at the scalar, not a crash (found by fuzzing)", "[fuzz]") {
  // tests/fuzz/regressions/torchtune/invalid-utf8-key.yaml (a key cut in a 4-byte sequence) and
  // axolotl/invalid-utf8-value.yaml (0xFF bytes): libyaml-cpp passes them through, and writing the
  // tree as JSON threw.
  DocumentTree t = yaml_document_tree("model:\n  lora_alpha\xf2: 128\n", "key.yaml");
  REQUIRE(t.issues.size() == 1);
  CHECK(t.issues[0].message == "key.yaml: line 2, column 3: invalid UTF-8 in this scalar");
  t = yaml_document_tree("base_model: x\nlora_mode\xff\xff: 1\nb: [1, \"a\xc0\xaf\"]\n", "value.yaml");
  REQUIRE(t.issues.size() == 1);
  CHECK(t.issues[0].message == "value.yaml: line 2, column 1: invalid UTF-8 in this scalar");
  t = yaml_document_tree("b: [1, \"a\xed\xa0\x80\"]\n", "surrogate.yaml");  // an encoded surrogate
  REQUIRE(t.issues.size() == 1);
  CHECK(t.issues[0].message == "surrogate.yaml: line 1, column 8: invalid UTF-8 in this scalar");
  // Well-formed multi-byte text, and bad bytes in a comment (never in the tree), are fine.
  t = yaml_document_tree("# \xff\na: \"caf\xc3\xa9 \xf0\x9f\x98\x80\"\n", "good.yaml");
  REQUIRE(t.ok());
  CHECK(json::parse(t.json)["a"] == "caf\xc3\xa9 \xf0\x9f\x98\x80");
}
#endif

TEST_CASE("framework importers on JSON trees: the wrong kind of file is named") {
  ImportResult r = import_torchtune(R"({"zero_optimization": {"stage": 2}})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "model._component_: missing: this is not a torchtune recipe config (it looks like a deepspeed config: use import deepspeed)");
  r = import_torchtitan(R"({"base_model": "x"})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "model.name: missing: this is not a torchtitan job config (it looks like an axolotl config: use import axolotl)");
  r = import_deepspeed(R"({"model_type": "llama"})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "DS_CONFIG.json");
  r = import_axolotl("[1, 2]", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "CONFIG.yaml");
  CHECK(detect_framework_kind(R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}})") == "torchtune");
}

TEST_CASE("import options as the module passes them: an accelerate launch command as text") {
  const ParsedImportOptions p = parse_import_options(R"({"launch": "accelerate launch train.py --bf16 True"})");
  REQUIRE(p.issues.empty());
  CHECK(p.options.launch == "accelerate launch train.py --bf16 True");
  const ParsedImportOptions bad = parse_import_options(R"({"launch": ["accelerate"]})");
  REQUIRE(bad.issues.size() == 1);
  CHECK(bad.issues[0].field == "launch");
}

TEST_CASE("import options as the module passes them") {
  ParsedImportOptions p = parse_import_options(R"({"gpus": 8, "overrides": ["batch_size=2"], "version": "0.6", "model": {"model_type": "llama"}})");
  REQUIRE(p.issues.empty());
  CHECK(p.options.gpus == 8);
  CHECK(p.options.overrides == std::vector<std::string>{"batch_size=2"});
  CHECK(json::parse(p.options.model_json)["model_type"] == "llama");
  p = parse_import_options(R"({"gpus": 0, "colour": 1, "presets": "x"})");
  REQUIRE(p.issues.size() == 3);
  CHECK(p.issues[0].message == "colour: unknown import option");
  CHECK(p.issues[1].message == "gpus: must be a positive integer, got 0");
  CHECK(p.issues[2].message == "presets: unknown import option; did you mean \"preset\"?");
  // The CLI's --gpus goes through the same rule, its text typed as YAML types it.
  ImportOptions cli;
  CHECK(!set_import_option_text(cli, "gpus", "8"));
  CHECK(cli.gpus == 8);
  for (const char* bad : {"0", "-3", "abc", "", "1e400", "99999999999999999999", "2.5"}) {
    const std::optional<Issue> problem = set_import_option_text(cli, "gpus", bad);
    INFO(bad);
    REQUIRE(problem);
    CHECK(problem->message.rfind("gpus: must be a positive integer, got ", 0) == 0);
  }
  // A whole number past the bound is told the bound (it read "must be a positive integer").
  const std::optional<Issue> huge = set_import_option_text(cli, "gpus", "10000001");
  REQUIRE(huge);
  CHECK(huge->message == "gpus: must be at most 10000000, got 10000001");
  CHECK(cli.gpus == 8);
}

TEST_CASE("import_framework_over_base: the page's one call checks the kind and the options") {
  ImportOverBase r = import_framework_over_base("hf", "{}", "{}", "{}");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "kind: must be \"torchtune\", \"torchtitan\", \"deepspeed\", \"axolotl\", \"accelerate\", \"megatron-args\" or \"ms-swift-megatron\"");
  r = import_framework_over_base("torchtitan", R"({"model": {"name": "llama3", "flavor": "8B"}})", R"({"gpus": -1})", "{}");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "gpus");
  r = import_framework_over_base("torchtitan", R"({"model": {"name": "llama3", "flavor": "8B"}})", R"({"gpus": 8})", "{}");
  REQUIRE(r.ok());
  CHECK(r.config.data_parallel_size == 8);  // data_parallel_shard_degree's default -1: the whole world
}

TEST_CASE("import_over_base with a framework kind keeps the base's other fields") {
  ImportOptions options;
  options.gpus = 1;
  const std::string tree = R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2, "dtype": "bf16",
                               "tokenizer": {"max_seq_len": 2048}, "dataset": {"packed": true}})";
  const ImportOverBase r = import_over_base(ImportKind::torchtune, tree, R"({"gpu_memory_bytes": 25769803776})", options);
  REQUIRE(r.ok());
  CHECK(r.config.num_layers == 16);  // llama3_2_1b: num_layers=16
  CHECK(r.config.seq_length == 2048);
  CHECK(r.config.gpu_memory_bytes == 25769803776.0);
}

TEST_CASE("import_over_base with a framework kind: the file's run has its own layout, the base's does not leak in (found by looking at the page)") {
  // The page's state had TP 2 when a single-device torchtune recipe (and an accelerate FSDP run)
  // were imported: the merged config kept TP 2, a layout neither run has.
  ImportOptions options;
  options.gpus = 1;
  const std::string tree = R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2, "dtype": "bf16",
                               "tokenizer": {"max_seq_len": 2048}, "dataset": {"packed": true}})";
  const std::string base = R"({"tensor_model_parallel_size": 2, "sequence_parallel": true, "pipeline_model_parallel_size": 2,
                               "context_parallel_size": 2, "world_size": 16, "gpus_per_node": 4, "gpu_memory_bytes": 25769803776})";
  ImportOverBase r = import_over_base(ImportKind::torchtune, tree, base, options);
  REQUIRE(r.ok());
  CHECK(!r.config.tensor_model_parallel_size);
  CHECK(!r.config.sequence_parallel);
  CHECK(!r.config.pipeline_model_parallel_size);
  CHECK(!r.config.context_parallel_size);
  CHECK(!r.config.world_size);
  CHECK(r.config.data_parallel_size == 1);
  CHECK(r.config.gpus_per_node == 4);  // the machine's, not the run's
  CHECK(resolve(r.config).ok());
  options.gpus = 0;
  options.overrides = {"train.py", "--model_name_or_path", "meta-llama/Llama-3.2-1B", "--bf16", "True"};
  r = import_over_base(ImportKind::accelerate, R"({"distributed_type": "FSDP", "num_processes": 2})", base, options);
  REQUIRE(r.ok());
  CHECK(!r.config.tensor_model_parallel_size);
  CHECK(r.config.data_parallel_size == 2);
  // A Hugging Face config.json says nothing of the layout: the base's stays.
  r = import_over_base(ImportKind::hf, R"({"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256})", base, {});
  REQUIRE(r.ok());
  CHECK(r.config.tensor_model_parallel_size == 2);
}

TEST_CASE("framework importers: products of huge counts are issues naming the key, not overflows (found by review)", "[fuzz]") {
  // tests/fuzz/regressions/{torchtune,torchtitan,deepspeed,axolotl}/*-product-overflow.*: each
  // count is within its own range (up to 9e15), their product is not; the signed overflow
  // was undefined behaviour (UBSan stopped the harness) and, unsanitized, a wrong value named by
  // the wrong key ("gradient_accumulation_steps: must be at least 1, got -1.77e+18").
  ImportOptions o;
  o.gpus = 8;
  // torchtune, DeepSpeed (without train_batch_size) and axolotl no longer multiply the batch:
  // the accumulation is read as the microbatch count, so each count meets its own field's range,
  // named by the file's key.
  ImportResult r = import_torchtune(R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"},
                                        "batch_size": 9000000000000000, "gradient_accumulation_steps": 9000000000000000})", o);
  REQUIRE(!r.ok());
  CHECK(has_line({r.issues.back().message}, "gradient_accumulation_steps: must be at most 1000000000000, got 9000000000000000"));
  r = import_torchtitan(R"({"model": {"name": "llama3", "flavor": "8B"},
                           "parallelism": {"data_parallel_shard_degree": 9000000000000000, "tensor_parallel_degree": 9000000000000000}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--gpus: 8 does not match the degrees' product (over 2^63)");
  r = import_deepspeed(R"({"train_micro_batch_size_per_gpu": 4000000000, "gradient_accumulation_steps": 4000000000000})", o);
  REQUIRE(!r.ok());
  CHECK(r.issues.back().message == "gradient_accumulation_steps: must be at most 1000000000000, got 4000000000000");
  // A train_batch_size the file fixes is still checked as DeepSpeed asserts it, as a product.
  r = import_deepspeed(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4000000000,
                           "gradient_accumulation_steps": 4000000000000})", o);
  REQUIRE(!r.ok());
  CHECK(r.issues.back().message.rfind("train_batch_size: must equal train_micro_batch_size_per_gpu × gradient_accumulation_steps × ranks = (over 2^63)", 0) == 0);
  // Within the fields each: the import takes them; the micro batch × the accumulation is no field.
  r = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1000000, "gradient_accumulation_steps": 10000000})", {});
  CHECK(r.issues.empty());
  CHECK(r.input.num_microbatches == 10000000);
  CHECK_FALSE(r.input.global_batch_size);
}

TEST_CASE("torchtune compile as a mapping: each member a boolean, an issue otherwise (found by review)", "[fuzz]") {
  // tests/fuzz/regressions/torchtune/compile-model-not-bool.yaml: compile: {model: 3} threw
  // nlohmann's type_error out of the importer (the CLI aborted).
  const std::string recipe = R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2, "compile": )";
  ImportResult r = import_torchtune(recipe + R"({"model": 3}})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "compile.model: must be true or false, got 3");
  r = import_torchtune(recipe + R"("yes"})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "compile: must be true or false, got \"yes\"");
  // [dist]: compile.model and compile.loss default to true.
  r = import_torchtune(recipe + R"({"model": false, "loss": false}})", {});
  REQUIRE(r.ok());
  CHECK(r.input.torch_compile == false);
}

TEST_CASE("DeepSpeed: the Trainer's arguments are counts too (found by review)", "[fuzz]") {
  // tests/fuzz/regressions/deepspeed/hf-args-zero-accumulation.json: train_batch_size given, the
  // micro batch left out and gradient_accumulation_steps 0 in --hf-args divided by zero
  // (SIGFPE); a negative one gave train_batch_size = (-3) × (-2) × 1.
  ImportOptions o;
  o.preset = "llama-2-7b";
  o.hf_args_json = R"({"gradient_accumulation_steps": 0})";
  ImportResult r = import_deepspeed(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--hf-args gradient_accumulation_steps: must be a positive integer, got 0");
  o.hf_args_json = R"({"per_device_train_batch_size": -3, "gradient_accumulation_steps": -2})";
  r = import_deepspeed(R"({"zero_optimization": {"stage": 2}})", o);
  REQUIRE(r.issues.size() == 2);
  CHECK(r.issues[0].message == "--hf-args per_device_train_batch_size: must be a positive integer, got -3");
  // By hand: train_batch_size 8 on 2 ranks with accumulation 2 leaves micro batches of 8 / (2 × 2) = 2.
  o.gpus = 2;
  o.hf_args_json = R"({"gradient_accumulation_steps": 2})";
  r = import_deepspeed(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.micro_batch_size == 2);
  CHECK(r.input.global_batch_size == 8);
  // An optimizer type that is not a name is named, not ignored.
  r = import_deepspeed(R"({"zero_optimization": {"stage": 2}, "optimizer": {"type": 5}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "optimizer.type: must be a string, got 5");
}

TEST_CASE("framework importers: -1 fills the world, any other non-positive count is named with that rule") {
  ImportOptions o;
  o.gpus = 8;
  ImportResult r = import_torchtitan(R"({"model": {"name": "llama3", "flavor": "8B"}, "parallelism": {"data_parallel_shard_degree": -2}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "parallelism.data_parallel_shard_degree: must be -1 or a positive integer, got -2");
  r = import_torchtune(R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2, "data_parallel_shard_dim": 0})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "data_parallel_shard_dim: must be -1 or a positive integer, got 0");
  // By hand: 8 GPUs, tensor_parallel_dim 2, shard -1: 8 / 2 = 4 data-parallel ranks, batch 2 × 1 × 4 = 8.
  r = import_torchtune(R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2,
                           "tensor_parallel_dim": 2, "data_parallel_shard_dim": -1})", o);
  REQUIRE(r.ok());
  CHECK(r.input.tensor_model_parallel_size == 2);
  CHECK(r.input.sequence_parallel == true);
  CHECK(r.input.data_parallel_size == 4);
  CHECK_FALSE(r.input.global_batch_size);  // 2 × 1 × 4 ranks follows the ranks
  CHECK(r.input.num_microbatches == 1);
}

TEST_CASE("a preset's whole model, lists included: torchtitan deepseek_v3 16B keeps its dense first layer") {
  // DeepSeek-V2-Lite's config.json (the preset's source): num_hidden_layers 27,
  // first_k_dense_replace 1, so moe_layer_freq is one 0 then 26 ones. The list was dropped (only
  // numbers, strings and booleans were copied) and every layer counted as MoE.
  ImportOptions o;
  o.gpus = 8;
  const ImportResult r = import_torchtitan(R"({"model": {"name": "deepseek_v3", "flavor": "16B"}})", o);
  REQUIRE(r.ok());
  std::vector<double> expected(27, 1.0);
  expected[0] = 0.0;
  CHECK(get_field(r.input, field::moe_layer_freq.text) == FieldValue(expected));
}

TEST_CASE("a long value in a note is cut at a character boundary (the module's JSON must be UTF-8)") {
  // 60 × "é" (2 bytes each): cut at 77 bytes it would end in half a character.
  std::string name;
  for (int i = 0; i < 60; ++i) name += "\xc3\xa9";
  const ImportResult r = import_torchtune(R"({"model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2,
                                              "optimizer": {"_component_": ")" + name + R"("}})", {});
  REQUIRE(r.ok());
  REQUIRE(has_line(r.ignored, "optimizer._component_ = "));
  CHECK_NOTHROW(json(r.ignored).dump());  // strict: throws on invalid UTF-8
}

TEST_CASE("a null value is the framework's default, never a silent hole (found by review)") {
  // YAML's empty `key:` is null. batch_size: null kept the base's micro batch with no note;
  // lora_rank: null kept the base's rank; _component_: null imported no model at all.
  const std::string builder = R"("_component_": "torchtune.models.llama3_2.lora_llama3_2_1b", "lora_attn_modules": ["q_proj"])";
  ImportResult r = import_torchtune(R"({"model": {)" + builder + R"(}, "batch_size": null})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "batch_size: missing (torchtune's recipes read cfg.batch_size)");
  r = import_torchtune(R"({"model": {)" + builder + R"(, "lora_rank": null}, "batch_size": 2})", {});
  REQUIRE(r.ok());
  CHECK(r.input.lora_rank == 8);  // the builders' default
  r = import_torchtune(R"({"model": {"_component_": null}, "batch_size": 2})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("model._component_: missing", 0) == 0);
  r = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": null})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "micro_batch_size: missing (axolotl requires it)");
  ImportOptions o;
  o.preset = "llama-2-7b";
  r = import_deepspeed(R"({"zero_optimization": {"stage": null}, "bf16": null})", o);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 0);  // DeepSpeed's default, noted
  CHECK(has_line(r.assumed, "zero_stage ← 0"));
  CHECK(r.input.params_dtype == Dtype::fp32);
}

TEST_CASE("torchtune: one message per problem, whole numbers as YAML writes them (found by review)") {
  const std::string model = R"("model": {"_component_": "torchtune.models.llama3_2.llama3_2_1b"}, "batch_size": 2)";
  ImportOptions o;
  o.gpus = 2;
  // gradient_accumulation_steps 0 was named twice (read again for optimizer_in_bwd).
  ImportResult r = import_torchtune("{" + model + R"(, "gradient_accumulation_steps": 0, "optimizer_in_bwd": true})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "gradient_accumulation_steps: must be a positive integer, got 0");
  // max_seq_len 2048.0 was "must be a positive integer or null, got 2048".
  r = import_torchtune("{" + model + R"(, "tokenizer": {"max_seq_len": 2048.0}, "dataset": {"packed": true}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.seq_length == 2048);
  // ac_option k checkpoints layers k, 2k, ...: floor(16 / 2.0) = 8; past the model's 16 layers, none
  // (was recompute_num_layers 0, refused as "ac_option: must be at least 1, got 0").
  r = import_torchtune("{" + model + R"(, "ac_mode": "selective", "ac_option": 2.0})", o);
  REQUIRE(r.ok());
  CHECK(r.input.recompute_num_layers == 8);
  r = import_torchtune("{" + model + R"(, "ac_mode": "selective", "ac_option": 100})", o);
  REQUIRE(r.ok());
  CHECK(r.input.recompute_granularity == RecomputeGranularity::none);
}

TEST_CASE("torchtitan: batches and reshard policies torchtitan refuses are refused (found by review)") {
  const std::string model = R"({"model": {"name": "llama3", "flavor": "8B"}, )";
  const std::string job = model + R"("training": {"local_batch_size": 2}, "parallelism": {)";
  ImportOptions o;
  o.gpus = 8;
  // An unknown policy counted as "always" (ZeRO-3); apply_fsdp raises.
  ImportResult r = import_torchtitan(job + R"("fsdp_reshard_after_forward": "sometimes"}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "parallelism.fsdp_reshard_after_forward: must be \"default\", \"always\" or \"never\", got \"sometimes\"");
  // With PP the global batch was taken as given: 4 data-parallel ranks × 2 = 8, and 3 is no multiple.
  r = import_torchtitan(model + R"("training": {"local_batch_size": 2, "global_batch_size": 3}, "parallelism": {"pipeline_parallel_degree": 2}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "training.global_batch_size: must be a multiple of local batch × data-parallel ranks (8)");
  // A microbatch larger than the local batch was the micro batch (build_pipeline_schedule raises).
  r = import_torchtitan(job + R"("pipeline_parallel_degree": 2, "pipeline_parallel_microbatch_size": 4}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "parallelism.pipeline_parallel_microbatch_size: must divide the local batch 2 (build_pipeline_schedule raises otherwise)");
  // By hand: 8 / 2 = 4 ranks, global 16 = 2 accumulation steps of 2 × 4.
  r = import_torchtitan(model + R"("training": {"local_batch_size": 2, "global_batch_size": 16}, "parallelism": {"pipeline_parallel_degree": 2}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.global_batch_size == 16);
  // Every 100th of a stage's 16 blocks: none (was counted as one).
  r = import_torchtitan(job + R"("pipeline_parallel_degree": 2}, "activation_checkpoint": {"mode": "selective", "selective_ac_option": "100"}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.recompute_granularity == RecomputeGranularity::none);
}

TEST_CASE("DeepSpeed: precision blocks, offload blocks and the Trainer's arguments as DeepSpeed and the Trainer read them (found by review)") {
  ImportOptions o;
  o.preset = "llama-2-7b";
  o.gpus = 2;
  // "bf16": false enabled bf16 (a block without "enabled" counted as enabled); DeepSpeed reads the
  // block as a mapping whose "enabled" defaults to false.
  ImportResult r = import_deepspeed(R"({"bf16": false})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "bf16: must be an object ({\"enabled\": true}), got false");
  r = import_deepspeed(R"({"bf16": {}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.params_dtype == Dtype::fp32);
  // "offload_optimizer": "cpu" offloaded nothing, silently.
  r = import_deepspeed(R"({"zero_optimization": {"stage": 2, "offload_optimizer": "cpu"}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "zero_optimization.offload_optimizer: must be an object ({\"device\": \"cpu\", ...}), got \"cpu\"");
  // A value that is not "auto" must match the argument given (the Trainer raises); it was kept.
  o.hf_args_json = R"({"per_device_train_batch_size": 2})";
  r = import_deepspeed(R"({"train_micro_batch_size_per_gpu": 4})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("train_micro_batch_size_per_gpu: 4 does not match --hf-args per_device_train_batch_size = 2", 0) == 0);
  // Switches and the optimizer name of the wrong type were skipped without a word.
  for (const char* arg : {"gradient_checkpointing", "torch_compile", "packing"}) {
    o.hf_args_json = std::string(R"({"max_length": 512, ")") + arg + R"(": "yes"})";
    r = import_deepspeed(R"({"zero_optimization": {"stage": 2}})", o);
    REQUIRE(r.issues.size() == 1);
    CHECK(r.issues[0].message == std::string("--hf-args ") + arg + ": must be true or false, got \"yes\"");
  }
  o.hf_args_json = R"({"optim": 5})";
  r = import_deepspeed(R"({"zero_optimization": {"stage": 2}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--hf-args optim: must be an optimizer name, got 5");
  // 2.0 is a whole number (was "must be a positive integer or \"auto\", got 2").
  o.hf_args_json.clear();
  r = import_deepspeed(R"({"train_micro_batch_size_per_gpu": 2.0})", o);
  REQUIRE(r.ok());
  CHECK(r.input.micro_batch_size == 2);
}

TEST_CASE("axolotl: FSDP offload with parameters kept gathered is named, not a config resolve() refuses") {
  ImportOptions o;
  o.gpus = 2;
  const ImportResult r = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1,
    "fsdp": ["shard_grad_op", "auto_wrap", "offload"]})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "fsdp_config.fsdp_offload_params: with parameters kept gathered (\"SHARD_GRAD_OP\"): trainmem offloads the parameters of a full shard only");
}

TEST_CASE("axolotl: values axolotl's schema refuses are named, its defaults are applied (found by review)") {
  const std::string base = R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 2, )";
  // bf16 "yes" trained in fp32, silently; no bf16 is axolotl's default "auto".
  ImportResult r = import_axolotl(base + R"("bf16": "yes"})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "bf16: must be true, false or \"auto\", got \"yes\"");
  r = import_axolotl(base + R"("sequence_len": 1024})", {});
  REQUIRE(r.ok());
  CHECK(r.input.params_dtype == Dtype::bf16);
  r = import_axolotl(base + R"("fp16": true})", {});
  REQUIRE(r.ok());
  CHECK(r.input.params_dtype == Dtype::fp16);
  CHECK(r.input.seq_length == 512);  // no sequence_len: axolotl's default
  // torch_compile was set with no note, and "auto" or "yes" read as false.
  r = import_axolotl(base + R"("torch_compile": true})", {});
  REQUIRE(r.ok());
  CHECK(has_line(r.read, "torch_compile ← torch_compile = true"));
  r = import_axolotl(base + R"("torch_compile": "auto"})", {});
  REQUIRE(r.ok());
  CHECK(r.input.torch_compile == true);
  r = import_axolotl(base + R"("torch_compile": "yes"})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "torch_compile: must be true, false or \"auto\", got \"yes\"");
  r = import_axolotl(base + R"("gradient_checkpointing": 5})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("gradient_checkpointing: must be true, false, ", 0) == 0);
  // fsdp: "yes" sharded as FULL_SHARD.
  r = import_axolotl(base + R"("fsdp": "yes"})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("fsdp: must be a list of FSDP options", 0) == 0);
  // One message for one problem (a second said "base_model: missing").
  r = import_axolotl(R"({"base_model": 5, "micro_batch_size": 2})", {});
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "base_model: must be a string, got 5");
  // deepspeed: the config written in place, as axolotl accepts it (was "not one of axolotl's
  // deepspeed_configs/"). By hand: micro 2 × accumulation 1 × 4 ranks = 8.
  ImportOptions o;
  o.gpus = 4;
  r = import_axolotl(base + R"("deepspeed": {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 3);
  CHECK_FALSE(r.input.global_batch_size);  // train_batch_size absent: 2 × 1 × 4 ranks follows the ranks
  CHECK(r.input.num_microbatches == 1);
  CHECK_FALSE(has_line(r.ignored, "a DeepSpeed config does not say it"));  // sequence_len is axolotl's
  // A DeepSpeed value that disagrees with axolotl's was used for the global batch, axolotl's for the micro batch.
  r = import_axolotl(base + R"("deepspeed": {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 4}})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("train_micro_batch_size_per_gpu: 4 does not match", 0) == 0);
}

#ifndef __EMSCRIPTEN__
TEST_CASE("YAML aliases cannot expand a small file into a huge tree (found by review)", "[fuzz]") {
  // tests/fuzz/regressions/axolotl/alias-bomb.yaml: nine levels of ten aliases each expanded to
  // 10^9 values (std::bad_alloc: the CLI aborted).
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  const DocumentTree tree = yaml_document_tree(text, "bomb.yaml");
  REQUIRE(tree.issues.size() == 1);
  CHECK(tree.issues[0].message.rfind("bomb.yaml: line ", 0) == 0);
  CHECK(tree.issues[0].message.find("aliases expand the document") != std::string::npos);
  // A few aliases, as configs use them, still read.
  const DocumentTree small = yaml_document_tree("a: &a {x: 1, y: [1, 2]}\nb: *a\nc: *a\n", "small.yaml");
  REQUIRE(small.ok());
  CHECK(json::parse(small.json)["c"]["y"][1] == 2);
}
#endif

namespace {

// Words as the shell splits a launch command.
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The flags every PEFT docs run passes (huggingface/peft docs/source/accelerate/deepspeed.md @
// 09802c1b43fff9b087be42e149d70e5350ff407a), without the ones a test sets itself.
const std::string k_peft_common =
    "--seed 100 --model_name_or_path meta-llama/Llama-2-70b-hf --chat_template_format chatml --max_seq_len 2048 "
    "--push_to_hub --bf16 True --packing True --gradient_checkpointing True --use_flash_attn True --use_peft_lora True "
    "--lora_r 8 --lora_alpha 16 --lora_dropout 0.1 --lora_target_modules all-linear ";

}  // namespace

TEST_CASE("accelerate on JSON trees: the plugin's config, the launcher's flags and the script's") {
  // A DeepSpeed ZeRO-2 config with CPU optimizer offload; accumulation left to the Trainer.
  const std::string ds = R"({"distributed_type": "DEEPSPEED", "num_processes": 4, "mixed_precision": "bf16",
    "deepspeed_config": {"zero_stage": 2, "offload_optimizer_device": "cpu", "offload_param_device": "none"}})";
  ImportOptions o;
  o.overrides = words("accelerate launch --num_processes 8 sft.py --model_name_or_path meta-llama/Llama-3.1-8B "
                      "--per_device_train_batch_size 2 --gradient_accumulation_steps 3 --max_length 4096 --packing "
                      "--use_peft --lora_target_modules q_proj k_proj --optim adamw_torch_fused");
  ImportResult r = import_accelerate(ds, o);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::deepspeed);
  CHECK(r.input.zero_stage == 2);
  CHECK(r.input.data_parallel_size == 8);       // --num_processes 8 wins over the file's 4
  CHECK(r.input.optimizer_offload_fraction == 1.0);  // offload_optimizer_device cpu
  CHECK(r.input.micro_batch_size == 2);
  CHECK_FALSE(r.input.global_batch_size);       // 2 × 3 × 8 ranks follows the ranks
  CHECK(r.input.num_microbatches == 3);
  CHECK(r.input.seq_length == 4096);            // --max_length with a bare --packing (true)
  CHECK(r.input.num_layers == 32);              // the Llama 3.1 8B preset
  CHECK(r.input.peft == Peft::lora);
  CHECK(r.input.lora_rank == 16);               // TRL ModelConfig's default r
  CHECK(r.input.lora_dropout == 0.05);          // and its default dropout
  CHECK(targets(r.input) == std::vector<std::string>{"q_proj", "k_proj"});  // nargs="+": both words
  CHECK(r.input.params_dtype == Dtype::bf16);   // DeepSpeed's bf16 mode casts the module
  CHECK(r.input.main_params_dtype == Dtype::fp32);
  CHECK(r.input.attention_backend == AttentionBackend::flash);  // transformers' default sdpa
  CHECK(has_line(r.read, "num_processes ← accelerate launch --num_processes = 8"));

  // DDP on one GPU with a bf16-loaded model (TRL --torch_dtype): the Trainer keeps no fp32 copy.
  o.overrides = words("--model_name_or_path meta-llama/Llama-3.2-1B --torch_dtype bfloat16 --bf16 "
                      "--attn_implementation eager --gradient_checkpointing false");
  r = import_accelerate(R"({"distributed_type": "NO", "mixed_precision": "no"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::ddp);
  CHECK(r.input.data_parallel_size == 1);
  CHECK(r.input.params_dtype == Dtype::bf16);
  CHECK(r.input.master_weights == false);
  CHECK(r.input.micro_batch_size == 8);  // TrainingArguments' default
  CHECK(r.input.attention_backend == AttentionBackend::unfused);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::none);
  CHECK(r.input.peft == Peft::none);

  // FSDP2: the strategy is ignored, fsdp_reshard_after_forward decides; HYBRID is FSDP1's.
  o.overrides = words("train.py --model_name_or_path meta-llama/Llama-3.1-8B --bf16 True");
  r = import_accelerate(R"({"distributed_type": "FSDP", "num_processes": 8, "fsdp_config": {"fsdp_version": 2,
    "fsdp_sharding_strategy": "FULL_SHARD", "fsdp_reshard_after_forward": false, "fsdp_activation_checkpointing": true}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.zero_stage == 2);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  CHECK(r.input.params_dtype == Dtype::bf16);       // gathered in the training dtype
  CHECK(r.input.main_params_dtype == Dtype::fp32);  // shards as loaded: fp32
  CHECK(has_line(r.ignored, "fsdp_config.fsdp_sharding_strategy"));
  r = import_accelerate(R"({"distributed_type": "FSDP", "num_processes": 16, "num_machines": 2,
    "fsdp_config": {"fsdp_sharding_strategy": 4}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.data_parallel_shard_size == 8);  // HYBRID_SHARD (code 4): within a machine
}

TEST_CASE("a DeepSpeed config with the torchrun command that launches it; the Trainer's own --deepspeed under accelerate") {
  // The DeepSpeed file: stage 3, bf16, the batch and reduce_bucket_size "auto".
  const std::string ds = R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}, "bf16": {"enabled": "auto"},
    "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"})";
  ImportOptions o;
  o.launch = "torchrun --nproc_per_node 8 --nnodes 2 train.py --model_name_or_path meta-llama/Llama-3.1-8B "
             "--deepspeed ds_z3.json --per_device_train_batch_size 2 --gradient_accumulation_steps 4 --bf16 True "
             "--use_peft --load_in_4bit";
  ImportResult r = import_deepspeed(ds, o);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::deepspeed);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.data_parallel_size == 16);   // torchrun: 8 per node × 2 nodes
  CHECK_FALSE(r.input.global_batch_size);   // 2 × 4 × 16 ranks follows the ranks
  CHECK(r.input.num_microbatches == 4);
  CHECK(r.input.num_layers == 32);           // the Llama 3.1 8B preset, by --model_name_or_path
  CHECK(r.input.reduce_bucket_size == 4096.0 * 4096.0);  // "auto": hidden_size²
  CHECK(r.input.peft == Peft::qlora);
  CHECK(r.input.params_dtype == Dtype::nf4);
  // A torchrun count that is not one is named.
  o.launch = "torchrun --nproc_per_node=gpu train.py";
  r = import_deepspeed(ds, o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "torchrun --nproc_per_node: must be a count of processes, got \"gpu\" (for torchrun's gpu, auto "
                                "or an elastic range, give the world with --gpus)");

  // Under an accelerate config that says MULTI_GPU, the Trainer's --deepspeed makes it DeepSpeed's;
  // the file it names comes with trainmem's --deepspeed.
  ImportOptions a;
  a.overrides = {"train.py", "--deepspeed", "ds.json", "--per_device_train_batch_size", "1"};
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU", "num_processes": 4})", a);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--deepspeed: \"ds.json\": give that DeepSpeed config with trainmem's --deepspeed FILE");
  a.deepspeed_json = ds;
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU", "num_processes": 4})", a);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::deepspeed);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.data_parallel_size == 4);
  r = import_accelerate(R"({"distributed_type": "FSDP", "num_processes": 4})", a);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "--deepspeed");
  // TrainingArguments.deepspeed may be the config itself (a dict): in --hf-args it is read as the
  // file would be; with trainmem's --deepspeed as well, the two are named.
  ImportOptions d;
  d.hf_args_json = R"({"per_device_train_batch_size": 1, "deepspeed": )" + ds + "}";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU", "num_processes": 4})", d);
  INFO((r.issues.empty() ? std::string() : r.issues[0].message));
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::deepspeed);
  CHECK(r.input.zero_stage == 3);
  CHECK(has_line(r.read, "deepspeed ← the DeepSpeed config given as TrainingArguments.deepspeed in --hf-args"));
  CHECK(has_line(r.read, "distributed_type ← --deepspeed (a DeepSpeed config in --hf-args)"));
  d.deepspeed_json = ds;
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU", "num_processes": 4})", d);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--deepspeed: is a DeepSpeed config in --hf-args and trainmem's --deepspeed gives another: give one");

  // The Trainer's own --fsdp: "full_shard auto_wrap offload" is FULL_SHARD (zero_stage 3) with
  // the parameters on the CPU; shard_grad_op keeps them gathered (zero_stage 2), which trainmem
  // does not offload; an option the Trainer does not have is named.
  ImportOptions f;
  f.launch = R"(torchrun --nproc_per_node 4 train.py --fsdp "full_shard auto_wrap offload" --per_device_train_batch_size 1)";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", f);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.offload_params == true);
  CHECK(r.input.data_parallel_size == 4);
  f.launch = R"(torchrun --nproc_per_node 4 train.py --fsdp shard_grad_op)";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", f);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 2);
  f.launch = R"(torchrun --nproc_per_node 4 train.py --fsdp "shard_grad_op offload")";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", f);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "fsdp_config.fsdp_offload_params");
  f.launch = R"(train.py --fsdp "full_shard sideways")";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", f);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "--fsdp");
  f.launch = R"(train.py --fsdp 'full_shard "offload')";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", f);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--fsdp: unterminated \" quote");
  // A bare --deepspeed names no config: an error, not the plugin's defaults.
  f.launch = "train.py --deepspeed --per_device_train_batch_size 1";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", f);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--deepspeed: names the DeepSpeed config file the Trainer reads (or is that config as a "
                               "mapping in --hf-args), got true");

  // The Trainer's --fsdp_config, a mapping in --hf-args: its keys (a leading fsdp_ dropped, as
  // transformers does) fill the accelerate config's fsdp_config keys the file leaves out.
  // version 2 with reshard_after_forward false is FSDP2 keeping the gathered weights (zero_stage
  // 2); activation_checkpointing checkpoints each wrapped layer.
  ImportOptions t;
  t.launch = R"(torchrun --nproc_per_node 4 train.py --fsdp "full_shard auto_wrap" --per_device_train_batch_size 1)";
  t.hf_args_json = R"({"fsdp_config": {"fsdp_version": 2, "reshard_after_forward": false,
      "activation_checkpointing": true, "limit_all_gathers": true, "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}})";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  INFO((r.issues.empty() ? std::string() : r.issues[0].message));
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.zero_stage == 2);
  CHECK(r.input.fsdp_version == 2);  // fully_shard
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  CHECK(has_line(r.read, "fsdp_config ← --fsdp_config (the Trainer's): "));
  CHECK(has_line(r.read, "fsdp_version → fsdp_config.fsdp_version"));
  CHECK(has_line(r.ignored, "--fsdp_config limit_all_gathers: FSDP1's rate limiter (at most two all-gathers in flight), as trainmem assumes; FSDP2 has none"));
  // Turned off it is named as what trainmem does not model, with the direction of the error.
  t.hf_args_json = R"({"fsdp_config": {"fsdp_version": 1, "limit_all_gathers": false}})";
  ImportResult off = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  REQUIRE(off.ok());
  CHECK(has_line(off.ignored, "--fsdp_config limit_all_gathers: false is not modelled: FSDP1 without its rate limiter may hold "
                              "more gathered units than the two trainmem counts, so the estimate may read low"));
  // FSDP1: reshard_after_forward names the strategy.
  t.hf_args_json = R"({"fsdp_config": {"version": 1, "reshard_after_forward": "shard_grad_op"}})";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 2);
  CHECK(r.input.fsdp_version == 1);  // FullyShardedDataParallel
  CHECK(has_line(r.read, "fsdp_version ← fsdp_config.fsdp_version = 1 (FullyShardedDataParallel)"));
  // No version at all: accelerate's FullyShardedDataParallel (FSDP1).
  t.hf_args_json = R"({"fsdp_config": {"reshard_after_forward": "full_shard"}})";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.fsdp_version == 1);
  CHECK(has_line(r.assumed, "fsdp_version ← 1 (no fsdp_version: accelerate wraps with FullyShardedDataParallel (FSDP1))"));
  // transformers reads flags with str_to_bool (true/false in any case) and the version with int():
  // "False" is FSDP2 keeping the weights gathered, not a strategy; a string checkpointing flag
  // works; anything else is named on the Trainer's key.
  t.hf_args_json = R"({"fsdp_config": {"version": "2", "reshard_after_forward": "False", "activation_checkpointing": "true"}})";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  INFO((r.issues.empty() ? std::string() : r.issues[0].message));
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 2);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  const auto first_issue = [&](const std::string& hf) {
    t.hf_args_json = hf;
    const ImportResult bad = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
    return bad.issues.empty() ? std::string() : bad.issues[0].message;
  };
  CHECK(first_issue(R"({"fsdp_config": {"reshard_after_forward": "sideways"}})") ==
        "--fsdp_config reshard_after_forward: must be true or false (FSDP2) or a sharding strategy (FSDP1: full_shard, "
        "shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2), got \"sideways\"");
  CHECK(first_issue(R"({"fsdp_config": {"activation_checkpointing": "maybe"}})") ==
        "--fsdp_config activation_checkpointing: must be true or false, got \"maybe\"");
  CHECK(first_issue(R"({"fsdp_config": {"fsdp_version": 3}})") == "--fsdp_config fsdp_version: must be 1 or 2, got 3");
  // The file's own key is kept; a path names a file trainmem is not given; without FSDP it is
  // not read; an unknown key is listed.
  t.hf_args_json = R"({"fsdp_config": {"version": 2, "reshard_after_forward": false, "sideways": 1}})";
  r = import_accelerate(R"({"distributed_type": "FSDP", "fsdp_config": {"fsdp_version": 2, "fsdp_reshard_after_forward": true}})", t);
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 3);
  CHECK(has_line(r.ignored, "--fsdp_config reshard_after_forward, version: the accelerate config's own key is kept"));
  CHECK(has_line(r.ignored, "--fsdp_config sideways: not an option the Trainer passes to FSDP"));
  t.hf_args_json = R"({"fsdp_config": "fsdp.json"})";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--fsdp_config: \"fsdp.json\": give its keys as \"fsdp_config\": {...} in --hf-args "
                               "(trainmem is not given the file)");
  t.launch = "torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 1";
  t.hf_args_json = R"({"fsdp_config": {"version": 2}})";
  r = import_accelerate(R"({"distributed_type": "MULTI_GPU"})", t);
  REQUIRE(r.ok());
  CHECK(r.input.framework != Framework::fsdp2);
  CHECK(has_line(r.ignored, "--fsdp_config: the Trainer reads it for an FSDP run only"));
}

TEST_CASE("accelerate: dynamo_backend in any case compiles, NO does not; zephyr's special tokens") {
  ImportOptions o;
  o.launch = "train.py --model_name_or_path meta-llama/Llama-3.1-8B --chat_template_format zephyr";
  ImportResult r = import_accelerate(R"({"distributed_type": "NO", "dynamo_config": {"dynamo_backend": "inductor"}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.torch_compile == true);
  // ZephyrSpecialTokens: the rule counts 4 new (<|user|>, <|assistant|>, <|system|>, <pad>, as
  // for a SentencePiece tokenizer that has <s> and </s>): 128,256 + 4 = 128,260 -> 128,264. Llama
  // 3's tokenizer has neither <s> nor </s>, so 6 are new: 128,262, padded to 8 -> 128,264 too.
  CHECK(r.input.vocab_size == 128264);
  r = import_accelerate(R"({"distributed_type": "NO", "dynamo_config": {"dynamo_backend": "no"}})", o);
  REQUIRE(r.ok());
  CHECK(!r.input.torch_compile);
}

TEST_CASE("accelerate: launch lines as shell scripts write them (found by review)") {
  const std::string fsdp = R"({"distributed_type": "FSDP", "num_processes": 2})";
  ImportOptions o;
  // An environment prefix is the shell's, not the script's name.
  o.launch = "CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO accelerate launch train.py --model_name_or_path meta-llama/Llama-3.1-8B";
  ImportResult r = import_accelerate(fsdp, o);
  INFO((r.issues.empty() ? std::string() : r.issues[0].message));
  REQUIRE(r.ok());
  CHECK(r.input.data_parallel_size == 2);
  // torchrun's --nproc_per_node gpu is no count: --gpus gives the world, and without it the flag
  // is named.
  o.launch = "torchrun --nproc_per_node gpu train.py --model_name_or_path meta-llama/Llama-3.1-8B --deepspeed ds.json";
  o.deepspeed_json = R"({"zero_optimization": {"stage": 2}})";
  o.gpus = 4;
  r = import_accelerate(R"({"distributed_type": "NO"})", o);
  INFO((r.issues.empty() ? std::string() : r.issues[0].message));
  REQUIRE(r.ok());
  CHECK(r.input.data_parallel_size == 4);
  o.gpus = 0;
  r = import_accelerate(R"({"distributed_type": "NO"})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "torchrun --nproc_per_node");
  // TRL's lora_modules_to_save takes several modules, as lora_target_modules does.
  o = {};
  o.launch = "trl sft --model_name_or_path meta-llama/Llama-3.1-8B --use_peft --lora_target_modules q_proj v_proj "
             "--lora_modules_to_save embed_tokens lm_head";
  r = import_accelerate(R"({"distributed_type": "NO"})", o);
  CHECK(std::none_of(r.issues.begin(), r.issues.end(), [](const Issue& i) { return i.message.find("is not a flag") != std::string::npos; }));
  CHECK(get_field(r.input, field::lora_modules_to_save.text) == FieldValue(std::vector<std::string>{"embed_tokens", "lm_head"}));
  // dynamo_config that is no mapping is named, with or without the launcher's flag over it.
  o = {};
  o.launch = "accelerate launch --dynamo_backend inductor train.py --model_name_or_path meta-llama/Llama-3.1-8B";
  r = import_accelerate(R"({"distributed_type": "NO", "dynamo_config": "inductor"})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "dynamo_config: must be a mapping, got \"inductor\"");
}

TEST_CASE("axolotl: FSDP strategies by accelerate's names, torch's _HYBRID_SHARD_ZERO2 spelling, NO_SHARD as DDP (found by review)") {
  const auto with = [](const std::string& strategy) {
    ImportOptions o;
    o.gpus = 8;
    return import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1, "fsdp": ["full_shard", "auto_wrap"],
        "fsdp_config": {"fsdp_sharding_strategy": ")" + strategy + R"("}})", o);
  };
  ImportResult r = with("SHARD_GRAD_OP");
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 2);
  r = with("NO_SHARD");
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::ddp);
  for (const char* hybrid : {"HYBRID_SHARD", "HYBRID_SHARD_ZERO2", "_HYBRID_SHARD_ZERO2"}) {
    r = with(hybrid);
    REQUIRE(r.issues.size() == 1);
    CHECK(r.issues[0].field == "fsdp_config.fsdp_sharding_strategy");
  }
  ImportOptions o;
  o.gpus = 8;
  r = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "fsdp": ["full_shard", 3]})", o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "fsdp: entries must be FSDP option names, got 3");
}

TEST_CASE("axolotl: DeepSpeed's \"auto\" bucket is hidden_size² of the model base_model names (found by review)") {
  // Llama 3.1 8B: hidden 4096, so reduce_bucket_size "auto" = 16,777,216 (the HF integration's
  // hidden_size * hidden_size), not DeepSpeed's 5e8 default.
  const ImportResult r = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1,
      "deepspeed": {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}})", {});
  INFO((r.issues.empty() ? std::string() : r.issues[0].message));
  REQUIRE(r.ok());
  CHECK(r.input.reduce_bucket_size == 4096.0 * 4096.0);
}

TEST_CASE("accelerate: bad input is named, never guessed") {
  const auto one = [](const std::string& tree, const std::string& line) {
    ImportOptions o;
    o.overrides = words(line);
    return import_accelerate(tree, o);
  };
  const std::string fsdp = R"({"distributed_type": "FSDP", "num_processes": 2})";
  ImportResult r = one(R"({"zero_optimization": {"stage": 3}})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "distributed_type: missing: this is not an accelerate config (it looks like a deepspeed config: use import deepspeed)");
  r = one(R"({"distributed_type": "MULTI_TPU_PLEASE"})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "distributed_type");
  r = one(R"({"distributed_type": "MEGATRON_LM"})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.find("import megatron-args") != std::string::npos);
  // A stray word is a second value of the flag before it (HfArgumentParser's nargs="+" lists),
  // which a one-value flag then names.
  r = one(fsdp, "train.py --bf16 True oops");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--bf16: must be true or false, got [\"True\", \"oops\"]");
  r = one(fsdp, "train.py --model_name_or_path nobody/unknown-model");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "--model_name_or_path");
  r = one(fsdp, "train.py --use_4bit_quantization True");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("--use_4bit_quantization: needs LoRA", 0) == 0);
  r = one(fsdp, "train.py --bf16 maybe");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--bf16: must be true or false, got \"maybe\"");
  r = one(R"({"distributed_type": "FSDP", "num_processes": 3, "num_machines": 2})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "num_machines");
  r = one(R"({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 5}})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "deepspeed_config.zero_stage: must be 0, 1, 2 or 3, got 5");
  r = one(R"({"distributed_type": "DEEPSPEED", "deepspeed_config": {"deepspeed_config_file": "ds.json"}})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "deepspeed_config.deepspeed_config_file: \"ds.json\": give that DeepSpeed config with trainmem's --deepspeed FILE");
  // The DeepSpeed plugin's accumulation must match the Trainer's (HfTrainerDeepSpeedConfig).
  r = one(R"({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 3, "gradient_accumulation_steps": 4}})",
          "train.py --gradient_accumulation_steps 2");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message.rfind("gradient_accumulation_steps: 4 does not match --gradient_accumulation_steps = 2", 0) == 0);
  r = one(fsdp, "accelerate launch --num_processes");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "accelerate launch --num_processes: needs a value");
  r = one(R"({"distributed_type": "NO", "num_processes": 2})", "");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "distributed_type");
  // A pasted command keeps working: quotes come off, a lone "\" and one joined to the next flag
  // (a one-line input drops the newline after it) are line continuations.
  r = one(fsdp, R"(accelerate launch train.py \ --per_device_train_batch_size "3" \--gradient_accumulation_steps '2')");
  REQUIRE(r.ok());
  CHECK(r.input.micro_batch_size == 3);
  CHECK(r.input.num_microbatches == 2);  // --gradient_accumulation_steps '2'
  // The command as text (the page's line, `--launch RUN.sh`): split as the shell splits it, a
  // quoted value with blanks one word, backslash-newline a continuation, # a comment; then the
  // words of overrides.
  ImportOptions o;
  o.launch = "accelerate launch --config_file \"my configs/fsdp.yaml\" train.py \\\n  --per_device_train_batch_size 4 \\\n"
             "  --lora_target_modules 'q_proj,v_proj' --use_peft_lora True # rank from the default\n";
  o.overrides = {"--gradient_accumulation_steps", "3"};
  r = import_accelerate(fsdp, o);
  REQUIRE(r.ok());
  CHECK(r.input.micro_batch_size == 4);
  CHECK(r.input.num_microbatches == 3);
  CHECK(targets(r.input) == std::vector<std::string>{"q_proj", "v_proj"});
  CHECK(r.input.lora_rank == 64);  // examples/sft/train.py's default
  CHECK(has_line(r.read, "accelerate launch --config_file my configs/fsdp.yaml: the config file given"));
  // The page's one-line input turns each continuation's newline into a blank.
  o.launch = "accelerate launch train.py \\ --per_device_train_batch_size 4 \\  --use_peft_lora True";
  r = import_accelerate(fsdp, o);
  REQUIRE(r.ok());
  CHECK(r.input.num_microbatches == 3);
  o.launch = "train.py --splits \"train,test";
  o.overrides.clear();
  r = import_accelerate(fsdp, o);
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "launch command: unterminated \" quote");
}

#ifndef __EMSCRIPTEN__
TEST_CASE("accelerate: the PEFT docs' Llama 2 70B runs, config and launch command as printed") {
  // peft-deepspeed_config.yaml: DEEPSPEED, zero_stage 3, gradient_accumulation_steps 4,
  // zero3_init_flag true, mixed_precision bf16, num_processes 8. The launch command: batch 8,
  // accumulation 4, LoRA r 8 on all-linear, chatml tokens (32000 + 5 -> 32008).
  ImportOptions o;
  o.overrides = words("accelerate launch --config_file configs/deepspeed_config.yaml train.py " + k_peft_common +
                      "--per_device_train_batch_size 8 --gradient_accumulation_steps 4 --use_reentrant False --use_4bit_quantization False");
  ImportResult r = import_accelerate(yaml_tree("accelerate/peft-deepspeed_config.yaml"), o);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::deepspeed);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.zero_init == true);
  CHECK(r.input.data_parallel_size == 8);
  CHECK(r.input.micro_batch_size == 8);
  CHECK_FALSE(r.input.global_batch_size);  // 8 × 4 × 8 ranks follows the ranks
  CHECK(r.input.num_microbatches == 4);     // --gradient_accumulation_steps 4
  CHECK(r.input.vocab_size == 32008);
  CHECK(r.input.num_layers == 80);
  CHECK(r.input.seq_length == 2048);
  CHECK(r.input.peft == Peft::lora);
  CHECK(r.input.lora_rank == 8);
  CHECK(r.input.lora_dropout == 0.1);
  CHECK(targets(r.input) == std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
  CHECK(r.input.params_dtype == Dtype::bf16);
  CHECK(r.input.attention_backend == AttentionBackend::flash);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  CHECK(has_line(r.ignored, "deepspeed_config.deepspeed_multinode_launcher"));

  // peft-fsdp_config_qlora.yaml: FSDP FULL_SHARD, fsdp_offload_params true, mixed_precision 'no'
  // but --bf16 True, 2 processes; QLoRA with bf16 storage.
  o.overrides = words("accelerate launch --config_file configs/fsdp_config_qlora.yaml --fsdp_offload_params false train.py " +
                      k_peft_common + "--per_device_train_batch_size 2 --gradient_accumulation_steps 2 "
                      "--use_4bit_quantization True --use_nested_quant True --bnb_4bit_quant_storage_dtype bfloat16");
  r = import_accelerate(yaml_tree("accelerate/peft-fsdp_config_qlora.yaml"), o);
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.data_parallel_size == 2);
  CHECK_FALSE(r.input.global_batch_size);  // 2 × 2 × 2 ranks follows the ranks
  CHECK(r.input.num_microbatches == 2);
  CHECK(r.input.peft == Peft::qlora);
  CHECK(r.input.params_dtype == Dtype::nf4);
  CHECK(r.input.compute_dtype == Dtype::bf16);  // --bf16 True over mixed_precision 'no'
  // The file's fsdp_offload_params true is set over the launcher's flag, as accelerate does.
  CHECK(r.input.offload_params == true);
  CHECK(has_line(r.ignored, "accelerate launch --fsdp_offload_params false: the file's fsdp_config.fsdp_offload_params (true) is set over it"));
}
#endif

TEST_CASE("an import leaves open what its file leaves open: the merged config's problems name the file's reason",
          "[import][unresolved]") {
  // torchtune's 8B_qlora_single_device recipe: tokenizer.max_seq_len null and no packing, so the
  // length follows the data. Over an empty base (the CLI without --base, the page's import) the
  // config lacks seq_length, and the problem says why; over a base that gives it, nothing is open.
  const std::string recipe = R"({"model": {"_component_": "torchtune.models.llama3_1.qlora_llama3_1_8b",
      "lora_attn_modules": ["q_proj", "v_proj", "output_proj"], "lora_rank": 8, "lora_alpha": 16},
      "tokenizer": {"_component_": "torchtune.models.llama3.llama3_tokenizer", "max_seq_len": null},
      "dataset": {"_component_": "torchtune.datasets.alpaca_cleaned_dataset", "packed": false},
      "batch_size": 2, "optimizer": {"_component_": "torch.optim.AdamW", "lr": 3e-4},
      "dtype": "bf16", "enable_activation_checkpointing": true})";
  ImportOptions options;
  options.gpus = 1;
  const ImportOverBase open = import_over_base(ImportKind::torchtune, recipe, "{}", options);
  REQUIRE(open.ok());
  REQUIRE(open.unresolved.size() == 1);
  CHECK(open.unresolved[0].field == "seq_length");
  CHECK(open.unresolved[0].message ==
        "seq_length: is required (a positive integer): the recipe's tokenizer.max_seq_len is null and dataset.packed is false, so "
        "batches are padded to their longest sample: give that length");
  const ImportOverBase given = import_over_base(ImportKind::torchtune, recipe, R"({"seq_length": 2048})", options);
  REQUIRE(given.ok());
  CHECK(given.unresolved.empty());
  CHECK(given.config.seq_length == 2048);
}

TEST_CASE("a key at the wrong nesting is listed as ignored with where the framework reads it", "[import][nesting]") {
  // An axolotl sequence_len indented under a dataset entry: YAML accepts it, axolotl reads only the
  // top-level key, and the run takes the default 512. A torchtune max_seq_len at the top level:
  // torchtune reads tokenizer.max_seq_len.
  ImportOptions options;
  options.gpus = 1;
  const ImportResult axolotl = import_axolotl(R"({"base_model": "meta-llama/Meta-Llama-3-8B", "adapter": "lora",
      "lora_r": 8, "lora_target_linear": true, "micro_batch_size": 1,
      "datasets": [{"path": "mhenrichsen/alpaca_2k_test", "type": "alpaca", "sequence_len": 4096}]})", options);
  REQUIRE(axolotl.ok());
  CHECK(axolotl.input.seq_length == 512);
  CHECK(has_line(axolotl.ignored, "datasets[0].sequence_len: at the wrong nesting, not read; the framework reads it as "
                                  "sequence_len, which the file does not set"));
  const ImportResult torchtune = import_torchtune(R"({"model": {"_component_": "torchtune.models.llama3_1.lora_llama3_1_8b",
      "lora_attn_modules": ["q_proj"], "lora_rank": 8, "lora_alpha": 16},
      "tokenizer": {"_component_": "torchtune.models.llama3.llama3_tokenizer"}, "max_seq_len": 4096,
      "dataset": {"_component_": "torchtune.datasets.alpaca_cleaned_dataset"}, "batch_size": 2})", options);
  REQUIRE(torchtune.ok());
  CHECK(has_line(torchtune.ignored, "max_seq_len: at the wrong nesting, not read; the framework reads it as "
                                    "tokenizer.max_seq_len, which the file does not set"));
  // Listed once: not again as an unknown key.
  for (const std::string& line : torchtune.ignored) CHECK(line.find("max_seq_len: not a key trainmem reads") == std::string::npos);
}

TEST_CASE("an import names the source's own key for each field it read from one key", "[import]") {
  // ImportResult::keys: the framework's words, which the page shows beside trainmem's.
  auto key_of = [](const ImportResult& r, std::string_view field) -> std::string {
    for (const auto& [f, key] : r.keys)
      if (f == field) return key;
    return "";
  };
#ifndef __EMSCRIPTEN__  // the YAML reader is native only
  // torchtune's recipe: batch_size 4 (the recipe's line 57), lora_rank 64.
  const ImportResult tune = import_torchtune(yaml_tree("torchtune/llama3_2-3B_lora_single_device.yaml"), {});
  REQUIRE(tune.ok());
  CHECK(key_of(tune, "micro_batch_size") == "batch_size");
  CHECK(key_of(tune, "lora_rank") == "model.lora_rank");
  // global_batch_size is a product of keys (batch_size × gradient_accumulation_steps × ...): none.
  CHECK(key_of(tune, "global_batch_size").empty());
#endif
  // Megatron-LM's flags.
  const ImportResult megatron = import_megatron_args(
      "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --micro-batch-size 2 "
      "--num-experts 8 --sequence-parallel --tensor-model-parallel-size 2");
  REQUIRE(megatron.ok());
  CHECK(key_of(megatron, "num_layers") == "--num-layers");
  CHECK(key_of(megatron, "num_moe_experts") == "--num-experts");
  CHECK(key_of(megatron, "sequence_parallel") == "--sequence-parallel");
}

TEST_CASE("a model that is no preset is asked for by rule id and name, never only in words", "[import]") {
  // axolotl names its model by Hub repository; one that no preset was taken from leaves the
  // import unable to count the model: the issue on base_model carries k_model_not_a_preset and the
  // result the repository, so a view asks for the config.json without reading the message.
  const ImportOverBase r = import_over_base(ImportKind::axolotl, R"({"base_model": "Qwen/Qwen2.5-14B", "sequence_len": 2048,
      "micro_batch_size": 1, "gradient_accumulation_steps": 1})", "{}", ImportOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.model_asked == "Qwen/Qwen2.5-14B");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].field == "base_model");
  CHECK(r.issues[0].rule == k_model_not_a_preset);
  CHECK(r.issues[0].message == "base_model: \"Qwen/Qwen2.5-14B\" is not the Hugging Face repository of a trainmem preset; give its config.json with --model");
  // A preset's repository is no question.
  const ImportOverBase known = import_over_base(ImportKind::axolotl, R"({"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 2048,
      "micro_batch_size": 1, "gradient_accumulation_steps": 1})", "{}", ImportOptions{});
  CHECK(known.model_asked.empty());
}

TEST_CASE("axolotl's newer FSDP form: fsdp_config alone turns FSDP on; attn_implementation names the kernel") {
  // axolotl loaders/model.py @ 067b021c is_fsdp_enabled: fsdp_config or fsdp; setup_fsdp_envs
  // passes offload_params, reshard_after_forward and activation_checkpointing to accelerate,
  // whose plugin reshards after forward unless told not to.
  const auto with = [](const std::string& more) {
    ImportOptions o;
    o.gpus = 8;
    return import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1, "sequence_len": 2048, )" + more + "}", o);
  };
  ImportResult r = with(R"("fsdp_version": 2, "fsdp_config": {"auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "reshard_after_forward": true})");
  REQUIRE(r.ok());
  CHECK(r.input.framework == Framework::fsdp2);
  CHECK(r.input.fsdp_version == 2);
  CHECK(r.input.zero_stage == 3);
  CHECK(r.input.data_parallel_size == 8);
  r = with(R"("fsdp_version": 2, "fsdp_config": {"reshard_after_forward": false})");
  REQUIRE(r.ok());
  CHECK(r.input.zero_stage == 2);
  r = with(R"("fsdp_version": 2, "fsdp_config": {"offload_params": true, "activation_checkpointing": true})");
  REQUIRE(r.ok());
  CHECK(r.input.offload_params == true);
  CHECK(r.input.recompute_granularity == RecomputeGranularity::full);
  // attn_implementation: eager keeps the scores; any other kernel, a Hub path included, its statistics.
  r = with(R"("attn_implementation": "eager")");
  REQUIRE(r.ok());
  CHECK(r.input.attention_backend == AttentionBackend::unfused);
  r = with(R"("attn_implementation": "kernels-community/vllm-flash-attn3")");
  REQUIRE(r.ok());
  CHECK(r.input.attention_backend == AttentionBackend::flash);
  r = with(R"("fsdp_config": "full_shard")");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "fsdp_config: must be a mapping of FSDP options, got \"full_shard\"");
  r = with(R"("attn_implementation": "fast")");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message ==
        "attn_implementation: must be eager, sdpa, flash_attention_2, flash_attention_3, flex_attention, xformers, sage, fp8 "
        "or a Hub kernel path, got \"fast\"");
}

TEST_CASE("accelerate: gpt-oss with no attention flag runs eager attention (transformers has no SDPA path for it)") {
  ImportOptions o;
  o.preset = "gpt-oss-20b";
  o.gpus = 1;
  o.overrides = words("--per_device_train_batch_size 1 --max_seq_length 2048 --use_peft --bf16");
  const ImportResult r = import_accelerate(R"({"distributed_type": "NO", "mixed_precision": "bf16"})", o);
  REQUIRE(r.ok());
  CHECK(r.input.attention_sinks == true);
  CHECK(r.input.attention_backend == AttentionBackend::unfused);
  // A model without sinks keeps transformers' default sdpa (flash).
  o.preset = "llama-3.1-8b";
  const ImportResult llama = import_accelerate(R"({"distributed_type": "NO", "mixed_precision": "bf16"})", o);
  REQUIRE(llama.ok());
  CHECK(llama.input.attention_backend == AttentionBackend::flash);
  // The flag reads transformers' names as axolotl's attn_implementation does (mapping.cpp
  // hf_attention), without axolotl's own ones: xformers is no transformers implementation.
  const auto flag = [&](const std::string& name) {
    o.overrides = words("--per_device_train_batch_size 1 --max_seq_length 2048 --use_peft --bf16 --attn_implementation " + name);
    return import_accelerate(R"({"distributed_type": "NO", "mixed_precision": "bf16"})", o);
  };
  for (const char* fused : {"sdpa", "flash_attention_3", "flex_attention", "kernels-community/vllm-flash-attn3"}) {
    CAPTURE(fused);
    const ImportResult r2 = flag(fused);
    REQUIRE(r2.ok());
    CHECK(r2.input.attention_backend == AttentionBackend::flash);
  }
  const ImportResult xformers = flag("xformers");
  REQUIRE(xformers.issues.size() == 1);
  CHECK(xformers.issues[0].message ==
        "--attn_implementation: must be eager, sdpa, flash_attention_2, flash_attention_3, flex_attention or a Hub kernel "
        "path, got \"xformers\"");
}

#ifndef __EMSCRIPTEN__  // the YAML reader is native only
TEST_CASE("an import fixes the accumulation, not the global batch: another GPU count keeps it (issue 32)", "[import]") {
  // torchtune's 70B LoRA recipe on 8 GPUs with gradient_accumulation_steps 4 (an override); the
  // user then runs it on 2 GPUs. torchtune keeps batch_size and the accumulation per rank (the
  // global batch is batch × GPUs × accumulation: 2 × 8 × 4 = 64, then 2 × 2 × 4 = 16), so the
  // config must resolve on 2 GPUs with the same 4 microbatches, not fail on a global batch of 64.
  ImportOptions options;
  options.gpus = 8;
  options.overrides = {"gradient_accumulation_steps=4", "tokenizer.max_seq_len=2048"};
  ImportResult r = import_torchtune(yaml_tree("torchtune/llama3_1-70B_lora.yaml"), options);
  REQUIRE(r.ok());
  CHECK(r.input.num_microbatches == 4);
  CHECK_FALSE(r.input.global_batch_size);
  CHECK(has_line(r.read, "num_microbatches ← gradient_accumulation_steps = 4"));
  ConfigInput two = r.input;
  two.data_parallel_size = 2;
  const Resolved on_two = resolve(two);
  REQUIRE(on_two.ok());
  CHECK(on_two.config.num_microbatches == 4);
  CHECK(on_two.config.micro_batch_size == 2);
  // DeepSpeed with a train_batch_size of its own fixes the global batch instead
  // (_set_batch_related_parameters): 2 GPUs then need 4 × 2 × 1 = 8 to divide it, and 32 does.
  ImportOptions ds;
  ds.gpus = 8;
  r = import_deepspeed(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}})", ds);
  REQUIRE(r.ok());
  CHECK(r.input.global_batch_size == 32);
  CHECK_FALSE(r.input.num_microbatches);
  CHECK(has_line(r.read, "global_batch_size ← micro × gradient_accumulation_steps × ranks"));
}
#endif

TEST_CASE("evaluation between steps: the Trainer's eval_strategy", "[evaluation]") {
  // transformers' TrainingArguments: eval_strategy (evaluation_strategy before 4.46) "steps" or
  // "epoch" evaluates per_device_eval_batch_size sequences per GPU, 8 unless given; "no" (the
  // default) never does.
  // The same launch each time, with its evaluation flags.
  const auto launch = [](const std::string& eval_flags) {
    ImportOptions o;
    o.overrides = words("train.py --model_name_or_path meta-llama/Llama-3.1-8B --bf16 True --per_device_train_batch_size 1 " +
                        eval_flags);
    return import_accelerate(R"({"distributed_type": "NO", "mixed_precision": "bf16"})", o);
  };
  ImportResult r = launch("--eval_strategy steps --eval_steps 50");
  REQUIRE(r.ok());
  CHECK(r.input.eval_micro_batch_size == 8);
  CHECK(has_line(r.assumed, "TrainingArguments' default 8"));
  r = launch("--evaluation_strategy epoch --per_device_eval_batch_size 2");
  REQUIRE(r.ok());
  CHECK(r.input.eval_micro_batch_size == 2);
  CHECK_FALSE(has_line(r.ignored, "per_device_eval_batch_size"));
  r = launch("--eval_strategy no --per_device_eval_batch_size 2");
  REQUIRE(r.ok());
  CHECK_FALSE(r.input.eval_micro_batch_size.has_value());
  r = launch("--eval_strategy sometimes");
  REQUIRE(r.issues.size() == 1);
  CHECK(r.issues[0].message == "--eval_strategy: must be \"no\", \"steps\" or \"epoch\", got \"sometimes\"");
  // compute_metrics is code: the importer assumes the loss alone and says how to set it; the
  // arguments that fix what is kept are read.
  r = launch("--eval_strategy steps");
  REQUIRE(r.ok());
  CHECK(r.input.eval_predictions == std::optional<EvalPredictions>(EvalPredictions::none));
  CHECK(has_line(r.assumed, "compute_metrics is passed in the script"));
  r = launch("--eval_strategy steps --eval_accumulation_steps 4");
  REQUIRE(r.ok());
  CHECK(r.input.eval_accumulation_steps == std::optional<int64_t>(4));
  CHECK_FALSE(has_line(r.ignored, "eval_accumulation_steps"));
  r = launch("--eval_strategy steps --batch_eval_metrics True");
  REQUIRE(r.ok());
  CHECK(r.input.eval_accumulation_steps == std::optional<int64_t>(1));
  r = launch("--eval_strategy steps --prediction_loss_only True");
  REQUIRE(r.ok());
  CHECK(r.input.eval_predictions == std::optional<EvalPredictions>(EvalPredictions::none));
  CHECK_FALSE(has_line(r.assumed, "compute_metrics"));
}

#ifndef __EMSCRIPTEN__  // the YAML reader is native only
TEST_CASE("evaluation between steps: axolotl's val_set_size and eval_batch_size", "[evaluation]") {
  // axolotl: an evaluation set (val_set_size > 0, or test_datasets) evaluates eval_batch_size
  // sequences per GPU, micro_batch_size when unset, unless eval_strategy is "no"; val_set_size's
  // default 0.0 has no evaluation set.
  // The example's own val_set_size (0.05) is taken out, each case gives its own.
  std::string lora = fixture("axolotl/llama-3-lora-8b.yml");
  const size_t line = lora.find("val_set_size: 0.05\n");
  REQUIRE(line != std::string::npos);
  lora.erase(line, std::string("val_set_size: 0.05\n").size());
  const auto axolotl = [&](const std::string& more) {
    const DocumentTree tree = yaml_document_tree(lora + "\n" + more, "lora.yml");
    REQUIRE(tree.ok());
    return import_axolotl(tree.json, {});
  };
  const ImportResult absent = axolotl("");
  REQUIRE(absent.ok());
  CHECK_FALSE(absent.input.eval_micro_batch_size.has_value());
  const ImportResult none = axolotl("val_set_size: 0\n");
  REQUIRE(none.ok());
  CHECK_FALSE(none.input.eval_micro_batch_size.has_value());
  const ImportResult share = axolotl("val_set_size: 0.05\n");
  REQUIRE(share.ok());
  CHECK(share.input.eval_micro_batch_size == share.input.micro_batch_size);
  CHECK(has_line(share.assumed, "axolotl uses micro_batch_size"));
  const ImportResult own = axolotl("val_set_size: 0.05\neval_batch_size: 4\n");
  REQUIRE(own.ok());
  CHECK(own.input.eval_micro_batch_size == 4);
  const ImportResult off = axolotl("val_set_size: 0.05\neval_strategy: \"no\"\n");
  REQUIRE(off.ok());
  CHECK_FALSE(off.input.eval_micro_batch_size.has_value());
  const ImportResult bad = axolotl("val_set_size: -1\n");
  CHECK_FALSE(bad.ok());
}
#endif

#ifndef __EMSCRIPTEN__  // the YAML reader and the fixtures are native only
TEST_CASE("torch.utils.checkpoint's mode from each importer: use_reentrant read, each framework's default assumed") {
  // axolotl: the Llama 3 70B QLoRA example writes gradient_checkpointing_kwargs: use_reentrant: true.
  ImportOptions two;
  two.gpus = 2;
  ImportResult r = import_axolotl(yaml_tree("axolotl/llama-3-qlora-fsdp-70b.yaml"), two);
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == true);
  CHECK(has_line(r.read, "gradient_checkpointing_kwargs.use_reentrant"));
  // Unset: normalize_config's {"use_reentrant": True}; with rl, the builder's False.
  const std::string axolotl = R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1, "sequence_len": 512,
    "gradient_checkpointing": true)";
  r = import_axolotl(axolotl + "}", {});
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == true);
  r = import_axolotl(axolotl + R"(, "rl": "dpo"})", {});
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == false);
  r = import_axolotl(axolotl + R"(, "gradient_checkpointing_kwargs": {"use_reentrant": false}})", {});
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == false);
  r = import_axolotl(axolotl + R"(, "gradient_checkpointing_kwargs": {"use_reentrant": "yes"}})", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.issues[0].field == "gradient_checkpointing_kwargs.use_reentrant");
  // No checkpointing: no mode.
  r = import_axolotl(R"({"base_model": "meta-llama/Llama-3.1-8B", "micro_batch_size": 1, "sequence_len": 512})", {});
  REQUIRE(r.ok());
  CHECK_FALSE(r.input.checkpoint_reentrant.has_value());

  // The Trainer's arguments (DeepSpeed): gradient_checkpointing_kwargs as a mapping.
  ImportOptions ds;
  ds.gpus = 8;
  ds.preset = "llama-2-70b";
  ds.hf_args_json = R"({"gradient_checkpointing": true, "gradient_checkpointing_kwargs": {"use_reentrant": false}})";
  r = import_deepspeed(fixture("deepspeed/zero3_bf16.json"), ds);
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == false);
  ds.hf_args_json = R"({"gradient_checkpointing": true})";
  r = import_deepspeed(fixture("deepspeed/zero3_bf16.json"), ds);
  REQUIRE(r.ok());
  CHECK_FALSE(r.input.checkpoint_reentrant.has_value());  // transformers' own default (the field's)
  ds.hf_args_json = R"({"gradient_checkpointing": true, "gradient_checkpointing_kwargs": 3})";
  r = import_deepspeed(fixture("deepspeed/zero3_bf16.json"), ds);
  REQUIRE_FALSE(r.ok());

  // accelerate with PEFT's examples/sft/train.py: --use_reentrant, else its default False; the
  // Trainer's --gradient_checkpointing_kwargs as JSON text.
  const std::string cfg = R"({"distributed_type": "NO", "mixed_precision": "bf16"})";
  ImportOptions o;
  o.overrides = words("train.py " + k_peft_common + "--use_reentrant True --per_device_train_batch_size 1");
  r = import_accelerate(cfg, o);
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == true);
  o.overrides = words("train.py " + k_peft_common + "--per_device_train_batch_size 1");
  r = import_accelerate(cfg, o);
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == false);
  CHECK(has_line(r.assumed, "examples/sft/train.py"));
  o.overrides = {"train.py", "--model_name_or_path", "meta-llama/Llama-3.1-8B", "--gradient_checkpointing", "True",
                 "--gradient_checkpointing_kwargs", R"({"use_reentrant": false})"};
  r = import_accelerate(cfg, o);
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == false);
  // accelerate's own FSDP activation checkpointing wraps with CheckpointImpl.NO_REENTRANT.
  o.overrides = words("train.py --model_name_or_path meta-llama/Llama-3.1-8B --bf16 True");
  r = import_accelerate(R"({"distributed_type": "FSDP", "num_processes": 8, "fsdp_config": {"fsdp_version": 2,
    "fsdp_activation_checkpointing": true}})", o);
  REQUIRE(r.ok());
  CHECK(r.input.checkpoint_reentrant == false);
}
#endif
