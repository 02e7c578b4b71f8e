#include "api/trace_calibration.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/compute_model.hpp"
#include "sim/json_reader.hpp"
#include "tests/source_file.hpp"
#include "topologies/gpu_spec.hpp"

using namespace fabricsim;
using namespace fabricsim::api;
using calibration::KernelClass;

namespace {

Scenario scenario() {
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "zero": 1},
    "training": {"global_batch": 8, "seq_len": 4096},
    "simulation": {"backend": "analytical"}
  })");
  return read_scenario(sim::JsonDocument(doc, "test").root());
}

/// A trace of two steps whose classes take `slower` x the model's time.
calibration::KinetoTrace trace_of(const std::array<double, 4>& per_step) {
  nlohmann::json events = nlohmann::json::array();
  double ts = 0;
  const char* names[] = {"sm90_xmma_gemm_bf16", "flash_fwd_kernel", "ncclDevKernel_AllReduce",
                         "vectorized_elementwise_kernel"};
  for (int step = 0; step < 2; ++step) {
    events.push_back({{"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(step)},
                      {"ts", ts},
                      {"dur", 1}});
    for (size_t i = 0; i < 4; ++i) {
      const double us = per_step[i] * 1e6;
      events.push_back({{"cat", "kernel"}, {"name", names[i]}, {"ts", ts}, {"dur", us}});
      ts += us;
    }
  }
  const nlohmann::json doc = {{"deviceProperties", {{{"name", "NVIDIA H100 80GB HBM3"}}}},
                              {"traceEvents", events}};
  return calibration::read_kineto_trace(sim::JsonDocument(doc, "trace.json").root());
}

}  // namespace

TEST_CASE("trace calibration: each class's parameter reproduces its traced time", "[trace]") {
  const Scenario s = scenario();
  const Evaluator cluster(s);
  // The model's own classes, then a trace 25% slower in GEMMs, 40% in attention, 10% in memory.
  const TraceFit identity = fit_to_trace(cluster, s, trace_of({1, 1, 1, 1}));
  std::array<double, 4> model{};
  for (const TraceClassFit& c : identity.classes)
    model[static_cast<size_t>(c.kernel_class)] = c.before_s;
  REQUIRE(model[0] > 0);
  REQUIRE(model[1] > 0);
  REQUIRE(model[3] > 0);
  const std::array<double, 4> traced{1.25 * model[0], 1.4 * model[1], 0.01, 1.1 * model[3]};
  const TraceFit fit = fit_to_trace(cluster, s, trace_of(traced));
  CHECK(fit.warning.empty());
  for (const TraceClassFit& c : fit.classes) {
    INFO(to_string(c.kernel_class));
    if (c.kernel_class == KernelClass::communication) {
      CHECK_FALSE(c.fitted);
      continue;
    }
    CHECK(c.fitted);
    CHECK_FALSE(c.clamped);
    CHECK(c.before_s == Approx(model[static_cast<size_t>(c.kernel_class)]));
    CHECK(c.after_s == Approx(c.trace_s).epsilon(0.01));
  }
  const models::ComputeProfile& before = cluster.profile().compute;
  CHECK(fit.compute.gemm_for(s.training.precision).max_efficiency <
        before.gemm_for(s.training.precision).max_efficiency);
  // Attention runs at the sustained clock that the bf16 GEMM fit implies (models::sustained_clock):
  // the slower fitted GEMMs sit below the H100's sustained rate, so the fitted profile runs at
  // clock 1 where the built-in one ran below it, and the efficiency absorbs the difference.
  const topologies::GpuSpec& gpu = *topologies::find_gpu("H100-SXM5");
  const double clock_before = models::sustained_clock(gpu, before, topologies::Precision::bf16);
  const double clock_after = models::sustained_clock(gpu, fit.compute, topologies::Precision::bf16);
  CHECK(clock_before < 1.0);
  CHECK(clock_after == 1.0);
  CHECK(
      fit.compute.attention_forward_efficiency ==
      Approx(before.attention_forward_efficiency / 1.4 * clock_before / clock_after).epsilon(0.02));
  CHECK(fit.compute.memory_efficiency < before.memory_efficiency);
}

TEST_CASE("trace calibration: another GPU's trace is flagged, impossible speeds clamp", "[trace]") {
  const Scenario s = scenario();
  const Evaluator cluster(s);
  const calibration::KinetoTrace a100 =
      calibration::load_kineto_trace(testing::source_file("tests/data/kineto/hta-a100-rank0.json"));
  const TraceFit fit = fit_to_trace(cluster, s, a100);
  CHECK_THAT(fit.warning, Catch::Contains("A100-SXM4-80GB"));
  // The A100 trace runs no attention kernels the model would fit.
  CHECK_FALSE(fit.classes[static_cast<size_t>(KernelClass::attention)].fitted);
  // A trace 100x faster than the model cannot be reached: efficiency 1, said so.
  const TraceFit fast = fit_to_trace(cluster, s, trace_of({1e-6, 1e-6, 1e-6, 1e-6}));
  CHECK(fast.classes[0].clamped);
  CHECK(fast.compute.gemm_for(s.training.precision).max_efficiency == 1.0);
}

TEST_CASE("trace calibration: a trace slightly slower than the sustained clock is reproduced",
          "[trace]") {
  // With the built-in H100 profile the step's bf16 GEMMs run at the sustained clock, where their
  // time does not depend on the fit's efficiency; the trace fit folds that clock into the
  // efficiencies (fitted_in_step), so a 5% slower trace still moves the GEMM parameter.
  const Scenario s = scenario();
  const Evaluator cluster(s);
  const TraceFit identity = fit_to_trace(cluster, s, trace_of({1, 1, 1, 1}));
  std::array<double, 4> model{};
  for (const TraceClassFit& c : identity.classes)
    model[static_cast<size_t>(c.kernel_class)] = c.before_s;
  // Folding the clock in changes no kernel time: a trace of the model's own times fits where it
  // started.
  const std::array<double, 4> same{model[0], model[1], 0.01, model[3]};
  const TraceFit unchanged = fit_to_trace(cluster, s, trace_of(same));
  CHECK(unchanged.compute.fitted_in_step);
  for (const TraceClassFit& c : unchanged.classes) {
    if (c.fitted) CHECK(c.after_s == Approx(c.before_s).epsilon(1e-9));
  }
  const std::array<double, 4> traced{1.05 * model[0], model[1], 0.01, model[3]};
  const TraceFit fit = fit_to_trace(cluster, s, trace_of(traced));
  for (const TraceClassFit& c : fit.classes) {
    INFO(to_string(c.kernel_class));
    if (c.fitted) CHECK(c.after_s == Approx(c.trace_s).epsilon(0.01));
  }
}
