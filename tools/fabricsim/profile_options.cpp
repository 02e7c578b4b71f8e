#include "tools/fabricsim/profile_options.hpp"

namespace fabricsim::tools {

void add_profile_option(CLI::App& app, std::string& path) {
  app.add_option("--calibration", path,
                 "Calibration profile JSON (default: the built-in profile of the system)");
}

calibration::CalibrationProfile profile_from_option(const std::string& path,
                                                    const models::System& system) {
  return calibration::profile_for(system.name, system.gpu, path);
}

}  // namespace fabricsim::tools
