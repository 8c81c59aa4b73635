// ms-swift's Megatron-SWIFT command line (`NPROC_PER_NODE=8 megatron sft --model ... --train_type
// lora ...`) -> trainmem fields.
//
// Megatron-SWIFT parses its own dataclasses and hands Megatron-LM an argv it builds from them, so
// this importer does the same: every argument of MegatronArguments becomes Megatron-LM's spelling,
// with ms-swift's defaults where they differ from Megatron-LM's, and MegatronReader
// (megatron_args.cpp) reads that argv. What is ms-swift's own (the model by its Hub id, LoRA, the
// packed length, the launcher's environment) is read here.
//
// Sources, all modelscope/ms-swift @ 00840e65ad861f8157eddc27d7ddfeac0ebb3d7a:
//   [args]   swift/megatron/argument/megatron_args.py: MegatronArguments (the fields Megatron-LM
//            receives: MegatronArguments.__annotations__, the class's own fields) and their
//            defaults; _args_to_argv: each such field that is not None or False becomes
//            `--name-with-dashes`, a True one a bare flag, a list its items; megatron_extra_kwargs
//            (a JSON dict) is added to them; ExtraMegatronArguments and BaseArguments' fields stay
//            ms-swift's (extra_args). _set_default: attention_dropout None -> 0.
//   [tuner]  the same file, MegatronTunerMixin: train_type 'full' | 'lora', target_modules
//            ['all-linear'], lora_rank 8, lora_alpha 32, lora_dropout 0.05, lora_bias 'none',
//            lora_dtype None
//   [base]   swift/megatron/argument/megatron_base_args.py: packing sets padding_free;
//            seq_length = seq_length or packing_length or max_length
//   [dtype]  swift/llm/argument/base_args/model_args.py _init_mixed_precision: bf16 for a
//            bfloat16 torch_dtype (the checkpoint's config.json unless --torch_dtype), fp16 for
//            float16 or float32; an explicit --bf16 / --fp16 wins
//   [cli]    swift/cli/main.py: megatron runs torchrun with NPROC_PER_NODE, NNODES (and
//            MASTER_PORT, NODE_RANK, MASTER_ADDR) from the environment, and raises "Please set
//            torchrun args" without NPROC_PER_NODE or NNODES; HfArgumentParser reads a boolean
//            as yes/true/t/y/1 or no/false/f/n/0 (a bare flag is true) and takes dashes for
//            underscores
//   --version YYYY-MM-DD, the date of the ms-swift commit a run used, selects what changed since
//            in memory: the experts' fp32 LoRA adapters of 2025-07-10 to 2025-08-20 (read_lora);
//            every default is otherwise 00840e65's
//   [lora]   swift/megatron/utils/utils.py get_target_modules: all-linear is find_all_linears
//            (linear_qkv, linear_proj, linear_fc1, linear_fc2, the experts' grouped ones
//            included; README "LoRA on Megatron Core's grouped experts"); all-embedding and
//            all-router add the embedding and the router
#include <algorithm>
#include <cctype>

#include "mapping.hpp"

