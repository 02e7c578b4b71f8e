#pragma once
// Named systems: a GPU, a server/scale-up design and a scale-out fabric that follows the system's
// reference architecture and grows with the GPU count. Every number cites hardware.json source
// keys; what the reference does not give is stated as an assumption in the preset's notes.

#include <string>
#include <string_view>
#include <vector>

#include "topologies/cluster_spec.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::topologies {

enum class HostCpu { x86_intel, x86_amd, arm };

struct SystemPreset {
  std::string name;
  std::string gpu;  ///< GpuSpec id
  std::string description;
  bool announced = false;  ///< figures are announcements, not a shipping product
  HostCpu cpu = HostCpu::x86_intel;
  std::string sources;
  /// Spec for `gpus` GPUs (gpus is set; everything else from the preset).
  ClusterSpec (*make)(int gpus) = nullptr;
};

const std::vector<SystemPreset>& system_presets();
/// The preset with this name; nullptr when unknown.
const SystemPreset* find_system(std::string_view name);
/// Comma-separated preset names, for error messages and --help.
std::string system_names();

}  // namespace fabricsim::topologies
