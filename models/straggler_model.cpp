#include "models/straggler_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace fabricsim::models {
namespace {

/// SplitMix64 (Steele et al. 2014): a small, fully specified generator.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  size_t below(size_t n) { return static_cast<size_t>(uniform() * static_cast<double>(n)); }

 private:
  uint64_t state_;
};

/// `count` distinct indices of [0, n), by a partial Fisher-Yates shuffle.
std::vector<int> choose(SplitMix& rng, int n, int count) {
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (int i = 0; i < count; ++i) {
    const size_t j = static_cast<size_t>(i) + rng.below(static_cast<size_t>(n - i));
    std::swap(all[static_cast<size_t>(i)], all[j]);
  }
  all.resize(static_cast<size_t>(count));
  return all;
}

}  // namespace

std::vector<double> rank_slowdowns(const StragglerSpec& spec, int gpus, int gpus_per_node) {
  std::vector<double> out(static_cast<size_t>(gpus), 1.0);
  SplitMix rng(spec.seed);
  const int slow = static_cast<int>(std::lround(spec.fraction * gpus));
  for (const int r : choose(rng, gpus, slow)) {
    out[static_cast<size_t>(r)] *=
        spec.slowdown_min + (spec.slowdown_max - spec.slowdown_min) * rng.uniform();
  }
  const int nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
  auto slow_node = [&](int node, double f) {
    for (int g = node * gpus_per_node; g < std::min(gpus, (node + 1) * gpus_per_node); ++g)
      out[static_cast<size_t>(g)] *= f;
  };
  for (const int n : choose(rng, nodes, static_cast<int>(std::lround(spec.node_fraction * nodes))))
    slow_node(n, spec.node_slowdown);
  for (const auto& [node, f] : spec.nodes)
    slow_node(node, f);
  for (const auto& [rank, f] : spec.ranks)
    out[static_cast<size_t>(rank)] *= f;
  return out;
}

std::vector<sim::LinkId> nic_links(const topologies::Topology& t, int rank) {
  const topologies::NodeId nic = t.gpu_nic(topologies::GpuRank::at(static_cast<size_t>(rank)));
  if (nic == topologies::kNoNode) {
    throw std::invalid_argument("GPU " + std::to_string(rank) + " has no NIC");
  }
  std::vector<sim::LinkId> out;
  for (const topologies::LinkId l : t.out_links(nic)) {
    const topologies::Link& link = t.link(l);
    if (link.kind != topologies::LinkKind::network) continue;
    out.push_back(t.resource_of(l));
    const topologies::LinkId back = t.link_between(link.dst, nic);
    if (back.valid()) out.push_back(t.resource_of(back));
  }
  return out;
}

std::vector<LinkChange> link_changes_of(const topologies::Topology& t,
                                        const std::vector<StragglerSpec::LinkWindow>& windows) {
  std::vector<LinkChange> out;
  for (const StragglerSpec::LinkWindow& w : windows) {
    for (const sim::LinkId l : nic_links(t, w.rank)) {
      out.push_back({w.from, l, w.factor});
      if (w.until < sim::Time::max()) out.push_back({w.until, l, 1.0});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const LinkChange& a, const LinkChange& b) {
    if (a.at != b.at) return a.at < b.at;
    return a.factor == 1.0 && b.factor != 1.0;
  });
  return out;
}

topologies::Topology with_slow_nic_links(const topologies::Topology& t,
                                         const std::map<int, double>& by_rank) {
  sim::IdVector<sim::LinkId, double> factor(t.link_count(), 1.0);
  for (const auto& [rank, f] : by_rank) {
    for (const sim::LinkId l : nic_links(t, rank))
      factor[l] *= f;  // network links are their own resources
  }
  topologies::TopologyBuilder b(t.info());
  for (const topologies::Node& n : t.nodes())
    b.add_node(n);
  for (size_t i = 0; i < t.link_count(); ++i) {
    const topologies::Link& l = t.link(topologies::LinkId::at(i));
    b.add_directed(l.src, l.dst, l.kind,
                   sim::Bandwidth::bytes_per_s(l.bandwidth.bytes_per_s() / factor[i]), l.latency,
                   l.lanes);
  }
  return std::move(b).build();
}

}  // namespace fabricsim::models
