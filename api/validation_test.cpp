#include "api/validation.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibration/cases.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim::api;

TEST_CASE("validation: one error per case, step time inverted, then median, p90 and bias",
          "[validate]") {
  std::vector<ValidationRow> rows;
  auto row = [&](const std::string& id, const std::string& metric, double predicted,
                 double measured) {
    rows.push_back({id, "src", "dgx-h100", metric, std::nullopt, predicted, measured,
                    (predicted - measured) / measured, ""});
  };
  row("a", "mfu", 0.5, 0.4);             // not primary: tflops_per_gpu comes first
  row("a", "tflops_per_gpu", 110, 100);  // +10%
  row("b", "step_time_s", 8, 10);        // 10 / 8 - 1 = +25% (optimistic)
  row("c", "busbw_GBps", 90, 100);       // a curve: the median of its points
  row("c", "busbw_GBps", 80, 100);
  row("c", "busbw_GBps", 120, 100);
  const std::vector<CaseError> e = case_errors(rows);
  REQUIRE(e.size() == 3);
  CHECK(e[0].error == Approx(0.10));
  CHECK(e[1].error == Approx(0.25));
  CHECK(e[2].error == Approx(-0.10));
  const CaseSummary s = summarize_cases(e);
  CHECK(s.cases == 3);
  CHECK(s.median_abs_error == Approx(0.10));
  CHECK(s.median_signed_error == Approx(0.10));
  CHECK(s.p90_abs_error == Approx(0.25));  // nearest rank: ceil(0.9 x 3) = the 3rd
  CHECK(summarize_cases({}).cases == 0);
}

namespace {

/// A Llama 3 8B pre-training case at MLPerf's sequence length with `measured` given.
nlohmann::json llama31_8b_record(const nlohmann::json& measured, int layers = 32, int gpus = 8) {
  return {{"id", "mlperf-8b-" + std::to_string(gpus)},
          {"source", "MLPerf Training (test)"},
          {"source_ref", "test"},
          {"kind", "training"},
          {"task", "pretrain"},
          {"system", "gb200-nvl72"},
          {"gpus", gpus},
          {"precision", "fp8"},
          {"framework", {{"name", "nemo"}, {"version", "25.09"}, {"released", "2025-09"}}},
          {"model",
           {{"name", "Llama 3.1 8B"},
            {"layers", layers},
            {"hidden", 4096},
            {"ffn", 14336},
            {"heads", 32},
            {"kv_heads", 8},
            {"vocab", 128256},
            {"seq_len", 8192},
            {"params", 8.0e9},
            {"moe", nullptr},
            {"attention", "gqa"},
            {"mla", nullptr}}},
          {"parallelism",
           {{"tp", 1},
            {"pp", 1},
            {"dp", gpus},
            {"cp", 1},
            {"ep", nullptr},
            {"vp", nullptr},
            {"zero", nullptr},
            {"micro_batch", 2},
            {"global_batch", 2 * gpus},
            {"recompute", nullptr},
            {"sequence_parallel", nullptr},
            {"fsdp", nullptr}}},
          {"collective", nullptr},
          {"gemm", nullptr},
          {"measured", measured},
          {"derived", nlohmann::json::array()},
          {"notes", ""}};
}

std::vector<fabricsim::calibration::Case> cases_of(const nlohmann::json& records) {
  return fabricsim::calibration::read_cases(
      fabricsim::sim::parse_json_text(records.dump(), "mlperf.json").root());
}

std::vector<fabricsim::calibration::Case> llama31_8b_case(const nlohmann::json& measured,
                                                          int layers = 32) {
  return cases_of(nlohmann::json::array({llama31_8b_record(measured, layers)}));
}

}  // namespace

