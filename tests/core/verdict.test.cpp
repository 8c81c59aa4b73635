// Whether a run fits its GPU (estimate.hpp fit_verdict): the verdict every view shows, and that the
// suggestions and the planner draw the same line.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "support.hpp"
#include "trainmem/planner.hpp"

using namespace trainmem;
using namespace trainmem::test;

TEST_CASE("fit_verdict: over above the capacity, tight in the headroom band or when the spread crosses it, else fits",
          "[verdict]") {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  // 80 GiB with the default 10 % headroom: the line is 72 GiB.
  const FitVerdict fits = fit_verdict(60 * GiB, 80 * GiB, 0.20);
  CHECK(fits.fit == Fit::fits);
  CHECK(fits.reason == FitReason::none);
  CHECK(fits.limit_bytes == 72 * GiB);
  CHECK(fits.upper_bytes == 72 * GiB);  // 60 · 1.2: at the capacity's line, under the capacity
  // The issue's case: a suggestion chip led to 79.06 of 80 GiB and the page said "Fits (99 % used)".
  const FitVerdict chip = fit_verdict(79.06 * GiB, 80 * GiB, 0.35);
  CHECK(chip.fit == Fit::tight);
  CHECK(chip.reason == FitReason::headroom);
  // 70 GiB is below the 72 GiB line, but runs like this landed within ±35 %: 94.5 GiB > 80 GiB.
  const FitVerdict spread = fit_verdict(70 * GiB, 80 * GiB, 0.35);
  CHECK(spread.fit == Fit::tight);
  CHECK(spread.reason == FitReason::spread);
  CHECK(spread.upper_bytes == Approx(94.5 * GiB));
  // At the capacity exactly it is tight, not over; a byte more is over.
  CHECK(fit_verdict(80 * GiB, 80 * GiB, 0).fit == Fit::tight);
  CHECK(fit_verdict(80 * GiB + 1, 80 * GiB, 0).fit == Fit::over);
  // At the line exactly it fits (without a spread); another headroom moves the line.
  CHECK(fit_verdict(72 * GiB, 80 * GiB, 0).fit == Fit::fits);
  CHECK(fit_verdict(72 * GiB, 80 * GiB, 0, 0.05).limit_bytes == 76 * GiB);
  CHECK(fit_name(Fit::tight) == "tight");
  CHECK(fit_reason_name(FitReason::spread) == "spread");
}

TEST_CASE("a result carries a verdict per figure, with its validation group's spread", "[verdict]") {
  const Config with = config_from(R"({"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
      "vocab_size": 32000, "seq_length": 1024, "micro_batch_size": 2, "gpu_memory_bytes": 8e9})");
  const FullEstimate e = full_estimate(with);
  REQUIRE(e.n_verdicts == 3);
  const double figures[] = {e.total_bytes, e.reserved_bytes, e.device_bytes};
  REQUIRE(e.confidence.known);
  for (int i = 0; i < 3; ++i) {
    const FitVerdict& v = e.verdicts[size_t(i)];
    CHECK(v.figure_bytes == figures[i]);
    CHECK(v.capacity_bytes == 8e9);
    CHECK(v.spread == e.confidence.group.p90_abs_error);
    CHECK(v.limit_bytes == Approx(7.2e9));
  }
  // Without a capacity there is nothing to judge.
  CHECK(full_estimate(config_from(R"({"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
      "vocab_size": 32000, "seq_length": 1024, "micro_batch_size": 2})")).n_verdicts == 0);
  // The reference profiles judge their total, with no spread (they reproduce a formula).
  const FullEstimate bridge = full_estimate(config_from(R"({"profile": "megatron-bridge", "num_layers": 4,
      "hidden_size": 1024, "num_attention_heads": 8, "vocab_size": 32000, "seq_length": 1024,
      "micro_batch_size": 2, "gpu_memory_bytes": 8e9})"));
  REQUIRE(bridge.n_verdicts == 1);
  CHECK(bridge.verdicts[0].figure_bytes == bridge.total_bytes);
  CHECK(bridge.verdicts[0].spread == 0);
}

TEST_CASE("the verdict, the suggestions and the planner draw the same line on the same config", "[verdict][suggest][planner]") {
  // One run at capacities around its device figure: below the line it fits (or is tight by its
  // spread alone), which the planner holding every layout field lists and no suggestion follows;
  // in the headroom band and above the capacity the planner lists nothing and every suggestion
  // brings the device figure below the line.
  const std::string run = R"({"num_layers": 8, "hidden_size": 2048, "num_attention_heads": 16,
      "ffn_hidden_size": 5632, "vocab_size": 32000, "seq_length": 2048, "micro_batch_size": 4,
      "tensor_model_parallel_size": 1, "data_parallel_size": 2, "framework": "fsdp2")";
  const double device = full_estimate(config_from(run + "}")).device_bytes;
  REQUIRE(device > 0);
  for (const double capacity : {device / 0.80, device / 0.95, device * 0.999}) {
    CAPTURE(capacity / device);
    char extra[64];
    std::snprintf(extra, sizeof extra, R"(, "gpu_memory_bytes": %.17g})", capacity);
    const Config config = config_from(run + extra);
    const FullEstimate e = full_estimate(config);
    const FitVerdict& v = e.verdicts[2];  // device
    const bool below_line = e.device_bytes <= capacity * (1 - k_default_headroom);
    CHECK(below_line == (v.fit == Fit::fits || v.reason == FitReason::spread));
    CHECK(e.suggestions.empty() == below_line);
    for (const Suggestion& s : e.suggestions) CHECK(s.figure_bytes <= v.limit_bytes);
    PlanOptions o;
    o.keep = {"tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
              "data_parallel_size", "recompute_granularity", "micro_batch_size", "zero_stage"};
    const PlanResult plan_result = plan(config, o);
    REQUIRE(plan_result.ok());
    CHECK(plan_result.limit_bytes == v.limit_bytes);
    CHECK(plan_result.layouts.empty() == !below_line);
  }
}

