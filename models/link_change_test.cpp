// Link capacities that change during a step (StepOptions::link_changes, slow-link windows).

#include <catch2/catch.hpp>

#include "models/model_presets.hpp"
#include "models/step_simulator.hpp"
#include "models/straggler_model.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

/// llama2-7b cut to 4 layers on two DGX H100 servers, TP8 DP2 without ZeRO and with the
/// all-reduce after the backward (not overlapped): the scale-out links carry traffic only at the
/// end of the step.
struct Step {
  System system;
  TransformerConfig model = *find_model("llama2-7b");
  ParallelPlan plan;
  TrainingConfig training;
  Workload workload;

  explicit Step(const topologies::Topology* slow = nullptr) {
    const topologies::SystemPreset& preset = *topologies::find_system("dgx-h100");
    system = make_system(preset.make(16), *topologies::find_gpu(preset.gpu), preset.cpu);
    if (slow) system.topology = std::make_shared<const topologies::Topology>(*slow);
    model.layers = 4;
    plan.tp = 8;
    plan.dp = 2;
    plan.dp_comm_overlap = false;
    plan.zero = 0;  // no parameter gathers at the start of the step
    training.global_batch = 4;
    workload =
        build_workload(model, plan, training, system.gpu, default_compute_profile(system.gpu));
  }

  double seconds(std::vector<LinkChange> changes = {}) const {
    StepOptions o;
    o.link_changes = std::move(changes);
    return simulate_step(system, default_collective_profile(system.gpu), workload, plan, o)
        .step_time.s();
  }
};

std::vector<LinkChange> window(const Step& s, double factor, sim::Time from,
                               sim::Time until = sim::Time::max()) {
  return link_changes_of(*s.system.topology, {{0, factor, from, until}});
}

}  // namespace

TEST_CASE("a link slow for the whole step is the slow-link topology", "[step][link_change]") {
  const Step nominal;
  const topologies::Topology slow = with_slow_nic_links(*nominal.system.topology, {{0, 4.0}});
  const Step degraded(&slow);
  const double whole = nominal.seconds(window(nominal, 4, sim::Time::zero()));
  CHECK(whole == degraded.seconds());
  CHECK(whole > nominal.seconds());
}

TEST_CASE("a slow-link window counts only while traffic crosses it", "[step][link_change]") {
  const Step s;
  const double nominal = s.seconds();
  const double whole = s.seconds(window(s, 4, sim::Time::zero()));
  // The compute before the all-reduce takes most of the step: a window over it changes nothing.
  const sim::Time early = sim::Time::from_s(0.1 * nominal);
  CHECK(s.seconds(window(s, 4, sim::Time::zero(), early)) == nominal);
  // From 90% of the nominal step on, the link is slow for the end of the all-reduce only.
  const double late = s.seconds(window(s, 4, sim::Time::from_s(0.9 * nominal)));
  CHECK(late > nominal);
  CHECK(late < whole);
  // A factor of 1 is no change at all.
  CHECK(s.seconds(window(s, 1, sim::Time::zero())) == nominal);
}

TEST_CASE("slow-link windows become ordered changes of both NIC directions", "[link_change]") {
  const Step s;
  const sim::Time a = sim::Time::from_s(1), b = sim::Time::from_s(2);
  const std::vector<LinkChange> c =
      link_changes_of(*s.system.topology, {{3, 2.0, b, sim::Time::max()}, {0, 4.0, a, b}});
  // GPU 0's NIC: up and down at 1 s, restored at 2 s (before GPU 3's NIC slows at 2 s).
  REQUIRE(c.size() == 6);
  CHECK(c[0].at == a);
  CHECK(c[1].at == a);
  CHECK(c[0].factor == 4.0);
  CHECK(c[2].at == b);
  CHECK(c[2].factor == 1.0);
  CHECK(c[3].factor == 1.0);
  CHECK(c[4].factor == 2.0);
  CHECK(c[0].resource != c[1].resource);
  CHECK(nic_links(*s.system.topology, 0).size() == 2);

  StepOptions analytical;
  analytical.backend = Backend::analytical;
  analytical.link_changes = c;
  CHECK_THROWS_WITH(simulate_step(s.system, default_collective_profile(s.system.gpu), s.workload,
                                  s.plan, analytical),
                    Catch::Contains("need the flow backend"));
}
