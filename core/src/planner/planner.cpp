// The planner (planner.hpp): enumerate layouts, let resolve() decide which are valid, estimate
// them with the page's estimator, keep those that fit, rank them; and three solvers on top.
#include "trainmem/planner.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "internal.hpp"
#include "json/json_values.hpp"
#include "trainmem/json_io.hpp"
#include "trainmem/report.hpp"

namespace trainmem {
namespace {

constexpr std::array<std::string_view, 4> k_metrics = {"auto", "allocated", "reserved", "device"};
constexpr std::array<std::string_view, 9> k_knobs = {"tp", "pp", "vpp", "cp", "ep", "etp", "sharding",
                                                     "recompute", "micro_batch_size"};
constexpr std::array<std::string_view, 4> k_solves = {"none", "max-micro-batch", "max-seq-length",
                                                      "min-gpus"};
static_assert(k_metrics.size() == size_t(PlanMetric::count) && k_knobs.size() == size_t(PlanKnob::count) &&
                  k_solves.size() == size_t(PlanSolve::count),
              "one name per enumerator");

}  // namespace

template <> std::span<const std::string_view> enum_names<PlanMetric>() { return k_metrics; }
template <> std::span<const std::string_view> enum_names<PlanKnob>() { return k_knobs; }
template <> std::span<const std::string_view> enum_names<PlanSolve>() { return k_solves; }

namespace {

// ---- Search space ----

// One parallel layout with one sharding choice. etp = 0 leaves expert_tensor_parallel_size
// unset (dense models: it follows TP). first/last = 0: even split.
struct Layout {
  int64_t tp = 1, pp = 1, vpp = 0, first = 0, last = 0, cp = 1, ep = 1, etp = 0, dp = 1;
  int64_t sharding = 0;  // use_distributed_optimizer 0/1, or the ZeRO stage
  int64_t footprint = 1;  // TP·PP·CP·EP
};

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

// A candidate that was estimated: its layout, policy, micro batch, sequence and figures.
struct Found {
  Layout layout;
  RecomputeGranularity recompute = RecomputeGranularity::none;
  int64_t mbs = 1, seq = 1;
  double metric = 0, allocated = 0, reserved = 0, device = 0, state = 0, activation = 0;
  int64_t stage = 0;
};

// The documented ranking: least recompute, smallest footprint, largest micro batch, least
// memory, then the layout's fields in order.
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

enum class Outcome : uint8_t { fits, too_big, invalid, out_of_budget };
enum class StateFit : uint8_t { unknown, fits, too_big, invalid };

class Search {
 public:
  Search(const Config& base, const PlanOptions& options, double limit)
      : base_(base), input_(to_input(base)), options_(options), limit_(limit) {
    if (options.searches(PlanKnob::recompute)) {
      recomputes_ = {RecomputeGranularity::none, RecomputeGranularity::selective, RecomputeGranularity::full};
    } else {
      recomputes_ = {base.recompute_granularity};
    }
    const bool searched = options.searches(PlanKnob::sharding);
    if (base.profile != Profile::trainmem || base.framework == Framework::megatron)
      shardings_ = searched ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{base.use_distributed_optimizer};
    else if (base.framework == Framework::deepspeed)
      shardings_ = searched ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{base.zero_stage};
    else if (base.framework == Framework::fsdp2)
      shardings_ = searched ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{base.zero_stage};
    else
      shardings_ = {0};
  }

  PlanStats stats;
  bool out_of_budget = false;  // stopped: max_evaluations reached or cancelled
  bool cancelled = false;      // stopped by on_progress
  const std::vector<RecomputeGranularity>& recomputes() const { return recomputes_; }
  const std::vector<int64_t>& shardings() const { return shardings_; }

