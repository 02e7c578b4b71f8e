#pragma once
// Runs the fabricsim CLI in-process, as `fabricsim <args...>` would, capturing both streams.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tools/fabricsim/cli.hpp"

namespace fabricsim::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliResult run_fabricsim(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"fabricsim"};
  for (const std::string& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.code = tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

/// Runs the CLI, requires exit 0 (stderr shown otherwise) and parses its standard output as JSON.
inline nlohmann::json json_of(const std::vector<std::string>& args) {
  const CliResult r = run_fabricsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}

/// The lines of `text` (without their '\n').
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

}  // namespace fabricsim::testing
