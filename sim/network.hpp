#pragma once
// The network backend interface. A flow moves a number of bytes along a route: a list of directed
// links, each with the fraction of the flow's bytes that crosses it (1 for a single path; less
// when traffic is sprayed over parallel planes or ECMP paths). Backends decide how fast flows go:
// the analytical backend gives every flow its uncontended bottleneck rate, the flow backend shares
// link capacity max-min fairly among all active flows.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "sim/id.hpp"
#include "sim/simulation.hpp"
#include "sim/units.hpp"

namespace fabricsim::sim {

/// A directed link (or bundle of links) of the network: what a backend shares among flows.
using LinkId = Id<struct LinkTag>;

struct LinkShare {
  LinkId link;
  double fraction;  ///< share of the flow's bytes that crosses this link, in (0, 1]
};

struct Route {
  std::vector<LinkShare> links;
  Time latency;  ///< propagation + switching latency from source to destination
};

/// Capacity of one directed link as the backends see it.
struct LinkCapacity {
  Bandwidth bandwidth;
  double efficiency = 1.0;  ///< fraction of the line rate that payload can use
};

struct FlowRequest {
  Bytes bytes;
  double weight = 1.0;  ///< relative priority under max-min sharing
  std::optional<Bandwidth>
      max_rate;  ///< per-flow rate cap (protocol/channel limits); none = no cap
  std::function<void()> on_complete;  ///< runs when the last byte has arrived
};

struct NetworkStats {
  uint64_t flows_started = 0;
  uint64_t flows_completed = 0;
  uint64_t rate_solves = 0;
  uint64_t solved_flows = 0;  ///< flows re-solved, summed over solves (cost of sharing)
  uint64_t peak_active_flows = 0;
};

class Network {
 public:
  virtual ~Network() = default;
  /// Starts a flow now. `route` is copied; it need not outlive the call.
  virtual void start_flow(const Route& route, FlowRequest request) = 0;
  virtual size_t active_flows() const = 0;
  /// Bytes that have crossed each link so far (including the flows' shares).
  virtual const IdVector<LinkId, double>& link_bytes() const = 0;
  virtual const NetworkStats& stats() const = 0;
};

/// The rate a flow gets on a link it has to itself: capacity x efficiency / share. Both backends
/// use this one expression so that they agree bit for bit on uncontended flows.
inline double fair_level(double usable_capacity, double weight_times_share) {
  return usable_capacity / weight_times_share;
}

}  // namespace fabricsim::sim
