// fabricsim sweep end to end: output folders, resume, shards and merge, bad specs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"

using namespace fabricsim::testing;

namespace {

/// 12 cheap points, two of them infeasible (24 GPUs: dp 3 does not divide the batch).
const char* kSpec = R"({
  "base": {
    "system": {"preset": "dgx-h100", "gpus": 16},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "micro_batch": 1},
    "training": {"global_batch": 16, "seq_len": 4096}
  },
  "axes": {
    "/system/gpus": [8, 16, 24],
    "/system/fabric/nic_bandwidth": ["200 Gbps", "400 Gbps"],
    "/system/fabric/leaf_up_ports": [16, 8]
  },
  "fidelity": "flow"
})";

/// The lines of a file, sorted: a results file's content regardless of completion order.
std::vector<std::string> sorted_lines(const std::string& path) {
  std::vector<std::string> lines = lines_of(read_file(path));
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

TEST_CASE("cli: sweep writes every point to jsonl and csv", "[cli][sweep]") {
  const ScratchDir dir("sweep");
  const std::string spec = dir.write("spec.json", kSpec);
  const CliResult r = run_fabricsim({"sweep", spec, "-o", dir.file("out")});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("12 points evaluated (8 feasible)"));
  CHECK(r.err.empty());  // no progress line when stderr is not a terminal
  const auto jsonl = lines_of(read_file(dir.file("out/results.jsonl")));
  const auto csv = lines_of(read_file(dir.file("out/results.csv")));
  CHECK(jsonl.size() == 12);
  REQUIRE(csv.size() == 13);
  CHECK(csv[0].rfind("id,index,/system/fabric/leaf_up_ports,", 0) == 0);
  CHECK(std::filesystem::exists(dir.file("out/sweep.json")));

  // Without -o the rows go to standard output in point order, the same rows.
  const CliResult plain = run_fabricsim({"sweep", spec, "--threads", "2"});
  REQUIRE(plain.code == 0);
  auto sorted = jsonl;
  std::sort(sorted.begin(), sorted.end());
  CHECK(lines_of(plain.out) == sorted);

  // A folder that holds results is not overwritten or appended to by accident.
  const CliResult again = run_fabricsim({"sweep", spec, "-o", dir.file("out")});
  CHECK(again.code == 2);
  CHECK_THAT(again.err, Catch::Contains("--resume"));
}

TEST_CASE("cli: sweep results are identical on 1 and 2 threads", "[cli][sweep]") {
  const ScratchDir dir("sweep-threads");
  const std::string spec = dir.write("spec.json", kSpec);
  REQUIRE(run_fabricsim({"sweep", spec, "-q", "-o", dir.file("one")}).code == 0);
  REQUIRE(run_fabricsim({"sweep", spec, "-q", "--threads", "2", "-o", dir.file("two")}).code == 0);
  for (const char* f : {"results.jsonl", "results.csv"}) {
    CHECK(sorted_lines(dir.file(std::string("one/") + f)) ==
          sorted_lines(dir.file(std::string("two/") + f)));
  }
  CHECK(read_file(dir.file("one/sweep.json")) == read_file(dir.file("two/sweep.json")));
}

TEST_CASE("cli: an interrupted sweep resumed equals an uninterrupted one", "[cli][sweep]") {
  const ScratchDir dir("sweep-resume");
  const std::string spec = dir.write("spec.json", kSpec);
  REQUIRE(run_fabricsim({"sweep", spec, "-q", "-o", dir.file("full")}).code == 0);

  // An interruption: five rows written, the sixth cut short mid-line, the csv a row behind.
  REQUIRE(run_fabricsim({"sweep", spec, "-q", "-o", dir.file("cut")}).code == 0);
  const auto rows = lines_of(read_file(dir.file("cut/results.jsonl")));
  std::string partial;
  for (size_t k = 0; k < 5; ++k)
    partial += rows[k] + "\n";
  partial += rows[5].substr(0, 40);
  dir.write("cut/results.jsonl", partial);
  const auto csv = lines_of(read_file(dir.file("cut/results.csv")));
  dir.write("cut/results.csv", csv[0] + "\n" + csv[1] + "\n");

  const CliResult r = run_fabricsim({"sweep", spec, "--resume", "-o", dir.file("cut")});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("7 points evaluated"));
  CHECK_THAT(r.out, Catch::Contains("5 done before"));
  for (const char* f : {"results.jsonl", "results.csv"}) {
    CHECK(sorted_lines(dir.file(std::string("cut/") + f)) ==
          sorted_lines(dir.file(std::string("full/") + f)));
  }
  // Resuming a finished sweep evaluates nothing and changes nothing.
  const CliResult done = run_fabricsim({"sweep", spec, "--resume", "-o", dir.file("full")});
  CHECK(done.code == 0);
  CHECK_THAT(done.out, Catch::Contains("0 points evaluated"));
  CHECK(lines_of(read_file(dir.file("full/results.jsonl"))).size() == 12);

  // A folder of another sweep is refused.
  const std::string other =
      dir.write("other.json",
                std::string(kSpec).replace(std::string(kSpec).find("[8, 16, 24]"), 11, "[8, 16]"));
  const CliResult wrong = run_fabricsim({"sweep", other, "--resume", "-o", dir.file("full")});
  CHECK(wrong.code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("different sweep"));
}

