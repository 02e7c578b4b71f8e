#include "tools/cuda/gemm_report.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace fabricsim::tools::cuda {
namespace {

// Timings are good to well under a nanosecond at best; three decimals keep files readable.
double round3(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

}  // namespace

double gemm_tflops(const GemmShape& shape, double time_us) {
  return gemm_flops(shape) / (time_us * 1e-6) / 1e12;
}

nlohmann::ordered_json gemm_report_json(const GemmReport& report) {
  using nlohmann::ordered_json;
  const GemmDeviceInfo& d = report.device;
  ordered_json device;
  device["name"] = d.name;
  device["sm_count"] = d.sm_count;
  device["compute_capability"] = d.compute_capability;
  device["sm_clock_mhz"] = d.sm_clock_mhz;
  device["mem_clock_mhz"] = d.mem_clock_mhz;
  device["driver_version"] = d.driver_version;
  device["cuda_runtime_version"] = d.cuda_runtime_version;
  device["cublas_version"] = d.cublas_version;

  ordered_json rows = ordered_json::array();
  for (const GemmRow& r : report.rows) {
    ordered_json row;
    row["m"] = r.shape.m;
    row["n"] = r.shape.n;
    row["k"] = r.shape.k;
    row["batch"] = r.shape.batch;
    row["dtype"] = gemm_dtype_name(r.shape.dtype);
    if (r.time_us) {
      const TimingStats& t = *r.time_us;
      row["time_us_median"] = round3(t.median);
      row["time_us_min"] = round3(t.min);
      row["time_us_max"] = round3(t.max);
      row["time_us_p10"] = round3(t.p10);
      row["time_us_p90"] = round3(t.p90);
      row["tflops"] = round3(gemm_tflops(r.shape, t.median));
      row["runs"] = t.runs;
    } else {
      for (const char* key : {"time_us_median", "time_us_min", "time_us_max", "time_us_p10",
                              "time_us_p90", "tflops"}) {
        row[key] = nullptr;
      }
      row["runs"] = 0;
      row["skipped"] = r.skipped.empty() ? std::string("not measured") : r.skipped;
    }
    rows.push_back(std::move(row));
  }

  ordered_json out;
  out["format"] = "fabricsim-gemm-bench";
  out["version"] = 1;
  out["device"] = std::move(device);
  out["date"] = report.date;
  out["warmup_iters"] = report.warmup_iters;
  out["iters"] = report.iters;
  out["rotating_buffer_bytes"] = report.rotating_buffer_bytes;
  out["rows"] = std::move(rows);
  return out;
}

std::string gemm_report_text(const GemmReport& report) {
  return gemm_report_json(report).dump(2) + "\n";
}

}  // namespace fabricsim::tools::cuda
