#pragma once
// Fits the GEMM shape-efficiency parameters of one GPU and precision to measured GEMM rates:
// the large-GEMM efficiency ceiling, the K half-efficiency point and the launch time by
// Levenberg-Marquardt on log(time), the output tile by search over {64, 128, 256}^2. With fewer
// than six measurements only the ceiling is fitted.

#include <string>
#include <vector>

#include "calibration/measurements.hpp"
#include "calibration/profile.hpp"
#include "models/compute_profile.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::calibration {

struct GemmFitResult {
  models::GemmParams params;
  FitQuality quality;                    ///< on TFLOP/s, with 5-fold cross-validated median error
  std::vector<double> predicted_tflops;  ///< per measurement, in input order
};

GemmFitResult fit_gemm(const topologies::GpuSpec& gpu, topologies::Precision precision,
                       const std::vector<GemmMeasurement>& measurements,
                       const models::ComputeProfile& base);

/// Precision a measurement's dtype is fitted as (fp16 shares bf16's parameters; MXFP4, like
/// NVFP4, is block-scaled FP4); nullopt for dtypes the model has no rate for, among them `fp4`,
/// FP4 whose scaling is not stated (gemm_fit.cpp says why).
std::optional<topologies::Precision> gemm_precision(const std::string& dtype);
/// Why gemm_precision has no precision for `dtype`, for a report.
std::string unmodelled_gemm_dtype(const std::string& dtype);

}  // namespace fabricsim::calibration
