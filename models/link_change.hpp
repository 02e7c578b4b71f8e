#pragma once
// A link capacity change during a simulated step (degradation, repair): what the step simulator
// applies to the flow network at its time.

#include "sim/network.hpp"
#include "sim/units.hpp"

namespace fabricsim::models {

/// From `at` after the step starts, the network resource runs at 1/factor of the topology's
/// capacity (factor 1 restores it).
struct LinkChange {
  sim::Time at;
  sim::LinkId resource;
  double factor = 1;
};

}  // namespace fabricsim::models
