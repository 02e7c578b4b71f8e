#include "tools/fabricsim/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <ostream>

#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/version.hpp"
#include "topologies/spec_error.hpp"

namespace fabricsim::tools {

CliError cli_error(const std::exception& e) {
  if (dynamic_cast<const sim::InputError*>(&e) != nullptr) return {2, e.what()};
  if (const auto* spec = dynamic_cast<const topologies::SpecError*>(&e)) {
    return {2, "<command line>: " + (spec->field().empty() ? "topology" : spec->field()) + ": " +
                   spec->what()};
  }
  return {1, std::string("error: ") + e.what()};
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "fabricsim: fabric simulator and capacity planner for GPU training clusters.\n"
      "Run a command with --help for its options."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every command");
  app.set_version_flag("--version",
                       fmt::format("fabricsim {} (commit {})", build_version(), build_commit()),
                       "Print the version and the commit it was built from");
  std::vector<std::unique_ptr<Command>> commands = make_commands();
  for (auto& c : commands)
    c->add_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    // CLI11 formats its own help for subcommands through the exception.
    if (e.get_exit_code() == 0) {
      for (CLI::App* sub : app.get_subcommands())
        out << sub->help();
      return 0;
    }
    err << "fabricsim: " << e.what() << "\n";
    return 2;
  }
  for (auto& c : commands) {
    if (!c->selected()) continue;
    try {
      const int code = c->run(out, err);
      sim::check_stream(out, "<standard output>");  // a full disk must not exit 0
      return code;
    } catch (const std::exception& e) {
      const CliError error = cli_error(e);
      err << "fabricsim: " << error.message << "\n";
      return error.code;
    }
  }
  return 0;
}

}  // namespace fabricsim::tools
