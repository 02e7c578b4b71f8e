#pragma once
// A scaling study: one model and plan family run over GPU counts on one or more systems, in
// weak scaling (fixed batch per data-parallel replica) and strong scaling (fixed global batch),
// with the efficiency relative to the smallest size and what ate it.
//
// The plan family keeps TP, PP, CP, EP, VP and the micro-batch fixed; DP takes the rest of the
// GPUs. Efficiency is throughput per GPU relative to the baseline size. Its loss is attributed to
// the step-time components of the critical stage: a component's loss is its time at N minus its
// baseline time scaled by the change in work per GPU, so the losses add up to 1 - efficiency.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/confidence.hpp"
#include "models/cost_model.hpp"
#include "models/parallel_plan.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::api {

enum class ScalingMode { weak, strong };
const char* to_string(ScalingMode m);

struct ScalingStudy {
  /// Presets, or scenario files (their name as given) whose "system" section the study uses.
  std::vector<std::string> systems;
  /// The "system" section of each scenario file in `systems` (preset and fabric overrides; its
  /// GPU count is replaced at each size). A preset uses the scenario's own section on it.
  std::map<std::string, nlohmann::json> system_files;
  std::vector<int> gpus;  ///< ascending; the first is the baseline
  std::vector<ScalingMode> modes;
  int strong_global_batch = 0;  ///< 0 = the scenario's global batch
  /// Search the best plan at every size (the plan search with `size`'s constraints) instead of
  /// keeping the scenario's plan family; weak scaling then keeps the batch per GPU.
  bool replan = false;
  double tokens = 0;  ///< token budget: rows carry the days to train it (0: none)
  int threads = 1;    ///< plan-search threads (0: every core); not part of the scenario
  models::PriceTable prices = models::default_prices();  ///< for the per-dollar comparison
};

/// A global batch above this many tokens is larger than any published for a dense model: Llama 3
/// 405B's final 16M tokens (2,048 sequences of 8,192; Dubey et al., "The Llama 3 Herd of
/// Models", arXiv:2407.21783, section 3.4.1). Weak scaling that passes it studies batches nobody
/// trains with (their convergence per token is worse, which throughput does not show).
inline constexpr double kLargestPublishedBatchTokens = 2048.0 * 8192;

/// The GPU counts 8, 16, 32, 64, then powers of two up to `max_gpus` (inclusive, if it is one).
std::vector<int> default_gpu_counts(int max_gpus);

/// Reads the optional "scale" section of a scenario; the scenario's own preset is the system
/// when the section names none. A name in "systems" ending in .json, or the path of an existing
/// file that is not a preset name, is a scenario file (read here).
ScalingStudy read_scaling_study(const sim::JsonValue& scenario_root);

struct ScalingLoss {
  std::string component;  ///< compute, TP, CP, EP, PP, bubble, DP, optimizer, other
  double points = 0;      ///< share of the step at this size, as a fraction (adds to 1 - eff)
};

struct ScalingRow {
  std::string system;                        ///< a preset, or the scenario file named in the study
  std::string preset;                        ///< the system preset (that of the file for a file)
  std::optional<models::ParallelPlan> plan;  ///< with replan: the plan chosen at this size
  double batch_tokens = 0;                   ///< global batch x sequence length
  std::optional<double> days_to_train;       ///< with a token budget, feasible rows
  std::optional<double> gpu_hour_usd;        ///< with replan: rental price, when published
  std::optional<double> capital_usd;         ///< with replan: systems + fabric, when published
  ScalingMode mode = ScalingMode::weak;
  int gpus = 0;
  int dp = 0;
  int global_batch = 0;
  bool feasible = false;
  std::string reason;  ///< why not, when infeasible
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  std::optional<double> efficiency;  ///< absent when the baseline is infeasible
  std::vector<ScalingLoss> losses;   ///< largest first
  double simulate_wall_s = 0;
  Confidence confidence;  ///< of the system's calibration (the same on every row of a system)
};

/// Runs the study on a scenario document (JSON after flags and --set), calling `on_row` as each
/// size finishes so callers can write results as they go. Input errors in the scenario itself
/// are thrown; a size the plan cannot use (does not divide, too few sequences, out of memory)
/// becomes an infeasible row with the reason.
std::vector<ScalingRow> run_scaling_study(const nlohmann::json& scenario, const std::string& source,
                                          const ScalingStudy& study,
                                          const std::function<void(const ScalingRow&)>& on_row);

nlohmann::json scaling_row_json(const ScalingRow& row);
/// The efficiency from which the study's summary calls scaling near-linear.
inline constexpr double kNearLinearEfficiency = 0.9;

/// One line summarising, per system and mode, where scaling stays near-linear.
std::string scaling_summary_text(const std::vector<ScalingRow>& rows, double threshold);

/// Per mode, the systems side by side at the largest GPU count every system ran: tokens/s per
/// GPU, tokens per dollar of rental and tokens/s per million dollars of capital, each also
/// relative to the best system. Empty with fewer than two systems.
nlohmann::json scaling_comparison_json(const std::vector<ScalingRow>& rows);
std::string scaling_comparison_text(const nlohmann::json& comparison);

/// Per system, in study order: "confidence on <system>: <calibration>; GEMM ...", one line each.
std::string scaling_confidence_text(const std::vector<ScalingRow>& rows);
/// Per system: its confidence object (confidence_to_json).
nlohmann::json scaling_confidence_json(const std::vector<ScalingRow>& rows);

/// One line per system and mode whose global batch passes kLargestPublishedBatchTokens.
std::vector<std::string> scaling_warnings(const std::vector<ScalingRow>& rows);

/// The document `scale --json` prints (the scenario record aside): "rows", "summary" (at
/// kNearLinearEfficiency), "confidence" per system, "comparison" with replan and "warnings"
/// when there are any.
nlohmann::json scaling_study_json(const std::vector<ScalingRow>& rows, const ScalingStudy& study);

}  // namespace fabricsim::api
