#pragma once
// Calibration from a PyTorch profiler (Kineto) trace of one rank's training steps: the trace's
// GPU time per kernel class (calibration/kineto_trace) against the model's for the same scenario
// (the op classes of stage 0, where rank 0 runs), each class fitting the compute-model parameter
// that prices it: GEMM max efficiency (the training precision), attention forward and backward
// efficiency, memory-bound HBM efficiency. Communication kernels are reported, not fitted (their
// time in a trace includes waiting for peers).

#include <string>
#include <vector>

#include "api/evaluator.hpp"
#include "api/scenario.hpp"
#include "calibration/kineto_trace.hpp"

namespace fabricsim::api {

struct TraceClassFit {
  calibration::KernelClass kernel_class = calibration::KernelClass::gemm;
  double trace_s = 0;    ///< per step
  double before_s = 0;   ///< the model's, per step, with the scenario's profile
  double after_s = 0;    ///< with the fitted one
  bool fitted = false;   ///< false: reported only (communication, or a class one side lacks)
  bool clamped = false;  ///< the parameter hit its bound (efficiency 1 or 0.01)
  std::string note;
};

struct TraceFit {
  models::ComputeProfile compute;
  std::vector<TraceClassFit> classes;
  std::string warning;  ///< e.g. the trace ran on another GPU than the scenario's
};

TraceFit fit_to_trace(const Evaluator& cluster, const Scenario& scenario,
                      const calibration::KinetoTrace& trace);

}  // namespace fabricsim::api
