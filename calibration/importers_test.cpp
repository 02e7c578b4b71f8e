#include "calibration/importers.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sim/input_error.hpp"
#include "tests/shared_reference.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;

namespace {

std::string fixture(const std::string& name) {
  return testing::source_file("tests/data", name);
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json raw(const std::string& path) {
  return nlohmann::json::parse(read(path));
}

template <class Import>
void check_json_rejected(Import import, const nlohmann::json& doc, const std::string& pointer,
                         const std::string& message) {
  INFO("expecting " << pointer << ": " << message);
  try {
    import(sim::JsonDocument(doc, "bench.json").root());
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == "bench.json");
    CHECK(e.path() == pointer);
    CHECK_THAT(e.message(), Catch::Contains(message));
  }
}

void check_csv_rejected(const std::string& text, const std::string& path,
                        const std::string& message) {
  INFO("expecting " << path << ": " << message);
  try {
    import_gemm_csv(text, "g.csv");
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == "g.csv");
    CHECK(e.path() == path);
    CHECK_THAT(e.message(), Catch::Contains(message));
  }
}

}  // namespace

TEST_CASE("formats are detected from the content", "[import]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const auto detect = [](const std::string& file) { return detect_format(file, read(file)); };
  CHECK(detect(fixture("nccl-tests/run17.log")) == MeasurementFormat::nccl_tests_log);
  CHECK(detect(fixture("nccl-tests/ib_2node_h200.log")) == MeasurementFormat::nccl_tests_log);
  CHECK(detect(fixture("measurements/nccl_bench_h200.json")) == MeasurementFormat::nccl_bench_json);
  CHECK(detect(fixture("measurements/gemm_bench_h200.json")) == MeasurementFormat::gemm_bench_json);
  CHECK(detect(fixture("measurements/gemm_h100.csv")) == MeasurementFormat::gemm_csv);
  CHECK(detect(fabricsim::testing::shared_case("dev-gemm.json")) == MeasurementFormat::cases_json);
  CHECK(detect_format("x.txt", "# comment\nm,n,k,dtype,tflops\n1,2,3,bf16,4\n") ==
        MeasurementFormat::gemm_csv);
  CHECK(to_string(MeasurementFormat::gemm_csv) == "gemm_csv");

  CHECK_THROWS_WITH(detect_format("x.json", R"({"format": "fabricsim-topology"})"),
                    Catch::StartsWith("x.json: /format: expected one of fabricsim-nccl-bench"));
  CHECK_THROWS_WITH(detect_format("x.json", R"({"rows": []})"),
                    Catch::StartsWith("x.json: /format: missing key"));
  CHECK_THROWS_WITH(detect_format("x.txt", "hello\nworld\n"),
                    Catch::StartsWith("x.txt: unrecognised measurement file"));
  CHECK_THROWS_WITH(detect_format("x.json", "{\"format\": "), Catch::StartsWith("x.json: line 1"));
  CHECK_THROWS_WITH(import_measurements("/nonexistent/x.log"), Catch::Contains("cannot open"));
}

TEST_CASE("fabricsim-nccl-bench JSON imports", "[import]") {
  const std::string path = fixture("measurements/nccl_bench_h200.json");
  const MeasurementSet set = import_measurements(path);
  REQUIRE(set.collectives.size() == 12);
  const CollectiveMeasurement& m = set.collectives[0];
  CHECK(m.op == "all_reduce");
  CHECK(m.bytes == 1048576);
  CHECK(m.time_us == 57.1);
  CHECK(m.algbw_GBps == 18.3639);
  CHECK(m.busbw_GBps == 32.1367);
  CHECK(m.in_place == false);
  CHECK(set.collectives[1].in_place == true);
  CHECK(m.ranks == 8);
  CHECK(m.nodes == 1);
  CHECK(m.gpus_per_node == 8);
  CHECK(m.algorithm == "Ring");
  CHECK(m.protocol.empty());  // NCCL_PROTO null: NCCL's choice
  CHECK(m.nccl_version == "2.27.7");
  CHECK(m.source == path + ":/rows/0");
  CHECK(set.collectives.back().op == "all_gather");
  REQUIRE(set.provenance.size() == 1);
  const Provenance& p = set.provenance[0];
  CHECK(p.file == path);
  CHECK(p.format == "nccl_bench_json");
  CHECK(p.gpu_name == "NVIDIA H200");
  CHECK(p.versions == "NCCL 2.27.7; CUDA driver 12080; CUDA runtime 12080");
  CHECK(p.date == "2026-11-30T07:00:00Z");
}

