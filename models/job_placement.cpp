#include "models/job_placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>

namespace fabricsim::models {
namespace {

using topologies::GpuRank;
using topologies::LinkId;
using topologies::NodeId;
using topologies::NodeKind;
using topologies::Topology;

constexpr std::array<std::string_view, 3> kPolicyNames{"packed", "spread", "topology-aware"};

// A partition of the servers into locality units, numbered in order of their first server;
// -1 for a server without GPUs.
struct Partition {
  std::vector<int> unit_of_server;
  int units = 0;
};

// Servers with equal keys share a unit.
template <class Key>
Partition partition_by(const std::vector<Key>& keys, const std::vector<bool>& has_gpus) {
  Partition p;
  std::map<Key, int> index;
  for (size_t s = 0; s < keys.size(); ++s) {
    if (!has_gpus[s]) {
      p.unit_of_server.push_back(-1);
      continue;
    }
    const auto [it, inserted] = index.emplace(keys[s], p.units);
    if (inserted) ++p.units;
    p.unit_of_server.push_back(it->second);
  }
  return p;
}

// The locality levels above a scale-up domain, read from the graph: leaf groups (servers whose
// NICs reach the same set of tier-1 scale-out switches), then each Clos pod level above them that
// still splits the cluster (servers whose leaves sit under the same set of pods of that level).
struct Locality {
  Partition leaf_groups;
  std::vector<Partition> pods;  // finest first; each has fewer units than the one below
};

Locality read_locality(const Topology& t) {
  std::vector<bool> has_gpus(t.server_count(), false);
  for (NodeId g : t.gpus())
    has_gpus[static_cast<size_t>(t.node(g).server)] = true;
  std::vector<std::vector<NodeId>> leaves(t.server_count());
  size_t depth = 0;
  for (size_t s = 0; s < t.server_count(); ++s) {
    for (NodeId nic : t.server_nics(static_cast<int>(s))) {
      for (LinkId l : t.out_links(nic)) {
        const NodeId dst = t.link(l).dst;
        if (t.node(dst).kind != NodeKind::switch_) continue;
        leaves[s].push_back(dst);
        depth = std::max(depth, t.node(dst).pods.size());
      }
    }
    std::sort(leaves[s].begin(), leaves[s].end());
    leaves[s].erase(std::unique(leaves[s].begin(), leaves[s].end()), leaves[s].end());
  }
  Locality loc;
  // Servers without a scale-out NIC (one NVL72 rack, a lone PCIe box) share the empty key.
  loc.leaf_groups = partition_by(leaves, has_gpus);
  int previous = loc.leaf_groups.units;
  for (size_t k = 1; k < depth; ++k) {
    std::vector<std::vector<int64_t>> keys(leaves.size());
    for (size_t s = 0; s < leaves.size(); ++s) {
      for (NodeId leaf : leaves[s]) {
        const std::vector<int32_t>& pods = t.node(leaf).pods;
        // A leaf without a pod at this level stands alone (negative keys never meet pod ids).
        keys[s].push_back(k < pods.size() && pods[k] >= 0 ? pods[k] : -1 - int64_t{leaf.value()});
      }
      std::sort(keys[s].begin(), keys[s].end());
      keys[s].erase(std::unique(keys[s].begin(), keys[s].end()), keys[s].end());
    }
    Partition p = partition_by(keys, has_gpus);
    if (p.units > 1 && p.units < previous) {
      previous = p.units;
      loc.pods.push_back(std::move(p));
    }
  }
  return loc;
}

// b GPUs of one domain: domain_ranks(domain)[first .. first + b).
struct Block {
  int domain = 0;
  uint32_t first = 0;
};

std::string blocks_phrase(int n) {
  return fmt::format("{} aligned block{}", n, n == 1 ? "" : "s");
}

enum class Outcome { placed, capacity, fragmentation };

// The cluster's free GPUs while a mix is placed, and the three ways of choosing blocks.
class Allocator {
 public:
  explicit Allocator(const Topology& topology)
      : topology_(topology),
        locality_(read_locality(topology)),
        used_(topology.gpu_count(), false),
        domain_free_(topology.domain_count(), 0),
        group_free_(static_cast<size_t>(locality_.leaf_groups.units), 0),
        free_(static_cast<int>(topology.gpu_count())) {
    for (size_t i = 0; i < topology.gpu_count(); ++i) {
      const GpuRank r = GpuRank::at(i);
      ++domain_free_[static_cast<size_t>(topology.domain_of_rank(r))];
      ++group_free_[static_cast<size_t>(group_of_rank(r))];
    }
  }

