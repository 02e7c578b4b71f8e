#include "models/compute_model.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "models/transformer.hpp"
#include "tests/model_cases.hpp"

using namespace fabricsim;
using namespace fabricsim::models;
using topologies::Precision;

using fabricsim::testing::h100;

namespace {

// H100 SXM5: 132 SMs, 989.4 dense bf16 TFLOP/s, 3.35 TB/s of HBM.
constexpr double kPeak = 989.4e12;
constexpr double kHbm = 3.35e12;
constexpr int kSms = 132;

/// The documented math term: 2MNK / (peak x max_eff x wave x K / (K + k_half)).
double math_term(const GemmParams& g, double m, double n, double k, double wave) {
  return 2 * m * n * k / (kPeak * g.max_efficiency * wave * (k / (k + g.k_half)));
}

/// The documented memory term for bf16 operands and a bf16 output.
double memory_term(const ComputeProfile& p, double m, double n, double k) {
  return ((m * k + k * n) * 2 + m * n * 2) / (kHbm * p.memory_efficiency);
}

}  // namespace

TEST_CASE("element bytes per precision", "[compute]") {
  CHECK(element_bytes(Precision::bf16) == 2.0);
  CHECK(element_bytes(Precision::fp16) == 2.0);
  CHECK(element_bytes(Precision::fp8) == 1.0);
  CHECK(element_bytes(Precision::mxfp8) == 1.0);
  CHECK(element_bytes(Precision::tf32) == 4.0);
  // 4-bit values plus one 8-bit scale per 16 elements.
  CHECK(element_bytes(Precision::nvfp4) == 0.5 + 1.0 / 16);
}

TEST_CASE("a GEMM filling exactly one wave has the documented closed form", "[compute]") {
  // 1536 x 1408 outputs = 12 x 11 = 132 tiles of 128 x 128: one full wave, utilisation 1.
  const ComputeProfile p = default_compute_profile(h100());
  const GemmParams& g = p.gemm_for(Precision::bf16);
  const double m = 1536, n = 1408, k = 4096;
  const double math = math_term(g, m, n, k, 1.0);
  REQUIRE(math > memory_term(p, m, n, k));
  const double t = gemm_seconds(h100(), p, Precision::bf16, m, n, k);
  CHECK(t == Approx(g.launch.s() + math).epsilon(1e-12));
  // Efficiency is what the time implies, below the large-GEMM ceiling.
  CHECK(gemm_efficiency(h100(), p, Precision::bf16, m, n, k) ==
        Approx(2 * m * n * k / t / kPeak).epsilon(1e-12));
  CHECK(gemm_efficiency(h100(), p, Precision::bf16, m, n, k) < g.max_efficiency);
}

TEST_CASE("a GEMM with a tiny K is bound by HBM traffic", "[compute]") {
  // One full wave of tiles (16896 x 128), K = 8: little arithmetic per byte moved.
  const ComputeProfile p = default_compute_profile(h100());
  const GemmParams& g = p.gemm_for(Precision::bf16);
  const double m = 128.0 * kSms, n = 128, k = 8;
  const double memory = memory_term(p, m, n, k);
  REQUIRE(memory > math_term(g, m, n, k, 1.0));
  CHECK(gemm_seconds(h100(), p, Precision::bf16, m, n, k) ==
        Approx(g.launch.s() + memory).epsilon(1e-12));
}

TEST_CASE("GEMM time is never below FLOPs at the dense peak, nor below the launch",
          "[compute][invariant]") {
  const ComputeProfile p = default_compute_profile(h100());
  for (Precision prec : {Precision::bf16, Precision::fp8}) {
    const double peak = h100().peak_tflops(prec) * 1e12;
    for (double m : {1.0, 17.0, 128.0, 1000.0, 8192.0, 65536.0}) {
      for (double n : {1.0, 64.0, 129.0, 4096.0, 28672.0}) {
        for (double k : {1.0, 100.0, 4096.0, 53248.0}) {
          for (double batch : {1.0, 8.0}) {
            const double t = gemm_seconds(h100(), p, prec, m, n, k, batch);
            CHECK(t >= 2 * m * n * k * batch / peak);
            CHECK(t >= p.gemm_for(prec).launch.s());
            CHECK(gemm_efficiency(h100(), p, prec, m, n, k, batch) <=
                  p.gemm_for(prec).max_efficiency);
          }
        }
      }
    }
  }
  // Empty GEMMs cost nothing.
  CHECK(gemm_seconds(h100(), p, Precision::bf16, 0, 128, 128) == 0.0);
  CHECK(gemm_efficiency(h100(), p, Precision::bf16, 128, 0, 128) == 0.0);
}

