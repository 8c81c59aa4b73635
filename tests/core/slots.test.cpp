// The numeric form of a config and a result (slots.hpp). The JS decoder is held to the JSON path
// by tests/wasm/slots.test.mjs; here the core's side: a config's slots resolve to the config its
// JSON resolves to, and bad slots are named like bad JSON values.
#include <cmath>
#include <limits>
#include <utility>

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
  // The texts: the summary, the training log's line, then one NCCL communicator per line.
  CHECK(result.text.rfind("Theoretical memory footprints: ", 0) == 0);
}

TEST_CASE("bad slots are named like bad JSON values, and the rest is still checked", "[slots]") {
  std::vector<double> slots = small_model_slots();
  slots[index_of("num_layers")] = 2.5;
  slots[index_of("normalization")] = 7;   // no such choice
  slots[index_of("swiglu")] = 2;          // no boolean
  SlotResult result;
  estimate_slots(slots, {}, {}, {}, false, result);
  REQUIRE(result.numbers == std::vector<double>{0});
  CHECK(result.text ==
        "num_layers\tnum_layers: must be an integer, got 2.5\n"
        "swiglu\tswiglu: must be true or false, got 2\n"
        "normalization\tnormalization: must be one of \"LayerNorm\", \"RMSNorm\", \"none\", got 7\n"
        "micro_batch_size\tmicro_batch_size: is required (a positive integer)\n");
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
  const std::string tables = slot_tables();
  CHECK(tables.find("component\tdense parameters and optimizer\ncomponent\trouted expert parameters and optimizer\n") !=
        std::string::npos);
  CHECK(tables.find("moment\tforward\nmoment\tbackward\nmoment\toptimizer_step\n") != std::string::npos);
  CHECK(tables.find("overhead\tcaching_allocator\noverhead\tcuda_context\noverhead\tnccl\n") != std::string::npos);
  CHECK(tables.find("figure\tallocated\nfigure\treserved\nfigure\tdevice\n") != std::string::npos);
  size_t assumptions = 0;
  for (size_t at = tables.find("assumption\t"); at != std::string::npos; at = tables.find("assumption\t", at + 1)) ++assumptions;
  CHECK(assumptions == size_t(Assumption::count));
}
