// Regression tests for every class of hostile input in issue 7 (docs/hardening.md lists each class
// with its test): numbers beyond range, deep nesting, integers wider than an int, infinite
// quantities, sizes without bounds, saturated arithmetic, flags out of range, unchecked writes and
// implausible calibration inputs. Each must be one clear error line with exit code 2, never a
// crash, a hang, a silently changed value or a printed overflow.

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <string>
#include <vector>

#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "sim/unit_parse.hpp"
#include "sim/units.hpp"
#include "tests/run_cli.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/shared_reference.hpp"
#include "tests/source_file.hpp"
#include "tools/fabricsim/cli.hpp"

using namespace fabricsim;
using fabricsim::testing::CliResult;
using fabricsim::testing::run_fabricsim;
using fabricsim::testing::ScratchDir;

namespace {

std::string measurement(const std::string& file) {
  return testing::source_file("tests/data/measurements", file);
}

std::string nccl_log(const std::string& file) {
  return testing::source_file("tests/data/nccl-tests", file);
}

/// Runs the CLI and requires exit code 2 with one line on stderr containing `expected`.
void check_rejected(const std::vector<std::string>& args, const std::string& expected) {
  const CliResult r = run_fabricsim(args);
  INFO(fmt::format("fabricsim {}", fmt::join(args, " ")));
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("fabricsim: ") && Catch::Contains(expected));
  CHECK(testing::lines_of(r.err).size() == 1);
}

std::string nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

/// A stream buffer that fails every write, as standard output on a full disk does.
class FullBuffer : public std::streambuf {
 protected:
  int_type overflow(int_type) override { return traits_type::eof(); }
  std::streamsize xsputn(const char*, std::streamsize) override { return 0; }
};

}  // namespace

TEST_CASE("numbers beyond a double are located input errors", "[hardening][bad-input]") {
  try {
    sim::parse_json_text(R"({"system": {"gpus": 1e400}})", "s.json");
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    CHECK(e.where() == "s.json");
    CHECK(e.path() == "/system/gpus");
    CHECK_THAT(e.message(), Catch::StartsWith("expected a number within the range of a double, "
                                              "got '1e400' (line 1, column"));
  }
  CHECK_THROWS_WITH(sim::parse_json_text("[1, [2, -1e999]]", "a.json"),
                    Catch::StartsWith("a.json: /1/1: expected a number within the range"));
  check_rejected({"run", "--set", "/system/gpus=1e400"},
                 "<command line>: /system/gpus: expected a number within the range of a double");
  check_rejected({"run", "--set", R"(/system/fabric={"nic_bandwidth": [1e400]})"},
                 "<command line>: /system/fabric/nic_bandwidth/0: expected a number");
}

TEST_CASE("nesting deeper than the limit is rejected while parsing", "[hardening][bad-input]") {
  CHECK_NOTHROW(sim::parse_json_text(nested(static_cast<int>(sim::kMaxJsonDepth)), "ok.json"));
  CHECK_THROWS_WITH(
      sim::parse_json_text(nested(static_cast<int>(sim::kMaxJsonDepth) + 1), "d.json"),
      Catch::Contains("JSON nested deeper than 64 levels"));
  // The reproducer of the SIGSEGV: 60,000 levels under a key, read as a scenario file.
  const ScratchDir dir("hardening-deep");
  const std::string deep = dir.write("deep.json", "{\"system\": " + nested(60000) + "}");
  check_rejected({"run", deep}, "/system/0/0/0");
  check_rejected({"run", deep}, "JSON nested deeper than 64 levels");
  check_rejected({"topology", "--graph", deep}, "JSON nested deeper than 64 levels");
  check_rejected({"run", "--calibration", deep}, "JSON nested deeper than 64 levels");
  check_rejected({"validate", "--cases", deep}, "JSON nested deeper than 64 levels");
  check_rejected({"run", "--set", "/system/gpus=" + nested(60000)},
                 "<command line>: /system/gpus/0/0");
}

