// Reader for the JSON that fabricsim-gemm-bench writes: timed GEMM shapes on one GPU.

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "calibration/importers.hpp"
#include "calibration/json_fields.hpp"
#include "calibration/text_fields.hpp"

namespace fabricsim::calibration {

namespace {

using sim::JsonValue;
using sim::ObjectReader;

constexpr std::array<std::string_view, 8> kTopKeys = {
    "format", "version", "device", "date", "warmup_iters", "iters", "rotating_buffer_bytes",
    "rows"};
constexpr std::array<std::string_view, 8> kDeviceKeys = {
    "name",          "sm_count",       "compute_capability",   "sm_clock_mhz",
    "mem_clock_mhz", "driver_version", "cuda_runtime_version", "cublas_version"};
constexpr std::array<std::string_view, 12> kRowKeys = {
    "m",           "n",           "k",           "batch",       "dtype",  "time_us_median",
    "time_us_min", "time_us_max", "time_us_p10", "time_us_p90", "tflops", "runs"};

}  // namespace

MeasurementSet import_gemm_bench_json(const JsonValue& root) {
  ObjectReader r = root.as_object();
  check_closed_keys(r, kTopKeys);
  check_format(r, "fabricsim-gemm-bench", 1);

  ObjectReader device = need(r, "device", "a device object").as_object();
  check_closed_keys(device, kDeviceKeys);
  const std::string gpu_name = need_text(device, "name", "a non-empty GPU name");
  // Only the name is essential; the rest documents the run and may be unknown (null).
  std::string details;
  if (const auto sms = device.optional("sm_count")) {
    details += fmt::format("{} SMs", sms->as_positive_int());
  }
  const std::string cc = optional_text(device, "compute_capability");
  if (!cc.empty()) {
    details += fmt::format("{}compute capability {}", details.empty() ? "" : ", ", cc);
  }
  for (std::string_view key : {"sm_clock_mhz", "mem_clock_mhz"}) {
    if (const auto clock = device.optional(key)) {
      details +=
          fmt::format("{}{} {}", details.empty() ? "" : ", ", key, clock->as_positive_number());
    }
  }
  std::vector<std::string> versions;
  if (auto v = optional_text(device, "driver_version"); !v.empty()) {
    versions.push_back("driver " + v);
  }
  if (auto v = optional_text(device, "cuda_runtime_version"); !v.empty()) {
    versions.push_back("CUDA runtime " + v);
  }
  if (auto v = optional_text(device, "cublas_version"); !v.empty()) {
    versions.push_back("cuBLAS " + v);
  }
  const std::string date = optional_text(r, "date");
  const int64_t warmup = need(r, "warmup_iters", "a non-negative integer").as_non_negative_int();
  const int64_t iters = need(r, "iters", "a positive integer").as_positive_int();
  const int64_t rotating =
      need(r, "rotating_buffer_bytes", "a non-negative size in bytes").as_non_negative_int();

  MeasurementSet set;
  const JsonValue rows = need(r, "rows", "an array of results");
  int skipped = 0;
  for (const JsonValue& row : rows.as_array()) {
    ObjectReader rr = row.as_object();
    // A shape the tool could not run (e.g. fp8 on an A100) has null times and says why.
    if (rr.has("skipped")) {
      rr.required("skipped").as_string();
      ++skipped;
      continue;
    }
    check_closed_keys(rr, kRowKeys);
    GemmMeasurement g;
    g.m = need(rr, "m", "a positive integer").as_positive_int();
    g.n = need(rr, "n", "a positive integer").as_positive_int();
    g.k = need(rr, "k", "a positive integer").as_positive_int();
    g.batch = need(rr, "batch", "a positive integer").as_positive_int();
    g.dtype = need(rr, "dtype", "a GEMM dtype").as_enum(gemm_dtypes());
    // Percentiles must be ordered, or the columns were mixed up.
    double previous = 0;
    std::string_view previous_key;
    for (std::string_view key :
         {"time_us_min", "time_us_p10", "time_us_median", "time_us_p90", "time_us_max"}) {
      const JsonValue t = need(rr, key, "a positive time in microseconds");
      const double value = t.as_positive_number();
      if (value < previous) t.fail(fmt::format("at least {} = {}", previous_key, previous));
      if (key == "time_us_median") g.time_us = value;
      previous = value;
      previous_key = key;
    }
    const JsonValue tflops = need(rr, "tflops", "a positive TFLOP/s");
    g.tflops = tflops.as_positive_number();
    const double expected = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                            static_cast<double>(g.k) * static_cast<double>(g.batch) /
                            (g.time_us * 1e6);
    if (std::fabs(g.tflops - expected) > 0.01 * expected) {
      tflops.fail(fmt::format("2*m*n*k*batch / time_us_median = {:.4g} TFLOP/s", expected));
    }
    need(rr, "runs", "a positive integer").as_positive_int();
    g.gpu_name = gpu_name;
    g.source = fmt::format("{}:{}", row.file(), row.pointer());
    set.gemms.push_back(std::move(g));
  }
  if (set.gemms.empty()) rows.fail("a non-empty array of results");

  Provenance p;
  p.file = root.file();
  p.format = std::string(to_string(MeasurementFormat::gemm_bench_json));
  p.gpu_name = gpu_name;
  p.versions = join(versions, "; ");
  p.date = date;
  p.notes = fmt::format(
      "{} rows ({} skipped by the tool); {} iterations after {} warm-up; "
      "rotating buffer {} bytes",
      set.gemms.size(), skipped, iters, warmup, rotating);
  if (!details.empty()) p.notes += "; " + details;
  set.provenance.push_back(std::move(p));
  return set;
}

}  // namespace fabricsim::calibration
