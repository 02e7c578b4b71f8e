#pragma once
// What parsing a tool's command line gives: either options to run with or the help text to print.

#include <optional>
#include <string>

namespace fabricsim::tools::cuda {

template <typename Options>
struct CommandLine {
  std::optional<std::string> help;  ///< set when -h/--help was given: print it and exit 0
  Options options;
};

}  // namespace fabricsim::tools::cuda
