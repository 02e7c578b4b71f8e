#include "tools/cuda/nccl_report.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace fabricsim::tools::cuda {
namespace {

double round3(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

}  // namespace

NcclRow make_nccl_row(CollectiveOp op, const CollectiveLayout& layout, NcclDtype dtype,
                      bool in_place, double time_us, int ranks) {
  NcclRow row;
  row.op = op;
  row.bytes = layout.bytes;
  row.count = layout.count;
  row.dtype = dtype;
  row.in_place = in_place;
  row.time_us = time_us;
  row.algbw_gbps = time_us > 0 ? static_cast<double>(layout.bytes) / 1e9 / (time_us * 1e-6) : 0;
  row.busbw_gbps = row.algbw_gbps * bus_bandwidth_factor(op, ranks);
  return row;
}

EnvSnapshot nccl_env_snapshot(const std::vector<std::string>& environment) {
  std::optional<std::string> algo;
  std::optional<std::string> proto;
  EnvSnapshot others;
  for (const std::string& entry : environment) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || entry.rfind("NCCL_", 0) != 0) continue;
    std::string name = entry.substr(0, eq);
    std::string value = entry.substr(eq + 1);
    if (name == "NCCL_ALGO") {
      algo = std::move(value);
    } else if (name == "NCCL_PROTO") {
      proto = std::move(value);
    } else {
      others.emplace_back(std::move(name), std::move(value));
    }
  }
  std::sort(others.begin(), others.end());
  EnvSnapshot out = {{"NCCL_ALGO", algo}, {"NCCL_PROTO", proto}};
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

nlohmann::ordered_json nccl_report_json(const NcclReport& report) {
  using nlohmann::ordered_json;
  ordered_json env = ordered_json::object();
  for (const auto& [name, value] : report.env) {
    env[name] = value ? ordered_json(*value) : ordered_json(nullptr);
  }
  ordered_json rows = ordered_json::array();
  for (const NcclRow& r : report.rows) {
    ordered_json row;
    row["op"] = collective_op_name(r.op);
    row["bytes"] = r.bytes;
    row["count"] = r.count;
    row["dtype"] = nccl_dtype_name(r.dtype);
    row["in_place"] = r.in_place;
    row["time_us"] = round3(r.time_us);
    row["algbw_GBps"] = round3(r.algbw_gbps);
    row["busbw_GBps"] = round3(r.busbw_gbps);
    rows.push_back(std::move(row));
  }
  ordered_json out;
  out["format"] = "fabricsim-nccl-bench";
  out["version"] = 1;
  out["nccl_version"] = report.nccl_version;
  out["cuda_driver_version"] = report.cuda_driver_version;
  out["cuda_runtime_version"] = report.cuda_runtime_version;
  out["gpu_name"] = report.gpu_name;
  out["nodes"] = report.nodes;
  out["gpus_per_node"] = report.gpus_per_node;
  out["ranks"] = report.ranks;
  out["env"] = std::move(env);
  out["topology"] = report.topology;
  out["date"] = report.date;
  out["warmup_iters"] = report.warmup_iters;
  out["iters"] = report.iters;
  out["rows"] = std::move(rows);
  return out;
}

std::string nccl_report_text(const NcclReport& report) {
  return nccl_report_json(report).dump(2) + "\n";
}

}  // namespace fabricsim::tools::cuda
