#pragma once
// The cluster as an immutable typed graph: devices (GPUs, NVSwitch chips, NICs, PCIe switches,
// host bridges, fabric switches) and directed links (each direction of a cable or NVLink bundle
// is its own link with its own capacity). Built once by TopologyBuilder, from a generator or JSON.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/network.hpp"
#include "sim/units.hpp"

namespace fabricsim::topologies {

/// A device of the graph (GPU, switch chip, NIC, ...).
using NodeId = sim::Id<struct NodeTag>;
/// A directed link of the graph; the same id names its resource in the network backends when
/// it is not part of a bundle (resource_of).
using LinkId = sim::LinkId;
inline constexpr NodeId kNoNode = NodeId::none();
/// A GPU by its place in the cluster's rank order (server-major, local index minor): what
/// collectives, routes and placements name. A job's own ranks map onto these (placement).
using GpuRank = sim::Id<struct GpuRankTag>;

enum class NodeKind : uint8_t { gpu, nvswitch, nic, pcie_switch, host, switch_ };
enum class LinkKind : uint8_t { nvlink, pcie, network };

std::string_view to_string(NodeKind kind);
std::string_view to_string(LinkKind kind);
/// Parses the names printed by to_string; returns false for unknown names.
bool parse_node_kind(std::string_view text, NodeKind& out);
bool parse_link_kind(std::string_view text, LinkKind& out);

/// Which fabric a switch belongs to: the scale-up domain (NVSwitch, PCIe tree) or scale-out.
enum class Fabric : uint8_t { none, scale_up, scale_out };

struct Node {
  NodeKind kind = NodeKind::gpu;
  /// 0 for endpoints (GPU, NIC); 1 for the first switch tier above them (leaf, L1 NVSwitch,
  /// PCIe switch), 2 for the next (spine, L2 NVSwitch, host bridge), and so on.
  uint8_t tier = 0;
  int32_t server = -1;  ///< server (or compute tray) index; -1 for fabric switches
  int32_t domain = -1;  ///< scale-up domain index (GPUs and their in-domain switches)
  int32_t local = -1;   ///< index within the server (GPU i, NIC i, switch chip i)
  int32_t rail = -1;    ///< rail of a NIC or leaf
  int32_t plane = -1;   ///< plane of a multi-plane fabric (or NVSwitch plane)
  /// Clos pod of a switch at each level above it (pods[0] = level-2 pod, ...), used by the
  /// structured router; empty when the graph carries no pod structure.
  std::vector<int32_t> pods;
  std::string name;
};

struct Link {
  NodeId src = kNoNode;
  NodeId dst = kNoNode;
  LinkKind kind = LinkKind::network;
  sim::Bandwidth bandwidth;  ///< one direction, all lanes together
  sim::Time latency;
  uint32_t lanes = 1;  ///< physical links bundled into this one (e.g. 5 NVLinks)
};

/// Facts about the whole cluster that generators know and describe/export print.
struct TopologyInfo {
  std::string system;  ///< preset name or "custom"
  int gpus_per_server = 0;
  int gpus_per_domain = 0;
  int nics_per_server = 0;
  int rails = 0;  ///< distinct rails in the scale-out fabric (0 = not rail-optimized)
  int planes = 1;
  int scale_out_tiers = 0;
  bool nvls = false;     ///< NVSwitch in-switch reduction (NVLink SHARP) available
  bool collnet = false;  ///< in-network reduction in the scale-out fabric (IB SHARP)
  std::vector<std::string> notes;
};

class Topology {
 public:
  const TopologyInfo& info() const { return info_; }
  size_t node_count() const { return nodes_.size(); }
  size_t link_count() const { return links_.size(); }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  const sim::IdVector<NodeId, Node>& nodes() const { return nodes_; }
  const sim::IdVector<LinkId, Link>& links() const { return links_; }
  std::span<const LinkId> out_links(NodeId id) const;
  /// The link from `a` to `b`, or LinkId::none().
  LinkId link_between(NodeId a, NodeId b) const;

