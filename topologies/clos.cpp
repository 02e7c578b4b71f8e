#include "topologies/clos.hpp"

#include <fmt/format.h>

#include <map>

#include "topologies/spec_error.hpp"

namespace fabricsim::topologies {
namespace {

struct Pod {
  std::vector<NodeId> tops;    ///< plane-indexed top switches of the pod
  std::vector<NodeId> level1;  ///< every tier-1 switch inside the pod
  int id = 0;
};

void set_pod(Node& node, size_t level_index, int id) {
  if (node.pods.size() <= level_index) node.pods.resize(level_index + 1, -1);
  node.pods[level_index] = id;
}

}  // namespace

long long clos_capacity(int level1_up_ports, const std::vector<ClosTier>& upper) {
  (void)level1_up_ports;
  if (upper.empty()) return 1;
  long long capacity = upper.back().ports;
  for (size_t i = 0; i + 1 < upper.size(); ++i)
    capacity *= upper[i].ports - upper[i].up_ports;
  return capacity;
}

ClosResult build_clos(TopologyBuilder& builder, const ClosInput& in) {
  ClosResult result;
  int next_id = in.pod_id_base;
  std::vector<Pod> pods;
  pods.reserve(in.level1_pods.size());
  for (const auto& tops : in.level1_pods) {
    Pod pod{tops, tops, next_id++};
    for (NodeId s : tops)
      set_pod(builder.node(s), 0, pod.id);
    pods.push_back(std::move(pod));
  }
  if (in.upper.empty()) {
    if (pods.size() > 1) {
      throw SpecError("scale_out/tiers",
                      fmt::format("{} first-tier switch groups need at least one more tier to be "
                                  "connected",
                                  pods.size()));
    }
    result.next_pod_id = next_id;
    return result;
  }

  int up = in.level1_up_ports;
  sim::Bandwidth up_bw = in.level1_up_bandwidth;
  sim::Time up_latency = in.level1_up_latency;
  int switch_index = 0;
  for (size_t i = 0; i < in.upper.size(); ++i) {
    const ClosTier& tier = in.upper[i];
    const int tier_number = static_cast<int>(i) + 2;
    const bool top = i + 1 == in.upper.size();
    const std::string field = fmt::format("scale_out/tiers/{}", i + 1);
    if (up <= 0) {
      throw SpecError(
          fmt::format("scale_out/tiers/{}/up_ports", i),
          fmt::format("tier {} has no uplinks to tier {}", tier_number - 1, tier_number));
    }
    const int down = top ? tier.ports : tier.ports - tier.up_ports;
    if (down <= 0) {
      throw SpecError(field + "/ports",
                      fmt::format("tier {} switches have {} ports and {} uplinks: no port is left "
                                  "for the tier below",
                                  tier_number, tier.ports, tier.up_ports));
    }
    if (top && static_cast<long long>(pods.size()) > tier.ports) {
      throw SpecError(field + "/ports",
                      fmt::format("the radix is too small: {} groups below tier {} need a switch "
                                  "radix of at least {} (have {}) or another tier",
                                  pods.size(), tier_number, pods.size(), tier.ports));
    }
    const size_t chunk = top ? pods.size() : static_cast<size_t>(down);
    int created = 0;
    std::vector<Pod> next;
    for (size_t start = 0; start < pods.size(); start += chunk) {
      const size_t end = std::min(pods.size(), start + chunk);
      Pod pod;
      pod.id = next_id++;
      const size_t planes = pods[start].tops.size();
      for (size_t j = 0; j < planes; ++j) {
        const size_t children = end - start;
        const int count =
            top ? static_cast<int>((children * static_cast<size_t>(up) + tier.ports - 1) /
                                   static_cast<size_t>(tier.ports))
                : up;
        std::vector<NodeId> plane_switches;
        for (int s = 0; s < count; ++s) {
          Node node;
          node.kind = in.switch_kind;
          node.tier = static_cast<uint8_t>(tier_number);
          node.plane = in.plane >= 0 ? in.plane : static_cast<int>(j);
          node.domain = in.domain;
          node.name = fmt::format("{}t{}s{}", in.name_prefix, tier_number, switch_index++);
          const NodeId id = builder.add_node(std::move(node));
          set_pod(builder.node(id), static_cast<size_t>(tier_number - 1), pod.id);
          plane_switches.push_back(id);
          ++created;
        }
        for (size_t c = start; c < end; ++c) {
          if (pods[c].tops.size() != planes) {
            throw SpecError(field, "all groups below a tier must have the same number of planes");
          }
          const NodeId child = pods[c].tops[j];
          // Count the uplinks of this child that land on each switch of the plane.
          std::map<int, uint32_t> lanes;
          for (int k = 0; k < up; ++k) {
            const size_t port = (c - start) * static_cast<size_t>(up) + static_cast<size_t>(k);
            ++lanes[static_cast<int>(port % static_cast<size_t>(count))];
          }
          for (const auto& [target, n] : lanes) {
            builder.add_duplex(child, plane_switches[target], in.link_kind, up_bw * n, up_latency,
                               n);
          }
        }
        pod.tops.insert(pod.tops.end(), plane_switches.begin(), plane_switches.end());
      }
      for (size_t c = start; c < end; ++c) {
        for (NodeId leaf : pods[c].level1) {
          set_pod(builder.node(leaf), static_cast<size_t>(tier_number - 1), pod.id);
          pod.level1.push_back(leaf);
        }
      }
      next.push_back(std::move(pod));
    }
    result.switches_per_tier.push_back(created);
    pods = std::move(next);
    up = tier.up_ports;
    up_bw = tier.up_bandwidth;
    up_latency = tier.up_latency;
  }
  result.levels = static_cast<int>(in.upper.size()) + 1;
  result.next_pod_id = next_id;
  return result;
}

}  // namespace fabricsim::topologies
