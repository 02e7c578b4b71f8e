// fabricsim-gemm-bench: times cuBLASLt GEMMs on one GPU for fabricsim's compute calibration.
// For each shape: the heuristic's first algorithm, random inputs, a rotating set of A/B/D buffers
// larger than L2 so that each timed run reads cold data, warm-up runs, then timed runs measured
// one by one with CUDA events. Everything that needs no GPU lives in fabricsim_cuda_tools_core.

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/input_error.hpp"
#include "tools/cuda/cuda_check.hpp"
#include "tools/cuda/cuda_handles.hpp"
#include "tools/cuda/gemm_options.hpp"
#include "tools/cuda/gemm_report.hpp"
#include "tools/cuda/random_fill.cuh"
#include "tools/cuda/report_output.hpp"
#include "tools/cuda/rotation_plan.hpp"
#include "tools/cuda/run_info.hpp"
#include "tools/cuda/tool_errors.hpp"

namespace fabricsim::tools::cuda {
namespace {

constexpr const char* kTool = "fabricsim-gemm-bench";
// cuBLAS recommends 32 MiB of workspace on Hopper and Blackwell; some algorithms need it.
constexpr uint64_t kWorkspaceBytes = uint64_t{32} << 20;
// Left free for cuBLASLt's internal allocations and the driver when sizing the rotating set.
constexpr uint64_t kMemoryReserve = uint64_t{512} << 20;
constexpr uint64_t kAlignment = 256;

uint64_t align_up(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CallFailure(describe_call_failure(call, cublasLtGetStatusName(status),
                                            cublasLtGetStatusString(status)));
  }
}

/// Owner of one cuBLASLt object.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
class LtOwned {
 public:
  LtOwned() = default;
  explicit LtOwned(Handle handle) : handle_(handle) {}
  ~LtOwned() {
    if (handle_ != nullptr) Destroy(handle_);
  }
  LtOwned(LtOwned&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  LtOwned& operator=(LtOwned&&) = delete;
  LtOwned(const LtOwned&) = delete;
  LtOwned& operator=(const LtOwned&) = delete;
  Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};
using LtHandle = LtOwned<cublasLtHandle_t, cublasLtDestroy>;
using MatmulDesc = LtOwned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using MatrixLayout = LtOwned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using MatmulPreference = LtOwned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

struct LtTypes {
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
};

LtTypes lt_types(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case GemmDtype::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case GemmDtype::kFp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case GemmDtype::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
  }
  throw std::invalid_argument("unknown GEMM dtype");
}

/// Column-major rows x cols matrix, `batch` of them `rows * cols` elements apart.
MatrixLayout make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch) {
  cublasLtMatrixLayout_t raw = nullptr;
  check_cublas(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                          static_cast<uint64_t>(cols), rows),
               "cublasLtMatrixLayoutCreate");
  MatrixLayout layout(raw);
  if (batch > 1) {
    const auto count = static_cast<int32_t>(batch);
    const int64_t stride = rows * cols;
    check_cublas(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                  sizeof count),
                 "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check_cublas(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return layout;
}

void fill_inputs(GemmDtype dtype, char* data, uint64_t bytes, uint64_t seed, cudaStream_t stream) {
  switch (dtype) {
    case GemmDtype::kBf16:
      return fill_random(reinterpret_cast<__nv_bfloat16*>(data), bytes / 2, seed, stream);
    case GemmDtype::kFp16:
      return fill_random(reinterpret_cast<__half*>(data), bytes / 2, seed, stream);
    case GemmDtype::kFp8:
      return fill_random(reinterpret_cast<__nv_fp8_e4m3*>(data), bytes, seed, stream);
    case GemmDtype::kTf32:
      return fill_random(reinterpret_cast<float*>(data), bytes / 4, seed, stream);
  }
}

std::string read_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::stringstream text;
  text << in.rdbuf();
  if (const auto version = parse_nvidia_driver_version(text.str())) return *version;
  int driver = 0;  // not a Linux NVIDIA driver: the CUDA driver API version is the best we have
  check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  return std::to_string(driver);
}

LtHandle create_lt_handle() {
  cublasLtHandle_t handle = nullptr;
  check_cublas(cublasLtCreate(&handle), "cublasLtCreate");
  return LtHandle(handle);
}