TEST_CASE("GEMM time grows with every dimension", "[compute][invariant]") {
  // Every value of K, the batch, M and N: padded tiles are paid for, so the time is flat inside
  // a wave and steps up between waves (the memory term grows in between).
  const ComputeProfile p = default_compute_profile(h100());
  const auto t = [&](double m, double n, double k, double batch = 1) {
    return gemm_seconds(h100(), p, Precision::bf16, m, n, k, batch);
  };
  const auto not_below = [](double now, double before) { return now >= before * (1 - 1e-12); };
  for (double other : {128.0, 1024.0, 8192.0}) {
    double prev_k = 0, prev_m = 0, prev_n = 0;
    for (double k = 1; k <= 20000; k += 37) {
      CHECK(not_below(t(other, other, k), prev_k));
      prev_k = t(other, other, k);
    }
    for (double rows = 1; rows <= 40000; rows += 13) {
      CHECK(not_below(t(rows, other, 4096), prev_m));
      prev_m = t(rows, other, 4096);
      CHECK(not_below(t(other, rows, 4096), prev_n));
      prev_n = t(other, rows, 4096);
    }
    CHECK(t(129, 128, 4096) >= t(128, 128, 4096));
    double prev_b = 0;
    for (double batch = 1; batch <= 300; ++batch) {
      CHECK(not_below(t(other, 512, 2048, batch), prev_b));
      prev_b = t(other, 512, 2048, batch);
    }
  }
}

TEST_CASE("one tile row past a full wave costs a second wave", "[compute]") {
  // 1536 x 1408 outputs are 12 x 11 = 132 tiles: one full wave on 132 SMs. One more row (or
  // column) adds a row of 11 (or a column of 12) tiles that run in a second, mostly idle wave.
  const ComputeProfile p = default_compute_profile(h100());
  const GemmParams& g = p.gemm_for(Precision::bf16);
  const double m = 1536, n = 1408, k = 8192;
  const auto t = [&](double mm, double nn) {
    return gemm_seconds(h100(), p, Precision::bf16, mm, nn, k);
  };
  const double launch = g.launch.s();
  REQUIRE(math_term(g, m, n, k, 1.0) > memory_term(p, m, n, k));
  CHECK(t(m, n) == Approx(launch + math_term(g, m, n, k, 1.0)).epsilon(1e-12));
  // The second wave's tiles are whole tiles: one more row or column costs a full wave.
  CHECK(t(m + 1, n) - launch == Approx(2 * (t(m, n) - launch)).epsilon(1e-12));
  CHECK(t(m, n + 1) - launch == Approx(2 * (t(m, n) - launch)).epsilon(1e-12));
  // Inside a wave the time is flat: one row less fills the same tiles.
  CHECK(t(m - 1, n) == t(m, n));
  // Two full waves cost exactly twice one.
  CHECK(t(2 * m, n) - launch == Approx(2 * (t(m, n) - launch)).epsilon(1e-12));
}

TEST_CASE("fp8 GEMMs run at twice the bf16 rate where math dominates", "[compute]") {
  const ComputeProfile p = default_compute_profile(h100());
  const double m = 1536, n = 1408, k = 16384;
  const double launch = p.gemm_for(Precision::bf16).launch.s();
  const double bf16 = gemm_seconds(h100(), p, Precision::bf16, m, n, k) - launch;
  const double fp8 = gemm_seconds(h100(), p, Precision::fp8, m, n, k) - launch;
  CHECK(bf16 / fp8 == Approx(h100().fp8_tflops / h100().bf16_tflops).epsilon(1e-12));
  // H100 has no fp4 tensor cores.
  CHECK_THROWS(gemm_seconds(h100(), p, Precision::nvfp4, m, n, k));
}

TEST_CASE("memory-bound kernels move bytes at the efficient HBM bandwidth", "[compute]") {
  const ComputeProfile p = default_compute_profile(h100());
  for (double bytes : {1.0, 4096.0, 1e6, 3.2e9}) {
    CHECK(memory_seconds(h100(), p, bytes) ==
          Approx(bytes / (kHbm * p.memory_efficiency)).epsilon(1e-12));
  }
  CHECK(memory_seconds(h100(), p, 0) == 0.0);
  // Linear in bytes.
  CHECK(memory_seconds(h100(), p, 2e9) ==
        Approx(2 * memory_seconds(h100(), p, 1e9)).epsilon(1e-12));
}