TEST_CASE("fits_at_capacities: one result answers every GPU; only the paged states' share moves", "[verdict][one_pass]") {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  // Without a paged optimizer no figure depends on the capacity: each capacity's verdict is
  // fit_verdict of the same figures with the run's spread, and agrees with an estimate made at
  // that capacity (the page's GPU table made one per GPU before).
  const Config plain = config_from(small_llama(R"("framework": "ddp")"));
  const FullEstimate once = full_estimate(plain);
  const double capacities[] = {8 * GiB, 24 * GiB, 80 * GiB};
  const std::vector<CapacityFit> fits = fits_at_capacities(plain, once, capacities);
  REQUIRE(fits.size() == 3);
  for (size_t i = 0; i < fits.size(); ++i) {
    Config at = plain;
    at.gpu_memory_bytes = capacities[i];
    const FullEstimate there = full_estimate(at);
    REQUIRE(fits[i].n_figures == 3);
    CHECK(fits[i].capacity_bytes == capacities[i]);
    CHECK(fits[i].figures[0] == there.total_bytes);
    CHECK(fits[i].figures[1] == there.reserved_bytes);
    CHECK(fits[i].figures[2] == there.device_bytes);
    for (int f = 0; f < 3; ++f) {
      CHECK(fits[i].verdicts[size_t(f)].fit == there.verdicts[size_t(f)].fit);
      CHECK(fits[i].verdicts[size_t(f)].limit_bytes == there.verdicts[size_t(f)].limit_bytes);
    }
  }
  // Paged AdamW8bit (finetune.test.cpp "paged optimizer states"): 132,644,864 B of states in
  // unified memory. Estimated without a capacity, all of them count on the GPU; at a capacity
  // 32 MiB above everything else 33,554,432 B stay, at one below everything else none do.
  const Config paged = config_from(small_llama(R"("framework": "ddp", "params_dtype": "bf16", "master_weights": false,
      "optimizer": "adam8bit", "paged_optimizer": true)"));
  const FullEstimate free = full_estimate(paged);
  const double others = free.device_bytes - 132644864;
  const double tight[] = {others + 33554432, others - 1024, others + 200e6};
  const std::vector<CapacityFit> paged_fits = fits_at_capacities(paged, free, tight);
  CHECK(paged_fits[0].figures[2] == Approx(others + 33554432).margin(1));
  CHECK(paged_fits[1].figures[2] == Approx(others).margin(1));
  CHECK(paged_fits[2].figures[2] == Approx(free.device_bytes).margin(1));
  CHECK(paged_fits[0].figures[0] == free.total_bytes);  // allocated and reserved do not move
  for (size_t i = 0; i < 3; ++i) {
    Config at = paged;
    at.gpu_memory_bytes = tight[i];
    CHECK(paged_fits[i].figures[2] == Approx(full_estimate(at).device_bytes).margin(1));
  }
  // A capacity that is not a finite positive number is no capacity: left out, never a NaN verdict.
  const double bad[] = {0, -80 * GiB, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()};
  CHECK(fits_at_capacities(plain, once, bad).empty());
  // The reference profiles compare their total.
  Config bridge = plain;
  bridge.profile = Profile::megatron_bridge;
  const std::vector<CapacityFit> total = fits_at_capacities(bridge, full_estimate(bridge), std::span(capacities, 1));
  REQUIRE(total[0].n_figures == 1);
}

TEST_CASE("one answer is one trainmem pass when the run fits; minimum devices only when it does not", "[verdict][one_pass]") {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  // TP 2 × DP 4 on 80 GiB: fits, so the minimum GPU count (a second estimate of one replica on
  // one GPU) is not asked for.
  const std::string layout = R"("framework": "megatron", "tensor_model_parallel_size": 2, "data_parallel_size": 4,
      "gpu_memory_bytes": )" + std::to_string(int64_t(80 * GiB));
  const Config spread_out = config_from(small_llama(layout));
  const uint64_t before = estimator_passes();
  const FullEstimate fits = full_estimate(spread_out);
  CHECK(estimator_passes() - before == 1);
  CHECK(fits.minimum_devices == 0);
  // One replica on one GPU already: the minimum comes from the same pass (ceil(total / capacity) = 1).
  const Config single = config_from(small_llama(R"("framework": "ddp", "gpu_memory_bytes": )" + std::to_string(int64_t(80 * GiB))));
  const uint64_t before_single = estimator_passes();
  const FullEstimate one = full_estimate(single);
  CHECK(estimator_passes() - before_single == 1);
  CHECK(one.minimum_devices == 1);
  // 1 GiB does not hold TP 2 × DP 4: the minimum is asked for and takes its second pass;
  // ceil(one replica's bytes / 1 GiB) by hand from that replica's own estimate.
  Config small_gpu = spread_out;
  small_gpu.gpu_memory_bytes = 1 * GiB;
  const FullEstimate over = full_estimate(small_gpu);
  Config replica = spread_out;
  replica.tensor_model_parallel_size = replica.data_parallel_size = 1;
  replica.world_size = 1;
  replica.sequence_parallel = false;
  replica.gpu_memory_bytes = 0;
  const double replica_bytes = estimate_training_memory(replica, replica.num_microbatches).total_bytes;
  CHECK(over.minimum_devices == std::ceil(replica_bytes / GiB));
}