TEST_CASE("fabricsim-nccl-bench JSON rejects bad input", "[import][bad-input]") {
  const nlohmann::json good = raw(fixture("measurements/nccl_bench_h200.json"));
  const auto import = [](const sim::JsonValue& v) { return import_nccl_bench_json(v); };
  nlohmann::json doc = good;
  doc["hostname"] = "n1";
  check_json_rejected(import, doc, "/hostname", "unknown key 'hostname'");
  doc = good;
  doc.erase("topology");
  check_json_rejected(import, doc, "/topology", "missing key");
  doc = good;
  doc["version"] = 2;
  check_json_rejected(import, doc, "/version", "expected version 1, got 2");
  doc = good;
  doc["ranks"] = 16;
  check_json_rejected(import, doc, "/ranks", "expected nodes x gpus_per_node = 8");
  doc = good;
  doc["env"]["NCCL_ALGO"] = 3;
  check_json_rejected(import, doc, "/env/NCCL_ALGO", "expected a string");
  doc = good;
  doc["rows"][2]["op"] = "allreduce";
  check_json_rejected(import, doc, "/rows/2/op", "expected one of all_reduce");
  doc = good;
  doc["rows"][1]["busbw_GBps"] = 18.17;  // algbw copied into busbw
  check_json_rejected(import, doc, "/rows/1/busbw_GBps", "expected algbw_GBps x 1.7500");
  doc = good;
  doc["rows"][0]["time_us"] = 5.71;
  check_json_rejected(import, doc, "/rows/0/algbw_GBps", "expected bytes / time_us / 1e3");
  doc = good;
  doc["rows"][0]["wrong"] = 0;
  check_json_rejected(import, doc, "/rows/0/wrong", "unknown key 'wrong'");
  doc = good;
  doc["rows"] = nlohmann::json::array();
  check_json_rejected(import, doc, "/rows", "expected a non-empty array");
  doc = good;
  doc["format"] = "fabricsim-gemm-bench";
  check_json_rejected(import, doc, "/format", "expected \"fabricsim-nccl-bench\"");
}

TEST_CASE("fabricsim-gemm-bench JSON imports", "[import]") {
  const std::string path = fixture("measurements/gemm_bench_h200.json");
  const MeasurementSet set = import_measurements(path);
  REQUIRE(set.gemms.size() == 3);
  CHECK(set.collectives.empty());
  const GemmMeasurement& g = set.gemms[0];
  CHECK(g.m == 8192);
  CHECK(g.n == 8192);
  CHECK(g.k == 8192);
  CHECK(g.batch == 1);
  CHECK(g.dtype == "bf16");
  CHECK(g.time_us == 1400.2);
  CHECK(g.tflops == 785.25);
  CHECK(g.gpu_name == "NVIDIA H200");
  CHECK(g.system.empty());
  CHECK(g.source == path + ":/rows/0");
  CHECK(set.gemms[2].batch == 4);
  const Provenance& p = set.provenance.at(0);
  CHECK(p.format == "gemm_bench_json");
  CHECK(p.versions == "driver 580.159; CUDA runtime 13000");  // cublas_version is null
  CHECK_THAT(p.notes, Catch::Contains("132 SMs"));
}

