#pragma once
// Summary statistics of repeated timings. Percentiles interpolate linearly between the two nearest
// ranks (numpy's default), so the median of an even count is the mean of the two middle values.

#include <vector>

namespace fabricsim::tools::cuda {

struct TimingStats {
  double median = 0;
  double min = 0;
  double max = 0;
  double p10 = 0;
  double p90 = 0;
  int runs = 0;
};

/// The `p`-th percentile (0..100) of `sorted` (ascending, non-empty).
double percentile_of_sorted(const std::vector<double>& sorted, double p);

/// Statistics of `samples` (any order); throws std::invalid_argument when empty.
TimingStats summarize_timings(std::vector<double> samples);

}  // namespace fabricsim::tools::cuda
