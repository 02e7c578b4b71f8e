#pragma once
// A parametric description of a GPU cluster: servers (GPUs, NICs, PCIe), the scale-up domain
// (NVSwitch chips, one or two tiers, or a PCIe tree for servers without NVSwitch) and the
// scale-out fabric (rail-optimized or ToR Clos of any number of tiers, optionally one independent
// Clos per rail/plane). System presets are ClusterSpecs; build_cluster turns one into a Topology.

#include <optional>
#include <string>
#include <vector>

#include "topologies/clos.hpp"
#include "topologies/graph.hpp"

namespace fabricsim::topologies {

struct NvlinkDomainSpec {
  int gpus_per_domain = 8;        ///< GPUs that share one NVLink domain
  int gpus_per_board = 8;         ///< GPUs attached to the same first-tier chips
  int links_per_gpu = 18;         ///< NVLink links of one GPU
  sim::Bandwidth link_bandwidth;  ///< one link, one direction
  sim::Time latency;
  /// How a GPU's links split over its board's chips; size = chips per board, sum = links_per_gpu.
  std::vector<int> lanes_per_chip;
  int chip_ports = 64;  ///< NVLink ports of one switch chip
  /// Two-tier domains (domain larger than a board): uplinks of each first-tier chip and the radix
  /// of the second-tier chips. Zero for single-tier domains.
  int l1_up_ports = 0;
  int l2_chip_ports = 0;
  bool nvls = false;  ///< NVLink SHARP in the switch chips
};

struct PcieSpec {
  int switches_per_server = 4;
  sim::Bandwidth gpu_link;   ///< GPU <-> PCIe switch, one direction
  sim::Bandwidth nic_link;   ///< NIC <-> PCIe switch
  sim::Bandwidth host_link;  ///< PCIe switch <-> host bridge
  sim::Time latency;
};

struct ScaleOutSpec {
  int nics_per_server = 8;
  sim::Bandwidth nic_bandwidth;  ///< line rate of one NIC port, one direction
  sim::Time nic_latency;         ///< NIC + cable, added on the NIC <-> leaf hop
  bool rail_optimized = true;    ///< leaf r serves NIC r of a group of servers
  bool plane_per_rail = false;   ///< each rail is its own independent Clos (multi-plane/rail-only)
  int leaf_down_ports = 32;
  int leaf_up_ports = 32;
  sim::Bandwidth leaf_up_bandwidth;  ///< per uplink port
  sim::Time switch_latency;          ///< per switch-to-switch hop
  /// Tiers above the leaves. Empty: derived from `radix` (non-blocking halves at middle tiers,
  /// the fewest tiers that connect every leaf).
  std::vector<ClosTier> upper_tiers;
  int radix = 64;
  int max_tiers = 5;
  bool collnet = false;  ///< in-network reduction (IB SHARP) available in the switches
  std::string switch_model;
};

/// Largest cluster built (docs/cli.md): twice the largest one benchmarked in docs/performance.md.
/// Measured at this size: the graph alone 0.4-0.7 GiB (about 3 KiB per GPU), an analytical step of
/// gb200-nvl72 1.2 GiB and 35 s.
inline constexpr int kMaxGpus = 262'144;
/// Most switch tiers above the leaves a fabric may have (the topology JSON holds tiers 0..16).
inline constexpr size_t kMaxUpperTiers = 8;

struct ClusterSpec {
  std::string system = "custom";
  int gpus = 8;
  int gpus_per_server = 8;
  std::optional<NvlinkDomainSpec> nvlink;  ///< absent: GPUs talk over PCIe inside a server
  PcieSpec pcie;
  std::optional<ScaleOutSpec> scale_out;  ///< absent: a single server or domain, no network
  std::vector<std::string> notes;
};

/// Builds the graph. Throws SpecError naming the offending field for impossible specs.
Topology build_cluster(const ClusterSpec& spec);

/// The upper tiers the generator would use for a fabric of `leaves` leaves.
std::vector<ClosTier> derive_upper_tiers(const ScaleOutSpec& spec, long long leaves);

}  // namespace fabricsim::topologies
