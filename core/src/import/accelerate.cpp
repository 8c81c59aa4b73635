// accelerate configs (YAML, as a JSON tree) with the launch command -> trainmem fields.
//
// A Hugging Face run is an accelerate config (what `accelerate config` writes) and the command
// that launches the training script: `accelerate launch --config_file CONFIG.yaml train.py
// --per_device_train_batch_size 8 ...`. The launcher's flags override the file, the script's
// flags are the Trainer's arguments (transformers TrainingArguments, TRL's SFTConfig) and the
// script's own (the model, LoRA and quantization switches).
//
// Sources:
//   [cfg]    huggingface/accelerate src/accelerate/commands/config/config_args.py ClusterConfig:
//            distributed_type (NO, MULTI_GPU, DEEPSPEED, FSDP, MEGATRON_LM, XLA, MULTI_CPU and the
//            other accelerators' MULTI_*), mixed_precision (no | fp16 | bf16 | fp8),
//            num_processes, num_machines, use_cpu, deepspeed_config, fsdp_config, dynamo_config
//   [launch] src/accelerate/commands/launch.py @ 79a8426416a5b67d7e0e101ce20c8e805af88b71
//            _validate_launch_command: a top-level flag (--num_processes, --mixed_precision, ...)
//            given on the command line wins over the file's value, but the file's deepspeed_config
//            and fsdp_config keys are set over the flags unconditionally (so a flag counts only
//            for a key the file leaves out); --multi_gpu, --use_deepspeed and --use_fsdp take no
//            value, --fsdp_offload_params / --zero3_init_flag take "true" / "false"; dashes are
//            accepted for underscores
//   [ds]     src/accelerate/utils/dataclasses.py @ 24d8b63fc32aff586ebac7bd62874916cabe4bd0
//            DeepSpeedPlugin.__post_init__: without deepspeed_config_file the DeepSpeed config is
//            {train_batch_size: "auto", train_micro_batch_size_per_gpu: "auto",
//            gradient_accumulation_steps: the plugin's (else "auto"), zero_optimization: {stage,
//            offload_optimizer.device, offload_param.device}}; the mixed precision sets
//            bf16 / fp16 enabled; transformers' HfTrainerDeepSpeedConfig then fills the "auto"s
//            from the Trainer's arguments (deepspeed.cpp [hf])
//   [fsdp]   the same file, FullyShardedDataParallelPlugin: sharding_strategy FULL_SHARD (1),
//            SHARD_GRAD_OP (2), NO_SHARD (3), HYBRID_SHARD (4), HYBRID_SHARD_ZERO2 (5);
//            fsdp_offload_params is CPUOffload(offload_params=True) (FSDP2: CPUOffloadPolicy):
//            the sharded parameters and their gradients live on the CPU and the optimizer steps
//            there; fsdp_activation_checkpointing checkpoints each auto-wrapped transformer layer.
//            FSDP2 (fsdp_version 2, in a later file: @ b0d8fa95) ignores the sharding strategy
//            (a deprecation warning) and takes fsdp_reshard_after_forward, a boolean, default true
//   [ta]     transformers training_args.py TrainingArguments.__post_init__: bf16 / fp16 set
//            ACCELERATE_MIXED_PRECISION, so the Trainer's precision wins over the file's
//   [sft]    huggingface/peft examples/sft/train.py ModelArguments @
//            0c248e9bc5fdfcf4d0f7c27464b52c026ce7e582 (use_peft_lora, lora_r 64, lora_dropout 0.1,
//            lora_target_modules "q_proj,k_proj,v_proj,o_proj,down_proj,up_proj,gate_proj" or
//            "all-linear", use_4bit_quantization, use_8bit_quantization, use_nested_quant,
//            bnb_4bit_quant_storage_dtype, use_flash_attn, chat_template_format) and utils.py
//            create_and_prepare_model @ 0106572395656923b710306c264596b94d028d05: the model is
//            loaded in the 4-bit storage dtype when it is a float, else fp32; attention
//            flash_attention_2 with use_flash_attn, else "eager"; chat_template_format chatml or
//            zephyr adds its special tokens and resize_token_embeddings(pad_to_multiple_of=8)
//   [trl]    huggingface/trl trl/trainer/model_config.py ModelConfig @
//            bc13ae6d91667d42f5ad74e211b5db703dc4377e: use_peft, lora_r 16, lora_dropout 0.05,
//            lora_target_modules None (PEFT's default for the model type: q_proj, v_proj for
//            Llama), load_in_4bit, load_in_8bit, torch_dtype, attn_implementation
#include <algorithm>

#include "mapping.hpp"

