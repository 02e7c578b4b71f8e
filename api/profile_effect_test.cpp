// A calibration profile given to a scenario changes the simulation in the direction its
// parameters say: slower GEMMs make a longer step, a faster network does not make data-parallel
// communication slower.

#include <catch2/catch.hpp>

#include "api/scenario.hpp"
#include "api/training_run.hpp"
#include "calibration/profile.hpp"
#include "tests/scratch_dir.hpp"

using namespace fabricsim;
using namespace fabricsim::api;
using fabricsim::testing::ScratchDir;
using topologies::Precision;

namespace {

/// The default scenario with `assignments` applied (the same path `--set` takes).
Scenario scenario_with(const std::vector<std::string>& assignments) {
  nlohmann::json doc = default_scenario_json();
  apply_assignments(doc, assignments, "<test>");
  return read_scenario(sim::JsonDocument(doc, "<test>").root());
}

/// Writes `profile` into `dir` and returns the scenario pointing at it.
Scenario with_profile(Scenario s, const calibration::CalibrationProfile& profile,
                      const ScratchDir& dir, const std::string& name) {
  s.calibration = dir.write(name, calibration::profile_to_json(profile).dump(1));
  return s;
}

const models::StageBreakdown& critical(const TrainingReport& r) {
  return r.step->stages[static_cast<size_t>(r.step->critical_stage)];
}

}  // namespace

TEST_CASE("a profile with slower GEMMs gives a longer step", "[profile-effect]") {
  const ScratchDir dir("profile-effect-gemm");
  const Scenario base = scenario_with({"/simulation/backend=analytical"});
  const calibration::CalibrationProfile builtin = *calibration::builtin_profile(base.system());

  calibration::CalibrationProfile slow = builtin;
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    slow.compute.gemm_for(p).max_efficiency *= 0.6;
  }
  const TrainingReport reference = run_training(with_profile(base, builtin, dir, "same.json"));
  const TrainingReport slower = run_training(with_profile(base, slow, dir, "slow.json"));
  const TrainingReport implicit = run_training(base);
  REQUIRE(reference.step);
  REQUIRE(slower.step);
  REQUIRE(implicit.step);

  // The built-in profile written to a file is the built-in profile.
  CHECK(reference.metrics.step_time_s == implicit.metrics.step_time_s);
  CHECK_THAT(reference.calibration_source, Catch::EndsWith("same.json"));
  CHECK(implicit.calibration_source == "built-in profile of dgx-h100");

  // GEMMs are most of a Llama step: 40% less GEMM efficiency is far more than 10% more compute.
  CHECK(critical(slower).compute.s() > 1.1 * critical(reference).compute.s());
  CHECK(slower.metrics.step_time_s > 1.1 * reference.metrics.step_time_s);
  CHECK(slower.metrics.mfu < reference.metrics.mfu);
  // The workload is the same: only its cost changed.
  CHECK(slower.workload.model_flops == reference.workload.model_flops);
}

TEST_CASE("a profile with a faster network does not lengthen exposed DP time", "[profile-effect]") {
  const ScratchDir dir("profile-effect-network");
  // 16 GPUs = two DGX H100 nodes: with CP2 the eight DP replicas span both, so gradient
  // reductions cross the network. Gradient overlap is off so that DP time is on the critical
  // path and the comparison is not trivially 0 = 0.
  const Scenario base = scenario_with({"/system/gpus=16", "/parallelism/dp_comm_overlap=false"});
  REQUIRE(base.plan.dp == 8);
  const calibration::CalibrationProfile builtin = *calibration::builtin_profile(base.system());

  calibration::CalibrationProfile slow_net = builtin;
  slow_net.collective.network_efficiency = 0.4;
  calibration::CalibrationProfile fast_net = builtin;
  fast_net.collective.network_efficiency = 0.95;

  const TrainingReport slow = run_training(with_profile(base, slow_net, dir, "slow-net.json"));
  const TrainingReport fast = run_training(with_profile(base, fast_net, dir, "fast-net.json"));
  REQUIRE(slow.step);
  REQUIRE(fast.step);
  INFO("exposed DP: slow network " << critical(slow).exposed_dp.s() << " s, fast network "
                                   << critical(fast).exposed_dp.s() << " s");
  CHECK(critical(fast).exposed_dp.s() <= critical(slow).exposed_dp.s());
  CHECK(critical(slow).exposed_dp.s() > 0);
  // The network is the bottleneck of the inter-node reductions, so more than twice its
  // efficiency must show.
  CHECK(critical(fast).exposed_dp.s() < 0.9 * critical(slow).exposed_dp.s());
  CHECK(fast.metrics.step_time_s <= slow.metrics.step_time_s);
  // Compute depends on the network only through the parameter gathers beside the first forward:
  // NCCL holds SMs for as long as they run, less on a faster network.
  CHECK(critical(fast).compute.s() <= critical(slow).compute.s());
  CHECK(critical(fast).compute.s() > 0.99 * critical(slow).compute.s());

  // With gradient reductions overlapped (the default) the exposed remainder still cannot grow.
  const Scenario overlapped = scenario_with({"/system/gpus=16"});
  const TrainingReport slow_overlapped =
      run_training(with_profile(overlapped, slow_net, dir, "slow-net.json"));
  const TrainingReport fast_overlapped =
      run_training(with_profile(overlapped, fast_net, dir, "fast-net.json"));
  REQUIRE(slow_overlapped.step);
  REQUIRE(fast_overlapped.step);
  CHECK(critical(fast_overlapped).exposed_dp.s() <= critical(slow_overlapped).exposed_dp.s());
  CHECK(fast_overlapped.metrics.step_time_s <= slow_overlapped.metrics.step_time_s);
  // Overlap hides part of what the non-overlapped run exposes.
  CHECK(critical(slow_overlapped).exposed_dp.s() < critical(slow).exposed_dp.s());
}

TEST_CASE("a profile for another GPU is refused by run_training", "[profile-effect][bad-input]") {
  const ScratchDir dir("profile-effect-gpu");
  const Scenario s = with_profile(scenario_with({"/simulation/backend=analytical"}),
                                  *calibration::builtin_profile("dgx-b200"), dir, "b200.json");
  try {
    run_training(s);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    CHECK_THAT(e.where(), Catch::EndsWith("b200.json"));
    CHECK(e.path() == "/gpu");
    CHECK_THAT(e.message(), Catch::Contains("B200") && Catch::Contains("H100-SXM5"));
  }
}
