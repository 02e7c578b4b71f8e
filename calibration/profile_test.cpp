#include "calibration/profile.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>

#include "sim/input_error.hpp"
#include "tests/model_cases.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/source_file.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;
using fabricsim::testing::ScratchDir;

using fabricsim::testing::h100;

namespace {

/// A profile in which every field differs from its default, with values that have no short
/// decimal form (1/3, 1/7) so that a lossy number format would show.
CalibrationProfile unusual_profile() {
  CalibrationProfile p;
  p.system = "dgx-h100";
  p.gpu = "H100-SXM5";
  p.created = "2031-02-03";
  for (size_t i = 0; i < p.compute.gemm.size(); ++i) {
    models::GemmParams& g = p.compute.gemm[i];
    g.max_efficiency = 0.5 + static_cast<double>(i) / 30.0;
    g.k_half = 100.0 / 3.0 + 7.25 * static_cast<double>(i);
    g.tile_m = i % 3 == 0 ? 64 : i % 3 == 1 ? 128 : 256;
    g.tile_n = i % 2 == 0 ? 256 : 64;
    g.launch = sim::Time::from_ps(3'000'001 + 12'345 * static_cast<int64_t>(i));
    g.fitted = i % 2 == 0;
  }
  p.compute.gemm[5].launch = sim::Time::zero();  // "0 ps" must read back as zero
  p.compute.attention_forward_efficiency = 4.0 / 7.0;
  p.compute.attention_backward_efficiency = 3.0 / 7.0;
  p.compute.attention_span_half = 1000.0 / 3.0;
  p.compute.memory_efficiency = 0.777;
  p.compute.kernel_launch = sim::Time::from_ps(4'321'987);
  p.compute.kernel_gap = sim::Time::from_ps(1'234'567);
  p.compute.comm_sm_contention = 1.25;
  p.compute.fitted_in_step = true;
  p.compute.source = "compute: unit test, \"quoted\" and unicode \u00b5s";
  p.collective.nvlink_efficiency = 0.8 + 1.0 / 300.0;
  p.collective.network_efficiency = 0.9 + 1.0 / 700.0;
  p.collective.pcie_efficiency = 0.87;
  p.collective.nvls_factor = 0.8;
  p.collective.ll_wire_factor = 2.125;
  p.collective.ll128_wire_factor = 1.0 / 0.91;
  p.collective.latency_scale = 1.0 / 3.0;
  p.collective.launch_overhead = sim::Time::from_ps(24'837'391);
  p.collective.p2p_latency_intra = sim::Time::from_ps(7'100'003);
  p.collective.p2p_latency_inter = sim::Time::from_ps(9'400'007);
  p.collective.channels = 24;
  p.collective.source = "collective: unit test";
  p.gemm_fit["bf16"] = FitQuality{59, 0.99 + 1.0 / 900.0, 1.0 / 30.0, 0.15, 0.04 + 1e-17};
  p.gemm_fit["fp8"] = FitQuality{5, 0.9, 0.02, 0.05, -1};
  p.collective_fit = FitQuality{33, 0.997, 0.0847, 0.2648, -1};
  p.provenance.push_back({"logs/run17.log", "nccl_tests_log", "NVIDIA H100 80GB HBM3",
                          "NCCL 2.18.5+cuda12.2", "2024-05-06", "first file"});
  p.provenance.push_back({"gemm.csv", "gemm_csv", "", "", "", ""});
  p.notes = {"first note", "second note"};
  return p;
}

void check_same_profile(const CalibrationProfile& a, const CalibrationProfile& b) {
  CHECK(a.system == b.system);
  CHECK(a.gpu == b.gpu);
  CHECK(a.created == b.created);
  for (size_t i = 0; i < a.compute.gemm.size(); ++i) {
    INFO("gemm precision " << topologies::to_string(static_cast<topologies::Precision>(i)));
    const models::GemmParams& x = a.compute.gemm[i];
    const models::GemmParams& y = b.compute.gemm[i];
    CHECK(x.max_efficiency == y.max_efficiency);
    CHECK(x.k_half == y.k_half);
    CHECK(x.tile_m == y.tile_m);
    CHECK(x.tile_n == y.tile_n);
    CHECK(x.launch == y.launch);
    CHECK(x.fitted == y.fitted);
    CHECK(x == y);
  }
  CHECK(a.compute.attention_forward_efficiency == b.compute.attention_forward_efficiency);
  CHECK(a.compute.attention_backward_efficiency == b.compute.attention_backward_efficiency);
  CHECK(a.compute.attention_span_half == b.compute.attention_span_half);
  CHECK(a.compute.memory_efficiency == b.compute.memory_efficiency);
  CHECK(a.compute.kernel_launch == b.compute.kernel_launch);
  CHECK(a.compute.kernel_gap == b.compute.kernel_gap);
  CHECK(a.compute.comm_sm_contention == b.compute.comm_sm_contention);
  CHECK(a.compute.fitted_in_step == b.compute.fitted_in_step);
  CHECK(a.compute.source == b.compute.source);
  CHECK(a.collective.nvlink_efficiency == b.collective.nvlink_efficiency);
  CHECK(a.collective.network_efficiency == b.collective.network_efficiency);
  CHECK(a.collective.pcie_efficiency == b.collective.pcie_efficiency);
  CHECK(a.collective.nvls_factor == b.collective.nvls_factor);
  CHECK(a.collective.ll_wire_factor == b.collective.ll_wire_factor);
  CHECK(a.collective.ll128_wire_factor == b.collective.ll128_wire_factor);
  CHECK(a.collective.latency_scale == b.collective.latency_scale);
  CHECK(a.collective.launch_overhead == b.collective.launch_overhead);
  CHECK(a.collective.p2p_latency_intra == b.collective.p2p_latency_intra);
  CHECK(a.collective.p2p_latency_inter == b.collective.p2p_latency_inter);
  CHECK(a.collective.channels == b.collective.channels);
  CHECK(a.collective.source == b.collective.source);
  CHECK(a.gemm_fit == b.gemm_fit);
  CHECK(a.collective_fit == b.collective_fit);
  REQUIRE(a.provenance.size() == b.provenance.size());
  for (size_t i = 0; i < a.provenance.size(); ++i) {
    INFO("provenance " << i);
    CHECK(a.provenance[i].file == b.provenance[i].file);
    CHECK(a.provenance[i].format == b.provenance[i].format);
    CHECK(a.provenance[i].gpu_name == b.provenance[i].gpu_name);
    CHECK(a.provenance[i].versions == b.provenance[i].versions);
    CHECK(a.provenance[i].date == b.provenance[i].date);
    CHECK(a.provenance[i].notes == b.provenance[i].notes);
  }
  CHECK(a.notes == b.notes);
}

/// Writes a profile document to a file and loads it; the loading must fail at `pointer` of that
/// file with a message containing `text`.
void check_profile_rejected(const nlohmann::json& doc, const std::string& pointer,
                            const std::string& text) {
  INFO("expecting " << pointer << ": " << text);
  const ScratchDir dir("profile-bad");
  const std::string path = dir.write("bad-profile.json", doc.dump(1));
  try {
    load_profile(path);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == path);
    CHECK(e.path() == pointer);
    CHECK_THAT(e.message(), Catch::Contains(text));
    CHECK_THAT(std::string(e.what()), Catch::StartsWith(path + ": " + pointer + ": "));
  }
}

nlohmann::json valid_profile_json() {
  return profile_to_json(*builtin_profile("dgx-h100"));
}

}  // namespace

