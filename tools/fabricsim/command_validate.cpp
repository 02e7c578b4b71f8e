#include <ostream>

#include "tools/fabricsim/commands.hpp"

namespace fabricsim::tools {
namespace {

class ValidateCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("validate", "Compare predictions with published measurements");
    app_->add_option("--cases", cases_, "Case file (../shared/reference/cases format)")->required();
    app_->add_flag("--json", json_, "Print rows and summary as JSON");
  }
  int run(std::ostream& out, std::ostream&) override {
    out << "not yet\n";
    return 0;
  }

 private:
  std::string cases_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() { return std::make_unique<ValidateCommand>(); }

}  // namespace fabricsim::tools
