#include "api/evaluator.hpp"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "models/megatron_bridge_flops.hpp"
#include "models/step_cache.hpp"
#include "models/straggler_model.hpp"
#include "sim/input_error.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {

Fidelity fidelity_of(models::Backend backend) {
  return backend == models::Backend::flow ? Fidelity::flow : Fidelity::analytical;
}

models::Backend backend_of(Fidelity fidelity) {
  return fidelity == Fidelity::flow ? models::Backend::flow : models::Backend::analytical;
}

namespace {

// A time that reached the end of the simulator's clock (106 days) is no answer: an input is far
// out of range. Name the inputs behind the component that saturated.
void check_not_saturated(const Scenario& s, const models::StepResult& step) {
  if (step.step_time.s() < 0.99 * sim::Time::max().s()) return;
  const models::StageBreakdown& b = step.stages[static_cast<size_t>(step.critical_stage)];
  const bool compute = b.compute.s() >= 0.99 * sim::Time::max().s();
  throw sim::InputError(
      s.source, compute ? "/model" : "/system",
      fmt::format("the step takes longer than the {:.0f} days the simulator's clock can hold: {} "
                  "far out of range",
                  sim::Time::max().s() / 86400,
                  compute ? "the model's sizes or the calibration profile's compute efficiencies "
                            "are"
                          : "a bandwidth of the system (fabric, NVLink) or an efficiency of the "
                            "calibration profile is"));
}

}  // namespace

struct Evaluator::State {
  std::string name;
  int gpus = 0;
  models::System system;
  calibration::CalibrationProfile profile;
  std::string calibration_source;
  /// Caches no caller holds right now; a caller takes one (or makes one) and gives it back.
  std::mutex mutex;
  std::vector<std::unique_ptr<models::StepCache>> idle;

  std::unique_ptr<models::StepCache> take(topologies::RoutingStrategy routing, bool collnet) {
    {
      const std::lock_guard lock(mutex);
      for (auto it = idle.begin(); it != idle.end(); ++it) {
        if ((*it)->serves(system, profile.collective, routing, collnet)) {
          auto cache = std::move(*it);
          idle.erase(it);
          return cache;
        }
      }
    }
    return std::make_unique<models::StepCache>(system, profile.collective, routing, collnet);
  }

  void give_back(std::unique_ptr<models::StepCache> cache) {
    const std::lock_guard lock(mutex);
    idle.push_back(std::move(cache));
  }
};

Evaluator::Evaluator(const Scenario& s) : state_(std::make_unique<State>()) {
  const topologies::SystemPreset& preset = *s.preset;
  const topologies::GpuSpec& gpu = scenario_gpu(s);
  state_->name = s.system();
  state_->gpus = s.gpus;
  state_->system.name = s.cluster.system;
  state_->system.gpu = gpu;
  state_->system.cpu = preset.cpu;
  state_->system.topology =
      s.topology
          ? s.topology
          : std::make_shared<const topologies::Topology>(topologies::build_cluster(s.cluster));
  state_->profile = calibration::profile_for(s.system(), gpu, s.calibration);
  state_->calibration_source = describe_calibration(s, state_->profile.compute);
}

Evaluator::Evaluator(const Scenario& s, const models::ComputeProfile& compute) : Evaluator(s) {
  state_->profile.compute = compute;
  state_->calibration_source = describe_calibration(s, compute);
}

Evaluator::~Evaluator() = default;
Evaluator::Evaluator(Evaluator&&) noexcept = default;
Evaluator& Evaluator::operator=(Evaluator&&) noexcept = default;

const models::System& Evaluator::system() const {
  return state_->system;
}
const calibration::CalibrationProfile& Evaluator::profile() const {
  return state_->profile;
}
const std::string& Evaluator::calibration_source() const {
  return state_->calibration_source;
}

PreparedPlan Evaluator::prepare(const Scenario& s) const {
  return prepare(s, state_->profile.compute);
}

PreparedPlan Evaluator::prepare(const Scenario& s, const models::ComputeProfile& compute) const {
  if (s.system() != state_->name || s.gpus > state_->gpus) {
    throw std::invalid_argument("Evaluator::prepare: the scenario is on " + s.system() + " x " +
                                std::to_string(s.gpus) + ", the evaluator on " + state_->name +
                                " x " + std::to_string(state_->gpus));
  }
  PreparedPlan p;
  p.scenario = s;
  if (const auto problem = models::check_plan(s.plan, s.training, s.model, s.gpus)) {
    p.problem = Infeasible{Infeasible::Cause::plan,
                           problem->in_training ? problem->field : "/parallelism" + problem->field,
                           problem->message};
    return p;
  }
  const topologies::GpuSpec& gpu = state_->system.gpu;
  p.workload = models::build_workload(s.model, s.plan, s.training, gpu, compute, s.lowering);
  p.memory = models::memory_report(p.workload, s.plan, s.training, gpu);
  return p;
}

