#include "api/training_run.hpp"

#include <fmt/format.h>

#include <chrono>

#include "calibration/profile.hpp"
#include "models/system.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::api {

double recompute_flops(const models::TransformerConfig& model_in, const models::ParallelPlan& plan,
                       const models::TrainingConfig& training, int attention_span) {
  models::TransformerConfig model = model_in;
  if (training.seq_len > 0) model.seq_len = training.seq_len;
  models::FlopsPerToken f = models::flops_per_token(model);
  f.attention_scores *= static_cast<double>(attention_span) / model.seq_len;
  const double tokens = static_cast<double>(training.global_batch) * model.seq_len;
  switch (plan.recompute) {
    case models::Recompute::full:
      // A second forward of every layer (the logits are not recomputed).
      return (f.dense_matmul - f.logits + f.attention_scores) * tokens;
    case models::Recompute::selective:
      return f.attention_scores * tokens;
    case models::Recompute::none:
      return 0;
  }
  return 0;
}

const topologies::GpuSpec& scenario_gpu(const Scenario& s) {
  return *topologies::find_gpu(topologies::find_system(s.system)->gpu);
}

calibration::CalibrationProfile scenario_profile(const Scenario& s) {
  return calibration::profile_for(s.system, scenario_gpu(s), s.calibration);
}

models::Workload scenario_workload(const Scenario& s,
                                   const calibration::CalibrationProfile& profile) {
  return models::build_workload(s.model, s.plan, s.training, scenario_gpu(s), profile.compute,
                                s.lowering);
}

namespace {

// A time that reached the end of the simulator's clock (106 days) is no answer: an input is far
// out of range. Name the inputs behind the component that saturated.
void check_not_saturated(const Scenario& s, const models::StepResult& step) {
  if (step.step_seconds < 0.99 * sim::Time::max().s()) return;
  const models::StageBreakdown& b = step.stages[static_cast<size_t>(step.critical_stage)];
  const bool compute = b.compute >= 0.99 * sim::Time::max().s();
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

TrainingReport run_training(const Scenario& s) {
  TrainingReport report;
  report.scenario = s;
  const topologies::GpuSpec& gpu = scenario_gpu(s);
  const models::System system =
      models::make_system(s.cluster, gpu, topologies::find_system(s.system)->cpu);
  const calibration::CalibrationProfile profile = scenario_profile(s);
  report.calibration_source =
      s.calibration.empty() ? "built-in profile of " + s.system : s.calibration;
  report.workload = scenario_workload(s, profile);
  report.memory = models::memory_report(report.workload, s.plan, s.training, gpu);
  if (!report.memory.fits && !s.ignore_memory) return report;
  const auto start = std::chrono::steady_clock::now();
  report.step =
      models::simulate_step(system, profile.collective, report.workload, s.plan, s.simulation);
  report.simulate_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check_not_saturated(s, *report.step);
  TrainingMetrics& m = report.metrics;
  m.step_time_s = report.step->step_seconds;
  const double gpus = s.gpus;
  m.tokens_per_s = report.workload.tokens_per_step / m.step_time_s;
  m.tokens_per_s_per_gpu = m.tokens_per_s / gpus;
  m.model_tflops_per_gpu = report.workload.model_flops / m.step_time_s / gpus * 1e-12;
  const int seq = s.training.seq_len > 0 ? s.training.seq_len : s.model.seq_len;
  const int span = s.training.task == models::TrainingTask::sft
                       ? std::min(seq, s.lowering.sft_document_tokens)
                       : seq;
  m.hw_tflops_per_gpu =
      (report.workload.model_flops + recompute_flops(s.model, s.plan, s.training, span)) /
      m.step_time_s / gpus * 1e-12;
  m.peak_tflops = gpu.peak_tflops(s.training.precision);
  if (m.peak_tflops > 0) {
    m.mfu = m.model_tflops_per_gpu / m.peak_tflops;
    m.hfu = m.hw_tflops_per_gpu / m.peak_tflops;
  }
  if (s.training.tokens_to_train > 0) {
    m.time_to_train_days = s.training.tokens_to_train / m.tokens_per_s / 86400.0;
  }
  return report;
}

namespace {

nlohmann::json breakdown_json(const models::StageBreakdown& b) {
  return {{"compute_s", b.compute},
          {"exposed_tp_s", b.exposed_tp},
          {"exposed_cp_s", b.exposed_cp},
          {"exposed_ep_s", b.exposed_ep},
          {"exposed_pp_s", b.exposed_pp},
          {"bubble_s", b.bubble},
          {"exposed_dp_s", b.exposed_dp},
          {"optimizer_s", b.optimizer},
          {"end_s", b.end}};
}

}  // namespace

nlohmann::json report_to_json(const TrainingReport& r) {
  nlohmann::json j = {{"scenario", scenario_summary_json(r.scenario)},
                      {"calibration", r.calibration_source},
                      {"memory", models::memory_to_json(r.memory)},
                      {"tokens_per_step", r.workload.tokens_per_step},
                      {"microbatches", r.workload.microbatches},
                      {"model_flops_per_step", r.workload.model_flops},
                      {"executed_flops_per_step", r.workload.executed_flops},
                      {"notes", r.workload.notes}};
  if (!r.step) {
    j["feasible"] = false;
    return j;
  }
  const TrainingMetrics& m = r.metrics;
  j["feasible"] = r.memory.fits;
  j["step_time_s"] = m.step_time_s;
  j["tokens_per_s"] = m.tokens_per_s;
  j["tokens_per_s_per_gpu"] = m.tokens_per_s_per_gpu;
  j["model_tflops_per_gpu"] = m.model_tflops_per_gpu;
  j["hw_tflops_per_gpu"] = m.hw_tflops_per_gpu;
  j["mfu"] = m.mfu;
  j["hfu"] = m.hfu;
  j["peak_tflops"] = m.peak_tflops;
  if (m.time_to_train_days > 0) j["time_to_train_days"] = m.time_to_train_days;
  j["critical_stage"] = r.step->critical_stage;
  j["breakdown"] = breakdown_json(r.step->stages[static_cast<size_t>(r.step->critical_stage)]);
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& b : r.step->stages)
    stages.push_back(breakdown_json(b));
  j["stages"] = stages;
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : r.step->busiest_links) {
    links.push_back(
        {{"link", l.name}, {"kind", l.kind}, {"bytes", l.bytes}, {"utilization", l.utilization}});
  }
  j["busiest_links"] = links;
  j["simulation"] = {{"events", r.step->events},
                     {"flows", r.step->flows},
                     {"simulated_ranks", r.step->simulated_ranks},
                     {"wall_s", r.simulate_wall_s}};
  return j;
}

