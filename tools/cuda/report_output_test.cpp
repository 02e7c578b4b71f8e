#include "tools/cuda/report_output.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/input_error.hpp"

using fabricsim::tools::cuda::ReportOutput;

TEST_CASE("bench reports go to the file named, which is checked before measuring", "[cuda-tools]") {
  const auto path = std::filesystem::temp_directory_path() / "fabricsim-report-output-test.json";
  {
    ReportOutput output(path.string());
    output.write("{\"rows\": []}\n");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "{\"rows\": []}\n");
  std::filesystem::remove(path);

  CHECK_THROWS_WITH(
      ReportOutput("/nonexistent/dir/report.json"),
      Catch::StartsWith("/nonexistent/dir/report.json: cannot open the file for writing"));
  // Ranks that do not write open nothing, so a bad path is not theirs to report.
  CHECK_NOTHROW(ReportOutput("/nonexistent/dir/report.json", false));
}
