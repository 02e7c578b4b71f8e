#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "calibration/importers.hpp"
#include "tests/shared_reference.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;

namespace {

std::string reference(const std::string& file) {
  return fabricsim::testing::shared_case(file);
}

/// Points the conversion should give, counted from the raw JSON: one per distinct curve size,
/// else one for a lone busbw_GBps; MoE dispatch/combine gives none.
size_t expected_points(const nlohmann::json& file) {
  size_t points = 0;
  for (const nlohmann::json& c : file) {
    const std::string op = c["collective"]["op"];
    if (op == "moe_dispatch" || op == "moe_combine") continue;
    const nlohmann::json& m = c["measured"];
    std::set<double> sizes;
    for (const char* curve : {"busbw_curve", "algbw_curve"}) {
      if (m.contains(curve)) {
        for (const auto& p : m[curve]) {
          sizes.insert(p[0].get<double>());
        }
      }
    }
    points += !sizes.empty() ? sizes.size() : m.contains("busbw_GBps") ? 1 : 0;
  }
  return points;
}

const CollectiveMeasurement& by_source(const MeasurementSet& set, const std::string& id) {
  for (const CollectiveMeasurement& m : set.collectives) {
    if (m.source == id) return m;
  }
  FAIL("no measurement from " << id);
  throw;
}

}  // namespace

TEST_CASE("collective cases become one measurement per point", "[import][cases]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  std::ifstream in(reference("dev-collectives.json"));
  const nlohmann::json raw = nlohmann::json::parse(in);
  const MeasurementSet set = measurements_from_cases(load_cases(reference("dev-collectives.json")));
  CHECK(set.collectives.size() == expected_points(raw));
  CHECK(set.gemms.empty());

  // A lone reference bandwidth: size unknown, treated as a large-message busbw.
  const CollectiveMeasurement& nvls = by_source(set, "nvidia-gtc24-h100-nvls");
  CHECK_FALSE(nvls.size_known());
  CHECK(nvls.bytes == 0);
  CHECK(nvls.time_us == 0);
  CHECK(nvls.busbw_GBps == 480);
  CHECK(nvls.algbw_GBps == Approx(480 / 1.75));
  CHECK(nvls.algorithm == "NVLS");
  CHECK(nvls.ranks == 8);
  CHECK(nvls.nodes == 1);
  CHECK(nvls.gpus_per_node == 8);
  CHECK(nvls.system == "dgx-h100");
  CHECK_FALSE(nvls.in_place.has_value());

  // A curve: time and algbw follow from busbw.
  size_t a100_points = 0;
  for (const CollectiveMeasurement& m : set.collectives) {
    if (m.source != "azure-a100-allreduce-8gpu") continue;
    ++a100_points;
    CHECK(m.in_place == true);
    CHECK(m.nccl_version == "2.18.5");
    CHECK(m.algorithm.empty());
    if (m.bytes == 1048576) {
      CHECK(m.busbw_GBps == 36.22);
      CHECK(m.algbw_GBps == Approx(36.22 / 1.75));
      CHECK(m.time_us == Approx(1048576 / (36.22 / 1.75 * 1e3)));
    }
  }
  CHECK(a100_points == 24);
  // busbw_GBps repeats the curve's single point: counted once.
  const CollectiveMeasurement& stas = by_source(set, "stas00-h200-allreduce-5gpu");
  CHECK(stas.bytes == 8589934592.0);
  CHECK(stas.algbw_GBps == Approx(414.2 / 1.6));
  CHECK(set.provenance.at(0).format == "cases_json");
}

TEST_CASE("GEMM cases convert, training cases never do", "[import][cases]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const std::vector<Case> gemm = load_cases(reference("dev-gemm.json"));
  const MeasurementSet set = measurements_from_cases(gemm);
  REQUIRE(set.gemms.size() == gemm.size());
  CHECK(set.gemms[0].source == gemm[0].id);
  CHECK(set.gemms[0].system == gemm[0].system);
  CHECK(set.gemms[0].tflops == 119.4);
  CHECK(set.gemms[0].time_us == 0);
  CHECK(set.gemms[0].m == 1024);

  const std::vector<Case> training = load_cases(reference("dev-training.json"));
  const MeasurementSet none = measurements_from_cases(training);
  CHECK(none.gemms.empty());
  CHECK(none.collectives.empty());
  CHECK_THAT(none.provenance.at(0).notes, Catch::Contains("165 training cases not converted"));

  // Through the file importer: provenance names the file.
  const MeasurementSet imported = import_measurements(reference("dev-training.json"));
  CHECK(imported.gemms.empty());
  CHECK(imported.collectives.empty());
  CHECK(imported.provenance.at(0).file == reference("dev-training.json"));
}

TEST_CASE("MoE dispatch cases are skipped", "[import][cases]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  Case c = load_cases(reference("dev-collectives.json")).at(5);
  c.collective->op = "moe_dispatch";
  const MeasurementSet set = measurements_from_cases({c});
  CHECK(set.collectives.empty());
  CHECK_THAT(set.provenance.at(0).notes, Catch::Contains("1 cases skipped"));
}
