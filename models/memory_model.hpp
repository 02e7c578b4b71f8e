#pragma once
// Per-GPU memory of each pipeline stage: weights, gradients and optimizer states (sharded by the
// ZeRO stage), the activations of the micro-batches the schedule keeps in flight, and a framework
// reserve; compared with the GPU's HBM.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/parallel_plan.hpp"
#include "models/workload.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

struct StageMemory {
  int stage = 0;
  double weights = 0;  ///< bytes
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double framework = 0;
  int in_flight = 0;  ///< micro-batch chunks whose activations are alive at the peak
  double total() const { return weights + gradients + optimizer + activations + framework; }
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  double capacity = 0;  ///< bytes of HBM per GPU
  bool fits = true;
  int worst_stage = 0;
  std::string reason;  ///< why it does not fit, with the breakdown
};

/// Framework reserve: CUDA context, NCCL buffers and allocator fragmentation.
inline constexpr double kFrameworkReserveBytes = 3.0 * 1024 * 1024 * 1024;

/// `plan` may differ from the workload's in recompute_layers and offload_layers only (what a
/// search for the fewest that fit varies without lowering the workload again).
MemoryReport memory_report(const Workload& workload, const ParallelPlan& plan,
                           const TrainingConfig& training, const topologies::GpuSpec& gpu);
nlohmann::json memory_to_json(const MemoryReport& report);
/// "weights 1.2, gradients ..., framework 3.0" (GiB): the one text of a stage's memory.
std::string memory_breakdown_text(const StageMemory& stage);

}  // namespace fabricsim::models
