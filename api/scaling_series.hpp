#pragma once
// The relative question `validate` answers beside the absolute one: how a series of published
// runs' throughput per GPU changes from its fewest GPUs to each larger size, predicted against
// measured. A series is one source, system, framework version and precision (an anchor group)
// running one model at one sequence length for one task, at two or more GPU counts; its
// baseline is its run with the fewest GPUs. A per-source bias cancels out of it, so it measures
// what a user sizing a cluster asks: does the throughput per GPU hold as the cluster grows.

#include <optional>
#include <string>
#include <vector>

#include "calibration/cases.hpp"

namespace fabricsim::api {

struct ValidationRow;

struct ScalingPoint {
  std::string id;
  std::string baseline;  ///< the series' run with the fewest GPUs
  std::string series;    ///< group | model | sequence length | task | metric
  std::string metric;    ///< the primary metric both runs were compared on
  int gpus = 0;
  int baseline_gpus = 0;
  /// Throughput per GPU relative to the baseline's, where the metric gives it (a step time
  /// needs the runs' tokens per step).
  std::optional<double> measured_efficiency, predicted_efficiency;
  /// Predicted over measured efficiency, minus 1: > 0, the model holds throughput per GPU
  /// better than the runs did (optimistic about scaling).
  double error = 0;
};

/// The scaling points of the training cases that have a primary row in `rows` (`case_errors`'s
/// metric). A series needs its baseline among them: anchored, a group's anchor is not scored, so
/// the series starts at the fewest GPUs scored. Where several runs share the fewest GPUs the
/// first in file order is the baseline and the others are not points.
std::vector<ScalingPoint> scaling_points(const std::vector<calibration::Case>& cases,
                                         const std::vector<ValidationRow>& rows);

}  // namespace fabricsim::api
