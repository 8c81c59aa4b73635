// The numeric form of a config and a result (slots.hpp). The JS decoder is held to the JSON path
// by tests/wasm/slots.test.mjs; here the core's side: a config's slots resolve to the config its
// JSON resolves to, and bad slots are named like bad JSON values.
#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "trainmem/slots.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

constexpr double k_unset = std::numeric_limits<double>::quiet_NaN();

size_t index_of(std::string_view name) {
  const auto specs = field_specs();
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return i;
  FAIL("no field " << name);
  return 0;
}

// A small model's required shape (4 layers, h 256, 8 heads, V 1024, s 128); the rest unset.
std::vector<double> small_model_slots() {
  std::vector<double> slots(field_specs().size(), k_unset);
  for (const auto& [name, value] : {std::pair<std::string_view, double>{"num_layers", 4}, {"hidden_size", 256},
                                    {"num_attention_heads", 8}, {"vocab_size", 1024}, {"seq_length", 128}})
    slots[index_of(name)] = value;
  return slots;
}

}  // namespace

TEST_CASE("a config's slots resolve to the config its JSON resolves to", "[slots]") {
  std::vector<double> slots = small_model_slots();
  slots[index_of("micro_batch_size")] = 2;
  slots[index_of("swiglu")] = 1;                    // a boolean
  slots[index_of("normalization")] = 1;             // choices: LayerNorm, RMSNorm, none
  slots[index_of("recompute_granularity")] = 1;     // none, selective, ...
  slots[index_of("recompute_modules")] = 1 + 2;     // core_attn and mlp
  slots[index_of("num_moe_experts")] = 4;
  slots[index_of("moe_layer_freq")] = -1;           // the list follows in the channel
  const std::vector<double> layers = {4, 0, 1, 1, 1};  // its length, then its entries
  ConfigInput input;
  REQUIRE(read_slots(slots, layers, {}, {}, input).empty());
  const Config from_slots = resolve(input).config;
  const Config from_json = config_from(R"({"num_layers": 4, "hidden_size": 256,
      "num_attention_heads": 8, "vocab_size": 1024, "seq_length": 128, "micro_batch_size": 2,
      "swiglu": true, "normalization": "RMSNorm", "recompute_granularity": "selective",
      "recompute_modules": ["core_attn", "mlp"], "num_moe_experts": 4, "moe_layer_freq": [0, 1, 1, 1]})");
  CHECK(from_slots == from_json);

  SlotResult result;
  estimate_slots(slots, layers, {}, {}, false, result);
  REQUIRE(result.numbers.at(0) == 1);
  CHECK(result.numbers.at(1) == double(Profile::trainmem));
  CHECK(result.numbers.at(4) == full_estimate(from_json).total_bytes);
  // The texts, one per line in the schema's order: the NCCL communicators' names, ..., the
  // training log's line, the summary.
  CHECK(result.text.find("\nTheoretical memory footprints: ") != std::string::npos);
}

TEST_CASE("bad slots are named like bad JSON values, and the rest is still checked", "[slots]") {
  std::vector<double> slots = small_model_slots();
  slots[index_of("num_layers")] = 2.5;
  slots[index_of("normalization")] = 7;   // no such choice
  slots[index_of("swiglu")] = 2;          // no boolean
  SlotResult result;
  estimate_slots(slots, {}, {}, {}, false, result);
  REQUIRE(result.numbers == std::vector<double>{0});
  // One "field, message, related fields, rule id" line per issue (reading problems name no rule).
  CHECK(result.text ==
        "num_layers\tnum_layers: must be an integer, got 2.5\t\t\n"
        "swiglu\tswiglu: must be true or false, got 2\t\t\n"
        "normalization\tnormalization: must be one of \"LayerNorm\", \"RMSNorm\", \"none\", got 7\t\t\n"
        "micro_batch_size\tmicro_batch_size: is required (a positive integer)\t\t\n");
  // A rule row's issue carries its related fields and its id.
  slots = small_model_slots();
  slots[index_of("tensor_model_parallel_size")] = 3;
  estimate_slots(slots, {}, {}, {}, false, result);
  CHECK(result.text.find("num_attention_heads\tnum_attention_heads: must be divisible by tensor_model_parallel_size (3), got ") != std::string::npos);
  CHECK(result.text.find("\ttensor_model_parallel_size\tnum_attention_heads/tensor-parallel\n") != std::string::npos);
  ConfigInput input;
  CHECK(read_slots(std::vector<double>(3, k_unset), {}, {}, {}, input) ==
        std::vector<Issue>{{"config", "config: must have one slot per field (" +
                                          std::to_string(field_specs().size()) + "), got 3"}});
}

