#pragma once
// Command-line flags shared by the commands that take a scenario (run, scale, calibrate shapes):
// each flag is a shorthand for a `--set` on the scenario JSON. The flags, their help and the
// pointer each one sets come from the settings table (api/scenario_settings); `--set` is the only
// one written here.

#include <CLI/CLI.hpp>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "api/scenario.hpp"
#include "api/scenario_settings.hpp"
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
  std::string system() const;  ///< --system; empty when not given
  int gpus() const;            ///< 0 when --gpus was not given

 private:
  /// The value of one flag of the settings table (api/scenario_settings).
  struct Flag {
    const api::Setting* setting;
    int number = 0;  ///< count and stage kinds (a stage starts at -1: not given)
    std::string text = {};
    bool on = false;
    bool given() const;
    nlohmann::json value() const;
  };
  const Flag* flag(std::string_view pointer) const;

  std::vector<std::string> sets_;
  std::deque<Flag> flags_;  ///< the command line holds their addresses: never moved
};

}  // namespace fabricsim::tools
