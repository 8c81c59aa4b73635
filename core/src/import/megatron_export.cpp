// A resolved Config out as Megatron-LM arguments (export_megatron_args), the inverse of
// megatron_args.cpp: the same argument names, and a note for what no argument carries (the
// data-parallel size, which Megatron derives from the launcher's world size; trainmem's own
// fields).
#include <algorithm>
#include <cctype>

#include "internal.hpp"
#include "trainmem/export.hpp"

namespace trainmem {
namespace {

// A word as a POSIX shell reads it back: quoted unless every character is plainly safe.
std::string shell_word(const std::string& w) {
  const bool safe = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("-_.,=/:+@%").find(c) != std::string_view::npos;
  });
  return safe ? w : "'" + w + "'";
}

// The trainmem profile's fields that Megatron-LM arguments carry, written so that
// import_megatron_args reads them back (its rules: megatron_args.cpp read_precision,
// read_attention, read_rest); a value no argument gives becomes a note.
void export_trainmem_fields(const Config& c, std::vector<std::string>& a, std::vector<std::string>& notes) {
  const auto dtype = [](Dtype d) { return std::string(name_of(d)); };
  if (c.framework != Framework::megatron)
    notes.push_back("framework " + std::string(name_of(c.framework)) +
                    ": the arguments describe a Megatron-LM run, whose byte model differs");
  // Weights: fp32 without a flag, --bf16 or --fp16.
  if (c.params_dtype == Dtype::bf16) a.push_back("--bf16");
  else if (c.params_dtype == Dtype::fp16) a.push_back("--fp16");
  else if (c.params_dtype != Dtype::fp32)
    notes.push_back("params_dtype " + dtype(c.params_dtype) + ": no Megatron-LM argument gives it; not exported");
  // Gradients: fp16 weights keep fp16 gradients unless accumulated in fp32; otherwise fp32
  // unless --main-grads-dtype bf16.
  const Dtype grads_default = c.params_dtype == Dtype::fp16 ? Dtype::fp16 : Dtype::fp32;
  if (c.main_grads_dtype != grads_default) {
    if (c.params_dtype == Dtype::fp16 && c.main_grads_dtype == Dtype::fp32) a.push_back("--accumulate-allreduce-grads-in-fp32");
    else if (c.main_grads_dtype == Dtype::bf16 && c.params_dtype != Dtype::fp16) a.push_back("--main-grads-dtype bf16");
    else notes.push_back("main_grads_dtype " + dtype(c.main_grads_dtype) + " with params_dtype " + dtype(c.params_dtype) +
                         ": no Megatron-LM argument gives it; not exported");
  }
  if (c.main_params_dtype == Dtype::fp16) a.push_back("--main-params-dtype fp16");
  else if (c.main_params_dtype != Dtype::fp32)
    notes.push_back("main_params_dtype " + dtype(c.main_params_dtype) + ": no Megatron-LM argument gives it; not exported");
  for (const auto& [arg, value] : {std::pair<std::string_view, Dtype>{"--exp-avg-dtype", c.exp_avg_dtype},
                                   {"--exp-avg-sq-dtype", c.exp_avg_sq_dtype}}) {
    if (value == Dtype::fp16 || value == Dtype::bf16 || value == Dtype::fp8) a.push_back(std::string(arg) + " " + dtype(value));
    else if (value != Dtype::fp32)
      notes.push_back(std::string(arg.substr(2)) + " " + dtype(value) + ": no Megatron-LM argument gives it; not exported");
  }
  if (c.fp8_recipe != Fp8Recipe::none) {
    a.push_back("--fp8-format hybrid --fp8-recipe " + std::string(name_of(c.fp8_recipe)));
    notes.push_back("fp8_recipe " + std::string(name_of(c.fp8_recipe)) +
                    ": exported with --fp8-format hybrid (e4m3 keeps the same bytes; choose the format)");
  }
  if (c.fp8_param_gather) a.push_back("--fp8-param-gather");
  if (c.optimizer == Optimizer::sgd) a.push_back("--optimizer sgd");
  else if (c.optimizer != Optimizer::adam && c.optimizer != Optimizer::adamw)
    notes.push_back("optimizer " + std::string(name_of(c.optimizer)) + ": not one of Megatron-LM's (adam, sgd); not exported");
  // The kernel: Megatron-LM's default (auto) lets Transformer Engine choose; trainmem has chosen.
  a.push_back("--attention-backend " + std::string(name_of(c.attention_backend)));
  auto probability = [&](std::string_view arg, double p) {
    if (p != 0.1) a.push_back(std::string(arg) + " " + number_text(p));  // Megatron-LM's default: 0.1
  };
  probability("--attention-dropout", c.attention_dropout);
  probability("--hidden-dropout", c.hidden_dropout);
  if (c.cross_entropy_loss_fusion) a.push_back("--cross-entropy-loss-fusion --cross-entropy-fusion-impl te");  // TE's: the loss trainmem models
  if (c.optimizer_offload_fraction > 0)
    a.push_back("--optimizer-cpu-offload --optimizer-offload-fraction " + number_text(c.optimizer_offload_fraction));
  if (c.moe_expert_capacity_factor > 0) a.push_back("--moe-expert-capacity-factor " + number_text(c.moe_expert_capacity_factor));
  // Narrower gradients, master weights or Adam states, and the optimizer offload, need Megatron
  // Core's precision-aware optimizer (OptimizerConfig and validate_args assert it @ d98e8a64;
  // megatron_args.cpp reads the same), which is Adam's alone.
  const bool precision_aware = std::any_of(a.begin(), a.end(), [](const std::string& arg) {
    return arg.starts_with("--main-grads-dtype") || arg.starts_with("--main-params-dtype") ||
           arg.starts_with("--exp-avg") || arg.starts_with("--optimizer-cpu-offload");
  });
  // Masters kept as remainders come with the same flag and no argument of their own
  // (OptimizerConfig.store_param_remainders, default True, on with Transformer Engine >= 2.1:
  // optimizer_config.py @ 23e00ed0, core_v0.14.0); the importer reads them back off (it cannot
  // see the versions), which errs high.
  if (c.store_param_remainders)
    notes.push_back("store_param_remainders true: Megatron Core >= 0.11 with Transformer Engine >= 2.1 keeps "
                    "them under --use-precision-aware-optimizer, which no argument says; imported back, they are off");
  const bool adam = c.optimizer == Optimizer::adam || c.optimizer == Optimizer::adamw;
  if (precision_aware || (c.store_param_remainders && adam)) {
    a.push_back("--use-precision-aware-optimizer");
    if (!adam)
      notes.push_back("optimizer " + std::string(name_of(c.optimizer)) +
                      " with narrow optimizer states or the optimizer offload: Megatron Core's "
                      "--use-precision-aware-optimizer is Adam's only, so Megatron-LM does not start this command as is");
  }
}

}  // namespace

