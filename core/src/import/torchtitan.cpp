// torchtitan job configs (TOML, as a JSON tree) plus their command-line overrides -> trainmem.
//
// Sources (pytorch/torchtitan):
//   [cfg]    torchtitan/config_manager.py @ 391ddd3d73713255bdde4ff40b9860b8014cdd20 (the JobConfig
//            sections and keys, data_parallel_shard_degree -1 = the rest of the world,
//            fsdp_reshard_after_forward "default" = reshard unless pipelining)
//   [toml]   train_configs/llama3_8b.toml @ 0011fb905e9561a51af0f265e35d989f7448b1d8 (the 2024
//            layout: [training] *_parallel_degree, [experimental] pipeline_parallel_degree,
//            [float8] enable_float8_linear); torchtitan/models/llama3/train_configs/llama3_8b.toml
//            @ 01424cb254492cd6f5924e26d28227d75913e122 (the [parallelism] layout)
//   [loss]   torchtitan/components/loss.py: build_cross_entropy_loss compiles the loss when
//            training.compile is on (2025), and when compile.enable with "loss" in
//            compile.components (0.2); before components/loss.py (2024) the loss was eager
//   [pp]     torchtitan/parallelisms/pipelining_utils.py @ 680647378f15fba3437413b2ce25b6b3ce3c920a
//            (generate_split_points: the first stage gets num_layers // stages, the middle stages
//            one more while layers remain, the last the rest; pipeline_parallel_microbatches
//            defaults to the number of stages); the 2024 Transformer returns
//            self.output(h).float() and torch.distributed.pipelining's Schedule.step() merges the
//            last stage's outputs (tests/validation/points.json TT-T5-a)
//   [sched]  torchtitan/distributed/pipeline_parallel.py @ 02ef790c79614758f85880e173d2338d7de502a3
//            (build_pipeline_schedule: the local batch must be divisible by
//            pipeline_parallel_microbatch_size, else ValueError)
//   [pp01]   the same file: pipeline_llm and generate_llm_fqn_per_model_part (the embedding and
//            the output count as pipeline_parallel_first/last_stage_less_layers layers, default 1
//            each; the layers plus those are dealt evenly over the stages, the first ones one
//            more; pipeline_parallel_layers_per_stage sets the number of stages), and
//            pipeline_module_split (stage s on rank s mod PP, "loop" style; "v" style for
//            ZBVZeroBubble and DualPipeV: rank r holds stages r and 2·PP − 1 − r)
//   [train]  torchtitan/train.py, Trainer.__init__ "verify batch sizes": global_batch_size -1 is
//            local_batch_size × dp degree, any other must be a multiple of it (asserted, with or
//            without pipelining)
//   [sac]    torchtitan/models/llama3/infra/parallelize.py _op_sac_save_list: the cuDNN SDPA kernel
//            is in it since PR #2095 (2025-12-01, after issue #2091), which 0.2.1 has and 0.2.0
//            (2025-11) does not; models/attention.py puts SDPBackend.CUDNN_ATTENTION first on
//            compute capability 10.0 since PR #1196 (2025-05-14)
//   [llama]  torchtitan/models/llama/__init__.py @ 537b913225826806223b567f53406819d7b1832d
//            (llama3_configs 8B / 70B / 405B, llama2_configs 7B / 13B / 70B)
#include <algorithm>

#include "mapping.hpp"

