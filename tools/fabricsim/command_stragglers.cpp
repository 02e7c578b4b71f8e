#include <ostream>

#include "api/straggler_run.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

class StragglersCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("stragglers",
                              "Step time with the scenario's slow GPUs vs without, simulated rank "
                              "by rank, and the group the delay propagated through");
    app_->add_option("scenario", file_, "Scenario JSON with a \"stragglers\" section");
    options_.add_to(*app_);
    app_->add_flag("--json", json_, "Print the report as JSON");
  }

  int run(std::ostream& out, std::ostream&) override {
    const api::StragglerReport r = api::run_stragglers(options_.scenario(file_));
    out << (json_ ? api::stragglers_to_json(r).dump(2) + "\n" : api::stragglers_to_text(r));
    return 0;
  }

 private:
  std::string file_;
  ScenarioOptions options_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_stragglers_command() {
  return std::make_unique<StragglersCommand>();
}

}  // namespace fabricsim::tools