  // Every layout × sharding choice on `gpus` GPUs, in increasing footprint.
  std::vector<Layout> layouts(int64_t gpus) const {
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

  // Micro batch sizes to try on `dp` data-parallel ranks, ascending.
  const std::vector<int64_t>& micro_batches(int64_t dp) {
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

  // The base config with the candidate's fields replaced.
  ConfigInput input_for(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq) const {
    ConfigInput in = input_;
    const bool trainmem = base_.profile == Profile::trainmem;
    in.tensor_model_parallel_size = l.tp;
    in.pipeline_model_parallel_size = l.pp;
    in.virtual_pipeline_model_parallel_size = l.vpp ? std::optional<int64_t>(l.vpp) : std::nullopt;
    in.num_layers_in_first_pipeline_stage = l.first ? std::optional<int64_t>(l.first) : std::nullopt;
    in.num_layers_in_last_pipeline_stage = l.last ? std::optional<int64_t>(l.last) : std::nullopt;
    in.context_parallel_size = l.cp;
    in.expert_model_parallel_size = l.ep;
    in.expert_tensor_parallel_size = l.etp ? std::optional<int64_t>(l.etp) : std::nullopt;
    in.data_parallel_size = l.dp;
    in.sequence_parallel = l.tp > 1;
    if (trainmem && (base_.framework == Framework::deepspeed || base_.framework == Framework::fsdp2))
      in.zero_stage = l.sharding;
    else if (!trainmem || base_.framework == Framework::megatron)
      in.use_distributed_optimizer = l.sharding != 0;
    in.recompute_granularity = r;
    const bool keep = r == base_.recompute_granularity;  // the base's recompute details apply
    in.recompute_method = keep ? input_.recompute_method : std::nullopt;
    in.recompute_num_layers = keep ? input_.recompute_num_layers : std::nullopt;
    in.recompute_modules = keep ? input_.recompute_modules : std::nullopt;
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

  // Model state alone (a lower bound of the full estimate), once per layout.
  StateFit state_fit(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq) {
    if (!budget()) return StateFit::unknown;
    const Resolved res = resolve(input_for(l, r, mbs, seq));
    if (!res.ok()) return StateFit::invalid;
    const Estimate est = estimate_training_memory(res.config, res.config.num_microbatches, false);
    ++stats.state_estimates;
    return metric(est) <= limit_ ? StateFit::fits : StateFit::too_big;
  }

  Outcome evaluate(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq, Found& found) {
    if (!budget()) return Outcome::out_of_budget;
    const Resolved res = resolve(input_for(l, r, mbs, seq));
    if (!res.ok()) {
      ++stats.invalid;
      return Outcome::invalid;
    }
    const Estimate est = estimate_training_memory(res.config, res.config.num_microbatches, true);
    ++stats.estimates;
    found.layout = l;
    found.recompute = r;
    found.mbs = mbs;
    found.seq = seq;
    found.metric = metric(est);
    found.allocated = est.total_bytes;
    found.reserved = est.reserved_bytes;
    found.device = est.device_bytes;
    found.state = est.weight_and_optimizer_bytes;
    found.activation = est.activation_bytes;
    found.stage = est.most_loaded_stage;
    return found.metric <= limit_ ? Outcome::fits : Outcome::too_big;
  }

  const Config& base() const { return base_; }

 private:
  struct Split {
    int64_t first, last, middle;
  };

  // Even split, and with allow_uneven_pipeline a first stage, a last stage or both with fewer
  // layers (1 … middle − 1) than the middle stages.
  std::vector<Split> splits(int64_t pp) const {
    const int64_t L = base_.num_layers;
    std::vector<Split> out;
    if (!options_.searches(PlanKnob::pp)) {
      const int64_t f = base_.num_layers_in_first_pipeline_stage, l = base_.num_layers_in_last_pipeline_stage;
      const int64_t rest = pp - (f ? 1 : 0) - (l ? 1 : 0);
      out.push_back({f, l, rest > 0 ? (L - f - l) / rest : 0});
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
  std::vector<int64_t> vpps(int64_t pp, int64_t layers) const {
    if (!options_.searches(PlanKnob::vpp)) return {base_.virtual_pipeline_model_parallel_size};
    std::vector<int64_t> out{0};
    if (pp > 1)
      for (int64_t v : divisors(layers))
        if (v >= 2) out.push_back(v);
    return out;
  }

  void add_expert_choices(Layout l, std::vector<Layout>& out) const {
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
  bool splits_mlp(int64_t t, bool experts) const {
    const Config& b = base_;
    if (experts) return b.moe_ffn_hidden_size % t == 0;
    return b.ffn_hidden_size % t == 0 && b.moe_shared_expert_intermediate_size % t == 0;
  }

  double metric(const Estimate& est) const {
    switch (options_.metric) {
      case PlanMetric::reserved: return est.reserved_bytes;
      case PlanMetric::device: return est.device_bytes;
      default: return est.total_bytes;
    }
  }

  bool budget() {
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

  const Config& base_;
  const ConfigInput input_;
  const PlanOptions& options_;
  const double limit_;
  std::vector<RecomputeGranularity> recomputes_;
  std::vector<int64_t> shardings_;
  std::map<int64_t, std::vector<int64_t>> mbs_cache_;  // by DP; references stay valid
  int64_t reported_ = 0;  // evaluations at the last on_progress call
};

// The best `keep` layouts that fit on `gpus` GPUs, best first, and how many fit. Candidates are
// visited in ranking order of (recompute, footprint); with pruning the search ends with the
// first such group that brings the fits to `keep`.
struct Listing {
  std::vector<Found> fits;
  int64_t n_fitting = 0;
  bool cut_by_rank = false;
};

// Keeps the best `keep` of `fits`, in ranking order.
void keep_best(std::vector<Found>& fits, int64_t keep) {
  if (int64_t(fits.size()) > keep) {
    std::nth_element(fits.begin(), fits.begin() + keep, fits.end(), rank_less);
    fits.resize(size_t(keep));
  }
  std::sort(fits.begin(), fits.end(), rank_less);
}

Listing list_fits(Search& search, int64_t gpus, int64_t keep, bool prune) {
  Listing out;
  const std::vector<Layout> layouts = search.layouts(gpus);
  const auto& recomputes = search.recomputes();
  const int64_t seq = search.base().seq_length;
  search.stats.layouts += int64_t(layouts.size());
  int64_t total = 0, visited = 0;
  for (const Layout& l : layouts) total += int64_t(search.micro_batches(l.dp).size() * recomputes.size());
  search.stats.candidates += total;

  std::vector<StateFit> state;
  state.resize(layouts.size(), StateFit::unknown);
  int64_t dropped = 0;  // fits counted but no longer kept
  auto finish = [&]() {
    out.n_fitting = dropped + int64_t(out.fits.size());
    keep_best(out.fits, keep);
    return out;
  };
  for (RecomputeGranularity r : recomputes) {
    for (size_t i = 0; i < layouts.size();) {
      size_t end = i;
      while (end < layouts.size() && layouts[end].footprint == layouts[i].footprint) ++end;
      for (; i < end; ++i) {
        const Layout& l = layouts[i];
        const std::vector<int64_t>& mbs = search.micro_batches(l.dp);
        if (mbs.empty()) continue;
        const int64_t n = int64_t(mbs.size());
        if (prune) {
          if (state[i] == StateFit::unknown) state[i] = search.state_fit(l, r, mbs[0], seq);
          if (search.out_of_budget) return finish();
          if (state[i] == StateFit::invalid) {
            search.stats.invalid += n, visited += n;
            continue;
          }
          if (state[i] == StateFit::too_big) {
            search.stats.pruned_by_state += n, visited += n;
            continue;
          }
        }
        for (int64_t k = 0; k < n; ++k) {
          Found f;
          const Outcome outcome = search.evaluate(l, r, mbs[size_t(k)], seq, f);
          if (outcome == Outcome::out_of_budget) return finish();
          ++visited;
          if (outcome == Outcome::fits) out.fits.push_back(f);
          if (outcome == Outcome::too_big && prune) {
            search.stats.pruned_by_batch += n - k - 1, visited += n - k - 1;
            break;
          }
        }
      }
      if (prune && int64_t(out.fits.size()) >= keep) {
        out.cut_by_rank = true;
        search.stats.pruned_by_rank += total - visited;
        return finish();
      }
      // Without the bound every fit is counted, but only the best `keep` are kept.
      if (int64_t(out.fits.size()) > 4 * keep + 4096) {
        dropped += int64_t(out.fits.size()) - keep;
        keep_best(out.fits, keep);
      }
    }
  }
  return finish();
}

// True at the first layout of a (recompute, footprint) group: candidates of later groups rank
// below those of earlier ones.
bool group_starts(const std::vector<Layout>& layouts, size_t i) {
  return i == 0 || layouts[i].footprint != layouts[i - 1].footprint;
}

// Binary search between `lo`, which fits (found: `lo_found`), and `hi`, which does not or is out of
// range: memory grows with the searched value, so the largest fitting one ends in `lo`. False
// when the evaluation budget ran out.
template <class Fits>
bool bisect_largest_fitting(int64_t& lo, int64_t hi, Found& lo_found, Fits fits) {
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    Found f;
    const Outcome o = fits(mid, f);
    if (o == Outcome::out_of_budget) return false;
    if (o == Outcome::fits) lo = mid, lo_found = f;
    else hi = mid;
  }
  return true;
}

// Keeps `found` when its searched value (`key`: micro batch or sequence) is larger than the
// best's, or equal and better ranked.
void keep_larger(std::optional<Found>& best, const Found& found, int64_t Found::*key) {
  if (!best || found.*key > (*best).*key || (found.*key == (*best).*key && rank_less(found, *best)))
    best = found;
}

// Largest micro batch: per layout and policy, the smallest micro batch not below the best so far
// is tried, and only if it fits the larger ones are searched (binary search, monotone). Once the
// best is the largest micro batch any layout allows, later groups can neither beat nor outrank it.
std::optional<Found> solve_max_micro_batch(Search& search, int64_t gpus) {
  std::optional<Found> best;
  const std::vector<Layout> layouts = search.layouts(gpus);
  search.stats.layouts += int64_t(layouts.size());
  std::vector<StateFit> state;
  state.resize(layouts.size(), StateFit::unknown);
  const int64_t seq = search.base().seq_length;
  int64_t ceiling = 0;
  for (const Layout& l : layouts)
    if (!search.micro_batches(l.dp).empty()) ceiling = std::max(ceiling, search.micro_batches(l.dp).back());
  for (RecomputeGranularity r : search.recomputes()) {
    for (size_t i = 0; i < layouts.size(); ++i) {
      if (best && best->mbs == ceiling && group_starts(layouts, i)) return best;
      const Layout& l = layouts[i];
      const std::vector<int64_t>& mbs = search.micro_batches(l.dp);
      const size_t from = size_t(std::lower_bound(mbs.begin(), mbs.end(), best ? best->mbs : 0) - mbs.begin());
      if (from == mbs.size()) continue;
      if (state[i] == StateFit::unknown) state[i] = search.state_fit(l, r, mbs[0], seq);
      if (search.out_of_budget) return best;
      if (state[i] != StateFit::fits) continue;
      Found lo_found;
      const Outcome first = search.evaluate(l, r, mbs[from], seq, lo_found);
      if (first == Outcome::out_of_budget) return best;
      if (first != Outcome::fits) continue;
      int64_t lo = int64_t(from);  // mbs[lo] fits; mbs[size] is out of range
      auto fits = [&](int64_t k, Found& f) { return search.evaluate(l, r, mbs[size_t(k)], seq, f); };
      if (!bisect_largest_fitting(lo, int64_t(mbs.size()), lo_found, fits)) return best;
      keep_larger(best, lo_found, &Found::mbs);
    }
  }
  return best;
}

// Sequence lengths the layout accepts (resolve()'s rule): multiples of 2·CP when CP > 1, times
// TP with sequence parallelism (on whenever TP > 1); here also of seq_length_step.
int64_t seq_quantum(const Layout& l, int64_t step) {
  const int64_t d = (l.cp > 1 ? 2 * l.cp : 1) * l.tp;
  return std::lcm(d, step);
}

// Longest sequence: per layout and policy at the smallest micro batch, the shortest length not
// below the best so far is tried; if it fits, lengths double until one does not, then a binary
// search between the two (memory grows with the sequence). Once the best is the longest length
// any layout accepts under max_seq, later groups can neither beat nor outrank it.
std::optional<Found> solve_max_seq_length(Search& search, int64_t gpus, int64_t max_seq, int64_t step) {
  std::optional<Found> best;
  const std::vector<Layout> layouts = search.layouts(gpus);
  search.stats.layouts += int64_t(layouts.size());
  std::vector<StateFit> state;
  state.resize(layouts.size(), StateFit::unknown);
  int64_t ceiling = 0;
  for (const Layout& l : layouts) ceiling = std::max(ceiling, max_seq / seq_quantum(l, step) * seq_quantum(l, step));
  for (RecomputeGranularity r : search.recomputes()) {
    for (size_t i = 0; i < layouts.size(); ++i) {
      if (best && best->seq == ceiling && group_starts(layouts, i)) return best;
      const Layout& l = layouts[i];
      const std::vector<int64_t>& mbs = search.micro_batches(l.dp);
      if (mbs.empty()) continue;
      const int64_t q = seq_quantum(l, step), k_max = max_seq / q;
      const int64_t k_from = best ? (best->seq + q - 1) / q : 1;
      if (k_max < 1 || k_from > k_max) continue;
      if (state[i] == StateFit::unknown) state[i] = search.state_fit(l, r, mbs[0], k_from * q);
      if (search.out_of_budget) return best;
      if (state[i] != StateFit::fits) continue;
      Found lo_found;
      auto fits = [&](int64_t k, Found& f) { return search.evaluate(l, r, mbs[0], k * q, f); };
      Outcome o = fits(k_from, lo_found);
      if (o == Outcome::out_of_budget) return best;
      if (o != Outcome::fits) continue;
      int64_t lo = k_from, hi = k_max + 1;  // k = lo fits; k = hi does not (or is out of range)
      for (int64_t k = std::max<int64_t>(2 * lo, lo + 1); k <= k_max; k = 2 * k) {
        Found f;
        o = fits(k, f);
        if (o == Outcome::out_of_budget) return best;
        if (o != Outcome::fits) {
          hi = k;
          break;
        }
        lo = k, lo_found = f;
      }
      if (!bisect_largest_fitting(lo, hi, lo_found, fits)) return best;
      keep_larger(best, lo_found, &Found::seq);
    }
  }
  return best;
}

// The fewest GPUs any layout could fit on (planner.hpp: min-gpus): one copy of the model state,
// least over the sharding choices, divided by what one GPU may use.
int64_t min_gpus_bound(Search& search, double limit) {
  double one_copy = -1;
  for (int64_t sharding : search.shardings()) {
    Layout whole;
    whole.sharding = sharding;
    whole.etp = search.base().is_moe() ? 1 : 0;
    const Resolved res = resolve(search.input_for(whole, RecomputeGranularity::none, 1, search.base().seq_length));
    if (!res.ok()) continue;
    const StateBreakdown st = estimate_training_memory(res.config, res.config.num_microbatches, false).state;
    const double bytes = st.weights.total() + st.gradients.total() + st.master_weights.total() +
                         st.optimizer_states.total();
    if (one_copy < 0 || bytes < one_copy) one_copy = bytes;
  }
  if (one_copy <= 0) return 1;
  return std::max<int64_t>(1, int64_t(std::ceil(one_copy / limit)));
}

PlanEntry make_entry(const Search& search, const Found& f, double capacity) {
  PlanEntry e;
  ConfigInput in = search.input_for(f.layout, f.recompute, f.mbs, f.seq);
  if (search.base().gpu_memory_bytes > 0) in.gpu_memory_bytes = search.base().gpu_memory_bytes;
  e.config = resolve(in).config;
  e.metric_bytes = f.metric;
  e.allocated_bytes = f.allocated;
  e.reserved_bytes = f.reserved;
  e.device_bytes = f.device;
  e.weight_and_optimizer_bytes = f.state;
  e.activation_bytes = f.activation;
  e.headroom_bytes = capacity - f.metric;
  e.headroom = e.headroom_bytes / capacity;
  e.most_loaded_stage = f.stage;
  return e;
}

std::string budget_message(const PlanOptions& o, std::string_view what) {
  return "max_evaluations: stopped after " + number_text(double(o.max_evaluations)) +
         " estimates; " + std::string(what) + " the best of those evaluated, not necessarily the best overall";
}

}  // namespace

PlanResult plan(const Config& base, const PlanOptions& given) {
  PlanResult result;
  // Numbers set through the C++ API obey the same rules as JSON and command-line options.
  PlanOptions o = given;
  const std::pair<std::string_view, double> numbers[] = {
      {"gpus", double(o.gpus)}, {"gpus_per_node", double(o.gpus_per_node)},
      {"gpu_memory_bytes", o.gpu_memory_bytes}, {"headroom", o.headroom},
      {"max_results", double(o.max_results)}, {"max_evaluations", double(o.max_evaluations)},
      {"max_micro_batch_size", double(o.max_micro_batch_size)}, {"max_seq_length", double(o.max_seq_length)},
      {"seq_length_step", double(o.seq_length_step)}, {"max_gpus", double(o.max_gpus)},
      {"progress_every", double(o.progress_every)}};
  for (const auto& [name, value] : numbers) {
    const bool zero_means_default = name == "gpus" || name == "gpus_per_node" || name == "gpu_memory_bytes" ||
                                    name == "max_micro_batch_size";
    if (zero_means_default && value == 0) continue;
    PlanOptions scratch;
    if (auto issue = set_plan_option(scratch, name, value)) result.issues.push_back(*issue);
  }
  if (!result.ok()) return result;
  const bool trainmem = base.profile == Profile::trainmem;
  if (o.gpus <= 0)
    o.gpus = base.tensor_model_parallel_size * base.pipeline_model_parallel_size *
             base.context_parallel_size * base.data_parallel_size;
  if (o.gpus_per_node <= 0) o.gpus_per_node = base.gpus_per_node;
  if (o.gpu_memory_bytes <= 0) o.gpu_memory_bytes = base.gpu_memory_bytes;
  if (o.metric == PlanMetric::automatic) o.metric = trainmem ? PlanMetric::device : PlanMetric::allocated;
  if (o.gpu_memory_bytes <= 0)
    result.issues.push_back({"gpu_memory_bytes", "gpu_memory_bytes: is required: the capacity of one GPU "
                                                 "(e.g. 80GiB), in the options or in the config"});
  if (!trainmem && o.metric != PlanMetric::allocated)
    result.issues.push_back({"metric", "metric: \"" + std::string(name_of(o.metric)) +
                                           "\" needs the trainmem profile (profile is \"" +
                                           std::string(name_of(base.profile)) + "\")"});
  if (o.solve == PlanSolve::max_micro_batch && !o.searches(PlanKnob::micro_batch_size))
    result.issues.push_back({"solve", "solve: \"max-micro-batch\" needs micro_batch_size among the searched knobs"});
  if (!result.ok()) return result;

  result.options = o;
  result.profile = base.profile;
  result.limit_bytes = o.gpu_memory_bytes * (1 - o.headroom);
  Search search(base, o, result.limit_bytes);
  const double capacity = o.gpu_memory_bytes;

  switch (o.solve) {
    case PlanSolve::none: {
      const Listing listing = list_fits(search, o.gpus, o.max_results, o.prune);
      result.n_fitting = listing.n_fitting;
      result.counted_all = !listing.cut_by_rank && !search.out_of_budget;
      for (const Found& f : listing.fits) result.layouts.push_back(make_entry(search, f, capacity));
      if (search.out_of_budget) result.stopped = budget_message(o, "the layouts listed are");
      break;
    }
    case PlanSolve::max_micro_batch:
    case PlanSolve::max_seq_length: {
      const std::optional<Found> best =
          o.solve == PlanSolve::max_micro_batch
              ? solve_max_micro_batch(search, o.gpus)
              : solve_max_seq_length(search, o.gpus, o.max_seq_length, o.seq_length_step);
      if (best) {
        result.solution.found = true;
        result.solution.value = o.solve == PlanSolve::max_micro_batch ? best->mbs : best->seq;
        result.solution.layout = make_entry(search, *best, capacity);
        const std::vector<int64_t>& mbs = search.micro_batches(best->layout.dp);
        result.solution.at_limit =
            o.solve == PlanSolve::max_micro_batch
                ? best->mbs == mbs.back() && (base.global_batch_size == 0 ||
                                              mbs.back() < base.global_batch_size / best->layout.dp)
                : best->seq + seq_quantum(best->layout, o.seq_length_step) > o.max_seq_length;
      }
      if (search.out_of_budget) result.stopped = budget_message(o, "the answer is");
      break;
    }
    case PlanSolve::min_gpus: {
      // Partial nodes (divisors of the node size), then whole nodes, fewest first, from the
      // lower bound on.
      const int64_t bound = o.prune ? min_gpus_bound(search, result.limit_bytes) : 1;
      std::vector<int64_t> counts;
      for (int64_t n : divisors(o.gpus_per_node))
        if (n < o.gpus_per_node) counts.push_back(n);
      for (int64_t n = o.gpus_per_node; n <= o.max_gpus; n += o.gpus_per_node) counts.push_back(n);
      int64_t ruled_out = 0;
      for (int64_t n : counts) {
        if (n > o.max_gpus) break;
        if (n < bound) {
          ruled_out = n;
          continue;
        }
        const Listing listing = list_fits(search, n, 1, o.prune);
        if (search.out_of_budget) break;
        if (listing.fits.empty()) {
          ruled_out = n;
          continue;
        }
        result.solution.found = true;
        result.solution.value = n;
        result.solution.layout = make_entry(search, listing.fits[0], capacity);
        result.options.gpus = n;
        break;
      }
      result.solution.ruled_out = ruled_out;
      if (search.out_of_budget)
        result.stopped = "max_evaluations: stopped after " + number_text(double(o.max_evaluations)) +
                         " estimates; no layout fits on " + number_text(double(ruled_out)) +
                         " GPUs or fewer, larger counts were not searched";
      break;
    }
    case PlanSolve::count: break;
  }
  result.complete = !search.out_of_budget;
  if (search.cancelled)
    result.stopped = "cancelled: the caller stopped the search after " +
                     number_text(double(search.stats.evaluations())) + " estimates";
  result.stats = search.stats;
  return result;
}

// ---- Options ----

namespace {

std::string value_text(const FieldValue& value) {
  struct {
    std::string operator()(std::monostate) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(double d) const { return number_text(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(const std::vector<double>&) const { return "a list"; }
    std::string operator()(const std::vector<std::string>&) const { return "a list"; }
  } visitor;
  return std::visit(visitor, value);
}

struct OptionSpec {
  std::string_view name;
  enum Kind : uint8_t { integer, size, fraction, boolean, metric, knobs, solve } kind;
  double min, max;  // integers
};

constexpr std::array<OptionSpec, 16> k_options = {{
    {"gpus", OptionSpec::integer, 1, 1e9},
    {"gpu_memory_bytes", OptionSpec::size, 0, 0},
    {"headroom", OptionSpec::fraction, 0, 0},
    {"gpus_per_node", OptionSpec::integer, 1, 1024},
    {"metric", OptionSpec::metric, 0, 0},
    {"max_results", OptionSpec::integer, 1, 100000},
    {"max_evaluations", OptionSpec::integer, 1, 1e15},
    {"allow_uneven_pipeline", OptionSpec::boolean, 0, 0},
    {"search", OptionSpec::knobs, 0, 0},
    {"max_micro_batch_size", OptionSpec::integer, 1, 1e9},
    {"solve", OptionSpec::solve, 0, 0},
    {"max_seq_length", OptionSpec::integer, 1, 1e12},
    {"seq_length_step", OptionSpec::integer, 1, 1e12},
    {"max_gpus", OptionSpec::integer, 1, 1e9},
    {"prune", OptionSpec::boolean, 0, 0},
    {"progress_every", OptionSpec::integer, 1, 1e12},
}};

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string item(text.substr(start, comma - start));
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<double> parse_byte_size(std::string_view text) {
  std::string s(text);
  const char* begin = s.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  unit.erase(unit.find_last_not_of(' ') + 1);
  for (char& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::pair<std::string_view, double>, 10> units = {{
      {"", 1}, {"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}}};
  for (const auto& [name, scale] : units)
    if (unit == name) return value * scale;
  return std::nullopt;
}

std::optional<Issue> set_plan_option(PlanOptions& o, std::string_view name, const FieldValue& value) {
  const OptionSpec* spec = nullptr;
  for (const OptionSpec& s : k_options)
    if (s.name == name) spec = &s;
  const std::string key(name);
  auto fail = [&](const std::string& rule) { return Issue{key, key + ": " + rule}; };
  if (!spec) {
    std::string_view nearest = k_options[0].name;
    for (const OptionSpec& s : k_options)
      if (edit_distance(name, s.name) < edit_distance(name, nearest)) nearest = s.name;
    return fail("unknown option; did you mean \"" + std::string(nearest) + "\"?");
  }
  const PlanOptions defaults;
  const bool unset = std::holds_alternative<std::monostate>(value);
  const double* number = std::get_if<double>(&value);
  const std::string* text = std::get_if<std::string>(&value);
  switch (spec->kind) {
    case OptionSpec::integer: {
      int64_t v = 0;
      if (!unset) {
        if (!number || !std::isfinite(*number) || *number != std::floor(*number) || *number < spec->min)
          return fail(std::string(spec->min > 0 ? "must be a positive integer" : "must be a non-negative integer") +
                      ", got " + value_text(value));
        if (*number > spec->max)
          return fail("must be at most " + number_text(spec->max) + ", got " + value_text(value));
        v = int64_t(*number);
      }
      if (name == "gpus") o.gpus = unset ? defaults.gpus : v;
      else if (name == "gpus_per_node") o.gpus_per_node = unset ? defaults.gpus_per_node : v;
      else if (name == "max_results") o.max_results = unset ? defaults.max_results : v;
      else if (name == "max_evaluations") o.max_evaluations = unset ? defaults.max_evaluations : v;
      else if (name == "max_micro_batch_size") o.max_micro_batch_size = unset ? defaults.max_micro_batch_size : v;
      else if (name == "max_seq_length") o.max_seq_length = unset ? defaults.max_seq_length : v;
      else if (name == "seq_length_step") o.seq_length_step = unset ? defaults.seq_length_step : v;
      else if (name == "progress_every") o.progress_every = unset ? defaults.progress_every : v;
      else o.max_gpus = unset ? defaults.max_gpus : v;
      return std::nullopt;
    }
    case OptionSpec::size: {
      std::optional<double> bytes;
      if (unset) bytes = defaults.gpu_memory_bytes;
      else if (number && std::isfinite(*number) && *number >= 0) bytes = *number;
      else if (text) bytes = parse_byte_size(*text);
      if (!bytes) return fail("must be a size such as 80GiB, 80GB or 85899345920 (bytes), got " + value_text(value));
      if (!unset && *bytes <= 0) return fail("must be more than 0 bytes, got " + value_text(value));
      o.gpu_memory_bytes = *bytes;
      return std::nullopt;
    }
    case OptionSpec::fraction:
      if (unset) o.headroom = defaults.headroom;
      else if (!number || !(*number >= 0 && *number < 1))
        return fail("must be at least 0 and less than 1 (a share of the GPU), got " + value_text(value));
      else o.headroom = *number;
      return std::nullopt;
    case OptionSpec::boolean: {
      const bool* flag = std::get_if<bool>(&value);
      if (!unset && !flag) return fail("must be true or false, got " + value_text(value));
      if (name == "prune") o.prune = unset ? defaults.prune : *flag;
      else o.allow_uneven_pipeline = unset ? defaults.allow_uneven_pipeline : *flag;
      return std::nullopt;
    }
    case OptionSpec::metric: {
      const std::optional<PlanMetric> m = text ? from_name<PlanMetric>(*text) : std::nullopt;
      if (!unset && !m) return fail("must be " + choices_text<PlanMetric>() + ", got " + value_text(value));
      o.metric = unset ? defaults.metric : *m;
      return std::nullopt;
    }
    case OptionSpec::solve: {
      const std::optional<PlanSolve> s = text ? from_name<PlanSolve>(*text) : std::nullopt;
      if (!unset && !s) return fail("must be " + choices_text<PlanSolve>() + ", got " + value_text(value));
      o.solve = unset ? defaults.solve : *s;
      return std::nullopt;
    }
    case OptionSpec::knobs: {
      if (unset) {
        o.search = defaults.search;
        return std::nullopt;
      }
      std::vector<std::string> names;
      if (text) names = split_list(*text);
      else if (const auto* list = std::get_if<std::vector<std::string>>(&value)) names = *list;
      else if (const auto* nums = std::get_if<std::vector<double>>(&value); nums && nums->empty()) names = {};
      else return fail("must be a list of knobs (" + choices_text<PlanKnob>() + "), got " + value_text(value));
      uint32_t bits = 0;
      for (const std::string& n : names) {
        const std::optional<PlanKnob> knob = from_name<PlanKnob>(n);
        if (!knob) return fail("unknown knob \"" + n + "\"; knobs are " + choices_text<PlanKnob>());
        bits |= 1u << unsigned(*knob);
      }
      o.search = bits;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<Issue> set_plan_option_text(PlanOptions& o, std::string_view name, std::string_view text) {
  if (name == "search") return set_plan_option(o, name, split_list(text));
  if (text == "true") return set_plan_option(o, name, true);
  if (text == "false") return set_plan_option(o, name, false);
  const std::string s(text);
  char* end = nullptr;
  const double number = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && !std::isspace(static_cast<unsigned char>(s[0])))
    return set_plan_option(o, name, number);
  return set_plan_option(o, name, s);
}

// ---- JSON and text ----

namespace {

using ordered = nlohmann::ordered_json;

ordered num(double x) { return detail::json_number(x); }
ordered field_json(const FieldValue& value) { return detail::json_field_value(value); }

// The fields a layout sets (the Search's input_for), in the field table's order.
ordered layout_fields(const Config& c) {
  const ConfigInput in = to_input(c);
  const bool trainmem = c.profile == Profile::trainmem;
  const bool sharded_by_stage = trainmem && (c.framework == Framework::deepspeed || c.framework == Framework::fsdp2);
  std::vector<std::string_view> names = {"seq_length", "micro_batch_size", "num_microbatches"};
  if (!sharded_by_stage && (!trainmem || c.framework == Framework::megatron)) names.push_back("use_distributed_optimizer");
  names.insert(names.end(), {"sequence_parallel", "recompute_granularity"});
  if (sharded_by_stage) names.push_back("zero_stage");
  if (trainmem)
    names.insert(names.end(), {"recompute_method", "recompute_num_layers", "recompute_modules",
                               "pipeline_schedule", "data_parallel_shard_size", "gpus_per_node"});
  names.insert(names.end(), {"tensor_model_parallel_size", "pipeline_model_parallel_size",
                             "virtual_pipeline_model_parallel_size", "num_layers_in_first_pipeline_stage",
                             "num_layers_in_last_pipeline_stage", "context_parallel_size"});
  if (c.is_moe()) names.insert(names.end(), {"expert_model_parallel_size", "expert_tensor_parallel_size"});
  names.push_back("data_parallel_size");
  ordered out = ordered::object();
  for (std::string_view name : names) {
    FieldValue v = get_field(in, name);
    // Derived again from global_batch_size; fsdp2 shards over the whole data-parallel group.
    if ((name == "num_microbatches" && c.global_batch_size > 0) || name == "data_parallel_shard_size")
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
  if (c.profile == Profile::trainmem && (c.framework == Framework::deepspeed || c.framework == Framework::fsdp2))
    return "zero-" + std::to_string(c.zero_stage);
  if (c.profile == Profile::trainmem && c.framework == Framework::ddp) return "-";
  return c.use_distributed_optimizer ? "dist-opt" : "-";
}

// "even", or first|middle|last layers per stage.
std::string stages_text(const Config& c) {
  if (!c.uneven_pipeline()) return "even";
  const int64_t f = c.num_layers_in_first_pipeline_stage, l = c.num_layers_in_last_pipeline_stage;
  const int64_t rest = c.pipeline_model_parallel_size - (f ? 1 : 0) - (l ? 1 : 0);
  const int64_t m = rest > 0 ? (c.num_layers - f - l) / rest : 0;
  return std::to_string(f ? f : m) + "|" + std::to_string(m) + "|" + std::to_string(l ? l : m);
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

std::string group(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

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
                  {"pruned_by_rank", s.pruned_by_rank}};
  return out.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string plan_text(const PlanResult& r) {
  const PlanOptions& o = r.options;
  std::string out;
  const std::string metric(name_of(o.metric));
  out += "Plan for " + group(o.gpus) + " GPUs (" + std::to_string(o.gpus_per_node) + " per node) of " +
         format_bytes(o.gpu_memory_bytes, ByteUnits::binary) + ", headroom " + percent(o.headroom) +
         ": a layout may use " + format_bytes(r.limit_bytes, ByteUnits::binary) + " (" + metric +
         " bytes, " + std::string(name_of(r.profile)) + " profile)\n";
  if (o.solve == PlanSolve::min_gpus) {
    out = "Fewest GPUs (" + std::to_string(o.gpus_per_node) + " per node) of " +
          format_bytes(o.gpu_memory_bytes, ByteUnits::binary) + ", headroom " + percent(o.headroom) +
          ": a layout may use " + format_bytes(r.limit_bytes, ByteUnits::binary) + " (" + metric + " bytes)\n";
  }
  if (o.solve == PlanSolve::none) {
    if (r.layouts.empty()) {
      out += "No layout fits.";
      if (!o.allow_uneven_pipeline && o.searches(PlanKnob::pp))
        out += " Uneven pipeline stages were not tried (allow_uneven_pipeline, --uneven).";
      out += "\n";
    } else {
      out += k_header;
      for (size_t i = 0; i < r.layouts.size(); ++i) out += row_text(r.layouts[i], std::to_string(i + 1));
      out += group(r.n_fitting) + (r.counted_all ? " layouts fit" : " fitting layouts found") + "; the best " +
             group(int64_t(r.layouts.size())) + " shown (ranked by least recompute, then TP·PP·CP·EP, then "
             "the largest micro batch).\n";
    }
  } else {
    static constexpr std::array<std::string_view, 4> what = {"", "Largest micro batch that fits: ",
                                                             "Longest sequence that fits: ", "Fewest GPUs: "};
    if (!r.solution.found) {
      out += std::string(what[size_t(o.solve)]) + "none found";
      if (o.solve == PlanSolve::min_gpus) out += " (none fits on " + group(r.solution.ruled_out) + " GPUs or fewer)";
      out += "\n";
    } else {
      out += std::string(what[size_t(o.solve)]) + group(r.solution.value);
      if (r.solution.at_limit)
        out += std::string(" (the search's limit, ") +
               (o.solve == PlanSolve::max_seq_length ? "max_seq_length" : "max_micro_batch_size") + ": more may fit)";
      out += "\n" + std::string(k_header) + row_text(r.solution.layout, "-");
    }
  }
  const PlanStats& s = r.stats;
  out += "Search " + std::string(r.complete ? "complete" : "stopped") + ": " + group(s.estimates) +
         " estimates and " + group(s.state_estimates) + " model-state estimates over " + group(s.layouts) +
         " layouts";
  if (o.solve == PlanSolve::none)
    out += " (" + group(s.candidates) + " candidates; pruned " + group(s.pruned_by_state) + " by model state, " +
           group(s.pruned_by_batch) + " by micro batch, " + group(s.pruned_by_rank) + " by rank; " +
           group(s.invalid) + " invalid)";
  out += ".\n";
  if (!r.stopped.empty()) out += r.stopped + ".\n";
  return out;
}

PlanResult plan_request(std::string_view config_json, const PlanOptions& options, std::vector<Issue> option_issues) {
  PlanResult result;
  result.issues = std::move(option_issues);
  Resolved resolved = resolve_config_json(config_json);
  for (Issue& issue : resolved.issues) result.issues.push_back(std::move(issue));
  if (!result.ok()) return result;
  return plan(resolved.config, options);
}

std::string plan_json(std::string_view config_json, std::string_view options_json) {
  try {
    PlanOptions options;
    std::vector<Issue> issues;
    ordered doc;
    try {
      doc = ordered::parse(options_json.begin(), options_json.end());
    } catch (const nlohmann::json::exception& e) {
      return issues_to_json({{"options", "options: malformed JSON: " + json_error_text(e)}});
    }
    if (!doc.is_object()) {
      issues.push_back({"options", "options: must be a JSON object of options, got " +
                                       std::string(doc.is_array() ? "a list" : "a single value")});
    } else {
      for (const auto& [key, value] : doc.items()) {
        FieldValue v;
        if (value.is_boolean()) v = value.get<bool>();
        else if (value.is_number()) v = value.get<double>();
        else if (value.is_string()) v = value.get<std::string>();
        else if (value.is_array() && std::all_of(value.begin(), value.end(), [](const auto& x) { return x.is_string(); }))
          v = value.get<std::vector<std::string>>();
        else if (!value.is_null()) v = std::vector<double>{1};  // objects and mixed lists fit no option
        if (auto issue = set_plan_option(options, key, v)) issues.push_back(*issue);
      }
    }
    const PlanResult result = plan_request(config_json, options, std::move(issues));
    if (!result.ok()) return issues_to_json(result.issues);
    return plan_to_json(result);
  } catch (const std::exception& e) {
    return issues_to_json({{"plan", std::string("plan: internal error: ") + e.what()}});
  }
}

}  // namespace trainmem
