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

TEST_CASE("the default profile counts every preset's parameters as the publisher does", "[data][presets][golden]") {
  // trainmem counts norms by type, biases, q/k norms, routers and MLA as the models have them, so
  // where the publisher gives an exact total (the safetensors count) it must match exactly.
  // Known gaps, each a structure no field describes yet (they stay within 0.5 %): Gemma 2/3's
  // extra pre/post-feedforward norms (2·h per layer) and Gemma 3's vision tower, GPT-OSS's
  // attention sinks (one per head and layer), OLMo 2's full-width q/k norms.
  const auto doc = nlohmann::json::parse(presets_json());
  for (const auto& preset : doc["presets"]) {
    const std::string id = preset["id"];
    auto config = preset["config"];
    config["micro_batch_size"] = 1;
    const Run run = run_estimate(config.dump());
    REQUIRE(run.ok());
    const auto& published = preset["published_params"];
    double total = published["total"].get<double>();
    if (id == "deepseek-v3") total += 11.5e9;  // the published 671B excludes the 11.5B MTP module
    // Gemma 3's published count includes its vision tower: compare with the text decoder's.
    if (preset["param_check"]["scope"] == "text decoder only")
      total = preset["param_check"]["hf_layout_params"].get<double>();
    const bool gap = id.rfind("gemma", 0) == 0 || id.rfind("gpt-oss", 0) == 0 || id == "olmo-2-7b";
    CAPTURE(id, run.estimate.params.total, total);
    if (published["exact"].get<bool>() && !gap)
      CHECK(run.estimate.params.total == total);
    else
      CHECK(std::fabs(run.estimate.params.total / total - 1) <= 0.005);
    // Active parameters (MoE): publishers round them (e.g. "12.9B"); agree within 2 % once their
    // convention is applied (GPT-OSS counts without the input embedding). DeepSeek's "activated"
    // convention is not stated precisely enough to check.
    if (published["active"].is_number() && id.rfind("deepseek", 0) != 0) {
      double active = run.estimate.params.active;
      if (published.value("active_excludes", "") == "input_embedding")
        active -= double(config["vocab_size"].get<int64_t>()) * config["hidden_size"].get<double>();
      CAPTURE(active, published["active"].get<double>());
      CHECK(std::fabs(active / published["active"].get<double>() - 1) <= 0.02);
    }
  }
}
