#pragma once
// Pure cost functions of GPU work: GEMMs (shape-dependent efficiency), attention, memory-bound
// kernels. Times in seconds; they take the GPU's datasheet and its calibrated profile.

#include "models/compute_profile.hpp"
#include "models/software_stack.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

/// Bytes per element of a GEMM operand at a precision (fp8/mxfp8 1, nvfp4 0.5 + scales).
double element_bytes(topologies::Precision p);

/// Seconds for C[m,n] = A[m,k] B[k,n], `batch` times (a grouped GEMM counts its groups here);
/// `clock` scales the tensor-core rate (sustained_clock), not the memory roofline.
double gemm_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                    topologies::Precision precision, double m, double n, double k, double batch = 1,
                    double clock = 1);
/// The efficiency (achieved / dense peak) gemm_seconds implies.
double gemm_efficiency(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                       topologies::Precision precision, double m, double n, double k,
                       double batch = 1);
/// The share of its burst matmul rate that a GPU of the Blackwell generation or later holds at
/// its power limit when it has no measured sustained figure of its own: the H200's measured
/// shares (bf16; fp8, also for MXFP8 and NVFP4, the same tensor cores' block-scaled modes: an
/// FP4 GEMM is no less power-bound than an FP8 one, and no sustained FP4 figure is published).
/// Sources in compute_model.cpp.
inline constexpr double kPowerLimitedShareBf16 = 681.0 / 810.0;
inline constexpr double kPowerLimitedShareFp8 = 1272.0 / 1428.0;

/// Fraction of the profile's tensor-core rate at `precision` that a whole training step sustains:
/// a step is one long run at the power limit, where the clock settles below the boost clock that
/// short GEMM benchmarks (and the fits resting on them) see. It is the GPU's sustained matmul rate
/// (GpuSpec::sustained_bf16_tflops, sustained_fp8_tflops) over the rate the same precision's fit
/// reaches on its best shapes, capped at 1 (a fit to saturated measurements is already
/// sustained), for bf16/fp16 GEMMs and flash attention (bf16 tensor-core kernels) and for fp8 and
/// mxfp8 and nvfp4 GEMMs. A Blackwell-generation GPU without a figure for the precision takes
/// the power-limited share above (`*assumed` is then set); other GPUs without one, tf32, and a
/// profile fitted to a real step (ComputeProfile::fitted_in_step) run at 1.
double sustained_clock(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                       topologies::Precision precision, bool* assumed = nullptr);
/// Seconds for flash attention doing `flops` matmul FLOPs (bf16 tensor cores), each query
/// attending `span` keys (efficiency ramps up with the span; 0 = long).
double attention_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                         double flops, bool backward, double span = 0);
/// How fast an attention library runs relative to the profile's attention efficiency, which
/// describes the generation's default kernel (FlashAttention-2 on Ampere, cuDNN/TE fused
/// attention on Hopper and Blackwell). FlashAttention-2 against cuDNN on Hopper is measured on an
/// H200 (0.54 forward, 0.58 backward); Blackwell keeps Shah et al.'s ~35% vs ~50% of peak
/// (arXiv:2407.08608 §1), 0.7. FlashAttention-3 reaches 75% forward on H100 (0.75 / 0.655 of the
/// Hopper profile) and runs backward 1.6x FA2 (1.5-1.75x, ibid., Fig. 7); it is Hopper-only,
/// elsewhere the default kernel runs. The Triton FlashAttention of flash-attn 1.x runs 1/1.8 of
/// FA2 (FA2 is 1.3-2.5x faster, Dao 2023, arXiv:2307.08691 section 4.1). Unfused attention is
/// priced as GEMMs, not here: 1.
double attention_library_factor(AttentionKernel kernel, topologies::GpuGeneration generation,
                                bool backward);

/// How fast an attention library runs at head width `head_dim` (the mean of the q/k and v widths)
/// relative to width 128, where the attention efficiencies are calibrated. Per score a kernel does
/// 2 x (q/k + v width) matmul FLOPs on tensor cores but one exponential on the much slower
/// special-function units whatever the width, so narrow heads spend relatively longer in the
/// softmax: efficiency ~ d / (d + d0), with d0 per library family, direction and generation
/// (compute_model.cpp: an H200's SDPA kernels at widths 64 and 128; on Blackwell, cuDNN's GB300
/// over GB200 rates). 1 from width 128 up (the law overshoots published wide-head rates), for
/// unfused attention (priced as GEMMs) and for the Triton FlashAttention (not measured across
/// widths).
double attention_head_dim_factor(AttentionKernel kernel, double head_dim, bool backward,
                                 topologies::GpuGeneration generation);

