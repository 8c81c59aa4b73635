// Sharding divides exactly the tensor classes each framework's stage says, and nothing else.
#include "support.hpp"

using Catch::Matchers::WithinRel;
using namespace trainmem;
using namespace trainmem::test;

namespace {

Estimate state_at(const std::string& framework_fields, int dp) {
  const std::string json = R"({"profile": "trainmem", "num_layers": 4, "hidden_size": 256,
      "num_attention_heads": 8, "ffn_hidden_size": 1024, "vocab_size": 4096, "seq_length": 512,
      "micro_batch_size": 1, )" + framework_fields + R"(, "data_parallel_size": )" +
                           std::to_string(dp) + "}";
  return estimate_training_memory(config_from(json), 0, /*include_activation=*/false);
}

// Which classes halve when DP doubles (true) and which stay (false), in the order weights,
// weight copies, gradients, master weights, optimizer states.
struct Expectation {
  const char* fields;
  bool weights, gradients, master, optimizer;
};

}  // namespace

TEST_CASE("doubling the data-parallel size halves exactly the sharded classes", "[trainmem][property][sharding]") {
  const Expectation rows[] = {
      // Megatron: the distributed optimizer shards master weights and optimizer states only.
      {R"("framework": "megatron", "use_distributed_optimizer": false)", false, false, false, false},
      {R"("framework": "megatron", "use_distributed_optimizer": true)", false, false, true, true},
      // DeepSpeed ZeRO-1 shards the fp32 gradient partition, master and states; ZeRO-2 also the
      // 16-bit gradients; ZeRO-3 also the weights (its 16-bit gradients are not kept whole).
      {R"("framework": "deepspeed", "zero_stage": 3)", true, true, true, true},
      // FSDP2 full shard: the sharded fp32 storage (master), gradients and states.
      {R"("framework": "fsdp2", "zero_stage": 3)", false, true, true, true},
      // DDP replicates everything.
      {R"("framework": "ddp")", false, false, false, false},
  };
  for (const Expectation& row : rows) {
    CAPTURE(row.fields);
    const Estimate two = state_at(row.fields, 2), four = state_at(row.fields, 4);
    auto check = [](double at2, double at4, bool sharded) {
      if (sharded)
        REQUIRE_THAT(at4, WithinRel(at2 / 2, k_rel_tol_exact));
      else
        CHECK(at4 == at2);
    };
    check(two.state.weights.total(), four.state.weights.total(), row.weights);
    check(two.state.gradients.total(), four.state.gradients.total(), row.gradients);
    check(two.state.master_weights.total(), four.state.master_weights.total(), row.master);
    check(two.state.optimizer_states.total(), four.state.optimizer_states.total(), row.optimizer);
    CHECK(four.state.weight_copies.total() == two.state.weight_copies.total());
  }
  SECTION("DeepSpeed ZeRO-1 and ZeRO-2 differ only in the 16-bit gradients") {
    for (int dp : {2, 4}) {
      const Estimate z1 = state_at(R"("framework": "deepspeed", "zero_stage": 1)", dp);
      const Estimate z2 = state_at(R"("framework": "deepspeed", "zero_stage": 2)", dp);
      CAPTURE(dp);
      CHECK(z1.state.weights.total() == z2.state.weights.total());
      CHECK(z1.state.master_weights.total() == z2.state.master_weights.total());
      CHECK(z1.state.optimizer_states.total() == z2.state.optimizer_states.total());
      // 16-bit gradients: 2 B whole at ZeRO-1, 2/DP at ZeRO-2.
      REQUIRE_THAT(z1.state.gradients.total() - z2.state.gradients.total(),
                   WithinRel(2.0 * z1.params.per_gpu * (1 - 1.0 / dp), k_rel_tol_exact));
    }
  }
}

TEST_CASE("parameters stored on the most-loaded GPU reflect ZeRO-3 and FSDP2 sharding of the weights", "[sharding][params]") {
  // The small Llama of support.hpp: 2 layers of 4·1024² + 3·1024·4096 = 16,777,216 weights and
  // 2 RMSNorms of 1,024, the final norm 1,024, the tied embedding 32,000·1,024 = 32,768,000:
  // 33,554,432 + 4,096 + 1,024 + 32,768,000 = 66,327,552 parameters, all on one GPU (no TP/PP).
  const double all = 66'327'552;
  const std::string eight = R"("data_parallel_size": 8)";
  auto params = [](const std::string& more) {
    std::string json = small_llama(more);
    return full_estimate(config_from(json)).params;
  };
  // DDP and ZeRO-2 keep every weight; FSDP2 and ZeRO-3 keep an eighth of each between uses.
  const ParamCounts ddp = params(R"("framework": "ddp", )" + eight);
  CHECK(ddp.per_gpu == all);
  CHECK(ddp.stored_per_gpu == all);
  CHECK(params(R"("framework": "deepspeed", "zero_stage": 2, )" + eight).stored_per_gpu == all);
  const ParamCounts fsdp = params(R"("framework": "fsdp2", )" + eight);
  CHECK(fsdp.per_gpu == all);
  CHECK(fsdp.stored_per_gpu == all / 8);
  CHECK(params(R"("framework": "deepspeed", "zero_stage": 3, )" + eight).stored_per_gpu == all / 8);
  // Offloaded parameters are stored in CPU memory.
  CHECK(params(R"("framework": "deepspeed", "zero_stage": 3, "offload_params": true, )" + eight).stored_per_gpu == 0);
}
