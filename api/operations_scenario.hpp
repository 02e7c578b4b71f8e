#pragma once
// The operating-at-scale sections of a scenario: "reliability" (failure classes, recovery),
// "checkpoint", "storage" and "stragglers" (documented in docs/formats.md). Read strictly, like the
// rest of the scenario; read_scenario calls read_operations on the top-level object.

#include <optional>
#include <vector>

#include "models/checkpoint_model.hpp"
#include "models/failure_model.hpp"
#include "models/goodput_model.hpp"
#include "models/straggler_model.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::api {

struct OperationsSpec {
  std::vector<models::FailureClass> failures = models::default_failure_classes();
  models::RecoveryLevel recovery = models::RecoveryLevel::automated;
  // Set only when the scenario overrides the recovery level's documented times.
  std::optional<double> detection_s, isolation_s, restart_s, repair_s, planned_per_hour;
  std::optional<int> spare_nodes;
  /// Spares as a share of the job's nodes when spare_nodes is not given: NCSA Delta finds 5-20%
  /// over-provisioning absorbs GPU failures (DELTA-SUM); the low end.
  double spare_fraction = 0.05;
  models::CheckpointSpec checkpoint;
  models::StorageSpec storage;
  /// Input pipeline: bytes read per training token (4: int32 token ids of a >64k vocabulary) and
  /// how many bytes are read per byte used (shuffled reads of larger blocks, re-reads).
  double bytes_per_token = 4;
  double read_amplification = 1;
  models::StragglerSpec stragglers;
  /// Per rank, from `stragglers` (empty when nobody is slow); read_scenario hands it to the step.
  std::vector<double> compute_slowdown;
};

/// Reads "reliability", "checkpoint", "storage" and "stragglers" when present, for a job of
/// `gpus` GPUs, `gpus_per_node` to a node.
void read_operations(sim::ObjectReader& top, OperationsSpec& out, int gpus, int gpus_per_node);

/// The recovery spec of a level with the scenario's overrides, and its spares for `nodes`.
models::RecoverySpec resolve_recovery(const OperationsSpec& ops, models::RecoveryLevel level,
                                      int nodes);

}  // namespace fabricsim::api
