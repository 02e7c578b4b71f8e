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
//   shortest    fewest hops between the NICs (BFS over the fabric), lowest link id on ties
// Fabrics of independent planes (multi-plane, rail-only) cannot carry traffic between planes;
// there every strategy but `shortest` forwards over NVLink to the right plane first.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/network.hpp"
#include "topologies/graph.hpp"

namespace fabricsim::topologies {

enum class RoutingStrategy { ecmp, spray, rail_aware, shortest };
std::string_view to_string(RoutingStrategy s);
bool parse_routing_strategy(std::string_view text, RoutingStrategy& out);
/// "ecmp, spray, rail_aware, shortest": the names parse_routing_strategy accepts.
std::string routing_strategy_names();

class Router {
 public:
  Router(const Topology& topology, RoutingStrategy strategy, uint64_t seed = 0);

  const Topology& topology() const { return topology_; }
  RoutingStrategy strategy() const { return strategy_; }

  /// Routes the cache holds at most; past it, it starts over.
  static constexpr size_t kRouteCacheCapacity = size_t{1} << 18;
  /// Route from GPU rank `src` to GPU rank `dst` (cached), over network resources (links, and
  /// the NVLink bundles of Topology::resource_of); valid until the next call. Throws
  /// std::runtime_error when the graph offers no path.
  const sim::Route& route(GpuRank src, GpuRank dst);
  /// Route from GPU rank `src` to GPU rank `dst` (in another domain) leaving through the NIC of
  /// GPU `proxy` (in src's domain): src reaches that NIC over PCIe when it sits under the same
  /// PCIe switch, else over the scale-up fabric first (NCCL's PXN). Cached.
  const sim::Route& route_via(GpuRank src, GpuRank proxy, GpuRank dst);
  /// In-network reduction tree (IB SHARP) for GPUs in different domains: the distinct directed
  /// links from every GPU up to a common root switch (`up`) and back (`down`). Each link carries
  /// the reduced data once.
  struct AggregationTree {
    std::vector<LinkId> up;
    std::vector<LinkId> down;
  };
  AggregationTree aggregation_tree(const std::vector<GpuRank>& ranks) const;
  /// The GPU's links into its scale-up switches (NVLS uploads) and back (multicast).
  sim::Route to_domain_switch(GpuRank rank) const;
  sim::Route from_domain_switch(GpuRank rank) const;
  /// Whether GPU `rank` reaches the NIC of GPU `nic_owner` through a single PCIe switch.
  bool reaches_nic_over_pcie(GpuRank rank, GpuRank nic_owner) const {
    const NodeId nic = topology_.gpu_nic(nic_owner);
    return nic != kNoNode && shares_pcie_switch(topology_.gpu(rank), nic);
  }
  /// Whether GPUs `a` and `b` share a scale-up domain.
  bool same_domain(GpuRank a, GpuRank b) const;
  /// Number of distinct routes computed so far.
  size_t cached_routes() const { return cache_.size(); }

 private:
  struct Accumulator;
  sim::Route compute(GpuRank src, GpuRank dst, GpuRank proxy);
  sim::Route domain_switch_route(GpuRank rank, bool up) const;
  bool updown(NodeId src, NodeId dst, LinkKind kind, bool spray, uint64_t hash, double fraction,
              Accumulator& acc) const;
  /// The first switch above `endpoint` over `kind` links: the one its pods are compared by.
  NodeId first_switch(NodeId endpoint, LinkKind kind) const;
  /// How many tiers a path climbs from switch `a` to a pod that holds switch `d` (their first
  /// common pod level); nullopt when the graph carries no pods or they share none.
  static std::optional<size_t> common_levels(const Node& a, const Node& d);
  /// updown without spraying: one path, found without a frontier.
  bool updown_single(NodeId src, NodeId dst, LinkKind kind, uint64_t hash, double fraction,
                     Accumulator& acc) const;
  /// A switch's network links up one tier, and down one tier keyed by the child's pod at the
  /// child's level (stable: link order within a pod), and an endpoint's links in, so that a path
  /// through a high-radix Clos looks up its hops instead of scanning every port.
  struct Hops {
    std::vector<LinkId> up;
    std::vector<std::pair<int32_t, LinkId>> down;
    std::vector<LinkId> in;  ///< an endpoint's network links in, in link order
  };
  void index_hops();
  bool shortest_path(NodeId src, NodeId dst, Accumulator& acc) const;
  GpuRank nic_owner(NodeId nic) const;
  bool shares_pcie_switch(NodeId gpu, NodeId nic) const;
  struct TupleHash {
    size_t operator()(const std::tuple<GpuRank, GpuRank, GpuRank>& k) const {
      return std::hash<uint64_t>()((uint64_t{std::get<0>(k).value()} << 42) ^
                                   (uint64_t{std::get<1>(k).value()} << 21) ^
                                   std::get<2>(k).value());
    }
  };

  const Topology& topology_;
  RoutingStrategy strategy_;
  uint64_t seed_;
  std::unordered_map<uint64_t, sim::Route> cache_;
  std::unordered_map<std::tuple<GpuRank, GpuRank, GpuRank>, sim::Route, TupleHash> proxied_;
  std::unordered_map<NodeId, GpuRank> nic_owner_;
  std::vector<Hops> hops_;  ///< by node index; built on the first route through the network
};

}  // namespace fabricsim::topologies
