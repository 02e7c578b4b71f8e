#pragma once
// The one way to evaluate training plans on a cluster. An Evaluator resolves a scenario's cluster
// once (system preset, GPU, host CPU, topology, calibration profile) and then evaluates any
// number of plans on it: `prepare` lowers a scenario's model, plan and training into a workload
// and checks its memory; `evaluate` simulates one step and derives the metrics. A plan that does
// not divide or does not fit is a result (Infeasible, with the reason), not an exception.
//
// Evaluators are thread-safe: evaluate() and prepare() are const and may run concurrently. Routes
// and collective schedules are cached per evaluator (one cache per concurrent caller, reused by
// the next), so many plans on one cluster plan each collective once.
//
//   api::Evaluator cluster(scenario);                      // builds the topology
//   api::PreparedPlan p = cluster.prepare(variant);        // workload + memory, once per plan
//   api::StepEvaluation e = cluster.evaluate(p, api::Fidelity::analytical);
//   if (e.infeasible) ... e.infeasible->reason; else ... e.metrics.mfu

#include <memory>
#include <optional>
#include <string>

#include "api/infeasible.hpp"
#include "api/scenario.hpp"
#include "api/training_run.hpp"
#include "calibration/profile.hpp"
#include "models/memory_model.hpp"
#include "models/step_simulator.hpp"
#include "models/system.hpp"
#include "models/workload.hpp"

namespace fabricsim::api {

/// How a step is simulated: analytical (every transfer at its uncontended time) or flow (flows
/// share the links of the topology, max-min fair).
enum class Fidelity { analytical, flow };
Fidelity fidelity_of(models::Backend backend);
models::Backend backend_of(Fidelity fidelity);

/// A scenario lowered on an evaluator's cluster: what evaluating it needs, built once.
struct PreparedPlan {
  Scenario scenario;
  std::optional<Infeasible> problem;  ///< the plan does not divide (then nothing else is set)
  models::Workload workload;
  models::MemoryReport memory;
};

/// One simulated step: infeasible, or the step and its metrics.
struct StepEvaluation {
  std::optional<Infeasible> infeasible;
  std::optional<models::StepResult> step;  ///< also set for an ignored memory overflow
  TrainingMetrics metrics;
  double simulate_wall_s = 0;
};

/// Jobs evaluated together on one cluster.
struct SharedEvaluation {
  std::vector<StepEvaluation> jobs;  ///< per job, in the order given
  models::SharedStepResult shared;
};

class Evaluator {
 public:
  /// Resolves the cluster of `scenario` (its system, GPU count, fabric overrides and calibration
  /// profile; the topology the scenario reader built is reused). Throws sim::InputError for an
  /// unreadable profile and topologies::SpecError for a fabric that cannot be built.
  explicit Evaluator(const Scenario& scenario);
  /// The same cluster with `compute` in place of the calibration profile's compute part (a
  /// run-calibrated sustained efficiency, `fabricsim validate --anchor`).
  Evaluator(const Scenario& scenario, const models::ComputeProfile& compute);
  ~Evaluator();
  Evaluator(Evaluator&&) noexcept;
  Evaluator& operator=(Evaluator&&) noexcept;

  const models::System& system() const;
  const calibration::CalibrationProfile& profile() const;
  /// "built-in profile of <system>" or the profile's path.
  const std::string& calibration_source() const;

  /// Lowers `scenario` (which must be on this cluster: same system and at most its GPUs, else
  /// std::invalid_argument) and checks its memory. A scenario with fewer GPUs than the cluster
  /// is one job on it: its ranks run on the GPUs `simulation.gpus` names (default the first).
  PreparedPlan prepare(const Scenario& scenario) const;
  /// The same, lowered with another compute profile (a search over its parameters reuses the
  /// cluster: `fabricsim calibrate run`).
  PreparedPlan prepare(const Scenario& scenario, const models::ComputeProfile& compute) const;
  /// Simulates one step of a prepared plan.
  StepEvaluation evaluate(const PreparedPlan& plan, Fidelity fidelity) const;
  /// prepare + evaluate, as the report `run` prints; a plan that does not divide yields a report
  /// with `infeasible` set and nothing else.
  TrainingReport evaluate(const Scenario& scenario, Fidelity fidelity) const;
  /// The same report for a plan already prepared (it is consumed).
  TrainingReport report(PreparedPlan plan, Fidelity fidelity) const;
  /// Several prepared plans (jobs) on this cluster at once, each on the GPUs its scenario's
  /// `simulation.gpus` names, their traffic sharing the fabric (models::simulate_shared_steps):
  /// each job's evaluation together with the others, and the shared simulation. Every plan must
  /// be feasible (std::invalid_argument otherwise).
  SharedEvaluation evaluate_together(const std::vector<const PreparedPlan*>& plans,
                                     Fidelity fidelity, int steps) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The metrics of a step of `workload` under `scenario` on `gpu`.
TrainingMetrics training_metrics(const Scenario& scenario, const models::Workload& workload,
                                 const models::StepResult& step, const topologies::GpuSpec& gpu);

}  // namespace fabricsim::api
