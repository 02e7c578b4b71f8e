#pragma once
// Parameters of the GPU compute model, per GPU: GEMM shape efficiency (fitted from GEMM
// measurements by calibration/), attention kernel efficiency, memory-bound kernel efficiency and
// per-kernel overheads. Defaults and their sources are in default_compute_profile().

#include <array>
#include <string>

#include "sim/units.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::models {

/// GEMM time = launch + max(math, memory), where
///   math   = waves x 2 tile_m tile_n K / (peak / SMs x max_efficiency x K / (K + k_half))
///   memory = (MK + KN + MN) x batch x element bytes / (HBM bandwidth x memory_efficiency)
/// with tiles = ceil(M / tile_m) x ceil(N / tile_n) x batch and waves = ceil(tiles / SMs): every
/// SM computes whole (padded) output tiles, so a GEMM one tile past a wave pays a whole wave.
struct GemmParams {
  double max_efficiency = 0.75;  ///< of the dense datasheet peak, for large well-shaped GEMMs
  double k_half = 256;           ///< K at which the inner loop runs at half efficiency
  int tile_m = 128;
  int tile_n = 128;
  sim::Time launch = sim::Time::from_us(4);
  bool fitted = false;
  friend bool operator==(const GemmParams&, const GemmParams&) = default;
};

/// Hopper's default attention kernel (cuDNN fused attention) as measured on an H200: forward and
/// backward efficiency of the bf16 peak before the sequence ramp (sources: compute_profile.cpp).
/// The FlashAttention-3 factor is relative to it (models::attention_library_factor).
inline constexpr double kHopperAttentionForward = 0.655;
inline constexpr double kHopperAttentionBackward = 0.505;

struct ComputeProfile {
  /// Indexed by topologies::Precision (bf16, fp16, fp8, mxfp8, nvfp4, tf32).
  std::array<GemmParams, 6> gemm{};
  /// Flash-attention efficiency of the bf16 peak, forward and backward (the backward runs ~2.5x
  /// the forward's matmul FLOPs at lower efficiency).
  double attention_forward_efficiency = 0.6;
  double attention_backward_efficiency = 0.45;
  /// Attention efficiency grows with the keys each query attends: x span / (span + this).
  double attention_span_half = 220;
  /// Fraction of HBM bandwidth that memory-bound kernels (norms, activations, optimizer) reach.
  double memory_efficiency = 0.85;
  /// CPU time to issue one kernel: GPU work shorter than this is launch-bound (eager PyTorch).
  sim::Time kernel_launch = sim::Time::from_us(4);
  /// GPU time between dependent kernels on one stream (drain, launch, ramp-up).
  sim::Time kernel_gap = sim::Time::from_us(2);
  /// Compute slows down while communication kernels hold SMs: factor = 1 - channels/SMs x this.
  double comm_sm_contention = 1.0;
  /// Fraction of the microbenchmark-calibrated kernel speed a whole training step sustains on
  /// this GPU and software stack: every kernel's GPU time is divided by it. 1 unless fitted to a
  /// named run by `fabricsim calibrate run` (what that run cannot tell apart: sustained clocks
  /// under the step's power draw, kernels the model does not price); the run is in
  /// sustained_source.
  double sustained_efficiency = 1.0;
  std::string sustained_source;
  /// The GEMM and attention efficiencies were fitted to the kernel times of a real training step
  /// (`calibrate trace`): they already run at the step's clock, so sustained_clock() is 1.
  bool fitted_in_step = false;
  std::string source;

  const GemmParams& gemm_for(topologies::Precision p) const { return gemm[static_cast<size_t>(p)]; }
  GemmParams& gemm_for(topologies::Precision p) { return gemm[static_cast<size_t>(p)]; }
};

/// Defaults for a GPU before any fit, its kernels issued by a `host` CPU: see the source string
/// of the result for where each comes from.
ComputeProfile default_compute_profile(const topologies::GpuSpec& gpu,
                                       topologies::HostCpu host = topologies::HostCpu::x86_intel);
/// Where the default attention efficiencies of a GPU generation come from, for profile sources.
std::string attention_source(topologies::GpuGeneration generation);
/// Where the default kernel_launch for a host CPU comes from, for profile sources.
std::string launch_source(topologies::HostCpu host);

}  // namespace fabricsim::models
