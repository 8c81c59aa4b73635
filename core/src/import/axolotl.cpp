// axolotl configs (YAML, as a JSON tree) -> trainmem fields.
//
// Sources (axolotl-ai-cloud/axolotl):
//   [schema] src/axolotl/utils/schemas/config.py (AxolotlInputConfig: base_model, adapter,
//            lora_r, lora_dropout, lora_target_modules, lora_target_linear, load_in_4bit/8bit,
//            sequence_len, sample_packing, pad_to_sequence_len, micro_batch_size,
//            gradient_accumulation_steps, gradient_checkpointing (true or "offload"), bf16 /
//            fp16, flash_attention / sdp_attention, optimizer (transformers' OptimizerNames),
//            deepspeed (a path), fsdp / fsdp_config); @ 70be5461ba09e986aecb2eff3eef1246ce4285c4:
//            bf16: "auto" | bool, default "auto"; sequence_len default 512; torch_compile: "auto" |
//            bool ("auto" compiles on torch >= 2.6); gradient_checkpointing: bool | "offload" |
//            "unsloth" (later releases add "offload_disk"); deepspeed: a path or the config itself
//            (a mapping); fsdp: a list of strings
//   [lora]   src/axolotl/utils/models.py: lora_target_linear targets every linear layer but the
//            output (find_all_linear_names drops lm_head), as PEFT's "all-linear"
//   [load]   the model is loaded in torch_dtype bfloat16 when bf16 is on (bf16: auto = when the
//            GPU supports it); adapter: qlora loads the base with bitsandbytes' 4-bit NF4
//   [ds]     deepspeed_configs/*.json @ the commits in k_deepspeed_files (zero1, zero2, zero3,
//            zero3_bf16 @ b371df79dcca2612c1f83f85bef6eefeb4dc56a2, the cpuoffload variants)
//   examples: examples/llama-3/lora-8b.yml @ 9f824ef76af48eff9f69f3a93ede03a6a2b4313a,
//            examples/llama-3/qlora-fsdp-70b.yaml @ ba1be71d70582bc0abf67ad604abb6739567f504
#include <algorithm>

#include "mapping.hpp"

namespace trainmem {
namespace {

using mapping::json;
using mapping::Mapper;
using mapping::show;

const std::vector<std::string_view> k_no_memory = {
    "datasets", "dataset_prepared_path", "output_dir", "wandb_project", "wandb_entity",
    "wandb_watch", "wandb_name", "wandb_log_model", "wandb_run_id", "learning_rate", "lr_scheduler",
    "num_epochs", "max_steps", "warmup_steps", "warmup_ratio", "logging_steps", "evals_per_epoch",
    "saves_per_epoch", "eval_steps", "save_steps", "save_strategy", "weight_decay",
    "train_on_inputs", "group_by_length", "early_stopping_patience", "resume_from_checkpoint",
    "auto_resume_from_checkpoints", "local_rank", "debug", "strict", "chat_template", "tokenizer_type",
    "model_type", "is_llama_derived_model", "is_mistral_derived_model", "is_qwen_derived_model",
    "lora_alpha", "lora_fan_in_fan_out", "lora_model_dir", "hub_model_id", "hub_strategy", "seed",
    "max_grad_norm", "tf32", "loss_watchdog_threshold", "loss_watchdog_patience", "eval_sample_packing",
    "lr_quadratic_warmup", "save_total_limit", "eval_table_size", "eval_max_new_tokens",
    "use_tensorboard", "save_safetensors", "tokenizer_config", "trust_remote_code",
    "shuffle_merged_datasets", "special_tokens", "tokens",
    "dataset_processes", "sample_packing_eff_est", "total_num_tokens", "eval_causal_lm_metrics",
    "do_causal_lm_eval", "cosine_min_lr_ratio", "xformers_attention", "flash_attn_cross_entropy",
    "flash_attn_rms_norm", "flash_attn_fuse_qkv", "flash_attn_fuse_mlp", "ddp_find_unused_parameters",
    "remove_unused_columns", "type_of_model", "base_model_config", "rl", "unfrozen_parameters",
    "lr_scheduler_kwargs", "optim_args", "adam_beta1", "adam_beta2", "adam_epsilon", "chat_template_jinja",
    "default_system_message", "dataset_exact_deduplication", "wandb_mode", "mlflow_tracking_uri",
};

// axolotl's deepspeed_configs/ by file name [ds]: what each sets.
struct DsFile {
  std::string_view name;
  int stage;
  bool offload_params, offload_optimizer;
};
const std::vector<DsFile> k_deepspeed_files = {
    {"zero1.json", 1, false, false},
    {"zero1_torch_compile.json", 1, false, false},
    {"zero2.json", 2, false, false},
    {"zero2_torch_compile.json", 2, false, false},
    {"zero3.json", 3, false, false},
    {"zero3_bf16.json", 3, false, false},
    {"zero3_bf16_cpuoffload_params.json", 3, true, false},
    {"zero3_bf16_cpuoffload_all.json", 3, true, true},
    {"zero3_cpuoffload.json", 3, true, true},
};

class AxolotlReader : mapping::Reader {
 public:
  using Reader::Reader;
  void run();

