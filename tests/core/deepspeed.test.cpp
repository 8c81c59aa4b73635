// DeepSpeed's estimators against the figures DeepSpeed printed in published runs
// (estimate_zero3_model_states_mem_needs_all_live; "GB" there is bytes / 2^30, two decimals).
#include <cmath>

#include "support.hpp"
#include "trainmem/deepspeed.hpp"

using namespace trainmem;

namespace {
// DeepSpeed prints f"{bytes / 2**30:7.2f}GB".
double printed_gb(double bytes) { return std::round(bytes / double(1 << 30) * 100) / 100; }
}  // namespace

TEST_CASE("ZeRO-3 estimates for GPT-2 medium on one GPU match DeepSpeed's printed table", "[deepspeed][golden]") {
  // transformers' DeepSpeed docs (bigscience/T0_3B section, GPT2-medium run): "Model with 354M
  // total params, 51M largest layer params". GPT2Model medium: 354,823,168 parameters; largest
  // module the token embedding 50,257 × 1,024 = 51,463,168.
  const double P = 354'823'168, LL = 51'463'168;
  struct Row { bool offload_optimizer, offload_params, zero_init; double cpu_gb, gpu_gb; };
  // Printed rows: 8.92/0.19 (both offloaded), 7.93/0.85 (optimizer offloaded), 0.29/6.14 and
  // 1.98/6.14 (no offload, zero_init 1 and 0).
  const Row rows[] = {{true, true, true, 8.92, 0.19},    {true, true, false, 8.92, 0.19},
                      {true, false, true, 7.93, 0.85},   {true, false, false, 7.93, 0.85},
                      {false, false, true, 0.29, 6.14},  {false, false, false, 1.98, 6.14}};
  for (const Row& row : rows) {
    CAPTURE(row.offload_optimizer, row.offload_params, row.zero_init);
    const DeepSpeedEstimate e = deepspeed_zero3_estimate(P, LL, 1, 1, row.offload_optimizer,
                                                         row.offload_params, row.zero_init);
    CHECK(printed_gb(e.cpu_bytes) == row.cpu_gb);
    CHECK(printed_gb(e.gpu_bytes) == row.gpu_gb);
  }
  // By hand, no offload: 4·51,463,168 + int(18·354,823,168 / 1) = 6,592,669,696 B.
  CHECK(deepspeed_zero3_estimate(P, LL, 1, 1, false, false, true).gpu_bytes == 6'592'669'696.0);
}

TEST_CASE("ZeRO-3 estimates for Llama-3.3-70B on 4 nodes of 12 GPUs match the printed table", "[deepspeed][golden]") {
  // argonne-lcf (ALCF) Llama-3.3-70B-Instruct notes: "Model with 69503M total params, 1050M
  // largest layer params", 4 nodes × 12 GPUs. LlamaModel (no lm_head): 70,553,706,496 −
  // 1,050,673,152 = 69,503,033,344; largest module the embedding 128,256 × 8,192 = 1,050,673,152.
  const double P = 69'503'033'344, LL = 1'050'673'152;
  struct Row { bool offload_optimizer, offload_params, zero_init; double cpu_gb, gpu_gb; };
  const Row rows[] = {{true, true, true, 436.93, 3.91},   {true, true, false, 4660.54, 3.91},
                      {true, false, true, 388.38, 6.61},  {true, false, false, 4660.54, 6.61},
                      {false, false, true, 70.45, 28.19}, {false, false, false, 4660.54, 28.19}};
  for (const Row& row : rows) {
    CAPTURE(row.offload_optimizer, row.offload_params, row.zero_init);
    const DeepSpeedEstimate e = deepspeed_zero3_estimate(P, LL, 12, 4, row.offload_optimizer,
                                                         row.offload_params, row.zero_init);
    CHECK(printed_gb(e.cpu_bytes) == row.cpu_gb);
    CHECK(printed_gb(e.gpu_bytes) == row.gpu_gb);
  }
}

TEST_CASE("ZeRO-2 estimates follow DeepSpeed's code", "[deepspeed][golden]") {
  // stage_1_and_2.py: no offload GPU = 2P + int(18P/N), CPU = 4P·gpus_per_node·factor;
  // offload GPU = 2P, CPU = P·max(4·N, 16)·factor. P = 1e9 on 2 nodes × 8 GPUs:
  // GPU 2e9 + int(18e9/16) = 3,125,000,000; CPU 1e9·4·8·1.5 = 48e9.
  const DeepSpeedEstimate plain = deepspeed_zero2_estimate(1e9, 8, 2, false);
  CHECK(plain.gpu_bytes == 3'125'000'000.0);
  CHECK(plain.cpu_bytes == 48e9);
  // Offload: GPU 2e9; CPU 1e9·max(64, 16)·1.5 = 96e9; with 2 GPUs: max(8, 16) = 16 → 24e9.
  const DeepSpeedEstimate offload = deepspeed_zero2_estimate(1e9, 8, 2, true);
  CHECK(offload.gpu_bytes == 2e9);
  CHECK(offload.cpu_bytes == 96e9);
  CHECK(deepspeed_zero2_estimate(1e9, 2, 1, true).cpu_bytes == 24e9);
  // additional_buffer_factor scales the CPU figure only: 1e9·4·8·2 = 64e9.
  CHECK(deepspeed_zero2_estimate(1e9, 8, 2, false, 2.0).cpu_bytes == 64e9);
  // Truncation: int(18·7/3) = int(42.0) = 42; 18·10/4 = 45.0; 18·1/4 = 4.5 → 4.
  CHECK(deepspeed_zero2_estimate(1, 4, 1, false).gpu_bytes == 2 + 4);
}