StepEvaluation Evaluator::evaluate(const PreparedPlan& p, Fidelity fidelity) const {
  StepEvaluation e;
  if (p.problem) {
    e.infeasible = p.problem;
    return e;
  }
  if (!p.memory.fits) {
    e.infeasible = Infeasible{Infeasible::Cause::memory, "", p.memory.reason};
    if (!p.scenario.ignore_memory) return e;
  }
  models::StepOptions options = p.scenario.simulation;
  options.backend = backend_of(fidelity);
  if (const auto& windows = p.scenario.operations.stragglers.link_windows; !windows.empty()) {
    if (fidelity != Fidelity::flow) {
      throw sim::InputError(p.scenario.source, "/stragglers/links",
                            "a link slow for part of the step (from/until) needs the flow "
                            "backend: the analytical one has no capacities that change in time");
    }
    options.link_changes = models::link_changes_of(*state_->system.topology, windows);
  }
  std::unique_ptr<models::StepCache> cache = state_->take(options.routing, options.collnet);
  const auto start = std::chrono::steady_clock::now();
  e.step = models::simulate_step(state_->system, state_->profile.collective, p.workload,
                                 p.scenario.plan, options, cache.get());
  e.simulate_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state_->give_back(std::move(cache));
  check_not_saturated(p.scenario, *e.step);
  e.metrics = training_metrics(p.scenario, p.workload, *e.step, state_->system.gpu);
  return e;
}

TrainingReport Evaluator::evaluate(const Scenario& s, Fidelity fidelity) const {
  return report(prepare(s), fidelity);
}

TrainingReport Evaluator::report(PreparedPlan p, Fidelity fidelity) const {
  StepEvaluation e = evaluate(p, fidelity);
  TrainingReport report;
  report.scenario = std::move(p.scenario);
  report.scenario.simulation.backend = backend_of(fidelity);
  report.calibration_source = state_->calibration_source;
  report.confidence = assess_confidence(state_->profile, report.scenario);
  report.workload = std::move(p.workload);
  report.memory = std::move(p.memory);
  report.infeasible = std::move(e.infeasible);
  report.step = std::move(e.step);
  report.metrics = e.metrics;
  report.simulate_wall_s = e.simulate_wall_s;
  return report;
}

SharedEvaluation Evaluator::evaluate_together(const std::vector<const PreparedPlan*>& plans,
                                              Fidelity fidelity, int steps) const {
  std::vector<models::SharedJob> jobs;
  for (const PreparedPlan* p : plans) {
    if (p->problem || !p->memory.fits) {
      throw std::invalid_argument("Evaluator::evaluate_together: a plan that cannot run");
    }
    models::SharedJob job{&p->workload, &p->scenario.plan, p->scenario.simulation};
    job.options.backend = backend_of(fidelity);
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return {};
  const models::StepOptions& first = jobs.front().options;
  std::unique_ptr<models::StepCache> cache = state_->take(first.routing, first.collnet);
  SharedEvaluation out;
  const auto start = std::chrono::steady_clock::now();
  out.shared = models::simulate_shared_steps(state_->system, state_->profile.collective, jobs,
                                             steps, cache.get());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state_->give_back(std::move(cache));
  for (size_t k = 0; k < plans.size(); ++k) {
    StepEvaluation e;
    e.step = out.shared.jobs[k];
    e.simulate_wall_s = wall;
    check_not_saturated(plans[k]->scenario, *e.step);
    e.metrics =
        training_metrics(plans[k]->scenario, plans[k]->workload, *e.step, state_->system.gpu);
    out.jobs.push_back(std::move(e));
  }
  return out;
}

namespace {

/// Model FLOPs per token in the closed forms Megatron-Bridge reports (its LoRA count, which NeMo
/// 24.07 used too, else its pre-training form of the release); 0 for a framework counting the
/// GEMMs.
double bridge_flops_per_token(const Scenario& s, int seq) {
  const models::SoftwareStack& software = s.lowering.software;
  if (software.bridge_lora_flops && s.training.task == models::TrainingTask::lora) {
    return models::megatron_bridge_lora_flops_per_token(
        s.model, std::min(seq, s.lowering.sft_document_tokens));
  }
  if (software.flop_count != models::FlopCount::megatron_bridge) return 0.0;
  return models::megatron_bridge_flops_per_token(s.model, seq, s.plan.tp,
                                                 software.bridge_flop_form);
}

}  // namespace

TrainingMetrics training_metrics(const Scenario& s, const models::Workload& workload,
                                 const models::StepResult& step, const topologies::GpuSpec& gpu) {
  TrainingMetrics m;
  m.step_time_s = step.step_time.s();
  const double gpus = s.gpus;
  m.tokens_per_s = workload.tokens_per_step / m.step_time_s;
  m.tokens_per_s_per_gpu = m.tokens_per_s / gpus;
  // As the framework reports it (Megatron-Bridge: its own closed form).
  const int seq = models::sequence_length(s.training, s.model);
  const double bridge_per_token = bridge_flops_per_token(s, seq);
  const double model_flops =
      bridge_per_token > 0 ? bridge_per_token * workload.tokens_per_step : workload.model_flops;
  m.model_tflops_per_gpu = model_flops / m.step_time_s / gpus * 1e-12;
  const int span = s.training.task == models::TrainingTask::sft
                       ? std::min(seq, s.lowering.sft_document_tokens)
                       : seq;
  m.hw_tflops_per_gpu =
      (model_flops + recompute_flops(s.model, s.plan, s.training, span, workload)) / m.step_time_s /
      gpus * 1e-12;
  m.peak_tflops = gpu.peak_tflops(s.training.precision);
  if (m.peak_tflops > 0) {
    m.mfu = m.model_tflops_per_gpu / m.peak_tflops;
    m.hfu = m.hw_tflops_per_gpu / m.peak_tflops;
  }
  if (s.training.tokens_to_train > 0) {
    m.time_to_train_days = s.training.tokens_to_train / m.tokens_per_s / 86400.0;
  }
  return m;
}

}  // namespace fabricsim::api
