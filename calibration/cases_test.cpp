#include "calibration/cases.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "sim/input_error.hpp"
#include "tests/shared_reference.hpp"

using namespace fabricsim;
using namespace fabricsim::calibration;

namespace {

std::string reference(const std::string& file) {
  return fabricsim::testing::shared_case(file);
}

nlohmann::json raw_reference(const std::string& file) {
  std::ifstream in(reference(file));
  return nlohmann::json::parse(in);
}

/// The first record of a real file, as a template to break in one place.
nlohmann::json first_record(const std::string& file) {
  return raw_reference(file).at(0);
}

std::vector<Case> read_text(const nlohmann::json& doc) {
  return read_cases(sim::JsonDocument(doc, "bad.json").root());
}

/// Reading `doc` fails at `pointer` with a message containing `text`.
void check_rejected(const nlohmann::json& doc, const std::string& pointer,
                    const std::string& text) {
  INFO("expecting " << pointer << ": " << text);
  try {
    read_text(doc);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == "bad.json");
    CHECK(e.path() == pointer);
    CHECK_THAT(e.message(), Catch::Contains(text));
  }
}

}  // namespace

TEST_CASE("the real reference case files load", "[cases]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  const std::vector<Case> training = load_cases(reference("dev-training.json"));
  const std::vector<Case> collectives = load_cases(reference("dev-collectives.json"));
  const std::vector<Case> gemms = load_cases(reference("dev-gemm.json"));
  CHECK(training.size() == 165);
  CHECK(collectives.size() == 54);
  CHECK(gemms.size() == 142);
  for (const Case& c : training) {
    CHECK(c.kind == CaseKind::training);
    CHECK((c.model && c.parallelism && !c.collective && !c.gemm));
  }
  for (const Case& c : training) {
    CHECK(c.framework.has_value());
  }
  for (const Case& c : collectives) {
    CHECK((c.kind == CaseKind::collective && c.collective && !c.framework));
  }
  for (const Case& c : gemms) {
    CHECK((c.kind == CaseKind::gemm && c.gemm && c.measured.tflops));
  }

  const Case& a100 = collectives.at(0);
  CHECK(a100.id == "azure-a100-allreduce-8gpu");
  CHECK(a100.system == "dgx-a100-80gb");
  CHECK(a100.collective->op == "all_reduce");
  CHECK(a100.collective->in_place == true);
  CHECK(a100.collective->nccl_version == "2.18.5");
  CHECK_FALSE(a100.collective->algorithm.has_value());
  REQUIRE(a100.measured.busbw_curve);
  REQUIRE(a100.measured.busbw_curve->size() == 24);
  CHECK(a100.measured.busbw_curve->front() == std::pair<double, double>(1024, 0.04));
  CHECK(a100.measured.busbw_curve->back() == std::pair<double, double>(8589934592.0, 231.58));
  CHECK(a100.derived == std::vector<std::string>{"measured.busbw_curve"});

  const Case& lora = training.at(41);
  CHECK(lora.id == "nemo2407-lora-LLAMA2-70B-8");
  REQUIRE(lora.framework);
  CHECK(lora.framework->name == "nemo");
  CHECK(lora.framework->version == "24.07");
  CHECK(lora.framework->released == "2024-07");
  CHECK(lora.task == "lora");
  CHECK(lora.model->kv_heads == 8);
  CHECK(lora.model->attention == "gqa");
  CHECK(lora.model->params == 70e9);
  CHECK_FALSE(lora.model->vocab.has_value());
  CHECK(lora.parallelism->tp == 2);
  CHECK_FALSE(lora.parallelism->cp.has_value());
  CHECK(lora.measured.tflops_per_gpu == 722);

  const Case& gemm = gemms.front();
  CHECK(gemm.gemm->m == 1024);
  CHECK(gemm.gemm->dtype == "fp16");
  CHECK(gemm.gemm->library == "cuBLASLt");
  CHECK(gemm.measured.tflops == 119.4);
  CHECK(gemm.measured.pct_of_peak == 38.3);
}

