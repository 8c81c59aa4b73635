// What to change when a run does not fit (estimate.hpp, suggest_changes; full_estimate fills a
// result's suggestions with it): single changes of the
// config, least disruptive first, each written over the config, resolved and estimated again, and
// kept only when it fits. The GPU count stays: a change of TP, PP or CP takes its factor from DP.
#include <algorithm>
#include <cmath>
#include <optional>

#include "trainmem/estimate.hpp"
#include "trainmem/field_names.hpp"

namespace trainmem {
namespace {

struct Candidate {
  int rank;                   // disruption class: recompute, micro batch, sharding, layout, offload
  std::vector<std::pair<std::string, FieldValue>> fields;
  std::string what;
};

bool holds(std::span<const std::string> held, std::string_view field) {
  return std::find(held.begin(), held.end(), field) != held.end();
}

// The changes worth trying for `c`, in the order of planner.hpp's ranking: recompute before micro
// batch before sharding before TP/PP/CP before offload.
std::vector<Candidate> candidates(const Config& c) {
  std::vector<Candidate> out;
  using R = RecomputeGranularity;
  if (c.recompute_granularity == R::none || c.recompute_granularity == R::selective_op)
    out.push_back({0, {{std::string(field::recompute_granularity), std::string("selective")}}, "selective recompute (activation checkpointing of attention)"});
  if (c.recompute_granularity != R::full)
    // recompute_modules applies to selective recompute only: unset with it.
    out.push_back({0, {{std::string(field::recompute_granularity), std::string("full")}, {std::string(field::recompute_modules), std::monostate{}}},
                   "full recompute (activation checkpointing of every layer)"});
  // With a global batch the microbatch count follows from it (global / (micro × DP)): a change of
  // the micro batch or of DP unsets the count it had, which would contradict the change.
  const auto with_count = [&](std::vector<std::pair<std::string, FieldValue>> fields) {
    if (c.global_batch_size > 0) fields.push_back({std::string(field::num_microbatches), std::monostate{}});
    return fields;
  };
  // A smaller micro batch: suggest_changes finds the largest that fits by bisection (memory grows
  // with it), among the divisors of the per-replica batch when the global batch is given.
  if (c.micro_batch_size > 1) out.push_back({1, with_count({{std::string(field::micro_batch_size), 1.0}}), "micro batch"});
  // Sharding: Megatron's distributed optimizer (and the reference profiles'), or the ZeRO stage.
  const bool zero = c.profile == Profile::trainmem && (c.framework == Framework::deepspeed || c.framework == Framework::fsdp2);
  if (zero) {
    for (int64_t stage = c.zero_stage + 1; stage <= 3; ++stage)
      out.push_back({2, {{std::string(field::zero_stage), double(stage)}}, "ZeRO stage " + std::to_string(stage)});
  } else if ((c.profile != Profile::trainmem || c.framework == Framework::megatron) && !c.use_distributed_optimizer) {
    out.push_back({2, {{std::string(field::use_distributed_optimizer), true}}, "the distributed optimizer (optimizer state sharded over DP)"});
  }
  // Model parallelism at the same GPU count: its factor comes out of DP.
  const std::pair<FieldName, int64_t> layouts[] = {
      {field::tensor_model_parallel_size, c.tensor_model_parallel_size},
      {field::pipeline_model_parallel_size, c.pipeline_model_parallel_size},
      {field::context_parallel_size, c.context_parallel_size}};
  // At most six doublings each, TP within a node (its all-reduces), PP up to one layer a stage.
  const int64_t limits[] = {c.gpus_per_node, c.num_layers, int64_t(1) << 20};
  for (size_t k = 0; k < std::size(layouts); ++k)
    for (int64_t f = 2; f <= c.data_parallel_size && f <= 64; f *= 2) {
      const auto& [field, now] = layouts[k];
      if (c.data_parallel_size % f != 0 || now * f > limits[k]) break;
      std::vector<std::pair<std::string, FieldValue>> fields = {
          {std::string(field), double(now * f)}, {std::string(field::data_parallel_size), double(c.data_parallel_size / f)}};
      if (field.text == field::tensor_model_parallel_size.text) fields.push_back({std::string(field::sequence_parallel), true});
      // A shard group of the whole DP group (FSDP2's default) stays the whole group.
      if (c.data_parallel_shard_size == c.data_parallel_size) fields.push_back({std::string(field::data_parallel_shard_size), std::monostate{}});
      const std::string name = field.text == field::tensor_model_parallel_size.text ? "TP" : field.text == field::pipeline_model_parallel_size.text ? "PP" : "CP";
      out.push_back({3, with_count(std::move(fields)),
                     name + " " + std::to_string(now * f) + " (DP " + std::to_string(c.data_parallel_size / f) + ", same GPUs)"});
    }
  if (c.profile == Profile::trainmem) {
    if (c.optimizer_offload_fraction < 1 && (c.framework == Framework::megatron || c.framework == Framework::deepspeed))
      out.push_back({4, {{std::string(field::optimizer_offload_fraction), 1.0}}, "optimizer states offloaded to the CPU"});
    if (!c.activation_offload)
      out.push_back({4, {{std::string(field::activation_offload), true}}, "activations offloaded to the CPU"});
  }
  return out;
}

}  // namespace

std::vector<Suggestion> suggest_changes(const Config& config, std::span<const std::string> held, size_t max_count) {
  if (!(config.gpu_memory_bytes > 0) || max_count == 0) return {};
  return suggest_changes(config, estimate_training_memory(config, config.num_microbatches), held, max_count);
}

std::vector<Suggestion> suggest_changes(const Config& config, const Estimate& now,
                                        std::span<const std::string> held, size_t max_count) {
  std::vector<Suggestion> out;
  if (!(config.gpu_memory_bytes > 0) || max_count == 0) return out;
  // Below the headroom line (fit_verdict): nothing to suggest. A figure within the capacity but
  // in the headroom band gets suggestions too, and each must bring it below the line.
  const double limit = fit_verdict(0, config.gpu_memory_bytes, 0).limit_bytes;
  if (compared_figure(config, now) <= limit) return out;
  const ConfigInput base = to_input(config);
  std::vector<std::string> kinds;  // the kinds of change already suggested
  // The figure of `c` with some fields written over it; nothing when a rule rejects the change.
  auto figure_with = [&](const std::vector<std::pair<std::string, FieldValue>>& fields) -> std::optional<double> {
    ConfigInput input = base;
    for (const auto& [field, value] : fields)
      if (set_field(input, field, value)) return std::nullopt;
    const Resolved resolved = resolve(input);
    if (!resolved.ok()) return std::nullopt;  // the change breaks a rule (heads not divisible by TP, ...)
    const Config& changed = resolved.config;
    // The factor's figure first (factor_only: a lower bound of the default's): a change that does
    // not fit by it does not fit at all, and only one that does pays for the simulated allocator.
    // The figure of a change that does not fit is never shown, so the answer is the same.
    const Config floor = factor_only(changed);
    if (floor.allocator_fragmentation != changed.allocator_fragmentation) {
      const double lower = compared_figure(floor, estimate_training_memory(floor, floor.num_microbatches));
      if (lower > limit) return lower;
    }
    return compared_figure(changed, estimate_training_memory(changed, changed.num_microbatches));
  };
  const auto fits = [&](const std::optional<double>& figure) { return figure && *figure <= limit; };
  for (Candidate candidate : candidates(config)) {
    if (std::any_of(candidate.fields.begin(), candidate.fields.end(),
                    [&](const auto& f) { return holds(held, f.first); }))
      continue;
    std::optional<double> fit;
    if (candidate.rank == 1) {
      // The largest micro batch below the config's that fits: bisection over the valid ones.
      std::vector<int64_t> valid;
      const int64_t per_replica = config.global_batch_size > 0 ? config.global_batch_size / config.data_parallel_size : 0;
      if (per_replica > 0) {
        for (int64_t d = 1; d * d <= per_replica; ++d)
          if (per_replica % d == 0) {
            if (d < config.micro_batch_size) valid.push_back(d);
            if (per_replica / d != d && per_replica / d < config.micro_batch_size) valid.push_back(per_replica / d);
          }
        std::sort(valid.begin(), valid.end());
      }
      const int64_t count = per_replica > 0 ? int64_t(valid.size()) : config.micro_batch_size - 1;
      auto value_at = [&](int64_t i) { return per_replica > 0 ? valid[size_t(i)] : i + 1; };
      int64_t lo = 0, hi = count - 1, best = -1;  // the last index that fits
      auto fields_at = [&](int64_t i) {  // the candidate's fields with the micro batch at i
        auto fields = candidate.fields;
        fields.front().second = double(value_at(i));
        return fields;
      };
      while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const std::optional<double> figure = figure_with(fields_at(mid));
        if (fits(figure)) best = mid, fit = figure, lo = mid + 1;
        else hi = mid - 1;
      }
      if (best < 0) continue;
      candidate.fields = fields_at(best);
      candidate.what = "micro batch " + std::to_string(value_at(best));
    } else {
      fit = figure_with(candidate.fields);
    }
    if (!fits(fit)) continue;
    const double figure = *fit;
    // Of a kind, only its least change: a smaller micro batch after the largest that fits, a
    // higher ZeRO stage or a larger TP after the first that fits, adds nothing.
    const std::string kind = candidate.rank <= 2 ? std::to_string(candidate.rank) : candidate.fields.front().first;
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
    kinds.push_back(kind);
    out.push_back({candidate.rank, candidate.fields, figure, candidate.what});
    if (out.size() == max_count) break;
  }
  return out;
}

}  // namespace trainmem
