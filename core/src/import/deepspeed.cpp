// DeepSpeed configs (JSON) with the Hugging Face Trainer's arguments -> trainmem fields.
//
// Sources:
//   [ds]  microsoft/DeepSpeed deepspeed/runtime/config.py and zero/config.py: zero_optimization
//         (stage, default 0; offload_optimizer / offload_param {device: none|cpu|nvme, ratio}),
//         bf16 / fp16 {enabled}, train_micro_batch_size_per_gpu, gradient_accumulation_steps,
//         train_batch_size = micro × accumulation × world (asserted), optimizer {type}
//         ("Adam"/"AdamW" build FusedAdam in AdamW mode, DeepSpeedCPUAdam when offloaded);
//         deepspeed/runtime/config.py @ 3a890ec57fb78fa08d97336dcee1931c40acfc34
//         get_bfloat16_enabled / get_fp16_enabled: a block's "enabled" defaults to
//         BFLOAT16_ENABLED_DEFAULT / FP16_ENABLED_DEFAULT, both False (runtime/constants.py), and
//         the block is read as a mapping
//   [hf]  huggingface/transformers src/transformers/integrations/deepspeed.py
//         HfTrainerDeepSpeedConfig.trainer_config_process: "auto" is filled from the
//         TrainingArguments: train_micro_batch_size_per_gpu ← per_device_train_batch_size,
//         gradient_accumulation_steps ← gradient_accumulation_steps, train_batch_size ← world ×
//         both, fp16.enabled ← fp16 (amp backend), bf16.enabled ← bf16; a value that is not
//         "auto" must equal the argument's (fill_match: "Please correct the following DeepSpeed
//         config values that mismatch TrainingArguments values"); with no optimizer block the
//         Trainer's own optimizer (args.optim) runs under ZeRO
//   [ta]  transformers training_args.py defaults: per_device_train_batch_size 8,
//         gradient_accumulation_steps 1, optim "adamw_torch", gradient_checkpointing false
#include "mapping.hpp"

