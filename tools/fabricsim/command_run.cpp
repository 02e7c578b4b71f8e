#include <fmt/format.h>

#include <optional>
#include <ostream>

#include "api/goodput_run.hpp"
#include "api/training_run.hpp"
#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

class RunCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("run", "Simulate one training step of a scenario");
    app_->add_option("scenario", file_, "Scenario JSON (default: the embedded Llama 3 8B example)");
    options_.add_to(*app_);
    app_->add_flag("--json", json_, "Print the report as JSON");
    app_->add_option("--trace", trace_, "Write a Chrome/Perfetto trace of the step");
    app_->add_option("--days", days_,
                     "Also operate the run for this many days: failures, checkpoints, goodput "
                     "(the goodput command's report)")
        ->check(CLI::PositiveNumber);
  }

  int run(std::ostream& out, std::ostream&) override {
    api::Scenario scenario = options_.scenario(file_);
    std::optional<sim::AtomicFile> trace;  // opened first: a bad path fails before simulating
    if (!trace_.empty()) {
      trace.emplace(trace_);
      scenario.simulation.trace = true;
    }
    const api::TrainingReport report = api::run_training(scenario);
    std::optional<api::GoodputReport> goodput;
    if (days_ > 0) {
      goodput = api::evaluate_goodput(scenario, days_, scenario.operations.recovery,
                                      report.step ? report.metrics.tokens_per_s : 0,
                                      report.step ? report.metrics.step_time_s : 0);
    }
    if (json_) {
      nlohmann::json j = api::report_to_json(report);
      if (goodput) j["goodput"] = api::goodput_to_json(*goodput);
      add_record(j, options_.record(file_));
      out << j.dump(2) << "\n";
    } else {
      out << record_text(options_.record(file_)) << "\n" << api::report_to_text(report);
      if (goodput) out << "\n" << api::goodput_to_text(*goodput);
    }
    if (trace && report.step) {
      trace->write(models::trace_to_json(*report.step).dump() + "\n");
      trace->commit();
    }
    return report.step ? 0 : 3;
  }

 private:
  std::string file_;
  ScenarioOptions options_;
  bool json_ = false;
  std::string trace_;
  double days_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_run_command() {
  return std::make_unique<RunCommand>();
}

}  // namespace fabricsim::tools
