#include "topologies/gpu_spec.hpp"

#include <array>

namespace fabricsim::topologies {

std::string_view to_string(GpuGeneration g) {
  switch (g) {
    case GpuGeneration::volta:
      return "Volta";
    case GpuGeneration::ampere:
      return "Ampere";
    case GpuGeneration::hopper:
      return "Hopper";
    case GpuGeneration::blackwell:
      return "Blackwell";
  }
  return "?";
}

namespace {
constexpr std::array<std::string_view, 6> kPrecisionNames{"bf16",  "fp16",  "fp8",
                                                          "mxfp8", "nvfp4", "tf32"};
}

std::string_view to_string(Precision p) {
  return kPrecisionNames[static_cast<size_t>(p)];
}

bool parse_precision(std::string_view text, Precision& out) {
  for (size_t i = 0; i < kPrecisionNames.size(); ++i) {
    if (kPrecisionNames[i] == text) {
      out = static_cast<Precision>(i);
      return true;
    }
  }
  return false;
}

double GpuSpec::peak_tflops(Precision p) const {
  const bool blackwell_or_later = generation == GpuGeneration::blackwell;
  switch (p) {
    case Precision::bf16:
      return bf16_tflops;
    case Precision::fp16:
      return fp16_tflops;
    case Precision::fp8:
      return fp8_tflops;
    case Precision::mxfp8:
      return blackwell_or_later ? fp8_tflops : 0.0;
    case Precision::nvfp4:
      return blackwell_or_later ? fp4_tflops : 0.0;
    case Precision::tf32:
      return tf32_tflops;
  }
  return 0.0;
}

namespace {

/// Blackwell Ultra doubles the special-function units' throughput over Blackwell for the
/// exponential of softmax (MUFU.EX2): NVIDIA technical blog "Making Softmax More Efficient with
/// NVIDIA Blackwell Ultra" (2026-02), which measures ~2x MUFU.EX2 throughput on GB300 over
/// GB200. Rubin's is not published: 1.
std::vector<GpuSpec> with_exp_rates(std::vector<GpuSpec> catalog) {
  constexpr double kUltraExpRate = 2;
  for (GpuSpec& g : catalog) {
    if (g.id == "B300" || g.id == "GB300") g.exp_rate = kUltraExpRate;
  }
  return catalog;
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  // SM counts are not in hardware.json; they come from NVIDIA's architecture whitepapers (A100:
  // 108 SMs; H100 SXM5: 132 SMs, as the H200 and H800 that share the GH100 configuration; the
  // H200 count was also read as 132 by PyTorch on an H200 of this workplace) and the Blackwell
  // product pages (B200/GB200: 148 SMs; B300/GB300: 160 SMs).
  // Sustained matmul rate (MSMF, the method of stas00/ml-engineering's mamf-finder.py: the
  // highest rate a shape holds at the power limit, against MAMF, the burst at the boost clock),
  // measured on an H200 SXM of this workplace on 2026-12-04 (calibration/data/h200-2026-12-04,
  // tools/cuda/kernel_bench.py --parts msmf): after a 5 s warm-up, 7 bf16 shapes of 4096^3 to
  // 16384 x 28672 x 8192 each ran 3 s back to back at the 700 W limit (690-692 W drawn, SM clock
  // 1440-1515 MHz of the 1980 MHz boost) and held 667-681 TFLOP/s; the best, 681, is the figure.
  // The same card's burst sweep (fabricsim-gemm-bench, 50 timed runs a shape) peaked at 810
  // (6144^3). FP8 (e4m3, bf16 out) held 1248-1272 TFLOP/s with split accumulation, the mode of
  // two of the three GEMMs of Transformer Engine's FP8 recipe (dgrad, wgrad), at 1305-1350 MHz,
  // and 1278-1323 with fast accumulation (fprop); its burst peak was 1428. One card, one driver
  // (580.159.04, cuBLAS 13.1); the figure this replaced, 755 bf16, was quoted from an explainer
  // of mamf-finder whose repository was never identified.
  // The H100 SXM5 and H800 share the H200's GH100 compute and 700 W limit, so the same figures.
  constexpr double kGh100SustainedBf16 = 681;
  constexpr double kGh100SustainedFp8 = 1272;
  // A100 SXM4 (400 W): 256.5 TFLOP/s, the best large half-precision GEMM after 10,000 warm-up
  // iterations on Azure's ND A100 v4 (dev-gemm.json: 16384^3 fp16, cuBLASLt; fp16 and bf16 share
  // the tensor rate), against the 271 TFLOP/s burst maximum of the shape search (MAMF, stas00's
  // table): 0.93 of the burst, the share NVIDIA's HPL runs assume too (the 1305 MHz an A100
  // sustains at its power limit under dense tensor-core load, of its 1410 MHz boost: 0.926;
  // Glenn Lockwood's notes on peak FLOPS, glennklockwood.com/garden/peak-FLOPS).
  constexpr double kA100Sustained = 256.5;
  // B200 (1000 W): 1429 TFLOP/s sustained, the same explainer (its clock settles near 1450 MHz
  // from the 1965 MHz boost once a matmul fills every SM at the power limit).
  constexpr double kB200SustainedBf16 = 1429;
  // Host links: what nvbandwidth's host copies reach, one GPU at a time (Azure's
  // AI-benchmarking-guide, Azure_Results/*_results.md, "NV Bandwidth"; Benchmarks/NVBandwidth.py
  // runs device_to_host_memcpy_sm and host_to_device_memcpy_sm, SM copies, taken as the rate of
  // the copy engines offloading uses), to host / from host in GB/s. ND GB200 v6 193 / 201
  // (Azure/AI-benchmarking-guide@2a370be) and ND GB300 v6 193 / 211
  // (egmsft/AI-benchmarking-guide@18e80a2): each Grace feeds two GPUs over NVLink-C2C's 900 GB/s
  // bidirectional, 225 a GPU each way, of which the copies reach 86-94% (the 450 a GPU this
  // replaced counted the superchip's link twice). ND H100 v5 52 / 51, ND H200 v5 52 / 52 (PCIe
  // Gen5 x16, 64: 0.8 of the link). ND A100 v4 reads 26.28 from host but 6.27 to host, a quarter
  // of its Gen4 link that no other host shows: not taken, 26.28 both ways (assumption).
  // Unmeasured: DGX B200 and H800 hosts take H100's Gen5 figures, B300's Gen6 twice them
  // (PCIE6-PAGE: 256 GB/s bidirectional, twice Gen5), Vera's 1.8 TB/s C2C to two GPUs
  // (VR-HYPERAI) twice Grace's.
  constexpr HostLink kA100Host{26.28, 26.28}, kH100Host{52, 51}, kH200Host{52, 52},
      kB300Host{104, 102}, kGb200Host{193, 201}, kGb300Host{193, 211}, kVeraHost{386, 402};
  static const std::vector<GpuSpec> catalog = with_exp_rates({
      {"A100-40GB-SXM4", "A100-40GB-SXM4", GpuGeneration::ampere, 108, 312, 312, 0, 0, 156, 40,
       1.555, 400, 12, 25, "GK-A100, NV-NVLINK-DE", "NVLink3: 12 links x 50 GB/s bidirectional.",
       kA100Sustained, 0, kA100Host},
      {"A100-80GB-SXM4", "A100-80GB-SXM4", GpuGeneration::ampere, 108, 312, 312, 0, 0, 156, 80,
       2.039, 400, 12, 25, "GK-A100, NV-NVLINK-DE", "Same compute as the 40 GB part.",
       kA100Sustained, 0, kA100Host},
      {"H100-SXM5", "H100-SXM5", GpuGeneration::hopper, 132, 989.4, 989.4, 1978.9, 0, 494.7, 80,
       3.35, 700, 18, 25, "H100-DS-COPY, GK-H100, HC34-NVSWITCH, KARVAI",
       "NVLink4: 18 links x 50 GB/s bidirectional, split 5/4/4/5 over 4 NVSwitch chips.",
       kGh100SustainedBf16, kGh100SustainedFp8, kH100Host},
      {"H200-SXM", "H200-SXM", GpuGeneration::hopper, 132, 989.4, 989.4, 1978.9, 0, 494.7, 141, 4.8,
       700, 18, 25, "LZW-H200, MLPERF-H200, AIHPC-H200", "Same GH100 compute as H100.",
       kGh100SustainedBf16, kGh100SustainedFp8, kH200Host},
      {"H800-SXM", "H800-SXM", GpuGeneration::hopper, 132, 989.4, 989.4, 1978.9, 0, 494.7, 80, 3.35,
       700, 8, 25, "H800-PHILISUN, H800-TUMGAG, H800-51CTO, AIWIKI-H800",
       "hardware.json gives no H800 FLOP figures but describes its low-precision compute as the "
       "H100's, so the H100 SXM5 peaks and TDP are used. NVLink limited to 400 GB/s "
       "bidirectional; the link count is not published, modelled as 8 links x 50 GB/s (derived).",
       kGh100SustainedBf16, kGh100SustainedFp8, kH100Host},
      {"B200", "B200 (HGX/DGX, 1000 W)", GpuGeneration::blackwell, 148, 2250, 2250, 4500, 9000,
       1100, 180, 8.0, 1000, 18, 50,
       "GK-B200, DGXB200-UG, DGXB200-SUMMARY, VULTR-B200, HMC-GB200, RILLOR, GB200-RA-NET",
       "NVLink5: 18 links x 100 GB/s bidirectional.", kB200SustainedBf16, 0, kH100Host},
      {"GB200", "GB200 (per GPU, 1200 W config)", GpuGeneration::blackwell, 148, 2500, 2500, 5000,
       10000, 1250, 186, 8.0, 1200, 18, 50,
       "GK-B200, HMC-GB200, MLPERF-GB200, GB200-RA-NET, SETLOOP-GB200", "", 0, 0, kGb200Host},
      {"B300", "B300 (HGX/DGX, Blackwell Ultra)", GpuGeneration::blackwell, 160, 2250, 2250, 4500,
       13125, 1125, 288, 8.0, 1100, 18, 50, "GK-B300, VERDA-GB300, AIWIKI-DGXB300, RILLOR",
       "FP4 dense 13.1 PF per GK-B300 (Verda: 14 PF).", 0, 0, kB300Host},
      {"GB300", "GB300 (per GPU)", GpuGeneration::blackwell, 160, 2500, 2500, 5000, 15000, 1250,
       288, 8.0, 1400, 18, 50, "VERDA-GB300, GK-B300, VENDORDEEP-GB300, EPIUM-MS", "", 0, 0,
       kGb300Host},
      {"Rubin", "Rubin (Vera Rubin NVL72/NVL144)", GpuGeneration::blackwell, 0, 8750, 8750, 17500,
       35000, 0, 288, 22, 1800, 18, 100, "VR-CES-RELAY, VR-HYPERAI, VR-MIRRORFROG, RUBIN-RA-COMP",
       "ANNOUNCED FIGURES, not measured products. NVFP4 training 35 PF = 2.5 EF / 72 (derived); "
       "FP8 17.5 PF = DGX Rubin NVL8 140 PF / 8 (derived, RUBIN-RA-COMP); BF16 has no published "
       "figure and is taken as half of FP8 (assumption, as on every earlier generation). 22 TB/s "
       "and ~1.8 kW are third-party. NVLink6 3.6 TB/s bidirectional per GPU; the link count is "
       "not published, modelled as 18 links x 200 GB/s bidirectional. SM count unknown.",
       0, 0, kVeraHost},
      {"H100-PCIe", "H100 PCIe", GpuGeneration::hopper, 114, 756, 756, 1513, 0, 378, 80, 2.0, 350,
       0, 0, "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column)",
       "Not in hardware.json: the datasheet's sparse figures halved (BF16 1,513 -> 756 dense), "
       "80 GB HBM2e at 2.0 TB/s, 300-350 W, 114 SMs (H100 whitepaper). Used by "
       "generic-h100-pcie-eth; no NVLink bridges are modelled.",
       0, 0, kH100Host},
  });
  return catalog;
}

const GpuSpec* find_gpu(std::string_view id) {
  for (const GpuSpec& g : gpu_catalog()) {
    if (g.id == id) return &g;
  }
  return nullptr;
}

}  // namespace fabricsim::topologies
