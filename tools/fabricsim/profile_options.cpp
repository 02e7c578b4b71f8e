#include "tools/fabricsim/profile_options.hpp"

#include "sim/input_error.hpp"

namespace fabricsim::tools {

void add_profile_option(CLI::App& app, std::string& path) {
  app.add_option("--calibration", path,
                 "Calibration profile JSON (default: the built-in profile of the system)");
}

models::CollectiveProfile profile_from_option(const std::string& path,
                                              const models::System& system) {
  if (!path.empty()) {
    throw sim::InputError(path, "", "calibration profiles are not readable yet");
  }
  return models::default_collective_profile(system.gpu);
}

}  // namespace fabricsim::tools
