#include "models/moe_alltoall.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

using namespace fabricsim::models;

namespace {

MoeAlltoallRequest deepseek(int ranks, MoeKernel kernel = MoeKernel::deepep_normal) {
  MoeAlltoallRequest r;
  r.kernel = kernel;
  r.ranks = ranks;
  r.ranks_per_node = std::min(ranks, 8);
  r.tokens_per_rank = kernel == MoeKernel::deepep_normal ? 4096 : 128;
  r.topk_groups = 4;
  r.fp8 = true;
  return r;
}

const MoeLinkRates kH800{200, 50};

}  // namespace

TEST_CASE("expected distinct bins follow the hypergeometric closed form", "[moe]") {
  CHECK(expected_distinct_bins(1, 256, 8) == 1.0);
  CHECK(expected_distinct_bins(8, 32, 1) == Approx(1.0));
  // Drawing every item hits every bin.
  CHECK(expected_distinct_bins(4, 2, 8) == Approx(4.0));
  // 8 of 256 experts on 8 ranks: 8 x (1 - C(224,8)/C(256,8)).
  double miss = 1;
  for (int i = 0; i < 8; ++i)
    miss *= (224.0 - i) / (256.0 - i);
  CHECK(expected_distinct_bins(8, 32, 8) == Approx(8 * (1 - miss)));
  // Many items per bin: independent draws, bins x (1 - (1 - 1/bins)^k).
  CHECK(expected_distinct_bins(4, 1e7, 8) == Approx(4 * (1 - std::pow(0.75, 8))).epsilon(1e-5));
}

TEST_CASE("token payload counts FP8 scales and low-latency headers", "[moe]") {
  MoeAlltoallRequest r = deepseek(8);
  CHECK(moe_token_bytes(r) == Approx(7168 * (1 + 4.0 / 128)));
  r.kernel = MoeKernel::deepep_low_latency;
  CHECK(moe_token_bytes(r) == Approx(7168 + 7168 / 128.0 * 4 + 16));
  r.fp8 = false;
  CHECK(moe_token_bytes(r) == 2 * 7168);
}

TEST_CASE("intranode normal kernels report NVLink rate with local traffic counted", "[moe]") {
  // Only (L-1)/L of the received bytes cross NVLink: reported = rate x eff x L/(L-1), whatever the
  // token count or payload.
  const MoeKernelProfile p;
  for (double tokens : {512.0, 4096.0}) {
    MoeAlltoallRequest r = deepseek(8);
    r.tokens_per_rank = tokens;
    const MoeAlltoallResult out = moe_alltoall(r, kH800, p);
    CHECK(out.reported_link == "nvlink");
    CHECK(out.binding == "nvlink");
    CHECK(out.bottleneck_bw_GBps == Approx(200 * p.normal_nvlink_efficiency * 8 / 7));
    CHECK(out.nvlink_bytes == Approx(tokens * out.distinct_ranks * moe_token_bytes(r)));
  }
}

TEST_CASE("RDMA-bound normal kernels report NIC rate times nodes/(nodes-1)", "[moe]") {
  const MoeKernelProfile p;
  for (int ranks : {32, 64}) {
    const MoeAlltoallResult out = moe_alltoall(deepseek(ranks), kH800, p);
    const double nodes = ranks / 8.0;
    CHECK(out.binding == "rdma");
    CHECK(out.reported_link == "rdma");
    CHECK(out.bottleneck_bw_GBps == Approx(50 * p.normal_rdma_efficiency * nodes / (nodes - 1)));
  }
  // Node-limited routing caps the nodes a token reaches.
  CHECK(moe_alltoall(deepseek(64), kH800, p).distinct_nodes < 4.0);
  MoeAlltoallRequest unlimited = deepseek(64);
  unlimited.topk_groups.reset();
  CHECK(moe_alltoall(unlimited, kH800, p).distinct_nodes > 4.0);
}

TEST_CASE("two-node normal kernels are bound by SM forwarding and scale with SMs", "[moe]") {
  const MoeKernelProfile p;
  MoeAlltoallRequest r = deepseek(16);
  const MoeAlltoallResult out = moe_alltoall(r, kH800, p);
  CHECK(out.binding == "sm-forwarding");
  CHECK(out.seconds == Approx(out.nvlink_bytes / (24 * p.normal_forward_GBps_per_sm * 1e9)));
  r.sms = 48;
  const MoeAlltoallResult more = moe_alltoall(r, kH800, p);
  CHECK(more.bottleneck_bw_GBps > out.bottleneck_bw_GBps);
  CHECK(more.binding != "sm-forwarding");
}

TEST_CASE("low-latency kernels: fixed cost growing with ranks plus the slower path", "[moe]") {
  const MoeKernelProfile p;
  MoeAlltoallRequest r = deepseek(64, MoeKernel::deepep_low_latency);
  const double bytes = 128 * 8 * moe_token_bytes(r);
  const MoeAlltoallResult out = moe_alltoall(r, kH800, p);
  const double rdma_s = bytes * 56 / 64 / (50e9 * p.ll_rdma_efficiency);
  CHECK(out.seconds == Approx((p.ll_dispatch_base_us + 6 * p.ll_per_doubling_us) * 1e-6 + rdma_s));
  CHECK(out.rdma_bytes == Approx(bytes));
  // Inside one node only NVLink carries messages.
  const MoeAlltoallResult one = moe_alltoall(deepseek(8, MoeKernel::deepep_low_latency), kH800, p);
  CHECK(one.binding == "nvlink");
  CHECK(one.seconds < out.seconds);
  r.direction = MoeDirection::combine;
  r.fp8 = false;
  CHECK(moe_alltoall(r, kH800, p).seconds > out.seconds);
}

