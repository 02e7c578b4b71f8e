#include "tools/cuda/nccl_check_pattern.hpp"

#include <catch2/catch.hpp>
#include <vector>

using namespace fabricsim::tools::cuda;

namespace {

using Buffers = std::vector<std::vector<double>>;  // one buffer per rank

// The inputs of every rank, `count` elements each.
Buffers inputs(int ranks, uint64_t count) {
  Buffers in(static_cast<size_t>(ranks), std::vector<double>(count));
  for (int r = 0; r < ranks; ++r) {
    for (uint64_t i = 0; i < count; ++i)
      in[r][i] = check_input_value(r, i);
  }
  return in;
}

// What NCCL computes, written out plainly, to check the closed forms the GPU check kernel uses.
Buffers simulate(CollectiveOp op, int ranks, const CollectiveLayout& l) {
  const Buffers in = inputs(ranks, l.send_count);
  Buffers out(static_cast<size_t>(ranks), std::vector<double>(l.recv_count, 0));
  const uint64_t c = l.per_rank_count;
  for (int r = 0; r < ranks; ++r) {
    for (uint64_t i = 0; i < l.recv_count; ++i) {
      double& o = out[r][i];
      switch (op) {
        case CollectiveOp::kAllReduce:
          for (int s = 0; s < ranks; ++s)
            o += in[s][i];
          break;
        case CollectiveOp::kAllGather:
          o = in[i / c][i % c];
          break;
        case CollectiveOp::kReduceScatter:
          for (int s = 0; s < ranks; ++s)
            o += in[s][r * c + i];
          break;
        case CollectiveOp::kAllToAll:
          o = in[i / c][r * c + i % c];  // sender s's chunk for r lands at s * c
          break;
        case CollectiveOp::kBroadcast:
          o = in[0][i];
          break;
        case CollectiveOp::kSendRecv:
          o = in[(r + ranks - 1) % ranks][i];
          break;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("check formulas match a plain simulation of every collective", "[cuda-tools]") {
  for (int ranks : {1, 2, 3, 8}) {
    for (CollectiveOp op : all_collective_ops()) {
      const CollectiveLayout l = collective_layout(op, 4 * 8 * 10, 4, ranks);
      const Buffers expected = simulate(op, ranks, l);
      for (int r = 0; r < ranks; ++r) {
        for (uint64_t i = 0; i < l.recv_count; ++i) {
          INFO(collective_op_name(op) << " ranks " << ranks << " rank " << r << " index " << i);
          REQUIRE(check_expected_value(op, r, ranks, l.per_rank_count, i) == expected[r][i]);
        }
      }
    }
  }
}

TEST_CASE("check inputs are small, varied integers that never equal the sentinel", "[cuda-tools]") {
  bool varied = false;
  for (uint64_t i = 0; i < 20; ++i) {
    const double v = check_input_value(3, i);
    CHECK(v >= 0);
    CHECK(v <= 4);
    CHECK(v != kCheckSentinel);
    varied = varied || v != check_input_value(3, 0);
  }
  CHECK(varied);
  CHECK(check_input_value(0, 5) != check_input_value(1, 5));
}
