#include "api/goodput_run.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "tests/run_cli.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

Scenario read(const nlohmann::json& doc) {
  const sim::JsonDocument parsed(doc, "ops.json");
  return read_scenario(parsed.root());
}

/// Llama 3 405B as Meta trained it: 16,384 H100 on the RoCE cluster, TP8 PP16 DP128.
nlohmann::json llama3_405b() {
  return nlohmann::json::parse(R"({
    "system": {"preset": "meta-h100-roce", "gpus": 16384},
    "model": {"preset": "llama3-405b"},
    "parallelism": {"tp": 8, "pp": 16, "zero": 1, "balanced_pipeline": true},
    "training": {"global_batch": 2048, "seq_len": 8192},
    "simulation": {"backend": "analytical"}
  })");
}

nlohmann::json small() {
  return nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 64},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "zero": 1},
    "training": {"global_batch": 8, "seq_len": 4096},
    "simulation": {"backend": "analytical"}
  })");
}

}  // namespace

TEST_CASE("Llama 3 405B: each published statistic from the others", "[goodput][llama3]") {
  const Scenario s = read(llama3_405b());
  const GoodputReport automated = evaluate_goodput(s, 54, models::RecoveryLevel::automated, 0);
  const models::GoodputResult& g = automated.result;
  // The default rates are counted from this run: its own totals come back exactly.
  CHECK(g.unexpected_interruptions == Approx(419));
  CHECK(g.planned_interruptions == Approx(47));
  CHECK(g.mtbf_hours == Approx(3.09).epsilon(0.002));
  CHECK(16384.0 * 54 * 24 / g.unexpected_interruptions == Approx(50677).epsilon(1e-4));
  // Not an input: the effective training time (>90% published) from the interruption rate, the
  // documented automated recovery times and the checkpoint cost of 405B on Tectonic (2 TB/s).
  CHECK(g.goodput > 0.90);
  CHECK(g.goodput < 0.99);
  // Manual recovery at this failure rate could not have reached it (3 manual interventions only).
  const GoodputReport manual = evaluate_goodput(s, 54, models::RecoveryLevel::manual, 0);
  CHECK(manual.result.goodput < 0.5);
  // 405B x 12 bytes = 4.86 TB of checkpoint: 297 MB per GPU, inside Meta's 1 MB-4 GB per GPU.
  CHECK(automated.checkpoint.state_bytes == Approx(12 * models::count_parameters(s.model).total));
  CHECK(automated.checkpoint.max_gpu_write_bytes > 1e6);
  CHECK(automated.checkpoint.max_gpu_write_bytes < 4e9);
  // The GPU count from the interruptions, the days and the per-GPU-hour rates (host failures
  // are per node, eight GPUs each): recovered to within one GPU.
  const Scenario half = [&] {
    nlohmann::json d = llama3_405b();
    d["system"]["gpus"] = 8192;
    return read(d);
  }();
  const double at_half = evaluate_goodput(half, 54, models::RecoveryLevel::automated, 0)
                             .result.unexpected_interruptions;
  CHECK(at_half == Approx(419.0 / 2));
  CHECK(8192 + (419 - at_half) / (at_half / 8192) == Approx(16384));
}

TEST_CASE("ByteRobust 97% ETTR on 9,600 GPUs over 3 months is in reach of automated recovery",
          "[goodput]") {
  nlohmann::json d = llama3_405b();
  d["system"]["gpus"] = 9600;
  d["parallelism"]["pp"] = 8;
  d["model"] = {{"preset", "llama3-70b"}};
  d["training"]["global_batch"] = 1200;  // DP 150
  const GoodputReport r = evaluate_goodput(read(d), 90, models::RecoveryLevel::automated, 0);
  // Llama 3's failure rates with ByteRobust's times: within a few points of the published 97%.
  CHECK(r.result.goodput == Approx(0.97).margin(0.03));
}

