// The NCCL communicators of a training run and their buffers (trainmem/nccl.hpp).
#include "trainmem/nccl.hpp"

#include <algorithm>
#include <initializer_list>

namespace trainmem {
namespace {

// One parallel dimension of a process group: its size and the global-rank distance between
// neighbours. Megatron orders ranks tp-cp-ep-dp-pp (parallel_state.py RankGenerator, the default
// order) and torchtitan's device mesh is [pp, dp_replicate, dp_shard, cp, tp] (parallel_dims.py),
// so in both the tensor dimension is innermost, then context, data, pipeline.
struct Dim {
  int64_t size, stride;
};

// GPUs of the group on one node: per dimension, the members whose distance fits in the node.
// Exact when the node size and the dimensions are powers of two, as on every HGX/DGX board.
int64_t on_node(std::initializer_list<Dim> dims, int64_t gpus_per_node) {
  int64_t n = 1;
  for (const Dim& d : dims) {
    if (d.size <= 1 || d.stride >= gpus_per_node) continue;
    n *= std::min(d.size, (gpus_per_node + d.stride - 1) / d.stride);
  }
  return n;
}

struct Builder {
  const Config& c;
  NcclCommunicators out;

  // A communicator's buffers: its ring and tree connections (nccl_bytes_per_communicator) and,
  // with NVLink SHARP, the multicast buffers, which NCCL 2.17 to 2.20 sets up only for more than
  // two GPUs within one node (nvls.cc ncclNvlsInit: gpuCount <= 2 || nNodes > 1 disables it).
  void add(std::string_view name, int64_t gpus, int64_t gpus_on_node) {
    if (gpus <= 1 || out.count >= NcclCommunicators::k_capacity) return;
    gpus_on_node = std::min(gpus, std::max<int64_t>(1, gpus_on_node));
    const bool nvls = c.nccl_nvls && gpus == gpus_on_node && gpus > 2;
    const double bytes =
        c.nccl_bytes_per_communicator + (nvls ? double(gpus_on_node) * k_nccl_nvls_bytes_per_head : 0);
    out.list[size_t(out.count++)] = {name, gpus, gpus_on_node, bytes};
  }
  void add(std::string_view name, std::initializer_list<Dim> dims) {
    int64_t gpus = 1;
    for (const Dim& d : dims) gpus *= d.size;
    add(name, gpus, on_node(dims, c.gpus_per_node));
  }
};

}  // namespace

NcclCommunicators nccl_communicators(const Config& c) {
  const int64_t tp = c.tensor_model_parallel_size, cp = c.context_parallel_size,
                dp = c.data_parallel_size, pp = c.pipeline_model_parallel_size,
                ep = c.expert_model_parallel_size, etp = c.expert_tensor_parallel_size;
  const int64_t world = tp * cp * dp * pp;
  const int64_t gpn = c.gpus_per_node;
  Builder b{c, {}};
  if (world <= 1) return b.out;  // one GPU initialises no process group
  const Dim t{tp, 1}, x{cp, tp}, d{dp, tp * cp}, p{pp, tp * cp * dp};
  // The default group: torch.distributed.barrier() at start-up is an NCCL all-reduce over it.
  b.add("world", world, std::min(world, gpn));
  b.add("tensor", {t});
  b.add("context", {x});
  b.add("pipeline", {p});
  if (c.framework == Framework::megatron) {
    // Megatron-LM parallel_state.initialize_model_parallel creates the data-parallel group with
    // and without the context ranks as two new_group calls, so two communicators even at CP 1:
    // gradients and the distributed optimizer's gathers run on the former
    // (DistributedDataParallel), the reported loss is all-reduced on the latter (pretrain_gpt.py
    // loss_func).
    b.add("data", {d});
    b.add("data-context", {x, d});
    // The gradient norm is all-reduced over the model-parallel group (TP × PP;
    // clip_grads.get_grad_norm_fp32), a separate group even when it has the TP ranks. The
    // distributed optimizer reduces it over the world instead (DistributedOptimizer.
    // get_model_parallel_group returns None: "the model parallel group is the entire world").
    if (!c.use_distributed_optimizer) b.add("model", {t, p});
    // Tied embeddings: the first and last stages all-reduce the word-embedding gradient
    // (finalize_model_grads._allreduce_word_embedding_grads).
    if (pp > 1 && c.share_embeddings_and_output_weights)
      b.add("embedding", 2, p.stride * (pp - 1) < gpn ? 2 : 1);
    // Transformer Engine's delayed scaling reduces the amax history over TP × DP × CP
    // (parallel_state.get_amax_reduction_group).
    if (c.fp8_recipe == Fp8Recipe::delayed) b.add("amax", {t, x, d});
  } else {
    // torch.distributed device meshes (torchtitan, DDP, DeepSpeed): one group per mesh dimension;
    // FSDP shards over data × context when both are used (torchtitan's dp_shard_cp).
    b.add("data", {d});
    if (cp > 1 && dp > 1) b.add("data-context", {x, d});
  }
  if (ep > 1) {
    // MoE: the token all-to-all over the expert group and the expert gradients' reduction over
    // the expert-data group (Megatron's expert layout etp-ep-dp-pp).
    b.add("expert", {{ep, etp}});
    const int64_t expert_dp = tp * cp * dp / (ep * etp);
    b.add("expert-data", {{expert_dp, ep * etp}});
  }
  if (etp > 1 && etp != tp) b.add("expert-tensor", {{etp, 1}});
  return b.out;
}

}  // namespace trainmem
