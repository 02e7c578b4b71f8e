#include "tools/cuda/gemm_report.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace fabricsim::tools::cuda;

namespace {

std::vector<std::string> keys_of(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items())
    keys.push_back(item.key());
  return keys;
}

GemmReport sample_report() {
  GemmReport r;
  r.device = {"NVIDIA H200", 132, "9.0", 1980, 3201, "580.159", "13000", "130000"};
  r.date = "2026-11-30T07:00:00Z";
  r.warmup_iters = 10;
  r.iters = 50;
  r.rotating_buffer_bytes = 536870912;
  GemmRow measured;
  measured.shape = {8192, 8192, 8192, 1, GemmDtype::kBf16};
  measured.time_us = TimingStats{1400.2, 1390.0, 1420.5, 1395.0, 1410.0, 50};
  GemmRow skipped;
  skipped.shape = {4096, 4096, 4096, 1, GemmDtype::kFp8};
  skipped.skipped = "unsupported on this GPU";
  r.rows = {measured, skipped};
  return r;
}

}  // namespace

TEST_CASE("gemm report has exactly the documented keys, in order", "[cuda-tools]") {
  const std::string text = gemm_report_text(sample_report());
  const auto parsed = nlohmann::ordered_json::parse(text);
  CHECK(keys_of(parsed) == std::vector<std::string>{"format", "version", "device", "date",
                                                    "warmup_iters", "iters",
                                                    "rotating_buffer_bytes", "rows"});
  CHECK(parsed["format"] == "fabricsim-gemm-bench");
  CHECK(parsed["version"] == 1);
  CHECK(keys_of(parsed["device"]) ==
        std::vector<std::string>{"name", "sm_count", "compute_capability", "sm_clock_mhz",
                                 "mem_clock_mhz", "driver_version", "cuda_runtime_version",
                                 "cublas_version"});
  CHECK(parsed["device"]["sm_count"] == 132);
  CHECK(parsed["device"]["compute_capability"] == "9.0");
  CHECK(parsed["device"]["driver_version"] == "580.159");
  CHECK(parsed["date"] == "2026-11-30T07:00:00Z");
  CHECK(parsed["rotating_buffer_bytes"] == 536870912);

  const std::vector<std::string> row_keys = {
      "m",           "n",           "k",           "batch",       "dtype",  "time_us_median",
      "time_us_min", "time_us_max", "time_us_p10", "time_us_p90", "tflops", "runs"};
  REQUIRE(parsed["rows"].size() == 2);
  const auto& row = parsed["rows"][0];
  CHECK(keys_of(row) == row_keys);
  CHECK(row["dtype"] == "bf16");
  CHECK(row["time_us_median"].get<double>() == Approx(1400.2));
  CHECK(row["time_us_p90"].get<double>() == Approx(1410.0));
  CHECK(row["tflops"].get<double>() ==
        Approx(2.0 * 8192 * 8192 * 8192 / 1400.2e-6 / 1e12).epsilon(1e-5));
  CHECK(row["runs"] == 50);
}

TEST_CASE("skipped gemm rows keep every key, null times, and say why", "[cuda-tools]") {
  const auto parsed = nlohmann::ordered_json::parse(gemm_report_text(sample_report()));
  const auto& row = parsed["rows"][1];
  CHECK(keys_of(row) == std::vector<std::string>{"m", "n", "k", "batch", "dtype", "time_us_median",
                                                 "time_us_min", "time_us_max", "time_us_p10",
                                                 "time_us_p90", "tflops", "runs", "skipped"});
  CHECK(row["dtype"] == "fp8");
  CHECK(row["time_us_median"].is_null());
  CHECK(row["time_us_p10"].is_null());
  CHECK(row["tflops"].is_null());
  CHECK(row["runs"] == 0);
  CHECK(row["skipped"] == "unsupported on this GPU");
}

TEST_CASE("TFLOP/s come from the median time", "[cuda-tools]") {
  CHECK(gemm_tflops({1000, 1000, 1000, 2, GemmDtype::kBf16}, 4.0) == Approx(1000.0));
}
