#pragma once
// What the model and calibration tests share: the GPU most of them run on and a model, plan and
// training configuration to lower together.

#include "models/parallel_plan.hpp"
#include "models/transformer.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::testing {

inline const topologies::GpuSpec& h100() {
  return *topologies::find_gpu("H100-SXM5");
}

struct Case {
  models::TransformerConfig model;
  models::ParallelPlan plan;
  models::TrainingConfig training;
};

}  // namespace fabricsim::testing
