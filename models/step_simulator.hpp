#pragma once
// Simulates one training step: every simulated rank runs its pipeline stage's schedule on a
// compute stream, its data-parallel traffic on a second stream, and sends activations and
// gradients to its pipeline neighbours; all communication shares the links of the real topology
// (flow backend) or is timed without contention (analytical backend).
//
// Symmetry reduction: by default one rank per pipeline stage is simulated; when it launches a
// collective, every group of the same kind in its stage launches the same one at the same time
// (their flows share the fabric), and the rank waits for all of them. Groups that stay inside one
// scale-up domain never share a link with another group of their kind, so only the rank's own
// instance is simulated for them. With `full_ranks` every GPU runs its own program and
// collectives start when all their members arrive; tests compare the two.

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/collective_model.hpp"
#include "models/compute_profile.hpp"
#include "models/link_change.hpp"
#include "models/parallel_plan.hpp"
#include "models/step_cache.hpp"
#include "models/system.hpp"
#include "models/workload.hpp"
#include "topologies/router.hpp"

namespace fabricsim::models {

struct StepOptions {
  Backend backend = Backend::flow;
  topologies::RoutingStrategy routing = topologies::RoutingStrategy::ecmp;
  bool full_ranks = false;        ///< simulate every GPU instead of one per stage
  bool pp_all_instances = false;  ///< simulate every pipeline's sends, not one pipeline's
  bool trace = false;             ///< record compute/comm intervals for a Chrome trace
  bool collnet = false;           ///< NCCL_COLLNET_ENABLE=1: IB SHARP where the fabric has it
  int busiest_links = 8;
  /// Per rank (empty: none): the factor on the duration of that rank's kernels and optimizer
  /// step (stragglers, throttling; models/straggler_model). Exact with full_ranks; otherwise only
  /// the simulated representatives' factors count, and their symmetric instances follow them.
  std::vector<double> compute_slowdown;
  /// Per rank (empty: rank r runs on GPU r): the topology rank (Topology::gpu order) it runs on,
  /// a job's placement on a shared cluster (models/job_placement).
  std::vector<topologies::GpuRank> gpus;
  /// Flow backend only (std::invalid_argument on the analytical one): link degradations and
  /// repairs during the step, applied in time order (models/straggler_model: slow links).
  std::vector<LinkChange> link_changes;
};

/// Where one stage's time went (seconds), as seen by its compute stream.
struct StageBreakdown {
  sim::Seconds compute;     ///< compute kernels (GEMMs, attention, memory-bound)
  sim::Seconds exposed_tp;  ///< waiting for TP / CP / EP collectives inside passes
  sim::Seconds exposed_cp;
  sim::Seconds exposed_ep;
  sim::Seconds exposed_pp;  ///< waiting for an activation/gradient in transit
  sim::Seconds bubble;      ///< waiting for the neighbouring stage to produce it
  sim::Seconds exposed_dp;  ///< waiting for parameter gathers and gradient reductions
  sim::Seconds optimizer;
  sim::Seconds end;  ///< when this stage finished the step

