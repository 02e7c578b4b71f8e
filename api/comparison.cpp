#include "api/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/input_error.hpp"

namespace fabricsim::api {
namespace {

const models::StageBreakdown& critical(const TrainingReport& r) {
  return r.step->stages[static_cast<size_t>(r.step->critical_stage)];
}

}  // namespace

std::vector<ComparisonRow> compare_scenarios(const std::vector<std::string>& labels,
                                             const std::vector<Scenario>& scenarios,
                                             const models::PriceTable& prices) {
  std::vector<ComparisonRow> rows;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    ComparisonRow row;
    row.label = labels[i];
    row.report = run_training(scenarios[i]);
    const TrainingReport& r = row.report;
    if (r.step) {
      const auto price = prices.systems.find(r.scenario.system());
      if (price != prices.systems.end() && price->second.gpu_hour_usd) {
        // GPU-hours per million tokens x price.
        row.usd_per_million_tokens =
            *price->second.gpu_hour_usd * r.scenario.gpus / (r.metrics.tokens_per_s * 3600) * 1e6;
      }
    }
    rows.push_back(std::move(row));
  }
  const TrainingReport& base = rows.front().report;
  if (!base.step) return rows;
  for (ComparisonRow& row : rows) {
    const TrainingReport& r = row.report;
    if (!r.step) continue;
    row.step_change = r.metrics.step_time_s / base.metrics.step_time_s - 1;
    row.relative_efficiency = r.metrics.tokens_per_s_per_gpu / base.metrics.tokens_per_s_per_gpu;
    row.throughput_change = row.relative_efficiency - 1;
    // The critical stage's components, in the order `run` prints them.
    for (const models::BreakdownComponent& c : models::kBreakdownComponents) {
      const double change = (critical(r).*c.field - critical(base).*c.field).s();
      if (std::abs(change) > std::abs(row.moved_s)) {
        row.moved = std::string(c.label);
        row.moved_s = change;
      }
    }
  }
  return rows;
}

std::vector<std::pair<std::string, nlohmann::json>> vary(const nlohmann::json& base,
                                                         const std::string& spec,
                                                         const std::string& where) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || spec[0] != '/' || eq + 1 == spec.size()) {
    throw sim::InputError(where, "--vary",
                          fmt::format("expected /json/pointer=v1,v2,..., got \"{}\"", spec));
  }
  const std::string pointer = spec.substr(0, eq);
  std::vector<std::pair<std::string, nlohmann::json>> out;
  std::stringstream values(spec.substr(eq + 1));
  for (std::string value; std::getline(values, value, ',');) {
    if (value.empty()) {
      throw sim::InputError(where, "--vary", fmt::format("empty value in \"{}\"", spec));
    }
    nlohmann::json doc = base;
    apply_assignments(doc, {pointer + "=" + value}, where);
    out.emplace_back(pointer + "=" + value, std::move(doc));
  }
  return out;
}

nlohmann::json comparison_to_json(const std::vector<ComparisonRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ComparisonRow& row : rows) {
    nlohmann::json j = {{"label", row.label}, {"run", report_to_json(row.report)}};
    if (row.report.step) {
      j["step_change"] = row.step_change;
      j["throughput_change"] = row.throughput_change;
      j["relative_efficiency"] = row.relative_efficiency;
      j["usd_per_million_tokens"] =
          row.usd_per_million_tokens ? nlohmann::json(*row.usd_per_million_tokens) : nullptr;
      j["moved"] = row.moved.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.moved);
      j["moved_s"] = row.moved_s;
    }
    out.push_back(j);
  }
  return {{"baseline", rows.front().label}, {"rows", out}};
}

std::string comparison_to_text(const std::vector<ComparisonRow>& rows) {
  size_t width = 8;
  for (const ComparisonRow& r : rows)
    width = std::max(width, r.label.size());
  std::string out =
      fmt::format("{:<{}}  {:>9} {:>7} {:>10} {:>7} {:>6} {:>6} {:>9}  {}\n", "scenario", width,
                  "step s", "chg", "tok/s/GPU", "chg", "MFU", "eff.", "$/Mtok", "moved most (s)");
  for (size_t i = 0; i < rows.size(); ++i) {
    const ComparisonRow& row = rows[i];
    const TrainingReport& r = row.report;
    if (!r.step) {
      out += fmt::format("{:<{}}  infeasible: {}\n", row.label, width,
                         r.infeasible ? r.infeasible->reason : r.memory.reason);
      continue;
    }
    const std::string cost =
        row.usd_per_million_tokens ? fmt::format("{:.2f}", *row.usd_per_million_tokens) : "n/a";
    const std::string moved = i == 0 ? "(baseline)"
                              : row.moved.empty()
                                  ? "-"
                                  : fmt::format("{} {:+.4f}", row.moved, row.moved_s);
    out += fmt::format(
        "{:<{}}  {:>9.4f} {:>+6.1f}% {:>10.1f} {:>+6.1f}% {:>5.1f}% {:>5.1f}% {:>9}  {}\n",
        row.label, width, r.metrics.step_time_s, 100 * row.step_change,
        r.metrics.tokens_per_s_per_gpu, 100 * row.throughput_change, 100 * r.metrics.mfu,
        100 * row.relative_efficiency, cost, moved);
  }
  out +=
      "chg: against the baseline (first row); eff.: tokens/s per GPU relative to the baseline; "
      "$/Mtok: rental price x GPU-hours per million tokens\n";
  // What the rows rest on (`run --json` carries it per row): one line when they share it.
  auto statement = [](const ComparisonRow& r) {
    return confidence_with_calibration(r.report.confidence);
  };
  const bool shared = std::all_of(rows.begin(), rows.end(), [&](const ComparisonRow& r) {
    return statement(r) == statement(rows.front());
  });
  if (shared && !rows.empty()) {
    out += "confidence: " + statement(rows.front()) + "\n";
  } else {
    for (const ComparisonRow& r : rows)
      out += fmt::format("confidence on {}: {}\n", r.label, statement(r));
  }
  return out;
}

}  // namespace fabricsim::api