namespace trainmem {
namespace {

using mapping::json;

// MegatronArguments' own fields [args] that are booleans (a flag in Megatron-LM's argv) and
// those that take values; both are Megatron-LM's arguments under ms-swift's spelling.
const std::vector<std::string_view> k_megatron_bools = {
    "use_cpu_initialization", "deterministic_mode", "no_masked_softmax_fusion", "no_bias_dropout_fusion",
    "no_bias_swiglu_fusion", "no_rope_fusion", "no_gradient_accumulation_fusion",
    "cross_entropy_loss_fusion", "calculate_per_token_loss", "use_flash_attn", "optimizer_cpu_offload",
    "use_precision_aware_optimizer", "manual_gc", "no_save_optim", "no_save_rng", "no_load_optim",
    "no_load_rng", "finetune", "no_initialization", "auto_detect_ckpt_format", "exit_on_missing_checkpoint",
    "async_save", "use_persistent_ckpt_worker", "ckpt_fully_parallel_load", "ckpt_assume_constant_structure",
    "use_distributed_optimizer", "sequence_parallel", "tp_comm_overlap", "overlap_grad_reduce",
    "overlap_param_gather", "group_query_attention", "rotary_interleaved", "swiglu",
    "untie_embeddings_and_output_weights", "disable_bias_linear", "add_qkv_bias", "qk_layernorm",
    "moe_router_pre_softmax", "moe_router_enable_expert_bias", "moe_enable_deepep", "moe_grouped_gemm",
    "moe_permute_fusion", "moe_shared_expert_overlap", "moe_layer_recompute",
    "moe_pad_expert_input_to_capacity", "multi_latent_attention", "fp8_param_gather", "fp16", "bf16",
    "apply_query_key_layer_scaling", "attention_softmax_in_fp32", "log_params_norm", "log_throughput",
    "log_timers_to_tensorboard", "no_log_learning_rate_to_tensorboard", "log_validation_ppl_to_tensorboard",
    "log_memory_to_tensorboard",
};
const std::vector<std::string_view> k_megatron_values = {
    "micro_batch_size", "global_batch_size", "recompute_granularity", "recompute_method",
    "recompute_num_layers", "recompute_modules", "train_iters", "log_interval", "tensorboard_dir",
    "cross_entropy_fusion_impl", "attention_backend", "optimizer", "optimizer_offload_fraction",
    "main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype", "dataloader_type",
    "manual_gc_interval", "lr", "lr_decay_style", "lr_decay_iters", "lr_warmup_iters", "lr_warmup_fraction",
    "min_lr", "weight_decay", "clip_grad", "adam_beta1", "adam_beta2", "adam_eps", "sgd_momentum", "save",
    "save_interval", "save_retain_interval", "load", "ckpt_format", "distributed_backend", "local_rank",
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers", "context_parallel_size", "distributed_timeout_minutes",
    "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
    "microbatch_group_size_per_virtual_pipeline_stage", "pipeline_model_parallel_layout", "num_layers",
    "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups", "max_position_embeddings",
    "position_embedding_type", "mrope_section", "rotary_base", "rotary_percent", "normalization",
    "norm_epsilon", "attention_dropout", "hidden_dropout", "kv_channels", "transformer_impl", "num_experts",
    "moe_layer_freq", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size", "moe_router_topk",
    "moe_router_num_groups", "moe_router_group_topk", "moe_router_dtype", "moe_router_score_function",
    "moe_router_bias_update_rate", "moe_router_topk_scaling_factor", "moe_router_load_balancing_type",
    "expert_model_parallel_size", "expert_tensor_parallel_size", "moe_token_dispatcher_type",
    "moe_aux_loss_coeff", "moe_z_loss_coeff", "moe_expert_capacity_factor", "moe_token_drop_policy",
    "q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "fp8_format", "fp8_recipe",
    "fp8_amax_history_len", "fp8_amax_compute_algo", "tensorboard_log_interval", "tensorboard_queue_size",
    "logging_level", "wandb_project", "wandb_exp_name", "wandb_save_dir", "eval_iters", "eval_interval",
    "seed", "seq_length", "num_workers",
};

// ms-swift's own arguments (ExtraMegatronArguments, BaseArguments: data, template, saving,
// logging) that do not change what a GPU holds.
const std::vector<std::string_view> k_no_memory = {
    "dataset", "val_dataset", "split_dataset_ratio", "dataset_num_proc", "dataset_shuffle", "streaming",
    "load_from_cache_file", "cached_dataset", "columns", "system", "template", "lazy_tokenize",
    "truncation_strategy", "loss_scale", "use_chat_template", "model_type", "model_revision", "model_author",
    "model_name", "use_hf", "hub_token", "load_safetensors", "save_safetensors", "merge_lora", "max_shard_size",
    "add_version", "load_args", "max_epochs", "num_train_epochs", "dataloader_persistent_workers",
    "dataloader_prefetch_factor", "report_to", "strict", "data_seed", "enable_dft_loss",
    "enable_channel_loss", "attn_impl", "new_special_tokens", "remove_unused_columns", "lora_alpha",
    "use_rslora", "freeze_parameters", "freeze_parameters_ratio", "freeze_parameters_regex",
    "trainable_parameters", "trainable_parameters_regex", "freeze_llm", "freeze_vit", "freeze_aligner",
    "vit_lr", "aligner_lr", "vit_gradient_checkpointing", "deepspeed", "output_dir", "logging_dir",
    "custom_register_path", "custom_dataset_info", "ignore_args_error", "check_model", "packing_cache",
};

bool listed(const std::vector<std::string_view>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string lower(std::string_view text) { return mapping::lowercase(text); }

// HfArgumentParser's string_to_bool [cli]; nullopt for any other word.
std::optional<bool> swift_bool(std::string_view word) {
  const std::string w = lower(word);
  if (w == "yes" || w == "true" || w == "t" || w == "y" || w == "1") return true;
  if (w == "no" || w == "false" || w == "f" || w == "n" || w == "0") return false;
  return std::nullopt;
}

// --version: the date of the ms-swift commit a run used, "YYYY-MM-DD", as a number YYYYMMDD.
std::optional<int64_t> swift_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const std::optional<int64_t> y = mapping::parse_int(text.substr(0, 4)), m = mapping::parse_int(text.substr(5, 2)),
                               d = mapping::parse_int(text.substr(8, 2));
  if (!y || !m || !d || *y < 2023 || *m < 1 || *m > 12 || *d < 1) return std::nullopt;
  const bool leap = *y % 4 == 0 && (*y % 100 != 0 || *y % 400 == 0);
  constexpr int k_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*d > k_days[*m - 1] + (*m == 2 && leap ? 1 : 0)) return std::nullopt;
  return *y * 10000 + *m * 100 + *d;
}

struct SwiftArg {
  std::string name;  // ms-swift's spelling, underscores: "tensor_model_parallel_size"
  std::vector<std::string> values;
  bool used = false;
};

class SwiftReader {
 public:
  SwiftReader(const ImportOptions& options, ImportResult& out) : options_(options), out_(out) {}
  void run(std::string_view text);