std::string report_to_text(const TrainingReport& r) {
  const Scenario& s = r.scenario;
  const models::ParallelPlan& p = s.plan;
  const models::Placement placement(p, p.gpus());
  std::string out = fmt::format(
      "{} on {} x {} ({}), {} {} | TP{} PP{} DP{} CP{} EP{} VP{} mb{} gbs{} seq{} | zero {} "
      "recompute {} | {} backend\n",
      s.model.name, s.gpus, s.system, placement.order_string(), models::to_string(s.training.task),
      topologies::to_string(s.training.precision), p.tp, p.pp, p.dp, p.cp, p.ep, p.vp,
      p.micro_batch, s.training.global_batch, r.workload.seq_len, p.zero,
      models::to_string(p.recompute), models::to_string(s.simulation.backend));
  out += fmt::format("calibration: {}\n", r.calibration_source);
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const auto& worst = r.memory.stages[static_cast<size_t>(r.memory.worst_stage)];
  out += fmt::format(
      "memory (stage {}): {:.1f} of {:.1f} GiB: weights {:.1f}, gradients {:.1f}, optimizer "
      "{:.1f}, activations {:.1f} ({} chunks in flight), framework {:.1f}{}\n",
      worst.stage, worst.total() / kGiB, r.memory.capacity / kGiB, worst.weights / kGiB,
      worst.gradients / kGiB, worst.optimizer / kGiB, worst.activations / kGiB, worst.in_flight,
      worst.framework / kGiB, r.memory.fits ? "" : "  DOES NOT FIT");
  if (!r.step) {
    out += "infeasible: " + r.memory.reason + "\n(use --ignore-memory to simulate anyway)\n";
    return out;
  }
  const TrainingMetrics& m = r.metrics;
  out += fmt::format("step time           {:.4f} s ({} micro-batches)\n", m.step_time_s,
                     r.workload.microbatches);
  out += fmt::format("throughput          {:.0f} tokens/s ({:.1f} per GPU)\n", m.tokens_per_s,
                     m.tokens_per_s_per_gpu);
  out += fmt::format("model TFLOP/s/GPU   {:.1f}  (MFU {:.1f}% of {:.0f} dense)\n",
                     m.model_tflops_per_gpu, 100 * m.mfu, m.peak_tflops);
  out +=
      fmt::format("hardware TFLOP/s    {:.1f}  (HFU {:.1f}%)\n", m.hw_tflops_per_gpu, 100 * m.hfu);
  if (m.time_to_train_days > 0) {
    out += fmt::format("time to train       {:.1f} days\n", m.time_to_train_days);
  }
  const auto& b = r.step->stages[static_cast<size_t>(r.step->critical_stage)];
  out += fmt::format("breakdown (stage {}): compute {:.4f} s", r.step->critical_stage, b.compute);
  for (auto [name, v] : {std::pair{"TP", b.exposed_tp},
                         {"CP", b.exposed_cp},
                         {"EP", b.exposed_ep},
                         {"PP", b.exposed_pp},
                         {"DP", b.exposed_dp},
                         {"bubble", b.bubble},
                         {"optimizer", b.optimizer}}) {
    if (v > 0) out += fmt::format(", {} {:.4f}", name, v);
  }
  out += "\n";
  if (!r.step->busiest_links.empty()) {
    out += "busiest links:\n";
    for (const auto& l : r.step->busiest_links) {
      out += fmt::format("  {:<40} {:<8} {:>9.3f} GB  {:>5.1f}% busy\n", l.name, l.kind,
                         l.bytes * 1e-9, 100 * l.utilization);
    }
  }
  out += fmt::format(
      "simulated {} rank(s), {} events, {} flows ({} rate solves over {} flows) in "
      "{:.3f} s\n",
      r.step->simulated_ranks, r.step->events, r.step->flows, r.step->rate_solves,
      r.step->solved_flows, r.simulate_wall_s);
  return out;
}

}  // namespace fabricsim::api
