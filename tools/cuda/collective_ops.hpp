#pragma once
// The collectives the NCCL bench measures and the nccl-tests conventions for reporting them:
// which buffer "size" names, how counts are rounded to the rank count, and the bus-bandwidth
// factor that turns algorithm bandwidth into the per-link rate a ring would need.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::tools::cuda {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kSendRecv
};

/// Every op, in the order the bench runs them by default.
const std::vector<CollectiveOp>& all_collective_ops();
/// "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv".
std::string_view collective_op_name(CollectiveOp op);
/// The op called `name`; throws std::invalid_argument listing the valid names otherwise.
CollectiveOp parse_collective_op(std::string_view name);
/// Whether the op has an in-place form worth timing. Send/recv based ops (alltoall, sendrecv)
/// would overwrite data still being sent, so they are only timed out of place.
bool has_in_place_form(CollectiveOp op);

/// nccl-tests bus-bandwidth factor for `ranks` ranks: all_reduce 2(n-1)/n; all_gather,
/// reduce_scatter and alltoall (n-1)/n; broadcast and sendrecv 1. With one rank the factors of
/// the first four are 0 (nothing crosses a link). Throws std::invalid_argument for ranks < 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

/// Buffer sizes of one measurement. As in nccl-tests, `bytes` is the large buffer: the whole
/// result of all_gather, the whole input of reduce_scatter, each rank's full buffer of alltoall.
struct CollectiveLayout {
  uint64_t bytes = 0;           ///< reported size, after rounding (0: too small to run)
  uint64_t count = 0;           ///< bytes / element size
  uint64_t send_count = 0;      ///< elements each rank sends from its send buffer
  uint64_t recv_count = 0;      ///< elements each rank ends up with in its receive buffer
  uint64_t per_rank_count = 0;  ///< elements per rank chunk (count / ranks for the split ops)
};

/// The layout for a requested size: the count of the split ops (all_gather, reduce_scatter,
/// alltoall) is rounded down to a multiple of `ranks`, like nccl-tests does.
CollectiveLayout collective_layout(CollectiveOp op, uint64_t requested_bytes, uint64_t element_size,
                                   int ranks);

}  // namespace fabricsim::tools::cuda
