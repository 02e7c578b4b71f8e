#include "tools/cuda/report_output.hpp"

#include <iostream>

#include "sim/input_error.hpp"

namespace fabricsim::tools::cuda {

ReportOutput::ReportOutput(const std::string& path, bool open)
    : path_(path), to_stdout_(path.empty() || path == "-") {
  if (to_stdout_ || !open) return;
  file_.emplace(path_);
}

void ReportOutput::write(const std::string& text) {
  if (to_stdout_) {
    std::cout << text;
    sim::check_stream(std::cout, "<standard output>");
    return;
  }
  if (!file_)
    throw sim::InputError(path_, "", "the report file was not opened (or already written)");
  file_->write(text);
  file_->commit();
  file_.reset();
}

}  // namespace fabricsim::tools::cuda
