#include "models/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fabricsim::models {

using topologies::Precision;

double element_bytes(Precision p) {
  switch (p) {
    case Precision::fp8:
    case Precision::mxfp8:
      return 1.0;
    case Precision::nvfp4:
      return 0.5625;  // 4-bit values + one 8-bit scale per 16 elements
    case Precision::tf32:
      return 4.0;
    default:
      return 2.0;
  }
}

namespace {

double peak_flops(const topologies::GpuSpec& gpu, Precision p) {
  double tflops = gpu.peak_tflops(p);
  if (tflops <= 0) {
    throw std::invalid_argument("the GPU " + gpu.id + " has no " + std::string(to_string(p)) +
                                " tensor-core rate");
  }
  return tflops * 1e12;
}

double math_seconds(const topologies::GpuSpec& gpu, const GemmParams& g, Precision p, double m,
                    double n, double k, double batch, double clock) {
  const double k_eff = k / (k + g.k_half);
  const double rate = peak_flops(gpu, p) * g.max_efficiency * k_eff * clock;
  if (gpu.sm_count <= 0) return 2.0 * m * n * k * batch / rate;
  // Every SM computes whole output tiles, padded ones included, one wave after another: the
  // time is the number of waves times one tile's work at one SM's share of the rate.
  const double tiles = std::ceil(m / g.tile_m) * std::ceil(n / g.tile_n) * batch;
  const double waves = std::ceil(tiles / gpu.sm_count);
  return waves * 2.0 * g.tile_m * g.tile_n * k / (rate / gpu.sm_count);
}

}  // namespace

double gemm_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile, Precision p,
                    double m, double n, double k, double batch, double clock) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0.0;
  const GemmParams& g = profile.gemm_for(p);
  const double math = math_seconds(gpu, g, p, m, n, k, batch, clock);
  // Operands in the GEMM's precision, output in bf16.
  const double bytes = ((m * k + k * n) * element_bytes(p) + m * n * 2.0) * batch;
  const double memory = bytes / (gpu.hbm_tb_per_s * 1e12 * profile.memory_efficiency);
  return g.launch.s() + std::max(math, memory);
}

double gemm_efficiency(const topologies::GpuSpec& gpu, const ComputeProfile& profile, Precision p,
                       double m, double n, double k, double batch) {
  const double t = gemm_seconds(gpu, profile, p, m, n, k, batch);
  return t > 0 ? 2.0 * m * n * k * batch / t / peak_flops(gpu, p) : 0.0;
}

namespace {

// kPowerLimitedShareBf16, kPowerLimitedShareFp8: the H200 of this workplace held 681 TFLOP/s
// bf16 and 1272 fp8 at its 700 W limit against burst peaks of 810 and 1428 in the same card's
// 50-run sweep (calibration/data/h200-2026-12-04; GpuSpec's sustained figures cite it): 0.84 and
// 0.89. B200's own figure sits at the same share: 1429 quoted sustained against its 1745 MAMF
// (0.82).

/// The step's sustained rate over `burst`, the fit's best rate at `p` (bf16 tensor cores when
/// `bf16`); `*assumed` is set when the power-limited share stands in for the GPU's own figure.
double sustained_share(const topologies::GpuSpec& gpu, Precision p, bool bf16, double burst,
                       bool* assumed) {
  const double figure = bf16                  ? gpu.sustained_bf16_tflops
                        : p == Precision::fp8 ? gpu.sustained_fp8_tflops
                                              : 0;
  if (figure > 0) return figure / burst;
  if (gpu.generation != topologies::GpuGeneration::blackwell) return 1.0;
  if (assumed != nullptr) *assumed = true;
  return bf16 ? kPowerLimitedShareBf16 : kPowerLimitedShareFp8;
}

}  // namespace

double sustained_clock(const topologies::GpuSpec& gpu, const ComputeProfile& profile, Precision p,
                       bool* assumed) {
  if (assumed != nullptr) *assumed = false;
  if (profile.fitted_in_step) return 1.0;
  const bool bf16 = p == Precision::bf16 || p == Precision::fp16;
  if (!bf16 && p != Precision::fp8 && p != Precision::mxfp8 && p != Precision::nvfp4) return 1.0;
  const Precision fit = bf16 ? Precision::bf16 : p;
  const double burst = gpu.peak_tflops(fit) * profile.gemm_for(fit).max_efficiency;
  if (burst <= 0) return 1.0;
  return std::min(1.0, sustained_share(gpu, p, bf16, burst, assumed));
}

double attention_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                         double flops, bool backward, double span) {
  if (flops <= 0) return 0.0;
  const double eff =
      backward ? profile.attention_backward_efficiency : profile.attention_forward_efficiency;
  const double ramp = span > 0 ? span / (span + profile.attention_span_half) : 1.0;
  return flops / (peak_flops(gpu, Precision::bf16) * eff * ramp);
}