/// How much faster an attention library runs on a GPU whose exponential units are `exp_rate`
/// times its generation's (Blackwell Ultra: 2), at head width `head_dim`: the softmax term d0 of
/// attention_head_dim_factor's law shrinks by that factor, so efficiency d / (d + d0) becomes
/// d / (d + d0 / exp_rate). 1 where the library has no such term (unfused, Triton).
double attention_exp_rate_factor(AttentionKernel kernel, double head_dim, bool backward,
                                 double exp_rate, topologies::GpuGeneration generation);

/// The keys past its window that a sliding-window (banded) flash kernel computes for each query:
/// it works in whole tiles, so a tile of queries under a band of w keys runs over w plus a tile's
/// worth. Fitted to the banded rows of cuDNN's SDPA training benchmark (GPT-OSS's head width 64,
/// windows of 128 and 1,024 keys, 2k-32k tokens): 128 on Hopper (cuDNN 9.19, H200), 256 on
/// Blackwell (9.19 and 9.22, GB200 and GB300) (compute_model.cpp).
double banded_tile_keys(topologies::GpuGeneration generation);

/// One flash-attention kernel: a layer's forward or backward pass, or one ring step of it.
struct FlashAttention {
  AttentionKernel kernel = AttentionKernel::cudnn;
  double flops = 0;     ///< matmul FLOPs over the keys its queries attend
  double attended = 0;  ///< keys a query attends on average (a causal mask halves them)
  double sequence = 0;  ///< keys of the whole sequence, unmasked
  bool banded = false;  ///< a sliding-window layer whose band is shorter than the sequence
  bool backward = false;
  double head_dim = 128;      ///< mean of the q/k and v widths
  bool fp8 = false;           ///< cuDNN's FP8 kernel
  bool block_scaled = false;  ///< MXFP8 (MXFP8 and NVFP4 recipes) rather than per-tensor FP8
  bool mla = false;           ///< multi-head latent attention's heads (DeepSeek-V3, Kimi K2)
};

/// How much faster cuDNN's FP8 fused attention runs than its BF16 one, causal, at 4k-32k tokens:
/// the medians of the BF16 over FP8 kernel times of cuDNN's SDPA training benchmark
/// (calibration/data/cudnn-sdpa-2026, README there), per GPU and head layout. Hopper (cuDNN 9.19
/// on an H200, Llama 3.1's heads only): 1.50 forward, 0.72 backward (the FP8 backward is slower
/// than the BF16 one). Blackwell (cuDNN 9.22): MLA's heads (`a.mla`: DeepSeek-V3's, Kimi K2's)
/// gain more than Llama 3.1's GQA heads of width 128, which stand for every other layout (the
/// benchmark times no other), and Blackwell Ultra (GB300: a faster exponential, exp_rate > 1) more
/// than GB200, FP8 shortening the matmuls and leaving the softmax. Per-tensor FP8 or block-scaled
/// MXFP8 (`a.block_scaled`: MXFP8 and NVFP4 recipes).
double fp8_attention_speedup(const topologies::GpuSpec& gpu, const FlashAttention& a);

/// How much faster cuDNN's FP8 backward of a banded layer on Blackwell runs the whole unmasked
/// square than BF16 would: the rate GPT-OSS's banded rows of cuDNN's benchmark show (per-tensor
/// or block-scaled `block_scaled`), apart from fp8_attention_speedup's full-attention layouts.
double banded_fp8_backward_speedup(bool block_scaled);

/// Seconds for `a` at the profile's clock: attention_seconds over the keys the kernel computes,
/// at the library, head-width, exponential-rate and FP8 factors. A banded kernel computes whole
/// tiles (banded_tile_keys) and gains nothing from FP8 or Blackwell Ultra's exponential units
/// (cuDNN 9.22 on GB200 and GB300: 1.04-1.2x); cuDNN's FP8 backward on Blackwell skips nothing,
/// computing every key of the sequence for every query (9.19 and 9.22: its time grows with the
/// square of the sequence, 0.8-2.0 PFLOP/s over the unmasked square).
double flash_attention_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                               const FlashAttention& a);

/// Normalization kernels (LayerNorm, RMSNorm) stream more slowly than elementwise kernels: they
/// reduce over each row before writing it, and the backward makes two passes (row statistics,
/// then the gradient) and reduces the weight gradient across rows. Their rates as shares of an
/// elementwise kernel's on the same GPU, for the bytes the workload counts (4 per element
/// forward, 8 backward), measured on an H200 (compute_model.cpp).
inline constexpr double kNormForwardShare = 0.59;
inline constexpr double kNormBackwardShare = 0.41;

/// Seconds for a memory-bound kernel moving `bytes` (reads + writes).
double memory_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile, double bytes);

}  // namespace fabricsim::models
