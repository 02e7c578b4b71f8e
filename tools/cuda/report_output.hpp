#pragma once
// Where a bench tool writes its JSON report: standard output, or a file opened before measuring so
// that a bad path fails in seconds, not after the sweep.

#include <optional>
#include <string>

#include "sim/file_write.hpp"

namespace fabricsim::tools::cuda {

class ReportOutput {
 public:
  /// `path` empty or "-" means standard output; `open` false leaves the file alone (MPI ranks
  /// other than the root write nothing). Throws sim::InputError when the file cannot be opened.
  explicit ReportOutput(const std::string& path, bool open = true);
  /// Writes the whole report; throws sim::InputError when the file could not be written.
  void write(const std::string& text);

 private:
  std::string path_;
  bool to_stdout_;
  std::optional<sim::AtomicFile> file_;
};

}  // namespace fabricsim::tools::cuda
