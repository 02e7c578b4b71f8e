#include "api/training_case.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <optional>

#include "api/scenario.hpp"
#include "models/parallel_plan.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// A DeepSeek-V3-shaped MoE/MLA case as the Megatron-Bridge table gives it: 61 layers on
/// pp 4 x vp 4 = 16 virtual stages (61 does not divide by 16), EP 64 folded into DP.
calibration::Case moe_case() {
  calibration::Case c;
  c.id = "moe";
  c.kind = calibration::CaseKind::training;
  c.system = "gb200-nvl72";
  c.gpus = 256;
  c.precision = "bf16";
  calibration::CaseModel m;
  m.name = "DeepSeek-V3";
  m.layers = 61;
  m.hidden = 7168;
  m.ffn = 18432;
  m.heads = 128;
  m.vocab = 129280;
  m.seq_len = 4096;
  m.attention = "mla";
  m.mla = calibration::CaseMla{1536, 512, 128, 64, 128};
  calibration::CaseMoe e;
  e.experts = 256;
  e.top_k = 8;
  e.expert_ffn = 2048;
  e.shared_experts = 1;
  e.dense_layers = 3;
  m.moe = e;
  c.model = m;
  calibration::CaseParallelism p;
  p.tp = 1;
  p.pp = 4;
  p.vp = 4;
  p.ep = 64;
  p.micro_batch = 1;
  p.global_batch = 2048;
  c.parallelism = p;
  return c;
}

/// Names the case's model and gives it a shape (KV heads unstated when absent).
void name_model(calibration::Case& c, const char* name, int layers, int hidden, int heads,
                std::optional<int> kv_heads) {
  c.model->name = name;
  c.model->layers = layers;
  c.model->hidden = hidden;
  c.model->heads = heads;
  c.model->kv_heads = kv_heads;
}

Scenario read(const nlohmann::json& doc) {
  return read_scenario(sim::JsonDocument(doc, "case").root());
}

}  // namespace

TEST_CASE("an MoE/MLA case keeps its experts and latent-attention dims", "[validate]") {
  const Scenario s = read(training_case_scenario(moe_case()));
  REQUIRE(s.model.moe);
  CHECK(s.model.moe->experts == 256);
  CHECK(s.model.moe->top_k == 8);
  CHECK(s.model.moe->expert_ffn == 2048);
  CHECK(s.model.moe->shared_experts == 1);
  // An unstated shared-expert width is a routed expert's.
  CHECK(s.model.moe->shared_expert_ffn == 2048);
  CHECK(s.model.moe->dense_layers == 3);
  CHECK(s.model.moe->moe_layer_freq == 1);
  CHECK(models::moe_layer_count(s.model) == 58);
  REQUIRE(s.model.mla);
  CHECK(s.model.mla->kv_lora_rank == 512);
  CHECK(s.model.mla->qk_rope_head_dim == 64);
  CHECK(s.model.kv_heads == 128);
  CHECK(s.plan.ep == 64);
}

TEST_CASE("a case takes the head width and gate of the model preset of its name", "[validate]") {
  calibration::Case c = moe_case();
  name_model(c, "GPT-OSS 120B", 36, 2880, 64, 8);
  c.model->mla.reset();
  c.model->attention = "gqa";
  c.model->ffn = 2880;
  const Scenario s = read(training_case_scenario(c));
  // 64 heads of 64, not 2880 / 64 = 45; the quick-GELU gate, not SwiGLU.
  CHECK(s.model.head_dim == 64);
  CHECK(s.model.mlp == models::MlpKind::quick_geglu);
  // Another shape under the same name is not that model: the width defaults stand.
  c.model->kv_heads = 4;
  const Scenario other = read(training_case_scenario(c));
  CHECK(other.model.head_dim == 45);
  CHECK(other.model.mlp == models::MlpKind::swiglu);
}

