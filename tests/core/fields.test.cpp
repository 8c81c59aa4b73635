// The field table documents what an unset field resolves to; resolve() must agree with it.
#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "support.hpp"
#include "trainmem/field_names.hpp"
#include "trainmem/json_io.hpp"
#include "trainmem/slots.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

// A resolved value written the way the field documentation writes defaults.
std::string documented(const FieldValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    std::string out = "[";
    for (size_t i = 0; i < list->size(); ++i) out += (i ? ", \"" : "\"") + (*list)[i] + "\"";
    return out + "]";
  }
  if (const auto* d = std::get_if<double>(&value)) {
    std::ostringstream text;
    text << std::setprecision(15) << *d;
    return text.str();
  }
  return "?";
}

}  // namespace

TEST_CASE("every unset field resolves to the default the field table documents", "[fields]") {
  // Defaults that follow from other fields are documented in words; these are checked by the
  // resolution tests of validation.test.cpp, not here.
  const std::set<std::string> derived = {
      "num_query_groups", "kv_channels", "ffn_hidden_size", "swiglu", "moe_ffn_hidden_size",
      "zero_stage", "data_parallel_shard_size", "params_dtype", "expert_params_dtype",
      "compute_dtype", "pipeline_schedule", "expert_tensor_parallel_size",
      "model_implementation",   // implementations.test.cpp checks its rule
      "overlap_comm",           // trainmem_state.test.cpp checks its rule
      "nf4_double_quant", "quantize_lm_head",  // qlora.test.cpp checks their rules
      "kbit_upcast", "bnb_keeps_matmul_input", // kbit_upcast.test.cpp checks their rules
      "checkpoint_reentrant",   // finetune.test.cpp checks its rule
      "fsdp1_checkpoint_around_unit",  // fsdp1.test.cpp checks its rule
      "expandable_segments",    // fsdp1.test.cpp checks its rule
      "lora_expert_dtype",      // megatron_expert_lora.test.cpp checks its rule
      "world_size"};            // validation.test.cpp checks its rule
  // Minimal configs in which every optional field applies somewhere: a dense model, MoE with
  // MLA, MoE with a capacity factor, full, selective and per-op recompute, SGD, torch pipelining,
  // FSDP1 with full recompute.
  const std::string base = R"("num_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
      "vocab_size": 1024, "seq_length": 128, "micro_batch_size": 1)";
  const std::vector<std::string> contexts = {
      "{" + base + "}",
      "{" + base + R"(, "num_moe_experts": 4, "multi_latent_attention": true})",
      "{" + base + R"(, "num_moe_experts": 4, "moe_expert_capacity_factor": 1.5})",
      "{" + base + R"(, "recompute_granularity": "full"})",
      "{" + base + R"(, "recompute_granularity": "selective", "optimizer": "sgd"})",
      "{" + base + R"(, "framework": "fsdp2", "pipeline_model_parallel_size": 2})",
      "{" + base + R"(, "peft": "lora"})",
      "{" + base + R"(, "framework": "fsdp2", "recompute_granularity": "selective_op"})",
      "{" + base + R"(, "framework": "fsdp2", "fsdp_version": 1, "recompute_granularity": "full"})",
  };
  std::map<std::string, int> checked;
  for (const std::string& json : contexts) {
    CAPTURE(json);
    const ConfigInput written = to_input(config_from(json));
    for (const FieldSpec& spec : field_specs()) {
      const std::string name(spec.name);
      if (spec.required || derived.count(name)) continue;
      if (json.find("\"" + name + "\"") != std::string::npos) continue;  // set by the context
      const FieldValue value = get_field(written, name);
      CAPTURE(name, spec.default_text);
      const bool numeric = spec.type == FieldType::integer || spec.type == FieldType::number ||
                           spec.type == FieldType::integer_list;
      if (numeric && spec.default_text.substr(0, 4) == "none") {
        // Megatron's None: never written back.
        CHECK(std::holds_alternative<std::monostate>(value));
        ++checked[name];
      } else if (!std::holds_alternative<std::monostate>(value)) {
        // "536870912 (512 MiB)": the value leads, a gloss may follow.
        CHECK(documented(value) == spec.default_text.substr(0, spec.default_text.find(" (")));
        ++checked[name];
      }
    }
  }
  for (const FieldSpec& spec : field_specs()) {
    const std::string name(spec.name);
    if (spec.required || derived.count(name)) continue;
    CAPTURE(name);
    CHECK(checked[name] > 0);  // every documented default was compared at least once
  }
}

