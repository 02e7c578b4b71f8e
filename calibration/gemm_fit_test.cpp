// Parameter recovery: measurements are generated from the models themselves with known
// parameters, perturbed by seeded multiplicative noise, and the fits must find the parameters
// again and report a fit quality consistent with the noise they were given.

#include "calibration/gemm_fit.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

#include "calibration/collective_fit.hpp"
#include "models/collective_model.hpp"
#include "models/compute_model.hpp"
#include "models/system.hpp"
#include "tests/model_cases.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;
using topologies::Precision;

using fabricsim::testing::h100;

namespace {

/// Log-normal multiplicative noise exp(sigma * z), z standard normal. Box-Muller on mt19937's
/// output (whose sequence the standard fixes) rather than std::normal_distribution (whose
/// algorithm it does not), so every standard library sees the same numbers.
class Noise {
 public:
  Noise(double sigma, uint32_t seed) : sigma_(sigma), engine_(seed) {}
  double factor() {
    if (sigma_ == 0) return 1.0;
    const double u1 = (static_cast<double>(engine_()) + 0.5) / 4294967296.0;
    const double u2 = (static_cast<double>(engine_()) + 0.5) / 4294967296.0;
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    return std::exp(sigma_ * z);
  }

 private:
  double sigma_;
  std::mt19937 engine_;
};

/// Median of |exp(sigma z) - 1| for standard normal z: ~0.6745 sigma for small sigma.
double expected_median_rel_error(double sigma) {
  return std::exp(0.6745 * sigma) - 1.0;
}

models::GemmParams true_gemm_params() {
  models::GemmParams g;
  g.max_efficiency = 0.82;
  g.k_half = 180;
  g.tile_m = 128;
  g.tile_n = 256;
  g.launch = sim::Time::from_us(6);
  return g;
}

/// A sweep like a GEMM benchmark's: large square GEMMs (the ceiling), thin-K GEMMs (k_half),
/// small GEMMs (launch) and odd sizes whose tile counts leave SMs idle (the tile shape).
std::vector<GemmMeasurement> synthetic_gemms(const models::ComputeProfile& truth, double sigma,
                                             uint32_t seed) {
  Noise noise(sigma, seed);
  std::vector<GemmMeasurement> out;
  auto add = [&](long long m, long long n, long long k, long long batch) {
    GemmMeasurement g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.batch = batch;
    g.dtype = "bf16";
    const double t = models::gemm_seconds(h100(), truth, Precision::bf16, static_cast<double>(m),
                                          static_cast<double>(n), static_cast<double>(k),
                                          static_cast<double>(batch)) *
                     noise.factor();
    g.time_us = t * 1e6;
    g.tflops = 2.0 * static_cast<double>(m * n * k * batch) / t * 1e-12;
    g.source = "synthetic";
    out.push_back(g);
  };
  for (long long m : {1024, 1536, 2304, 4096, 6144, 8192}) {
    for (long long n : {1024, 2816, 4096, 8192}) {
      for (long long k : {128, 256, 1024, 4096, 8192})
        add(m, n, k, 1);
    }
  }
  for (long long s : {128, 256, 384, 512, 768})
    add(s, s, s, 1);
  add(256, 4096, 256, 1);
  add(4096, 256, 512, 1);
  add(512, 512, 4096, 4);
  add(2048, 2048, 2048, 8);
  return out;
}

models::ComputeProfile profile_with(const models::GemmParams& bf16) {
  models::ComputeProfile p = models::default_compute_profile(h100());
  p.gemm_for(Precision::bf16) = bf16;
  return p;
}

}  // namespace

