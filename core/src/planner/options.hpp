// What plan() needs from the options table (options.cpp) besides the public set_plan_option.
#pragma once

#include <vector>

#include "trainmem/planner.hpp"

namespace trainmem::planning {

// The problems of the numbers in `options` as a C++ caller set them, by the rules JSON and
// command-line values obey (set_plan_option). A number left at its default is not a problem: 0
// for gpus, gpus_per_node, gpu_memory_bytes and max_micro_batch_size means "the config's".
std::vector<Issue> number_option_issues(const PlanOptions& options);

}  // namespace trainmem::planning
