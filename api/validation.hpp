#pragma once
// `fabricsim validate`: predicts every primary metric of the cases it supports and compares with
// the measurement; cases it cannot run are listed with the reason, never silently dropped.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/scaling_series.hpp"
#include "calibration/cases.hpp"

namespace fabricsim::api {

struct ValidationRow {
  std::string id;
  std::string source;
  std::string system;
  std::string metric;
  std::optional<double> size_bytes;  ///< curves only
  double predicted = 0;
  double measured = 0;
  double error = 0;    ///< (predicted - measured) / measured
  std::string detail;  ///< e.g. the algorithm/protocol used
};

struct SkippedCase {
  std::string id;
  std::string reason;
};

struct ErrorSummary {
  int points = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
};

/// `validate --anchor`: the case of a group a sustained efficiency was fitted to (never scored).
struct AnchorFit {
  std::string id;
  std::string group;  ///< source | system | framework version | precision
  std::string metric;
  double measured = 0;
  double predicted_before = 0;  ///< zero-shot
  double zero_shot_error = 0;   ///< > 0: the model was optimistic (api::zero_shot_error)
  double sustained_efficiency = 1;
  int scored = 0;  ///< other cases of the group predicted with it
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<SkippedCase> skipped;
  std::vector<AnchorFit> anchors;     ///< empty unless anchored
  std::vector<ScalingPoint> scaling;  ///< throughput per GPU along each series of runs
};

struct ValidationOptions {
  std::string calibration;  ///< profile file; empty = the built-in profile of each system
  /// Size used for a single-point busbw case whose size the source does not print.
  double default_large_message = 8.0 * 1024 * 1024 * 1024;
  /// Out-of-sample check of the calibration: GEMM and collective cases are predicted with
  /// parameters fitted (from the defaults) to the other sources' cases of the file only, the
  /// way the built-in profiles are fitted to all of them.
  bool hold_out_source = false;
  /// "/json/pointer=value" assignments applied to every training case's scenario (what-ifs
  /// such as the software stack a source used: /training/attention_kernel=unfused).
  std::vector<std::string> scenario_sets;
  /// Anchored validation (`calibrate run` measured honestly): training cases are grouped by
  /// source, system, framework version and precision; of the group's cases with the fewest
  /// GPUs, the one whose model size and sequence length lie nearest the rest of the group's is
  /// its anchor (the first in the file on a tie), the one run its sustained efficiency is fitted
  /// to; the anchor is reported apart and never scored, every other case of the group is
  /// predicted with the fitted efficiency.
  bool anchor = false;
};

ValidationReport validate_cases(const std::vector<calibration::Case>& cases,
                                const ValidationOptions& options);

/// The scenario `validate` runs for training case `c` under `options`, as `run` reads it: the
/// case's scenario with the plan the search picked where the case does not state one and the
/// layers recomputed or offloaded to fit memory, so that `run` of it reproduces the case's row.
nlohmann::json case_scenario_json(const calibration::Case& c, const ValidationOptions& options);

/// One error per case: a training case's primary metric (the first of tflops_per_gpu,
/// hw_tflops_per_gpu, tokens_per_s_per_gpu, mfu, hfu, step_time_s, time_to_train_min it gives;
/// times inverted, so that > 0 means optimistic for every metric), a collective or GEMM case's
/// median over its points. The bars of accuracy are stated on these.
struct CaseError {
  std::string id;
  std::string source;
  double error = 0;
};
std::vector<CaseError> case_errors(const std::vector<ValidationRow>& rows);

/// A row's error with > 0 optimistic for every metric (a step time's or time to train's inverted).
double optimism(const ValidationRow& row);
/// The primary row of each training case that has one, in the rows' order.
std::vector<const ValidationRow*> primary_rows(const std::vector<ValidationRow>& rows);
/// The group `--anchor` fits one efficiency to: source | system | framework version | precision.
std::string anchor_group(const calibration::Case& c);

struct CaseSummary {
  int cases = 0;
  double median_abs_error = 0;
  double p90_abs_error = 0;
  double median_signed_error = 0;  ///< the bias: > 0 optimistic
};
CaseSummary summarize_cases(const std::vector<CaseError>& errors);

ErrorSummary summarize_errors(const std::vector<ValidationRow>& rows,
                              const std::function<bool(const ValidationRow&)>& keep);

/// Whether predictions order a source's runs as the measurements do, for one throughput metric:
/// of the pairs of runs the measurements tell apart, how many the predictions order the same way.
struct RankAgreement {
  std::string source;
  std::string metric;
  int runs = 0;
  int pairs = 0;
  int concordant = 0;
  double kendall_tau() const { return pairs > 0 ? (2.0 * concordant - pairs) / pairs : 0.0; }
};
/// For every source and training throughput metric with at least three runs.
std::vector<RankAgreement> rank_agreements(const std::vector<ValidationRow>& rows);
nlohmann::json report_to_json(const ValidationReport& report);
std::string report_to_text(const ValidationReport& report);

}  // namespace fabricsim::api
