#include "models/collective_runner.hpp"

#include <cmath>
#include <unordered_map>

#include "sim/analytical_network.hpp"

namespace fabricsim::models {

namespace {

/// Seconds a phase may not beat: the protocol's bus-bandwidth cap, spread over the phases.
double min_phase_seconds(const Schedule& s) {
  if (std::isfinite(s.max_busbw_GBps) && s.max_busbw_GBps > 0 && !s.phases.empty()) {
    const double bus_bytes = s.size_bytes * busbw_factor(s.op, s.ranks);
    return bus_bytes / (s.max_busbw_GBps * 1e9) / static_cast<double>(s.phases.size());
  }
  return 0;
}

sim::FlowRequest request_for(const Transfer& t, const Schedule& s, double min_seconds) {
  sim::FlowRequest req;
  const bool nvls = t.kind == Transfer::Kind::to_switch || t.kind == Transfer::Kind::from_switch;
  req.bytes = sim::Bytes::of(t.bytes * t.multiplicity * s.wire_factor *
                             (nvls ? s.switch_wire_factor : 1.0));
  req.weight = t.multiplicity;
  if (min_seconds > 0) req.max_rate = sim::Bandwidth::bytes_per_s(req.bytes.count() / min_seconds);
  return req;
}

/// The route of a transfer; `scratch` holds routes computed on the fly.
const sim::Route& route_for(const Transfer& t, topologies::Router& router, sim::Route& scratch) {
  switch (t.kind) {
    case Transfer::Kind::p2p:
      return router.route_via(t.src, t.proxy, t.dst);
    case Transfer::Kind::to_switch:
      scratch = router.to_domain_switch(t.src);
      return scratch;
    case Transfer::Kind::from_switch:
      scratch = router.from_domain_switch(t.dst);
      return scratch;
    case Transfer::Kind::route:
      return t.route;
  }
  return t.route;
}

}  // namespace

sim::Time CollectiveRunner::isolated_time(const Schedule& s, topologies::Router& router,
                                          const sim::IdVector<sim::LinkId, double>& usable) {
  const double min_seconds = min_phase_seconds(s);
  sim::Time t = s.latency;
  sim::Route scratch;
  // A phase's transfers run together: where several cross one link (an all-to-all's pairs on a
  // NIC, channels on one rail) the link carries all their bytes, so the phase lasts at least their
  // sum over its capacity. Links that carry one transfer leave its own uncontended time.
  struct Load {
    double bytes = 0;
    uint32_t transfers = 0;
    sim::Time latency;
  };
  std::unordered_map<sim::LinkId, Load> loads;
  for (const Phase& phase : s.phases) {
    t += phase.latency;
    sim::Time longest = sim::Time::zero();
    loads.clear();
    for (const Transfer& tr : phase.transfers) {
      const sim::Route& route = route_for(tr, router, scratch);
      const sim::FlowRequest request = request_for(tr, s, min_seconds);
      longest = std::max(longest, sim::AnalyticalNetwork::uncontended_time(usable, route, request));
      if (phase.transfers.size() < 2) continue;
      for (const sim::LinkShare& share : route.links) {
        Load& l = loads[share.link];
        l.bytes += request.bytes.count() * share.fraction;
        ++l.transfers;
        l.latency = std::max(l.latency, route.latency);
      }
    }
    for (const auto& [link, l] : loads) {
      if (l.transfers < 2 || l.bytes <= 0) continue;
      longest = std::max(longest,
                         l.latency + sim::transfer_time(sim::Bytes::of(l.bytes),
                                                        sim::Bandwidth::bytes_per_s(usable[link])));
    }
    t += longest;
  }
  return t;
}

void CollectiveRunner::run(std::shared_ptr<const Schedule> schedule, std::function<void()> done) {
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(runs_.size());
    runs_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  runs_[slot] = std::make_unique<Run>();
  Run& r = *runs_[slot];
  r.schedule = std::move(schedule);
  r.done = std::move(done);
  r.min_phase_seconds = min_phase_seconds(*r.schedule);
  simulation_.schedule_in(r.schedule->latency, [this, slot] { start_phase(slot); });
}

void CollectiveRunner::start_phase(uint32_t slot) {
  Run& r = *runs_[slot];
  const Schedule& s = *r.schedule;
  if (r.phase >= s.phases.size()) {
    std::function<void()> done = std::move(r.done);
    runs_[slot].reset();
    free_slots_.push_back(slot);
    if (done) done();
    return;
  }
  auto launch = [this, slot] {
    Run& run = *runs_[slot];
    // Held for the loop: a network that ended a flow at once could end the run under it.
    const std::shared_ptr<const Schedule> schedule = run.schedule;
    const double min_seconds = run.min_phase_seconds;
    const Phase& phase = schedule->phases[run.phase];
    run.outstanding = phase.transfers.size();
    if (run.outstanding == 0) {
      ++run.phase;
      start_phase(slot);
      return;
    }
    auto arrived = [this, slot] {
      Run& arriving = *runs_[slot];
      if (--arriving.outstanding == 0) {
        ++arriving.phase;
        start_phase(slot);
      }
    };
    sim::Route scratch;
    for (const Transfer& t : phase.transfers) {
      sim::FlowRequest req = request_for(t, *schedule, min_seconds);
      req.on_complete = arrived;
      network_.start_flow(route_for(t, router_, scratch), std::move(req));
    }
  };
  const sim::Time latency = s.phases[r.phase].latency;
  if (latency > sim::Time::zero()) {
    simulation_.schedule_in(latency, launch);
  } else {
    launch();
  }
}

}  // namespace fabricsim::models
