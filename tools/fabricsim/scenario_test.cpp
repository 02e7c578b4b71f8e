#include "api/scenario.hpp"

#include <catch2/catch.hpp>

#include "api/scenario_settings.hpp"
#include "api/training_run.hpp"
#include "sim/input_error.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/source_file.hpp"
#include "tools/fabricsim/scenario_options.hpp"

using namespace fabricsim;
using namespace fabricsim::api;
using namespace fabricsim::tools;
using fabricsim::testing::ScratchDir;

namespace {

/// The default scenario with "pointer=value" assignments applied.
nlohmann::json scenario_doc(const std::vector<std::string>& assignments = {}) {
  nlohmann::json doc = default_scenario_json();
  apply_assignments(doc, assignments, "<test>");
  return doc;
}

Scenario read(const nlohmann::json& doc, const std::string& name = "bad.json") {
  return read_scenario(sim::JsonDocument(doc, name).root());
}

/// Reading `doc` fails in bad.json at `pointer`, with a message containing every one of `texts`.
void check_rejected(const nlohmann::json& doc, const std::string& pointer,
                    const std::vector<std::string>& texts) {
  INFO("expecting " << pointer);
  try {
    read(doc);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == "bad.json");
    CHECK(e.path() == pointer);
    for (const std::string& t : texts)
      CHECK_THAT(e.message(), Catch::Contains(t));
    // The one-line form the CLI prints starts with the location.
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("bad.json: " + pointer + ": "));
  }
}

void check_assignments_rejected(const std::vector<std::string>& assignments,
                                const std::string& pointer, const std::vector<std::string>& texts) {
  INFO("assignments: " << nlohmann::json(assignments).dump());
  check_rejected(scenario_doc(assignments), pointer, texts);
}

}  // namespace

TEST_CASE("the default scenario reads as documented", "[scenario]") {
  const Scenario s = read(default_scenario_json(), "<scenario>");
  CHECK(s.source == "<scenario>");
  CHECK(s.system() == "dgx-h100");
  CHECK(s.gpus == 8);
  CHECK(s.model.name == "llama3-8b");
  CHECK(s.plan.tp == 1);
  CHECK(s.plan.pp == 1);
  CHECK(s.plan.cp == 2);
  CHECK(s.plan.dp == 4);  // what tp x pp x cp leaves of 8 GPUs
  CHECK(s.plan.micro_batch == 1);
  CHECK(s.plan.zero == 1);
  CHECK(s.plan.recompute == models::Recompute::selective);
  CHECK(s.training.seq_len == 8192);
  CHECK(s.training.global_batch == 64);
  CHECK(s.training.precision == topologies::Precision::bf16);
  CHECK(s.simulation.backend == models::Backend::flow);
  CHECK(s.calibration.empty());
}

TEST_CASE("malformed scenario JSON names the file, line and column", "[scenario][bad-input]") {
  const ScratchDir dir("scenario-malformed");
  const std::string path =
      dir.write("broken.json", "{\n  \"system\": {\"preset\": \"dgx-h100\", \"gpus\": 8,},\n}\n");
  try {
    ScenarioOptions().scenario(path);
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    INFO(e.what());
    CHECK(e.where() == path);
    CHECK_THAT(e.path(), Catch::StartsWith("line 2, column "));
    CHECK_THAT(e.message(), Catch::Contains("malformed JSON"));
  }
  try {
    ScenarioOptions().scenario(dir.file("missing.json"));
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    CHECK(e.where() == dir.file("missing.json"));
    CHECK_THAT(e.message(), Catch::Contains("cannot open file"));
  }
}