TEST_CASE("noise-free GEMM measurements give back the parameters that made them", "[gemm-fit]") {
  const models::GemmParams truth = true_gemm_params();
  const std::vector<GemmMeasurement> data = synthetic_gemms(profile_with(truth), 0.0, 1);
  // Start away from the truth: the defaults (0.75, 256, 128x128, 4 us).
  const models::ComputeProfile start = models::default_compute_profile(h100());
  const GemmFitResult fit = fit_gemm(h100(), Precision::bf16, data, start);
  CHECK(fit.params.fitted);
  CHECK(fit.params.tile_m == truth.tile_m);
  CHECK(fit.params.tile_n == truth.tile_n);
  // Exact data: only the optimiser's convergence tolerance and the launch time's 1 ps grid
  // stand between the fit and the truth.
  CHECK(fit.params.max_efficiency == Approx(truth.max_efficiency).epsilon(1e-4));
  CHECK(fit.params.k_half == Approx(truth.k_half).epsilon(1e-3));
  CHECK(fit.params.launch.us() == Approx(truth.launch.us()).epsilon(1e-3));
  CHECK(fit.quality.points == static_cast<int>(data.size()));
  CHECK(fit.quality.r2 == Approx(1.0).margin(1e-9));
  CHECK(fit.quality.max_rel_error < 1e-4);
  REQUIRE(fit.predicted_tflops.size() == data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    CHECK(fit.predicted_tflops[i] == Approx(data[i].tflops).epsilon(1e-4));
  }
}

TEST_CASE("GEMM parameters are recovered from measurements with 2% noise", "[gemm-fit]") {
  const double sigma = 0.02;
  const models::GemmParams truth = true_gemm_params();
  const models::ComputeProfile start = models::default_compute_profile(h100());
  // Several seeds, so a lucky draw cannot hide a biased fit.
  for (uint32_t seed : {11u, 12345u, 2024u}) {
    INFO("seed " << seed);
    const std::vector<GemmMeasurement> data = synthetic_gemms(profile_with(truth), sigma, seed);
    const GemmFitResult fit = fit_gemm(h100(), Precision::bf16, data, start);
    // Tolerances: the log-time residuals have sd sigma = 2%. The ceiling is pinned by the ~60
    // large compute-bound points, so its standard error is ~sigma / sqrt(60) ~ 0.3%. k_half
    // moves log(time) by only k_half / (K + k_half) (0.6 at K = 128, 0.04 at K = 4096) and the
    // launch time matters only for the small GEMMs, so theirs are larger. Over 30 seeds the
    // fitted values scattered with sd 0.3% (ceiling), 1.2% (k_half) and 0.7% (launch), worst
    // 0.6%, 3.1% and 1.8%. The tolerances below are 6 to 8 of those sds, and still far inside
    // what a fit that mishandled a term would miss by (the start is 9%, 42% and 33% off).
    CHECK(fit.params.max_efficiency == Approx(truth.max_efficiency).epsilon(0.02));
    CHECK(fit.params.k_half == Approx(truth.k_half).epsilon(0.08));
    CHECK(fit.params.launch.us() == Approx(truth.launch.us()).epsilon(0.06));
    // Wave quantisation changes some shapes' times by tens of percent, far above the noise.
    CHECK(fit.params.tile_m == truth.tile_m);
    CHECK(fit.params.tile_n == truth.tile_n);

    const FitQuality& q = fit.quality;
    CHECK(q.points == static_cast<int>(data.size()));
    CHECK(q.r2 > 0.99);
    // A fit with 3 continuous parameters to ~130 points leaves residuals at the noise level:
    // the median |error| of 2% log-normal noise is 1.36%.
    const double noise_median = expected_median_rel_error(sigma);
    CHECK(q.median_rel_error == Approx(noise_median).epsilon(0.35));
    CHECK(q.max_rel_error > q.median_rel_error);
    CHECK(q.max_rel_error < 5 * sigma);
    // Held-out points are predicted about as well as the noise allows (a little worse than the
    // in-sample median, never better by much).
    REQUIRE(q.cv_median_rel_error > 0);
    CHECK(q.cv_median_rel_error == Approx(noise_median).epsilon(0.4));
    CHECK(q.cv_median_rel_error > 0.8 * q.median_rel_error);
  }
}