TEST_CASE("storage: the feed rate limits the run only when it cannot keep up",
          "[goodput][storage]") {
  nlohmann::json d = small();
  const Scenario text = read(d);
  const GoodputReport fed = evaluate_goodput(text, 1, models::RecoveryLevel::automated, 1e6, 1);
  CHECK(fed.storage.needed_bytes_per_s == Approx(4e6));
  CHECK_FALSE(fed.storage.limits);
  CHECK(fed.limiter == "compute/fabric");
  CHECK(fed.effective_tokens_per_s == Approx(1e6 * fed.result.goodput));
  // Video-like tokens: 1 MB each from storage shared at 1 GB/s per node over 8 nodes.
  d["storage"] = {{"bytes_per_token", 1e6}, {"per_node_bandwidth", "1 GB/s"}};
  const GoodputReport starved =
      evaluate_goodput(read(d), 1, models::RecoveryLevel::automated, 1e6, 1);
  CHECK(starved.storage.capacity_bytes_per_s == Approx(8e9));
  CHECK(starved.storage.limits);
  CHECK(starved.limiter == "storage");
  CHECK(starved.effective_tokens_per_s == Approx(8000 * starved.result.goodput));
  // Checkpoint bursts over a shared fabric: 8 x 400 Gb/s per node.
  d["storage"] = {{"shares_fabric", true}, {"per_node_bandwidth", "10 GB/s"}};
  const GoodputReport shared =
      evaluate_goodput(read(d), 1, models::RecoveryLevel::automated, 1e6, 1);
  const double rate =
      shared.storage.checkpoint_node_burst_bytes / shared.storage.checkpoint_burst_s;
  CHECK(shared.storage.checkpoint_nic_share == Approx(rate / (8 * 50e9)));
}

TEST_CASE("async checkpoint bursts over a shared fabric slow the simulated step",
          "[goodput][storage]") {
  nlohmann::json d = small();  // 8 nodes, TP8 inside each, DP across the fabric
  d["checkpoint"] = {{"mode", "async"}};
  d["storage"] = {
      {"shares_fabric", true}, {"per_node_bandwidth", "200 GB/s"}, {"write_bandwidth", "100 TB/s"}};
  const GoodputReport shared = run_goodput(read(d), 10, std::nullopt);
  CHECK(shared.storage.checkpoint_nic_share == Approx(0.5));  // 200 of 8 x 50 GB/s
  CHECK(shared.storage.step_slowdown_while_writing > 1);
  CHECK(shared.result.lost.interference > 0);
  CHECK(shared.result.useful_hours + shared.result.lost.total() == Approx(240));
  d["storage"]["shares_fabric"] = false;  // its own network: no interference
  const GoodputReport own = run_goodput(read(d), 10, std::nullopt);
  CHECK(own.storage.step_slowdown_while_writing == 1);
  CHECK(own.result.lost.interference == 0);
}

TEST_CASE("a plan that does not fit still gets its goodput, and the report says why no throughput",
          "[goodput][bad-input]") {
  nlohmann::json d = small();
  d["model"] = {{"preset", "llama3-405b"}};  // 405B at TP8: 100 GB of bf16 weights per GPU
  const GoodputReport r = run_goodput(read(d), 10, std::nullopt);
  CHECK_FALSE(r.simulated);
  CHECK_THAT(r.not_simulated, Catch::Contains("GiB HBM"));
  CHECK(r.result.goodput > 0);
  CHECK_THAT(goodput_to_text(r), Catch::Contains("throughput          not simulated: "));
  const nlohmann::json j = goodput_to_json(r);
  CHECK(j["not_simulated"] == r.not_simulated);
  CHECK_FALSE(j.contains("tokens_per_s"));
  // A plan that runs has no such line.
  const GoodputReport ok = run_goodput(read(small()), 10, std::nullopt);
  CHECK(ok.simulated);
  CHECK(ok.not_simulated.empty());
  CHECK_FALSE(goodput_to_json(ok).contains("not_simulated"));
}

TEST_CASE("scenario reliability, checkpoint and storage keys", "[goodput][scenario]") {
  nlohmann::json d = small();
  d["reliability"] = {{"recovery", "manual"},
                      {"detection", "1 min"},
                      {"isolation", "0 s"},
                      {"spare_nodes", 0},
                      {"repair", "10 h"},
                      {"planned", "0/job-h"},
                      {"failures",
                       {{"gpu", {{"rate", "1e-4/GPU-h"}}},
                        {"software", {{"rate", "0/GPU-h"}}},
                        {"hbm", {{"rate", "0/GPU-h"}}},
                        {"nic", {{"rate", "0/GPU-h"}}},
                        {"switch", {{"rate", "0/GPU-h"}}},
                        {"host", {{"rate", "0/node-h"}}}}}};
  d["checkpoint"] = {{"mode", "async"}, {"interval", "30 min"}, {"size", "100 GB"}};
  const Scenario s = read(d);
  CHECK(s.operations.recovery == models::RecoveryLevel::manual);
  const GoodputReport r = evaluate_goodput(s, 10, s.operations.recovery, 0);
  CHECK(r.recovery.detection_s == 60);
  CHECK(r.recovery.isolation_s == 0);
  CHECK(r.recovery.spare_nodes == 0);
  CHECK(r.result.unexpected_interruptions == Approx(1e-4 * 64 * 240));
  CHECK(r.result.interval_s == 1800);
  CHECK(r.checkpoint.state_bytes == Approx(100e9));
  CHECK(r.result.planned_interruptions == 0);
  // Default spares: 5% of the nodes, rounded up.
  CHECK(evaluate_goodput(read(small()), 1, models::RecoveryLevel::automated, 0)
            .recovery.spare_nodes == 1);
}