TEST_CASE("the profile an unset field resolves to is Config{}'s", "[fields]") {
  const Config c = config_from(R"({"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 128, "seq_length": 16, "micro_batch_size": 1})");
  CHECK(c.profile == Profile::trainmem);
  CHECK(Config{}.profile == Profile::trainmem);
  CHECK(find_field("profile")->default_text == "trainmem");
}

TEST_CASE("a field set where it does not apply is named with the rule", "[fields]") {
  const std::string base = R"("num_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
      "vocab_size": 1024, "seq_length": 128, "micro_batch_size": 1)";
  CHECK(messages_for("{" + base + R"(, "recompute_method": "block", "recompute_num_layers": 2})") ==
        std::vector<std::string>{
            "recompute_method: applies to recompute_granularity \"full\" only",
            "recompute_num_layers: applies to recompute_granularity \"full\" only"});
  CHECK(messages_for("{" + base + R"(, "momentum": 0.9})") ==
        std::vector<std::string>{"momentum: applies to optimizer \"sgd\" only"});
  CHECK(messages_for("{" + base + R"(, "framework": "fsdp2", "pipeline_outputs": "kept"})") ==
        std::vector<std::string>{
            "pipeline_outputs: applies to frameworks ddp and fsdp2 with "
            "pipeline_model_parallel_size > 1 (torch.distributed.pipelining)"});
  CHECK(messages_for("{" + base + R"(, "data_parallel_shard_size": 2, "data_parallel_size": 4})") ==
        std::vector<std::string>{"data_parallel_shard_size: applies to fsdp2 (hybrid sharding) only"});
  // In a reference profile such fields are the trainmem profile's, and said so once.
  CHECK(messages_for("{" + base + R"(, "profile": "megatron-lm", "momentum": 0.9})") ==
        std::vector<std::string>{
            "momentum: is read only by the trainmem profile (profile is \"megatron-lm\")"});
}

TEST_CASE("a long string in a message is cut at a character boundary", "[fields]") {
  // 39 ASCII characters, then "é" (2 bytes) across the 40-byte cut: the cut backs off before it.
  const std::string value = std::string(39, 'a') + "\u00e9tail";
  ConfigInput input;
  const std::optional<Issue> problem = set_field(input, "seq_length", value);
  REQUIRE(problem);
  CHECK(problem->message == "seq_length: must be an integer, got the string \"" + std::string(39, 'a') + "…\"");
}

namespace {

// The names fields_in_effect flags for a config given as JSON (resolved whatever its problems).
std::set<std::string> in_effect(const std::string& json) {
  const ParsedConfig parsed = parse_config_json(json);
  const std::vector<bool> flags = fields_in_effect(parsed.input);
  const std::span<const FieldSpec> specs = field_specs();
  REQUIRE(flags.size() == specs.size());
  std::set<std::string> out;
  for (size_t i = 0; i < specs.size(); ++i)
    if (flags[i]) out.insert(std::string(specs[i].name));
  return out;
}

}  // namespace

