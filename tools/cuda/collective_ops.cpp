#include "tools/cuda/collective_ops.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace fabricsim::tools::cuda {

const std::vector<CollectiveOp>& all_collective_ops() {
  static const std::vector<CollectiveOp> ops = {
      CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
      CollectiveOp::kAllToAll,  CollectiveOp::kBroadcast, CollectiveOp::kSendRecv};
  return ops;
}

std::string_view collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllToAll:
      return "alltoall";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kSendRecv:
      return "sendrecv";
  }
  throw std::invalid_argument("unknown collective op");
}

CollectiveOp parse_collective_op(std::string_view name) {
  std::string valid;
  for (CollectiveOp op : all_collective_ops()) {
    if (collective_op_name(op) == name) return op;
    if (!valid.empty()) valid += ", ";
    valid += collective_op_name(op);
  }
  throw std::invalid_argument(fmt::format("unknown op '{}' (expected one of: {})", name, valid));
}

bool has_in_place_form(CollectiveOp op) {
  return op != CollectiveOp::kAllToAll && op != CollectiveOp::kSendRecv;
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus bandwidth needs at least one rank");
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  throw std::invalid_argument("unknown collective op");
}

CollectiveLayout collective_layout(CollectiveOp op, uint64_t requested_bytes, uint64_t element_size,
                                   int ranks) {
  if (element_size < 1 || ranks < 1) {
    throw std::invalid_argument("collective layout needs element size and ranks >= 1");
  }
  const auto n = static_cast<uint64_t>(ranks);
  CollectiveLayout l;
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      l.count = requested_bytes / element_size;
      l.per_rank_count = l.count;
      l.send_count = l.count;
      l.recv_count = l.count;
      break;
    case CollectiveOp::kAllGather:
      l.per_rank_count = requested_bytes / element_size / n;
      l.count = l.per_rank_count * n;
      l.send_count = l.per_rank_count;
      l.recv_count = l.count;
      break;
    case CollectiveOp::kReduceScatter:
      l.per_rank_count = requested_bytes / element_size / n;
      l.count = l.per_rank_count * n;
      l.send_count = l.count;
      l.recv_count = l.per_rank_count;
      break;
    case CollectiveOp::kAllToAll:
      l.per_rank_count = requested_bytes / element_size / n;
      l.count = l.per_rank_count * n;
      l.send_count = l.count;
      l.recv_count = l.count;
      break;
  }
  l.bytes = l.count * element_size;
  if (l.per_rank_count == 0) l = CollectiveLayout{};
  return l;
}

}  // namespace fabricsim::tools::cuda
