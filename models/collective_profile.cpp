#include "models/collective_profile.hpp"

#include "models/nccl_tuner.hpp"

namespace fabricsim::models {

CollectiveProfile default_collective_profile(const topologies::GpuSpec& gpu) {
  CollectiveProfile p;
  if (gpu.nvlink_link_gb_per_s > 0) {
    // NVLink line rate per link and direction is half the bidirectional figure; NCCL's modelled
    // per-link bandwidth for the generation is what its rings achieve.
    const double modelled = NcclTuner::nvlink_link_bandwidth(gpu.generation);
    const double line = gpu.generation == topologies::GpuGeneration::blackwell ? 50.0 : 25.0;
    p.nvlink_efficiency = std::min(1.0, modelled / line);
  }
  p.nvls_factor = gpu.generation == topologies::GpuGeneration::blackwell ? 0.74 : 0.85;
  p.channels = gpu.generation == topologies::GpuGeneration::ampere ? 12 : 16;
  p.source = "defaults derived from NCCL 2.30.7 model constants (nccl-tuning-model.json)";
  return p;
}

}  // namespace fabricsim::models
