#pragma once
// NCCL's own cost model (ncclTopoTuneModel + ncclTopoGetAlgoTime, NCCL 2.30.7), used for what
// NCCL uses it for: choosing an algorithm and protocol per collective and size. Constants and
// formulas are transcribed in ../shared/reference/nccl-tuning-model.json (source commit
// 5067397c of NVIDIA/nccl). The simulator then executes the chosen algorithm with its own flow
// physics; this model only predicts NCCL's choice and supplies its per-step latency terms.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "models/collective_op.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::models {

/// What NCCL's topology search would report for a communicator.
struct NcclCommShape {
  int ranks = 1;
  int nodes = 1;  ///< NVLink domains (NCCL "nodes"; an NVL72 rack is one with MNNVL)
  topologies::GpuGeneration generation = topologies::GpuGeneration::hopper;
  topologies::HostCpu cpu = topologies::HostCpu::x86_intel;
  bool nvlink = true;   ///< intra-node path is NVLink (else PCIe)
  double bw_intra = 0;  ///< per channel, GB/s
  double bw_inter = 0;  ///< per channel, GB/s
  /// Inter-node speed of the NVLS graph's channels, one per head GPU and its NIC (GB/s); what
  /// NVLS and NVLS tree use as interBw.
  double bw_nvls_inter = 0;
  int channels = 16;
  bool nvls = false;     ///< NVLink SHARP available
  bool collnet = false;  ///< CollNet (IB SHARP) plugin enabled
  int ppn() const { return nodes > 0 ? ranks / nodes : ranks; }
};

struct NcclEstimate {
  Algorithm algorithm;
  Protocol protocol;
  double latency_us;  ///< per call (lat x latCount)
  double algbw_GBps;  ///< NCCL's modelled algorithm bandwidth (after corrections)
  double time_us;     ///< NCCL's modelled time
};

class NcclTuner {
 public:
  /// NCCL's estimate for one algorithm/protocol; nullopt when NCCL would not enable it.
  static std::optional<NcclEstimate> estimate(CollectiveOp op, double bytes, Algorithm a,
                                              Protocol p, const NcclCommShape& shape);
  /// NCCL's choice: the fastest enabled combination, optionally restricted like NCCL_ALGO /
  /// NCCL_PROTO. nullopt when nothing is enabled.
  static std::optional<NcclEstimate> choose(CollectiveOp op, double bytes,
                                            const NcclCommShape& shape,
                                            std::optional<Algorithm> algo = {},
                                            std::optional<Protocol> proto = {});
  /// The latency NCCL's model charges for one call of this combination, in microseconds.
  static double latency_us(CollectiveOp op, double bytes, Algorithm a, Protocol p,
                           const NcclCommShape& shape);
  /// Absolute bus-bandwidth limits NCCL's model puts on a protocol (LL's llMaxBw, the per-channel
  /// LL128 and tree caps), in GB/s; infinity when the combination has none.
  static double busbw_cap(CollectiveOp op, Algorithm a, Protocol p, const NcclCommShape& shape);
  /// NVLS channels NCCL runs (transport/nvls.cc: NVLS_NCHANNELS_SM90 16, SM100 24 inside one
  /// NVLink domain, 32 across several).
  static int nvls_channels(const NcclCommShape& shape);
  /// Bytes NCCL's NVLS kernels have in flight per pipeline loop: channels x heads (one per rank
  /// of the domain) x the chunk size enqueue.cc picks for this size (NVLS_CHUNKSIZE 128 KiB,
  /// halved to 64/32/16 KiB when the message is under 64/8/2 loops; NVLS tree: 256-32 KiB).
  static double nvls_loop_bytes(Algorithm a, double bytes, const NcclCommShape& shape);
  /// NCCL's per-link modelled NVLink bandwidth (topo.h SMxx_NVLINK_BW), GB/s per direction.
  static double nvlink_link_bandwidth(topologies::GpuGeneration g);
};

}  // namespace fabricsim::models
