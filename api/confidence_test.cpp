#include "api/confidence.hpp"

#include <catch2/catch.hpp>

#include "api/training_run.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

Scenario scenario(const std::vector<std::string>& sets) {
  nlohmann::json doc = default_scenario_json();
  apply_assignments(doc, sets, "<test>");
  return read_scenario(sim::JsonDocument(doc, "test").root());
}

}  // namespace

TEST_CASE("confidence names the fitted data behind a result", "[confidence]") {
  const Scenario s = scenario({});
  const Confidence c =
      assess_confidence(calibration::profile_for(s.system, scenario_gpu(s), ""), s);
  // DGX H100's built-in profile: bf16 GEMMs and collectives fitted to public measurements.
  CHECK(c.precision == "bf16");
  CHECK(c.gemm_fitted);
  CHECK(c.gemm_points > 0);
  CHECK(c.collective_fitted);
  CHECK_FALSE(c.unmeasured);
  CHECK(c.software == "default");
  CHECK_FALSE(c.software_documented);
  CHECK_THAT(confidence_line(c), Catch::Contains("points") && Catch::Contains("default stack"));
  const nlohmann::json j = confidence_to_json(c);
  CHECK(j["gemm"]["points"] == c.gemm_points);
  CHECK(j["software"]["preset"] == "default");
}

TEST_CASE("confidence flags a system nothing was measured on", "[confidence]") {
  const Scenario s =
      scenario({"/system/preset=vr-nvl144", "/system/gpus=144", "/training/global_batch=144",
                "/software={\"framework\": \"nemo\", \"version\": \"24.07\"}"});
  const Confidence c =
      assess_confidence(calibration::profile_for(s.system, scenario_gpu(s), ""), s);
  CHECK_FALSE(c.gemm_fitted);
  CHECK(c.software == "nemo-24.07");
  CHECK(c.software_documented);
  CHECK_THAT(confidence_line(c), Catch::Contains("no measurement of this GPU"));
}
