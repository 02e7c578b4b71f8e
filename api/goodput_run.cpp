#include "api/goodput_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "api/training_run.hpp"
#include "models/straggler_model.hpp"
#include "models/transformer.hpp"

namespace fabricsim::api {
namespace {

/// GPU-to-host copy bandwidth of one x16 link per generation (PCIE-HPCNOTES: Gen4 31.5 GB/s,
/// Gen5 63 GB/s per direction).
double pcie_bytes_per_s(topologies::GpuGeneration g) {
  switch (g) {
    case topologies::GpuGeneration::volta:
      return 15.7e9;
    case topologies::GpuGeneration::ampere:
      return 31.5e9;
    default:
      return 63e9;
  }
}

double trainable_parameters(const Scenario& s, double total) {
  if (s.training.task != models::TrainingTask::lora) return total;
  const calibration::CalibrationProfile profile = scenario_profile(s);
  const models::Workload w = scenario_workload(s, profile);
  double per_rank = 0;
  for (const models::StageWork& st : w.stages)
    per_rank += st.trainable_params;
  return per_rank * s.plan.tp;  // adapters are split over TP like the weights they adapt
}

}  // namespace

GoodputReport evaluate_goodput(const Scenario& s, double days, models::RecoveryLevel level,
                               double tokens_per_s, double step_time_s,
                               double slowdown_while_writing) {
  const OperationsSpec& ops = s.operations;
  GoodputReport r;
  r.gpus = s.gpus;
  const int per_node = std::max(1, std::min(s.cluster.gpus_per_server, s.gpus));
  r.nodes = (s.gpus + per_node - 1) / per_node;
  r.days = days;
  r.recovery = resolve_recovery(ops, level, r.nodes);

  const double params = models::count_parameters(s.model).total;
  const models::CheckpointLayout layout =
      models::checkpoint_layout(params, trainable_parameters(s, params), s.gpus, per_node,
                                s.plan.tp, s.plan.pp, s.plan.dp, s.plan.cp, s.plan.zero);
  models::CheckpointSpec ck = ops.checkpoint;
  if (ck.snapshot_bytes_per_s <= 0)
    ck.snapshot_bytes_per_s = pcie_bytes_per_s(scenario_gpu(s).generation);
  r.checkpoint = models::checkpoint_cost(layout, ck, ops.storage);

  models::GoodputInputs in;
  in.wall_hours = days * 24;
  in.gpus = s.gpus;
  in.nodes = r.nodes;
  in.classes = ops.failures;
  in.recovery = r.recovery;
  in.checkpoint = ck;
  in.checkpoint_cost = r.checkpoint;
  in.slowdown_while_writing = slowdown_while_writing;
  r.result = models::goodput(in);

  StorageFeed& f = r.storage;
  f.step_slowdown_while_writing = slowdown_while_writing;
  const double bytes_per_token = ops.bytes_per_token * ops.read_amplification;
  f.capacity_bytes_per_s =
      std::min(ops.storage.read_bytes_per_s, ops.storage.per_node_bytes_per_s * r.nodes);
  f.max_tokens_per_s = f.capacity_bytes_per_s / bytes_per_token;
  f.checkpoint_node_burst_bytes = r.checkpoint.node_write_bytes;
  f.checkpoint_burst_s = r.checkpoint.write_s;
  if (ops.storage.shares_fabric && s.cluster.scale_out && r.checkpoint.write_s > 0) {
    const double nic = s.cluster.scale_out->nics_per_server *
                       s.cluster.scale_out->nic_bandwidth.bytes_per_s() *
                       (static_cast<double>(per_node) / s.cluster.gpus_per_server);
    f.checkpoint_nic_share =
        std::min(1.0, r.checkpoint.node_write_bytes / r.checkpoint.write_s / nic);
  }
  if (tokens_per_s > 0) {
    r.simulated = true;
    r.step_time_s = step_time_s;
    r.tokens_per_s = tokens_per_s;
    f.needed_bytes_per_s = tokens_per_s * bytes_per_token;
    f.limits = f.needed_bytes_per_s > f.capacity_bytes_per_s;
    r.limiter = f.limits ? "storage" : "compute/fabric";
    r.effective_tokens_per_s = std::min(tokens_per_s, f.max_tokens_per_s) * r.result.goodput;
    if (s.training.tokens_to_train > 0 && r.effective_tokens_per_s > 0) {
      r.time_to_train_days = s.training.tokens_to_train / r.effective_tokens_per_s / 86400;
    }
  }
  return r;
}

GoodputReport run_goodput(const Scenario& s, double days,
                          std::optional<models::RecoveryLevel> level) {
  const models::RecoveryLevel lv = level.value_or(s.operations.recovery);
  const TrainingReport t = run_training(s);
  const double tokens = t.step ? t.metrics.tokens_per_s : 0;
  const double step = t.step ? t.metrics.step_time_s : 0;
  GoodputReport r = evaluate_goodput(s, days, lv, tokens, step);
  if (!t.step && t.infeasible) r.not_simulated = t.infeasible->reason;
  const double share = r.storage.checkpoint_nic_share;
  if (!t.step || share <= 0 || s.operations.checkpoint.mode != models::CheckpointMode::async) {
    return r;
  }
  // The burst leaves every NIC (1 - share) of its rate while it lasts: simulate that step.
  std::map<int, double> every_nic;
  for (int g = 0; g < s.gpus; ++g)
    every_nic[g] = 1.0 / std::max(0.05, 1.0 - share);
  Scenario writing = s;
  writing.topology = std::make_shared<const topologies::Topology>(
      models::with_slow_nic_links(*s.topology, every_nic));
  const TrainingReport w = run_training(writing);
  if (!w.step) return r;
  return evaluate_goodput(s, days, lv, tokens, step, w.metrics.step_time_s / step);
}

nlohmann::json goodput_to_json(const GoodputReport& r) {
  const models::GoodputResult& g = r.result;
  const models::LostHours& l = g.lost;
  const models::RecoverySpec& rc = r.recovery;
  const models::CheckpointCost& c = r.checkpoint;
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j;
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["days"] = r.days;
  j["recovery"] = std::string(models::to_string(rc.level));
  j["mtbf_hours"] = finite(g.mtbf_hours);
  j["unexpected_interruptions"] = g.unexpected_interruptions;
  j["planned_interruptions"] = g.planned_interruptions;
  j["p_any_failure"] = g.p_any_failure;
  j["goodput"] = g.goodput;
  j["useful_hours"] = g.useful_hours;
  j["lost_hours"] = {{"rework", l.rework},
                     {"checkpoint", l.checkpoint},
                     {"detection", l.detection},
                     {"isolation", l.isolation},
                     {"restart", l.restart},
                     {"restore", l.restore},
                     {"repair_wait", l.repair_wait},
                     {"planned", l.planned},
                     {"degraded", l.degraded},
                     {"interference", l.interference},
                     {"total", l.total()}};
  j["recovery_times_s"] = {{"detection", rc.detection_s},
                           {"isolation", rc.isolation_s},
                           {"restart", rc.restart_s},
                           {"repair", rc.repair_s},
                           {"source", rc.source}};
  j["spares"] = {{"nodes", rc.spare_nodes},
                 {"nodes_in_repair", g.nodes_in_repair},
                 {"available", g.spare_available}};
  j["checkpoint"] = {{"state_GB", c.state_bytes * 1e-9},
                     {"per_gpu_write_GB", c.max_gpu_write_bytes * 1e-9},
                     {"write_s", c.write_s},
                     {"restore_s", c.restore_s},
                     {"blocking_s", c.blocking_s},
                     {"interval_s", finite(g.interval_s)},
                     {"limited_by", c.write_limited_by_node ? "node link" : "storage aggregate"}};
  const StorageFeed& f = r.storage;
  j["storage"] = {{"needed_GB_per_s", f.needed_bytes_per_s * 1e-9},
                  {"capacity_GB_per_s", f.capacity_bytes_per_s * 1e-9},
                  {"max_tokens_per_s", f.max_tokens_per_s},
                  {"limits", f.limits},
                  {"checkpoint_node_burst_GB", f.checkpoint_node_burst_bytes * 1e-9},
                  {"checkpoint_burst_s", f.checkpoint_burst_s},
                  {"checkpoint_nic_share", f.checkpoint_nic_share},
                  {"step_slowdown_while_writing", f.step_slowdown_while_writing}};
  if (r.simulated) {
    j["step_time_s"] = r.step_time_s;
    j["tokens_per_s"] = r.tokens_per_s;
    j["effective_tokens_per_s"] = r.effective_tokens_per_s;
    j["limiter"] = r.limiter;
    if (r.time_to_train_days > 0) j["time_to_train_days"] = r.time_to_train_days;
  }
  if (!r.not_simulated.empty()) j["not_simulated"] = r.not_simulated;
  return j;
}

std::string goodput_to_text(const GoodputReport& r) {
  const models::GoodputResult& g = r.result;
  const models::LostHours& l = g.lost;
  const double wall = r.days * 24;
  std::string out = fmt::format("{} GPUs on {} nodes for {:g} days, {} recovery\n", r.gpus, r.nodes,
                                r.days, models::to_string(r.recovery.level));
  out += fmt::format(
      "job MTBF            {:.2f} h ({:.1f} unexpected + {:.1f} planned "
      "interruptions, P(any) {:.0f}%)\n",
      g.mtbf_hours, g.unexpected_interruptions, g.planned_interruptions, 100 * g.p_any_failure);
  out += fmt::format(
      "checkpoint          {:.1f} GB, write {:.1f} s ({}), restore {:.1f} s, "
      "blocks {:.1f} s every {:.1f} min\n",
      r.checkpoint.state_bytes * 1e-9, r.checkpoint.write_s,
      r.checkpoint.write_limited_by_node ? "node link" : "storage aggregate",
      r.checkpoint.restore_s, r.checkpoint.blocking_s, g.interval_s / 60);
  out += fmt::format(
      "spares              {} nodes, {:.1f} in repair on average, free {:.1f}% of "
      "the time\n",
      r.recovery.spare_nodes, g.nodes_in_repair, 100 * g.spare_available);
  out += "time lost           hours   % of wall\n";
  auto row = [&](const char* name, double h) {
    out += fmt::format("  {:<17} {:>7.1f}  {:>6.2f}\n", name, h, wall > 0 ? 100 * h / wall : 0);
  };
  row("rework", l.rework);
  row("checkpoint writes", l.checkpoint);
  row("detection", l.detection);
  row("isolation", l.isolation);
  row("restart", l.restart);
  row("restore", l.restore);
  row("repair wait", l.repair_wait);
  row("planned", l.planned);
  row("degraded", l.degraded);
  row("interference", l.interference);
  out += fmt::format("goodput             {:.1f}%\n", 100 * g.goodput);
  if (r.simulated) {
    out += fmt::format("throughput          {:.0f} tokens/s simulated, {:.0f} effective ({})\n",
                       r.tokens_per_s, r.effective_tokens_per_s, r.limiter);
    out += fmt::format("input pipeline      needs {:.3f} GB/s of {:.1f} GB/s storage can feed\n",
                       r.storage.needed_bytes_per_s * 1e-9, r.storage.capacity_bytes_per_s * 1e-9);
    if (r.time_to_train_days > 0)
      out += fmt::format("time to train       {:.1f} days\n", r.time_to_train_days);
  } else if (!r.not_simulated.empty()) {
    out += fmt::format("throughput          not simulated: {}\n", r.not_simulated);
  }
  return out;
}

}  // namespace fabricsim::api
