#pragma once
// Physical plausibility of measurements before a fit: a GEMM faster than the GPU's dense peak, a
// bus bandwidth above what the GPU's links can carry, or an algbw that contradicts its own
// time and size is a unit error or a broken benchmark, not data to fit.

#include "calibration/measurements.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::calibration {

/// Throws sim::InputError at the measurement's source (file:line or file:/pointer) for the first
/// measurement of `gpu` beyond its physical limits (measurements of other GPUs are not checked;
/// the fit ignores them). Limits: GEMM TFLOP/s in (1e-9, 1.05] x the dense peak of its precision;
/// busbw at most twice the GPU's NVLink bandwidth (NVLS and SHARP reduce in the switch, so busbw
/// may exceed the links somewhat) or 100 GB/s without NVLink; algbw within 2% of size / time.
void check_measurement_limits(const MeasurementSet& set, const topologies::GpuSpec& gpu);

}  // namespace fabricsim::calibration
