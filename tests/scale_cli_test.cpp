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

TEST_CASE("cli: scale --replan searches the best plan at every size and compares systems",
          "[cli][scale]") {
  const std::vector<std::string> small = {
      "--set",  "/model/layers=8", "--gpu-counts",         "8,16",     "--mode",
      "strong", "--systems",       "dgx-h100,gb200-nvl72", "--tokens", "1B"};
  std::vector<std::string> args = small;
  args.push_back("--replan");
  const nlohmann::json replanned = scale_json(args);
  const nlohmann::json fixed = scale_json(small);
  const nlohmann::json& rows = replanned["rows"];
  REQUIRE(rows.size() == 4);
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& r = rows[i];
    INFO(r.dump());
    REQUIRE(r["feasible"] == true);
    const nlohmann::json& p = r["parallelism"];
    CHECK(p["tp"].get<int>() * p["pp"].get<int>() * p["cp"].get<int>() * p["dp"].get<int>() ==
          r["gpus"].get<int>());
    CHECK(r["dp"] == p["dp"]);
    CHECK(r["plan"].get<std::string>().starts_with("TP"));
    // The search holds the fixed plan (ZeRO-1, selective, micro-batch 1): at the analytical
    // fidelity it ranks by, its best is at least as fast.
    CHECK(r["tokens_per_s_per_gpu"].get<double>() >=
          fixed["rows"][i]["tokens_per_s_per_gpu"].get<double>() * (1 - 1e-12));
    // Days to train the budget at this throughput.
    CHECK(r["days_to_train"].get<double>() ==
          Approx(1e9 / (r["tokens_per_s_per_gpu"].get<double>() * r["gpus"].get<int>()) / 86400));
    CHECK(fixed["rows"][i].contains("days_to_train"));
    CHECK_FALSE(fixed["rows"][i].contains("plan"));
  }
  CHECK(rows[0]["gpu_hour_usd"] == 3.0);  // DGX H100 rental; GB200 NVL72 has none published
  CHECK(rows[2]["gpu_hour_usd"].is_null());
  CHECK_FALSE(fixed.contains("comparison"));

  // Systems against each other at the largest size both ran.
  REQUIRE(replanned["comparison"].size() == 1);
  const nlohmann::json& c = replanned["comparison"][0];
  CHECK(c["mode"] == "strong");
  CHECK(c["gpus"] == 16);
  REQUIRE(c["systems"].size() == 2);
  const nlohmann::json& h100 = c["systems"][0];
  const nlohmann::json& gb200 = c["systems"][1];
  CHECK(h100["tokens_per_s_per_gpu"] == rows[1]["tokens_per_s_per_gpu"]);
  CHECK(gb200["relative_throughput"] == 1.0);  // the faster GPU
  CHECK(h100["relative_throughput"].get<double>() ==
        Approx(h100["tokens_per_s_per_gpu"].get<double>() /
               gb200["tokens_per_s_per_gpu"].get<double>()));
  CHECK(h100["tokens_per_usd_rental"].get<double>() ==
        Approx(h100["tokens_per_s_per_gpu"].get<double>() * 3600 / 3.0));
  CHECK(gb200["tokens_per_usd_rental"].is_null());
  CHECK(h100["tokens_per_s_per_musd_capital"].get<double>() ==
        Approx(h100["tokens_per_s_per_gpu"].get<double>() * 16 /
               (rows[1]["capital_usd"].get<double>() / 1e6)));

  // Text: the plan column and the comparison.
  args.insert(args.begin(), "scale");
  args.insert(args.end(), {"--backend", "analytical"});
  const CliResult text = run_fabricsim(args);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("plan (searched)") &&
                           Catch::Contains("systems compared, strong scaling at 16 GPUs"));

  const CliResult zero = run_fabricsim({"scale", "--tokens", "0"});
  CHECK(zero.code == 2);
  CHECK_THAT(zero.err, Catch::Contains("--tokens: expected a positive token count"));
}

TEST_CASE("cli: scale warns when weak scaling passes the largest published batch", "[cli][scale]") {
  // 2,048 sequences of 8,192 on 8 GPUs is Llama 3 405B's batch, not above it; 16 GPUs doubles it.
  const nlohmann::json j =
      scale_json({"--set", "/model/layers=2", "--global-batch", "2048", "--gpu-counts", "8,16",
                  "--mode", "weak", "--systems", "dgx-h100"});
  REQUIRE(j["rows"].size() == 2);
  CHECK_FALSE(j["rows"][0].contains("batch_above_published"));
  CHECK(j["rows"][1]["batch_above_published"] == true);
  REQUIRE(j["warnings"].size() == 1);
  CHECK_THAT(j["warnings"][0].get<std::string>(),
             Catch::Contains("from 16 GPUs the global batch (4096 sequences, 33.6M tokens)"));
  // A scenario that leaves the sequence length to the model (Llama 3 8B: 8,192) counts the same
  // tokens.
  const nlohmann::json model_seq =
      scale_json({"--set", "/model/layers=2", "--set", "/training/seq_len=null", "--global-batch",
                  "2048", "--gpu-counts", "8,16", "--mode", "weak", "--systems", "dgx-h100"});
  CHECK(model_seq["rows"][1]["batch_above_published"] == true);
  CHECK(model_seq["warnings"] == j["warnings"]);
  const nlohmann::json small =
      scale_json({"--gpu-counts", "8,16", "--mode", "weak", "--systems", "dgx-h100"});
  CHECK_FALSE(small.contains("warnings"));
}

TEST_CASE("cli: scale --replan at flow fidelity re-checks the best layouts at flow",
          "[cli][scale]") {
  // 64 PCIe/Ethernet H100s, Llama 3 8B, batch 1024: the contention-free ranking's best plan
  // (PP2 VP16) loses at flow fidelity to another layout of the ranking's top three (PP2 VP4,
  // 7,528 against 8,000 tokens/s per GPU when this test was written).
  const std::vector<std::string> study = {
      "scale",  "--replan", "--systems", "generic-h100-pcie-eth",       "--gpu-counts", "64",
      "--mode", "strong",   "--set",     "/training/global_batch=1024", "--json"};
  auto row_of = [](std::vector<std::string> args) {
    const CliResult r = run_fabricsim(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json rows = nlohmann::json::parse(r.out)["rows"];
    REQUIRE(rows.size() == 1);
    return rows[0];
  };
  std::vector<std::string> analytical = study;
  analytical.insert(analytical.end(), {"--backend", "analytical"});
  const nlohmann::json ranked_best = row_of(analytical);
  const nlohmann::json rechecked = row_of(study);
  // The analytical ranking's pick, simulated at flow fidelity.
  const CliResult run =
      run_fabricsim({"run", "--system", "generic-h100-pcie-eth", "--gpus", "64", "--set",
                     "/training/global_batch=1024", "--set",
                     "/parallelism=" + ranked_best["parallelism"].dump(), "--json"});
  INFO(run.err);
  REQUIRE(run.code == 0);
  const double pick_at_flow = nlohmann::json::parse(run.out)["tokens_per_s_per_gpu"];
  CHECK(rechecked["plan"] != ranked_best["plan"]);
  CHECK(rechecked["tokens_per_s_per_gpu"].get<double>() > pick_at_flow);
}
