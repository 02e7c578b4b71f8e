#include "api/scaling_series.hpp"

#include <fmt/format.h>

#include <map>

#include "api/validation.hpp"

namespace fabricsim::api {

namespace {

std::string series_of(const calibration::Case& c, const std::string& metric) {
  const std::string model = c.model ? c.model->name : "?";
  const std::string seq = c.model && c.model->seq_len ? std::to_string(*c.model->seq_len) : "?";
  return fmt::format("{} | {} | {} | {} | {}", anchor_group(c), model, seq,
                     c.task.value_or("pretrain"), metric);
}

/// Throughput per GPU in the metric's own unit, or per-GPU tokens per second from a step time
/// and the run's tokens per step, or a time to train's rate per GPU (one benchmark run per
/// GPU-minute: its efficiency is MLPerf's, the baseline's GPU-minutes over the run's); nullopt
/// where the case does not give them.
std::optional<double> per_gpu(const calibration::Case& c, const std::string& metric, double value) {
  if (metric == "time_to_train_min") return 1.0 / (c.gpus * value);
  if (metric != "step_time_s") return value;
  if (!c.parallelism || !c.parallelism->global_batch || !c.model || !c.model->seq_len)
    return std::nullopt;
  return double(*c.parallelism->global_batch) * *c.model->seq_len / (c.gpus * value);
}

}  // namespace

std::vector<ScalingPoint> scaling_points(const std::vector<calibration::Case>& cases,
                                         const std::vector<ValidationRow>& rows) {
  std::map<std::string, const calibration::Case*> by_id;
  for (const calibration::Case& c : cases)
    by_id.emplace(c.id, &c);
  struct Run {
    const calibration::Case* c;
    const ValidationRow* row;
  };
  std::vector<std::string> order;
  std::map<std::string, std::vector<Run>> series;
  for (const ValidationRow* row : primary_rows(rows)) {
    const auto it = by_id.find(row->id);
    if (it == by_id.end() || it->second->kind != calibration::CaseKind::training) continue;
    const std::string key = series_of(*it->second, row->metric);
    auto& runs = series[key];
    if (runs.empty()) order.push_back(key);
    runs.push_back({it->second, row});
  }
  std::vector<ScalingPoint> out;
  for (const std::string& key : order) {
    const std::vector<Run>& runs = series[key];
    const Run* base = &runs.front();
    for (const Run& r : runs) {
      if (r.c->gpus < base->c->gpus) base = &r;
    }
    for (const Run& r : runs) {
      if (r.c->gpus == base->c->gpus) continue;
      ScalingPoint p;
      p.id = r.c->id;
      p.baseline = base->c->id;
      p.series = key;
      p.metric = r.row->metric;
      p.gpus = r.c->gpus;
      p.baseline_gpus = base->c->gpus;
      // Both errors say how optimistic the model is about the run's throughput per GPU; their
      // ratio is how optimistic it is about the change from the baseline.
      p.error = (1 + optimism(*r.row)) / (1 + optimism(*base->row)) - 1;
      const auto m = per_gpu(*r.c, p.metric, r.row->measured);
      const auto mb = per_gpu(*base->c, p.metric, base->row->measured);
      const auto q = per_gpu(*r.c, p.metric, r.row->predicted);
      const auto qb = per_gpu(*base->c, p.metric, base->row->predicted);
      if (m && mb && q && qb) {
        p.measured_efficiency = *m / *mb;
        p.predicted_efficiency = *q / *qb;
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace fabricsim::api
