#include "models/goodput_model.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace fabricsim::models;

namespace {

GoodputInputs simple_job(double per_gpu_hour, int gpus) {
  GoodputInputs in;
  in.wall_hours = 1000;
  in.gpus = gpus;
  in.nodes = gpus / 8;
  in.classes = {{"gpu", {per_gpu_hour, FailureScope::gpu}, BlastRadius::job, 0, true, "t"}};
  in.recovery.detection_s = 60;
  in.recovery.isolation_s = 120;
  in.recovery.restart_s = 180;
  in.recovery.repair_s = 3600;
  in.recovery.spare_nodes = 1000;
  in.checkpoint.rule = IntervalRule::young;
  in.checkpoint_cost.write_s = 30;
  in.checkpoint_cost.blocking_s = 30;
  in.checkpoint_cost.restore_s = 40;
  return in;
}

}  // namespace

TEST_CASE("goodput accounts for every hour of the period", "[goodput]") {
  for (const double rate : {0.0, 1e-6, 1e-5, 1e-4}) {
    for (const auto mode : {CheckpointMode::sync, CheckpointMode::async}) {
      GoodputInputs in = simple_job(rate, 4096);
      in.checkpoint.mode = mode;
      in.recovery.spare_nodes = 2;
      in.recovery.planned_per_hour = 0.01;
      const GoodputResult g = goodput(in);
      CAPTURE(rate);
      CHECK(g.useful_hours + g.lost.total() == Approx(in.wall_hours));
      CHECK(g.goodput == Approx(g.useful_hours / in.wall_hours));
      CHECK(g.goodput >= 0);
      CHECK(g.goodput <= 1);
    }
  }
}

TEST_CASE("goodput closed form: rate x time interruptions, each costing its recovery",
          "[goodput]") {
  const GoodputInputs in = simple_job(1e-5, 4096);
  const GoodputResult g = goodput(in);
  // 1e-5 x 4,096 GPUs = 0.04096 per hour; over 1,000 h: 40.96 interruptions, MTBF 24.4 h.
  CHECK(g.unexpected_interruptions == Approx(40.96));
  CHECK(g.mtbf_hours == Approx(1 / 0.04096));
  CHECK(g.p_any_failure == Approx(1 - std::exp(-40.96)));
  const double tau = std::sqrt(2 * 30 * g.mtbf_hours * 3600);  // Young
  CHECK(g.interval_s == Approx(tau));
  CHECK(g.spare_available == Approx(1));
  CHECK(g.lost.repair_wait == Approx(0).margin(1e-9));
  CHECK(g.lost.detection == Approx(40.96 * 60 / 3600));
  CHECK(g.lost.isolation == Approx(40.96 * 120 / 3600));
  CHECK(g.lost.restart == Approx(40.96 * 180 / 3600));
  CHECK(g.lost.restore == Approx(40.96 * 40 / 3600));
  const double running = 1000 - 40.96 * (60 + 120 + 180 + 40) / 3600;
  CHECK(g.lost.checkpoint == Approx(running * 30 / (tau + 30)));
  CHECK(g.lost.rework == Approx(40.96 * (tau + 30) / 2 / 3600));
  // No failures, no checkpoint cost: goodput 1.
  GoodputInputs ideal = simple_job(0, 64);
  ideal.checkpoint_cost.blocking_s = 0;
  CHECK(goodput(ideal).goodput == Approx(1));
}

TEST_CASE("goodput falls with scale, and automation recovers most of it", "[goodput]") {
  double last = 1;
  for (const int gpus : {1024, 4096, 16384, 65536}) {
    const double g = goodput(simple_job(2e-5, gpus)).goodput;
    CHECK(g < last);
    last = g;
  }
  GoodputInputs manual = simple_job(2e-5, 16384), automated = manual;
  manual.recovery = recovery_preset(RecoveryLevel::manual);
  automated.recovery = recovery_preset(RecoveryLevel::automated);
  manual.recovery.spare_nodes = automated.recovery.spare_nodes = 100;
  CHECK(goodput(manual).goodput < goodput(automated).goodput);
  // Manual recovery is NCSA Delta's 2.2 h mean in total.
  const RecoverySpec m = recovery_preset(RecoveryLevel::manual);
  CHECK(m.detection_s + m.isolation_s + m.restart_s == Approx(2.2 * 3600));
}

TEST_CASE("spares: a Poisson repair queue decides how often a failed node waits", "[goodput]") {
  CHECK(poisson_cdf_below(0, 1.0) == 0);
  CHECK(poisson_cdf_below(1, 2.0) == Approx(std::exp(-2.0)));
  CHECK(poisson_cdf_below(3, 2.0) == Approx(std::exp(-2.0) * (1 + 2 + 2)));
  GoodputInputs in = simple_job(1e-5, 4096);
  in.recovery.spare_nodes = 0;  // every hardware failure waits for a repaired node
  in.recovery.repair_s = 36000;
  const GoodputResult g = goodput(in);
  // 0.04096/h x 10 h in repair = 0.41 nodes out; the wait is 10 h / (0.41 + 1).
  CHECK(g.nodes_in_repair == Approx(0.4096));
  CHECK(g.spare_available == 0);
  CHECK(g.lost.repair_wait == Approx(40.96 * 10 / 1.4096));
  // More spares than ever fail: no waiting.
  in.recovery.spare_nodes = 20;
  CHECK(goodput(in).lost.repair_wait < 1e-6);
}

TEST_CASE("an asynchronous checkpoint over a shared fabric slows the steps while it writes",
          "[goodput]") {
  GoodputInputs in = simple_job(0, 64);
  in.checkpoint.mode = CheckpointMode::async;
  in.checkpoint.rule = IntervalRule::fixed;
  in.checkpoint.interval_s = 600;
  in.checkpoint_cost.blocking_s = 0;
  in.checkpoint_cost.write_s = 150;  // writing a quarter of the time
  in.slowdown_while_writing = 2;     // at half speed
  const GoodputResult g = goodput(in);
  CHECK(g.lost.interference == Approx(1000 * 0.25 * 0.5));
  CHECK(g.useful_hours + g.lost.total() == Approx(1000));
  in.checkpoint.mode = CheckpointMode::sync;  // a blocking write competes with nothing
  CHECK(goodput(in).lost.interference == 0);
}

TEST_CASE("a degrading failure slows the job for its repair time instead of stopping it",
          "[goodput]") {
  GoodputInputs in = simple_job(0, 64);
  in.checkpoint_cost.blocking_s = 0;
  in.classes.push_back({"link", {1e-4, FailureScope::gpu}, BlastRadius::degrade, 0.5, false, "t"});
  const GoodputResult g = goodput(in);
  CHECK(g.unexpected_interruptions == 0);
  CHECK(g.degrade_events == Approx(1e-4 * 64 * 1000));
  CHECK(g.lost.degraded == Approx(6.4 * 0.5 * 1.0));  // 6.4 events x half speed x 1 h repair
}
