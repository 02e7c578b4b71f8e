#pragma once
// The GEMM shapes the GEMM bench measures: D[m x n] = A[m x k] * B[k x n], `batch` times, in one
// of four precisions. Shapes come from a strict JSON list (--shapes FILE) or from the command line
// (--shape MxNxK[:dtype[:batch]]).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::tools::cuda {

/// bf16, fp16: inputs and output of that type, FP32 accumulation. tf32: FP32 data, TF32 tensor
/// cores. fp8: e4m3 inputs, bf16 output, FP32 accumulation.
enum class GemmDtype { kBf16, kFp16, kFp8, kTf32 };

std::string_view gemm_dtype_name(GemmDtype dtype);
/// Throws std::invalid_argument naming the accepted dtypes.
GemmDtype parse_gemm_dtype(std::string_view name);
const std::vector<std::string>& gemm_dtype_names();
/// Bytes per element of A and B, and of C/D.
uint64_t gemm_input_bytes(GemmDtype dtype);
uint64_t gemm_output_bytes(GemmDtype dtype);
/// Lowest compute capability (major * 10 + minor) with tensor-core support for the dtype:
/// fp16 7.5 (CUDA 13's oldest target), bf16 and tf32 8.0, fp8 8.9.
int gemm_min_compute_capability(GemmDtype dtype);

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  GemmDtype dtype = GemmDtype::kBf16;

  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

/// 2 * m * n * k * batch.
double gemm_flops(const GemmShape& shape);
/// Bytes of one A, B and D set of the shape (all batches).
uint64_t gemm_set_bytes(const GemmShape& shape);

/// "8192x8192x8192", "4096x1024x512:fp8", "128x128x64:bf16:32". Throws sim::InputError located at
/// `--shape` on the command line.
GemmShape parse_shape_arg(std::string_view text);

/// Reads {"shapes": [{"m":..., "n":..., "k":..., "batch":1, "dtype":"bf16"}, ...]}; batch and
/// dtype may be left out (1, bf16). Unknown keys, non-positive sizes, unknown dtypes and an empty
/// list throw sim::InputError with the file and JSON pointer.
std::vector<GemmShape> parse_shapes_json(std::string_view text, const std::string& file_name);
std::vector<GemmShape> load_shapes_file(const std::string& path);

}  // namespace fabricsim::tools::cuda