TEST_CASE("MoE all-to-all rejects impossible groups", "[moe]") {
  MoeAlltoallRequest r = deepseek(12);
  CHECK_THROWS_AS(moe_alltoall(r, kH800), std::invalid_argument);
  r = deepseek(16);
  CHECK_THROWS_AS(moe_alltoall(r, MoeLinkRates{200, 0}), std::invalid_argument);
  r.experts = 4;
  CHECK_THROWS_AS(moe_alltoall(r, kH800), std::invalid_argument);
}

namespace {

/// Hybrid-EP's benchmark: 4096 tokens of 7168 per rank, top-8 of 8 local experts per rank,
/// uniform random routing (DeepEP docs/README_Hybrid-EP.md, tests/test_hybrid_ep.py).
MoeAlltoallRequest hybrid(int ranks, int ranks_per_node, bool fp8, MoeDirection direction) {
  MoeAlltoallRequest r;
  r.kernel = MoeKernel::hybridep;
  r.direction = direction;
  r.ranks = ranks;
  r.ranks_per_node = ranks_per_node;
  r.experts = 8 * ranks;
  r.fp8 = fp8;
  return r;
}

}  // namespace

TEST_CASE("Hybrid-EP reproduces its published torch-API rates from kernels plus a fixed cost",
          "[moe]") {
  // The README's torch-API rates (16 SMs on Blackwell, 8 on H100), GB/s as its test counts them;
  // the model's efficiencies and per-call costs come from its kernel-only columns beside them.
  struct Row {
    int ranks, per_node;
    bool fp8;
    MoeDirection direction;
    double published;
  };
  const MoeDirection d = MoeDirection::dispatch, c = MoeDirection::combine;
  // B200 (first two rows) and GB200 (NVL72: every rank an NVLink peer), 900 GB/s per direction.
  const std::vector<Row> nvlink = {{8, 8, false, d, 535.94},
                                   {8, 8, false, c, 530.86},
                                   {8, 8, true, d, 409.71},
                                   {8, 8, false, d, 550.10},
                                   {8, 8, false, c, 538.44},
                                   {8, 8, true, d, 421.67},
                                   {16, 16, false, d, 472.84},
                                   {16, 16, false, c, 474.48},
                                   {16, 16, true, d, 397.33},
                                   // (FP8 beyond EP 16 at 16 SMs: SM-bound, not modelled.)
                                   {24, 24, false, d, 441.89},
                                   {24, 24, false, c, 444.40},
                                   {32, 32, false, d, 485.50},
                                   {32, 32, false, c, 423.19},
                                   {36, 36, false, d, 469.96},
                                   {36, 36, false, c, 418.27}};
  const MoeKernelProfile p;
  int within = 0;
  for (const Row& row : nvlink) {
    INFO(row.ranks << (row.fp8 ? " fp8" : " bf16")
                   << (row.direction == d ? " dispatch" : " combine"));
    const MoeAlltoallResult out =
        moe_alltoall(hybrid(row.ranks, row.per_node, row.fp8, row.direction), {900, 0}, p);
    CHECK(out.binding == "nvlink");
    const double ratio = out.bottleneck_bw_GBps / row.published;
    CHECK(ratio == Approx(1).margin(0.16));
    if (std::abs(ratio - 1) <= 0.08) ++within;
  }
  // One efficiency per direction and payload and one cost per call: most rows within 8%.
  CHECK(within >= 8);
  // H100 over InfiniBand (8 ranks per node, 50 GB/s NICs), counted once per node reached, local
  // node included: BF16 dispatch and combine at 16 / 32 / 64 ranks.
  const std::vector<Row> rdma = {{16, 8, false, d, 57.74}, {32, 8, false, d, 46.54},
                                 {64, 8, false, d, 41.46}, {16, 8, false, c, 56.96},
                                 {32, 8, false, c, 50.68}, {64, 8, false, c, 47.68}};
  for (const Row& row : rdma) {
    INFO(row.ranks << (row.direction == d ? " dispatch" : " combine"));
    const MoeAlltoallResult out =
        moe_alltoall(hybrid(row.ranks, row.per_node, row.fp8, row.direction), {450, 50}, p);
    CHECK(out.binding == "rdma");
    CHECK(out.bottleneck_bw_GBps / row.published == Approx(1).margin(0.2));
  }
  // The fixed cost per call makes narrow tokens relatively dear: a quarter of the bytes takes
  // well over a quarter of the time.
  MoeAlltoallRequest narrow = hybrid(8, 8, false, d);
  narrow.hidden = 7168 / 4;
  const double wide_s = moe_alltoall(hybrid(8, 8, false, d), {900, 0}, p).seconds;
  CHECK(moe_alltoall(narrow, {900, 0}, p).seconds > wide_s / 4 + 0.5e-6 * p.hybrid_call_us_nvlink);
  // TMA forwarding: unlike DeepEP's normal kernels, no SM count binds across nodes.
  MoeAlltoallRequest few = hybrid(16, 8, false, d);
  few.sms = 1;
  CHECK(moe_alltoall(few, {450, 50}, p).binding == "rdma");
}
