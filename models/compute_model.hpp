#pragma once
// Pure cost functions of GPU work: GEMMs (shape-dependent efficiency), attention, memory-bound
// kernels. Times in seconds; they take the GPU's datasheet and its calibrated profile.

#include "models/compute_profile.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

/// Bytes per element of a GEMM operand at a precision (fp8/mxfp8 1, nvfp4 0.5 + scales).
double element_bytes(topologies::Precision p);

/// Seconds for C[m,n] = A[m,k] B[k,n], `batch` times (a grouped GEMM counts its groups here).
double gemm_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                    topologies::Precision precision, double m, double n, double k,
                    double batch = 1);
/// The efficiency (achieved / dense peak) gemm_seconds implies.
double gemm_efficiency(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                       topologies::Precision precision, double m, double n, double k,
                       double batch = 1);
/// Seconds for flash attention doing `flops` matmul FLOPs (bf16 tensor cores), each query
/// attending `span` keys (efficiency ramps up with the span; 0 = long).
double attention_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                         double flops, bool backward, double span = 0);
/// Seconds for a memory-bound kernel moving `bytes` (reads + writes).
double memory_seconds(const topologies::GpuSpec& gpu, const ComputeProfile& profile, double bytes);

}  // namespace fabricsim::models
