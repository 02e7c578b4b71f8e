#pragma once
// One collective, end to end: NCCL's choice of algorithm and protocol for the group and size, the
// schedule that algorithm puts on the fabric, and its simulated time on either backend.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/collective_profile.hpp"
#include "models/collective_schedule.hpp"
#include "models/group_layout.hpp"
#include "models/nccl_tuner.hpp"
#include "models/system.hpp"
#include "sim/network.hpp"
#include "topologies/router.hpp"

namespace fabricsim::models {

enum class Backend { flow, analytical };
std::string_view to_string(Backend b);

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::all_reduce;
  double size_bytes = 0;                   ///< nccl-tests "size"
  std::vector<topologies::GpuRank> ranks;  ///< group members
  std::optional<Algorithm> algorithm;      ///< like NCCL_ALGO
  std::optional<Protocol> protocol;        ///< like NCCL_PROTO
  bool collnet = false;                    ///< like NCCL_COLLNET_ENABLE (needs SHARP switches)
};

struct PlannedCollective {
  std::shared_ptr<const Schedule> schedule;
  NcclEstimate nccl;  ///< NCCL's own estimate for the chosen combination
};

/// What NCCL's topology search would report for this group on this system.
NcclCommShape comm_shape(const System& system, const CollectiveProfile& profile,
                         const GroupLayout& group, bool collnet);

/// Plans a collective. Throws AlgorithmUnavailable when a forced algorithm/protocol cannot run.
PlannedCollective plan_collective(const System& system, const CollectiveProfile& profile,
                                  topologies::Router& router, const CollectiveRequest& request);

/// Link capacities of the system's topology with the profile's efficiencies.
sim::IdVector<sim::LinkId, sim::LinkCapacity> link_capacities(const System& system,
                                                              const CollectiveProfile& profile);

struct CollectiveResult {
  sim::Time time;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  size_t flows = 0;
  uint64_t events = 0;
};

/// Simulates one collective alone on the fabric (what nccl-tests measures).
CollectiveResult simulate_collective(const System& system, const CollectiveProfile& profile,
                                     topologies::Router& router, const CollectiveRequest& request,
                                     Backend backend);

}  // namespace fabricsim::models