TEST_CASE("unknown scenario keys are named at every level", "[scenario][bad-input]") {
  SECTION("top level") {
    check_assignments_rejected({"/trainig={\"seq_len\": 4096}"}, "/trainig",
                               {"unknown key 'trainig'", "training", "parallelism"});
  }
  SECTION("/system") {
    check_assignments_rejected({"/system/gpu=8"}, "/system/gpu", {"unknown key 'gpu'", "gpus"});
  }
  SECTION("/system/fabric") {
    check_assignments_rejected({"/system/gpus=16", "/system/fabric/nic_speed=\"400 Gbps\""},
                               "/system/fabric/nic_speed",
                               {"unknown key 'nic_speed'", "nic_bandwidth"});
  }
  SECTION("/parallelism") {
    check_assignments_rejected({"/parallelism/tensor_parallel=2"}, "/parallelism/tensor_parallel",
                               {"unknown key 'tensor_parallel'", "tp"});
  }
  SECTION("/training") {
    check_assignments_rejected({"/training/batch=64"}, "/training/batch",
                               {"unknown key 'batch'", "global_batch"});
  }
  SECTION("/model") {
    check_assignments_rejected({"/model/hiden=4096"}, "/model/hiden",
                               {"unknown key 'hiden'", "hidden"});
  }
  SECTION("/simulation") {
    check_assignments_rejected({"/simulation/backnd=\"flow\""}, "/simulation/backnd",
                               {"unknown key 'backnd'", "backend"});
  }
  SECTION("/software") {
    check_assignments_rejected({"/software={\"framework\": \"nemo\", \"vers\": \"24.07\"}"},
                               "/software/vers", {"unknown key 'vers'", "version"});
  }
}

TEST_CASE("the software section picks a stack preset that explicit keys override",
          "[scenario][software]") {
  const Scenario plain = read(scenario_doc());
  CHECK(plain.lowering.software.id == "default");
  const Scenario old =
      read(scenario_doc({"/software={\"framework\": \"megatron-lm\", \"released\": \"2021-04\"}",
                         "/parallelism/cp=1"}));
  CHECK(old.lowering.software.id == "megatron-lm-2021");
  CHECK(old.training.unfused_attention);
  CHECK_FALSE(old.plan.tp_comm_overlap);
  const Scenario overridden =
      read(scenario_doc({"/software={\"framework\": \"megatron-lm-2021\"}",
                         "/training/attention_kernel=flash", "/parallelism/tp_comm_overlap=true"}));
  CHECK_FALSE(overridden.training.unfused_attention);
  CHECK(overridden.lowering.software.attention == models::AttentionKernel::cudnn);
  CHECK(overridden.plan.tp_comm_overlap);
  // An unknown framework falls back to the documented default.
  CHECK(read(scenario_doc({"/software={\"framework\": \"meta-internal\"}"})).lowering.software.id ==
        "default");
  // The MoE dispatcher overrides the preset's.
  CHECK(read(scenario_doc({"/software={\"framework\": \"nemo\", \"moe_dispatcher\": \"deepep\"}"}))
            .lowering.software.moe_dispatcher == models::MoeDispatcher::deepep);
  CHECK(read(scenario_doc({"/software={\"framework\": \"nemo\", \"moe_dispatcher\": "
                           "\"hybridep\"}"}))
            .lowering.software.moe_dispatcher == models::MoeDispatcher::hybridep);
  CHECK(read(scenario_doc({"/software={\"framework\": \"hai-llm\", \"moe_dispatcher\": "
                           "\"alltoall\"}"}))
            .lowering.software.moe_dispatcher == models::MoeDispatcher::alltoall);
  // A framework without version or date: its newest preset.
  CHECK(read(scenario_doc({"/software={\"framework\": \"deepspeed\"}"})).lowering.software.id ==
        "deepspeed-2023");
  // Recomputation: the preset's (NeMo AutoModel's configurations checkpoint every block) unless
  // the plan states it.
  CHECK(plain.plan.recompute == models::Recompute::selective);
  nlohmann::json unstated = scenario_doc({"/software={\"framework\": \"nemo-automodel\"}"});
  unstated["parallelism"].erase("recompute");
  const Scenario automodel = read(unstated);
  CHECK(automodel.lowering.software.id == "nemo-automodel");
  CHECK(automodel.plan.recompute == models::Recompute::full);
  CHECK_FALSE(automodel.plan.tp_comm_overlap);
  CHECK(read(scenario_doc({"/software={\"framework\": \"nemo-automodel\"}",
                           "/parallelism/recompute=\"none\""}))
            .plan.recompute == models::Recompute::none);
}

