#include "models/compute_profile.hpp"

#include <fmt/format.h>

namespace fabricsim::models {

namespace {

// Host time to issue one eager PyTorch op (Python, autograd, dispatcher, cudaLaunchKernel):
// torch.nn.Linear's forward took 13.48 us of CPU per call on a DGX H100's Xeon 8480C and
// 37.08 us on GB200's Grace (33.17 us on GH200), BF16, 8192 x 2048 tokens (TransformerEngine
// issue #2053, 2025-08-11). AMD x86 hosts take the Xeon figure and Vera the Grace one
// (assumptions: neither is measured there).
sim::Time eager_launch(topologies::HostCpu host) {
  return host == topologies::HostCpu::arm ? sim::Time::from_ps(37'080'000)
                                          : sim::Time::from_ps(13'480'000);
}

}  // namespace

std::string launch_source(topologies::HostCpu host) {
  return fmt::format("{:.2f} us of host time per eager op on {} host, TransformerEngine #2053",
                     eager_launch(host).s() * 1e6,
                     host == topologies::HostCpu::arm ? "an Arm (Grace)" : "an x86");
}

std::string attention_source(topologies::GpuGeneration generation) {
  if (generation == topologies::GpuGeneration::hopper) return "cuDNN attention measured on an H200";
  if (generation >= topologies::GpuGeneration::blackwell)
    return "cuDNN attention of cuDNN's GB200 benchmark";
  return "FlashAttention-2 efficiencies";
}

ComputeProfile default_compute_profile(const topologies::GpuSpec& gpu, topologies::HostCpu host) {
  ComputeProfile p;
  // GEMM: until a fit replaces them, tiles of 128x128 (the common cuBLAS/CUTLASS Hopper and
  // Ampere tile) and 75% of peak as the large-GEMM ceiling, the middle of the 71-87% that the
  // maximum-achievable-matmul (MAMF) search reaches on A100..GB200 (dev-gemm.json, stas00 table).
  for (GemmParams& g : p.gemm)
    g = GemmParams{};
  // Attention: FlashAttention-2 reaches 50-73% of peak forward on A100 and less backward (Dao
  // 2023, arXiv:2307.08691): 0.65 / 0.5. Hopper's default kernel, cuDNN fused attention (what
  // Transformer Engine runs), measured on an H200 of this workplace (calibration/data/
  // h200-2026-12-04/kernels.json: torch SDPA's cuDNN backend, cuDNN 9.19, bf16, head dim 128,
  // causal, 2k-16k tokens, burst clock): 525-643 TFLOP/s forward and 355-486 backward, which the
  // ramp below turns into 0.655 / 0.505 of the 989 TFLOP/s peak (medians over the causal rows).
  // The 2024 cuDNN was close: 574-617 TFLOP/s forward at head dim 128 without a mask, 1k-16k
  // tokens, on H100 (Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Fig. 5). Triton's FA2
  // kernel on H100 (pytorch/benchmark ff65cb67: 329 TFLOP/s at 512 keys, 477 at 16k) gives the
  // sequence ramp, span / (span + 220), and Volta keeps its rates, 0.5 / 0.4. Blackwell's default
  // kernel, cuDNN fused attention, is fitted to cuDNN's SDPA training benchmark on a GB200
  // (calibration/data/ cudnn-sdpa-2026: cuDNN 9.22, Llama 3.1 405B heads, BF16, causal and not,
  // 2k-32k tokens): 0.70 / 0.56 of the 2.5 PFLOP/s peak with a slower ramp, span / (span +
  // 500): 1.1-1.7 PFLOP/s forward, 0.9-1.4 backward.
  if (gpu.generation == topologies::GpuGeneration::ampere) {
    p.attention_forward_efficiency = 0.65;
    p.attention_backward_efficiency = 0.5;
  } else if (gpu.generation == topologies::GpuGeneration::hopper) {
    p.attention_forward_efficiency = kHopperAttentionForward;
    p.attention_backward_efficiency = kHopperAttentionBackward;
  } else if (gpu.generation >= topologies::GpuGeneration::blackwell) {
    p.attention_forward_efficiency = 0.70;
    p.attention_backward_efficiency = 0.56;
  } else {
    p.attention_forward_efficiency = 0.5;
    p.attention_backward_efficiency = 0.4;
  }
  p.attention_span_half = gpu.generation >= topologies::GpuGeneration::blackwell ? 500 : 220;
  // Memory-bound kernels: a device-to-device copy moved 4.3 of the H200's 4.8 TB/s (0.9) on this
  // workplace's H200 (../.library/device/KINDS.md); fused elementwise kernels reach less: 0.8.
  p.memory_efficiency = 0.8;
  p.kernel_launch = eager_launch(host);
  // Between dependent kernels a GPU idles ~1-3 us (drain, launch, ramp-up): 2 us.
  p.kernel_gap = sim::Time::from_us(2);
  p.comm_sm_contention = 1.0;
  p.source = "defaults (" + gpu.id + "): " + attention_source(gpu.generation) + ", 0.8 of HBM, " +
             launch_source(host);
  return p;
}

}  // namespace fabricsim::models