namespace trainmem {
namespace {

using mapping::json;
using mapping::show;

// 2024: git before 2025 (the benchmarks of llama3_h100_202412_torchtitan.md); 0.1: the 0.1.0
// release (July 2025) and the 2025 git in between; 0.2: 0.2.x, the current release.
const std::vector<std::string_view> k_versions = {"2024", "0.1", "0.2"};
enum Version : size_t { v2024 = 0, v01 = 1, v02 = 2 };

struct Flavor {
  std::string_view name, flavor, preset;
};
// [llama]; qwen3 and deepseek_v3 from torchtitan/models/{qwen3,deepseek_v3}/__init__.py (the
// flavors whose shapes the presets have: DeepSeek-V3 16B is DeepSeek-V2-Lite's shape).
const std::vector<Flavor> k_flavors = {
    {"llama3", "8B", "llama-3.1-8b"},         {"llama3", "70B", "llama-3.1-70b"},
    {"llama3", "405B", "llama-3.1-405b"},     {"llama2", "7B", "llama-2-7b"},
    {"llama2", "13B", "llama-2-13b"},         {"llama2", "70B", "llama-2-70b"},
    {"qwen3", "8B", "qwen3-8b"},              {"qwen3", "32B", "qwen3-32b"},
    {"qwen3", "30B-A3B", "qwen3-30b-a3b"},    {"qwen3", "235B-A22B", "qwen3-235b-a22b"},
    {"deepseek_v3", "16B", "deepseek-v2-lite"}, {"deepseek_v3", "671B", "deepseek-v3"},
};

// The JobConfig keys an override may name [cfg], with their types: b bool, i int, f float,
// s string, l list of strings. Both layouts (2024 and [parallelism]) are listed.
const std::vector<std::pair<std::string_view, char>> k_schema = {
    {"job.config_file", 's'}, {"job.dump_folder", 's'}, {"job.description", 's'}, {"job.print_args", 'b'},
    {"job.use_for_integration_test", 'b'},
    {"profiling.enable_profiling", 'b'}, {"profiling.save_traces_folder", 's'}, {"profiling.profile_freq", 'i'},
    {"profiling.enable_memory_snapshot", 'b'}, {"profiling.save_memory_snapshot_folder", 's'},
    {"metrics.log_freq", 'i'}, {"metrics.enable_tensorboard", 'b'}, {"metrics.save_tb_folder", 's'},
    {"metrics.enable_wandb", 'b'}, {"metrics.rank_0_only", 'b'}, {"metrics.enable_color_printing", 'b'},
    {"metrics.disable_color_printing", 'b'}, {"metrics.save_for_all_ranks", 'b'},
    {"model.name", 's'}, {"model.flavor", 's'}, {"model.norm_type", 's'}, {"model.tokenizer_path", 's'},
    {"model.hf_assets_path", 's'}, {"model.converters", 'l'}, {"model.print_after_conversion", 'b'},
    {"optimizer.name", 's'}, {"optimizer.lr", 'f'}, {"optimizer.eps", 'f'}, {"optimizer.beta1", 'f'},
    {"optimizer.beta2", 'f'}, {"optimizer.weight_decay", 'f'}, {"optimizer.fused", 'b'},
    {"optimizer.implementation", 's'}, {"optimizer.early_step_in_backward", 'b'},
    {"lr_scheduler.warmup_steps", 'i'}, {"lr_scheduler.decay_ratio", 'f'}, {"lr_scheduler.decay_type", 's'},
    {"lr_scheduler.lr_min", 'f'},
    {"training.batch_size", 'i'}, {"training.local_batch_size", 'i'}, {"training.global_batch_size", 'i'},
    {"training.seq_len", 'i'}, {"training.warmup_steps", 'i'}, {"training.max_norm", 'f'}, {"training.steps", 'i'},
    {"training.data_parallel_degree", 'i'}, {"training.data_parallel_replicate_degree", 'i'},
    {"training.data_parallel_shard_degree", 'i'}, {"training.tensor_parallel_degree", 'i'},
    {"training.enable_loss_parallel", 'b'}, {"training.disable_loss_parallel", 'b'},
    {"training.compile", 'b'}, {"training.dataset", 's'}, {"training.dataset_path", 's'},
    {"training.mixed_precision_param", 's'}, {"training.mixed_precision_reduce", 's'},
    {"training.enable_cpu_offload", 'b'}, {"training.fsdp_reshard_after_forward", 's'}, {"training.gc_freq", 'i'},
    {"training.seed", 'i'}, {"training.deterministic", 'b'}, {"training.enable_float8_linear", 'b'},
    {"training.enable_fp8_linear", 'b'}, {"training.enable_compiled_autograd", 'b'},
    {"parallelism.data_parallel_replicate_degree", 'i'}, {"parallelism.data_parallel_shard_degree", 'i'},
    {"parallelism.fsdp_reshard_after_forward", 's'}, {"parallelism.tensor_parallel_degree", 'i'},
    {"parallelism.disable_loss_parallel", 'b'}, {"parallelism.enable_async_tensor_parallel", 'b'},
    {"parallelism.pipeline_parallel_degree", 'i'}, {"parallelism.pipeline_parallel_split_points", 'l'},
    {"parallelism.pipeline_parallel_layers_per_stage", 'i'}, {"parallelism.pipeline_parallel_schedule", 's'},
    {"parallelism.pipeline_parallel_schedule_csv", 's'}, {"parallelism.pipeline_parallel_microbatch_size", 'i'},
    {"parallelism.pipeline_parallel_microbatches", 'i'}, {"parallelism.context_parallel_degree", 'i'},
    {"parallelism.context_parallel_rotate_method", 's'}, {"parallelism.expert_parallel_degree", 'i'},
    {"parallelism.expert_tensor_parallel_degree", 'i'}, {"parallelism.enable_compiled_autograd", 'b'},
    {"experimental.pipeline_parallel_degree", 'i'}, {"experimental.pipeline_parallel_split_points", 'l'},
    {"experimental.pipeline_parallel_schedule", 's'}, {"experimental.pipeline_parallel_schedule_csv", 's'},
    {"experimental.pipeline_parallel_microbatches", 'i'}, {"experimental.context_parallel_degree", 'i'},
    {"experimental.context_parallel_rotate_method", 's'}, {"experimental.enable_async_tensor_parallel", 'b'},
    {"experimental.enable_compiled_autograd", 'b'}, {"experimental.custom_model_path", 's'},
    {"experimental.custom_import", 's'}, {"experimental.custom_args_module", 's'},
    {"checkpoint.enable_checkpoint", 'b'}, {"checkpoint.enable", 'b'}, {"checkpoint.folder", 's'},
    {"checkpoint.interval_type", 's'}, {"checkpoint.interval", 'i'}, {"checkpoint.model_weights_only", 'b'},
    {"checkpoint.last_save_model_only", 'b'}, {"checkpoint.export_dtype", 's'}, {"checkpoint.async_mode", 's'},
    {"checkpoint.keep_latest_k", 'i'}, {"checkpoint.load_step", 'i'}, {"checkpoint.initial_load_path", 's'},
    {"checkpoint.create_seed_checkpoint", 'b'},
    {"activation_checkpoint.mode", 's'}, {"activation_checkpoint.selective_ac_option", 's'},
    {"activation_checkpoint.memory_budget", 'f'}, {"activation_checkpoint.early_stop", 'b'},
    {"float8.enable_float8_linear", 'b'}, {"float8.enable_fsdp_float8_all_gather", 'b'},
    {"float8.precompute_float8_dynamic_scale_for_fsdp", 'b'}, {"float8.force_recompute_fp8_weight_in_bwd", 'b'},
    {"float8.scaling_type_input", 's'}, {"float8.scaling_type_weight", 's'}, {"float8.scaling_type_grad_output", 's'},
    {"float8.recipe_name", 's'}, {"float8.filter_fqns", 'l'}, {"float8.emulate", 'b'},
    {"mx.recipe_name", 's'}, {"mx.filter_fqns", 'l'}, {"mx.mxfp8_dim1_cast_kernel_choice", 's'},
    {"comm.init_timeout_seconds", 'i'}, {"comm.train_timeout_seconds", 'i'}, {"comm.trace_buf_size", 'i'},
    {"memory_estimation.enabled", 'b'}, {"memory_estimation.disable_fake_mode", 'b'},
    {"compile.enable", 'b'}, {"compile.components", 'l'}, {"compile.backend", 's'},
    {"validation.enabled", 'b'}, {"validation.freq", 'i'}, {"validation.steps", 'i'},
    {"validation.dataset", 's'}, {"validation.seq_len", 'i'}, {"validation.local_batch_size", 'i'},
    {"fault_tolerance.enable", 'b'}, {"fault_tolerance.replica_id", 'i'}, {"fault_tolerance.group_size", 'i'},
};

const std::vector<std::string_view> k_no_memory = {
    "job", "profiling", "metrics", "checkpoint", "comm", "lr_scheduler", "memory_estimation",
    "validation", "fault_tolerance", "dataset", "training.warmup_steps", "training.max_norm",
    "training.steps", "training.dataset", "training.dataset_path", "training.seed",
    "training.deterministic", "training.gc_freq", "training.mixed_precision_reduce",
    "optimizer.lr", "optimizer.eps", "optimizer.beta1", "optimizer.beta2", "optimizer.weight_decay",
    "model.tokenizer_path", "model.hf_assets_path", "model.norm_type", "model.print_after_conversion",
    "float8.precompute_float8_dynamic_scale_for_fsdp", "float8.filter_fqns", "float8.emulate",
    "float8.scaling_type_input", "float8.scaling_type_weight", "float8.scaling_type_grad_output",
    "float8.force_recompute_fp8_weight_in_bwd", "mx.filter_fqns", "mx.mxfp8_dim1_cast_kernel_choice",
    "parallelism.context_parallel_rotate_method", "experimental.context_parallel_rotate_method",
    "parallelism.enable_compiled_autograd", "experimental.enable_compiled_autograd",
    "training.enable_compiled_autograd", "parallelism.pipeline_parallel_schedule_csv",
    "experimental.pipeline_parallel_schedule_csv", "compile.backend",
    "parallelism.disable_loss_parallel", "training.enable_loss_parallel", "training.disable_loss_parallel",
};
const std::vector<std::string_view> k_sections = {"model", "optimizer", "training", "parallelism", "experimental",
                                                  "activation_checkpoint", "float8", "mx", "compile"};

// An override's value typed by the key's JobConfig type [cfg] (argparse / tyro): a bare flag is
// true; lists are comma-separated.
void apply_overrides(json& tree, const std::vector<std::string>& overrides, ImportResult& out) {
  for (std::string arg : overrides) {
    while (!arg.empty() && arg[0] == '-') arg.erase(0, 1);
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const bool bare = eq == std::string::npos;
    const std::string text = bare ? "" : arg.substr(eq + 1);
    const auto it = std::find_if(k_schema.begin(), k_schema.end(), [&](const auto& k) { return k.first == key; });
    if (key.empty() || key.find('.') == std::string::npos || it == k_schema.end()) {
      out.issues.push_back(issue("--" + key, key.find('.') == std::string::npos
                                                 ? "an override is --section.key[=value]"
                                                 : "the override names no key of torchtitan's JobConfig"));
      continue;
    }
    json value;
    const char type = it->second;
    std::string problem;
    if (type == 'b') {
      if (bare || text == "true" || text == "True" || text == "1") value = true;
      else if (text == "false" || text == "False" || text == "0") value = false;
      else problem = "must be true or false, got " + trainmem::quoted(text);
    } else if (bare) {
      problem = "needs a value (--" + key + "=VALUE)";
    } else if (type == 'i' || type == 'f') {
      const json v = mapping::plain_scalar(text);
      if (!v.is_number() || (type == 'i' && !v.is_number_integer()))
        problem = std::string("must be ") + (type == 'i' ? "an integer" : "a number") + ", got " + trainmem::quoted(text);
      else value = v;
    } else if (type == 'l') {
      value = json::array();
      size_t start = 0;
      while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!item.empty()) value.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      value = text;
    }
    if (!problem.empty()) {
      out.issues.push_back(issue("--" + key, problem));
      continue;
    }
    const std::string section = key.substr(0, key.find('.'));
    json& node = tree[section];
    if (!node.is_object()) node = json::object();
    node[key.substr(key.find('.') + 1)] = value;
    out.read.push_back("override --" + key + " = " + show(value));
  }
}

class TorchtitanReader : mapping::Reader {
 public:
  using Reader::Reader;
  void run();

