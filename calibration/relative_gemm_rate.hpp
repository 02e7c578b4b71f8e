#pragma once
// A GEMM rate known relative to another precision's: a benchmark that times the same shapes in two
// precisions on one machine says how much faster one runs than the other even where its machine's
// clocks (an air-cooled board, another power limit) make its absolute rates unfit to carry over.
// The target precision's efficiency is then set so that the model reproduces the measured ratio
// against the reference precision's fitted rate.

#include <string_view>
#include <vector>

#include "models/compute_profile.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::calibration {

struct GemmShape {
  double m = 0, n = 0, k = 0;
};

struct RelativeGemmRate {
  std::string_view gpu;             ///< GpuSpec id
  topologies::Precision precision;  ///< the precision whose rate this sets
  topologies::Precision reference;  ///< the precision it was timed against
  std::vector<GemmShape> shapes;    ///< the GEMMs timed, summed in both precisions
  double ratio = 1;                 ///< summed reference time over summed target time
  std::string_view source;
};

/// The twelve GEMMs of one layer of Transformer Engine's GEMM profiling tutorial (v2.18, its 5B
/// example: hidden 4096, MLP 16384, 31 x 512 = 15,872 tokens): QKV, attention output, MLP up and
/// down, each forward (tokens x outputs over inputs), data gradient and weight gradient (inputs x
/// outputs over the tokens). The tutorial times each as a te.Linear call on an (m x k) input
/// with a (k x n) weight.
std::vector<GemmShape> te_tutorial_layer();

/// The published relative rates (sources in relative_gemm_rate.cpp).
const std::vector<RelativeGemmRate>& relative_gemm_rates();

/// `target` (the precision's shape parameters: tiles, K ramp, launch) with the max_efficiency at
/// which `profile`'s reference rate over it equals `rate.ratio` on the summed shapes, found by
/// bisection; marked fitted. Throws std::domain_error when no efficiency in (0, 1] reaches the
/// ratio (the reference is too slow or too fast for the claim).
models::GemmParams fit_relative_rate(const topologies::GpuSpec& gpu,
                                     const models::ComputeProfile& profile,
                                     models::GemmParams target, const RelativeGemmRate& rate);

/// The summed model time of `shapes` at `precision` under `profile`.
double summed_gemm_seconds(const topologies::GpuSpec& gpu, const models::ComputeProfile& profile,
                           topologies::Precision precision, const std::vector<GemmShape>& shapes);

}  // namespace fabricsim::calibration