TEST_CASE("a NUL byte does not end JSON input early", "[hardening][bad-input]") {
  // nlohmann stops at a NUL: "8\0garbage" would read as 8.
  CHECK_THROWS_WITH(sim::parse_json_text(std::string("{\"gpus\": 8\0}", 12), "n.json"),
                    "n.json: line 1, column 11: malformed JSON (a NUL byte)");
  CHECK_FALSE(sim::parse_json_value(std::string("4294967\0"
                                                "04",
                                                10),
                                    "<command line>", "/x"));
}

TEST_CASE("duplicate keys are errors, not silently the last one", "[hardening][bad-input]") {
  CHECK_THROWS_WITH(sim::parse_json_text(R"({"a": {"gpus": 8, "gpus": 16}})", "k.json"),
                    "k.json: /a/gpus: duplicate key 'gpus'");
}

TEST_CASE("integers are read at full width and range-checked", "[hardening][bad-input]") {
  for (const std::string set :
       {"/system/gpus=4294967304", "/parallelism/tp=4294967297",
        "/training/global_batch=4294967360", "/training/seq_len=2147483648",
        "/system/fabric/nics_per_server=4294967304", "/system/nvlink/gpus_per_domain=4294967304"}) {
    check_rejected({"run", "--set", set}, "below 2^31");
  }
  check_rejected({"run", "--set", "/system/gpus=18446744073709551615"}, "below 2^63");
  // Found by the fuzzer: tp x pp overflowed an int before the plan was checked.
  check_rejected({"run", "--set", "/parallelism/tp=2127483648", "--set", "/parallelism/pp=2"},
                 "/parallelism/tp: expected at most the 8 GPUs");
  const auto doc = sim::parse_json_text(R"({"n": 2147483647, "m": 2147483648})", "i.json");
  sim::ObjectReader r = doc.root().as_object();
  CHECK(r.required("n").as_positive_int32() == 2147483647);
  CHECK(r.required("m").as_positive_int() == 2147483648LL);
  CHECK_THROWS_WITH(r.required("m").as_positive_int32(),
                    "i.json: /m: expected a positive integer below 2^31, got 2147483648");
}

TEST_CASE("quantities must be finite after unit scaling", "[hardening][bad-input]") {
  CHECK_THROWS_AS(sim::parse_bandwidth("1e300 TB/s"), sim::UnitError);
  CHECK_THROWS_AS(sim::parse_bytes("1e300 TiB"), sim::UnitError);
  CHECK_THROWS_WITH(sim::parse_time("200 days"), Catch::Contains("longer than the 107 days"));
  CHECK(sim::parse_time("100 days").s() == Approx(8.64e6));
  CHECK(sim::parse_bandwidth("1e300 Gbps").bytes_per_s() == Approx(1.25e308));
  check_rejected({"run", "--set", "/system/fabric/nic_bandwidth=1e300 TB/s"},
                 "/system/fabric/nic_bandwidth: expected a bandwidth");
  check_rejected({"run", "--set", "/parallelism/bucket_size=1e300 TiB"},
                 "/parallelism/bucket_size: expected a size");
}

TEST_CASE("time arithmetic saturates instead of overflowing", "[hardening]") {
  const sim::Time big = sim::Time::from_ps(std::numeric_limits<int64_t>::max() - 5);
  CHECK((big + sim::Time::from_ps(10)).is_saturated());
  CHECK((big * int64_t{3}).is_saturated());
  CHECK_FALSE((sim::Time::from_ps(5) + sim::Time::from_ps(10)).is_saturated());
  CHECK((sim::Time::from_ps(5) * int64_t{3}).ps() == 15);
  CHECK(sim::Time::from_s(std::nan("")).is_saturated());
}

