#include "tools/cuda/timing_stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fabricsim::tools::cuda {

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) throw std::invalid_argument("percentile of an empty sample");
  if (p < 0 || p > 100) throw std::invalid_argument("percentile outside 0..100");
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * weight;
}

TimingStats summarize_timings(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("no timings to summarize");
  std::sort(samples.begin(), samples.end());
  TimingStats s;
  s.median = percentile_of_sorted(samples, 50);
  s.min = samples.front();
  s.max = samples.back();
  s.p10 = percentile_of_sorted(samples, 10);
  s.p90 = percentile_of_sorted(samples, 90);
  s.runs = static_cast<int>(samples.size());
  return s;
}

}  // namespace fabricsim::tools::cuda
