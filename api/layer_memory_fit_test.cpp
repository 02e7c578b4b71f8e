#include "api/layer_memory_fit.hpp"

#include <catch2/catch.hpp>

#include "api/plan_search.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// Llama 3 70B fully sharded over 64 GPUs, two 8k sequences per micro-batch: its activations
/// (about 4 GiB a layer) do not fit in HBM without recomputation or offloading.
Scenario fsdp_70b(const char* system, const char* recompute = "selective",
                  const char* precision = "fp8") {
  const nlohmann::json doc = {{"system", {{"preset", system}, {"gpus", 64}}},
                              {"model", {{"preset", "llama3-70b"}}},
                              {"parallelism",
                               {{"tp", 1},
                                {"pp", 1},
                                {"dp", 64},
                                {"zero", 3},
                                {"micro_batch", 2},
                                {"recompute", recompute}}},
                              {"training", {{"global_batch", 128}, {"precision", precision}}},
                              {"simulation", {{"backend", "analytical"}}}};
  const sim::JsonDocument parsed(doc, "test");
  return read_scenario(parsed.root(), true);
}

bool fits(const Evaluator& cluster, Scenario s, const models::ParallelPlan& plan) {
  s.plan = plan;
  return cluster.prepare(s).memory.fits;
}

}  // namespace

TEST_CASE("fit_layer_memory: the fewest layers that fit, the faster of recompute and offload",
          "[memory][api]") {
  for (const char* system : {"gb200-nvl72", "dgx-h100"}) {
    INFO(system);
    const Scenario s = fsdp_70b(system);
    const Evaluator cluster(s);
    REQUIRE_FALSE(cluster.prepare(s).memory.fits);
    const LayerMemoryFit fit = fit_layer_memory(cluster, s);
    REQUIRE(fit.changed);
    CHECK(fits(cluster, s, fit.plan));
    // One layer fewer does not fit.
    models::ParallelPlan fewer = fit.plan;
    if (fit.plan.offload_layers > 0) {
      CHECK(fit.plan.recompute_layers == 0);
      --fewer.offload_layers;
    } else {
      CHECK(fit.plan.offload_layers == 0);
      --fewer.recompute_layers;
    }
    CHECK_FALSE(fits(cluster, s, fewer));
    CHECK_FALSE(fit.summary.empty());
  }
  SECTION("NVLink-C2C: offloading, whose copies outlast the layers' compute by a little") {
    // A layer's ~4 GiB leave at 193 GB/s in ~22 ms, against ~16 ms of its forward on a GB200:
    // 47 layers offloaded cost ~9% of the step.
    const Scenario s = fsdp_70b("gb200-nvl72");
    const Evaluator cluster(s);
    const LayerMemoryFit fit = fit_layer_memory(cluster, s);
    CHECK(fit.plan.offload_layers > 0);
    Scenario fitted = s;
    fitted.plan = fit.plan;
    Scenario ignored = s;
    ignored.ignore_memory = true;
    const double offloaded = cluster.evaluate(fitted, Fidelity::analytical).metrics.step_time_s;
    const double free = cluster.evaluate(ignored, Fidelity::analytical).metrics.step_time_s;
    CHECK(offloaded > free);
    CHECK(offloaded < 1.15 * free);
  }
  SECTION("the remedy not taken, at the fewest layers that fit, is no faster") {
    for (const char* system : {"gb200-nvl72", "dgx-h100", "dgx-a100-80gb"}) {
      INFO(system);
      const bool ampere = std::string_view(system) == "dgx-a100-80gb";
      const Scenario s = fsdp_70b(system, "selective", ampere ? "bf16" : "fp8");
      const Evaluator cluster(s);
      const PreparedPlan prepared = cluster.prepare(s);
      const LayerMemoryRemedies remedies = layer_memory_remedies(prepared, cluster.system().gpu);
      REQUIRE(remedies.recompute);
      REQUIRE(remedies.offload);
      const auto step = [&](const models::ParallelPlan& plan) {
        Scenario v = s;
        v.plan = plan;
        return cluster.evaluate(v, Fidelity::analytical).metrics.step_time_s;
      };
      const LayerMemoryFit fit = fit_layer_memory(cluster, s);
      const double chosen = step(fit.plan);
      CHECK(chosen <= step(*remedies.recompute));
      CHECK(chosen <= step(*remedies.offload));
    }
  }
}

TEST_CASE("fit_layer_memory leaves a plan that fits, or that nothing fits, unchanged",
          "[memory][api]") {
  SECTION("fits already") {
    Scenario s = fsdp_70b("gb200-nvl72", "full");
    const Evaluator cluster(s);
    REQUIRE(cluster.prepare(s).memory.fits);
    const LayerMemoryFit fit = fit_layer_memory(cluster, s);
    CHECK_FALSE(fit.changed);
    CHECK(fit.plan.recompute_layers == 0);
    CHECK(fit.plan.offload_layers == 0);
  }
  SECTION("weights alone overflow") {
    Scenario s = fsdp_70b("dgx-h100");
    s.plan.zero = 0;  // every rank holds the whole model and its optimizer
    const Evaluator cluster(s);
    const LayerMemoryFit fit = fit_layer_memory(cluster, s);
    CHECK_FALSE(fit.changed);
    CHECK(fit.summary.empty());
  }
}

TEST_CASE("the plan search retries shapes that overflow with their layers offloaded or recomputed",
          "[memory][api][plan]") {
  Scenario s = fsdp_70b("gb200-nvl72");
  PlanConstraints c;
  c.fixed = {{"tp", 1}, {"pp", 1}, {"cp", 1}, {"zero", 3}, {"micro_batch", 2}};
  c.recompute = {models::Recompute::selective};
  c.search_overlap = false;
  c.search_order = false;
  SearchOptions o;
  o.top = 0;
  c.fit_layers = false;
  const PlanSearch strict = search_plans(s, c, o);
  CHECK(strict.ranked.empty());
  CHECK(strict.rejected.at(Rejection::memory) == 1);
  c.fit_layers = true;
  const PlanSearch remedied = search_plans(s, c, o);
  REQUIRE_FALSE(remedied.ranked.empty());
  // Both remedies fit; offloading over NVLink-C2C costs nothing, recomputing costs a forward.
  REQUIRE(remedied.ranked.size() == 2);
  const models::ParallelPlan& best = remedied.ranked.front().plan;
  CHECK(best.offload_layers > 0);
  CHECK(remedied.ranked.back().plan.recompute_layers > 0);
  CHECK(remedied.ranked.front().step_time_s < remedied.ranked.back().step_time_s);
  CHECK(fits(Evaluator(s), s, best));
}
