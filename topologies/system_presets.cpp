#include "topologies/system_presets.hpp"

namespace fabricsim::topologies {
namespace {

using sim::Bandwidth;
using sim::Time;

// PCIe x16, one direction [PCIE-HPCNOTES]; Gen6 takes the lower end of 121-126 GB/s [PCIE6-PAGE].
constexpr double kPcieGen4 = 31.5;
constexpr double kPcieGen5 = 63.0;
constexpr double kPcieGen6 = 121.0;

const char* kLatencyNote =
    "Link latencies are zero: hardware.json has no NVLink, NVSwitch, NIC or switch hop latency "
    "for these parts (its gaps list); per-step software latencies come from the collective model "
    "(NCCL's constants), which is calibrated against measurements.";

PcieSpec pcie(int switches, double gpu_gbs, double nic_gbs, double host_gbs) {
  PcieSpec p;
  p.switches_per_server = switches;
  p.gpu_link = Bandwidth::gbytes_per_s(gpu_gbs);
  p.nic_link = Bandwidth::gbytes_per_s(nic_gbs);
  p.host_link = Bandwidth::gbytes_per_s(host_gbs);
  return p;
}

NvlinkDomainSpec nvswitch(int domain, int board, int links, double link_gbs, std::vector<int> lanes,
                          int chip_ports, bool nvls) {
  NvlinkDomainSpec nv;
  nv.gpus_per_domain = domain;
  nv.gpus_per_board = board;
  nv.links_per_gpu = links;
  nv.link_bandwidth = Bandwidth::gbytes_per_s(link_gbs);
  nv.lanes_per_chip = std::move(lanes);
  nv.chip_ports = chip_ports;
  nv.nvls = nvls;
  return nv;
}

ScaleOutSpec fabric(int nics, double nic_gbits, int radix, int leaf_down, int leaf_up,
                    std::string model, bool collnet) {
  ScaleOutSpec so;
  so.nics_per_server = nics;
  so.nic_bandwidth = Bandwidth::gbits_per_s(nic_gbits);
  so.leaf_up_bandwidth = Bandwidth::gbits_per_s(nic_gbits);
  so.radix = radix;
  so.leaf_down_ports = leaf_down;
  so.leaf_up_ports = leaf_up;
  so.switch_model = std::move(model);
  so.collnet = collnet;
  return so;
}

ClusterSpec base(const char* system, int gpus, int per_server) {
  ClusterSpec s;
  s.system = system;
  s.gpus = gpus;
  s.gpus_per_server = per_server;
  s.notes.emplace_back(kLatencyNote);
  return s;
}

// DGX A100: 8 GPUs, 6 NVSwitch gen2 chips (each GPU 2 of its 12 NVLink3 links per chip), 8x HDR
// 200 Gb/s ConnectX-6 (1:1 GPU:NIC) behind 4 PCIe Gen4 switches, rail-optimized Quantum HDR
// (40 ports) fabric [A100-WP-SUMMARY, NV-NVLINK-DE, STH-A100POD, IBTA-LIST].
ClusterSpec dgx_a100(const char* name, int gpus) {
  ClusterSpec s = base(name, gpus, 8);
  s.nvlink = nvswitch(8, 8, 12, 25, {2, 2, 2, 2, 2, 2}, 36, false);
  s.pcie = pcie(4, kPcieGen4, kPcieGen4, kPcieGen4);
  s.scale_out = fabric(8, 200, 40, 20, 20, "NVIDIA Quantum QM8700 (HDR, 40 ports)", true);
  s.notes.emplace_back(
      "NVSwitch gen2 port count is third-party (36, ALPHA-ONE); the SuperPOD A100 scalable-unit "
      "size is not in the reference, so each leaf takes 20 nodes (half of the 40-port radix, "
      "non-blocking).");
  return s;
}

ClusterSpec dgx_a100_80(int gpus) {
  return dgx_a100("dgx-a100-80gb", gpus);
}
ClusterSpec dgx_a100_40(int gpus) {
  return dgx_a100("dgx-a100-40gb", gpus);
}
ClusterSpec unknown_a100(int gpus) {
  ClusterSpec s = dgx_a100("unknown-a100-ib", gpus);
  s.notes.emplace_back("Interconnect not stated by the source: modelled as DGX A100 nodes.");
  return s;
}

// DGX H100/H200: 4 NVSwitch gen3 chips (64 ports; a GPU's 18 NVLink4 links split 5/4/4/5) with
// NVLink SHARP; 8x ConnectX-7 400 Gb/s; SuperPOD: rail-optimized Quantum-2 QM9700 (64 ports),
// scalable unit of 32 nodes, non-blocking [H100-RA-COMP, H100-RA-NET, HC34-NVSWITCH, QM97-UM].
ClusterSpec dgx_hopper(const char* name, int gpus) {
  ClusterSpec s = base(name, gpus, 8);
  s.nvlink = nvswitch(8, 8, 18, 25, {5, 4, 4, 5}, 64, true);
  s.pcie = pcie(4, kPcieGen5, kPcieGen5, kPcieGen5);
  s.scale_out = fabric(8, 400, 64, 32, 32, "NVIDIA Quantum-2 QM9700 (NDR, 64 ports)", true);
  s.notes.emplace_back(
      "The PCIe layout (4 switches, 2 GPUs and 2 NICs each) follows DGX A100; hardware.json does "
      "not give the DGX H100 PCIe switch count.");
  return s;
}

ClusterSpec dgx_h100(int gpus) {
  return dgx_hopper("dgx-h100", gpus);
}
ClusterSpec dgx_h200(int gpus) {
  return dgx_hopper("dgx-h200", gpus);
}
ClusterSpec unknown_h100(int gpus) {
  ClusterSpec s = dgx_hopper("unknown-h100-ib", gpus);
  s.notes.emplace_back("Interconnect not stated by the source: modelled as DGX H100 nodes.");
  return s;
}

// H800 nodes as DeepSeek ran them: NVLink limited to 400 GB/s bidirectional, 8x 400G IB, one
// NIC per plane, 8 independent 2-tier fat trees of 64-port switches (MPFT) [H800-PHILISUN,
// DSV3-ARXIV, DSV3-EEUMEE2].
ClusterSpec dgx_h800(int gpus) {
  ClusterSpec s = base("dgx-h800", gpus, 8);
  s.nvlink = nvswitch(8, 8, 8, 25, {2, 2, 2, 2}, 64, true);
  s.pcie = pcie(4, kPcieGen5, kPcieGen5, kPcieGen5);
  s.scale_out = fabric(8, 400, 64, 32, 32, "64-port 400G InfiniBand (MPFT plane)", true);
  s.scale_out->plane_per_rail = true;
  s.notes.emplace_back(
      "H800 NVLink link count is not published: 8 links x 50 GB/s bidirectional (derived from "
      "400 GB/s), spread over the 4 NVSwitch chips of an HGX board (assumption).");
  s.notes.emplace_back(
      "64-port 400G InfiniBand switches are Quantum-2 (NDR) parts, which have SHARPv3 [QM97-UM]; "
      "whether DeepSeek enables it is not stated (CollNet stays off unless asked for).");
  return s;
}

// Meta Grand Teton H100 on the Llama 3 RoCE cluster: 8 H100 (NVSwitch baseboard), 4 PCIe Gen5
// switches with 2x 400G backend NICs each; racks of 2 servers (16 GPUs) under one rack switch
// (RTSW); pods of 3,072 GPUs with full bisection to the cluster switches (CTSW); 1:7
// oversubscription from CTSW to the aggregation tier (ATSW) [META-GK, META-ROCE-ZH].
ClusterSpec meta_h100_roce(int gpus) {
  ClusterSpec s = base("meta-h100-roce", gpus, 8);
  s.nvlink = nvswitch(8, 8, 18, 25, {5, 4, 4, 5}, 64, true);
  s.pcie = pcie(4, kPcieGen5, kPcieGen5, kPcieGen5);
  ScaleOutSpec so = fabric(8, 400, 32, 16, 16, "RTSW / Arista 7800 CTSW / ATSW (RoCE)", false);
  so.rail_optimized = false;
  const Bandwidth port = Bandwidth::gbits_per_s(400);
  // 192 racks per pod; 28 uplinks per CTSW ~ 1:7 (192/28 = 6.9).
  so.upper_tiers = {ClosTier{192 + 28, 28, port, {}}, ClosTier{512, 0, {}, {}}};
  s.scale_out = so;
  s.notes.emplace_back(
      "Switch radices are not in the reference: RTSW 16 down/16 up (full bisection inside the "
      "pod), CTSW 192 down/28 up (the 1:7 of META-ROCE-ZH), ATSW trimmed to what is used.");
  return s;
}

// DGX B200: 2 NVLink5 switch chips (72 ports; 9 of a GPU's 18 links each), 8x ConnectX-7 400G,
// SuperPOD Quantum-2 with 32-node scalable units [DGXB200-UG, B200-RA-NET, B200-RA-ARCH].
ClusterSpec dgx_b200(int gpus) {
  ClusterSpec s = base("dgx-b200", gpus, 8);
  s.nvlink = nvswitch(8, 8, 18, 50, {9, 9}, 72, true);
  s.pcie = pcie(4, kPcieGen5, kPcieGen5, kPcieGen5);
  s.scale_out = fabric(8, 400, 64, 32, 32, "NVIDIA Quantum-2 QM9700 (NDR, 64 ports)", true);
  return s;
}

// DGX B300: NVLink5 (switch chips not given; taken as DGX B200's 2 x 72 ports), 8x ConnectX-8
// 800G on PCIe Gen6, SuperPOD Quantum-X800 (144 ports) with 72-node scalable units [GK-B300,
// RILLOR, B300XDR-RA-ARCH, STUDY-X800].
ClusterSpec dgx_b300(int gpus) {
  ClusterSpec s = base("dgx-b300", gpus, 8);
  s.nvlink = nvswitch(8, 8, 18, 50, {9, 9}, 72, true);
  s.pcie = pcie(4, kPcieGen6, kPcieGen6, kPcieGen6);
  s.scale_out = fabric(8, 800, 144, 72, 72, "NVIDIA Quantum-X800 Q3400 (XDR, 144 ports)", true);
  s.notes.emplace_back(
      "DGX B300 NVSwitch chip count not in the reference: DGX B200's 2 chips used.");
  return s;
}

// GB200 NVL72: 18 compute trays of 4 GPUs, 18 NVLink5 switch chips of 72 ports, one link from
// every GPU to every chip; 4 NDR 400G NICs per tray; DGX SuperPOD GB200 compute fabric on
// Quantum-2 NDR [GB200-RA-NET, GB200-RA-ABS, MLPERF-GB200, BCM-NVLINK].
ClusterSpec gb200_nvl72(int gpus) {
  ClusterSpec s = base("gb200-nvl72", gpus, 4);
  s.nvlink = nvswitch(72, 72, 18, 50, std::vector<int>(18, 1), 72, true);
  s.pcie = pcie(2, kPcieGen5, kPcieGen5, kPcieGen5);
  s.scale_out = fabric(4, 400, 64, 32, 32, "NVIDIA Quantum-2 QM9700 (NDR, 64 ports)", true);
  s.notes.emplace_back(
      "The GB200 SuperPOD rail design and leaf/spine counts are not in the reference: the 4 NICs "
      "of a tray are taken as 4 rails of a non-blocking rail-optimized fat tree, 32 trays per "
      "leaf. GPU-to-NIC is modelled as PCIe Gen5 x16 behind the tray's 2 Grace CPUs.");
  return s;
}

// GB300 NVL72: same rack and NVLink5 switch trays as GB200; 72 ConnectX-8 800G (one per GPU) on
// Quantum-X800 [GK-B300, VERDA-GB300, VENDORDEEP-GB300].
ClusterSpec gb300_nvl72(int gpus) {
  ClusterSpec s = base("gb300-nvl72", gpus, 4);
  s.nvlink = nvswitch(72, 72, 18, 50, std::vector<int>(18, 1), 72, true);
  s.pcie = pcie(2, kPcieGen6, kPcieGen6, kPcieGen6);
  s.scale_out = fabric(4, 800, 144, 72, 72, "NVIDIA Quantum-X800 Q3400 (XDR, 144 ports)", true);
  s.notes.emplace_back("Rail layout as gb200-nvl72 (assumption), 72 trays per leaf.");
  return s;
}

// Vera Rubin NVL72 (CES 2026 naming, 72 GPU packages; NVL144 in the GTC 2025 naming, which
// counted dies): NVLink6 3.6 TB/s bidirectional per GPU, ConnectX-9 800G [VR-CES-RELAY,
// RUBIN-RA-ABS]. ANNOUNCED.
ClusterSpec vr_nvl72(int gpus) {
  ClusterSpec s = base("vr-nvl72", gpus, 4);
  s.nvlink = nvswitch(72, 72, 18, 100, std::vector<int>(18, 1), 72, true);
  s.pcie = pcie(2, kPcieGen6, kPcieGen6, kPcieGen6);
  s.scale_out = fabric(4, 800, 144, 72, 72, "Quantum-X800 class (XDR, 144 ports)", true);
  s.notes.emplace_back(
      "ANNOUNCED FIGURES. NVLink6 switch chips and link counts are not published: modelled as "
      "the NVL72 layout (18 chips, one link per GPU each) at 200 GB/s bidirectional per link so "
      "that a GPU has 3.6 TB/s; SHARP in the NVLink6 switch is assumed.");
  return s;
}

// A 4-GPU GB200 host as an Azure ND GB200 v6 VM sees it: one tray's 4 GPUs over NVLink5 and
// 4x 400G InfiniBand [GB200-RA-NET, MLPERF-GB200].
ClusterSpec azure_gb200_4gpu(int gpus) {
  ClusterSpec s = base("azure-gb200-4gpu", gpus, 4);
  s.nvlink = nvswitch(4, 4, 18, 50, std::vector<int>(18, 1), 72, true);
  s.pcie = pcie(2, kPcieGen5, kPcieGen5, kPcieGen5);
  s.scale_out = fabric(4, 400, 64, 32, 32, "NDR InfiniBand (64 ports)", true);
  s.notes.emplace_back(
      "Each VM is its own 4-GPU NVLink domain here (the rack's switch trays seen from one tray); "
      "the inter-VM fabric is taken as a non-blocking NDR fat tree of Quantum-2 switches (SHARPv3, "
      "[QM97-UM]).");
  return s;
}

// Generic servers: 8 H100 PCIe per server on PCIe Gen5 switches, no NVSwitch, 2x 100 GbE, top-of-
// rack Ethernet 3:1 oversubscribed [NVIDIA H100 datasheet, PCIE-HPCNOTES, CX6-DOC].
ClusterSpec generic_h100_pcie_eth(int gpus) {
  ClusterSpec s = base("generic-h100-pcie-eth", gpus, 8);
  s.pcie = pcie(4, kPcieGen5, kPcieGen5, kPcieGen5);
  ScaleOutSpec so = fabric(2, 100, 64, 48, 16, "generic 64-port 100GbE switch", false);
  so.rail_optimized = false;
  s.scale_out = so;
  s.notes.emplace_back(
      "The 'generic servers' baseline (assumption, no vendor design): GPUs talk over PCIe through "
      "4 PCIe switches and the host; ToR with 48 x 100G down and 16 x 100G up (3:1), "
      "non-blocking 64-port spines.");
  return s;
}

}  // namespace

const std::vector<SystemPreset>& system_presets() {
  static const std::vector<SystemPreset> presets = {
      {"dgx-a100-40gb", "A100-40GB-SXM4", "DGX A100 40GB, 8x HDR 200G, SuperPOD-style fabric",
       false, HostCpu::x86_amd, "A100-WP-SUMMARY, NV-NVLINK-DE, STH-A100POD, IBTA-LIST",
       dgx_a100_40},
      {"dgx-a100-80gb", "A100-80GB-SXM4", "DGX A100 80GB, 8x HDR 200G, SuperPOD-style fabric",
       false, HostCpu::x86_amd, "A100-WP-SUMMARY, NV-NVLINK-DE, STH-A100POD, IBTA-LIST",
       dgx_a100_80},
      {"unknown-a100-ib", "A100-80GB-SXM4", "A100 cluster, interconnect not stated (DGX A100-like)",
       false, HostCpu::x86_amd, "A100-WP-SUMMARY, NV-NVLINK-DE", unknown_a100},
      {"dgx-h100", "H100-SXM5", "DGX H100, 8x NDR 400G, DGX SuperPOD (32-node SUs)", false,
       HostCpu::x86_intel, "H100-RA-COMP, H100-RA-NET, HC34-NVSWITCH, QM97-UM", dgx_h100},
      {"dgx-h200", "H200-SXM", "DGX H200, 8x NDR 400G, DGX SuperPOD (32-node SUs)", false,
       HostCpu::x86_intel, "H100-RA-COMP, H100-RA-NET, LZW-H200, QM97-UM", dgx_h200},
      {"dgx-h800", "H800-SXM", "H800 nodes on DeepSeek's 8-plane fat tree (MPFT)", false,
       HostCpu::x86_intel, "H800-PHILISUN, DSV3-ARXIV, DSV3-EEUMEE2", dgx_h800},
      {"meta-h100-roce", "H100-SXM5", "Meta Grand Teton H100 on the Llama 3 RoCE cluster", false,
       HostCpu::x86_intel, "META-GK, META-ROCE-ZH, META-SYSDESIGN", meta_h100_roce},
      {"unknown-h100-ib", "H100-SXM5", "H100 cluster, interconnect not stated (DGX H100-like)",
       false, HostCpu::x86_intel, "H100-RA-COMP, H100-RA-NET", unknown_h100},
      {"dgx-b200", "B200", "DGX B200, 8x NDR 400G, DGX SuperPOD (32-node SUs)", false,
       HostCpu::x86_intel, "DGXB200-UG, B200-RA-NET, B200-RA-ARCH", dgx_b200},
      {"dgx-b300", "B300", "DGX B300, 8x XDR 800G, Quantum-X800 SuperPOD (72-node SUs)", false,
       HostCpu::x86_intel, "GK-B300, RILLOR, B300XDR-RA-ARCH, STUDY-X800", dgx_b300},
      {"gb200-nvl72", "GB200", "GB200 NVL72 racks, NDR 400G per GPU, DGX SuperPOD GB200", false,
       HostCpu::arm, "GB200-RA-NET, GB200-RA-ABS, GB200-RA-ARCH, MLPERF-GB200", gb200_nvl72},
      {"gb300-nvl72", "GB300", "GB300 NVL72 racks, ConnectX-8 800G per GPU, Quantum-X800", false,
       HostCpu::arm, "GK-B300, VERDA-GB300, VENDORDEEP-GB300", gb300_nvl72},
      {"vr-nvl72", "Rubin",
       "Vera Rubin NVL72 (alias vr-nvl144, its GTC 2025 name), ConnectX-9 800G per GPU. "
       "Announced, not measured: Rubin FLOP/s, HBM, NVLink6 3.6 TB/s per GPU and the rack "
       "layout are vendor announcements; no calibration against measured runs",
       true, HostCpu::arm, "VR-CES-RELAY, RUBIN-RA-ABS, RUBIN-RA-COMP", vr_nvl72},
      {"azure-gb200-4gpu", "GB200", "Azure ND GB200 v6 VM: 4 GB200 GPUs, 4x NDR 400G", false,
       HostCpu::arm, "GB200-RA-NET, MLPERF-GB200", azure_gb200_4gpu},
      {"generic-h100-pcie-eth", "H100-PCIe",
       "Generic servers: 8 H100 PCIe, no NVSwitch, 2x 100GbE, 3:1 oversubscribed Ethernet", false,
       HostCpu::x86_intel, "NVIDIA H100 datasheet, PCIE-HPCNOTES, CX6-DOC", generic_h100_pcie_eth},
  };
  return presets;
}

const SystemPreset* find_system(std::string_view name) {
  // The GTC 2025 name of Vera Rubin NVL72 (it counted dies, 144 per rack).
  if (name == "vr-nvl144") name = "vr-nvl72";
  for (const SystemPreset& p : system_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string system_names() {
  std::string out;
  for (const SystemPreset& p : system_presets())
    out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace fabricsim::topologies
