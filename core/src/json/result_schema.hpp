// A result's shape, declared once: every key of the document a result is, in its order, with the
// value it holds. Three writers walk it (issue 30 item 3, "one declared result schema"):
//   estimate_to_json (json_io.cpp)      the JSON document the CLI prints;
//   write_result_slots (slots.cpp)      the page's numbers and text lines (slots.hpp);
//   result_schema_text (slots.cpp)      the walk itself as text, which web/js/slots.js decodes the
//                                       numbers with and tests/wasm/dts.test.mjs holds the .d.ts to.
// Adding a line to a result is one call here; nothing else names its key.
//
// An `Out` has one member per kind of node (the names the schema text uses):
//   figure(key, x)            a number, null when not finite (json_number)
//   count(key, x)             a whole number: a count, an index, a layer number
//   flag(key, b)              true or false
//   text(key, s)              a string; text_or_null(key, s): null when empty
//   entry(key, table, i, s)   the i-th entry s of one of slot_tables()'s tables
//   object(key, type, f)      an object (f writes its keys); type: its interface in trainmem.d.ts
//   array(key, type, xs, f)   a list, f(x, i) writes each element under the key ""
//   maybe(key, absent, on, f) f writes `key` when `on`; else null (Absent::null) or nothing
//   branch(name, on, f)       f writes keys into this object when `on` (the trainmem profile's)
//   keyed(key, type, xs, k, f) an object whose keys are entries of a table: k(i) names x's key
//   config(key, config)       a resolved config, one key per field (field_specs order)
//   fields(key, pairs)        some fields' values, as a config has them
// The schema writer calls every f once, with a default-constructed element, so f may read only its
// arguments and the config and estimate it was given (default ones for the schema).
#pragma once

#include <array>
#include <bit>
#include <span>
#include <string_view>

#include "json/result_rows.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"

