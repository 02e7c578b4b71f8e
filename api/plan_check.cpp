#include "api/plan_check.hpp"

#include <fmt/format.h>

#include "api/layer_memory_fit.hpp"
#include "api/plan_search.hpp"
#include "api/training_case.hpp"

namespace fabricsim::api {

Scenario published_scenario(const calibration::Case& c) {
  nlohmann::json doc = training_case_scenario(c);
  doc["simulation"]["ignore_memory"] = false;
  const sim::JsonDocument parsed(doc, "case " + c.id);
  return read_scenario(parsed.root());
}

PublishedPlanCheck check_published_plan(const Scenario& scenario,
                                        const PlanConstraints& constraints,
                                        const SearchOptions& options) {
  PublishedPlanCheck out;
  const ScenarioEvaluator evaluator(scenario);
  // The published run fitted: where the memory model disagrees, the search's remedies apply to
  // its plan as to every other (fewest layers recomputed or offloaded that fit).
  const models::ParallelPlan published =
      constraints.fit_layers ? fit_layer_memory(evaluator.cluster(), scenario).plan : scenario.plan;
  out.published = evaluator.evaluate(published, models::Backend::analytical);
  SearchOptions o = options;
  o.top = 0;
  const PlanSearch search =
      search_plans(scenario, constraints, o, evaluator.functions(), evaluator.domain());
  out.fits = static_cast<long long>(search.ranked.size()) + search.bounded;
  if (!search.ranked.empty()) out.best = search.ranked.front();
  if (!out.published.feasible()) return out;
  int faster = 0;
  for (const PlanResult& r : search.ranked) {
    if (r.step_time_s < out.published.step_time_s) ++faster;
  }
  out.rank = faster + 1;
  // The ranking is exact up to the keep-th shape; past its slowest plan, bounded-out shapes
  // may be faster than the published plan too.
  out.rank_at_least = search.bounded > 0 && !search.ranked.empty() &&
                      out.published.step_time_s > search.ranked.back().step_time_s;
  if (search.ranked.empty() || out.best.step_time_s >= out.published.step_time_s) {
    out.best = out.published;
  }
  out.gain = out.published.step_time_s / out.best.step_time_s - 1;
  return out;
}

nlohmann::json check_to_json(const PublishedPlanCheck& c) {
  nlohmann::json j = {{"case", c.case_id},
                      {"published", plan_result_json(c.published)},
                      {"best", plan_result_json(c.best)},
                      {"fits", c.fits}};
  if (c.published.feasible()) {
    j["rank"] = c.rank;
    j["rank_at_least"] = c.rank_at_least;
    j["gain"] = c.gain;
  }
  return j;
}

std::string checks_to_markdown(const std::vector<PublishedPlanCheck>& checks) {
  std::string out =
      "| case | published plan | rank | predicted best plan | predicted gain |\n"
      "|---|---|---:|---|---:|\n";
  for (const PublishedPlanCheck& c : checks) {
    if (!c.published.feasible()) {
      out += fmt::format("| {} | {} | rejected: {} | {} | |\n", c.case_id,
                         plan_label(c.published.plan), to_string(*c.published.rejected),
                         c.best.step_time_s > 0 ? plan_label(c.best.plan) : "none fits");
      continue;
    }
    out += fmt::format("| {} | {} | {}{} of {} | {} | {:+.1f}% |\n", c.case_id,
                       plan_label(c.published.plan), c.rank_at_least ? ">= " : "", c.rank, c.fits,
                       plan_label(c.best.plan), 100 * c.gain);
  }
  return out;
}

}  // namespace fabricsim::api
