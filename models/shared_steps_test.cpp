// Several jobs on one fabric (simulate_shared_steps): what sharing may and may not change.

#include <catch2/catch.hpp>
#include <numeric>

#include "models/model_presets.hpp"
#include "models/step_simulator.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

/// A 64-GPU DGX H100 cluster whose leaf groups hold two servers with one up-port per leaf for
/// two servers' NICs (2:1 oversubscribed): traffic between leaf groups contends on the uplinks.
System small_fabric(bool oversubscribed) {
  const topologies::SystemPreset& preset = *topologies::find_system("dgx-h100");
  topologies::ClusterSpec spec = preset.make(64);
  spec.scale_out->leaf_down_ports = 2;
  spec.scale_out->leaf_up_ports = oversubscribed ? 1 : 2;
  return make_system(spec, *topologies::find_gpu(preset.gpu), preset.cpu);
}

struct Job {
  TransformerConfig model;
  ParallelPlan plan;
  TrainingConfig training;
  Workload workload;
};

/// llama2-7b cut to 4 layers, TP8 over DP2 (two servers): a data-parallel all-reduce per step
/// that crosses the scale-out fabric.
Job dp_job(const System& system) {
  Job j;
  j.model = *find_model("llama2-7b");
  j.model.layers = 4;
  j.plan.tp = 8;
  j.plan.dp = 2;
  j.plan.dp_comm_overlap = false;  // the all-reduce in full view, so its contention shows
  j.training.global_batch = 4;
  validate_plan(j.plan, j.training, j.model, j.plan.gpus(), "test", "/parallelism");
  j.workload =
      build_workload(j.model, j.plan, j.training, system.gpu, default_compute_profile(system.gpu));
  return j;
}

/// The GPUs of `servers` (8 per server), in order.
std::vector<topologies::GpuRank> on_servers(std::initializer_list<uint32_t> servers) {
  std::vector<topologies::GpuRank> gpus;
  for (uint32_t s : servers) {
    for (uint32_t g = 0; g < 8; ++g)
      gpus.push_back(topologies::GpuRank(s * 8 + g));
  }
  return gpus;
}

SharedJob shared(const Job& j, std::vector<topologies::GpuRank> gpus,
                 Backend backend = Backend::flow) {
  SharedJob s{&j.workload, &j.plan, {}};
  s.options.backend = backend;
  s.options.gpus = std::move(gpus);
  return s;
}

double alone(const System& system, const SharedJob& job) {
  return simulate_step(system, default_collective_profile(system.gpu), *job.workload, *job.plan,
                       job.options)
      .step_time.s();
}

}  // namespace

TEST_CASE("a job's step does not depend on which equivalent GPUs it runs on", "[shared]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  const CollectiveProfile profile = default_collective_profile(system.gpu);
  StepOptions identity;
  const double first =
      simulate_step(system, profile, job.workload, job.plan, identity).step_time.s();
  CHECK(alone(system, shared(job, on_servers({0, 1}))) == first);
  // Servers 4 and 5 form a leaf group as 0 and 1 do: the same step to the picosecond.
  CHECK(alone(system, shared(job, on_servers({4, 5}))) == first);
  // Across two leaf groups the all-reduce crosses the uplinks (one job alone fits in them):
  // never faster.
  CHECK(alone(system, shared(job, on_servers({0, 2}))) >= first);
}

TEST_CASE("two identical jobs on disjoint leaf groups do not slow each other", "[shared]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  const std::vector<SharedJob> jobs{shared(job, on_servers({0, 1})),
                                    shared(job, on_servers({2, 3}))};
  const SharedStepResult r =
      simulate_shared_steps(system, default_collective_profile(system.gpu), jobs, 2);
  REQUIRE(r.jobs.size() == 2);
  CHECK(r.steps == std::vector<int>{2, 2});
  for (size_t k = 0; k < jobs.size(); ++k)
    CHECK(r.jobs[k].step_time.s() == alone(system, jobs[k]));
  // Their traffic meets on no link.
  CHECK(r.shared_links.empty());
}

