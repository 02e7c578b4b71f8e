#include "api/training_run.hpp"

#include <fmt/format.h>

#include "api/evaluator.hpp"
#include "calibration/profile.hpp"
#include "models/system.hpp"

namespace fabricsim::api {

double recompute_flops(const models::TransformerConfig& model_in, const models::ParallelPlan& plan,
                       const models::TrainingConfig& training, int attention_span,
                       const models::Workload& workload) {
  models::TransformerConfig model = model_in;
  model.seq_len = models::sequence_length(training, model_in);
  models::FlopsPerToken f = models::flops_per_token(model);
  f.attention_scores *= static_cast<double>(attention_span) / model.seq_len;
  const double tokens = static_cast<double>(training.global_batch) * model.seq_len;
  // A layer that recomputes fully runs its forward twice (the logits are not recomputed); the
  // others recompute their attention scores under selective recomputation, nothing otherwise.
  const double full = (f.dense_matmul - f.logits + f.attention_scores) * tokens;
  double rest = plan.recompute == models::Recompute::selective ? f.attention_scores * tokens : 0.0;
  // Recomputed modules rerun their GEMMs: MLA's up projections, a dense layer's FC1.
  const double layers = model.layers;
  if (model.mla && plan.recomputes(models::RecomputeModule::mla_up_proj)) {
    const models::MlaUpProjections up = models::mla_up_projections(*model.mla, model.heads);
    rest += 2.0 * (up.q + up.kv) * layers * tokens;
  }
  if (plan.recomputes(models::RecomputeModule::mlp)) {
    const double dense = layers - (model.moe ? models::moe_layer_count(model) : 0.0);
    const double gate = models::is_gated(model.mlp) ? 2.0 : 1.0;
    rest += 2.0 * model.hidden * gate * model.ffn * dense * tokens;
  }
  const double share = models::fully_recomputed_share(workload, plan);
  return share * full + (1 - share) * rest;
}

static std::string layer_memory_text(const models::ParallelPlan& p) {
  std::string out;
  if (p.recompute_layers > 0) out += fmt::format(", {} layers full per chunk", p.recompute_layers);
  if (p.offload_layers > 0) out += fmt::format(", {} layers offloaded per chunk", p.offload_layers);
  return out;
}

calibration::CalibrationProfile scenario_profile(const Scenario& s) {
  return calibration::profile_for(s.system(), scenario_gpu(s), s.calibration);
}

models::Workload scenario_workload(const Scenario& s,
                                   const calibration::CalibrationProfile& profile) {
  return models::build_workload(s.model, s.plan, s.training, scenario_gpu(s), profile.compute,
                                s.lowering);
}

TrainingReport run_training(const Scenario& s) {
  return Evaluator(s).evaluate(s, fidelity_of(s.simulation.backend));
}

namespace {

nlohmann::json breakdown_json(const models::StageBreakdown& b) {
  nlohmann::json j;
  for (const models::BreakdownComponent& c : models::kBreakdownComponents)
    j[std::string(c.key) + "_s"] = (b.*c.field).s();
  j["end_s"] = b.end.s();
  return j;
}

}  // namespace

nlohmann::json report_to_json(const TrainingReport& r) {
  if (r.infeasible && r.infeasible->cause == Infeasible::Cause::plan) {
    return {{"scenario", scenario_to_json(r.scenario)},
            {"software", software_to_json(r.scenario.lowering.software)},
            {"feasible", false},
            {"infeasible", {{"field", r.infeasible->field}, {"reason", r.infeasible->reason}}}};
  }
  nlohmann::json j = {{"scenario", scenario_to_json(r.scenario)},
                      {"software", software_to_json(r.scenario.lowering.software)},
                      {"calibration", r.calibration_source},
                      {"confidence", confidence_to_json(r.confidence)},
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
  j["op_classes"] =
      models::op_class_json(models::op_class_seconds(r.workload, r.step->critical_stage));
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& b : r.step->stages)
    stages.push_back(breakdown_json(b));
  j["stages"] = stages;
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : r.step->busiest_links) {
    links.push_back({{"link", l.name},
                     {"kind", l.kind},
                     {"bytes", l.bytes.count()},
                     {"utilization", l.utilization}});
  }
  j["busiest_links"] = links;
  j["simulation"] = {{"events", r.step->events},
                     {"flows", r.step->flows},
                     {"flows_by_group", r.step->flows_by_group},
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
      "recompute {}{} | {} backend\n",
      s.model.name, s.gpus, s.system(), placement.order_string(),
      models::to_string(s.training.task), topologies::to_string(s.training.precision), p.tp, p.pp,
      p.dp, p.cp, p.ep, p.vp, p.micro_batch, s.training.global_batch, r.workload.seq_len, p.zero,
      models::to_string(p.recompute), layer_memory_text(p),
      models::to_string(s.simulation.backend));
  out += fmt::format("calibration: {}\n", r.calibration_source);
  out += fmt::format("confidence: {}\n", confidence_line(r.confidence));
  if (r.infeasible && r.infeasible->cause == Infeasible::Cause::plan) {
    return out + fmt::format("infeasible: {} ({})\n", r.infeasible->reason, r.infeasible->field);
  }
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const auto& worst = r.memory.stages[static_cast<size_t>(r.memory.worst_stage)];
  out += fmt::format("memory (stage {}): {:.1f} of {:.1f} GiB: {}{}\n", worst.stage,
                     worst.total() / kGiB, r.memory.capacity / kGiB,
                     models::memory_breakdown_text(worst), r.memory.fits ? "" : "  DOES NOT FIT");
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
  out +=
      fmt::format("breakdown (stage {}): compute {:.4f} s", r.step->critical_stage, b.compute.s());
  for (const models::BreakdownComponent& c : models::kBreakdownComponents) {
    if (c.field != &models::StageBreakdown::compute && (b.*c.field).s() > 0)
      out += fmt::format(", {} {:.4f}", c.label, (b.*c.field).s());
  }
  out += "\n";
  if (!r.step->busiest_links.empty()) {
    out += "busiest links:\n";
    for (const auto& l : r.step->busiest_links) {
      out += fmt::format("  {:<40} {:<8} {:>9.3f} GB  {:>5.1f}% busy\n", l.name, l.kind,
                         l.bytes.gb(), 100 * l.utilization);
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
