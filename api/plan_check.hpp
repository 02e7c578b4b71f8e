#pragma once
// What experts chose, against the search: for a published training run, the rank its plan gets
// in the analytical ranking of every plan for the same model, batch and GPUs, and how much faster
// the predicted best plan would be.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/plan_search.hpp"
#include "calibration/cases.hpp"

namespace fabricsim::api {

struct PublishedPlanCheck {
  std::string case_id;
  PlanResult published;  ///< analytical
  PlanResult best;       ///< analytical
  /// 1-based rank of the published plan; when `rank_at_least`, the search ranked `rank - 1`
  /// plans faster and stopped ranking there (branch and bound), so the rank is at least this.
  int rank = 0;
  bool rank_at_least = false;
  long long fits = 0;  ///< plans that fit memory (ranked or bounded out)
  double gain = 0;     ///< published step / best step - 1 (0 when the published plan is best)
};

/// Checks one scenario whose plan is the published one (memory is enforced: a published plan
/// the memory model rejects gets the fewest layers recomputed or offloaded that fit when the
/// constraints allow those remedies, else it is reported as rejected).
PublishedPlanCheck check_published_plan(const Scenario& scenario,
                                        const PlanConstraints& constraints,
                                        const SearchOptions& options);
/// The scenario of a training case, with memory enforced.
Scenario published_scenario(const calibration::Case& c);

nlohmann::json check_to_json(const PublishedPlanCheck& c);
/// A Markdown table, one row per case.
std::string checks_to_markdown(const std::vector<PublishedPlanCheck>& checks);

}  // namespace fabricsim::api
