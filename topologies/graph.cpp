#include "topologies/graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>

namespace fabricsim::topologies {
namespace {

constexpr std::array<std::string_view, 6> kNodeKindNames{"gpu",         "nvswitch", "nic",
                                                         "pcie_switch", "host",     "switch"};
constexpr std::array<std::string_view, 3> kLinkKindNames{"nvlink", "pcie", "network"};

}  // namespace

std::string_view to_string(NodeKind kind) {
  return kNodeKindNames[static_cast<size_t>(kind)];
}
std::string_view to_string(LinkKind kind) {
  return kLinkKindNames[static_cast<size_t>(kind)];
}

bool parse_node_kind(std::string_view text, NodeKind& out) {
  for (size_t i = 0; i < kNodeKindNames.size(); ++i) {
    if (kNodeKindNames[i] == text) {
      out = static_cast<NodeKind>(i);
      return true;
    }
  }
  return false;
}

bool parse_link_kind(std::string_view text, LinkKind& out) {
  for (size_t i = 0; i < kLinkKindNames.size(); ++i) {
    if (kLinkKindNames[i] == text) {
      out = static_cast<LinkKind>(i);
      return true;
    }
  }
  return false;
}

std::span<const LinkId> Topology::out_links(NodeId id) const {
  return {out_ids_.data() + out_offsets_[id], out_ids_.data() + out_offsets_[id.next()]};
}

std::span<const LinkId> Topology::resource_links(LinkId resource) const {
  if (resource.index() < links_.size()) {
    // A plain link is its own resource: point into the CSR array at its entry.
    const Link& l = links_[resource];
    for (uint32_t i = out_offsets_[l.src]; i < out_offsets_[l.src.next()]; ++i) {
      if (out_ids_[i] == resource) return {out_ids_.data() + i, 1};
    }
  }
  const auto& b = bundles_[resource.index() - links_.size()];
  return {b.data(), b.size()};
}

std::pair<NodeId, NodeId> Topology::resource_endpoints(LinkId resource) const {
  if (resource.index() < links_.size()) return {links_[resource].src, links_[resource].dst};
  const auto& b = bundles_[resource.index() - links_.size()];
  const Link& first = links_[b.front()];
  return {first.src, first.dst};
}

std::string Topology::resource_name(LinkId resource) const {
  if (resource.index() < links_.size()) {
    return nodes_[links_[resource].src].name + ">" + nodes_[links_[resource].dst].name;
  }
  const auto& b = bundles_[resource.index() - links_.size()];
  const Link& first = links_[b.front()];
  return nodes_[first.src].kind == NodeKind::gpu ? nodes_[first.src].name + ">nvswitches"
                                                 : "nvswitches>" + nodes_[first.dst].name;
}

LinkId Topology::link_between(NodeId a, NodeId b) const {
  for (LinkId l : out_links(a)) {
    if (links_[l].dst == b) return l;
  }
  return LinkId::none();
}

NodeId TopologyBuilder::add_node(Node node) {
  topology_.nodes_.push_back(std::move(node));
  return NodeId::at(topology_.nodes_.size() - 1);
}

LinkId TopologyBuilder::add_directed(NodeId a, NodeId b, LinkKind kind, sim::Bandwidth bandwidth,
                                     sim::Time latency, uint32_t lanes) {
  topology_.links_.push_back(Link{a, b, kind, bandwidth, latency, lanes});
  return LinkId::at(topology_.links_.size() - 1);
}

LinkId TopologyBuilder::add_duplex(NodeId a, NodeId b, LinkKind kind, sim::Bandwidth bandwidth,
                                   sim::Time latency, uint32_t lanes) {
  const LinkId forward = add_directed(a, b, kind, bandwidth, latency, lanes);
  add_directed(b, a, kind, bandwidth, latency, lanes);
  return forward;
}

Topology TopologyBuilder::build() && {
  Topology& t = topology_;
  const size_t n = t.nodes_.size();
  for (size_t i = 0; i < t.links_.size(); ++i) {
    const Link& l = t.links_[i];
    if (l.src.index() >= n || l.dst.index() >= n) {
      throw std::invalid_argument(fmt::format("link {} connects a node that does not exist", i));
    }
    if (l.src == l.dst) throw std::invalid_argument(fmt::format("link {} is a self-loop", i));
    if (!(l.bandwidth.bytes_per_s() > 0)) {
      throw std::invalid_argument(fmt::format("link {} ({} -> {}) has zero bandwidth", i,
                                              t.nodes_[l.src].name, t.nodes_[l.dst].name));
    }
  }
  // CSR adjacency, links of each node in id order (deterministic routing tie-breaks).
  t.out_offsets_.assign(n + 1, 0);
  for (const Link& l : t.links_)
    ++t.out_offsets_[l.src.next()];
  for (size_t i = 0; i < n; ++i)
    t.out_offsets_[i + 1] += t.out_offsets_[i];
  t.out_ids_.resize(t.links_.size());
  std::vector<uint32_t> fill(t.out_offsets_.begin(), t.out_offsets_.end() - 1);
  for (size_t i = 0; i < t.links_.size(); ++i) {
    t.out_ids_[fill[t.links_[i].src.index()]++] = LinkId::at(i);
  }

  // GPUs in rank order.
  for (size_t i = 0; i < n; ++i) {
    if (t.nodes_[i].kind == NodeKind::gpu) t.gpus_.push_back(NodeId::at(i));
  }
  if (t.gpus_.empty()) throw std::invalid_argument("the topology has no GPUs");
  std::stable_sort(t.gpus_.begin(), t.gpus_.end(), [&](NodeId a, NodeId b) {
    const Node& x = t.nodes_[a];
    const Node& y = t.nodes_[b];
    return x.server != y.server ? x.server < y.server : x.local < y.local;
  });
  int max_server = -1;
  int max_domain = -1;
  for (NodeId g : t.gpus_) {
    const Node& node = t.nodes_[g];
    if (node.server < 0)
      throw std::invalid_argument(fmt::format("GPU {} has no server", node.name));
    if (node.domain < 0)
      throw std::invalid_argument(fmt::format("GPU {} has no domain", node.name));
    max_server = std::max(max_server, node.server);
    max_domain = std::max(max_domain, node.domain);
  }
  t.server_nics_.assign(static_cast<size_t>(max_server + 1), {});
  for (size_t i = 0; i < n; ++i) {
    const Node& node = t.nodes_[i];
    if (node.kind != NodeKind::nic) continue;
    if (node.server < 0 || node.server > max_server) {
      throw std::invalid_argument(fmt::format("NIC {} belongs to no GPU server", node.name));
    }
    t.server_nics_[node.server].push_back(NodeId::at(i));
  }
  for (auto& nics : t.server_nics_) {
    std::stable_sort(nics.begin(), nics.end(),
                     [&](NodeId a, NodeId b) { return t.nodes_[a].local < t.nodes_[b].local; });
  }
  t.domain_ranks_.assign(static_cast<size_t>(max_domain + 1), {});
  for (size_t r = 0; r < t.gpus_.size(); ++r) {
    t.domain_ranks_[t.nodes_[t.gpus_[r]].domain].push_back(GpuRank::at(r));
  }
  for (size_t d = 0; d < t.domain_ranks_.size(); ++d) {
    if (t.domain_ranks_[d].empty()) {
      throw std::invalid_argument(fmt::format("scale-up domain {} has no GPUs", d));
    }
  }

  // Each GPU's default NIC: the nearest NIC of its server over PCIe links (BFS), lowest local
  // index on ties.
  t.gpu_nic_.assign(t.gpus_.size(), kNoNode);
  sim::IdVector<NodeId, int> dist(n, -1);
  std::vector<NodeId> touched;
  for (size_t r = 0; r < t.gpus_.size(); ++r) {
    const NodeId start = t.gpus_[r];
    std::deque<NodeId> queue{start};
    dist[start] = 0;
    touched.assign(1, start);
    NodeId best = kNoNode;
    int best_dist = -1;
    while (!queue.empty()) {
      const NodeId u = queue.front();
      queue.pop_front();
      if (best_dist >= 0 && dist[u] > best_dist) break;
      if (t.nodes_[u].kind == NodeKind::nic) {
        // Prefer the NIC with the GPU's own local index (1:1 GPU-NIC servers), then the lowest.
        const int gpu_local = t.nodes_[start].local;
        const auto better = [&](NodeId a, NodeId b) {
          const bool a_own = t.nodes_[a].local == gpu_local;
          const bool b_own = t.nodes_[b].local == gpu_local;
          if (a_own != b_own) return a_own;
          return t.nodes_[a].local < t.nodes_[b].local;
        };
        if (best == kNoNode || better(u, best)) {
          best = u;
          best_dist = dist[u];
        }
        continue;
      }
      for (LinkId l : t.out_links(u)) {
        if (t.links_[l].kind != LinkKind::pcie) continue;
        const NodeId v = t.links_[l].dst;
        if (dist[v] >= 0) continue;
        dist[v] = dist[u] + 1;
        touched.push_back(v);
        queue.push_back(v);
      }
    }
    for (NodeId v : touched)
      dist[v] = -1;
    t.gpu_nic_[r] = best;
  }

  // Bundles: a GPU's NVLinks to first-tier NVSwitch chips (and back), when every chip it reaches
  // belongs to one board (single-tier domain or the board level of a two-tier one).
  t.bundle_of_.assign(t.links_.size(), UINT32_MAX);
  for (NodeId g : t.gpus_) {
    std::vector<LinkId> up;
    for (LinkId l : t.out_links(g)) {
      const Link& link = t.links_[l];
      if (link.kind == LinkKind::nvlink && t.nodes_[link.dst].kind == NodeKind::nvswitch) {
        up.push_back(l);
      }
    }
    if (up.size() < 2) continue;
    std::vector<LinkId> down;
    for (LinkId l : up) {
      const LinkId back = t.link_between(t.links_[l].dst, g);
      if (!back.valid()) {
        down.clear();
        break;
      }
      down.push_back(back);
    }
    if (down.size() != up.size()) continue;
    for (const auto* bundle : {&up, &down}) {
      for (LinkId l : *bundle)
        t.bundle_of_[l] = static_cast<uint32_t>(t.bundles_.size());
      t.bundles_.push_back(*bundle);
    }
  }
  return std::move(topology_);
}

}  // namespace fabricsim::topologies
