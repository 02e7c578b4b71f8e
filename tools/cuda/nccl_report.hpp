#pragma once
// The fabricsim-nccl-bench output (format "fabricsim-nccl-bench", version 1). The calibration
// importer is written against exactly these keys; README.md beside this file documents them.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/cuda/collective_ops.hpp"
#include "tools/cuda/nccl_options.hpp"

namespace fabricsim::tools::cuda {

struct NcclRow {
  CollectiveOp op = CollectiveOp::kAllReduce;
  uint64_t bytes = 0;
  uint64_t count = 0;
  NcclDtype dtype = NcclDtype::kFloat;
  bool in_place = false;
  double time_us = 0;
  double algbw_gbps = 0;  ///< GB/s, 1 GB = 1e9 bytes, as nccl-tests
  double busbw_gbps = 0;
};

/// A row with nccl-tests bandwidths: algbw = bytes / time, busbw = algbw * bus factor.
NcclRow make_nccl_row(CollectiveOp op, const CollectiveLayout& layout, NcclDtype dtype,
                      bool in_place, double time_us, int ranks);

/// NCCL_* environment variables as seen by the run; value nullopt = not set.
using EnvSnapshot = std::vector<std::pair<std::string, std::optional<std::string>>>;

/// From "KEY=VALUE" entries (like `environ`): NCCL_ALGO and NCCL_PROTO first (null when unset),
/// then every other NCCL_* variable, sorted by name.
EnvSnapshot nccl_env_snapshot(const std::vector<std::string>& environment);

struct NcclReport {
  std::string nccl_version;
  std::string cuda_driver_version;
  std::string cuda_runtime_version;
  std::string gpu_name;
  int nodes = 1;
  int gpus_per_node = 1;
  int ranks = 1;
  EnvSnapshot env;
  std::string topology;
  std::string date;
  int warmup_iters = 0;
  int iters = 0;
  std::vector<NcclRow> rows;
};

nlohmann::ordered_json nccl_report_json(const NcclReport& report);
std::string nccl_report_text(const NcclReport& report);

}  // namespace fabricsim::tools::cuda
