#include "tools/cuda/nccl_report.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace fabricsim::tools::cuda;

namespace {

std::vector<std::string> keys_of(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items())
    keys.push_back(item.key());
  return keys;
}

}  // namespace

TEST_CASE("nccl rows use nccl-tests bandwidths", "[cuda-tools]") {
  const auto layout = collective_layout(CollectiveOp::kAllReduce, 1 << 20, 4, 8);
  const NcclRow row =
      make_nccl_row(CollectiveOp::kAllReduce, layout, NcclDtype::kFloat, false, 57.1, 8);
  CHECK(row.bytes == 1048576);
  CHECK(row.count == 262144);
  CHECK(row.algbw_gbps == Approx(1048576 / 1e9 / 57.1e-6));
  CHECK(row.busbw_gbps == Approx(row.algbw_gbps * 2 * 7 / 8));
  const NcclRow single =
      make_nccl_row(CollectiveOp::kAllReduce, layout, NcclDtype::kFloat, false, 10, 1);
  CHECK(single.busbw_gbps == 0);
  CHECK(single.algbw_gbps > 0);
}

TEST_CASE("NCCL environment: ALGO and PROTO always, then every other NCCL_ variable",
          "[cuda-tools]") {
  const EnvSnapshot env =
      nccl_env_snapshot({"PATH=/bin", "NCCL_PROTO=Simple", "NCCL_IB_HCA=mlx5", "NCCL_DEBUG=INFO",
                         "XNCCL_X=1", "NCCL_SOCKET_IFNAME=eth0=x"});
  REQUIRE(env.size() == 5);
  CHECK(env[0] == EnvSnapshot::value_type{"NCCL_ALGO", std::nullopt});
  CHECK(env[1] == EnvSnapshot::value_type{"NCCL_PROTO", "Simple"});
  CHECK(env[2].first == "NCCL_DEBUG");
  CHECK(env[3].first == "NCCL_IB_HCA");
  CHECK(env[4] == EnvSnapshot::value_type{"NCCL_SOCKET_IFNAME", "eth0=x"});
}

TEST_CASE("nccl report has exactly the documented keys, in order", "[cuda-tools]") {
  NcclReport r;
  r.nccl_version = "2.27.7";
  r.cuda_driver_version = "12080";
  r.cuda_runtime_version = "12080";
  r.gpu_name = "NVIDIA H200";
  r.nodes = 1;
  r.gpus_per_node = 8;
  r.ranks = 8;
  r.env = nccl_env_snapshot({"NCCL_ALGO=Ring"});
  r.topology = "text";
  r.date = "2026-11-30T07:00:00Z";
  r.warmup_iters = 5;
  r.iters = 20;
  const auto layout = collective_layout(CollectiveOp::kAllGather, 1 << 20, 4, 8);
  r.rows = {make_nccl_row(CollectiveOp::kAllGather, layout, NcclDtype::kFloat, true, 57.1, 8)};

  const auto parsed = nlohmann::ordered_json::parse(nccl_report_text(r));
  CHECK(keys_of(parsed) == std::vector<std::string>{"format", "version", "nccl_version",
                                                    "cuda_driver_version", "cuda_runtime_version",
                                                    "gpu_name", "nodes", "gpus_per_node", "ranks",
                                                    "env", "topology", "date", "warmup_iters",
                                                    "iters", "rows"});
  CHECK(parsed["format"] == "fabricsim-nccl-bench");
  CHECK(parsed["version"] == 1);
  CHECK(parsed["nccl_version"] == "2.27.7");
  CHECK(parsed["cuda_driver_version"] == "12080");
  CHECK(parsed["gpus_per_node"] == 8);
  CHECK(parsed["env"] ==
        nlohmann::ordered_json::parse(R"({"NCCL_ALGO": "Ring", "NCCL_PROTO": null})"));
  CHECK(parsed["topology"] == "text");
  REQUIRE(parsed["rows"].size() == 1);
  const auto& row = parsed["rows"][0];
  CHECK(keys_of(row) == std::vector<std::string>{"op", "bytes", "count", "dtype", "in_place",
                                                 "time_us", "algbw_GBps", "busbw_GBps"});
  CHECK(row["op"] == "all_gather");
  CHECK(row["bytes"] == 1048576);
  CHECK(row["count"] == 262144);
  CHECK(row["dtype"] == "float");
  CHECK(row["in_place"] == true);
  CHECK(row["time_us"].get<double>() == Approx(57.1));
  CHECK(row["algbw_GBps"].get<double>() == Approx(18.364).epsilon(1e-4));
  CHECK(row["busbw_GBps"].get<double>() == Approx(18.364 * 7 / 8).epsilon(1e-4));
}