TEST_CASE("scenario operations keys are read strictly", "[goodput][scenario][bad-input]") {
  auto fails = [](const char* section, nlohmann::json value, const std::string& where) {
    nlohmann::json d = small();
    d[section] = std::move(value);
    CAPTURE(section, where);
    try {
      read(d);
      FAIL("accepted");
    } catch (const sim::InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains(where));
    }
  };
  fails("reliability", {{"recovery", "magic"}}, "/reliability/recovery");
  fails("reliability", {{"detect", "1 min"}}, "detect");
  fails("reliability", {{"failures", {{"gpu", {{"rate", "3 per year"}}}}}},
        "/reliability/failures/gpu/rate");
  fails("reliability", {{"failures", {{"cosmic", {{"rate", "1/GPU-h"}}}}}}, "cosmic");
  fails("reliability", {{"planned", "1/GPU-h"}}, "/reliability/planned");
  fails("checkpoint", {{"interval", "often"}}, "/checkpoint/interval");
  fails("checkpoint", {{"mode", "lazy"}}, "/checkpoint/mode");
  fails("storage", {{"read_bandwidth", "fast"}}, "/storage/read_bandwidth");
  fails("storage", {{"read_amplification", 0.5}}, "/storage/read_amplification");
}

TEST_CASE("cli: goodput prints MTBF, lost hours by cause and goodput", "[cli][goodput]") {
  using fabricsim::testing::run_fabricsim;
  const auto r = run_fabricsim({"goodput", "--backend", "analytical", "--days", "30", "--json"});
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"mtbf_hours", "unexpected_interruptions", "goodput", "lost_hours",
                          "effective_tokens_per_s"}) {
    CAPTURE(key);
    CHECK(j.contains(key));
  }
  CHECK(j["goodput"].get<double>() > 0.5);
  CHECK(j["goodput"].get<double>() < 1.0);
  CHECK(j["lost_hours"]["rework"].get<double>() > 0);
  const auto manual = run_fabricsim({"goodput", "--backend", "analytical", "--recovery", "manual"});
  REQUIRE(manual.code == 0);
  CHECK_THAT(manual.out, Catch::Contains("manual recovery"));
  const auto table = run_fabricsim({"goodput", "--scale-gpus", "8,64,512", "--json"});
  REQUIRE(table.code == 0);
  const nlohmann::json rows = nlohmann::json::parse(table.out)["rows"];
  REQUIRE(rows.size() == 3);
  CHECK(rows[2]["goodput_automated"].get<double>() < rows[0]["goodput_automated"].get<double>());
  CHECK(rows[2]["goodput_manual"].get<double>() < rows[2]["goodput_automated"].get<double>());
  // run --days adds the same report as a "goodput" section.
  const auto run = run_fabricsim({"run", "--backend", "analytical", "--days", "30", "--json"});
  REQUIRE(run.code == 0);
  const nlohmann::json rj = nlohmann::json::parse(run.out);
  CHECK(rj["goodput"]["goodput"].get<double>() == Approx(j["goodput"].get<double>()));
  CHECK_FALSE(nlohmann::json::parse(run_fabricsim({"run", "--backend", "analytical", "--json"}).out)
                  .contains("goodput"));
  CHECK(run_fabricsim({"goodput", "--recovery", "hopeful"}).code == 2);
  CHECK(run_fabricsim({"goodput", "--days", "-1"}).code == 2);
  CHECK(run_fabricsim({"goodput", "--scale-gpus", "0"}).code == 2);
}
