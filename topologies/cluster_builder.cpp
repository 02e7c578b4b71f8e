#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "topologies/cluster_spec.hpp"
#include "topologies/spec_error.hpp"

namespace fabricsim::topologies {
namespace {

void require_positive(sim::Bandwidth bw, const std::string& field) {
  if (!(bw.bytes_per_s() > 0)) throw SpecError(field, "expected a positive bandwidth, got 0");
}

// Ports, chips and NICs far above any shipping part (docs/formats.md): the builder makes nodes
// and links per port, so a typo must not ask for a switch of a billion ports.
constexpr int kMaxPorts = 4096;
constexpr int kMaxNicsPerServer = 64;

void require_at_most(int value, int limit, const std::string& field) {
  if (value > limit)
    throw SpecError(field, fmt::format("expected at most {}, got {}", limit, value));
}

void require_sizes_bounded(const ClusterSpec& spec) {
  require_at_most(spec.pcie.switches_per_server, kMaxNicsPerServer, "pcie/switches_per_server");
  if (spec.nvlink) {
    const NvlinkDomainSpec& nv = *spec.nvlink;
    require_at_most(nv.gpus_per_domain, kMaxGpus, "nvlink/gpus_per_domain");
    require_at_most(nv.gpus_per_board, kMaxPorts, "nvlink/gpus_per_board");
    require_at_most(nv.chip_ports, kMaxPorts, "nvlink/chip_ports");
    require_at_most(nv.l1_up_ports, kMaxPorts, "nvlink/l1_up_ports");
    require_at_most(nv.l2_chip_ports, kMaxPorts, "nvlink/l2_chip_ports");
  }
  if (spec.scale_out) {
    const ScaleOutSpec& so = *spec.scale_out;
    require_at_most(so.nics_per_server, kMaxNicsPerServer, "scale_out/nics_per_server");
    require_at_most(so.leaf_down_ports, kMaxPorts, "scale_out/leaf_down_ports");
    require_at_most(so.leaf_up_ports, kMaxPorts, "scale_out/leaf_up_ports");
    require_at_most(so.radix, kMaxPorts, "scale_out/radix");
    for (size_t i = 0; i < so.upper_tiers.size(); ++i) {
      require_at_most(so.upper_tiers[i].ports, kMaxPorts,
                      fmt::format("scale_out/tiers/{}/ports", i + 1));
    }
  }
}

void validate(const ClusterSpec& spec) {
  if (spec.gpus <= 0) throw SpecError("gpus", "expected a positive GPU count");
  if (spec.gpus > kMaxGpus) {
    throw SpecError("gpus", fmt::format("{} GPUs is more than the {} a cluster may have (the "
                                        "graph alone would need about {:.0f} GiB)",
                                        spec.gpus, kMaxGpus, spec.gpus * 3.0 / (1 << 20)));
  }
  if (spec.gpus_per_server <= 0) {
    throw SpecError("gpus_per_server", "expected a positive number of GPUs per server");
  }
  require_sizes_bounded(spec);
  if (spec.gpus > spec.gpus_per_server && spec.gpus % spec.gpus_per_server != 0) {
    throw SpecError("gpus", fmt::format("{} GPUs is not a multiple of the {} GPUs per server of {}",
                                        spec.gpus, spec.gpus_per_server, spec.system));
  }
  require_positive(spec.pcie.gpu_link, "pcie/gpu_link");
  require_positive(spec.pcie.host_link, "pcie/host_link");
  if (spec.pcie.switches_per_server <= 0) {
    throw SpecError("pcie/switches_per_server", "expected at least one PCIe switch per server");
  }
  if (spec.nvlink) {
    const NvlinkDomainSpec& nv = *spec.nvlink;
    require_positive(nv.link_bandwidth, "nvlink/link_bandwidth");
    if (nv.gpus_per_board <= 0 || nv.gpus_per_domain <= 0) {
      throw SpecError("nvlink/gpus_per_domain", "expected positive domain and board sizes");
    }
    if (nv.gpus_per_board % spec.gpus_per_server != 0 &&
        spec.gpus_per_server % nv.gpus_per_board != 0) {
      throw SpecError("nvlink/gpus_per_board",
                      "an NVSwitch board must hold whole servers (or a server whole boards)");
    }
    if (nv.gpus_per_domain % nv.gpus_per_board != 0) {
      throw SpecError("nvlink/gpus_per_domain",
                      fmt::format("the domain size {} is not a multiple of the board size {}",
                                  nv.gpus_per_domain, nv.gpus_per_board));
    }
    if (nv.gpus_per_domain % spec.gpus_per_server != 0) {
      throw SpecError("nvlink/gpus_per_domain",
                      fmt::format("the domain size {} is not a multiple of the {} GPUs per server",
                                  nv.gpus_per_domain, spec.gpus_per_server));
    }
    if (nv.lanes_per_chip.empty()) {
      throw SpecError("nvlink/lanes_per_chip", "expected at least one NVSwitch chip per board");
    }
    int lanes = 0;
    for (int l : nv.lanes_per_chip) {
      if (l <= 0) throw SpecError("nvlink/lanes_per_chip", "expected positive lane counts");
      lanes += l;
    }
    if (lanes != nv.links_per_gpu) {
      throw SpecError("nvlink/lanes_per_chip",
                      fmt::format("the lanes per chip add up to {}, but a GPU has {} NVLinks",
                                  lanes, nv.links_per_gpu));
    }
    const int max_lanes = *std::max_element(nv.lanes_per_chip.begin(), nv.lanes_per_chip.end());
    const int needed = nv.gpus_per_board * max_lanes + nv.l1_up_ports;
    if (needed > nv.chip_ports) {
      throw SpecError(
          "nvlink/chip_ports",
          fmt::format("the NVSwitch radix is too small: {} GPUs x {} lanes + {} uplinks "
                      "need {} ports, a chip has {}",
                      nv.gpus_per_board, max_lanes, nv.l1_up_ports, needed, nv.chip_ports));
    }
    if (nv.gpus_per_domain > nv.gpus_per_board && (nv.l1_up_ports <= 0 || nv.l2_chip_ports <= 0)) {
      throw SpecError("nvlink/l1_up_ports",
                      "a domain larger than one board needs first-tier uplinks and second-tier "
                      "chips");
    }
  }
  if (spec.scale_out) {
    const ScaleOutSpec& so = *spec.scale_out;
    require_positive(so.nic_bandwidth, "scale_out/nic_bandwidth");
    require_positive(so.leaf_up_bandwidth, "scale_out/leaf_up_bandwidth");
    require_positive(spec.pcie.nic_link, "pcie/nic_link");
    if (so.nics_per_server <= 0) {
      throw SpecError("scale_out/nics_per_server", "expected at least one NIC per server");
    }
    if (so.leaf_down_ports <= 0) throw SpecError("scale_out/leaf_down_ports", "expected > 0");
    if (so.leaf_up_ports < 0) throw SpecError("scale_out/leaf_up_ports", "expected >= 0");
    if (so.leaf_down_ports + so.leaf_up_ports > so.radix) {
      throw SpecError("scale_out/radix",
                      fmt::format("the leaf radix is too small: {} down + {} up ports > radix {}",
                                  so.leaf_down_ports, so.leaf_up_ports, so.radix));
    }
    if (!so.rail_optimized && so.leaf_down_ports < so.nics_per_server) {
      throw SpecError("scale_out/leaf_down_ports",
                      fmt::format("a leaf with {} down ports cannot take the {} NICs of a server",
                                  so.leaf_down_ports, so.nics_per_server));
    }
    if (so.upper_tiers.size() > kMaxUpperTiers) {
      throw SpecError("scale_out/tiers",
                      fmt::format("expected at most {} tiers above the leaves, got {}",
                                  kMaxUpperTiers, so.upper_tiers.size()));
    }
    if (so.max_tiers > static_cast<int>(kMaxUpperTiers) + 1) {
      throw SpecError("scale_out/max_tiers",
                      fmt::format("expected at most {} tiers", kMaxUpperTiers + 1));
    }
    for (size_t i = 0; i < so.upper_tiers.size(); ++i) {
      const ClosTier& t = so.upper_tiers[i];
      const std::string field = fmt::format("scale_out/tiers/{}", i + 1);
      if (t.ports <= 0) throw SpecError(field + "/ports", "expected a positive switch radix");
      if (t.up_ports < 0 || t.up_ports >= t.ports) {
        throw SpecError(field + "/up_ports", "expected between 0 and ports - 1 uplinks");
      }
      if (t.up_ports > 0) require_positive(t.up_bandwidth, field + "/up_bandwidth");
    }
  }
}

int servers_for(const ClusterSpec& spec) {
  return (spec.gpus + spec.gpus_per_server - 1) / spec.gpus_per_server;
}

}  // namespace

std::vector<ClosTier> derive_upper_tiers(const ScaleOutSpec& spec, long long leaves) {
  if (leaves <= 1) return {};
  std::vector<ClosTier> tiers;
  const int k = spec.radix;
  const int half = k / 2;
  for (int n = 2; n <= spec.max_tiers; ++n) {
    // n - 2 middle tiers with k/2 down and k/2 up, then a top tier with all k ports down.
    tiers.assign(static_cast<size_t>(n - 1),
                 ClosTier{k, half, spec.leaf_up_bandwidth, spec.switch_latency});
    tiers.back().up_ports = 0;
    if (clos_capacity(spec.leaf_up_ports, tiers) >= leaves) return tiers;
  }
  throw SpecError("scale_out/radix",
                  fmt::format("the radix is too small: {} leaves cannot be connected with radix-{} "
                              "switches in {} tiers",
                              leaves, k, spec.max_tiers));
}

Topology build_cluster(const ClusterSpec& spec) {
  validate(spec);
  TopologyInfo info;
  info.system = spec.system;
  info.gpus_per_server = spec.gpus_per_server;
  info.notes = spec.notes;
  const int servers = servers_for(spec);
  const int servers_per_domain =
      spec.nvlink ? spec.nvlink->gpus_per_domain / spec.gpus_per_server : 1;
  info.gpus_per_domain = spec.nvlink ? spec.nvlink->gpus_per_domain : spec.gpus_per_server;
  info.nvls = spec.nvlink && spec.nvlink->nvls;
  TopologyBuilder b(info);

  const PcieSpec& pcie = spec.pcie;
  const int nics = spec.scale_out ? spec.scale_out->nics_per_server : 0;
  std::vector<std::vector<NodeId>> server_gpus(static_cast<size_t>(servers));
  std::vector<std::vector<NodeId>> server_nics(static_cast<size_t>(servers));
  int pcie_switch_id = 0;
  for (int s = 0; s < servers; ++s) {
    const int domain = s / servers_per_domain;
    const int gpus_here = std::min(spec.gpus_per_server, spec.gpus - s * spec.gpus_per_server);
    Node host;
    host.kind = NodeKind::host;
    host.tier = 2;
    host.server = s;
    host.domain = domain;
    host.pods = {-1, s};
    host.name = fmt::format("s{}-host", s);
    const NodeId host_id = b.add_node(std::move(host));
    std::vector<NodeId> switches;
    for (int k = 0; k < pcie.switches_per_server; ++k) {
      Node sw;
      sw.kind = NodeKind::pcie_switch;
      sw.tier = 1;
      sw.server = s;
      sw.domain = domain;
      sw.local = k;
      sw.pods = {pcie_switch_id++, s};
      sw.name = fmt::format("s{}-pcie{}", s, k);
      switches.push_back(b.add_node(std::move(sw)));
      b.add_duplex(switches.back(), host_id, LinkKind::pcie, pcie.host_link, pcie.latency);
    }
    for (int i = 0; i < gpus_here; ++i) {
      Node gpu;
      gpu.kind = NodeKind::gpu;
      gpu.server = s;
      gpu.domain = domain;
      gpu.local = i;
      gpu.name = fmt::format("gpu{}", s * spec.gpus_per_server + i);
      const NodeId id = b.add_node(std::move(gpu));
      server_gpus[s].push_back(id);
      const int k = i * pcie.switches_per_server / spec.gpus_per_server;
      b.add_duplex(id, switches[k], LinkKind::pcie, pcie.gpu_link, pcie.latency);
    }
    for (int j = 0; j < nics; ++j) {
      Node nic;
      nic.kind = NodeKind::nic;
      nic.server = s;
      nic.domain = domain;
      nic.local = j;
      nic.rail = j;
      nic.plane = spec.scale_out->plane_per_rail ? j : 0;
      nic.name = fmt::format("s{}-nic{}", s, j);
      const NodeId id = b.add_node(std::move(nic));
      server_nics[s].push_back(id);
      const int k = j * pcie.switches_per_server / nics;
      b.add_duplex(id, switches[k], LinkKind::pcie, pcie.nic_link, pcie.latency);
    }
  }

  // Scale-up domains.
  int pod_base = 0;
  if (spec.nvlink) {
    const NvlinkDomainSpec& nv = *spec.nvlink;
    const int domains = (servers + servers_per_domain - 1) / servers_per_domain;
    const int boards_per_domain = nv.gpus_per_domain / nv.gpus_per_board;
    for (int d = 0; d < domains; ++d) {
      // GPUs of this domain in rank order.
      std::vector<NodeId> gpus;
      for (int s = d * servers_per_domain; s < std::min(servers, (d + 1) * servers_per_domain);
           ++s) {
        gpus.insert(gpus.end(), server_gpus[s].begin(), server_gpus[s].end());
      }
      std::vector<std::vector<NodeId>> boards;
      for (int bd = 0; bd < boards_per_domain; ++bd) {
        const size_t first = static_cast<size_t>(bd) * static_cast<size_t>(nv.gpus_per_board);
        if (first >= gpus.size()) break;
        std::vector<NodeId> chips;
        for (size_t j = 0; j < nv.lanes_per_chip.size(); ++j) {
          Node chip;
          chip.kind = NodeKind::nvswitch;
          chip.tier = 1;
          chip.domain = d;
          chip.local = static_cast<int>(j);
          chip.plane = static_cast<int>(j);
          chip.name = fmt::format("d{}-b{}-nvs{}", d, bd, j);
          chips.push_back(b.add_node(std::move(chip)));
        }
        const size_t last = std::min(gpus.size(), first + static_cast<size_t>(nv.gpus_per_board));
        for (size_t g = first; g < last; ++g) {
          for (size_t j = 0; j < chips.size(); ++j) {
            const int lanes = nv.lanes_per_chip[j];
            b.add_duplex(gpus[g], chips[j], LinkKind::nvlink, nv.link_bandwidth * lanes, nv.latency,
                         static_cast<uint32_t>(lanes));
          }
        }
        boards.push_back(std::move(chips));
      }
      ClosInput in;
      in.level1_pods = boards;
      in.level1_up_ports = nv.l1_up_ports;
      in.level1_up_bandwidth = nv.link_bandwidth;
      in.level1_up_latency = nv.latency;
      if (boards_per_domain > 1) in.upper = {ClosTier{nv.l2_chip_ports, 0, {}, {}}};
      in.switch_kind = NodeKind::nvswitch;
      in.link_kind = LinkKind::nvlink;
      in.name_prefix = fmt::format("d{}-", d);
      in.domain = d;
      in.pod_id_base = pod_base;
      try {
        pod_base = build_clos(b, in).next_pod_id;
      } catch (const SpecError& e) {
        throw SpecError("nvlink/l2_chip_ports", e.what());
      }
    }
  }

  // Scale-out fabric.
  if (!spec.scale_out) {
    const int domains = (servers + servers_per_domain - 1) / servers_per_domain;
    if (domains > 1) {
      throw SpecError("scale_out",
                      fmt::format("{} scale-up domains need a scale-out fabric", domains));
    }
  } else {
    const ScaleOutSpec& so = *spec.scale_out;
    const int rails = so.rail_optimized ? nics : 1;
    const int servers_per_leaf = so.rail_optimized ? so.leaf_down_ports : so.leaf_down_ports / nics;
    const int groups = (servers + servers_per_leaf - 1) / servers_per_leaf;
    const int planes = so.plane_per_rail ? nics : 1;
    int max_levels = 1;
    for (int p = 0; p < planes; ++p) {
      std::vector<std::vector<NodeId>> leaves;
      std::vector<NodeId> leaf_of;  // (group, rail) -> leaf within this plane
      const int plane_rails = so.plane_per_rail ? 1 : rails;
      for (int g = 0; g < groups; ++g) {
        for (int r = 0; r < plane_rails; ++r) {
          Node leaf;
          leaf.kind = NodeKind::switch_;
          leaf.tier = 1;
          leaf.rail = so.rail_optimized ? (so.plane_per_rail ? p : r) : -1;
          leaf.plane = p;
          leaf.name = planes > 1 ? fmt::format("p{}-leaf{}", p, g * plane_rails + r)
                                 : fmt::format("leaf{}", g * plane_rails + r);
          const NodeId id = b.add_node(std::move(leaf));
          leaves.push_back({id});
          leaf_of.push_back(id);
        }
      }
      for (int s = 0; s < servers; ++s) {
        const int g = s / servers_per_leaf;
        for (int j = 0; j < nics; ++j) {
          if (so.plane_per_rail && j != p) continue;
          const int r = so.rail_optimized && !so.plane_per_rail ? j : 0;
          const NodeId leaf = leaf_of[static_cast<size_t>(g * plane_rails + r)];
          b.add_duplex(server_nics[s][j], leaf, LinkKind::network, so.nic_bandwidth,
                       so.nic_latency);
        }
      }
      ClosInput in;
      in.level1_pods = leaves;
      in.level1_up_ports = so.leaf_up_ports;
      in.level1_up_bandwidth = so.leaf_up_bandwidth;
      in.level1_up_latency = so.switch_latency;
      in.upper = so.upper_tiers.empty()
                     ? derive_upper_tiers(so, static_cast<long long>(leaves.size()))
                     : so.upper_tiers;
      if (!in.upper.empty() && so.leaf_up_ports == 0) {
        throw SpecError("scale_out/leaf_up_ports",
                        fmt::format("{} leaves need uplinks to be connected", leaves.size()));
      }
      in.switch_kind = NodeKind::switch_;
      in.link_kind = LinkKind::network;
      in.name_prefix = planes > 1 ? fmt::format("p{}-", p) : "";
      in.plane = p;
      in.pod_id_base = pod_base;
      const ClosResult result = build_clos(b, in);
      pod_base = result.next_pod_id;
      max_levels = std::max(max_levels, result.levels);
    }
    b.info().nics_per_server = nics;
    b.info().rails = so.rail_optimized ? nics : 0;
    b.info().planes = planes;
    b.info().scale_out_tiers = max_levels;
    b.info().collnet = so.collnet;
  }
  try {
    return std::move(b).build();
  } catch (const std::invalid_argument& e) {
    throw SpecError("", e.what());
  }
}

}  // namespace fabricsim::topologies
