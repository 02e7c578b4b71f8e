#pragma once
// Errors of the calibration microbenchmarks and the exit code each one maps to. Scripts that run
// the tools on many machines tell "no GPU here" (2) apart from bad input (1) and a failure while
// measuring (3), so each kind of failure has its own code.

#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>

namespace fabricsim::tools::cuda {

enum ExitCode : int {
  kExitOk = 0,
  kExitBadInput = 1,       ///< bad flag, shape list or output path (sim::InputError)
  kExitNoDevice = 2,       ///< no usable CUDA device, or fewer GPUs than asked for
  kExitRuntimeFailure = 3  ///< a CUDA, cuBLASLt, NCCL or MPI call failed, or --check found errors
};

/// No CUDA device can be used (no driver, no GPU, CUDA_VISIBLE_DEVICES hides them all, too few).
class DeviceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A library call failed while measuring; the message names the call.
class CallFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "cudaMalloc: cudaErrorMemoryAllocation (out of memory)" -- the one format of call failures.
std::string describe_call_failure(std::string_view call, std::string_view error_name,
                                  std::string_view error_text);

/// Runs `body` and turns every exception into one line "<tool>: <message>" on `err` plus the
/// exit code of its kind, so that no failure ends in an uncaught exception or a crash.
int run_tool(std::string_view tool, std::ostream& err, const std::function<int()>& body);

/// The exit code `run_tool` uses for the exception currently being handled.
int exit_code_of_current_exception();

}  // namespace fabricsim::tools::cuda
