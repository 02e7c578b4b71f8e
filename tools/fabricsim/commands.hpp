#pragma once
// Every CLI verb is a Command: it declares its options on a CLI11 subcommand and runs when
// selected. Each lives in its own file (command_<verb>.cpp).

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <vector>

namespace fabricsim::tools {

class Command {
 public:
  virtual ~Command() = default;
  virtual void add_to(CLI::App& app) = 0;
  virtual int run(std::ostream& out, std::ostream& err) = 0;
  bool selected() const { return app_ != nullptr && app_->parsed(); }

 protected:
  CLI::App* app_ = nullptr;
};

std::vector<std::unique_ptr<Command>> make_commands();

std::unique_ptr<Command> make_topology_command();
std::unique_ptr<Command> make_collective_command();
std::unique_ptr<Command> make_validate_command();
std::unique_ptr<Command> make_calibrate_command();
std::unique_ptr<Command> make_run_command();
std::unique_ptr<Command> make_scale_command();
std::unique_ptr<Command> make_plan_command();
std::unique_ptr<Command> make_size_command();
std::unique_ptr<Command> make_compare_command();
std::unique_ptr<Command> make_plot_command();
std::unique_ptr<Command> make_goodput_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_stragglers_command();
std::unique_ptr<Command> make_docs_command();

}  // namespace fabricsim::tools
