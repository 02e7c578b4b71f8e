#include "api/link_trace.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabricsim::api {

nlohmann::json link_trace_json(const models::StepResult& step, int buckets) {
  if (buckets < 1) throw std::invalid_argument("link_trace_json: buckets must be at least 1");
  const double step_s = step.step_time.s();
  const double bucket_s = step_s / buckets;
  // The rate counters of each link: (start in s, rate in bytes/s), in time order.
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  for (const models::TraceEvent& e : step.trace) {
    if (e.value && e.track.starts_with("link ")) {
      series[e.track.substr(5)].emplace_back(e.start_us * 1e-6, *e.value * 1e9);
    }
  }
  nlohmann::json links = nlohmann::json::array();
  for (const models::LinkUse& link : step.busiest_links) {
    const auto s = series.find(link.name);
    if (s == series.end() || link.utilization <= 0 || step_s <= 0) continue;
    const double usable = link.bytes.count() / (link.utilization * step_s);
    // A rate holds from its sample to the next (the last to the end of the step); each bucket
    // gets the bytes that fall into it.
    std::vector<double> bytes(static_cast<size_t>(buckets), 0.0);
    const auto& points = s->second;
    for (size_t i = 0; i < points.size(); ++i) {
      const double from = points[i].first;
      const double to = i + 1 < points.size() ? points[i + 1].first : step_s;
      const double rate = points[i].second;
      if (rate <= 0 || to <= from) continue;
      const int first = std::clamp(static_cast<int>(from / bucket_s), 0, buckets - 1);
      const int last = std::clamp(static_cast<int>(to / bucket_s), 0, buckets - 1);
      for (int b = first; b <= last; ++b) {
        const double lo = std::max(from, b * bucket_s);
        const double hi = std::min(to, (b + 1) * bucket_s);
        if (hi > lo) bytes[static_cast<size_t>(b)] += rate * (hi - lo);
      }
    }
    nlohmann::json utilization = nlohmann::json::array();
    for (double b : bytes)
      utilization.push_back(b / (usable * bucket_s));
    links.push_back({{"link", link.name},
                     {"kind", link.kind},
                     {"bytes", link.bytes.count()},
                     {"usable_GBps", usable * 1e-9},
                     {"utilization", utilization}});
  }
  return {{"format", "fabricsim-link-trace-1"},
          {"step_time_s", step_s},
          {"bucket_s", bucket_s},
          {"buckets", buckets},
          {"links", links}};
}

}  // namespace fabricsim::api
