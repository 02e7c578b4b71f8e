#pragma once
// How a training record of the case format becomes a scenario. Fields a case leaves unknown take
// one documented default, the same for every case (docs/validation.md lists them).

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/cases.hpp"
#include "models/bridge_recipes.hpp"

namespace fabricsim::api {

/// The tensor, pipeline, context and data-parallel sizes of a case: those it states, an unstated
/// context size of 1 (sources name context parallelism when they use it), and the one size the
/// GPU count then determines. `searched` when two or more sizes stay unknown (a source that does
/// not state its plan): the scenario holds a placeholder plan and `fixed` the sizes stated, for a
/// plan search (api/plan_search) to choose the rest, the way a user of the same software would.
struct CasePlanSizes {
  int tp = 1, pp = 1, cp = 1, dp = 1;
  bool searched = false;
  /// Only the micro-batch is searched: the case states its plan but not its micro-batch. A
  /// published benchmark ran the micro-batch its authors tuned, which sets how many gradient
  /// accumulation steps there are and so how much of the data-parallel traffic hides behind
  /// compute (fully sharded runs gather the parameters again every micro-batch; Megatron's
  /// overlapped reductions run only beside the last one): the fastest one that fits stands for it.
  bool micro_batch_searched = false;
  std::map<std::string, int> fixed;  ///< what the case states: "tp", "pp", "cp", "dp", "ep", ...
};
CasePlanSizes case_plan_sizes(const calibration::Case& c);

/// The plan a Megatron-Bridge case's release ran where its table misprints it
/// (models::bridge_plan_fix), or nullptr.
const models::BridgePlanFix* case_plan_fix(const calibration::Case& c);

/// The layers per chunk a Megatron-Bridge FSDP case of unstated recomputation offloads, as its
/// release's scripts do (models::bridge_offload_layers); 0 for any other case.
int case_offload_layers(const calibration::Case& c);

/// The scenario JSON for a training case.
nlohmann::json training_case_scenario(const calibration::Case& c);

}  // namespace fabricsim::api