 private:
  int64_t gpus_ = 1;
  bool deepspeed_ = false, fsdp_ = false;
  // The training dtype [schema] [load]: bf16 true or "auto" (axolotl's default: on when the GPU
  // supports it), else fp16, else fp32; and why, for the notes.
  std::string dtype_ = "fp32", dtype_why_;

  void read_precision();
  void read_model();
  void read_adapter();
  void read_quantization(bool axolotl_bnb_config);
  void read_layout();
  void read_training();
  void read_checkpoint_mode();
  void read_evaluation(int64_t micro_batch);
};

void AxolotlReader::read_precision() {
  const json* bf16 = m_.get("bf16");
  const bool fp16 = m_.boolean("fp16").value_or(false);
  if (bf16 && !bf16->is_boolean() && *bf16 != "auto")
    return m_.fail("bf16", "must be true, false or \"auto\", got " + show(*bf16));
  if (bf16 ? *bf16 != false : !fp16) {
    dtype_ = "bf16";
    dtype_why_ = bf16 ? "bf16 = " + show(*bf16) + ": the model is loaded in bfloat16"
                      : "no bf16: axolotl's default \"auto\" (bf16 on a GPU that has it): the model is loaded in bfloat16";
  } else if (fp16) {
    dtype_ = "fp16";
    dtype_why_ = "fp16 = true";
  } else {
    dtype_why_ = "neither bf16 nor fp16";
  }
}

void AxolotlReader::read_model() {
  const std::optional<std::string> base = m_.string("base_model");
  if (!options_.model_json.empty()) {
    m_.model_from_hf(options_.model_json, "--model");
    return;
  }
  if (!options_.preset.empty()) {
    m_.model_from_preset(options_.preset, "--preset", "--preset " + trainmem::quoted(options_.preset));
    return;
  }
  if (!base) {
    if (!m_.has("base_model")) m_.fail("base_model", "missing (the Hugging Face model to fine-tune)");
    return;
  }
  m_.model_from_hub_name(*base, "base_model");
}

// The 4-bit base's options [load]: for adapter qlora axolotl builds BitsAndBytesConfig itself,
// with bnb_4bit_use_double_quant True, updated by bnb_config_kwargs (src/axolotl/loaders/model.py
// @ 067b021c8b87a9e5e380b9173c704cf7340e30f5, _set_quantization_config); transformers then keeps
// lm_head out of the conversion unless llm_int8_skip_modules is given, which replaces that list
// (transformers quantizers/quantizer_bnb_4bit.py @ 009ba7ca964c0049263bb4ad5d9eceb3674aaa0f;
// integrations/bitsandbytes.py @ 01ae98ae2414210efd0d9ac1ffe78ff21588f1f7 skips a module whose
// name is in the list). adapter lora with load_in_4bit gets no such config: transformers'
// defaults (double quantisation off) are resolve()'s.
void AxolotlReader::read_quantization(bool axolotl_bnb_config) {
  constexpr std::string_view double_key = "bnb_config_kwargs.bnb_4bit_use_double_quant";
  if (const std::optional<bool> dq = m_.boolean(double_key))
    m_.read(field::nf4_double_quant, *dq, double_key, *dq ? "true" : "false");
  else if (axolotl_bnb_config && !m_.has(double_key))
    m_.assume(field::nf4_double_quant, true, "adapter qlora: axolotl's BitsAndBytesConfig sets bnb_4bit_use_double_quant True", "adapter");
  constexpr std::string_view skip_key = "bnb_config_kwargs.llm_int8_skip_modules";
  const json* skip = m_.get(skip_key);
  if (!skip) return;
  if (!skip->is_array()) return m_.fail(skip_key, "must be a list of module names, got " + show(*skip));
  // transformers skips a module when an entry is its name, its full dotted name, or a prefix of
  // it ending at a dot: an entry naming a decoder linear or a module around them keeps those in
  // 16 bits, which trainmem does not model (it counts every decoder linear in NF4).
  static const std::vector<std::string_view> k_quantized_paths = {
      "model", "layers", "self_attn", "mlp", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  bool keeps_lm_head = false;
  for (const json& item : *skip) {
    if (!item.is_string()) return m_.fail(skip_key, "must be a list of module names, got " + show(*skip));
    const std::string name = item.get<std::string>();
    if (name == "lm_head") {
      keeps_lm_head = true;
      continue;
    }
    bool decoder = false;
    for (size_t start = 0; start <= name.size();) {
      const size_t dot = std::min(name.find('.', start), name.size());
      const std::string_view part = std::string_view(name).substr(start, dot - start);
      decoder = decoder || std::find(k_quantized_paths.begin(), k_quantized_paths.end(), part) != k_quantized_paths.end() ||
                (!part.empty() && std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; }));
      start = dot + 1;
    }
    if (decoder)
      return m_.fail(skip_key, show(item) + " keeps decoder linears out of the 4-bit conversion, which is not "
                               "modelled (trainmem counts every decoder linear in NF4); only \"lm_head\" is read");
    out_.ignored.push_back(std::string(skip_key) + ": " + show(item) + ": names no module trainmem counts in NF4");
  }
  m_.read(field::quantize_lm_head, !keeps_lm_head, skip_key,
          show(*skip) + (keeps_lm_head ? " (lm_head kept out of the 4-bit conversion)"
                                       : " (replaces transformers' list, which keeps lm_head: lm_head is quantised)"));
}

void AxolotlReader::read_adapter() {
  const std::optional<std::string> adapter = m_.string("adapter");
  const bool in4 = m_.boolean("load_in_4bit").value_or(false);
  const bool in8 = m_.boolean("load_in_8bit").value_or(false);
  if (!adapter && m_.has("adapter")) return;  // not a string: named by string()
  if (!adapter || adapter->empty()) {
    m_.assume(field::peft, std::string("none"), "no adapter: full fine-tuning", "adapter");
    if (in4 || in8) m_.fail(in4 ? "load_in_4bit" : "load_in_8bit", "needs an adapter (a quantized base cannot be trained whole)");
    return;
  }
  if (*adapter == "qlora") {
    if (in8) return m_.fail("load_in_8bit", "does not go with adapter qlora (4-bit base)");
    m_.read(field::peft, std::string("qlora"), "adapter", "\"qlora\"");
    m_.assume(field::params_dtype, std::string("nf4"), "adapter qlora: bitsandbytes 4-bit NF4 base (load_in_4bit)", "adapter");
  } else if (*adapter == "lora") {
    if (in4) {
      m_.read(field::peft, std::string("qlora"), "load_in_4bit", "true (LoRA over a 4-bit base)");
      m_.assume(field::params_dtype, std::string("nf4"), "load_in_4bit: bitsandbytes NF4", "load_in_4bit");
    } else {
      if (in8) {
        // load_in_8bit: transformers' BitsAndBytesConfig(load_in_8bit=True), Linear8bitLt
        // (axolotl src/axolotl/loaders/model.py @ 067b021c8b87a9e5e380b9173c704cf7340e30f5).
        m_.read(field::peft, std::string("qlora"), "adapter", "\"lora\" with load_in_8bit (LoRA over a bitsandbytes 8-bit base)");
        m_.assume(field::params_dtype, std::string("int8"), "load_in_8bit: bitsandbytes LLM.int8 (Linear8bitLt)", "load_in_8bit");
      } else {
        m_.read(field::peft, std::string("lora"), "adapter", "\"lora\"");
      }
    }
  } else {
    return m_.fail("adapter", "must be \"lora\" or \"qlora\" (or absent for full fine-tuning), got " + trainmem::quoted(*adapter));
  }
  if (*adapter == "qlora" || in4) read_quantization(*adapter == "qlora");
  // prepare_model_for_kbit_training [load]: axolotl calls it for lora/qlora over a 4- or 8-bit
  // base unless FSDP-QLoRA, FSDP with cpu_ram_efficient_loading or ZeRO-3
  // (src/axolotl/loaders/model.py @ 067b021c8b87a9e5e380b9173c704cf7340e30f5,
  // _prepare_model_for_quantization), patched to leave embed_tokens and lm_head alone
  // (monkeypatch/peft/utils.py), then casts modules named *norm* and the embeddings to the
  // training dtype (_convert_embedding_modules_dtype): "axolotl", only biases stay fp32.
  if (*adapter == "qlora" || in4 || in8) {
    const bool sharded = fsdp_ || (out_.input.zero_stage && *out_.input.zero_stage == 3 && deepspeed_);
    if (sharded)
      m_.assume(field::kbit_upcast, std::string("none"),
                std::string(fsdp_ ? "fsdp" : "ZeRO-3") + ": axolotl skips prepare_model_for_kbit_training", fsdp_ ? "fsdp" : "deepspeed");
    else
      m_.assume(field::kbit_upcast, std::string("axolotl"),
                "axolotl's patched prepare_model_for_kbit_training, norms and embeddings cast back to "
                "the training dtype (biases stay fp32)", "adapter");
  }
  // Targets: lora_target_linear = every linear layer but lm_head [lora]; lora_target_modules by
  // PEFT names (fused Phi-3 names split into theirs).
  std::vector<std::string> targets;
  std::string how;
  if (m_.boolean("lora_target_linear").value_or(false)) {
    mapping::add_lora_targets(targets, "all-linear");
    how = "lora_target_linear = true (every linear layer but lm_head)";
  }
  if (const json* list = m_.get("lora_target_modules")) {
    const json items = list->is_string() ? json::array({*list}) : *list;
    if (!items.is_array()) return m_.fail("lora_target_modules", "must be a list of module names, got " + show(*list));
    for (const json& item : items) {
      if (!mapping::add_lora_targets(targets, item.is_string() ? item.get<std::string>() : ""))
        out_.ignored.push_back("lora_target_modules: " + show(item) + ": not a module trainmem has adapters for");
    }
    how += std::string(how.empty() ? "" : ", ") + "lora_target_modules = " + show(*list);
  }
  if (const json* params = m_.get("lora_target_parameters"); params && !params->is_null() &&
                                                              !(params->is_array() && params->empty()))
    return m_.fail("lora_target_parameters", "PEFT's target_parameters (lora.ParamWrapper, for fused MoE experts) are not modelled: each "
                      "forward makes the adapters' delta B·A as a tensor the size of every expert's weight "
                      "(huggingface/peft tuners/lora/layer.py @ b28a09c4, get_delta_weight under a "
                      "parametrization); name per-expert linears in lora_target_modules where the model has them");
  if (targets.empty()) return m_.fail("lora_target_modules", "names no module (give lora_target_modules or lora_target_linear: true)");
  if (m_.put(field::lora_target_modules, targets, "lora_target_modules"))
    out_.read.push_back("lora_target_modules ← " + how + ": " + mapping::value_text(targets));
  if (auto r = m_.integer("lora_r")) m_.read(field::lora_rank, double(*r), "lora_r");
  else if (!m_.has("lora_r")) m_.assume(field::lora_rank, 8.0, "no lora_r: PEFT LoraConfig's default r 8", "lora_r");
  if (auto d = m_.number("lora_dropout", 0, 1)) m_.read(field::lora_dropout, *d, "lora_dropout");
  if (const json* save = m_.get("lora_modules_to_save")) mapping::read_modules_to_save(m_, out_, *save, "lora_modules_to_save");
  if (m_.boolean("peft_use_dora").value_or(false)) m_.ignore_value("peft_use_dora", "DoRA's magnitude vectors are not modelled");
}

void AxolotlReader::read_layout() {
  gpus_ = options_.gpus > 0 ? options_.gpus : 1;
  const json* ds = m_.get("deepspeed");
  const json* fsdp = m_.get("fsdp");
  if (ds && fsdp) return m_.fail("deepspeed", "and fsdp cannot both be set");
  // DeepSpeed and FSDP shard over every GPU the launcher starts (accelerate launch, torchrun),
  // which the file does not say: asked, not assumed.
  if (options_.gpus <= 0 && (ds || fsdp))
    mapping::ask_gpu_count(out_, ds ? "axolotl's deepspeed:" : "axolotl's fsdp:", "the file does not say");
  else if (options_.gpus <= 0)
    out_.assumed.push_back("gpus ← 1 (no --gpus)");
  if (!ds && !options_.deepspeed_json.empty())
    out_.ignored.push_back("--deepspeed: the file has no deepspeed: key, so axolotl does not run DeepSpeed");
  if (ds) {
    deepspeed_ = true;
    // The DeepSpeed file: given (--deepspeed), else one of axolotl's deepspeed_configs/ by name.
    // The Trainer's arguments axolotl passes, for the file's "auto" values.
    const auto value = [&](std::string_view key, const json& absent) {
      const json* v = mapping::at(m_.tree(), key);
      return v ? *v : absent;
    };
    const json args = {{"per_device_train_batch_size", value("micro_batch_size", nullptr)},
                       {"gradient_accumulation_steps", value("gradient_accumulation_steps", 1)},
                       {"bf16", dtype_ == "bf16"},
                       {"fp16", value("fp16", false) == true}};
    // The DeepSpeed config: the file --deepspeed gives, or the mapping written in place [schema].
    std::optional<json> given;
    if (!options_.deepspeed_json.empty()) {
      given = mapping::object_tree(options_.deepspeed_json, "--deepspeed", out_.issues);
      if (!given) return;
      out_.read.push_back("deepspeed ← --deepspeed (the file " + show(*ds) + " names)");
    } else if (ds->is_object()) {
      given = *ds;
      out_.read.push_back("deepspeed ← the DeepSpeed config written under deepspeed:");
    }
    if (given) {
      Mapper ds_m(*given, out_);
      mapping::read_deepspeed(ds_m, mapping::TrainerArguments{args, "the Trainer's "}, gpus_);
      return;
    }
    const std::string path = ds->is_string() ? ds->get<std::string>() : "";
    const std::string file(mapping::last_part(path, '/'));
    const auto it = std::find_if(k_deepspeed_files.begin(), k_deepspeed_files.end(), [&](const DsFile& f) { return f.name == file; });
    if (it == k_deepspeed_files.end())
      return m_.fail("deepspeed", show(*ds) + " is not one of axolotl's deepspeed_configs/; give the file with --deepspeed");
    m_.assume(field::framework, std::string("deepspeed"), "deepspeed = " + show(*ds), "deepspeed");
    m_.read(field::zero_stage, double(it->stage), "deepspeed", show(*ds) + " (axolotl's deepspeed_configs/" + std::string(it->name) + ")");
    if (it->offload_params) m_.read(field::offload_params, true, "deepspeed", "offload_param cpu in " + std::string(it->name));
    if (it->offload_optimizer) m_.read(field::optimizer_offload_fraction, 1.0, "deepspeed", "offload_optimizer cpu in " + std::string(it->name));
    m_.assume(field::data_parallel_size, double(gpus_), "--gpus", "--gpus");
    m_.put(field::model_implementation, std::string("hf-transformers"), "deepspeed");
    return;
  }
  m_.put(field::model_implementation, std::string("hf-transformers"), "base_model");
  // FSDP is on with the fsdp list or with fsdp_config alone, the newer form (axolotl
  // src/axolotl/loaders/model.py @ 067b021c, is_fsdp_enabled: "fsdp_config is not None or fsdp is
  // not None"; utils/trainer.py setup_fsdp_envs passes fsdp_config's offload_params,
  // reshard_after_forward and activation_checkpointing to accelerate's plugin).
  const json* fsdp_config = m_.get("fsdp_config");
  if (!fsdp && fsdp_config && !fsdp_config->is_null() && !fsdp_config->is_object())
    return m_.fail("fsdp_config", "must be a mapping of FSDP options, got " + show(*fsdp_config));
  const bool fsdp_config_only = !fsdp && fsdp_config && fsdp_config->is_object();
  if (fsdp || fsdp_config_only) {
    fsdp_ = true;
    m_.touch("fsdp_config");
    if (fsdp && !fsdp->is_array()) return m_.fail("fsdp", "must be a list of FSDP options (full_shard, auto_wrap, offload, ...), got " + show(*fsdp));
    std::vector<std::string> items;
    for (const json& x : fsdp ? *fsdp : json::array()) {
      if (!x.is_string()) return m_.fail("fsdp", "entries must be FSDP option names, got " + show(x));
      items.push_back(x.get<std::string>());
    }
    const auto has = [&](std::string_view s) { return std::find(items.begin(), items.end(), s) != items.end(); };
    // accelerate's FSDP_SHARDING_STRATEGY names (torch's ShardingStrategy spells the last one
    // _HYBRID_SHARD_ZERO2). NO_SHARD is DDP's memory; the hybrid ones shard within a node, which
    // this importer cannot see (no node size): named, not read as a full shard.
    const std::string strategy = m_.string("fsdp_config.fsdp_sharding_strategy").value_or(has("shard_grad_op") ? "SHARD_GRAD_OP" : "FULL_SHARD");
    const std::string named = mapping::lowercase(strategy.rfind('_', 0) == 0 ? strategy.substr(1) : strategy);
    if (named == "no_shard") {
      // FSDP1's NO_SHARD (pytorch/pytorch torch/distributed/fsdp/_runtime_utils.py @
      // 3ade90a6aaa939cd6238e314c321b9f920db1471, _reduce_grad_no_shard): every rank keeps the
      // whole flat parameter and its .grad, and the gradient is all-reduced in place in
      // flat_param.grad: no second copy, as DDP's buckets are without gradient_as_bucket_view. That
      // is DDP with gradient_as_bucket_view, except that FSDP frees the gradients between steps
      // (zero_grad) where the bucket views persist: counted with them, high by one gradient copy in
      // the forward only.
      m_.read(field::framework, std::string("ddp"), "fsdp_config.fsdp_sharding_strategy", "NO_SHARD (every rank keeps everything, as DDP)");
      m_.assume(field::gradient_as_bucket_view, true, "NO_SHARD all-reduces each flat gradient in place (FSDP _reduce_grad_no_shard): no bucket copy", "fsdp_config.fsdp_sharding_strategy");
      m_.assume(field::data_parallel_size, double(gpus_), "--gpus", "--gpus");
      return;
    }
    if (named != "full_shard" && named != "shard_grad_op")
      return m_.fail("fsdp_config.fsdp_sharding_strategy", trainmem::quoted(strategy) + " shards within a node, which an axolotl "
                                                           "file does not size: use trainmem import accelerate with its config, or set data_parallel_shard_size");
    // The newer keys drop the fsdp_ prefix; accelerate's plugin reshards after forward unless told
    // not to (FullyShardedDataParallelPlugin: FSDP_RESHARD_AFTER_FORWARD defaults to true).
    const bool reshard = m_.boolean("fsdp_config.fsdp_reshard_after_forward")
                             .value_or(m_.boolean("fsdp_config.reshard_after_forward").value_or(named == "full_shard"));
    m_.assume(field::framework, std::string("fsdp2"), fsdp ? "fsdp = " + show(*fsdp) : std::string("fsdp_config given (FSDP on)"),
              fsdp ? "fsdp" : "fsdp_config");
    // [fsdp] axolotl's FSDP version: fsdp_version at the top (AxolotlInputConfig) or in
    // fsdp_config (FSDPConfig.fsdp_version, alias version; src/axolotl/utils/schemas/fsdp.py @
    // 9399b5a914d8a6a09f4496fed2ef12f96b2ed160), default None: accelerate's plugin then wraps
    // with FullyShardedDataParallel (FSDP1, accelerate.cpp [fsdp]); 2 runs fully_shard.
    std::string version_key;
    for (const char* key : {"fsdp_version", "fsdp_config.fsdp_version", "fsdp_config.version"})
      if (version_key.empty() && m_.has(key)) version_key = key;
    if (!version_key.empty()) {
      const std::optional<int64_t> v = m_.integer(version_key);
      if (!v) return;
      if (*v != 1 && *v != 2) return m_.fail(version_key, "must be 1 or 2, got " + number_text(double(*v)));
      m_.read(field::fsdp_version, double(*v), version_key, *v == 1 ? "1 (FullyShardedDataParallel)" : "2 (fully_shard)");
    } else {
      m_.assume(field::fsdp_version, 1.0, "no fsdp_version: accelerate wraps with FullyShardedDataParallel (FSDP1)", "fsdp");
    }
    if (fsdp_config_only && !m_.has("fsdp_config.fsdp_sharding_strategy"))
      m_.read(field::zero_stage, reshard ? 3.0 : 2.0, "fsdp_config.reshard_after_forward",
              reshard ? "true, or unset (accelerate reshards after forward by default)" : "false");
    else
      m_.read(field::zero_stage, reshard ? 3.0 : 2.0, "fsdp_config.fsdp_sharding_strategy", trainmem::quoted(strategy));
    m_.assume(field::data_parallel_size, double(gpus_), "--gpus", "--gpus");
    if (m_.boolean("fsdp_config.activation_checkpointing").value_or(false))
      m_.full_recompute_per_layer("fsdp_config.activation_checkpointing", "true", "decoder layer");
    if (m_.boolean("fsdp_config.fsdp_offload_params").value_or(false) ||
        m_.boolean("fsdp_config.offload_params").value_or(false) || has("offload")) {
      if (!reshard)
        return m_.fail("fsdp_config.fsdp_offload_params", "with parameters kept gathered (" + trainmem::quoted(strategy) +
                                                               "): trainmem offloads the parameters of a full shard only");
      m_.read(field::offload_params, true, "fsdp_config.fsdp_offload_params", "true (CPUOffload: parameters, gradients and the optimizer step on the CPU)");
      m_.assume(field::optimizer_offload_fraction, 1.0, "FSDP's CPU offload steps the optimizer on the CPU", "fsdp_config.fsdp_offload_params");
    }
    return;
  }
  m_.assume(field::framework, std::string("ddp"), gpus_ > 1 ? "no deepspeed or fsdp: accelerate launches DDP" : "one device: a plain module", "--gpus");
  m_.assume(field::data_parallel_size, double(gpus_), "--gpus", "--gpus");
}

// Evaluation between steps [schema] [cfg]: axolotl evaluates when val_set_size (0.0 by default,
// "0 for no eval") or test_datasets gives it an evaluation set, unless eval_strategy is "no"; each
// evaluation step takes eval_batch_size sequences per GPU, micro_batch_size when unset
// (src/axolotl/utils/config/__init__.py @ 00ce8882ab23c7e72e4d705b6dec41c9a2dcf94a
// normalize_config).
void AxolotlReader::read_evaluation(int64_t micro_batch) {
  const std::optional<double> share = m_.has("val_set_size") ? m_.number("val_set_size", 0, 9e15) : std::optional<double>(0.0);
  const json* tests = m_.get("test_datasets");
  const std::optional<std::string> strategy = m_.has("eval_strategy") ? m_.string("eval_strategy") : std::nullopt;
  if (!share || !out_.ok()) return;
  const bool has_tests = tests && !(tests->is_array() && tests->empty());
  if (!(*share > 0 || has_tests)) return;  // no evaluation set: no evaluation step
  if (strategy && mapping::lowercase(*strategy) == "no") {
    out_.read.push_back("eval_micro_batch_size: none (eval_strategy = \"no\": no evaluation between steps)");
    return;
  }
  const std::string why = *share > 0 ? "val_set_size = " + number_text(*share) : std::string("test_datasets");
  if (m_.has("eval_batch_size")) {
    if (const std::optional<int64_t> batch = m_.integer("eval_batch_size"))
      m_.read(field::eval_micro_batch_size, double(*batch), "eval_batch_size", number_text(double(*batch)) + " (" + why + ")");
  } else {
    m_.assume(field::eval_micro_batch_size, double(micro_batch),
              why + " evaluates between steps; no eval_batch_size: axolotl uses micro_batch_size", "eval_batch_size");
  }
}

// torch.utils.checkpoint's mode (checkpoint_reentrant): gradient_checkpointing_kwargs, which the
// trainer builder passes to TrainingArguments; unset, normalize_config sets {"use_reentrant": True}
// unless rl or unfrozen_parameters is set, where the builder passes {"use_reentrant": False}
// (src/axolotl/utils/config/__init__.py and core/builders/base.py
// _configure_gradient_checkpointing @ 067b021c8b87a9e5e380b9173c704cf7340e30f5; Gemma 4 forces
// False, a model trainmem has no preset for).
void AxolotlReader::read_checkpoint_mode() {
  if (const json* kwargs = m_.get("gradient_checkpointing_kwargs")) {
    if (!kwargs->is_object()) return m_.fail("gradient_checkpointing_kwargs", "must be a mapping, got " + show(*kwargs));
    const auto it = kwargs->find("use_reentrant");
    if (it == kwargs->end() || it->is_null()) return;
    if (!it->is_boolean())
      return m_.fail("gradient_checkpointing_kwargs.use_reentrant", "must be true or false, got " + show(*it));
    m_.read(field::checkpoint_reentrant, it->get<bool>(), "gradient_checkpointing_kwargs.use_reentrant");
  } else if (m_.has("rl") || m_.has("unfrozen_parameters")) {
    m_.assume(field::checkpoint_reentrant, false,
              "no gradient_checkpointing_kwargs with rl or unfrozen_parameters: axolotl passes {\"use_reentrant\": false}",
              "gradient_checkpointing_kwargs");
  } else {
    m_.assume(field::checkpoint_reentrant, true,
              "no gradient_checkpointing_kwargs: axolotl's normalize_config sets {\"use_reentrant\": true}",
              "gradient_checkpointing_kwargs");
  }
}

void AxolotlReader::read_training() {
  // Precision [load]: bf16 (or auto) loads the model in bfloat16; without DeepSpeed or FSDP mixed
  // precision the Trainer then trains those weights as they are (states in their dtype).
  const std::string& dtype = dtype_;
  const std::string& why = dtype_why_;
  if (!deepspeed_) {
    if (!out_.input.params_dtype) m_.assume(field::params_dtype, dtype, why, "bf16");
    m_.assume(field::compute_dtype, dtype, why, "bf16");
    if (!fsdp_ && dtype != "fp32") {
      m_.assume(field::master_weights, false, why + "; the Trainer keeps no fp32 copy", "bf16");
      for (FieldName f : {field::main_grads_dtype, field::exp_avg_dtype, field::exp_avg_sq_dtype}) m_.assume(f, dtype, why, "bf16");
    }
  }
  if (auto mb = m_.integer("micro_batch_size")) {
    m_.read(field::micro_batch_size, double(*mb), "micro_batch_size");
    // The accumulation is axolotl's knob (the Trainer's gradient_accumulation_steps, per rank): it
    // stays when the GPU count changes, and the global batch follows (micro × accumulation ×
    // ranks), so the microbatch count is what the file fixes. A DeepSpeed file's own batch keys
    // (read before) win.
    mapping::read_accumulation(m_, "no gradient_accumulation_steps: the Trainer's default 1",
                               !out_.input.global_batch_size && !out_.input.num_microbatches);
    read_evaluation(*mb);
  } else if (!m_.has("micro_batch_size")) {
    m_.fail("micro_batch_size", "missing (axolotl requires it)");
  }
  const bool packed = m_.boolean("sample_packing").value_or(false);
  const bool padded = m_.boolean("pad_to_sequence_len").value_or(false);
  if (!m_.has("sequence_len")) {
    m_.touch("sequence_len");
    m_.assume(field::seq_length, 512.0, "no sequence_len: axolotl's default 512", "sequence_len");
  } else if (auto seq = m_.integer("sequence_len")) {
    if (packed || padded)
      m_.read(field::seq_length, double(*seq), "sequence_len", number_text(double(*seq)) + (packed ? " (sample_packing = true)" : " (pad_to_sequence_len = true)"));
    else
      m_.assume(field::seq_length, double(*seq), "sequence_len: unpacked batches are padded to their longest sample, at most this", "sequence_len");
  }
  // Activation checkpointing: transformers' gradient_checkpointing per decoder layer; "offload"
  // also moves the checkpointed layer inputs to the CPU [schema].
  if (const json* gc = m_.get("gradient_checkpointing")) {
    const bool offload = *gc == "offload";
    if (*gc == true || offload) {
      m_.full_recompute_per_layer("gradient_checkpointing", show(*gc), "decoder layer");
      if (offload) m_.read(field::activation_offload, true, "gradient_checkpointing", "\"offload\"");
      read_checkpoint_mode();
    } else if (*gc == false) {
      m_.read(field::recompute_granularity, std::string("none"), "gradient_checkpointing", show(*gc));
    } else if (*gc == "unsloth" || *gc == "offload_disk") {
      m_.ignore_value("gradient_checkpointing", "a checkpointing mode trainmem does not model: no recomputation is counted");
    } else {
      m_.fail("gradient_checkpointing", "must be true, false, \"offload\", \"offload_disk\" or \"unsloth\", got " + show(*gc));
    }
  }
  // attn_implementation (axolotl src/axolotl/utils/schemas/config.py @ 067b021c: "eager, sdpa,
  // flash_attention_2, flash_attention_3, flex_attention, xformers, sage, fp8" or a Hub kernel
  // path, passed to transformers; the booleans below are its deprecated forms): eager keeps the
  // s² scores (unfused); every other kernel keeps the output and its softmax statistics (flash).
  if (const json* impl = m_.get("attn_implementation")) {
    mapping::hf_attention(m_, *impl, "attn_implementation", {"xformers", "sage", "fp8"});
  } else if (m_.boolean("flash_attention").value_or(false) || m_.boolean("sdp_attention").value_or(false))
    m_.read(field::attention_backend, std::string("flash"), m_.has("flash_attention") ? "flash_attention" : "sdp_attention", "true");
  else if (m_.boolean("eager_attention").value_or(false))
    m_.read(field::attention_backend, std::string("unfused"), "eager_attention", "true");
  m_.assume(field::attention_dropout, 0.0, "Llama-style models have no attention dropout (attention_dropout 0.0)", "base_model");
  m_.assume(field::hidden_dropout, 0.0, "Llama-style models have no dropout", "base_model");
  if (const json* opt = m_.get("optimizer")) {
    if (opt->is_string()) mapping::hf_optimizer(m_, opt->get<std::string>(), "optimizer");
    else m_.fail("optimizer", "must be an optimizer name, got " + show(*opt));
  } else if (!deepspeed_) {
    m_.assume(field::optimizer, std::string("adamw"), "no optimizer: transformers' default adamw_torch", "optimizer");
  }
  if (const json* tc = m_.get("torch_compile")) {
    if (tc->is_boolean()) m_.read(field::torch_compile, tc->get<bool>(), "torch_compile");
    else if (*tc == "auto") m_.assume(field::torch_compile, true, "torch_compile = \"auto\": compiles on torch 2.6 or later", "torch_compile");
    else m_.fail("torch_compile", "must be true, false or \"auto\", got " + show(*tc));
  }
  // Liger's fused linear cross entropy takes effect through axolotl's LigerPlugin
  // (axolotl/integrations/liger: plugins: [axolotl.integrations.liger.LigerPlugin]).
  // [schema] plugins: a list of plugin names.
  const json* plugins = m_.get("plugins");
  if (plugins && !plugins->is_array()) return m_.fail("plugins", "must be a list of plugin names, got " + show(*plugins));
  const bool liger_plugin = plugins && std::any_of(plugins->begin(), plugins->end(), [](const json& p) {
    return p.is_string() && p.get<std::string>().find("LigerPlugin") != std::string::npos;
  });
  if (const std::optional<bool> liger = m_.boolean("liger_fused_linear_cross_entropy")) {
    if (!*liger) m_.read(field::fused_linear_cross_entropy, false, "liger_fused_linear_cross_entropy", "false");
    else if (liger_plugin) m_.read(field::fused_linear_cross_entropy, true, "liger_fused_linear_cross_entropy", "true (LigerPlugin)");
    else m_.ignore_value("liger_fused_linear_cross_entropy", "takes effect only with axolotl.integrations.liger.LigerPlugin in plugins");
  }
  // Cut Cross Entropy takes effect through axolotl's CutCrossEntropyPlugin
  // (src/axolotl/integrations/cut_cross_entropy/__init__.py @
  // 0138ca7c1677979c706a19a5eb070ea476c830b0: pre_model_load calls cce_patch when
  // cfg.cut_cross_entropy; args.py @ 1188fdc1185e0c5c2c1b6082cb9e40021fcd1f47: cut_cross_entropy
  // defaults to True once the plugin is listed, cut_cross_entropy_accum_c_fp32 to False).
  const bool cce_plugin = plugins && std::any_of(plugins->begin(), plugins->end(), [](const json& p) {
    return p.is_string() && p.get<std::string>().find("CutCrossEntropyPlugin") != std::string::npos;
  });
  const std::optional<bool> cce = m_.boolean("cut_cross_entropy");
  if (cce_plugin) {
    if (cce) m_.read(field::cut_cross_entropy, *cce, "cut_cross_entropy", *cce ? "true (CutCrossEntropyPlugin)" : "false");
    else m_.assume(field::cut_cross_entropy, true, "CutCrossEntropyPlugin in plugins: its cut_cross_entropy defaults to true", "plugins");
    if (cce.value_or(true) && m_.boolean("cut_cross_entropy_accum_c_fp32").value_or(false))
      return m_.fail("cut_cross_entropy_accum_c_fp32", "an fp32 accumulator for the output layer's weight gradient "
                                                       "(zeros_like(c, dtype=float32), cce_backward.py) is not modelled; "
                                                       "leave it false");
  } else if (cce.value_or(false)) {
    m_.ignore_value("cut_cross_entropy", "takes effect only with axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin in plugins");
  }
  // axolotl's chunked cross entropy (src/axolotl/loaders/patch_manager.py
  // _apply_chunked_cross_entropy_patch; src/axolotl/monkeypatch/loss/chunked.py @
  // 01b75c129d7b3014c2524cd270075b5653fe6735: patch_chunked_ce_loss_fn(num_output_chunks=8)
  // unless chunked_cross_entropy_num_chunks is given).
  if (const std::optional<bool> chunked = m_.boolean("chunked_cross_entropy")) {
    if (!*chunked) {
      if (m_.has("chunked_cross_entropy_num_chunks"))
        m_.ignore_value("chunked_cross_entropy_num_chunks", "chunked_cross_entropy is false");
    } else if (m_.has("chunked_cross_entropy_num_chunks")) {
      if (auto n = m_.integer("chunked_cross_entropy_num_chunks"))
        m_.read(field::cross_entropy_chunks, double(*n), "chunked_cross_entropy_num_chunks");
    } else {
      m_.assume(field::cross_entropy_chunks, 8.0, "chunked_cross_entropy = true without "
                "chunked_cross_entropy_num_chunks: patch_chunked_ce_loss_fn's default 8", "chunked_cross_entropy");
    }
  } else if (m_.has("chunked_cross_entropy_num_chunks")) {
    m_.ignore_value("chunked_cross_entropy_num_chunks", "takes effect only with chunked_cross_entropy: true");
  }
  for (const char* k : {"liger_rms_norm", "liger_glu_activation", "liger_rope", "liger_layer_norm"})
    if (m_.has(k)) m_.ignore_value(k, "Liger kernels save fewer activations: " + std::string(mapping::k_no_field));
  if (m_.has("plugins"))
    m_.ignore_value("plugins", "read only for LigerPlugin's liger_fused_linear_cross_entropy and CutCrossEntropyPlugin");
}

void AxolotlReader::run() {
  read_precision();
  if (!out_.ok()) return;
  // The model first: the DeepSpeed config's "auto" buckets are hidden_size² (read_layout).
  read_model();
  if (!out_.ok()) return;
  read_layout();
  if (!out_.ok()) return;
  read_adapter();
  read_training();
  if (out_.ok()) m_.account(k_no_memory, {"bnb_config_kwargs"});
}

}  // namespace

ImportResult import_axolotl(std::string_view tree_json, const ImportOptions& options) {
  return mapping::import_tree(tree_json, "CONFIG.yaml", mapping::requires_key("base_model", "an axolotl config"),
                              [&](json& tree, ImportResult& out) { AxolotlReader(tree, options, out).run(); });
}

}  // namespace trainmem
