#include "api/confidence.hpp"

#include <catch2/catch.hpp>

#include "api/training_run.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

Scenario scenario(const std::vector<std::string>& sets) {
  nlohmann::json doc = default_scenario_json();
  apply_assignments(doc, sets, "<test>");
  return read_scenario(sim::JsonDocument(doc, "test").root());
}

}  // namespace

TEST_CASE("confidence names the fitted data behind a result", "[confidence]") {
  const Scenario s = scenario({});
  const Confidence c =
      assess_confidence(calibration::profile_for(s.system(), scenario_gpu(s), ""), s);
  // DGX H100's built-in profile: bf16 GEMMs and collectives fitted to public measurements.
  CHECK(c.precision == "bf16");
  CHECK(c.gemm_fitted);
  CHECK(c.gemm_points > 0);
  CHECK(c.collective_fitted);
  CHECK_FALSE(c.unmeasured);
  CHECK(c.software == "default");
  CHECK_FALSE(c.software_documented);
  CHECK_THAT(confidence_line(c), Catch::Contains("points") && Catch::Contains("default stack"));
  const nlohmann::json j = confidence_to_json(c);
  CHECK(j["gemm"]["points"] == c.gemm_points);
  CHECK(j["software"]["preset"] == "default");
}

TEST_CASE("confidence states the sustained clock where one measured figure sets it",
          "[confidence]") {
  // H100's bf16 fit is a burst rate: the step runs at 681 / 836 of it (models::sustained_clock,
  // the sustained rate measured on an H200, topologies/gpu_spec.cpp).
  const Scenario h100 = scenario({});
  const Confidence c =
      assess_confidence(calibration::profile_for(h100.system(), scenario_gpu(h100), ""), h100);
  CHECK(c.sustained_clock == Approx(0.814).epsilon(0.002));
  CHECK_THAT(confidence_line(c), Catch::Contains("sustained clock 0.814"));
  CHECK(confidence_to_json(c)["sustained_clock"] == c.sustained_clock);
  // FP8 has its own measured figure: 1272 over the fit's 0.703 x 1978.9.
  const Scenario fp8 = scenario({"/training/precision=fp8"});
  const Confidence f =
      assess_confidence(calibration::profile_for(fp8.system(), scenario_gpu(fp8), ""), fp8);
  CHECK(f.sustained_clock == Approx(0.914).epsilon(0.002));
  // A100: heat-soaked GEMMs' 256.5 TFLOP/s over its fit's burst (0.883 x 312).
  const Scenario a100 = scenario({"/system/preset=dgx-a100-80gb"});
  const Confidence a =
      assess_confidence(calibration::profile_for(a100.system(), scenario_gpu(a100), ""), a100);
  CHECK(a.sustained_clock == Approx(0.931).epsilon(0.002));
  CHECK_FALSE(a.sustained_assumed);
  CHECK_THAT(confidence_line(a), Catch::Contains("sustained clock 0.931 of the fit (one GPU"));
}

TEST_CASE("fp16 runs on bf16's fit and says so", "[confidence]") {
  const Scenario bf16 = scenario({});
  const Scenario fp16 = scenario({"/training/precision=fp16"});
  const calibration::CalibrationProfile profile =
      calibration::profile_for(bf16.system(), scenario_gpu(bf16), "");
  const Confidence a = assess_confidence(profile, bf16);
  const Confidence b = assess_confidence(profile, fp16);
  CHECK(b.precision == "fp16");
  CHECK(b.gemm_fitted);
  CHECK(b.gemm_points == a.gemm_points);
  CHECK(b.gemm_median == a.gemm_median);
}

TEST_CASE("confidence says where FP8 attention's speed-up comes from", "[confidence]") {
  const auto line = [](const std::vector<std::string>& sets) {
    const Scenario s = scenario(sets);
    return confidence_line(
        assess_confidence(calibration::profile_for(s.system(), scenario_gpu(s), ""), s));
  };
  CHECK_THAT(line({"/training/precision=fp8", "/software/framework=megatron-bridge",
                   "/software/fp8_attention=true"}),
             Catch::Contains("FP8 attention at cuDNN's benchmarked FP8/BF16 rates"));
  // In BF16 the setting runs nothing in FP8.
  CHECK_THAT(line({"/software/framework=megatron-bridge", "/software/fp8_attention=true"}),
             !Catch::Contains("FP8 attention"));
  CHECK_THAT(line({"/training/precision=fp8"}), !Catch::Contains("FP8 attention"));
}

