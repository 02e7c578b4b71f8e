#include <ostream>

#include "api/validation.hpp"
#include "calibration/cases.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/profile_options.hpp"

namespace fabricsim::tools {
namespace {

class ValidateCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("validate", "Compare predictions with published measurements");
    app_->add_option("--cases", cases_, "Case file (../shared/reference/cases format)")->required();
    app_->add_flag("--json", json_, "Print rows, per-source and overall summaries as JSON");
    app_->add_option("--only", only_, "Keep only cases whose id contains this text");
    app_->add_option("--set", options_.scenario_sets,
                     "Set a field of every training case's scenario: /json/pointer=value "
                     "(repeatable; see --print-scenarios)")
        ->allow_extra_args(false);
    app_->add_flag("--hold-out-source", options_.hold_out_source,
                   "Predict GEMM and collective cases with parameters fitted to the other sources "
                   "of the file only (out-of-sample check of the calibration)");
    app_->add_flag("--anchor", options_.anchor,
                   "Anchored validation: per source, system, framework version and precision, "
                   "fit the sustained efficiency to a case with the fewest GPUs (of those, the "
                   "one whose model size and sequence are nearest the group's; reported under "
                   "anchors, never scored) and predict the group's other cases with it");
    app_->add_flag(
        "--print-scenarios", print_scenarios_,
        "Print the scenario each training case runs (its plan and the layers recomputed or "
        "offloaded to fit memory, for `fabricsim run`) and stop");
    add_profile_option(*app_, options_.calibration);
  }

  int run(std::ostream& out, std::ostream&) override {
    auto cases = calibration::load_cases(cases_);
    if (!only_.empty()) {
      std::erase_if(
          cases, [&](const calibration::Case& c) { return c.id.find(only_) == std::string::npos; });
    }
    if (print_scenarios_) {
      for (const calibration::Case& c : cases) {
        if (c.kind != calibration::CaseKind::training) continue;
        out << "// " << c.id << "\n" << api::case_scenario_json(c, options_).dump(2) << "\n";
      }
      return 0;
    }
    const api::ValidationReport report = api::validate_cases(cases, options_);
    if (json_) {
      out << api::report_to_json(report).dump(2) << "\n";
    } else {
      out << api::report_to_text(report);
    }
    return 0;
  }

 private:
  std::string cases_;
  bool json_ = false;
  std::string only_;
  bool print_scenarios_ = false;
  api::ValidationOptions options_;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() {
  return std::make_unique<ValidateCommand>();
}

}  // namespace fabricsim::tools