TEST_CASE("which fields mean something is the field rows' answer, for partial and broken configs too",
          "[fields][in_effect]") {
  // Megatron (the default framework) on a dense model without a pipeline: no MoE, pipeline,
  // DeepSpeed, FSDP or torch-only field means anything; the distributed optimizer does.
  const std::string dense = R"({"num_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
      "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 1)";
  const std::set<std::string> megatron = in_effect(dense + "}");
  for (const char* name : {"num_layers", "use_distributed_optimizer", "framework", "gpu_memory_bytes"})
    CHECK(megatron.count(name) == 1);
  for (const char* name : {"expert_model_parallel_size", "virtual_pipeline_model_parallel_size", "zero_stage",
                           "reduce_bucket_size", "gradient_as_bucket_view", "torch_compile", "paged_optimizer",
                           "lora_rank", "momentum", "fp8_param_gather", "fsdp_embedding_units"})
    CHECK(megatron.count(name) == 0);
  // DeepSpeed: its knobs; the bucket size only with contiguous gradients (DeepSpeed ignores it otherwise).
  const std::set<std::string> ds = in_effect(dense + R"(, "framework": "deepspeed", "zero_stage": 3})");
  for (const char* name : {"zero_stage", "zero_init", "contiguous_gradients", "reduce_bucket_size", "overlap_comm",
                           "paged_optimizer", "torch_compile"})
    CHECK(ds.count(name) == 1);
  CHECK(ds.count("use_distributed_optimizer") == 0);
  CHECK(in_effect(dense + R"(, "framework": "deepspeed", "contiguous_gradients": false})").count("reduce_bucket_size") == 0);
  // FSDP2 resolves its model code to torchtitan: torch.compile means something, Liger and torchtune's
  // chunked loss do not; full sharding gives the embedding units a meaning.
  const std::set<std::string> fsdp = in_effect(dense + R"(, "framework": "fsdp2", "data_parallel_size": 2})");
  CHECK(fsdp.count("torch_compile") == 1);
  CHECK(fsdp.count("fused_linear_cross_entropy") == 0);
  CHECK(fsdp.count("cross_entropy_chunks") == 0);
  CHECK(fsdp.count("fsdp_embedding_units") == 1);
  CHECK(in_effect(dense + R"(, "framework": "fsdp2", "zero_stage": 2})").count("fsdp_embedding_units") == 0);
  // MoE, a pipeline, MLA, LoRA, SGD, FP8 each bring their fields.
  const std::set<std::string> moe = in_effect(dense + R"(, "num_moe_experts": 8, "pipeline_model_parallel_size": 2,
      "optimizer": "sgd", "fp8_recipe": "delayed"})");
  for (const char* name : {"expert_model_parallel_size", "moe_router_topk", "expert_params_dtype", "pipeline_schedule",
                           "pipeline_stage_layers", "virtual_pipeline_model_parallel_size", "momentum", "fp8_param_gather"})
    CHECK(moe.count(name) == 1);
  const std::set<std::string> qlora = in_effect(dense + R"(, "framework": "ddp", "peft": "qlora"})");
  for (const char* name : {"lora_rank", "lora_target_modules", "nf4_double_quant", "quantize_lm_head", "gradient_as_bucket_view"})
    CHECK(qlora.count(name) == 1);
  // The reference profiles read no trainmem-only field.
  const std::set<std::string> bridge = in_effect(dense + R"(, "profile": "megatron-bridge"})");
  CHECK(bridge.count("framework") == 0);
  CHECK(bridge.count("use_distributed_optimizer") == 1);
  // A broken or partial config still has an answer: the MoE fields of an MoE model without a shape.
  const std::set<std::string> partial = in_effect(R"({"num_moe_experts": 4, "tensor_model_parallel_size": 3})");
  CHECK(partial.count("expert_model_parallel_size") == 1);
  CHECK(partial.count("num_layers") == 1);
}

TEST_CASE("each field row names its link key and label: non-empty, and no key shared or another field's name",
          "[fields][rows]") {
  std::set<std::string_view> keys;
  for (const FieldSpec& spec : field_specs()) {
    INFO(spec.name);
    CHECK(!spec.link_key.empty());
    CHECK(!spec.label.empty());
    CHECK(keys.insert(spec.link_key).second);
    const FieldSpec* named = find_field(spec.link_key);
    CHECK((named == nullptr || named == &spec));
    CHECK(find_field_by_link_key(spec.link_key) == &spec);
    CHECK(find_field_by_link_key(spec.name) == &spec);  // a hand-written link may spell the name
  }
  CHECK(find_field_by_link_key("tp")->name == "tensor_model_parallel_size");
  CHECK(find_field_by_link_key("no_such_key") == nullptr);
}

TEST_CASE("each field row places the field in the page's form: every field has a section but the one the page sets, one order each",
          "[fields][rows]") {
  // web/js/layout.js builds the form from these places alone: a field without a section has no
  // input. The page sets only the GPU's capacity itself (its GPU picker and capacity box).
  std::set<std::string_view> set_by_page;
  std::map<FormSection, std::set<uint16_t>> orders;
  std::map<FormSection, int> shown;
  for (const FieldSpec& spec : field_specs()) {
    INFO(spec.name);
    if (spec.form.section == FormSection::none) {
      set_by_page.insert(spec.name);
      continue;
    }
    CHECK(spec.form.order > 0);
    CHECK(orders[spec.form.section].insert(spec.form.order).second);  // a tie would leave the order to chance
    if (!spec.form.more) ++shown[spec.form.section];
  }
  CHECK(set_by_page == std::set<std::string_view>{field::gpu_memory_bytes});
  // Every section holds a field among its own inputs (an empty one would be a title alone).
  for (size_t i = 1; i < size_t(FormSection::count); ++i) {
    INFO(name_of(FormSection(i)));
    CHECK(shown[FormSection(i)] > 0);
  }
}

TEST_CASE("a choice field's labels, where its row has them, word each of its choices", "[fields][rows]") {
  size_t labelled = 0;
  for (const FieldSpec& spec : field_specs()) {
    if (spec.choice_labels.empty()) continue;
    INFO(spec.name);
    ++labelled;
    CHECK((spec.type == FieldType::choice || spec.type == FieldType::choice_list));
    REQUIRE(spec.choice_labels.size() == spec.choices.size());
    for (std::string_view label : spec.choice_labels) CHECK(!label.empty());
  }
  CHECK(labelled > 0);
  CHECK(find_field(field::peft)->choice_labels[0] == "full fine-tuning");  // peft "none"
}