TEST_CASE("a case's positions are its preset's, else its family's, else rotary", "[validate]") {
  calibration::Case c = moe_case();
  c.model->moe.reset();
  c.model->mla.reset();
  c.model->attention.reset();
  c.parallelism->ep.reset();
  const auto position = [&] { return read(training_case_scenario(c)).model.position; };
  // MPT as llm-foundry benchmarks it: MPTConfig's learned position table, no ALiBi.
  name_model(c, "MPT-7b", 32, 4096, 32, std::nullopt);
  CHECK(position() == models::PositionEncoding::learned);
  name_model(c, "GPT 1.7B", 24, 2304, 24, std::nullopt);
  CHECK(position() == models::PositionEncoding::learned);
  name_model(c, "GPT-3 20B (NeMo)", 44, 6144, 48, std::nullopt);
  CHECK(position() == models::PositionEncoding::learned);
  name_model(c, "Nemotron-3 22B", 40, 6144, 48, std::nullopt);
  CHECK(position() == models::PositionEncoding::rope);
  name_model(c, "Llama-2 7B", 32, 4096, 32, std::nullopt);
  CHECK(position() == models::PositionEncoding::rope);
  // GPT-OSS is not a "GPT <size>": its preset says YaRN.
  name_model(c, "GPT-OSS 120B", 36, 2880, 64, 8);
  c.model->ffn = 2880;
  CHECK(position() == models::PositionEncoding::yarn);
  // Another shape under that name is not the preset: rotary, the default.
  c.model->kv_heads = 4;
  CHECK(position() == models::PositionEncoding::rope);
}

TEST_CASE("an unstated vocabulary is the named model's, else the documented default",
          "[validate]") {
  calibration::Case c = moe_case();
  c.model->moe.reset();
  c.model->mla.reset();
  c.model->attention.reset();
  c.model->vocab.reset();
  c.model->ffn.reset();
  c.parallelism->ep.reset();
  // NeMo's "Nemotron-3 22B": the 256k-token vocabulary of NeMo's Nemotron configs, compared on
  // letters and digits ("Nemotron-3 22B" is nemotron-3-22b).
  name_model(c, "Nemotron-3 22B", 40, 6144, 48, std::nullopt);
  CHECK(read(training_case_scenario(c)).model.vocab == 256000);
  // "Llama-2 70B" is llama2-70b (GQA 8 KV heads): 32000.
  name_model(c, "Llama-2 70B", 80, 8192, 64, 8);
  c.model->ffn = 28672;
  CHECK(read(training_case_scenario(c)).model.vocab == 32000);
  // The same name with other dimensions is another model: Megatron's padded GPT-2 default.
  c.model->kv_heads = 64;
  CHECK(read(training_case_scenario(c)).model.vocab == 51200);
  // A preset name may leave off the size: "DeepSeek-V3 671B" is deepseek-v3 (MLA).
  calibration::Case d = moe_case();
  d.model->name = "DeepSeek-V3 671B";
  d.model->vocab.reset();
  CHECK(read(training_case_scenario(d)).model.vocab == 129280);
}

TEST_CASE("a case whose layers do not divide into the stages gives the ends fewer", "[validate]") {
  const Scenario s = read(training_case_scenario(moe_case()));
  const std::vector<int> per = models::layers_per_virtual_stage(s.plan, s.model.layers);
  REQUIRE(per.size() == 16);
  CHECK(std::accumulate(per.begin(), per.end(), 0) == 61);
  // ceil(61 / 16) = 4 for every middle stage; the 3 surplus come off the last and first.
  for (size_t i = 1; i + 1 < per.size(); ++i)
    CHECK(per[i] == 4);
  CHECK(per.front() + per.back() == 61 - 14 * 4);
  CHECK(per.back() <= per.front());
}

