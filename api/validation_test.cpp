#include "api/validation.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

using namespace fabricsim::api;

TEST_CASE("validation: one error per case, step time inverted; median, p90 and bias",
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
