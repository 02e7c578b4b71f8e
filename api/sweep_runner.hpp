#pragma once
// Evaluating the points of a sweep: each point's scenario on an api::Evaluator shared by every
// point on the same cluster (system section and calibration), on any number of threads. A point
// that cannot run (its scenario is rejected, its fabric cannot be built, its plan does not divide
// or fit) is a row with the reason, not a failure. Rows hold no wall times or file names, so the
// same point gives the same bytes in any run, shard or thread count.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/sweep_spec.hpp"

namespace fabricsim::api {

class SweepRunner {
 public:
  explicit SweepRunner(const SweepSpec& spec);
  ~SweepRunner();
  SweepRunner(const SweepRunner&) = delete;
  SweepRunner& operator=(const SweepRunner&) = delete;

  /// The result row of one point (docs/formats.md, "sweep results"). Thread-safe.
  nlohmann::json evaluate(const SweepPoint& point) const;

 private:
  struct Clusters;
  const SweepSpec& spec_;
  std::unique_ptr<Clusters> clusters_;
};

using SweepRowHandler = std::function<void(const SweepPoint&, const nlohmann::json&)>;

/// Evaluates the points `indices` on `threads` workers (0: one per core) and calls `on_row` for
/// each as it finishes, one call at a time, in completion order. An exception from a point or from
/// `on_row` stops the workers and is rethrown here.
void run_sweep(const SweepSpec& spec, const std::vector<int64_t>& indices, int threads,
               const SweepRowHandler& on_row);

/// A row as one JSON line with its id first, so that sorting the lines sorts the points
/// (`sort results.jsonl` in a shell); the other keys follow in name order.
std::string sweep_row_line(const nlohmann::json& row);

/// CSV rendering of rows: id, index, one column per axis, then the outcome and metrics.
std::string sweep_csv_header(const SweepSpec& spec);
std::string sweep_csv_line(const SweepSpec& spec, const nlohmann::json& row);

}  // namespace fabricsim::api
