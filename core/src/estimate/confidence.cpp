// How sure a trainmem result is (issue 13, item 8): the validation group closest to the run and
// that group's median and 90th-percentile |error| against published measurements. The groups are
// generated from `npm run validate` (confidence_table.inc); this file only picks one.
#include <array>

#include "trainmem/estimate.hpp"

namespace trainmem {
namespace {

constexpr ConfidenceGroup k_groups[] = {
#include "estimate/confidence_table.inc"
};

constexpr std::string_view k_any = "any";

constexpr std::array<std::string_view, size_t(ConfidenceMatch::count)> k_match_names = {
    "exact", "framework_and_training", "training", "framework", "all"};

// The recompute class of a granularity: torchtitan's selective_op is selective recompute.
std::string_view recompute_class(RecomputeGranularity granularity) {
  switch (granularity) {
    case RecomputeGranularity::none: return "none";
    case RecomputeGranularity::selective:
    case RecomputeGranularity::selective_op: return "selective";
    case RecomputeGranularity::full: return "full";
    case RecomputeGranularity::count: break;
  }
  return "none";
}

const ConfidenceGroup* find_group(std::span<const ConfidenceGroup> groups, const ConfidenceKey& key) {
  for (const ConfidenceGroup& group : groups)
    if (group.key == key && group.points >= k_confidence_min_points) return &group;
  return nullptr;
}

}  // namespace

std::string_view confidence_match_name(ConfidenceMatch match) { return k_match_names[size_t(match)]; }

std::span<const ConfidenceGroup> confidence_groups() { return k_groups; }

Confidence confidence_for(const Config& c) { return confidence_for(c, k_groups); }

Confidence confidence_for(const Config& c, std::span<const ConfidenceGroup> groups) {
  Confidence out;
  if (c.profile != Profile::trainmem) return out;
  out.run = {name_of(c.framework), c.peft_on() ? "peft" : "full-parameter", recompute_class(c.recompute_granularity)};
  const ConfidenceKey& run = out.run;
  // Narrowest first, in ConfidenceMatch's order: framework and PEFT-ness are kept before the
  // recompute class; then PEFT-ness alone (adapters behave alike across frameworks), then the
  // framework alone, then every point.
  const std::array<ConfidenceKey, size_t(ConfidenceMatch::count)> tries = {{
      run,
      {run.framework, run.training, k_any},
      {k_any, run.training, k_any},
      {run.framework, k_any, k_any},
      {k_any, k_any, k_any},
  }};
  for (size_t i = 0; i < tries.size(); ++i) {
    if (const ConfidenceGroup* group = find_group(groups, tries[i])) {
      out.known = true;
      out.group = *group;
      out.match = ConfidenceMatch(i);
      return out;
    }
  }
  return out;
}

std::string confidence_group_name(const ConfidenceKey& key) {
  if (key.framework == k_any && key.training == k_any && key.recompute == k_any) return "all validation points";
  std::string out = key.framework == k_any ? "any framework" : std::string(key.framework);
  out += key.training == "peft" ? ", PEFT (LoRA, QLoRA)"
         : key.training == "full-parameter" ? ", full-parameter training" : ", any training";
  out += key.recompute == "none" ? ", no recompute"
         : key.recompute == k_any ? ", any recompute" : ", " + std::string(key.recompute) + " recompute";
  return out;
}

}  // namespace trainmem
