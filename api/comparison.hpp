#pragma once
// What-if studies: a baseline scenario and its variants (other files, or one field set to a list
// of values), each simulated, in one table against the baseline: step time, tokens/s per GPU,
// MFU, throughput per GPU relative to the baseline, cost per million tokens, the differences in
// percent and the step component that moved most.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/training_run.hpp"
#include "models/cost_model.hpp"

namespace fabricsim::api {

struct ComparisonRow {
  std::string label;  ///< file name, or "pointer=value"
  TrainingReport report;
  std::optional<double> usd_per_million_tokens;  ///< rental price x GPU-hours per token
  double step_change = 0;                        ///< step time / baseline's - 1
  double throughput_change = 0;                  ///< tokens/s per GPU / baseline's - 1
  double relative_efficiency = 0;                ///< tokens/s per GPU / baseline's
  std::string moved;   ///< the breakdown component whose time changed most
  double moved_s = 0;  ///< its change, seconds (+ slower)
};

/// Simulates the scenarios (the first is the baseline) and compares them.
std::vector<ComparisonRow> compare_scenarios(const std::vector<std::string>& labels,
                                             const std::vector<Scenario>& scenarios,
                                             const models::PriceTable& prices);

/// "/pointer=v1,v2,...": one variant document per value (each parsed as JSON when it is valid
/// JSON, else taken as a string); the labels are "/pointer=v".
std::vector<std::pair<std::string, nlohmann::json>> vary(const nlohmann::json& base,
                                                         const std::string& spec,
                                                         const std::string& where);

nlohmann::json comparison_to_json(const std::vector<ComparisonRow>& rows);
std::string comparison_to_text(const std::vector<ComparisonRow>& rows);

}  // namespace fabricsim::api