TEST_CASE("confidence says Hybrid-EP's NVLink rates are Blackwell's", "[confidence]") {
  const auto line = [](const std::vector<std::string>& sets) {
    const Scenario s = scenario(sets);
    return confidence_line(
        assess_confidence(calibration::profile_for(s.system(), scenario_gpu(s), ""), s));
  };
  const std::vector<std::string> moe = {"/model={\"preset\": \"qwen3-30b-a3b\"}",
                                        "/parallelism/ep=8", "/software/framework=megatron-bridge"};
  std::vector<std::string> hybrid = moe;
  hybrid.push_back("/software/moe_dispatcher=hybridep");
  CHECK_THAT(line(hybrid), Catch::Contains("Hybrid-EP over NVLink at Blackwell's measured rates"));
  // Not through another dispatcher, and not on a Blackwell GPU.
  std::vector<std::string> deepep = moe;
  deepep.push_back("/software/moe_dispatcher=deepep");
  CHECK_THAT(line(deepep), !Catch::Contains("Hybrid-EP"));
  std::vector<std::string> b200 = hybrid;
  b200.push_back("/system/preset=dgx-b200");
  CHECK_THAT(line(b200), !Catch::Contains("Hybrid-EP"));
}

TEST_CASE("confidence names the known gaps of the paths a scenario runs", "[confidence]") {
  const auto gaps = [](const std::vector<std::string>& sets) { return known_gaps(scenario(sets)); };
  const std::vector<std::string> moe = {"/model={\"preset\": \"qwen3-30b-a3b\"}",
                                        "/parallelism/ep=8", "/software/framework=megatron-bridge"};
  std::vector<std::string> alltoall = moe;
  alltoall.push_back("/software/moe_dispatcher=alltoall");
  REQUIRE(gaps(alltoall).size() == 1);
  CHECK_THAT(gaps(alltoall)[0], Catch::Contains("all-to-all dispatcher"));
  const Scenario s = scenario(alltoall);
  const Confidence c =
      assess_confidence(calibration::profile_for(s.system(), scenario_gpu(s), ""), s);
  CHECK_THAT(confidence_line(c), Catch::Contains("KNOWN GAP: dropless MoE"));
  CHECK(confidence_to_json(c)["known_gaps"].size() == 1);
  // Not through the flex dispatchers, not with capacity-padded routing (static shapes, no host
  // sync), not with the fused MLP, not without expert parallelism, not for a dense model.
  for (const char* other :
       {"/software/moe_dispatcher=hybridep", "/software/moe_dispatcher=deepep",
        "/model/moe/capacity_factor=1.0", "/software/fused_moe_mlp=true", "/parallelism/ep=1"}) {
    std::vector<std::string> sets = alltoall;
    sets.push_back(other);
    INFO(other);
    CHECK(gaps(sets).empty());
  }
  CHECK(gaps({}).empty());
  // GPT-OSS's layer, whatever its dispatcher.
  const auto oss =
      gaps({"/model={\"preset\": \"gpt-oss-120b\"}", "/parallelism/ep=8",
            "/software/framework=megatron-bridge", "/software/moe_dispatcher=hybridep"});
  REQUIRE(oss.size() == 1);
  CHECK_THAT(oss[0], Catch::Contains("GPT-OSS"));
  // Expert-parallel MoE on the x86 Blackwell systems, whatever the dispatcher; not on Grace
  // Blackwell, not on x86 Hopper, not for a dense model or without expert parallelism.
  std::vector<std::string> hybrid = moe;
  hybrid.push_back("/software/moe_dispatcher=hybridep");
  for (const char* x86 : {"dgx-b200", "dgx-b300"}) {
    std::vector<std::string> sets = hybrid;
    sets.push_back(std::string("/system/preset=") + x86);
    INFO(x86);
    const auto g = gaps(sets);
    REQUIRE(g.size() == 1);
    CHECK_THAT(g[0], Catch::Contains("x86 Blackwell"));
    sets.push_back("/software/moe_dispatcher=alltoall");
    CHECK(gaps(sets).size() == 2);
    sets.push_back("/parallelism/ep=1");
    CHECK(gaps(sets).empty());
  }
  for (const char* other : {"gb200-nvl72", "gb300-nvl72", "dgx-h100"}) {
    std::vector<std::string> sets = hybrid;
    sets.push_back(std::string("/system/preset=") + other);
    INFO(other);
    CHECK(gaps(sets).empty());
  }
  CHECK(gaps({"/system/preset=dgx-b200"}).empty());
}