TEST_CASE("cli: shards merged equal one run", "[cli][sweep]") {
  const ScratchDir dir("sweep-shard");
  const std::string spec = dir.write("spec.json", kSpec);
  REQUIRE(run_fabricsim({"sweep", spec, "-q", "-o", dir.file("all")}).code == 0);
  for (const char* i : {"0", "1", "2"}) {
    REQUIRE(run_fabricsim({"sweep", spec, "-q", "--shard", std::string(i) + "/3", "-o",
                           dir.file(std::string("s") + i)})
                .code == 0);
  }
  CHECK(lines_of(read_file(dir.file("s1/results.jsonl"))).size() == 4);

  // Two of three shards: incomplete, refused unless --allow-missing.
  const CliResult part =
      run_fabricsim({"sweep", "merge", dir.file("s0"), dir.file("s2"), "-o", dir.file("part")});
  CHECK(part.code == 2);
  CHECK_THAT(part.err, Catch::Contains("4 of 12 points are missing"));
  CHECK_FALSE(std::filesystem::exists(dir.file("part")));
  const CliResult allowed = run_fabricsim({"sweep", "merge", dir.file("s0"), dir.file("s2"), "-o",
                                           dir.file("part"), "--allow-missing"});
  CHECK(allowed.code == 0);
  CHECK_THAT(allowed.out, Catch::Contains("4 missing"));

  // All three, one of them twice: complete, the duplicate rows reported and dropped.
  const CliResult m = run_fabricsim({"sweep", "merge", dir.file("s0"), dir.file("s1"),
                                     dir.file("s2"), dir.file("s1"), "-o", dir.file("merged")});
  REQUIRE(m.code == 0);
  CHECK_THAT(m.out, Catch::Contains("merged 12 of 12 points"));
  CHECK_THAT(m.out, Catch::Contains("4 duplicate rows"));
  // The merge is sorted by point id, and equals the single run once that is sorted.
  const auto merged = lines_of(read_file(dir.file("merged/results.jsonl")));
  CHECK(std::is_sorted(merged.begin(), merged.end()));
  CHECK(merged == sorted_lines(dir.file("all/results.jsonl")));
  CHECK(sorted_lines(dir.file("merged/results.csv")) == sorted_lines(dir.file("all/results.csv")));
  CHECK(read_file(dir.file("merged/sweep.json")) == read_file(dir.file("all/sweep.json")));
}

TEST_CASE("cli: sweep rejects bad specs and flags with exit code 2", "[cli][sweep][bad-input]") {
  const ScratchDir dir("sweep-bad");
  const std::string bad =
      dir.write("bad.json", R"({"axes": {"/system/fabric/nic_speed": ["400 Gbps"]}})");
  const CliResult r = run_fabricsim({"sweep", bad});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains(bad + ": /axes/~1system~1fabric~1nic_speed"));
  const std::string spec = dir.write("spec.json", kSpec);
  CHECK(run_fabricsim({"sweep", spec, "--shard", "3/3"}).code == 2);
  CHECK(run_fabricsim({"sweep", spec, "--shard", "one"}).code == 2);
  CHECK(run_fabricsim({"sweep", spec, "--resume"}).code == 2);
  CHECK(run_fabricsim({"sweep", dir.file("missing.json")}).code == 2);
  CHECK(run_fabricsim({"sweep"}).code == 2);
}
