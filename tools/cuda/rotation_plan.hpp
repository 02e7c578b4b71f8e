#pragma once
// How many copies of a GEMM's A/B/D buffers the GEMM bench cycles through. Each timed run uses the
// next copy; once the copies together exceed the L2 cache (twice over by default), every run
// reads its inputs from HBM, as a GEMM inside a training step does.

#include <cstdint>
#include <string>

namespace fabricsim::tools::cuda {

struct RotationPlan {
  uint64_t sets = 0;    ///< 0: not even one set fits
  std::string skipped;  ///< why, when sets == 0
};

/// The smallest count of `set_bytes` sets whose total exceeds `target_bytes` (at least one),
/// lowered to what fits in `available_bytes`.
RotationPlan plan_rotation(uint64_t set_bytes, uint64_t target_bytes, uint64_t available_bytes);

}  // namespace fabricsim::tools::cuda
