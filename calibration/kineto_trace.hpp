#pragma once
// A PyTorch profiler (Kineto) trace of training steps, reduced to what calibrates the compute
// model: GPU kernel time per step by kernel class (GEMM and convolutions, attention,
// communication, memory-bound), how busy the GPU was, and the GPU it ran on. The trace is the
// Chrome trace-event JSON `torch.profiler` exports (`traceEvents`, optional
// `deviceProperties`); only the fields read here are interpreted, the rest of the format is
// PyTorch's and is ignored.

#include <array>
#include <string>
#include <string_view>

#include "sim/json_reader.hpp"

namespace fabricsim::calibration {

enum class KernelClass { gemm, attention, communication, memory };
inline constexpr std::array<KernelClass, 4> kKernelClasses{
    KernelClass::gemm, KernelClass::attention, KernelClass::communication, KernelClass::memory};
std::string_view to_string(KernelClass c);

/// The class of a GPU kernel from its name: NCCL kernels are communication; flash / fused
/// multi-head attention kernels (FlashAttention, cuDNN SDPA, fmha) attention; tensor-core math
/// (cuBLAS/CUTLASS GEMMs, nvjet, xmma, convolutions) GEMM; everything else memory-bound
/// (elementwise, reductions, norms, copies, optimizer).
KernelClass classify_kernel(std::string_view name);

struct KernelTimes {
  std::array<double, 4> seconds{};  ///< by KernelClass, summed over kernels (streams may overlap)
  std::array<long long, 4> kernels{};
  double of(KernelClass c) const { return seconds[static_cast<size_t>(c)]; }
  double total() const { return seconds[0] + seconds[1] + seconds[2] + seconds[3]; }
};

struct KinetoTrace {
  std::string file;
  std::string gpu_name;  ///< deviceProperties[0].name; empty when the trace has none
  int steps = 0;         ///< ProfilerStep#N annotations (0: the trace has none)
  double window_s = 0;   ///< from the first to the last GPU activity
  /// Time at least one kernel, copy or set ran (the union of their intervals) / window.
  double gpu_busy = 0;
  KernelTimes total;     ///< every GPU activity of the trace
  KernelTimes per_step;  ///< total / steps (total when steps is 0)
};

/// Reads a trace; throws sim::InputError naming the file and JSON pointer of what is malformed
/// (no traceEvents, an activity without a numeric ts or dur, no GPU activity at all).
KinetoTrace read_kineto_trace(const sim::JsonValue& root);
KinetoTrace load_kineto_trace(const std::string& path);

}  // namespace fabricsim::calibration
