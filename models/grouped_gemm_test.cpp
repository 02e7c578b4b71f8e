#include "models/grouped_gemm.hpp"

#include <catch2/catch.hpp>

#include "models/compute_model.hpp"
#include "tests/model_cases.hpp"

using namespace fabricsim;
using namespace fabricsim::models;
using topologies::Precision;

namespace {

constexpr auto kFused = GroupedGemmKernel::fused;
constexpr auto kStreams = GroupedGemmKernel::multi_stream;

}  // namespace

TEST_CASE("a fused grouped GEMM of tile-multiple groups is the GEMM of all their rows",
          "[compute][moe]") {
  // 4 experts of 1024 rows (8 tiles of 128) against one GEMM of 4096 rows: 8 x 32 x 4 = 32 x 32
  // = 1024 output tiles, the same waves; the weight reads (4 x 16.8 MB vs 16.8 MB, ~24 us) stay
  // under the math (~100 us) on H100, so only the math counts.
  const topologies::GpuSpec& gpu = testing::h100();
  const ComputeProfile p = default_compute_profile(gpu);
  const double clock = sustained_clock(gpu, p, Precision::bf16);
  const double one = gemm_seconds(gpu, p, Precision::bf16, 4096, 4096, 2048, 1, clock);
  CHECK(grouped_gemm(gpu, p, Precision::bf16, 1024, 4096, 2048, 4, kFused, 4).seconds ==
        Approx(one).epsilon(1e-12));
  CHECK(grouped_gemm(gpu, p, Precision::bf16, 1024, 4096, 2048, 4, kFused, 4).kernels == 1);
}

TEST_CASE("an expert's rows below a tile cost a whole tile", "[compute][moe]") {
  // With HBM fast enough that no weight read shows, 8 experts of 1 row each cost what 8 experts
  // of a whole 128-row tile cost: the padded tile is computed.
  topologies::GpuSpec gpu = testing::h100();
  gpu.hbm_tb_per_s = 1e6;
  const ComputeProfile p = default_compute_profile(gpu);
  const double tile = p.gemm_for(Precision::bf16).tile_m;
  for (GroupedGemmKernel kernel : {kFused, kStreams}) {
    CHECK(grouped_gemm(gpu, p, Precision::bf16, 1, 2048, 4096, 8, kernel, 4).seconds ==
          Approx(grouped_gemm(gpu, p, Precision::bf16, tile, 2048, 4096, 8, kernel, 4).seconds)
              .epsilon(1e-12));
  }
}

TEST_CASE("few tokens per expert pay the read of every expert's weights", "[compute][moe]") {
  // 16 experts of 8 rows, N 1536, K 2048, FP8 on H100: the math is 16 x 12 = 192 padded tiles
  // (2 waves of 132 SMs, ~3 us), far under reading 16 experts' weights, 16 x 2048 x 1536 bytes =
  // 50.3 MB (~19 us at the profile's HBM efficiency): time = launch + all operand bytes / HBM.
  const topologies::GpuSpec& gpu = testing::h100();
  const ComputeProfile p = default_compute_profile(gpu);
  const double m = 8, n = 1536, k = 2048, groups = 16;
  const double bytes = ((m * k + k * n) * 1.0 + m * n * 2.0) * groups;
  const double floor = bytes / (gpu.hbm_tb_per_s * 1e12 * p.memory_efficiency);
  const GemmParams& g = p.gemm_for(Precision::fp8);
  CHECK(grouped_gemm(gpu, p, Precision::fp8, m, n, k, 16, kFused, 4).seconds ==
        Approx(g.launch.s() + floor).epsilon(1e-12));
}

TEST_CASE("per-expert GEMMs on S streams run in rounds of S", "[compute][moe]") {
  const topologies::GpuSpec& gpu = testing::h100();
  const ComputeProfile p = default_compute_profile(gpu);
  const double m = 2048, n = 1536, k = 2048;
  const double clock = sustained_clock(gpu, p, Precision::bf16);
  auto batch = [&](double b) { return gemm_seconds(gpu, p, Precision::bf16, m, n, k, b, clock); };
  auto streams = [&](int groups) {
    return grouped_gemm(gpu, p, Precision::bf16, m, n, k, groups, kStreams, 4);
  };
  // As many experts as streams: one round, the batched GEMM.
  CHECK(streams(4).seconds == Approx(batch(4)).epsilon(1e-12));
  CHECK(streams(3).seconds == Approx(batch(3)).epsilon(1e-12));
  // 16 experts: 4 rounds of 4; 6 experts: a round of 4, then one of 2.
  CHECK(streams(16).seconds == Approx(4 * batch(4)).epsilon(1e-12));
  CHECK(streams(6).seconds == Approx(batch(4) + batch(2)).epsilon(1e-12));
  // The host launches every expert's GEMM.
  CHECK(streams(16).kernels == 16);
  // Never faster than one fused kernel: rounds add fixed costs and partial waves.
  for (int groups : {1, 2, 5, 8, 16, 32}) {
    INFO(groups);
    CHECK(streams(groups).seconds >=
          grouped_gemm(gpu, p, Precision::bf16, m, n, k, groups, kFused, 4).seconds);
  }
  CHECK(streams(16).seconds >
        grouped_gemm(gpu, p, Precision::bf16, m, n, k, 16, kFused, 4).seconds);
}

TEST_CASE("grouped expert GEMMs run at the step's sustained clock", "[compute][moe]") {
  // The B200's default bf16 ceiling (0.75 x 2250) is above its sustained 1429 TFLOP/s; fp8 has
  // no sustained figure and takes the power-limited share.
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  const ComputeProfile p = default_compute_profile(b200);
  const double clock = sustained_clock(b200, p, Precision::bf16);
  REQUIRE(clock < 1.0);
  const double m = 512, n = 4096, k = 2048;
  CHECK(grouped_gemm(b200, p, Precision::bf16, m, n, k, 8, kFused, 4).seconds ==
        Approx(gemm_seconds(b200, p, Precision::bf16, m, n, k, 8, clock)).epsilon(1e-12));
  CHECK(grouped_gemm(b200, p, Precision::bf16, m, n, k, 6, kStreams, 4).seconds ==
        Approx(gemm_seconds(b200, p, Precision::bf16, m, n, k, 4, clock) +
               gemm_seconds(b200, p, Precision::bf16, m, n, k, 2, clock))
            .epsilon(1e-12));
  const double fp8_clock = sustained_clock(b200, p, Precision::fp8);
  CHECK(fp8_clock == Approx(kPowerLimitedShareFp8));
  CHECK(grouped_gemm(b200, p, Precision::fp8, m, n, k, 8, kFused, 4).seconds ==
        Approx(gemm_seconds(b200, p, Precision::fp8, m, n, k, 8, fp8_clock)).epsilon(1e-12));
}