TEST_CASE("missing required scenario fields are named", "[scenario][bad-input]") {
  nlohmann::json doc = scenario_doc();
  doc["system"].erase("gpus");
  check_rejected(doc, "/system/gpus", {"missing required field"});
  doc = scenario_doc();
  doc["training"].erase("global_batch");
  check_rejected(doc, "/training/global_batch", {"missing required field"});
  doc = scenario_doc();
  doc.erase("parallelism");
  check_rejected(doc, "/parallelism", {"missing required field"});
  // A full model (no preset) must give every size.
  check_assignments_rejected({"/model={\"name\": \"mine\", \"layers\": 4, \"hidden\": 1024}"},
                             "/model/heads", {"missing required field"});
}

TEST_CASE("bad units in a scenario are named with the expected form", "[scenario][bad-input]") {
  check_assignments_rejected({"/system/gpus=16", "/system/fabric/nic_bandwidth=400 Gbs"},
                             "/system/fabric/nic_bandwidth",
                             {"expected a bandwidth", "'400 Gbs'", "'Gbs'"});
  check_assignments_rejected({"/system/gpus=16", "/system/fabric/nic_bandwidth=400"},
                             "/system/fabric/nic_bandwidth", {"written as a string with its unit"});
  check_assignments_rejected({"/system/nvlink/link_bandwidth=fast"},
                             "/system/nvlink/link_bandwidth", {"expected a bandwidth", "'fast'"});
  check_assignments_rejected({"/parallelism/bucket_size=40 MiBs"}, "/parallelism/bucket_size",
                             {"'40 MiBs'", "'MiBs'"});
}

TEST_CASE("unknown presets list the known ones", "[scenario][bad-input]") {
  check_assignments_rejected({"/system/preset=dgx-h1000"}, "/system/preset",
                             {"expected one of", "dgx-h100", "gb200-nvl72", "\"dgx-h1000\""});
  check_assignments_rejected({"/model/preset=llama9-1t"}, "/model/preset",
                             {"a model preset", "llama3-8b", "\"llama9-1t\""});
  check_assignments_rejected({"/training/precision=tf32"}, "/training/precision",
                             {"one of bf16, fp16, fp8, mxfp8, nvfp4"});
  check_assignments_rejected({"/parallelism/recompute=some"}, "/parallelism/recompute",
                             {"one of none, selective, full"});
  check_assignments_rejected({"/simulation/backend=fast"}, "/simulation/backend",
                             {"flow", "analytical"});
}

TEST_CASE("zero and negative sizes are rejected where they are written", "[scenario][bad-input]") {
  check_assignments_rejected({"/system/gpus=0"}, "/system/gpus", {"a positive integer", "got 0"});
  check_assignments_rejected({"/parallelism/tp=-2"}, "/parallelism/tp",
                             {"a positive integer", "got -2"});
  check_assignments_rejected({"/parallelism/micro_batch=0"}, "/parallelism/micro_batch",
                             {"a positive integer"});
  check_assignments_rejected({"/training/global_batch=0"}, "/training/global_batch",
                             {"a positive integer"});
  check_assignments_rejected({"/training/seq_len=-8192"}, "/training/seq_len",
                             {"a positive integer"});
  check_assignments_rejected({"/model/layers=0"}, "/model/layers", {"a positive integer", "got 0"});
  check_assignments_rejected({"/parallelism/zero=4"}, "/parallelism/zero", {"a ZeRO stage 0..3"});
}

