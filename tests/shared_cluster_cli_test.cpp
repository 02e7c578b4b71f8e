// `fabricsim run jobs.json`: several jobs placed on one cluster and simulated together.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/source_file.hpp"

using fabricsim::testing::CliResult;
using fabricsim::testing::json_of;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

namespace {

const std::string kExample = fabricsim::testing::source_file("docs/examples/shared-cluster.json");

/// Two identical Llama 3 8B jobs of 16 GPUs (TP8 DP2) on 32 GPUs of DGX H100 whose leaf groups
/// are two servers with one uplink per leaf (2:1): packed, each job has a leaf group to itself;
/// spread, each job's two servers sit in different leaf groups and their all-reduces share the
/// uplinks.
nlohmann::json two_jobs() {
  return nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 32,
               "fabric": {"leaf_down_ports": 2, "leaf_up_ports": 1}},
    "simulation": {"backend": "flow", "steps": 2},
    "placement": "packed",
    "jobs": [
      {"name": "a", "gpus": 16, "model": {"preset": "llama3-8b"},
       "parallelism": {"tp": 8, "dp_comm_overlap": false},
       "training": {"seq_len": 2048, "global_batch": 8}},
      {"name": "b", "gpus": 16, "model": {"preset": "llama3-8b"},
       "parallelism": {"tp": 8, "dp_comm_overlap": false},
       "training": {"seq_len": 2048, "global_batch": 8}}
    ]})");
}

/// Runs `doc` and returns the failure's stderr (exit code 2 required).
std::string input_error(const nlohmann::json& doc, std::vector<std::string> extra = {}) {
  const ScratchDir dir("shared-cluster-bad");
  std::vector<std::string> args{"run", dir.write("jobs.json", doc.dump())};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = run_fabricsim(args);
  INFO(r.out << r.err);
  CHECK(r.code == 2);
  return r.err;
}

}  // namespace

TEST_CASE("cli: jobs packed on their own leaf groups run as alone", "[cli][shared]") {
  const ScratchDir dir("shared-cluster");
  const std::string file = dir.write("jobs.json", two_jobs().dump());
  const nlohmann::json j = json_of({"run", file, "--json"});
  CHECK(j["placement"] == "packed");
  REQUIRE(j["jobs"].size() == 2);
  for (const auto& job : j["jobs"]) {
    CHECK(job["leaf_groups"] == 1);
    CHECK(job["together"]["step_time_s"] == job["alone"]["step_time_s"]);
    CHECK(job["slowdown"] == 1.0);
  }
  CHECK(j["busiest_shared_links"].empty());
  CHECK(j["tokens_per_s_together"] == j["tokens_per_s_alone"]);
  CHECK(j["base"] == file);
}

TEST_CASE("cli: spread jobs share uplinks and slow each other", "[cli][shared]") {
  const ScratchDir dir("shared-cluster");
  const std::string file = dir.write("jobs.json", two_jobs().dump());
  const nlohmann::json j = json_of({"run", file, "--placement", "spread", "--json"});
  CHECK(j["placement"] == "spread");
  for (const auto& job : j["jobs"]) {
    CHECK(job["leaf_groups"] == 2);
    CHECK(job["slowdown"].get<double>() > 1.0);
    CHECK(job["slowdown"].get<double>() < 2.0);
  }
  REQUIRE_FALSE(j["busiest_shared_links"].empty());
  CHECK(j["busiest_shared_links"][0]["jobs"] == nlohmann::json::array({"a", "b"}));
  CHECK(j["tokens_per_s_together"].get<double>() < j["tokens_per_s_alone"].get<double>());

  // The comparison has one row per policy, each the policy's own report.
  const nlohmann::json c = json_of({"run", file, "--compare-placements", "--json"});
  REQUIRE(c["comparison"].size() == 3);
  CHECK(c["comparison"][0]["placement"] == "packed");
  CHECK(c["comparison"][0]["max_slowdown"] == 1.0);
  CHECK(c["comparison"][1]["placement"] == "spread");
  CHECK(c["comparison"][1]["max_slowdown"] == j["max_slowdown"]);
  CHECK(c["placements"][1]["jobs"] == j["jobs"]);
}

