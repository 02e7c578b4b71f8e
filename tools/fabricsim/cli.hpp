#pragma once
// The fabricsim command line: one function so that tests can drive it in-process.

#include <exception>
#include <iosfwd>
#include <string>

namespace fabricsim::tools {

/// Runs the CLI with the given arguments, writing results to `out` and errors to `err`.
/// Returns the process exit code.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

/// What the CLI makes of an error a command threw: the message it prints after "fabricsim: " and
/// its exit code (2: bad input, sim::InputError or a topology SpecError; 1: anything else). The
/// Python module raises the same messages.
struct CliError {
  int code = 1;
  std::string message;
};
CliError cli_error(const std::exception& e);

}  // namespace fabricsim::tools