TEST_CASE("a profile round-trips exactly through its JSON file", "[profile]") {
  const CalibrationProfile original = unusual_profile();
  const ScratchDir dir("profile-roundtrip");
  const std::string path = dir.write("p.json", profile_to_json(original).dump(1));
  const CalibrationProfile loaded = load_profile(path);
  check_same_profile(original, loaded);
  // Writing the loaded profile again gives the same document: the format is a fixed point.
  CHECK(profile_to_json(loaded) == profile_to_json(original));
}

TEST_CASE("optional parts of a profile round-trip when absent", "[profile]") {
  CalibrationProfile p = unusual_profile();
  p.gemm_fit.clear();
  p.collective_fit.reset();
  p.provenance.clear();
  p.notes.clear();
  p.created.clear();
  p.collective.launch_overhead = sim::Time::zero();
  const nlohmann::json j = profile_to_json(p);
  CHECK(j.at("fit").at("collective").is_null());
  const CalibrationProfile loaded =
      profile_from_json(sim::JsonDocument(nlohmann::json::parse(j.dump()), "p.json").root());
  check_same_profile(p, loaded);
}

TEST_CASE("the built-in profile files are in the canonical format", "[profile]") {
  // calibration/profiles/*.json are generated by `fabricsim calibrate builtin`; a hand edit that
  // does not survive a read and write shows up here.
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    INFO(preset.name);
    const CalibrationProfile* builtin = builtin_profile(preset.name);
    REQUIRE(builtin != nullptr);
    const std::string file = testing::source_file("calibration/profiles", preset.name + ".json");
    REQUIRE(std::filesystem::exists(file));
    const nlohmann::json on_disk = nlohmann::json::parse(testing::read_file(file));
    CHECK(profile_to_json(*builtin) == on_disk);
  }
}