namespace trainmem {
namespace {

using mapping::json;
using mapping::Mapper;
using mapping::show;

// The config file's keys that do not change memory.
const std::vector<std::string_view> k_no_memory = {
    "compute_environment", "debug", "downcast_bf16", "machine_rank", "main_training_function", "rdzv_backend",
    "same_network", "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "main_process_ip", "main_process_port",
    "gpu_ids", "enable_cpu_affinity", "tpu_name", "tpu_zone", "commands", "command_file",
};
// ... and the keys under deepspeed_config and fsdp_config that do not.
const std::vector<std::string_view> k_no_memory_inside = {
    "deepspeed_config.deepspeed_multinode_launcher", "deepspeed_config.zero3_save_16bit_model",
    "deepspeed_config.gradient_clipping", "deepspeed_config.deepspeed_hostfile", "deepspeed_config.deepspeed_exclusion_filter",
    "deepspeed_config.deepspeed_inclusion_filter", "deepspeed_config.offload_optimizer_nvme_path",
    "deepspeed_config.offload_param_nvme_path", "fsdp_config.fsdp_state_dict_type", "fsdp_config.fsdp_sync_module_states",
    "fsdp_config.fsdp_auto_wrap_policy", "fsdp_config.fsdp_transformer_layer_cls_to_wrap",
    "fsdp_config.fsdp_min_num_params", "fsdp_config.fsdp_cpu_ram_efficient_loading", "fsdp_config.fsdp_use_orig_params",
};

// The launcher's flags that are a deepspeed_config or fsdp_config key of the same name [launch].
const std::vector<std::string_view> k_launch_deepspeed = {
    "zero_stage", "offload_optimizer_device", "offload_param_device", "gradient_accumulation_steps",
    "zero3_init_flag", "zero3_save_16bit_model", "deepspeed_config_file", "gradient_clipping",
    "deepspeed_multinode_launcher",
};
// The launcher's flags with no memory effect.
const std::vector<std::string_view> k_launch_no_memory = {
    "main_process_ip", "main_process_port", "machine_rank", "rdzv_backend", "rdzv_conf", "max_restarts",
    "gpu_ids", "num_cpu_threads_per_process", "log_dir", "tee", "role", "main_training_function",
    "deepspeed_hostfile", "deepspeed_exclusion_filter", "deepspeed_inclusion_filter", "same_network", "debug",
    "quiet", "q", "monitor_interval", "module", "m", "no_python",
};

// The script arguments that do not change memory (TrainingArguments, SFTConfig, PEFT's examples).
const std::vector<std::string_view> k_script_no_memory = {
    "seed", "dataset_name", "dataset_config", "dataset_text_field", "splits", "add_special_tokens",
    "append_concat_token", "num_train_epochs", "max_steps", "logging_steps", "log_level", "logging_strategy",
    "save_strategy", "save_steps", "eval_steps", "push_to_hub",
    "hub_private_repo", "hub_strategy", "hub_model_id", "learning_rate", "lr_scheduler_type", "weight_decay",
    "warmup_steps", "warmup_ratio", "max_grad_norm", "output_dir", "report_to",
    "run_name", "logging_dir", "save_total_limit", "lora_alpha", "bnb_4bit_compute_dtype",
    "bnb_4bit_quant_type", "model_revision", "trust_remote_code",
    "lora_task_type", "use_rslora", "overwrite_output_dir", "do_train", "do_eval", "remove_unused_columns",
    "dataloader_num_workers", "dataset_num_proc", "adam_beta1", "adam_beta2", "adam_epsilon", "ddp_timeout",
    "resume_from_checkpoint", "include_tokens_per_second",
    "chat_template_path", "use_unsloth", "tf32", "bf16_full_eval", "fp16_full_eval", "save_only_model",
};

// FullyShardedDataParallelPlugin's sharding strategies [fsdp], in the order of their 1-based codes.
const std::vector<std::string_view> k_fsdp_strategies = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                                         "HYBRID_SHARD_ZERO2"};

bool listed(const std::vector<std::string_view>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

using mapping::argument_value;

class AccelerateReader : mapping::Reader {
 public:
  AccelerateReader(json& tree, const ImportOptions& options, ImportResult& out)
      : Reader(tree, options, out), tree_(tree) {}
  void run();

 private:
  json& tree_;
  json args_ = json::object();  // the script's arguments, with --hf-args under them
  std::optional<int64_t> launcher_world_;  // torchrun's or deepspeed's processes
  std::string launcher_;
  int64_t gpus_ = 1;
  std::string distributed_;
  std::string precision_ = "fp32", precision_why_;  // the training dtype and why
  std::string load_dtype_ = "fp32", load_why_;      // the dtype the model is loaded in

  mapping::TrainerArguments trainer() const { return {args_, "--"}; }
  void read_launch_line();
  void read_layout();
  void read_trainer_fsdp_config(bool trainer_fsdp);
  void read_model();
  void read_adapter();
  void read_precision();
  void read_deepspeed();
  void read_fsdp();
  void read_training();
  void read_kbit_upcast();
  bool zero3_ = false;  // deepspeed_config.zero_stage 3
};

// The launch command (mapping::read_launch_command): `accelerate launch`'s flags set the tree as
// the launcher does [launch]; another launcher's flags are listed as not read; the script's flags
// are the Trainer's arguments, over --hf-args.
void AccelerateReader::read_launch_line() {
  const std::optional<mapping::LaunchCommand> command = mapping::read_launch_command(options_, out_.issues);
  if (!command) return;
  launcher_ = command->launcher;
  // torchrun's and deepspeed's launchers give the world by their own flags, unless --gpus does.
  if ((launcher_ == "torchrun" || launcher_ == "deepspeed") && options_.gpus <= 0) {
    launcher_world_ = mapping::launcher_world(*command, out_.issues);
    if (!out_.ok()) return;
  }
  for (const auto& [name, value] : command->flags) {
    const std::string flag = command->launcher + " --" + name;
    if (command->launcher != "accelerate launch") {
      const bool world = name == "nproc_per_node" || name == "nnodes" || name == "num_gpus" || name == "num_nodes";
      if (!world) out_.ignored.push_back(flag + ": a launcher flag trainmem does not read");
      continue;
    }
    if (name == "config_file") {
      out_.read.push_back("accelerate launch --config_file " + value + ": the config file given");
    } else if (name == "num_processes" || name == "num_machines" || name == "mixed_precision") {
      tree_[name] = name == "mixed_precision" ? json(value) : argument_value(value);  // "no" is a precision there
      out_.read.push_back(name + " ← " + flag + " = " + value + " (the launcher's flag wins over the file)");
    } else if (name == "use_deepspeed" || name == "use_fsdp" || name == "multi_gpu" || name == "cpu") {
      const std::string type = name == "use_deepspeed" ? "DEEPSPEED" : name == "use_fsdp" ? "FSDP" : name == "multi_gpu" ? "MULTI_GPU" : "";
      if (type.empty()) return m_.fail(flag, "runs on the CPU: trainmem estimates GPU memory");
      tree_["distributed_type"] = type;
      out_.read.push_back("distributed_type ← " + flag + " (" + type + ")");
    } else if (listed(k_launch_deepspeed, name) || name.rfind("fsdp_", 0) == 0) {
      // The file's deepspeed_config / fsdp_config keys are set over the flags [launch].
      const std::string section = name.rfind("fsdp_", 0) == 0 ? "fsdp_config" : "deepspeed_config";
      json& block = tree_[section];
      if (!block.is_object() && !block.is_null()) continue;  // the section's reader names it
      if (block.is_object() && block.contains(name) && !block[name].is_null()) {
        out_.ignored.push_back(flag + " " + value + ": the file's " + section + "." + name + " (" + show(block[name]) +
                               ") is set over it, as accelerate launch does");
      } else {
        block[name] = argument_value(value);
        out_.read.push_back(section + "." + name + " ← " + flag + " = " + value);
      }
    } else if (name == "dynamo_backend") {
      json& dynamo = tree_["dynamo_config"];
      if (!dynamo.is_object() && !dynamo.is_null()) continue;  // read_training names it
      dynamo["dynamo_backend"] = value;
      out_.read.push_back("dynamo_config.dynamo_backend ← " + flag + " = " + value);
    } else if (!listed(k_launch_no_memory, name)) {
      out_.ignored.push_back(flag + ": an accelerate launch flag trainmem does not read");
    }
  }
  std::optional<json> args = mapping::trainer_arguments(options_, command->script_args, out_.issues);
  if (args) args_ = std::move(*args);
}

void AccelerateReader::read_layout() {
  const std::optional<std::string> type = m_.string("distributed_type");
  if (!type) return;
  distributed_ = *type;
  if (m_.boolean("use_cpu").value_or(false)) return m_.fail("use_cpu", "true runs on the CPU: trainmem estimates GPU memory");
  if (distributed_ == "MEGATRON_LM")
    return m_.fail("distributed_type", "\"MEGATRON_LM\": accelerate's Megatron-LM plugin is not read here; give Megatron-LM's arguments to import megatron-args");
  if (distributed_ == "XLA" || distributed_ == "TPU" || distributed_ == "MULTI_CPU")
    return m_.fail("distributed_type", trainmem::quoted(distributed_) + " does not run on GPUs: trainmem estimates GPU memory");
  static const std::vector<std::string_view> known = {"NO", "MULTI_GPU", "DEEPSPEED", "FSDP", "MULTI_XPU", "MULTI_NPU",
                                                      "MULTI_MLU", "MULTI_MUSA", "MULTI_SDAA", "MULTI_HPU"};
  if (!listed(known, distributed_))
    return m_.fail("distributed_type", "must be one of NO, MULTI_GPU, DEEPSPEED, FSDP (or another accelerator's MULTI_*), got " + trainmem::quoted(distributed_));
  // The Trainer's own --deepspeed (TrainingArguments.deepspeed: a DeepSpeed config file) makes
  // the run DeepSpeed's whatever the accelerate config says (transformers training_args.py:
  // it builds the HfTrainerDeepSpeedConfig accelerate's DeepSpeed plugin runs).
  if (args_.contains("deepspeed") && !args_["deepspeed"].is_null() && args_["deepspeed"] != false) {
    // TrainingArguments.deepspeed is a path, or the config itself as a dict (Union[dict, str];
    // integrations/deepspeed.py HfDeepSpeedConfig takes either): a bare --deepspeed names none.
    if (!args_["deepspeed"].is_string() && !args_["deepspeed"].is_object())
      return m_.fail("--deepspeed", "names the DeepSpeed config file the Trainer reads (or is that config as a "
                                    "mapping in --hf-args), got " + show(args_["deepspeed"]));
    if (distributed_ == "FSDP") return m_.fail("--deepspeed", "the Trainer's DeepSpeed config and distributed_type FSDP cannot both run");
    if (distributed_ != "DEEPSPEED") {
      const std::string given = args_["deepspeed"].is_string() ? show(args_["deepspeed"]) : "(a DeepSpeed config in --hf-args)";
      out_.read.push_back("distributed_type ← --deepspeed " + given + " (the Trainer's DeepSpeed config; the file said " + distributed_ + ")");
    }
    distributed_ = "DEEPSPEED";
  }
  // The Trainer's own --fsdp (TrainingArguments.fsdp, transformers trainer_utils.py FSDPOption:
  // full_shard, shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2, offload, auto_wrap,
  // a blank-separated string or a list) makes the run FSDP's; the strategy and the offload go
  // where the accelerate config's fsdp_config would have them, unless the file has them.
  const json* fsdp = args_.contains("fsdp") ? &args_["fsdp"] : nullptr;
  if (fsdp && (fsdp->is_null() || *fsdp == false || *fsdp == "")) fsdp = nullptr;
  // The Trainer's fsdp_config first: its keys are the more specific, so --fsdp's options fill
  // only what neither it nor the file says.
  read_trainer_fsdp_config(fsdp != nullptr);
  if (!out_.ok()) return;
  if (fsdp) {
    if (distributed_ == "DEEPSPEED") return m_.fail("--fsdp", "and DeepSpeed cannot both run (the Trainer refuses --fsdp with --deepspeed)");
    std::vector<std::string> words;
    if (fsdp->is_string()) {
      mapping::ShellWords split = mapping::shell_words(fsdp->get<std::string>());
      if (!split.error.empty()) return m_.fail("--fsdp", split.error);
      words = std::move(split.words);
    } else if (fsdp->is_array()) {
      for (const json& w : *fsdp) {
        if (!w.is_string()) return m_.fail("--fsdp", "entries must be FSDP option names, got " + show(w));
        words.push_back(w.get<std::string>());
      }
    } else {
      return m_.fail("--fsdp", "must be FSDP options (full_shard, shard_grad_op, hybrid_shard, offload, auto_wrap, ...), got " + show(*fsdp));
    }
    std::string strategy;
    bool offload = false;
    for (const std::string& w : words) {
      const std::string lower = mapping::lowercase(w);
      const auto named = std::find_if(k_fsdp_strategies.begin(), k_fsdp_strategies.end(),
                                      [&](std::string_view s) { return mapping::lowercase(s) == lower; });
      if (named != k_fsdp_strategies.end()) {
        strategy = std::string(*named);
      } else if (lower == "offload") {
        offload = true;
      } else if (lower != "auto_wrap") {
        return m_.fail("--fsdp", trainmem::quoted(w) + " is not an FSDP option of the Trainer (full_shard, shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2, offload, auto_wrap)");
      }
    }
    json& block = tree_["fsdp_config"];
    if (block.is_null()) block = json::object();
    if (block.is_object()) {  // anything else: read_fsdp names it
      if (!strategy.empty() && !block.contains("fsdp_sharding_strategy")) block["fsdp_sharding_strategy"] = strategy;
      if (offload && !block.contains("fsdp_offload_params")) block["fsdp_offload_params"] = true;
    }
    out_.read.push_back("distributed_type ← --fsdp " + show(*fsdp) + " (the Trainer's FSDP" +
                        (distributed_ != "FSDP" ? "; the file said " + distributed_ : std::string()) + ")");
    distributed_ = "FSDP";
  }
  // The world: --gpus, else num_processes (the launcher's flag or the file's) [cfg], else
  // torchrun's or deepspeed's processes.
  if (options_.gpus > 0) {
    gpus_ = options_.gpus;
    m_.touch("num_processes");
  } else if (launcher_world_) {
    gpus_ = *launcher_world_;
    m_.touch("num_processes");
    out_.read.push_back("gpus ← " + launcher_ + "'s processes = " + number_text(double(gpus_)));
  } else if (m_.has("num_processes")) {
    const std::optional<int64_t> n = m_.integer("num_processes");
    if (!n) return;
    gpus_ = *n;
    out_.read.push_back("gpus ← num_processes = " + number_text(double(gpus_)));
  } else if (distributed_ == "FSDP" || distributed_ == "DEEPSPEED") {
    // Sharded over every process the launch starts, which neither the file nor a command says.
    mapping::ask_gpu_count(out_, "distributed_type " + distributed_, "neither num_processes nor a launch command says");
  } else {
    out_.assumed.push_back("gpus ← 1 (no num_processes and no --gpus)");
  }
  const int64_t machines = m_.has("num_machines") ? m_.integer("num_machines").value_or(1) : 1;
  if (!out_.ok()) return;
  if (gpus_ % machines != 0)
    return m_.fail("num_machines", number_text(double(machines)) + " must divide the " + number_text(double(gpus_)) + " processes (num_processes counts every machine's)");
  if (distributed_ == "NO" && gpus_ > 1)
    return m_.fail("distributed_type", "\"NO\" runs one process, but num_processes is " + number_text(double(gpus_)));
}

// The Trainer's --fsdp_config (TrainingArguments.fsdp_config): a mapping in --hf-args (a path
// names a file trainmem is not given). transformers drops a leading "fsdp_" from its keys and hands
// them to accelerate's FSDP plugin (training_args.py, the fsdp_config block; trainer.py builds the
// plugin from them): version, reshard_after_forward (FSDP2: a bool; FSDP1: the strategy's name),
// activation_checkpointing, offload and the prefetch options. Like --fsdp's options they fill the
// accelerate config's fsdp_config keys the file leaves out (and come before --fsdp's options, the
// less specific); the Trainer reads them for an FSDP run only.
void AccelerateReader::read_trainer_fsdp_config(bool trainer_fsdp) {
  if (!args_.contains("fsdp_config") || args_["fsdp_config"].is_null()) return;
  const json& given = args_["fsdp_config"];
  if (given.is_string())
    return m_.fail("--fsdp_config", trainmem::quoted(given.get<std::string>()) +
                                        ": give its keys as \"fsdp_config\": {...} in --hf-args (trainmem is not given the file)");
  if (!given.is_object()) return m_.fail("--fsdp_config", "must be a mapping of FSDP options, got " + show(given));
  if (distributed_ != "FSDP" && !trainer_fsdp) {
    out_.ignored.push_back("--fsdp_config: the Trainer reads it for an FSDP run only (--fsdp or distributed_type FSDP)");
    return;
  }
  static const std::vector<std::string_view> passed_on = {
      "activation_checkpointing", "offload_params", "backward_prefetch", "forward_prefetch",
      "cpu_ram_efficient_loading", "sync_module_states", "use_orig_params", "state_dict_type",
      "min_num_params", "transformer_layer_cls_to_wrap", "auto_wrap_policy"};
  static const std::vector<std::string_view> flags = {"activation_checkpointing", "offload_params", "forward_prefetch",
                                                      "cpu_ram_efficient_loading", "sync_module_states", "use_orig_params"};
  // transformers reads a flag as str_to_bool(str(value).lower()): true/false in any case.
  const auto as_flag = [](const json& value) -> std::optional<bool> {
    if (value.is_boolean()) return value.get<bool>();
    if (!value.is_string()) return std::nullopt;
    const std::string text = mapping::lowercase(value.get<std::string>());
    if (text == "true") return true;
    if (text == "false") return false;
    return std::nullopt;
  };
  json& block = tree_["fsdp_config"];
  if (block.is_null()) block = json::object();
  if (!block.is_object()) return;  // read_fsdp names it
  std::string filled, kept;
  for (const auto& [key, value] : given.items()) {
    const std::string base = key.rfind("fsdp_", 0) == 0 ? key.substr(5) : key;
    std::string target;
    json v = value;
    const std::string where = "--fsdp_config " + key;
    if (base == "version") {
      // int(fsdp_config["version"]): 1 or 2, a number or its text.
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      if (text != "1" && text != "2") return m_.fail(where, "must be 1 or 2, got " + show(value));
      target = "fsdp_version";
      v = text == "2" ? 2 : 1;
    } else if (base == "reshard_after_forward") {
      // FSDP2: a flag; FSDP1: the sharding strategy by name (full_shard, shard_grad_op, ...).
      const std::string lower = value.is_string() ? mapping::lowercase(value.get<std::string>()) : std::string();
      const auto named = std::find_if(k_fsdp_strategies.begin(), k_fsdp_strategies.end(),
                                      [&](std::string_view s) { return mapping::lowercase(s) == lower; });
      if (const std::optional<bool> flag = as_flag(value)) {
        target = "fsdp_reshard_after_forward";
        v = *flag;
      } else if (named != k_fsdp_strategies.end()) {
        target = "fsdp_sharding_strategy";
        v = std::string(*named);
      } else {
        return m_.fail(where, "must be true or false (FSDP2) or a sharding strategy (FSDP1: full_shard, shard_grad_op, "
                              "no_shard, hybrid_shard, hybrid_shard_zero2), got " + show(value));
      }
    } else if (listed(flags, base)) {
      const std::optional<bool> flag = as_flag(value);
      if (!flag) return m_.fail(where, "must be true or false, got " + show(value));
      target = "fsdp_" + base;
      v = *flag;
    } else if (listed(passed_on, base)) {
      target = "fsdp_" + base;
    } else if (base == "limit_all_gathers") {
      // FSDP1's rate limiter (torch/distributed/fsdp/_limiter_utils.py @ e6401a21, at most two
      // all-gathers in flight) is what trainmem's FSDP1 assumes; fully_shard (FSDP2) has no such
      // option. Without it the CPU may issue all-gathers ahead of the GPU: more gathered units
      // than trainmem counts, so it is named, not silently taken.
      const std::optional<bool> flag = as_flag(value);
      out_.ignored.push_back("--fsdp_config " + key + ": " +
                             (flag == false ? std::string("false is not modelled: FSDP1 without its rate limiter may hold more "
                                                          "gathered units than the two trainmem counts, so the estimate may read low")
                                            : std::string("FSDP1's rate limiter (at most two all-gathers in flight), as trainmem "
                                                          "assumes; FSDP2 has none")));
      continue;
    } else if (base.rfind("xla", 0) == 0) {
      out_.ignored.push_back("--fsdp_config " + key + ": XLA (TPU) FSDP is not modelled");
      continue;
    } else {
      out_.ignored.push_back("--fsdp_config " + key + ": not an option the Trainer passes to FSDP");
      continue;
    }
    if (block.contains(target)) {
      kept += (kept.empty() ? "" : ", ") + key;
      continue;
    }
    block[target] = v;
    filled += (filled.empty() ? "" : ", ") + key + " → fsdp_config." + target;
  }
  if (!filled.empty()) out_.read.push_back("fsdp_config ← --fsdp_config (the Trainer's): " + filled);
  if (!kept.empty()) out_.ignored.push_back("--fsdp_config " + kept + ": the accelerate config's own key is kept");
}

void AccelerateReader::read_model() {
  if (!options_.model_json.empty()) {
    m_.model_from_hf(options_.model_json, "--model");
  } else if (!options_.preset.empty()) {
    m_.model_from_preset(options_.preset, "--preset", "--preset " + trainmem::quoted(options_.preset));
  } else if (const json* name = args_.contains("model_name_or_path") ? &args_["model_name_or_path"] : nullptr) {
    if (!name->is_string()) return m_.fail("--model_name_or_path", "must be a Hugging Face repository, got " + show(*name));
    if (!m_.model_from_hub_name(name->get<std::string>(), "--model_name_or_path")) return;
  } else {
    out_.assumed.push_back(std::string(mapping::k_model_from_base) + " (no --model_name_or_path, --model or --preset)");
    return;
  }
  // [sft] chat_template_format: the template's special tokens join the vocabulary, which
  // resize_token_embeddings(len(tokenizer), pad_to_multiple_of=8) rounds up to a multiple of 8.
  const json* format = args_.contains("chat_template_format") ? &args_["chat_template_format"] : nullptr;
  if (!format || *format == "none") return;
  if (!format->is_string() || (*format != "chatml" && *format != "zephyr"))
    return m_.fail("--chat_template_format", "must be \"chatml\", \"zephyr\" or \"none\", got " + show(*format));
  if (!out_.input.vocab_size) return;
  // ChatmlSpecialTokens lists <|im_start|>user, <|im_start|>assistant, <|im_start|>system,
  // <|im_end|>, <s> and <pad>; ZephyrSpecialTokens <|user|>, <|assistant|>, <|system|>, </s>, <s>,
  // <pad>. New to a SentencePiece Llama/Mistral tokenizer: all but <s> (chatml: 5) and all but
  // <s>, </s> (zephyr: 4). A tokenizer that has fewer of them lands on the same multiple of 8
  // unless its vocabulary is not one already.
  const int64_t added = *format == "chatml" ? 5 : 4;
  const int64_t before = *out_.input.vocab_size;
  const int64_t after = (before + added + 7) / 8 * 8;
  m_.read(field::vocab_size, double(after), "--chat_template_format",
          show(*format) + ": " + number_text(double(before)) + " + " + number_text(double(added)) +
              " special tokens, padded to a multiple of 8 (resize_token_embeddings pad_to_multiple_of=8)");
}

void AccelerateReader::read_adapter() {
  const auto flag = [&](const char* name) { return trainer().flag(m_, name); };
  // PEFT's example script names its switches use_peft_lora / use_4bit_quantization [sft]; TRL's
  // ModelConfig use_peft / load_in_4bit [trl]. Their LoRA defaults differ.
  const bool sft_script = args_.contains("use_peft_lora") || args_.contains("use_4bit_quantization");
  const char* peft_flag = sft_script ? "use_peft_lora" : "use_peft";
  const bool lora = flag(peft_flag).value_or(false);
  const char* in4_flag = args_.contains("use_4bit_quantization") ? "use_4bit_quantization" : "load_in_4bit";
  const char* in8_flag = args_.contains("use_8bit_quantization") ? "use_8bit_quantization" : "load_in_8bit";
  const bool in4 = flag(in4_flag).value_or(false);
  const bool in8 = flag(in8_flag).value_or(false);
  if (!out_.ok()) return;
  if (!lora) {
    m_.assume(field::peft, std::string("none"), std::string("no --") + peft_flag + ": full fine-tuning", peft_flag);
    if (in4 || in8) m_.fail(std::string("--") + (in4 ? in4_flag : in8_flag), "needs LoRA (--" + std::string(peft_flag) + " True): a quantized base cannot be trained whole");
    return;
  }
  if (in4 && in8) return m_.fail(std::string("--") + in4_flag, "and --" + std::string(in8_flag) + " cannot both be true");
  if (in4) {
    m_.read(field::peft, std::string("qlora"), std::string("--") + in4_flag, "true (LoRA over a bitsandbytes 4-bit base)");
    m_.assume(field::params_dtype, std::string("nf4"), std::string("--") + in4_flag + ": bitsandbytes Linear4bit base", in4_flag);
    if (const json* type = trainer().given("bnb_4bit_quant_type"); type && *type != "nf4")
      out_.ignored.push_back("--bnb_4bit_quant_type = " + show(*type) + ": counted as NF4 (the same 4 bits and block constants)");
    // Double quantisation: [sft] use_nested_quant and [trl] use_bnb_nested_quant become
    // BitsAndBytesConfig(bnb_4bit_use_double_quant=...); both default to False, as transformers'
    // BitsAndBytesConfig does (examples/sft/train.py @ 5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40;
    // trl/trainer/model_config.py and utils.py get_quantization_config @
    // f2cd57710ae345ea6428ae95363267fcf38a3dc8). Neither script can quantise lm_head (no
    // llm_int8_skip_modules argument): transformers keeps it out of the 4-bit conversion.
    const char* nested = sft_script ? "use_nested_quant" : "use_bnb_nested_quant";
    if (const std::optional<bool> double_quant = flag(nested))
      m_.read(field::nf4_double_quant, *double_quant, std::string("--") + nested, *double_quant ? "true" : "false");
    else if (out_.ok())
      m_.assume(field::nf4_double_quant, false, std::string("no --") + nested + ": BitsAndBytesConfig's bnb_4bit_use_double_quant defaults to False", nested);
  } else {
    for (const char* nested : {"use_nested_quant", "use_bnb_nested_quant"})
      if (trainer().given(nested))
        out_.ignored.push_back(std::string("--") + nested + ": double quantisation of a 4-bit base; the base is not 4-bit");
    if (in8) {
      // BitsAndBytesConfig(load_in_8bit=True) in both scripts: Linear8bitLt, LLM.int8.
      m_.read(field::peft, std::string("qlora"), std::string("--") + in8_flag, "true (LoRA over a bitsandbytes 8-bit base)");
      m_.assume(field::params_dtype, std::string("int8"), std::string("--") + in8_flag + ": bitsandbytes LLM.int8 (Linear8bitLt)", in8_flag);
    } else {
      m_.read(field::peft, std::string("lora"), std::string("--") + peft_flag, "true");
    }
  }
  // Targets [sft] [trl]: a comma list or "all-linear" (every linear layer but the output).
  std::vector<std::string> targets;
  std::string how;
  const json* given = trainer().given("lora_target_modules");
  json items;
  if (given) {
    items = given->is_string() ? json::array() : *given;
    if (given->is_string()) {
      const std::string text = given->get<std::string>();
      for (size_t start = 0; start <= text.size();) {
        const size_t comma = std::min(text.find(',', start), text.size());
        if (comma > start) items.push_back(text.substr(start, comma - start));
        start = comma + 1;
      }
    }
    if (!items.is_array()) return m_.fail("--lora_target_modules", "must be module names, got " + show(*given));
    how = "--lora_target_modules = " + show(*given);
  } else if (sft_script) {
    items = {"q_proj", "k_proj", "v_proj", "o_proj", "down_proj", "up_proj", "gate_proj"};
    how = "no --lora_target_modules: examples/sft/train.py's default";
  } else {
    items = {"q_proj", "v_proj"};
    how = "no --lora_target_modules: TRL passes None and PEFT targets q_proj, v_proj for Llama-style models";
  }
  for (const json& item : items)
    if (!mapping::add_lora_targets(targets, item.is_string() ? item.get<std::string>() : ""))
      out_.ignored.push_back("--lora_target_modules: " + show(item) + ": not a module trainmem has adapters for");
  // TRL ModelConfig.lora_target_parameters, handed to LoraConfig.target_parameters.
  if (const json* params = trainer().given("lora_target_parameters"); params && !params->is_null() &&
                                                                     !(params->is_array() && params->empty()))
    return m_.fail("--lora_target_parameters", "PEFT's target_parameters (lora.ParamWrapper, for fused MoE experts) are not modelled: each "
                      "forward makes the adapters' delta B·A as a tensor the size of every expert's weight "
                      "(huggingface/peft tuners/lora/layer.py @ b28a09c4, get_delta_weight under a "
                      "parametrization); name per-expert linears in lora_target_modules where the model has them");
  if (targets.empty()) return m_.fail("--lora_target_modules", "names no module trainmem has adapters for");
  if (m_.put(field::lora_target_modules, targets, "lora_target_modules")) out_.read.push_back("lora_target_modules ← " + how + ": " + mapping::value_text(targets));
  const double default_rank = sft_script ? 64 : 16, default_dropout = sft_script ? 0.1 : 0.05;
  const std::string whose = sft_script ? "examples/sft/train.py's default" : "TRL ModelConfig's default";
  if (const std::optional<int64_t> r = trainer().count(m_, "lora_r")) m_.read(field::lora_rank, double(*r), "--lora_r");
  else if (out_.ok()) m_.assume(field::lora_rank, default_rank, "no --lora_r: " + whose, "lora_r");
  if (const json* d = trainer().given("lora_dropout")) {
    if (!d->is_number() || d->get<double>() < 0 || d->get<double>() > 1) return m_.fail("--lora_dropout", "must be a number from 0 to 1, got " + show(*d));
    m_.read(field::lora_dropout, d->get<double>(), "--lora_dropout");
  } else {
    m_.assume(field::lora_dropout, default_dropout, "no --lora_dropout: " + whose, "lora_dropout");
  }
  if (const json* save = trainer().given("lora_modules_to_save"))
    mapping::read_modules_to_save(m_, out_, *save, "--lora_modules_to_save");
  if (flag("use_dora").value_or(false)) out_.ignored.push_back("--use_dora: DoRA's magnitude vectors are not modelled");
}

// The training dtype and the dtype the model is loaded in.
void AccelerateReader::read_precision() {
  const auto flag = [&](const char* name) { return trainer().flag(m_, name); };
  // [ta] the Trainer's bf16 / fp16 win over the file's mixed_precision.
  const bool bf16 = flag("bf16").value_or(false), fp16 = flag("fp16").value_or(false);
  if (bf16 && fp16) return m_.fail("--bf16", "and --fp16 cannot both be true");
  if (bf16 || fp16) {
    precision_ = bf16 ? "bf16" : "fp16";
    precision_why_ = std::string("--") + precision_ + " True (the Trainer's precision wins over the file's mixed_precision)";
    m_.touch("mixed_precision");
  } else if (const std::optional<std::string> mp = m_.has("mixed_precision") ? m_.string("mixed_precision") : std::nullopt) {
    if (*mp == "bf16" || *mp == "fp16") precision_ = *mp;
    else if (*mp == "fp8") {
      precision_ = "bf16";
      out_.ignored.push_back("mixed_precision = \"fp8\": accelerate's FP8 recipes are not read; counted as bf16 mixed precision");
    } else if (*mp != "no") {
      return m_.fail("mixed_precision", "must be \"no\", \"fp16\", \"bf16\" or \"fp8\", got " + trainmem::quoted(*mp));
    }
    precision_why_ = "mixed_precision = " + trainmem::quoted(*mp);
  } else {
    precision_why_ = "no mixed_precision and neither --bf16 nor --fp16: fp32";
  }
  if (!out_.ok()) return;
  // The load dtype: TRL's --torch_dtype; PEFT's example loads a 4-bit model in its storage dtype
  // (a float) and anything else in fp32 [sft]; transformers' from_pretrained default is fp32.
  const auto dtype_name = [](const std::string& torch) -> std::string {
    if (torch == "bfloat16" || torch == "bf16") return "bf16";
    if (torch == "float16" || torch == "fp16" || torch == "half") return "fp16";
    if (torch == "float32" || torch == "fp32" || torch == "float") return "fp32";
    return "";
  };
  const bool quantized = out_.input.params_dtype && *out_.input.params_dtype == Dtype::nf4;
  const char* torch_key = args_.contains("torch_dtype") ? "torch_dtype" : "dtype";
  if (const json* t = trainer().given(torch_key)) {
    const std::string name = t->is_string() ? t->get<std::string>() : "";
    if (name == "auto") {
      load_dtype_ = "bf16";
      load_why_ = std::string("--") + torch_key + " auto: the checkpoint's dtype, bf16 for today's Hub models";
    } else if ((load_dtype_ = dtype_name(name)).empty()) {
      return m_.fail(std::string("--") + torch_key, "must be auto, bfloat16, float16 or float32, got " + show(*t));
    } else {
      load_why_ = std::string("--") + torch_key + " " + name;
    }
  } else if (const json* storage = quantized ? trainer().given("bnb_4bit_quant_storage_dtype") : nullptr) {
    const std::string name = storage->is_string() ? storage->get<std::string>() : "";
    const std::string d = dtype_name(name);
    load_dtype_ = d.empty() ? "fp32" : d;
    load_why_ = "--bnb_4bit_quant_storage_dtype " + name + (d.empty() ? " is not a float: loaded in fp32" : ": the model is loaded in it");
  } else {
    load_why_ = "the model is loaded in fp32 (from_pretrained's default; PEFT's examples/sft loads in fp32 unless quantized)";
  }
}

void AccelerateReader::read_deepspeed() {
  // [ds] The DeepSpeed config DeepSpeedPlugin writes, or the file it (or the Trainer's own
  // --deepspeed) names.
  const json* trainer_file = args_.contains("deepspeed") && args_["deepspeed"].is_string() ? &args_["deepspeed"] : nullptr;
  // A whole DeepSpeed config (a file, or TrainingArguments.deepspeed as a dict), with the
  // Trainer's flags beside it; the plugin's deepspeed_config keys then say nothing.
  const auto read_config = [&](const json& config, const std::string& whose) {
    out_.read.push_back("deepspeed ← " + whose);
    m_.touch("deepspeed_config");
    Mapper ds(config, out_);
    mapping::read_deepspeed(ds, trainer(), gpus_);
    if (out_.ok()) ds.account({"steps_per_print", "wall_clock_breakdown", "gradient_clipping", "scheduler", "seed"}, {"zero_optimization"});
  };
  if (args_.contains("deepspeed") && args_["deepspeed"].is_object()) {
    if (!options_.deepspeed_json.empty())
      return m_.fail("--deepspeed", "is a DeepSpeed config in --hf-args and trainmem's --deepspeed gives another: give one");
    return read_config(args_["deepspeed"], "the DeepSpeed config given as TrainingArguments.deepspeed in --hf-args");
  }
  std::optional<std::string> file = m_.has("deepspeed_config.deepspeed_config_file")
                                        ? m_.string("deepspeed_config.deepspeed_config_file") : std::nullopt;
  if (!out_.ok()) return;
  if (trainer_file) file = trainer_file->get<std::string>();
  if (file) {
    const std::string key = trainer_file ? "--deepspeed" : "deepspeed_config.deepspeed_config_file";
    if (options_.deepspeed_json.empty())
      return m_.fail(key, trainmem::quoted(*file) + ": give that DeepSpeed config with trainmem's --deepspeed FILE");
    std::optional<json> given = mapping::object_tree(options_.deepspeed_json, "--deepspeed", out_.issues);
    if (!given) return;
    return read_config(*given, "the DeepSpeed config " + key + " names (" + trainmem::quoted(*file) + ")");
  }
  if (const json* block = mapping::at(m_.tree(), "deepspeed_config"); block && !block->is_null() && !block->is_object())
    return m_.fail("deepspeed_config", "must be a mapping, got " + show(*block));
  const std::optional<int64_t> stage = m_.has("deepspeed_config.zero_stage") ? m_.integer("deepspeed_config.zero_stage", 0) : std::optional<int64_t>(2);
  if (!stage) return;
  if (*stage > 3) return m_.fail("deepspeed_config.zero_stage", "must be 0, 1, 2 or 3, got " + number_text(double(*stage)));
  if (!m_.has("deepspeed_config.zero_stage")) out_.assumed.push_back("deepspeed_config.zero_stage ← 2 (DeepSpeedPlugin's default)");
  zero3_ = *stage == 3;
  json ds = {{"train_batch_size", "auto"}, {"train_micro_batch_size_per_gpu", "auto"},
             {"zero_optimization", {{"stage", *stage}}}};
  for (const char* part : {"optimizer", "param"}) {
    const std::string key = std::string("deepspeed_config.offload_") + part + "_device";
    if (!m_.has(key)) continue;
    const std::optional<std::string> device = m_.string(key);
    if (!device) return;
    if (*device != "none" && *device != "cpu" && *device != "nvme")
      return m_.fail(key, "must be none, cpu or nvme, got " + trainmem::quoted(*device));
    if (std::string_view(part) == "param" && *device != "none" && *stage != 3)
      return m_.fail(key, "offloads parameters only with zero_stage 3, got zero_stage " + number_text(double(*stage)));
    ds["zero_optimization"][std::string("offload_") + part] = {{"device", *device}};
  }
  if (m_.has("deepspeed_config.gradient_accumulation_steps")) {
    const std::optional<int64_t> ga = m_.integer("deepspeed_config.gradient_accumulation_steps");
    if (!ga) return;
    ds["gradient_accumulation_steps"] = *ga;
  } else {
    ds["gradient_accumulation_steps"] = "auto";
  }
  ds["bf16"] = {{"enabled", precision_ == "bf16"}};
  ds["fp16"] = {{"enabled", precision_ == "fp16"}};
  if (m_.has("deepspeed_config.zero3_init_flag"))
    if (const std::optional<bool> init = m_.boolean("deepspeed_config.zero3_init_flag"))
      m_.read(field::zero_init, *init, "deepspeed_config.zero3_init_flag", *init ? "true (deepspeed.zero.Init)" : "false");
  out_.read.push_back("deepspeed ← deepspeed_config as DeepSpeedPlugin writes it: zero_optimization.stage = " + number_text(double(*stage)) +
                      ", bf16/fp16 from the precision (" + precision_why_ + "), the batch \"auto\" from the Trainer's arguments");
  Mapper ds_m(ds, out_);
  mapping::read_deepspeed(ds_m, trainer(), gpus_);
}

void AccelerateReader::read_fsdp() {
  if (const json* block = mapping::at(m_.tree(), "fsdp_config"); block && !block->is_null() && !block->is_object())
    return m_.fail("fsdp_config", "must be a mapping, got " + show(*block));
  // [fsdp] the sharding strategy by name or by its 1-based code.
  const std::vector<std::string_view>& strategies = k_fsdp_strategies;
  std::string strategy = "FULL_SHARD";
  if (const json* s = m_.get("fsdp_config.fsdp_sharding_strategy")) {
    if (s->is_number_integer() && s->get<int64_t>() >= 1 && s->get<int64_t>() <= 5) strategy = strategies[size_t(s->get<int64_t>() - 1)];
    else if (s->is_string() && listed(strategies, s->get<std::string>())) strategy = s->get<std::string>();
    else return m_.fail("fsdp_config.fsdp_sharding_strategy", "must be FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD or HYBRID_SHARD_ZERO2 (or 1-5), got " + show(*s));
  }
  int64_t version = 1;
  if (m_.has("fsdp_config.fsdp_version")) {
    const std::optional<int64_t> v = m_.integer("fsdp_config.fsdp_version");
    if (!v) return;
    if (*v != 1 && *v != 2) return m_.fail("fsdp_config.fsdp_version", "must be 1 or 2, got " + number_text(double(*v)));
    version = *v;
  }
  bool reshard = strategy == "FULL_SHARD" || strategy == "HYBRID_SHARD";
  std::string reshard_why = strategy + (reshard ? " (parameters resharded after forward)" : " (parameters kept gathered from forward to backward)");
  if (version == 2) {
    // [fsdp] FSDP2 ignores the strategy and reshards unless told otherwise.
    if (m_.has("fsdp_config.fsdp_sharding_strategy"))
      m_.ignore_value("fsdp_config.fsdp_sharding_strategy", "FSDP2 ignores it (accelerate warns); fsdp_reshard_after_forward decides");
    strategy = "FULL_SHARD";
    reshard = true;
    reshard_why = "fsdp_version 2 without fsdp_reshard_after_forward: true, accelerate's default";
    if (m_.has("fsdp_config.fsdp_reshard_after_forward")) {
      const std::optional<bool> r = m_.boolean("fsdp_config.fsdp_reshard_after_forward");
      if (!r) return;
      reshard = *r;
      reshard_why = std::string("fsdp_reshard_after_forward = ") + (*r ? "true" : "false");
    }
  } else if (m_.has("fsdp_config.fsdp_reshard_after_forward")) {
    m_.ignore_value("fsdp_config.fsdp_reshard_after_forward", "read with fsdp_version 2 only (FSDP1 follows fsdp_sharding_strategy)");
  }
  if (strategy == "NO_SHARD") {
    // FSDP1's NO_SHARD (pytorch/pytorch torch/distributed/fsdp/_runtime_utils.py @
    // 3ade90a6aaa939cd6238e314c321b9f920db1471, _reduce_grad_no_shard): every rank keeps the
    // whole flat parameter and its .grad, and the gradient is all-reduced in place in
    // flat_param.grad: no second copy, as DDP's buckets are without gradient_as_bucket_view. That
    // is DDP with gradient_as_bucket_view, except that FSDP frees the gradients between steps
    // (zero_grad) where the bucket views persist: counted with them, high by one gradient copy in
    // the forward only.
    m_.read(field::framework, std::string("ddp"), "fsdp_config.fsdp_sharding_strategy", "NO_SHARD (every rank keeps everything, as DDP)");
    m_.assume(field::gradient_as_bucket_view, true, "NO_SHARD all-reduces each flat gradient in place (FSDP _reduce_grad_no_shard): no bucket copy", "fsdp_config.fsdp_sharding_strategy");
  } else {
    m_.read(field::framework, std::string("fsdp2"), "distributed_type", "FSDP");
    m_.read(field::zero_stage, reshard ? 3.0 : 2.0, version == 2 ? "fsdp_config.fsdp_reshard_after_forward" : "fsdp_config.fsdp_sharding_strategy", reshard_why);
    // [fsdp] fsdp_version: 1 wraps with torch's FullyShardedDataParallel (FSDP1), 2 with
    // fully_shard (FSDP2). Absent, FSDP1: the plugin @ 24d8b63 has no fsdp_version and wraps with
    // FullyShardedDataParallel, and the importer reads version 1 for an absent key (above).
    if (m_.has("fsdp_config.fsdp_version"))
      m_.read(field::fsdp_version, double(version), "fsdp_config.fsdp_version",
              version == 1 ? "1 (FullyShardedDataParallel)" : "2 (fully_shard)");
    else
      m_.assume(field::fsdp_version, 1.0, "no fsdp_version: accelerate wraps with FullyShardedDataParallel (FSDP1)", "fsdp_config");
  }
  m_.assume(field::data_parallel_size, double(gpus_), "every process is a data-parallel rank", "num_processes");
  if (strategy.rfind("HYBRID", 0) == 0) {
    const int64_t machines = m_.integer("num_machines").value_or(1);
    m_.read(field::data_parallel_shard_size, double(gpus_ / machines), "fsdp_config.fsdp_sharding_strategy",
            strategy + ": shards within a machine (num_processes / num_machines)");
  }
  if (m_.has("fsdp_config.fsdp_offload_params")) {
    if (const std::optional<bool> offload = m_.boolean("fsdp_config.fsdp_offload_params"); offload && *offload) {
      if (!reshard)
        return m_.fail("fsdp_config.fsdp_offload_params", "with parameters kept gathered (" + reshard_why +
                                                               "): trainmem offloads the parameters of a full shard only");
      m_.read(field::offload_params, true, "fsdp_config.fsdp_offload_params", "true (CPUOffload: parameters and gradients on the CPU)");
      m_.assume(field::optimizer_offload_fraction, 1.0, "with CPUOffload the optimizer steps on the CPU", "fsdp_config.fsdp_offload_params");
    }
  }
  if (m_.has("fsdp_config.fsdp_activation_checkpointing")) {
    if (const std::optional<bool> ac = m_.boolean("fsdp_config.fsdp_activation_checkpointing"); ac && *ac) {
      m_.full_recompute_per_layer("fsdp_config.fsdp_activation_checkpointing", "true", "auto-wrapped transformer layer");
      // accelerate wraps each unit in checkpoint_wrapper(..., CheckpointImpl.NO_REENTRANT) (FSDP1:
      // accelerator.py prepare_model; FSDP2: utils/fsdp_utils.py, checkpoint_wrapper's default;
      // huggingface/accelerate @ 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83).
      m_.assume(field::checkpoint_reentrant, false, "accelerate's FSDP activation checkpointing is non-reentrant",
                "fsdp_config.fsdp_activation_checkpointing");
    }
  }
  for (const char* k : {"fsdp_config.fsdp_backward_prefetch", "fsdp_config.fsdp_backward_prefetch_policy", "fsdp_config.fsdp_forward_prefetch"})
    if (m_.has(k)) m_.ignore_value(k, "prefetching gathers one more unit early: trainmem's fsdp2 model keeps one unit in flight");
}

// QLoRA's unquantised parameters [sft] [trl]: both scripts train with TRL's SFTTrainer, which
// (v0.8.0 … v0.21.0; trl/trainer/sft_trainer.py @ v0.12.0 80cf468ab0d164e904ce7917b502fd7181c0b76d)
// calls PEFT's prepare_model_for_kbit_training for a 4-bit model unless it is "sharded QLoRA"
// (its first Params4bit on cpu or meta: FSDP's cpu_ram_efficient_loading, ZeRO-3 init), then
// with --bf16 peft_module_casting_to_bf16 (norms fp32, lm_head and embed_tokens back to bf16).
// Later TRL (HEAD f2cd5771) calls neither and keeps bf16: the version is not on the command line,
// so the older, larger behaviour is assumed (never under-estimate).
void AccelerateReader::read_kbit_upcast() {
  if (!out_.input.peft || *out_.input.peft != Peft::qlora) return;
  const std::optional<Framework> fw = out_.input.framework;
  const bool zero3 = fw && *fw == Framework::deepspeed &&
                     (zero3_ || (out_.input.zero_stage && *out_.input.zero_stage == 3));
  if ((fw && *fw == Framework::fsdp2) || zero3) {
    m_.assume(field::kbit_upcast, std::string("none"),
              std::string(zero3 ? "ZeRO-3" : "FSDP") + " QLoRA is TRL's \"sharded QLoRA\": SFTTrainer calls neither "
              "prepare_model_for_kbit_training nor peft_module_casting_to_bf16",
              "distributed_type");
    return;
  }
  const bool bf16 = trainer().flag(m_, "bf16").value_or(false);
  if (bf16)
    m_.assume(field::kbit_upcast, std::string("trl"),
              "TRL SFTTrainer (v0.8 to v0.21) with --bf16: prepare_model_for_kbit_training, then "
              "peft_module_casting_to_bf16 (norms fp32, embeddings and lm_head bf16); later TRL "
              "keeps everything bf16 (\"none\")", "bf16");
  else
    m_.assume(field::kbit_upcast, std::string("peft"),
              "TRL SFTTrainer (v0.8 to v0.21) without --bf16: prepare_model_for_kbit_training "
              "leaves every unquantised parameter fp32; later TRL keeps them as loaded (\"none\")",
              "bf16");
}

void AccelerateReader::read_training() {
  const mapping::TrainerArguments a = trainer();
  const bool deepspeed = distributed_ == "DEEPSPEED";
  const bool fsdp = out_.input.framework && *out_.input.framework == Framework::fsdp2;
  if (!deepspeed) {
    if (!fsdp) {
      m_.assume(field::framework, std::string("ddp"), gpus_ > 1 ? "distributed_type " + distributed_ + ": DDP" : "one process: a plain module", "distributed_type");
      m_.assume(field::data_parallel_size, double(gpus_), "every process is a data-parallel rank", "num_processes");
    }
    // Precision: autocast over the loaded weights; FSDP's MixedPrecision gathers them in the
    // training dtype and keeps the shards (the master copy) as loaded.
    const bool quantized = out_.input.params_dtype && *out_.input.params_dtype == Dtype::nf4;
    const std::string& compute = precision_ == "fp32" ? load_dtype_ : precision_;
    if (fsdp && load_dtype_ == "fp32" && precision_ != "fp32") {
      if (!quantized) m_.assume(field::params_dtype, precision_, precision_why_ + ": FSDP gathers the weights in it", "mixed_precision");
      m_.assume(field::main_params_dtype, std::string("fp32"), load_why_ + ": the shards stay fp32", "mixed_precision");
    } else {
      if (!quantized) m_.assume(field::params_dtype, load_dtype_, load_why_, "dtype");
      if (load_dtype_ != "fp32" && !quantized) {
        m_.assume(field::master_weights, false, load_why_ + ": the Trainer keeps no fp32 copy", "dtype");
        for (FieldName f : {field::main_grads_dtype, field::exp_avg_dtype, field::exp_avg_sq_dtype}) m_.assume(f, load_dtype_, load_why_, "dtype");
      }
    }
    m_.assume(field::compute_dtype, compute, precision_why_, "mixed_precision");
    // The batch: per_device_train_batch_size (TrainingArguments' default 8) and the accumulation
    // (default 1), both per rank: the Trainer's knobs, which stay when the GPU count changes while
    // the global batch (micro × accumulation × ranks) follows. So the microbatch count is read.
    const int64_t mb = a.count(m_, "per_device_train_batch_size").value_or(8);
    const int64_t ga = a.count(m_, "gradient_accumulation_steps").value_or(1);
    if (!out_.ok()) return;
    if (a.given("per_device_train_batch_size")) m_.read(field::micro_batch_size, double(mb), "--per_device_train_batch_size");
    else m_.assume(field::micro_batch_size, 8.0, "no --per_device_train_batch_size: TrainingArguments' default 8", "per_device_train_batch_size");
    if (a.given("gradient_accumulation_steps")) m_.read(field::num_microbatches, double(ga), "--gradient_accumulation_steps");
    else m_.assume(field::num_microbatches, 1.0, "no --gradient_accumulation_steps: TrainingArguments' default 1", "gradient_accumulation_steps");
    mapping::read_trainer_arguments(m_, a, false);
    // FSDP1 with the Trainer's gradient_checkpointing: transformers checkpoints each decoder
    // layer around its FullyShardedDataParallel unit (decoder_layer.__call__; its mode is
    // checkpoint_reentrant's, read by read_trainer_arguments); accelerate's
    // fsdp_activation_checkpointing checkpoints inside the units instead, and the Trainer refuses
    // both at once.
    const bool fsdp1 = fsdp && out_.input.fsdp_version.value_or(1) == 1;
    const std::optional<bool> checkpointing = a.flag(m_, "gradient_checkpointing");
    const std::optional<bool> fsdp_ac = m_.boolean("fsdp_config.fsdp_activation_checkpointing");
    if (!out_.ok()) return;
    if (fsdp1 && fsdp_ac.value_or(false))
      m_.read(field::fsdp1_checkpoint_around_unit, false, "fsdp_config.fsdp_activation_checkpointing",
              "false (accelerate's checkpoint_wrapper inside each FSDP1 unit)");
    else if (fsdp1 && checkpointing.value_or(false))
      m_.read(field::fsdp1_checkpoint_around_unit, true, "--gradient_checkpointing",
              "true (the Trainer's gradient_checkpointing wraps decoder_layer.__call__, the FSDP1 unit)");
  } else {
    read_deepspeed();
  }
  if (!out_.ok()) return;
  m_.put(field::model_implementation, std::string("hf-transformers"), "distributed_type");
  // Attention [sft] [trl]: use_flash_attn picks flash_attention_2, else the example loads "eager";
  // attn_implementation names it; transformers' default is sdpa.
  if (const std::optional<bool> flash = a.flag(m_, "use_flash_attn")) {
    m_.read(field::attention_backend, std::string(*flash ? "flash" : "unfused"), "--use_flash_attn",
            *flash ? "true (flash_attention_2)" : "false (examples/sft loads attn_implementation \"eager\")");
  } else if (const json* impl = a.given("attn_implementation")) {
    if (!mapping::hf_attention(m_, *impl, "--attn_implementation")) return;
  } else if (out_.input.attention_sinks.value_or(false)) {
    // gpt-oss: transformers has no SDPA path for it (GptOssPreTrainedModel._supports_sdpa =
    // False, modeling_gpt_oss.py @ 00d4b3d2), so with no flag it falls back to eager.
    m_.assume(field::attention_backend, std::string("unfused"),
              "no attention flag, and the model has attention sinks (gpt-oss): transformers has no SDPA path for it, eager",
              "attn_implementation");
  } else {
    m_.assume(field::attention_backend, std::string("flash"), "no attention flag: transformers' default sdpa (its fused kernel)", "attn_implementation");
  }
  m_.assume(field::attention_dropout, 0.0, "Llama-style models have no attention dropout (attention_dropout 0.0)", "model_name_or_path");
  m_.assume(field::hidden_dropout, 0.0, "Llama-style models have no dropout", "model_name_or_path");
  // accelerate's dynamo_config compiles the model with TorchDynamo [cfg].
  if (const json* dynamo = mapping::at(m_.tree(), "dynamo_config"); dynamo && !dynamo->is_null() && !dynamo->is_object())
    return m_.fail("dynamo_config", "must be a mapping, got " + show(*dynamo));
  if (const std::optional<std::string> backend = m_.string("dynamo_config.dynamo_backend")) {
    if (mapping::lowercase(*backend) != "no") m_.read(field::torch_compile, true, "dynamo_config.dynamo_backend", trainmem::quoted(*backend));
  }
  m_.touch("dynamo_config");
}

void AccelerateReader::run() {
  read_launch_line();
  if (!out_.ok()) return;
  read_layout();
  if (!out_.ok()) return;
  read_model();
  if (!out_.ok()) return;
  read_adapter();
  if (!out_.ok()) return;
  read_precision();
  if (!out_.ok()) return;
  if (distributed_ == "FSDP") read_fsdp();
  if (!out_.ok()) return;
  read_training();
  if (!out_.ok()) return;
  read_kbit_upcast();
  if (!out_.ok()) return;
  if (!out_.input.seq_length)
    out_.open_fields.push_back(issue("seq_length", "the launch command does not say it: give it, or --max_length (--max_seq_length)"));
  std::vector<std::string_view> no_memory = k_no_memory;
  no_memory.insert(no_memory.end(), k_no_memory_inside.begin(), k_no_memory_inside.end());
  m_.account(no_memory, {"deepspeed_config", "fsdp_config"});
  // The script's flags no rule read: the ones that do not change memory, and the others.
  static const std::vector<std::string_view> read_here = {
      "model_name_or_path", "chat_template_format", "use_peft_lora", "use_peft", "use_4bit_quantization", "load_in_4bit",
      "use_8bit_quantization", "load_in_8bit", "lora_r", "lora_dropout", "lora_target_modules", "lora_modules_to_save",
      "use_dora", "bnb_4bit_quant_storage_dtype", "use_nested_quant", "use_bnb_nested_quant", "torch_dtype", "dtype", "bf16", "fp16", "use_flash_attn",
      "attn_implementation", "per_device_train_batch_size", "gradient_accumulation_steps", "gradient_checkpointing",
      "gradient_checkpointing_kwargs", "use_reentrant",
      "torch_compile", "use_liger_kernel", "liger_kernel_config", "max_length", "max_seq_length", "max_seq_len",
      "packing", "optim", "deepspeed", "fsdp", "fsdp_config", "eval_strategy", "evaluation_strategy",
      "per_device_eval_batch_size", "eval_accumulation_steps", "prediction_loss_only", "batch_eval_metrics"};
  std::string quiet;
  for (const auto& [name, _] : args_.items()) {
    if (listed(read_here, name)) continue;
    if (listed(k_script_no_memory, name)) quiet += (quiet.empty() ? "--" : ", --") + name;
    else out_.ignored.push_back("--" + name + ": not an argument trainmem reads (TrainingArguments, TRL's SFTConfig/ModelConfig, PEFT's examples/sft)");
  }
  if (!quiet.empty()) out_.ignored.push_back(quiet + ": do not change memory");
}

}  // namespace

ImportResult import_accelerate(std::string_view tree_json, const ImportOptions& options) {
  return mapping::import_tree(tree_json, "CONFIG.yaml", mapping::requires_key("distributed_type", "an accelerate config"),
                              [&](json& tree, ImportResult& out) { AccelerateReader(tree, options, out).run(); });
}

}  // namespace trainmem