TEST_CASE("plans that do not divide name the field and the numbers", "[scenario][bad-input]") {
  SECTION("GPU count not a multiple of tp x pp x cp") {
    check_assignments_rejected({"/parallelism/tp=3"}, "/parallelism",
                               {"tp x pp x cp = 6", "does not divide the 8 GPUs"});
  }
  SECTION("an explicit dp that does not match the GPUs") {
    check_assignments_rejected({"/parallelism/dp=3"}, "/parallelism",
                               {"1 x 2 x 3 x 1 = 6", "does not match the 8 GPUs"});
  }
  SECTION("attention heads not divisible by tp") {
    // 20 heads of 128 (an explicit head_dim, so hidden need not divide) over tp = 8.
    check_assignments_rejected({"/model/heads=20", "/model/kv_heads=4", "/model/head_dim=128",
                                "/parallelism/tp=8", "/parallelism/cp=1"},
                               "/parallelism/tp", {"20 attention heads do not divide by tp = 8"});
  }
  SECTION("global batch not divisible by dp x micro_batch") {
    check_assignments_rejected({"/training/global_batch=6"}, "/training/global_batch",
                               {"global batch of 6 sequences", "dp x micro_batch = 4 x 1"});
    check_assignments_rejected({"/parallelism/micro_batch=4", "/training/global_batch=8"},
                               "/training/global_batch", {"dp x micro_batch = 4 x 4"});
  }
  SECTION("a GPU count the system cannot be built with") {
    check_assignments_rejected({"/system/gpus=12"}, "/system/gpus",
                               {"12 GPUs", "8 GPUs per server"});
  }
}

TEST_CASE("impossible fabrics are rejected with the field at fault", "[scenario][bad-input]") {
  SECTION("leaf radix too small") {
    // Read by build_cluster, which reports the spec field; the scenario maps it to /system.
    check_assignments_rejected({"/system/gpus=64", "/system/fabric/radix=4"}, "/system",
                               {"radix is too small", "radix 4", "scale_out/radix"});
  }
  SECTION("zero NIC bandwidth") {
    check_assignments_rejected({"/system/gpus=16", "/system/fabric/nic_bandwidth=0 Gbps"},
                               "/system/fabric/nic_bandwidth", {"a positive bandwidth"});
  }
  SECTION("zero NVLink bandwidth") {
    check_assignments_rejected({"/system/nvlink/link_bandwidth=0 GB/s"},
                               "/system/nvlink/link_bandwidth", {"a positive bandwidth"});
  }
  SECTION("fabric overrides on a system without that fabric part") {
    check_assignments_rejected({"/system/preset=generic-h100-pcie-eth", "/system/nvlink/nvls=true"},
                               "/system/nvlink", {"no NVLink domain"});
  }
}

TEST_CASE("malformed --set assignments are rejected with the assignment", "[scenario][bad-input]") {
  nlohmann::json doc = default_scenario_json();
  const nlohmann::json before = doc;
  for (const std::string bad : {"system/gpus=16", "/system/gpus", "", "gpus"}) {
    INFO("'" << bad << "'");
    try {
      apply_assignments(doc, {bad}, "<command line>");
      FAIL("no InputError");
    } catch (const sim::InputError& e) {
      CHECK(e.where() == "<command line>");
      CHECK(e.path() == "--set");
      CHECK(e.message() == "expected /json/pointer=value, got '" + bad + "'");
    }
  }
  // A pointer through a value that is not an object or array.
  try {
    apply_assignments(doc, {"/system/gpus/count=2"}, "<command line>");
    FAIL("no InputError");
  } catch (const sim::InputError& e) {
    CHECK(e.where() == "<command line>");
    CHECK(e.path() == "/system/gpus/count");
    CHECK_THAT(e.message(), Catch::Contains("cannot set this field"));
  }
  CHECK(doc == before);
}

