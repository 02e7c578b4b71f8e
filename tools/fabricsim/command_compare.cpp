#include <fmt/format.h>

#include <ostream>

#include "api/comparison.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

class CompareCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("compare",
                              "Simulate a baseline scenario and its variants and compare them");
    app_->add_option("scenarios", files_,
                     "BASE.json [VARIANT.json ...] (default base: the embedded example)");
    options_.add_to(*app_);
    app_->add_option("--vary", vary_,
                     "Variants of the base: /json/pointer=v1,v2,... (one per value)")
        ->allow_extra_args(false);
    app_->add_option("--prices", prices_file_, "Price table JSON for the cost per token");
    app_->add_flag("--json", json_, "Print the comparison as JSON");
  }

  int run(std::ostream& out, std::ostream&) override {
    if (!vary_.empty() && files_.size() > 1) {
      throw sim::InputError(kCommandLine, "--vary",
                            "give either variant files or --vary, not both");
    }
    if (vary_.empty() && files_.size() < 2) {
      throw sim::InputError(kCommandLine, "scenarios",
                            "expected a baseline and at least one variant (files or --vary)");
    }
    models::PriceTable prices = models::default_prices();
    if (!prices_file_.empty()) {
      models::read_price_table(sim::load_json_file(prices_file_).root(), prices);
    }
    std::vector<std::string> labels;
    std::vector<api::Scenario> scenarios;
    auto add = [&](const std::string& label, const nlohmann::json& doc, const std::string& file) {
      const sim::JsonDocument parsed(doc, file);
      scenarios.push_back(api::read_scenario(parsed.root()));
      labels.push_back(label);
    };
    const std::string base_file = files_.empty() ? "" : files_.front();
    const nlohmann::json base = options_.document(base_file);
    add(base_file.empty() ? "<default>" : base_file, base,
        base_file.empty() ? "<scenario>" : base_file);
    if (!vary_.empty()) {
      for (const auto& [label, doc] : api::vary(base, vary_, kCommandLine))
        add(label, doc, label);
    } else {
      for (size_t i = 1; i < files_.size(); ++i)
        add(files_[i], options_.document(files_[i]), files_[i]);
    }
    const std::vector<api::ComparisonRow> rows = api::compare_scenarios(labels, scenarios, prices);
    if (json_) {
      nlohmann::json j = api::comparison_to_json(rows);
      add_record(j, options_.record(base_file));
      out << j.dump(2) << "\n";
    } else {
      out << record_text(options_.record(base_file)) << "\n" << api::comparison_to_text(rows);
    }
    return rows.front().report.step ? 0 : 3;
  }

 private:
  std::vector<std::string> files_;
  std::string vary_, prices_file_;
  ScenarioOptions options_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_compare_command() {
  return std::make_unique<CompareCommand>();
}

}  // namespace fabricsim::tools
