#include "topologies/router.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <span>
#include <stdexcept>

namespace fabricsim::topologies {
namespace {

uint64_t mix(uint64_t x) {
  // splitmix64 finalizer: a fixed, platform-independent hash.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A Clos hop from `x` up one tier to `n`.
bool climbs(const Topology& t, NodeId x, NodeId n) {
  return t.node(n).tier == t.node(x).tier + 1;
}

/// For a Clos hop from `x` down one tier to switch `n`: `n`'s level (its tier - 1), at which its
/// pod is compared; nullopt when the hop does not descend to a switch with a pod there.
std::optional<size_t> descent_level(const Topology& t, NodeId x, NodeId n) {
  const Node& y = t.node(n);
  const size_t level = static_cast<size_t>(y.tier) - 1;
  if (y.tier + 1 != t.node(x).tier || y.tier < 1 || level >= y.pods.size()) return std::nullopt;
  return level;
}

/// A Clos hop from `x` down one tier to `n`, a switch in the pod of `d` (the destination's first
/// switch) at `n`'s level.
bool descends_toward(const Topology& t, NodeId x, NodeId n, const Node& d) {
  const std::optional<size_t> level = descent_level(t, x, n);
  return level && t.node(n).pods[*level] == d.pods[*level];
}

}  // namespace

std::string_view to_string(RoutingStrategy s) {
  switch (s) {
    case RoutingStrategy::ecmp:
      return "ecmp";
    case RoutingStrategy::spray:
      return "spray";
    case RoutingStrategy::rail_aware:
      return "rail_aware";
    case RoutingStrategy::shortest:
      return "shortest";
  }
  return "?";
}

namespace {
constexpr RoutingStrategy kStrategies[] = {RoutingStrategy::ecmp, RoutingStrategy::spray,
                                           RoutingStrategy::rail_aware, RoutingStrategy::shortest};
}  // namespace

std::string routing_strategy_names() {
  std::string out;
  for (RoutingStrategy s : kStrategies)
    out += (out.empty() ? "" : ", ") + std::string(to_string(s));
  return out;
}

bool parse_routing_strategy(std::string_view text, RoutingStrategy& out) {
  for (RoutingStrategy s : kStrategies) {
    if (to_string(s) == text) {
      out = s;
      return true;
    }
  }
  return false;
}

/// Collects link shares (merging repeats) and the byte-weighted latency of a route.
struct Router::Accumulator {
  std::vector<sim::LinkShare> shares;
  /// Where each link sits in `shares`, built only once a sprayed route grows past a few dozen
  /// links: a single path is found faster by scanning, and allocates nothing.
  std::unordered_map<LinkId, size_t> index;
  double latency_ps = 0;
  static constexpr size_t kScanned = 32;

