// Cost of simulating one training step at scale: Llama 3 405B on 16,384 H100 (dgx-h100; TP8,
// PP16, DP128, sequence 8192, global batch 2,048, micro-batch 1, interleaved schedule) and on
// 65,536 and 131,072 GB200 (gb200-nvl72, same plan with DP grown), at flow fidelity and in
// analytical mode. The *_Step benchmarks time simulate_step alone with cold caches (routes and
// collective schedules planned again each time); building the topology and the workload is not
// timed. The *_Plan benchmarks time api::Evaluator::evaluate on a prepared plan, as a planner
// calls it: the evaluator's route and schedule caches are warm after the first call.
// Counters: simulated events and flows, rate solves, peak memory, predicted step time, plans/s.
#include <benchmark/benchmark.h>

#include <utility>

#include "api/evaluator.hpp"
#include "api/scenario.hpp"
#include "api/training_run.hpp"
#include "bench/peak_memory.hpp"
#include "models/step_simulator.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim;

namespace {

nlohmann::json llama405b(const char* system, int gpus, int global_batch) {
  return {{"system", {{"preset", system}, {"gpus", gpus}}},
          {"model", {{"preset", "llama3-405b"}}},
          {"parallelism",
           {{"tp", 8}, {"pp", 16}, {"vp", 2}, {"micro_batch", 1}, {"balanced_pipeline", true}}},
          {"training", {{"precision", "bf16"}, {"global_batch", global_batch}, {"seq_len", 8192}}},
          {"simulation", {{"ignore_memory", true}}}};
}

/// Llama 3 70B on 512 H100 (dgx-h100), NeMo's published plan family for it (TP4 PP4 CP2 VP5,
/// micro-batch 1) with DP16 and global batch 512.
nlohmann::json llama70b_512() {
  return {{"system", {{"preset", "dgx-h100"}, {"gpus", 512}}},
          {"model", {{"preset", "llama3-70b"}}},
          {"parallelism", {{"tp", 4}, {"pp", 4}, {"cp", 2}, {"vp", 5}, {"micro_batch", 1}}},
          {"training", {{"precision", "bf16"}, {"global_batch", 512}, {"seq_len", 8192}}},
          {"simulation", {{"ignore_memory", true}}}};
}

struct Prepared {
  api::Evaluator evaluator;
  api::PreparedPlan plan;
};

Prepared prepare(const nlohmann::json& doc) {
  const api::Scenario s = api::read_scenario(sim::JsonDocument(doc, "<bench>").root());
  api::Evaluator evaluator(s);
  api::PreparedPlan plan = evaluator.prepare(s);
  return {std::move(evaluator), std::move(plan)};
}

void step(benchmark::State& state, const nlohmann::json& doc, models::Backend backend) {
  const Prepared p = prepare(doc);
  models::StepOptions options = p.plan.scenario.simulation;
  options.backend = backend;
  models::StepResult r;
  for (auto _ : state) {
    r = models::simulate_step(p.evaluator.system(), p.evaluator.profile().collective,
                              p.plan.workload, p.plan.scenario.plan, options);
    // The const overload: the non-const one's "+m,r" constraint lets GCC 12 write the double
    // back through a register, which has clobbered r.step_time (Google Benchmark 1.7.1).
    benchmark::DoNotOptimize(std::as_const(r).step_time.s());
  }
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["flows"] = static_cast<double>(r.flows);
  state.counters["rate_solves"] = static_cast<double>(r.rate_solves);
  state.counters["step_s"] = r.step_time.s();
  state.counters["peak_MiB"] = peak_memory_mib();
}

void plan(benchmark::State& state, const nlohmann::json& doc, api::Fidelity fidelity) {
  const Prepared p = prepare(doc);
  double step_s = 0;
  for (auto _ : state) {
    const api::StepEvaluation e = p.evaluator.evaluate(p.plan, fidelity);
    benchmark::DoNotOptimize(e.step);
    step_s = e.metrics.step_time_s;
  }
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["step_s"] = step_s;
}

void BM_Llama405B_H100_FlowStep(benchmark::State& s) {
  step(s, llama405b("dgx-h100", static_cast<int>(s.range(0)), 2048), models::Backend::flow);
}
void BM_Llama405B_H100_AnalyticalStep(benchmark::State& s) {
  step(s, llama405b("dgx-h100", static_cast<int>(s.range(0)), 2048), models::Backend::analytical);
}
// Global batch grows with DP so every replica keeps 16 micro-batches.
void BM_Llama405B_GB200_FlowStep(benchmark::State& s) {
  const int gpus = static_cast<int>(s.range(0));
  step(s, llama405b("gb200-nvl72", gpus, gpus / 8), models::Backend::flow);
}
void BM_Llama405B_GB200_AnalyticalStep(benchmark::State& s) {
  const int gpus = static_cast<int>(s.range(0));
  step(s, llama405b("gb200-nvl72", gpus, gpus / 8), models::Backend::analytical);
}
// Flow mode's growth with the cluster: the same family on dgx-h100 at 16 micro-batches per
// replica.
void BM_Llama405B_H100_FlowGrowth(benchmark::State& s) {
  const int gpus = static_cast<int>(s.range(0));
  step(s, llama405b("dgx-h100", gpus, gpus / 8), models::Backend::flow);
}

/// The planner's unit of work: one analytical plan evaluation once the workload is built.
void BM_Llama70B_H100_512_AnalyticalPlan(benchmark::State& s) {
  plan(s, llama70b_512(), api::Fidelity::analytical);
}
void BM_Llama405B_H100_AnalyticalPlan(benchmark::State& s) {
  plan(s, llama405b("dgx-h100", 16384, 2048), api::Fidelity::analytical);
}

/// What `fabricsim run` does per plan: read the scenario (building the cluster), resolve the
/// profile, lower the workload, check memory, simulate (analytical).
void BM_Llama405B_H100_AnalyticalEndToEnd(benchmark::State& state) {
  nlohmann::json doc = llama405b("dgx-h100", 16384, 2048);
  doc["simulation"]["backend"] = "analytical";
  double step_s = 0;
  for (auto _ : state) {
    const api::TrainingReport r =
        api::run_training(api::read_scenario(sim::JsonDocument(doc, "<bench>").root()));
    benchmark::DoNotOptimize(r.step);
    step_s = r.metrics.step_time_s;
  }
  state.counters["step_s"] = step_s;
}

}  // namespace

BENCHMARK(BM_Llama70B_H100_512_AnalyticalPlan)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Llama405B_H100_AnalyticalPlan)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Llama405B_H100_AnalyticalEndToEnd)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama405B_H100_AnalyticalStep)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama405B_H100_FlowStep)->Arg(16384)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Llama405B_GB200_AnalyticalStep)
    ->Arg(65536)
    ->Arg(131072)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Llama405B_GB200_FlowStep)
    ->Arg(65536)
    ->Arg(131072)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_Llama405B_H100_FlowGrowth)
    ->Arg(16384)
    ->Arg(32768)
    ->Arg(65536)
    ->Arg(131072)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_MAIN();
