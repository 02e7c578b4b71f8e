#pragma once
// Collective operations, NCCL's algorithms and protocols, and nccl-tests' bandwidth conventions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fabricsim::models {

enum class CollectiveOp : uint8_t {
  all_reduce,
  all_gather,
  reduce_scatter,
  broadcast,
  reduce,
  alltoall,
  sendrecv
};
enum class Algorithm {
  ring,
  tree,
  nvls,
  nvls_tree,
  collnet_direct,
  collnet_chain,
  pat,
  direct,
  pxn
};
enum class Protocol { ll, ll128, simple };

std::string_view to_string(CollectiveOp op);
std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);
/// Accepts the names printed by to_string and NCCL's spellings ("Ring", "NVLSTree", "LL128",
/// "CollNetDirect", "allreduce", "all_reduce").
std::optional<CollectiveOp> parse_collective_op(std::string_view text);
std::optional<Algorithm> parse_algorithm(std::string_view text);
std::optional<Protocol> parse_protocol(std::string_view text);
std::string collective_op_names();
std::string algorithm_names();

/// nccl-tests: busbw = algbw x factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter and
/// alltoall (n-1)/n; broadcast, reduce and sendrecv 1).
double busbw_factor(CollectiveOp op, int ranks);

}  // namespace fabricsim::models
