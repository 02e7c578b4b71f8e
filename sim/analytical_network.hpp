#pragma once
// Analytical network: every flow runs at its uncontended bottleneck rate, as if it were alone on
// the fabric. Completion = start + bytes / bottleneck + route latency. Fast, and exact wherever
// flows do not share links; the flow backend must agree with it there (tested).

#include <vector>

#include "sim/network.hpp"

namespace fabricsim::sim {

class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(Simulation& simulation, std::vector<LinkCapacity> links);

  void start_flow(const Route& route, FlowRequest request) override;
  size_t active_flows() const override { return active_; }
  const IdVector<LinkId, double>& link_bytes() const override { return link_bytes_; }
  const NetworkStats& stats() const override { return stats_; }

  /// The rate a flow would get on `route` with nothing else on the fabric.
  double uncontended_rate(const Route& route, double weight, double max_rate) const {
    return uncontended_rate(usable_, route, weight, max_rate);
  }
  /// The same for links of the given usable capacities (bandwidth x efficiency, bytes/s).
  static double uncontended_rate(const IdVector<LinkId, double>& usable, const Route& route,
                                 double weight, double max_rate);
  /// Time from start to arrival of a flow alone on the fabric (transfer + route latency).
  static Time uncontended_time(const IdVector<LinkId, double>& usable, const Route& route,
                               const FlowRequest& request);
  /// Usable capacity (bandwidth x efficiency) of every link, as this backend sees them.
  static IdVector<LinkId, double> usable_capacities(const std::vector<LinkCapacity>& links);

 private:
  Simulation& simulation_;
  IdVector<LinkId, double> usable_;
  IdVector<LinkId, double> link_bytes_;
  size_t active_ = 0;
  NetworkStats stats_;
};

}  // namespace fabricsim::sim
