#pragma once
// A cluster to simulate on: the topology graph plus the facts about its parts the models need
// (GPU datasheet, host CPU, preset provenance).

#include <memory>
#include <string>

#include "topologies/cluster_spec.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::models {

struct System {
  std::string name;
  topologies::GpuSpec gpu;
  topologies::HostCpu cpu = topologies::HostCpu::x86_intel;
  std::shared_ptr<const topologies::Topology> topology;
};

/// Builds a preset at `gpus` GPUs. Throws sim::InputError (unknown preset) or
/// topologies::SpecError (impossible size); `where` names the input for messages.
System make_system(const std::string& preset, int gpus, const std::string& where = "<command line>",
                   const std::string& path = "--system");
/// A system from an explicit spec (custom fabrics, what-ifs).
System make_system(const topologies::ClusterSpec& spec, const topologies::GpuSpec& gpu,
                   topologies::HostCpu cpu);

}  // namespace fabricsim::models
