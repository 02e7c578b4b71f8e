#include "tools/cuda/report_output.hpp"

#include <iostream>

#include "sim/input_error.hpp"

namespace fabricsim::tools::cuda {

ReportOutput::ReportOutput(const std::string& path, bool open)
    : path_(path), to_stdout_(path.empty() || path == "-") {
  if (to_stdout_ || !open) return;
  file_.open(path_);
  if (!file_) throw sim::InputError(path_, "", "cannot open output file for writing");
}

void ReportOutput::write(const std::string& text) {
  if (to_stdout_) {
    std::cout << text << std::flush;
    return;
  }
  file_ << text;
  file_.close();
  if (!file_) throw sim::InputError(path_, "", "could not write the output file");
}

}  // namespace fabricsim::tools::cuda