TEST_CASE("without_fields_out_of_effect unsets what the form remembers but the config does not read",
          "[fields][in_effect]") {
  // momentum was set while the optimizer was SGD; with AdamW it does not apply (resolve() rejects
  // it set), so a view estimates without it and says it is not in effect.
  const ParsedConfig parsed = parse_config_json(small_llama(R"("framework": "ddp", "optimizer": "adamw", "momentum": 0.9)"));
  REQUIRE(parsed.issues.empty());
  CHECK_FALSE(resolve(parsed.input).ok());
  std::vector<bool> flags;
  const ConfigInput used = without_fields_out_of_effect(parsed.input, &flags);
  CHECK_FALSE(used.momentum.has_value());
  CHECK(used.optimizer == parsed.input.optimizer);
  CHECK(resolve(used).ok());
  const std::span<const FieldSpec> specs = field_specs();
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == "momentum") CHECK_FALSE(flags[i]);
  // Nothing out of effect: the input comes back as it was.
  const ParsedConfig plain = parse_config_json(small_llama(R"("framework": "ddp")"));
  CHECK(resolve(without_fields_out_of_effect(plain.input)).config == resolve(plain.input).config);
}

namespace {

// Every other field a message names, whole words only (a field's name inside a longer word is not
// that field: "num_layers" in "num_layers_in_first_pipeline_stage"). The core no longer reads its
// messages; this test holds each rule's declared related fields (Issue::related) to what its
// message names.
std::vector<std::string> fields_named_in(const Issue& issue) {
  std::vector<std::string> out;
  const std::string_view text = issue.message;
  auto word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (const FieldSpec& spec : field_specs()) {
    if (spec.name == issue.field) continue;
    for (size_t at = text.find(spec.name); at != std::string_view::npos; at = text.find(spec.name, at + 1)) {
      const bool starts = at == 0 || !word_char(text[at - 1]);
      const bool ends = at + spec.name.size() == text.size() || !word_char(text[at + spec.name.size()]);
      if (starts && ends) {
        out.emplace_back(spec.name);
        break;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("each rule declares the other fields it involves, every one its message names", "[fields][issues]") {
  // A run with TP 3: every issue involves tensor_model_parallel_size (its own field or a related one).
  const ParsedConfig bad = parse_config_json(R"({"num_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
      "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 1, "tensor_model_parallel_size": 3})");
  const Resolved resolved = resolve(bad.input);
  REQUIRE_FALSE(resolved.ok());
  for (const Issue& issue : resolved.issues) {
    INFO(issue.field + ": " + issue.message);
    const bool names_tp = issue.field == "tensor_model_parallel_size" ||
                          std::find(issue.related.begin(), issue.related.end(), "tensor_model_parallel_size") != issue.related.end();
    CHECK(names_tp);
  }
  // Over many broken configs (each field of a small run set to odd values, one and two at a time,
  // seeded), every field a message names is among its rule's declared ones.
  const std::span<const FieldSpec> specs = field_specs();
  const std::string base = R"("num_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1000,
      "seq_length": 128, "micro_batch_size": 1, "profile": "trainmem")";
  auto values_of = [](const FieldSpec& spec) {
    std::vector<std::string> out;
    switch (spec.type) {
      case FieldType::boolean: out = {"true", "false"}; break;
      case FieldType::choice:
      case FieldType::choice_list:
        for (std::string_view c : spec.choices) out.push_back(spec.type == FieldType::choice ? "\"" + std::string(c) + "\"" : "[\"" + std::string(c) + "\"]");
        break;
      default: out = {"0", "1", "3", "7", "64", "0.5"};
    }
    return out;
  };
  std::vector<std::string> assignments;
  for (const FieldSpec& spec : specs)
    for (const std::string& v : values_of(spec)) assignments.push_back("\"" + std::string(spec.name) + "\": " + v);
  uint64_t seed = 20261128;
  auto next = [&] { return (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  size_t checked = 0, undeclared = 0;
  std::map<std::string, std::string> missing;  // "field -- names other" -> a message
  for (size_t k = 0; k < assignments.size() + 6000; ++k) {
    std::string extra = assignments[k < assignments.size() ? k : next() % assignments.size()];
    if (k >= assignments.size()) extra += ", " + assignments[next() % assignments.size()] + ", " + assignments[next() % assignments.size()];
    const ParsedConfig parsed = parse_config_json("{" + base + ", " + extra + "}");
    if (!parsed.issues.empty()) continue;  // a key twice
    for (const Issue& issue : resolve(parsed.input).issues) {
      ++checked;
      for (const std::string& name : fields_named_in(issue)) {
        if (std::find(issue.related.begin(), issue.related.end(), name) != issue.related.end()) continue;
        ++undeclared;
        missing.emplace(issue.field + " -- names " + name, issue.message);
      }
    }
  }
  CHECK(checked > 1000);
  for (const auto& [what, message] : missing) UNSCOPED_INFO(what << " in: " << message);
  CHECK(undeclared == 0);
}

TEST_CASE("field names are constants: one per row, in the table's order", "[fields][rows]") {
  // Importers, the planner and the rows themselves name fields by trainmem/field_names.hpp's
  // constants, so a misspelt name does not compile; this holds the constants and the rows equal.
  const std::span<const FieldSpec> specs = field_specs();
  REQUIRE(std::size(field::all) == specs.size());
  for (size_t i = 0; i < specs.size(); ++i) CHECK(field::all[i].text == specs[i].name);
  CHECK(find_field(field::seq_length)->link_key == "s");
}

TEST_CASE("the trainmem profile's rules are rows: each fires under its own id and has its words", "[fields][rules]") {
  // Each rule row (config/rules.cpp) is written once: its check, its id (Issue::rule, which the
  // page keys on) and its words for the field documentation (FieldSpec::rules, generated).
  const std::vector<std::string_view> ids = rule_ids();
  REQUIRE(ids.size() > 40);
  const std::set<std::string_view> distinct(ids.begin(), ids.end());
  CHECK(distinct.size() == ids.size());
  // Broken configs: odd values of every field, one and three at a time (seeded), over a
  // pretraining, a LoRA and a QLoRA base on each framework; every row must fire at least once.
  const std::span<const FieldSpec> specs = field_specs();
  std::vector<std::string> assignments;
  for (const FieldSpec& spec : specs) {
    std::vector<std::string> values;
    if (spec.type == FieldType::boolean) values = {"true", "false"};
    else if (spec.type == FieldType::choice || spec.type == FieldType::choice_list)
      for (std::string_view c : spec.choices) values.push_back(spec.type == FieldType::choice ? "\"" + std::string(c) + "\"" : "[\"" + std::string(c) + "\"]");
    else values = {"0", "1", "2", "3", "16", "0.5"};
    for (const std::string& v : values) assignments.push_back("\"" + std::string(spec.name) + "\": " + v);
  }
  const std::string shape = R"("num_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "vocab_size": 1000,
      "seq_length": 128, "micro_batch_size": 1, "profile": "trainmem")";
  const std::string bases[] = {"", R"(, "peft": "lora", "lora_target_modules": ["q_proj", "lm_head"])",
                               R"(, "peft": "qlora", "framework": "ddp", "lora_target_modules": ["q_proj"])",
                               R"(, "peft": "qlora", "framework": "fsdp2", "model_implementation": "torchtune")",
                               R"(, "num_moe_experts": 4, "moe_router_topk": 2, "peft": "lora", "framework": "ddp", "lora_target_modules": ["up_proj"])"};
  uint64_t seed = 20261128;
  auto next = [&] { return (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  std::set<std::string> fired;
  size_t mismatched = 0;
  for (const std::string& base : bases) {
    for (size_t k = 0; k < assignments.size() + 3000; ++k) {
      std::string extra = assignments[k < assignments.size() ? k : next() % assignments.size()];
      if (k >= assignments.size()) extra += ", " + assignments[next() % assignments.size()] + ", " + assignments[next() % assignments.size()];
      const ParsedConfig parsed = parse_config_json("{" + shape + base + ", " + extra + "}");
      if (!parsed.issues.empty()) continue;  // a key twice
      for (const Issue& issue : resolve(parsed.input).issues) {
        if (issue.rule.empty()) continue;
        fired.insert(issue.rule);
        // The id begins with the field its message names, and the field's documentation has the
        // rule's words.
        if (issue.rule.rfind(issue.field + "/", 0) != 0 || find_field(issue.field)->rules.empty()) {
          ++mismatched;
          UNSCOPED_INFO(issue.rule << " on " << issue.field);
        }
      }
    }
  }
  // Rules the seeded walk does not reach, each broken on purpose (the walk's odd values rarely
  // make these pairs, and a new field shifts the walk): a new rule row that the walk misses gets
  // its breaking config here.
  const std::pair<std::string_view, std::string_view> targeted[] = {
      {"num_attention_heads/profile", R"("profile": "megatron-bridge", "num_attention_heads": 0)"},
      {"vocab_size/profile", R"("profile": "megatron-lm", "vocab_size": 0)"},
      {"activation_func/profile", R"("profile": "megatron-lm", "activation_func": "identity")"},
      {"swiglu/gated", R"("swiglu": true, "gated_linear_unit": false)"},
      {"swiglu/silu", R"("swiglu": true, "activation_func": "gelu")"},
      {"ffn_hidden_size/swiglu-zero", R"("profile": "megatron-lm", "swiglu": true, "hidden_size": 16, "num_attention_heads": 1)"},
      {"moe_layer_freq/per-layer", R"("num_moe_experts": 4, "moe_layer_freq": [1, 1])"},
      {"world_size/equal", R"("world_size": 8, "data_parallel_size": 4)"},
      {"world_size/at-most", R"("data_parallel_size": 1000000000, "tensor_model_parallel_size": 2)"},
      {"data_parallel_size/countable", R"("tensor_model_parallel_size": 1000000000, "pipeline_model_parallel_size": 1000000000, "context_parallel_size": 1000000000)"},
      {"pipeline_stage_layers/pipeline", R"("pipeline_stage_layers": [4])"},
      {"pipeline_stage_layers/not-uneven", R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [2, 2], "num_layers_in_first_pipeline_stage": 2)"},
      {"pipeline_stage_layers/entries", R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [4])"},
      {"pipeline_stage_layers/placed", R"("pipeline_model_parallel_size": 2, "pipeline_stage_layers": [1, 2])"},
      {"num_layers/first-last-only", R"("pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 1, "num_layers_in_last_pipeline_stage": 1)"},
      {"virtual_pipeline_model_parallel_size/uneven", R"("num_layers": 5, "pipeline_model_parallel_size": 3, "num_layers_in_first_pipeline_stage": 1, "virtual_pipeline_model_parallel_size": 2)"},
      {"seq_length/context-and-sequence-parallel", R"("context_parallel_size": 2, "tensor_model_parallel_size": 2, "sequence_parallel": true, "seq_length": 4)"},
      {"seq_length/sequence-parallel", R"("tensor_model_parallel_size": 2, "sequence_parallel": true, "seq_length": 3)"},
      {"lora_target_modules/some", R"("peft": "lora", "lora_target_modules": [])"},
      {"lora_target_modules/experts-fc1-megatron", R"("peft": "lora", "num_moe_experts": 4, "moe_router_topk": 2, "swiglu": true, "lora_target_modules": ["gate_proj", "down_proj"])"},
      {"lora_modules_to_save/vocabulary", R"("peft": "lora", "framework": "ddp", "lora_target_modules": ["q_proj"], "lora_modules_to_save": ["embed_tokens"], "vocab_size": 0)"},
      {"quantize_lm_head/vocabulary", R"("peft": "qlora", "framework": "ddp", "lora_target_modules": ["q_proj"], "quantize_lm_head": true, "vocab_size": 0)"},
      {"quantize_lm_head/liger", R"("peft": "qlora", "framework": "ddp", "lora_target_modules": ["q_proj"], "quantize_lm_head": true, "fused_linear_cross_entropy": true)"},
      {"kbit_upcast/sharded", R"("peft": "qlora", "framework": "fsdp2", "model_implementation": "hf-transformers", "lora_target_modules": ["q_proj"], "kbit_upcast": "trl")"},
      {"activation_offload/pipeline", R"("activation_offload": true, "pipeline_model_parallel_size": 2)"},
      {"torch_compile/latent-attention", R"("framework": "ddp", "torch_compile": true, "multi_latent_attention": true)"},
      {"fused_linear_cross_entropy/tensor-parallel", R"("framework": "ddp", "fused_linear_cross_entropy": true, "tensor_model_parallel_size": 2)"},
      {"cut_cross_entropy/quantized-lm-head", R"("peft": "qlora", "framework": "ddp", "lora_target_modules": ["q_proj"], "quantize_lm_head": true, "cut_cross_entropy": true)"},
      {"paged_optimizer/offload", R"("framework": "ddp", "paged_optimizer": true, "optimizer_offload_fraction": 0.5)"},
      {"fsdp_version/pipeline", R"("framework": "fsdp2", "fsdp_version": 1, "pipeline_model_parallel_size": 2)"},
      {"moe_shared_expert_intermediate_size/tensor-parallel", R"("num_moe_experts": 4, "moe_router_topk": 2, "tensor_model_parallel_size": 2, "moe_shared_expert_intermediate_size": 3)"},
      {"sequence_parallel/moe", R"("num_moe_experts": 4, "moe_router_topk": 2, "tensor_model_parallel_size": 2, "expert_model_parallel_size": 2, "data_parallel_size": 2, "sequence_parallel": false)"},
      {"optimizer_in_backward/pipeline", R"("framework": "fsdp2", "optimizer_in_backward": true, "pipeline_model_parallel_size": 2)"},
      {"activation_offload/megatron-recompute", R"("framework": "megatron", "activation_offload": true, "recompute_granularity": "full")"},
      {"activation_offload/deepspeed-recompute", R"("framework": "deepspeed", "activation_offload": true)"},
      {"fused_linear_cross_entropy/loss-fusion", R"("framework": "ddp", "fused_linear_cross_entropy": true, "cross_entropy_loss_fusion": true)"},
      {"cut_cross_entropy/other-loss", R"("framework": "ddp", "params_dtype": "bf16", "cut_cross_entropy": true, "cross_entropy_chunks": 4)"},
      {"normalization/profile", R"("profile": "megatron-lm", "normalization": "none")"},
      {"cut_cross_entropy/tensor-parallel", R"("framework": "fsdp2", "model_implementation": "hf-transformers", "params_dtype": "bf16", "cut_cross_entropy": true, "tensor_model_parallel_size": 2)"},
      {"pipeline_schedule/vpp-needs-interleaved", R"("pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "pipeline_schedule": "1f1b")"},
      {"optimizer_in_backward/one-microbatch", R"("framework": "fsdp2", "optimizer_in_backward": true, "global_batch_size": 4)"},
      {"cross_entropy_chunks/implementation", R"("framework": "fsdp2", "model_implementation": "torchtitan", "cross_entropy_chunks": 4)"},
      {"transformers_loss/hf", R"("framework": "ddp", "model_implementation": "torchtune", "transformers_loss": "shift-logits")"},
      {"transformers_loss/other-loss", R"("framework": "ddp", "transformers_loss": "shift-logits", "cross_entropy_chunks": 4)"},
      {"transformers_loss/compile", R"("framework": "ddp", "transformers_loss": "shift-logits", "torch_compile": true)"},
      {"transformers_loss/parallel", R"("framework": "fsdp2", "model_implementation": "hf-transformers", "transformers_loss": "shift-logits", "tensor_model_parallel_size": 2)"},
      {"model_output_kept/hf", R"("framework": "ddp", "model_implementation": "torchtune", "model_output_kept": true)"},
      {"checkpoint_reentrant/hf", R"("framework": "ddp", "model_implementation": "torchtune", "recompute_granularity": "full", "checkpoint_reentrant": true)"},
      {"cross_entropy_chunks/tensor-parallel", R"("framework": "fsdp2", "model_implementation": "hf-transformers", "cross_entropy_chunks": 4, "tensor_model_parallel_size": 2)"},
      {"num_microbatches/derived", R"("global_batch_size": 8, "num_microbatches": 3)"},
      {"model_output_kept/other-loss", R"("framework": "ddp", "model_output_kept": true, "cross_entropy_chunks": 4)"},
      {"model_output_kept/parallel", R"("framework": "fsdp2", "model_implementation": "hf-transformers", "model_output_kept": true, "tensor_model_parallel_size": 2)"},
      {"optimizer_implementation/paged", R"("framework": "ddp", "paged_optimizer": true, "optimizer_implementation": "fused")"},
      {"cross_entropy_chunks/loss-fusion", R"("framework": "ddp", "cross_entropy_chunks": 4, "cross_entropy_loss_fusion": true)"},
      {"cross_entropy_chunks/liger", R"("framework": "ddp", "cross_entropy_chunks": 4, "fused_linear_cross_entropy": true)"},
      {"moe_routing_imbalance/capacity", R"("num_moe_experts": 4, "moe_router_topk": 2, "moe_routing_imbalance": 2, "moe_expert_capacity_factor": 1.5)"},
      {"quantize_lm_head/nf4", R"("peft": "qlora", "framework": "ddp", "params_dtype": "int8", "lora_target_modules": ["q_proj"], "quantize_lm_head": true)"},
      {"optimizer_in_backward/ddp-one-rank", R"("framework": "ddp", "optimizer_in_backward": true, "data_parallel_size": 2)"},
      {"framework/torchtune-distributed", R"("framework": "ddp", "model_implementation": "torchtune", "data_parallel_size": 2)"},
      {"paged_optimizer/optimizer", R"("framework": "ddp", "paged_optimizer": true, "optimizer": "sgd")"},
      {"params_dtype/int8-needs-qlora", R"("peft": "lora", "framework": "ddp", "params_dtype": "int8", "lora_target_modules": ["q_proj"])"},
      {"params_dtype/int8-whole", R"("peft": "qlora", "framework": "fsdp2", "params_dtype": "int8", "model_implementation": "hf-transformers", "lora_target_modules": ["q_proj"])"},
      {"num_layers/middle-empty", R"("pipeline_model_parallel_size": 3, "num_layers_in_first_pipeline_stage": 2, "num_layers_in_last_pipeline_stage": 2)"},
      {"num_layers/middle-even", R"("num_layers": 5, "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 1, "num_layers_in_last_pipeline_stage": 1)"},
      {"pipeline_model_parallel_size/torchtune", R"("framework": "fsdp2", "model_implementation": "torchtune", "pipeline_model_parallel_size": 2)"},
      {"eval_micro_batch_size/hf", R"("framework": "ddp", "model_implementation": "torchtune", "eval_micro_batch_size": 2)"},
      {"eval_micro_batch_size/parallel", R"("framework": "fsdp2", "model_implementation": "hf-transformers", "eval_micro_batch_size": 2, "tensor_model_parallel_size": 2)"},
      {"eval_micro_batch_size/loss", R"("framework": "ddp", "eval_micro_batch_size": 2, "cross_entropy_chunks": 4)"},
      {"cross_entropy_chunks/tensor-parallel", R"("framework": "fsdp2", "model_implementation": "hf-transformers", "cross_entropy_chunks": 4, "tensor_model_parallel_size": 2)"},
      {"num_microbatches/derived", R"("global_batch_size": 8, "num_microbatches": 4)"},
      {"global_batch_size/divisible", R"("global_batch_size": 3, "data_parallel_size": 2)"},
      {"eval_samples/needed", R"("framework": "ddp", "model_implementation": "hf-transformers", "eval_micro_batch_size": 2, "eval_predictions": "logits")"},
      {"moe_token_dispatcher_type/megatron-core", R"("num_moe_experts": 4, "moe_router_topk": 2, "framework": "ddp", "model_implementation": "hf-transformers", "moe_token_dispatcher_type": "allgather")"},
      {"moe_router_score_function/megatron-core", R"("num_moe_experts": 4, "moe_router_topk": 2, "framework": "ddp", "model_implementation": "hf-transformers", "moe_router_score_function": "sigmoid")"},
      {"moe_router_enable_expert_bias/sigmoid", R"("num_moe_experts": 4, "moe_router_topk": 2, "moe_router_enable_expert_bias": true)"},
      {"moe_router_enable_expert_bias/megatron-core", R"("num_moe_experts": 4, "moe_router_topk": 2, "framework": "ddp", "model_implementation": "hf-transformers", "moe_router_score_function": "sigmoid", "moe_router_enable_expert_bias": true)"},
      {"rotary_percent/positive", R"("rotary_percent": 0)"},
  };
  for (const auto& [id, extra] : targeted) {
    const ParsedConfig parsed = parse_config_json("{" + shape + ", " + std::string(extra) + "}");
    INFO(id << " on " << extra);
    REQUIRE(parsed.issues.empty());
    bool found = false;
    for (const Issue& issue : resolve(parsed.input).issues) found |= issue.rule == id;
    CHECK(found);
    fired.insert(std::string(id));
  }
  CHECK(mismatched == 0);
  for (std::string_view id : ids) {
    INFO("rule " << id << " never fired");
    CHECK(fired.count(std::string(id)) == 1);
  }
}

TEST_CASE("method settings: each names a field with a value it accepts, and a method's settings resolve together", "[fields]") {
  REQUIRE_FALSE(method_settings().empty());
  for (const MethodSetting& m : method_settings()) {
    INFO(m.field << " = " << m.value);
    const FieldSpec* spec = find_field(m.field);
    REQUIRE(spec != nullptr);
    CHECK_FALSE(m.why.empty());
    ConfigInput in;
    CHECK_FALSE(set_field(in, m.field, FieldValue(std::string(m.value))).has_value());
  }
  // LoRA and QLoRA with their usual settings on the small model: no issue, and they are in effect.
  for (const Peft peft : {Peft::lora, Peft::qlora}) {
    std::string extra = "\"peft\": \"" + std::string(name_of(peft)) + "\"";
    for (const MethodSetting& m : method_settings())
      if (m.peft == peft) extra += ", \"" + std::string(m.field) + "\": \"" + std::string(m.value) + "\"";
    const Config c = config_from(small_llama(extra));
    CHECK(c.framework == Framework::ddp);
    CHECK(c.recompute_granularity == RecomputeGranularity::full);
  }
  // The text the page reads: one line each, four columns.
  const std::string text = method_settings_text();
  CHECK(text.find("lora\tframework\tddp\t") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == std::ptrdiff_t(method_settings().size()));
}
