#pragma once
// The fabricsim-gemm-bench output (format "fabricsim-gemm-bench", version 1). The calibration
// importer is written against exactly these keys; README.md beside this file documents them.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/cuda/gemm_shape.hpp"
#include "tools/cuda/timing_stats.hpp"

namespace fabricsim::tools::cuda {

struct GemmDeviceInfo {
  std::string name;
  int sm_count = 0;
  std::string compute_capability;  ///< "9.0"
  int sm_clock_mhz = 0;
  int mem_clock_mhz = 0;
  std::string driver_version;        ///< kernel driver, e.g. "580.159"
  std::string cuda_runtime_version;  ///< cudaRuntimeGetVersion, e.g. "13000"
  std::string cublas_version;        ///< cublasLtGetVersion, e.g. "130000"
};

/// One shape: timings in microseconds, or the reason it was not measured.
struct GemmRow {
  GemmShape shape;
  std::optional<TimingStats> time_us;  ///< unset when skipped
  std::string skipped;                 ///< non-empty when skipped
};

struct GemmReport {
  GemmDeviceInfo device;
  std::string date;  ///< ISO 8601 UTC
  int warmup_iters = 0;
  int iters = 0;
  uint64_t rotating_buffer_bytes = 0;
  std::vector<GemmRow> rows;
};

/// TFLOP/s of a shape that took `time_us` microseconds.
double gemm_tflops(const GemmShape& shape, double time_us);

/// The report as JSON, keys in the documented order. A skipped row has every key of a measured
/// one, with null times and tflops, runs 0, plus "skipped": reason.
nlohmann::ordered_json gemm_report_json(const GemmReport& report);
/// The JSON text (2-space indent, trailing newline).
std::string gemm_report_text(const GemmReport& report);

}  // namespace fabricsim::tools::cuda
