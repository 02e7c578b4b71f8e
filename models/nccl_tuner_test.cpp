#include "models/nccl_tuner.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::models;
using fabricsim::topologies::GpuGeneration;

namespace {

NcclCommShape hopper_node(int ranks, int nodes) {
  NcclCommShape s;
  s.ranks = ranks;
  s.nodes = nodes;
  s.generation = GpuGeneration::hopper;
  s.channels = 16;
  s.bw_intra = 18 * 20.6 / 16;
  s.bw_inter = nodes > 1 ? 8 * 48.0 / 16 : s.bw_intra;
  s.nvls = true;
  return s;
}

}  // namespace

TEST_CASE("NCCL's latency formulas, written out", "[nccl][tuner]") {
  const NcclCommShape one = hopper_node(8, 1);
  // Ring LL inside a node: baseLat 6.6 + 2(n-1) steps x NVLink hwLat 0.6.
  CHECK(NcclTuner::latency_us(CollectiveOp::all_reduce, 1024, Algorithm::ring, Protocol::ll, one) ==
        Approx(6.6 + 14 * 0.6));
  // NVLS replaces the base latency with the NVLink hop latency 25.
  CHECK(NcclTuner::latency_us(CollectiveOp::all_reduce, 1 << 30, Algorithm::nvls, Protocol::simple,
                              one) == Approx(25));
  // Ring Simple across 4 nodes: intraLat = max(3.4, 3 x 1.0 net overhead); 6 inter steps at 14;
  // x1.4 for large Simple all-reduce.
  const NcclCommShape four = hopper_node(32, 4);
  CHECK(NcclTuner::latency_us(CollectiveOp::all_reduce, 1 << 30, Algorithm::ring, Protocol::simple,
                              four) == Approx((8.4 + (62 - 6) * 3.4 + 6 * 14.0) * 1.4));
  // Tree: 2 x ((ppn-1) x intra + log2(nodes) x inter).
  CHECK(NcclTuner::latency_us(CollectiveOp::all_reduce, 1 << 20, Algorithm::tree, Protocol::ll,
                              four) == Approx(6.8 + 2 * (7 * 0.6 + 2 * 5.0)));
}

TEST_CASE("NCCL's choice follows its model", "[nccl][tuner]") {
  const NcclCommShape one = hopper_node(8, 1);
  const auto small = NcclTuner::choose(CollectiveOp::all_reduce, 1024, one);
  REQUIRE(small);
  CHECK(small->algorithm == Algorithm::ring);
  CHECK(small->protocol == Protocol::ll);
  const auto large = NcclTuner::choose(CollectiveOp::all_reduce, 8e9, one);
  REQUIRE(large);
  CHECK(large->algorithm == Algorithm::nvls);
  // Forced like NCCL_ALGO=Ring.
  const auto ring = NcclTuner::choose(CollectiveOp::all_reduce, 8e9, one, Algorithm::ring);
  REQUIRE(ring);
  CHECK(ring->protocol == Protocol::simple);
  // Tree needs several nodes; NVLS needs the NVSwitch; PAT needs one GPU per node.
  CHECK_FALSE(NcclTuner::choose(CollectiveOp::all_reduce, 8e9, one, Algorithm::tree));
  NcclCommShape a100 = one;
  a100.nvls = false;
  CHECK_FALSE(NcclTuner::choose(CollectiveOp::all_reduce, 8e9, a100, Algorithm::nvls));
  CHECK_FALSE(NcclTuner::choose(CollectiveOp::all_gather, 8e9, one, Algorithm::pat));
  NcclCommShape spread = hopper_node(16, 16);
  CHECK(NcclTuner::choose(CollectiveOp::all_gather, 8e9, spread, Algorithm::pat));
  // Broadcast is ring only.
  CHECK(NcclTuner::choose(CollectiveOp::broadcast, 8e9, spread)->algorithm == Algorithm::ring);
}

TEST_CASE("protocol caps from NCCL's tables", "[nccl][tuner]") {
  const NcclCommShape one = hopper_node(8, 1);
  CHECK(NcclTuner::busbw_cap(CollectiveOp::all_reduce, Algorithm::ring, Protocol::ll, one) ==
        Approx(141.0));
  CHECK(NcclTuner::busbw_cap(CollectiveOp::all_reduce, Algorithm::ring, Protocol::ll128, one) ==
        Approx(16 * 36.7));
  CHECK(std::isinf(
      NcclTuner::busbw_cap(CollectiveOp::all_reduce, Algorithm::ring, Protocol::simple, one)));
}
