// The listing of fitting layouts, the three solvers (max micro batch, max sequence length, min
// GPUs) and plan(), which checks the options and runs the one asked for. All of them walk the
// candidates of a Search (search.hpp) in ranking order; planner.hpp says why each pruning step
// leaves the answer unchanged.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "config/messages.hpp"
#include "planner/options.hpp"
#include "planner/search.hpp"

namespace trainmem {
namespace planning {
namespace {

// The best `keep` layouts that fit on `gpus` GPUs, best first, and how many fit. Candidates are
// visited in ranking order of (recompute, footprint); with pruning the search ends with the
// first such group that brings the fits to `keep`.
//
// With pruning, only what is listed is simulated. A candidate that fits by the allocator
// factor's figures is kept with them (Found::exact false): its metric is a lower bound of the
// default's (the larger of the factor and the simulated allocator), and since the metric is the
// fourth key of the ranking (rank_less) and the keys before it do not depend on the allocator,
// its place by that bound is at or before its place by the default's figure. The listing is a
// best-first walk over them (settle_best): the best-ranked is taken; if its metric is final it
// is listed, since every other candidate ranks at or after it by its bound and so by its own
// figure; if not, it is simulated and put back when it still fits (dropped when it does not).
// Candidates of groups not visited yet rank after every candidate of the groups visited, so a
// walk run at a group's end lists what a search of every candidate would list first.
struct Listing {
  std::vector<Found> fits;  // the listing: final metrics, ranking order
  int64_t n_fitting = 0;    // fits confirmed by the default's figures
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

// The best-first walk above over `pool` (candidates that fit by the factor's figures, some
// settled): up to `keep` candidates with final metrics that fit by them, in ranking order, moved
// to the front of `pool`; the others follow (the ones dropped no longer in it). Returns how many
// were listed.
int64_t settle_best(Search& search, std::vector<Found>& pool, int64_t keep) {
  const auto after = [](const Found& a, const Found& b) { return rank_less(b, a); };  // min-heap
  std::vector<Found> listed;
  std::make_heap(pool.begin(), pool.end(), after);
  size_t n = pool.size();
  while (n > 0 && int64_t(listed.size()) < keep) {
    std::pop_heap(pool.begin(), pool.begin() + std::ptrdiff_t(n), after);
    Found& top = pool[n - 1];
    if (search.metric_final(top)) {
      listed.push_back(top);
      --n;
      continue;
    }
    if (search.settle(top) == Outcome::fits) {
      std::push_heap(pool.begin(), pool.begin() + std::ptrdiff_t(n), after);
    } else {
      --n;  // too big by the default's figures: out of the pool
    }
  }
  pool.resize(n);
  pool.insert(pool.begin(), listed.begin(), listed.end());
  return int64_t(listed.size());
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
  int64_t dropped = 0;  // fits counted but no longer kept (without pruning: every fit settled)
  // At the end or a cut: the listing. Without pruning every fit was settled as it was found.
  // With it, the walk settles the best `keep`; the rest of the pool fit by the factor's figures,
  // those with final metrics fit by the default's too and are counted, the others (not
  // simulated) may or may not fit and are not.
  auto finish = [&]() {
    if (prune) {
      const int64_t listed = settle_best(search, out.fits, keep);
      int64_t confirmed = listed;
      for (size_t j = size_t(listed); j < out.fits.size(); ++j)
        if (search.metric_final(out.fits[j])) ++confirmed;
        else ++search.stats.not_simulated;
      out.fits.resize(size_t(listed));
      out.n_fitting = confirmed;
    } else {
      out.n_fitting = dropped + int64_t(out.fits.size());
    }
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
          // With pruning the fits by the factor's figures are settled by the walk (finish),
          // without it each one as it is found.
          const Outcome outcome = search.evaluate(l, r, mbs[size_t(k)], seq, f, !prune);
          if (outcome == Outcome::out_of_budget) return finish();
          ++visited;
          if (outcome == Outcome::fits) out.fits.push_back(f);
          // Too big by the factor's figures: so is every larger micro batch. Too big only by the
          // simulated allocator's, which need not grow with the micro batch: the next is tried.
          if (outcome == Outcome::too_big && prune && !f.fits_by_factor) {
            search.stats.pruned_by_batch += n - k - 1, visited += n - k - 1;
            break;
          }
        }
      }
      // The ranking bound: `keep` fits by the default's figures among the groups visited. The
      // pool's fits are by the factor's, a floor of the default's: when there are `keep` of them
      // the walk settles the best; when some do not fit by the default's figures and fewer
      // than `keep` remain, the search goes on (the settled ones stay settled).
      if (prune && int64_t(out.fits.size()) >= keep && settle_best(search, out.fits, keep) >= keep) {
        out.cut_by_rank = true;
        search.stats.pruned_by_rank += total - visited;
        return finish();
      }
      // Without the bound every fit is counted, but only the best `keep` are kept.
      if (!prune && int64_t(out.fits.size()) > 4 * keep + 4096) {
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
      // The largest micro batch that fits by the allocator factor's figures (monotone), by
      // binary search; then down from it, the first that fits with the simulated allocator
      // (which need not grow with the micro batch, and is never below the factor's figures).
      Found lo_found;
      const Outcome first = search.evaluate(l, r, mbs[from], seq, lo_found, false);
      if (first == Outcome::out_of_budget) return best;
      if (first != Outcome::fits) continue;
      int64_t lo = int64_t(from);  // mbs[lo] fits by the factor; mbs[size] is out of range
      auto fits = [&](int64_t k, Found& f) { return search.evaluate(l, r, mbs[size_t(k)], seq, f, false); };
      if (!bisect_largest_fitting(lo, int64_t(mbs.size()), lo_found, fits)) return best;
      std::optional<Found> fitting;
      for (int64_t k = lo; k >= int64_t(from) && !fitting; --k) {
        Found f;
        const Outcome o = search.evaluate(l, r, mbs[size_t(k)], seq, f);
        if (o == Outcome::out_of_budget) return best;
        if (o == Outcome::fits) fitting = f;
      }
      if (fitting) keep_larger(best, *fitting, &Found::mbs);
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
    const StateBreakdown st = estimate_training_memory(factor_only(res.config), res.config.num_microbatches, false).state;
    const double bytes = st.weights.total() + st.gradients.total() + st.master_weights.total() +
                         st.optimizer_states.total() + st.frozen_weights.total() + st.adapters();
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
  if (!f.exact) {
    // Fitted by the allocated figure with the allocator factor's reserved: the entry shows the
    // config's own reserved and device figures (the simulated allocator's where it is larger).
    const Estimate est = estimate_training_memory(e.config, e.config.num_microbatches, true);
    e.reserved_bytes = est.reserved_bytes;
    e.device_bytes = est.device_bytes;
  } else {
    e.reserved_bytes = f.reserved;
    e.device_bytes = f.device;
  }
  e.metric_bytes = f.metric;
  e.allocated_bytes = f.allocated;
  e.weight_and_optimizer_bytes = f.state;
  e.activation_bytes = f.activation;
  e.headroom_bytes = capacity - f.metric;
  e.headroom = e.headroom_bytes / capacity;
  e.most_loaded_stage = f.stage;
  return e;
}

// "max_evaluations: stopped after N estimates; <consequence>".
std::string budget_message(const PlanOptions& o, const std::string& consequence) {
  return "max_evaluations: stopped after " + number_text(double(o.max_evaluations)) + " estimates; " + consequence;
}
constexpr const char* k_not_necessarily_best = " the best of those evaluated, not necessarily the best overall";

// The options as the search runs them: what is unset taken from the config (GPUs, node size, GPU
// memory) or the profile (metric); issues for what the search cannot run with.
PlanOptions options_as_run(const Config& base, const PlanOptions& given, std::vector<Issue>& issues) {
  PlanOptions o = given;
  const bool trainmem = base.profile == Profile::trainmem;
  if (o.gpus <= 0)
    o.gpus = base.tensor_model_parallel_size * base.pipeline_model_parallel_size *
             base.context_parallel_size * base.data_parallel_size;
  if (o.gpus_per_node <= 0) o.gpus_per_node = base.gpus_per_node;
  if (o.gpu_memory_bytes <= 0) o.gpu_memory_bytes = base.gpu_memory_bytes;
  if (o.metric == PlanMetric::automatic) o.metric = trainmem ? PlanMetric::device : PlanMetric::allocated;
  if (o.gpu_memory_bytes <= 0)
    issues.push_back(issue("gpu_memory_bytes",
                           "is required: the capacity of one GPU (e.g. 80GiB), in the options or in the config"));
  if (!trainmem && o.metric != PlanMetric::allocated)
    issues.push_back(issue("metric", quoted(name_of(o.metric)) + " needs the trainmem profile (profile is " +
                                         quoted(name_of(base.profile)) + ")"));
  // Held fields (keep): the knob that varies a held field is not searched; data_parallel_size is
  // held by the search itself (Search::layouts keeps the base's DP).
  static constexpr std::pair<FieldName, PlanKnob> k_held_knobs[] = {
      {field::tensor_model_parallel_size, PlanKnob::tp},        {field::sequence_parallel, PlanKnob::tp},
      {field::pipeline_model_parallel_size, PlanKnob::pp},      {field::num_layers_in_first_pipeline_stage, PlanKnob::pp},
      {field::num_layers_in_last_pipeline_stage, PlanKnob::pp}, {field::pipeline_stage_layers, PlanKnob::pp},
      {field::virtual_pipeline_model_parallel_size, PlanKnob::vpp},
      {field::context_parallel_size, PlanKnob::cp},             {field::expert_model_parallel_size, PlanKnob::ep},
      {field::expert_tensor_parallel_size, PlanKnob::etp},      {field::use_distributed_optimizer, PlanKnob::sharding},
      {field::zero_stage, PlanKnob::sharding},                  {field::data_parallel_shard_size, PlanKnob::sharding},
      {field::recompute_granularity, PlanKnob::recompute},      {field::recompute_method, PlanKnob::recompute},
      {field::recompute_num_layers, PlanKnob::recompute},       {field::micro_batch_size, PlanKnob::micro_batch_size}};
  for (const std::string& field : o.keep)
    for (const auto& [name, knob] : k_held_knobs)
      if (field == name.text) o.search &= ~(1u << unsigned(knob));
  if (o.solve == PlanSolve::max_micro_batch && o.keeps(field::micro_batch_size))
    issues.push_back(issue("keep", "micro_batch_size cannot be held while solve " +
                                       quoted(name_of(PlanSolve::max_micro_batch)) + " varies it"));
  else if (o.solve == PlanSolve::max_micro_batch && !o.searches(PlanKnob::micro_batch_size))
    issues.push_back(issue("solve", quoted(name_of(PlanSolve::max_micro_batch)) +
                                        " needs micro_batch_size among the searched knobs"));
  if (o.solve == PlanSolve::max_seq_length && o.keeps(field::seq_length))
    issues.push_back(issue("keep", "seq_length cannot be held while solve " +
                                       quoted(name_of(PlanSolve::max_seq_length)) + " varies it"));
  return o;
}

void list_layouts(Search& search, const PlanOptions& o, PlanResult& result) {
  const Listing listing = list_fits(search, o.gpus, o.max_results, o.prune);
  result.n_fitting = listing.n_fitting;
  // A candidate that fits by the factor's figure but was never simulated (the listing had its
  // best already) is not counted: n_fitting is then a lower bound.
  result.counted_all = !listing.cut_by_rank && !search.out_of_budget && search.stats.not_simulated == 0;
  for (const Found& f : listing.fits) result.layouts.push_back(make_entry(search, f, o.gpu_memory_bytes));
  if (search.out_of_budget)
    result.stopped = budget_message(o, std::string("the layouts listed are") + k_not_necessarily_best);
}

// max-micro-batch and max-seq-length: the largest value and the best-ranked layout reaching it.
void solve_largest(Search& search, const PlanOptions& o, PlanResult& result) {
  const bool micro_batch = o.solve == PlanSolve::max_micro_batch;
  const std::optional<Found> best = micro_batch
                                        ? solve_max_micro_batch(search, o.gpus)
                                        : solve_max_seq_length(search, o.gpus, o.max_seq_length, o.seq_length_step);
  if (best) {
    const int64_t global_batch = search.base().global_batch_size;
    result.solution.found = true;
    result.solution.value = micro_batch ? best->mbs : best->seq;
    result.solution.layout = make_entry(search, *best, o.gpu_memory_bytes);
    const std::vector<int64_t>& mbs = search.micro_batches(best->layout.dp);
    result.solution.at_limit =
        micro_batch ? best->mbs == mbs.back() && (global_batch == 0 || mbs.back() < global_batch / best->layout.dp)
                    : best->seq + seq_quantum(best->layout, o.seq_length_step) > o.max_seq_length;
  }
  if (search.out_of_budget) result.stopped = budget_message(o, std::string("the answer is") + k_not_necessarily_best);
}

// min-gpus: partial nodes (divisors of the node size), then whole nodes, fewest first, from the
// lower bound on; the answer is the first count on which a layout fits.
void solve_fewest_gpus(Search& search, const PlanOptions& o, PlanResult& result) {
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
    result.solution.layout = make_entry(search, listing.fits[0], o.gpu_memory_bytes);
    result.options.gpus = n;
    break;
  }
  result.solution.ruled_out = ruled_out;
  if (search.out_of_budget)
    result.stopped = budget_message(o, "no layout fits on " + number_text(double(ruled_out)) +
                                           " GPUs or fewer, larger counts were not searched");
}

}  // namespace
}  // namespace planning

PlanResult plan(const Config& base, const PlanOptions& given) {
  using namespace planning;
  PlanResult result;
  // Numbers set through the C++ API obey the same rules as JSON and command-line options.
  result.issues = number_option_issues(given);
  if (!result.ok()) return result;
  const PlanOptions o = options_as_run(base, given, result.issues);
  if (!result.ok()) return result;

  result.options = o;
  result.profile = base.profile;
  result.limit_bytes = o.gpu_memory_bytes * (1 - o.headroom);
  Search search(base, o, result.limit_bytes);
  switch (o.solve) {
    case PlanSolve::none: list_layouts(search, o, result); break;
    case PlanSolve::max_micro_batch:
    case PlanSolve::max_seq_length: solve_largest(search, o, result); break;
    case PlanSolve::min_gpus: solve_fewest_gpus(search, o, result); break;
    case PlanSolve::count: break;
  }
  result.complete = !search.out_of_budget;
  if (search.cancelled)
    result.stopped = "cancelled: the caller stopped the search after " +
                     number_text(double(search.stats.evaluations())) + " estimates";
  result.stats = search.stats;
  return result;
}

}  // namespace trainmem
