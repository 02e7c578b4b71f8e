#pragma once
// How a communicator's ranks fall onto scale-up domains: what NCCL calls nodes and ranks per
// node, and what the schedule builders stripe over.

#include <cstdint>
#include <vector>

#include "topologies/graph.hpp"

namespace fabricsim::models {

struct GroupLayout {
  std::vector<topologies::GpuRank> ranks;                 ///< members
  std::vector<std::vector<topologies::GpuRank>> domains;  ///< members per scale-up domain, in order
  int ppn = 1;                                            ///< members per domain (largest)
  int min_ppn = 1;                                        ///< members of the smallest domain
  bool uniform = true;                                    ///< every domain has ppn members
  int size() const { return static_cast<int>(ranks.size()); }
  int domain_count() const { return static_cast<int>(domains.size()); }
};

/// Groups `ranks` by scale-up domain (domains in order of first appearance).
GroupLayout make_group_layout(const topologies::Topology& topology,
                              std::vector<topologies::GpuRank> ranks);
/// Ranks 0..n-1 of the topology.
std::vector<topologies::GpuRank> first_ranks(int n);

}  // namespace fabricsim::models
