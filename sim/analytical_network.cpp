#include "sim/analytical_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fabricsim::sim {

IdVector<LinkId, double> AnalyticalNetwork::usable_capacities(
    const std::vector<LinkCapacity>& links) {
  IdVector<LinkId, double> usable(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    usable[i] = links[i].bandwidth.bytes_per_s() * links[i].efficiency;
    if (!(usable[i] > 0)) {
      throw std::invalid_argument("AnalyticalNetwork: link capacity must be positive");
    }
  }
  return usable;
}

AnalyticalNetwork::AnalyticalNetwork(Simulation& simulation, std::vector<LinkCapacity> links)
    : simulation_(simulation), usable_(usable_capacities(links)), link_bytes_(links.size(), 0.0) {}

double AnalyticalNetwork::uncontended_rate(const IdVector<LinkId, double>& usable,
                                           const Route& route, double weight, double max_rate) {
  // Same expressions, in the same order, as the flow backend's progressive filling.
  double level = std::numeric_limits<double>::infinity();
  for (const LinkShare& share : route.links) {
    if (share.link.index() >= usable.size())
      throw std::out_of_range("AnalyticalNetwork: unknown link");
    level = std::min(level, fair_level(usable[share.link], weight * share.fraction));
  }
  if (std::isfinite(max_rate) && max_rate / weight < level) return max_rate;
  return weight * level;
}

Time AnalyticalNetwork::uncontended_time(const IdVector<LinkId, double>& usable, const Route& route,
                                         const FlowRequest& request) {
  const double bytes = std::max(0.0, request.bytes.count());
  const double weight = request.weight > 0 ? request.weight : 1.0;
  const double max_rate =
      request.max_rate ? request.max_rate->bytes_per_s() : std::numeric_limits<double>::infinity();
  const double rate = uncontended_rate(usable, route, weight, max_rate);
  Time duration = Time::zero();
  if (bytes > 0 && std::isfinite(rate)) {
    duration = transfer_time(Bytes::of(bytes), Bandwidth::bytes_per_s(rate));
  }
  return duration + route.latency;
}

void AnalyticalNetwork::start_flow(const Route& route, FlowRequest request) {
  ++stats_.flows_started;
  const double bytes = std::max(0.0, request.bytes.count());
  const Time arrival = uncontended_time(usable_, route, request);
  for (const LinkShare& share : route.links)
    link_bytes_[share.link] += bytes * share.fraction;
  ++active_;
  stats_.peak_active_flows = std::max<uint64_t>(stats_.peak_active_flows, active_);
  simulation_.schedule_in(arrival, [this, done = std::move(request.on_complete)] {
    --active_;
    ++stats_.flows_completed;
    if (done) done();
  });
}

}  // namespace fabricsim::sim
