#include "trainmem/report.hpp"

#include "internal.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace trainmem {
namespace {

std::string printf_string(const char* format, double value, const char* suffix) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, value, suffix);
  return buf;
}

// A whole number written out in full, however large: a long long would overflow past 2^63 (the
// largest accepted models reach 10^20 bytes) and print a negative count.
std::string whole_text(double whole) { return printf_string("%.0f%s", std::round(whole), ""); }

// "12.34 GiB (13.25 GB, 13249999872 B)": both units and the count written out.
std::string bytes_line(double whole) {
  return format_bytes(whole, ByteUnits::binary) + " (" + format_bytes(whole, ByteUnits::decimal) +
         ", " + whole_text(whole) + " B)";
}

// "3 communicators: tensor ×2, data ×4, world ×8".
std::string communicators_line(const NcclCommunicators& nccl) {
  std::string out = std::to_string(nccl.count) + " communicator" + (nccl.count == 1 ? "" : "s") + ": ";
  for (int g = 0; g < nccl.count; ++g)
    out += (g ? ", " : "") + std::string(nccl.list[size_t(g)].name) + " ×" + std::to_string(nccl.list[size_t(g)].gpus);
  return out;
}

// The trainmem profile's figures as a sum: the most-loaded GPU's model state by tensor class,
// the peak's activations and temporaries (= allocated), the caching allocator (= reserved), the
// CUDA context and NCCL buffers (= device). Byte counts are rounded as running sums, so the
// printed lines add up exactly to the printed totals.
template <class Line>
void trainmem_memory_lines(const Config& c, const FullEstimate& est, Line line) {
  // The job's peak: one of the step's moments, or loading, a checkpoint save or an evaluation step.
  static constexpr const char* moment_names[] = {"the end of forward", "backward",     "the optimizer step",
                                                 "loading",            "a full save",  "an evaluation step"};
  static_assert(std::size(moment_names) == size_t(JobMoment::count));
  line("Memory on the most-loaded GPU (pipeline stage " + std::to_string(est.most_loaded_stage) +
       ", peak at " + moment_names[size_t(est.moments.job_peak())] + ")");
  double running = 0;
  double printed = 0;  // whole bytes: exact below 2^53, past any real GPU
  auto add = [&](const std::string& label, double bytes, bool always = true) {
    running += bytes;
    const double upto = std::round(running);
    if (always || bytes != 0) {
      std::string padded = "  + " + label;
      padded.resize(std::max<size_t>(padded.size() + 1, 28), ' ');  // a long label keeps a space
      line(padded + bytes_line(upto - printed));
      printed = upto;
    }
  };
  auto total = [&](const std::string& label, double bytes, const char* what) {
    running = bytes;  // the estimator's own figure: the lines above sum to it up to rounding
    const double exact = std::round(bytes);
    std::string padded = "  = " + label;
    padded.resize(std::max<size_t>(padded.size(), 28), ' ');
    line(padded + bytes_line(exact) + "   " + what);
    printed = exact;
  };
  const StateBreakdown& st = est.state;
  add("weights", st.weights.total());
  add("weight copies", st.weight_copies.total(), false);
  add("gradients", st.gradients.total());
  add("master weights", st.master_weights.total());
  add("optimizer states", st.optimizer_states.total());
  add("buffers", st.buffers.total(), false);
  add("frozen weights", st.frozen_weights.total(), false);
  add("adapter weights", st.adapter_weights.total(), false);
  add("adapter gradients", st.adapter_gradients.total(), false);
  add("adapter master weights", st.adapter_master_weights.total(), false);
  add("adapter optimizer states", st.adapter_optimizer_states.total(), false);
  add("activations", est.moments.peak_activation_bytes);
  add("temporaries", est.moments.peak_temporary_bytes);
  total("allocated", est.total_bytes, "torch.cuda.max_memory_allocated");
  // The core's lines between the figures, in order: each adds to the next total.
  static constexpr std::pair<std::string_view, const char*> labels[] = {
      {"caching_allocator", "caching allocator"}, {"cuda_context", "CUDA context"}, {"nccl", "NCCL buffers"},
      {"paged_optimizer", "paged optimizer states"}};
  std::string_view adding_to = "reserved";
  for (int i = 0; i < est.n_overhead_lines; ++i) {
    const OverheadLine& overhead = est.overhead_lines[size_t(i)];
    if (overhead.adds_to != adding_to) {
      total("reserved", est.reserved_bytes, "torch.cuda.max_memory_reserved");
      adding_to = overhead.adds_to;
    }
    std::string label(overhead.key);
    for (const auto& [key, text] : labels)
      if (key == overhead.key) label = text;
    add(label, overhead.bytes);
    if (overhead.key == "nccl" && est.nccl.count > 0) line("      " + communicators_line(est.nccl));
  }
  if (adding_to == "reserved") total("reserved", est.reserved_bytes, "torch.cuda.max_memory_reserved");
  total("device", est.device_bytes, "nvidia-smi");
  // Issue 29, item 8: a run whose validation group leans low says so beside the figures.
  if (est.confidence.known && leans_low(est.confidence.group))
    line("  (runs like this leaned low in validation: see Validation below)");
  if (est.cpu_bytes > 0) {
    line("  CPU memory per node (offloaded state): " + bytes_line(std::round(est.cpu_bytes)));
    // The core's split (Estimate::cpu), one line per class that holds bytes.
    constexpr std::string_view labels[] = {"weights", "gradients", "master weights", "optimizer states",
                                           "activations", "evicted paged optimizer states"};
    static_assert(std::size(labels) == std::size(k_cpu_rows));
    const auto rows = est.cpu.rows();
    for (size_t i = 0; i < rows.size(); ++i)
      if (*rows[i] > 0) line("    of it " + std::string(labels[i]) + ": " + bytes_line(std::round(*rows[i])));
  }
  line("  (temporaries include " + format_bytes(c.workspace_bytes, ByteUnits::binary) +
       " of library workspaces)");

  const std::vector<StageParams>& stages = est.stages;
  if (stages.size() > 1) {
    line("");
    line("Pipeline stages (one GPU of each)");
    for (size_t r = 0; r < stages.size(); ++r)
      line("  stage " + std::to_string(r) + ": " + std::to_string(stages[r].num_layers) +
           " layers, model state " + format_bytes(stages[r].weight_and_optimizer_bytes, ByteUnits::binary) +
           ", allocated " + format_bytes(stages[r].total_bytes, ByteUnits::binary) + ", device " +
           format_bytes(stages[r].device_bytes, ByteUnits::binary));
  }
}

}  // namespace