TEST_CASE("cli: the shared-cluster example runs and compares placements", "[cli][shared]") {
  const CliResult r = run_fabricsim({"run", kExample, "--compare-placements"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("placement       placed mean slowdown"));
  CHECK_THAT(r.out, Catch::Contains("busiest shared links"));
}

TEST_CASE("cli: a job that does not fit is reported, not simulated", "[cli][shared]") {
  nlohmann::json doc = two_jobs();
  doc["jobs"][1]["gpus"] = 24;  // TP8 DP3 on 24 GPUs: 16 + 24 > 32
  doc["jobs"][1]["training"]["global_batch"] = 6;
  const ScratchDir dir("shared-cluster");
  const CliResult r = run_fabricsim({"run", dir.write("jobs.json", doc.dump()), "--json"});
  INFO(r.err);
  CHECK(r.code == 3);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["jobs"][1]["placed"] == false);
  CHECK_THAT(j["jobs"][1]["reason"].get<std::string>(), Catch::Contains("24"));
  CHECK(j["jobs"][0]["slowdown"] == 1.0);
  CHECK(j["allocation"]["unplaced_for_capacity"] == 1);
}

TEST_CASE("cli: bad jobs files name the job and the key", "[cli][shared][bad-input]") {
  nlohmann::json doc = two_jobs();
  doc["jobs"][1]["simulation"] = {{"backend", "flow"}};
  CHECK_THAT(input_error(doc), Catch::Contains("/jobs/1") && Catch::Contains("simulation"));

  doc = two_jobs();
  doc["jobs"][0]["gpus"] = 64;
  CHECK_THAT(input_error(doc),
             Catch::Contains("/jobs/0/gpus") && Catch::Contains("at most the cluster's 32 GPUs"));

  doc = two_jobs();
  doc["jobs"][1]["name"] = "a";
  CHECK_THAT(input_error(doc), Catch::Contains("/jobs/1") && Catch::Contains("no other job"));

  doc = two_jobs();
  doc["jobs"][0]["parallelism"]["tp"] = 16;
  doc["jobs"][0]["parallelism"]["dp"] = 1;
  CHECK_THAT(input_error(doc), Catch::Contains("/jobs/0/parallelism/tp") &&
                                   Catch::Contains("divides the 8 GPUs of a scale-up domain"));

  doc = two_jobs();
  doc["jobs"][0]["parallelism"]["pp"] = 3;
  CHECK_THAT(input_error(doc), Catch::Contains("/jobs/0/parallelism"));

  doc = two_jobs();
  doc["placement"] = "random";
  CHECK_THAT(input_error(doc), Catch::Contains("/placement") && Catch::Contains("topology-aware"));

  doc = two_jobs();
  doc["jobs"] = nlohmann::json::array();
  CHECK_THAT(input_error(doc), Catch::Contains("/jobs") && Catch::Contains("at least one job"));

  doc = two_jobs();
  doc["simulation"]["ignore_memory"] = true;
  CHECK_THAT(input_error(doc), Catch::Contains("/simulation/ignore_memory"));

  doc = two_jobs();
  doc["simulation"]["backend"] = "fast";
  CHECK_THAT(input_error(doc), Catch::Contains("/simulation/backend"));

  doc = two_jobs();
  doc["simulation"]["steps"] = 0;
  CHECK_THAT(input_error(doc), Catch::Contains("/simulation/steps"));

  CHECK_THAT(input_error(two_jobs(), {"--placement", "nearest"}),
             Catch::Contains("--placement") && Catch::Contains("packed"));
  CHECK_THAT(input_error(two_jobs(), {"--days", "3"}), Catch::Contains("--days"));

  const CliResult r = run_fabricsim({"run", "--placement", "packed"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("a jobs file"));
}
