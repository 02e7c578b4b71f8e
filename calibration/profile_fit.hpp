#pragma once
// Turns measurements into a calibration profile for a system: the GEMM fit per precision (using
// the measurements of the system's GPU), the collective fit (using the system's own collective
// measurements), and the provenance of everything used.

#include <string>
#include <vector>

#include "calibration/measurements.hpp"
#include "calibration/profile.hpp"

namespace fabricsim::calibration {

/// One collective point after the fit, for the fit report.
struct CollectiveResidual {
  std::string op;
  int ranks = 0;
  double bytes = 0;  ///< the size simulated
  double measured_busbw_GBps = 0;
  double predicted_busbw_GBps = 0;
  std::string source;
};

struct ProfileFitOptions {
  std::string created;  ///< date string stamped into the profile
  /// When set, receives the collective residuals per measured size.
  std::vector<CollectiveResidual>* collective_residuals = nullptr;
  /// Use GEMM measurements of every system with the same GPU (true for the built-in profiles,
  /// where reference cases name the nearest preset), not only those of `system`.
  bool gemm_by_gpu = true;
};

/// The GPU id of a system preset; "" for an unknown or empty name.
std::string gpu_of_system(const std::string& system);

/// Fits `system`'s profile starting from `start`. GEMM measurements without a system are taken
/// to be from `system`'s GPU; collective measurements without a system from `system` itself.
CalibrationProfile fit_profile(const std::string& system, MeasurementSet measurements,
                               const CalibrationProfile& start, const ProfileFitOptions& options);

/// The built-in profiles: one per preset, fitted from the GEMM and collective records of the case
/// files in `reference_dir` and the GEMM records of the case files in `gemm_dir` (the project's
/// collection of public GEMM microbenchmarks, calibration/data/public-gemm), with the relative
/// rates of relative_gemm_rate.hpp; training cases are never read. Presets without measurements of
/// their own take the fitted parameters of the preset named in their notes (same GPU or same
/// NVLink generation), else the defaults.
std::vector<CalibrationProfile> generate_builtin_profiles(const std::string& reference_dir,
                                                          const std::string& gemm_dir,
                                                          const std::string& created);

}  // namespace fabricsim::calibration
