// The planner verbs end to end through run_cli: plan (and later size, compare): exit codes,
// messages for inputs no plan can meet, and JSON that feeds back into a scenario.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shared_reference.hpp"

using fabricsim::testing::CliResult;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

namespace {

/// A small search: llama2-7b cut to 8 layers on two DGX H100 servers.
std::vector<std::string> small_plan(std::vector<std::string> extra) {
  std::vector<std::string> args{"plan",
                                "--system",
                                "dgx-h100",
                                "--gpus",
                                "16",
                                "--model",
                                "llama2-7b",
                                "--set",
                                "/model/layers=8",
                                "--global-batch",
                                "32",
                                "--seq-len",
                                "4096",
                                "--max-micro-batch",
                                "2",
                                "--top",
                                "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("cli: plan prints the best plans and the rejections", "[cli][plan]") {
  const CliResult r = run_fabricsim(small_plan({}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("llama2-7b on 16 x dgx-h100"));
  CHECK_THAT(r.out, Catch::Contains(" 1  TP"));
  CHECK_THAT(r.out, Catch::Contains(" 2  TP"));
  CHECK_THAT(r.out, Catch::Contains("rejected"));
  CHECK_THAT(r.out, Catch::Contains("re-simulated at flow fidelity"));
}

TEST_CASE("cli: plan --json feeds the best plan back into run", "[cli][plan]") {
  const CliResult r = run_fabricsim(small_plan({"--json"}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["plans"].size() == 2);
  CHECK(j["evaluated"].get<long long>() > 2);
  CHECK(j["rejected"].is_object());
  const nlohmann::json& best = j["plans"][0];
  for (const char* key : {"tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "zero", "recompute",
                          "order", "tp_comm_overlap", "dp_comm_overlap"}) {
    CHECK(best["parallelism"].contains(key));
  }
  CHECK(best["step_time_s"].get<double>() <= j["plans"][1]["step_time_s"].get<double>());
  // The plan object is a scenario's parallelism: running it gives the same step.
  ScratchDir dir("plan_cli");
  const nlohmann::json scenario = {{"system", {{"preset", "dgx-h100"}, {"gpus", 16}}},
                                   {"model", {{"preset", "llama2-7b"}, {"layers", 8}}},
                                   {"parallelism", best["parallelism"]},
                                   {"training", {{"global_batch", 32}, {"seq_len", 4096}}}};
  const std::string file = dir.write("best.json", scenario.dump());
  const CliResult run = run_fabricsim({"run", file, "--json"});
  INFO(run.err);
  REQUIRE(run.code == 0);
  CHECK(nlohmann::json::parse(run.out)["step_time_s"].get<double>() ==
        Approx(best["step_time_s"].get<double>()).epsilon(1e-9));
}

TEST_CASE("cli: plan constraints no plan meets", "[cli][plan]") {
  // tp 3 does not divide 16 GPUs: nothing to look at.
  const CliResult none = run_fabricsim(small_plan({"--fix", "tp=3"}));
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("no plan of llama2-7b on 16 GPUs meets the constraints"));
  CHECK_THAT(none.err, Catch::Contains("none allowed"));
  // The full llama2-70b as 16 replicas without sharding cannot fit: the reason is counted.
  const CliResult memory = run_fabricsim({"plan", "--system", "dgx-h100", "--gpus", "16", "--model",
                                          "llama2-70b", "--global-batch", "16", "--max-tp", "1",
                                          "--max-pp", "1", "--zero-stages", "0", "--no-cp"});
  CHECK(memory.code == 2);
  CHECK_THAT(memory.err, Catch::Contains("out_of_memory"));
  // Bad constraint values are input errors naming the flag.
  const CliResult fix = run_fabricsim(small_plan({"--fix", "tq=2"}));
  CHECK(fix.code == 2);
  CHECK_THAT(fix.err, Catch::Contains("--fix"));
  const CliResult recompute = run_fabricsim(small_plan({"--recompute-modes", "some"}));
  CHECK(recompute.code == 2);
  CHECK_THAT(recompute.err, Catch::Contains("--recompute-modes"));
  const CliResult zero = run_fabricsim(small_plan({"--zero-stages", "5"}));
  CHECK(zero.code == 2);
  // The plan flags of `run` are not plan's: sizes are searched or fixed with --fix.
  const CliResult tp = run_fabricsim(small_plan({"--tp", "2"}));
  CHECK(tp.code == 2);
}

TEST_CASE("cli: plan ranks a published plan against the search", "[cli][plan]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const std::string cases = fabricsim::testing::shared_case("dev-training.json");
  const CliResult r =
      run_fabricsim({"plan", "--cases", cases, "--case", "nemo2407-pretrain-LLAMA2-7B-8",
                     "--max-micro-batch", "2", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 1);
  const nlohmann::json& c = j[0];
  CHECK(c["case"] == "nemo2407-pretrain-LLAMA2-7B-8");
  // NeMo's plan for Llama 2 7B on 8 H100: pure data parallelism, micro-batch 1.
  CHECK(c["published"]["parallelism"]["dp"] == 8);
  REQUIRE(c["published"]["feasible"] == true);
  const int rank = c["rank"];
  CHECK(rank >= 1);
  CHECK(rank <= c["fits"].get<int>());
  // The best plan is at least as fast, and the gain is the ratio of the two steps.
  const double published = c["published"]["step_time_s"];
  const double best = c["best"]["step_time_s"];
  CHECK(best <= published);
  CHECK(c["gain"].get<double>() == Approx(published / best - 1).margin(1e-12));
  CHECK((rank == 1) == (c["gain"].get<double>() == 0));

  const CliResult unknown = run_fabricsim({"plan", "--cases", cases, "--case", "no-such-case"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no training case with id \"no-such-case\""));
}

TEST_CASE("cli: size", "[cli][size]") {
  const std::vector<std::string> small = {
      "size",      "--model", "llama2-7b", "--set", "/model/layers=18", "--global-batch", "256",
      "--seq-len", "4096",    "--tokens",  "200B"};
  std::vector<std::string> args = small;
  args.insert(args.end(), {"--days", "10", "--systems", "dgx-h100,vr-nvl144", "--json"});
  const CliResult r = run_fabricsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["tokens"].get<double>() == 2e11);
  REQUIRE(j["systems"].size() == 2);
  CHECK(j["systems"][1]["system"] == "vr-nvl72");  // the alias names the preset
  for (const auto& row : j["systems"]) {
    CHECK(row["met"] == true);
    CHECK(row["days"].get<double>() <= 10);
    CHECK(row["plan"]["parallelism"].contains("tp"));
    CHECK(row["cost"]["facility_MW"].get<double>() > 0);
  }
  CHECK(j["systems"][0]["cost"]["capital_usd"].is_number());
  CHECK(j["systems"][1]["cost"]["capital_usd"].is_null());  // no published price

  args = small;
  args.insert(args.end(), {"--days", "0.001", "--systems", "dgx-h100", "--max-gpus", "32"});
  const CliResult impossible = run_fabricsim(args);
  CHECK(impossible.code == 3);
  CHECK_THAT(impossible.err, Catch::Contains("cannot meet 0.001 days"));

  const CliResult zero = run_fabricsim({"size", "--tokens", "0", "--days", "10"});
  CHECK(zero.code == 2);
  CHECK_THAT(zero.err, Catch::Contains("--tokens"));
  const CliResult unknown =
      run_fabricsim({"size", "--tokens", "1T", "--days", "10", "--systems", "dgx-h900"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown system \"dgx-h900\""));
  const CliResult neither = run_fabricsim({"size", "--tokens", "1T"});
  CHECK(neither.code == 2);
}

TEST_CASE("cli: compare", "[cli][compare]") {
  // Slower NICs slow only the data-parallel reduction across servers.
  const CliResult r = run_fabricsim({"compare", "--gpus", "16", "--backend", "analytical", "--vary",
                                     "/system/fabric/nic_bandwidth=400Gbps,100Gbps", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 3);
  const nlohmann::json& base = j["rows"][0];
  const nlohmann::json& same = j["rows"][1];  // 400 Gb/s is the preset's own NIC speed
  const nlohmann::json& slow = j["rows"][2];
  CHECK(base["step_change"].get<double>() == 0);
  CHECK(same["label"] == "/system/fabric/nic_bandwidth=400Gbps");
  CHECK(same["step_change"].get<double>() == Approx(0).margin(1e-12));
  CHECK(same["moved"].is_null());
  CHECK(slow["step_change"].get<double>() > 0);
  CHECK(slow["throughput_change"].get<double>() < 0);
  CHECK(slow["moved"] == "DP");
  CHECK(slow["moved_s"].get<double>() > 0);
  CHECK(slow["relative_efficiency"].get<double>() ==
        Approx(1 + slow["throughput_change"].get<double>()));
  // The cost per million tokens is the rental price over the throughput.
  const double tokens_per_s = base["run"]["tokens_per_s"];
  CHECK(base["usd_per_million_tokens"].get<double>() ==
        Approx(3.0 * 16 / (tokens_per_s * 3600) * 1e6));

  const CliResult text = run_fabricsim(
      {"compare", "--backend", "analytical", "--vary", "/training/global_batch=32,128"});
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("(baseline)"));
  CHECK_THAT(text.out, Catch::Contains("/training/global_batch=128"));

  CHECK(run_fabricsim({"compare"}).code == 2);
  const CliResult bad = run_fabricsim({"compare", "--vary", "training/global_batch=32"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("/json/pointer=v1,v2"));
  const CliResult unknown = run_fabricsim({"compare", "--vary", "/training/batch=32"});
  CHECK(unknown.code == 2);
}
