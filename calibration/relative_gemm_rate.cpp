#include "calibration/relative_gemm_rate.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "models/compute_model.hpp"

namespace fabricsim::calibration {

using topologies::Precision;

std::vector<GemmShape> te_tutorial_layer() {
  constexpr double tokens = 15872;
  const std::vector<std::pair<double, double>> linear = {
      {4096, 12288}, {4096, 4096}, {4096, 16384}, {16384, 4096}};  // {inputs, outputs}
  std::vector<GemmShape> out;
  for (const auto& [in, outs] : linear) {
    out.push_back({tokens, outs, in});  // forward
    out.push_back({tokens, in, outs});  // data gradient
    out.push_back({in, outs, tokens});  // weight gradient
  }
  return out;
}

const std::vector<RelativeGemmRate>& relative_gemm_rates() {
  // Blackwell Ultra's block-scaled FP4: Transformer Engine's GEMM profiling tutorial times the
  // twelve GEMMs of a 5B layer on one "B300 SXM6 AC" with inputs quantized beforehand (kernels
  // only): 7.161 ms per layer in MXFP8, 3.764 ms in NVFP4 (1.90x; BF16 13.102 ms), where the
  // tensor cores' dense peaks differ 2.9x (4.5 and 13.1 PFLOP/s). The same run's BF16 and MXFP8
  // sit 15-20% under the model's fits (from maximum-achievable-matmul searches), so its absolute
  // rates are not taken, only the ratio (NVIDIA/TransformerEngine v2.18,
  // docs/examples/gemm_profiling/gemm_profiling.rst, "Autocast vs Pre-quantized").
  static const std::vector<RelativeGemmRate> rates = {
      {.gpu = "B300",
       .precision = Precision::nvfp4,
       .reference = Precision::mxfp8,
       .shapes = te_tutorial_layer(),
       .ratio = 7.161 / 3.764,
       .source = "Transformer Engine v2.18 GEMM profiling tutorial: B300, pre-quantized, MXFP8 "
                 "7.161 ms and NVFP4 3.764 ms per 5B layer (12 GEMMs, 15,872 tokens)"},
  };
  return rates;
}

double summed_gemm_seconds(const topologies::GpuSpec& gpu, const models::ComputeProfile& profile,
                           Precision precision, const std::vector<GemmShape>& shapes) {
  double total = 0;
  for (const GemmShape& s : shapes)
    total += models::gemm_seconds(gpu, profile, precision, s.m, s.n, s.k);
  return total;
}

models::GemmParams fit_relative_rate(const topologies::GpuSpec& gpu,
                                     const models::ComputeProfile& profile,
                                     models::GemmParams target, const RelativeGemmRate& rate) {
  const double reference = summed_gemm_seconds(gpu, profile, rate.reference, rate.shapes);
  models::ComputeProfile trial = profile;
  auto ratio_at = [&](double efficiency) {
    target.max_efficiency = efficiency;
    trial.gemm_for(rate.precision) = target;
    return reference / summed_gemm_seconds(gpu, trial, rate.precision, rate.shapes);
  };
  // The ratio grows with the target's efficiency (its time falls, the reference's stays).
  double lo = 1e-3, hi = 1.0;
  if (!(ratio_at(lo) <= rate.ratio && rate.ratio <= ratio_at(hi))) {
    throw std::domain_error(fmt::format(
        "{} {} at {:.3g}x {}: no efficiency up to the peak reaches it ({:.3g}x at most)", gpu.id,
        topologies::to_string(rate.precision), rate.ratio, topologies::to_string(rate.reference),
        ratio_at(hi)));
  }
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (ratio_at(mid) < rate.ratio ? lo : hi) = mid;
  }
  target.max_efficiency = 0.5 * (lo + hi);
  target.fitted = true;
  return target;
}

}  // namespace fabricsim::calibration