TEST_CASE("case files reject missing and unknown keys", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = first_record("dev-collectives.json");
  c.erase("notes");
  check_rejected(nlohmann::json::array({c}), "/0/notes", "missing key");

  c = first_record("dev-gemm.json");
  c["gemm"].erase("library");  // null is allowed, absence is not
  check_rejected(nlohmann::json::array({c}), "/0/gemm/library", "missing key");

  c = first_record("dev-collectives.json");
  c["sytem"] = "dgx-h100";
  check_rejected(nlohmann::json::array({c}), "/0/sytem", "unknown key 'sytem'");

  c = first_record("dev-training.json");
  c["model"]["hiden"] = 1;
  check_rejected(nlohmann::json::array({c}), "/0/model/hiden", "unknown key 'hiden'");

  c = first_record("dev-collectives.json");
  c["measured"]["busbw"] = 3;
  check_rejected(nlohmann::json::array({c}), "/0/measured/busbw", "unknown key 'busbw'");

  c = first_record("dev-training.json");
  c["framework"]["commit"] = "abc";
  check_rejected(nlohmann::json::array({c}), "/0/framework/commit", "unknown key 'commit'");

  c = first_record("dev-collectives.json");
  c["id"] = nullptr;
  check_rejected(nlohmann::json::array({c}), "/0/id", "expected a non-empty string, got null");
}

TEST_CASE("case files check the framework of a run", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = first_record("dev-training.json");
  c["framework"]["name"] = "jax";
  check_rejected(nlohmann::json::array({c}), "/0/framework/name", "megatron-lm");

  c = first_record("dev-training.json");
  c["framework"]["released"] = "2024-13";
  check_rejected(nlohmann::json::array({c}), "/0/framework/released", "YYYY-MM");

  c = first_record("dev-training.json");
  c["framework"]["name"] = nullptr;
  check_rejected(nlohmann::json::array({c}), "/0/framework/name", "got null");

  c = first_record("dev-gemm.json");
  c["framework"] = {{"name", "nemo"}, {"version", nullptr}, {"released", nullptr}};
  check_rejected(nlohmann::json::array({c}), "/0/framework", "null for a gemm case");
}

TEST_CASE("case files reject wrong types and bad values", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = first_record("dev-gemm.json");
  c["gpus"] = "1";
  check_rejected(nlohmann::json::array({c}), "/0/gpus", "expected a positive integer, got \"1\"");

  c = first_record("dev-gemm.json");
  c["gemm"]["m"] = 0;
  check_rejected(nlohmann::json::array({c}), "/0/gemm/m", "expected a positive integer, got 0");

  c = first_record("dev-training.json");
  c["parallelism"]["sequence_parallel"] = "yes";
  check_rejected(nlohmann::json::array({c}), "/0/parallelism/sequence_parallel",
                 "expected true or false");

  c = first_record("dev-training.json");
  c["measured"]["hfu"] = 52;  // percent instead of a fraction
  check_rejected(nlohmann::json::array({c}), "/0/measured/hfu", "between 0 and 1");

  c = first_record("dev-collectives.json");
  c["system"] = "dgx-h1000";
  check_rejected(nlohmann::json::array({c}), "/0/system", "expected a system preset id");

  c = first_record("dev-training.json");
  c["gpus"] = 64;  // tp*pp*dp = 1*1*32
  c["parallelism"]["cp"] = 1;
  check_rejected(nlohmann::json::array({c}), "/0/parallelism",
                 "expected tp*pp*dp*cp = gpus = 64, got tp=1*pp=1*dp=32*cp=1 = 32");

  c = first_record("dev-training.json");
  c["parallelism"]["tp"] = 3;  // cp unknown, but 3*1*32 cannot divide 32
  check_rejected(nlohmann::json::array({c}), "/0/parallelism", "divide gpus = 32");

  c = first_record("dev-collectives.json");
  c["derived"] = {"measured.busbw_curve", "parallelism.tpp"};
  check_rejected(nlohmann::json::array({c}), "/0/derived/1", "dotted path of a case field");

  check_rejected(nlohmann::json::object({{"id", "x"}}), "/", "expected an array");
}