TEST_CASE("attention runs at its pass's efficiency, ramped by the span", "[compute]") {
  const ComputeProfile p = default_compute_profile(h100());
  const double flops = 1e12;
  const double fwd = attention_seconds(h100(), p, flops, false);
  const double bwd = attention_seconds(h100(), p, flops, true);
  CHECK(fwd == Approx(flops / (kPeak * p.attention_forward_efficiency)).epsilon(1e-12));
  CHECK(bwd == Approx(flops / (kPeak * p.attention_backward_efficiency)).epsilon(1e-12));
  // span / (span + 220): at 220 keys half the long-sequence rate.
  CHECK(attention_seconds(h100(), p, flops, false, p.attention_span_half) ==
        Approx(2 * fwd).epsilon(1e-12));
  CHECK(attention_seconds(h100(), p, flops, false, 4096) ==
        Approx(fwd * (4096 + 220) / 4096).epsilon(1e-12));
  // Longer spans are never slower per FLOP.
  double prev = attention_seconds(h100(), p, flops, false, 1);
  for (double span = 2; span < 1e6; span *= 1.7) {
    const double t = attention_seconds(h100(), p, flops, false, span);
    CHECK(t <= prev);
    prev = t;
  }
  CHECK(attention_seconds(h100(), p, 0, false) == 0.0);
}

TEST_CASE("attention FLOPs: causal masks skip half the scores", "[compute][model]") {
  // QK^T and AV: 2 x 2 x seq x head_dim x heads per token and layer over the full sequence.
  TransformerConfig c;
  c.name = "t";
  c.layers = 6;
  c.hidden = 1024;
  c.ffn = 4096;
  c.heads = 16;
  c.kv_heads = 4;
  c.head_dim = 64;
  c.vocab = 1000;
  c.seq_len = 3000;
  const FlopsPerToken f = flops_per_token(c);
  const double scores = 6.0 * 2 * 2 * 3000 * 64 * 16;
  CHECK(f.attention_scores == Approx(scores).epsilon(1e-15));
  CHECK(f.total(false) - f.dense_matmul == Approx(scores).epsilon(1e-12));
  CHECK(f.total(true) - f.dense_matmul == Approx(scores / 2).epsilon(1e-12));
  CHECK(training_flops_per_token(c, true) ==
        Approx(3 * (f.dense_matmul + scores / 2)).epsilon(1e-12));
  CHECK(training_flops_per_token(c, false) == Approx(3 * (f.dense_matmul + scores)).epsilon(1e-12));
}

TEST_CASE("attention libraries: FA2 is slower and FA3 faster forward on Hopper, the same on Ampere",
          "[compute]") {
  using topologies::GpuGeneration;
  CHECK(attention_library_factor(AttentionKernel::cudnn, GpuGeneration::hopper, false) == 1.0);
  // FA2 against cuDNN as measured on an H200 (0.54 forward, 0.58 backward); Blackwell keeps the
  // published ~35% vs ~50% of peak.
  CHECK(attention_library_factor(AttentionKernel::flash2, GpuGeneration::hopper, false) == 0.54);
  CHECK(attention_library_factor(AttentionKernel::flash2, GpuGeneration::hopper, true) == 0.58);
  CHECK(attention_library_factor(AttentionKernel::flash2, GpuGeneration::blackwell, false) ==
        Approx(0.35 / 0.5));
  CHECK(attention_library_factor(AttentionKernel::flash2, GpuGeneration::ampere, true) == 1.0);
  // FA3: 75% of the peak forward on H100, over the Hopper profile's 0.655; Hopper-only.
  CHECK(attention_library_factor(AttentionKernel::flash3, GpuGeneration::hopper, false) *
            default_compute_profile(h100()).attention_forward_efficiency ==
        Approx(0.75));
  // Backward 1.6x FA2's (Shah et al., Fig. 7): about the measured cuDNN backward.
  CHECK(
      attention_library_factor(AttentionKernel::flash3, GpuGeneration::hopper, true) ==
      Approx(1.6 * attention_library_factor(AttentionKernel::flash2, GpuGeneration::hopper, true)));
  CHECK(attention_library_factor(AttentionKernel::flash3, GpuGeneration::blackwell, false) == 1.0);
}