TEST_CASE("a dense case stays dense and its unknown fields take the defaults", "[validate]") {
  calibration::Case c = moe_case();
  c.model->moe.reset();
  c.model->mla.reset();
  c.model->attention.reset();
  c.model->kv_heads = 8;
  c.model->layers = 64;
  c.parallelism->ep.reset();
  const Scenario s = read(training_case_scenario(c));
  CHECK_FALSE(s.model.moe);
  CHECK_FALSE(s.model.mla);
  CHECK(s.model.kv_heads == 8);
  CHECK(s.plan.ep == 1);
  CHECK(models::layers_per_virtual_stage(s.plan, 64) == std::vector<int>(16, 4));
}

TEST_CASE("a case's framework selects its software preset", "[validate]") {
  calibration::Case c = moe_case();
  c.framework = calibration::CaseFramework{"megatron-lm", std::nullopt, "2021-04"};
  Scenario s = read(training_case_scenario(c));
  CHECK(s.lowering.software.id == "megatron-lm-2021");
  CHECK(s.training.unfused_attention);
  CHECK_FALSE(s.plan.tp_comm_overlap);
  c.framework = calibration::CaseFramework{"nemo", "24.07", "2024-07"};
  s = read(training_case_scenario(c));
  CHECK(s.lowering.software.id == "nemo-24.07");
  CHECK_FALSE(s.training.unfused_attention);
  CHECK(s.plan.tp_comm_overlap);
  c.framework.reset();
  CHECK(read(training_case_scenario(c)).lowering.software.id == "default");
  // No framework named, or `unknown`: the documented default, PyTorch-native when the run
  // shards with FSDP (FSDP is PyTorch's API), and a named framework keeps its own preset.
  c.framework = calibration::CaseFramework{"unknown", std::nullopt, "2024-12"};
  CHECK(read(training_case_scenario(c)).lowering.software.id == "default");
  c.parallelism->fsdp = true;
  s = read(training_case_scenario(c));
  CHECK(s.lowering.software.id == "pytorch-fsdp");
  CHECK(s.lowering.software.eager_elementwise);
  CHECK(s.lowering.software.attention == models::AttentionKernel::flash2);
  c.framework.reset();
  CHECK(read(training_case_scenario(c)).lowering.software.id == "pytorch-fsdp");
  c.framework = calibration::CaseFramework{"llm-foundry", std::nullopt, "2023-05"};
  CHECK(read(training_case_scenario(c)).lowering.software.id == "llm-foundry");
}

TEST_CASE("a Megatron-Bridge job beyond one NVL72 rack runs in Slurm segments", "[validate]") {
  // moe_case: 256 GPUs of GB200 NVL72 = 64 nodes of 4; the largest divisor of 64 that fits 18
  // nodes per rack is 16: 64 GPUs in each of 4 racks (Bridge's executors.py --segment).
  calibration::Case c = moe_case();
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.11", "2025-11"};
  const nlohmann::json doc = training_case_scenario(c);
  CHECK(doc["system"]["nvlink"]["segment"] == 64);
  const Scenario s = read(doc);
  REQUIRE(s.cluster.nvlink);
  CHECK(s.cluster.nvlink->gpus_per_domain == 64);
  CHECK(s.cluster.nvlink->gpus_per_board == 64);
  // 144 GPUs = 36 nodes fill two racks of 18: whole domains, no segment; one rack or fewer, or
  // another framework's launcher: none either.
  for (int gpus : {144, 72, 32}) {
    c.gpus = gpus;
    CHECK_FALSE(training_case_scenario(c)["system"].contains("nvlink"));
  }
  c.gpus = 256;
  c.framework = calibration::CaseFramework{"nemo", "24.07", "2024-07"};
  CHECK_FALSE(training_case_scenario(c)["system"].contains("nvlink"));
}

TEST_CASE("system.nvlink.segment: a multiple of the server, at most the domain", "[validate]") {
  nlohmann::json doc = training_case_scenario(moe_case());
  for (int bad : {66, 76}) {
    doc["system"]["nvlink"] = {{"segment", bad}};
    CHECK_THROWS_AS(read(doc), sim::InputError);
  }
  doc["system"]["nvlink"] = {{"segment", 72}};
  CHECK(read(doc).cluster.nvlink->gpus_per_domain == 72);
}

