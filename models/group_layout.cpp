#include "models/group_layout.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace fabricsim::models {

GroupLayout make_group_layout(const topologies::Topology& topology,
                              std::vector<topologies::GpuRank> ranks) {
  GroupLayout g;
  std::map<int, size_t> index;
  for (topologies::GpuRank r : ranks) {
    const int d = topology.domain_of_rank(r);
    const auto [it, inserted] = index.emplace(d, g.domains.size());
    if (inserted) g.domains.emplace_back();
    g.domains[it->second].push_back(r);
  }
  for (auto& members : g.domains)
    std::sort(members.begin(), members.end());
  g.ppn = 0;
  g.min_ppn = g.domains.empty() ? 1 : static_cast<int>(g.domains.front().size());
  for (const auto& members : g.domains) {
    g.ppn = std::max(g.ppn, static_cast<int>(members.size()));
    g.min_ppn = std::min(g.min_ppn, static_cast<int>(members.size()));
  }
  for (const auto& members : g.domains)
    g.uniform &= static_cast<int>(members.size()) == g.ppn;
  g.ranks = std::move(ranks);
  return g;
}

std::vector<topologies::GpuRank> first_ranks(int n) {
  std::vector<topologies::GpuRank> out;
  out.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    out.push_back(topologies::GpuRank::at(static_cast<size_t>(r)));
  return out;
}

}  // namespace fabricsim::models
