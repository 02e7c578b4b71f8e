#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "calibration/importers.hpp"
#include "sim/input_error.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;

namespace {

std::string fixture(const std::string& name) {
  return testing::source_file("tests/data/nccl-tests", name);
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const CollectiveMeasurement& find(const MeasurementSet& set, std::string_view op, double bytes,
                                  bool in_place) {
  for (const CollectiveMeasurement& m : set.collectives) {
    if (m.op == op && m.bytes == bytes && m.in_place == in_place) return m;
  }
  FAIL("no measurement " << op << " " << bytes << " in_place=" << in_place);
  throw;
}

const char* kHeader =
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n";

/// Importing `text` fails at `path` ("line N" or "") with a message containing `message`.
void check_rejected(const std::string& text, const std::string& path, const std::string& message,
                    std::optional<std::string> hint = "all_reduce") {
  INFO("expecting " << path << ": " << message);
  try {
    import_nccl_tests_log(text, "bad.log", hint);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == "bad.log");
    CHECK(e.path() == path);
    CHECK_THAT(e.message(), Catch::Contains(message));
  }
}

}  // namespace

TEST_CASE("nccl-tests log: current layout with NCCL_DEBUG chatter", "[import]") {
  const std::string path = fixture("all_reduce_perf_8xh100.log");
  const MeasurementSet set = import_nccl_tests_log(read(path), path);
  REQUIRE(set.collectives.size() == 30);  // 15 sizes x out-of-place/in-place
  CHECK(set.gemms.empty());
  const CollectiveMeasurement& oop = find(set, "all_reduce", 2097152, false);
  CHECK(oop.time_us == 46.65);
  CHECK(oop.algbw_GBps == 44.96);
  CHECK(oop.busbw_GBps == 78.67);
  CHECK(oop.ranks == 8);
  CHECK(oop.nodes == 1);
  CHECK(oop.gpus_per_node == 8);
  CHECK(oop.nccl_version == "2.18.5");
  CHECK(oop.algorithm == "Ring");
  CHECK(oop.protocol.empty());
  CHECK(oop.system.empty());
  CHECK(oop.source == path + ":31");
  const CollectiveMeasurement& ip = find(set, "all_reduce", 2097152, true);
  CHECK(ip.time_us == 47.12);
  CHECK(ip.busbw_GBps == 77.89);
  REQUIRE(set.provenance.size() == 1);
  CHECK(set.provenance[0].format == "nccl_tests_log");
  CHECK(set.provenance[0].gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(set.provenance[0].versions == "NCCL 2.18.5+cuda12.2; nccl-tests 2.13.9");
}

TEST_CASE("nccl-tests log: two tests, two nodes, env dump", "[import]") {
  const std::string path = fixture("ib_2node_h200.log");
  // The "Collective test starting" lines win over the hint.
  const MeasurementSet set = import_nccl_tests_log(read(path), path, "all_reduce");
  REQUIRE(set.collectives.size() == 32);
  CHECK(set.collectives.front().op == "all_gather");
  CHECK(set.collectives.back().op == "broadcast");
  CHECK(set.collectives.front().source == path + ":29");
  for (const CollectiveMeasurement& m : set.collectives) {
    CHECK(m.ranks == 16);
    CHECK(m.nodes == 2);
    CHECK(m.gpus_per_node == 8);
    CHECK(m.protocol == "Simple");
    CHECK(m.algorithm.empty());
    CHECK(m.nccl_version == "2.21.5");
  }
  const CollectiveMeasurement& bcast = find(set, "broadcast", 1024, false);
  CHECK(bcast.time_us == 24.02);
  CHECK(set.provenance.at(0).gpu_name == "NVIDIA H200");
  CHECK(set.provenance.at(0).notes == "32 rows; 16 ranks on 2 hosts from device lines");
}

TEST_CASE("nccl-tests log: each test keeps its own rank count", "[import]") {
  // The 2-rank sendrecv test followed by the 4-rank alltoall test (no device lines).
  const std::string text = read(fixture("sendrecv_perf_2host.log")) +
                           "# Collective test starting: alltoall_perf\n" +
                           read(fixture("run17.log"));
  const MeasurementSet set = import_nccl_tests_log(text, "two.log", "sendrecv");
  REQUIRE(set.collectives.size() == 28);
  CHECK(set.collectives.front().ranks == 2);
  CHECK(set.collectives.front().nodes == 2);
  CHECK(set.collectives.front().op == "sendrecv");
  CHECK(set.collectives.back().ranks == 4);
  CHECK(set.collectives.back().nodes == 0);
  CHECK(set.collectives.back().op == "alltoall");
}

TEST_CASE("nccl-tests log: older layouts", "[import]") {
  SECTION("no root column, 'error' instead of '#wrong', op from the file name") {
    const std::string path = fixture("reduce_scatter_perf_v100_old.log");
    const MeasurementSet set = import_nccl_tests_log(read(path), path);
    REQUIRE(set.collectives.size() == 12);
    const CollectiveMeasurement& m = find(set, "reduce_scatter", 4194304, false);
    CHECK(m.time_us == 52.26);
    CHECK(m.algbw_GBps == 80.26);
    CHECK(m.busbw_GBps == 70.23);
    CHECK(find(set, "reduce_scatter", 4194304, true).busbw_GBps == 69.52);
    CHECK(m.ranks == 8);
    CHECK(m.nodes == 1);
    CHECK(m.nccl_version.empty());
    CHECK(set.provenance.at(0).gpu_name == "Tesla V100-SXM2-32GB");
  }
  SECTION("neither redop nor root, two hosts") {
    const std::string path = fixture("sendrecv_perf_2host.log");
    const MeasurementSet set = import_nccl_tests_log(read(path), path);
    REQUIRE(set.collectives.size() == 16);
    const CollectiveMeasurement& m = find(set, "sendrecv", 2097152, false);
    CHECK(m.time_us == 99.18);
    CHECK(m.busbw_GBps == 21.14);
    CHECK(m.ranks == 2);
    CHECK(m.nodes == 2);
    CHECK(m.gpus_per_node == 1);
    CHECK(find(set, "sendrecv", 8, true).algbw_GBps == 0.0);
  }
}

TEST_CASE("nccl-tests log: no device lines, N/A, CRLF, op hint", "[import]") {
  const std::string path = fixture("run17.log");
  const std::string text = read(path);
  check_rejected(text, "", "could not determine the collective op", std::nullopt);

  const MeasurementSet set = import_nccl_tests_log(text, path, "alltoall_perf");
  REQUIRE(set.collectives.size() == 12);
  const CollectiveMeasurement& m = find(set, "alltoall", 1048576, false);
  CHECK(m.time_us == 41.65);
  CHECK(m.algbw_GBps == 25.18);
  CHECK(m.busbw_GBps == 18.88);
  CHECK(m.ranks == 4);  // nThread 2 x nGpus 2
  CHECK(m.nodes == 0);
  CHECK(m.gpus_per_node == 0);
  CHECK(m.source == path + ":8");
}

TEST_CASE("nccl-tests log: op from test line, then hint, then file name", "[import]") {
  // The run17 numbers have busbw = 0.75 algbw, right for all of these ops on 4 ranks.
  const std::string text = read(fixture("run17.log"));
  CHECK(import_nccl_tests_log(text, "logs/all_gather_perf_4gpu.log").collectives[0].op ==
        "all_gather");
  CHECK(import_nccl_tests_log(text, "logs/all_gather_perf_4gpu.log", "reduce_scatter")
            .collectives[0]
            .op == "reduce_scatter");
  CHECK(import_nccl_tests_log("# Collective test starting: alltoall_perf\n" + text,
                              "logs/all_gather_perf_4gpu.log", "reduce_scatter")
            .collectives[0]
            .op == "alltoall");
  CHECK(import_nccl_tests_log(text, "nccl-reduce_scatter_perf.txt").collectives[0].op ==
        "reduce_scatter");
  check_rejected(text, "", "could not determine the collective op", std::nullopt);
  CHECK_THROWS_WITH(import_nccl_tests_log(text, "xall_reduce_perf.log"),
                    Catch::Contains("could not determine the collective op"));
  // A wrong hint shows up as busbw that does not fit the op.
  check_rejected(text, "line 6", "is the op or the rank count wrong", "all_reduce");
  check_rejected(text, "", "expected an op hint among", "allreduce");
}

TEST_CASE("nccl-tests log: malformed input names the line", "[import][bad-input]") {
  const std::string header = kHeader;
  const std::string ranks =
      "#  Rank  0 Group  0 Pid 1 on n1 device  0 [0x1b] NVIDIA H100\n"
      "#  Rank  1 Group  0 Pid 1 on n1 device  1 [0x2b] NVIDIA H100\n";
  const std::string good =
      "     1048576        262144     float     sum      -1    57.12   18.36   18.36      0    "
      "56.98   18.40   18.40      0\n";
  // Sanity: the good row imports (2 ranks: busbw = algbw).
  CHECK(import_nccl_tests_log(ranks + header + good, "x.log", "all_reduce").collectives.size() ==
        2);
  check_rejected(ranks + header + good + "     2097152   524288   float   sum   -1   60.1  34.9\n",
                 "line 7", "expected 13 whitespace-separated columns");
  check_rejected(ranks + header +
                     "     1048576        262144     float     sum      -1    fast   18.36   "
                     "18.36      0    56.98   18.40   18.40      0\n",
                 "line 6",
                 "expected a positive number in column 'time' (out-of-place), got 'fast'");
  check_rejected(ranks + header +
                     "     1048576        262144     float     sum      -1    57.12   18.36   "
                     "18.36      0    56.98   18.40   -1.0      0\n",
                 "line 6", "column 'busbw' (in-place)");
  check_rejected(ranks + header +
                     "     1048576        262144     float     sum      -1    57.12   18.36   "
                     "18.36      3    56.98   18.40   18.40      0\n",
                 "line 6", "nccl-tests validation failed");
  check_rejected(ranks + header +
                     "   1.5e6   262144   float   sum   -1   57.12   18.36   18.36   0 "
                     "  56.98   18.40   18.40   0\n",
                 "line 6", "expected a size in bytes");
  check_rejected("#  Rank  0 Group 0 Pid 1 node01\n" + header + good, "line 1",
                 "expected a device line");
  check_rejected("# nThread one nGpus 8\n", "line 1",
                 "expected a positive integer after 'nThread'");
  check_rejected("#  size  count  type  busbw  algbw\n", "line 1", "expected a column header");
  check_rejected("# Collective test starting: allreduce_perf\n", "line 1",
                 "expected '# Collective test starting: <op>_perf'");
  check_rejected(ranks + header, "", "found none");
  check_rejected(
      std::string("#       size  count  type  redop  root  time  algbw  busbw  #wrong\n") +
          "  1048576  262144  float  sum  -1  57.12  18.36  18.36  0\n",
      "line 2", "could not determine the number of ranks");
}
