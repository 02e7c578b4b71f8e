#pragma once
// Calibration from one real run (`fabricsim calibrate run`, `fabricsim validate --anchor`): the
// one scalar a measured step time cannot tell apart, the sustained kernel efficiency of that GPU
// and software stack (models::ComputeProfile::sustained_efficiency), solved so that the
// simulated run reproduces the measurement. Every other prediction on that stack then uses it.

#include <optional>
#include <string>
#include <string_view>

#include "api/evaluator.hpp"
#include "api/scenario.hpp"

namespace fabricsim::api {

/// The training metrics a run may be measured by (the case format's primary metrics).
enum class RunMetric {
  step_time_s,
  tokens_per_s_per_gpu,
  tflops_per_gpu,
  hw_tflops_per_gpu,
  mfu,
  hfu
};
std::string_view to_string(RunMetric metric);
std::optional<RunMetric> parse_run_metric(std::string_view name);
double metric_value(const TrainingMetrics& metrics, RunMetric metric);

struct RunMeasurement {
  RunMetric metric = RunMetric::step_time_s;
  double value = 0;
  std::string run;  ///< what was measured, for the provenance (a file, a case id)
};

struct RunFit {
  models::ComputeProfile compute;  ///< the scenario's compute profile, efficiency fitted
  double predicted_before = 0;     ///< the metric with the profile's own efficiency
  double predicted_after = 0;      ///< with the fitted one
  int evaluations = 0;             ///< simulated steps the solve took
};

/// Sustained efficiencies the solve searches: a run needing one outside is not compute-limited
/// the way the model sees it (or its measurement or plan is wrong), and is refused.
inline constexpr double kMinSustainedEfficiency = 0.05;
inline constexpr double kMaxSustainedEfficiency = 4.0;

/// A run's zero-shot error, positive where the model was optimistic: predicted / measured - 1 for
/// the throughput metrics, measured / predicted - 1 for the step time.
double zero_shot_error(RunMetric metric, double predicted, double measured);

/// How far from its zero-shot prediction a calibrated run may be before the fit is flagged: about
/// the 90th percentile of the zero-shot |error| per case on the dev training set (17.2% on
/// 2026-12-06, docs/validation.md). A run further off more likely lacks a mechanism in the
/// model (host-bound eager execution, a plan or software setting other than the scenario's)
/// than runs its kernels at another efficiency; the fitted scalar then absorbs that, and
/// predictions of other plans and scales from the profile inherit it. A report threshold, not a
/// model parameter.
inline constexpr double kValidatedSpread = 0.20;
/// Whether a run's zero_shot_error lies beyond kValidatedSpread either way.
inline bool beyond_validated_spread(double zero_shot_error) {
  return zero_shot_error > kValidatedSpread || zero_shot_error < -kValidatedSpread;
}

/// Solves the scenario's sustained efficiency on `cluster` (built for it) so that the simulated
/// metric equals the measurement. Throws sim::InputError (naming `field`) when the plan cannot
/// run or no efficiency in range reproduces the measurement.
RunFit fit_sustained_efficiency(const Evaluator& cluster, const Scenario& scenario,
                                const RunMeasurement& measured, Fidelity fidelity,
                                const std::string& field);

}  // namespace fabricsim::api
