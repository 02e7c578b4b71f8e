#pragma once
// Parameters of the collective model that calibration sets: link efficiencies (the fraction of
// line rate bulk transfers achieve on each kind of link), protocol wire factors, latency terms.
// Defaults derive from NCCL's own model constants (nccl-tuning-model.json, topo.h); fitted
// profiles replace them (calibration/).

#include <string>

#include "models/collective_op.hpp"
#include "sim/units.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

struct CollectiveProfile {
  double nvlink_efficiency = 0.824;  ///< of NVLink line rate, Simple protocol, ring traffic
  double network_efficiency = 0.96;  ///< of NIC/switch line rate
  double pcie_efficiency = 0.9;      ///< of PCIe line rate (TLP framing, 256-byte payloads)
  /// NVLS moves data through the switch's multimem engines; NCCL models it at this fraction of
  /// NVLink bandwidth (nvlsEfficiency: Hopper 0.85, Blackwell 0.74).
  double nvls_factor = 0.85;
  double ll_wire_factor = 2.0;            ///< LL sends a 4-byte flag with every 4 data bytes
  double ll128_wire_factor = 1.0 / 0.92;  ///< NCCL's LL128 bandwidth factor 0.92
  double latency_scale = 1.0;             ///< multiplies NCCL's per-step latency constants
  sim::Time launch_overhead;              ///< added to every collective call
  sim::Time p2p_latency_intra = sim::Time::from_us(7.2);  ///< NCCL LL base 6.6 + NVLink hop 0.6
  sim::Time p2p_latency_inter = sim::Time::from_us(9.3);  ///< NCCL LL base 6.6 + network hop 2.7
  int channels = 16;                                      ///< NCCL channels assumed by its tuner
  std::string source = "defaults from NCCL 2.30 model constants";

  double wire_factor(Protocol p) const {
    return p == Protocol::ll ? ll_wire_factor : p == Protocol::ll128 ? ll128_wire_factor : 1.0;
  }
};

/// Defaults for a GPU: NVLink efficiency = NCCL's modelled per-link bandwidth (SM80 20.0,
/// SM90 20.6, SM100 40.1 GB/s) over the link's line rate; network efficiency = the top inter-node
/// channel speed NCCL's search tries (48 GB/s) over a 400G NIC's 50 GB/s; PCIe = 0.9, the share
/// of a x16 link's post-encoding rate left by TLP headers with 256-byte payloads (derived).
CollectiveProfile default_collective_profile(const topologies::GpuSpec& gpu);

}  // namespace fabricsim::models
