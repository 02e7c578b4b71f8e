#include "calibration/profile_fit.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include "calibration/profile.hpp"
#include "tests/shared_reference.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;

namespace {

/// "" when `a` and `b` are the same profile JSON up to floating-point noise (another compiler or
/// sanitizer build may round a fit's last bits differently) and the folder of the case files, else
/// the first JSON path that differs and both values.
std::string json_difference(const nlohmann::json& a, const nlohmann::json& b,
                            const std::string& path) {
  const auto differ = [&] { return path + ": " + a.dump() + " vs " + b.dump(); };
  const auto close = [](double x, double y, double absolute) {
    return std::abs(x - y) <= absolute + 1e-9 * std::max(std::abs(x), std::abs(y));
  };
  if (a.is_number() && b.is_number()) {
    return close(a.get<double>(), b.get<double>(), 1e-12) ? "" : differ();
  }
  if (a.type() != b.type()) return differ();
  if (a.is_string()) {
    static const std::regex picoseconds(R"(^(-?\d+) ps$)");
    std::smatch ma;
    std::smatch mb;
    const std::string sa = a.get<std::string>();
    const std::string sb = b.get<std::string>();
    if (std::regex_match(sa, ma, picoseconds) && std::regex_match(sb, mb, picoseconds)) {
      return close(std::stod(ma[1]), std::stod(mb[1]), 1.0) ? "" : differ();
    }
    // Provenance names the case file by the path it was read from; the folder differs by caller.
    if (path.size() >= 5 && path.compare(path.size() - 5, 5, "/file") == 0) {
      return std::filesystem::path(sa).filename() == std::filesystem::path(sb).filename()
                 ? ""
                 : differ();
    }
    return sa == sb ? "" : differ();
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return differ();
    for (const auto& [key, value] : a.items()) {
      if (!b.contains(key)) return path + "/" + key + ": missing in the regeneration";
      std::string d = json_difference(value, b.at(key), path + "/" + key);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return differ();
    for (size_t i = 0; i < a.size(); ++i) {
      std::string d = json_difference(a[i], b[i], path + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : differ();
}

}  // namespace

TEST_CASE(
    "the committed built-in profiles are what calibrate builtin generates from the shared "
    "reference data",
    "[calibration]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const std::vector<CalibrationProfile> generated =
      generate_builtin_profiles(testing::shared_dir() + "/reference",
                                testing::source_file("calibration/data/public-gemm"), "");
  REQUIRE(!generated.empty());
  for (CalibrationProfile fresh : generated) {
    INFO("preset "
         << fresh.system
         << ": regenerate with `fabricsim calibrate builtin` and rebuild (docs/calibration.md)");
    const CalibrationProfile* committed = builtin_profile(fresh.system);
    REQUIRE(committed != nullptr);
    fresh.created = committed->created;
    CHECK(json_difference(profile_to_json(*committed), profile_to_json(fresh), "") == "");
  }
}
