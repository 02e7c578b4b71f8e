#include "api/link_trace.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim;

TEST_CASE("link trace: bucket averages of piecewise-constant rates", "[link-trace]") {
  // One link of 100 GB/s usable over a 4 s step: 50 GB/s from 0.5 s to 1.5 s, 100 GB/s from
  // 1.5 s to 2 s, idle after: 100 GB moved, utilisation 100 / (100 x 4) = 0.25.
  models::StepResult step;
  step.step_time = sim::Seconds::of(4);
  step.busiest_links.push_back({"leaf0>spine1", "fabric", sim::Bytes::of(100e9), 0.25});
  auto sample = [&](double at_s, double gbps) {
    models::TraceEvent e;
    e.name = "GB/s";
    e.track = "link leaf0>spine1";
    e.start_us = at_s * 1e6;
    e.value = gbps;
    step.trace.push_back(e);
  };
  sample(0.5, 50);
  sample(1.5, 100);
  sample(2.0, 0);
  step.busiest_links.push_back(
      {"untraced", "nvlink", sim::Bytes::of(1e9), 0.1});  // no counters: left out

  const nlohmann::json j = api::link_trace_json(step, 4);
  CHECK(j["format"] == "fabricsim-link-trace-1");
  CHECK(j["bucket_s"] == 1.0);
  REQUIRE(j["links"].size() == 1);
  const nlohmann::json& link = j["links"][0];
  CHECK(link["usable_GBps"].get<double>() == Approx(100));
  const std::vector<double> u = link["utilization"];
  // Bucket 0: 0.5 s at 50 GB/s = 25 GB of 100; bucket 1: 0.5 s at 50 + 0.5 s at 100 = 75 GB.
  REQUIRE(u.size() == 4);
  CHECK(u[0] == Approx(0.25));
  CHECK(u[1] == Approx(0.75));
  CHECK(u[2] == 0.0);
  CHECK(u[3] == 0.0);
  // The buckets average to the step's utilisation.
  CHECK((u[0] + u[1] + u[2] + u[3]) / 4 == Approx(0.25));

  CHECK_THROWS_AS(api::link_trace_json(step, 0), std::invalid_argument);
}
