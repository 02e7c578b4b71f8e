#include "api/trace_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "models/compute_model.hpp"

namespace fabricsim::api {

namespace {

using calibration::KernelClass;

/// The model's kernel time per step of stage 0 in the trace's classes.
std::array<double, 4> model_seconds(const Evaluator& cluster, const Scenario& s,
                                    const models::ComputeProfile& compute) {
  const PreparedPlan p = cluster.prepare(s, compute);
  std::array<double, 4> out{};
  if (p.problem) return out;
  const models::OpClassSeconds c = models::op_class_seconds(p.workload, 0);
  out[static_cast<size_t>(KernelClass::gemm)] = c.gemm;
  out[static_cast<size_t>(KernelClass::attention)] = c.attention;
  out[static_cast<size_t>(KernelClass::memory)] =
      c.memory + c.loss + c.fp8 + c.moe_routing + c.optimizer;
  return out;
}

/// The GPU family a name mentions ("A100", "H100", "B200" ...), upper-cased; "" if none.
std::string family(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const char* f : {"A100", "H100", "H200", "H800", "H20", "B200", "B300", "GB200", "GB300",
                        "V100", "A800", "L40", "RUBIN"}) {
    if (name.find(f) != std::string::npos) return f;
  }
  return "";
}

}  // namespace

TraceFit fit_to_trace(const Evaluator& cluster, const Scenario& s,
                      const calibration::KinetoTrace& trace) {
  TraceFit fit;
  fit.compute = cluster.profile().compute;
  const topologies::GpuSpec& gpu = cluster.system().gpu;
  const std::string traced = family(trace.gpu_name), ours = family(gpu.id + " " + gpu.name);
  if (!traced.empty() && traced != ours) {
    fit.warning =
        fmt::format("the trace ran on {} but the scenario's GPU is {}", trace.gpu_name, gpu.name);
  }
  if (trace.steps == 0) {
    fit.warning += std::string(fit.warning.empty() ? "" : "; ") +
                   "the trace marks no ProfilerStep: its whole window is taken as one step";
  }
  const std::array<double, 4> before = model_seconds(cluster, s, fit.compute);
  // A trace is a real step, so what is fitted runs at its clock: fold the sustained clock into
  // the bf16 GEMM and attention efficiencies (the same kernel times) and switch it off.
  const double clock = models::sustained_clock(gpu, fit.compute, topologies::Precision::bf16);
  for (topologies::Precision p : {topologies::Precision::bf16, topologies::Precision::fp16})
    fit.compute.gemm_for(p).max_efficiency *= clock;
  fit.compute.attention_forward_efficiency *= clock;
  fit.compute.attention_backward_efficiency *= clock;
  fit.compute.fitted_in_step = true;
  // Each class moves one parameter; GEMM time is launch + max(math, memory) and the classes
  // share nothing, so a few fixed-point rounds of parameter x model / trace converge.
  auto clamp = [](double e, bool& hit) {
    const double c = std::clamp(e, 0.01, 1.0);
    hit = c != e;
    return c;
  };
  std::array<bool, 4> clamped{};
  auto fittable = [&](KernelClass k) {
    const size_t i = static_cast<size_t>(k);
    return k != KernelClass::communication && before[i] > 0 && trace.per_step.seconds[i] > 0;
  };
  std::array<double, 4> now = before;
  for (int round = 0; round < 8; ++round) {
    auto ratio = [&](KernelClass k) {
      const size_t i = static_cast<size_t>(k);
      return now[i] / trace.per_step.seconds[i];
    };
    if (fittable(KernelClass::gemm)) {
      models::GemmParams& g = fit.compute.gemm_for(s.training.precision);
      g.max_efficiency = clamp(g.max_efficiency * ratio(KernelClass::gemm), clamped[0]);
    }
    if (fittable(KernelClass::attention)) {
      const double r = ratio(KernelClass::attention);
      bool a = false, b = false;
      fit.compute.attention_forward_efficiency =
          clamp(fit.compute.attention_forward_efficiency * r, a);
      fit.compute.attention_backward_efficiency =
          clamp(fit.compute.attention_backward_efficiency * r, b);
      clamped[1] = a || b;
    }
    if (fittable(KernelClass::memory)) {
      fit.compute.memory_efficiency =
          clamp(fit.compute.memory_efficiency * ratio(KernelClass::memory), clamped[3]);
    }
    now = model_seconds(cluster, s, fit.compute);
  }
  fit.compute.source += fmt::format(
      "; GEMM ({}), attention and memory-bound efficiencies fitted "
      "to the kernel times of trace {}",
      topologies::to_string(s.training.precision), trace.file);
  for (const KernelClass k : calibration::kKernelClasses) {
    const size_t i = static_cast<size_t>(k);
    TraceClassFit c;
    c.kernel_class = k;
    c.trace_s = trace.per_step.seconds[i];
    c.before_s = before[i];
    c.after_s = k == KernelClass::communication ? 0 : now[i];
    c.fitted = fittable(k);
    c.clamped = clamped[i];
    if (k == KernelClass::communication) {
      c.note = "reported only: kernel time in a trace includes waiting for peers";
    } else if (!c.fitted) {
      c.note =
          c.trace_s > 0 ? "the scenario runs no such kernels" : "the trace has no such kernels";
    } else if (c.clamped) {
      c.note =
          "the parameter reached its bound (efficiency 0.01 or 1): the scenario and the "
          "trace do not describe the same work";
    }
    fit.classes.push_back(c);
  }
  return fit;
}

}  // namespace fabricsim::api
