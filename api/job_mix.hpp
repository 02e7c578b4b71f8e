#pragma once
// Shared clusters: several training jobs, each with its own model, plan and training, placed on
// one cluster by a policy (models/job_placement) and simulated together so that their traffic
// contends on the fabric. The report gives each job's step alone (on the same GPUs) and together,
// the slowdown, the busiest shared links and the GPUs the mix leaves idle or stranded. The file
// format ("jobs" files) is in docs/formats.md.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/evaluator.hpp"
#include "api/infeasible.hpp"
#include "api/scenario.hpp"
#include "models/job_placement.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::api {

/// One job of a mix: its scenario (on the cluster's system with its own GPU count) and where
/// in the file it came from.
struct MixJob {
  std::string name;
  std::string pointer;  ///< "/jobs/2", for messages
  Scenario scenario;
};

struct JobMix {
  std::string source;
  Scenario cluster;  ///< system (preset, GPUs, fabric), calibration, simulation options
  models::PlacementPolicy policy = models::PlacementPolicy::topology_aware;
  int steps = 2;  ///< steps counted per job after the first (docs/models.md)
  std::vector<MixJob> jobs;
};

/// Whether a document is a jobs file (it has a "jobs" array) rather than one scenario.
bool is_job_mix(const nlohmann::json& doc);

/// Reads a jobs file (strict; errors name the file and the JSON pointer, /jobs/K/... for a job).
JobMix read_job_mix(const sim::JsonValue& root);

struct JobOutcome {
  std::string name;
  int gpus = 0;
  models::JobAllocation allocation;
  models::ParallelPlan plan;
  std::optional<Infeasible> infeasible;  ///< placed, but its plan does not divide or fit
  std::optional<StepEvaluation> alone;   ///< on its GPUs with the rest of the cluster empty
  std::optional<StepEvaluation> together;
  double slowdown = 0;  ///< together / alone step time (1 = unaffected)
};

struct SharedLinkRow {
  std::string name, kind;
  double bytes = 0;
  double utilization = 0;         ///< all jobs' bytes / (usable capacity x simulated time)
  std::vector<std::string> jobs;  ///< the jobs whose traffic crossed it
  std::vector<double> job_bytes;  ///< bytes of each of those jobs
};

struct JobMixReport {
  std::string source;
  std::string system;
  int gpus = 0;
  models::PlacementPolicy policy = models::PlacementPolicy::topology_aware;
  Fidelity fidelity = Fidelity::flow;
  int steps = 0;
  models::PlacementResult placement;
  std::vector<JobOutcome> jobs;
  std::vector<SharedLinkRow> shared_links;  ///< busiest first, at most `busiest` of them
  double simulated_seconds = 0;
  /// Training throughput of the cluster: the jobs' tokens per second together (and alone).
  double tokens_per_s_together = 0;
  double tokens_per_s_alone = 0;
  double simulate_wall_s = 0;
};

/// Places the mix under `policy` and simulates its jobs alone and together.
JobMixReport run_job_mix(const JobMix& mix, models::PlacementPolicy policy);

nlohmann::json job_mix_to_json(const JobMixReport& report);
std::string job_mix_to_text(const JobMixReport& report);
/// Several policies side by side: one row per policy (placed jobs, slowdowns, throughput,
/// idle and stranded GPUs).
nlohmann::json placement_comparison_json(const std::vector<JobMixReport>& reports);
std::string placement_comparison_text(const std::vector<JobMixReport>& reports);

}  // namespace fabricsim::api
