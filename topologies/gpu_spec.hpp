#pragma once
// Datasheet facts of the GPUs the system presets use. Every number carries the source keys of
// ../shared/reference/hardware.json (or, where that file has no figure, a named public source).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::topologies {

/// Matches the generation rows of NCCL's tuning tables.
enum class GpuGeneration { volta, ampere, hopper, blackwell };
std::string_view to_string(GpuGeneration g);

/// Math precisions a training scenario may ask for.
enum class Precision { bf16, fp16, fp8, mxfp8, nvfp4, tf32 };
std::string_view to_string(Precision p);
bool parse_precision(std::string_view text, Precision& out);

/// Copy rates between a GPU's memory and its host's, GB/s each way, as a copy between pinned
/// host memory and HBM reaches them (0 = unknown).
struct HostLink {
  double to_host_gb_per_s = 0;
  double from_host_gb_per_s = 0;
};

struct GpuSpec {
  std::string id;    ///< key used by presets and calibration profiles, e.g. "H100-SXM5"
  std::string name;  ///< as in hardware.json
  GpuGeneration generation = GpuGeneration::hopper;
  int sm_count = 0;  ///< streaming multiprocessors (0 = unknown)
  // Dense tensor-core peaks in TFLOP/s; 0 = not supported or not published.
  double bf16_tflops = 0;
  double fp16_tflops = 0;
  double fp8_tflops = 0;
  double fp4_tflops = 0;
  double tf32_tflops = 0;
  double hbm_gb = 0;        ///< memory capacity, GB (1e9 bytes)
  double hbm_tb_per_s = 0;  ///< memory bandwidth, TB/s
  double tdp_w = 0;
  int nvlink_links = 0;
  double nvlink_link_gb_per_s = 0;  ///< one link, one direction
  std::string sources;              ///< hardware.json source keys
  std::string notes;
  /// Maximum sustainable matmul rate, bf16 dense TFLOP/s: what a GEMM holds once the board sits
  /// at its power limit and the clock below boost, as in a training step (0 = not published).
  double sustained_bf16_tflops = 0;
  /// The same for fp8 GEMMs (e4m3, split accumulation; 0 = not measured or published).
  double sustained_fp8_tflops = 0;
  /// GPU <-> host memory copy rates (what activation offloading copies over: out in the forward,
  /// back in the backward): the PCIe link of an x86 server or NVLink-C2C to a Grace/Vera CPU.
  HostLink host_link;
  /// Throughput of the special-function units' exponential (MUFU.EX2, softmax's cost in flash
  /// attention) relative to the generation's: 2 on Blackwell Ultra (B300, GB300), 1 elsewhere.
  double exp_rate = 1;

  /// Dense peak for a precision; 0 when the GPU has none. mxfp8 runs at the fp8 rate and nvfp4 at
  /// the fp4 rate on the GPUs that support them (Blackwell).
  double peak_tflops(Precision p) const;
};

const std::vector<GpuSpec>& gpu_catalog();
/// The spec with this id; nullptr when unknown.
const GpuSpec* find_gpu(std::string_view id);

}  // namespace fabricsim::topologies
