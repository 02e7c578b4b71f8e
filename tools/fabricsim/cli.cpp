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
    } catch (const sim::InputError& e) {
      err << "fabricsim: " << e.what() << "\n";
      return 2;
    } catch (const topologies::SpecError& e) {
      err << "fabricsim: <command line>: " << (e.field().empty() ? "topology" : e.field()) << ": "
          << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {
      err << "fabricsim: error: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace fabricsim::tools
