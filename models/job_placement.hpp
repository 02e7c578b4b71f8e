#pragma once
// Where the jobs of a shared cluster run: a pure allocator that gives each job whole, aligned
// blocks of GPUs inside one scale-up domain (its TP, or whatever its plan keeps in-domain) under
// one of three policies, and counts the GPUs the mix leaves stranded. The multi-job step
// simulation runs every job on the ranks it returns. docs/models.md, "Job placement and
// fragmentation", states the rules and why.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topologies/graph.hpp"

namespace fabricsim::models {

enum class PlacementPolicy { packed, spread, topology_aware };

/// "packed", "spread", "topology-aware".
std::string_view to_string(PlacementPolicy p);
/// Parses the names to_string prints; false for anything else.
bool parse_placement_policy(std::string_view text, PlacementPolicy& out);
/// "packed, spread, topology-aware", for messages and --help.
std::string placement_policy_names();

struct JobRequest {
  std::string name;
  int gpus = 0;  ///< GPUs the job needs
  /// Consecutive job ranks that must share one scale-up (NVLink) domain: the plan's TP, or
  /// TP x CP x EP, whatever its placement keeps in-domain. Must divide gpus and the domain size.
  int block_gpus = 1;
};

struct JobAllocation {
  std::string name;
  int requested_gpus = 0;
  int block_gpus = 1;
  /// Job rank r runs on topology rank gpus[r] (Topology::gpu order); empty when not placed.
  std::vector<topologies::GpuRank> gpus;
  std::string reason;  ///< why not placed (empty when placed), a full sentence with numbers
  int servers = 0, domains = 0, leaf_groups = 0;  ///< how many of each the job touches
  bool placed() const { return !gpus.empty(); }
};

struct PlacementResult {
  PlacementPolicy policy = PlacementPolicy::packed;
  std::vector<JobAllocation> jobs;  ///< in request order
  int total_gpus = 0, allocated_gpus = 0, idle_gpus = 0;
  int leaf_groups = 0;   ///< leaf groups of the cluster
  int free_domains = 0;  ///< scale-up domains left entirely idle (room for a domain-sized block)
  /// Idle GPUs that cannot serve any job of the mix: not inside a free, aligned block of the
  /// smallest block_gpus of the mix within one domain (0 for an empty mix).
  int stranded_gpus = 0;
  int unplaced_for_capacity = 0;       ///< jobs refused because too few GPUs were free at all
  int unplaced_for_fragmentation = 0;  ///< enough GPUs free, but not as valid blocks
};

/// The GPUs of the topology's largest scale-up domain: a job's blocks (its TP groups) must
/// divide it, so that they can be aligned inside one domain.
int largest_domain(const topologies::Topology& topology);

/// Throws std::invalid_argument (a sentence naming the job) when the request cannot be placed on
/// any cluster of this topology's shape: gpus <= 0, block_gpus <= 0, block_gpus not dividing
/// gpus, or not dividing the scale-up domain size. A job larger than the cluster is not an error.
void check_job_request(const topologies::Topology& topology, const JobRequest& job);

/// Places the jobs on an empty cluster, one after another (topology-aware: largest first).
/// Checks every request first (check_job_request). Deterministic.
PlacementResult place_jobs(const topologies::Topology& topology, std::span<const JobRequest> jobs,
                           PlacementPolicy policy);

/// The result with keys that name their units (gpus, gpu_ranks, servers, ...).
nlohmann::json placement_to_json(const PlacementResult& result);

}  // namespace fabricsim::models
