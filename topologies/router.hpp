#pragma once
// Routes between GPUs as the network backends need them: the directed links a transfer crosses
// and the share of its bytes on each.
//
// Inside a scale-up domain traffic is sprayed over the NVSwitch chips in proportion to the GPU's
// lanes to each (NVLink interleaves over all links). Across domains the path is GPU -> PCIe -> NIC
// -> Clos -> NIC -> PCIe -> GPU, with the Clos part chosen by the strategy:
//   ecmp        one path per flow, next hop at each tier chosen by a deterministic hash
//   spray       bytes split evenly over every up-link at each tier (ideal adaptive routing)
//   rail_aware  as ecmp, but the source first moves the data over NVLink to the GPU whose NIC is
//               on the destination's rail (NCCL's PXN), so traffic stays on one rail
//   shortest    fewest hops over the whole graph (BFS), lowest link id on ties
// Fabrics of independent planes (multi-plane, rail-only) cannot carry traffic between planes;
// there every strategy but `shortest` forwards over NVLink to the right plane first.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/network.hpp"
#include "topologies/graph.hpp"

namespace fabricsim::topologies {

enum class RoutingStrategy { ecmp, spray, rail_aware, shortest };
std::string_view to_string(RoutingStrategy s);
bool parse_routing_strategy(std::string_view text, RoutingStrategy& out);

class Router {
 public:
  Router(const Topology& topology, RoutingStrategy strategy, uint64_t seed = 0);

  const Topology& topology() const { return topology_; }
  RoutingStrategy strategy() const { return strategy_; }

  /// Route from GPU rank `src` to GPU rank `dst` (cached). Throws std::runtime_error when the
  /// graph offers no path.
  const sim::Route& route(uint32_t src, uint32_t dst);
  /// Route from GPU rank `src` through its NIC `nic_local` (a NIC of its own server) to the
  /// GPU `dst` through the destination NIC with the same rail; used by rail-striped schedules.
  const sim::Route& route_via_rail(uint32_t src, uint32_t dst, int rail);
  /// The GPU's links into its scale-up switches (NVLS uploads) and back (multicast).
  sim::Route to_domain_switch(uint32_t rank) const;
  sim::Route from_domain_switch(uint32_t rank) const;
  /// Whether GPUs `a` and `b` share a scale-up domain.
  bool same_domain(uint32_t a, uint32_t b) const;
  /// Number of distinct routes computed so far.
  size_t cached_routes() const { return cache_.size(); }

 private:
  struct Accumulator;
  sim::Route compute(uint32_t src, uint32_t dst, int forced_rail);
  bool updown(NodeId src, NodeId dst, LinkKind kind, bool spray, uint64_t hash, double fraction,
              Accumulator& acc) const;
  bool shortest_path(NodeId src, NodeId dst, Accumulator& acc) const;
  uint32_t nic_owner(NodeId nic) const;

  const Topology& topology_;
  RoutingStrategy strategy_;
  uint64_t seed_;
  std::unordered_map<uint64_t, sim::Route> cache_;
  std::unordered_map<NodeId, uint32_t> nic_owner_;
};

}  // namespace fabricsim::topologies