TEST_CASE("with fewer than six GEMM measurements only the ceiling is fitted", "[gemm-fit]") {
  models::GemmParams truth = true_gemm_params();
  truth.tile_m = 128;
  truth.tile_n = 128;
  truth.k_half = 256;
  truth.launch = sim::Time::from_us(4);
  const models::ComputeProfile start = models::default_compute_profile(h100());
  std::vector<GemmMeasurement> data = synthetic_gemms(profile_with(truth), 0.0, 1);
  data.resize(4);
  const GemmFitResult fit = fit_gemm(h100(), Precision::bf16, data, start);
  // The shape parameters stay as given; the ceiling absorbs the difference.
  CHECK(fit.params.k_half == start.gemm_for(Precision::bf16).k_half);
  CHECK(fit.params.tile_m == start.gemm_for(Precision::bf16).tile_m);
  CHECK(fit.params.tile_n == start.gemm_for(Precision::bf16).tile_n);
  CHECK(fit.params.launch == start.gemm_for(Precision::bf16).launch);
  CHECK(fit.params.max_efficiency == Approx(truth.max_efficiency).epsilon(1e-4));
  CHECK(fit.params.fitted);
  // Too few points for 5-fold cross-validation.
  CHECK(fit.quality.cv_median_rel_error == -1);
}

TEST_CASE("a GEMM fit without measurements keeps the base parameters", "[gemm-fit]") {
  const models::ComputeProfile start = models::default_compute_profile(h100());
  const GemmFitResult fit = fit_gemm(h100(), Precision::bf16, {}, start);
  CHECK(fit.params == start.gemm_for(Precision::bf16));
  CHECK(fit.quality.points == 0);
  CHECK(fit.predicted_tflops.empty());
}

TEST_CASE("GEMM dtypes map to the precisions they are fitted as", "[gemm-fit]") {
  CHECK(gemm_precision("bf16") == Precision::bf16);
  CHECK(gemm_precision("fp16") == Precision::bf16);
  CHECK(gemm_precision("fp8") == Precision::fp8);
  CHECK_FALSE(gemm_precision("fp4").has_value());  // scaling unstated: not block-scaled evidence
  CHECK(gemm_precision("mxfp4") == Precision::nvfp4);
  CHECK(gemm_precision("nvfp4") == Precision::nvfp4);
  CHECK(gemm_precision("tf32") == Precision::tf32);
  CHECK_FALSE(gemm_precision("int8").has_value());
}