  /// GPUs in rank order (server-major, local index minor).
  const sim::IdVector<GpuRank, NodeId>& gpus() const { return gpus_; }
  size_t gpu_count() const { return gpus_.size(); }
  NodeId gpu(GpuRank rank) const { return gpus_[rank]; }
  /// NICs of the server a GPU sits in, in local order, and the NIC the GPU uses by default
  /// (nearest on PCIe); kNoNode when the GPU has no NIC.
  const std::vector<NodeId>& server_nics(int server) const { return server_nics_[server]; }
  NodeId gpu_nic(GpuRank rank) const { return gpu_nic_[rank]; }
  /// GPUs of the same scale-up domain, in rank order.
  const std::vector<GpuRank>& domain_ranks(int domain) const { return domain_ranks_[domain]; }
  int domain_of_rank(GpuRank rank) const { return nodes_[gpus_[rank]].domain; }
  size_t domain_count() const { return domain_ranks_.size(); }
  size_t server_count() const { return server_nics_.size(); }

  // Network resources. A GPU's links to the chips of its (single-tier) NVSwitch board are always
  // used together, each carrying the share of every flow its bandwidth gives it, so under max-min
  // sharing they act as one link of their summed bandwidth. Such a bundle is one resource of the
  // network backends: exact, and a route inside an NVL72 rack has 2 resources instead of 36.
  // Resource ids [0, link_count) are links; the bundles follow.
  size_t resource_count() const { return links_.size() + bundles_.size(); }
  /// The resource a link's traffic is accounted on (the link itself or its bundle).
  LinkId resource_of(LinkId link) const {
    return bundle_of_[link] == UINT32_MAX ? link : LinkId::at(links_.size() + bundle_of_[link]);
  }
  /// The links of a resource (one for a plain link).
  std::span<const LinkId> resource_links(LinkId resource) const;
  /// Endpoints of a resource; a bundle goes between its GPU and its board's first chip.
  std::pair<NodeId, NodeId> resource_endpoints(LinkId resource) const;
  std::string resource_name(LinkId resource) const;
  LinkKind resource_kind(LinkId resource) const {
    return link(resource_links(resource).front()).kind;
  }

  /// Capacities of every resource in the form the network backends take; `efficiency(kind)`
  /// scales each.
  template <class EfficiencyFn>
  sim::IdVector<LinkId, sim::LinkCapacity> link_capacities(EfficiencyFn efficiency) const {
    sim::IdVector<LinkId, sim::LinkCapacity> out;
    out.reserve(resource_count());
    for (const Link& l : links_)
      out.push_back({l.bandwidth, efficiency(l.kind)});
    for (const auto& bundle : bundles_) {
      sim::Bandwidth sum;
      for (LinkId l : bundle)
        sum = sum + links_[l].bandwidth;
      out.push_back({sum, efficiency(links_[bundle.front()].kind)});
    }
    return out;
  }

 private:
  friend class TopologyBuilder;
  TopologyInfo info_;
  sim::IdVector<NodeId, Node> nodes_;
  sim::IdVector<LinkId, Link> links_;
  sim::IdVector<NodeId, uint32_t> out_offsets_;  // CSR over links sorted by source
  std::vector<LinkId> out_ids_;
  sim::IdVector<GpuRank, NodeId> gpus_;
  sim::IdVector<GpuRank, NodeId> gpu_nic_;
  std::vector<std::vector<NodeId>> server_nics_;
  std::vector<std::vector<GpuRank>> domain_ranks_;
  std::vector<std::vector<LinkId>> bundles_;
  sim::IdVector<LinkId, uint32_t> bundle_of_;
};

/// Assembles a Topology. Links are added as full-duplex pairs unless add_directed is used.
class TopologyBuilder {
 public:
  explicit TopologyBuilder(TopologyInfo info) { topology_.info_ = std::move(info); }
  NodeId add_node(Node node);
  /// Adds a→b and b→a with the same bandwidth and latency; returns the a→b id.
  LinkId add_duplex(NodeId a, NodeId b, LinkKind kind, sim::Bandwidth bandwidth, sim::Time latency,
                    uint32_t lanes = 1);
  LinkId add_directed(NodeId a, NodeId b, LinkKind kind, sim::Bandwidth bandwidth,
                      sim::Time latency, uint32_t lanes = 1);
  Node& node(NodeId id) { return topology_.nodes_[id]; }
  size_t node_count() const { return topology_.nodes_.size(); }
  TopologyInfo& info() { return topology_.info_; }

  /// Validates (no dangling links, positive bandwidths, GPUs present, every server's GPUs in one
  /// domain) and indexes the graph. Throws std::invalid_argument with the reason.
  Topology build() &&;

 private:
  Topology topology_;
};

}  // namespace fabricsim::topologies