 private:
  const ImportOptions& options_;
  ImportResult& out_;
  std::vector<SwiftArg> args_;
  std::vector<std::string> env_;  // the environment assignments Megatron's reader takes as they are
  std::optional<int64_t> nproc_, nnodes_;
  std::vector<std::string> megatron_;  // the argv ms-swift gives Megatron-LM
  bool moe_ = false;

  void fail(std::string_view key, const std::string& rule) { out_.issues.push_back(issue(key, rule)); }
  SwiftArg* get(std::string_view name) {
    SwiftArg* last = nullptr;
    for (SwiftArg& a : args_)
      if (a.name == name) a.used = true, last = &a;
    return last;
  }
  // One word of `name`, or nullopt (absent, or an Issue for none or several).
  std::optional<std::string> word(std::string_view name) {
    SwiftArg* a = get(name);
    if (!a) return std::nullopt;
    if (a->values.size() != 1) {
      fail("--" + std::string(name), a->values.empty() ? "needs a value" : "takes one value, got " + std::to_string(a->values.size()));
      return std::nullopt;
    }
    return a->values[0];
  }
  // A boolean argument's value: a bare flag is true [cli]; nullopt, with an Issue, when malformed.
  std::optional<bool> boolean_of(const SwiftArg& a) {
    if (a.values.empty()) return true;
    const std::optional<bool> v = a.values.size() == 1 ? swift_bool(a.values[0]) : std::nullopt;
    if (!v)
      fail("--" + a.name, "must be true or false (ms-swift's HfArgumentParser: yes/true/t/y/1 or no/false/f/n/0), got " +
                              trainmem::quoted(a.values[0]));
    return v;
  }
  // The boolean argument `name`; nullopt when absent or malformed.
  std::optional<bool> boolean(std::string_view name) {
    SwiftArg* a = get(name);
    return a ? boolean_of(*a) : std::nullopt;
  }
  std::optional<int64_t> positive(std::string_view name) {
    const std::optional<std::string> w = word(name);
    if (!w) return std::nullopt;
    const std::optional<int64_t> v = mapping::parse_int(*w);
    if (!v || *v < 1) fail("--" + std::string(name), "must be a positive integer, got " + trainmem::quoted(*w));
    return v && *v >= 1 ? v : std::nullopt;
  }
  void add_default(std::string_view name, std::initializer_list<std::string_view> values, const std::string& why) {
    megatron_.push_back("--" + dashed(name));
    for (std::string_view v : values) megatron_.emplace_back(v);
    out_.assumed.push_back(std::string(name) + " = " + [&] {
      std::string s;
      for (std::string_view v : values) s += (s.empty() ? "" : " ") + std::string(v);
      return s.empty() ? std::string("true") : s;
    }() + ": " + why + " (ms-swift's default, swift/megatron/argument/megatron_args.py @ 00840e65)");
  }
  static std::string dashed(std::string_view name) {
    std::string s(name);
    std::replace(s.begin(), s.end(), '_', '-');
    return s;
  }
  // The last `--name` of the command, without marking it read; nullptr when absent.
  const SwiftArg* find(std::string_view name) const {
    const SwiftArg* last = nullptr;
    for (const SwiftArg& a : args_)
      if (a.name == name) last = &a;
    return last;
  }
  bool given(std::string_view name) const { return find(name) != nullptr; }