/// The measurement state of one device. The device must be current when it is constructed.
class GemmBench {
 public:
  GemmBench(const GemmOptions& options, int device)
      : options_(options),
        lt_(create_lt_handle()),
        workspace_(kWorkspaceBytes, "cudaMalloc(cuBLASLt workspace)") {
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    compute_capability_ = prop.major * 10 + prop.minor;
    l2_bytes_ = static_cast<uint64_t>(prop.l2CacheSize);
    device_.name = prop.name;
    device_.sm_count = prop.multiProcessorCount;
    device_.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    int khz = 0;
    check_cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device),
               "cudaDeviceGetAttribute");
    device_.sm_clock_mhz = khz / 1000;
    check_cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device),
               "cudaDeviceGetAttribute");
    device_.mem_clock_mhz = khz / 1000;
    device_.driver_version = read_driver_version();
    int runtime = 0;
    check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    device_.cuda_runtime_version = std::to_string(runtime);
    device_.cublas_version = std::to_string(cublasLtGetVersion());
    for (int i = 0; i < options.iters; ++i) {
      starts_.emplace_back();
      stops_.emplace_back();
    }
  }

  const GemmDeviceInfo& device() const { return device_; }
  /// The requested minimum size of each shape's rotating buffer set (default 2x L2).
  uint64_t rotate_target() const { return options_.rotate_bytes.value_or(2 * l2_bytes_); }

  GemmRow measure(const GemmShape& shape, uint64_t seed) {
    GemmRow row;
    row.shape = shape;
    const int needed = gemm_min_compute_capability(shape.dtype);
    if (compute_capability_ < needed) {
      row.skipped = "unsupported on this GPU (" + std::string(gemm_dtype_name(shape.dtype)) +
                    " needs compute capability " + std::to_string(needed / 10) + "." +
                    std::to_string(needed % 10) + "+, device is " + device_.compute_capability +
                    ")";
      return row;
    }

    // D = op(A) * B with A stored k x m and transposed (the "TN" layout of a Linear layer's
    // weight, and the only one cuBLASLt offers for fp8).
    const LtTypes types = lt_types(shape.dtype);
    cublasLtMatmulDesc_t raw_desc = nullptr;
    check_cublas(cublasLtMatmulDescCreate(&raw_desc, types.compute, CUDA_R_32F),
                 "cublasLtMatmulDescCreate");
    const MatmulDesc desc(raw_desc);
    const cublasOperation_t transpose = CUBLAS_OP_T;
    const cublasOperation_t no_transpose = CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                sizeof transpose),
                 "cublasLtMatmulDescSetAttribute(TRANSA)");
    check_cublas(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                &no_transpose, sizeof no_transpose),
                 "cublasLtMatmulDescSetAttribute(TRANSB)");
    const MatrixLayout a_layout = make_layout(types.ab, shape.k, shape.m, shape.batch);
    const MatrixLayout b_layout = make_layout(types.ab, shape.k, shape.n, shape.batch);
    const MatrixLayout d_layout = make_layout(types.cd, shape.m, shape.n, shape.batch);

    cublasLtMatmulPreference_t raw_pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate");
    const MatmulPreference pref(raw_pref);
    const uint64_t workspace_bytes = kWorkspaceBytes;
    check_cublas(
        cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        lt_.get(), raw_desc, a_layout.get(), b_layout.get(), d_layout.get(), d_layout.get(),
        raw_pref, 1, &heuristic, &found);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) {
      row.skipped =
          "no cuBLASLt algorithm for this shape and dtype (cublasLtMatmulAlgoGetHeuristic found "
          "none)";
      return row;
    }
    check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");

    // One pool holds every copy: [A_0 .. A_s-1][B_0 .. B_s-1][D_0 .. D_s-1].
    const auto batch = static_cast<uint64_t>(shape.batch);
    const uint64_t m = static_cast<uint64_t>(shape.m);
    const uint64_t n = static_cast<uint64_t>(shape.n);
    const uint64_t k = static_cast<uint64_t>(shape.k);
    const uint64_t a_bytes = align_up(batch * m * k * gemm_input_bytes(shape.dtype));
    const uint64_t b_bytes = align_up(batch * k * n * gemm_input_bytes(shape.dtype));
    const uint64_t d_bytes = align_up(batch * m * n * gemm_output_bytes(shape.dtype));
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const uint64_t available = free_bytes > kMemoryReserve ? free_bytes - kMemoryReserve : 0;
    const RotationPlan plan =
        plan_rotation(a_bytes + b_bytes + d_bytes, rotate_target(), available);
    if (plan.sets == 0) {
      row.skipped = plan.skipped;
      return row;
    }
    const uint64_t sets = plan.sets;
    const DeviceBuffer pool(sets * (a_bytes + b_bytes + d_bytes), "cudaMalloc(GEMM buffers)");
    char* const a_base = pool.bytes();
    char* const b_base = a_base + sets * a_bytes;
    char* const d_base = b_base + sets * b_bytes;
    fill_inputs(shape.dtype, a_base, sets * a_bytes, splitmix64(seed), stream_.get());
    fill_inputs(shape.dtype, b_base, sets * b_bytes, splitmix64(seed + 1), stream_.get());

    const float alpha = 1.0f;
    const float beta = 0.0f;
    auto run = [&](int i) {
      const uint64_t set = static_cast<uint64_t>(i) % sets;
      void* d = d_base + set * d_bytes;
      check_cublas(cublasLtMatmul(lt_.get(), raw_desc, &alpha, a_base + set * a_bytes,
                                  a_layout.get(), b_base + set * b_bytes, b_layout.get(), &beta, d,
                                  d_layout.get(), d, d_layout.get(), &heuristic.algo,
                                  workspace_.bytes(), kWorkspaceBytes, stream_.get()),
                   "cublasLtMatmul");
    };
    for (int i = 0; i < options_.warmup; ++i)
      run(i);
    for (int i = 0; i < options_.iters; ++i) {
      check_cuda(cudaEventRecord(starts_[i].get(), stream_.get()), "cudaEventRecord");
      run(options_.warmup + i);
      check_cuda(cudaEventRecord(stops_[i].get(), stream_.get()), "cudaEventRecord");
    }
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    std::vector<double> times_us;
    for (int i = 0; i < options_.iters; ++i) {
      times_us.push_back(1000.0 * elapsed_ms(starts_[i], stops_[i]));
    }
    row.time_us = summarize_timings(times_us);
    sets_used_ = sets;
    return row;
  }

  uint64_t sets_used() const { return sets_used_; }

 private:
  const GemmOptions& options_;
  LtHandle lt_;
  DeviceBuffer workspace_;
  CudaStream stream_;
  std::vector<CudaEvent> starts_;
  std::vector<CudaEvent> stops_;
  GemmDeviceInfo device_;
  int compute_capability_ = 0;
  uint64_t l2_bytes_ = 0;
  uint64_t sets_used_ = 0;
};

