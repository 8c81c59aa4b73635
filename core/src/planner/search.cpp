// The search space (planner.hpp's table of knobs) and one candidate's evaluation: resolve() decides
// whether the candidate is valid, the page's estimator gives its memory.
#include "planner/search.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "estimate/layout.hpp"

namespace trainmem::planning {

namespace {

auto layout_key(const Layout& l) {
  return std::array<int64_t, 10>{l.footprint, l.tp, l.pp, l.vpp, l.first, l.last, l.cp, l.ep, l.etp, l.sharding};
}

int recompute_rank(RecomputeGranularity r) {
  switch (r) {
    case RecomputeGranularity::none: return 0;
    case RecomputeGranularity::full: return 2;
    default: return 1;  // selective, selective_op
  }
}

}  // namespace

Sharding sharding_of(const Config& c) {
  if (c.profile != Profile::trainmem || c.framework == Framework::megatron) return Sharding::distributed_optimizer;
  if (c.framework == Framework::deepspeed || c.framework == Framework::fsdp2) return Sharding::zero_stage;
  return Sharding::none;
}

bool rank_less(const Found& a, const Found& b) {
  const int ra = recompute_rank(a.recompute), rb = recompute_rank(b.recompute);
  if (ra != rb) return ra < rb;
  if (a.layout.footprint != b.layout.footprint) return a.layout.footprint < b.layout.footprint;
  if (a.mbs != b.mbs) return a.mbs > b.mbs;
  if (a.metric != b.metric) return a.metric < b.metric;
  return layout_key(a.layout) < layout_key(b.layout);
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

Search::Search(const Config& base, const PlanOptions& options, double limit)
    : base_(base), input_(to_input(base)), options_(options), limit_(limit) {
  if (options.searches(PlanKnob::recompute)) {
    recomputes_ = {RecomputeGranularity::none, RecomputeGranularity::selective, RecomputeGranularity::full};
  } else {
    recomputes_ = {base.recompute_granularity};
  }
  const bool searched = options.searches(PlanKnob::sharding);
  switch (sharding_of(base)) {
    case Sharding::distributed_optimizer:
      shardings_ = searched ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{base.use_distributed_optimizer};
      break;
    case Sharding::zero_stage:
      if (!searched) shardings_ = {base.zero_stage};
      else if (base.framework == Framework::deepspeed) shardings_ = {0, 1, 2, 3};
      else shardings_ = {2, 3};  // fsdp2 has stages 2 and 3 only (resolve())
      break;
    case Sharding::none: shardings_ = {0}; break;
  }
}

std::vector<Layout> Search::layouts(int64_t gpus) const {
  std::vector<Layout> out;
  const PlanOptions& o = options_;
  const Config& b = base_;
  const int64_t L = b.num_layers, gpn = o.gpus_per_node;
  std::vector<int64_t> tps;
  if (o.searches(PlanKnob::tp)) {
    for (int64_t t = 1; t <= std::min(gpn, gpus); ++t)
      if (gpus % t == 0 && splits_mlp(t, false)) tps.push_back(t);
  } else if (gpus % b.tensor_model_parallel_size == 0) {
    tps.push_back(b.tensor_model_parallel_size);
  }
  for (int64_t tp : tps) {
    const int64_t after_tp = gpus / tp;
    std::vector<int64_t> pps;
    if (o.searches(PlanKnob::pp)) {
      for (int64_t p : divisors(after_tp))
        if (p <= L) pps.push_back(p);
    } else if (after_tp % b.pipeline_model_parallel_size == 0) {
      pps.push_back(b.pipeline_model_parallel_size);
    }
    for (int64_t pp : pps) {
      const int64_t after_pp = after_tp / pp;
      std::vector<int64_t> cps;
      if (o.searches(PlanKnob::cp)) cps = divisors(after_pp);
      else if (after_pp % b.context_parallel_size == 0) cps.push_back(b.context_parallel_size);
      for (const auto& [first, last, middle] : splits(pp)) {
        for (int64_t vpp : vpps(pp, std::gcd(std::gcd(first, last), middle))) {
          for (int64_t cp : cps) {
            Layout l;
            l.tp = tp, l.pp = pp, l.vpp = vpp, l.first = first, l.last = last, l.cp = cp;
            l.dp = after_pp / cp;
            if (o.keeps(field::data_parallel_size) && l.dp != b.data_parallel_size) continue;  // DP held
            add_expert_choices(l, out);
          }
        }
      }
    }
  }
  // Groups of equal footprint in increasing order; the final ranking orders within them.
  std::stable_sort(out.begin(), out.end(),
                   [](const Layout& x, const Layout& y) { return x.footprint < y.footprint; });
  return out;
}

const std::vector<int64_t>& Search::micro_batches(int64_t dp) {
  const auto cached = mbs_cache_.find(dp);
  if (cached != mbs_cache_.end()) return cached->second;
  std::vector<int64_t> list;
  const int64_t gbs = base_.global_batch_size;
  int64_t cap = options_.max_micro_batch_size;
  if (!options_.searches(PlanKnob::micro_batch_size)) {
    list.push_back(base_.micro_batch_size);
  } else if (gbs > 0) {
    if (gbs % dp == 0)
      for (int64_t m : divisors(gbs / dp))
        if (cap <= 0 || m <= cap) list.push_back(m);
  } else {
    if (cap <= 0) cap = options_.solve == PlanSolve::max_micro_batch ? 65536 : base_.micro_batch_size;
    for (int64_t m = 1; m <= cap; ++m) list.push_back(m);
  }
  return mbs_cache_.emplace(dp, std::move(list)).first->second;
}

ConfigInput Search::input_for(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq) const {
  ConfigInput in = input_;
  const bool trainmem = base_.profile == Profile::trainmem;
  in.tensor_model_parallel_size = l.tp;
  in.pipeline_model_parallel_size = l.pp;
  in.virtual_pipeline_model_parallel_size = l.vpp ? std::optional<int64_t>(l.vpp) : std::nullopt;
  in.num_layers_in_first_pipeline_stage = l.first ? std::optional<int64_t>(l.first) : std::nullopt;
  in.num_layers_in_last_pipeline_stage = l.last ? std::optional<int64_t>(l.last) : std::nullopt;
  // A searched pipeline places its layers by the split above; a held one keeps the base's list.
  if (options_.searches(PlanKnob::pp)) in.pipeline_stage_layers.reset();
  in.context_parallel_size = l.cp;
  in.expert_model_parallel_size = l.ep;
  in.expert_tensor_parallel_size = l.etp ? std::optional<int64_t>(l.etp) : std::nullopt;
  in.data_parallel_size = l.dp;
  in.world_size = std::nullopt;  // follows from the layout (the base's may be another GPU count)
  in.sequence_parallel = l.tp > 1;
  switch (sharding_of(base_)) {
    case Sharding::distributed_optimizer: in.use_distributed_optimizer = l.sharding != 0; break;
    case Sharding::zero_stage: in.zero_stage = l.sharding; break;
    case Sharding::none: break;
  }
  in.recompute_granularity = r;
  const bool keep = r == base_.recompute_granularity;  // the base's recompute details apply
  in.recompute_method = keep ? input_.recompute_method : std::nullopt;
  in.recompute_num_layers = keep ? input_.recompute_num_layers : std::nullopt;
  in.recompute_modules = keep ? input_.recompute_modules : std::nullopt;
  in.checkpoint_reentrant = keep ? input_.checkpoint_reentrant : std::nullopt;  // full recompute's mode
  if (trainmem) {
    in.data_parallel_shard_size = std::nullopt;  // fsdp2 shards over the whole DP group
    in.pipeline_schedule = l.vpp ? PipelineSchedule::interleaved
                           : base_.pipeline_schedule == PipelineSchedule::gpipe ? PipelineSchedule::gpipe
                                                                                : PipelineSchedule::one_f_one_b;
    in.gpus_per_node = options_.gpus_per_node;
    in.gpu_memory_bytes = std::nullopt;  // only adds minimum_devices: a second estimate
  }
  in.micro_batch_size = mbs;
  if (base_.global_batch_size > 0) in.num_microbatches = std::nullopt;  // derived again
  in.seq_length = seq;
  return in;
}

StateFit Search::state_fit(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq) {
  if (!budget()) return StateFit::unknown;
  const Resolved res = resolve(input_for(l, r, mbs, seq));
  if (!res.ok()) return StateFit::invalid;
  // The factor's reserved figure: a lower bound of the simulated one, so the pruning stays sound.
  const Estimate est = estimate_training_memory(factor_only(res.config), res.config.num_microbatches, false);
  ++stats.state_estimates;
  return metric(est) <= limit_ ? StateFit::fits : StateFit::too_big;
}

namespace {
void take_figures(Found& found, const Estimate& est, double metric, bool exact) {
  found.metric = metric;
  found.allocated = est.total_bytes;
  found.reserved = est.reserved_bytes;
  found.device = est.device_bytes;
  found.state = est.weight_and_optimizer_bytes;
  found.activation = est.activation_bytes;
  found.stage = est.most_loaded_stage;
  found.exact = exact;
}
}  // namespace

Outcome Search::evaluate(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq, Found& found,
                         bool simulate) {
  if (!budget()) return Outcome::out_of_budget;
  const Resolved res = resolve(input_for(l, r, mbs, seq));
  if (!res.ok()) {
    ++stats.invalid;
    return Outcome::invalid;
  }
  // First with the allocator factor alone: its reserved and device figures are lower bounds of
  // the default's (the larger of the factor and the simulated allocator), so a candidate that
  // does not fit by them does not fit at all, and only one that does pays for the simulation.
  const Config floor = factor_only(res.config);
  const bool deferred = floor.allocator_fragmentation != res.config.allocator_fragmentation;
  found.layout = l;
  found.recompute = r;
  found.mbs = mbs;
  found.seq = seq;
  const Estimate first = estimate_training_memory(floor, res.config.num_microbatches, true);
  take_figures(found, first, metric(first), !deferred);
  ++stats.estimates;
  found.fits_by_factor = found.metric <= limit_;
  if (!found.fits_by_factor) return Outcome::too_big;
  if (simulate && !metric_final(found)) return settle(found);
  return found.metric <= limit_ ? Outcome::fits : Outcome::too_big;
}

// Even the allocated metric waits for the simulation: the estimate reports the stage of the
// largest device figure (trainmem_estimate), which the simulated allocator can change.
bool Search::metric_final(const Found& found) const { return found.exact; }

Outcome Search::settle(Found& found) {
  if (metric_final(found)) return found.metric <= limit_ ? Outcome::fits : Outcome::too_big;
  const Resolved res = resolve(input_for(found.layout, found.recompute, found.mbs, found.seq));
  if (!res.ok()) return Outcome::invalid;  // evaluate resolved the same input: not reached
  const Estimate est = estimate_training_memory(res.config, res.config.num_microbatches, true);
  take_figures(found, est, metric(est), true);
  ++stats.simulated;
  return found.metric <= limit_ ? Outcome::fits : Outcome::too_big;
}

// Even split, and with allow_uneven_pipeline a first stage, a last stage or both with fewer
// layers (1 … middle − 1) than the middle stages. Not searched: the base's own split.
std::vector<Search::Split> Search::splits(int64_t pp) const {
  const int64_t L = base_.num_layers;
  std::vector<Split> out;
  if (!options_.searches(PlanKnob::pp)) {
    // The base's split as it is; a per-stage list is kept whole by input_for (its length fixes
    // VPP, see vpps), so only the first/last sizes travel here.
    out.push_back({base_.num_layers_in_first_pipeline_stage, base_.num_layers_in_last_pipeline_stage,
                   detail::PipelineLayout(base_).middle});
    return out;
  }
  if (pp == 1 || L % pp == 0) out.push_back({0, 0, L / pp});
  if (!options_.allow_uneven_pipeline || pp < 2) return out;
  for (int64_t m = 1; m <= L; ++m) {
    const int64_t one = L - (pp - 1) * m;  // layers left for a single smaller end stage
    if (one >= 1 && one < m) {
      out.push_back({one, 0, m});
      out.push_back({0, one, m});
    }
    if (pp < 3) continue;
    const int64_t both = L - (pp - 2) * m;
    for (int64_t f = std::max<int64_t>(1, both - m + 1); f <= std::min(m - 1, both - 1); ++f)
      out.push_back({f, both - f, m});
  }
  return out;
}

// No interleaving, or v ≥ 2 chunks per stage, v dividing every stage's layer count
// (`layers`: the gcd of the counts).
std::vector<int64_t> Search::vpps(int64_t pp, int64_t layers) const {
  // A held per-stage list has one entry per virtual stage: its VPP goes with it.
  const bool list_held = !base_.pipeline_stage_layers.empty() && !options_.searches(PlanKnob::pp);
  if (!options_.searches(PlanKnob::vpp) || list_held) return {base_.virtual_pipeline_model_parallel_size};
  std::vector<int64_t> out{0};
  if (pp > 1)
    for (int64_t v : divisors(layers))
      if (v >= 2) out.push_back(v);
  return out;
}

void Search::add_expert_choices(Layout l, std::vector<Layout>& out) const {
  const Config& b = base_;
  std::vector<int64_t> eps{1}, etps{0};
  if (b.is_moe()) {
    const int64_t gpus = l.tp * l.pp * l.cp * l.dp;
    if (options_.searches(PlanKnob::ep)) {
      eps.clear();
      for (int64_t e : divisors(b.num_moe_experts))
        if (e <= gpus) eps.push_back(e);
    } else {
      eps = {b.expert_model_parallel_size};
    }
    etps.clear();
    if (options_.searches(PlanKnob::etp)) {
      for (int64_t t = 1; t <= options_.gpus_per_node; ++t)
        if (splits_mlp(t, true)) etps.push_back(t);
    } else {
      etps.push_back(b.expert_tensor_parallel_size == b.tensor_model_parallel_size ? l.tp
                                                                                   : b.expert_tensor_parallel_size);
    }
  }
  for (int64_t e : eps) {
    for (int64_t te : etps) {
      // resolve()'s rule, applied early only to save its cost: EP·ETP divides DP·TP·CP.
      if (b.is_moe() && (l.dp * l.tp * l.cp) % (e * te) != 0) continue;
      for (int64_t s : shardings_) {
        Layout c = l;
        c.ep = e, c.etp = te, c.sharding = s;
        c.footprint = c.tp * c.pp * c.cp * c.ep;
        out.push_back(c);
      }
    }
  }
}

// resolve()'s rule (Megatron's column-parallel linears divide their output evenly), applied
// early only to keep such sizes out of the search space.
bool Search::splits_mlp(int64_t t, bool experts) const {
  const Config& b = base_;
  if (experts) return b.moe_ffn_hidden_size % t == 0;
  return b.ffn_hidden_size % t == 0 && b.moe_shared_expert_intermediate_size % t == 0;
}

double Search::metric(const Estimate& est) const {
  switch (options_.metric) {
    case PlanMetric::reserved: return est.reserved_bytes;
    case PlanMetric::device: return est.device_bytes;
    // Allocated: the largest of any stage, which no allocator figure changes, so the factor's
    // pass gives it exactly and the pruning stays sound; the most-loaded stage is chosen by device
    // figure and may hold less (Estimate::largest_stage_allocated_bytes).
    default: return std::max(est.total_bytes, est.largest_stage_allocated_bytes);
  }
}

// False once max_evaluations is spent or on_progress asked to stop; calls on_progress every
// progress_every evaluations.
bool Search::budget() {
  if (out_of_budget) return false;
  const int64_t done = stats.evaluations();
  if (done >= options_.max_evaluations) {
    out_of_budget = true;
    return false;
  }
  if (options_.on_progress && done > 0 && done % options_.progress_every == 0 && done != reported_) {
    reported_ = done;
    if (!options_.on_progress(stats)) {
      out_of_budget = cancelled = true;
      return false;
    }
  }
  return true;
}

}  // namespace trainmem::planning
