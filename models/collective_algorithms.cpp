#include "models/collective_algorithms.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <tuple>

namespace fabricsim::models {
using topologies::GpuRank;

namespace {

/// Collects a phase's transfers, merging identical point-to-point ones.
class PhaseBuilder {
 public:
  void p2p(GpuRank src, GpuRank dst, double bytes, GpuRank proxy = GpuRank::none()) {
    if (src == dst || bytes <= 0) return;
    const auto key = std::make_tuple(src, dst, proxy, bytes);
    const auto [it, inserted] = index_.emplace(key, phase_.transfers.size());
    if (!inserted) {
      phase_.transfers[it->second].multiplicity += 1;
      return;
    }
    Transfer t;
    t.kind = Transfer::Kind::p2p;
    t.src = src;
    t.dst = dst;
    t.proxy = proxy;
    t.bytes = bytes;
    phase_.transfers.push_back(std::move(t));
  }
  void to_switch(GpuRank src, double bytes) { special(Transfer::Kind::to_switch, src, bytes); }
  void from_switch(GpuRank dst, double bytes) { special(Transfer::Kind::from_switch, dst, bytes); }
  void link(sim::LinkId link, double bytes) {
    Transfer t;
    t.kind = Transfer::Kind::route;
    t.bytes = bytes;
    t.route.links.push_back({link, 1.0});
    phase_.transfers.push_back(std::move(t));
  }
  Phase take() { return std::move(phase_); }

 private:
  void special(Transfer::Kind kind, GpuRank rank, double bytes) {
    if (bytes <= 0) return;
    Transfer t;
    t.kind = kind;
    t.src = t.dst = rank;
    t.bytes = bytes;
    phase_.transfers.push_back(std::move(t));
  }
  Phase phase_;
  std::map<std::tuple<GpuRank, GpuRank, GpuRank, double>, size_t> index_;
};

/// For each lane c of a striped ring, the local index of the GPU of `m` (one domain's members)
/// that ends the lane's chain and sends to the next domain through lane c's NIC. Preferred: a GPU
/// under the same PCIe switch as that NIC (what NCCL's ring search finds on DGX-style boards, GPU
/// pairs sharing a switch with two NICs), so no GPU's PCIe link carries two streams; otherwise the
/// previous GPU, forwarding over NVLink (PXN).
std::vector<int> ring_exits(const std::vector<GpuRank>& m, int lanes,
                            const topologies::Router& router) {
  const int p = static_cast<int>(m.size());
  std::vector<int> exit(static_cast<size_t>(lanes), -1);
  std::vector<bool> used(static_cast<size_t>(p), false);
  for (int c = 0; c < lanes; ++c) {
    for (int x = 0; x < p && exit[c] < 0; ++x) {
      if (x != c && !used[x] && router.reaches_nic_over_pcie(m[x], m[c])) exit[c] = x;
    }
    if (exit[c] < 0 && p > 1 && !used[(c + p - 1) % p]) exit[c] = (c + p - 1) % p;
    for (int x = 0; x < p && exit[c] < 0; ++x) {
      if (x != c && !used[x]) exit[c] = x;
    }
    if (exit[c] < 0) exit[c] = c;  // a single GPU per domain
    used[exit[c]] = true;
  }
  return exit;
}

/// Chain order of lane c inside a domain of p members: starts at c, ends at `exit`, the others in
/// rotation.
std::vector<int> lane_order(int c, int p, int exit) {
  std::vector<int> order{c};
  for (int k = 1; k < p; ++k) {
    const int x = (c + k) % p;
    if (x != exit) order.push_back(x);
  }
  if (exit != c) order.push_back(exit);
  return order;
}

/// Ring (or, for chains, a pipeline without the closing edge) with `per_edge` bytes per edge.
/// Across several domains the ring is striped like NCCL's channels: one lane per member of the
/// smallest domain, each crossing between domains through its own NIC (NCCL builds rings over
/// nodes with unequal GPU counts the same way, with the channel count of the smallest).
void ring(PhaseBuilder& b, const GroupLayout& g, const topologies::Router& router, double per_edge,
          bool chain, bool reverse) {
  auto add = [&](GpuRank from, GpuRank to, double bytes, GpuRank proxy = GpuRank::none()) {
    if (reverse) {
      b.p2p(to, from, bytes, proxy == GpuRank::none() ? GpuRank::none() : to);
    } else {
      b.p2p(from, to, bytes, proxy);
    }
  };
  const int n = g.size();
  const int domains = g.domain_count();
  if (domains <= 1) {
    for (int i = 0; i < n; ++i) {
      if (chain && i == n - 1) break;
      add(g.ranks[i], g.ranks[(i + 1) % n], per_edge);
    }
    return;
  }
  const int lanes = g.min_ppn;
  const double per = per_edge / lanes;
  // Domains of one size are wired alike in every generator, so their exits are computed once.
  std::map<size_t, std::vector<int>> exits_by_size;
  for (const auto& m : g.domains) {
    if (!exits_by_size.contains(m.size())) exits_by_size[m.size()] = ring_exits(m, lanes, router);
  }
  for (int c = 0; c < lanes; ++c) {
    for (int d = 0; d < domains; ++d) {
      const auto& m = g.domains[d];
      const int p = static_cast<int>(m.size());
      const int exit = exits_by_size[m.size()][c];
      const std::vector<int> order = lane_order(c, p, exit);
      for (int k = 0; k + 1 < p; ++k)
        add(m[order[k]], m[order[k + 1]], per);
      if (chain && d == domains - 1) continue;
      add(m[exit], g.domains[(d + 1) % domains][c], per, m[c]);
    }
  }
}

/// Parent of `rank` in NCCL's in-order binary tree over `n` ranks (ncclGetBtree); -1 at the root.
int btree_parent(int rank, int n) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && !(bit & rank))
    bit <<= 1;
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

/// NCCL's double binary tree over the domains (ncclGetDtree): tree 0 is the in-order binary tree,
/// tree 1 its mirror (even counts) or its shift by one (odd counts), so a domain that is inner in
/// one tree is a leaf in the other. Every edge carries `bytes` each way in each tree.
void double_tree(PhaseBuilder& b, const GroupLayout& g, int lane, double bytes) {
  const int n = g.domain_count();
  for (int tree = 0; tree < 2; ++tree) {
    for (int r = 0; r < n; ++r) {
      int parent;
      if (tree == 0) {
        parent = btree_parent(r, n);
      } else if (n % 2 == 0) {
        const int p = btree_parent(n - 1 - r, n);
        parent = p < 0 ? -1 : n - 1 - p;
      } else {
        const int p = btree_parent((r - 1 + n) % n, n);
        parent = p < 0 ? -1 : (p + 1) % n;
      }
      if (parent < 0) continue;
      const GpuRank c = g.domains[r][lane];
      const GpuRank q = g.domains[parent][lane];
      b.p2p(c, q, bytes);
      b.p2p(q, c, bytes);
    }
  }
}

void require(bool ok, const std::string& why) {
  if (!ok) throw AlgorithmUnavailable(why);
}

std::vector<GpuRank> lane(const GroupLayout& g, int c) {
  std::vector<GpuRank> out;
  for (const auto& d : g.domains)
    out.push_back(d[c]);
  return out;
}

void aggregation(PhaseBuilder& b, const GroupLayout& g, topologies::Router& router, int c,
                 double bytes) {
  const auto tree = router.aggregation_tree(lane(g, c));
  require(!tree.up.empty(),
          "no in-network reduction tree spans these GPUs (different fabric planes?)");
  for (sim::LinkId l : tree.up)
    b.link(l, bytes);
  for (sim::LinkId l : tree.down)
    b.link(l, bytes);
}

/// NVLS inside each domain: `up`/`down` bytes per member between GPU and NVSwitch.
void nvls_local(PhaseBuilder& b, const GroupLayout& g, double up, double down) {
  for (const auto& d : g.domains) {
    for (GpuRank r : d) {
      b.to_switch(r, up);
      b.from_switch(r, down);
    }
  }
}

}  // namespace

