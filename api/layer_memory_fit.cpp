#include "api/layer_memory_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace fabricsim::api {
namespace {

struct Candidate {
  models::ParallelPlan plan;
  double step_s = 0;
};

/// The most layers any model chunk of `prepared` holds.
int most_chunk_layers(const PreparedPlan& prepared) {
  int most = 0;
  for (const models::StageWork& stage : prepared.workload.stages)
    for (const models::ChunkWork& chunk : stage.chunks)
      most = std::max(most, chunk.layers);
  return most;
}

/// The smallest n in [1, most] for which `set(plan, n)` fits (memory falls as n grows), timed.
std::optional<Candidate> fewest_that_fit(const Evaluator& cluster, const Scenario& scenario,
                                         int most, void (*set)(models::ParallelPlan&, int)) {
  auto with = [&](int n) {
    Scenario s = scenario;
    set(s.plan, n);
    return s;
  };
  if (most < 1 || !cluster.prepare(with(most)).memory.fits) return std::nullopt;
  int lo = 1, hi = most;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (cluster.prepare(with(mid)).memory.fits) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const Scenario chosen = with(lo);
  const StepEvaluation e = cluster.evaluate(cluster.prepare(chosen), Fidelity::analytical);
  if (!e.step) return std::nullopt;
  return Candidate{chosen.plan, e.metrics.step_time_s};
}

}  // namespace

LayerMemoryFit fit_layer_memory(const Evaluator& cluster, const Scenario& scenario) {
  LayerMemoryFit fit{scenario.plan, false, ""};
  const PreparedPlan prepared = cluster.prepare(scenario);
  if (prepared.problem || prepared.memory.fits) return fit;
  const int layers = most_chunk_layers(prepared);
  const int recomputed = scenario.plan.recompute_layers;
  const std::optional<Candidate> recompute =
      fewest_that_fit(cluster, scenario, layers - recomputed,
                      [](models::ParallelPlan& p, int n) { p.recompute_layers += n; });
  // The chunk's last layer is never offloaded.
  const std::optional<Candidate> offload =
      fewest_that_fit(cluster, scenario, layers - 1 - recomputed - scenario.plan.offload_layers,
                      [](models::ParallelPlan& p, int n) { p.offload_layers += n; });
  const Candidate* best = nullptr;
  if (recompute) best = &*recompute;
  if (offload && (!best || offload->step_s < best->step_s)) best = &*offload;
  if (best == nullptr) return fit;
  fit.plan = best->plan;
  fit.changed = true;
  const bool offloads = offload && best == &*offload;
  const int n = offloads ? best->plan.offload_layers : best->plan.recompute_layers;
  fit.summary =
      fmt::format("{} {} layer{} per chunk{} to fit", offloads ? "offloads" : "recomputes", n,
                  n == 1 ? "" : "s", offloads ? "" : " fully");
  return fit;
}

}  // namespace fabricsim::api
