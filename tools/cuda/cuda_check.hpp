#pragma once
// CUDA runtime checks shared by the two benches: every return code is checked and a failure
// becomes a CallFailure naming the call; "no usable GPU" becomes DeviceUnavailable (exit code 2).
// Needs the CUDA runtime headers, so only the .cu mains include it.

#include <cuda_runtime.h>

#include <string>

#include "tools/cuda/tool_errors.hpp"

namespace fabricsim::tools::cuda {

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw CallFailure(
        describe_call_failure(call, cudaGetErrorName(status), cudaGetErrorString(status)));
  }
}

/// The number of visible CUDA devices; throws DeviceUnavailable when there is none (no GPU, no
/// driver, or CUDA_VISIBLE_DEVICES hides them).
inline int require_cuda_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    throw DeviceUnavailable(std::string("no CUDA device found (cudaGetDeviceCount: ") +
                            cudaGetErrorString(status) + ")");
  }
  if (count < 1) throw DeviceUnavailable("no CUDA device found (cudaGetDeviceCount: 0 devices)");
  return count;
}

}  // namespace fabricsim::tools::cuda