  int free_gpus() const { return free_; }
  int free_domains() const {
    int n = 0;
    for (size_t d = 0; d < domain_free_.size(); ++d)
      n += domain_free_[d] == static_cast<int>(topology_.domain_ranks(static_cast<int>(d)).size());
    return n;
  }
  int leaf_groups() const { return locality_.leaf_groups.units; }

  // Every aligned block of b GPUs, domain by domain, in topology order.
  std::vector<Block> blocks(int b) const {
    std::vector<Block> out;
    for (size_t d = 0; d < topology_.domain_count(); ++d) {
      const size_t n = topology_.domain_ranks(static_cast<int>(d)).size();
      for (size_t first = 0; first + static_cast<size_t>(b) <= n; first += static_cast<size_t>(b))
        out.push_back({static_cast<int>(d), static_cast<uint32_t>(first)});
    }
    return out;
  }

  bool is_free(const Block& block, int b) const {
    const std::vector<GpuRank>& ranks = topology_.domain_ranks(block.domain);
    for (int i = 0; i < b; ++i) {
      if (used_[ranks[block.first + static_cast<uint32_t>(i)].index()]) return false;
    }
    return true;
  }

  int free_blocks(int b) const {
    int n = 0;
    for (const Block& block : blocks(b))
      n += is_free(block, b) ? 1 : 0;
    return n;
  }

  Outcome place(const JobRequest& job, PlacementPolicy policy, JobAllocation& out) {
    const int b = job.block_gpus;
    const int needed = job.gpus / b;
    const std::vector<Block> all = blocks(b);
    std::vector<bool> free(all.size());
    int free_count = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      free[i] = is_free(all[i], b);
      free_count += free[i] ? 1 : 0;
    }
    const int total = static_cast<int>(topology_.gpu_count());
    if (free_ < job.gpus) {
      out.reason = job.gpus > total
                       ? fmt::format("Job \"{}\" needs {} GPUs but the cluster has only {}.",
                                     job.name, job.gpus, total)
                       : fmt::format(
                             "Job \"{}\" needs {} GPUs but only {} of the cluster's {} "
                             "GPUs are free.",
                             job.name, job.gpus, free_, total);
      return Outcome::capacity;
    }
    if (free_count < needed) {
      out.reason = fmt::format(
          "Job \"{}\" needs {} GPUs as {} of {} GPUs inside one scale-up domain; {} GPUs are "
          "free but they form only {}.",
          job.name, job.gpus, blocks_phrase(needed), b, free_, blocks_phrase(free_count));
      return Outcome::fragmentation;
    }
    switch (policy) {
      case PlacementPolicy::packed:
        take_first(all, free, needed, b, out, [](size_t) { return true; });
        break;
      case PlacementPolicy::spread:
        take_spread(all, free, needed, b, out);
        break;
      case PlacementPolicy::topology_aware:
        take_topology_aware(all, free, needed, b, out);
        break;
    }
    count_touched(out);
    return Outcome::placed;
  }

 private:
  int server_of_rank(GpuRank r) const { return topology_.node(topology_.gpu(r)).server; }
  int group_of_rank(GpuRank r) const {
    return locality_.leaf_groups.unit_of_server[static_cast<size_t>(server_of_rank(r))];
  }
  GpuRank rank_in(const Block& block, int i) const {
    return topology_.domain_ranks(block.domain)[block.first + static_cast<uint32_t>(i)];
  }

  // Marks the block used and appends its ranks, in topology order, to the job.
  void take(const Block& block, int b, JobAllocation& out) {
    for (int i = 0; i < b; ++i) {
      const GpuRank r = rank_in(block, i);
      used_[r.index()] = true;
      --domain_free_[static_cast<size_t>(block.domain)];
      --group_free_[static_cast<size_t>(group_of_rank(r))];
      out.gpus.push_back(r);
    }
    free_ -= b;
  }

  // The lowest `needed` free blocks that `eligible` accepts.
  template <class Eligible>
  void take_first(const std::vector<Block>& all, const std::vector<bool>& free, int needed, int b,
                  JobAllocation& out, Eligible eligible) {
    for (size_t i = 0; i < all.size() && needed > 0; ++i) {
      if (!free[i] || !eligible(i)) continue;
      take(all[i], b, out);
      --needed;
    }
  }

