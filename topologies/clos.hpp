#pragma once
// A generic folded-Clos (fat-tree) builder over "level-1 pods". A level-1 pod is a group of
// tier-1 switches that share the same position in the tree: a single leaf for a scale-out fabric,
// or the NVSwitch chips of one board for a two-tier NVLink domain (chip j is plane j).
//
// Level t (t >= 2) groups `down_ports` level-(t-1) pods into a pod. For every plane j of the child
// pods, it adds `up_ports(t-1)` switches, and the plane-j top switch of every child connects once
// to each of them, so each switch has one link per child pod. The top tier is trimmed to the
// switches actually needed: plane j gets ceil(children x up_ports / ports) switches and each
// child's uplinks are spread round-robin over them (bundled when several land on one switch).
// This reproduces the DGX SuperPOD reference sizes (e.g. 4 SU of DGX H100: 32 leaves, 16 spines;
// 16 SU of DGX B200: 128 leaves, 128 spines, 64 cores).

#include <string>
#include <vector>

#include "topologies/graph.hpp"

namespace fabricsim::topologies {

struct ClosTier {
  int ports = 0;                ///< switch radix
  int up_ports = 0;             ///< ports toward the next tier; 0 for the top tier
  sim::Bandwidth up_bandwidth;  ///< per port, toward the next tier
  sim::Time up_latency;
};

struct ClosInput {
  /// Tier-1 switches of each level-1 pod, plane-indexed (all pods the same size).
  std::vector<std::vector<NodeId>> level1_pods;
  int level1_up_ports = 0;  ///< uplinks of each tier-1 switch
  sim::Bandwidth level1_up_bandwidth;
  sim::Time level1_up_latency;
  /// Tiers 2..n. Empty when the tier-1 switches are the top (single-tier fabric).
  std::vector<ClosTier> upper;
  NodeKind switch_kind = NodeKind::switch_;
  LinkKind link_kind = LinkKind::network;
  std::string name_prefix;  ///< e.g. "p0-" for plane 0
  int plane = -1;
  int domain = -1;      ///< domain of the new switches (scale-up fabrics), -1 for scale-out
  int pod_id_base = 0;  ///< offset keeping pod ids unique across planes
};

struct ClosResult {
  std::vector<int> switches_per_tier;  ///< index 0 = tier 2
  int levels = 1;                      ///< number of switch tiers including tier 1
  int next_pod_id = 0;                 ///< first pod id not used
};

/// Adds the tiers above level 1 to `builder`. Sets `pods` on every switch it creates and on the
/// level-1 switches (pods[0] = level-1 pod id, pods[k] = level-(k+1) pod id). Throws SpecError
/// (see spec_error.hpp) when a tier has no port left for its children.
ClosResult build_clos(TopologyBuilder& builder, const ClosInput& input);

/// Largest number of level-1 pods a Clos with these tiers can connect.
long long clos_capacity(int level1_up_ports, const std::vector<ClosTier>& upper);

}  // namespace fabricsim::topologies
