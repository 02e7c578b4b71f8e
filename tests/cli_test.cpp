// The fabricsim commands end to end, run in-process through run_cli with argv and string streams:
// exit codes, what goes to stdout and stderr, and the shape of the JSON outputs.

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

#include "calibration/profile.hpp"
#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shared_reference.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using fabricsim::testing::CliResult;
using fabricsim::testing::lines_of;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

namespace {

std::string shared_case(const std::string& file) {
  return fabricsim::testing::shared_case(file);
}

std::string measurement(const std::string& file) {
  return testing::source_file("tests/data/measurements", file);
}

/// The rows of a `collective` text table (lines not starting with '#').
std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : lines_of(text)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string f; in >> f;)
      fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}

}  // namespace

TEST_CASE("cli: topology describes a 64-GPU DGX H100 cluster", "[cli]") {
  const CliResult r = run_fabricsim({"topology", "--system", "dgx-h100", "--gpus", "64"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("dgx-h100"));
  CHECK_THAT(r.out, Catch::Contains("64 in 8 servers, 8 scale-up domain(s) of 8"));
  CHECK_THAT(r.out, Catch::Contains("NVLink SHARP"));
  CHECK_THAT(r.out, Catch::Contains("fabric tier 1 (leaf)"));

  const CliResult j =
      run_fabricsim({"topology", "--system", "dgx-h100", "--gpus", "64", "--summary-json"});
  REQUIRE(j.code == 0);
  const nlohmann::json summary = nlohmann::json::parse(j.out);
  CHECK(summary.at("gpus") == 64);
  CHECK(summary.at("servers") == 8);
}

TEST_CASE("cli: topology with an impossible GPU count names the flag", "[cli][bad-input]") {
  const CliResult r = run_fabricsim({"topology", "--system", "dgx-h100", "--gpus", "12"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("fabricsim: <command line>: --gpus: "));
  CHECK_THAT(r.err, Catch::Contains("12 GPUs"));
  const CliResult s = run_fabricsim({"topology", "--system", "dgx-z100"});
  CHECK(s.code == 2);
  CHECK_THAT(s.err, Catch::Contains("--system") && Catch::Contains("dgx-h100"));
}

TEST_CASE("cli: collective prints one row per size", "[cli]") {
  const CliResult r =
      run_fabricsim({"collective", "--system", "dgx-h100", "--gpus", "16", "-b", "1M", "-e", "4M"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("# fabricsim collective: all_reduce over 16 of 16 GPUs of "
                                      "dgx-h100 (2 domain(s) of 8), flow backend, ecmp routing"));
  const auto rows = table_rows(r.out);
  REQUIRE(rows.size() == 3);
  const std::vector<std::string> sizes{"1048576", "2097152", "4194304"};
  double previous_busbw = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    REQUIRE(rows[i].size() == 8);
    CHECK(rows[i][0] == sizes[i]);
    CHECK(std::stod(rows[i][1]) == std::stod(sizes[i]) / 4);  // float elements
    CHECK(rows[i][2] == "float");
    const double time_us = std::stod(rows[i][3]);
    const double algbw = std::stod(rows[i][4]);
    const double busbw = std::stod(rows[i][5]);
    CHECK(time_us > 0);
    // nccl-tests definitions: algbw = size / time, busbw = algbw x 2(n-1)/n for all_reduce.
    CHECK(algbw == Approx(std::stod(sizes[i]) / time_us * 1e-3).epsilon(0.01));
    CHECK(busbw == Approx(algbw * 2 * 15 / 16).epsilon(0.01));
    CHECK(busbw >= previous_busbw);  // bandwidth grows with the message in this range
    previous_busbw = busbw;
  }

  const CliResult j = run_fabricsim(
      {"collective", "--system", "dgx-h100", "--gpus", "16", "-b", "1M", "-e", "4M", "--json"});
  REQUIRE(j.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc.at("ranks") == 16);
  REQUIRE(doc.at("rows").size() == 3);
  CHECK(doc["rows"][2]["size_bytes"] == 4194304.0);
  CHECK(doc["rows"][2]["busbw_GBps"].get<double>() == Approx(std::stod(rows[2][5])).margin(0.006));
}

TEST_CASE("cli: collective rejects bad flags with exit code 2", "[cli][bad-input]") {
  const CliResult size = run_fabricsim({"collective", "-b", "1 parsec"});
  CHECK(size.code == 2);
  CHECK_THAT(size.err, Catch::Contains("--min-bytes"));
  const CliResult ranks = run_fabricsim({"collective", "--gpus", "8", "--ranks", "16"});
  CHECK(ranks.code == 2);
  CHECK_THAT(ranks.err, Catch::Contains("--ranks") && Catch::Contains("at most --gpus (8)"));
  const CliResult unknown = run_fabricsim({"collective", "--frobnicate"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("frobnicate"));
  const CliResult none = run_fabricsim({});
  CHECK(none.code == 2);
}

TEST_CASE("cli: run simulates the default scenario", "[cli]") {
  const CliResult r = run_fabricsim({"run"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() > 6);
  CHECK(lines[0] == "scenario: <embedded default> | overrides: none");
  CHECK_THAT(lines[1], Catch::StartsWith("llama3-8b on 8 x dgx-h100"));
  CHECK_THAT(lines[1], Catch::Contains("TP1 PP1 DP4 CP2") && Catch::Contains("flow backend"));
  CHECK(lines[2] == "calibration: built-in profile of dgx-h100");
  CHECK_THAT(r.out, Catch::Contains("\nstep time "));
  CHECK_THAT(r.out, Catch::Contains("\nthroughput "));
  CHECK_THAT(r.out, Catch::Contains("(MFU "));
  CHECK_THAT(r.out, Catch::Contains("\nbreakdown (stage 0): compute "));

  const CliResult j = run_fabricsim({"run", "--json"});
  REQUIRE(j.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc.at("feasible") == true);
  const double step = doc.at("step_time_s").get<double>();
  CHECK(step > 0);
  // The text rounds the same step time to 4 decimals.
  CHECK_THAT(r.out, Catch::Contains(fmt::format("step time           {:.4f} s", step)));
  CHECK(doc.at("mfu").get<double>() > 0.1);
  CHECK(doc.at("mfu").get<double>() < 1.0);
  CHECK(doc.at("scenario").at("parallelism").at("dp") == 4);
}

TEST_CASE("cli: run with a plan that does not divide exits 2 naming the path", "[cli][bad-input]") {
  const CliResult r = run_fabricsim({"run", "--gpus", "8", "--tp", "3"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(lines_of(r.err).size() == 1);
  CHECK_THAT(r.err, Catch::StartsWith("fabricsim: <scenario>: /parallelism: "));
  CHECK_THAT(r.err, Catch::Contains("tp x pp x cp = 6 does not divide the 8 GPUs"));

  const CliResult set = run_fabricsim({"run", "--set", "system/gpus=8"});
  CHECK(set.code == 2);
  CHECK_THAT(set.err, Catch::Contains("<command line>: --set: expected /json/pointer=value"));
}

TEST_CASE("cli: a run that does not fit in memory exits 3 with the breakdown", "[cli]") {
  // Llama 3 70B with no model parallelism: 16 bytes of weights, gradients and Adam state per
  // parameter under ZeRO-1 over 8 GPUs is far beyond 80 GB per GPU.
  const CliResult r = run_fabricsim(
      {"run", "--model", "llama3-70b", "--gpus", "8", "--cp", "1", "--global-batch", "8"});
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK_THAT(r.out, Catch::Contains("DOES NOT FIT"));
  const std::regex memory(
      R"(memory \(stage 0\): [0-9.]+ of [0-9.]+ GiB: weights [0-9.]+, gradients [0-9.]+, )"
      R"(optimizer [0-9.]+, activations [0-9.]+ \(\d+ micro-batch chunks in flight\), framework [0-9.]+)");
  CHECK(std::regex_search(r.out, memory));
  CHECK_THAT(r.out, Catch::Contains("\ninfeasible: "));
  CHECK_THAT(r.out, Catch::Contains("--ignore-memory"));
  CHECK_THAT(r.out, !Catch::Contains("step time"));

  const CliResult j = run_fabricsim({"run", "--model", "llama3-70b", "--gpus", "8", "--cp", "1",
                                     "--global-batch", "8", "--json"});
  CHECK(j.code == 3);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc.at("feasible") == false);
  CHECK_FALSE(doc.contains("step_time_s"));
  CHECK(doc.at("memory").is_object());
}

TEST_CASE("cli: validate --json reports rows and summaries with the documented keys", "[cli]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const CliResult r =
      run_fabricsim({"validate", "--cases", shared_case("dev-collectives.json"), "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.at("rows").is_array());
  REQUIRE(doc["rows"].size() > 50);
  int curve_points = 0;
  for (const nlohmann::json& row : doc["rows"]) {
    INFO(row.dump());
    for (const char* key : {"id", "metric", "predicted", "measured", "error", "source", "system"}) {
      CHECK(row.contains(key));
    }
    const double predicted = row.at("predicted").get<double>();
    const double measured = row.at("measured").get<double>();
    CHECK(predicted > 0);
    CHECK(measured > 0);
    CHECK(row.at("error").get<double>() == Approx((predicted - measured) / measured));
    if (row.contains("size_bytes")) {
      ++curve_points;
      CHECK(row["size_bytes"].get<double>() > 0);
    }
  }
  CHECK(curve_points > 0);
  const nlohmann::json& summary = doc.at("summary");
  const nlohmann::json& overall = summary.at("overall");
  CHECK(overall.at("points") == doc["rows"].size());
  CHECK(overall.at("median_abs_error").get<double>() >= 0);
  CHECK(overall.at("max_abs_error").get<double>() >= overall.at("median_abs_error").get<double>());
  int by_source_points = 0;
  for (const auto& [source, s] : summary.at("by_source").items()) {
    INFO(source);
    by_source_points += s.at("points").get<int>();
  }
  CHECK(by_source_points == overall.at("points").get<int>());
  CHECK(doc.at("skipped").is_array());
}

TEST_CASE("cli: calibrate fit writes a profile that loads", "[cli]") {
  const ScratchDir dir("cli-calibrate");
  const std::string out = dir.file("h200.json");
  const CliResult r =
      run_fabricsim({"calibrate", "fit", "--gemm", measurement("gemm_bench_h200.json"), "--nccl",
                     measurement("nccl_bench_h200.json"), "--base", "dgx-h200", "-o", out});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("wrote " + out));
  CHECK_THAT(r.out, Catch::Contains("collectives: "));
  const calibration::CalibrationProfile p = calibration::load_profile(out);
  CHECK(p.system == "dgx-h200");
  CHECK(p.gpu == "H200-SXM");
  CHECK(p.collective_fit.has_value());
  CHECK(p.gemm_fit.count("bf16") == 1);
  int from_files = 0;
  for (const calibration::Provenance& pr : p.provenance) {
    if (pr.file == measurement("gemm_bench_h200.json") ||
        pr.file == measurement("nccl_bench_h200.json")) {
      ++from_files;
    }
  }
  CHECK(from_files == 2);
  // The profile is usable by a simulation of its system.
  const CliResult c = run_fabricsim(
      {"collective", "--system", "dgx-h200", "-b", "1M", "-e", "1M", "--calibration", out});
  INFO(c.err);
  CHECK(c.code == 0);
  CHECK(table_rows(c.out).size() == 1);

  const CliResult missing = run_fabricsim({"calibrate", "fit", "--base", "dgx-h200", "-o", out});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("--gemm/--nccl"));
}

TEST_CASE("cli: calibrate builtin refuses a GEMM data folder it cannot read", "[cli][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const ScratchDir dir("cli-builtin");
  const std::string reference = testing::shared_dir() + "/reference";
  const CliResult missing =
      run_fabricsim({"calibrate", "builtin", "--reference", reference, "--gemm-data",
                     dir.file("absent"), "-o", dir.file("out")});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("expected a folder of GEMM case files"));
  // A collective record among the GEMM data is named by file and JSON path, not dropped.
  const std::string folder = dir.file("gemm");
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(shared_case("dev-collectives.json"), folder + "/a.json");
  const CliResult wrong = run_fabricsim({"calibrate", "builtin", "--reference", reference,
                                         "--gemm-data", folder, "-o", dir.file("out")});
  CHECK(wrong.code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("a.json: /0/kind: expected a GEMM record"));
}

TEST_CASE("cli: scale runs a weak-scaling study and writes JSON lines", "[cli]") {
  const ScratchDir dir("cli-scale");
  const std::string jsonl = dir.file("rows.jsonl");
  const std::vector<std::string> args{"scale",      "--gpu-counts", "8,16", "--systems",
                                      "dgx-h100",   "--mode",       "weak", "--backend",
                                      "analytical", "--jsonl",      jsonl};
  const CliResult r = run_fabricsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("# fabricsim scale: <scenario> | "));
  CHECK_THAT(r.out, Catch::Contains("\nweak scaling on dgx-h100 (batch per replica fixed):\n"));
  CHECK_THAT(r.out, !Catch::Contains("strong scaling"));
  int data_rows = 0;
  for (const std::string& line : lines_of(r.out)) {
    std::istringstream in(line);
    int gpus = 0;
    if (in >> gpus && (gpus == 8 || gpus == 16)) ++data_rows;
  }
  CHECK(data_rows == 2);

  const std::vector<std::string> lines = lines_of(testing::read_file(jsonl));
  REQUIRE(lines.size() == 2);
  std::vector<int> gpus;
  for (const std::string& line : lines) {
    const nlohmann::json row = nlohmann::json::parse(line);  // one complete document per line
    CHECK(row.at("system") == "dgx-h100");
    CHECK(row.at("mode") == "weak");
    CHECK(row.at("feasible") == true);
    gpus.push_back(row.at("gpus").get<int>());
  }
  CHECK((gpus == std::vector<int>{8, 16}));
  // Weak scaling keeps the batch per replica: twice the replicas, twice the global batch.
  const nlohmann::json first = nlohmann::json::parse(lines[0]);
  const nlohmann::json second = nlohmann::json::parse(lines[1]);
  CHECK(second.at("global_batch").get<int>() == 2 * first.at("global_batch").get<int>());
  CHECK(second.at("dp").get<int>() == 2 * first.at("dp").get<int>());

  // --jsonl never appends to an earlier study (tests/hardening_test.cpp).
  CHECK(run_fabricsim(args).code == 2);
  CHECK(lines_of(testing::read_file(jsonl)).size() == 2);

  const CliResult bad = run_fabricsim({"scale", "--mode", "sideways"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--mode") && Catch::Contains("weak, strong or both"));
}

TEST_CASE("cli: --version prints the version and the commit", "[cli]") {
  const CliResult r = run_fabricsim({"--version"});
  REQUIRE(r.code == 0);
  CHECK(std::regex_match(
      r.out,
      std::regex(R"(fabricsim \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n)")));
}

TEST_CASE("cli: topology and collective take run's --set fabric overrides", "[cli]") {
  const std::vector<std::string> slow_nics = {"--set", "/system/fabric/nic_bandwidth=200 Gbps"};
  auto summary = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"topology", "--gpus", "64", "--summary-json"});
    const CliResult r = run_fabricsim(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json preset = summary({});
  const nlohmann::json slow = summary(slow_nics);
  // 400 Gb/s NICs are 50 GB/s per GPU; 200 Gb/s half that; NVLink untouched.
  CHECK(preset["scale_out_GBps_per_gpu"].get<double>() == Approx(50));
  CHECK(slow["scale_out_GBps_per_gpu"].get<double>() == Approx(25));
  CHECK(slow["scale_up_GBps_per_gpu"] == preset["scale_up_GBps_per_gpu"]);
  CHECK(slow["overrides"] == nlohmann::json::parse(
                                 R"([{"pointer": "/system/fabric/nic_bandwidth",
                                      "value": "200 Gbps"}])"));

  auto busbw = [](int gpus, std::vector<std::string> args) {
    args.insert(args.begin(),
                {"collective", "--gpus", std::to_string(gpus), "-b", "1G", "-e", "1G", "--json"});
    const CliResult r = run_fabricsim(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["rows"][0]["busbw_GBps"].get<double>();
  };
  // Across two servers the NICs bound the all-reduce; inside one server they are not used.
  CHECK(busbw(16, slow_nics) < 0.9 * busbw(16, {}));
  CHECK(busbw(8, slow_nics) == busbw(8, {}));

  const CliResult outside = run_fabricsim({"collective", "--set", "/training/global_batch=8"});
  CHECK(outside.code == 2);
  CHECK_THAT(outside.err, Catch::Contains("expected a /system/... field"));
  const CliResult own_flag = run_fabricsim({"topology", "--set", "/system/gpus=16"});
  CHECK(own_flag.code == 2);
  CHECK_THAT(own_flag.err, Catch::Contains("has its own flag here"));
  const CliResult unknown = run_fabricsim({"topology", "--set", "/system/fabric/nic_speed=1"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("/system/fabric/nic_speed: unknown key"));
}

TEST_CASE("cli: run --link-trace writes the busiest links' utilisation over time", "[cli]") {
  ScratchDir dir("link_trace");
  const std::string file = dir.file("links.json");
  const CliResult r = run_fabricsim(
      {"run", "--gpus", "16", "--link-trace", file, "--link-buckets", "50", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  const nlohmann::json trace = nlohmann::json::parse(fabricsim::testing::read_file(file));
  CHECK(trace["format"] == "fabricsim-link-trace-1");
  CHECK(trace["buckets"] == 50);
  CHECK(trace["step_time_s"] == report["step_time_s"]);
  CHECK(trace["overrides"].size() == 1);
  const nlohmann::json& links = trace["links"];
  REQUIRE(links.size() == report["busiest_links"].size());
  REQUIRE_FALSE(links.empty());
  for (size_t i = 0; i < links.size(); ++i) {
    const std::vector<double> u = links[i]["utilization"];
    REQUIRE(u.size() == 50);
    double sum = 0;
    for (double x : u) {
      CHECK(x >= 0);
      CHECK(x <= 1 + 1e-9);  // no bucket above the usable capacity
      sum += x;
    }
    // The buckets integrate the same bytes as the step's average utilisation.
    CHECK(links[i]["link"] == report["busiest_links"][i]["link"]);
    CHECK(sum / 50 == Approx(report["busiest_links"][i]["utilization"].get<double>()));
  }
  const CliResult analytical =
      run_fabricsim({"run", "--backend", "analytical", "--link-trace", dir.file("a.json")});
  CHECK(analytical.code == 2);
  CHECK_THAT(analytical.err,
             Catch::Contains("--link-trace: link utilisation over time needs the flow"));
}

namespace {

/// `validate --json` (analytical) of a case file of calibration/data/holdout, which must run every
/// case it holds (`cases` of them), or of those whose id contains `only`.
nlohmann::json validate_holdout(const char* file, int cases, const std::string& only = "") {
  std::vector<std::string> args = {"validate",
                                   "--cases",
                                   testing::source_file("calibration/data/holdout", file),
                                   "--set",
                                   "/simulation/backend=analytical",
                                   "--json"};
  if (!only.empty()) args.insert(args.end(), {"--only", only});
  const CliResult r = run_fabricsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("skipped").empty());
  CHECK(doc.at("summary").at("cases").at("overall").at("cases") == cases);
  return doc;
}

}  // namespace

TEST_CASE("cli: every out-of-sample Megatron-Bridge case runs and fits", "[cli]") {
  // calibration/data/holdout: the 26.02-26.08 performance summaries, compared, never fitted.
  const nlohmann::json doc = validate_holdout("megatron-bridge-26.json", 174);
  // Two rows print a plan their scripts did not run: Llama 3 70B on 64 GB300 in 26.02.01, NVFP4
  // unsharded at TP1 PP1 DP64 (280 GB of BF16 weights and gradients alone) and MXFP8 at PP4
  // without interleaving; the release's scripts (v0.3.1 LLAMA3_70B_PRETRAIN_CONFIG_GB300_
  // {NVFP4,FP8_MX}_V2) set PP4 VP5, as the 26.04 rows print, and the reader runs that.
  const std::string misprinted = "mbridge-26.02.01-pre-training-LLAMA3_70B-DGX-GB300-64-";
  for (const nlohmann::json& row : doc.at("rows")) {
    const std::string id = row.at("id").get<std::string>();
    const std::string detail = row.at("detail").get<std::string>();
    INFO(id);
    CHECK(detail.find("does not fit") == std::string::npos);
    const bool fixed =
        id.starts_with(misprinted) && (id.ends_with("NVFP4") || id.ends_with("MXFP8"));
    CHECK((detail.find("its table misprints it") != std::string::npos) == fixed);
  }
}

TEST_CASE("cli: every out-of-sample MPT case on H100 runs and fits", "[cli]") {
  // calibration/data/holdout/llm-foundry-h100.json: MosaicML's H100 tables, compared, never
  // fitted. Published runs ran, so every plan fits in 80 GB.
  const nlohmann::json doc = validate_holdout("llm-foundry-h100.json", 70);
  for (const nlohmann::json& row : doc.at("rows")) {
    INFO(row.at("id").get<std::string>());
    CHECK(row.at("detail").get<std::string>().find("does not fit") == std::string::npos);
  }
}

TEST_CASE("cli: every out-of-sample MPT case on A100 80GB runs and fits", "[cli]") {
  // calibration/data/holdout/llm-foundry-a100-80gb.json: MosaicML's A100 80GB table, compared,
  // never fitted; the same models, sequences and stack as the dev set's 40 GB table.
  const nlohmann::json doc = validate_holdout("llm-foundry-a100-80gb.json", 61);
  for (const nlohmann::json& row : doc.at("rows")) {
    INFO(row.at("id").get<std::string>());
    CHECK(row.at("detail").get<std::string>().find("does not fit") == std::string::npos);
  }
}

TEST_CASE("cli: every out-of-sample case of other sources runs and fits", "[cli]") {
  // calibration/data/holdout/other-sources.json: DeepSeek-V3's report, torchtitan on H200.
  const nlohmann::json doc = validate_holdout("other-sources.json", 3);
  for (const nlohmann::json& row : doc.at("rows")) {
    INFO(row.at("id").get<std::string>());
    CHECK(row.at("detail").get<std::string>().find("does not fit") == std::string::npos);
  }
}

TEST_CASE("cli: MLPerf Training results run as times to train and step throughputs", "[cli]") {
  // calibration/data/holdout/mlperf-training-v5.1.json, NVIDIA's own submissions (their plans
  // stated; the partners' rows whose plans are searched take minutes): every case predicts its
  // time to train from its benchmark's reference convergence and its throughput from the logs.
  const nlohmann::json doc =
      validate_holdout("mlperf-training-v5.1.json", 16, "mlperf-training-v5.1-NVIDIA-");
  int times = 0;
  for (const nlohmann::json& row : doc.at("rows")) {
    if (row.at("metric") != "time_to_train_min") continue;
    ++times;
    INFO(row.at("id").get<std::string>());
    CHECK_THAT(row.at("detail").get<std::string>(), Catch::Contains("samples to converge"));
    // A run's time is longer than its training steps alone and within a factor of the
    // published one.
    CHECK(row.at("predicted").get<double>() > 0);
    CHECK(std::abs(row.at("error").get<double>()) < 0.5);
  }
  CHECK(times == 16);
}

TEST_CASE("cli: MLPerf v4.0's GPT-3 175B runs to the reference convergence in tokens", "[cli]") {
  // calibration/data/holdout/mlperf-training-v4.0.json, NVIDIA's rows: GPT-3 175B on 512, 10,752
  // and 11,616 H100 (RCPs counted in tokens, 2,048 a sequence) and LoRA on 8 to 1,024. Each is
  // measured twice: its time to train and the step rate its log times (GPT-3: the training
  // blocks between evaluations; LoRA: the callback's throughput).
  const nlohmann::json doc =
      validate_holdout("mlperf-training-v4.0.json", 7, "mlperf-training-v4.0-NVIDIA-");
  int gpt3 = 0;
  int times = 0;
  int rates = 0;
  for (const nlohmann::json& row : doc.at("rows")) {
    const std::string detail = row.at("detail").get<std::string>();
    INFO(row.at("id").get<std::string>() << ": " << detail);
    if (row.at("metric") == "tokens_per_s_per_gpu") {
      ++rates;
      continue;
    }
    CHECK(row.at("metric") == "time_to_train_min");
    ++times;
    if (detail.find("MLPerf gpt3:") == std::string::npos) continue;
    ++gpt3;
    // Between the RCPs of batch 2,048 and 3,072: 575,078 to 594,739 sequences.
    CHECK(std::regex_search(detail, std::regex("gpt3: 5[789][0-9]{4} samples to converge")));
  }
  CHECK(gpt3 == 3);
  CHECK(times == 7);
  CHECK(rates == 7);
}

TEST_CASE("cli: MLPerf v3.1's GPT-3 175B series runs from 512 to 10,752 H100", "[cli]") {
  // calibration/data/holdout/mlperf-training-v3.1.json: NVIDIA's GPT-3 runs, one series from
  // 512 GPUs in the step rate their logs time (train_step_timing): per GPU it falls as the
  // runs' does, to three quarters from 10,240, where a step holds 8 micro-batches per pipeline of
  // 8 stages. Azure's one run is another submitter's system, measured apart: in no
  // series of NVIDIA's.
  const nlohmann::json doc = validate_holdout("mlperf-training-v3.1.json", 8);
  int points = 0;
  for (const nlohmann::json& p : doc.at("scaling")) {
    const std::string id = p.at("id").get<std::string>();
    INFO(id);
    CHECK(id.starts_with("mlperf-training-v3.1-NVIDIA-"));
    CHECK(p.at("baseline").get<std::string>().starts_with("mlperf-training-v3.1-NVIDIA-"));
    CHECK(p.at("baseline_gpus") == 512);
    CHECK(p.at("metric") == "tokens_per_s_per_gpu");
    ++points;
    // 768 GPUs run the 512 GPUs' plan with more replicas: the same step.
    CHECK(p.at("predicted_efficiency").get<double>() < 1.001);
    if (p.at("gpus").get<int>() >= 10240) CHECK(p.at("predicted_efficiency").get<double>() < 0.8);
    CHECK(std::abs(p.at("error").get<double>()) < 0.1);
  }
  CHECK(points == 6);
}

TEST_CASE("cli: MLPerf v4.1 and v5.0 results run with the step rates their logs time", "[cli]") {
  // calibration/data/holdout/mlperf-training-v4.1.json and -v5.0.json, NVIDIA's rows: LoRA on 8
  // H100, H200 and B200 to 1,024 H100 and 512 GB200, GPT-3 on 64 B200 and 256 to 11,616 H100,
  // the 405B on 256 and 512 GB200 and 512 to 8,192 H100.
  // Their logs time steps as `train_step_timing in s` (v4.1's GPT-3), `throughput` (v4.x's
  // callbacks; GPT-3's in tokens per second) or `train_step_time` (v5.0): every result carries a
  // step rate beside its time, and a GPT-3 rate counts sequences of 2,048 tokens, not tokens.
  for (const auto& [round, cases] :
       {std::pair{"mlperf-training-v4.1", 9}, std::pair{"mlperf-training-v5.0", 12}}) {
    INFO(round);
    const std::string name = round;
    const nlohmann::json doc = validate_holdout((name + ".json").c_str(), cases, name + "-NVIDIA-");
    std::set<std::string> rates, times;
    for (const nlohmann::json& row : doc.at("rows")) {
      const std::string id = row.at("id").get<std::string>();
      INFO(id);
      if (row.at("metric") == "time_to_train_min") times.insert(id);
      if (row.at("metric") != "tokens_per_s_per_gpu") continue;
      rates.insert(id);
      if (id.ends_with("-gpt3")) {
        CHECK(row.at("measured").get<double>() > 500);
        CHECK(row.at("measured").get<double>() < 5000);
      }
    }
    CHECK(static_cast<int>(rates.size()) == cases);
    CHECK(rates == times);
  }
}

TEST_CASE("cli: validate fits every dev training case in memory as its recipe did", "[cli]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  // Published runs ran, so they fit: cases that leave their recomputation unstated get the
  // fewest layers recomputed or offloaded that fit, or, for Megatron-Bridge's dense FSDP runs,
  // the layers their recipe offloads (cpu_offloading_num_layers).
  const std::string dev = shared_case("dev-training.json");
  const CliResult r = run_fabricsim(
      {"validate", "--cases", dev, "--set", "/simulation/backend=analytical", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const std::string gb200 = "mbridge-25.09-pretraining-LLAMA3_70B-DGX-GB200-64-None";
  int fitted = 0;
  for (const nlohmann::json& row : doc.at("rows")) {
    const std::string detail = row.at("detail").get<std::string>();
    INFO(row.at("id").get<std::string>() << ": " << detail);
    CHECK(detail.find("does not fit") == std::string::npos);
    if (row.at("id") == gb200)
      CHECK(detail.find("offloads 40 layers per chunk as its recipe does") != std::string::npos);
    fitted += detail.find("to fit") != std::string::npos;
  }
  CHECK(fitted > 0);
  // That recipe's 40 of 80 layers (Llama 3 70B, GB200, FP8) is what the memory model needs too:
  // 39 do not fit.
  const CliResult printed = run_fabricsim({"validate", "--cases", dev, "--only", gb200, "--set",
                                           "/simulation/backend=analytical", "--print-scenarios"});
  REQUIRE(printed.code == 0);
  nlohmann::json scenario = nlohmann::json::parse(printed.out.substr(printed.out.find('\n') + 1));
  REQUIRE(scenario["parallelism"]["offload_layers"] == 40);
  const ScratchDir dir("cli-recipe-offload");
  for (const int layers : {40, 39}) {
    scenario["parallelism"]["offload_layers"] = layers;
    const std::string path = dir.file("scenario.json");
    std::ofstream(path) << scenario.dump();
    const CliResult run = run_fabricsim({"run", path, "--json"});
    INFO(run.err);
    REQUIRE(run.code == 0);
    CHECK(nlohmann::json::parse(run.out)["memory"]["fits"] == (layers == 40));
  }
}