  // A naive load balancer: each block goes to the leaf group with the most free GPUs, then to
  // that group's domain with the most free GPUs (ties to the lowest index). A block counts under
  // the leaf group of its first GPU.
  void take_spread(const std::vector<Block>& all, std::vector<bool>& free, int needed, int b,
                   JobAllocation& out) {
    const size_t groups = group_free_.size();
    std::vector<std::vector<size_t>> homed(groups);  // free blocks of each group, in order
    for (size_t i = 0; i < all.size(); ++i) {
      if (free[i]) homed[static_cast<size_t>(group_of_rank(rank_in(all[i], 0)))].push_back(i);
    }
    std::vector<int> homed_free(groups);
    std::set<std::pair<int, size_t>> order;  // (-free GPUs, group) of groups with free blocks
    for (size_t g = 0; g < groups; ++g) {
      homed_free[g] = static_cast<int>(homed[g].size());
      if (homed_free[g] > 0) order.insert({-group_free_[g], g});
    }
    for (; needed > 0; --needed) {
      const size_t g = order.begin()->second;
      size_t best = SIZE_MAX;
      for (size_t i : homed[g]) {
        if (!free[i]) continue;
        const auto d = static_cast<size_t>(all[i].domain);
        if (best == SIZE_MAX ||
            domain_free_[d] > domain_free_[static_cast<size_t>(all[best].domain)])
          best = i;
      }
      std::set<size_t> touched;
      for (int k = 0; k < b; ++k)
        touched.insert(static_cast<size_t>(group_of_rank(rank_in(all[best], k))));
      for (size_t t : touched)
        order.erase({-group_free_[t], t});
      take(all[best], b, out);
      free[best] = false;
      --homed_free[g];
      for (size_t t : touched) {
        if (homed_free[t] > 0) order.insert({-group_free_[t], t});
      }
    }
  }

  // The smallest locality unit (domain, leaf group, pod levels, cluster) that holds enough free
  // blocks, best fit among the units of that level: the one with the fewest free blocks that
  // still fits (ties to the lowest index). Inside it, the lowest free blocks.
  void take_topology_aware(const std::vector<Block>& all, const std::vector<bool>& free, int needed,
                           int b, JobAllocation& out) {
    std::vector<int> unit(all.size());
    const auto try_level = [&](int units) {
      std::vector<int> count(static_cast<size_t>(units), 0);
      for (size_t i = 0; i < all.size(); ++i) {
        if (free[i] && unit[i] >= 0) ++count[static_cast<size_t>(unit[i])];
      }
      int best = -1;
      for (int u = 0; u < units; ++u) {
        const int c = count[static_cast<size_t>(u)];
        if (c >= needed && (best < 0 || c < count[static_cast<size_t>(best)])) best = u;
      }
      if (best < 0) return false;
      take_first(all, free, needed, b, out, [&](size_t i) { return unit[i] == best; });
      return true;
    };
    for (size_t i = 0; i < all.size(); ++i)
      unit[i] = all[i].domain;
    if (try_level(static_cast<int>(topology_.domain_count()))) return;
    std::vector<const Partition*> levels{&locality_.leaf_groups};
    for (const Partition& p : locality_.pods)
      levels.push_back(&p);
    for (const Partition* p : levels) {
      // A block belongs to a unit when all its servers do (an NVL72 rack may straddle two).
      for (size_t i = 0; i < all.size(); ++i) {
        const auto unit_of = [&](int k) {
          return p->unit_of_server[static_cast<size_t>(server_of_rank(rank_in(all[i], k)))];
        };
        unit[i] = unit_of(0);
        for (int k = 1; k < b && unit[i] >= 0; ++k) {
          if (unit_of(k) != unit[i]) unit[i] = -1;
        }
      }
      if (try_level(p->units)) return;
    }
    take_first(all, free, needed, b, out, [](size_t) { return true; });
  }

  void count_touched(JobAllocation& out) const {
    std::set<int> servers, domains, groups;
    for (GpuRank r : out.gpus) {
      servers.insert(server_of_rank(r));
      domains.insert(topology_.domain_of_rank(r));
      groups.insert(group_of_rank(r));
    }
    out.servers = static_cast<int>(servers.size());
    out.domains = static_cast<int>(domains.size());
    out.leaf_groups = static_cast<int>(groups.size());
  }

  const Topology& topology_;
  Locality locality_;
  std::vector<bool> used_;  // by topology rank
  std::vector<int> domain_free_, group_free_;
  int free_ = 0;
};

}  // namespace

