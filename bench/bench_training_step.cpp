// Cost of simulating one training step at scale: Llama 3 405B on 16,384 H100 (dgx-h100; TP8,
// PP16, DP128, sequence 8192, global batch 2,048, micro-batch 1, interleaved schedule) and on
// 65,536 and 131,072 GB200 (gb200-nvl72, same plan with DP grown), at flow fidelity and in
// analytical mode. Only simulate_step is timed; building the topology and the workload is not.
// Counters: simulated events and flows, rate solves, peak memory, predicted step time.
#include <benchmark/benchmark.h>

#include "api/scenario.hpp"
#include "api/training_run.hpp"
#include "bench/peak_memory.hpp"
#include "calibration/profile.hpp"
#include "models/step_simulator.hpp"
#include "models/system.hpp"
#include "sim/json_reader.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;

namespace {

struct Prepared {
  api::Scenario scenario;
  models::System system;
  calibration::CalibrationProfile profile;
  models::Workload workload;
};

Prepared prepare(const char* system, int gpus, int global_batch, models::Backend backend) {
  nlohmann::json doc = {
      {"system", {{"preset", system}, {"gpus", gpus}}},
      {"model", {{"preset", "llama3-405b"}}},
      {"parallelism",
       {{"tp", 8}, {"pp", 16}, {"vp", 2}, {"micro_batch", 1}, {"balanced_pipeline", true}}},
      {"training", {{"precision", "bf16"}, {"global_batch", global_batch}, {"seq_len", 8192}}},
      {"simulation", {{"ignore_memory", true}}}};
  Prepared p{api::read_scenario(sim::JsonDocument(doc, "<bench>").root()), {}, {}, {}};
  p.scenario.simulation.backend = backend;
  p.system = models::make_system(p.scenario.cluster, api::scenario_gpu(p.scenario),
                                 topologies::find_system(system)->cpu);
  p.profile = api::scenario_profile(p.scenario);
  p.workload = api::scenario_workload(p.scenario, p.profile);
  return p;
}

void run(benchmark::State& state, const char* system, int global_batch, models::Backend backend) {
  const Prepared p = prepare(system, static_cast<int>(state.range(0)), global_batch, backend);
  models::StepResult r;
  for (auto _ : state) {
    r = models::simulate_step(p.system, p.profile.collective, p.workload, p.scenario.plan,
                              p.scenario.simulation);
    benchmark::DoNotOptimize(r.step_seconds);
  }
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["flows"] = static_cast<double>(r.flows);
  state.counters["rate_solves"] = static_cast<double>(r.rate_solves);
  state.counters["step_s"] = r.step_seconds;
  state.counters["peak_MiB"] = peak_memory_mib();
}

void BM_Llama405B_H100_Flow(benchmark::State& s) {
  run(s, "dgx-h100", 2048, models::Backend::flow);
}
void BM_Llama405B_H100_Analytical(benchmark::State& s) {
  run(s, "dgx-h100", 2048, models::Backend::analytical);
}
// Global batch grows with DP so every replica keeps 16 micro-batches.
void BM_Llama405B_GB200_Flow(benchmark::State& s) {
  run(s, "gb200-nvl72", static_cast<int>(s.range(0) / 8), models::Backend::flow);
}
void BM_Llama405B_GB200_Analytical(benchmark::State& s) {
  run(s, "gb200-nvl72", static_cast<int>(s.range(0) / 8), models::Backend::analytical);
}

}  // namespace

BENCHMARK(BM_Llama405B_H100_Analytical)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama405B_H100_Flow)->Arg(16384)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Llama405B_GB200_Analytical)->Arg(65536)->Arg(131072)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama405B_GB200_Flow)
    ->Arg(65536)
    ->Arg(131072)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_MAIN();
