#pragma once
// Importers turn measurement files into a MeasurementSet. The format is detected from the content,
// never the file extension. Every importer adds one Provenance entry and reports bad input as
// sim::InputError naming the file and the line ("line N") or JSON pointer.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/cases.hpp"
#include "calibration/measurements.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::calibration {

enum class MeasurementFormat {
  nccl_tests_log,
  nccl_bench_json,
  gemm_bench_json,
  gemm_csv,
  cases_json
};

/// "nccl_tests_log", "nccl_bench_json", "gemm_bench_json", "gemm_csv" or "cases_json".
std::string_view to_string(MeasurementFormat format);

/// Recognises the format from `content`; `path` only names the file in errors.
MeasurementFormat detect_format(const std::string& path, std::string_view content);
/// Reads `path`, detects its format and imports it.
MeasurementSet import_measurements(const std::string& path);

/// nccl-tests text output (*_perf): one measurement per row and column group (out-of-place,
/// in-place). The op comes from a "# Collective test starting: <op>_perf" line, else `op_hint`
/// ("all_reduce" or "all_reduce_perf"), else an "<op>_perf" in `name`. Ranks are the "#  Rank"
/// device lines of each test (nodes = distinct hosts), else nThread x nGpus with nodes unknown.
/// Rows of size 0 carry no bandwidth and are skipped; a row with #wrong > 0 (failed validation)
/// or whose busbw/algbw ratio does not fit the op and rank count is an error.
MeasurementSet import_nccl_tests_log(std::string_view text, const std::string& name,
                                     std::optional<std::string> op_hint = {});
/// The JSON written by fabricsim-nccl-bench ("format": "fabricsim-nccl-bench").
MeasurementSet import_nccl_bench_json(const sim::JsonValue& root);
/// The JSON written by fabricsim-gemm-bench ("format": "fabricsim-gemm-bench").
MeasurementSet import_gemm_bench_json(const sim::JsonValue& root);
/// CSV with header m,n,k,dtype,tflops and an optional batch column, in any order; "#" comments.
MeasurementSet import_gemm_csv(std::string_view text, const std::string& name);
/// GEMM and collective cases only; training cases are never converted, since they are held out
/// for comparison, not fitting. A GEMM case gives its tflops (time_us 0: not measured). A
/// collective case gives one point per message size of busbw_curve/algbw_curve (a size on both
/// curves is one point), or, without a curve, one point from busbw_GBps with bytes 0 (size unknown:
/// a large-message bandwidth). Informational metrics (in-place curve, NVLS-off figures) and MoE
/// dispatch/combine or latency-only cases give nothing.
MeasurementSet measurements_from_cases(const std::vector<Case>& cases);

}  // namespace fabricsim::calibration
