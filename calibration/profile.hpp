#pragma once
// A calibration profile: the fitted parameters of the compute and collective models for one
// system, where the measurements came from, and how well the fit matches them. Stored as JSON;
// built-in profiles for every preset are generated from ../shared/reference and embedded.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibration/measurements.hpp"
#include "models/collective_profile.hpp"
#include "models/compute_profile.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::calibration {

struct FitQuality {
  int points = 0;
  double r2 = 0;                ///< of log(time)
  double median_rel_error = 0;  ///< |predicted - measured| / measured
  double max_rel_error = 0;
  double cv_median_rel_error = -1;  ///< held-out (cross-validated) median; -1 = not computed
  friend bool operator==(const FitQuality&, const FitQuality&) = default;
};

struct CalibrationProfile {
  std::string system;  ///< preset the profile is for
  std::string gpu;     ///< GpuSpec id
  std::string created;
  models::ComputeProfile compute;
  models::CollectiveProfile collective;
  std::map<std::string, FitQuality> gemm_fit;  ///< by dtype
  std::optional<FitQuality> collective_fit;
  std::vector<Provenance> provenance;
  std::vector<std::string> notes;
};

nlohmann::json profile_to_json(const CalibrationProfile& profile);
CalibrationProfile profile_from_json(const sim::JsonValue& root);
CalibrationProfile load_profile(const std::string& path);

/// The built-in profile of a preset (fitted from the public reference data); nullptr if none.
const CalibrationProfile* builtin_profile(const std::string& system);
/// Defaults derived from the GPU's datasheet and NCCL's constants, before any fit.
CalibrationProfile default_profile(const std::string& system, const topologies::GpuSpec& gpu);
/// The profile a simulation of `system` uses: the file at `path` if given, else the built-in one,
/// else defaults derived from the GPU's datasheet and NCCL's constants.
CalibrationProfile profile_for(const std::string& system, const topologies::GpuSpec& gpu,
                               const std::string& path = "");

}  // namespace fabricsim::calibration
