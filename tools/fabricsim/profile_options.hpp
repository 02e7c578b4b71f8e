#pragma once
// The --calibration option every simulating command takes.

#include <CLI/CLI.hpp>
#include <string>

#include "calibration/profile.hpp"
#include "models/system.hpp"

namespace fabricsim::tools {

void add_profile_option(CLI::App& app, std::string& path);
/// The profile in `path`, or the built-in one for the system when empty.
calibration::CalibrationProfile profile_from_option(const std::string& path,
                                                    const models::System& system);

}  // namespace fabricsim::tools
