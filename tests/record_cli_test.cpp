// Every verb's output records what its scenario is made of: the base it started from and the
// overrides (`--set` and the flags that are shorthands for one) in the order they were applied.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"

using fabricsim::testing::CliResult;
using fabricsim::testing::json_of;
using fabricsim::testing::lines_of;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

TEST_CASE("cli: run records its base and overrides, flags first, in order", "[cli][record]") {
  const std::vector<std::string> args = {"run",
                                         "--gpus",
                                         "16",
                                         "--backend",
                                         "analytical",
                                         "--set",
                                         "/system/fabric/nic_bandwidth=200 Gbps",
                                         "--set",
                                         "/training/global_batch=32"};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const nlohmann::json j = json_of(json_args);
  CHECK(j["base"] == "<embedded default>");
  const nlohmann::json want = nlohmann::json::parse(R"([
    {"pointer": "/system/gpus", "value": 16},
    {"pointer": "/simulation/backend", "value": "analytical"},
    {"pointer": "/system/fabric/nic_bandwidth", "value": "200 Gbps"},
    {"pointer": "/training/global_batch", "value": 32}])");
  CHECK(j["overrides"] == want);
  // The overrides are what the scenario shows.
  CHECK(j["scenario"]["system"]["gpus"] == 16);
  CHECK(j["tokens_per_step"] == 32 * 8192);

  const CliResult text = run_fabricsim(args);
  REQUIRE(text.code == 0);
  CHECK(lines_of(text.out)[0] ==
        "scenario: <embedded default> | overrides: /system/gpus=16, "
        "/simulation/backend=\"analytical\", /system/fabric/nic_bandwidth=\"200 Gbps\", "
        "/training/global_batch=32");
}

TEST_CASE("cli: scale, plan, size, compare and topology record theirs", "[cli][record]") {
  ScratchDir dir("record");
  const std::string file = dir.write("s.json", R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama2-7b", "layers": 8},
    "parallelism": {"tp": 1, "pp": 1},
    "training": {"global_batch": 16, "seq_len": 4096}})");

  const nlohmann::json scale =
      json_of({"scale", file, "--gpu-counts", "8,16", "--mode", "weak", "--systems", "dgx-h100",
               "--backend", "analytical", "--json"});
  CHECK(scale["base"] == file);
  CHECK(scale["overrides"] == nlohmann::json::parse(R"([
    {"pointer": "/simulation/backend", "value": "analytical"},
    {"pointer": "/scale/systems", "value": ["dgx-h100"]},
    {"pointer": "/scale/gpus", "value": [8, 16]},
    {"pointer": "/scale/modes", "value": ["weak"]}])"));

  const nlohmann::json plan =
      json_of({"plan", file, "--set", "/training/global_batch=8", "--top", "0", "--json"});
  CHECK(plan["base"] == file);
  CHECK(plan["overrides"] ==
        nlohmann::json::parse(R"([{"pointer": "/training/global_batch", "value": 8}])"));

  const nlohmann::json size = json_of({"size", file, "--tokens", "10B", "--days", "30", "--systems",
                                       "dgx-h100", "--seq-len", "2048", "--json"});
  CHECK(size["base"] == file);
  CHECK(size["overrides"] ==
        nlohmann::json::parse(R"([{"pointer": "/training/seq_len", "value": 2048}])"));

  const nlohmann::json compare = json_of({"compare", file, "--backend", "analytical", "--vary",
                                          "/training/global_batch=32", "--json"});
  CHECK(compare["base"] == file);
  CHECK(compare["overrides"].size() == 1);

  const nlohmann::json topology =
      json_of({"topology", "--system", "gb200-nvl72", "--gpus", "72", "--summary-json"});
  CHECK(topology["base"] == "preset gb200-nvl72, 72 GPUs");
  CHECK(topology["overrides"].empty());
}
