#include "models/checkpoint_model.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace fabricsim::models;

TEST_CASE("checkpoint state is 12 bytes per trainable and 2 per frozen parameter", "[checkpoint]") {
  // 70B parameters: 840 GB = 782 GiB, the published full 70B checkpoint (PREFERSYSTEMS-CKPT).
  const CheckpointLayout l = checkpoint_layout(70e9, 70e9, 512, 8, 8, 4, 16, 1, 1);
  const CheckpointCost c = checkpoint_cost(l, {}, {});
  CHECK(c.state_bytes / (1024.0 * 1024 * 1024) == Approx(782.3).epsilon(0.001));
  // LoRA: the frozen base is saved without optimizer state.
  const CheckpointLayout lora = checkpoint_layout(70e9, 1e8, 512, 8, 8, 4, 16, 1, 1);
  CHECK(checkpoint_cost(lora, {}, {}).state_bytes == Approx(2 * (70e9 - 1e8) + 12 * 1e8));
}

TEST_CASE("checkpoint write and restore follow the slower of storage and the node link",
          "[checkpoint]") {
  // 1B trainable + 1B frozen: 12 + 2 = 14 GB.
  const CheckpointLayout l = checkpoint_layout(2e9, 1e9, 64, 8, 1, 1, 64, 1, 1);
  StorageSpec s;
  s.write_bytes_per_s = 1e9;  // aggregate-bound: 14 s
  s.read_bytes_per_s = 2e9;
  s.per_node_bytes_per_s = 10e9;
  CheckpointCost c = checkpoint_cost(l, {}, s);
  CHECK(c.state_bytes == Approx(14e9));
  CHECK(c.max_gpu_write_bytes == Approx(14e9 / 64));
  CHECK(c.write_s == Approx(14.0));
  CHECK_FALSE(c.write_limited_by_node);
  CHECK(c.blocking_s == c.write_s);  // synchronous
  // ZeRO-1 over 64 replicas: each GPU holds all weights (2 GB) and 1/64 of the optimizer.
  CHECK(c.gpu_held_bytes == Approx(2e9 + 12e9 / 64));
  CHECK(c.restore_s == Approx(std::max(c.gpu_held_bytes * 64 / 2e9, c.gpu_held_bytes * 8 / 10e9)));
  // A slow node link: 8 GPUs x 14/64 GB over 0.1 GB/s.
  s.per_node_bytes_per_s = 0.1e9;
  c = checkpoint_cost(l, {}, s);
  CHECK(c.write_limited_by_node);
  CHECK(c.write_s == Approx(8 * 14e9 / 64 / 0.1e9));
  // Without parallel save the busiest GPU writes the weights it holds and its optimizer shard.
  CheckpointSpec serial;
  serial.parallel_save = false;
  s.per_node_bytes_per_s = 10e9;
  c = checkpoint_cost(l, serial, s);
  CHECK(c.max_gpu_write_bytes == Approx(2e9 + 12e9 / 64));
  // Asynchronous: training pauses for the copy to host memory only.
  CheckpointSpec async;
  async.mode = CheckpointMode::async;
  async.snapshot_bytes_per_s = 50e9;
  c = checkpoint_cost(l, async, s);
  CHECK(c.blocking_s == Approx(c.gpu_held_bytes / 50e9));
  CHECK(c.write_s == Approx(14.0));
}

TEST_CASE("Young and Daly intervals", "[checkpoint]") {
  // Young: sqrt(2 x 60 s x 10 h) = 1,697 s.
  CHECK(young_interval(60, 36000) == Approx(std::sqrt(2.0 * 60 * 36000)));
  // Daly: x = 60 / 72,000; sqrt(2 delta M)(1 + sqrt(x)/3 + x/9) - delta.
  const double x = 60.0 / 72000;
  CHECK(daly_interval(60, 36000) ==
        Approx(std::sqrt(2.0 * 60 * 36000) * (1 + std::sqrt(x) / 3 + x / 9) - 60));
  // Daly tends to Young minus delta when delta << M, and is M beyond delta = 2M.
  CHECK(daly_interval(1, 1e8) == Approx(young_interval(1, 1e8) - 1).epsilon(1e-3));
  CHECK(daly_interval(300, 100) == 100);
  CheckpointSpec fixed;
  fixed.rule = IntervalRule::fixed;
  fixed.interval_s = 900;
  CheckpointCost cost;
  cost.blocking_s = 10;
  cost.write_s = 10;
  CHECK(checkpoint_interval(fixed, cost, 3600) == 900);
  CheckpointSpec young;
  young.rule = IntervalRule::young;
  CHECK(checkpoint_interval(young, cost, 3600) == Approx(std::sqrt(2.0 * 10 * 3600)));
  // An asynchronous checkpoint cannot start before the previous one is written.
  CheckpointSpec async;
  async.mode = CheckpointMode::async;
  cost.blocking_s = 0;
  cost.write_s = 120;
  CHECK(checkpoint_interval(async, cost, 3600) == 120);
  CHECK(std::isinf(checkpoint_interval({}, cost, INFINITY)));
}
