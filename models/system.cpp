#include "models/system.hpp"

#include <fmt/format.h>

#include "sim/input_error.hpp"

namespace fabricsim::models {

System make_system(const std::string& preset, int gpus, const std::string& where,
                   const std::string& path) {
  const topologies::SystemPreset* p = topologies::find_system(preset);
  if (p == nullptr) {
    throw sim::InputError(where, path,
                          fmt::format("unknown system '{}' (expected one of: {})", preset,
                                      topologies::system_names()));
  }
  const topologies::GpuSpec* gpu = topologies::find_gpu(p->gpu);
  return make_system(p->make(gpus), *gpu, p->cpu);
}

System make_system(const topologies::ClusterSpec& spec, const topologies::GpuSpec& gpu,
                   topologies::HostCpu cpu) {
  System s;
  s.name = spec.system;
  s.gpu = gpu;
  s.cpu = cpu;
  s.topology = std::make_shared<const topologies::Topology>(topologies::build_cluster(spec));
  return s;
}

}  // namespace fabricsim::models
