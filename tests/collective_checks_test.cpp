// Public collective measurements that are not cases of ../shared/reference/cases
// (docs/validation.md lists them), checked through the CLI with the built-in profiles.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/run_cli.hpp"
#include "tests/shared_reference.hpp"

using fabricsim::testing::run_fabricsim;

namespace {

nlohmann::json collective_rows(const std::vector<std::string>& args) {
  std::vector<std::string> all{"collective", "--json"};
  all.insert(all.end(), args.begin(), args.end());
  const auto r = run_fabricsim(all);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out).at("rows");
}

}  // namespace

TEST_CASE("one GB200 NVL72 rack: NVLS reaches its bandwidth only at GiB sizes", "[collective]") {
  // CoreWeave nccl-tests PR #43 (2025-02-20), all_reduce_perf on a full NVL72 rack (72 GPUs),
  // out-of-place busbw: 512 MiB 586, 1 GiB 681, 2 GiB 758, 4 GiB 839, 8 GiB 835 GB/s. NCCL's
  // pipeline of 24 channels x 72 heads x 32-64 KiB chunks is 57-113 MB deep, so half-GiB
  // messages run only a handful of loops. Before that was modelled the prediction was 863 GB/s
  // at 512 MiB (+47%); with the 2026-12-03 refit of the built-in profiles it is 776 (+32%), and
  // 835 at 2 GiB (+10.2%).
  const std::vector<std::pair<double, double>> measured{{536870912, 586.06},
                                                        {1073741824, 681.17},
                                                        {2147483648, 757.78},
                                                        {4294967296, 839.16},
                                                        {8589934592, 834.57}};
  const nlohmann::json rows =
      collective_rows({"--system", "gb200-nvl72", "--gpus", "72", "-b", "512M", "-e", "8G"});
  REQUIRE(rows.size() == measured.size());
  double previous = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double size = measured[i].first;
    const double busbw = rows[i].at("busbw_GBps").get<double>();
    INFO(size << " predicted " << busbw << " measured " << measured[i].second);
    CHECK(rows[i].at("size_bytes").get<double>() == size);
    CHECK(rows[i].at("algorithm") == "nvls");
    const double tolerance = size < 1e9 ? 0.35 : size < 4e9 ? 0.15 : 0.10;
    CHECK(std::abs(busbw / measured[i].second - 1) < tolerance);
    CHECK(busbw > previous);
    previous = busbw;
  }
}

TEST_CASE("GB200 NVL72 across racks: slower with every rack, within bounds of CoreWeave's runs",
          "[collective]") {
  // CoreWeave nccl-tests README "Expected Performance" (NCCL 2.26.2), all_reduce_perf busbw,
  // 512 MiB .. 16 GiB: 2 racks 494, 596, 680, 743, 793, 810; 20 racks 151, 219, 287, 346, 381,
  // 406 GB/s. The model now follows the 2-rack curve within 20% (NVLS tree filled one loop per
  // tree level, up and down); across 20 racks it still overpredicts up to 2.1x at large sizes
  // (its NVLS tree may use every GPU's NIC; CoreWeave's run sees ~434 GB/s per rack between
  // racks), where it used to predict 770-884 GB/s up to 8 GiB (5.1x at 512 MiB).
  const std::vector<double> sizes{536870912,  1073741824, 2147483648,
                                  4294967296, 8589934592, 17179869184};
  const std::vector<double> two{493.94, 596.10, 680.30, 743.09, 793.06, 810.41};
  const std::vector<double> twenty{150.95, 218.85, 286.52, 346.38, 381.48, 405.74};
  const nlohmann::json r2 =
      collective_rows({"--system", "gb200-nvl72", "--gpus", "144", "-b", "512M", "-e", "16G"});
  const nlohmann::json r20 =
      collective_rows({"--system", "gb200-nvl72", "--gpus", "1440", "-b", "512M", "-e", "16G"});
  REQUIRE(r2.size() == sizes.size());
  REQUIRE(r20.size() == sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double p2 = r2[i].at("busbw_GBps").get<double>();
    const double p20 = r20[i].at("busbw_GBps").get<double>();
    INFO(sizes[i] << ": 2 racks " << p2 << " vs " << two[i] << ", 20 racks " << p20 << " vs "
                  << twenty[i]);
    CHECK(std::abs(p2 / two[i] - 1) < 0.20);
    CHECK(p20 / twenty[i] > 1.0);
    CHECK(p20 / twenty[i] < 2.1);
    CHECK(p20 < p2);
  }
}

TEST_CASE("IB SHARP: off by default, on by switch, NVLS + SHARP at NVLink SHARP speed",
          "[collective]") {
  // NVIDIA GTC 2025 slide (dev case nvidia-gtc25-dgx-h100-sharp-32 / -h100-32): 32 DGX H100
  // GPUs reach 370 GB/s without SHARP and 480 GB/s with it. With CollNet NCCL runs NVLS across
  // nodes, each GPU's 1/8 slice through the switches' aggregation trees. The prediction with
  // SHARP is 513 GB/s (+6.9%) since the 2026-12-03 refit raised dgx-h100's NVLS efficiency
  // (0.82 -> 0.87, fitted to the single-node NVLS curves, now 3% low instead of 8%).
  const auto off =
      collective_rows({"--system", "dgx-h100", "--gpus", "32", "-b", "8G", "-e", "8G"});
  const auto on = collective_rows(
      {"--system", "dgx-h100", "--gpus", "32", "-b", "8G", "-e", "8G", "--collnet"});
  CHECK(off[0].at("algorithm") == "nvls_tree");
  CHECK(std::abs(off[0].at("busbw_GBps").get<double>() / 370 - 1) < 0.05);
  CHECK(on[0].at("algorithm") == "nvls");
  CHECK(std::abs(on[0].at("busbw_GBps").get<double>() / 480 - 1) < 0.08);
  // A training step may ask for it where the switches have it, and only there.
  const auto ok = run_fabricsim({"run", "--system", "dgx-h100", "--gpus", "64", "--collnet"});
  CHECK(ok.code == 0);
  const auto bad =
      run_fabricsim({"run", "--system", "meta-h100-roce", "--gpus", "64", "--collnet"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("/simulation/collnet") != std::string::npos);
}

TEST_CASE("issue 8 bars on the dev collectives: every case runs, median per case <= 8%",
          "[collective]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const auto r = run_fabricsim(
      {"validate", "--cases", fabricsim::testing::shared_case("dev-collectives.json"), "--json"});
  REQUIRE(r.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("skipped").empty());
  std::map<std::string, std::vector<double>> per_case;
  int deepep = 0;
  for (const nlohmann::json& row : doc.at("rows")) {
    per_case[row.at("id").get<std::string>()].push_back(std::abs(row.at("error").get<double>()));
    if (row.at("metric") == "bottleneck_bw_GBps" ||
        row.at("id").get<std::string>().rfind("deepep", 0) == 0) {
      ++deepep;
    }
  }
  CHECK(per_case.size() == 54);
  CHECK(deepep == 20);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  std::vector<double> medians;
  for (const auto& [id, errors] : per_case)
    medians.push_back(median(errors));
  CHECK(median(medians) <= 0.08);
}