int largest_domain(const Topology& t) {
  size_t n = 0;
  for (size_t d = 0; d < t.domain_count(); ++d)
    n = std::max(n, t.domain_ranks(static_cast<int>(d)).size());
  return static_cast<int>(n);
}

std::string_view to_string(PlacementPolicy p) {
  return kPolicyNames[static_cast<size_t>(p)];
}

bool parse_placement_policy(std::string_view text, PlacementPolicy& out) {
  for (size_t i = 0; i < kPolicyNames.size(); ++i) {
    if (kPolicyNames[i] == text) {
      out = static_cast<PlacementPolicy>(i);
      return true;
    }
  }
  return false;
}

std::string placement_policy_names() {
  std::string out;
  for (std::string_view n : kPolicyNames)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

void check_job_request(const topologies::Topology& topology, const JobRequest& job) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(fmt::format("job \"{}\": {}", job.name, what));
  };
  if (job.gpus <= 0) fail(fmt::format("gpus must be positive (got {})", job.gpus));
  if (job.block_gpus <= 0)
    fail(fmt::format("block_gpus must be positive (got {})", job.block_gpus));
  if (job.gpus % job.block_gpus != 0) {
    fail(fmt::format("block_gpus {} does not divide its {} GPUs", job.block_gpus, job.gpus));
  }
  const int domain = largest_domain(topology);
  if (job.block_gpus > domain) {
    fail(fmt::format("block_gpus {} is larger than a scale-up domain of this cluster ({} GPUs)",
                     job.block_gpus, domain));
  }
  if (domain % job.block_gpus != 0) {
    fail(
        fmt::format("block_gpus {} does not divide the scale-up domain size {}, so its blocks "
                    "cannot be aligned inside a domain",
                    job.block_gpus, domain));
  }
}

PlacementResult place_jobs(const topologies::Topology& topology, std::span<const JobRequest> jobs,
                           PlacementPolicy policy) {
  for (const JobRequest& job : jobs)
    check_job_request(topology, job);
  PlacementResult result;
  result.policy = policy;
  result.total_gpus = static_cast<int>(topology.gpu_count());
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first keeps small jobs from breaking up the units big ones need.
  if (policy == PlacementPolicy::topology_aware) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return jobs[a].gpus > jobs[b].gpus; });
  }
  Allocator allocator(topology);
  result.jobs.resize(jobs.size());
  for (size_t i : order) {
    JobAllocation& out = result.jobs[i];
    out.name = jobs[i].name;
    out.requested_gpus = jobs[i].gpus;
    out.block_gpus = jobs[i].block_gpus;
    switch (allocator.place(jobs[i], policy, out)) {
      case Outcome::placed:
        result.allocated_gpus += jobs[i].gpus;
        break;
      case Outcome::capacity:
        ++result.unplaced_for_capacity;
        break;
      case Outcome::fragmentation:
        ++result.unplaced_for_fragmentation;
        break;
    }
  }
  result.idle_gpus = allocator.free_gpus();
  result.leaf_groups = allocator.leaf_groups();
  result.free_domains = allocator.free_domains();
  if (!jobs.empty()) {
    int smallest = jobs.front().block_gpus;
    for (const JobRequest& job : jobs)
      smallest = std::min(smallest, job.block_gpus);
    result.stranded_gpus = result.idle_gpus - allocator.free_blocks(smallest) * smallest;
  }
  return result;
}

nlohmann::json placement_to_json(const PlacementResult& result) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobAllocation& job : result.jobs) {
    nlohmann::json j = {{"name", job.name},
                        {"gpus", job.requested_gpus},
                        {"block_gpus", job.block_gpus},
                        {"placed", job.placed()},
                        {"gpu_ranks", sim::id_values(job.gpus)},
                        {"servers", job.servers},
                        {"domains", job.domains},
                        {"leaf_groups", job.leaf_groups}};
    if (!job.placed()) j["reason"] = job.reason;
    jobs.push_back(std::move(j));
  }
  return {{"policy", to_string(result.policy)},
          {"total_gpus", result.total_gpus},
          {"allocated_gpus", result.allocated_gpus},
          {"idle_gpus", result.idle_gpus},
          {"stranded_gpus", result.stranded_gpus},
          {"leaf_groups", result.leaf_groups},
          {"free_domains", result.free_domains},
          {"unplaced_for_capacity", result.unplaced_for_capacity},
          {"unplaced_for_fragmentation", result.unplaced_for_fragmentation},
          {"jobs", std::move(jobs)}};
}

}  // namespace fabricsim::models
