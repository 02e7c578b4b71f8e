// Every verb that predicts states how sure it is (api/confidence): run, scale and size (one line
// and one JSON object per system; scale also on every --jsonl row), plan and compare print the
// same statement, and a preset nothing was measured on says so.

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"

using fabricsim::testing::CliResult;
using fabricsim::testing::lines_of;
using fabricsim::testing::read_file;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

namespace {

CliResult ok(const std::vector<std::string>& args) {
  const CliResult r = run_fabricsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r;
}

/// The lines of `text` starting with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  for (const std::string& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  return found;
}

/// `run --json`'s confidence object on a system (the default scenario otherwise).
nlohmann::json run_confidence(const std::string& system, const std::string& gpus) {
  return nlohmann::json::parse(
             ok({"run", "--system", system, "--gpus", gpus, "--backend", "analytical", "--json"})
                 .out)
      .at("confidence");
}

const std::vector<std::string> kScale = {"scale",        "--systems", "dgx-h100,vr-nvl144",
                                         "--gpu-counts", "8,16",      "--mode",
                                         "weak",         "--backend", "analytical"};

}  // namespace

TEST_CASE("cli: scale states one confidence line per system", "[cli][confidence]") {
  const CliResult r = ok(kScale);
  const std::vector<std::string> lines = lines_starting(r.out, "confidence on ");
  REQUIRE(lines.size() == 2);
  // The row and the line name the system as the study does; the alias's profile is its preset's.
  CHECK_THAT(lines[0], Catch::StartsWith("confidence on dgx-h100: built-in profile of dgx-h100; "
                                         "GEMM bf16: ") &&
                           Catch::Contains(" points (median ") &&
                           Catch::Contains("documented defaults") && !Catch::Contains("ANNOUNCED"));
  CHECK_THAT(lines[1],
             Catch::StartsWith("confidence on vr-nvl144: built-in profile of vr-nvl72; ") &&
                 Catch::Contains("ANNOUNCED system: vendor figures, not measured"));
}

TEST_CASE("cli: scale --json and --jsonl carry each system's confidence", "[cli][confidence]") {
  const ScratchDir dir("confidence-scale");
  std::vector<std::string> args = kScale;
  args.insert(args.end(), {"--json", "--jsonl", dir.file("rows.jsonl")});
  const nlohmann::json j = nlohmann::json::parse(ok(args).out);
  const nlohmann::json& by_system = j.at("confidence");
  REQUIRE(by_system.size() == 2);
  const nlohmann::json& h100 = by_system.at("dgx-h100");
  for (const char* key : {"system", "calibration", "gemm", "collectives", "attention_memory_host",
                          "software", "announced", "unmeasured", "summary"})
    CHECK(h100.contains(key));
  CHECK(h100["gemm"]["points"].get<int>() > 0);
  CHECK(h100["collectives"]["points"].get<int>() > 0);
  CHECK(h100["announced"] == false);
  // The same statement `run` makes on that system: one assessment behind every verb.
  CHECK(h100 == run_confidence("dgx-h100", "8"));
  const nlohmann::json& rubin = by_system.at("vr-nvl144");
  CHECK(rubin["system"] == "vr-nvl72");
  CHECK(rubin["announced"] == true);
  CHECK(rubin["gemm"]["fitted"] == false);
  CHECK(rubin == run_confidence("vr-nvl144", "8"));

  // Every streamed row stands alone: it carries its system's object.
  const std::vector<std::string> rows = lines_of(read_file(dir.file("rows.jsonl")));
  REQUIRE(rows.size() == 4);
  for (const std::string& line : rows) {
    const nlohmann::json row = nlohmann::json::parse(line);
    CHECK(row.at("confidence") == by_system.at(row.at("system").get<std::string>()));
  }
  // --json rows leave it to the per-system object.
  CHECK_FALSE(j["rows"][0].contains("confidence"));
}

TEST_CASE("cli: plan states the confidence of its search", "[cli][confidence]") {
  const std::vector<std::string> base = {"plan",  "--system", "gb300-nvl72",       "--gpus", "8",
                                         "--top", "0",        "--max-micro-batch", "1"};
  const CliResult text = ok(base);
  const std::vector<std::string> lines = lines_starting(text.out, "confidence: ");
  REQUIRE(lines.size() == 1);
  // GB300: no public point of its own was fitted, and the line says so.
  CHECK_THAT(lines[0],
             Catch::StartsWith("confidence: built-in profile of gb300-nvl72; GEMM bf16: no "
                               "measurement of this GPU") &&
                 Catch::EndsWith("UNMEASURED system: inherited figures only"));
  std::vector<std::string> json_args = base;
  json_args.push_back("--json");
  const nlohmann::json j = nlohmann::json::parse(ok(json_args).out);
  REQUIRE(j.contains("confidence"));
  CHECK(j["confidence"] == run_confidence("gb300-nvl72", "8"));
  CHECK_THAT(lines[0], Catch::EndsWith(j["confidence"]["summary"].get<std::string>()));
}

TEST_CASE("cli: size states each system's confidence", "[cli][confidence]") {
  const std::vector<std::string> base = {"size",
                                         "--model",
                                         "llama2-7b",
                                         "--set",
                                         "/model/layers=8",
                                         "--global-batch",
                                         "32",
                                         "--seq-len",
                                         "4096",
                                         "--tokens",
                                         "1B",
                                         "--gpus",
                                         "8",
                                         "--systems",
                                         "dgx-h100,vr-nvl72"};
  const CliResult text = ok(base);
  const std::vector<std::string> lines = lines_starting(text.out, "confidence on ");
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::StartsWith("confidence on dgx-h100: built-in profile of dgx-h100; "
                                         "GEMM bf16: "));
  CHECK_THAT(lines[1],
             Catch::StartsWith("confidence on vr-nvl72: built-in profile of vr-nvl72; ") &&
                 Catch::EndsWith("ANNOUNCED system: vendor figures, not measured"));
  std::vector<std::string> json_args = base;
  json_args.push_back("--json");
  const nlohmann::json j = nlohmann::json::parse(ok(json_args).out);
  REQUIRE(j["systems"].size() == 2);
  CHECK(j["systems"][0]["confidence"] == run_confidence("dgx-h100", "8"));
  CHECK(j["systems"][1]["confidence"]["announced"] == true);
}

TEST_CASE("cli: compare states one confidence line, or one per row when they differ",
          "[cli][confidence]") {
  const std::vector<std::string> fabric = {"compare",
                                           "--gpus",
                                           "16",
                                           "--backend",
                                           "analytical",
                                           "--vary",
                                           "/system/fabric/nic_bandwidth=400Gbps,100Gbps"};
  const CliResult same = ok(fabric);
  // A slower NIC changes the fabric, not the calibration behind the prediction.
  const std::vector<std::string> shared = lines_starting(same.out, "confidence");
  REQUIRE(shared.size() == 1);
  CHECK_THAT(shared[0], Catch::StartsWith("confidence: built-in profile of dgx-h100; "));
  const CliResult systems = ok({"compare", "--gpus", "8", "--backend", "analytical", "--vary",
                                "/system/preset=dgx-h100,vr-nvl72"});
  const std::vector<std::string> each = lines_starting(systems.out, "confidence");
  REQUIRE(each.size() == 3);
  CHECK_THAT(each[2], Catch::StartsWith("confidence on /system/preset=vr-nvl72: ") &&
                          Catch::Contains("ANNOUNCED"));
}