  bool split(const std::vector<std::string>& words);
  void read_world();
  bool read_model(ImportResult& into);
  void translate();
  void read_extra_kwargs();
  void read_precision();
  void read_seq_length();
  void read_lora();
  void account();
  void respell();
};

// The environment before `megatron sft`, the command, then its `--name value` arguments.
bool SwiftReader::split(const std::vector<std::string>& words) {
  size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    const size_t eq = w.find('=');
    if (w.rfind("--", 0) == 0 || eq == std::string::npos || eq == 0) break;
    const std::string name = w.substr(0, eq), value = w.substr(eq + 1);
    if (name == "NPROC_PER_NODE" || name == "NNODES") {
      const std::optional<int64_t> v = mapping::parse_int(value);
      if (!v || *v < 1) {
        fail(name, "must be a positive integer (torchrun's process count), got " + trainmem::quoted(value) +
                       (value.find('$') != std::string::npos ? " (shell variables are not expanded)" : ""));
        continue;
      }
      (name == "NNODES" ? nnodes_ : nproc_) = v;
    } else if (name == "PYTORCH_CUDA_ALLOC_CONF" || name == "PYTORCH_ALLOC_CONF" || name == "NVTE_FLASH_ATTN" ||
               name == "NVTE_FUSED_ATTN") {
      env_.push_back(w);  // Megatron's reader reads them (the allocator, Transformer Engine's attention)
    } else if (name == "CUDA_VISIBLE_DEVICES") {
      out_.read.push_back("CUDA_VISIBLE_DEVICES=" + value + ": the GPUs visible; the world is NPROC_PER_NODE × NNODES");
    } else if (name == "MASTER_PORT" || name == "MASTER_ADDR" || name == "NODE_RANK") {
      out_.ignored.push_back(w + ": torchrun's rendezvous, no memory");
    } else {
      out_.ignored.push_back(w + ": an environment variable trainmem does not read");
    }
  }
  // `megatron sft` (or the arguments alone).
  if (i < words.size() && words[i] == "megatron") {
    const std::string sub = i + 1 < words.size() ? words[i + 1] : "";
    if (sub != "sft") {
      fail("command line", "reads `megatron sft`, got `megatron " + sub +
                               "` (pretraining, RLHF and export are not read: their data and models differ)");
      return false;
    }
    i += 2;
  } else if (i < words.size() && words[i].rfind("--", 0) != 0) {
    fail("command line", "must be `megatron sft --name value ...` (with NPROC_PER_NODE=N before it), got " +
                             trainmem::quoted(words[i]));
    return false;
  } else {
    out_.assumed.push_back("the command ← the arguments of `megatron sft` (no `megatron sft` before them)");
  }
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) == 0 && w.size() > 2) {
      SwiftArg a;
      const size_t eq = w.find('=');
      a.name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::replace(a.name.begin(), a.name.end(), '-', '_');  // HfArgumentParser takes both [cli]
      if (eq != std::string::npos) a.values.push_back(w.substr(eq + 1));
      args_.push_back(std::move(a));
    } else if (!args_.empty()) {
      args_.back().values.push_back(w);
    } else {
      out_.ignored.push_back(trainmem::quoted(w) + ": not an argument (no --name before it)");
    }
  }
  if (args_.empty()) {
    fail("command line", "no arguments of `megatron sft` (--name value) found");
    return false;
  }
  if (get("config")) {
    fail("--config", "a YAML of arguments is not read here: give its arguments on the command line");
    return false;
  }
  return true;
}

// torchrun's world [cli]: --gpus wins, else NPROC_PER_NODE × NNODES (each torchrun's default 1).
void SwiftReader::read_world() {
  int64_t world = 0;
  std::string how;
  if (options_.gpus > 0) {
    world = options_.gpus, how = "--gpus " + std::to_string(options_.gpus);
  } else if (nproc_ || nnodes_) {
    const std::optional<int64_t> product = checked_mul(nproc_.value_or(1), nnodes_.value_or(1));
    if (!product) return fail("NPROC_PER_NODE", "NPROC_PER_NODE × NNODES overflows a 64-bit integer");
    world = *product;
    how = "NPROC_PER_NODE × NNODES = " + std::to_string(nproc_.value_or(1)) + " × " + std::to_string(nnodes_.value_or(1));
  } else {
    return fail("NPROC_PER_NODE", "missing: Megatron-SWIFT runs torchrun with NPROC_PER_NODE (and NNODES) from the "
                                  "environment and stops without them (swift/cli/main.py 'Please set torchrun args'); "
                                  "give NPROC_PER_NODE=N before `megatron sft`, or --gpus N");
  }
  megatron_.push_back("WORLD_SIZE=" + std::to_string(world));
  out_.read.push_back("world size ← " + how + " = " + std::to_string(world));
}

// The model: --model's config.json or --preset (the CLI's), else the Hub id of `megatron sft
// --model`, else the name of a converted checkpoint directory (--load NAME-mcore).
bool SwiftReader::read_model(ImportResult& into) {
  const json empty = json::object();
  mapping::Mapper m(empty, into);
  const std::optional<std::string> model = given("model") ? word("model") : std::nullopt;
  if (!options_.model_json.empty()) return m.model_from_hf(options_.model_json, "--model");
  if (!options_.preset.empty()) return m.model_from_preset(options_.preset, "--preset", "--preset " + trainmem::quoted(options_.preset));
  if (model) return m.model_from_hub_name(*model, "--model");
  if (given("load")) {
    SwiftArg* load = get("load");
    if (load->values.size() == 1) {
      std::string name(mapping::last_part(load->values[0], '/'));
      if (name.size() > 6 && name.ends_with("-mcore")) name.erase(name.size() - 6);
      return m.model_from_hub_name(name, "--load");
    }
  }
  into.assumed.push_back(std::string(mapping::k_model_from_base) + " (no --model, --load, or the CLI's --model / --preset)");
  return true;
}

