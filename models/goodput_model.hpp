#pragma once
// Goodput of a long synchronous training job: over a wall-clock period, how many interruptions the
// failure model expects, what each costs (detection, isolation, restart and restore, waiting for a
// repaired node when no spare is free, the work lost since the last checkpoint), what the
// checkpoints themselves block, and the fraction of the time left for useful training. First-order
// expected values (failures are a Poisson process); every hour of the period is accounted for:
//   useful + rework + checkpoint + detection + isolation + restart + restore + repair_wait
//          + planned + degraded + interference = wall time.

#include <string>
#include <string_view>
#include <vector>

#include "models/checkpoint_model.hpp"
#include "models/failure_model.hpp"

namespace fabricsim::models {

enum class RecoveryLevel { manual, automated };
std::string_view to_string(RecoveryLevel r);

struct RecoverySpec {
  RecoveryLevel level = RecoveryLevel::automated;
  double detection_s = 0;  ///< from the failure to the job being declared failed
  double isolation_s = 0;  ///< finding and cordoning the bad node, swapping in another
  double restart_s = 0;    ///< re-queue, relaunch and initialise (the checkpoint read is extra)
  double repair_s = 0;     ///< a failed node back in service (also a degraded link's duration)
  int spare_nodes = 0;     ///< hot spares or free nodes the job can take at once
  double planned_per_hour = 0;  ///< planned restarts of the job (upgrades, config changes)
  std::string source;
};

/// The documented times of each level; spares are set by the caller (they depend on the job).
RecoverySpec recovery_preset(RecoveryLevel level);

struct GoodputInputs {
  double wall_hours = 0;
  int gpus = 1;
  int nodes = 1;
  std::vector<FailureClass> classes;
  RecoverySpec recovery;
  CheckpointSpec checkpoint;
  CheckpointCost checkpoint_cost;
  /// Step time while an asynchronous checkpoint is being written over links training also uses,
  /// over the step time without it (1: storage has its own network, or checkpoints are sync).
  double slowdown_while_writing = 1;
};

struct LostHours {
  double rework = 0, checkpoint = 0, detection = 0, isolation = 0, restart = 0, restore = 0,
         repair_wait = 0, planned = 0, degraded = 0;
  double interference = 0;  ///< slower steps while an async checkpoint shares the fabric
  double total() const {
    return rework + checkpoint + detection + isolation + restart + restore + repair_wait + planned +
           degraded + interference;
  }
};

struct GoodputResult {
  JobFailureRates rates;
  double mtbf_hours = 0;
  double unexpected_interruptions = 0;
  double repair_interruptions = 0;  ///< of those, the ones that take a node out
  double planned_interruptions = 0;
  double degrade_events = 0;
  double p_any_failure = 0;    ///< 1 - exp(-expected interruptions)
  double nodes_in_repair = 0;  ///< expected, Little's law: repair rate x repair time
  double spare_available = 1;  ///< probability a spare is free when a node fails
  double interval_s = 0;       ///< compute time between checkpoints
  double rework_per_failure_s = 0;
  double downtime_per_failure_s = 0;  ///< detection + isolation + restart + restore (+ wait)
  LostHours lost;
  double useful_hours = 0;
  double goodput = 1;  ///< useful / wall
};

GoodputResult goodput(const GoodputInputs& in);

/// P(X < k) for X ~ Poisson(mean).
double poisson_cdf_below(int k, double mean);

}  // namespace fabricsim::models
