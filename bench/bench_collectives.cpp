// Flow-network cost of whole collectives at scale: a 1 GiB all-reduce on DGX H100 clusters of
// 1k to 64k GPUs (NCCL's choice of algorithm), and an all-to-all of 1 MiB per pair among 1,024
// GPUs. Counters: simulated events and flows, events per wall second, peak memory.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <utility>

#include "bench/peak_memory.hpp"
#include "models/collective_model.hpp"

using namespace fabricsim;

namespace {

void run(benchmark::State& state, const char* system, int gpus, models::CollectiveOp op,
         double bytes, std::optional<models::Algorithm> algorithm) {
  const models::System s = models::make_system(system, gpus);
  const models::CollectiveProfile profile = models::default_collective_profile(s.gpu);
  models::CollectiveRequest request;
  request.op = op;
  request.size_bytes = bytes;
  request.ranks = models::first_ranks(gpus);
  request.algorithm = algorithm;
  models::CollectiveResult r;
  for (auto _ : state) {
    // Routing is part of the cost: a fresh router each iteration.
    topologies::Router router(*s.topology, topologies::RoutingStrategy::ecmp);
    r = models::simulate_collective(s, profile, router, request, models::Backend::flow);
    benchmark::DoNotOptimize(std::as_const(r).time);
  }
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["flows"] = static_cast<double>(r.flows);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(r.events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busbw_GBps"] = r.busbw_GBps;
  state.counters["peak_MiB"] = peak_memory_mib();
  state.SetLabel(
      fmt::format("{} {}", models::to_string(r.algorithm), models::to_string(r.protocol)));
}

void BM_AllReduce1GiB(benchmark::State& state) {
  run(state, "dgx-h100", static_cast<int>(state.range(0)), models::CollectiveOp::all_reduce,
      1024.0 * 1024 * 1024, std::nullopt);
}

void BM_AllReduce1GiBRing(benchmark::State& state) {
  run(state, "dgx-h100", static_cast<int>(state.range(0)), models::CollectiveOp::all_reduce,
      1024.0 * 1024 * 1024, models::Algorithm::ring);
}

void BM_AllToAll1MiBPerPair(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  run(state, "dgx-h100", gpus, models::CollectiveOp::alltoall, 1024.0 * 1024 * gpus, std::nullopt);
}

}  // namespace

BENCHMARK(BM_AllReduce1GiB)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_AllReduce1GiBRing)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_AllToAll1MiBPerPair)
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_MAIN();
