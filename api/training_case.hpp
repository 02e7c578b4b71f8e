#pragma once
// How a training record of the case format becomes a scenario. Fields a case leaves unknown take
// one documented default, the same for every case (docs/validation.md lists them).

#include <nlohmann/json.hpp>

#include "calibration/cases.hpp"

namespace fabricsim::api {

/// The scenario JSON for a training case.
nlohmann::json training_case_scenario(const calibration::Case& c);

}  // namespace fabricsim::api
