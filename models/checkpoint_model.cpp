#include "models/checkpoint_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fabricsim::models {

CheckpointLayout checkpoint_layout(double parameters, double trainable_parameters, int gpus,
                                   int gpus_per_node, int tp, int pp, int dp, int cp, int zero) {
  CheckpointLayout l;
  l.gpus = gpus;
  l.gpus_per_node = gpus_per_node;
  l.tp = tp;
  l.pp = pp;
  l.dp = dp;
  l.cp = cp;
  l.zero = zero;
  l.weight_bytes = 2.0 * (parameters - trainable_parameters);
  l.optimizer_bytes = 12.0 * trainable_parameters;
  return l;
}

CheckpointCost checkpoint_cost(const CheckpointLayout& l, const CheckpointSpec& spec,
                               const StorageSpec& storage) {
  CheckpointCost c;
  double weights = l.weight_bytes, optimizer = l.optimizer_bytes;
  if (spec.state_bytes > 0) {  // keep the split, scale to the given size
    const double k = spec.state_bytes / (weights + optimizer);
    weights *= k;
    optimizer *= k;
  }
  c.state_bytes = weights + optimizer;
  const double n = l.gpus;
  // One model replica spans n / (dp x cp) GPUs; ZeRO-1 shards the optimizer over DP, ZeRO-3 the
  // weights too (the memory model's convention).
  const double replica = n / (static_cast<double>(l.dp) * l.cp);
  const double weights_held = l.zero >= 3 ? weights / (replica * l.dp) : weights / replica;
  const double optimizer_held = l.zero >= 1 ? optimizer / (replica * l.dp) : optimizer / replica;
  c.gpu_held_bytes = weights_held + optimizer_held;
  // Parallel save spreads everything evenly; otherwise the first replica's GPUs write their
  // weights and (without ZeRO) their optimizer state, and every shard owner its optimizer shard.
  c.max_gpu_write_bytes = spec.parallel_save ? c.state_bytes / n : weights_held + optimizer_held;
  const int per_node = std::min(l.gpus_per_node, l.gpus);
  c.node_write_bytes = c.max_gpu_write_bytes * per_node;
  const double aggregate_write = c.state_bytes / storage.write_bytes_per_s;
  const double node_write = c.node_write_bytes / storage.per_node_bytes_per_s;
  c.write_limited_by_node = node_write > aggregate_write;
  c.write_s = std::max(aggregate_write, node_write);
  // Restore: every GPU reads back what it holds (replicas read the same files).
  const double read_total = c.gpu_held_bytes * n;
  c.restore_s = std::max(read_total / storage.read_bytes_per_s,
                         c.gpu_held_bytes * per_node / storage.per_node_bytes_per_s);
  if (spec.mode == CheckpointMode::sync) {
    c.blocking_s = c.write_s;
  } else {
    // Async: training pauses only while each GPU copies its state to host memory.
    c.blocking_s = spec.snapshot_bytes_per_s > 0 ? c.gpu_held_bytes / spec.snapshot_bytes_per_s : 0;
  }
  return c;
}

double young_interval(double blocking_s, double mtbf_s) {
  return std::sqrt(2.0 * blocking_s * mtbf_s);
}

double daly_interval(double blocking_s, double mtbf_s) {
  if (blocking_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = blocking_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * blocking_s * mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - blocking_s;
}

double checkpoint_interval(const CheckpointSpec& spec, const CheckpointCost& cost, double mtbf_s) {
  double tau = 0;
  if (spec.rule == IntervalRule::fixed) {
    tau = spec.interval_s;
  } else if (!std::isfinite(mtbf_s)) {
    tau = std::numeric_limits<double>::infinity();
  } else {
    // A free checkpoint (async with no snapshot cost) is bounded below by the write itself.
    const double delta = std::max(cost.blocking_s, 1e-9);
    tau = spec.rule == IntervalRule::young ? young_interval(delta, mtbf_s)
                                           : daly_interval(delta, mtbf_s);
  }
  if (spec.mode == CheckpointMode::async) tau = std::max(tau, cost.write_s);
  return tau;
}

}  // namespace fabricsim::models