TEST_CASE("confidence flags a system nothing was measured on", "[confidence]") {
  const Scenario s =
      scenario({"/system/preset=vr-nvl144", "/system/gpus=144", "/training/global_batch=144",
                "/software={\"framework\": \"nemo\", \"version\": \"24.07\"}"});
  const Confidence c =
      assess_confidence(calibration::profile_for(s.system(), scenario_gpu(s), ""), s);
  CHECK_FALSE(c.gemm_fitted);
  CHECK(c.software == "nemo-24.07");
  CHECK(c.software_documented);
  CHECK_THAT(confidence_line(c), Catch::Contains("no measurement of this GPU"));
}

TEST_CASE("confidence tells announced figures from inherited ones", "[confidence]") {
  // Vera Rubin: announced, not measured (its alias names the same preset).
  const Confidence rubin = scenario_confidence(
      scenario({"/system/preset=vr-nvl144", "/system/gpus=72", "/training/global_batch=72"}));
  CHECK(rubin.system == "vr-nvl72");
  CHECK(rubin.calibration == "built-in profile of vr-nvl72");
  CHECK(rubin.announced);
  CHECK(rubin.unmeasured);
  CHECK_THAT(confidence_line(rubin), Catch::EndsWith("ANNOUNCED system: vendor figures, not "
                                                     "measured"));
  // GB300 ships, but no public GEMM or collective point of it was fitted: inherited figures.
  const Confidence gb300 = scenario_confidence(
      scenario({"/system/preset=gb300-nvl72", "/system/gpus=72", "/training/global_batch=72"}));
  CHECK_FALSE(gb300.announced);
  CHECK(gb300.unmeasured);
  CHECK_THAT(confidence_line(gb300), Catch::EndsWith("UNMEASURED system: inherited figures only") &&
                                         Catch::Contains("no measurement of this GPU"));
  // Its collective parameters are GB200 NVL72's fit, not NCCL's constants alone.
  CHECK_THAT(confidence_line(gb300),
             Catch::Contains("collectives: no measurement of this system (a related preset's fit"));
  CHECK(confidence_to_json(gb300)["announced"] == false);
  CHECK(confidence_to_json(rubin)["announced"] == true);
}

TEST_CASE("confidence names one public point as one", "[confidence]") {
  // GB200 NVL72's built-in profile: one bf16 GEMM point (a sweep maximum: the ceiling).
  const Confidence c = scenario_confidence(scenario({"/system/preset=gb200-nvl72"}));
  REQUIRE(c.gemm_points == 1);
  CHECK_THAT(confidence_line(c), Catch::StartsWith("GEMM bf16: 1 point only (the ceiling; no "
                                                   "shape dependence measured)"));
  CHECK(confidence_with_calibration(c) == "built-in profile of gb200-nvl72; " + confidence_line(c));
}

TEST_CASE("confidence names the calibration behind it", "[confidence]") {
  Scenario s = scenario({});
  models::ComputeProfile compute;
  CHECK(describe_calibration(s, compute) == "built-in profile of dgx-h100");
  s.calibration = "profiles/my-node.json";
  CHECK(describe_calibration(s, compute) == "profiles/my-node.json");
  compute.sustained_efficiency = 0.8;
  compute.sustained_source = "one measured run";
  CHECK(describe_calibration(s, compute) ==
        "profiles/my-node.json, sustained efficiency 0.800 from one measured run");
}
