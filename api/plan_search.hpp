#pragma once
// The best parallelism plans for a scenario's model, batch and GPUs: enumerate the plan space
// (api/plan_space), drop what does not fit in memory, rank the rest with the analytical backend
// (contention-free closed forms), then re-simulate the best few at flow fidelity (max-min sharing
// on the real topology) and rank those again. Deterministic: the same result for any thread
// count (each plan is evaluated on its own; ties break by enumeration order).

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/evaluator.hpp"
#include "api/plan_space.hpp"
#include "api/scenario.hpp"
#include "models/step_simulator.hpp"

namespace fabricsim::api {

/// One plan's outcome; infeasibility is a value (`rejected` set, with the reason).
struct PlanResult {
  models::ParallelPlan plan;
  models::Backend backend = models::Backend::analytical;
  std::optional<Rejection> rejected;
  std::string reason;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double memory_gib = 0;  ///< worst stage, per GPU
  double capacity_gib = 0;
  models::StageBreakdown breakdown;  ///< the critical stage
  bool feasible() const { return !rejected; }
};

/// What a plan needs before it is simulated: whether it fits, and a lower bound on its step time
/// (the critical stage's compute stream alone: every micro-batch's kernels plus the optimizer;
/// communication, bubbles and contention only add to it).
struct PlanScreen {
  std::optional<Rejection> rejected;
  std::string reason;
  double memory_gib = 0;
  double capacity_gib = 0;
  double lower_bound_s = 0;
  /// A plan whose activations overflow: the same shape with the fewest layers recomputed or
  /// offloaded that fit (api/layer_memory_fit), which the search tries in its place.
  std::vector<models::ParallelPlan> remedies;
};

/// How the search sees a scenario: a screen and an evaluation of one plan at a backend, both
/// safe to call from several threads at once.
struct PlanEvaluator {
  std::function<PlanScreen(const models::ParallelPlan&)> screen;
  std::function<PlanResult(const models::ParallelPlan&, models::Backend)> evaluate;
};

/// The search's view of an api::Evaluator (the cluster, topology, calibration profile and
/// route caches resolved once): each call lowers one plan of the scenario, checks its memory
/// and, for evaluate, simulates one step.
class ScenarioEvaluator {
 public:
  explicit ScenarioEvaluator(const Scenario& scenario);
  PlanScreen screen(const models::ParallelPlan& plan) const;
  PlanResult evaluate(const models::ParallelPlan& plan, models::Backend backend) const;
  /// GPUs of one scale-up (NVLink) domain: the largest TP the search tries by default.
  int domain() const;
  PlanEvaluator functions() const;
  const Evaluator& cluster() const { return evaluator_; }

 private:
  Scenario with_plan(const models::ParallelPlan& plan) const;

  Scenario scenario_;
  Evaluator evaluator_;
};

struct SearchOptions {
  int top = 5;  ///< layouts re-simulated at flow fidelity, each its best plan (0: analytical only)
  int threads = 1;  ///< 0: every core
  /// Best shapes (sizes, micro-batch, recomputation, ZeRO) whose overlap and order variants
  /// are searched.
  int variant_shapes = 8;
  /// How many of the best shapes the ranking keeps exact: a shape whose lower bound exceeds the
  /// step time of the `keep`-th best one simulated so far is not simulated (branch and bound).
  /// 0: simulate every shape that fits.
  int keep = 32;
};

struct PlanSearch {
  std::vector<PlanResult> best;    ///< the top plans, flow fidelity, fastest first
  std::vector<PlanResult> ranked;  ///< every feasible plan, analytical, fastest first
  std::map<Rejection, long long> rejected;
  long long evaluated = 0;  ///< plans simulated (analytical, plus the flow re-simulations)
  long long candidates = 0;
  long long bounded = 0;     ///< shapes that fit but were not simulated: bound above the best kept
  double search_wall_s = 0;  ///< enumeration + analytical ranking
  double refine_wall_s = 0;  ///< flow re-simulation of the top plans
  int threads = 1;
};

/// Searches the plans of `scenario`'s model, training and GPU count. `evaluate` defaults to a
/// ScenarioEvaluator of the scenario.
PlanSearch search_plans(const Scenario& scenario, const PlanConstraints& constraints,
                        const SearchOptions& options, const PlanEvaluator& evaluate, int domain);
PlanSearch search_plans(const Scenario& scenario, const PlanConstraints& constraints,
                        const SearchOptions& options);

/// Whether two plans make the same choices (sizes, micro-batch, recompute, ZeRO); the overlap
/// switches and order are ignored (a published plan rarely states them).
bool same_shape(const models::ParallelPlan& a, const models::ParallelPlan& b);
/// Same sizes, micro-batch and rank order (ZeRO stage, recomputation and overlaps may differ).
bool same_layout(const models::ParallelPlan& a, const models::ParallelPlan& b);
/// 1-based analytical rank of the first ranked plan with the shape of `plan`; 0 when absent
/// (rejected, or bounded out of the ranking).
int rank_of_shape(const PlanSearch& search, const models::ParallelPlan& plan);

/// "TP2 PP1 DP4 CP1 mb1 zero1 selective" (EP and VP when above 1).
std::string plan_label(const models::ParallelPlan& plan);
nlohmann::json plan_result_json(const PlanResult& r);
/// {"confidence": {...}, "plans": [...top...], "rejected": {reason: count}, "evaluated": N, ...}.
nlohmann::json search_to_json(const PlanSearch& search, const Scenario& scenario);
std::string search_to_text(const PlanSearch& search, const Scenario& scenario);

}  // namespace fabricsim::api
