#include "api/layer_memory_fit.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fabricsim::api {
namespace {

/// The most layers any model chunk of `prepared` holds.
int most_chunk_layers(const PreparedPlan& prepared) {
  int most = 0;
  for (const models::StageWork& stage : prepared.workload.stages)
    for (const models::ChunkWork& chunk : stage.chunks)
      most = std::max(most, chunk.layers);
  return most;
}

/// `prepared`'s plan with the smallest n in [1, most] for which `set(plan, n)` fits (memory
/// falls as n grows), if any: the workload's memory under each count, without lowering it again.
std::optional<models::ParallelPlan> fewest_that_fit(const PreparedPlan& prepared,
                                                    const topologies::GpuSpec& gpu, int most,
                                                    void (*set)(models::ParallelPlan&, int)) {
  auto with = [&](int n) {
    models::ParallelPlan p = prepared.scenario.plan;
    set(p, n);
    return p;
  };
  auto fits = [&](int n) {
    return models::memory_report(prepared.workload, with(n), prepared.scenario.training, gpu).fits;
  };
  if (most < 1 || !fits(most)) return std::nullopt;
  int lo = 1, hi = most;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return with(lo);
}

}  // namespace

LayerMemoryRemedies layer_memory_remedies(const PreparedPlan& prepared,
                                          const topologies::GpuSpec& gpu) {
  LayerMemoryRemedies out;
  if (prepared.problem || prepared.memory.fits) return out;
  const int layers = most_chunk_layers(prepared);
  const models::ParallelPlan& p = prepared.scenario.plan;
  out.recompute = fewest_that_fit(prepared, gpu, layers - p.recompute_layers,
                                  [](models::ParallelPlan& q, int n) { q.recompute_layers += n; });
  // The chunk's last layer is never offloaded.
  out.offload = fewest_that_fit(prepared, gpu, layers - 1 - p.recompute_layers - p.offload_layers,
                                [](models::ParallelPlan& q, int n) { q.offload_layers += n; });
  return out;
}

LayerMemoryFit fit_layer_memory(const Evaluator& cluster, const Scenario& scenario) {
  return fit_layer_memory(cluster, cluster.prepare(scenario));
}

LayerMemoryFit fit_layer_memory(const Evaluator& cluster, const PreparedPlan& prepared) {
  const Scenario& scenario = prepared.scenario;
  LayerMemoryFit fit{scenario.plan, false, ""};
  const LayerMemoryRemedies remedies = layer_memory_remedies(prepared, cluster.system().gpu);
  auto step_of = [&](const models::ParallelPlan& plan) {
    Scenario s = scenario;
    s.plan = plan;
    return cluster.evaluate(cluster.prepare(s), Fidelity::analytical).metrics.step_time_s;
  };
  std::optional<double> recompute_s, offload_s;
  if (remedies.recompute) recompute_s = step_of(*remedies.recompute);
  if (remedies.offload) offload_s = step_of(*remedies.offload);
  const bool offloads = offload_s && (!recompute_s || *offload_s < *recompute_s);
  if (!offloads && !recompute_s) return fit;
  fit.plan = offloads ? *remedies.offload : *remedies.recompute;
  fit.changed = true;
  const int n = offloads ? fit.plan.offload_layers : fit.plan.recompute_layers;
  fit.summary =
      fmt::format("{} {} layer{} per chunk{} to fit", offloads ? "offloads" : "recomputes", n,
                  n == 1 ? "" : "s", offloads ? "" : " fully");
  return fit;
}

}  // namespace fabricsim::api
