#include "calibration/relative_gemm_rate.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "calibration/profile.hpp"
#include "models/compute_model.hpp"
#include "models/precision_recipe.hpp"
#include "models/software_stack.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::calibration {
namespace {

using topologies::Precision;

const topologies::GpuSpec& b300() {
  return *topologies::find_gpu("B300");
}

/// The published B300 entry, with launches zeroed so that time is inverse to efficiency.
RelativeGemmRate b300_rate(double ratio) {
  RelativeGemmRate r = relative_gemm_rates().front();
  r.ratio = ratio;
  return r;
}

models::ComputeProfile without_launch(models::ComputeProfile p) {
  for (models::GemmParams& g : p.gemm)
    g.launch = sim::Time::zero();
  return p;
}

}  // namespace

TEST_CASE("the published relative GEMM rate is Transformer Engine's B300 layer", "[calibration]") {
  const RelativeGemmRate& r = relative_gemm_rates().front();
  CHECK(r.gpu == "B300");
  CHECK(r.precision == Precision::nvfp4);
  CHECK(r.reference == Precision::mxfp8);
  CHECK(r.ratio == Approx(1.9025).epsilon(1e-4));
  REQUIRE(r.shapes.size() == 12);
  // Three passes of four linear layers over 15,872 tokens: 3 x 2 x 15872 x (4096 x 12288 +
  // 4096 x 4096 + 2 x 4096 x 16384) FLOPs.
  double flops = 0;
  for (const GemmShape& s : r.shapes)
    flops += 2 * s.m * s.n * s.k;
  CHECK(flops == Approx(3 * 2 * 15872.0 * 4096 * (12288 + 4096 + 2 * 16384)));
}

TEST_CASE("a relative rate sets the efficiency at which the model reproduces the ratio",
          "[calibration]") {
  const models::ComputeProfile profile = models::default_compute_profile(b300());
  const RelativeGemmRate rate = b300_rate(1.9);
  const models::GemmParams fit =
      fit_relative_rate(b300(), profile, profile.gemm_for(Precision::nvfp4), rate);
  CHECK(fit.fitted);
  models::ComputeProfile fitted = profile;
  fitted.gemm_for(Precision::nvfp4) = fit;
  const double ratio = summed_gemm_seconds(b300(), fitted, Precision::mxfp8, rate.shapes) /
                       summed_gemm_seconds(b300(), fitted, Precision::nvfp4, rate.shapes);
  CHECK(ratio == Approx(1.9).epsilon(1e-9));
  // The shape parameters are the target's own, only the ceiling moves.
  CHECK(fit.tile_m == profile.gemm_for(Precision::nvfp4).tile_m);
  CHECK(fit.k_half == profile.gemm_for(Precision::nvfp4).k_half);
}

TEST_CASE("without launch time, the fitted efficiency is proportional to the ratio",
          "[calibration]") {
  // These shapes are tensor-bound, so a GEMM's time is its FLOPs over efficiency x peak.
  const models::ComputeProfile profile = without_launch(models::default_compute_profile(b300()));
  const models::GemmParams target = profile.gemm_for(Precision::nvfp4);
  const double one = fit_relative_rate(b300(), profile, target, b300_rate(1.0)).max_efficiency;
  const double two = fit_relative_rate(b300(), profile, target, b300_rate(2.0)).max_efficiency;
  CHECK(two / one == Approx(2.0).epsilon(1e-6));
  // At ratio 1 the two precisions take the same time: the FP4 ceiling is the FP8 one scaled by
  // the peaks (same tiles and K ramp in the default profile).
  CHECK(one == Approx(profile.gemm_for(Precision::mxfp8).max_efficiency *
                      b300().peak_tflops(Precision::mxfp8) / b300().peak_tflops(Precision::nvfp4))
                   .epsilon(1e-6));
}