std::string format_bytes(double bytes, ByteUnits units) {
  static constexpr std::array<const char*, 6> binary = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static constexpr std::array<const char*, 6> decimal = {"B", "kB", "MB", "GB", "TB", "PB"};
  const auto& names = units == ByteUnits::binary ? binary : decimal;
  const double step = units == ByteUnits::binary ? 1024.0 : 1000.0;
  if (!std::isfinite(bytes)) return "n/a";
  size_t i = 0;
  double value = bytes;
  while (std::fabs(value) >= step && i + 1 < names.size()) value /= step, ++i;
  return printf_string(i == 0 ? "%.0f %s" : "%.2f %s", value, names[i]);
}

std::string format_count(double count) {
  static constexpr std::array<const char*, 5> names = {"", " K", " M", " B", " T"};
  size_t i = 0;
  double value = count;
  while (std::fabs(value) >= 1000.0 && i + 1 < names.size()) value /= 1000.0, ++i;
  return printf_string(i == 0 ? "%.0f%s" : "%.2f%s", value, names[i]);
}

std::string text_report(const Config& c, const FullEstimate& est, const Trace* trace) {
  std::string out;
  auto line = [&](const std::string& text) { out += text + "\n"; };
  auto count = [](double n) {
    return format_count(n) + " (" + whole_text(n) + ")";
  };

  line("trainmem estimate, profile " + std::string(name_of(est.profile)));
  line("  model: " + std::to_string(c.num_layers) + " layers, hidden " + std::to_string(c.hidden_size) +
       ", " + std::to_string(c.num_attention_heads) + " heads / " +
       std::to_string(c.num_query_groups) + " query groups, ffn " + std::to_string(c.ffn_hidden_size) +
       ", vocab " + std::to_string(c.vocab_size) +
       (c.is_moe() ? ", " + std::to_string(c.num_moe_experts) + " experts top-" +
                         std::to_string(c.moe_router_topk)
                   : ""));
  line("  layout: TP " + std::to_string(c.tensor_model_parallel_size) + ", PP " +
       std::to_string(c.pipeline_model_parallel_size) +
       (c.virtual_pipeline_model_parallel_size
            ? " (VPP " + std::to_string(c.virtual_pipeline_model_parallel_size) + ")"
            : "") +
       ", CP " + std::to_string(c.context_parallel_size) + ", EP " +
       std::to_string(c.expert_model_parallel_size) + ", ETP " +
       std::to_string(c.expert_tensor_parallel_size) + ", DP " +
       std::to_string(c.data_parallel_size) +
       (c.use_distributed_optimizer ? ", distributed optimizer" : ""));
  line("");
  line("Parameters");
  line("  total              " + count(est.params.total));
  line("  active per token   " + count(est.params.active));
  line("  dense transformer  " + count(est.params.dense_transformer));
  line("  embedding          " + count(est.params.embedding));
  if (est.params.routed_experts > 0) line("  routed experts     " + count(est.params.routed_experts));
  line("  on the most-loaded GPU " + count(est.params.per_gpu));
  line("");
  if (est.profile == Profile::trainmem) {
    trainmem_memory_lines(c, est, line);
    if (est.confidence.known) {
      const Confidence& conf = est.confidence;
      auto percent = [](double share) { return printf_string("%.1f%s", 100 * share, " %"); };
      line("");
      line("Validation (" + std::string(k_confidence_source) + ")");
      line("  runs like this landed within ±" + percent(conf.group.p90_abs_error) +
           " of their measurements (90th percentile of |error|; median " +
           percent(conf.group.median_abs_error) + "; median signed error " +
           (conf.group.median_signed_error >= 0 ? "+" : "") + percent(conf.group.median_signed_error) + ")");
      if (leans_low(conf.group))
        line("  LEANS LOW: most runs like this needed more memory than estimated (median signed error below " +
             percent(k_confidence_leans_low) + "); allow for more than the figure above");
      line("  group: " + confidence_group_name(conf.group.key) + ", " + std::to_string(conf.group.points) +
           " points");
      if (conf.match != ConfidenceMatch::exact)
        line("  (fewer than " + std::to_string(k_confidence_min_points) + " points in this run's own group, " +
             confidence_group_name(conf.run) + ": a wider group's figures)");
    }
  } else {
    line("Memory on the most-loaded GPU");
    for (int i = 0; i < est.n_components; ++i) {
      const ModelStateComponent& comp = est.components[size_t(i)];
      char detail[160];
      std::snprintf(detail, sizeof detail, "    %s params × %.6g B/param (optimizer shard %.0f)",
                    format_count(comp.parameter_count_per_gpu).c_str(), comp.bytes_per_parameter,
                    comp.optimizer_shard_size);
      line("  " + std::string(comp.name) + ": " + bytes_line(comp.memory_bytes));
      line(detail);
    }
    if (est.has_activation) line("  activation: " + bytes_line(est.activation_bytes));
    line("  total: " + bytes_line(est.total_bytes));
    const std::vector<StageParams>& stages = est.stages;
    if (!stages.empty()) {
      line("");
      line("Pipeline stages (model state)");
      for (size_t r = 0; r < stages.size(); ++r)
        line("  stage " + std::to_string(r) + ": " + std::to_string(stages[r].num_layers) +
             " layers, " + format_bytes(stages[r].weight_and_optimizer_bytes, ByteUnits::binary));
    }
  }
  line("");
  line("Assumptions");
  for (std::string_view text : est.assumption_texts()) line("  - " + std::string(text));
  if (trace) {
    line("");
    line("Intermediate quantities");
    for (const TraceEntry& e : *trace) {
      char value[48];
      std::snprintf(value, sizeof value, "%.17g", e.value);
      line("  " + e.name + " = " + value + "    " + e.formula);
    }
  }
  // The reference profiles end with the training log's line. The trainmem profile's figures are
  // not that line's (it is Bridge's formula), so printing it under them would tell two stories.
  const std::string reference_line = est.profile == Profile::trainmem ? std::string() : est.reference_line;
  if (!reference_line.empty()) {
    line("");
    line(reference_line);
  }
  return out;
}

