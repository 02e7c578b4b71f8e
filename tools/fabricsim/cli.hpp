#pragma once
// The fabricsim command line: one function so that tests can drive it in-process.

#include <iosfwd>

namespace fabricsim::tools {

/// Runs the CLI with the given arguments, writing results to `out` and errors to `err`.
/// Returns the process exit code.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace fabricsim::tools