TEST_CASE("unknown keys in a profile file are named with file and pointer",
          "[profile][bad-input]") {
  struct Case {
    std::string parent;
    std::string key;
  };
  for (const Case& c :
       {Case{"", "colective"}, Case{"/compute", "gemm_efficiency"}, Case{"/compute/gemm", "int4"},
        Case{"/compute/gemm/bf16", "tile_k"}, Case{"/collective", "nvlink_eff"},
        Case{"/fit", "training"}, Case{"/fit/gemm/bf16", "rmse"}, Case{"/provenance/0", "url"}}) {
    nlohmann::json doc = valid_profile_json();
    doc[nlohmann::json::json_pointer(c.parent)][c.key] = 1;
    check_profile_rejected(doc, c.parent + "/" + c.key, "unknown key '" + c.key + "'");
  }
}

TEST_CASE("bad units and values in a profile file are named with file and pointer",
          "[profile][bad-input]") {
  struct Case {
    std::string pointer;
    nlohmann::json value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"/compute/gemm/bf16/launch", "5 parsecs", "unknown unit 'parsecs'"},
      {"/compute/gemm/bf16/launch", "-3 us", "non-negative number"},
      {"/collective/launch_overhead", "25", "the unit is missing"},
      {"/compute/kernel_gap", 2000, "written as a string with its unit"},
      {"/collective/p2p_latency_inter", "9.3 Gbps", "unknown unit 'Gbps'"},
      {"/collective/nvlink_efficiency", 1.5, "an efficiency between 0.01 and 1"},
      {"/collective/network_efficiency", 0, "an efficiency between 0.01 and 1"},
      {"/compute/memory_efficiency", 0, "an efficiency between 0.01 and 1"},
      {"/compute/attention_forward_efficiency", 1e-300, "an efficiency between 0.01 and 1"},
      {"/collective/channels", 4294967312, "a positive integer below 2^31"},
      {"/collective/channels", 1, "at least 2 channels"},
      {"/compute/gemm/fp8/max_efficiency", 0, "an efficiency between 0.01 and 1"},
      {"/compute/gemm/fp8/tile_n", 4294967297, "a positive integer below 2^31"},
      {"/compute/gemm/fp8/tile_m", 0, "a positive integer"},
      {"/compute/attention_span_half", -1, "a non-negative number"},
      {"/compute/sustained_efficiency", 0, "a positive number"},
      {"/compute/sustained_efficiency", 5, "a positive number of at most 4"},
      {"/compute/sustained_source", 7, "a string"},
      {"/format", "fabricsim-profile", "\"fabricsim-calibration\""},
      {"/version", 2, "version 1"},
      {"/gpu", "H100-SXM9", "a known GPU id"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = valid_profile_json();
    doc[nlohmann::json::json_pointer(c.pointer)] = c.value;
    check_profile_rejected(doc, c.pointer, c.expected);
  }
  SECTION("a missing required field") {
    nlohmann::json doc = valid_profile_json();
    doc["collective"].erase("latency_scale");
    check_profile_rejected(doc, "/collective/latency_scale", "missing required field");
  }
}

TEST_CASE("malformed and missing profile files are input errors", "[profile][bad-input]") {
  const ScratchDir dir("profile-malformed");
  const std::string path =
      dir.write("broken.json", "{\n \"format\": \"fabricsim-calibration\",\n}");
  try {
    load_profile(path);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    CHECK(e.where() == path);
    CHECK_THAT(e.path(), Catch::StartsWith("line 3"));
    CHECK_THAT(e.message(), Catch::Contains("malformed JSON"));
  }
  CHECK_THROWS_AS(load_profile(dir.file("absent.json")), sim::InputError);
}

