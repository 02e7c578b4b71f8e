#pragma once
// Checkpoints: how big the training state is (weights and optimizer state, from the model and the
// sharding plan), how long writing and restoring it takes against the storage system (aggregate
// bandwidth, and each node's link to it), what it blocks (synchronous: the whole write;
// asynchronous: the copy to host memory), and the interval that minimises the waste (Young 1974,
// Daly 2006) given the job's mean time between failures.

#include <string>

namespace fabricsim::models {

/// The storage system a job checkpoints to and reads its data from.
struct StorageSpec {
  double write_bytes_per_s = 2e12;  ///< aggregate (Meta Tectonic 2 TB/s sustained)
  double read_bytes_per_s = 2e12;
  double per_node_bytes_per_s = 40e9;  ///< each node's path to storage (DGX SuperPOD GDS target)
  bool shares_fabric = false;          ///< storage traffic rides the compute fabric's NICs
};

enum class CheckpointMode { sync, async };
enum class IntervalRule { daly, young, fixed };

struct CheckpointSpec {
  CheckpointMode mode = CheckpointMode::sync;
  IntervalRule rule = IntervalRule::daly;
  double interval_s = 0;  ///< fixed rule only
  /// Every GPU writes an equal share (Megatron dist-ckpt fully parallel save, PyTorch DCP); else
  /// one data-parallel replica writes the weights and each ZeRO shard owner its optimizer state.
  bool parallel_save = true;
  double snapshot_bytes_per_s = 0;  ///< async: GPU to host copy per GPU (PCIe); 0 = from the GPU
  double state_bytes = 0;           ///< overrides the computed size when > 0
};

/// What is saved and how it is spread over the GPUs.
struct CheckpointLayout {
  int gpus = 1, gpus_per_node = 8, tp = 1, pp = 1, dp = 1, cp = 1, zero = 0;
  double weight_bytes = 0;     ///< frozen weights (bf16)
  double optimizer_bytes = 0;  ///< fp32 master weights and two Adam moments of trainable params
};

struct CheckpointCost {
  double state_bytes = 0;          ///< one full checkpoint
  double max_gpu_write_bytes = 0;  ///< the busiest writer
  double node_write_bytes = 0;     ///< the busiest node's burst
  double gpu_held_bytes = 0;       ///< state one GPU holds and reads back on restore
  double write_s = 0;              ///< to durable storage
  double restore_s = 0;
  double blocking_s = 0;  ///< training paused per checkpoint (sync: write; async: snapshot)
  bool write_limited_by_node = false;
};

/// 12 bytes per trainable parameter (fp32 master weight, Adam m and v; the bf16 weights are a cast
/// of the master copy) and 2 per frozen one (LoRA's base): 70B parameters give 840 GB = 782 GiB,
/// the published full 70B checkpoint (PREFERSYSTEMS-CKPT).
CheckpointLayout checkpoint_layout(double parameters, double trainable_parameters, int gpus,
                                   int gpus_per_node, int tp, int pp, int dp, int cp, int zero);

CheckpointCost checkpoint_cost(const CheckpointLayout& layout, const CheckpointSpec& spec,
                               const StorageSpec& storage);

/// Young (1974): tau = sqrt(2 delta M).
double young_interval(double blocking_s, double mtbf_s);
/// Daly (2006), higher order: tau = sqrt(2 delta M) [1 + sqrt(delta/2M)/3 + (delta/2M)/9] - delta
/// for delta < 2M, else M.
double daly_interval(double blocking_s, double mtbf_s);

/// The compute time between checkpoints the spec asks for (never shorter than an asynchronous
/// write, which must finish before the next starts).
double checkpoint_interval(const CheckpointSpec& spec, const CheckpointCost& cost, double mtbf_s);

}  // namespace fabricsim::models