// MegatronArguments' fields into Megatron-LM's argv [args], with ms-swift's defaults where they
// differ from Megatron-LM's and change memory.
void SwiftReader::translate() {
  for (SwiftArg& a : args_) {
    const bool is_bool = listed(k_megatron_bools, a.name);
    if (!is_bool && !listed(k_megatron_values, a.name)) continue;
    a.used = true;
    if (find(a.name) != &a) continue;  // repeated: argparse keeps the last
    if (is_bool) {
      if (boolean_of(a).value_or(false)) megatron_.push_back("--" + dashed(a.name));
      continue;
    }
    if (a.values.empty()) {
      fail("--" + a.name, "needs a value");
      continue;
    }
    megatron_.push_back("--" + dashed(a.name));
    megatron_.insert(megatron_.end(), a.values.begin(), a.values.end());
  }
  // The defaults [args] that Megatron-LM's own differ from, and that change memory.
  if (!given("use_distributed_optimizer"))
    add_default("use_distributed_optimizer", {}, "the distributed optimizer (ZeRO-1) is on");
  if (!given("recompute_granularity")) {
    add_default("recompute_granularity", {"selective"}, "selective recomputation");
  }
  // recompute_modules counts only for selective recomputation.
  const SwiftArg* granularity = find("recompute_granularity");
  const bool selective = !granularity || granularity->values == std::vector<std::string>{"selective"};
  if (selective && !given("recompute_modules"))
    add_default("recompute_modules", {"core_attn"}, "the core attention is what selective recomputation recomputes");
  if (!given("attention_backend") && !given("use_flash_attn")) add_default("attention_backend", {"flash"}, "flash attention");
  if (!given("hidden_dropout")) add_default("hidden_dropout", {"0"}, "no hidden dropout");
  if (!given("attention_dropout")) add_default("attention_dropout", {"0"}, "no attention dropout (_set_default: None -> 0)");
  if (!given("micro_batch_size")) add_default("micro_batch_size", {"1"}, "one sequence per microbatch");
  if (!given("global_batch_size")) add_default("global_batch_size", {"16"}, "16 sequences a step");
  if (moe_) {
    if (!given("moe_router_dtype")) add_default("moe_router_dtype", {"fp32"}, "the router in fp32");
    if (!given("moe_token_dispatcher_type")) add_default("moe_token_dispatcher_type", {"alltoall"}, "the alltoall dispatcher");
    if (!given("expert_tensor_parallel_size"))
      add_default("expert_tensor_parallel_size", {"1"}, "experts not split by tensor parallelism (Megatron-LM's default is the TP size)");
  }
}