namespace trainmem::detail {

enum class Absent : uint8_t { null, omitted };

// A component row as the result lists it: a model-state component, or the activation after them.
struct ComponentRow {
  size_t kind = 0;  // index into the component / component_kind tables (ComponentKind; count: activation)
  const ModelStateComponent* state = nullptr;  // null: the activation row
  double memory_bytes = 0;
};
inline constexpr std::string_view k_activation_component = "activation";
inline std::string_view component_row_name(size_t kind) {
  return kind < size_t(ComponentKind::count) ? component_name(ComponentKind(kind)) : k_activation_component;
}
inline std::string_view component_row_kind(size_t kind) {
  return kind < size_t(ComponentKind::count) ? component_kind_name(ComponentKind(kind)) : k_activation_component;
}

// The keys of "verdicts": the trainmem figures (k_figure_names), then the reference profiles' one.
inline constexpr std::array<std::string_view, 4> k_verdict_keys = {k_figure_names[0], k_figure_names[1],
                                                                   k_figure_names[2], "total"};

template <class Out>
void walk_moments(Out& out, std::string_view key, const Moments& m) {
  out.object(key, "Moments", [&] {
    out.figure("forward", m.forward);
    out.figure("backward", m.backward);
    out.figure("optimizer_step", m.optimizer_step);
    out.entry("peak", "moment", size_t(m.peak_moment), moment_name(m.peak_moment));
    out.figure("peak_activation_bytes", m.peak_activation_bytes);
    out.figure("peak_temporary_bytes", m.peak_temporary_bytes);
    // The job's moments outside the step (0 where not modelled) and the job's peak among all six.
    out.figure("loading", m.loading);
    out.figure("checkpoint_save", m.checkpoint_save);
    out.figure("evaluation", m.evaluation);
    out.entry("job_peak", "job_moment", size_t(m.job_peak()), job_moment_name(m.job_peak()));
  });
}

template <class Out>
void walk_part(Out& out, std::string_view key, const PartBytes& part) {
  out.object(key, "PartBytes", [&] {
    out.figure("dense", part.dense);
    out.figure("embedding", part.embedding);
    out.figure("expert", part.expert);
    out.figure("total", part.total());
  });
}

// Each figure's verdict against the capacity (estimate.hpp FitVerdict), keyed by its figure.
template <class Out>
void walk_verdicts(Out& out, std::string_view key, std::span<const FitVerdict> verdicts, bool trainmem) {
  out.keyed(
      key, "FitVerdict", "verdict_key", k_verdict_keys, verdicts,
      [&](size_t i) { return trainmem ? i : k_verdict_keys.size() - 1; },
      [&](const FitVerdict& v, size_t) {
        out.object("", "FitVerdict", [&] {
          out.entry("fit", "fit", size_t(v.fit), fit_name(v.fit));
          out.entry("reason", "fit_reason", size_t(v.reason), fit_reason_name(v.reason));
          out.figure("figure_bytes", v.figure_bytes);
          out.figure("capacity_bytes", v.capacity_bytes);
          out.figure("headroom", v.headroom);
          out.figure("spread", v.spread);
          out.figure("limit_bytes", v.limit_bytes);
          out.figure("upper_bytes", v.upper_bytes);
        });
      });
}

// The trainmem profile's figures besides the model state.
template <class Out>
void walk_trainmem_figures(Out& out, const Config& config, const FullEstimate& est) {
  out.object("cpu", "CpuBytes", [&] {
    const auto rows = est.cpu.rows();
    for (size_t i = 0; i < rows.size(); ++i) out.figure(k_cpu_rows[i], *rows[i]);
  });
  out.figure("allocated_bytes", est.total_bytes);
  out.figure("reserved_bytes", est.reserved_bytes);
  out.figure("device_bytes", est.device_bytes);
  out.object("overheads", "Overheads", [&] {
    out.figure("allocator_bytes", allocator_bytes(est));
    out.figure("cuda_context_bytes", config.cuda_context_bytes);
    out.figure("nccl_bytes", est.nccl.bytes());
    out.count("nccl_communicators", est.nccl.count);
    out.figure("workspace_bytes", config.workspace_bytes);
    out.array("nccl_groups", "NcclGroup", std::span(est.nccl.list).first(size_t(est.nccl.count)),
              [&](const NcclCommunicator& g, size_t) {
                out.object("", "NcclGroup", [&] {
                  out.text("name", g.name);
                  out.count("gpus", double(g.gpus));
                  out.count("gpus_on_node", double(g.gpus_on_node));
                  out.figure("bytes", g.bytes);
                });
              });
    out.array("lines", "OverheadLine", std::span(est.overhead_lines).first(size_t(est.n_overhead_lines)),
              [&](const OverheadLine& line, size_t) {
                out.object("", "OverheadLine", [&] {
                  out.entry("key", "overhead", index_of(k_overhead_keys, line.key), line.key);
                  out.figure("bytes", line.bytes);
                  out.entry("adds_to", "figure", index_of(k_figure_names, line.adds_to), line.adds_to);
                });
              });
  });
  out.count("most_loaded_stage", double(est.most_loaded_stage));
  walk_moments(out, "moments", est.moments);
  out.figure("minimum_devices", est.minimum_devices > 0 ? est.minimum_devices : k_not_a_number);
  out.maybe("deepspeed_estimator", Absent::omitted, est.deepspeed_gpu_bytes > 0, [&] {
    out.object("deepspeed_estimator", "DeepSpeedEstimator", [&] {
      out.figure("gpu_bytes", est.deepspeed_gpu_bytes);
      out.figure("cpu_bytes", est.deepspeed_cpu_bytes);
    });
  });
  const Confidence& conf = est.confidence;
  out.maybe("confidence", Absent::null, conf.known, [&] {
    out.object("confidence", "Confidence", [&] {
      out.text("group", confidence_group_name(conf.group.key));
      out.text("run_group", confidence_group_name(conf.run));
      out.entry("match", "confidence_match", size_t(conf.match), confidence_match_name(conf.match));
      out.count("points", conf.group.points);
      out.figure("median_abs_error", conf.group.median_abs_error);
      out.figure("p90_abs_error", conf.group.p90_abs_error);
      out.figure("median_signed_error", conf.group.median_signed_error);
      out.flag("leans_low", leans_low(conf.group));
      out.text("source", k_confidence_source);
    });
  });
}

// The whole result of a resolved config and its full estimate, in the JSON document's order.
template <class Out>
void walk_result(Out& out, const Config& config, const FullEstimate& est, const Trace* trace) {
  const bool trainmem = est.profile == Profile::trainmem;
  out.flag("ok", true);
  out.entry("profile", "profile", size_t(est.profile), name_of(est.profile));
  out.figure("weight_and_optimizer_bytes", est.weight_and_optimizer_bytes);
  out.figure("activation_bytes", est.has_activation ? est.activation_bytes : k_not_a_number);
  out.figure("total_bytes", est.total_bytes);
  // The model-state components, then the activation as one more row when there is one.
  std::array<ComponentRow, std::tuple_size_v<decltype(est.components)> + 1> rows{};
  size_t n_rows = 0;
  for (int i = 0; i < est.n_components; ++i) {
    const ModelStateComponent& c = est.components[size_t(i)];
    rows[n_rows++] = {size_t(c.kind), &c, c.memory_bytes};
  }
  if (est.has_activation) rows[n_rows++] = {size_t(ComponentKind::count), nullptr, est.activation_bytes};
  out.array("components", "Component", std::span(rows).first(n_rows), [&](const ComponentRow& row, size_t) {
    out.object("", "Component", [&] {
      out.entry("name", "component", row.kind, component_row_name(row.kind));
      out.entry("kind", "component_kind", row.kind, component_row_kind(row.kind));
      static const ModelStateComponent none{};
      const ModelStateComponent& c = row.state ? *row.state : none;
      out.branch("model_state", row.state != nullptr, [&] {
        for (const auto& [key, member] : k_component_figures) out.figure(key, c.*member);
      });
      out.figure("memory_bytes", row.memory_bytes);
    });
  });
  out.object("state", "StateBreakdown", [&] {
    const auto parts = est.state.rows();
    for (size_t i = 0; i < parts.size(); ++i) walk_part(out, k_state_rows[i], *parts[i]);
  });
  out.figure("cpu_bytes", est.cpu_bytes);
  out.branch("trainmem", trainmem, [&] { walk_trainmem_figures(out, config, est); });
  out.maybe("verdicts", Absent::omitted, est.n_verdicts > 0, [&] {
    walk_verdicts(out, "verdicts", std::span(est.verdicts).first(size_t(est.n_verdicts)), trainmem);
  });
  out.maybe("capacity_fits", Absent::omitted, !est.capacity_fits.empty(), [&] {
    out.array("capacity_fits", "CapacityFit", std::span(est.capacity_fits), [&](const CapacityFit& fit, size_t) {
      out.object("", "CapacityFit", [&] {
        out.figure("capacity_bytes", fit.capacity_bytes);
        walk_verdicts(out, "verdicts", std::span(fit.verdicts).first(size_t(fit.n_figures)), trainmem);
      });
    });
  });
  out.object("params", "ParamCounts", [&] {
    for (const auto& [key, member] : k_param_rows) out.figure(key, est.params.*member);
  });
  out.object("layers", "LayerCounts", [&] {
    out.count("total", double(est.layers.total));
    out.count("dense", double(est.layers.dense));
    out.count("moe", double(est.layers.moe));
  });
  out.array("stages", "Stage", std::span(est.stages), [&](const StageParams& s, size_t r) {
    out.object("", "Stage", [&] {
      out.count("stage", double(r));
      out.count("num_layers", double(s.num_layers));
      out.figure("dense_params", s.dense);
      out.figure("routed_params", s.routed);
      out.figure("weight_and_optimizer_bytes", s.weight_and_optimizer_bytes);
      // The reference formulas compute activations for the first stage only.
      out.figure("activation_bytes", trainmem                          ? s.activation_bytes
                                      : r == 0 && est.has_activation ? est.activation_bytes
                                                                     : k_not_a_number);
      out.branch("trainmem", trainmem, [&] {
        out.count("microbatches_in_flight", double(s.microbatches_in_flight));
        walk_moments(out, "moments", s.moments);
        out.figure("total_bytes", s.total_bytes);
        out.figure("allocated_bytes", s.total_bytes);
        out.figure("reserved_bytes", s.reserved_bytes);
        out.figure("device_bytes", s.device_bytes);
        out.object("overhead_bytes", "StageOverheads", [&] {
          out.figure("reserved", s.reserved_overhead_bytes);
          out.figure("device", s.device_overhead_bytes);
        });
      });
    });
  });
  std::array<size_t, size_t(Assumption::count)> assumptions{};
  size_t n_assumptions = 0;
  for (size_t i = 0; i < size_t(Assumption::count); ++i)
    if (est.has(Assumption(i))) assumptions[n_assumptions++] = i;
  out.array("assumptions", "", std::span(assumptions).first(n_assumptions), [&](size_t a, size_t) {
    out.entry("", "assumption", a, assumption_text(Assumption(a)));
  });
  // What to change when it does not fit: each change's fields, the figure it gives (device bytes
  // in the trainmem profile, the total in the reference ones) and what it is.
  out.array("suggestions", "Suggestion", std::span(est.suggestions), [&](const Suggestion& s, size_t) {
    out.object("", "Suggestion", [&] {
      out.fields("fields", s.fields);
      out.branch("trainmem", trainmem, [&] { out.figure("device_bytes", s.figure_bytes); });
      out.branch("reference", !trainmem, [&] { out.figure("total_bytes", s.figure_bytes); });
      out.text("what", s.what);
      out.count("rank", s.rank);
    });
  });
  out.text_or_null("report", est.reference_line);
  out.text("summary", format_training_memory_estimate(est, "GB"));
  out.config("config", config);
  out.maybe("trace", Absent::omitted, trace != nullptr, [&] {
    static const Trace none;
    out.array("trace", "TraceEntry", std::span(trace ? *trace : none), [&](const TraceEntry& e, size_t) {
      out.object("", "TraceEntry", [&] {
        out.text("name", e.name);
        out.figure("value", e.value);
        out.text("formula", e.formula);
      });
    });
  });
}

}  // namespace trainmem::detail
