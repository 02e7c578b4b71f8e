#include "calibration/fit_quality.hpp"

#include <algorithm>
#include <cmath>

namespace fabricsim::calibration {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

FitQuality fit_quality(const std::vector<double>& predicted, const std::vector<double>& measured) {
  FitQuality q;
  q.points = static_cast<int>(measured.size());
  if (measured.empty()) return q;
  std::vector<double> rel;
  double mean = 0;
  for (double m : measured)
    mean += std::log(m);
  mean /= static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    rel.push_back(std::fabs(predicted[i] - measured[i]) / measured[i]);
    const double lp = std::log(predicted[i]);
    const double lm = std::log(measured[i]);
    ss_res += (lp - lm) * (lp - lm);
    ss_tot += (lm - mean) * (lm - mean);
  }
  q.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0;
  q.median_rel_error = median(rel);
  q.max_rel_error = *std::max_element(rel.begin(), rel.end());
  return q;
}

}  // namespace fabricsim::calibration