TEST_CASE("Blackwell Ultra's doubled exponential rate shrinks attention's softmax term",
          "[compute]") {
  // efficiency d / (d + d0) becomes d / (d + d0 / 2). cuDNN on Blackwell (d0 = 60 forward, 25
  // backward, what GB300 over GB200 measures) at width 128 runs 188 / 158 = 1.19x forward and
  // 153 / 140.5 = 1.09x backward; MLA's width 160 forward 220 / 190 = 1.16x. The Hopper law's d0
  // (110, 30) would give 238 / 183 and 158 / 143.
  using topologies::find_gpu;
  using topologies::GpuGeneration;
  constexpr auto bw = GpuGeneration::blackwell;
  CHECK(find_gpu("B300")->exp_rate == 2);
  CHECK(find_gpu("GB300")->exp_rate == 2);
  CHECK(find_gpu("GB200")->exp_rate == 1);
  CHECK(find_gpu("H100-SXM5")->exp_rate == 1);
  CHECK(attention_exp_rate_factor(AttentionKernel::cudnn, 128, false, 2, bw) ==
        Approx(188.0 / 158.0));
  CHECK(attention_exp_rate_factor(AttentionKernel::cudnn, 128, true, 2, bw) ==
        Approx(153.0 / 140.5));
  CHECK(attention_exp_rate_factor(AttentionKernel::cudnn, 160, false, 2, bw) ==
        Approx(220.0 / 190.0));
  CHECK(attention_exp_rate_factor(AttentionKernel::cudnn, 128, false, 2, GpuGeneration::hopper) ==
        Approx(238.0 / 183.0));
  CHECK(attention_exp_rate_factor(AttentionKernel::flash2, 128, false, 2, bw) ==
        Approx(151.0 / 139.5));
  // No softmax term, no gain; a rate of 1 changes nothing.
  CHECK(attention_exp_rate_factor(AttentionKernel::unfused, 128, false, 2, bw) == 1);
  CHECK(attention_exp_rate_factor(AttentionKernel::flash_triton, 128, false, 2, bw) == 1);
  CHECK(attention_exp_rate_factor(AttentionKernel::cudnn, 64, false, 1, bw) == 1);
  // Narrow heads gain more than wide ones.
  CHECK(attention_exp_rate_factor(AttentionKernel::cudnn, 64, false, 2, bw) >
        attention_exp_rate_factor(AttentionKernel::cudnn, 256, false, 2, bw));
}

TEST_CASE("FP8 attention's speed-ups and banded tiles per generation", "[compute]") {
  using topologies::GpuGeneration;
  // cuDNN's benchmark: Hopper's FP8 backward is slower than its BF16 one. On Blackwell per-tensor
  // FP8 gains more than MXFP8, MLA's heads more than the others (Llama's GQA heads), and
  // Blackwell Ultra, whose faster exponential leaves FP8 more of the kernel to shorten, more
  // than GB200.
  const auto gain = [](const char* gpu, bool backward, bool block_scaled, bool mla) {
    FlashAttention a;
    a.backward = backward;
    a.block_scaled = block_scaled;
    a.mla = mla;
    return fp8_attention_speedup(*topologies::find_gpu(gpu), a);
  };
  CHECK(gain("H100-SXM5", false, false, false) == 1.50);
  CHECK(gain("H100-SXM5", true, false, false) == 0.72);
  CHECK(gain("H200-SXM", true, true, true) == 0.72);
  CHECK(gain("GB200", false, false, false) == 1.29);
  CHECK(gain("B200", true, false, false) == 1.16);
  CHECK(gain("GB200", false, true, false) == 1.20);
  CHECK(gain("GB200", true, true, false) == 1.02);
  CHECK(gain("GB200", false, false, true) == 1.49);
  CHECK(gain("GB200", true, false, true) == 1.68);
  CHECK(gain("GB300", false, false, false) == 1.58);
  CHECK(gain("B300", true, false, false) == 1.30);
  CHECK(gain("GB300", true, true, true) == 1.40);
  for (const char* gpu : {"GB200", "GB300"}) {
    for (const bool backward : {false, true}) {
      INFO(gpu << (backward ? " backward" : " forward"));
      CHECK(gain(gpu, backward, false, true) > gain(gpu, backward, false, false));
      CHECK(gain(gpu, backward, true, true) > gain(gpu, backward, true, false));
      CHECK(gain(gpu, backward, false, false) > gain(gpu, backward, true, false));
      CHECK(gain("GB300", backward, false, false) > gain("GB200", backward, false, false));
    }
  }
  CHECK(banded_fp8_backward_speedup(false) == 1.68);
  CHECK(banded_fp8_backward_speedup(true) == 1.31);
  CHECK(banded_tile_keys(GpuGeneration::hopper) == 128);
  CHECK(banded_tile_keys(GpuGeneration::ampere) == 128);
  CHECK(banded_tile_keys(GpuGeneration::blackwell) == 256);
}

