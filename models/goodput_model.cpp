#include "models/goodput_model.hpp"

#include <algorithm>
#include <cmath>

namespace fabricsim::models {
namespace {

// Planned restarts of the Llama 3 405B run: 47 in 54 days (hardware.json llama3_405b_run).
constexpr double kLlamaPlannedPerHour = 47.0 / (54.0 * 24.0);
// No public source gives a node repair turnaround; two days is an assumption (docs/models.md).
constexpr double kRepairSeconds = 48 * 3600.0;

}  // namespace

std::string_view to_string(RecoveryLevel r) {
  return r == RecoveryLevel::manual ? "manual" : "automated";
}

RecoverySpec recovery_preset(RecoveryLevel level) {
  RecoverySpec r;
  r.level = level;
  r.repair_s = kRepairSeconds;
  r.planned_per_hour = kLlamaPlannedPerHour;
  if (level == RecoveryLevel::manual) {
    // A hung collective is noticed when PyTorch's NCCL watchdog fires (10 min default timeout);
    // the job restarts without startup optimisation (1,047 s for 2,048 GPUs, ByteDance); an
    // operator diagnoses and drains the node in the rest of NCSA Delta's 2.2 h mean recovery.
    r.detection_s = 600;
    r.restart_s = 1047;
    r.isolation_s = 2.2 * 3600 - r.detection_s - r.restart_s;
    r.source =
        "NCSA Delta mean recovery 2.2 h (DELTA-SUM, ORBITAL-FR); PyTorch NCCL timeout 10 min; "
        "unoptimised 2,048-GPU initialisation 1,047 s (ByteDance, ByteRobust coverage)";
  } else {
    // Automated health checks evict a machine after two alerts in 5 min and evict suspects
    // without diagnosis on the critical path (ByteRobust); warm standbys and optimised
    // initialisation restart a 10k-GPU job in about 30 s (ByteDance).
    r.detection_s = 300;
    r.isolation_s = 0;
    r.restart_s = 30;
    r.source =
        "ByteRobust: evict after 2 alerts in 5 min, over-eviction, warm standby (BYTEROBUST, "
        "BYTEROBUST-SUM); 10k-GPU initialisation ~30 s (ByteDance)";
  }
  return r;
}

double poisson_cdf_below(int k, double mean) {
  if (k <= 0) return 0;
  double term = std::exp(-mean), sum = term;
  for (int i = 1; i < k; ++i) {
    term *= mean / i;
    sum += term;
  }
  return std::min(sum, 1.0);
}

GoodputResult goodput(const GoodputInputs& in) {
  GoodputResult g;
  g.rates = job_failure_rates(in.classes, in.gpus, in.nodes);
  g.mtbf_hours = g.rates.mtbf_hours();
  const double wall = in.wall_hours;
  const RecoverySpec& rc = in.recovery;
  const CheckpointCost& ck = in.checkpoint_cost;
  g.unexpected_interruptions = g.rates.interruptions_per_hour * wall;
  g.repair_interruptions = g.rates.repair_per_hour * wall;
  g.planned_interruptions = rc.planned_per_hour * wall;
  g.degrade_events = g.rates.degrade_per_hour * wall;
  g.p_any_failure = 1.0 - std::exp(-g.unexpected_interruptions);

  // Spares: failed nodes wait rc.repair_s in the repair queue (an M/D/inf queue, so the number in
  // repair is Poisson with mean rate x time); a spare is free while fewer than spare_nodes are out.
  // Without one the job waits for the next node back: of max(spares, in repair) residual repairs,
  // the first ends after repair / (count + 1) on average.
  g.nodes_in_repair = g.rates.repair_per_hour * rc.repair_s / 3600.0;
  g.spare_available = poisson_cdf_below(rc.spare_nodes, g.nodes_in_repair);
  const double wait_s =
      rc.repair_s / (std::max(static_cast<double>(rc.spare_nodes), g.nodes_in_repair) + 1.0);

  g.interval_s = checkpoint_interval(in.checkpoint, ck, g.mtbf_hours * 3600.0);
  const bool async = in.checkpoint.mode == CheckpointMode::async;
  // A failure lands uniformly in a checkpoint period; an asynchronous checkpoint is durable only
  // once written, so the last good one is a write behind.
  g.rework_per_failure_s =
      async ? g.interval_s / 2 + ck.write_s : (g.interval_s + ck.blocking_s) / 2;

  LostHours& lost = g.lost;
  lost.detection = g.unexpected_interruptions * rc.detection_s / 3600;
  lost.isolation = g.repair_interruptions * rc.isolation_s / 3600;
  lost.restart = g.unexpected_interruptions * rc.restart_s / 3600;
  lost.restore = g.unexpected_interruptions * ck.restore_s / 3600;
  lost.repair_wait = g.repair_interruptions * (1.0 - g.spare_available) * wait_s / 3600;
  // A planned stop saves a checkpoint first (no rework), then restarts and restores.
  lost.planned = g.planned_interruptions * (ck.blocking_s + rc.restart_s + ck.restore_s) / 3600;
  lost.degraded = g.rates.degrade_slowdown_hours_per_hour * wall * rc.repair_s / 3600;
  g.downtime_per_failure_s = rc.detection_s + rc.restart_s + ck.restore_s +
                             (g.unexpected_interruptions > 0 ? (lost.isolation + lost.repair_wait) *
                                                                   3600 / g.unexpected_interruptions
                                                             : 0);
  double running = wall - (lost.detection + lost.isolation + lost.restart + lost.restore +
                           lost.repair_wait + lost.planned + lost.degraded);
  if (running < 0) {  // the job spends the whole period recovering: scale the causes down to it
    const double k = wall / (wall - running);
    lost.detection *= k;
    lost.isolation *= k;
    lost.restart *= k;
    lost.restore *= k;
    lost.repair_wait *= k;
    lost.planned *= k;
    lost.degraded *= k;
    running = 0;
  }
  lost.checkpoint = std::isfinite(g.interval_s) && g.interval_s > 0
                        ? running * ck.blocking_s / (g.interval_s + ck.blocking_s)
                        : 0;
  double computing = running - lost.checkpoint;
  // An asynchronous write runs for write_s of every interval; meanwhile steps take
  // slowdown_while_writing times longer, so that share of the time does 1/slowdown of the work.
  if (async && in.slowdown_while_writing > 1 && std::isfinite(g.interval_s) && g.interval_s > 0) {
    const double duty = std::min(1.0, ck.write_s / g.interval_s);
    lost.interference = computing * duty * (1.0 - 1.0 / in.slowdown_while_writing);
    computing -= lost.interference;
  }
  lost.rework =
      g.unexpected_interruptions > 0
          ? std::min(computing, g.unexpected_interruptions * g.rework_per_failure_s / 3600)
          : 0;
  g.useful_hours = computing - lost.rework;
  g.goodput = wall > 0 ? g.useful_hours / wall : 1.0;
  return g;
}

}  // namespace fabricsim::models