TEST_CASE("profile_for prefers an explicit file, then the built-in, then defaults", "[profile]") {
  const CalibrationProfile* builtin = builtin_profile("dgx-h100");
  REQUIRE(builtin != nullptr);

  SECTION("an explicit file wins over the built-in profile") {
    CalibrationProfile mine = unusual_profile();
    mine.created = "explicit";
    const ScratchDir dir("profile-for");
    const std::string path = dir.write("mine.json", profile_to_json(mine).dump());
    const CalibrationProfile chosen = profile_for("dgx-h100", h100(), path);
    CHECK(chosen.created == "explicit");
    check_same_profile(chosen, mine);
  }
  SECTION("an explicit file for another GPU is rejected at /gpu") {
    CalibrationProfile other = *builtin_profile("dgx-a100-80gb");
    const ScratchDir dir("profile-for");
    const std::string path = dir.write("a100.json", profile_to_json(other).dump());
    try {
      profile_for("dgx-h100", h100(), path);
      FAIL("no InputError");
    } catch (const sim::InputError& e) {
      CHECK(e.where() == path);
      CHECK(e.path() == "/gpu");
      CHECK_THAT(e.message(), Catch::Contains("A100-80GB-SXM4") && Catch::Contains("H100-SXM5"));
    }
  }
  SECTION("without a file a preset gets its built-in profile") {
    const CalibrationProfile chosen = profile_for("dgx-h100", h100());
    check_same_profile(chosen, *builtin);
    CHECK(chosen.compute.gemm_for(topologies::Precision::bf16).fitted);
  }
  SECTION("a system without a built-in profile gets the GPU's defaults") {
    CHECK(builtin_profile("my-own-cluster") == nullptr);
    const CalibrationProfile chosen = profile_for("my-own-cluster", h100());
    CHECK(chosen.system == "my-own-cluster");
    CHECK(chosen.gpu == "H100-SXM5");
    const models::ComputeProfile compute = models::default_compute_profile(h100());
    const models::CollectiveProfile collective = models::default_collective_profile(h100());
    CHECK(chosen.compute.gemm == compute.gemm);
    CHECK(chosen.compute.source == compute.source);
    CHECK(chosen.collective.nvlink_efficiency == collective.nvlink_efficiency);
    CHECK(chosen.collective.network_efficiency == collective.network_efficiency);
    CHECK(chosen.collective.source == collective.source);
    CHECK_FALSE(chosen.compute.gemm_for(topologies::Precision::bf16).fitted);
    CHECK_FALSE(chosen.collective_fit.has_value());
    REQUIRE(chosen.notes.size() == 1);
    CHECK_THAT(chosen.notes[0], Catch::Contains("no built-in profile"));
  }
}

TEST_CASE("every system preset has a built-in profile with provenance", "[profile]") {
  const std::regex date(R"(\d{4}-\d{2}-\d{2})");
  REQUIRE_FALSE(topologies::system_presets().empty());
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    INFO(preset.name);
    const CalibrationProfile* p = builtin_profile(preset.name);
    REQUIRE(p != nullptr);
    CHECK(p->system == preset.name);
    CHECK(p->gpu == preset.gpu);
    CHECK(std::regex_match(p->created, date));
    CHECK_FALSE(p->compute.source.empty());
    CHECK_FALSE(p->collective.source.empty());
    // At least one GEMM precision rests on measurements (its own or a sibling die's).
    bool any_fitted = false;
    for (const models::GemmParams& g : p->compute.gemm)
      any_fitted = any_fitted || g.fitted;
    CHECK(any_fitted);
    // Provenance names the public reference files the fit read, and they exist.
    REQUIRE_FALSE(p->provenance.empty());
    int files = 0;
    for (const Provenance& pr : p->provenance) {
      CHECK_FALSE(pr.format.empty());
      CHECK_FALSE(pr.notes.empty());
      if (pr.file.empty()) continue;
      ++files;
      CHECK(std::filesystem::exists(testing::source_file(pr.file)));
    }
    CHECK(files >= 2);
    // Fit qualities, where present, are sane.
    for (const auto& [dtype, q] : p->gemm_fit) {
      INFO(dtype);
      CHECK(q.points > 0);
      CHECK(q.r2 <= 1.0);
      CHECK(q.median_rel_error >= 0);
      CHECK(q.max_rel_error >= q.median_rel_error);
    }
  }
}