std::string moe_layer_freq_expression(const std::vector<uint8_t>& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    size_t j = i;
    while (j < pattern.size() && pattern[j] == pattern[i]) ++j;
    out += (out.empty() ? "" : "+") + std::string("[") + (pattern[i] ? "1" : "0") + "]";
    if (j - i > 1) out += "*" + std::to_string(j - i);
    i = j;
  }
  return out.empty() ? "[]" : "(" + out + ")";
}

MegatronExport export_megatron_args(const Config& c) {
  MegatronExport out;
  std::vector<std::string> a;
  auto n = [](int64_t v) { return number_text(double(v)); };
  auto arg = [&](const std::string& name, int64_t value) { a.push_back(name + " " + n(value)); };

  arg("--num-layers", c.num_layers);
  arg("--hidden-size", c.hidden_size);
  arg("--ffn-hidden-size", c.ffn_hidden_size);
  arg("--num-attention-heads", c.num_attention_heads);
  if (c.num_query_groups != c.num_attention_heads) {
    a.push_back("--group-query-attention");
    arg("--num-query-groups", c.num_query_groups);
  }
  arg("--kv-channels", c.kv_channels);
  arg("--seq-length", c.seq_length);
  if (c.max_position_embeddings > 0) {
    a.push_back("--position-embedding-type learned_absolute");
    arg("--max-position-embeddings", c.max_position_embeddings);
  } else {
    // Megatron-LM sizes its rotary tables by --max-position-embeddings; rope has no parameters.
    a.push_back("--position-embedding-type rope");
    arg("--max-position-embeddings", c.seq_length);
    if (c.rotary_percent != 1.0) a.push_back("--rotary-percent " + number_text(c.rotary_percent));
  }
  arg("--vocab-size", c.vocab_size);
  arg("--make-vocab-size-divisible-by", c.make_vocab_size_divisible_by);
  if (c.normalization == Normalization::layer_norm || c.normalization == Normalization::rms_norm)
    a.push_back("--normalization " + std::string(name_of(c.normalization)));
  else
    out.notes.push_back(
        "normalization \"" + std::string(name_of(c.normalization)) +
        "\": no Megatron-LM argument gives it; not exported (Megatron-LM will use LayerNorm)");

  const ActivationFunc act = c.activation_func;
  if (c.gated_linear_unit && act == ActivationFunc::silu) {
    a.push_back("--swiglu");
  } else if (c.gated_linear_unit && act == ActivationFunc::gelu) {
    a.push_back("--quick-geglu");
    out.notes.push_back(
        "gated_linear_unit with activation_func \"gelu\": exported as --quick-geglu "
        "(Megatron-LM has no plain GeGLU argument; the parameter count is the same)");
  } else if (!c.gated_linear_unit && act == ActivationFunc::squared_relu) {
    a.push_back("--squared-relu");
  } else if (c.gated_linear_unit || act != ActivationFunc::gelu) {
    out.notes.push_back(
        std::string("gated_linear_unit = ") + (c.gated_linear_unit ? "true" : "false") +
        " with activation_func \"" + std::string(name_of(act)) +
        "\": no Megatron-LM argument gives it; not exported (Megatron-LM will use GELU)");
  }
  if (!c.add_bias_linear) a.push_back("--disable-bias-linear");
  if (c.add_qkv_bias) a.push_back("--add-qkv-bias");
  if (c.qk_layernorm) a.push_back("--qk-layernorm");
  // Megatron Core's learnable softmax offset, gpt-oss's sinks (TransformerConfig.softmax_type,
  // megatron/core/transformer/transformer_config.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553).
  if (c.attention_sinks) a.push_back("--softmax-type learnable");
  if (!c.share_embeddings_and_output_weights) a.push_back("--untie-embeddings-and-output-weights");

  if (c.is_moe()) {
    arg("--num-experts", c.num_moe_experts);
    arg("--moe-ffn-hidden-size", c.moe_ffn_hidden_size);
    arg("--moe-router-topk", c.moe_router_topk);
    // Always written: Megatron-LM's own default (allgather) is not trainmem's (alltoall).
    a.push_back("--moe-token-dispatcher-type " +
                std::string(name_of(c.moe_token_dispatcher_type)));
    if (c.moe_layer_freq_list.empty())
      arg("--moe-layer-freq", c.moe_layer_freq);
    else
      a.push_back("--moe-layer-freq " +
                  shell_word(moe_layer_freq_expression(c.moe_layer_freq_list)));
    if (c.moe_shared_expert_intermediate_size > 0)
      arg("--moe-shared-expert-intermediate-size", c.moe_shared_expert_intermediate_size);
    if (c.moe_shared_expert_gate) a.push_back("--moe-shared-expert-gate");
    if (c.moe_latent_size > 0) arg("--moe-latent-size", c.moe_latent_size);
    if (c.moe_router_score_function != MoeRouterScoreFunction::softmax)
      a.push_back("--moe-router-score-function " + std::string(name_of(c.moe_router_score_function)));
    if (c.moe_router_enable_expert_bias) a.push_back("--moe-router-enable-expert-bias");
  }
  if (c.mtp_num_layers > 0) arg("--mtp-num-layers", c.mtp_num_layers);
  if (c.multi_latent_attention) {
    a.push_back("--multi-latent-attention");
    if (c.q_lora_rank > 0) arg("--q-lora-rank", c.q_lora_rank);
    arg("--kv-lora-rank", c.kv_lora_rank);
    arg("--qk-head-dim", c.qk_head_dim);
    arg("--qk-pos-emb-head-dim", c.qk_pos_emb_head_dim);
    arg("--v-head-dim", c.v_head_dim);
  }

  arg("--micro-batch-size", c.micro_batch_size);
  if (c.global_batch_size > 0) {
    arg("--global-batch-size", c.global_batch_size);
  } else if (c.num_microbatches > 0) {
    // Imports give the accumulation as num_microbatches; each count is in its field's range, their
    // product need not be within 64 bits.
    std::optional<int64_t> global = checked_mul(c.num_microbatches, c.micro_batch_size);
    if (global) global = checked_mul(*global, c.data_parallel_size);
    if (!global) {
      out.notes.push_back("num_microbatches × micro_batch_size × data_parallel_size is over 2^63: no --global-batch-size");
    } else {
      arg("--global-batch-size", *global);
      out.notes.push_back("num_microbatches = " + n(c.num_microbatches) +
                          ": exported as --global-batch-size " + n(*global) +
                          " = num_microbatches × micro_batch_size × data_parallel_size");
    }
  }
  if (c.use_distributed_optimizer) a.push_back("--use-distributed-optimizer");
  if (c.sequence_parallel) a.push_back("--sequence-parallel");
  const bool trainmem = c.profile == Profile::trainmem;
  if (c.recompute_granularity == RecomputeGranularity::selective) {
    a.push_back("--recompute-granularity selective");
    // Megatron-LM's default --recompute-modules is core_attn, as the field's.
    if (trainmem && c.recompute_modules != (1u << unsigned(RecomputeModule::core_attn))) {
      std::string modules;
      for (unsigned m = 0; m < unsigned(RecomputeModule::count); ++m)
        if (c.recompute_modules & (1u << m)) modules += " " + std::string(name_of(RecomputeModule(m)));
      a.push_back("--recompute-modules" + modules);
    }
  } else if (c.recompute_granularity == RecomputeGranularity::full) {
    if (trainmem && c.recompute_num_layers > 0) {
      a.push_back("--recompute-granularity full --recompute-method " + std::string(name_of(c.recompute_method)) +
                  " --recompute-num-layers " + n(c.recompute_num_layers));
    } else {
      // TransformerConfig requires a method with full recomputation; every layer recomputed
      // alone is uniform groups of one.
      a.push_back("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
      out.notes.push_back(
          "recompute_granularity full: exported with --recompute-method uniform "
          "--recompute-num-layers 1 (Megatron-LM requires a method; adjust it)");
    }
  }
  if (trainmem) export_trainmem_fields(c, a, out.notes);

  arg("--tensor-model-parallel-size", c.tensor_model_parallel_size);
  arg("--pipeline-model-parallel-size", c.pipeline_model_parallel_size);
  if (!c.pipeline_stage_layers.empty()) {
    // --pipeline-model-parallel-layout (pipeline_parallel_layer_layout.py): stage s's decoder
    // layers as t (t*n for n), the embedding E in stage 0, MTP (m) and the loss L in the last; the
    // number of stages gives VPP. Quoted for the shell ('|' and '*').
    std::string layout;
    const size_t n = c.pipeline_stage_layers.size();
    for (size_t s = 0; s < n; ++s) {
      const int64_t layers = c.pipeline_stage_layers[s];
      layout += s ? "|" : "E";
      if (layers == 1) layout += "t";
      else if (layers > 1) layout += "t*" + std::to_string(layers);
    }
    if (c.mtp_num_layers == 1) layout += "m";
    else if (c.mtp_num_layers > 1) layout += "m*" + std::to_string(c.mtp_num_layers);
    a.push_back("--pipeline-model-parallel-layout '" + layout + "L'");
  } else if (c.virtual_pipeline_model_parallel_size > 0) {
    if (c.uneven_pipeline())
      arg("--num-virtual-stages-per-pipeline-rank", c.virtual_pipeline_model_parallel_size);
    else
      arg("--num-layers-per-virtual-pipeline-stage",
          c.num_layers / c.pipeline_model_parallel_size / c.virtual_pipeline_model_parallel_size);
  }
  if (c.num_layers_in_first_pipeline_stage > 0)
    arg("--decoder-first-pipeline-num-layers", c.num_layers_in_first_pipeline_stage);
  if (c.num_layers_in_last_pipeline_stage > 0)
    arg("--decoder-last-pipeline-num-layers", c.num_layers_in_last_pipeline_stage);
  if (c.context_parallel_size > 1) arg("--context-parallel-size", c.context_parallel_size);
  if (c.is_moe()) {
    arg("--expert-model-parallel-size", c.expert_model_parallel_size);
    arg("--expert-tensor-parallel-size", c.expert_tensor_parallel_size);
  }

  if (c.data_parallel_size > 1) {
    const int64_t world = c.data_parallel_size * c.tensor_model_parallel_size *
                          c.pipeline_model_parallel_size * c.context_parallel_size;
    out.notes.push_back(
        "data_parallel_size = " + n(c.data_parallel_size) +
        ": not a Megatron-LM argument (Megatron derives it from the launcher); launch on "
        "WORLD_SIZE = DP × TP × PP × CP = " +
        n(c.data_parallel_size) + " × " + n(c.tensor_model_parallel_size) + " × " +
        n(c.pipeline_model_parallel_size) + " × " + n(c.context_parallel_size) + " = " + n(world) +
        " GPUs");
  }
  if (c.profile != Profile::megatron_bridge)
    out.notes.push_back("profile " + std::string(name_of(c.profile)) +
                        ": trainmem's choice of reference, not a Megatron-LM argument");
  if (c.profile == Profile::trainmem)
    out.notes.push_back(
        "the trainmem profile's other fields (offload, fine-tuning, model implementation, runtime "
        "overheads) have no Megatron-LM argument and are not exported");
  if (c.should_pad_vocab)
    out.notes.push_back(
        "should_pad_vocab = true: not a Megatron-LM argument (Megatron-LM always pads)");
  // The caching allocator's setting is the launch environment's (megatron_args.cpp reads it there).
  if (c.profile == Profile::trainmem && c.expandable_segments)
    out.notes.push_back(
        "expandable_segments = true: not a Megatron-LM argument; launch with "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_ALLOC_CONF from PyTorch 2.9)");

  for (const std::string& part : a) out.args += (out.args.empty() ? "" : " ") + part;
  return out;
}

}  // namespace trainmem