TEST_CASE("a list field at -1 takes its list from the channel, and a channel that ends early is named", "[slots]") {
  std::vector<double> slots = small_model_slots();
  slots[index_of("micro_batch_size")] = 1;
  slots[index_of("num_moe_experts")] = 4;
  slots[index_of("moe_layer_freq")] = -1;
  slots[index_of("pipeline_model_parallel_size")] = 2;
  slots[index_of("pipeline_stage_layers")] = -1;
  ConfigInput input;
  // Both lists, in the field table's order: moe_layer_freq's, then pipeline_stage_layers'.
  REQUIRE(read_slots(slots, std::vector<double>{4, 0, 1, 1, 1, 2, 3, 1}, {}, {}, input).empty());
  CHECK(input.pipeline_stage_layers == std::vector<int64_t>{3, 1});
  CHECK(input.moe_layer_freq_list == std::vector<uint8_t>{0, 1, 1, 1});
  // The second list's length runs past the channel's end: that field is named, not read past.
  ConfigInput short_input;
  CHECK(read_slots(slots, std::vector<double>{4, 0, 1, 1, 1, 5, 3}, {}, {}, short_input) ==
        std::vector<Issue>{{"pipeline_stage_layers",
                            "pipeline_stage_layers: its list is missing from the list channel (slots.hpp)"}});
}

TEST_CASE("an order of keys that names no slot is passed over", "[slots]") {
  // Found by fuzzing: any double may arrive as an order entry (a huge one was cast to size_t).
  std::vector<double> slots = small_model_slots();
  slots[index_of("micro_batch_size")] = 1;
  const std::vector<double> order = {5.48612e+303, -1, 0.5, k_unset, 1e9, double(index_of("num_layers"))};
  ConfigInput input;
  CHECK(read_slots(slots, {}, {}, order, input).empty());
  CHECK(input.num_layers == 4);
  CHECK_FALSE(input.hidden_size.has_value());  // not in the order: not read
}

TEST_CASE("the tables name what the result's numbers index", "[slots]") {
  const std::string tables = "\n" + slot_tables();
  CHECK(tables.find("component\tdense parameters and optimizer\ncomponent\trouted expert parameters and optimizer\n") !=
        std::string::npos);
  CHECK(tables.find("moment\tforward\nmoment\tbackward\nmoment\toptimizer_step\n") != std::string::npos);
  CHECK(tables.find("overhead\tcaching_allocator\noverhead\tcuda_context\noverhead\tnccl\n") != std::string::npos);
  CHECK(tables.find("figure\tallocated\nfigure\treserved\nfigure\tdevice\n") != std::string::npos);
  size_t assumptions = 0;
  for (size_t at = tables.find("assumption\t"); at != std::string::npos; at = tables.find("assumption\t", at + 1)) ++assumptions;
  CHECK(assumptions == size_t(Assumption::count));
}

TEST_CASE("the result schema's keys are the JSON document's, and the slots read to its end", "[slots][schema]") {
  // One declaration (result_schema.hpp) walked by three writers: the schema text's top-level keys
  // (through branches and maybes) must be a result's JSON keys, in order, for a trainmem result
  // with every optional part: a capacity (verdicts), the run at other capacities, a DeepSpeed
  // estimator, the trace.
  const Config config = config_from(R"({"num_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
      "vocab_size": 1024, "seq_length": 128, "micro_batch_size": 1, "data_parallel_size": 2,
      "profile": "trainmem", "framework": "deepspeed", "zero_stage": 3, "gpu_memory_bytes": 1e9})");
  Trace trace;
  FullEstimate est = full_estimate(config, &trace);
  const double capacities[] = {2e9, 4e9};
  est.capacity_fits = fits_at_capacities(config, est, capacities);
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(estimate_to_json(config, est, &trace));
  std::vector<std::string> schema_keys;
  const std::string schema = result_schema_text();
  size_t lines = 0;
  std::string parent_kind;  // the kind of the last depth-0 node
  for (size_t at = 0; at < schema.size();) {
    const size_t end = schema.find('\n', at);
    const std::string line = schema.substr(at, end - at);
    at = end + 1;
    ++lines;
    // depth TAB kind TAB key ...: the top level's keys are depth 0 (not a branch, whose name is no
    // key) and the nodes a depth-0 branch or maybe holds at depth 1.
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1), t3 = line.find('\t', t2 + 1);
    const std::string depth = line.substr(0, t1), kind = line.substr(t1 + 1, t2 - t1 - 1), key = line.substr(t2 + 1, t3 - t2 - 1);
    if (depth == "0") parent_kind = kind;
    const bool top = (depth == "0" && kind != "branch" && kind != "maybe") ||
                     (depth == "1" && (parent_kind == "branch" || parent_kind == "maybe"));
    if (top) schema_keys.push_back(key);
  }
  std::vector<std::string> json_keys;
  for (const auto& [key, value] : doc.items()) json_keys.push_back(key);
  CHECK(schema_keys == json_keys);
  CHECK(lines > 100);

  // The slots: the walk's numbers end where the resolved config and the trace's end.
  SlotResult slots;
  write_result_slots(config, est, slots, &trace);
  CHECK(slots.numbers.front() == 1);  // the flag "ok"
  CHECK(slots.numbers.back() == trace.back().value);
  // Every table an entry names is one slot_tables() has.
  const std::string tables = "\n" + slot_tables();
  for (size_t at = schema.find("\tentry\t"); at != std::string::npos; at = schema.find("\tentry\t", at + 1)) {
    const size_t key_end = schema.find('\t', at + 7), table_end = schema.find('\t', key_end + 1);
    const std::string table = schema.substr(key_end + 1, table_end - key_end - 1);
    CHECK(tables.find("\n" + table + "\t") != std::string::npos);
  }
}
