// The NCCL communicators a training run creates and the device memory each one holds: part of
// what nvidia-smi shows beyond PyTorch's reserved memory (trainmem profile, device_bytes).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "trainmem/config.hpp"

namespace trainmem {

// NVLink SHARP sizing of NCCL 2.17 to 2.20 (src/transport/nvls.cc, ncclNvlsSetup): every GPU of
// a communicator binds nChannels · 2 · (NCCL_BUFFSIZE + NVLS_MEM_ALIGN_SIZE) bytes per NVLS head,
// one head per GPU of the communicator on the node. nChannels is 24 on 8-GPU H100/H200 NVSwitch
// boards: the NCCL log quoted in vllm-project/vllm#9699 (8 × H200) reads nvlsPerRankSize
// 301989888 = 24 · 2 · (4 MiB + 2 MiB).
inline constexpr double k_nccl_nvls_bytes_per_head = 24.0 * 2 * (4 + 2) * 1024 * 1024;

struct NcclCommunicator {
  std::string_view name;     // the process group (Megatron's parallel_state names)
  int64_t gpus = 0;          // ranks in the communicator
  int64_t gpus_on_node = 0;  // of those, the ones on this GPU's node
  double bytes = 0;          // this GPU's buffers for it
};

struct NcclCommunicators {
  static constexpr int k_capacity = 12;  // one slot per group nccl_communicators can name
  std::array<NcclCommunicator, k_capacity> list{};
  int count = 0;
  double bytes() const {
    double sum = 0;
    for (int i = 0; i < count; ++i) sum += list[size_t(i)].bytes;
    return sum;
  }
};

// The communicators of a run that see a collective or a send/receive in a training step (NCCL
// allocates a communicator's buffers when it is first used), each of more than one GPU.
NcclCommunicators nccl_communicators(const Config& config);

}  // namespace trainmem