TEST_CASE("apply_assignments sets nested values, JSON or bare strings", "[scenario]") {
  nlohmann::json doc = default_scenario_json();
  apply_assignments(doc,
                    {"/system/gpus=16", "/system/preset=dgx-b200", "/training/precision=\"fp8\"",
                     "/parallelism/sequence_parallel=true", "/system/fabric/nic_bandwidth=400 Gbps",
                     "/model/moe={\"experts\": 8, \"top_k\": 2}", "/notes/deep/list=[1, 2.5]",
                     "/comment=", "/tag=\"16\"", "/equation=a=b", "/a~1b=null"},
                    "<test>");
  CHECK(doc["system"]["gpus"] == 16);
  CHECK(doc["system"]["gpus"].is_number_integer());
  CHECK(doc["system"]["preset"] == "dgx-b200");  // not JSON: taken as a string
  CHECK(doc["training"]["precision"] == "fp8");  // a JSON string
  CHECK(doc["parallelism"]["sequence_parallel"] == true);
  CHECK(doc["system"]["fabric"]["nic_bandwidth"] == "400 Gbps");
  CHECK(doc["model"]["moe"] == nlohmann::json::parse(R"({"experts": 8, "top_k": 2})"));
  CHECK(doc["model"]["preset"] == "llama3-8b");                              // siblings are kept
  CHECK(doc["notes"]["deep"]["list"] == nlohmann::json::parse("[1, 2.5]"));  // parents created
  CHECK(doc["comment"] == "");
  CHECK(doc["tag"] == "16");
  CHECK(doc["tag"].is_string());
  CHECK(doc["equation"] == "a=b");  // split at the first '='
  CHECK(doc.contains("a/b"));       // RFC 6901 escape
  CHECK(doc["a/b"].is_null());
  // Later assignments override earlier ones.
  apply_assignments(doc, {"/system/gpus=8", "/system/gpus=32"}, "<test>");
  CHECK(doc["system"]["gpus"] == 32);
  // Array elements by index.
  apply_assignments(doc, {"/scale/systems/1=gb200-nvl72"}, "<test>");
  CHECK(doc["scale"]["systems"][1] == "gb200-nvl72");
}

TEST_CASE("flags and --set give the same scenario", "[scenario]") {
  nlohmann::json doc = scenario_doc({"/system/gpus=16", "/parallelism/tp=2", "/parallelism/cp=1"});
  const Scenario s = read(doc, "<scenario>");
  CHECK(s.gpus == 16);
  CHECK(s.plan.tp == 2);
  CHECK(s.plan.dp == 8);
  CHECK(s.plan.gpus() == 16);
  const nlohmann::json echo = scenario_to_json(s);
  CHECK(echo["parallelism"]["dp"] == 8);
  CHECK(echo["system"]["gpus"] == 16);
  CHECK(echo["training"]["seq_len"] == 8192);
}

TEST_CASE("MoE load imbalance and the MoE dispatcher are checked where written",
          "[scenario][bad-input]") {
  for (const char* bad : {"0.5", "65"}) {
    check_assignments_rejected(
        {"/model={\"preset\": \"mixtral-8x7b\", \"moe\": {\"load_imbalance\": " + std::string(bad) +
         "}}"},
        "/model/moe/load_imbalance", {"load imbalance from 1 (balanced) to 64"});
  }
  check_assignments_rejected(
      {"/model={\"preset\": \"mixtral-8x7b\", \"moe\": {\"load_imbalance\": \"high\"}}"},
      "/model/moe/load_imbalance", {"expected a number"});
  check_assignments_rejected(
      {"/software={\"framework\": \"nemo\", \"moe_dispatcher\": \"nvshmem\"}"},
      "/software/moe_dispatcher", {"alltoall", "deepep"});
}