TEST_CASE("validation: an MLPerf time to train is the step time times the run's steps",
          "[validate]") {
  ValidationOptions options;
  options.scenario_sets = {"/simulation/backend=analytical"};
  const ValidationReport r = validate_cases(
      llama31_8b_case({{"time_to_train_min", 80.0}, {"tokens_per_s_per_gpu", 40000.0}}), options);
  REQUIRE(r.skipped.empty());
  REQUIRE(r.rows.size() == 2);
  const ValidationRow& tokens = r.rows[0];
  const ValidationRow& ttt = r.rows[1];
  REQUIRE(tokens.metric == "tokens_per_s_per_gpu");
  REQUIRE(ttt.metric == "time_to_train_min");
  const double step = 16 * 8192 / (tokens.predicted * 8);
  // llama31_8b at batch 16: 161,109.3 samples (10,069.3 steps), 13 evaluations of 12,288
  // sequences reached, none skipped, each of 1,024 forward passes: more than the training steps,
  // less than a forward per sequence at the full step's cost would add.
  const double steps = ttt.predicted * 60 / step;
  CHECK(steps > 161109.3 / 16);
  CHECK(steps < 161109.3 / 16 + 13 * 1024.0 / 16);
  CHECK_THAT(ttt.detail, Catch::Contains("MLPerf llama31_8b: 161109 samples to converge, 13 "
                                         "evaluations"));
  // A time is optimistic when predicted short: the case's error is the primary metric's.
  CHECK(optimism(ttt) == Approx(80.0 / ttt.predicted - 1));
  const std::vector<CaseError> e = case_errors(r.rows);
  REQUIRE(e.size() == 1);
  CHECK(e[0].error == Approx(tokens.error));
}

TEST_CASE("validation: a time to train without a benchmark is skipped with its reason",
          "[validate]") {
  ValidationOptions options;
  options.scenario_sets = {"/simulation/backend=analytical"};
  // 30 layers: no MLPerf benchmark trains this model.
  const ValidationReport r =
      validate_cases(llama31_8b_case({{"time_to_train_min", 80.0}}, 30), options);
  CHECK(r.rows.empty());
  REQUIRE(r.skipped.size() == 1);
  CHECK_THAT(r.skipped[0].reason,
             Catch::Contains("time_to_train_min: no MLPerf Training benchmark trains 30 layers"));
  // Alone, it is the case's primary metric.
  const ValidationReport only =
      validate_cases(llama31_8b_case({{"time_to_train_min", 80.0}}), options);
  REQUIRE(only.rows.size() == 1);
  CHECK(case_errors(only.rows)[0].error == Approx(80.0 / only.rows[0].predicted - 1));
}

TEST_CASE("validation: an anchor measured by its time to train fits the step time it implies",
          "[validate]") {
  ValidationOptions options;
  options.scenario_sets = {"/simulation/backend=analytical"};
  const ValidationReport zero_shot = validate_cases(
      llama31_8b_case({{"time_to_train_min", 80.0}, {"tokens_per_s_per_gpu", 40000.0}}), options);
  REQUIRE(zero_shot.rows.size() == 2);
  const double step = 16 * 8192 / (zero_shot.rows[0].predicted * 8);
  const double steps = zero_shot.rows[1].predicted * 60 / step;
  // The 8-GPU case anchors the group (the fewest GPUs) with its time to train alone.
  options.anchor = true;
  const ValidationReport anchored = validate_cases(
      cases_of(
          nlohmann::json::array({llama31_8b_record({{"time_to_train_min", 80.0}}),
                                 llama31_8b_record({{"tokens_per_s_per_gpu", 30000.0}}, 32, 16)})),
      options);
  REQUIRE(anchored.anchors.size() == 1);
  CHECK(anchored.anchors[0].id == "mlperf-8b-8");
  CHECK(anchored.anchors[0].metric == "step_time_s");
  CHECK(anchored.anchors[0].measured == Approx(80.0 * 60 / steps));
  CHECK(anchored.anchors[0].scored == 1);
  REQUIRE(anchored.rows.size() == 1);
  CHECK(anchored.rows[0].id == "mlperf-8b-16");
}