  void add(const Topology& t, LinkId link, double fraction) {
    latency_ps += fraction * static_cast<double>(t.link(link).latency.ps());
    link = t.resource_of(link);
    if (shares.size() < kScanned) {
      for (sim::LinkShare& s : shares) {
        if (s.link == link) {
          s.fraction += fraction;
          return;
        }
      }
      shares.push_back({link, fraction});
      return;
    }
    if (index.empty()) {
      for (size_t i = 0; i < shares.size(); ++i)
        index.emplace(shares[i].link, i);
    }
    const auto [it, inserted] = index.emplace(link, shares.size());
    if (inserted) {
      shares.push_back({link, fraction});
    } else {
      shares[it->second].fraction += fraction;
    }
  }
};

Router::Router(const Topology& topology, RoutingStrategy strategy, uint64_t seed)
    : topology_(topology), strategy_(strategy), seed_(seed) {
  for (size_t r = 0; r < topology.gpu_count(); ++r) {
    const NodeId nic = topology.gpu_nic(GpuRank::at(r));
    if (nic != kNoNode) nic_owner_.emplace(nic, GpuRank::at(r));
  }
}

bool Router::same_domain(GpuRank a, GpuRank b) const {
  return topology_.domain_of_rank(a) == topology_.domain_of_rank(b);
}

bool Router::shares_pcie_switch(NodeId gpu, NodeId nic) const {
  for (LinkId l : topology_.out_links(gpu)) {
    const Link& up = topology_.link(l);
    if (up.kind != LinkKind::pcie) continue;
    if (topology_.link_between(up.dst, nic).valid()) return true;
  }
  return false;
}

GpuRank Router::nic_owner(NodeId nic) const {
  const auto it = nic_owner_.find(nic);
  return it == nic_owner_.end() ? GpuRank::none() : it->second;
}

const sim::Route& Router::route(GpuRank src, GpuRank dst) {
  const uint64_t key = (uint64_t{src.value()} << 32) | dst.value();
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  // Routes are pure functions of their ends, so a full cache can start over: a collective's
  // phases reuse their routes within a step, while PAT at 131,072 GPUs computes 1.3 M routes
  // that each serve one transfer (240 MiB held for nothing).
  if (cache_.size() >= kRouteCacheCapacity) cache_.clear();
  return cache_.emplace(key, compute(src, dst, GpuRank::none())).first->second;
}

const sim::Route& Router::route_via(GpuRank src, GpuRank proxy, GpuRank dst) {
  if (!proxy.valid() || proxy == src) return route(src, dst);
  const auto key = std::make_tuple(src, proxy, dst);
  auto it = proxied_.find(key);
  if (it != proxied_.end()) return it->second;
  return proxied_.emplace(key, compute(src, dst, proxy)).first->second;
}

/// A GPU's NVLink lanes to its scale-up switches, each carrying its share of the GPU's NVLink
/// bandwidth: towards the switches (`up`) or back from them.
sim::Route Router::domain_switch_route(GpuRank rank, bool up) const {
  Accumulator acc;
  const NodeId g = topology_.gpu(rank);
  double total = 0;
  for (LinkId l : topology_.out_links(g)) {
    if (topology_.link(l).kind == LinkKind::nvlink)
      total += topology_.link(l).bandwidth.bytes_per_s();
  }
  for (LinkId l : topology_.out_links(g)) {
    const Link& link = topology_.link(l);
    if (link.kind != LinkKind::nvlink) continue;
    acc.add(topology_, up ? l : topology_.link_between(link.dst, g),
            link.bandwidth.bytes_per_s() / total);
  }
  return sim::Route{std::move(acc.shares),
                    sim::Time::from_ps(static_cast<int64_t>(acc.latency_ps))};
}

sim::Route Router::to_domain_switch(GpuRank rank) const {
  return domain_switch_route(rank, true);
}

sim::Route Router::from_domain_switch(GpuRank rank) const {
  return domain_switch_route(rank, false);
}

NodeId Router::first_switch(NodeId endpoint, LinkKind kind) const {
  for (LinkId l : topology_.out_links(endpoint)) {
    const Link& link = topology_.link(l);
    if (link.kind == kind && topology_.node(link.dst).tier >= 1) return link.dst;
  }
  return kNoNode;
}

std::optional<size_t> Router::common_levels(const Node& a, const Node& d) {
  if (a.pods.empty() || d.pods.empty()) return std::nullopt;
  size_t common = 0;
  while (common < a.pods.size() && common < d.pods.size() && a.pods[common] != d.pods[common]) {
    ++common;
  }
  if (common >= a.pods.size() || common >= d.pods.size()) return std::nullopt;
  return common;
}

bool Router::updown(NodeId src, NodeId dst, LinkKind kind, bool spray, uint64_t hash,
                    double fraction, Accumulator& acc) const {
  if (!spray) return updown_single(src, dst, kind, hash, fraction, acc);
  // Sprayed: every hop splits over its options by bandwidth.
  const Topology& t = topology_;
  using Frontier = std::vector<std::pair<NodeId, double>>;
  auto step = [&](const Frontier& from, auto accept) {
    Frontier next;
    for (const auto& [x, f] : from) {
      double total = 0;
      std::vector<LinkId> options;
      for (LinkId l : t.out_links(x)) {
        const Link& link = t.link(l);
        if (link.kind == kind && accept(x, link.dst)) {
          options.push_back(l);
          total += link.bandwidth.bytes_per_s();
        }
      }
      if (options.empty()) return Frontier{};
      for (LinkId l : options) {
        const double share = f * t.link(l).bandwidth.bytes_per_s() / total;
        acc.add(t, l, share);
        next.emplace_back(t.link(l).dst, share);
      }
    }
    // Merge repeated nodes so the frontier stays small.
    std::sort(next.begin(), next.end());
    Frontier merged;
    for (const auto& [n, f] : next) {
      if (!merged.empty() && merged.back().first == n) {
        merged.back().second += f;
      } else {
        merged.emplace_back(n, f);
      }
    }
    return merged;
  };

  // Destination's first-tier switches and the representative one for pod comparison.
  const NodeId dst_switch = first_switch(dst, kind);
  if (dst_switch == kNoNode) return false;
  Frontier frontier =
      step(Frontier{{src, fraction}}, [&](NodeId, NodeId n) { return t.node(n).tier >= 1; });
  if (frontier.empty()) return false;
  const Node& a = t.node(frontier.front().first);
  const Node& d = t.node(dst_switch);
  const std::optional<size_t> levels = common_levels(a, d);
  if (!levels) return false;
  const size_t common = *levels;
  // Up `common` tiers: every up-link stays inside the enclosing pod of a Clos.
  for (size_t s = 0; s < common; ++s) {
    frontier = step(frontier, [&](NodeId x, NodeId n) { return climbs(t, x, n); });
    if (frontier.empty()) return false;
  }
  // Down to the destination's level-1 pod: one neighbour per child pod in a Clos.
  for (size_t s = 0; s < common; ++s) {
    frontier = step(frontier, [&](NodeId x, NodeId n) { return descends_toward(t, x, n, d); });
    if (frontier.empty()) return false;
  }
  // Last hop into the destination; spraying across several first-tier chips is already split.
  frontier = step(frontier, [&](NodeId, NodeId n) { return n == dst; });
  return !frontier.empty();
}

bool Router::updown_single(NodeId src, NodeId dst, LinkKind kind, uint64_t hash, double fraction,
                           Accumulator& acc) const {
  // updown's walk for one path: the frontier is a single node throughout, so each hop picks the
  // same option updown's would (the hashed index into the matching links in link order) without
  // building a frontier.
  const Topology& t = topology_;
  NodeId x = src;
  const bool indexed = kind == LinkKind::network && !hops_.empty();
  const auto choose = [&](size_t count) {
    return mix(hash ^ (static_cast<uint64_t>(x.value()) << 1)) % count;
  };
  const auto take = [&](LinkId l) {
    acc.add(t, l, fraction);
    x = t.link(l).dst;
    return true;
  };
  const auto hop = [&](auto accept) {
    size_t count = 0;
    for (LinkId l : t.out_links(x)) {
      const Link& link = t.link(l);
      if (link.kind == kind && accept(x, link.dst)) ++count;
    }
    if (count == 0) return false;
    size_t pick = choose(count);
    for (LinkId l : t.out_links(x)) {
      const Link& link = t.link(l);
      if (link.kind == kind && accept(x, link.dst) && pick-- == 0) return take(l);
    }
    return false;
  };
  const auto hop_up = [&] {
    const std::vector<LinkId>& up = hops_[x.index()].up;
    return !up.empty() && take(up[choose(up.size())]);
  };
  const auto hop_down = [&](int32_t pod) {
    const auto& down = hops_[x.index()].down;
    const auto [first, last] =
        std::equal_range(down.begin(), down.end(), std::pair<int32_t, LinkId>{pod, LinkId::none()},
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto count = static_cast<size_t>(last - first);
    return count > 0 && take((first + static_cast<std::ptrdiff_t>(choose(count)))->second);
  };
  const NodeId dst_switch = first_switch(dst, kind);
  if (dst_switch == kNoNode) return false;
  if (!hop([&](NodeId, NodeId n) { return t.node(n).tier >= 1; })) return false;
  const Node& a = t.node(x);
  const Node& d = t.node(dst_switch);
  const std::optional<size_t> levels = common_levels(a, d);
  if (!levels) return false;
  const size_t common = *levels;
  for (size_t s = 0; s < common; ++s) {
    const bool found =
        indexed ? hop_up() : hop([&](NodeId y, NodeId n) { return climbs(t, y, n); });
    if (!found) return false;
  }
  for (size_t s = 0; s < common; ++s) {
    if (indexed) {
      // The child's level is the one below x's: tier(x) - 2.
      const size_t level = static_cast<size_t>(t.node(x).tier) - 2;
      if (t.node(x).tier < 2 || level >= d.pods.size() || !hop_down(d.pods[level])) return false;
      continue;
    }
    const bool found = hop([&](NodeId y, NodeId n) { return descends_toward(t, y, n, d); });
    if (!found) return false;
  }
  // Last hop into the destination, split over parallel links by bandwidth as updown's is (both
  // lists are in link order).
  const bool indexed_in = indexed && t.node(dst).tier == 0;
  const std::span<const LinkId> candidates =
      indexed_in ? std::span<const LinkId>(hops_[dst.index()].in) : t.out_links(x);
  const auto last = [&](const Link& link) {
    return link.kind == kind && link.src == x && link.dst == dst;
  };
  double total = 0;
  for (LinkId l : candidates) {
    if (last(t.link(l))) total += t.link(l).bandwidth.bytes_per_s();
  }
  bool reached = false;
  for (LinkId l : candidates) {
    const Link& link = t.link(l);
    if (last(link)) {
      acc.add(t, l, fraction * link.bandwidth.bytes_per_s() / total);
      reached = true;
    }
  }
  return reached;
}

Router::AggregationTree Router::aggregation_tree(const std::vector<GpuRank>& ranks) const {
  const Topology& t = topology_;
  AggregationTree tree;
  std::vector<NodeId> leaves;
  std::vector<std::pair<GpuRank, NodeId>> nic_of;
  for (GpuRank r : ranks) {
    const NodeId nic = t.gpu_nic(r);
    if (nic == kNoNode) return {};
    NodeId leaf = kNoNode;
    for (LinkId l : t.out_links(nic)) {
      if (t.link(l).kind == LinkKind::network) leaf = t.link(l).dst;
    }
    if (leaf == kNoNode || t.node(leaf).pods.empty()) return {};
    leaves.push_back(leaf);
    nic_of.emplace_back(r, nic);
  }
  if (leaves.empty()) return {};
  // Lowest level whose pod holds every leaf.
  const Node& first = t.node(leaves.front());
  size_t level = 0;
  for (; level < first.pods.size(); ++level) {
    bool all = true;
    for (NodeId leaf : leaves) {
      const Node& n = t.node(leaf);
      if (n.plane != first.plane || level >= n.pods.size() || n.pods[level] != first.pods[level]) {
        all = false;
        break;
      }
    }
    if (all) break;
  }
  if (level >= first.pods.size()) return {};
  // Root: walk up `level` tiers from the first leaf along the first up-link each time.
  NodeId root = leaves.front();
  for (size_t s = 0; s < level; ++s) {
    NodeId next = kNoNode;
    for (LinkId l : t.out_links(root)) {
      const Link& link = t.link(l);
      if (link.kind == LinkKind::network && t.node(link.dst).tier == t.node(root).tier + 1) {
        next = link.dst;
        break;
      }
    }
    if (next == kNoNode) return {};
    root = next;
  }
  std::unordered_map<LinkId, bool> seen;
  auto add = [&](LinkId down) {
    if (!seen.emplace(down, true).second) return;
    const Link& l = t.link(down);
    tree.down.push_back(down);
    tree.up.push_back(t.link_between(l.dst, l.src));
  };
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Node& target = t.node(leaves[i]);
    NodeId x = root;
    while (x != leaves[i]) {
      LinkId step = LinkId::none();
      for (LinkId l : t.out_links(x)) {
        const Link& link = t.link(l);
        const Node& y = t.node(link.dst);
        if (link.kind != LinkKind::network || y.tier + 1 != t.node(x).tier || y.tier < 1) continue;
        const size_t lv = static_cast<size_t>(y.tier) - 1;
        if (lv < y.pods.size() && y.pods[lv] == target.pods[lv]) {
          step = l;
          break;
        }
      }
      if (!step.valid()) return {};
      add(step);
      x = t.link(step).dst;
    }
    // Leaf -> NIC -> PCIe -> GPU.
    const auto [rank, nic] = nic_of[i];
    add(t.link_between(leaves[i], nic));
    Accumulator pcie;
    if (!updown(nic, t.gpu(rank), LinkKind::pcie, false, 0, 1.0, pcie)) return {};
    for (const sim::LinkShare& s : pcie.shares)
      add(s.link);
  }
  return tree;  // network and PCIe links: each is its own resource
}

bool Router::shortest_path(NodeId src, NodeId dst, Accumulator& acc) const {
  const Topology& t = topology_;
  sim::IdVector<NodeId, LinkId> parent(t.node_count(), LinkId::none());
  sim::IdVector<NodeId, char> seen(t.node_count(), 0);
  std::deque<NodeId> queue{src};
  seen[src] = 1;
  while (!queue.empty() && !seen[dst]) {
    const NodeId u = queue.front();
    queue.pop_front();
    for (LinkId l : t.out_links(u)) {
      const NodeId v = t.link(l).dst;
      if (seen[v] || t.link(l).kind != LinkKind::network) continue;
      // NICs are endpoints: the fabric does not route through another server.
      if (v != dst && t.node(v).kind == NodeKind::nic) continue;
      seen[v] = 1;
      parent[v] = l;
      queue.push_back(v);
    }
  }
  if (!seen[dst]) return false;
  std::vector<LinkId> path;
  for (NodeId v = dst; v != src; v = t.link(parent[v]).src)
    path.push_back(parent[v]);
  for (auto it = path.rbegin(); it != path.rend(); ++it)
    acc.add(t, *it, 1.0);
  return true;
}

void Router::index_hops() {
  const Topology& t = topology_;
  hops_.assign(t.node_count(), Hops{});
  for (size_t i = 0; i < t.node_count(); ++i) {
    const NodeId x = NodeId::at(i);
    const Node& node = t.node(x);
    if (node.tier < 1) continue;
    Hops& h = hops_[i];
    for (LinkId l : t.out_links(x)) {
      const Link& link = t.link(l);
      if (link.kind != LinkKind::network) continue;
      if (climbs(t, x, link.dst)) h.up.push_back(l);
      if (const std::optional<size_t> level = descent_level(t, x, link.dst)) {
        h.down.emplace_back(t.node(link.dst).pods[*level], l);
      }
    }
    std::stable_sort(h.down.begin(), h.down.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  for (size_t i = 0; i < t.link_count(); ++i) {
    const Link& link = t.link(LinkId::at(i));
    if (link.kind == LinkKind::network && t.node(link.dst).tier == 0) {
      hops_[link.dst.index()].in.push_back(LinkId::at(i));
    }
  }
}

sim::Route Router::compute(GpuRank src, GpuRank dst, GpuRank proxy) {
  const Topology& t = topology_;
  Accumulator acc;
  if (src == dst) return {};
  const NodeId gs = t.gpu(src);
  const NodeId gd = t.gpu(dst);
  auto fail = [&] {
    throw std::runtime_error(fmt::format("no route from {} to {} ({} routing)", t.node(gs).name,
                                         t.node(gd).name, to_string(strategy_)));
  };
  auto finish = [&] {
    return sim::Route{std::move(acc.shares),
                      sim::Time::from_ps(static_cast<int64_t>(acc.latency_ps + 0.5))};
  };
  bool has_nvlink = false;
  for (LinkId l : t.out_links(gs))
    has_nvlink |= t.link(l).kind == LinkKind::nvlink;
  const LinkKind up_kind = has_nvlink ? LinkKind::nvlink : LinkKind::pcie;
  auto scale_up = [&](NodeId a, NodeId b) {
    if (a == b) return;
    if (!updown(a, b, up_kind, up_kind == LinkKind::nvlink, 0, 1.0, acc) &&
        !shortest_path(a, b, acc)) {
      fail();
    }
  };
  if (same_domain(src, dst)) {
    scale_up(gs, gd);
    return finish();
  }
  // A network route climbs and descends the Clos from NIC to NIC beside its PCIe hops: a dozen
  // links in a 4-tier fabric, reserved once rather than grown link by link.
  acc.shares.reserve(12);
  NodeId nic_src = t.gpu_nic(src);
  const NodeId nic_dst = t.gpu_nic(dst);
  if (nic_src == kNoNode || nic_dst == kNoNode) fail();
  NodeId sender = gs;
  if (proxy.valid()) {
    nic_src = t.gpu_nic(proxy);
    if (nic_src == kNoNode) fail();
    if (!shares_pcie_switch(gs, nic_src)) {
      scale_up(gs, t.gpu(proxy));
      sender = t.gpu(proxy);
    }
  } else if (strategy_ == RoutingStrategy::rail_aware ||
             t.node(nic_src).plane != t.node(nic_dst).plane) {
    // Move to the GPU whose NIC is on the destination NIC's rail (and plane) first: PXN.
    const Node& want = t.node(nic_dst);
    for (NodeId n : t.server_nics(t.node(gs).server)) {
      const Node& candidate = t.node(n);
      if (candidate.plane == want.plane && (want.rail < 0 || candidate.rail == want.rail)) {
        nic_src = n;
        break;
      }
    }
    const GpuRank owner = nic_owner(nic_src);
    if (owner.valid() && owner != src && !shares_pcie_switch(gs, nic_src)) {
      scale_up(gs, t.gpu(owner));
      sender = t.gpu(owner);
    }
  }
  if (hops_.empty()) index_hops();
  const uint64_t hash =
      mix(seed_ ^ mix((static_cast<uint64_t>(nic_src.value()) << 32) | nic_dst.value()));
  if (!updown(sender, nic_src, LinkKind::pcie, false, hash, 1.0, acc)) fail();
  const bool network_ok = strategy_ == RoutingStrategy::shortest
                              ? shortest_path(nic_src, nic_dst, acc)
                              : updown(nic_src, nic_dst, LinkKind::network,
                                       strategy_ == RoutingStrategy::spray, hash, 1.0, acc);
  if (!network_ok) fail();
  if (!updown(nic_dst, gd, LinkKind::pcie, false, hash, 1.0, acc)) fail();
  return finish();
}

}  // namespace fabricsim::topologies
