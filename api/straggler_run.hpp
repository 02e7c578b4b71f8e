#pragma once
// The effect of a scenario's stragglers: its step simulated with every rank at nominal speed and
// with the slow ranks of its "stragglers" section, both rank by rank (full_ranks), so the
// synchronous step's real dependencies carry the delay; and which group's waiting absorbed it.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/scenario.hpp"
#include "models/step_simulator.hpp"

namespace fabricsim::api {

struct StragglerReport {
  int slow_ranks = 0;  ///< GPUs whose kernels are slow
  int slow_links = 0;  ///< NIC links running slow
  double worst_factor = 1;
  double nominal_step_s = 0;
  double straggler_step_s = 0;
  double slowdown = 1;  ///< straggler / nominal step time
  /// Extra time per stage-averaged rank, by breakdown component (compute, TP, CP, EP, PP,
  /// bubble, DP, optimizer), summed over the stages.
  std::vector<std::pair<std::string, double>> added_s;
  std::string propagated_through;  ///< the waiting component that grew most ("none" if none)
};

/// Throws InputError when the scenario has no stragglers or its plan does not fit.
StragglerReport run_stragglers(const Scenario& scenario);

nlohmann::json stragglers_to_json(const StragglerReport& r);
std::string stragglers_to_text(const StragglerReport& r);

}  // namespace fabricsim::api
