#include "api/run_calibration.hpp"

#include <fmt/format.h>

#include <array>
#include <boost/math/tools/toms748_solve.hpp>
#include <cmath>
#include <cstdint>
#include <utility>

#include "sim/input_error.hpp"

namespace fabricsim::api {

namespace {

constexpr std::array<std::pair<RunMetric, std::string_view>, 6> kMetrics{{
    {RunMetric::step_time_s, "step_time_s"},
    {RunMetric::tokens_per_s_per_gpu, "tokens_per_s_per_gpu"},
    {RunMetric::tflops_per_gpu, "tflops_per_gpu"},
    {RunMetric::hw_tflops_per_gpu, "hw_tflops_per_gpu"},
    {RunMetric::mfu, "mfu"},
    {RunMetric::hfu, "hfu"},
}};

}  // namespace

std::string_view to_string(RunMetric metric) {
  for (const auto& [m, name] : kMetrics) {
    if (m == metric) return name;
  }
  return "?";
}

std::optional<RunMetric> parse_run_metric(std::string_view name) {
  for (const auto& [m, n] : kMetrics) {
    if (n == name) return m;
  }
  return std::nullopt;
}

double metric_value(const TrainingMetrics& metrics, RunMetric metric) {
  switch (metric) {
    case RunMetric::step_time_s:
      return metrics.step_time_s;
    case RunMetric::tokens_per_s_per_gpu:
      return metrics.tokens_per_s_per_gpu;
    case RunMetric::tflops_per_gpu:
      return metrics.model_tflops_per_gpu;
    case RunMetric::hw_tflops_per_gpu:
      return metrics.hw_tflops_per_gpu;
    case RunMetric::mfu:
      return metrics.mfu;
    case RunMetric::hfu:
      return metrics.hfu;
  }
  return 0;
}

double zero_shot_error(RunMetric metric, double predicted, double measured) {
  return metric == RunMetric::step_time_s ? measured / predicted - 1 : predicted / measured - 1;
}

RunFit fit_sustained_efficiency(const Evaluator& cluster, const Scenario& scenario,
                                const RunMeasurement& measured, Fidelity fidelity,
                                const std::string& field) {
  if (!(measured.value > 0) || !std::isfinite(measured.value)) {
    throw sim::InputError(scenario.source, field,
                          fmt::format("expected a positive measured {}, got {}",
                                      to_string(measured.metric), measured.value));
  }
  RunFit fit;
  fit.compute = cluster.profile().compute;
  auto predict = [&](double efficiency) {
    models::ComputeProfile compute = fit.compute;
    compute.sustained_efficiency = efficiency;
    const StepEvaluation e = cluster.evaluate(cluster.prepare(scenario, compute), fidelity);
    ++fit.evaluations;
    if (!e.step) {
      throw sim::InputError(scenario.source, e.infeasible ? e.infeasible->field : "",
                            "the run to calibrate from cannot be simulated: " +
                                (e.infeasible ? e.infeasible->reason : std::string("no step")));
    }
    return metric_value(e.metrics, measured.metric);
  };
  // Throughput metrics grow with the efficiency, the step time shrinks: solve in log space,
  // where a kernel-bound run is linear and the solve converges in a few steps.
  const double sign = measured.metric == RunMetric::step_time_s ? -1.0 : 1.0;
  auto residual = [&](double log_efficiency) {
    return sign * std::log(predict(std::exp(log_efficiency)) / measured.value);
  };
  fit.predicted_before = predict(fit.compute.sustained_efficiency);
  const double lo = std::log(kMinSustainedEfficiency), hi = std::log(kMaxSustainedEfficiency);
  const double r_lo = residual(lo), r_hi = residual(hi);
  if (r_lo > 0 || r_hi < 0) {
    throw sim::InputError(
        scenario.source, field,
        fmt::format("no sustained efficiency in [{}, {}] reproduces the measured {} = {:.6g} "
                    "(the simulated run gives {:.6g} .. {:.6g}): the run is not limited by its "
                    "kernels the way the model sees it, or its plan or measurement is wrong",
                    kMinSustainedEfficiency, kMaxSustainedEfficiency, to_string(measured.metric),
                    measured.value, predict(kMinSustainedEfficiency),
                    predict(kMaxSustainedEfficiency)));
  }
  // 1e-4 relative in the efficiency is far below any measurement's noise.
  std::uintmax_t iterations = 40;
  const auto [a, b] = boost::math::tools::toms748_solve(
      residual, lo, hi, r_lo, r_hi, boost::math::tools::eps_tolerance<double>(14), iterations);
  fit.compute.sustained_efficiency = std::exp(0.5 * (a + b));
  fit.compute.sustained_source = measured.run;
  fit.predicted_after = predict(fit.compute.sustained_efficiency);
  return fit;
}

}  // namespace fabricsim::api
