#include "models/collective_runner.hpp"

#include <cmath>

namespace fabricsim::models {

struct CollectiveRunner::Run {
  std::shared_ptr<const Schedule> schedule;
  std::function<void()> done;
  size_t phase = 0;
  size_t outstanding = 0;
  double min_phase_seconds = 0;  ///< protocol bandwidth cap, spread over the phases
};

void CollectiveRunner::run(std::shared_ptr<const Schedule> schedule, std::function<void()> done) {
  auto r = std::make_shared<Run>();
  r->schedule = std::move(schedule);
  r->done = std::move(done);
  const Schedule& s = *r->schedule;
  if (std::isfinite(s.max_busbw_GBps) && s.max_busbw_GBps > 0 && !s.phases.empty()) {
    const double bus_bytes = s.size_bytes * busbw_factor(s.op, s.ranks);
    r->min_phase_seconds = bus_bytes / (s.max_busbw_GBps * 1e9) / static_cast<double>(s.phases.size());
  }
  simulation_.schedule_in(s.latency, [this, r] { start_phase(r); });
}

void CollectiveRunner::start_phase(const std::shared_ptr<Run>& r) {
  const Schedule& s = *r->schedule;
  if (r->phase >= s.phases.size()) {
    if (r->done) r->done();
    return;
  }
  const Phase& phase = s.phases[r->phase];
  auto launch = [this, r, &phase, &s] {
    r->outstanding = phase.transfers.size();
    if (r->outstanding == 0) {
      ++r->phase;
      start_phase(r);
      return;
    }
    auto arrived = [this, r] {
      if (--r->outstanding == 0) {
        ++r->phase;
        start_phase(r);
      }
    };
    for (const Transfer& t : phase.transfers) {
      sim::FlowRequest req;
      const bool nvls = t.kind == Transfer::Kind::to_switch || t.kind == Transfer::Kind::from_switch;
      req.bytes = sim::Bytes::of(t.bytes * t.multiplicity * s.wire_factor *
                                 (nvls ? s.switch_wire_factor : 1.0));
      req.weight = t.multiplicity;
      if (r->min_phase_seconds > 0) {
        req.max_rate = sim::Bandwidth::bytes_per_s(req.bytes.count() / r->min_phase_seconds);
      }
      req.on_complete = arrived;
      switch (t.kind) {
        case Transfer::Kind::p2p:
          network_.start_flow(router_.route_via(t.src, t.proxy, t.dst), std::move(req));
          break;
        case Transfer::Kind::to_switch:
          network_.start_flow(router_.to_domain_switch(t.src), std::move(req));
          break;
        case Transfer::Kind::from_switch:
          network_.start_flow(router_.from_domain_switch(t.dst), std::move(req));
          break;
        case Transfer::Kind::route:
          network_.start_flow(t.route, std::move(req));
          break;
      }
    }
  };
  if (phase.latency > sim::Time::zero()) {
    simulation_.schedule_in(phase.latency, launch);
  } else {
    launch();
  }
}

}  // namespace fabricsim::models
