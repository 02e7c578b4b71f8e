#include "tools/cuda/collective_ops.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::tools::cuda;

TEST_CASE("op names round-trip and unknown names list the valid ones", "[cuda-tools]") {
  REQUIRE(all_collective_ops().size() == 6);
  for (CollectiveOp op : all_collective_ops()) {
    CHECK(parse_collective_op(collective_op_name(op)) == op);
  }
  CHECK_THROWS_WITH(parse_collective_op("allreduce"),
                    "unknown op 'allreduce' (expected one of: all_reduce, all_gather, "
                    "reduce_scatter, alltoall, broadcast, sendrecv)");
}

TEST_CASE("bus bandwidth factors follow nccl-tests", "[cuda-tools]") {
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllGather, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveOp::kReduceScatter, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllToAll, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveOp::kBroadcast, 8) == 1.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kSendRecv, 8) == 1.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 2) == 1.0);
}

TEST_CASE("one rank is a valid, degenerate run without division by zero", "[cuda-tools]") {
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 1) == 0.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllGather, 1) == 0.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kReduceScatter, 1) == 0.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kAllToAll, 1) == 0.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kBroadcast, 1) == 1.0);
  CHECK(bus_bandwidth_factor(CollectiveOp::kSendRecv, 1) == 1.0);
  CHECK_THROWS(bus_bandwidth_factor(CollectiveOp::kAllReduce, 0));
}

TEST_CASE("size names the large buffer and split ops round to the rank count", "[cuda-tools]") {
  const auto ar = collective_layout(CollectiveOp::kAllReduce, 1 << 20, 4, 8);
  CHECK(ar.bytes == 1 << 20);
  CHECK(ar.count == 262144);
  CHECK(ar.send_count == 262144);
  CHECK(ar.recv_count == 262144);

  const auto ag = collective_layout(CollectiveOp::kAllGather, 1 << 20, 4, 8);
  CHECK(ag.bytes == 1 << 20);
  CHECK(ag.count == 262144);
  CHECK(ag.per_rank_count == 32768);
  CHECK(ag.send_count == 32768);
  CHECK(ag.recv_count == 262144);

  const auto rs = collective_layout(CollectiveOp::kReduceScatter, 1 << 20, 2, 8);
  CHECK(rs.count == 524288);
  CHECK(rs.send_count == 524288);
  CHECK(rs.recv_count == 65536);

  const auto a2a = collective_layout(CollectiveOp::kAllToAll, 1000, 4, 6);
  CHECK(a2a.per_rank_count == 41);
  CHECK(a2a.count == 246);
  CHECK(a2a.bytes == 984);

  // Fewer elements than ranks: nothing to run.
  CHECK(collective_layout(CollectiveOp::kAllGather, 16, 4, 8).bytes == 0);
  CHECK(collective_layout(CollectiveOp::kAllReduce, 2, 4, 8).bytes == 0);
  CHECK(collective_layout(CollectiveOp::kSendRecv, 8, 4, 8).count == 2);
}

TEST_CASE("send/recv based ops have no in-place form", "[cuda-tools]") {
  CHECK(has_in_place_form(CollectiveOp::kAllReduce));
  CHECK(has_in_place_form(CollectiveOp::kReduceScatter));
  CHECK_FALSE(has_in_place_form(CollectiveOp::kAllToAll));
  CHECK_FALSE(has_in_place_form(CollectiveOp::kSendRecv));
}
