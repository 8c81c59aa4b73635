// How sure a trainmem result is (issue 13, item 8): the validation group closest to the run and
// that group's median and 90th-percentile |error| against published measurements. The groups are
// generated from `npm run validate` (confidence_table.inc); this file only picks one.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

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

namespace {

std::string group_name_of(const ConfidenceKey& key) {
  if (key.framework == k_any && key.training == k_any && key.recompute == k_any) return "all validation points";
  std::string out = key.framework == k_any ? "any framework" : std::string(key.framework);
  out += key.training == "peft" ? ", PEFT (LoRA, QLoRA)"
         : key.training == "full-parameter" ? ", full-parameter training" : ", any training";
  out += key.recompute == "none" ? ", no recompute"
         : key.recompute == k_any ? ", any recompute" : ", " + std::string(key.recompute) + " recompute";
  return out;
}

// Every key confidence_for can make, named once: the result slots write two names per estimate.
constexpr std::array<std::string_view, 3> k_trainings = {"full-parameter", "peft", k_any};
constexpr std::array<std::string_view, 4> k_recomputes = {"none", "selective", "full", k_any};
constexpr size_t k_frameworks = size_t(Framework::count) + 1;  // and "any"

std::string_view framework_part(size_t i) { return i < size_t(Framework::count) ? name_of(Framework(i)) : k_any; }

const std::vector<std::string>& named_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (size_t f = 0; f < k_frameworks; ++f)
      for (std::string_view training : k_trainings)
        for (std::string_view recompute : k_recomputes) out.push_back(group_name_of({framework_part(f), training, recompute}));
    return out;
  }();
  return names;
}

template <size_t N>
size_t position(const std::array<std::string_view, N>& parts, std::string_view part) {
  return size_t(std::find(parts.begin(), parts.end(), part) - parts.begin());
}

}  // namespace

std::string confidence_group_name(const ConfidenceKey& key) {
  size_t f = 0;
  while (f < k_frameworks && framework_part(f) != key.framework) ++f;
  const size_t t = position(k_trainings, key.training), r = position(k_recomputes, key.recompute);
  if (f == k_frameworks || t == k_trainings.size() || r == k_recomputes.size()) return group_name_of(key);
  return named_keys()[(f * k_trainings.size() + t) * k_recomputes.size() + r];
}

}  // namespace trainmem