TEST_CASE("sizes have documented bounds checked before building", "[hardening][bad-input]") {
  const auto start = std::chrono::steady_clock::now();
  check_rejected({"topology", "--gpus", "1000000000"}, "--gpus: expected at most 262144 GPUs");
  check_rejected({"collective", "--gpus", "1000000000"}, "--gpus: expected at most 262144 GPUs");
  check_rejected({"run", "--gpus", "1000000000"}, "/system/gpus: 1000000000 GPUs is more than");
  check_rejected({"scale", "--max-gpus", "2147483647"}, "/scale/max_gpus: expected at most 262144");
  check_rejected({"run", "--global-batch", "1073741824"}, "at most 65536 are simulated");
  check_rejected({"run", "--set", "/model/layers=1000000"},
                 "/model/layers: expected at most 10000");
  nlohmann::json tiers = nlohmann::json::array();
  for (int i = 0; i < 1000; ++i)
    tiers.push_back({{"ports", 64}});
  check_rejected({"run", "--set", "/system/fabric/tiers=" + tiers.dump()},
                 "expected at most 8 tiers above the leaves, got 1000");
  // ~2e8 rows: refused at once instead of hanging.
  check_rejected({"collective", "-f", "1.0000001", "-b", "8", "-e", "8G"},
                 "--step-factor: -b 8 -e 8G -f 1.0000001 asks for 2.08e+08 rows; at most 10000");
  check_rejected({"collective", "-b", "1e19", "-e", "1e19", "--json"},
                 "--max-bytes: expected a size of at most 2^53 bytes");
  check_rejected({"run", "--set", "/scale/systems/4000000000=dgx-h100"},
                 "expected an index between 0 and 3 into the array at '/scale/systems'");
  // A missing member addressed by a number would become such an array too (found by the fuzzer).
  check_rejected({"run", "--set", "/scale/systXems/4000000000=dgx-h100"},
                 "expected an index between 0 and 0 into the array at '/scale/systXems'");
  nlohmann::json doc = {{"a", {1, 2}}};
  sim::set_at_pointer(doc, "/a/-", 3, "<test>");
  sim::set_at_pointer(doc, "/b/0", "x", "<test>");
  CHECK(doc == nlohmann::json{{"a", {1, 2, 3}}, {"b", {"x"}}});
  // Found by the fuzzer: 4 million NICs per server built for minutes.
  check_rejected({"run", "--set", "/system/fabric/nics_per_server=4294967"},
                 "expected at most 64, got 4294967 (scale_out/nics_per_server)");
  check_rejected({"run", "--set", "/system/fabric/radix=2000000000"},
                 "expected at most 4096, got 2000000000 (scale_out/radix)");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("an overflowed time is an error naming the input, never a result",
          "[hardening][bad-input]") {
  check_rejected({"run", "--gpus", "16", "--set", "/system/fabric/nic_bandwidth=1 bps"},
                 "<scenario>: /system: the step takes longer than the 107 days");
  check_rejected({"run", "--set", "/model/hidden=1073741824", "--ignore-memory"},
                 "/model/hidden: expected at most 1048576");
}

TEST_CASE("efficiencies of 0 that would divide are rejected", "[hardening][bad-input]") {
  const ScratchDir dir("hardening-efficiency");
  nlohmann::json profile = nlohmann::json::parse(
      testing::read_file(testing::source_file("calibration/profiles/dgx-h100.json")));
  for (const std::string pointer :
       {"/collective/network_efficiency", "/compute/memory_efficiency",
        "/compute/attention_forward_efficiency", "/compute/gemm/bf16/max_efficiency"}) {
    for (const double value : {0.0, 1e-300}) {
      nlohmann::json p = profile;
      p[nlohmann::json::json_pointer(pointer)] = value;
      const std::string file = dir.write("p.json", p.dump());
      check_rejected({"run", "--calibration", file},
                     pointer + ": expected an efficiency between 0.01 and 1");
    }
  }
}

TEST_CASE("counts and ranges of flags are checked", "[hardening][bad-input]") {
  check_rejected({"run", "--gpus", "-8"}, "--gpus: expected a positive integer, got -8");
  check_rejected({"run", "--tp", "-1"}, "--tp: expected a positive integer, got -1");
  check_rejected({"run", "--global-batch", "-64"}, "--global-batch: expected a positive integer");
  check_rejected({"run", "--zero", "4"}, "--zero");
  check_rejected({"run", "--offload-layers", "-1"},
                 "--offload-layers: expected a non-negative integer, got -1");
  check_rejected({"run", "--recompute-layers", "two"},
                 "--recompute-layers: expected a non-negative integer, got two");
  check_rejected({"run", "--set", "/parallelism/recompute_modules=layernorm,attn"},
                 "/parallelism/recompute_modules: unknown recompute module \"attn\"");
  check_rejected({"run", "--set", "/parallelism/pipeline_layout=Et*4|(t*4|)*14tm"},
                 "/parallelism/pipeline_layout: expected the loss (L)");
  check_rejected({"run", "--pp", "4", "--set", "/parallelism/pipeline_layout=Et*8|t*8|t*8|t*7L"},
                 "/parallelism/pipeline_layout: expected the model's 32 decoder layers (t) and 0 "
                 "MTP modules (m), got 31 and 0");
  check_rejected({"run", "--set", "/model/mtp_layers=-1"},
                 "/model/mtp_layers: expected a non-negative integer");
  check_rejected({"scale", "--strong-global-batch", "-5"},
                 "--strong-global-batch: expected a positive integer, got -5");
  check_rejected({"scale", "--gpu-counts", "8,-16"}, "--gpu-counts: expected a positive integer");
  check_rejected({"collective", "--ranks", "0"}, "--ranks: expected a positive integer, got 0");
  check_rejected({"collective", "--ranks", "-4"}, "--ranks: expected a positive integer, got -4");
  check_rejected({"collective", "--gpus", "7"},
                 "--gpus: 7 GPUs is not a multiple of the 8 GPUs per server of dgx-h100");
  check_rejected({"topology", "--gpus", "7"}, "--gpus: 7 GPUs is not a multiple");
  check_rejected({"collective", "--op", "sendrecv", "--ranks", "1"},
                 "--ranks: a sendrecv needs at least 2 ranks");
  check_rejected({"run", "--system", "dgx-a100-80gb", "--precision", "fp8"},
                 "/training/precision: expected a precision the A100-80GB-SXM4 has tensor cores");
  // "--set /x 2": the 2 is not read as a scenario file.
  check_rejected({"run", "--set", "/x", "2"},
                 "<command line>: --set: expected /json/pointer=value, got '/x'");
  // A part-server communicator is still possible.
  CHECK(run_fabricsim({"collective", "--ranks", "4", "-b", "1M", "-e", "1M"}).code == 0);
}

TEST_CASE("every file write is checked, and a failed one leaves nothing behind",
          "[hardening][bad-input]") {
  if (!std::filesystem::exists("/dev/full")) return;
  check_rejected({"run", "--backend", "analytical", "--trace", "/dev/full"},
                 "/dev/full: cannot write the file (No space left on device)");
  check_rejected({"collective", "-b", "1M", "-e", "1M", "-o", "/dev/full"},
                 "/dev/full: cannot write the file");
  check_rejected({"calibrate", "shapes", "-o", "/dev/full"}, "/dev/full: cannot write the file");
  check_rejected({"scale", "--gpu-counts", "8", "--systems", "dgx-h100", "--mode", "weak",
                  "--backend", "analytical", "--jsonl", "/dev/full"},
                 "/dev/full: cannot write the file");
  check_rejected({"calibrate", "fit", "--gemm", measurement("gemm_bench_h200.json"), "--base",
                  "dgx-h200", "-o", "/dev/full"},
                 "/dev/full: cannot write the file");
  check_rejected({"run", "--trace", "/nonexistent/dir/t.json"},
                 "/nonexistent/dir/t.json: cannot open the file for writing");

  // An interrupted write (no commit) keeps the old file and leaves no temporary file.
  const ScratchDir dir("hardening-atomic");
  const std::string path = dir.write("result.json", "old\n");
  {
    sim::AtomicFile f(path);
    f.write("new, but never finished");
  }
  CHECK(testing::read_file(path) == "old\n");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.file("")),
                      std::filesystem::directory_iterator()) == 1);
  sim::write_file(path, "new\n");
  CHECK(testing::read_file(path) == "new\n");
}

