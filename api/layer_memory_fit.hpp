#pragma once
// Fitting a plan into HBM the way training recipes do when its activations do not fit: recompute
// the first layers of each model chunk fully (Megatron's recompute_num_layers) or keep their
// activations in host memory (cpu_offloading_num_layers), the fewest layers that fit, whichever
// of the two steps faster. Published runs fit by construction; a case that leaves its
// recomputation unstated gets this (`fabricsim validate`).

#include <optional>
#include <string>

#include "api/evaluator.hpp"
#include "api/scenario.hpp"

namespace fabricsim::api {

struct LayerMemoryFit {
  models::ParallelPlan plan;  ///< the scenario's, or with recompute_layers / offload_layers set
  bool changed = false;       ///< the scenario did not fit and a mitigation does
  std::string summary;        ///< "offload 47 layers per chunk", "" when unchanged
};

/// The two ways to fit a plan whose activations overflow HBM: the fewest layers per model chunk
/// recomputed fully, and the fewest offloaded (each absent when no count fits; both absent when
/// the plan fits already or does not divide).
struct LayerMemoryRemedies {
  std::optional<models::ParallelPlan> recompute;
  std::optional<models::ParallelPlan> offload;
};
LayerMemoryRemedies layer_memory_remedies(const PreparedPlan& prepared,
                                          const topologies::GpuSpec& gpu);

/// The fewest layers per model chunk recomputed or offloaded that make `scenario` fit on
/// `cluster`, the faster of the two at analytical fidelity; the plan unchanged when it fits
/// already, does not divide, or fits with neither (every layer recomputed or offloaded).
LayerMemoryFit fit_layer_memory(const Evaluator& cluster, const Scenario& scenario);
/// The same for a scenario already prepared on `cluster`.
LayerMemoryFit fit_layer_memory(const Evaluator& cluster, const PreparedPlan& prepared);

}  // namespace fabricsim::api
