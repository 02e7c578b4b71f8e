#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "api/plan_check.hpp"
#include "sim/input_error.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

models::Recompute parse_recompute_flag(const std::string& text) {
  if (text == "none") return models::Recompute::none;
  if (text == "selective") return models::Recompute::selective;
  if (text == "full") return models::Recompute::full;
  throw sim::InputError(kCommandLine, "--recompute-modes",
                        fmt::format("expected none, selective or full, got \"{}\"", text));
}

class PlanCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "plan", "Search the parallelism plans of a scenario's model, batch and GPUs for the best");
    app_->add_option("scenario", file_,
                     "Scenario JSON (its plan sizes are searched; default: the embedded example)");
    options_.add_to(*app_, false);
    app_->add_option("--fix", fixed_, "Fix a size: tp=8, pp=4, dp, cp, ep, vp, micro_batch, zero")
        ->allow_extra_args(false);
    app_->add_option("--max-tp", constraints_.max_tp,
                     "Largest tensor-parallel size (default: the scale-up domain)");
    app_->add_option("--max-pp", constraints_.max_pp,
                     "Largest pipeline-parallel size (default: the layers)");
    app_->add_option("--max-cp", constraints_.max_cp, "Largest context-parallel size");
    app_->add_option("--max-vp", constraints_.max_vp, "Most virtual stages per pipeline rank");
    app_->add_option("--max-micro-batch", constraints_.max_micro_batch,
                     "Largest micro-batch (every size up to it that divides the batch is tried)");
    app_->add_option("--zero-stages", constraints_.zero_stages, "Allowed ZeRO stages, e.g. 1,3")
        ->delimiter(',')
        ->check(CLI::Range(0, 3));
    app_->add_option("--recompute-modes", recompute_,
                     "Allowed recomputation: none, selective, full (comma-separated)")
        ->delimiter(',');
    app_->add_flag("--no-cp", no_cp_, "Do not use context parallelism");
    app_->add_flag("--no-ep", no_ep_, "Do not use expert parallelism");
    app_->add_flag("--no-vp", no_vp_, "Do not interleave pipeline stages");
    app_->add_flag("--no-unbalanced", no_unbalanced_,
                   "Only pipelines whose stages hold equal layer counts");
    app_->add_flag("--no-overlap-search", no_overlap_,
                   "Keep the scenario's overlap switches instead of trying them on and off");
    app_->add_flag("--no-order-search", no_order_, "Keep the scenario's placement order");
    app_->add_flag("--no-layer-remedies", no_layer_remedies_,
                   "Reject plans whose activations overflow instead of retrying them with the "
                   "fewest layers recomputed or offloaded that fit");
    app_->add_option("--top", options_search_.top,
                     "Plans re-simulated at flow fidelity and printed (0: analytical only)")
        ->check(CLI::NonNegativeNumber);
    app_->add_option("--threads", options_search_.threads, "Threads (0: every core)")
        ->check(CLI::NonNegativeNumber);
    app_->add_flag("--json", json_, "Print the search as JSON");
    app_->add_option("--cases", cases_,
                     "Training case file: rank each published plan (--case) in its own search");
    app_->add_option("--case", case_ids_, "Case id to check (repeatable; with --cases)")
        ->allow_extra_args(false);
  }

  int run(std::ostream& out, std::ostream& err) override {
    api::PlanConstraints constraints = constraints_;
    for (const std::string& f : fixed_)
      api::add_fixed(constraints, f, "--fix");
    if (!recompute_.empty()) {
      constraints.recompute.clear();
      for (const std::string& r : recompute_)
        constraints.recompute.push_back(parse_recompute_flag(r));
    }
    if (constraints.zero_stages.empty()) {
      throw sim::InputError(kCommandLine, "--zero-stages", "expected at least one ZeRO stage");
    }
    constraints.allow_cp = !no_cp_;
    constraints.allow_ep = !no_ep_;
    constraints.allow_vp = !no_vp_;
    constraints.allow_unbalanced = !no_unbalanced_;
    constraints.search_overlap = !no_overlap_;
    constraints.search_order = !no_order_;
    constraints.fit_layers = !no_layer_remedies_;
    if (!cases_.empty()) return check_cases(constraints, out);
    const api::Scenario scenario = options_.search_base(file_);
    const api::PlanSearch search = api::search_plans(scenario, constraints, options_search_);
    if (json_) {
      nlohmann::json j = api::search_to_json(search, scenario);
      add_record(j, options_.record(file_));
      out << j.dump(2) << "\n";
    } else {
      out << record_text(options_.record(file_)) << "\n" << api::search_to_text(search, scenario);
    }
    if (search.ranked.empty()) {
      std::string why;
      for (const auto& [reason, count] : search.rejected)
        why += fmt::format("{}{} {}", why.empty() ? "" : ", ", count, api::to_string(reason));
      err << fmt::format(
          "fabricsim: no plan of {} on {} GPUs meets the constraints ({} candidates: {})\n",
          scenario.model.name, scenario.gpus, search.candidates,
          why.empty() ? "none allowed" : why);
      return 2;
    }
    return 0;
  }

 private:
  int check_cases(const api::PlanConstraints& constraints, std::ostream& out) const {
    if (case_ids_.empty()) {
      throw sim::InputError(kCommandLine, "--case", "expected at least one case id with --cases");
    }
    const std::vector<calibration::Case> cases = calibration::load_cases(cases_);
    std::vector<api::PublishedPlanCheck> checks;
    for (const std::string& id : case_ids_) {
      const auto c = std::find_if(cases.begin(), cases.end(),
                                  [&](const calibration::Case& x) { return x.id == id; });
      if (c == cases.end() || c->kind != calibration::CaseKind::training) {
        throw sim::InputError(cases_, "--case", fmt::format("no training case with id \"{}\"", id));
      }
      api::PublishedPlanCheck check =
          api::check_published_plan(api::published_scenario(*c), constraints, options_search_);
      check.case_id = id;
      checks.push_back(std::move(check));
    }
    if (json_) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& c : checks)
        j.push_back(api::check_to_json(c));
      out << j.dump(2) << "\n";
    } else {
      out << api::checks_to_markdown(checks);
    }
    return 0;
  }

  std::string file_, cases_;
  std::vector<std::string> case_ids_;
  ScenarioOptions options_;
  api::PlanConstraints constraints_;
  api::SearchOptions options_search_;
  std::vector<std::string> fixed_, recompute_;
  bool no_cp_ = false, no_ep_ = false, no_vp_ = false, no_unbalanced_ = false, no_overlap_ = false,
       no_order_ = false, no_layer_remedies_ = false, json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_plan_command() {
  return std::make_unique<PlanCommand>();
}

}  // namespace fabricsim::tools