std::string shape_label(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
         std::string(gemm_dtype_name(s.dtype)) + " batch " + std::to_string(s.batch);
}

int run(int argc, char** argv) {
  const CommandLine<GemmOptions> command_line = parse_gemm_args(argc, argv);
  if (command_line.help) {
    std::cout << *command_line.help;
    return kExitOk;
  }
  const GemmOptions& options = command_line.options;
  const std::vector<GemmShape> shapes = collect_gemm_shapes(options);

  const int device_count = require_cuda_devices();
  if (options.device >= device_count) {
    throw DeviceUnavailable("CUDA device " + std::to_string(options.device) + " not found (" +
                            std::to_string(device_count) + " visible)");
  }
  ReportOutput output(options.output);

  check_cuda(cudaSetDevice(options.device), "cudaSetDevice");
  GemmBench bench(options, options.device);
  GemmReport report;
  report.device = bench.device();
  report.date = utc_timestamp(std::chrono::system_clock::now());
  report.warmup_iters = options.warmup;
  report.iters = options.iters;
  report.rotating_buffer_bytes = bench.rotate_target();
  std::fprintf(stderr, "%s: %s (compute capability %s), %zu shapes, rotating set >= %.0f MiB\n",
               kTool, report.device.name.c_str(), report.device.compute_capability.c_str(),
               shapes.size(), static_cast<double>(report.rotating_buffer_bytes) / (1 << 20));
  for (size_t i = 0; i < shapes.size(); ++i) {
    GemmRow row = bench.measure(shapes[i], options.seed * 1000003 + 2 * i);
    if (row.time_us) {
      std::fprintf(stderr, "%s: %-32s median %10.2f us %9.1f TFLOP/s (%llu buffer sets)\n", kTool,
                   shape_label(row.shape).c_str(), row.time_us->median,
                   gemm_tflops(row.shape, row.time_us->median),
                   static_cast<unsigned long long>(bench.sets_used()));
    } else {
      std::fprintf(stderr, "%s: %-32s skipped: %s\n", kTool, shape_label(row.shape).c_str(),
                   row.skipped.c_str());
    }
    report.rows.push_back(std::move(row));
  }
  output.write(gemm_report_text(report));
  return kExitOk;
}

}  // namespace
}  // namespace fabricsim::tools::cuda

int main(int argc, char** argv) {
  return fabricsim::tools::cuda::run_tool(fabricsim::tools::cuda::kTool, std::cerr,
                                          [&] { return fabricsim::tools::cuda::run(argc, argv); });
}