namespace {

calibration::Case dense_case(std::optional<int> tp, std::optional<int> pp, std::optional<int> cp,
                             std::optional<int> dp) {
  calibration::Case c;
  c.id = "dense";
  c.kind = calibration::CaseKind::training;
  c.system = "dgx-h100";
  c.gpus = 64;
  c.precision = "bf16";
  calibration::CaseModel m;
  m.name = "dense";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  c.model = m;
  calibration::CaseParallelism p;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.dp = dp;
  p.global_batch = 256;
  c.parallelism = p;
  return c;
}

std::array<int, 4> sizes_of(const CasePlanSizes& s) {
  return {s.tp, s.pp, s.cp, s.dp};
}

}  // namespace

TEST_CASE("training case: the one unstated plan size is what the GPU count leaves", "[cases]") {
  using A = std::array<int, 4>;
  CHECK(sizes_of(case_plan_sizes(dense_case({}, 2, 2, 4))) == A{4, 2, 2, 4});
  CHECK(sizes_of(case_plan_sizes(dense_case(4, {}, 2, 4))) == A{4, 2, 2, 4});
  CHECK(sizes_of(case_plan_sizes(dense_case(4, 2, {}, 4))) == A{4, 2, 2, 4});
  CHECK(sizes_of(case_plan_sizes(dense_case(4, 2, 2, {}))) == A{4, 2, 2, 4});
  // An unstated context size with another unknown is 1; the other is then derived.
  CHECK(sizes_of(case_plan_sizes(dense_case({}, 2, {}, 4))) == A{8, 2, 1, 4});
  CHECK(sizes_of(case_plan_sizes(dense_case(8, 2, {}, {}))) == A{8, 2, 1, 4});
  CHECK(sizes_of(case_plan_sizes(dense_case(8, {}, {}, {}))) == A{8, 1, 1, 8});
  // tp and pp unknown with dp covering every GPU: no model parallelism.
  CHECK(sizes_of(case_plan_sizes(dense_case({}, {}, {}, 64))) == A{1, 1, 1, 64});
  for (const auto& c : {dense_case({}, 2, 2, 4), dense_case(8, {}, {}, {})})
    CHECK_FALSE(case_plan_sizes(c).searched);
  // A size that does not divide stays a plan check_plan refuses, never 0.
  const CasePlanSizes odd = case_plan_sizes(dense_case({}, 3, 1, 4));
  CHECK(std::min({odd.tp, odd.pp, odd.cp, odd.dp}) >= 1);
  CHECK(odd.tp * odd.pp * odd.cp * odd.dp != 64);
}

TEST_CASE("training case: an unstated plan is searched with what the case states", "[cases]") {
  const CasePlanSizes none = case_plan_sizes(dense_case({}, {}, {}, {}));
  CHECK(none.searched);
  CHECK(none.fixed.empty());
  const CasePlanSizes dp_only = case_plan_sizes(dense_case({}, {}, {}, 16));
  CHECK(dp_only.searched);
  CHECK(dp_only.fixed == std::map<std::string, int>{{"dp", 16}});
  // Fully sharded data parallelism (FSDP, ZeRO-3) with no model parallelism stated: pure DP.
  calibration::Case fsdp = dense_case({}, {}, {}, {});
  fsdp.parallelism->fsdp = true;
  const CasePlanSizes f = case_plan_sizes(fsdp);
  CHECK_FALSE(f.searched);
  CHECK(sizes_of(f) == std::array<int, 4>{1, 1, 1, 64});
  CHECK(training_case_scenario(dense_case({}, {}, {}, {})).contains("comment"));
  // Fully sharded with the micro-batch unstated: only the micro-batch is searched.
  CHECK(f.micro_batch_searched);
  calibration::Case stated = fsdp;
  stated.parallelism->micro_batch = 2;
  CHECK_FALSE(case_plan_sizes(stated).micro_batch_searched);
  // Any stated plan without its micro-batch: a published benchmark ran the one its authors
  // tuned, so validate searches it (ZeRO 1 and model parallelism alike).
  calibration::Case megatron = dense_case(8, 1, 1, 8);
  CHECK(case_plan_sizes(megatron).micro_batch_searched);
  megatron.parallelism->micro_batch = 1;
  CHECK_FALSE(case_plan_sizes(megatron).micro_batch_searched);
}

