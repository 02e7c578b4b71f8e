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
};

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
  std::string system;  ///< a preset, or the scenario file named in the study
  std::string preset;  ///< the system preset (that of the file for a file)
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
};

/// Runs the study on a scenario document (JSON after flags and --set), calling `on_row` as each
/// size finishes so callers can write results as they go. Input errors in the scenario itself
/// are thrown; a size the plan cannot use (does not divide, too few sequences, out of memory)
/// becomes an infeasible row with the reason.
std::vector<ScalingRow> run_scaling_study(const nlohmann::json& scenario, const std::string& source,
                                          const ScalingStudy& study,
                                          const std::function<void(const ScalingRow&)>& on_row);

nlohmann::json scaling_row_json(const ScalingRow& row);
/// One line summarising, per system and mode, where scaling stays near-linear.
std::string scaling_summary_text(const std::vector<ScalingRow>& rows, double threshold);

}  // namespace fabricsim::api
