// scale end to end: scenario files as systems, and --replan.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"

using fabricsim::testing::CliResult;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

namespace {

nlohmann::json scale_json(std::vector<std::string> args) {
  args.insert(args.begin(), "scale");
  args.insert(args.end(), {"--backend", "analytical", "--json"});
  const CliResult r = run_fabricsim(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("cli: scale --systems takes scenario files as well as presets", "[cli][scale]") {
  ScratchDir dir("scale_files");
  // Only the "system" section of a file is used: its model and batch are not the study's.
  const std::string same = dir.write("same.json", R"({
    "system": {"preset": "dgx-h100", "gpus": 64},
    "model": {"preset": "llama3-70b"}, "parallelism": {}, "training": {"global_batch": 8}})");
  const std::string slow = dir.write("slow.json", R"({
    "system": {"preset": "dgx-h100", "gpus": 8, "fabric": {"nic_bandwidth": "100 Gbps"}},
    "model": {"preset": "llama3-8b"}, "parallelism": {}, "training": {"global_batch": 8}})");
  const nlohmann::json j = scale_json(
      {"--systems", "dgx-h100," + same + "," + slow, "--gpu-counts", "8,16", "--mode", "weak"});
  const nlohmann::json& rows = j["rows"];
  REQUIRE(rows.size() == 6);
  CHECK(rows[0]["system"] == "dgx-h100");
  CHECK_FALSE(rows[0].contains("preset"));
  CHECK(rows[2]["system"] == same);
  CHECK(rows[2]["preset"] == "dgx-h100");
  // The unmodified preset from a file is the preset.
  for (int i : {0, 1})
    CHECK(rows[i + 2]["step_time_s"] == rows[i]["step_time_s"]);
  // Slower NICs: the same inside one server, slower across two.
  CHECK(rows[4]["step_time_s"] == rows[0]["step_time_s"]);
  CHECK(rows[5]["step_time_s"].get<double>() > rows[1]["step_time_s"].get<double>());

  const CliResult unknown = run_fabricsim({"scale", "--systems", "dgx-h900"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("dgx-h100") &&
                              Catch::Contains("or a scenario file (a name ending in .json)"));
  const CliResult missing = run_fabricsim({"scale", "--systems", dir.file("none.json")});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Catch::Contains("none.json: cannot open"));
  const std::string bad = dir.write("bad.json", R"({"system": {"preset": "dgx-h900"}})");
  const CliResult bad_preset = run_fabricsim({"scale", "--systems", bad});
  CHECK(bad_preset.code == 2);
  CHECK_THAT(bad_preset.err, Catch::Contains("bad.json: /system/preset: expected one of"));
}