TEST_CASE("case files reject values outside the enums", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = first_record("dev-collectives.json");
  c["kind"] = "collectives";
  check_rejected(nlohmann::json::array({c}), "/0/kind",
                 "expected one of training, collective, gemm");

  c = first_record("dev-collectives.json");
  c["collective"]["op"] = "allreduce";
  check_rejected(nlohmann::json::array({c}), "/0/collective/op", "expected one of all_reduce");

  c = first_record("dev-collectives.json");
  c["collective"]["algorithm"] = "ring";
  check_rejected(nlohmann::json::array({c}), "/0/collective/algorithm",
                 "expected one of Ring, Tree, NVLS");

  c = first_record("dev-training.json");
  c["task"] = "finetune";
  check_rejected(nlohmann::json::array({c}), "/0/task", "expected one of pretrain, sft, lora");

  c = first_record("dev-training.json");
  c["precision"] = "int8";
  check_rejected(nlohmann::json::array({c}), "/0/precision", "expected one of fp16, bf16");

  c = first_record("dev-training.json");
  c["parallelism"]["recompute"] = "partial";
  check_rejected(nlohmann::json::array({c}), "/0/parallelism/recompute",
                 "expected one of none, selective, full");

  c = first_record("dev-training.json");
  c["model"]["attention"] = "mqa";
  check_rejected(nlohmann::json::array({c}), "/0/model/attention", "expected one of mha, gqa, mla");

  c = first_record("dev-collectives.json");
  c["collective"]["op"] = "moe_dispatch";
  c["collective"]["moe_payload"] = {{"kernel", "deepep"},
                                    {"tokens_per_rank", 4096},
                                    {"hidden", 7168},
                                    {"top_k", 8},
                                    {"topk_groups", nullptr}};
  check_rejected(nlohmann::json::array({c}), "/0/collective/moe_payload/kernel",
                 "expected one of deepep_normal, deepep_low_latency, deepep_v2");
  c["collective"]["moe_payload"]["kernel"] = "deepep_normal";
  CHECK(read_text(nlohmann::json::array({c})).at(0).collective->moe_payload->hidden == 7168);
}

TEST_CASE("case curves must be strictly increasing with positive values", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = first_record("dev-collectives.json");
  c["measured"]["busbw_curve"][3][0] = 4096;  // same size as point 2
  check_rejected(nlohmann::json::array({c}), "/0/measured/busbw_curve/3/0", "strictly increasing");

  c = first_record("dev-collectives.json");
  c["measured"]["busbw_curve"][2][1] = 0;
  check_rejected(nlohmann::json::array({c}), "/0/measured/busbw_curve/2/1",
                 "expected a positive number, got 0");

  c = first_record("dev-collectives.json");
  c["measured"]["busbw_curve"][1] = {2048, 0.08, 1};
  check_rejected(nlohmann::json::array({c}), "/0/measured/busbw_curve/1",
                 "expected a [bytes, GB/s] pair");

  c = first_record("dev-collectives.json");
  c["measured"]["busbw_curve"] = nlohmann::json::array();
  check_rejected(nlohmann::json::array({c}), "/0/measured/busbw_curve", "non-empty");
}

TEST_CASE("case ids are unique within a file", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json file = raw_reference("dev-gemm.json");
  file[7]["id"] = file[2]["id"];
  check_rejected(file, "/7/id",
                 "duplicate id '" + file[2]["id"].get<std::string>() + "' (first used at /2/id)");
}

TEST_CASE("each kind needs its own object and only that one", "[cases][bad-input]") {
  FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE();
  nlohmann::json c = first_record("dev-training.json");
  c["model"] = nullptr;
  check_rejected(nlohmann::json::array({c}), "/0/model", "expected a model object");

  c = first_record("dev-gemm.json");
  c["collective"] = first_record("dev-collectives.json")["collective"];
  check_rejected(nlohmann::json::array({c}), "/0/collective", "expected null for a gemm case");

  c = first_record("dev-collectives.json");
  c["kind"] = "gemm";  // a collective record relabelled: its gemm object is null
  check_rejected(nlohmann::json::array({c}), "/0/collective", "expected null for a gemm case");

  c = first_record("dev-collectives.json");
  c["measured"]["tflops"] = 10;
  check_rejected(nlohmann::json::array({c}), "/0/measured/tflops",
                 "metric 'tflops' belongs to gemm cases, not to a collective case");

  c = first_record("dev-collectives.json");
  c["measured"] = {{"busbw_GBps_nvls_off", 300}};  // informational only
  check_rejected(nlohmann::json::array({c}), "/0/measured", "at least one primary metric");

  c = first_record("dev-gemm.json");
  c["task"] = "pretrain";
  check_rejected(nlohmann::json::array({c}), "/0/task", "expected null for a gemm case");
}
