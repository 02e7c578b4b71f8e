#include "api/scaling_series.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/validation.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

calibration::Case training(const std::string& id, int gpus, const std::string& model,
                           int seq_len = 2048, const std::string& system = "dgx-h100") {
  calibration::Case c{};
  c.id = id;
  c.source = "src";
  c.kind = calibration::CaseKind::training;
  c.system = system;
  c.gpus = gpus;
  c.precision = "bf16";
  c.framework = calibration::CaseFramework{"megatron-bridge", "26.04", std::nullopt};
  calibration::CaseModel m{};
  m.name = model;
  m.seq_len = seq_len;
  c.model = m;
  return c;
}

ValidationRow row(const std::string& id, const std::string& metric, double predicted,
                  double measured) {
  return {id,
          "src",
          "dgx-h100",
          metric,
          std::nullopt,
          predicted,
          measured,
          (predicted - measured) / measured,
          ""};
}

}  // namespace

TEST_CASE("scaling series: throughput per GPU against the fewest GPUs, predicted over measured",
          "[validate]") {
  const std::vector<calibration::Case> cases = {
      training("m-64", 64, "M"), training("m-8", 8, "M"), training("m-256", 256, "M"),
      training("n-8", 8, "N"),  // a series of one size: no point
  };
  const std::vector<ValidationRow> rows = {
      row("m-64", "tflops_per_gpu", 450, 400),   // measured 0.8 of the baseline, predicted 0.9
      row("m-8", "tflops_per_gpu", 500, 500),    // the baseline: not a point
      row("m-256", "tflops_per_gpu", 450, 450),  // measured 0.9, predicted 0.9
      row("m-256", "mfu", 0.9, 0.1),             // not primary
      row("n-8", "tflops_per_gpu", 100, 90),
  };
  const std::vector<ScalingPoint> points = scaling_points(cases, rows);
  REQUIRE(points.size() == 2);
  CHECK(points[0].id == "m-64");
  CHECK(points[0].baseline == "m-8");
  CHECK(points[0].baseline_gpus == 8);
  CHECK(points[0].gpus == 64);
  CHECK(*points[0].measured_efficiency == Approx(0.8));
  CHECK(*points[0].predicted_efficiency == Approx(0.9));
  CHECK(points[0].error == Approx(0.9 / 0.8 - 1));  // the model holds throughput too well
  CHECK(points[1].id == "m-256");
  CHECK(points[1].error == Approx(0.0).margin(1e-12));

  // A per-source bias cancels: every prediction 20% high changes no point.
  std::vector<ValidationRow> biased;
  for (ValidationRow r : rows) {
    r.predicted *= 1.2;
    r.error = (r.predicted - r.measured) / r.measured;
    biased.push_back(r);
  }
  const std::vector<ScalingPoint> same = scaling_points(cases, biased);
  REQUIRE(same.size() == 2);
  CHECK(same[0].error == Approx(points[0].error));
  CHECK(same[1].error == Approx(0.0).margin(1e-12));
}

TEST_CASE("scaling series: step times, separate series, a missing baseline", "[validate]") {
  std::vector<calibration::Case> cases = {
      training("a-8", 8, "A"),
      training("a-16", 16, "A"),
      training("a-16-long", 16, "A", 4096),  // another sequence length: its own series
      training("b-16", 16, "B", 2048, "dgx-b200"),
      training("b-32", 32, "B", 2048, "dgx-b200"),
  };
  for (calibration::Case& c : cases) {
    c.parallelism = calibration::CaseParallelism{};
    c.parallelism->global_batch = c.gpus * 4;  // weak scaling: 4 sequences per GPU
  }
  const std::vector<ValidationRow> rows = {
      row("a-8", "step_time_s", 1.0, 1.0),
      row("a-16", "step_time_s", 1.0, 1.25),  // measured 0.8 of the baseline, predicted 1.0
      row("a-16-long", "step_time_s", 2.0, 2.0),
      // b-16 has no row (not run, or the anchor of an anchored run): its series starts at 32
      row("b-32", "step_time_s", 1.0, 1.0),
  };
  const std::vector<ScalingPoint> points = scaling_points(cases, rows);
  REQUIRE(points.size() == 1);
  CHECK(points[0].id == "a-16");
  CHECK(*points[0].measured_efficiency == Approx(0.8));
  CHECK(*points[0].predicted_efficiency == Approx(1.0));
  CHECK(points[0].error == Approx(0.25));

  // Without tokens per step a step time gives no efficiency, but the error stands.
  for (calibration::Case& c : cases)
    c.parallelism.reset();
  const std::vector<ScalingPoint> bare = scaling_points(cases, rows);
  REQUIRE(bare.size() == 1);
  CHECK_FALSE(bare[0].measured_efficiency);
  CHECK(bare[0].error == Approx(0.25));
}

TEST_CASE("scaling series: a time to train scales by GPU-minutes", "[validate]") {
  const std::vector<calibration::Case> cases = {training("t-8", 8, "T"), training("t-64", 64, "T")};
  const std::vector<ValidationRow> rows = {
      row("t-8", "time_to_train_min", 10.0, 10.0),
      // 8 x 10 GPU-minutes against 64 x 2: measured 0.625 of the baseline's rate, predicted 1.0.
      row("t-64", "time_to_train_min", 1.25, 2.0),
  };
  const std::vector<ScalingPoint> points = scaling_points(cases, rows);
  REQUIRE(points.size() == 1);
  CHECK(*points[0].measured_efficiency == Approx(0.625));
  CHECK(*points[0].predicted_efficiency == Approx(1.0));
  CHECK(points[0].error == Approx(0.6));
}

TEST_CASE("scaling series: the JSON report summarizes the points", "[validate]") {
  ValidationReport report;
  report.scaling = {{"x", "x0", "s", "mfu", 16, 8, 0.9, 0.99, 0.10},
                    {"y", "y0", "s", "mfu", 16, 8, 1.0, 0.98, -0.02},
                    {"z", "z0", "s", "mfu", 16, 8, std::nullopt, std::nullopt, 0.04}};
  const nlohmann::json j = report_to_json(report);
  CHECK(j["summary"]["scaling"]["points"] == 3);
  CHECK(j["summary"]["scaling"]["median_abs_error"].get<double>() == Approx(0.04));
  CHECK(j["summary"]["scaling"]["median_signed_error"].get<double>() == Approx(0.04));
  CHECK(j["scaling"][1]["measured_efficiency"] == 1.0);
  CHECK(j["scaling"][2]["measured_efficiency"].is_null());
  CHECK(report_to_text(report).find("scaling along each series") != std::string::npos);
}