double attention_library_factor(AttentionKernel kernel, topologies::GpuGeneration generation,
                                bool backward) {
  using topologies::GpuGeneration;
  // FlashAttention-2 against the generation's default kernel: measured on Hopper (flash vs cuDNN
  // backends of torch SDPA on an H200, calibration/data/h200-2026-12-04/kernels.json, causal,
  // head dim 128, 2k-16k tokens: 0.53-0.55 forward, 0.55-0.63 backward; Shah et al.'s 2024 H100
  // figure has 350-370 against 574-617 TFLOP/s forward, 0.6); Blackwell keeps Shah et al.'s ~35%
  // vs ~50% of peak (arXiv:2407.08608, section 1), 0.7.
  const double flash2 = generation == GpuGeneration::hopper      ? (backward ? 0.58 : 0.54)
                        : generation == GpuGeneration::blackwell ? 0.7
                                                                 : 1.0;
  switch (kernel) {
    case AttentionKernel::flash2:
      return flash2;
    case AttentionKernel::flash3:
      // FlashAttention-3 (Hopper only): 75% of H100's peak forward, backward 1.5-1.75x FA2
      // (Shah et al. 2024, Fig. 5 and 7), over the Hopper default's forward efficiency.
      if (generation != GpuGeneration::hopper) return 1.0;
      return backward ? 1.6 * flash2 : 0.75 / kHopperAttentionForward;
    case AttentionKernel::flash_triton:
      // FlashAttention-2 runs 1.3-2.5x faster than the Triton FlashAttention (Dao 2023,
      // arXiv:2307.08691, section 4.1, A100, forward + backward): the geometric middle of that
      // range, 1.8x, below FA2.
      return flash2 / std::sqrt(1.3 * 2.5);
    case AttentionKernel::cudnn:
    case AttentionKernel::unfused:
      return 1.0;
  }
  return 1.0;
}

namespace {

/// The softmax term d0 of a library's width law (attention_head_dim_factor); 0 without one.
double softmax_width(AttentionKernel kernel, bool backward, topologies::GpuGeneration generation) {
  // d0 from torch SDPA on an H200 (calibration/data/h200-2026-12-04/kernels.json: 2k-16k tokens,
  // causal and not, batch x 32 heads): the median rate ratio of width 64 to 128 is, forward /
  // backward, 0.684 / 0.842 for the cuDNN backend and 0.868 / 0.900 for FlashAttention-2, which
  // d0 = 128 (1 - r) / (2r - 1) turns into 110 / 30 and 23 / 16. Shah et al. 2024 (FA3,
  // arXiv:2407.08608, Fig. 5, H100, forward, 16k tokens) agree on cuDNN (0.69 unmasked, 0.72
  // causal) and FA2 (0.88, 0.89) and give FlashAttention-3 0.77 both ways: d0 = 56 forward; its
  // backward takes cuDNN's. The Triton FlashAttention of flash-attn 1.x was not measured across
  // widths, and its rate is itself a ratio to FA2's at width 128: 1. Wider than 128 the law
  // overshoots what is published (FA3 reaches 740 TFLOP/s at width 256, the paper's abstract,
  // against 648 at 128 in Fig. 5: 1.14x, where d0 = 56 would give 1.21), so wider heads keep the
  // width-128 rate.
  // cuDNN on Blackwell: its softmax term is what Blackwell Ultra's doubled exponential rate
  // removes half of, so GB300 over GB200 measures it (cuDNN 9.22, calibration/data/
  // cudnn-sdpa-2026: BF16, widths 128 and 160, 2k-32k tokens, causal and not): 1.19x forward,
  // 1.09x backward at width 128, which (128 + d0) / (128 + d0 / 2) turns into 60 and 25 (the
  // forward gives 1.16x at DeepSeek-V3's 160, measured 1.15-1.16x).
  const bool blackwell = generation >= topologies::GpuGeneration::blackwell;
  switch (kernel) {
    case AttentionKernel::cudnn:
      if (blackwell) return backward ? 25 : 60;
      return backward ? 30 : 110;
    case AttentionKernel::flash3:
      return backward ? 30 : 56;
    case AttentionKernel::flash2:
      return backward ? 16 : 23;
    case AttentionKernel::flash_triton:
    case AttentionKernel::unfused:
      return 0;
  }
  return 0;
}

}  // namespace

double attention_head_dim_factor(AttentionKernel kernel, double head_dim, bool backward,
                                 topologies::GpuGeneration generation) {
  const double d0 = softmax_width(kernel, backward, generation);
  constexpr double kCalibrated = 128;
  if (d0 <= 0 || head_dim <= 0 || head_dim >= kCalibrated) return 1.0;
  return head_dim / (head_dim + d0) * (kCalibrated + d0) / kCalibrated;
}