TEST_CASE("training case: FP4 of unstated flavour trains as NVFP4", "[cases]") {
  calibration::Case c = dense_case(8, 1, 1, 8);
  c.system = "dgx-b200";
  c.precision = "fp4";
  CHECK(training_case_scenario(c)["training"]["precision"] == "nvfp4");
}

TEST_CASE("a Megatron-Bridge MoE case runs its performance recipe's graphs, routing and dispatcher",
          "[validate]") {
  // moe_case is DeepSeek-V3 on 256 GB200 GPUs.
  calibration::Case c = moe_case();
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.09", "2025-09"};
  // 25.09 drops tokens beyond capacity 1 on GB200, without CUDA graphs.
  nlohmann::json doc = training_case_scenario(c);
  CHECK(doc["model"]["moe"]["capacity_factor"] == 1.0);
  CHECK(doc["software"]["cuda_graphs"] == "none");
  Scenario s = read(doc);
  CHECK(s.model.moe->capacity_factor == 1.0);
  CHECK(s.lowering.software.cuda_graphs == models::CudaGraphs::none);
  // On H100 the same release ran it dropless through DeepEP.
  c.system = "dgx-h100";
  c.gpus = 1024;
  s = read(training_case_scenario(c));
  CHECK(s.lowering.software.moe_dispatcher == models::MoeDispatcher::deepep);
  CHECK(s.model.moe->capacity_factor == 0);
  // 25.11 on GB300: dropless, graphs over attention and the router.
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.11", "2025-11"};
  c.system = "gb300-nvl72";
  c.gpus = 256;
  s = read(training_case_scenario(c));
  CHECK(s.lowering.software.cuda_graphs == models::CudaGraphs::attention);
  CHECK(s.lowering.software.graph_moe_router);
  CHECK(s.lowering.software.moe_dispatcher == models::MoeDispatcher::hybridep);
  // No recipe: another framework, or a model the scripts have none for, keeps the preset's.
  c.framework = calibration::CaseFramework{"nemo", "24.07", "2024-07"};
  CHECK_FALSE(training_case_scenario(c)["software"].contains("cuda_graphs"));
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.11", "2025-11"};
  c.model->name = "Mixtral 8x22B";
  CHECK_FALSE(training_case_scenario(c)["software"].contains("cuda_graphs"));
}

TEST_CASE("a Megatron-Bridge table's misprinted expert parallelism is the one its scripts ran",
          "[validate]") {
  // The 25.11 table prints GPT-OSS 120B on 64 B200 at EP 8; its scripts ran EP 64.
  calibration::Case c = moe_case();
  c.model->name = "GPT-OSS 120B";
  c.system = "dgx-b200";
  c.gpus = 64;
  c.parallelism->pp = 1;
  c.parallelism->vp = 1;
  c.parallelism->ep = 8;
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.11", "2025-11"};
  CHECK(training_case_scenario(c)["parallelism"]["ep"] == 64);
  // A later release that falls back on the 25.11 rows keeps the EP its own table prints.
  c.framework = calibration::CaseFramework{"megatron-bridge", "26.02.01", "2026-03"};
  CHECK(training_case_scenario(c)["parallelism"]["ep"] == 8);
  // So does the same release on another system.
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.11", "2025-11"};
  c.system = "gb200-nvl72";
  CHECK(training_case_scenario(c)["parallelism"]["ep"] == 8);
}

