// The planner's input and output: a plan request from JSON (config and options), a plan as JSON
// (keys in README.md) and as the CLI's text table, and the fields that define a layout.
#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

#include "config/messages.hpp"
#include "estimate/layout.hpp"
#include "internal.hpp"
#include "json/json_values.hpp"
#include "planner/search.hpp"
#include "trainmem/json_io.hpp"
#include "trainmem/planner.hpp"
#include "trainmem/report.hpp"

namespace trainmem {

namespace {

using ordered = nlohmann::ordered_json;

ordered num(double x) { return detail::json_number(x); }
ordered field_json(const FieldValue& value) { return detail::json_field_value(value); }

// The fields a layout sets (the Search's input_for), in the field table's order.
ordered layout_fields(const Config& c) {
  const ConfigInput in = to_input(c);
  const bool trainmem = c.profile == Profile::trainmem;
  const planning::Sharding sharding = planning::sharding_of(c);
  std::vector<FieldName> names = {field::seq_length, field::micro_batch_size, field::num_microbatches};
  if (sharding == planning::Sharding::distributed_optimizer) names.push_back(field::use_distributed_optimizer);
  names.insert(names.end(), {field::sequence_parallel, field::recompute_granularity});
  if (sharding == planning::Sharding::zero_stage) names.push_back(field::zero_stage);
  if (trainmem)
    names.insert(names.end(), {field::recompute_method, field::recompute_num_layers, field::recompute_modules,
                               field::pipeline_schedule, field::data_parallel_shard_size, field::gpus_per_node});
  names.insert(names.end(), {field::tensor_model_parallel_size, field::pipeline_model_parallel_size,
                             field::virtual_pipeline_model_parallel_size, field::num_layers_in_first_pipeline_stage,
                             field::num_layers_in_last_pipeline_stage, field::pipeline_stage_layers, field::context_parallel_size});
  if (c.is_moe()) names.insert(names.end(), {field::expert_model_parallel_size, field::expert_tensor_parallel_size});
  names.insert(names.end(), {field::data_parallel_size, field::world_size});
  ordered out = ordered::object();
  for (std::string_view name : names) {
    FieldValue v = get_field(in, name);
    // Derived again from global_batch_size; fsdp2 shards over the whole data-parallel group.
    if ((name == field::num_microbatches && c.global_batch_size > 0) || name == field::data_parallel_shard_size)
      v = std::monostate{};
    out[std::string(name)] = field_json(v);
  }
  return out;
}

ordered entry_json(const PlanEntry& e, int64_t rank) {
  ordered out = ordered::object();
  if (rank > 0) out["rank"] = rank;
  out["footprint"] = e.footprint();
  out["data_parallel_size"] = e.config.data_parallel_size;
  out["num_microbatches"] = e.config.num_microbatches > 0 ? ordered(e.config.num_microbatches) : ordered(nullptr);
  out["metric_bytes"] = num(e.metric_bytes);
  out["allocated_bytes"] = num(e.allocated_bytes);
  if (e.config.profile == Profile::trainmem) {
    out["reserved_bytes"] = num(e.reserved_bytes);
    out["device_bytes"] = num(e.device_bytes);
  }
  out["weight_and_optimizer_bytes"] = num(e.weight_and_optimizer_bytes);
  out["activation_bytes"] = num(e.activation_bytes);
  out["headroom_bytes"] = num(e.headroom_bytes);
  out["headroom"] = e.headroom;
  out["most_loaded_stage"] = e.most_loaded_stage;
  out["fields"] = layout_fields(e.config);
  return out;
}

std::string sharding_text(const Config& c) {
  switch (planning::sharding_of(c)) {
    case planning::Sharding::distributed_optimizer: return c.use_distributed_optimizer ? "dist-opt" : "-";
    case planning::Sharding::zero_stage: return "zero-" + std::to_string(c.zero_stage);
    case planning::Sharding::none: break;
  }
  return "-";
}

// "even", or first|middle|last layers per rank; a per-stage list gives every rank's count.
std::string stages_text(const Config& c) {
  if (!c.uneven_pipeline()) return "even";
  const detail::PipelineLayout stages(c);
  std::string out;
  if (!c.pipeline_stage_layers.empty()) {
    // Every rank's count up to three ranks; beyond, the first, the middle ranks' range, the last
    // (the table's column stays narrow for a 16-rank list).
    if (stages.p <= 3) {
      for (int64_t r = 0; r < stages.p; ++r) out += (r ? "|" : "") + std::to_string(stages.count(r));
      return out;
    }
    int64_t lo = stages.count(1), hi = lo;
    for (int64_t r = 2; r + 1 < stages.p; ++r) lo = std::min(lo, stages.count(r)), hi = std::max(hi, stages.count(r));
    return std::to_string(stages.count(0)) + "|" + std::to_string(lo) + (hi != lo ? "-" + std::to_string(hi) : "") +
           "|" + std::to_string(stages.count(stages.p - 1));
  }
  return std::to_string(stages.count(0)) + "|" + std::to_string(stages.middle) + "|" +
         std::to_string(stages.count(stages.p - 1));
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

std::string row_text(const PlanEntry& e, const std::string& rank) {
  const Config& c = e.config;
  char buf[256];
  auto dash = [](int64_t v) { return v > 0 ? std::to_string(v) : std::string("-"); };
  std::snprintf(buf, sizeof buf, "%4s %3lld %3lld %-9s %3s %3lld %3s %3s %5lld %-8s %-11s %4lld %7lld  %11s %7s\n",
                rank.c_str(), (long long)c.tensor_model_parallel_size, (long long)c.pipeline_model_parallel_size,
                stages_text(c).c_str(), dash(c.virtual_pipeline_model_parallel_size).c_str(),
                (long long)c.context_parallel_size,
                c.is_moe() ? std::to_string(c.expert_model_parallel_size).c_str() : "-",
                c.is_moe() ? std::to_string(c.expert_tensor_parallel_size).c_str() : "-",
                (long long)c.data_parallel_size, sharding_text(c).c_str(),
                std::string(name_of(c.recompute_granularity)).c_str(), (long long)c.micro_batch_size,
                (long long)c.seq_length, format_bytes(e.metric_bytes, ByteUnits::binary).c_str(),
                percent(e.headroom).c_str());
  return buf;
}

constexpr const char* k_header =
    "rank  TP  PP stages    VPP  CP  EP ETP    DP sharding recompute    MBS     seq       memory headroom\n";

}  // namespace

std::string plan_fields_json(const Config& layout_config) { return layout_fields(layout_config).dump(); }

std::string plan_to_json(const PlanResult& r, int indent) {
  const PlanOptions& o = r.options;
  ordered out = ordered::object();
  out["ok"] = true;
  out["profile"] = name_of(r.profile);
  out["metric"] = name_of(o.metric);
  out["gpus"] = o.gpus;
  out["gpus_per_node"] = o.gpus_per_node;
  out["gpu_memory_bytes"] = num(o.gpu_memory_bytes);
  out["headroom"] = o.headroom;
  out["limit_bytes"] = num(r.limit_bytes);
  ordered knobs = ordered::array();
  for (size_t i = 0; i < size_t(PlanKnob::count); ++i)
    if (o.searches(PlanKnob(i))) knobs.push_back(name_of(PlanKnob(i)));
  out["search"] = knobs;
  out["keep"] = o.keep;
  out["allow_uneven_pipeline"] = o.allow_uneven_pipeline;
  out["complete"] = r.complete;
  out["stopped"] = r.stopped.empty() ? ordered(nullptr) : ordered(r.stopped);
  out["solve"] = name_of(o.solve);
  if (o.solve == PlanSolve::none) {
    out["n_fitting"] = r.n_fitting;
    out["counted_all"] = r.counted_all;
    ordered layouts = ordered::array();
    for (size_t i = 0; i < r.layouts.size(); ++i) layouts.push_back(entry_json(r.layouts[i], int64_t(i + 1)));
    out["layouts"] = layouts;
  } else {
    out["solution"] = {{"found", r.solution.found},
                       {"value", r.solution.found ? ordered(r.solution.value) : ordered(nullptr)},
                       {"at_limit", r.solution.at_limit},
                       {"layout", r.solution.found ? entry_json(r.solution.layout, 0) : ordered(nullptr)}};
    if (o.solve == PlanSolve::min_gpus) out["solution"]["ruled_out"] = r.solution.ruled_out;
  }
  const PlanStats& s = r.stats;
  out["stats"] = {{"layouts", s.layouts},
                  {"candidates", s.candidates},
                  {"invalid", s.invalid},
                  {"estimates", s.estimates},
                  {"state_estimates", s.state_estimates},
                  {"pruned_by_state", s.pruned_by_state},
                  {"pruned_by_batch", s.pruned_by_batch},
                  {"pruned_by_rank", s.pruned_by_rank},
                  {"simulated", s.simulated},
                  {"not_simulated", s.not_simulated}};
  return out.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string plan_text(const PlanResult& r) {
  const PlanOptions& o = r.options;
  // " (8 per node) of 80.00 GiB, headroom 10.0%: a layout may use 72.00 GiB (device bytes", after the GPUs.
  const std::string gpus_and_limit =
      " (" + std::to_string(o.gpus_per_node) + " per node) of " + format_bytes(o.gpu_memory_bytes, ByteUnits::binary) +
      ", headroom " + percent(o.headroom) + ": a layout may use " + format_bytes(r.limit_bytes, ByteUnits::binary) +
      " (" + std::string(name_of(o.metric)) + " bytes";
  std::string out = o.solve == PlanSolve::min_gpus
                        ? "Fewest GPUs" + gpus_and_limit + ")\n"
                        : "Plan for " + grouped_digits(o.gpus) + " GPUs" + gpus_and_limit + ", " +
                              std::string(name_of(r.profile)) + " profile)\n";
  if (o.solve == PlanSolve::none) {
    if (r.layouts.empty()) {
      out += "No layout fits.";
      if (!o.allow_uneven_pipeline && o.searches(PlanKnob::pp))
        out += " Uneven pipeline stages were not tried (allow_uneven_pipeline, --uneven).";
      out += "\n";
    } else {
      out += k_header;
      for (size_t i = 0; i < r.layouts.size(); ++i) out += row_text(r.layouts[i], std::to_string(i + 1));
      out += grouped_digits(r.n_fitting) + (r.counted_all ? " layouts fit" : " fitting layouts found") + "; the best " +
             grouped_digits(int64_t(r.layouts.size())) + " shown (ranked by least recompute, then TP·PP·CP·EP, then "
             "the largest micro batch).\n";
    }
  } else {
    static constexpr std::array<std::string_view, 4> what = {"", "Largest micro batch that fits: ",
                                                             "Longest sequence that fits: ", "Fewest GPUs: "};
    if (!r.solution.found) {
      out += std::string(what[size_t(o.solve)]) + "none found";
      if (o.solve == PlanSolve::min_gpus) out += " (none fits on " + grouped_digits(r.solution.ruled_out) + " GPUs or fewer)";
      out += "\n";
    } else {
      out += std::string(what[size_t(o.solve)]) + grouped_digits(r.solution.value);
      if (r.solution.at_limit)
        out += std::string(" (the search's limit, ") +
               (o.solve == PlanSolve::max_seq_length ? "max_seq_length" : "max_micro_batch_size") + ": more may fit)";
      out += "\n" + std::string(k_header) + row_text(r.solution.layout, "-");
    }
  }
  const PlanStats& s = r.stats;
  out += "Search " + std::string(r.complete ? "complete" : "stopped") + ": " + grouped_digits(s.estimates) +
         " estimates and " + grouped_digits(s.state_estimates) + " model-state estimates over " + grouped_digits(s.layouts) +
         " layouts";
  if (o.solve == PlanSolve::none)
    out += " (" + grouped_digits(s.candidates) + " candidates; pruned " + grouped_digits(s.pruned_by_state) + " by model state, " +
           grouped_digits(s.pruned_by_batch) + " by micro batch, " + grouped_digits(s.pruned_by_rank) + " by rank; " +
           grouped_digits(s.invalid) + " invalid)";
  out += ".\n";
  if (!r.stopped.empty()) out += r.stopped + ".\n";
  return out;
}

PlanResult plan_request(std::string_view config_json, const PlanOptions& options, std::vector<Issue> option_issues) {
  PlanResult result;
  result.issues = std::move(option_issues);
  Resolved resolved = resolve_config_json(config_json);
  for (Issue& problem : resolved.issues) result.issues.push_back(std::move(problem));
  if (!result.ok()) return result;
  return plan(resolved.config, options);
}

std::string plan_json(std::string_view config_json, std::string_view options_json) {
  try {
    PlanOptions options;
    std::vector<Issue> issues;
    const detail::JsonObject doc = detail::parse_json_object(options_json, "options", "options");
    if (doc.malformed) return issues_to_json({*doc.problem});
    if (doc.problem) issues.push_back(*doc.problem);
    if (!doc.problem) {
      for (const auto& [key, value] : doc.object.items()) {
        std::optional<FieldValue> v = detail::field_value_of_json(value);
        // Objects and mixed lists fit no option: an unknown key is still named as unknown.
        PlanOptions scratch;
        std::optional<Issue> problem = set_plan_option(scratch, key, std::monostate{});
        if (!v && !problem)
          problem = issue(key, "must be a single value or a list, got " + std::string(detail::json_type_name(value)));
        if (!problem) problem = set_plan_option(options, key, *v);
        if (problem) issues.push_back(*problem);
      }
    }
    const PlanResult result = plan_request(config_json, options, std::move(issues));
    if (!result.ok()) return issues_to_json(result.issues);
    return plan_to_json(result);
  } catch (const std::exception& e) {
    return issues_to_json({issue("plan", std::string("internal error: ") + e.what())});
  }
}

}  // namespace trainmem
