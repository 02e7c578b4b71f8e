#include "calibration/gemm_fit.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "calibration/fit_quality.hpp"
#include "calibration/levenberg_marquardt.hpp"
#include "models/compute_model.hpp"

namespace fabricsim::calibration {
namespace {

using topologies::Precision;

double logit(double x) {
  return std::log(x / (1 - x));
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

/// The parameters a fit moves: the ceiling (unless a sweep maximum pins it), the pipeline-fill
/// constant and the launch time (with enough shapes, or the fill constant alone once the ceiling
/// is pinned: the sweep point's shape then says how fast the ceiling is approached).
struct FreeParams {
  bool ceiling = true;
  bool fill = false;
  bool launch = false;
  Eigen::Index count() const { return Eigen::Index{ceiling} + fill + launch; }
};

models::GemmParams unpack(const Eigen::VectorXd& x, models::GemmParams base, FreeParams free) {
  Eigen::Index i = 0;
  if (free.ceiling) base.max_efficiency = std::clamp(sigmoid(x[i++]), 1e-3, 0.999);
  // Bounded: K/(K + k_half) is a pipeline-fill effect of tens to a few thousand elements, and
  // a launch takes between 0.5 and 50 us.
  if (free.fill) base.k_half = std::exp(std::clamp(x[i++], std::log(16.0), std::log(4096.0)));
  if (free.launch) {
    base.launch = sim::Time::from_us(std::exp(std::clamp(x[i++], std::log(0.5), std::log(50.0))));
  }
  base.fitted = true;
  return base;
}

double predicted_tflops(const topologies::GpuSpec& gpu, models::ComputeProfile profile, Precision p,
                        const models::GemmParams& params, const GemmMeasurement& m) {
  profile.gemm_for(p) = params;
  const double t =
      models::gemm_seconds(gpu, profile, p, static_cast<double>(m.m), static_cast<double>(m.n),
                           static_cast<double>(m.k), static_cast<double>(m.batch));
  return 2.0 * static_cast<double>(m.m) * static_cast<double>(m.n) * static_cast<double>(m.k) *
         static_cast<double>(m.batch) / t * 1e-12;
}

struct Fitted {
  models::GemmParams params;
  double cost;
};

Fitted fit_with(const topologies::GpuSpec& gpu, Precision p,
                const std::vector<GemmMeasurement>& data, const models::ComputeProfile& base,
                const models::GemmParams& start_params, FreeParams free, bool search_tiles) {
  std::vector<std::pair<int, int>> tiles{{start_params.tile_m, start_params.tile_n}};
  if (search_tiles) {
    tiles.clear();
    for (int tm : {64, 128, 256}) {
      for (int tn : {64, 128, 256})
        tiles.emplace_back(tm, tn);
    }
  }
  Fitted best{start_params, std::numeric_limits<double>::infinity()};
  for (const auto& [tm, tn] : tiles) {
    models::GemmParams start = start_params;
    start.tile_m = tm;
    start.tile_n = tn;
    auto residuals = [&](const Eigen::VectorXd& x) {
      const models::GemmParams params = unpack(x, start, free);
      Eigen::VectorXd r(static_cast<Eigen::Index>(data.size()));
      for (size_t i = 0; i < data.size(); ++i) {
        r[static_cast<Eigen::Index>(i)] =
            std::log(predicted_tflops(gpu, base, p, params, data[i]) / data[i].tflops);
      }
      return r;
    };
    Eigen::VectorXd x0(free.count());
    Eigen::Index i = 0;
    if (free.ceiling) x0[i++] = logit(std::clamp(start.max_efficiency, 0.05, 0.95));
    if (free.fill) x0[i++] = std::log(std::max(start.k_half, 1.0));
    if (free.launch) x0[i++] = std::log(std::max(start.launch.us(), 0.1));
    const LmResult fit = levenberg_marquardt(residuals, x0);
    if (fit.cost < best.cost) best = Fitted{unpack(fit.parameters, start, free), fit.cost};
  }
  return best;
}

Fitted fit_once(const topologies::GpuSpec& gpu, Precision p,
                const std::vector<GemmMeasurement>& data, const models::ComputeProfile& base) {
  const bool full = data.size() >= 6;
  const Fitted free_fit =
      fit_with(gpu, p, data, base, base.gemm_for(p), FreeParams{true, full, full}, full);
  // A sweep maximum (the fastest shape of a brute-force search) bounds every shape, and the
  // model's ceiling is what its largest shapes approach. Fitted to a few points, the ceiling is
  // only as good as the default fill constant (a sweep maximum at K = 1024 read through
  // K / (K + 256) puts it near 100% of peak), so it is pinned to the sweep maximum and the fill
  // constant fitted to the sweep's shape instead. With enough shapes the data set both.
  if (full) return free_fit;
  std::optional<double> ceiling;
  for (const GemmMeasurement& m : data) {
    if (!m.sweep_maximum) continue;
    const double reached = m.tflops / gpu.peak_tflops(p);
    ceiling = ceiling ? std::min(*ceiling, reached) : reached;
  }
  if (!ceiling || free_fit.params.max_efficiency <= *ceiling) return free_fit;
  models::GemmParams pinned = free_fit.params;
  pinned.max_efficiency = *ceiling;
  return fit_with(gpu, p, data, base, pinned, FreeParams{false, true, false}, false);
}

}  // namespace

std::optional<Precision> gemm_precision(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return Precision::bf16;
  if (dtype == "fp8") return Precision::fp8;
  if (dtype == "mxfp8") return Precision::mxfp8;
  // The model's FP4 is block-scaled, as training runs it: NVFP4 (16-element blocks, E4M3 scales)
  // or MXFP4 (32-element blocks, E8M0 scales), one tensor-core instruction family at one rate
  // (NVFP4 reads twice the scale factors, so MXFP4 times bound it from below). FP4 of unstated
  // scaling is not evidence for it: the one source of such rows, Azure's cuBLASLt sweep, runs
  // E2M1 x E2M1 into an E2M1 output with no scale tensors and no block-scale mode
  // (Azure/AI-benchmarking-guide's superbenchmark fork, cublaslt_gemm.cu and cublaslt_utils.cc),
  // and at 8192^3 it reads 7.5 PFLOP/s on GB200 where block-scaled MXFP4 reads 5.2 on B200
  // (cuBLAS 13.3; calibration/data/public-gemm), 29% apart after the two GPUs' FP4 peaks.
  if (dtype == "nvfp4" || dtype == "mxfp4") return Precision::nvfp4;
  if (dtype == "tf32") return Precision::tf32;
  return std::nullopt;
}

std::string unmodelled_gemm_dtype(const std::string& dtype) {
  return dtype == "fp4" ? "FP4 of unstated scaling: the model prices block-scaled FP4 (NVFP4, "
                          "MXFP4), as training runs it"
                        : "GEMM dtype '" + dtype + "' is not modelled";
}

GemmFitResult fit_gemm(const topologies::GpuSpec& gpu, Precision p,
                       const std::vector<GemmMeasurement>& data,
                       const models::ComputeProfile& base) {
  GemmFitResult result;
  result.params = base.gemm_for(p);
  if (data.empty()) return result;
  result.params = fit_once(gpu, p, data, base).params;
  std::vector<double> measured;
  for (const GemmMeasurement& m : data) {
    result.predicted_tflops.push_back(predicted_tflops(gpu, base, p, result.params, m));
    measured.push_back(m.tflops);
  }
  result.quality = fit_quality(result.predicted_tflops, measured);
  // 5-fold cross-validation with a fixed assignment (measurement i goes to fold i % 5).
  if (data.size() >= 10) {
    std::vector<double> held_out;
    for (int fold = 0; fold < 5; ++fold) {
      std::vector<GemmMeasurement> train, test;
      for (size_t i = 0; i < data.size(); ++i)
        (static_cast<int>(i % 5) == fold ? test : train).push_back(data[i]);
      const models::GemmParams params = fit_once(gpu, p, train, base).params;
      for (const GemmMeasurement& m : test) {
        held_out.push_back(std::fabs(predicted_tflops(gpu, base, p, params, m) - m.tflops) /
                           m.tflops);
      }
    }
    result.quality.cv_median_rel_error = median(held_out);
  }
  return result;
}

}  // namespace fabricsim::calibration