namespace {

models::CollectiveProfile true_collective_profile() {
  models::CollectiveProfile p = models::default_collective_profile(h100());
  p.nvlink_efficiency = 0.74;
  p.nvls_factor = 0.7;
  p.network_efficiency = 0.86;
  p.launch_overhead = sim::Time::from_us(9);
  p.latency_scale = 0.6;
  return p;
}

/// nccl-tests-style busbw curves on DGX H100: one node (NVLink; all_reduce over NVLS and
/// all_gather over rings) and two nodes (the network), 64 KiB to 1 GiB in steps of 4x.
std::vector<CollectiveMeasurement> synthetic_curves(const models::CollectiveProfile& truth,
                                                    double sigma, uint32_t seed) {
  Noise noise(sigma, seed);
  std::vector<CollectiveMeasurement> out;
  struct Curve {
    const char* op;
    int ranks;
    const char* algorithm;
  };
  for (const Curve& c : {Curve{"all_reduce", 8, "nvls"}, Curve{"all_gather", 8, "ring"},
                         Curve{"all_reduce", 16, "ring"}, Curve{"reduce_scatter", 16, ""}}) {
    const models::System system = models::make_system("dgx-h100", c.ranks);
    topologies::Router router(*system.topology, topologies::RoutingStrategy::ecmp);
    models::CollectiveRequest request;
    request.op = *models::parse_collective_op(c.op);
    request.ranks = models::first_ranks(c.ranks);
    if (*c.algorithm) request.algorithm = models::parse_algorithm(c.algorithm);
    for (double bytes = 64.0 * 1024; bytes <= 1024.0 * 1024 * 1024; bytes *= 4) {
      request.size_bytes = bytes;
      const models::CollectiveResult r =
          models::simulate_collective(system, truth, router, request, models::Backend::flow);
      CollectiveMeasurement m;
      m.op = c.op;
      m.ranks = c.ranks;
      m.nodes = c.ranks / 8;
      m.gpus_per_node = 8;
      m.bytes = bytes;
      m.busbw_GBps = r.busbw_GBps / noise.factor();
      m.algbw_GBps = r.algbw_GBps * m.busbw_GBps / r.busbw_GBps;
      m.time_us = bytes / (m.algbw_GBps * 1e3);
      m.algorithm = c.algorithm;
      m.system = "dgx-h100";
      m.source = "synthetic";
      out.push_back(m);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("noise-free busbw curves give back the collective parameters", "[collective-fit]") {
  const models::CollectiveProfile truth = true_collective_profile();
  const models::CollectiveProfile start = models::default_collective_profile(h100());
  const CollectiveFitResult fit =
      fit_collectives("dgx-h100", synthetic_curves(truth, 0.0, 1), start);
  CHECK(fit.profile.nvlink_efficiency == Approx(truth.nvlink_efficiency).epsilon(1e-3));
  CHECK(fit.profile.nvls_factor == Approx(truth.nvls_factor).epsilon(1e-3));
  CHECK(fit.profile.network_efficiency == Approx(truth.network_efficiency).epsilon(1e-3));
  CHECK(fit.profile.launch_overhead.us() == Approx(truth.launch_overhead.us()).epsilon(1e-3));
  CHECK(fit.profile.latency_scale == Approx(truth.latency_scale).epsilon(1e-3));
  CHECK(fit.quality.max_rel_error < 1e-3);
}

TEST_CASE("collective parameters are recovered from noisy synthetic busbw curves",
          "[collective-fit]") {
  const double sigma = 0.02;
  const models::CollectiveProfile truth = true_collective_profile();
  const std::vector<CollectiveMeasurement> data = synthetic_curves(truth, sigma, 7);
  // Measurements of other systems are ignored.
  std::vector<CollectiveMeasurement> mixed = data;
  CollectiveMeasurement stranger = data.front();
  stranger.system = "dgx-a100-80gb";
  stranger.busbw_GBps = 1.0;
  mixed.push_back(stranger);

  const models::CollectiveProfile start = models::default_collective_profile(h100());
  const CollectiveFitResult fit = fit_collectives("dgx-h100", mixed, start);
  REQUIRE(fit.points.size() == data.size());
  // Bandwidth efficiencies are set by the large-message points, the latency terms by the small
  // ones, where launch overhead and latency scale partly trade against each other. Over 30 seeds
  // of this setup the fitted values scattered with sd 1.2% (NVLink), 1.5% (NVLS), 0.8%
  // (network), 3.5% (launch) and 1.8% (latency scale), worst 2.3%, 3.0%, 1.7%, 6.9%, 4.0%. The
  // tolerances are about 4 sds, and each is well inside how far the start is off (11%, 21%,
  // 12%, 94%, 67%), so a parameter the fit failed to move would fail here.
  CHECK(fit.profile.nvlink_efficiency == Approx(truth.nvlink_efficiency).epsilon(0.05));
  CHECK(fit.profile.nvls_factor == Approx(truth.nvls_factor).epsilon(0.06));
  CHECK(fit.profile.network_efficiency == Approx(truth.network_efficiency).epsilon(0.04));
  CHECK(fit.profile.launch_overhead.us() == Approx(truth.launch_overhead.us()).epsilon(0.15));
  CHECK(fit.profile.latency_scale == Approx(truth.latency_scale).epsilon(0.08));
  // Parameters the fit does not touch come from the start profile.
  CHECK(fit.profile.pcie_efficiency == start.pcie_efficiency);
  CHECK(fit.profile.channels == start.channels);
  CHECK(fit.not_fitted.empty());
  CHECK(fit.fitted.size() == 5);
  CHECK_THAT(fit.profile.source, Catch::Contains("fitted to 32 collective points of dgx-h100"));

  const FitQuality& q = fit.quality;
  CHECK(q.points == static_cast<int>(data.size()));
  CHECK(q.r2 > 0.99);
  CHECK(q.median_rel_error < 2 * expected_median_rel_error(sigma));
  CHECK(q.max_rel_error < 5 * sigma);
  for (const CollectivePoint& p : fit.points) {
    CHECK(p.predicted_busbw == Approx(p.measured_busbw).epsilon(5 * sigma));
  }
}

TEST_CASE("collective parameters no measurement depends on are reported as not fitted",
          "[collective-fit]") {
  // Single-node ring all-gathers use neither NVLS nor the network.
  const models::CollectiveProfile truth = true_collective_profile();
  std::vector<CollectiveMeasurement> data;
  for (const CollectiveMeasurement& m : synthetic_curves(truth, 0.0, 1)) {
    if (m.op == "all_gather") data.push_back(m);
  }
  REQUIRE(data.size() == 8);
  models::CollectiveProfile start = models::default_collective_profile(h100());
  // Values outside the range the optimiser works in (it bounds efficiencies to [0.05, 0.99]):
  // a parameter that is not fitted must still come back exactly as it went in.
  start.network_efficiency = 1.0;
  start.nvls_factor = 0.995;
  const CollectiveFitResult fit = fit_collectives("dgx-h100", data, start);
  // Eight points only: the fit's weak prior toward the start biases the result by ~0.1%.
  CHECK(fit.profile.nvlink_efficiency == Approx(truth.nvlink_efficiency).epsilon(2e-3));
  CHECK(fit.not_fitted == std::vector<std::string>{"nvls_factor", "network_efficiency"});
  CHECK(fit.fitted ==
        std::vector<std::string>{"nvlink_efficiency", "launch_overhead", "latency_scale"});
  CHECK(fit.profile.network_efficiency == start.network_efficiency);
  CHECK(fit.profile.nvls_factor == start.nvls_factor);
}

TEST_CASE("a collective fit without usable measurements changes nothing", "[collective-fit]") {
  const models::CollectiveProfile start = models::default_collective_profile(h100());
  const std::vector<CollectiveMeasurement> data = synthetic_curves(start, 0.0, 1);
  const CollectiveFitResult fit = fit_collectives("gb200-nvl72", data, start);
  CHECK(fit.points.empty());
  CHECK(fit.fitted.empty());
  CHECK(fit.not_fitted.size() == 5);
  CHECK(fit.profile.nvlink_efficiency == start.nvlink_efficiency);
  CHECK(fit.profile.source == start.source);
}

TEST_CASE("a sweep maximum caps the ceiling of a fit to few points, not of a rich fit",
          "[calibration][gemm]") {
  // One MAMF-style point: the fastest shape of a brute-force search, at K = 1024, 78.6% of peak.
  GemmMeasurement best;
  best.m = 12288;
  best.n = 18432;
  best.k = 1024;
  best.dtype = "bf16";
  best.tflops = 0.786 * h100().bf16_tflops;
  best.source = "sweep";
  const models::ComputeProfile base = models::default_compute_profile(h100());
  auto predict = [&](const models::GemmParams& params, double m, double n, double k) {
    models::ComputeProfile p = base;
    p.gemm_for(Precision::bf16) = params;
    return 2 * m * n * k / models::gemm_seconds(h100(), p, Precision::bf16, m, n, k, 1) * 1e-12;
  };
  SECTION("read as an ordinary point, the default fill constant lifts the ceiling above it") {
    const GemmFitResult fit = fit_gemm(h100(), Precision::bf16, {best}, base);
    CHECK(fit.params.max_efficiency > 0.9);
    CHECK(predict(fit.params, 16384, 16384, 16384) > 1.1 * best.tflops);
  }
  SECTION("read as a sweep maximum, no shape runs faster than it") {
    best.sweep_maximum = true;
    const GemmFitResult fit = fit_gemm(h100(), Precision::bf16, {best}, base);
    CHECK(fit.params.max_efficiency == Approx(0.786).epsilon(1e-12));
    for (const double size : {4096.0, 8192.0, 16384.0, 32768.0}) {
      INFO(size);
      CHECK(predict(fit.params, size, size, size) <= best.tflops);
    }
    // Large GEMMs come within a few percent of it: the fill constant fits the sweep's shape.
    CHECK(predict(fit.params, 16384, 16384, 16384) > 0.95 * best.tflops);
  }
  SECTION("a rich fit keeps the ceiling its shapes show") {
    const models::GemmParams truth = true_gemm_params();
    std::vector<GemmMeasurement> data = synthetic_gemms(profile_with(truth), 0.0, 1);
    const GemmFitResult plain = fit_gemm(h100(), Precision::bf16, data, base);
    best.sweep_maximum = true;
    data.push_back(best);
    const GemmFitResult with_sweep = fit_gemm(h100(), Precision::bf16, data, base);
    CHECK(with_sweep.params.max_efficiency > 0.786);
    CHECK(with_sweep.params.max_efficiency == Approx(plain.params.max_efficiency).epsilon(0.05));
  }
}
