#pragma once
// Command line of fabricsim-nccl-bench. Flag names follow nccl-tests (-b, -e, -f, -g, -w, -n, -d)
// so that people who know nccl-tests need nothing new.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/cuda/collective_ops.hpp"
#include "tools/cuda/command_line.hpp"

namespace fabricsim::tools::cuda {

enum class NcclDtype { kFloat, kHalf, kBfloat16 };

/// "float", "half", "bfloat16" (the nccl-tests names).
std::string_view nccl_dtype_name(NcclDtype dtype);
uint64_t nccl_dtype_bytes(NcclDtype dtype);

struct NcclOptions {
  std::vector<CollectiveOp> ops = all_collective_ops();
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{8} << 30;
  uint64_t step_factor = 2;
  int warmup = 5;
  int iters = 20;
  NcclDtype dtype = NcclDtype::kFloat;
  bool check = false;
  bool in_place = false;     ///< also time the in-place form of the ops that have one
  int gpus_per_process = 1;  ///< -g: GPUs one process drives
  std::string output;        ///< empty or "-": stdout
};

/// Throws sim::InputError for unknown flags, bad sizes (-b > -e, non-integral, zero), unknown ops
/// and dtypes.
CommandLine<NcclOptions> parse_nccl_args(int argc, const char* const* argv);

}  // namespace fabricsim::tools::cuda
