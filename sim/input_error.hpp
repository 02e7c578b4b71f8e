#pragma once
// The one error type for bad user input (scenario, topology, calibration and case files, CLI
// values). It names where the bad value is (file and JSON pointer, or file and line) and what was
// expected, so the CLI can print it as one line and exit non-zero.

#include <stdexcept>
#include <string>

namespace fabricsim::sim {

class InputError : public std::runtime_error {
 public:
  /// `where` is a file name (or "<command line>"), `path` a JSON pointer or "line N" (may be
  /// empty), `message` says what was expected and what was found.
  InputError(std::string where, std::string path, std::string message)
      : std::runtime_error(compose(where, path, message)),
        where_(std::move(where)),
        path_(std::move(path)),
        message_(std::move(message)) {}

  const std::string& where() const { return where_; }
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  static std::string compose(const std::string& where, const std::string& path,
                             const std::string& message) {
    std::string out = where.empty() ? std::string("<input>") : where;
    if (!path.empty()) out += ": " + path;
    out += ": " + message;
    return out;
  }
  std::string where_;
  std::string path_;
  std::string message_;
};

}  // namespace fabricsim::sim
