#pragma once
// The order in which each pipeline stage runs its forward and backward passes: 1F1B, and
// Megatron's interleaved 1F1B with virtual stages. Bubbles are not computed here: they appear
// when the schedule is simulated with its dependencies.

#include <vector>

namespace fabricsim::models {

struct PipelineTask {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  ///< model chunk of this stage (virtual stage = chunk * pp + stage)
};

/// Per stage, the tasks in execution order. `microbatches` must be a multiple of `pp` when
/// `vp` > 1 (Megatron's requirement for the interleaved schedule).
std::vector<std::vector<PipelineTask>> pipeline_schedule(int pp, int vp, int microbatches);

/// Largest number of (microbatch, chunk) activations a stage holds at once: forwards done whose
/// backward has not run yet, in schedule order.
int max_in_flight(const std::vector<PipelineTask>& stage_tasks);

}  // namespace fabricsim::models