namespace trainmem {
namespace {

using mapping::json;
using mapping::Mapper;
using mapping::show;

const std::vector<std::string_view> k_no_memory = {
    "steps_per_print", "wall_clock_breakdown", "gradient_clipping", "scheduler", "prescale_gradients",
    "gradient_predivide_factor", "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer",
    "tensorboard", "wandb", "csv_monitor", "flops_profiler", "comms_logger", "dump_state",
    "memory_breakdown", "communication_data_type", "seed", "checkpoint", "data_types", "amp",
};

}  // namespace

namespace mapping {

const json* TrainerArguments::given(std::string_view name) const {
  const auto it = args.find(std::string(name));
  return it != args.end() && !it->is_null() ? &*it : nullptr;
}

std::optional<bool> TrainerArguments::flag(Mapper& m, const char* name) const {
  const json* v = given(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    m.fail(key(name), "must be true or false, got " + show(*v));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<int64_t> TrainerArguments::count(Mapper& m, const char* name) const {
  const json* v = given(name);
  if (!v) return std::nullopt;
  const std::optional<int64_t> n = whole_number(*v, 1);
  if (!n) m.fail(key(name), "must be a positive integer, got " + show(*v));
  return n;
}

// torch.utils.checkpoint's mode (checkpoint_reentrant) for the Trainer's gradient checkpointing:
// TrainingArguments gradient_checkpointing_kwargs {"use_reentrant": …} (a mapping, or its JSON
// text on a command line), which the Trainer passes to gradient_checkpointing_enable; PEFT's
// examples/sft/train.py's own --use_reentrant (ModelArguments, default False; main() sets
// gradient_checkpointing_kwargs = {"use_reentrant": model_args.use_reentrant}: huggingface/peft @
// 0c248e9bc5fdfcf4d0f7c27464b52c026ce7e582), the script that takes --use_peft_lora. Neither given:
// transformers' own default (checkpoint_reentrant's).
void read_checkpoint_mode(Mapper& m, const TrainerArguments& a) {
  if (const json* kwargs = a.given("gradient_checkpointing_kwargs")) {
    json parsed = *kwargs;
    if (kwargs->is_string()) parsed = json::parse(kwargs->get<std::string>(), nullptr, false);
    if (!parsed.is_object()) {
      m.fail(a.key("gradient_checkpointing_kwargs"), "must be a mapping (torch.utils.checkpoint's arguments), got " + show(*kwargs));
      return;
    }
    const auto it = parsed.find("use_reentrant");
    if (it == parsed.end() || it->is_null()) return;  // torch's own default: transformers passes none
    if (!it->is_boolean()) {
      m.fail(a.key("gradient_checkpointing_kwargs"), "use_reentrant must be true or false, got " + show(*it));
      return;
    }
    m.read(field::checkpoint_reentrant, it->get<bool>(), a.key("gradient_checkpointing_kwargs"),
           std::string("{\"use_reentrant\": ") + (it->get<bool>() ? "true" : "false") + "}");
  } else if (const std::optional<bool> reentrant = a.flag(m, "use_reentrant")) {
    m.read(field::checkpoint_reentrant, *reentrant, a.key("use_reentrant"), *reentrant ? "true" : "false");
  } else if (a.given("use_peft_lora")) {
    m.assume(field::checkpoint_reentrant, false,
             "PEFT's examples/sft/train.py: no --use_reentrant, its default False, passed as "
             "gradient_checkpointing_kwargs", "use_reentrant");
  }
}

// What every Trainer run reads from its arguments, whoever launches it: activation
// checkpointing, compile, Liger's fused loss, the sequence length and (`optimizer_read` false)
// the optimizer.
void read_trainer_arguments(Mapper& m, const TrainerArguments& a, bool optimizer_read) {
  ImportResult& out = m.out();
  if (!optimizer_read) {
    if (const json* optim = a.given("optim")) {
      if (optim->is_string()) hf_optimizer(m, optim->get<std::string>(), a.key("optim"));
      else m.fail(a.key("optim"), "must be an optimizer name, got " + show(*optim));
    } else {
      m.assume(field::optimizer, std::string("adamw"), !a.args.empty() ? "no optim: TrainingArguments' default \"adamw_torch\""
                                                                  : "no optimizer: the Trainer's default \"adamw_torch\"", "optimizer");
      if (out.input.framework && (*out.input.framework == Framework::ddp || *out.input.framework == Framework::fsdp2))
        m.assume(field::optimizer_implementation, std::string("foreach"), "\"adamw_torch\" steps with torch.optim (foreach on CUDA)", "optim");
    }
  }
  // Activation checkpointing: the Trainer's gradient_checkpointing (torch.utils.checkpoint per
  // decoder layer).
  if (const std::optional<bool> checkpointing = a.flag(m, "gradient_checkpointing")) {
    if (*checkpointing) {
      m.full_recompute_per_layer(a.key("gradient_checkpointing"), "true", "decoder layer");
      read_checkpoint_mode(m, a);
    } else {
      m.read(field::recompute_granularity, std::string("none"), a.key("gradient_checkpointing"), "false");
    }
  }
  // TrainingArguments torch_compile: the Trainer compiles the whole model (trainer.py
  // _wrap_model: torch.compile(model)), the loss computed inside its forward included.
  if (const std::optional<bool> on = a.flag(m, "torch_compile"))
    m.read(field::torch_compile, *on, a.key("torch_compile"), *on ? "true" : "false");
  // TrainingArguments use_liger_kernel: the Trainer patches the model with Liger Kernel
  // (trainer.py _apply_liger_kernel_to_instance(model, **liger_kernel_config)), whose
  // apply_liger_kernel_to_* default to fused_linear_cross_entropy=True
  // (liger_kernel/transformers/monkey_patch.py); liger_kernel_config may turn it off.
  if (const std::optional<bool> on = a.flag(m, "use_liger_kernel")) {
    bool fused = *on;
    std::string how = *on ? "true (Liger's default fused_linear_cross_entropy)" : "false";
    const json* kernels = *on ? a.given("liger_kernel_config") : nullptr;
    const json* flag = kernels && kernels->is_object() && kernels->contains("fused_linear_cross_entropy")
                           ? &kernels->at("fused_linear_cross_entropy") : nullptr;
    if (kernels && !kernels->is_object()) {
      m.fail(a.key("liger_kernel_config"), "must be a mapping of Liger's kernel switches, got " + show(*kernels));
    } else if (flag && !flag->is_boolean()) {
      m.fail(a.key("liger_kernel_config") + ".fused_linear_cross_entropy", "must be true or false, got " + show(*flag));
    } else if (flag) {
      fused = flag->get<bool>();
      how = std::string("true, liger_kernel_config.fused_linear_cross_entropy ") + (fused ? "true" : "false");
    }
    m.read(field::fused_linear_cross_entropy, fused, a.key("use_liger_kernel"), how);
    if (*on)
      out.ignored.push_back(a.key("use_liger_kernel") + ": Liger's RMSNorm, SwiGLU and RoPE kernels are "
                            "not modelled (the layers are counted as transformers' own)");
  }
  // Evaluation between steps [ta]: eval_strategy (evaluation_strategy before transformers 4.46)
  // "steps" or "epoch" has the Trainer evaluate from _maybe_log_save_evaluate, after the optimizer
  // step and zero_grad, per_device_eval_batch_size sequences per GPU (8 unless given); "no", the
  // default, never does (trainer.py @ 000945a9b726d87a93e61e873b88ff8f3cd411b5).
  const char* strategy_name = a.given("eval_strategy") ? "eval_strategy" : "evaluation_strategy";
  if (const json* strategy = a.given(strategy_name)) {
    // A launch command's "no" reaches here as false (its words are read as Python's flags are).
    const std::string value = strategy->is_string() ? lowercase(strategy->get<std::string>())
                              : *strategy == false    ? "no"
                                                      : "";
    if (value == "steps" || value == "epoch") {
      if (const std::optional<int64_t> batch = a.count(m, "per_device_eval_batch_size"))
        m.read(field::eval_micro_batch_size, double(*batch), a.key("per_device_eval_batch_size"),
               number_text(double(*batch)) + " (" + a.key(strategy_name) + " " + show(*strategy) + ")");
      else if (!a.given("per_device_eval_batch_size"))
        m.assume(field::eval_micro_batch_size, 8.0,
                 a.key(strategy_name) + " " + show(*strategy) + " evaluates between steps; no per_device_eval_batch_size: "
                 "TrainingArguments' default 8", "per_device_eval_batch_size");
      // What compute_metrics keeps of each step (evaluation_loop @ 000945a9): compute_metrics
      // itself is code, so the importer can say only what the arguments fix. prediction_loss_only
      // keeps the loss alone; eval_accumulation_steps moves the kept predictions to the CPU every k
      // steps, and batch_eval_metrics keeps one step's (as k = 1).
      if (a.flag(m, "prediction_loss_only").value_or(false)) {
        m.read(field::eval_predictions, std::string("none"), a.key("prediction_loss_only"), "none (prediction_loss_only = true)");
      } else {
        m.assume(field::eval_predictions, std::string("none"),
                 "compute_metrics is passed in the script, not in TrainingArguments: with it the Trainer keeps "
                 "every evaluation step's logits on the GPU; set eval_predictions (\"logits\", or \"argmax\" with "
                 "a preprocess_logits_for_metrics that returns token ids) and eval_samples",
                 "compute_metrics");
        if (const std::optional<int64_t> k = a.count(m, "eval_accumulation_steps"))
          m.read(field::eval_accumulation_steps, double(*k), a.key("eval_accumulation_steps"), number_text(double(*k)));
        else if (a.flag(m, "batch_eval_metrics").value_or(false))
          m.read(field::eval_accumulation_steps, 1.0, a.key("batch_eval_metrics"),
                 "1 (batch_eval_metrics = true: one step's predictions at a time)");
      }
    } else if (value != "no") {
      m.fail(a.key(strategy_name), "must be \"no\", \"steps\" or \"epoch\", got " + show(*strategy));
    }
  }
  // The sequence length: SFTConfig's max_length (max_seq_length before TRL 0.20; max_seq_len in
  // PEFT's examples/sft/train.py as its docs launch it).
  for (const char* name : {"max_length", "max_seq_length", "max_seq_len"}) {
    const std::optional<int64_t> length = a.count(m, name);
    if (!length) continue;
    const bool packing = a.flag(m, "packing").value_or(false);
    if (packing) m.read(field::seq_length, double(*length), a.key(name), number_text(double(*length)) + " (packing = true)");
    else m.assume(field::seq_length, double(*length), a.key(name) + ": unpacked batches are padded to their longest sample, at most this", a.key(name));
    break;
  }
}

// The DeepSpeed config `ds` (a Mapper over it) with the Trainer's arguments `a` (possibly none)
// on `gpus` ranks.
void read_deepspeed(Mapper& m, const TrainerArguments& a, int64_t gpus) {
  ImportResult& out = m.out();
  const json& args = a.args;
  const bool have_args = !args.empty();
  const auto given = [&](std::string_view arg) { return a.given(arg); };
  // A value that may be "auto" [hf]: the Trainer argument's, or its default. A value that is not
  // "auto" must match the argument when one is given (fill_match).
  const auto resolved = [&](std::string_view key, std::string_view arg, const json& fallback) -> std::optional<json> {
    const json* v = m.get(key);
    if (!v) return std::nullopt;
    const json* from_args = given(arg);
    if (v->is_string() && v->get<std::string>() == "auto") {
      if (from_args) {
        out.read.push_back(std::string(key) + " = \"auto\" ← " + a.key(arg) + " = " + show(*from_args));
        return *from_args;
      }
      if (fallback.is_null())
        out.assumed.push_back(std::string(key) + " = \"auto\" ← micro × accumulation × ranks (as the Trainer fills it)");
      else
        out.assumed.push_back(std::string(key) + " = \"auto\" ← " + show(fallback) + " (TrainingArguments' default " +
                              std::string(arg) + (have_args ? ")" : "; no --hf-args)"));
      return fallback;
    }
    if (from_args && *from_args != *v) {
      m.fail(key, show(*v) + " does not match " + a.key(arg) + " = " + show(*from_args) +
                      " (the Trainer raises on a mismatch; \"auto\" takes the argument's value)");
      return std::nullopt;
    }
    return *v;
  };

  m.assume(field::framework, std::string("deepspeed"), "a DeepSpeed config", "zero_optimization");
  m.put(field::model_implementation, std::string("hf-transformers"), "zero_optimization");
  const int64_t world = gpus > 0 ? gpus : 1;
  m.assume(field::data_parallel_size, double(world), "every one of the run's " + number_text(double(world)) +
                                                    " ranks is a data-parallel rank under ZeRO", "--gpus");

  // ZeRO stage and offloads [ds].
  int64_t stage = 0;
  if (const json* z = m.get("zero_optimization"); z && !z->is_object())
    return m.fail("zero_optimization", "must be an object, got " + show(*z));
  if (auto s = m.integer("zero_optimization.stage", 0)) {
    if (*s > 3) return m.fail("zero_optimization.stage", "must be 0, 1, 2 or 3, got " + number_text(double(*s)));
    stage = *s;
    m.read(field::zero_stage, double(stage), "zero_optimization.stage");
    // ZeRO shards over every rank of the launch, which the config does not say: asked, not assumed.
    if (gpus <= 0 && stage >= 1)
      ask_gpu_count(out, "a ZeRO stage " + number_text(double(stage)) + " config",
                    "neither it nor a launch command says");
  } else if (!m.has("zero_optimization.stage")) {
    m.assume(field::zero_stage, 0.0, "no zero_optimization.stage: DeepSpeed's default 0", "zero_optimization.stage");
  }
  if (gpus <= 0 && stage == 0) out.assumed.push_back("gpus ← 1 (no --gpus: one rank; stage 0 keeps the whole state on each)");
  for (const char* block : {"zero_optimization.offload_optimizer", "zero_optimization.offload_param"}) {
    if (const json* b = m.get(block); b && !b->is_object())
      return m.fail(block, "must be an object ({\"device\": \"cpu\", ...}), got " + show(*b));
    const std::string device_key = std::string(block) + ".device";
    const std::optional<std::string> device = m.has(device_key) ? m.string(device_key) : std::nullopt;
    if (!device || *device == "none") continue;
    if (*device != "cpu" && *device != "nvme") return m.fail(device_key, "must be \"none\", \"cpu\" or \"nvme\", got " + trainmem::quoted(*device));
    if (std::string_view(block) == "zero_optimization.offload_optimizer") {
      double ratio = 1.0;
      if (auto r = m.number(std::string(block) + ".ratio", 0, 1)) ratio = *r;
      m.read(field::optimizer_offload_fraction, ratio, device_key, trainmem::quoted(*device) + (m.has(std::string(block) + ".ratio") ? "" : " (ratio default 1)"));
    } else {
      if (stage != 3) return m.fail(device_key, "offloads parameters only with zero_optimization.stage 3, got stage " + number_text(double(stage)));
      m.read(field::offload_params, true, device_key, trainmem::quoted(*device));
    }
    if (*device == "nvme") out.ignored.push_back(device_key + " = \"nvme\": counted as CPU memory");
  }
  // The reduce bucket [ds] (zero/config.py: reduce_bucket_size 5e8, contiguous_gradients true,
  // overlap_comm stage == 3 when unset); "auto" [hf] is the model's hidden_size² (transformers
  // integrations/deepspeed.py trainer_config_finalize: fill_only("zero_optimization.
  // reduce_bucket_size", hidden_size * hidden_size)).
  if (const json* bucket = m.get("zero_optimization.reduce_bucket_size")) {
    const std::string key = "zero_optimization.reduce_bucket_size";
    if (*bucket == "auto") {
      if (const std::optional<int64_t> h = out.input.hidden_size)
        m.read(field::reduce_bucket_size, double(*h) * double(*h), key,
               "\"auto\" = hidden_size² = " + number_text(double(*h)) + "² (as the Trainer fills it)");
      else
        out.ignored.push_back(key + " = \"auto\": the Trainer fills it with hidden_size², and no model is given "
                                    "(--model or --preset): DeepSpeed's default 5e8 is kept");
    } else if (const std::optional<double> n = m.number(key, 0, 1e13)) {
      m.read(field::reduce_bucket_size, *n, key);
    }
  }
  for (FieldName flag : {field::contiguous_gradients, field::overlap_comm}) {
    const std::string key = "zero_optimization." + std::string(flag);  // DeepSpeed's key is the field's name
    if (m.has(key))
      if (const std::optional<bool> on = m.boolean(key)) m.read(flag, *on, key, *on ? "true" : "false");
  }
  for (const char* k : {"zero_optimization.allgather_bucket_size",
                        "zero_optimization.stage3_prefetch_bucket_size", "zero_optimization.stage3_param_persistence_threshold",
                        "zero_optimization.stage3_max_live_parameters", "zero_optimization.stage3_max_reuse_distance",
                        "zero_optimization.sub_group_size"})
    if (m.has(k)) m.ignore_value(k, "DeepSpeed's bucket sizes: trainmem's deepspeed model uses its own buffer sizes (" + std::string(k_no_field) + ")");
  m.touch("zero_optimization");

  // Precision [ds], "auto" [hf].
  const auto enabled = [&](const char* block, const char* arg) {
    const std::string key = std::string(block) + ".enabled";
    const json* b = m.get(block);
    if (!b) return false;
    if (!b->is_object()) {
      m.fail(block, "must be an object ({\"enabled\": true}), got " + show(*b));
      return false;
    }
    if (!m.has(key)) return false;  // "enabled" defaults to false [ds]
    const std::optional<json> v = resolved(key, arg, false);
    if (!v) return false;  // a mismatch, named by resolved
    if (!v->is_boolean()) {
      m.fail(key, "must be true, false or \"auto\", got " + show(*v));
      return false;
    }
    return v->get<bool>();
  };
  const bool bf16 = enabled("bf16", "bf16");
  const bool fp16 = enabled("fp16", "fp16");
  m.touch("bf16");
  m.touch("fp16");
  if (bf16 && fp16) return m.fail("bf16.enabled", "and fp16.enabled cannot both be true");
  const std::string dtype = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
  const std::string why = bf16 ? "bf16.enabled" : fp16 ? "fp16.enabled" : "neither bf16 nor fp16 enabled";
  if (!out.input.params_dtype || *out.input.params_dtype != Dtype::nf4) m.assume(field::params_dtype, dtype, why, bf16 ? "bf16" : "fp16");
  m.assume(field::compute_dtype, dtype, why, bf16 ? "bf16" : "fp16");
  if (dtype != "fp32")
    m.assume(field::main_params_dtype, std::string("fp32"), "DeepSpeed's mixed precision keeps fp32 master weights and states", bf16 ? "bf16" : "fp16");

  // Batch [ds] [hf] [ta].
  const std::optional<json> micro = resolved("train_micro_batch_size_per_gpu", "per_device_train_batch_size", 8);
  const std::optional<json> accumulation = resolved("gradient_accumulation_steps", "gradient_accumulation_steps", 1);
  const std::optional<json> total = resolved("train_batch_size", "train_batch_size", nullptr);
  const auto positive = [&](const std::optional<json>& v, std::string_view key) -> std::optional<int64_t> {
    if (!v || v->is_null()) return std::nullopt;
    const std::optional<int64_t> n = whole_number(*v, 1);
    if (!n) m.fail(key, "must be a positive integer or \"auto\", got " + show(*v));
    return n;
  };
  // A Trainer argument the DeepSpeed config leaves out (not "auto"): a positive integer.
  const auto argument = [&](const char* name) { return a.count(m, name); };
  std::optional<int64_t> mb = positive(micro, "train_micro_batch_size_per_gpu");
  std::optional<int64_t> ga = positive(accumulation, "gradient_accumulation_steps");
  const std::optional<int64_t> tb = positive(total, "train_batch_size");
  if (!micro && (mb = argument("per_device_train_batch_size")))
    out.read.push_back("micro_batch_size ← " + a.key("per_device_train_batch_size") + " = " + number_text(double(*mb)));
  if (!accumulation) ga = argument("gradient_accumulation_steps");
  const bool ga_argument = !accumulation && ga;  // the Trainer's argument, the file having none
  if (!ga) ga = 1;
  if (tb) {
    // DeepSpeed's _batch_assertion: train_batch_size = micro × accumulation × ranks; the micro
    // batch follows from the other two when the file leaves it out.
    const std::optional<int64_t> per_micro = m.product("gradient_accumulation_steps", "gradient_accumulation_steps × ranks", {*ga, world});
    if (!per_micro) return;
    if (!mb) {
      if (*tb % *per_micro != 0) return m.fail("train_batch_size", "must be divisible by gradient_accumulation_steps × ranks (" + number_text(double(*per_micro)) + ")");
      mb = *tb / *per_micro;
    } else if (const std::optional<int64_t> all = checked_mul(*mb, *per_micro); all != *tb) {
      return m.fail("train_batch_size", "must equal train_micro_batch_size_per_gpu × gradient_accumulation_steps × ranks = " +
                                            (all ? number_text(double(*all)) : std::string("(over 2^63)")) + " (DeepSpeed asserts it), got " + number_text(double(*tb)));
    }
  }
  if (mb) {
    m.put(field::micro_batch_size, double(*mb), "train_micro_batch_size_per_gpu");
    out.read.push_back("micro_batch_size ← train_micro_batch_size_per_gpu = " + number_text(double(*mb)));
    // Which batch the run fixes [ds] (DeepSpeedConfig._set_batch_related_parameters,
    // deepspeed/runtime/config.py @ edaa7221267243c7be7fb49c5d5f5c4fb97b4641): a train_batch_size
    // given as a number is the global batch, and the micro batch or the accumulation follows from
    // it and the world size; without one ("auto" filled by the Trainer [hf], or absent) the
    // accumulation is the knob and the global batch follows (micro × accumulation × world). So a
    // GPU count changed later keeps what the file fixes.
    const json* own_total = m.get("train_batch_size");
    const json* own_accumulation = m.get("gradient_accumulation_steps");
    if (tb && own_total && !own_total->is_string()) {
      m.put_product(field::global_batch_size, "gradient_accumulation_steps", "micro × gradient_accumulation_steps × ranks", {*mb, *ga, world});
    } else if (own_accumulation && !own_accumulation->is_string()) {
      m.read(field::num_microbatches, double(*ga), "gradient_accumulation_steps");
    } else if (own_accumulation || ga_argument) {
      // "auto" (its note says what filled it) or the Trainer's argument.
      const std::string from = own_accumulation ? "gradient_accumulation_steps = \"auto\"" : a.key("gradient_accumulation_steps");
      if (m.put(field::num_microbatches, double(*ga), "gradient_accumulation_steps"))
        out.read.push_back("num_microbatches ← " + from + " = " + number_text(double(*ga)));
    } else {
      m.assume(field::num_microbatches, double(*ga), "no gradient_accumulation_steps: the Trainer's default 1", "gradient_accumulation_steps");
    }
  }

  // The optimizer [ds]; without a block, the Trainer's [hf].
  const json* type = m.get("optimizer.type");
  if (type) {
    m.touch("optimizer");
    if (const std::optional<std::string> name = m.string("optimizer.type")) {
      const std::string lower = lowercase(*name);
      if (lower == "adam" || lower == "adamw" || lower == "fusedadam" || lower == "cpuadam")
        m.read(field::optimizer, std::string("adamw"), "optimizer.type", show(*type) + " (FusedAdam / DeepSpeedCPUAdam: two fp32 states)");
      else if (lower == "onebitadam" || lower == "zerooneadam" || lower == "lamb" || lower == "onebitlamb")
        m.read(field::optimizer, std::string("adam"), "optimizer.type", show(*type) + " (two states per parameter, as Adam)");
      else if (lower == "lion" || lower == "fusedlion")
        m.read(field::optimizer, std::string("lion"), "optimizer.type", show(*type));
      else
        unknown_optimizer(m, "optimizer.type");
    }
  }
  read_trainer_arguments(m, a, type != nullptr);
  // DeepSpeed's own activation_checkpointing block serves Megatron-DeepSpeed's
  // deepspeed.checkpointing API, which transformers' models do not call.
  if (m.has("activation_checkpointing"))
    m.ignore("activation_checkpointing", "deepspeed.checkpointing settings (Megatron-DeepSpeed); Hugging Face models checkpoint with torch.utils.checkpoint");
}

}  // namespace mapping

ImportResult import_deepspeed(std::string_view tree_json, const ImportOptions& options) {
  // With the run's launch command (`torchrun ... train.py --deepspeed ds.json --flag value`),
  // the script's flags say what the Trainer builds (LoRA, quantization, the load dtype, attention)
  // as they do under accelerate: the run is read as an accelerate run whose DeepSpeed config is
  // this file (accelerate.cpp), the one mapping of the Trainer's flags.
  if (!options.launch.empty() || !options.overrides.empty()) {
    ImportOptions launched = options;
    launched.deepspeed_json = std::string(tree_json);
    ImportResult out = import_accelerate(
        R"({"distributed_type": "DEEPSPEED", "deepspeed_config": {"deepspeed_config_file": "DS_CONFIG.json"}})", launched);
    // What the wrapper's two keys are, said once.
    for (std::string& note : out.read)
      if (note.rfind("deepspeed ← the DeepSpeed config deepspeed_config.deepspeed_config_file names", 0) == 0)
        note = "deepspeed ← DS_CONFIG.json, with the launch command's flags as the Trainer's arguments";
    return out;
  }
  const auto deepspeed_keys = [](const json& tree) -> std::optional<Issue> {
    if (mapping::detect_kind(tree) == "deepspeed") return std::nullopt;
    return issue("DS_CONFIG.json", "has none of DeepSpeed's keys (zero_optimization, train_micro_batch_size_per_gpu, bf16, fp16, ...): " +
                                       mapping::kind_hint(tree));
  };
  return mapping::import_tree(tree_json, "DS_CONFIG.json", deepspeed_keys, [&](json& tree, ImportResult& out) {
    const std::optional<json> parsed = mapping::trainer_arguments(options, json::object(), out.issues);  // --hf-args
    if (!parsed) return;
    const json& args = *parsed;
    Mapper m(tree, out);
    if (!options.model_json.empty()) m.model_from_hf(options.model_json, "--model");
    else if (!options.preset.empty()) m.model_from_preset(options.preset, "--preset", "--preset " + trainmem::quoted(options.preset));
    else out.assumed.push_back(std::string(mapping::k_model_from_base) + " (no --model or --preset)");
    if (out.ok()) mapping::read_deepspeed(m, mapping::TrainerArguments{args, "--hf-args "}, options.gpus);
    if (!out.input.seq_length)
      out.open_fields.push_back(issue("seq_length", "a DeepSpeed config does not say it: give it, or max_length in --hf-args"));
    if (out.ok()) m.account(k_no_memory, {"zero_optimization", "bf16", "fp16", "optimizer"});
  });
}

}  // namespace trainmem
