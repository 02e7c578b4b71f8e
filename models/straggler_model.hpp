#pragma once
// Stragglers: GPUs whose kernels run slower than their peers (a bad part, thermal or power
// throttling of a node). The model only says which ranks are slow and by how much; the step
// simulator runs each slow rank's compute at that factor, and the synchronous step's real TP, CP,
// PP and DP dependencies decide what everyone else waits (StepOptions::compute_slowdown).

#include <cstdint>
#include <map>
#include <vector>

#include "models/link_change.hpp"
#include "models/workload.hpp"
#include "topologies/graph.hpp"

namespace fabricsim::models {

struct StragglerSpec {
  double fraction = 0;  ///< of the GPUs, chosen at random (seeded)
  /// Slowdown of each randomly chosen GPU: uniform in [min, max] (equal for a fixed factor).
  double slowdown_min = 1, slowdown_max = 1;
  uint64_t seed = 1;
  double node_fraction = 0;  ///< of the nodes throttled as a whole (thermal, power capping)
  double node_slowdown = 1;
  std::map<int, double> ranks;  ///< named GPUs (global rank) and their factor
  std::map<int, double> nodes;  ///< named nodes and the factor of all their GPUs
  /// Slow links: the network link of GPU r's NIC (both directions) runs `factor` times slower,
  /// a degraded optic or a NIC that trained down to a lower rate.
  std::map<int, double> links;
  /// A slow link for part of the step: GPU `rank`'s NIC link runs `factor` times slower from
  /// `from` until `until` (a flapping optic, a link retraining), flow backend only.
  struct LinkWindow {
    int rank = 0;
    double factor = 1;
    sim::Time from;
    sim::Time until = sim::Time::max();  ///< max: to the end of the step
  };
  std::vector<LinkWindow> link_windows;
  bool any() const {
    return (fraction > 0 && slowdown_max > 1) || (node_fraction > 0 && node_slowdown > 1) ||
           !ranks.empty() || !nodes.empty() || !links.empty() || !link_windows.empty();
  }
};

/// The compute slowdown of every rank (1 = nominal); factors from several sources multiply.
/// Deterministic for a seed on every platform (its own uniform draws, not <random>'s
/// distributions). Ranks and nodes out of range are the caller's to reject.
std::vector<double> rank_slowdowns(const StragglerSpec& spec, int gpus, int gpus_per_node);

/// The network resources of GPU `rank`'s NIC to and from its first switch. Throws
/// std::invalid_argument when the GPU has no NIC.
std::vector<sim::LinkId> nic_links(const topologies::Topology& topology, int rank);

/// The link changes of the windows: each NIC link slowed at `from` and restored at `until`, in
/// time order (ties: restores first).
std::vector<LinkChange> link_changes_of(const topologies::Topology& topology,
                                        const std::vector<StragglerSpec::LinkWindow>& windows);

/// The topology with the network links of the named GPUs' NICs (to and from their first switch)
/// `factor` times slower. Throws std::invalid_argument when such a GPU has no NIC.
topologies::Topology with_slow_nic_links(const topologies::Topology& topology,
                                         const std::map<int, double>& by_rank);

}  // namespace fabricsim::models
