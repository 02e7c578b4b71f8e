#pragma once
// A collective as a backend-independent schedule: phases of concurrent transfers between group
// ranks (plus in-switch transfers and explicit routes), with the latency terms added analytically.
// Schedules aggregate NCCL's channels into one transfer per distinct path, so a collective over n
// GPUs costs O(n) transfers per phase, not O(n^2) steps.

#include <cstdint>
#include <limits>
#include <vector>

#include "models/collective_op.hpp"
#include "sim/network.hpp"
#include "sim/units.hpp"
#include "topologies/graph.hpp"

namespace fabricsim::models {

struct Transfer {
  enum class Kind : uint8_t {
    p2p,          ///< GPU src -> GPU dst through the router
    to_switch,    ///< GPU src -> its scale-up switches (NVLS reduce/multicast upload)
    from_switch,  ///< scale-up switches -> GPU dst (NVLS download)
    route,        ///< an explicit route (in-network reduction tree edges)
  };
  Kind kind = Kind::p2p;
  topologies::GpuRank src;
  topologies::GpuRank dst;
  /// Rank whose NIC carries a cross-domain transfer (PXN proxy); none = src's own NIC.
  topologies::GpuRank proxy;
  double bytes = 0;         ///< payload bytes of one transfer
  double multiplicity = 1;  ///< identical transfers merged into this one
  sim::Route route;         ///< for Kind::route
};

struct Phase {
  std::vector<Transfer> transfers;
  sim::Time latency;  ///< paid before the phase's transfers start
};

struct Schedule {
  CollectiveOp op = CollectiveOp::all_reduce;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int ranks = 1;
  int domains = 1;
  double size_bytes = 0;     ///< nccl-tests "size"
  sim::Time latency;         ///< launch + per-step latency terms, paid once at the start
  double wire_factor = 1.0;  ///< wire bytes per payload byte (protocol, algorithm overheads)
  /// Extra factor on GPU <-> NVSwitch (NVLS) transfers: the multimem engines' efficiency.
  double switch_wire_factor = 1.0;
  /// Upper bound on bus bandwidth from protocol/channel limits (GB/s); infinite when none.
  double max_busbw_GBps = std::numeric_limits<double>::infinity();
  std::vector<Phase> phases;

  size_t transfer_count() const {
    size_t n = 0;
    for (const Phase& p : phases)
      n += p.transfers.size();
    return n;
  }
};

}  // namespace fabricsim::models