  /// Adds the components; `end` becomes the later of the two.
  StageBreakdown& operator+=(const StageBreakdown& other);
  /// Divides the components (averages over ranks); `end` stays.
  StageBreakdown& operator/=(double n);
};

/// One component of a stage breakdown: its JSON key (without "_s"), its short label in reports
/// and scaling losses, and the field. The one list of them, in report order; `end` is not one.
struct BreakdownComponent {
  std::string_view key;
  std::string_view label;
  sim::Seconds StageBreakdown::*field;
};
inline constexpr std::array<BreakdownComponent, 8> kBreakdownComponents{{
    {"compute", "compute", &StageBreakdown::compute},
    {"exposed_tp", "TP", &StageBreakdown::exposed_tp},
    {"exposed_cp", "CP", &StageBreakdown::exposed_cp},
    {"exposed_ep", "EP", &StageBreakdown::exposed_ep},
    {"exposed_pp", "PP", &StageBreakdown::exposed_pp},
    {"bubble", "bubble", &StageBreakdown::bubble},
    {"exposed_dp", "DP", &StageBreakdown::exposed_dp},
    {"optimizer", "optimizer", &StageBreakdown::optimizer},
}};

struct LinkUse {
  std::string name;
  std::string kind;
  sim::Bytes bytes;
  double utilization = 0;  ///< bytes / (usable capacity x step time)
};

struct TraceEvent {
  std::string name;
  std::string track;  ///< "stage 3 rank 24 compute", "link leaf0>spine1"
  int pid = 0;
  double start_us = 0;
  double duration_us = 0;
  /// Counter samples (a busy link's rate in GB/s from start_us on) instead of intervals.
  std::optional<double> value;
};

struct StepResult {
  sim::Seconds step_time;  ///< the step: the last stage to finish (a mean for shared jobs)
  std::vector<StageBreakdown> stages;
  int critical_stage = 0;  ///< the stage that finishes last (the lowest of a tie)
  std::vector<LinkUse> busiest_links;
  uint64_t events = 0;
  uint64_t flows = 0;
  uint64_t rate_solves = 0;
  uint64_t solved_flows = 0;
  size_t simulated_ranks = 0;
  /// Flow backend: flows started per group kind ("tp", "dp", "pp", ...), where a step's flows
  /// come from (its cost grows with them).
  std::map<std::string, uint64_t> flows_by_group;
  std::vector<TraceEvent> trace;
};

/// Simulates one step of `workload` under `plan` on `system`. `cache`, when given, must serve
/// (system, collective, options.routing): its routes and schedules are reused and grown, so
/// many plans on one cluster share them; without it the step uses a cache of its own.
StepResult simulate_step(const System& system, const CollectiveProfile& collective,
                         const Workload& workload, const ParallelPlan& plan,
                         const StepOptions& options, StepCache* cache = nullptr);

/// One job of a shared cluster: what it runs, its plan, and its options (its GPUs in
/// `options.gpus`). The jobs of one simulation share its backend, routing and collnet.
struct SharedJob {
  const Workload* workload = nullptr;
  const ParallelPlan* plan = nullptr;
  StepOptions options;
};

/// A link that carried traffic of two or more jobs.
struct SharedLink {
  LinkUse use;                        ///< all jobs' bytes; utilization over the simulated time
  std::vector<int> jobs;              ///< the jobs whose flows crossed it, in job order
  std::vector<sim::Bytes> job_bytes;  ///< bytes of each job (every job, in job order)
};

struct SharedStepResult {
  /// Per job: its step time and per-stage breakdown, the mean of the steps it completed while
  /// every job was running (after a first step that all start together).
  std::vector<StepResult> jobs;
  std::vector<int> steps;  ///< steps counted per job
  double simulated_seconds = 0;
  std::vector<SharedLink> shared_links;  ///< flow backend: every shared link, busiest first
  uint64_t events = 0;
  uint64_t flows = 0;
  uint64_t rate_solves = 0;
};

/// Simulates several jobs on one cluster: each repeats its step back to back, their flows
/// sharing the fabric (flow backend; on the analytical backend nothing is shared and each job
/// takes its time alone), until every job has completed `steps` steps after the first (with
/// steps = 1 the first is the one counted). Throws std::invalid_argument when jobs overlap on a
/// GPU or disagree on backend, routing or collnet.
SharedStepResult simulate_shared_steps(const System& system, const CollectiveProfile& collective,
                                       const std::vector<SharedJob>& jobs, int steps,
                                       StepCache* cache = nullptr);

/// Chrome trace JSON (Perfetto): one track per simulated rank and stream, and a counter per busy
/// link (its rate in GB/s over time, flow backend).
nlohmann::json trace_to_json(const StepResult& result);

}  // namespace fabricsim::models
