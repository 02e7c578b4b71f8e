#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <ostream>

#include "api/goodput_run.hpp"
#include "api/job_mix.hpp"
#include "api/link_trace.hpp"
#include "api/training_run.hpp"
#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli_options.hpp"
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
    app_->add_option("--link-trace", link_trace_,
                     "Write the busiest links' utilisation per time bucket as JSON (flow backend)");
    app_->add_option("--link-buckets", link_buckets_, "Time buckets of --link-trace")
        ->check(CLI::Range(1, 100000));
    app_->add_option("--days", days_,
                     "Also operate the run for this many days: failures, checkpoints, goodput "
                     "(the goodput command's report)")
        ->check(CLI::PositiveNumber);
    app_->add_option("--placement", placement_,
                     "Jobs file: where the jobs go (" + models::placement_policy_names() +
                         "; default: the file's)");
    app_->add_flag("--compare-placements", compare_placements_,
                   "Jobs file: run the mix under every placement policy and compare them");
  }

  int run(std::ostream& out, std::ostream&) override {
    if (!file_.empty()) {
      nlohmann::json doc = options_.document(file_);
      if (api::is_job_mix(doc)) return run_jobs(std::move(doc), out);
    }
    if (!placement_.empty() || compare_placements_) {
      throw sim::InputError(kCommandLine,
                            placement_.empty() ? "--compare-placements" : "--placement",
                            "a jobs file (a scenario with a \"jobs\" array) to place");
    }
    api::Scenario scenario = options_.scenario(file_);
    std::optional<sim::AtomicFile> trace;  // opened first: a bad path fails before simulating
    if (!trace_.empty()) {
      trace.emplace(trace_);
      scenario.simulation.trace = true;
    }
    std::optional<sim::AtomicFile> link_trace;
    if (!link_trace_.empty()) {
      if (scenario.simulation.backend != models::Backend::flow) {
        throw sim::InputError(kCommandLine, "--link-trace",
                              "link utilisation over time needs the flow backend (the analytical "
                              "one shares no links)");
      }
      link_trace.emplace(link_trace_);
      scenario.simulation.trace = true;  // the rate counters come with the trace
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
    if (link_trace && report.step) {
      nlohmann::json j = api::link_trace_json(*report.step, link_buckets_);
      add_record(j, options_.record(file_));
      link_trace->write(j.dump() + "\n");
      link_trace->commit();
    }
    if (trace && report.step) {
      trace->write(models::trace_to_json(*report.step).dump() + "\n");
      trace->commit();
    }
    return report.step ? 0 : 3;
  }

 private:
  /// A jobs file: several jobs on one cluster (api/job_mix).
  int run_jobs(nlohmann::json doc, std::ostream& out) {
    if (!trace_.empty() || !link_trace_.empty() || days_ > 0) {
      throw sim::InputError(kCommandLine,
                            !trace_.empty()        ? "--trace"
                            : !link_trace_.empty() ? "--link-trace"
                                                   : "--days",
                            "one scenario, not a jobs file");
    }
    const sim::JsonDocument parsed(std::move(doc), file_);
    const api::JobMix mix = api::read_job_mix(parsed.root());
    std::vector<models::PlacementPolicy> policies{mix.policy};
    if (!placement_.empty() && !models::parse_placement_policy(placement_, policies.front())) {
      throw sim::InputError(
          kCommandLine, "--placement",
          "one of " + models::placement_policy_names() + ", got '" + placement_ + "'");
    }
    if (compare_placements_) {
      policies = {models::PlacementPolicy::packed, models::PlacementPolicy::spread,
                  models::PlacementPolicy::topology_aware};
    }
    std::vector<api::JobMixReport> reports;
    for (models::PlacementPolicy p : policies)
      reports.push_back(api::run_job_mix(mix, p));
    const ScenarioRecord record = options_.record(file_);
    if (json_) {
      nlohmann::json j;
      if (compare_placements_) {
        j["placements"] = nlohmann::json::array();
        for (const api::JobMixReport& r : reports)
          j["placements"].push_back(api::job_mix_to_json(r));
        j["comparison"] = api::placement_comparison_json(reports);
      } else {
        j = api::job_mix_to_json(reports.front());
      }
      add_record(j, record);
      out << j.dump(2) << "\n";
    } else {
      out << record_text(record) << "\n";
      for (const api::JobMixReport& r : reports)
        out << api::job_mix_to_text(r) << "\n";
      if (compare_placements_) out << api::placement_comparison_text(reports);
    }
    const bool all_ran =
        std::all_of(reports.front().jobs.begin(), reports.front().jobs.end(),
                    [](const api::JobOutcome& j) { return j.together.has_value(); });
    return all_ran ? 0 : 3;
  }

  std::string file_;
  ScenarioOptions options_;
  bool json_ = false;
  std::string trace_, link_trace_;
  int link_buckets_ = 100;
  double days_ = 0;
  std::string placement_;
  bool compare_placements_ = false;
};

}  // namespace

std::unique_ptr<Command> make_run_command() {
  return std::make_unique<RunCommand>();
}

}  // namespace fabricsim::tools
