#pragma once
// Command-line flags shared by the commands that take a scenario (run, scale, calibrate shapes):
// each flag is a shorthand for a `--set` on the scenario JSON.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/scenario.hpp"
#include "models/system.hpp"
#include "tools/fabricsim/scenario_record.hpp"

namespace fabricsim::tools {

class ScenarioOptions {
 public:
  /// `plan_flags` false: no per-plan flags (--tp, --pp ...), for the commands that search plans.
  void add_to(CLI::App& app, bool plan_flags = true);
  /// Only `--set`, for the commands that build a system alone (topology, collective).
  void add_set_to(CLI::App& app);
  /// The preset at `gpus` with the `--set`s applied to a scenario's "system" section: the same
  /// fabric and NVLink overrides as `run` (only /system/... pointers).
  models::System system(const std::string& preset, int gpus) const;
  /// What system(preset, gpus) is made of.
  ScenarioRecord system_record(const std::string& preset, int gpus) const;
  bool has_sets() const { return !sets_.empty(); }
  /// The scenario from `file` (or the embedded default), with flags and --set applied.
  api::Scenario scenario(const std::string& file) const;
  /// The scenario as the base of a plan search: the sizes of its plan are dropped (searched) and
  /// the rest of the plan is not checked against the model.
  api::Scenario search_base(const std::string& file) const;
  /// The scenario document: `file` (or the embedded default) with overrides() applied.
  nlohmann::json document(const std::string& file) const;
  /// The flags that are shorthands for a `--set`, then the `--set`s, in the order applied.
  std::vector<api::Assignment> overrides() const;
  /// What document(file) is made of, for the outputs to record.
  ScenarioRecord record(const std::string& file) const;
  const std::string& system() const { return system_; }
  int gpus() const { return gpus_; }  ///< 0 when --gpus was not given

 private:
  std::vector<std::string> sets_;
  std::string system_, model_, precision_, recompute_, backend_, task_, calibration_;
  int gpus_ = 0, tp_ = 0, pp_ = 0, dp_ = 0, cp_ = 0, ep_ = 0, vp_ = 0, mb_ = 0, gbs_ = 0, seq_ = 0,
      zero_ = -1;
  bool ignore_memory_ = false;
  bool collnet_ = false;
};

}  // namespace fabricsim::tools
