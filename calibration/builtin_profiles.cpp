#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calibration/profile.hpp"

namespace fabricsim::calibration {

/// Generated from calibration/profiles/*.json (see calibration/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_profile_files();

const CalibrationProfile* builtin_profile(const std::string& system) {
  // Parsed once, on first use; immutable afterwards.
  static const std::map<std::string, CalibrationProfile> profiles = [] {
    std::map<std::string, CalibrationProfile> out;
    for (const auto& [name, text] : builtin_profile_files()) {
      const sim::JsonDocument doc =
          sim::parse_json_text(text, "calibration/profiles/" + std::string(name) + ".json");
      CalibrationProfile p = profile_from_json(doc.root());
      out.emplace(p.system, std::move(p));
    }
    return out;
  }();
  const auto it = profiles.find(system);
  return it == profiles.end() ? nullptr : &it->second;
}

}  // namespace fabricsim::calibration
