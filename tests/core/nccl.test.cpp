// The NCCL communicators a run creates and their buffers (trainmem/nccl.hpp), written out by hand.
#include "support.hpp"
#include "trainmem/nccl.hpp"

using namespace trainmem;
using namespace trainmem::test;

namespace {

constexpr double MiB = 1024.0 * 1024.0;

// A small Megatron GPT; only the layout and the runtime fields matter here.
std::string run(const std::string& extra) {
  return R"({"profile": "trainmem", "num_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
      "vocab_size": 1000, "seq_length": 128, "micro_batch_size": 1)" + extra + "}";
}

std::string names(const NcclCommunicators& n) {
  std::string out;
  for (int i = 0; i < n.count; ++i) {
    const NcclCommunicator& g = n.list[size_t(i)];
    out += std::string(g.name) + " " + std::to_string(g.gpus) + "/" + std::to_string(g.gpus_on_node) + "; ";
  }
  return out;
}

}  // namespace

TEST_CASE("one GPU creates no communicator", "[trainmem][nccl]") {
  const NcclCommunicators n = nccl_communicators(config_from(run("")));
  CHECK(n.count == 0);
  CHECK(n.bytes() == 0);
}

TEST_CASE("the default ring and tree buffers are 720 MiB per communicator", "[trainmem][nccl][golden]") {
  // Per channel one ring and two tree receive connections, each 4 MiB Simple + 4,915,200 B LL128
  // + 524,288 B LL = 9.1875 MiB, allocated at 2 MiB granularity: 10 MiB. 24 channels · 3 · 10 MiB.
  const Config c = config_from(run(R"(, "data_parallel_size": 2)"));
  CHECK(c.nccl_bytes_per_communicator == 24 * 3 * 10 * MiB);
  CHECK(4 * MiB + 120 * 640 * 8 * 8 + 8 * 512 * 8 * 16 == 9.1875 * MiB);
}

TEST_CASE("Megatron TP 2 DP 4 on one node uses five communicators", "[trainmem][nccl][golden]") {
  // world 8; tensor 2; data 4 (loss) and data-context 4 (gradients), two groups at CP 1; model =
  // TP × PP = 2 for the gradient norm (without the distributed optimizer, which reduces it over
  // the world). Ranks tp-cp-ep-dp-pp: the data group strides by 2, all four on the node.
  const NcclCommunicators n = nccl_communicators(config_from(run(
      R"(, "tensor_model_parallel_size": 2, "data_parallel_size": 4, "nccl_bytes_per_communicator": 100)")));
  CHECK(names(n) == "world 8/8; tensor 2/2; data 4/4; data-context 4/4; model 2/2; ");
  CHECK(n.bytes() == 5 * 100);
  const NcclCommunicators distopt = nccl_communicators(config_from(run(
      R"(, "tensor_model_parallel_size": 2, "data_parallel_size": 4, "use_distributed_optimizer": true)")));
  CHECK(names(distopt) == "world 8/8; tensor 2/2; data 4/4; data-context 4/4; ");
}

TEST_CASE("NVLink SHARP adds 288 MiB per GPU to communicators of more than two GPUs on a node", "[trainmem][nccl][golden]") {
  // 24 channels · 2 · (4 MiB + 2 MiB) = 288 MiB per head, one head per GPU on the node:
  // world 8 → 2,304 MiB; data and data-context 4 → 1,152 MiB each; tensor and model 2 → none.
  CHECK(k_nccl_nvls_bytes_per_head == 288 * MiB);
  const NcclCommunicators n = nccl_communicators(config_from(run(
      R"(, "tensor_model_parallel_size": 2, "data_parallel_size": 4, "nccl_bytes_per_communicator": 0,
         "nccl_nvls": true)")));
  REQUIRE(n.count == 5);
  CHECK(n.list[0].bytes == 2304 * MiB);
  CHECK(n.list[1].bytes == 0);
  CHECK(n.list[2].bytes == 1152 * MiB);
  CHECK(n.list[3].bytes == 1152 * MiB);
  CHECK(n.list[4].bytes == 0);
  CHECK(n.bytes() == (2304 + 2 * 1152) * MiB);
}

TEST_CASE("communicators spanning nodes get no NVLink SHARP buffers", "[trainmem][nccl][golden]") {
  // TP 2 DP 8 on two 8-GPU nodes: world 16 (8 per node), data groups 8 (4 per node): no NVLS;
  // tensor and model stay 2 GPUs: no NVLS either (NCCL 2.17-2.20 needs more than two).
  const NcclCommunicators n = nccl_communicators(config_from(run(
      R"(, "tensor_model_parallel_size": 2, "data_parallel_size": 8, "nccl_bytes_per_communicator": 0,
         "nccl_nvls": true)")));
  CHECK(names(n) == "world 16/8; tensor 2/2; data 8/4; data-context 8/4; model 2/2; ");
  CHECK(n.bytes() == 0);
}

TEST_CASE("Megatron adds the embedding and amax groups when they run collectives", "[trainmem][nccl][golden]") {
  // TP 8 PP 4 DP 2 on 8-GPU nodes (64 GPUs): the model group TP × PP has its 8 TP ranks on the
  // node, the PP ranks stride 16; the tied embedding group joins stage 0 and stage 3 (48 apart,
  // different nodes); delayed FP8 reduces amax over TP × DP (16, 8 on the node).
  const NcclCommunicators n = nccl_communicators(config_from(run(
      R"(, "num_layers": 8, "num_attention_heads": 8, "tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4,
         "data_parallel_size": 2, "fp8_recipe": "delayed")")));
  CHECK(names(n) == "world 64/8; tensor 8/8; pipeline 4/1; data 2/1; data-context 2/1; model 32/8; "
                    "embedding 2/1; amax 16/8; ");
}

TEST_CASE("torch device meshes use one communicator per dimension", "[trainmem][nccl][golden]") {
  // fsdp2 TP 2 CP 2 DP 2: world, tensor, context, data, and FSDP's data × context shard group.
  const NcclCommunicators n = nccl_communicators(config_from(run(
      R"(, "framework": "fsdp2", "zero_stage": 3, "params_dtype": "fp32", "tensor_model_parallel_size": 2,
         "context_parallel_size": 2, "data_parallel_size": 2, "sequence_parallel": true)")));
  CHECK(names(n) == "world 8/8; tensor 2/2; context 2/2; data 2/2; data-context 4/4; ");
}

TEST_CASE("the device figure adds the communicators' buffers to reserved memory", "[trainmem][nccl]") {
  const Estimate est = estimate_of(run(R"(, "tensor_model_parallel_size": 2, "data_parallel_size": 4,
      "nccl_nvls": true)"));
  CHECK(est.nccl.count == 5);
  // 5 · 720 MiB + (2,304 + 2 · 1,152) MiB of NVLS + the 512 MiB CUDA context.
  CHECK(est.device_bytes - est.reserved_bytes == (5 * 720 + 2304 + 2 * 1152 + 512) * MiB);
  for (const StageParams& s : stages_of(run(R"(, "tensor_model_parallel_size": 2, "data_parallel_size": 4,
      "nccl_nvls": true)")))
    CHECK(s.device_bytes - s.reserved_bytes == (5 * 720 + 2304 + 2 * 1152 + 512) * MiB);
}
