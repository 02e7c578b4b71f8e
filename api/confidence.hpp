#pragma once
// How much measured data a prediction rests on: for each calibrated part of the model (GEMMs of
// the training precision, collectives, the software stack, the kernels that keep documented
// defaults) whether it was fitted and to how many public points. Printed as one line by `run`
// and carried under "confidence" in --json.

#include <nlohmann/json.hpp>
#include <string>

#include "api/scenario.hpp"
#include "calibration/profile.hpp"

namespace fabricsim::api {

struct Confidence {
  std::string precision;     ///< the GEMM precision of the training run
  bool gemm_fitted = false;  ///< GEMM efficiency fitted to measurements of this GPU
  int gemm_points = 0;       ///< measurements behind that fit
  double gemm_median = 0;    ///< its median relative error
  bool collective_fitted = false;
  int collective_points = 0;
  std::string software;  ///< the software preset
  bool software_documented = false;
  /// Nothing of this GPU or system was measured: figures are announced (e.g. Vera Rubin) or
  /// inherited from a related preset.
  bool unmeasured = false;
};

Confidence assess_confidence(const calibration::CalibrationProfile& profile, const Scenario& s);
nlohmann::json confidence_to_json(const Confidence& c);
/// "GEMM fp8: 10 points (median 2.7%); collectives: 33 points; attention, memory-bound and host
/// costs: documented defaults; software nemo-24.07 (documented)"
std::string confidence_line(const Confidence& c);

}  // namespace fabricsim::api
