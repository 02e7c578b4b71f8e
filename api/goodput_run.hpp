#pragma once
// A scenario operated for days: its failures, recovery and checkpoints (goodput), and whether
// storage can feed it. Combines the pure models (models/failure_model, checkpoint_model,
// goodput_model) with the scenario's model, plan, cluster and simulated step.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/scenario.hpp"
#include "models/goodput_model.hpp"

namespace fabricsim::api {

/// The input pipeline and checkpoint traffic against the storage system.
struct StorageFeed {
  double needed_bytes_per_s = 0;    ///< tokens/s x bytes per token x read amplification
  double capacity_bytes_per_s = 0;  ///< min(aggregate read, nodes x per-node link)
  double max_tokens_per_s = 0;      ///< what storage can feed
  bool limits = false;              ///< storage, not the GPUs or the fabric, sets the pace
  double checkpoint_node_burst_bytes = 0;
  double checkpoint_burst_s = 0;
  /// Share of a node's compute-fabric NIC bandwidth the checkpoint burst takes while it lasts,
  /// when storage shares the fabric (0 otherwise).
  double checkpoint_nic_share = 0;
  /// Simulated step time with every NIC left (1 - share) of its rate, over the nominal one
  /// (shared fabric and asynchronous checkpoints only; else 1).
  double step_slowdown_while_writing = 1;
};

struct GoodputReport {
  int gpus = 0;
  int nodes = 0;
  double days = 0;
  models::RecoverySpec recovery;
  models::CheckpointCost checkpoint;
  models::GoodputResult result;
  StorageFeed storage;
  bool simulated = false;  ///< a step was simulated (throughput known)
  /// Why no step was simulated (the plan does not divide or fit), so that the report says so
  /// instead of leaving the throughput out in silence; empty when one was, or none was asked.
  std::string not_simulated;
  double step_time_s = 0;
  double tokens_per_s = 0;            ///< simulated, without failures
  double effective_tokens_per_s = 0;  ///< min(simulated, storage) x goodput
  std::string limiter;                ///< "compute/fabric" or "storage"
  double time_to_train_days = 0;      ///< with failures, when the scenario gives tokens_to_train
};

/// Goodput of a scenario over `days` at a recovery level; `tokens_per_s` from a simulated step
/// (0: not simulated, throughput fields stay 0).
GoodputReport evaluate_goodput(const Scenario& scenario, double days, models::RecoveryLevel level,
                               double tokens_per_s, double step_time_s = 0,
                               double slowdown_while_writing = 1);
/// Simulates the scenario's step (and, when asynchronous checkpoints share the fabric, the step
/// with the checkpoint burst taking its share of every NIC), then evaluates goodput (level: the
/// scenario's unless given).
GoodputReport run_goodput(const Scenario& scenario, double days,
                          std::optional<models::RecoveryLevel> level);

nlohmann::json goodput_to_json(const GoodputReport& r);
std::string goodput_to_text(const GoodputReport& r);

}  // namespace fabricsim::api
