#pragma once
// Fits a system's collective-model parameters to measured collective bandwidths: the NVLink,
// NVLS and network efficiencies, the per-call launch overhead and the scale of NCCL's per-step
// latencies, by Levenberg-Marquardt on log(time) of every measured point simulated on the
// system's topology. Parameters no measurement depends on keep their starting value and are
// reported as not fitted.

#include <string>
#include <vector>

#include "calibration/measurements.hpp"
#include "calibration/profile.hpp"
#include "models/collective_profile.hpp"

namespace fabricsim::calibration {

struct CollectivePoint {
  const CollectiveMeasurement* measurement;
  double bytes;  ///< the size simulated (the default large size when unknown)
  double measured_busbw;
  double predicted_busbw;
};

struct CollectiveFitResult {
  models::CollectiveProfile profile;
  FitQuality quality;                   ///< on bus bandwidth
  std::vector<std::string> fitted;      ///< names of the parameters the data constrained
  std::vector<std::string> not_fitted;  ///< left at their starting values
  std::vector<CollectivePoint> points;  ///< residuals per measurement and size
};

/// `system` is a preset name; measurements of other systems are ignored. Points whose op or
/// algorithm the model does not run are skipped.
CollectiveFitResult fit_collectives(const std::string& system,
                                    const std::vector<CollectiveMeasurement>& measurements,
                                    const models::CollectiveProfile& start,
                                    double default_large_message = 8.0 * 1024 * 1024 * 1024);

}  // namespace fabricsim::calibration