std::string fields_markdown() {
  struct Section {
    FieldGroup group;
    const char* title;
  };
  static constexpr Section sections[] = {
      {FieldGroup::profile, "Profile"},
      {FieldGroup::model, "Model shape"},
      {FieldGroup::moe, "Mixture of experts and multi-token prediction"},
      {FieldGroup::mla, "Multi-latent attention (read by megatron-lm)"},
      {FieldGroup::training, "Training"},
      {FieldGroup::parallelism, "Parallelism"},
      {FieldGroup::finetuning, "Fine-tuning and memory-saving techniques"},
  };

  std::string out =
      "# Input fields\n\n"
      "A configuration is one flat JSON object. Field names are Megatron's (Megatron Core "
      "`TransformerConfig` / Megatron-LM arguments). `null` or an absent field means unset, and "
      "unset fields resolve the way Megatron Core resolves them. An unknown field is an error that "
      "names the nearest known one. A share link names each field by its link key (or by its name), "
      "and the page's form by its label, in its form section (under that section's \"More\" where "
      "marked). This page is generated by `trainmem fields --format markdown` "
      "from the core's field table, and a test checks that it is current.\n";
  for (const Section& section : sections) {
    out += std::string("\n## ") + section.title + "\n\n";
    out += "| field | link key | label | form section | type | range | unit | unset means | meaning | rules |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const FieldSpec& f : field_specs()) {
      if (f.group != section.group) continue;
      std::string range;
      if (has_range(f.type) && f.type != FieldType::number) {
        range = grouped_digits(int64_t(f.min)) + " … " + grouped_digits(int64_t(f.max));
      } else if (f.type == FieldType::number) {
        range = number_text(f.min) + " … " + number_text(f.max);
      } else if (f.type == FieldType::choice || f.type == FieldType::choice_list) {
        for (size_t i = 0; i < f.choices.size(); ++i) {
          range += (i ? ", `" : "`") + std::string(f.choices[i]) + "`";
          if (i < f.choice_labels.size()) range += " (form: \"" + std::string(f.choice_labels[i]) + "\")";
        }
      } else {
        range = "true / false";
      }
      std::string type(name_of(f.type));
      for (char& ch : type) ch = ch == '_' ? ' ' : ch;
      const std::string form = f.form.section == FormSection::none
                                   ? "set by the page"
                                   : std::string(name_of(f.form.section)) + (f.form.more ? " (More)" : "");
      out += "| `" + std::string(f.name) + "` | `" + std::string(f.link_key) + "` | " + std::string(f.label) + " | " + form + " | " + type + (f.required ? " (required)" : "") +
             " | " + range + " | " + std::string(f.unit) + " | " + std::string(f.default_text) +
             " | " + std::string(f.description) + (f.trainmem_only ? " *(trainmem profile)*" : "") +
             " | " + std::string(f.rules) + " |\n";
    }
  }
  return out;
}

}  // namespace trainmem