double attention_exp_rate_factor(AttentionKernel kernel, double head_dim, bool backward,
                                 double exp_rate, topologies::GpuGeneration generation) {
  const double d0 = softmax_width(kernel, backward, generation);
  if (d0 <= 0 || head_dim <= 0 || exp_rate == 1) return 1.0;
  return (head_dim + d0) / (head_dim + d0 / exp_rate);
}

double fp8_attention_speedup(const topologies::GpuSpec& gpu, const FlashAttention& a) {
  // Medians of the causal rows at 4k-32k tokens (calibration/data/cudnn-sdpa-2026): Hopper 4 rows
  // a direction (Llama 3.1's heads, per-tensor FP8 only); Blackwell 4 (Llama 3.1) or 8 (DeepSeek-V3
  // and Kimi K2) a GPU, format and direction, {forward, backward}.
  struct Gain {
    double forward, backward;
  };
  if (gpu.generation < topologies::GpuGeneration::blackwell) return a.backward ? 0.72 : 1.50;
  const bool ultra = gpu.exp_rate > 1;
  Gain g{};
  if (a.mla) {
    g = a.block_scaled ? (ultra ? Gain{1.53, 1.40} : Gain{1.39, 1.35})
                       : (ultra ? Gain{1.69, 1.83} : Gain{1.49, 1.68});
  } else {
    g = a.block_scaled ? (ultra ? Gain{1.40, 1.01} : Gain{1.20, 1.02})
                       : (ultra ? Gain{1.58, 1.30} : Gain{1.29, 1.16});
  }
  return a.backward ? g.backward : g.forward;
}

double banded_fp8_backward_speedup(bool block_scaled) {
  // GPT-OSS's banded rows (width 64; cuDNN 9.19 and 9.22, GB200 and GB300, windows 128 and
  // 1,024): 1.68 per-tensor and 1.31 MXFP8, the medians of every Blackwell layout's full-attention
  // rows, bring the whole square within 2% of their times (calibration/cudnn_sdpa_test.cpp).
  return block_scaled ? 1.31 : 1.68;
}

double banded_tile_keys(topologies::GpuGeneration generation) {
  // The tile that brings the model's banded rates nearest the measured ones (calibration/data/
  // cudnn-sdpa-2026, BF16, medians): on the H200 (window 1,024), 128 leaves the model 7% slow
  // forward and 4% fast backward; on GB200, 256 leaves it 15-18% fast forward and 4% fast to 7%
  // slow backward (windows 128 and 1,024). Blackwell's kernels schedule two 128-row query tiles
  // a CTA, which is a 256-row tile here.
  return generation >= topologies::GpuGeneration::blackwell ? 256 : 128;
}

double flash_attention_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                               const FlashAttention& a) {
  const auto generation = gpu.generation;
  double computed = a.attended;
  double fp8 = a.fp8 ? fp8_attention_speedup(gpu, a) : 1.0;
  bool exp_gain = true;
  if (a.banded) {
    if (a.fp8 && a.backward && generation >= topologies::GpuGeneration::blackwell &&
        a.kernel == AttentionKernel::cudnn) {
      computed = a.sequence;
      fp8 = banded_fp8_backward_speedup(a.block_scaled);
    } else {
      computed = a.attended + banded_tile_keys(generation);
      fp8 = 1.0;
      exp_gain = false;
    }
  }
  const double library = attention_library_factor(a.kernel, generation, a.backward) *
                         attention_head_dim_factor(a.kernel, a.head_dim, a.backward, generation) *
                         (exp_gain ? attention_exp_rate_factor(a.kernel, a.head_dim, a.backward,
                                                               gpu.exp_rate, generation)
                                   : 1.0) *
                         fp8;
  return attention_seconds(gpu, profile, a.flops * (computed / a.attended), a.backward, computed) /
         library;
}

// kNormForwardShare, kNormBackwardShare: PyTorch's fused kernels on an H200 of this workplace
// (calibration/data/h200-2026-12-04/kernels.json, bf16, 16384 tokens x 8192): a residual add,
// the elementwise reference, moved 4.15 TB/s; RMSNorm forward 2.45 and LayerNorm forward 2.23
// (0.59 and 0.54 of it; RMSNorm's, the norm of most current models, stands for both); LayerNorm
// backward 1.28 TB/s over the 6 bytes per element it must move, i.e. 1.71 TB/s over the
// workload's 8: 0.41.
static_assert(kNormForwardShare > 0 && kNormForwardShare <= 1);
static_assert(kNormBackwardShare > 0 && kNormBackwardShare <= 1);

double memory_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile, double bytes) {
  if (bytes <= 0) return 0.0;
  return bytes / (gpu.hbm_tb_per_s * 1e12 * profile.memory_efficiency);
}

}  // namespace fabricsim::models
