#pragma once
// Executes a collective Schedule on a network backend: pays the latency, then runs each phase's
// transfers as flows (merged transfers as one flow whose weight is their multiplicity) and moves
// to the next phase when all have arrived.

#include <functional>
#include <memory>

#include "models/collective_schedule.hpp"
#include "sim/network.hpp"
#include "sim/simulation.hpp"
#include "topologies/router.hpp"

namespace fabricsim::models {

class CollectiveRunner {
 public:
  CollectiveRunner(sim::Simulation& simulation, sim::Network& network, topologies::Router& router)
      : simulation_(simulation), network_(network), router_(router) {}

  /// Starts `schedule` now; `done` runs when its last byte has arrived. The schedule is shared so
  /// that many callers (symmetric groups) can run the same one.
  void run(std::shared_ptr<const Schedule> schedule, std::function<void()> done);

  /// Duration of `schedule` alone on links of these usable capacities: what run() takes on the
  /// analytical backend, computed without simulating.
  static sim::Time isolated_time(const Schedule& schedule, topologies::Router& router,
                                 const sim::IdVector<sim::LinkId, double>& usable);

 private:
  struct Run;
  void start_phase(const std::shared_ptr<Run>& run);

  sim::Simulation& simulation_;
  sim::Network& network_;
  topologies::Router& router_;
};

}  // namespace fabricsim::models