// megatron_extra_kwargs: a JSON dict added to the argv as MegatronArguments' fields are [args].
void SwiftReader::read_extra_kwargs() {
  const std::optional<std::string> text = word("megatron_extra_kwargs");
  if (!text) return;
  std::vector<Issue> problems;
  const std::optional<json> tree = mapping::object_tree(*text, "--megatron_extra_kwargs", problems);
  if (!tree) {
    out_.issues.insert(out_.issues.end(), problems.begin(), problems.end());
    return;
  }
  for (const auto& [key, value] : tree->items()) {
    if (value.is_null() || (value.is_boolean() && !value.get<bool>())) continue;
    megatron_.push_back("--" + dashed(key));
    if (value.is_array()) {
      for (const json& item : value) megatron_.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    } else if (!value.is_boolean()) {
      megatron_.push_back(value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  out_.read.push_back("--megatron_extra_kwargs: its keys passed to Megatron-LM as arguments");
}

// bf16 / fp16 [dtype]: explicit flags win; else the torch_dtype (--torch_dtype, the config.json's).
void SwiftReader::read_precision() {
  if (given("bf16") || given("fp16")) return;  // translated as Megatron-LM's flags
  std::string dtype, from;
  if (const std::optional<std::string> t = given("torch_dtype") ? word("torch_dtype") : std::nullopt) {
    dtype = *t, from = "--torch_dtype " + *t;
  } else if (!options_.model_json.empty()) {
    try {
      const json config = json::parse(options_.model_json);
      for (const char* key : {"torch_dtype", "dtype"})
        if (config.contains(key) && config[key].is_string()) {
          dtype = config[key].get<std::string>(), from = std::string("the config.json's ") + key + " " + dtype;
          break;
        }
    } catch (const std::exception&) {
      // read_model names a config.json that does not parse
    }
  }
  if (dtype.empty()) {
    megatron_.push_back("--bf16");
    out_.assumed.push_back("bf16: the checkpoint's torch_dtype, bfloat16 in the Hub's config.json of the models ms-swift trains "
                           "(give --torch_dtype otherwise; model_args.py _init_mixed_precision)");
    return;
  }
  if (dtype == "bfloat16" || dtype == "bf16") megatron_.push_back("--bf16");
  else if (dtype == "float16" || dtype == "fp16" || dtype == "float32" || dtype == "fp32") megatron_.push_back("--fp16");
  else return fail("--torch_dtype", "must be bfloat16, float16 or float32, got " + trainmem::quoted(dtype));
  out_.read.push_back(std::string(megatron_.back() == "--bf16" ? "bf16" : "fp16") + " ← " + from +
                      " (ms-swift trains float16 and float32 checkpoints in fp16)");
}

// The sequence [base]: --seq_length, else --packing_length, else --max_length.
void SwiftReader::read_seq_length() {
  const std::optional<bool> packing = boolean("packing");
  if (given("padding_free")) boolean("padding_free");
  if (given("seq_length")) return;  // Megatron-LM's --seq-length, translated
  for (const char* name : {"packing_length", "max_length"}) {
    if (!given(name)) continue;
    const std::optional<int64_t> n = positive(name);
    if (!n) return;
    megatron_.push_back("--seq-length");
    megatron_.push_back(std::to_string(*n));
    out_.read.push_back("seq_length ← --" + std::string(name) + " " + std::to_string(*n) +
                        (packing.value_or(false) ? " (--packing true: rows packed to that length)"
                                                 : " (no --packing: the longest row it allows; shorter rows keep less)"));
    return;
  }
  out_.assumed.push_back("seq_length: not set (no --max_length, --packing_length or --seq_length; ms-swift then takes the "
                         "model's max_position_embeddings)");
}

// LoRA [tuner] [lora]: the adapters on Megatron Core's modules, by the HF names trainmem uses.
void SwiftReader::read_lora() {
  // Later ms-swift renamed train_type tuner_type and changed other defaults (cross_entropy_loss_fusion
  // true at 3602360a): read as 00840e65's command, such a line would be a LoRA run taken for a full one.
  if (given("tuner_type"))
    return fail("--tuner_type", "is a later ms-swift's name for --train_type (its defaults differ from the 00840e65 ones this "
                                "importer reads): write --train_type, and check the defaults listed under assumed:");
  const std::optional<std::string> type = given("train_type") ? word("train_type") : std::nullopt;
  if (type && *type != "lora" && *type != "full")
    return fail("--train_type", "must be lora or full (ms-swift's MegatronTunerMixin), got " + trainmem::quoted(*type));
  const bool lora = type && *type == "lora";
  if (!lora) {
    if (set_field(out_.input, field::peft, std::string("none"))) return;
    (type ? out_.read : out_.assumed).push_back(std::string("peft ← none (") + (type ? "--train_type full" : "no --train_type: ms-swift's default full") + ")");
    for (std::string_view name : {"lora_rank", "lora_dropout", "target_modules", "target_regex", "lora_dtype", "lora_bias", "modules_to_save"})
      if (SwiftArg* a = get(name)) out_.ignored.push_back("--" + a->name + ": no LoRA without --train_type lora");
    return;
  }
  const auto put = [&](FieldName f, const FieldValue& v, const std::string& note, bool read) {
    const std::string arg = note.substr(0, note.find(' '));
    if (auto problem = set_field(out_.input, f, v)) return fail(arg, std::string(rule_of(*problem)));
    (read ? out_.read : out_.assumed).push_back(std::string(f) + " ← " + note);
    if (read) mapping::note_key(out_, f, arg);
  };
  put(field::peft, std::string("lora"), "--train_type lora", true);
  if (given("lora_rank")) {
    if (auto r = positive("lora_rank")) put(field::lora_rank, double(*r), "--lora_rank " + std::to_string(*r), true);
  } else {
    put(field::lora_rank, 8.0, "8 (no --lora_rank: ms-swift's default)", false);
  }
  if (given("lora_dropout")) {
    const std::optional<std::string> w = word("lora_dropout");
    char* end = nullptr;
    const double d = w ? std::strtod(w->c_str(), &end) : 0;
    if (w && (w->empty() || end != w->c_str() + w->size() || !(d >= 0 && d <= 1)))
      fail("--lora_dropout", "must be a number from 0 to 1, got " + trainmem::quoted(*w));
    else if (w)
      put(field::lora_dropout, d, "--lora_dropout " + *w, true);
  } else {
    put(field::lora_dropout, 0.05, "0.05 (no --lora_dropout: ms-swift's default)", false);
  }
  if (given("target_regex")) return fail("--target_regex", "not modelled: trainmem cannot tell which modules a regex selects; give --target_modules");
  if (SwiftArg* bias = get("lora_bias"); bias && !(bias->values.size() == 1 && bias->values[0] == "none"))
    out_.ignored.push_back("--lora_bias " + (bias->values.empty() ? std::string() : bias->values[0]) + ": not modelled (the adapters' biases are not counted)");
  if (SwiftArg* dtype = get("lora_dtype"))
    out_.ignored.push_back("--lora_dtype" + (dtype->values.empty() ? std::string() : " " + dtype->values[0]) +
                           ": not modelled (trainmem keeps the adapters in the training dtype)");
  if (SwiftArg* save = get("modules_to_save"))
    out_.ignored.push_back("--modules_to_save" + (save->values.empty() ? std::string() : " " + save->values[0]) +
                           ": not modelled on Megatron Core (trainmem's lora_modules_to_save is PEFT's on transformers)");
  // Targets: Megatron Core's names, or all-linear (find_all_linears): q/k/v are one linear_qkv,
  // gate/up one linear_fc1 (the experts' grouped ones too).
  std::vector<std::string> names = {"all-linear"};
  std::string how = "all-linear (no --target_modules: ms-swift's default)";
  if (SwiftArg* t = get("target_modules")) {
    if (t->values.empty()) return fail("--target_modules", "needs a value");
    names = t->values;
    how = "--target_modules";
    for (const std::string& n : names) how += " " + n;
  }
  const bool gated = out_.input.gated_linear_unit.value_or(true);
  std::vector<std::string> targets;
  const auto add = [&](std::initializer_list<const char*> items) {
    for (const char* item : items)
      if (std::find(targets.begin(), targets.end(), item) == targets.end()) targets.push_back(item);
  };
  for (const std::string& n : names) {
    if (n == "all-linear") add({"q_proj", "k_proj", "v_proj", "o_proj"}), gated ? add({"gate_proj", "up_proj", "down_proj"}) : add({"up_proj", "down_proj"});
    else if (n == "linear_qkv") add({"q_proj", "k_proj", "v_proj"});
    else if (n == "linear_proj") add({"o_proj"});
    else if (n == "linear_fc1") gated ? add({"gate_proj", "up_proj"}) : add({"up_proj"});
    else if (n == "linear_fc2") add({"down_proj"});
    else if (n == "all-embedding" || n == "all-router")
      return fail("--target_modules", n + " is not modelled: trainmem has no adapters on the " + (n == "all-embedding" ? "embedding" : "router"));
    else
      return fail("--target_modules", trainmem::quoted(n) + " is not a module trainmem has adapters for on Megatron Core "
                                          "(all-linear, linear_qkv, linear_proj, linear_fc1, linear_fc2)");
  }
  if (auto problem = set_field(out_.input, field::lora_target_modules, targets))
    return fail("--target_modules", std::string(rule_of(*problem)));
  mapping::note_key(out_, field::lora_target_modules, "--target_modules");
  out_.read.push_back("lora_target_modules ← " + how + ": " + mapping::value_text(targets) +
                      (moe_ ? " (on an MoE model the routed experts' grouped linear_fc1 / linear_fc2)" : ""));
  // From ea766ff5b (2025-07-10) to e2f4d85a9 (2025-08-20) ms-swift built the adapters in fp32 and
  // cast back only those whose base has one weight, which the grouped experts have not
  // (README, "LoRA on Megatron Core's grouped experts"): a run of that window keeps fp32 adapters
  // on the experts. Later commits, this importer's, make them in the training dtype.
  const bool experts = moe_ && std::any_of(targets.begin(), targets.end(), [](const std::string& t) {
    return t == "gate_proj" || t == "up_proj" || t == "down_proj";
  });
  const std::optional<int64_t> date = swift_date(options_.version);
  if (experts && date && *date >= 20250710 && *date < 20250820 &&
      !set_field(out_.input, field::lora_expert_dtype, std::string("fp32")))
    out_.read.push_back("lora_expert_dtype ← fp32 (--version " + options_.version +
                        ": ms-swift from ea766ff5b, 2025-07-10, to e2f4d85a9, 2025-08-20, kept the grouped experts' adapters in fp32)");
}

// Every argument nothing read, by name: ms-swift's that change no memory, or unknown.
void SwiftReader::account() {
  for (SwiftArg& a : args_) {
    if (a.used) continue;
    a.used = true;
    const std::string shown = "--" + a.name + (a.values.empty() ? "" : " " + a.values[0] + (a.values.size() > 1 ? " …" : ""));
    if (listed(k_no_memory, a.name)) out_.ignored.push_back(shown + ": no memory");
    else out_.ignored.push_back(shown + ": not an argument of `megatron sft` trainmem reads (not used by the estimate)");
  }
}

// Megatron-LM's spelling back to the user's: the notes, keys and messages of Megatron's reader
// name each argument as ms-swift's command does (--tensor_model_parallel_size), and the sequence
// length by the argument that gave it.
void SwiftReader::respell() {
  std::string length_arg;  // the argument that gave --seq-length, when the command has no --seq_length
  if (!given("seq_length"))
    for (const char* name : {"packing_length", "max_length"})
      if (length_arg.empty() && given(name)) length_arg = std::string("--") + name;
  // Each "--name-with-dashes" that is a MegatronArguments field becomes "--name_with_dashes".
  const auto respelled = [&](const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 2, "--") != 0 || (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '-'))) {
        out += text[i++];
        continue;
      }
      size_t end = i + 2;
      while (end < text.size() && (std::islower(static_cast<unsigned char>(text[end])) ||
                                   std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '-'))
        ++end;
      std::string name = text.substr(i + 2, end - i - 2);
      std::replace(name.begin(), name.end(), '-', '_');
      if (name == "seq_length" && !length_arg.empty()) out += length_arg;
      else if (listed(k_megatron_values, name) || listed(k_megatron_bools, name)) out += "--" + name;
      else out += text.substr(i, end - i);
      i = end;
    }
    return out;
  };
  for (std::vector<std::string>* notes : {&out_.read, &out_.assumed, &out_.ignored})
    for (std::string& note : *notes) note = respelled(note);
  for (auto& [field, key] : out_.keys) key = respelled(key);
  // A key is the command's own word: a default ms-swift supplied (--use_distributed_optimizer
  // unsaid, --bf16 from the checkpoint's dtype) names no argument the user wrote.
  std::erase_if(out_.keys, [&](const auto& entry) { return entry.second.starts_with("--") && !given(entry.second.substr(2)); });
  for (Issue& problem : out_.issues) problem.message = respelled(problem.message);
}

