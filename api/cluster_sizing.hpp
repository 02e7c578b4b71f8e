#pragma once
// How many GPUs of which system train a model on a token budget by a deadline, and what that
// costs: per candidate system, the smallest GPU count in whole scale-up domains (a DGX server,
// an NVL72 rack) whose best plan (api/plan_search) meets the deadline, with time to train,
// GPU-hours, energy, facility power, capital or rental cost (models/cost_model) and the scaling
// efficiency at that size.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/confidence.hpp"
#include "api/plan_search.hpp"
#include "models/cost_model.hpp"

namespace fabricsim::api {

struct SizingRequest {
  double tokens = 0;           ///< training tokens (> 0)
  std::optional<double> days;  ///< deadline; or
  std::optional<int> gpus;     ///< a fixed GPU count (rounded up to whole scale-up domains)
  std::vector<std::string> systems;
  int max_gpus = 262144;
  int threads = 1;
};

struct SizingRow {
  std::string system;
  int domain = 0;  ///< GPUs per scale-up domain, the step of the counts tried
  bool met = false;
  std::string reason;  ///< why not met
  int gpus = 0;
  PlanResult best;
  double days = 0;
  double gpu_hours = 0;
  models::FabricCount fabric;
  models::ClusterCost cost;
  int baseline_gpus = 0;  ///< the smallest size tried that fits, for the scaling efficiency
  double scaling_efficiency = 0;
  int searches = 0;
  /// What the system's predictions rest on; absent when no size of it could be read.
  std::optional<Confidence> confidence;
};

/// The plan constraints of a sizing search: one ZeRO stage (1), selective or full
/// recomputation, micro-batches up to 2, no overlap or order variants (docs/models.md).
PlanConstraints sizing_constraints();

/// Sizes every system of the request. `base` is the scenario document (model, training,
/// calibration); its system preset and GPU count are replaced per candidate. Throws
/// sim::InputError for bad requests (no tokens, no deadline nor GPU count, unknown system).
std::vector<SizingRow> size_clusters(const nlohmann::json& base, const SizingRequest& request,
                                     const models::PriceTable& prices);

nlohmann::json sizing_to_json(const std::vector<SizingRow>& rows, const SizingRequest& request,
                              const models::PriceTable& prices);
std::string sizing_to_text(const std::vector<SizingRow>& rows, const SizingRequest& request);

}  // namespace fabricsim::api
