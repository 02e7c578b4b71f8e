#include "tools/cuda/rotation_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fabricsim::tools::cuda {

RotationPlan plan_rotation(uint64_t set_bytes, uint64_t target_bytes, uint64_t available_bytes) {
  if (set_bytes == 0) throw std::invalid_argument("a GEMM buffer set cannot be empty");
  RotationPlan plan;
  if (set_bytes > available_bytes) {
    plan.skipped = fmt::format(
        "does not fit in device memory (needs {:.2f} GiB for A, B and D, {:.2f} GiB free)",
        static_cast<double>(set_bytes) / (1u << 30),
        static_cast<double>(available_bytes) / (1u << 30));
    return plan;
  }
  plan.sets = std::min(target_bytes / set_bytes + 1, available_bytes / set_bytes);
  return plan;
}

}  // namespace fabricsim::tools::cuda
