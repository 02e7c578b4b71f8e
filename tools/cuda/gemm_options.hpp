#pragma once
// Command line of fabricsim-gemm-bench.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/cuda/command_line.hpp"
#include "tools/cuda/gemm_shape.hpp"

namespace fabricsim::tools::cuda {

struct GemmOptions {
  std::optional<std::string> shapes_file;  ///< --shapes FILE
  std::vector<GemmShape> shape_args;       ///< every --shape, in order
  int warmup = 10;
  int iters = 50;
  /// --rotate-bytes; unset means twice the device's L2 size.
  std::optional<uint64_t> rotate_bytes;
  int device = 0;
  std::string output;  ///< empty or "-": stdout
  uint64_t seed = 1;
};

/// Throws sim::InputError for unknown flags, bad numbers, bad shapes and bad sizes.
CommandLine<GemmOptions> parse_gemm_args(int argc, const char* const* argv);

/// The shapes of --shapes FILE followed by those of --shape; throws sim::InputError when the file
/// is bad or no shape was given at all.
std::vector<GemmShape> collect_gemm_shapes(const GemmOptions& options);

}  // namespace fabricsim::tools::cuda
