#pragma once
// The experts' GEMMs of an MoE layer: `groups` GEMMs of one shape (balanced routing, as the
// benchmarks force it), each with its own weights, priced from how the software runs them
// (SoftwareStack::grouped_gemm). Each GEMM is the shape model of models/compute_model: whole
// padded output tiles (an expert's M below a tile costs a whole tile), waves over the SMs, and
// the floor of reading every expert's weights from HBM once.

#include "models/compute_profile.hpp"
#include "models/software_stack.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

struct GroupedGemmCost {
  double seconds = 0;
  /// Kernels the host launches: 1 for a fused kernel, one per group on the multi-stream path.
  int kernels = 1;
};

/// `groups` GEMMs C_g[m,n] = A_g[m,k] B_g[k,n].
///   fused:        one GEMM of batch `groups` (gemm_seconds): all groups' tiles share the waves.
///   multi_stream: the groups go round-robin onto `streams` streams, so they run in rounds of
///                 `streams` concurrent GEMMs that share the SMs (a batch of `streams`), each round
///                 with its own fixed cost and its own last partial wave:
///                 floor(G / S) x gemm_seconds(batch S) + gemm_seconds(batch G mod S).
/// With G <= S both are the batched GEMM.
GroupedGemmCost grouped_gemm(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                             topologies::Precision precision, double m, double n, double k,
                             int groups, GroupedGemmKernel kernel, int streams);

}  // namespace fabricsim::models