TEST_CASE("the CP communication type is one of Megatron-Core's three modelled ones, with its heads",
          "[scenario][bad-input]") {
  check_assignments_rejected({"/parallelism/cp_comm_type=\"ring\""}, "/parallelism/cp_comm_type",
                             {"p2p", "a2a", "all_gather"});
  check_assignments_rejected({"/parallelism/cp_comm_type=2"}, "/parallelism/cp_comm_type",
                             {"expected one of p2p, a2a, all_gather, got 2"});
  check_assignments_rejected({"/parallelism/cp_comm_type=\"a2a+p2p\""}, "/parallelism/cp_comm_type",
                             {"a2a+p2p"});
  CHECK(read(scenario_doc({"/parallelism/cp_comm_type=\"all_gather\""})).plan.cp_comm ==
        models::CpComm::all_gather);
  // The default scenario: Llama 3 8B's 8 key/value heads over TP 1 and CP 2 divide; CP 8 not
  // at TP 2.
  CHECK(read(scenario_doc({"/parallelism/cp_comm_type=\"a2a\""})).plan.cp_comm ==
        models::CpComm::a2a);
  check_assignments_rejected({"/parallelism/cp_comm_type=\"a2a\"", "/parallelism/tp=2",
                              "/parallelism/cp=8", "/system/gpus=16"},
                             "/parallelism/cp_comm_type", {"divide by cp = 8"});
}

namespace {

/// The run --json report of a scenario, less the simulator's wall time (the one thing that
/// differs between two runs of the same scenario).
nlohmann::json run_json(const Scenario& s) {
  nlohmann::json j = report_to_json(run_training(s));
  if (j.contains("simulation")) j["simulation"].erase("wall_s");
  return j;
}

}  // namespace

TEST_CASE("run --json's scenario, read back as a scenario file, reproduces the run exactly",
          "[scenario][echo]") {
  const std::string profile = testing::source_file("calibration/profiles/dgx-h100.json");
  const std::vector<std::vector<std::string>> variants = {
      {},  // the embedded default, flow backend
      // A software preset, its attention kernel overridden, FP8 LoRA with a token budget.
      {"/software={\"framework\": \"megatron-core\", \"released\": \"2024-09\"}",
       "/training/attention_kernel=flash2", "/training/precision=fp8", "/training/task=lora",
       "/training/lora_rank=8", "/training/tokens_to_train=1e12", "/training/causal=false",
       "/training/fp8_blockwise=true", "/calibration=" + profile},
      // An MoE model over expert parallelism with DeepEP, interleaved pipeline, ZeRO-3.
      {"/model={\"preset\": \"mixtral-8x7b\"}", "/system/gpus=32",
       "/parallelism={\"tp\": 2, \"pp\": 2, \"vp\": 2, \"ep\": 8, \"zero\": 3, \"micro_batch\": 2, "
       "\"recompute\": \"full\", \"order\": \"tp-dp-cp-pp\", \"bucket_size\": \"25 MiB\"}",
       "/software={\"framework\": \"hai-llm\", \"moe_dispatcher\": \"alltoall\"}",
       "/simulation={\"backend\": \"analytical\", \"ignore_memory\": true}"},
      // Fabric and NVLink overrides, explicit tiers, routing, SHARP.
      {"/system/gpus=64", "/system/routing=spray", "/system/nvlink/link_bandwidth=20 GB/s",
       "/system/fabric={\"nic_bandwidth\": \"200 Gbps\", \"leaf_down_ports\": 16, "
       "\"leaf_up_ports\": 8, \"tiers\": [{\"ports\": 48}], \"collnet\": true}",
       "/simulation/collnet=true", "/parallelism/tp=2", "/parallelism/dp=16",
       "/simulation/pp_all_instances=true"},
      // Stragglers and a slow link (every rank simulated), with operations sections.
      {"/system/gpus=16", "/stragglers={\"ranks\": {\"3\": 1.5}, \"links\": {\"9\": 2}}",
       "/checkpoint={\"mode\": \"async\", \"interval\": \"30 min\"}",
       "/storage={\"write_bandwidth\": \"200 GB/s\"}", "/reliability={\"recovery\": \"manual\"}"},
  };
  for (const std::vector<std::string>& v : variants) {
    INFO("assignments: " << nlohmann::json(v).dump());
    const Scenario first = read(scenario_doc(v), "<scenario>");
    const nlohmann::json report = run_json(first);
    REQUIRE(report.contains("step_time_s"));
    const nlohmann::json echo = report["scenario"];
    const Scenario again = read(echo, "<scenario>");
    CHECK(run_json(again) == report);
    CHECK(scenario_to_json(again) == echo);  // the echo of the echo is the echo
  }
  // The default's echo states what the file left to defaults.
  const nlohmann::json echo = scenario_to_json(read(default_scenario_json(), "<scenario>"));
  CHECK(echo["parallelism"]["dp"] == 4);
  CHECK(echo["software"]["framework"] == "default");
  CHECK(echo["system"]["fabric"]["nic_bandwidth"] == "50000000000 B/s");  // 400 Gb/s
  CHECK(echo["training"]["attention_kernel"] == "cudnn");
  CHECK_FALSE(echo.contains("calibration"));
}

