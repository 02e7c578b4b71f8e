#pragma once
// Executes a collective Schedule on a network backend: pays the latency, then runs each phase's
// transfers as flows (merged transfers as one flow whose weight is their multiplicity) and moves
// to the next phase when all have arrived.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

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
  struct Run {
    std::shared_ptr<const Schedule> schedule;
    std::function<void()> done;
    size_t phase = 0;
    size_t outstanding = 0;
    double min_phase_seconds = 0;  ///< protocol bandwidth cap, spread over the phases
  };
  /// Runs the next phase of the run in `slot`, or ends it.
  void start_phase(uint32_t slot);

  sim::Simulation& simulation_;
  sim::Network& network_;
  topologies::Router& router_;
  // Runs in flight by slot (null: free), so that a flow's callback holds the runner and a slot
  // and fits std::function's inline buffer: a shared pointer per flow cost a heap allocation
  // and atomic counts per transfer (millions at 131,072 GPUs).
  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<uint32_t> free_slots_;
};

}  // namespace fabricsim::models
