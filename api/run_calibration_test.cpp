#include "api/run_calibration.hpp"

#include <catch2/catch.hpp>

#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// llama2-7b cut to 4 layers on one DGX H100, TP8: a kernel-bound step.
Scenario scenario(const char* backend = "analytical") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "zero": 1},
    "training": {"global_batch": 8, "seq_len": 4096}
  })");
  doc["simulation"] = {{"backend", backend}};
  return read_scenario(sim::JsonDocument(doc, "test").root());
}

double predicted(const Evaluator& cluster, const Scenario& s, const models::ComputeProfile& c,
                 RunMetric metric) {
  return metric_value(cluster.evaluate(cluster.prepare(s, c), Fidelity::analytical).metrics,
                      metric);
}

}  // namespace

TEST_CASE("run calibration: the fitted efficiency reproduces the measured run", "[calibrate]") {
  const Scenario s = scenario();
  const Evaluator cluster(s);
  const double zero_shot =
      predicted(cluster, s, cluster.profile().compute, RunMetric::tokens_per_s_per_gpu);
  for (const double ratio : {0.6, 0.85, 1.0, 1.2}) {
    INFO("measured / zero-shot " << ratio);
    const RunMeasurement m{RunMetric::tokens_per_s_per_gpu, ratio * zero_shot, "test run"};
    const RunFit fit = fit_sustained_efficiency(cluster, s, m, Fidelity::analytical, "/m");
    CHECK(fit.predicted_before == Approx(zero_shot).epsilon(1e-12));
    CHECK(fit.predicted_after == Approx(m.value).epsilon(1e-3));
    CHECK(predicted(cluster, s, fit.compute, m.metric) == Approx(m.value).epsilon(1e-3));
    CHECK(fit.compute.sustained_source == "test run");
    // Every kernel's time is divided by the efficiency; launch gaps and communication are not:
    // the efficiency moves a little further than the throughput, in the same direction.
    if (ratio == 1.0) CHECK(fit.compute.sustained_efficiency == Approx(1.0).epsilon(1e-3));
    if (ratio < 1.0) CHECK(fit.compute.sustained_efficiency < ratio);
    if (ratio > 1.0) CHECK(fit.compute.sustained_efficiency > ratio);
  }
}

TEST_CASE("run calibration: step time, MFU and tokens/s give one efficiency", "[calibrate]") {
  const Scenario s = scenario();
  const Evaluator cluster(s);
  models::ComputeProfile slow = cluster.profile().compute;
  slow.sustained_efficiency = 0.8;
  const TrainingMetrics truth =
      cluster.evaluate(cluster.prepare(s, slow), Fidelity::analytical).metrics;
  for (const RunMetric metric :
       {RunMetric::step_time_s, RunMetric::tokens_per_s_per_gpu, RunMetric::mfu,
        RunMetric::tflops_per_gpu, RunMetric::hfu, RunMetric::hw_tflops_per_gpu}) {
    INFO(to_string(metric));
    const RunFit fit = fit_sustained_efficiency(
        cluster, s, {metric, metric_value(truth, metric), "truth"}, Fidelity::analytical, "/m");
    CHECK(fit.compute.sustained_efficiency == Approx(0.8).epsilon(1e-3));
  }
}

TEST_CASE("run calibration: flow and analytical agree where nothing contends", "[calibrate]") {
  const Scenario s = scenario("flow");
  const Evaluator cluster(s);
  const RunMeasurement m{RunMetric::step_time_s,
                         1.25 * cluster.evaluate(s, Fidelity::flow).metrics.step_time_s, "run"};
  const double flow =
      fit_sustained_efficiency(cluster, s, m, Fidelity::flow, "/m").compute.sustained_efficiency;
  const double analytical = fit_sustained_efficiency(cluster, s, m, Fidelity::analytical, "/m")
                                .compute.sustained_efficiency;
  CHECK(flow == Approx(analytical).epsilon(0.02));
}

TEST_CASE("run calibration: a measurement no efficiency explains is refused",
          "[calibrate][bad-input]") {
  const Scenario s = scenario();
  const Evaluator cluster(s);
  const double zero_shot =
      predicted(cluster, s, cluster.profile().compute, RunMetric::tokens_per_s_per_gpu);
  const auto fit = [&](double value) {
    return fit_sustained_efficiency(cluster, s, {RunMetric::tokens_per_s_per_gpu, value, "x"},
                                    Fidelity::analytical, "/measured");
  };
  CHECK_THROWS_WITH(fit(100 * zero_shot), Catch::Contains("no sustained efficiency in [0.05, 4]"));
  CHECK_THROWS_WITH(fit(1e-3 * zero_shot), Catch::Contains("reproduces the measured"));
  CHECK_THROWS_AS(fit(0), sim::InputError);
  CHECK_THROWS_AS(fit(-5), sim::InputError);
}

TEST_CASE("run calibration: metric names", "[calibrate]") {
  for (const RunMetric m :
       {RunMetric::step_time_s, RunMetric::mfu, RunMetric::hfu, RunMetric::tokens_per_s_per_gpu,
        RunMetric::tflops_per_gpu, RunMetric::hw_tflops_per_gpu}) {
    CHECK(parse_run_metric(to_string(m)) == m);
  }
  CHECK_FALSE(parse_run_metric("step_time"));
  CHECK_FALSE(parse_run_metric(""));
}

TEST_CASE("run calibration: the zero-shot error is positive where the model was optimistic",
          "[calibrate]") {
  // Throughput predicted 25% above the measurement, or a step predicted 20% short of it.
  CHECK(zero_shot_error(RunMetric::tokens_per_s_per_gpu, 125, 100) == Approx(0.25));
  CHECK(zero_shot_error(RunMetric::mfu, 0.5, 0.4) == Approx(0.25));
  CHECK(zero_shot_error(RunMetric::step_time_s, 8, 10) == Approx(0.25));
  CHECK(zero_shot_error(RunMetric::step_time_s, 10, 8) == Approx(-0.2));
}
