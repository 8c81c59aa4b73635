// The planner's search space and how one candidate is judged (planner.hpp describes both), shared
// by the planner's files: search.cpp enumerates and evaluates, solvers.cpp walks the candidates
// in ranking order, io.cpp writes a layout's fields.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/planner.hpp"

namespace trainmem::planning {

// What the sharding knob sets: Megatron's distributed optimizer (the reference profiles and the
// trainmem profile's megatron framework), the ZeRO stage (deepspeed, fsdp2), or nothing (ddp).
enum class Sharding : uint8_t { distributed_optimizer, zero_stage, none };
Sharding sharding_of(const Config& config);

// One parallel layout with one sharding choice. etp = 0 leaves expert_tensor_parallel_size
// unset (dense models: it follows TP). first/last = 0: even split.
struct Layout {
  int64_t tp = 1, pp = 1, vpp = 0, first = 0, last = 0, cp = 1, ep = 1, etp = 0, dp = 1;
  int64_t sharding = 0;   // use_distributed_optimizer 0/1, or the ZeRO stage
  int64_t footprint = 1;  // TP·PP·CP·EP
};

// A candidate that was estimated: its layout, policy, micro batch, sequence and figures.
struct Found {
  Layout layout;
  RecomputeGranularity recompute = RecomputeGranularity::none;
  int64_t mbs = 1, seq = 1;
  double metric = 0, allocated = 0, reserved = 0, device = 0, state = 0, activation = 0;
  int64_t stage = 0;
  // False when the figures are the allocator factor's only (reserved and device lower bounds of
  // the default's): make_entry estimates them again.
  bool exact = true;
  // Whether it fits by the allocator factor's figures (a lower bound of the default's, and
  // monotone in the micro batch and the sequence where the simulated allocator need not be):
  // a candidate too big by them is too big at any larger micro batch or sequence.
  bool fits_by_factor = false;
};

// The documented ranking: least recompute, smallest footprint, largest micro batch, least
// memory, then the layout's fields in order.
bool rank_less(const Found& a, const Found& b);

// The divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n);

enum class Outcome : uint8_t { fits, too_big, invalid, out_of_budget };
enum class StateFit : uint8_t { unknown, fits, too_big, invalid };

// The candidates of one base config and its options, and their evaluation within the options'
// budget. It counts its work in `stats` and stops for good once the budget is spent.
class Search {
 public:
  Search(const Config& base, const PlanOptions& options, double limit);

  PlanStats stats;
  bool out_of_budget = false;  // stopped: max_evaluations reached or cancelled
  bool cancelled = false;      // stopped by on_progress
  const std::vector<RecomputeGranularity>& recomputes() const { return recomputes_; }
  const std::vector<int64_t>& shardings() const { return shardings_; }
  const Config& base() const { return base_; }

  // Every layout × sharding choice on `gpus` GPUs, in increasing footprint.
  std::vector<Layout> layouts(int64_t gpus) const;
  // Micro batch sizes to try on `dp` data-parallel ranks, ascending.
  const std::vector<int64_t>& micro_batches(int64_t dp);
  // The base config with the candidate's fields replaced.
  ConfigInput input_for(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq) const;
  // Model state alone (a lower bound of the full estimate), once per layout.
  StateFit state_fit(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq);
  // The full estimate; `found` holds its figures whether it fits or not. `simulate` false: the
  // allocator factor's figures only (whether it fits by them; found.exact false).
  Outcome evaluate(const Layout& l, RecomputeGranularity r, int64_t mbs, int64_t seq, Found& found,
                   bool simulate = true);
  // Whether found.metric is the default's own figure (simulated). Otherwise it is the allocator
  // factor's lower bound.
  bool metric_final(const Found& found) const;
  // A candidate that fit by the factor's figures, estimated with the default (the simulated
  // allocator) when its metric is not final yet: fits or too_big by the default's figures.
  Outcome settle(Found& found);

 private:
  struct Split {
    int64_t first, last, middle;
  };
  std::vector<Split> splits(int64_t pp) const;
  std::vector<int64_t> vpps(int64_t pp, int64_t layers) const;
  void add_expert_choices(Layout l, std::vector<Layout>& out) const;
  bool splits_mlp(int64_t t, bool experts) const;
  double metric(const Estimate& est) const;
  bool budget();

  const Config& base_;
  const ConfigInput input_;
  const PlanOptions& options_;
  const double limit_;
  std::vector<RecomputeGranularity> recomputes_;
  std::vector<int64_t> shardings_;
  std::map<int64_t, std::vector<int64_t>> mbs_cache_;  // by DP; references stay valid
  int64_t reported_ = 0;  // evaluations at the last on_progress call
};

}  // namespace trainmem::planning
