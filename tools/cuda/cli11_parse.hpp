#pragma once
// Shared CLI11 handling of the two benches: CLI11's parse errors become sim::InputError located on
// the command line, and --help becomes help text instead of an exception. Internal to the core
// library's .cpp files (the CUDA mains never see CLI11).

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "sim/input_error.hpp"

namespace fabricsim::tools::cuda {

/// Parses into `app`; returns the help text when help was asked for, nullopt otherwise.
inline std::optional<std::string> parse_or_help(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return app.help();
  } catch (const CLI::ParseError& e) {
    throw sim::InputError("<command line>", "", std::string(e.what()) + " (see --help)");
  }
  return std::nullopt;
}

[[noreturn]] inline void flag_error(const std::string& flag, const std::string& message) {
  throw sim::InputError("<command line>", flag, message);
}

}  // namespace fabricsim::tools::cuda
