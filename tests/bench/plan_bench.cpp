// Prints the planner's speed (a benchmark, not a test: it asserts nothing). Models from
// core/data/presets.json; training settings as the models were trained: Llama 3.1 405B with
// 2,048 sequences of 8,192 tokens per step on 1,024 GPUs, DeepSeek-V3 with 15,360 sequences of
// 4,096 tokens on 2,048 GPUs; 80 GiB GPUs, 8 per node, 10 % headroom, uneven pipelines allowed.
// Figures per search: wall time (best of a few runs), estimates run (full and model-state only)
// per second, and candidates decided per second: every layout × recompute × micro batch that the
// search settled, by an estimate or by a pruning argument (model state, micro batch), but not
// those skipped because they could not enter the top max_results.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "trainmem/json_io.hpp"
#include "trainmem/planner.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

trainmem::Config preset(const std::string& id, int64_t global_batch_size) {
  const nlohmann::json presets = nlohmann::json::parse(trainmem::presets_json());
  for (const auto& p : presets["presets"]) {
    if (p["id"] != id) continue;
    nlohmann::json config = p["config"];
    config["micro_batch_size"] = 1;
    config["global_batch_size"] = global_batch_size;
    const trainmem::ParsedConfig parsed = trainmem::parse_config_json(config.dump());
    return trainmem::resolve(parsed.input).config;
  }
  std::fprintf(stderr, "plan_bench: no preset %s\n", id.c_str());
  std::exit(1);
}

// argv[1], when given: run only the searches whose label contains it ("best 100,000").
const char* g_only = nullptr;

void run(const char* label, const trainmem::Config& base, trainmem::PlanOptions options, int repeats) {
  if (g_only && std::string(label).find(g_only) == std::string::npos) return;
  double best = 1e300;
  trainmem::PlanResult result;
  for (int i = 0; i < repeats; ++i) {
    const auto start = clock_type::now();
    result = trainmem::plan(base, options);
    best = std::min(best, std::chrono::duration<double>(clock_type::now() - start).count());
  }
  const trainmem::PlanStats& s = result.stats;
  const double covered = double(s.candidates - s.pruned_by_rank);
  std::printf("%-38s %8.1f ms  %9lld estimates + %8lld model-state + %7lld simulated  %6.2f M estimates/s", label,
              best * 1e3, (long long)s.estimates, (long long)s.state_estimates, (long long)s.simulated,
              double(s.evaluations()) / best / 1e6);
  if (options.solve == trainmem::PlanSolve::none)
    std::printf("  %7.1f M candidates/s (%lld fit%s)", covered / best / 1e6, (long long)result.n_fitting,
                result.counted_all ? "" : ", top bound");
  else if (result.solution.found)
    std::printf("  answer %lld%s", (long long)result.solution.value,
                result.solution.at_limit ? " (the search's limit)" : "");
  std::printf("%s\n", result.complete ? "" : "  STOPPED at max_evaluations");
}

// One estimate of a layout the search visits, full and model-state only.
void estimate_speed(const char* label, const trainmem::PlanResult& plan) {
  if (plan.layouts.empty()) return;
  const trainmem::Config& c = plan.layouts.front().config;
  for (bool activation : {true, false}) {
    // Up to 20,000 estimates or one second, whichever comes first.
    int n = 0;
    volatile double sink = 0;
    const auto start = clock_type::now();
    double seconds = 0;
    while (n < 20000 && seconds < 1.0) {
      sink = sink + trainmem::estimate_training_memory(c, c.num_microbatches, activation).device_bytes;
      ++n;
      seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    }
    std::printf("%-38s %8.2f us per %s estimate (PP %lld)\n", label, seconds / n * 1e6,
                activation ? "full" : "model-state", (long long)c.pipeline_model_parallel_size);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_only = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  trainmem::PlanOptions options;
  options.gpu_memory_bytes = 80.0 * 1024 * 1024 * 1024;
  options.allow_uneven_pipeline = true;

  struct Case {
    const char* name;
    trainmem::Config base;
    int64_t gpus;
  };
  const Case cases[] = {{"Llama 3.1 405B, 1,024 GPUs", preset("llama-3.1-405b", 2048), 1024},
                        {"DeepSeek-V3, 2,048 GPUs", preset("deepseek-v3", 15360), 2048}};
  for (const Case& c : cases) {
    std::printf("== %s\n", c.name);
    trainmem::PlanOptions o = options;
    o.gpus = c.gpus;
    estimate_speed("  one estimate", trainmem::plan(c.base, o));
    run("  plan, best 20", c.base, o, 3);
    o.max_results = 100000;
    run("  plan, best 100,000", c.base, o, 1);
    o.max_results = 20;
    o.solve = trainmem::PlanSolve::max_micro_batch;
    run("  solve max-micro-batch", c.base, o, 1);
    o.solve = trainmem::PlanSolve::max_seq_length;
    run("  solve max-seq-length", c.base, o, 1);
    o.solve = trainmem::PlanSolve::min_gpus;
    run("  solve min-gpus", c.base, o, 1);
  }
  return 0;
}