TEST_CASE("each scenario flag sets the pointer of its setting", "[scenario][settings]") {
  size_t flags = 0;
  for (const Setting& s : scenario_settings()) {
    if (s.flag.empty()) continue;
    ++flags;
    INFO(s.flag);
    std::vector<std::string> args = {"fabricsim", std::string(s.flag_name())};
    nlohmann::json want = true;
    if (s.kind == SettingKind::count || s.kind == SettingKind::stage ||
        s.kind == SettingKind::natural) {
      args.push_back("2");
      want = 2;
    } else if (s.kind != SettingKind::boolean) {
      args.push_back(s.choices.empty() ? "x" : s.choice_list().back());
      want = args.back();
      if (s.kind == SettingKind::object) want = {{"preset", args.back()}};
    }
    for (const bool plan_flags : {true, false}) {
      CLI::App app;
      ScenarioOptions options;
      options.add_to(app, plan_flags);
      std::vector<const char*> argv;
      for (const std::string& a : args)
        argv.push_back(a.c_str());
      if (!plan_flags && s.section() == "/parallelism") {
        CHECK_THROWS_AS(app.parse(static_cast<int>(argv.size()), argv.data()), CLI::ParseError);
        continue;
      }
      app.parse(static_cast<int>(argv.size()), argv.data());
      const std::vector<Assignment> set = options.overrides();
      REQUIRE(set.size() == 1);
      CHECK(set[0].pointer == s.pointer);
      CHECK(set[0].value == want);
    }
  }
  CHECK(flags == 22);  // --system ... --ignore-memory, as docs/cli.md lists them
}

TEST_CASE("software.cuda_graphs and cuda_graph_moe_router override the preset's",
          "[scenario][bad-input]") {
  const Scenario preset =
      read(scenario_doc({"/software={\"framework\": \"megatron-bridge\", "
                         "\"version\": \"25.11\"}"}));
  CHECK(preset.lowering.software.cuda_graphs == models::CudaGraphs::attention);
  CHECK_FALSE(preset.lowering.software.graph_moe_router);
  const Scenario set =
      read(scenario_doc({"/software={\"framework\": \"megatron-bridge\", "
                         "\"version\": \"25.11\", \"cuda_graphs\": \"none\", "
                         "\"cuda_graph_moe_router\": true}"}));
  CHECK(set.lowering.software.cuda_graphs == models::CudaGraphs::none);
  CHECK(set.lowering.software.graph_moe_router);
  check_assignments_rejected({"/software={\"framework\": \"nemo\", \"cuda_graphs\": \"most\"}"},
                             "/software/cuda_graphs", {"none", "attention", "full", "\"most\""});
  check_assignments_rejected(
      {"/software={\"framework\": \"nemo\", \"cuda_graph_moe_router\": \"yes\"}"},
      "/software/cuda_graph_moe_router", {"true or false"});
}
