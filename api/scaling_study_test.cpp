#include "api/scaling_study.hpp"

#include <catch2/catch.hpp>
#include <numeric>

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// llama2-7b cut to 4 layers, TP8 inside each node, DP across nodes, analytical backend.
nlohmann::json scenario() {
  return nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "zero": 1},
    "training": {"global_batch": 4, "seq_len": 4096},
    "simulation": {"backend": "analytical"}
  })");
}

ScalingStudy study(std::vector<int> gpus, std::vector<ScalingMode> modes, int strong_batch = 0) {
  ScalingStudy s;
  s.systems = {"dgx-h100"};
  s.gpus = std::move(gpus);
  s.modes = std::move(modes);
  s.strong_global_batch = strong_batch;
  return s;
}

double loss_sum(const ScalingRow& row) {
  double sum = 0;
  for (const ScalingLoss& l : row.losses)
    sum += l.points;
  return sum;
}

}  // namespace

TEST_CASE("scaling study: baseline, loss attribution and weak batches", "[scale]") {
  std::vector<ScalingRow> seen;
  const auto rows = run_scaling_study(
      scenario(), "test.json", study({8, 16, 32}, {ScalingMode::weak, ScalingMode::strong}, 32),
      [&](const ScalingRow& r) { seen.push_back(r); });
  REQUIRE(rows.size() == 6);
  // on_row sees every row once, in the order returned: weak 8, 16, 32 then strong 8, 16, 32.
  REQUIRE(seen.size() == rows.size());
  const int sizes[] = {8, 16, 32};
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(seen[i].gpus == rows[i].gpus);
    CHECK(seen[i].mode == rows[i].mode);
    CHECK(seen[i].step_time_s == rows[i].step_time_s);
    CHECK(rows[i].gpus == sizes[i % 3]);
    CHECK(rows[i].mode == (i < 3 ? ScalingMode::weak : ScalingMode::strong));
    CHECK(rows[i].system == "dgx-h100");
  }
  for (const ScalingRow& r : rows) {
    INFO(to_string(r.mode) << " " << r.gpus << " GPUs");
    REQUIRE(r.feasible);
    REQUIRE(r.efficiency);
    CHECK(r.dp == r.gpus / 8);
    // Weak scaling keeps 4 sequences per replica; strong keeps 32 in all.
    CHECK(r.global_batch == (r.mode == ScalingMode::weak ? 4 * r.dp : 32));
    // The losses (one per component, "other" included) add up to what efficiency lost.
    CHECK(r.losses.size() == 9);
    CHECK(loss_sum(r) == Approx(1 - *r.efficiency).margin(1e-9));
    for (size_t i = 1; i < r.losses.size(); ++i)
      CHECK(r.losses[i - 1].points >= r.losses[i].points);
    CHECK(r.step_time_s > 0);
    CHECK(r.mfu > 0);
    CHECK(r.mfu < 1);
  }
  // The baseline is the reference: efficiency exactly 1 and nothing lost.
  for (size_t first : {0, 3}) {
    CHECK(*rows[first].efficiency == 1.0);
    for (const ScalingLoss& l : rows[first].losses)
      CHECK(l.points == 0.0);
  }
}

TEST_CASE("scaling study: sizes the plan cannot use become infeasible rows", "[scale]") {
  nlohmann::json s = scenario();
  s["parallelism"]["pp"] = 2;  // 16 GPUs per model replica
  s["system"]["gpus"] = 16;
  std::vector<int> order;
  const auto rows = run_scaling_study(s, "test.json", study({16, 24, 32}, {ScalingMode::weak}),
                                      [&](const ScalingRow& r) { order.push_back(r.gpus); });
  REQUIRE(rows.size() == 3);
  CHECK(order == std::vector<int>{16, 24, 32});
  CHECK(rows[0].feasible);
  CHECK_FALSE(rows[1].feasible);
  CHECK_THAT(rows[1].reason, Catch::Contains("tp x pp x cp = 16 does not divide 24 GPUs"));
  CHECK_FALSE(rows[1].efficiency);
  CHECK(rows[2].feasible);
  REQUIRE(rows[2].efficiency);
  CHECK(loss_sum(rows[2]) == Approx(1 - *rows[2].efficiency).margin(1e-9));
  // A strong batch that does not divide over the replicas is reported, not thrown.
  const auto strong = run_scaling_study(s, "test.json", study({16, 48}, {ScalingMode::strong}, 4),
                                        [](const ScalingRow&) {});
  REQUIRE(strong.size() == 2);
  CHECK(strong[0].feasible);
  CHECK_FALSE(strong[1].feasible);
  CHECK_THAT(strong[1].reason, Catch::Contains("does not divide into dp x micro_batch = 3 x 1"));
  // A baseline that does not fit leaves the larger sizes without an efficiency.
  const auto no_base = run_scaling_study(s, "test.json", study({24, 32}, {ScalingMode::weak}),
                                         [](const ScalingRow&) {});
  REQUIRE(no_base.size() == 2);
  CHECK_FALSE(no_base[0].feasible);
  CHECK(no_base[1].feasible);
  CHECK_FALSE(no_base[1].efficiency);
  CHECK(no_base[1].losses.empty());
}

TEST_CASE("scaling study: input errors of the scenario itself are thrown", "[scale]") {
  nlohmann::json s = scenario();
  s["parallelism"]["tp"] = 3;  // 32 heads do not divide by 3, at any size
  s["system"]["gpus"] = 24;
  CHECK_THROWS_AS(
      run_scaling_study(s, "test.json", study({8}, {ScalingMode::weak}), [](const ScalingRow&) {}),
      sim::InputError);
}
