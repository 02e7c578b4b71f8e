#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "api/goodput_run.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

class GoodputCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "goodput",
        "Failures, recovery and checkpoints of a scenario run for days: MTBF, time lost "
        "by cause, goodput and effective throughput");
    app_->add_option("scenario", file_, "Scenario JSON (default: the embedded Llama 3 8B example)");
    options_.add_to(*app_);
    app_->add_option("--days", days_, "Length of the run in days")->check(CLI::PositiveNumber);
    app_->add_option("--recovery", recovery_, "manual or automated (default: the scenario's)")
        ->check(CLI::IsMember({"manual", "automated"}));
    app_->add_option("--scale-gpus", scale_gpus_,
                     "Instead of one run: goodput at each of these GPU counts, manual and "
                     "automated (no step simulation)")
        ->delimiter(',');
    app_->add_flag("--json", json_, "Print the report as JSON");
  }

  int run(std::ostream& out, std::ostream&) override {
    if (!scale_gpus_.empty()) return run_scaling(out);
    const api::Scenario scenario = options_.scenario(file_);
    std::optional<models::RecoveryLevel> level;
    if (!recovery_.empty()) level = parse_level(recovery_);
    const api::GoodputReport report = api::run_goodput(scenario, days_, level);
    if (json_) {
      out << api::goodput_to_json(report).dump(2) << "\n";
    } else {
      out << api::goodput_to_text(report);
    }
    return 0;
  }

 private:
  static models::RecoveryLevel parse_level(const std::string& s) {
    return s == "manual" ? models::RecoveryLevel::manual : models::RecoveryLevel::automated;
  }

  int run_scaling(std::ostream& out) const {
    nlohmann::json rows = nlohmann::json::array();
    std::string text = fmt::format("{:>8} {:>10} {:>14} {:>16} {:>18}\n", "GPUs", "MTBF h",
                                   "interruptions", "goodput manual", "goodput automated");
    // Weak scaling: each data-parallel replica keeps its share of the batch.
    const api::Scenario base = options_.scenario(file_);
    const models::ParallelPlan& p = base.plan;
    const int per_replica = base.training.global_batch / p.dp;
    for (const int gpus : scale_gpus_) {
      if (gpus <= 0) throw sim::InputError(kCommandLine, "--scale-gpus", "positive GPU counts");
      nlohmann::json doc = options_.document(file_);
      doc["system"]["gpus"] = gpus;
      if (doc.contains("parallelism")) doc["parallelism"].erase("dp");
      doc["training"]["global_batch"] = std::max(1, gpus / (p.tp * p.pp * p.cp)) * per_replica;
      const sim::JsonDocument parsed(doc, file_.empty() ? std::string("<scenario>") : file_);
      const api::Scenario s = api::read_scenario(parsed.root());
      const api::GoodputReport manual =
          api::evaluate_goodput(s, days_, models::RecoveryLevel::manual, 0);
      const api::GoodputReport automated =
          api::evaluate_goodput(s, days_, models::RecoveryLevel::automated, 0);
      rows.push_back({{"gpus", gpus},
                      {"mtbf_hours", manual.result.mtbf_hours},
                      {"unexpected_interruptions", manual.result.unexpected_interruptions},
                      {"goodput_manual", manual.result.goodput},
                      {"goodput_automated", automated.result.goodput},
                      {"lost_hours_manual", api::goodput_to_json(manual)["lost_hours"]},
                      {"lost_hours_automated", api::goodput_to_json(automated)["lost_hours"]}});
      text += fmt::format("{:>8} {:>10.2f} {:>14.1f} {:>15.1f}% {:>17.1f}%\n", gpus,
                          manual.result.mtbf_hours, manual.result.unexpected_interruptions,
                          100 * manual.result.goodput, 100 * automated.result.goodput);
    }
    if (json_) {
      out << nlohmann::json{{"days", days_}, {"rows", rows}}.dump(2) << "\n";
    } else {
      out << fmt::format("goodput over {:g} days\n", days_) << text;
    }
    return 0;
  }

  std::string file_;
  ScenarioOptions options_;
  double days_ = 30;
  std::string recovery_;
  std::vector<int> scale_gpus_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_goodput_command() {
  return std::make_unique<GoodputCommand>();
}

}  // namespace fabricsim::tools