std::vector<Phase> build_phases(CollectiveOp op, Algorithm a, double size, const GroupLayout& g,
                                topologies::Router& router) {
  const int n = g.size();
  const double nd = n;
  const int p = g.ppn;
  const int domains = g.domain_count();
  std::vector<Phase> phases;
  if (n <= 1 || size <= 0) return phases;
  const std::string op_name(to_string(op));
  const std::string algo_name(to_string(a));
  PhaseBuilder b;
  switch (a) {
    case Algorithm::ring: {
      require(op != CollectiveOp::alltoall && op != CollectiveOp::sendrecv,
              op_name + " has no ring algorithm");
      const bool chain = op == CollectiveOp::broadcast || op == CollectiveOp::reduce;
      const double volume = op == CollectiveOp::all_reduce ? 2 * (nd - 1) / nd * size
                            : chain                        ? size
                                                           : (nd - 1) / nd * size;
      ring(b, g, router, volume, chain, op == CollectiveOp::reduce);
      break;
    }
    case Algorithm::tree: {
      require(op == CollectiveOp::all_reduce, "tree runs all_reduce only");
      require(domains > 1, "tree needs GPUs in more than one scale-up domain");
      const int lanes = g.min_ppn;
      const double per = size / lanes;
      for (int c = 0; c < lanes; ++c) {
        for (const auto& m : g.domains) {
          const int pd = static_cast<int>(m.size());
          for (int k = 0; k + 1 < pd; ++k) {
            const GpuRank x = m[(c + k) % pd];
            const GpuRank y = m[(c + k + 1) % pd];
            b.p2p(y, x, per);
            b.p2p(x, y, per);
          }
        }
        double_tree(b, g, c, per / 2);
      }
      break;
    }
    case Algorithm::nvls: {
      require(op == CollectiveOp::all_reduce || op == CollectiveOp::all_gather ||
                  op == CollectiveOp::reduce_scatter,
              "NVLS runs all_reduce, all_gather and reduce_scatter");
      require(g.uniform, "NVLS needs the same number of GPUs in every domain");
      const double pd = p;
      if (op == CollectiveOp::all_reduce) {
        nvls_local(b, g, size + size / pd, size / pd + size);
      } else if (op == CollectiveOp::all_gather) {
        nvls_local(b, g, size / nd, size * (nd - 1) / nd);
      } else {
        nvls_local(b, g, size * (nd - 1) / nd, size / nd);
      }
      if (domains > 1) {
        // NVLS + IB SHARP (NCCL with CollNet): each member's lane carries its 1/p slice of the
        // domain's partial result through the fabric's aggregation tree. All-gather and
        // reduce-scatter move the same lane volume (the switch trees gather or reduce it).
        for (int c = 0; c < p; ++c)
          aggregation(b, g, router, c, size / pd);
      }
      break;
    }
    case Algorithm::nvls_tree: {
      require(op == CollectiveOp::all_reduce, "NVLS tree runs all_reduce only");
      require(domains > 1 && g.uniform, "NVLS tree needs equal groups in several domains");
      const double pd = p;
      nvls_local(b, g, size + size / pd, size / pd + size);
      for (int c = 0; c < p; ++c)
        double_tree(b, g, c, size / pd / 2);
      break;
    }
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain: {
      require(op == CollectiveOp::all_reduce, "CollNet is modelled for all_reduce only");
      require(domains > 1 && g.uniform, "CollNet needs equal groups in several domains");
      const double shard = size / p;
      for (const auto& m : g.domains) {
        for (GpuRank x : m) {
          for (GpuRank y : m) {
            // Reduce-scatter then all-gather inside the domain: two shards per ordered pair.
            b.p2p(x, y, shard);
            b.p2p(x, y, shard);
          }
        }
      }
      for (int c = 0; c < p; ++c)
        aggregation(b, g, router, c, shard);
      break;
    }
    case Algorithm::pat: {
      require(op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter,
              "PAT runs all_gather and reduce_scatter");
      std::vector<GpuRank> order;
      for (const auto& d : g.domains)
        order.insert(order.end(), d.begin(), d.end());
      // NCCL's PAT sends the chunk of offset s (1..n-1) over the dimension of s's lowest set bit
      // (PatAGAlgorithm in src/include/collectives.h: sendDim = firstBitSet(s)): half the chunks
      // go to the neighbour at distance 1, a quarter at distance 2, one at the farthest. One
      // phase per distance (each rank sends its share to the rank that far on), the
      // reduce-scatter's in the reverse order of the gather's.
      std::vector<int> distances;
      for (int dist = 1; dist < n; dist *= 2)
        distances.push_back(dist);
      if (op == CollectiveOp::reduce_scatter) std::reverse(distances.begin(), distances.end());
      for (int dist : distances) {
        PhaseBuilder step;
        const int chunks = (n - 1) / dist - (n - 1) / (2 * dist);  // offsets with lowest bit dist
        const double bytes = chunks * size / nd;
        for (int r = 0; r < n; ++r)
          step.p2p(order[r], order[(r + dist) % n], bytes);
        phases.push_back(step.take());
      }
      return phases;
    }
    case Algorithm::direct:
    case Algorithm::pxn: {
      require(op == CollectiveOp::alltoall || op == CollectiveOp::sendrecv,
              algo_name + " runs alltoall and sendrecv");
      std::vector<std::pair<GpuRank, int>> position;  // rank -> (domain index, local index)
      std::map<GpuRank, std::pair<int, int>> where;
      for (int d = 0; d < domains; ++d) {
        for (size_t i = 0; i < g.domains[d].size(); ++i) {
          where[g.domains[d][i]] = {d, static_cast<int>(i)};
        }
      }
      auto proxy_for = [&](GpuRank src, GpuRank dst) {
        if (a != Algorithm::pxn) return GpuRank::none();
        const auto [sd, si] = where[src];
        const auto [dd, di] = where[dst];
        if (sd == dd) return GpuRank::none();
        const auto& m = g.domains[sd];
        return di < static_cast<int>(m.size()) ? m[di] : GpuRank::none();
      };
      if (op == CollectiveOp::sendrecv) {
        for (int i = 0; i < n; ++i) {
          const GpuRank src = g.ranks[i];
          const GpuRank dst = g.ranks[(i + 1) % n];
          b.p2p(src, dst, size, proxy_for(src, dst));
        }
      } else {
        const double per_peer = size / nd;
        for (GpuRank src : g.ranks) {
          for (GpuRank dst : g.ranks)
            b.p2p(src, dst, per_peer, proxy_for(src, dst));
        }
      }
      break;
    }
  }
  phases.push_back(b.take());
  return phases;
}

}  // namespace fabricsim::models