TEST_CASE("a ratio no efficiency reaches is refused", "[calibration]") {
  const models::ComputeProfile profile = models::default_compute_profile(b300());
  const models::GemmParams target = profile.gemm_for(Precision::nvfp4);
  CHECK_THROWS_AS(fit_relative_rate(b300(), profile, target, b300_rate(100.0)), std::domain_error);
  CHECK_THROWS_AS(fit_relative_rate(b300(), profile, target, b300_rate(1e-4)), std::domain_error);
}

TEST_CASE("the built-in Blackwell Ultra profiles carry Transformer Engine's FP4 ratio",
          "[calibration]") {
  const RelativeGemmRate& rate = relative_gemm_rates().front();
  for (const char* system : {"dgx-b300", "gb300-nvl72"}) {
    INFO(system);
    const CalibrationProfile* p = builtin_profile(system);
    REQUIRE(p != nullptr);
    const topologies::GpuSpec& gpu = *topologies::find_gpu(p->gpu);
    const double ratio = summed_gemm_seconds(gpu, p->compute, Precision::mxfp8, rate.shapes) /
                         summed_gemm_seconds(gpu, p->compute, Precision::nvfp4, rate.shapes);
    // GB300 takes B300's fitted parameters; its own peaks differ, the ratio only slightly.
    CHECK(ratio == Approx(rate.ratio).epsilon(system == std::string("dgx-b300") ? 1e-6 : 0.05));
  }
}

TEST_CASE("quantization costs agree with Transformer Engine's measured autocast overhead",
          "[calibration][precision]") {
  // The same tutorial times its layer's GEMMs once with their inputs quantized beforehand and once
  // in autocast, where each te.Linear call quantizes its input (m x k) and its weight (k x n),
  // both with the columnwise copy a backward would need. Per layer, autocast minus pre-quantized:
  // B300 MXFP8 8.984 - 7.161 ms, NVFP4 6.453 - 3.764, FP8 current scaling 9.147 - 6.812; H200 NVL
  // (the SXM part's 4.8 TB/s of HBM) FP8 current scaling 20.285 - 16.785. The model's casts for
  // the same tensors, at its memory-bound rate, land within 15% of each on the block-scaled
  // recipes and Hopper (0.86, 0.91, 1.11) and at 0.83 for per-tensor FP8 on B300, whose cast
  // writes one copy for both GEMM layouts (no transpose on Blackwell: TE quantizer.cpp,
  // is_non_tn_fp8_gemm_supported). All three Blackwell casts run below the model's
  // memory-bound rate by about as much; the transpose Hopper writes is what keeps H200 above 1.
  const models::SoftwareStack& stack = *models::find_software("megatron-bridge-25.09");
  auto modelled_ms = [&](const char* gpu_id, Precision p) {
    const topologies::GpuSpec& gpu = *topologies::find_gpu(gpu_id);
    models::TrainingConfig training;
    training.precision = p;
    const models::PrecisionRecipe r = models::precision_recipe(training, stack, 32, gpu.generation);
    const auto both = [&](models::TensorRole role) {
      return r.bytes_per_element(role, models::Producer::standalone, true);
    };
    double bytes = 0;
    for (const GemmShape& g : te_tutorial_layer())
      bytes += g.m * g.k * both(models::TensorRole::activation) +
               g.k * g.n * both(models::TensorRole::weight);
    return 1e3 * models::memory_seconds(gpu, models::default_compute_profile(gpu), bytes);
  };
  CHECK(modelled_ms("B300", Precision::mxfp8) / (8.984 - 7.161) == Approx(1.0).margin(0.15));
  CHECK(modelled_ms("B300", Precision::nvfp4) / (6.453 - 3.764) == Approx(1.0).margin(0.15));
  CHECK(modelled_ms("B300", Precision::fp8) / (9.147 - 6.812) == Approx(0.83).margin(0.02));
  CHECK(modelled_ms("H200-SXM", Precision::fp8) / (20.285 - 16.785) == Approx(1.0).margin(0.15));
}

}  // namespace fabricsim::calibration
