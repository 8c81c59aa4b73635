// The curated presets and GPU table shipped in core/data/ (embedded at build time).
#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace trainmem;

TEST_CASE("every preset is a valid configuration in both reference profiles", "[data][presets]") {
  const auto doc = nlohmann::json::parse(presets_json());
  REQUIRE(doc["presets"].size() >= 28);
  for (const auto& preset : doc["presets"]) {
    auto config = preset["config"];
    config["micro_batch_size"] = 1;
    for (const char* profile : {"megatron-bridge", "megatron-lm"}) {
      config["profile"] = profile;
      const Run run = run_estimate(config.dump());
      std::string problems;
      for (const Issue& i : run.issues) problems += i.message + "\n";
      CAPTURE(preset["id"].get<std::string>(), profile, problems);
      CHECK(run.ok());
    }
  }
}

TEST_CASE("preset shapes reproduce the publishers' parameter totals", "[data][presets][golden]") {
  // megatron-lm counts RMSNorm, routers and MLA as the models have them (reference §4.1), so a
  // correct shape lands within 0.5 % of the published total. Excluded, with the reason:
  // gated-GELU MLPs (Gemma, GPT-OSS's clamped SwiGLU variant), which the reference profiles count
  // as two matrices instead of three (reference §6 quirk 4); the trainmem profile will count them.
  const auto doc = nlohmann::json::parse(presets_json());
  int checked = 0;
  for (const auto& preset : doc["presets"]) {
    const std::string id = preset["id"];
    if (id.rfind("gemma", 0) == 0 || id.rfind("gpt-oss", 0) == 0) continue;
    auto config = preset["config"];
    config["micro_batch_size"] = 1;
    config["profile"] = "megatron-lm";
    const Run run = run_estimate(config.dump());
    REQUIRE(run.ok());
    double published = preset["published_params"]["total"].get<double>();
    // DeepSeek-V3's 671B excludes its MTP module (11.5B, technical report §2.2), which
    // mtp_num_layers = 1 includes.
    if (id == "deepseek-v3") published += 11.5e9;
    CAPTURE(id, run.estimate.params.total, published);
    CHECK(std::fabs(run.estimate.params.total / published - 1) <= 0.005);
    ++checked;
  }
  CHECK(checked >= 23);
}

TEST_CASE("the GPU table gives capacities in bytes", "[data][gpus]") {
  const auto doc = nlohmann::json::parse(gpus_json());
  for (const char* id : {"a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "mi300x-192gb", "tpu-v5p"}) {
    bool found = false;
    for (const auto& gpu : doc["gpus"])
      if (gpu["id"] == id) found = gpu["memory_bytes"].get<double>() > 30e9;
    CAPTURE(id);
    CHECK(found);
  }
  // H100 80GB: nvidia-smi reports 81,559 MiB.
  for (const auto& gpu : doc["gpus"])
    if (gpu["id"] == "h100-80gb") CHECK(gpu["memory_bytes"].get<double>() == 81559.0 * 1024 * 1024);
}