TEST_CASE("the Triton FlashAttention runs 1/1.8 of FlashAttention-2", "[compute]") {
  using topologies::GpuGeneration;
  for (const GpuGeneration g : {GpuGeneration::ampere, GpuGeneration::hopper}) {
    for (const bool backward : {false, true}) {
      CHECK(attention_library_factor(AttentionKernel::flash_triton, g, backward) ==
            Approx(attention_library_factor(AttentionKernel::flash2, g, backward) /
                   std::sqrt(1.3 * 2.5)));
    }
  }
}

TEST_CASE("a step runs at the sustained matmul rate where the bf16 fit is a burst figure",
          "[compute]") {
  ComputeProfile p = default_compute_profile(h100());
  const GemmParams& g = p.gemm_for(Precision::bf16);
  // A fit whose best shapes reach 0.845 of the peak (836 TFLOP/s, a boost-clock figure) is
  // scaled to the sustained 681 TFLOP/s measured on a GH100 at 700 W.
  p.gemm_for(Precision::bf16).max_efficiency = 0.845;
  const double clock = sustained_clock(h100(), p, Precision::bf16);
  CHECK(clock == Approx(681.0 / (989.4 * 0.845)).epsilon(1e-12));
  CHECK(sustained_clock(h100(), p, Precision::fp16) == clock);
  // Compute-bound: the tensor-core time grows by 1 / clock, the launch does not.
  const double m = 8192, n = 8192, k = 8192;
  const double launch = g.launch.s();
  CHECK(
      gemm_seconds(h100(), p, Precision::bf16, m, n, k, 1, clock) - launch ==
      Approx((gemm_seconds(h100(), p, Precision::bf16, m, n, k) - launch) / clock).epsilon(1e-12));
  // HBM-bound (K = 16, with a fit that reaches its ceiling at small K): the clock does not move
  // the memory roofline.
  ComputeProfile fast_k = p;
  fast_k.gemm_for(Precision::bf16).k_half = 1;
  CHECK(gemm_seconds(h100(), fast_k, Precision::bf16, 65536, 65536, 16, 1, clock) ==
        gemm_seconds(h100(), fast_k, Precision::bf16, 65536, 65536, 16));
  // FP8 has its own measured figure over its own fit; tf32 none: unchanged. The A100 holds the
  // 256.5 TFLOP/s of heat-soaked GEMMs over the same fit's burst.
  CHECK(sustained_clock(h100(), p, Precision::fp8) ==
        Approx(std::min(1.0, 1272.0 / (1978.9 * p.gemm_for(Precision::fp8).max_efficiency)))
            .epsilon(1e-12));
  CHECK(sustained_clock(h100(), p, Precision::tf32) == 1.0);
  CHECK(sustained_clock(*topologies::find_gpu("A100-80GB-SXM4"), p, Precision::bf16) ==
        Approx(256.5 / (312.0 * 0.845)).epsilon(1e-12));
  // A fit at or below the sustained rate (saturated measurements) is already sustained.
  p.gemm_for(Precision::bf16).max_efficiency = 0.65;
  CHECK(sustained_clock(h100(), p, Precision::bf16) == 1.0);
}

TEST_CASE("a Blackwell GPU without a sustained figure holds the H200's power-limited share",
          "[compute]") {
  const topologies::GpuSpec& gb200 = *topologies::find_gpu("GB200");
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  const ComputeProfile p = default_compute_profile(gb200);
  bool assumed = false;
  CHECK(sustained_clock(gb200, p, Precision::bf16, &assumed) == Approx(681.0 / 810.0));
  CHECK(assumed);
  CHECK(sustained_clock(gb200, p, Precision::fp8, &assumed) == Approx(1272.0 / 1428.0));
  CHECK(assumed);
  // MXFP8 and NVFP4 run on the same tensor cores at the same power limit: FP8's share.
  CHECK(sustained_clock(gb200, p, Precision::mxfp8) == Approx(1272.0 / 1428.0));
  CHECK(sustained_clock(gb200, p, Precision::nvfp4, &assumed) == Approx(1272.0 / 1428.0));
  CHECK(assumed);
  // The B200's own bf16 figure (1429 TFLOP/s over its fit's 0.75 x 2250) is not an assumption.
  CHECK(sustained_clock(b200, default_compute_profile(b200), Precision::bf16, &assumed) ==
        Approx(1429.0 / (2250 * 0.75)));
  CHECK_FALSE(assumed);
  // Not Blackwell, no figure: no scaling (the A100 is not known to be power-limited in GEMMs).
  CHECK(sustained_clock(*topologies::find_gpu("A100-80GB-SXM4"), p, Precision::bf16, &assumed) ==
        1.0);
  CHECK_FALSE(assumed);
}
