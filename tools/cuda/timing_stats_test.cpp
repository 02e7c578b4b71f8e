#include "tools/cuda/timing_stats.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::tools::cuda;

TEST_CASE("statistics of a known odd-sized sample", "[cuda-tools]") {
  const TimingStats s = summarize_timings({5, 1, 4, 2, 3});
  CHECK(s.median == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.p10 == Approx(1.4));  // rank 0.4 between 1 and 2
  CHECK(s.p90 == Approx(4.6));
  CHECK(s.runs == 5);
}

TEST_CASE("percentiles interpolate linearly like numpy", "[cuda-tools]") {
  const TimingStats s = summarize_timings({10, 40, 20, 30});
  CHECK(s.median == 25);       // mean of the two middle values
  CHECK(s.p10 == Approx(13));  // rank 0.3
  CHECK(s.p90 == Approx(37));  // rank 2.7
  std::vector<double> hundred;
  for (int i = 1; i <= 101; ++i)
    hundred.push_back(i);
  const TimingStats h = summarize_timings(hundred);
  CHECK(h.p10 == 11);
  CHECK(h.median == 51);
  CHECK(h.p90 == 91);
}

TEST_CASE("one sample and no samples", "[cuda-tools]") {
  const TimingStats s = summarize_timings({7.5});
  CHECK(s.median == 7.5);
  CHECK(s.p10 == 7.5);
  CHECK(s.p90 == 7.5);
  CHECK_THROWS(summarize_timings({}));
  CHECK_THROWS(percentile_of_sorted({1, 2}, 101));
}
