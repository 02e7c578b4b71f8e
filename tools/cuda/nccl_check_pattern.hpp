#pragma once
// The data of `fabricsim-nccl-bench --check`: what every rank puts in its send buffer and what each
// collective must leave in its receive buffer. Plain functions usable on the GPU (the check kernel)
// and the CPU (the unit tests simulate each collective with them), so the formulas are tested
// where no GPU is available. Values are small integers so that sums are exact in half and bf16.

#include <cstdint>

#include "tools/cuda/collective_ops.hpp"

#if defined(__CUDACC__)
#define FABRICSIM_HOST_DEVICE __host__ __device__
#else
#define FABRICSIM_HOST_DEVICE
#endif

namespace fabricsim::tools::cuda {

/// Element `index` of rank `rank`'s input (0..4).
FABRICSIM_HOST_DEVICE inline double check_input_value(int rank, uint64_t index) {
  return static_cast<double>((index * 7 + static_cast<uint64_t>(rank) * 3) % 5);
}

/// The value element `index` of rank `rank`'s result must hold. For reduce_scatter `index` runs
/// over the rank's own chunk; `per_rank_count` is CollectiveLayout::per_rank_count. Broadcast uses
/// root 0; sendrecv is the ring where every rank receives from rank - 1.
FABRICSIM_HOST_DEVICE inline double check_expected_value(CollectiveOp op, int rank, int ranks,
                                                         uint64_t per_rank_count, uint64_t index) {
  double sum = 0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      for (int r = 0; r < ranks; ++r)
        sum += check_input_value(r, index);
      return sum;
    case CollectiveOp::kAllGather:
      return check_input_value(static_cast<int>(index / per_rank_count), index % per_rank_count);
    case CollectiveOp::kReduceScatter:
      for (int r = 0; r < ranks; ++r) {
        sum += check_input_value(r, static_cast<uint64_t>(rank) * per_rank_count + index);
      }
      return sum;
    case CollectiveOp::kAllToAll:
      return check_input_value(
          static_cast<int>(index / per_rank_count),
          static_cast<uint64_t>(rank) * per_rank_count + index % per_rank_count);
    case CollectiveOp::kBroadcast:
      return check_input_value(0, index);
    case CollectiveOp::kSendRecv:
      return check_input_value((rank + ranks - 1) % ranks, index);
  }
  return -1;
}

/// A value no result ever holds: receive buffers start with it so that an op that writes nothing
/// fails the check.
constexpr double kCheckSentinel = -7;

}  // namespace fabricsim::tools::cuda