 private:
  size_t version_ = v02;
  int64_t layers_ = 0;

  // The first of the keys present (the newer layout's name first), or "".
  std::string first_of(std::initializer_list<std::string_view> keys) {
    for (std::string_view k : keys)
      if (m_.has(k)) return std::string(k);
    return "";
  }
  void read_version();
  void read_model();
  void read_training();
  void read_parallelism();
  bool read_stage_split(int64_t stages, int64_t stages_per_rank, int64_t less_first, int64_t less_last,
                        const std::string& schedule, const std::string& pp_key);
  void read_checkpointing();
  void read_float8();
  void read_compile();
};

void TorchtitanReader::read_version() {
  if (!options_.version.empty()) {
    if (auto v = mapping::chosen_version(m_, options_.version, k_versions, "torchtitan", "version")) version_ = *v;
    return;
  }
  // What the file shows [toml]: [compile] appeared with 0.2; [parallelism] and local_batch_size
  // in 2025; *_parallel_degree under [training] or [experimental], and
  // float8.enable_float8_linear, are the 2024 layout.
  std::string evidence;
  if (m_.has("compile")) version_ = v02, evidence = "a [compile] section";
  else if (m_.has("training.local_batch_size")) version_ = v01, evidence = "training.local_batch_size";
  else if (m_.has("parallelism")) version_ = v01, evidence = "a [parallelism] section";
  else if (m_.has("experimental.pipeline_parallel_degree") || m_.has("training.data_parallel_shard_degree") ||
           m_.has("training.data_parallel_degree") || m_.has("training.tensor_parallel_degree"))
    version_ = v2024, evidence = "parallel degrees under [training]/[experimental]";
  if (evidence.empty())
    out_.assumed.push_back("version ← torchtitan 0.2 (the current release: the file shows no older layout; --version chooses another)");
  else
    out_.assumed.push_back("version ← torchtitan " + std::string(k_versions[version_]) + " (the file has " + evidence +
                           "; --version chooses another)");
}

void TorchtitanReader::read_model() {
  const std::optional<std::string> name = m_.string("model.name");
  const std::optional<std::string> flavor = m_.string("model.flavor");
  if (!name) return m_.fail("model.name", "missing (torchtitan's model, e.g. \"llama3\")");
  if (!flavor) return m_.fail("model.flavor", "missing (the model's size, e.g. \"8B\")");
  const auto it = std::find_if(k_flavors.begin(), k_flavors.end(),
                               [&](const Flavor& f) { return f.name == *name && f.flavor == *flavor; });
  if (it == k_flavors.end()) {
    std::string list;
    for (const Flavor& f : k_flavors) list += (list.empty() ? "" : ", ") + std::string(f.name) + " " + std::string(f.flavor);
    return m_.fail("model.flavor", trainmem::quoted(*name) + " " + trainmem::quoted(*flavor) +
                                       " has no trainmem preset; known: " + list);
  }
  if (!m_.model_from_preset(it->preset, "model.flavor", "model.name = " + trainmem::quoted(*name) + ", flavor = " + trainmem::quoted(*flavor)))
    return;
  layers_ = mapping::preset_model(it->preset)->value("num_layers", int64_t(0));
  // torchtitan's models: SDPA (flash) attention, no dropout; FSDP2's MixedPrecisionPolicy keeps
  // fp32 sharded weights and gathers bf16 ones (params bf16, master fp32, fp32 reduced gradients).
  m_.assume(field::framework, std::string("fsdp2"), "torchtitan shards every TransformerBlock and the root with fully_shard", "model.name");
  m_.assume(field::attention_backend, std::string("flash"), "torchtitan calls scaled_dot_product_attention", "model.name");
  m_.assume(field::attention_dropout, 0.0, "torchtitan's models have no dropout", "model.name");
  m_.assume(field::hidden_dropout, 0.0, "torchtitan's models have no dropout", "model.name");
  m_.put(field::model_implementation, std::string("torchtitan"), "model.name");
  const std::string param = m_.string("training.mixed_precision_param").value_or("bfloat16");
  const std::string dtype = param == "float32" ? "fp32" : param == "float16" ? "fp16" : "bf16";
  if (param != "bfloat16" && param != "float32" && param != "float16")
    return m_.fail("training.mixed_precision_param", "must be \"bfloat16\", \"float32\" or \"float16\", got " + trainmem::quoted(param));
  const std::string why = m_.has("training.mixed_precision_param") ? "training.mixed_precision_param = " + trainmem::quoted(param)
                                                                    : "training.mixed_precision_param's default \"bfloat16\"";
  m_.assume(field::params_dtype, dtype, why + ": the gathered compute weights", "training.mixed_precision_param");
  m_.assume(field::main_params_dtype, std::string("fp32"), "FSDP2 keeps the sharded weights in fp32", "training.mixed_precision_param");
  m_.assume(field::main_grads_dtype, std::string("fp32"), "the sharded gradients have the sharded weights' dtype", "training.mixed_precision_param");

  const std::optional<std::string> opt = m_.string("optimizer.name");
  if (opt) {
    if (*opt == "AdamW") m_.read(field::optimizer, std::string("adamw"), "optimizer.name", "\"AdamW\"");
    else if (*opt == "Adam") m_.read(field::optimizer, std::string("adam"), "optimizer.name", "\"Adam\"");
    else m_.fail("optimizer.name", "must be \"AdamW\" or \"Adam\" (torchtitan's build_optimizers), got " + trainmem::quoted(*opt));
  } else {
    m_.assume(field::optimizer, std::string("adamw"), "no optimizer.name: torchtitan's default AdamW", "optimizer.name");
  }
  // optimizer.implementation ("fused", "foreach", "for-loop"; default "fused") replaced the 2024
  // optimizer.fused flag (default false: foreach).
  if (auto impl = m_.string("optimizer.implementation")) {
    if (*impl != "fused" && *impl != "foreach" && *impl != "for-loop")
      return m_.fail("optimizer.implementation", "must be \"fused\", \"foreach\" or \"for-loop\", got " + trainmem::quoted(*impl));
    m_.read(field::optimizer_implementation, *impl, "optimizer.implementation");
  } else if (auto fused = m_.boolean("optimizer.fused")) {
    m_.read(field::optimizer_implementation, std::string(*fused ? "fused" : "foreach"), "optimizer.fused", *fused ? "true" : "false");
  } else {
    const bool old = version_ == v2024;
    m_.assume(field::optimizer_implementation, std::string(old ? "foreach" : "fused"),
              old ? "torchtitan 2024: optimizer.fused defaults to false" : "optimizer.implementation's default \"fused\"",
              "optimizer.implementation");
  }
  if (m_.boolean("optimizer.early_step_in_backward").value_or(false))
    m_.read(field::optimizer_in_backward, true, "optimizer.early_step_in_backward", "true");
}

void TorchtitanReader::read_training() {
  if (auto seq = m_.integer("training.seq_len")) m_.read(field::seq_length, double(*seq), "training.seq_len");
  else if (!m_.has("training.seq_len")) m_.assume(field::seq_length, 2048.0, "no training.seq_len: JobConfig's default 2048", "training.seq_len");
  if (m_.boolean("training.enable_cpu_offload").value_or(false)) {
    m_.read(field::offload_params, true, "training.enable_cpu_offload", "true (FSDP2 CPUOffloadPolicy)");
    m_.assume(field::optimizer_offload_fraction, 1.0, "CPUOffloadPolicy: the optimizer steps on the CPU", "training.enable_cpu_offload");
  }
}

void TorchtitanReader::read_parallelism() {
  const int64_t world = options_.gpus;
  const auto degree = [&](std::initializer_list<std::string_view> keys, int64_t fallback, int64_t min = 1) -> std::pair<int64_t, std::string> {
    const std::string key = first_of(keys);
    if (key.empty()) return {fallback, ""};
    return {m_.integer(key, min).value_or(fallback), key};
  };
  const auto [tp, tp_key] = degree({"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}, 1);
  const auto [pp, pp_key] = degree({"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree"}, 1);
  const auto [cp, cp_key] = degree({"parallelism.context_parallel_degree", "experimental.context_parallel_degree"}, 1);
  const auto [ep, ep_key] = degree({"parallelism.expert_parallel_degree"}, 1);
  const auto [replicate, rep_key] = degree({"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"}, 1);
  auto [shard, shard_key] = degree({"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree", "training.data_parallel_degree"},
                                   mapping::k_fill, mapping::k_fill);
  if (!out_.ok()) return;
  const std::string dp_key = shard_key.empty() ? "--gpus" : shard_key;
  const std::optional<int64_t> others = m_.product(dp_key, "tp × pp × cp × replicate", {tp, pp, cp, replicate});
  if (!others) return;
  if (shard == mapping::k_fill) {
    if (world <= 0) return m_.fail("--gpus", "is needed: " + (shard_key.empty() ? std::string("data_parallel_shard_degree") : shard_key) +
                                                 " is -1 (it fills the world torchrun starts)");
    if (world % *others != 0)
      return m_.fail("--gpus", number_text(double(world)) + " is not divisible by the other degrees (tp × pp × cp × replicate = " + number_text(double(*others)) + ")");
    shard = world / *others;
    out_.read.push_back("data_parallel_shard_degree ← -1: --gpus / (tp × pp × cp × replicate) = " + number_text(double(world)) + " / " +
                        number_text(double(*others)) + " = " + number_text(double(shard)));
  } else if (const std::optional<int64_t> all = checked_mul(shard, *others); world > 0 && all != world) {
    return m_.fail("--gpus", number_text(double(world)) + " does not match the degrees' product " +
                                 (all ? number_text(double(*all)) : std::string("(over 2^63)")));
  }
  const std::optional<int64_t> ranks = m_.product(dp_key, "data_parallel_shard_degree × data_parallel_replicate_degree", {shard, replicate});
  if (!ranks) return;
  if (tp > 1) {
    m_.read(field::tensor_model_parallel_size, double(tp), tp_key);
    m_.assume(field::sequence_parallel, true, "torchtitan's TP plan: SequenceParallel norms", tp_key);
  }
  if (cp > 1) m_.read(field::context_parallel_size, double(cp), cp_key);
  if (ep > 1) m_.read(field::expert_model_parallel_size, double(ep), ep_key);
  if (m_.put(field::data_parallel_size, double(*ranks), dp_key))
    out_.read.push_back("data_parallel_size ← data_parallel_shard_degree × data_parallel_replicate_degree = " +
                        number_text(double(shard)) + " × " + number_text(double(replicate)));
  if (replicate > 1) m_.read(field::data_parallel_shard_size, double(shard), dp_key, number_text(double(shard)));

  // reshard_after_forward [cfg]: "default" reshards unless pipelining (then the weights stay
  // gathered from forward to backward: ZeRO-2's memory).
  const std::string reshard_key = first_of({"parallelism.fsdp_reshard_after_forward", "training.fsdp_reshard_after_forward"});
  const std::string reshard = reshard_key.empty() ? "default" : m_.string(reshard_key).value_or("default");
  if (reshard != "default" && reshard != "always" && reshard != "never")  // [cfg]'s three policies
    return m_.fail(reshard_key, "must be \"default\", \"always\" or \"never\", got " + trainmem::quoted(reshard));
  const bool keeps = reshard == "never" || (reshard == "default" && pp > 1);
  m_.assume(field::zero_stage, keeps ? 2.0 : 3.0,
            "fsdp_reshard_after_forward " + trainmem::quoted(reshard) + (reshard == "default" ? (pp > 1 ? " with pipelining: never" : ": always") : ""),
            reshard_key.empty() ? "fsdp_reshard_after_forward" : reshard_key);

  // Batch: training.local_batch_size (0.1+) or training.batch_size (2024), per data-parallel rank.
  const std::string batch_key = first_of({"training.local_batch_size", "training.batch_size"});
  const std::string local_key = batch_key.empty() ? "training.batch_size" : batch_key;
  int64_t local = 8;  // JobConfig's default batch size
  if (!batch_key.empty()) local = m_.integer(batch_key).value_or(8);
  else out_.assumed.push_back("local batch ← 8 (no training.local_batch_size: JobConfig's default)");
  const std::optional<int64_t> per_step = m_.product(local_key, "local batch × data-parallel ranks", {local, *ranks});
  if (!per_step) return;
  // The global batch (-1: local batch × data-parallel ranks) is a whole number of those, the
  // accumulation steps, with or without pipelining [train].
  const std::optional<int64_t> given = m_.integer("training.global_batch_size", mapping::k_fill);
  const bool global_given = given && *given > 0;
  if (global_given && *given % *per_step != 0)
    return m_.fail("training.global_batch_size", "must be a multiple of local batch × data-parallel ranks (" + number_text(double(*per_step)) + ")");
  const int64_t global = global_given ? *given : *per_step;

  if (pp > 1) {
    m_.read(field::pipeline_model_parallel_size, double(pp), pp_key);
    const std::string sched_key = first_of({"parallelism.pipeline_parallel_schedule", "experimental.pipeline_parallel_schedule"});
    const std::string schedule = sched_key.empty() ? "1F1B" : m_.string(sched_key).value_or("1F1B");
    int64_t stages_per_rank = 1;
    const bool looped = schedule != "1F1B" && schedule != "GPipe";
    if (schedule == "1F1B") m_.read(field::pipeline_schedule, std::string("1f1b"), sched_key.empty() ? pp_key : sched_key, "\"1F1B\"");
    else if (schedule == "GPipe") m_.read(field::pipeline_schedule, std::string("gpipe"), sched_key, "\"GPipe\"");
    else if (schedule == "Interleaved1F1B" || schedule == "LoopedBFS" || schedule == "InterleavedZeroBubble" || schedule == "ZBVZeroBubble") {
      stages_per_rank = 2;
      m_.read(field::virtual_pipeline_model_parallel_size, 2.0, sched_key, trainmem::quoted(schedule) + " (two stages per rank)");
      m_.read(field::pipeline_schedule, std::string("interleaved"), sched_key, trainmem::quoted(schedule));
      if (schedule != "Interleaved1F1B")
        out_.ignored.push_back(sched_key + " = " + trainmem::quoted(schedule) + ": counted as interleaved 1F1B");
    } else {
      return m_.fail(sched_key, trainmem::quoted(schedule) + " is not a schedule trainmem models (1F1B, GPipe, Interleaved1F1B)");
    }
    // 0.1+ [pp01]: pipeline_parallel_layers_per_stage sets the number of stages,
    // ceil((layers + first_less + last_less) / layers_per_stage), a multiple of PP: one per rank
    // for 1F1B and GPipe, at least two for the looped schedules (ValueError otherwise).
    const int64_t less_first = version_ == v2024 ? 0 : m_.integer("parallelism.pipeline_parallel_first_stage_less_layers", 0).value_or(1);
    const int64_t less_last = version_ == v2024 ? 0 : m_.integer("parallelism.pipeline_parallel_last_stage_less_layers", 0).value_or(1);
    if (version_ != v2024 && layers_ > 0) {
      if (const auto per = m_.integer("parallelism.pipeline_parallel_layers_per_stage")) {
        const int64_t all = (layers_ + less_first + less_last + *per - 1) / *per;
        const std::string key = "parallelism.pipeline_parallel_layers_per_stage";
        if (all % pp != 0)
          return m_.fail(key, "gives " + number_text(double(all)) + " stages, which pipeline_parallel_degree " + number_text(double(pp)) + " must divide (torchtitan raises)");
        if (!looped && all != pp)
          return m_.fail(key, "gives " + number_text(double(all / pp)) + " stages per rank; " + trainmem::quoted(schedule) + " runs one (torchtitan raises)");
        if (looped && all / pp < 2)
          return m_.fail(key, "gives 1 stage per rank; " + trainmem::quoted(schedule) + " needs at least 2 (torchtitan raises)");
        if (looped && all / pp != stages_per_rank) {
          stages_per_rank = all / pp;
          m_.read(field::virtual_pipeline_model_parallel_size, double(stages_per_rank), key,
                  number_text(double(*per)) + ": " + number_text(double(all)) + " stages over PP " + number_text(double(pp)));
        }
      }
    }
    const int64_t stages = pp * stages_per_rank;
    // Microbatches [pp]: pipeline_parallel_microbatch_size (0.1+, default 1), or
    // pipeline_parallel_microbatches (2024, default one per stage; a later version does not read
    // it and splits into one per stage).
    const std::string n_key = first_of({"parallelism.pipeline_parallel_microbatches", "experimental.pipeline_parallel_microbatches"});
    if (auto size = m_.integer("parallelism.pipeline_parallel_microbatch_size")) {
      if (local % *size != 0)
        return m_.fail("parallelism.pipeline_parallel_microbatch_size", "must divide the local batch " + number_text(double(local)) +
                                                                           " (build_pipeline_schedule raises otherwise)");  // [sched]
      m_.read(field::micro_batch_size, double(*size), "parallelism.pipeline_parallel_microbatch_size");
    } else if (version_ != v2024 && n_key.empty()) {
      m_.assume(field::micro_batch_size, 1.0, "pipeline_parallel_microbatch_size's default 1", "parallelism.pipeline_parallel_microbatch_size");
    } else {
      const int64_t count = version_ == v2024 && !n_key.empty() ? m_.integer(n_key).value_or(stages) : stages;
      if (local % count != 0)
        return m_.fail(local_key, "the local batch " + number_text(double(local)) + " must split into " + number_text(double(count)) +
                                      " microbatches" + (n_key.empty() ? " (torchtitan's default: one per stage)" : ""));
      m_.assume(field::micro_batch_size, double(local / count),
                "the local batch " + number_text(double(local)) + " in " + number_text(double(count)) +
                    (n_key.empty() ? " microbatches (the default: one per stage)" : " microbatches"),
                local_key);
    }
    if (layers_ > 0 && !read_stage_split(stages, stages_per_rank, less_first, less_last, schedule, pp_key)) return;
    // What the last stage keeps of the model outputs [pp]: 2024 returns fp32 logits and merges
    // the microbatches' outputs.
    if (version_ == v2024) m_.assume(field::pipeline_outputs, std::string("kept_fp32_merged"), "torchtitan 2024: output(h).float(), Schedule.step() merges the outputs", pp_key);
    else m_.assume(field::pipeline_outputs, std::string("kept"), "torchtitan 0.1+: no .float() on the output", pp_key);
  } else {
    m_.read(field::micro_batch_size, double(local), local_key, number_text(double(local)));
  }
  // A global batch the file gives is fixed [train]: the accumulation follows from it and the
  // data-parallel ranks. Without one (-1) torchtitan takes the local batch × the ranks, so each
  // rank's step is its local batch (in microbatches of the pipeline schedule) however many ranks
  // there are: the microbatch count is what stays when the GPU count changes.
  if (global_given) {
    if (m_.put(field::global_batch_size, double(global), "training.global_batch_size"))
      out_.read.push_back("global_batch_size ← training.global_batch_size = " + number_text(double(global)));
  } else if (out_.input.micro_batch_size && *out_.input.micro_batch_size > 0 && local % *out_.input.micro_batch_size == 0) {
    const int64_t count = local / *out_.input.micro_batch_size;
    if (m_.put(field::num_microbatches, double(count), local_key))
      out_.read.push_back("num_microbatches ← local batch / micro batch = " + number_text(double(count)) +
                          " (no training.global_batch_size: the global batch is the local batch × data-parallel ranks)");
  }
}

// The decoder layers of each stage [pp] [pp01], as pipeline_stage_layers when they are not all
// equal. Explicit split points ("layers.N": a stage starts at layer N) win over both rules.
bool TorchtitanReader::read_stage_split(int64_t stages, int64_t stages_per_rank, int64_t less_first, int64_t less_last,
                                        const std::string& schedule, const std::string& pp_key) {
  auto text = [](int64_t v) { return number_text(double(v)); };
  std::vector<int64_t> counts;
  std::string how, key = pp_key;
  const std::string points_key = first_of({"parallelism.pipeline_parallel_split_points", "experimental.pipeline_parallel_split_points"});
  if (!points_key.empty()) {
    const json* points = m_.get(points_key);
    key = points_key;
    if (!points->is_array() || int64_t(points->size()) + 1 != stages)
      return m_.fail(points_key, "must name " + text(stages - 1) + " split points (" + text(stages) + " stages: PP × " +
                                     text(stages_per_rank) + " per rank), got " + show(*points)), false;
    int64_t start = 0;
    for (const json& point : *points) {
      const std::string name = point.is_string() ? point.get<std::string>() : std::string();
      const std::optional<int64_t> at = name.rfind("layers.", 0) == 0 ? mapping::parse_int(name.substr(7)) : std::nullopt;
      if (!at || *at <= start || *at >= layers_)
        return m_.fail(points_key, "entries must be \"layers.N\" with N increasing from 1 to " + text(layers_ - 1) + ", got " + show(point)), false;
      counts.push_back(*at - start);
      start = *at;
    }
    counts.push_back(layers_ - start);
    how = points_key;
  } else if (version_ == v2024) {
    // generate_split_points: the first stage num_layers // stages, the middle ones one more while
    // layers remain, the last the rest; used only when the stages do not divide the layers.
    if (layers_ % stages == 0) return true;
    const int64_t first = layers_ / stages, longer = std::min(layers_ % stages, stages - 2);
    counts.assign(size_t(stages), first);
    for (int64_t s = 1; s <= longer; ++s) ++counts[size_t(s)];
    counts.back() = layers_ - first * (stages - 1) - longer;
    how = "generate_split_points: the first stage num_layers // stages, the middle ones one more while layers remain, the last the rest";
  } else {
    // generate_llm_fqn_per_model_part.
    const int64_t effective = layers_ + less_first + less_last, per = effective / stages, extra = effective % stages;
    const std::string first_key = "parallelism.pipeline_parallel_first_stage_less_layers";
    if (stages > effective || per == 0)
      return m_.fail(pp_key, text(stages) + " stages for " + text(effective) + " effective layers (" + text(layers_) +
                                 " + the embedding's " + text(less_first) + " + the output's " + text(less_last) +
                                 "): torchtitan raises on empty stages"), false;
    if (less_first > per || less_last > per)
      return m_.fail(less_first > per ? first_key : "parallelism.pipeline_parallel_last_stage_less_layers",
                     "exceeds the " + text(per) + " effective layers per stage (torchtitan raises)"), false;
    int64_t left = layers_;
    for (int64_t s = 0; s < stages; ++s) {
      const int64_t share = per + (s < extra ? 1 : 0) - (s == 0 ? less_first : 0) - (s == stages - 1 ? less_last : 0);
      const int64_t n = std::min(std::max<int64_t>(share, 0), left);
      counts.push_back(n);
      left -= n;
    }
    how = "generate_llm_fqn_per_model_part: " + text(layers_) + " layers + " + text(less_first) + " (embedding) + " +
          text(less_last) + " (output) dealt over " + text(stages) + " stages";
  }
  if (std::all_of(counts.begin(), counts.end(), [&](int64_t n) { return n == counts[0]; })) return true;
  // One stage per rank with equal middle stages: the first/last stage sizes, which every profile
  // reads (the per-stage list is the trainmem profile's).
  const bool middle_equal = stages < 3 || std::all_of(counts.begin() + 1, counts.end() - 1, [&](int64_t n) { return n == counts[1]; });
  if (stages_per_rank == 1 && middle_equal && stages >= 2 && counts.front() > 0 && counts.back() > 0) {
    const int64_t middle = stages > 2 ? counts[1] : 0;
    if (counts.front() != middle)
      m_.assume(field::num_layers_in_first_pipeline_stage, double(counts.front()), how, key);
    if (counts.back() != middle || stages == 2)
      m_.assume(field::num_layers_in_last_pipeline_stage, double(counts.back()), how, key);
    return true;
  }
  if (schedule == "ZBVZeroBubble" || schedule == "DualPipeV") {
    std::string split;
    for (size_t i = 0; i < counts.size(); ++i) split += (i ? ", " : "") + text(counts[i]);
    return m_.fail(key, "puts " + split + " layers in its stages, placed in a V (rank r holds stages r and 2·PP − 1 − r); "
                                          "trainmem's per-stage list is looped, so it cannot say this split"), false;
  }
  m_.assume(field::pipeline_stage_layers, std::vector<double>(counts.begin(), counts.end()), how, key);
  return true;
}

void TorchtitanReader::read_checkpointing() {
  const std::string mode = m_.string("activation_checkpoint.mode").value_or("selective");
  if (!m_.has("activation_checkpoint.mode")) out_.assumed.push_back("activation_checkpoint.mode ← \"selective\" (JobConfig's default)");
  if (mode == "none") {
    m_.read(field::recompute_granularity, std::string("none"), "activation_checkpoint.mode", "\"none\"");
  } else if (mode == "full") {
    m_.full_recompute_per_layer("activation_checkpoint.mode", "\"full\"", "TransformerBlock");
  } else if (mode == "selective") {
    const std::string option = m_.string("activation_checkpoint.selective_ac_option").value_or("2");
    if (option == "op") {
      m_.read(field::recompute_granularity, std::string("selective_op"), "activation_checkpoint.selective_ac_option", "\"op\" (per-op policy)");
      // [sac] cuDNN's SDPA kernel entered _op_sac_save_list with PR #2095 (Dec 2025, in 0.2.1):
      // it matters where torch runs that kernel (attention_backend fused: sm100 GPUs since
      // torchtitan PR #1196), which the job file does not say.
      if (version_ != v02)
        m_.assume(field::op_sac_saves_cudnn_attention, false,
                  "torchtitan " + std::string(k_versions[version_]) + "'s op SAC save list names the flash and "
                  "efficient SDPA kernels, not cuDNN's (PR #2095): on sm100 GPUs (B200, where torchtitan runs "
                  "cuDNN attention) set attention_backend \"fused\"", "activation_checkpoint.selective_ac_option");
    } else {
      const json v = mapping::plain_scalar(option);
      if (!v.is_number_integer() || v.get<int64_t>() < 1)
        return m_.fail("activation_checkpoint.selective_ac_option", "must be \"op\" or a positive integer, got " + trainmem::quoted(option));
      const int64_t every = v.get<int64_t>();
      // apply_ac: with an integer k every k-th TransformerBlock is checkpointed whole.
      // Each stage counts its own blocks: floor(blocks per stage / k) are checkpointed, none when
      // k is more than a stage has.
      const int64_t blocks = layers_ / std::max<int64_t>(1, out_.input.pipeline_model_parallel_size.value_or(1));
      const int64_t per_stage = blocks / every;
      if (layers_ > 0 && per_stage == 0)
        return (void)m_.read(field::recompute_granularity, std::string("none"), "activation_checkpoint.selective_ac_option",
                             trainmem::quoted(option) + " (more than a stage's " + number_text(double(blocks)) + " blocks: none is checkpointed)");
      m_.read(field::recompute_granularity, std::string("full"), "activation_checkpoint.selective_ac_option", trainmem::quoted(option) + " (every " + option + "-th block whole)");
      m_.assume(field::recompute_method, std::string("block"), "layer-wise selective AC", "activation_checkpoint.selective_ac_option");
      if (layers_ > 0)
        m_.assume(field::recompute_num_layers, double(per_stage), "num_layers / " + option + " blocks (per stage)", "activation_checkpoint.selective_ac_option");
    }
  } else {
    m_.ignore_value("activation_checkpoint.mode", "a mode trainmem does not model: no recomputation is counted");
  }
}

void TorchtitanReader::read_float8() {
  // 2024: [float8] enable_float8_linear; 0.1+: model.converters = ["float8"] with float8.recipe_name.
  bool float8 = m_.boolean("float8.enable_float8_linear").value_or(false) || m_.boolean("training.enable_float8_linear").value_or(false) ||
                m_.boolean("training.enable_fp8_linear").value_or(false);
  bool mx = false;
  if (const json* conv = m_.get("model.converters")) {
    const auto has = [&](std::string_view name) {
      if (conv->is_string()) return conv->get<std::string>().find(name) != std::string::npos;
      if (conv->is_array())
        for (const json& c : *conv)
          if (c.is_string() && c.get<std::string>() == name) return true;
      return false;
    };
    float8 = float8 || has("float8");
    mx = has("mx");
  }
  if (mx) {
    m_.read(field::fp8_recipe, std::string("mxfp8"), "model.converters", "[\"mx\"] (MXFP8 linears)");
  } else if (float8) {
    const std::string recipe = m_.string("float8.recipe_name").value_or("tensorwise");
    m_.read(field::fp8_recipe, std::string("tensorwise"), m_.has("model.converters") ? "model.converters" : "float8.enable_float8_linear", "float8 (torchao Float8Linear)");
    if (recipe != "tensorwise")
      out_.assumed.push_back("fp8_recipe ← \"tensorwise\" (float8.recipe_name " + trainmem::quoted(recipe) +
                             ": trainmem has no rowwise recipe; under torchao the recipe does not change what is kept)");
    if (m_.boolean("float8.enable_fsdp_float8_all_gather").value_or(false))
      m_.read(field::fp8_param_gather, true, "float8.enable_fsdp_float8_all_gather", "true (float8 all-gathered weights)");
  } else {
    m_.touch("float8");
  }
}

void TorchtitanReader::read_compile() {
  // [loss]: 0.2 compiles what compile.components names (default model and loss) when
  // compile.enable; before, training.compile compiles the blocks, and (0.1) the loss too.
  bool model = false, loss = false;
  std::string key;
  if (m_.has("compile.enable") || m_.has("compile.components")) {
    key = "compile.enable";
    const bool enable = m_.boolean("compile.enable").value_or(false);
    bool comp_model = true, comp_loss = true;
    if (const json* c = m_.get("compile.components"); c && c->is_array()) {
      comp_model = comp_loss = false;
      for (const json& x : *c) {
        if (x == "model") comp_model = true;
        if (x == "loss") comp_loss = true;
      }
    }
    model = enable && comp_model;
    loss = enable && comp_loss;
  } else if (m_.has("training.compile")) {
    key = "training.compile";
    model = m_.boolean("training.compile").value_or(false);
    loss = model && version_ >= v01;
  }
  if (key.empty()) return;
  if (m_.put(field::torch_compile, model, key) )
    out_.read.push_back(std::string("torch_compile ← ") + key + " = " + (model ? "true" : "false"));
  if (model && !loss && key == "training.compile")
    out_.assumed.push_back("cross_entropy_loss_fusion ← false (torchtitan 2024: the loss stays eager)");
  if (loss) {
    // The compiled loss fuses the fp32 upcast and log-softmax: no fp32 logits are materialised.
    m_.assume(field::cross_entropy_loss_fusion, true,
              key + " with torchtitan " + std::string(k_versions[version_]) + ": build_cross_entropy_loss compiles the loss (the fp32 upcast is fused)", key);
  }
}

void TorchtitanReader::run() {
  read_version();
  if (!out_.ok()) return;
  read_model();
  if (!out_.ok()) return;
  read_training();
  read_parallelism();
  read_checkpointing();
  read_float8();
  read_compile();
  if (out_.ok()) m_.account(k_no_memory, k_sections);
}

}  // namespace

ImportResult import_torchtitan(std::string_view tree_json, const ImportOptions& options) {
  return mapping::import_tree(tree_json, "JOB.toml", mapping::requires_key("model.name", "a torchtitan job config"),
                              [&](json& tree, ImportResult& out) {
                                apply_overrides(tree, options.overrides, out);
                                if (out.ok()) TorchtitanReader(tree, options, out).run();
                              });
}

std::vector<std::string_view> torchtitan_versions() { return k_versions; }

}  // namespace trainmem
