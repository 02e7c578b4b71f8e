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
  const std::vector<double>& link_bytes() const override { return link_bytes_; }
  const NetworkStats& stats() const override { return stats_; }

  /// The rate a flow would get on `route` with nothing else on the fabric.
  double uncontended_rate(const Route& route, double weight, double max_rate) const;

 private:
  Simulation& simulation_;
  std::vector<double> usable_;
  std::vector<double> link_bytes_;
  size_t active_ = 0;
  NetworkStats stats_;
};

}  // namespace fabricsim::sim
