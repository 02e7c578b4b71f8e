#include "models/collective_op.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace fabricsim::models {
namespace {

constexpr std::array<std::string_view, 7> kOps{
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"};
constexpr std::array<std::string_view, 9> kAlgos{
    "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat", "direct", "pxn"};
constexpr std::array<std::string_view, 3> kProtos{"ll", "ll128", "simple"};

// Lower-case and drop '_' and '-', so "NVLSTree", "nvls_tree" and "nvls-tree" all match.
std::string squash(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '-') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

template <class E, size_t N>
std::optional<E> parse(std::string_view text, const std::array<std::string_view, N>& names) {
  const std::string key = squash(text);
  for (size_t i = 0; i < N; ++i) {
    if (squash(names[i]) == key) return static_cast<E>(i);
  }
  return std::nullopt;
}

template <size_t N>
std::string join(const std::array<std::string_view, N>& names) {
  std::string out;
  for (auto n : names)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace

std::string_view to_string(CollectiveOp op) {
  return kOps[static_cast<size_t>(op)];
}
std::string_view to_string(Algorithm a) {
  return kAlgos[static_cast<size_t>(a)];
}
std::string_view to_string(Protocol p) {
  return kProtos[static_cast<size_t>(p)];
}

std::optional<CollectiveOp> parse_collective_op(std::string_view text) {
  return parse<CollectiveOp>(text, kOps);
}
std::optional<Algorithm> parse_algorithm(std::string_view text) {
  return parse<Algorithm>(text, kAlgos);
}
std::optional<Protocol> parse_protocol(std::string_view text) {
  return parse<Protocol>(text, kProtos);
}
std::string collective_op_names() {
  return join(kOps);
}
std::string algorithm_names() {
  return join(kAlgos);
}

double busbw_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  if (ranks <= 1)
    return op == CollectiveOp::broadcast || op == CollectiveOp::reduce ||
                   op == CollectiveOp::sendrecv
               ? 1.0
               : 0.0;
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::alltoall:
      return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::sendrecv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace fabricsim::models
