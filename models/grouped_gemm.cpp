#include "models/grouped_gemm.hpp"

#include <algorithm>

#include "models/compute_model.hpp"

namespace fabricsim::models {

GroupedGemmCost grouped_gemm(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                             topologies::Precision precision, double m, double n, double k,
                             int groups, GroupedGemmKernel kernel, int streams) {
  GroupedGemmCost c;
  if (groups <= 0) return c;
  // Expert GEMMs run inside a training step, at its sustained clock like every other GEMM.
  const double clock = sustained_clock(gpu, profile, precision);
  if (kernel == GroupedGemmKernel::fused) {
    c.seconds = gemm_seconds(gpu, profile, precision, m, n, k, groups, clock);
    return c;
  }
  const int s = std::clamp(streams, 1, groups);
  const int rounds = groups / s, rest = groups % s;
  c.seconds = rounds * gemm_seconds(gpu, profile, precision, m, n, k, s, clock) +
              (rest > 0 ? gemm_seconds(gpu, profile, precision, m, n, k, rest, clock) : 0.0);
  c.kernels = groups;
  return c;
}

}  // namespace fabricsim::models
