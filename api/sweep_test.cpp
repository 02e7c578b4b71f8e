#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "api/sweep_runner.hpp"
#include "api/sweep_spec.hpp"
#include "sim/input_error.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// llama2-7b cut to 4 layers on DGX H100, analytical: cheap points.
nlohmann::json base() {
  return nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 16},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "micro_batch": 1},
    "training": {"global_batch": 16, "seq_len": 4096},
    "simulation": {"backend": "analytical"}
  })");
}

SweepSpec spec_of(nlohmann::json axes, const std::string& combine = "product") {
  nlohmann::json j = {{"base", base()}, {"axes", std::move(axes)}, {"combine", combine}};
  return read_sweep_spec(sim::JsonDocument(std::move(j), "spec.json").root());
}

/// The InputError reading `j` throws.
sim::InputError spec_error(const nlohmann::json& j) {
  try {
    read_sweep_spec(sim::JsonDocument(j, "spec.json").root());
  } catch (const sim::InputError& e) {
    return e;
  }
  FAIL("the spec was accepted: " << j.dump());
  throw;
}

std::map<int64_t, std::string> run_all(const SweepSpec& spec, int threads) {
  std::vector<int64_t> all(static_cast<size_t>(sweep_point_count(spec)));
  for (size_t k = 0; k < all.size(); ++k)
    all[k] = static_cast<int64_t>(k);
  std::map<int64_t, std::string> rows;
  run_sweep(spec, all, threads, [&](const SweepPoint& p, const nlohmann::json& row) {
    CHECK(rows.emplace(p.index, row.dump()).second);
  });
  return rows;
}

}  // namespace

TEST_CASE("sweep spec: product order, last axis fastest, ids stable", "[sweep]") {
  const SweepSpec s = spec_of({{"/system/gpus", {8, 16}}, {"/training/global_batch", {8, 16, 32}}});
  REQUIRE(sweep_point_count(s) == 6);
  // Axes are in pointer order: /system/gpus before /training/global_batch.
  const SweepPoint p4 = sweep_point(s, 4);
  CHECK(p4.assignments[0].second == 16);
  CHECK(p4.assignments[1].second == 16);
  CHECK(p4.id.substr(0, 7) == "000004-");
  CHECK(p4.id.size() == 15);
  // The id depends on the point, not on the run.
  CHECK(sweep_point(s, 4).id == p4.id);
  CHECK(sweep_point(s, 3).id.substr(7) != p4.id.substr(7));
  const nlohmann::json doc = sweep_point_document(s, p4);
  CHECK(doc["system"]["gpus"] == 16);
  CHECK(doc["training"]["global_batch"] == 16);
  CHECK(doc["model"]["layers"] == 4);  // the rest of the base is kept
}

TEST_CASE("sweep spec: zip pairs the lists element by element", "[sweep]") {
  const SweepSpec s =
      spec_of({{"/system/gpus", {8, 16, 32}}, {"/training/global_batch", {8, 16, 32}}}, "zip");
  REQUIRE(sweep_point_count(s) == 3);
  for (int64_t k = 0; k < 3; ++k) {
    const SweepPoint p = sweep_point(s, k);
    CHECK(p.assignments[0].second == p.assignments[1].second);
  }
}