TEST_CASE("a failed write to standard output is exit code 2", "[hardening][bad-input]") {
  FullBuffer full;
  std::ostream out(&full);
  std::ostringstream err;
  const char* argv[] = {"fabricsim", "topology"};
  CHECK(tools::run_cli(2, argv, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("<standard output>: cannot write the output"));
}

TEST_CASE("scale --jsonl refuses a file that already holds rows", "[hardening][bad-input]") {
  const ScratchDir dir("hardening-jsonl");
  const std::string rows = dir.write("rows.jsonl", "{\"gpus\": 8}\n");
  check_rejected({"scale", "--gpu-counts", "8", "--systems", "dgx-h100", "--mode", "weak",
                  "--backend", "analytical", "--jsonl", rows},
                 "rows.jsonl: the file already holds rows");
  CHECK(testing::read_file(rows) == "{\"gpus\": 8}\n");
}

TEST_CASE("calibrate fit refuses inputs that give nothing and measurements beyond physics",
          "[hardening][bad-input]") {
  const ScratchDir dir("hardening-fit");
  const std::string out = dir.file("fitted.json");
  const std::vector<std::string> fit{"calibrate", "fit", "--base", "dgx-h100", "-o", out};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = fit;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  if (fabricsim::testing::shared_reference_present()) {
    check_rejected(with({"--nccl", fabricsim::testing::shared_case("dev-training.json")}),
                   "given to --nccl but holds no collective measurements (it is a cases_json "
                   "file; training cases are never fitted)");
  }
  check_rejected(with({"--nccl", measurement("gemm_bench_h200.json")}),
                 "holds no collective measurements (it is a gemm_bench_json file)");
  check_rejected(with({"--gemm", nccl_log("all_reduce_perf_8xh100.log")}),
                 "given to --gemm but holds no GEMM measurements (it is a nccl_tests_log file)");
  // -o naming an input.
  const std::string csv = dir.write("gemm.csv", "m,n,k,dtype,tflops\n8192,8192,8192,bf16,700\n");
  check_rejected({"calibrate", "fit", "--base", "dgx-h100", "--gemm", csv, "-o", csv},
                 "--output: '" + csv + "' is also an input");
  CHECK(testing::read_file(csv) == "m,n,k,dtype,tflops\n8192,8192,8192,bf16,700\n");
  // Beyond the H100's dense bf16 peak of 989 TFLOP/s, or absurdly slow, naming the row.
  for (const std::string tflops : {"5000", "1e30", "1e-300"}) {
    const std::string bad =
        dir.write("bad.csv", "m,n,k,dtype,tflops\n8192,8192,8192,bf16,700\n8192,8192,8192,bf16," +
                                 tflops + "\n");
    check_rejected(with({"--gemm", bad}), "bad.csv:3: a 8192x8192x8192 bf16 GEMM at");
  }
  // An algbw that contradicts size / time (1 GiB in 10 us is 107,374 GB/s, not 300).
  const std::string log = testing::read_file(nccl_log("all_reduce_perf_8xh100.log"));
  std::string contradicting = log;
  const std::string row = "   524288        131072     float     sum      -1    37.91   13.83";
  REQUIRE(contradicting.find(row) != std::string::npos);
  contradicting.replace(contradicting.find(row), row.size(),
                        "   524288        131072     float     sum      -1     1.00   13.83");
  check_rejected(with({"--nccl", dir.write("all_reduce_perf.log", contradicting)}),
                 "algbw 13.83 GB/s contradicts size / time");
  // A negative size is an error naming its line, not a skipped comment.
  std::string negative = log;
  const std::string first = "           8             2     float";
  REQUIRE(negative.find(first) != std::string::npos);
  negative.replace(negative.find(first), first.size(), "          -8             2     float");
  check_rejected(with({"--nccl", dir.write("all_reduce_perf.log", negative)}),
                 "line 22: expected a size in bytes in column 'size', got '-8'");
  CHECK_FALSE(std::filesystem::exists(out));
}