TEST_CASE("a Megatron-Bridge table's misprinted dense plan is the one its scripts ran",
          "[validate]") {
  // The 26.02.01 table prints Llama 3 70B on 64 GB300 in MXFP8 at PP 4, no VP, MBS 2; the
  // release's scripts ran PP 4, VP 5, MBS 1 (the NVFP4 row likewise, printed at PP 1).
  calibration::Case c = moe_case();
  c.model->moe.reset();
  c.model->mla.reset();
  c.model->attention.reset();
  name_model(c, "Llama-3 70B", 80, 8192, 64, 8);
  c.model->ffn = 28672;
  c.model->vocab = 128256;
  c.model->seq_len = 8192;
  c.system = "gb300-nvl72";
  c.gpus = 64;
  c.precision = "mxfp8";
  c.parallelism->pp = 4;
  c.parallelism->vp.reset();
  c.parallelism->ep.reset();
  c.parallelism->micro_batch = 2;
  c.parallelism->global_batch = 256;
  c.framework = calibration::CaseFramework{"megatron-bridge", "26.02.01", "2026-03"};
  nlohmann::json p = training_case_scenario(c)["parallelism"];
  CHECK(p["pp"] == 4);
  CHECK(p["vp"] == 5);
  CHECK(p["micro_batch"] == 1);
  CHECK(p["dp"] == 16);
  REQUIRE(case_plan_fix(c) != nullptr);
  CHECK(read(training_case_scenario(c)).plan.vp == 5);
  c.precision = "nvfp4";
  c.parallelism->pp = 1;
  p = training_case_scenario(c)["parallelism"];
  CHECK(p["pp"] == 4);
  CHECK(p["dp"] == 16);
  // Only that release's table, only that system: 26.04 and GB200 print what ran.
  c.framework = calibration::CaseFramework{"megatron-bridge", "26.04", "2026-04"};
  CHECK(case_plan_fix(c) == nullptr);
  CHECK(training_case_scenario(c)["parallelism"]["pp"] == 1);
  c.framework = calibration::CaseFramework{"megatron-bridge", "26.02.01", "2026-03"};
  c.system = "gb200-nvl72";
  CHECK(case_plan_fix(c) == nullptr);
}

TEST_CASE("a Megatron-Bridge DeepSeek-V3 case runs its MTP module in its recipe's layout",
          "[validate]") {
  // moe_case is DeepSeek-V3 on 256 GB200 GPUs at pp 4 x vp 4.
  calibration::Case c = moe_case();
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.09", "2025-09"};
  // 25.09's configs lay out 32 stages; Megatron-Core takes vp from the layout.
  nlohmann::json doc = training_case_scenario(c);
  CHECK(doc["parallelism"]["pipeline_layout"] == "Et|(tt|)*30mL");
  CHECK(doc["parallelism"]["vp"] == 8);
  Scenario s = read(doc);
  CHECK(s.model.mtp_layers == 1);
  CHECK(s.plan.vp == 8);
  CHECK(models::stage_layout(s.plan, s.model).stages.back().mtp == 1);
  // 25.11's GB200 row ran without the module, in the recipe's 16-stage layout.
  c.framework = calibration::CaseFramework{"megatron-bridge", "25.11", "2025-11"};
  s = read(training_case_scenario(c));
  CHECK(s.model.mtp_layers == 0);
  CHECK(s.plan.pipeline_layout == "Et*4|(t*4|)*14tL");
  CHECK(s.plan.vp == 4);
  // Another framework: neither.
  c.framework = calibration::CaseFramework{"nemo", "24.07", "2024-07"};
  doc = training_case_scenario(c);
  CHECK_FALSE(doc["model"].contains("mtp_layers"));
  CHECK_FALSE(doc["parallelism"].contains("pipeline_layout"));
}