TEST_CASE("jobs whose data-parallel traffic crosses the same uplinks slow each other", "[shared]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  // Each job has one server in leaf group 0 and one in leaf group 1.
  const std::vector<SharedJob> jobs{shared(job, on_servers({0, 2})),
                                    shared(job, on_servers({1, 3}))};
  const SharedStepResult r =
      simulate_shared_steps(system, default_collective_profile(system.gpu), jobs, 2);
  for (size_t k = 0; k < jobs.size(); ++k) {
    INFO("job " << k);
    const double a = alone(system, jobs[k]);
    CHECK(r.jobs[k].step_time.s() > a);
    // Two jobs halve each other's uplink share at most: the step cannot more than double.
    CHECK(r.jobs[k].step_time.s() < 2 * a);
  }
  REQUIRE_FALSE(r.shared_links.empty());
  const SharedLink& busiest = r.shared_links.front();
  CHECK(busiest.jobs == std::vector<int>{0, 1});
  CHECK(busiest.use.bytes.count() ==
        Approx(std::accumulate(busiest.job_bytes.begin(), busiest.job_bytes.end(), sim::Bytes())
                   .count()));
  CHECK(busiest.use.utilization > 0);
  CHECK(busiest.use.utilization <= 1.0 + 1e-9);
  for (size_t i = 1; i < r.shared_links.size(); ++i)
    CHECK(r.shared_links[i - 1].use.utilization >= r.shared_links[i].use.utilization);

  SECTION("without oversubscription the same placement contends less") {
    const System full = small_fabric(false);
    const Job j2 = dp_job(full);
    const std::vector<SharedJob> jobs2{shared(j2, on_servers({0, 2})),
                                       shared(j2, on_servers({1, 3}))};
    const SharedStepResult r2 =
        simulate_shared_steps(full, default_collective_profile(full.gpu), jobs2, 2);
    CHECK(r2.jobs[0].step_time.s() / alone(full, jobs2[0]) <
          r.jobs[0].step_time.s() / alone(system, jobs[0]));
  }
}

TEST_CASE("on the analytical backend jobs take their time alone", "[shared]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  const std::vector<SharedJob> jobs{shared(job, on_servers({0, 2}), Backend::analytical),
                                    shared(job, on_servers({1, 3}), Backend::analytical)};
  const SharedStepResult r =
      simulate_shared_steps(system, default_collective_profile(system.gpu), jobs, 3);
  // The mean of three equal steps, to rounding.
  for (size_t k = 0; k < jobs.size(); ++k)
    CHECK(r.jobs[k].step_time.s() == Approx(alone(system, jobs[k])).epsilon(1e-12));
  CHECK(r.shared_links.empty());
}

TEST_CASE("one job alone on a shared simulation is simulate_step", "[shared]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  const std::vector<SharedJob> jobs{shared(job, on_servers({0, 2}))};
  const SharedStepResult r =
      simulate_shared_steps(system, default_collective_profile(system.gpu), jobs, 1);
  CHECK(r.jobs[0].step_time.s() == alone(system, jobs[0]));
  CHECK(r.simulated_seconds == r.jobs[0].step_time.s());
}

TEST_CASE("a step's flows are counted per group kind", "[shared][step]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  const StepResult r = simulate_step(system, default_collective_profile(system.gpu), job.workload,
                                     job.plan, shared(job, on_servers({0, 2})).options);
  uint64_t sum = 0;
  for (const auto& [kind, n] : r.flows_by_group)
    sum += n;
  CHECK(sum == r.flows);
  // TP8 inside each server, DP2 across: nothing else moves.
  CHECK(r.flows_by_group.size() == 2);
  CHECK(r.flows_by_group.count("tp") == 1);
  CHECK(r.flows_by_group.count("dp") == 1);
}

TEST_CASE("shared simulations reject overlapping or unplaced jobs", "[shared]") {
  const System system = small_fabric(true);
  const Job job = dp_job(system);
  const CollectiveProfile profile = default_collective_profile(system.gpu);
  CHECK_THROWS_WITH(
      simulate_shared_steps(system, profile,
                            {shared(job, on_servers({0, 1})), shared(job, on_servers({1, 2}))}, 1),
      Catch::Contains("jobs 0 and 1 share a GPU"));
  CHECK_THROWS_WITH(
      simulate_shared_steps(system, profile,
                            {shared(job, on_servers({0, 1})), shared(job, on_servers({2}))}, 1),
      Catch::Contains("maps 8 ranks, the plan has 16"));
  CHECK_THROWS_WITH(simulate_shared_steps(system, profile,
                                          {shared(job, on_servers({0, 1})),
                                           shared(job, on_servers({2, 3}), Backend::analytical)},
                                          1),
                    Catch::Contains("share its backend"));
  CHECK_THROWS_AS(simulate_shared_steps(system, profile, {}, 1), std::invalid_argument);
}
