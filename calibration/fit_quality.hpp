#pragma once
// Error statistics shared by the GEMM and collective fits.

#include <vector>

#include "calibration/profile.hpp"

namespace fabricsim::calibration {

/// Quality of predictions against measurements (times or rates; both positive). r2 is computed on
/// the logarithms, relative errors on the values.
FitQuality fit_quality(const std::vector<double>& predicted, const std::vector<double>& measured);
double median(std::vector<double> values);

}  // namespace fabricsim::calibration
