#include "calibration/measurement_limits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "calibration/gemm_fit.hpp"
#include "calibration/profile_fit.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::calibration {
namespace {

// Boost clocks and rounding in published peaks; a GEMM above peak by more than this is an error.
constexpr double kPeakMargin = 1.05;
// Below this fraction of peak a rate is a unit error (a 16^3 GEMM in 5 us is still 2e-6 of peak).
constexpr double kFloorFraction = 1e-9;
// Without NVLink the GPU's bus bandwidth is bounded by PCIe Gen5 x16 and its NICs.
constexpr double kNoNvlinkGBps = 100;

bool of_gpu(const std::string& system, const topologies::GpuSpec& gpu) {
  return system.empty() || gpu_of_system(system) == gpu.id;
}

}  // namespace

void check_measurement_limits(const MeasurementSet& set, const topologies::GpuSpec& gpu) {
  for (const GemmMeasurement& g : set.gemms) {
    if (!of_gpu(g.system, gpu)) continue;
    const auto precision = gemm_precision(g.dtype);
    const double peak = precision ? gpu.peak_tflops(*precision) : 0;
    if (peak <= 0) continue;
    if (!(g.tflops <= kPeakMargin * peak) || !(g.tflops > kFloorFraction * peak)) {
      throw sim::InputError(
          g.source, "",
          fmt::format("a {}x{}x{} {} GEMM at {:.4g} TFLOP/s is outside what a {} can do (dense "
                      "peak {:.0f} TFLOP/s): is the unit or the dtype wrong?",
                      g.m, g.n, g.k, g.dtype, g.tflops, gpu.id, peak));
    }
  }
  const double link_GBps =
      gpu.nvlink_links > 0 ? gpu.nvlink_links * gpu.nvlink_link_gb_per_s : kNoNvlinkGBps;
  for (const CollectiveMeasurement& c : set.collectives) {
    if (!of_gpu(c.system, gpu)) continue;
    if (!(c.busbw_GBps <= 2 * link_GBps)) {
      throw sim::InputError(
          c.source, "",
          fmt::format("a busbw of {:.4g} GB/s is more than twice the {:.0f} GB/s a {} can send",
                      c.busbw_GBps, link_GBps, gpu.id));
    }
    // nccl-tests: algbw = size / time. Two printed decimals say too little below 1 GB/s.
    if (c.size_known() && c.time_us > 0 && c.algbw_GBps >= 1.0) {
      const double expected = c.bytes / (c.time_us * 1e3);
      if (std::fabs(c.algbw_GBps - expected) > 0.02 * expected + 0.01) {
        throw sim::InputError(
            c.source, "",
            fmt::format("algbw {:.2f} GB/s contradicts size / time = {:.0f} B / {:.2f} us = "
                        "{:.2f} GB/s",
                        c.algbw_GBps, c.bytes, c.time_us, expected));
      }
    }
  }
}

}  // namespace fabricsim::calibration
