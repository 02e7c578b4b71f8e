#include "models/failure_model.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "sim/unit_parse.hpp"

using namespace fabricsim::models;

TEST_CASE("failure rates parse per GPU, node and job, per hour, day and year", "[reliability]") {
  const FailureRate a = parse_failure_rate("9.2e-6/GPU-h");
  CHECK(a.scope == FailureScope::gpu);
  CHECK(a.per_hour == Approx(9.2e-6));
  // An annualised failure rate: 1%/yr -> 876,000 GPU-h between failures (DATABRICKS).
  const FailureRate afr = parse_failure_rate("1%/GPU-year");
  CHECK(1.0 / afr.per_hour == Approx(876000));
  const FailureRate node = parse_failure_rate(" 2.4 / node-day ");
  CHECK(node.scope == FailureScope::node);
  CHECK(node.per_hour == Approx(0.1));
  CHECK(parse_failure_rate("0/job-h").per_hour == 0);
  for (const char* bad : {"3", "x/GPU-h", "1/rack-h", "1/GPU-week", "-1/GPU-h", "1/GPU", "1%"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_failure_rate(bad), fabricsim::sim::UnitError);
  }
}

TEST_CASE("default classes reproduce the Llama 3 405B interruption counts", "[reliability]") {
  const auto classes = default_failure_classes();
  REQUIRE(classes.size() == failure_class_names().size());
  // 16,384 GPUs in 2,048 nodes for 54 days: 419 unexpected interruptions, job MTBF 3.09 h.
  const double hours = 54 * 24;
  const JobFailureRates r = job_failure_rates(classes, 16384, 2048);
  CHECK(r.interruptions_per_hour * hours == Approx(419));
  CHECK(r.mtbf_hours() == Approx(3.09).epsilon(0.002));
  // 419 - 63 software ones need a node out of service.
  CHECK(r.repair_per_hour * hours == Approx(419 - 63));
  // GPU-related: 148 + 72 + 19 + 17 + 6 + 6 = 268 of 419 = 64.0%. The published 58.7% is the sum
  // of the table's percentages, which disagree with its counts (148 is 35.3%, printed 30.1%).
  double gpu = 0;
  for (const FailureClass& c : classes) {
    CHECK_FALSE(c.source.empty());
    if (c.name == "gpu" || c.name == "hbm") gpu += events_per_hour(c, 16384, 2048) * hours;
  }
  CHECK(gpu == Approx(268));
  CHECK(gpu / 419 == Approx(0.640).epsilon(0.001));
  CHECK(148.0 / 16384 * 365 / 54 == Approx(0.061).epsilon(0.01));
}

TEST_CASE("expected interruptions are rate x count x time, by scope", "[reliability]") {
  std::vector<FailureClass> classes = {
      {"gpu", {1e-5, FailureScope::gpu}, BlastRadius::job, 0, true, "t"},
      {"host", {2e-5, FailureScope::node}, BlastRadius::job, 0, true, "t"},
      {"software", {1e-3, FailureScope::job}, BlastRadius::job, 0, false, "t"},
      {"nvlink", {1e-4, FailureScope::gpu}, BlastRadius::degrade, 0.25, false, "t"},
  };
  const JobFailureRates r = job_failure_rates(classes, 1024, 128);
  CHECK(r.interruptions_per_hour == Approx(1e-5 * 1024 + 2e-5 * 128 + 1e-3));
  CHECK(r.repair_per_hour == Approx(1e-5 * 1024 + 2e-5 * 128));
  CHECK(r.degrade_per_hour == Approx(1e-4 * 1024));
  CHECK(r.degrade_slowdown_hours_per_hour == Approx(1e-4 * 1024 * 0.25));
  CHECK(r.mtbf_hours() == Approx(1.0 / r.interruptions_per_hour));
  CHECK(std::isinf(job_failure_rates({}, 8, 1).mtbf_hours()));
}
