#pragma once
// A scenario end to end: system, calibration, workload, memory check and step simulation, and
// the numbers people compare runs by (step time, tokens/s, model TFLOP/s per GPU, MFU).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/confidence.hpp"
#include "api/infeasible.hpp"
#include "api/scenario.hpp"
#include "calibration/profile.hpp"
#include "models/memory_model.hpp"
#include "models/step_simulator.hpp"
#include "models/workload.hpp"

namespace fabricsim::api {

struct TrainingMetrics {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;  ///< Megatron convention: 3 x forward, full attention
  double hw_tflops_per_gpu = 0;     ///< plus recomputation (Narayanan et al. eq. 3)
  double mfu = 0;
  double hfu = 0;
  double peak_tflops = 0;         ///< dense peak of the training precision
  double time_to_train_days = 0;  ///< when the scenario gives tokens_to_train
};

struct TrainingReport {
  Scenario scenario;
  std::string calibration_source;
  Confidence confidence;  ///< how much data the calibration behind this result rests on
  models::Workload workload;
  models::MemoryReport memory;
  /// Why the plan cannot run: it does not divide (then nothing but the scenario is set), or it
  /// does not fit (the step is still simulated when the scenario ignores memory).
  std::optional<Infeasible> infeasible;
  std::optional<models::StepResult> step;  ///< absent when infeasible (and not ignored)
  TrainingMetrics metrics;
  double simulate_wall_s = 0;
};

/// A scenario's calibration profile (the scenario's file, else the built-in one) and its lowered
/// workload: with scenario_gpu, what every command that simulates a scenario needs.
calibration::CalibrationProfile scenario_profile(const Scenario& scenario);
models::Workload scenario_workload(const Scenario& scenario,
                                   const calibration::CalibrationProfile& profile);

/// Evaluates a scenario on its own cluster at its backend's fidelity (api::Evaluator, once).
TrainingReport run_training(const Scenario& scenario);
/// Recomputation FLOPs per step (Megatron's hardware-FLOP convention) for a workload.
double recompute_flops(const models::TransformerConfig& model, const models::ParallelPlan& plan,
                       const models::TrainingConfig& training, int attention_span,
                       const models::Workload& workload);

nlohmann::json report_to_json(const TrainingReport& report);
std::string report_to_text(const TrainingReport& report);

}  // namespace fabricsim::api