TEST_CASE("fabricsim-gemm-bench JSON rejects bad input", "[import][bad-input]") {
  const nlohmann::json good = raw(fixture("measurements/gemm_bench_h200.json"));
  const auto import = [](const sim::JsonValue& v) { return import_gemm_bench_json(v); };
  nlohmann::json doc = good;
  doc["device"]["name"] = nullptr;
  check_json_rejected(import, doc, "/device/name", "expected a non-empty GPU name, got null");
  doc = good;
  doc["device"]["sm_count"] = nullptr;  // other device fields may be unknown
  CHECK(import_gemm_bench_json(sim::JsonDocument(doc, "bench.json").root()).gemms.size() == 3);
  doc = good;
  // A row the tool skipped (null times plus the reason) is left out, not rejected.
  doc["rows"][2] = {{"m", 64},
                    {"n", 64},
                    {"k", 64},
                    {"batch", 1},
                    {"dtype", "fp8"},
                    {"time_us_median", nullptr},
                    {"time_us_min", nullptr},
                    {"time_us_max", nullptr},
                    {"time_us_p10", nullptr},
                    {"time_us_p90", nullptr},
                    {"tflops", nullptr},
                    {"runs", 0},
                    {"skipped", "fp8 needs compute capability 8.9"}};
  CHECK(import_gemm_bench_json(sim::JsonDocument(doc, "bench.json").root()).gemms.size() == 2);
  doc = good;
  doc["device"]["pcie_gen"] = 5;
  check_json_rejected(import, doc, "/device/pcie_gen", "unknown key 'pcie_gen'");
  doc = good;
  doc["rows"][1]["dtype"] = "bf32";
  check_json_rejected(import, doc, "/rows/1/dtype", "expected one of bf16, fp16, fp8, tf32");
  doc = good;
  doc["rows"][0]["tflops"] = 500;
  check_json_rejected(import, doc, "/rows/0/tflops", "2*m*n*k*batch / time_us_median");
  doc = good;
  doc["rows"][0]["time_us_p90"] = 1300;
  check_json_rejected(import, doc, "/rows/0/time_us_p90", "at least time_us_median");
  doc = good;
  doc["rows"][2]["m"] = -2048;
  check_json_rejected(import, doc, "/rows/2/m", "expected a positive integer");
  doc = good;
  doc["rows"][2].erase("runs");
  check_json_rejected(import, doc, "/rows/2/runs", "missing key");
}

TEST_CASE("GEMM CSV: any column order, comments, optional batch", "[import]") {
  const std::string path = fixture("measurements/gemm_h100.csv");
  const MeasurementSet set = import_measurements(path);
  REQUIRE(set.gemms.size() == 3);
  CHECK(set.gemms[0].m == 8192);
  CHECK(set.gemms[0].dtype == "bf16");
  CHECK(set.gemms[0].tflops == 712.5);
  CHECK(set.gemms[0].time_us == 0);  // not given
  CHECK(set.gemms[0].source == path + ":5");
  CHECK(set.gemms[2].m == 4096);
  CHECK(set.gemms[2].n == 2048);
  CHECK(set.gemms[2].k == 7168);
  CHECK(set.gemms[2].batch == 8);
  CHECK(set.gemms[2].source == path + ":8");
  CHECK(set.provenance.at(0).format == "gemm_csv");

  const MeasurementSet plain = import_gemm_csv("m,n,k,dtype,tflops\r\n64,64,64,fp8,1.5\r\n", "p");
  REQUIRE(plain.gemms.size() == 1);
  CHECK(plain.gemms[0].batch == 1);
  CHECK(plain.gemms[0].tflops == 1.5);
}

TEST_CASE("GEMM CSV errors name the line", "[import][bad-input]") {
  check_csv_rejected("m,n,k,dtype\n1,2,3,bf16\n", "line 1", "got no 'tflops' column");
  check_csv_rejected("# c\nm,n,k,dtype,tflops,gpu\n", "line 2", "got column 'gpu'");
  check_csv_rejected("m,n,k,m,dtype,tflops\n", "line 1", "got 'm' twice");
  check_csv_rejected("m,n,k,dtype,tflops\n1,2,3,bf16\n", "line 2",
                     "expected 5 comma-separated fields, got 4");
  check_csv_rejected("m,n,k,dtype,tflops\n# ok\n1,2,3.5,bf16,4\n", "line 3",
                     "expected a positive integer in column 'k', got '3.5'");
  check_csv_rejected("m,n,k,dtype,tflops\n1,2,3,int8,4\n", "line 2", "got 'int8'");
  check_csv_rejected("m,n,k,dtype,tflops\n1,2,3,bf16,fast\n", "line 2", "column 'tflops'");
  check_csv_rejected("m,n,k,dtype,tflops\n1,2,3,bf16,0\n", "line 2", "positive number");
  check_csv_rejected("m,n,k,dtype,tflops\n", "", "found none");
  check_csv_rejected("# only comments\n\n", "", "found no content");
}

TEST_CASE("measurement sets append", "[import]") {
  MeasurementSet a = import_gemm_csv("m,n,k,dtype,tflops\n1,2,3,bf16,4\n", "a.csv");
  a.append(import_gemm_csv("m,n,k,dtype,tflops\n5,6,7,fp8,8\n9,9,9,fp16,1\n", "b.csv"));
  CHECK(a.gemms.size() == 3);
  CHECK(a.gemms[2].source == "b.csv:3");
  REQUIRE(a.provenance.size() == 2);
  CHECK(a.provenance[1].file == "b.csv");
}
