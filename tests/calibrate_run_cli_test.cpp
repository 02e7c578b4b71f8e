// `fabricsim calibrate run` and `fabricsim validate --anchor` end to end.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "calibration/profile.hpp"
#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shared_reference.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using namespace fabricsim::testing;

namespace {

/// llama2-7b cut to 4 layers on one DGX H100, TP8.
constexpr const char* kScenario = R"({
  "system": {"preset": "dgx-h100", "gpus": 8},
  "model": {"preset": "llama2-7b", "layers": 4},
  "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "zero": 1},
  "training": {"global_batch": 8, "seq_len": 4096},
  "simulation": {"backend": "analytical"}
})";

/// A dev training case by id, from the shared case file.
nlohmann::json dev_case(const std::string& id) {
  std::ifstream in(shared_case("dev-training.json"));
  const nlohmann::json all = nlohmann::json::parse(in);
  for (const auto& x : all) {
    if (x["id"] == id) return x;
  }
  FAIL("no dev case " << id);
  return {};
}

/// `validate --json` (analytical) of one case written to a scratch case file.
nlohmann::json validate_one(const nlohmann::json& c, const std::string& scratch) {
  const ScratchDir dir(scratch);
  const std::string file = dir.file("cases.json");
  std::ofstream(file) << nlohmann::json::array({c}).dump();
  const CliResult r = run_fabricsim(
      {"validate", "--cases", file, "--set", "/simulation/backend=analytical", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("cli: calibrate run writes a profile that reproduces the run", "[cli][calibrate]") {
  const ScratchDir dir("cli-calibrate-run");
  const std::string scenario = dir.file("run.json");
  std::ofstream(scenario) << kScenario;
  const CliResult zero = run_fabricsim({"run", scenario, "--json"});
  REQUIRE(zero.code == 0);
  const double zero_shot = nlohmann::json::parse(zero.out)["tokens_per_s_per_gpu"];
  const std::string profile = dir.file("anchored.json");
  const double measured = 0.8 * zero_shot;
  const CliResult fit =
      run_fabricsim({"calibrate", "run", scenario, "--measured",
                     "tokens_per_s_per_gpu=" + std::to_string(measured), "-o", profile});
  INFO(fit.err);
  REQUIRE(fit.code == 0);
  CHECK_THAT(fit.out, Catch::Contains("sustained efficiency 0.7"));
  // 25% optimistic zero-shot is beyond the model's validated spread: the output and the
  // profile's provenance say so; 10% is within it.
  CHECK_THAT(fit.out, Catch::Contains("+25.0% off this run, beyond its validated spread"));
  const CliResult near = run_fabricsim({"calibrate", "run", scenario, "--measured",
                                        "tokens_per_s_per_gpu=" + std::to_string(zero_shot / 1.1),
                                        "-o", dir.file("near.json")});
  REQUIRE(near.code == 0);
  CHECK_THAT(near.out, !Catch::Contains("validated spread"));
  const calibration::CalibrationProfile p = calibration::load_profile(profile);
  CHECK(p.compute.sustained_efficiency < 0.8);
  CHECK_THAT(p.compute.sustained_source, Catch::Contains(scenario));
  CHECK(p.provenance.back().format == "training_run");
  CHECK_THAT(p.provenance.back().notes, Catch::Contains("beyond the model's validated spread"));
  const CliResult again = run_fabricsim({"run", scenario, "--json", "--calibration", profile});
  REQUIRE(again.code == 0);
  const nlohmann::json j = nlohmann::json::parse(again.out);
  CHECK(j["tokens_per_s_per_gpu"].get<double>() == Approx(measured).epsilon(1e-3));
  CHECK_THAT(j["calibration"].dump(), Catch::Contains("sustained efficiency"));
}

TEST_CASE("cli: calibrate run rejects bad measurements", "[cli][calibrate][bad-input]") {
  const ScratchDir dir("cli-calibrate-run-bad");
  const std::string out = dir.file("p.json");
  const std::string scenario = dir.file("run.json");
  std::ofstream(scenario) << kScenario;
  for (const std::string bad : {"tokens=5", "step_time_s", "step_time_s=", "step_time_s=-1",
                                "step_time_s=3 s", "mfu=1e400", "step_time_s=1e-12"}) {
    INFO(bad);
    const CliResult r = run_fabricsim({"calibrate", "run", scenario, "--measured", bad, "-o", out});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--measured"));
  }
}

TEST_CASE("cli: validate --anchor fits one case per group and never scores it",
          "[cli][calibrate][validate]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const std::string cases = shared_case("dev-training.json");
  const CliResult r =
      run_fabricsim({"validate", "--cases", cases, "--only", "nemo2407-pretrain", "--set",
                     "/simulation/backend=analytical", "--anchor", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["anchors"].size() == 1);  // one source, system, framework version and precision
  const nlohmann::json& a = j["anchors"][0];
  CHECK(a["id"] == "nemo2407-pretrain-LLAMA2-7B-8");
  std::set<std::string> scored;
  for (const auto& row : j["rows"])
    scored.insert(row["id"].get<std::string>());
  CHECK_FALSE(scored.count(a["id"].get<std::string>()));
  CHECK(a["scored_cases"].get<size_t>() == scored.size());
  CHECK(a["sustained_efficiency"].get<double>() > 0.05);
  CHECK(a["beyond_validated_spread"] == (std::abs(a["zero_shot_error"].get<double>()) > 0.2));
  // Without --anchor every case is scored, the anchor among them, and nothing is anchored.
  const CliResult plain =
      run_fabricsim({"validate", "--cases", cases, "--only", "nemo2407-pretrain", "--set",
                     "/simulation/backend=analytical", "--json"});
  REQUIRE(plain.code == 0);
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  CHECK_FALSE(p.contains("anchors"));
  std::set<std::string> all;
  for (const auto& row : p["rows"])
    all.insert(row["id"].get<std::string>());
  CHECK(all.size() == scored.size() + 1);
}

TEST_CASE("cli: validate --anchor anchors a group on its most typical fewest-GPU run",
          "[cli][calibrate][validate]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  // One group (MPT, A100 40GB), three runs on 8 GPUs and two on 16. The 13B model at 8k tokens
  // comes first in the file, the 125m one at 512 tokens last; the 1B run at 2k tokens lies
  // nearest the group's other shapes (log parameters, log sequence), so it is the anchor.
  nlohmann::json cases = nlohmann::json::array();
  for (const char* id :
       {"mpt-a100-40gb-13b-s8192-g8", "mpt-a100-40gb-1b-s2048-g16", "mpt-a100-40gb-1b-s2048-g8",
        "mpt-a100-40gb-3b-s2048-g16", "mpt-a100-40gb-125m-s512-g8"})
    cases.push_back(dev_case(id));
  const ScratchDir dir("cli-validate-anchor-typical");
  const std::string file = dir.file("cases.json");
  std::ofstream(file) << cases.dump();
  const CliResult r = run_fabricsim({"validate", "--cases", file, "--set",
                                     "/simulation/backend=analytical", "--anchor", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["anchors"].size() == 1);
  CHECK(j["anchors"][0]["id"] == "mpt-a100-40gb-1b-s2048-g8");
  CHECK(j["anchors"][0]["scored_cases"] == 4);  // the other 8-GPU runs are scored too
}

TEST_CASE("cli: validate searches the plan of a case that does not state it", "[cli][validate]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = dev_case("nemo2407-pretrain-LLAMA2-7B-8");
  for (const char* key : {"tp", "pp", "dp", "cp", "vp", "micro_batch"})
    c["parallelism"][key] = nullptr;
  c["id"] = "unstated-plan";
  const nlohmann::json j = validate_one(c, "cli-validate-unstated");
  REQUIRE_FALSE(j["rows"].empty());
  CHECK(j["skipped"].empty());
  CHECK_THAT(j["rows"][0]["detail"].get<std::string>(),
             Catch::Contains("plan not stated: searched TP"));
}

TEST_CASE("cli: validate --print-scenarios prints what validate runs, and run reproduces its row",
          "[cli][validate]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  // One case that recomputes a layer to fit memory, one whose plan validate searches: the
  // printed scenario carries both, so `run` of it predicts the row's value.
  nlohmann::json unstated = dev_case("nemo2407-pretrain-LLAMA2-7B-8");
  for (const char* key : {"tp", "pp", "dp", "cp", "vp", "micro_batch"})
    unstated["parallelism"][key] = nullptr;
  unstated["id"] = "unstated-plan";
  for (const nlohmann::json& c :
       {dev_case("mbridge-25.09-pretraining-Qwen3_30B_a3B_(tokendrop)-DGX-H100-16-None"),
        unstated}) {
    const std::string id = c["id"].get<std::string>();
    INFO(id);
    const nlohmann::json j = validate_one(c, "cli-validate-print");
    const auto rows = j["rows"];
    const auto row_it = std::find_if(rows.begin(), rows.end(), [](const nlohmann::json& r) {
      return r["metric"] == "tokens_per_s_per_gpu";
    });
    REQUIRE(row_it != rows.end());
    const nlohmann::json& row = *row_it;
    const std::string detail = row["detail"].get<std::string>();
    CHECK((detail.find("to fit") != std::string::npos ||
           detail.find("plan not stated") != std::string::npos));
    const ScratchDir dir("cli-validate-print-run");
    const std::string cases = dir.file("cases.json");
    std::ofstream(cases) << nlohmann::json::array({c}).dump();
    const CliResult printed =
        run_fabricsim({"validate", "--cases", cases, "--set", "/simulation/backend=analytical",
                       "--print-scenarios"});
    REQUIRE(printed.code == 0);
    REQUIRE(printed.out.rfind("// " + id + "\n", 0) == 0);
    const std::string scenario = dir.file("scenario.json");
    std::ofstream(scenario) << printed.out.substr(printed.out.find('\n') + 1);
    const CliResult run = run_fabricsim({"run", scenario, "--json"});
    INFO(run.err);
    REQUIRE(run.code == 0);
    const nlohmann::json result = nlohmann::json::parse(run.out);
    CHECK(result["tokens_per_s_per_gpu"].get<double>() ==
          Approx(row["predicted"].get<double>()).epsilon(1e-12));
  }
}

TEST_CASE("cli: calibrate trace reads a real trace and fits a profile", "[cli][calibrate][trace]") {
  const std::string trace = testing::source_file("tests/data/kineto/hta-a100-rank0.json");
  const CliResult r = run_fabricsim({"calibrate", "trace", trace});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("5 steps on NVIDIA A100-SXM4-80GB"));
  CHECK_THAT(r.out, Catch::Contains("gemm"));
  const ScratchDir dir("cli-calibrate-trace");
  const std::string scenario = dir.file("run.json");
  nlohmann::json doc = nlohmann::json::parse(kScenario);
  doc["system"]["preset"] = "dgx-a100-80gb";
  std::ofstream(scenario) << doc.dump();
  const std::string profile = dir.file("traced.json");
  const CliResult fit =
      run_fabricsim({"calibrate", "trace", trace, "--scenario", scenario, "-o", profile, "--json"});
  INFO(fit.err);
  REQUIRE(fit.code == 0);
  const nlohmann::json j = nlohmann::json::parse(fit.out);
  CHECK(j["steps"] == 5);
  CHECK(j["fit"].size() == 4);
  const calibration::CalibrationProfile p = calibration::load_profile(profile);
  CHECK(p.provenance.back().format == "kineto_trace");
  CHECK(p.provenance.back().gpu_name == "NVIDIA A100-SXM4-80GB");
  // A profile needs the scenario the trace ran; a missing trace is a located error.
  CHECK(run_fabricsim({"calibrate", "trace", trace, "-o", profile}).code == 2);
  CHECK(run_fabricsim({"calibrate", "trace", dir.file("absent.json")}).code == 2);
}

TEST_CASE("cli: validate searches the micro-batch of an FSDP case that does not state it",
          "[cli][validate]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = dev_case("mpt-a100-40gb-7b-s2048-g8");
  REQUIRE(c["parallelism"]["fsdp"] == true);
  c["parallelism"]["micro_batch"] = nullptr;
  c["id"] = "fsdp-unstated-mb";
  const nlohmann::json j = validate_one(c, "cli-validate-fsdp-mb");
  REQUIRE_FALSE(j["rows"].empty());
  const std::string detail = j["rows"][0]["detail"];
  CHECK_THAT(detail, Catch::Contains("micro-batch not stated: searched mb"));
  // The search keeps to plans that fit, although validate simulates with ignore_memory.
  CHECK_THAT(detail, !Catch::Contains("does not fit"));
}

TEST_CASE("cli: validate searches an unstated micro-batch of any stated plan, mb1 when none fits",
          "[cli][validate]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  // The Megatron-LM README's 32B (TP8, DP48) states no micro-batch: the fastest that fits.
  nlohmann::json c = dev_case("megatron-readme-h100-32B");
  REQUIRE(c["parallelism"]["micro_batch"].is_null());
  c["id"] = "readme-unstated-mb";
  const nlohmann::json j = validate_one(c, "cli-validate-readme-mb");
  REQUIRE_FALSE(j["rows"].empty());
  CHECK_THAT(j["rows"][0]["detail"].get<std::string>(),
             Catch::Contains("micro-batch not stated: searched mb4"));
  // The 70B's plan on one node (TP8 x DP1): no micro-batch fits as stated, so it runs at
  // micro-batch 1 with what fits recomputed or offloaded, and says so, rather than not running.
  nlohmann::json big = dev_case("megatron-readme-h100-70B");
  big["id"] = "readme-70b-one-node";
  big["gpus"] = 8;
  big["parallelism"]["pp"] = 1;
  big["parallelism"]["dp"] = 1;
  big["parallelism"]["global_batch"] = 32;
  const nlohmann::json k = validate_one(big, "cli-validate-readme-70b-mb");
  REQUIRE_FALSE(k["rows"].empty());
  CHECK_THAT(k["rows"][0]["detail"].get<std::string>(),
             Catch::Contains("micro-batch not stated: none fits as stated, mb1"));
}