TEST_CASE("sweep spec: bad specs name the file and the pointer", "[sweep][bad-input]") {
  const nlohmann::json gpus = {{"/system/gpus", {8, 16}}};
  SECTION("unknown key") {
    const auto e = spec_error({{"base", base()}, {"axes", gpus}, {"combin", "zip"}});
    CHECK(e.where() == "spec.json");
    CHECK(e.path() == "/combin");
  }
  SECTION("no axes") {
    CHECK(spec_error({{"base", base()}, {"axes", nlohmann::json::object()}}).path() == "/axes");
  }
  SECTION("an empty list of values") {
    const auto e =
        spec_error({{"base", base()}, {"axes", {{"/system/gpus", nlohmann::json::array()}}}});
    CHECK(e.path() == "/axes/~1system~1gpus");
  }
  SECTION("zip lists of unequal length") {
    const auto e =
        spec_error({{"base", base()},
                    {"combine", "zip"},
                    {"axes", {{"/system/gpus", {8, 16}}, {"/training/seq_len", {1024}}}}});
    CHECK(e.path() == "/axes/~1training~1seq_len");
    CHECK_THAT(e.message(), Catch::Contains("one length"));
  }
  SECTION("a field the scenario does not have") {
    const auto e = spec_error({{"base", base()}, {"axes", {{"/system/gpuz", {8}}}}});
    CHECK(e.where() == "spec.json");
    CHECK(e.path() == "/axes/~1system~1gpuz");
    CHECK_THAT(e.message(), Catch::Contains("unknown key 'gpuz'"));
  }
  SECTION("a section the scenario does not have") {
    const auto e = spec_error({{"base", base()}, {"axes", {{"/sytem/gpus", {8}}}}});
    CHECK(e.path() == "/axes/~1sytem~1gpus");
  }
  SECTION("a value of the wrong type names its element") {
    const auto e = spec_error({{"base", base()}, {"axes", {{"/system/gpus", {8, "many"}}}}});
    CHECK(e.path() == "/axes/~1system~1gpus/1");
    CHECK_THAT(e.message(), Catch::Contains("/system/gpus"));
  }
  SECTION("a pointer through a scalar") {
    const auto e = spec_error({{"base", base()}, {"axes", {{"/system/gpus/x", {8}}}}});
    CHECK(e.path() == "/axes/~1system~1gpus~1x");
  }
  SECTION("not a pointer") {
    CHECK(spec_error({{"base", base()}, {"axes", {{"gpus", {8}}}}}).path() == "/axes/gpus");
  }
  SECTION("overlapping axes") {
    const auto e = spec_error(
        {{"base", base()}, {"axes", {{"/system", {base()["system"]}}, {"/system/gpus", {8}}}}});
    CHECK_THAT(e.message(), Catch::Contains("overlaps"));
  }
  SECTION("a bad fidelity") {
    CHECK(spec_error({{"base", base()}, {"axes", gpus}, {"fidelity", "exact"}}).path() ==
          "/fidelity");
  }
}

TEST_CASE("sweep: infeasible points are rows with their reason", "[sweep]") {
  // 24 GPUs with tp 8: dp 3 does not divide a batch of 16; 8 GPUs runs.
  const SweepSpec s = spec_of({{"/system/gpus", {8, 24}}});
  const std::map<int64_t, std::string> rows = run_all(s, 1);
  REQUIRE(rows.size() == 2);
  const nlohmann::json ok = nlohmann::json::parse(rows.at(0));
  const nlohmann::json bad = nlohmann::json::parse(rows.at(1));
  CHECK(ok["feasible"] == true);
  CHECK(ok["metrics"]["step_time_s"].get<double>() > 0);
  CHECK(bad["feasible"] == false);
  CHECK(bad["cause"] == "scenario");
  CHECK(bad["field"] == "/training/global_batch");
  CHECK_THAT(bad["reason"].get<std::string>(), Catch::Contains("does not divide"));
  CHECK(bad.count("metrics") == 0);
}

TEST_CASE("sweep: rows are identical on 1 and 3 threads", "[sweep]") {
  const SweepSpec s = spec_of({{"/system/gpus", {8, 16, 32}},
                               {"/system/fabric/nic_bandwidth", {"200 Gbps", "400 Gbps"}},
                               {"/simulation/backend", {"analytical", "flow"}}});
  const auto one = run_all(s, 1);
  const auto three = run_all(s, 3);
  REQUIRE(one.size() == 12);
  CHECK(one == three);
  // The axes matter: a slower NIC never makes a multi-node step faster.
  auto step = [&](int64_t k) {
    return nlohmann::json::parse(one.at(k))["metrics"]["step_time_s"].get<double>();
  };
  // Index = backend x 6 + nic x 3 + gpus (axes in pointer order): 16 GPUs, analytical.
  CHECK(step(0 * 6 + 0 * 3 + 1) >= step(0 * 6 + 1 * 3 + 1));
}

TEST_CASE("sweep: csv rows follow the header", "[sweep]") {
  const SweepSpec s = spec_of({{"/system/gpus", {8, 24}}});
  const auto rows = run_all(s, 1);
  const std::string header = sweep_csv_header(s);
  const auto columns = std::count(header.begin(), header.end(), ',');
  for (const auto& [k, row] : rows) {
    const std::string line = sweep_csv_line(s, nlohmann::json::parse(row));
    CHECK(std::count(line.begin(), line.end(), ',') == columns);  // no reason holds a comma
    CHECK(line.substr(0, 15) == sweep_point(s, k).id);
  }
}
