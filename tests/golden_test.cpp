// Golden outputs: a handful of deterministic commands whose text output must match
// tests/golden/*.txt byte for byte. After an intended change of output, regenerate the files and
// review the diff before committing it:
//
//   FABRICSIM_UPDATE_GOLDEN=1 ./build/tests/fabricsim_tests "[golden]"
//   git diff tests/golden
//
// Wall-clock times are the only non-deterministic output; they are filtered here: the `run`
// report's "... in X.XXX s" of simulation wall time, and `scale --json`'s simulate_wall_s. The
// JSON's numbers are rounded to 6 significant digits (the text outputs round their own).

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/source_file.hpp"

using fabricsim::testing::CliResult;
using fabricsim::testing::lines_of;
using fabricsim::testing::run_fabricsim;

namespace {

std::string golden_path(const std::string& name) {
  return fabricsim::testing::source_file("tests/golden", name);
}

bool updating() {
  const char* v = std::getenv("FABRICSIM_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

/// Compares `actual` with the golden file `name` (or rewrites it when updating), reporting the
/// first line that differs.
void check_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (updating()) {
    std::ofstream out(path, std::ios::binary);
    out << actual;
    REQUIRE(out.good());
    WARN("rewrote " << path);
    return;
  }
  INFO("golden file " << path
                      << " (regenerate with FABRICSIM_UPDATE_GOLDEN=1 after an intended change)");
  std::ifstream probe(path);
  REQUIRE(probe.good());
  const std::string expected = fabricsim::testing::read_file(path);
  if (expected == actual) {
    SUCCEED();
    return;
  }
  const auto want = lines_of(expected);
  const auto got = lines_of(actual);
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "<end of file>";
    const std::string g = i < got.size() ? got[i] : "<end of output>";
    if (w != g) {
      FAIL("line " << i + 1 << " differs:\n  expected: " << w << "\n  actual:   " << g);
    }
  }
  FAIL("the output differs from the golden file in line endings or a trailing newline");
}

std::string run_ok(const std::vector<std::string>& args) {
  const CliResult r = run_fabricsim(args);
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  return r.out;
}

/// Drops the simulation wall time from the `run` report's last line: "... flows) in 0.123 s".
std::string without_wall_time(const std::string& text) {
  static const std::regex wall(R"( in [0-9]+\.[0-9]{3} s\n)");
  std::string out = std::regex_replace(text, wall, "\n");
  return out;
}

/// Rounds every floating-point number to 6 significant digits, and rounding residue (|x| below
/// 1e-9, e.g. 1 - 0.3 - 0.7) to 0, so that the golden JSON does not depend on the last bits of
/// floating-point arithmetic.
void round_numbers(nlohmann::json& j) {
  if (j.is_number_float()) {
    const double x = j.get<double>();
    j = std::fabs(x) < 1e-9 ? 0.0 : std::stod(fmt::format("{:.6g}", x));
  } else if (j.is_structured()) {
    for (nlohmann::json& child : j)
      round_numbers(child);
  }
}

}  // namespace

TEST_CASE("golden: topology of 64 DGX H100 GPUs", "[golden]") {
  check_golden("topology-dgx-h100-64.txt",
               run_ok({"topology", "--system", "dgx-h100", "--gpus", "64"}));
}

TEST_CASE("golden: topology of 144 GB200 NVL72 GPUs", "[golden]") {
  check_golden("topology-gb200-nvl72-144.txt",
               run_ok({"topology", "--system", "gb200-nvl72", "--gpus", "144"}));
}

TEST_CASE("golden: all_reduce table on 16 DGX H100 GPUs", "[golden]") {
  check_golden("collective-dgx-h100-16.txt", run_ok({"collective", "--system", "dgx-h100", "--gpus",
                                                     "16", "-b", "1M", "-e", "64M"}));
}

TEST_CASE("golden: run of the default scenario, analytical backend", "[golden]") {
  const std::string text = run_ok({"run", "--backend", "analytical"});
  const std::string filtered = without_wall_time(text);
  // Exactly one line carried a wall time.
  CHECK(filtered.size() < text.size());
  CHECK(lines_of(filtered).size() == lines_of(text).size());
  check_golden("run-default-analytical.txt", filtered);
}

TEST_CASE("golden: weak scaling of the default scenario on DGX H100", "[golden]") {
  check_golden("scale-dgx-h100-weak.txt",
               run_ok({"scale", "--gpu-counts", "8,16,32", "--systems", "dgx-h100", "--mode",
                       "weak", "--backend", "analytical"}));
}

TEST_CASE("golden: scale --json without wall times", "[golden]") {
  nlohmann::json doc = nlohmann::json::parse(
      run_ok({"scale", "--gpu-counts", "8,16", "--systems", "dgx-h100,gb200-nvl72", "--mode",
              "both", "--strong-global-batch", "128", "--backend", "analytical", "--json"}));
  REQUIRE(doc.at("rows").size() == 8);
  for (nlohmann::json& row : doc["rows"]) {
    REQUIRE(row.contains("simulate_wall_s"));
    row.erase("simulate_wall_s");
  }
  round_numbers(doc);
  check_golden("scale-json-two-systems.txt", doc.dump(2) + "\n");
}