void SwiftReader::run(std::string_view text) {
  const mapping::ShellWords words = mapping::shell_words(text);
  if (!words.error.empty()) return fail("command line", words.error);
  if (!split(words.words)) return;
  read_world();
  // The model first, to know whether ms-swift's MoE defaults apply; read again below, after
  // Megatron's reader, whose line describes no model.
  ImportResult probe;
  read_model(probe);
  if (!probe.ok()) {
    out_.issues = probe.issues;
    out_.model_asked = probe.model_asked;
    return;
  }
  moe_ = probe.input.num_moe_experts && *probe.input.num_moe_experts > 0;
  read_extra_kwargs();
  read_precision();
  read_seq_length();
  translate();
  if (!out_.ok()) return;
  std::vector<std::string> argv = env_;
  argv.insert(argv.end(), megatron_.begin(), megatron_.end());
  read_megatron_words(argv, out_);
  if (!out_.ok()) return respell();
  // The sequence length said once, from ms-swift's argument that gave it.
  if (!given("seq_length")) std::erase_if(out_.read, [](const std::string& note) { return note.starts_with("seq_length ← --seq-length "); });
  read_model(out_);
  // ms-swift builds Megatron Core's GPTModel from the checkpoint through its converter.
  if (!set_field(out_.input, field::model_implementation, std::string("megatron-core")))
    out_.assumed.push_back("model_implementation ← megatron-core (Megatron-SWIFT trains Megatron Core's GPTModel)");
  // Megatron-LM's flags say only "on": ms-swift's booleans that are off are said here.
  for (const auto& [name, f] : {std::pair<std::string_view, FieldName>{"use_distributed_optimizer", field::use_distributed_optimizer},
                                {"sequence_parallel", field::sequence_parallel}}) {
    const SwiftArg* a = find(name);
    if (a && a->values.size() == 1 && swift_bool(a->values[0]) == false && !set_field(out_.input, f, false))
      out_.read.push_back(std::string(f) + " ← false (--" + std::string(name) + " false)");
  }
  read_lora();
  account();
  respell();
  out_.read.insert(out_.read.begin(), "the command ← ms-swift's arguments as Megatron-LM's (megatron_args.py _args_to_argv: "
                                      "--name_x value → --name-x value, true → the flag, false → absent)");
}

}  // namespace

ImportResult import_ms_swift_megatron(std::string_view command_line, const ImportOptions& options) {
  ImportResult out;
  if (!options.overrides.empty()) out.issues.push_back(issue("overrides", "the command line is the whole run: none are taken"));
  if (!options.version.empty() && !swift_date(options.version))
    out.issues.push_back(issue("--version", "must be the date of the ms-swift commit the run used, YYYY-MM-DD (such as 2025-07-31), got " +
                                                trainmem::quoted(options.version)));
  if (out.issues.empty()) SwiftReader(options, out).run(command_line);
  if (!out.ok()) out.input = ConfigInput{};
  return out;
}

}  // namespace trainmem
