// Event core throughput: a self-sustaining population of events where each handler schedules a
// successor at a pseudo-random delay and every fifth one also schedules and cancels a decoy.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "sim/simulation.hpp"

using fabricsim::sim::EventId;
using fabricsim::sim::Simulation;
using fabricsim::sim::Time;

namespace {

struct Driver {
  Simulation& sim;
  uint64_t state = 88172645463325252ULL;
  int64_t remaining;
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  void fire() {
    if (--remaining <= 0) return;
    sim.schedule_in(Time::from_ps(static_cast<int64_t>(next() % 1'000'000)), [this] { fire(); });
    if (next() % 5 == 0) {
      const EventId decoy = sim.schedule_in(Time::from_ps(static_cast<int64_t>(next() % 1'000'000)),
                                            [this] { fire(); });
      sim.cancel(decoy);
    }
  }
};

void BM_EventCore(benchmark::State& state) {
  const int64_t population = state.range(0);
  const int64_t events = 2'000'000;
  for (auto _ : state) {
    Simulation sim;
    Driver driver{sim, 88172645463325252ULL, events};
    for (int64_t i = 0; i < population; ++i) {
      sim.schedule_in(Time::from_ps(i), [&driver] { driver.fire(); });
    }
    sim.run();
    benchmark::DoNotOptimize(sim.now());
    state.counters["events"] = static_cast<double>(sim.events_executed());
    state.SetItemsProcessed(static_cast<int64_t>(sim.events_executed()));
  }
}

}  // namespace

BENCHMARK(BM_EventCore)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
