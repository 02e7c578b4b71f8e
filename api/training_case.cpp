#include "api/training_case.hpp"

#include <algorithm>
#include <cctype>

#include "models/bridge_recipes.hpp"
#include "models/model_presets.hpp"
#include "models/nemo_recipes.hpp"
#include "models/pipeline_layout.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {

CasePlanSizes case_plan_sizes(const calibration::Case& c) {
  const calibration::CaseParallelism& p = *c.parallelism;
  CasePlanSizes s;
  auto state = [&](const char* key, const std::optional<int>& v) {
    if (v) s.fixed[key] = *v;
  };
  state("tp", p.tp);
  state("pp", p.pp);
  state("cp", p.cp);
  state("dp", p.dp);
  state("ep", p.ep);
  state("vp", p.vp);
  state("micro_batch", p.micro_batch);
  // In 64 bits: a hostile case's sizes must not overflow before check_plan rejects them.
  auto rest = [&](std::optional<int> cp) {
    const long long stated =
        1LL * p.tp.value_or(1) * p.pp.value_or(1) * cp.value_or(1) * p.dp.value_or(1);
    return stated > 0 && c.gpus % stated == 0 ? static_cast<int>(c.gpus / stated) : 0;
  };
  // A context size is stated when used: unknown together with another size, it is 1.
  const std::optional<int> cp = p.cp || (p.tp && p.pp && p.dp) ? p.cp : std::optional<int>(1);
  const int unknown = !p.tp + !p.pp + !cp + !p.dp;
  const int left = rest(cp);
  s.tp = p.tp.value_or(1);
  s.pp = p.pp.value_or(1);
  s.cp = cp.value_or(1);
  s.dp = p.dp.value_or(1);
  if (unknown == 1) {
    // The one size not stated is what the GPU count leaves.
    s.tp = p.tp.value_or(left);
    s.pp = p.pp.value_or(left);
    s.cp = cp.value_or(left);
    s.dp = p.dp.value_or(left);
  } else if (unknown == 2 && p.dp) {
    // tp and pp unknown: searched unless the stated sizes already cover every GPU.
    s.searched = left != 1;
  } else if (unknown == 2) {
    // dp and one of tp, pp: the other is 1 and dp what the GPU count leaves.
    s.dp = left;
  } else if (unknown == 3) {
    // No tp, pp nor dp: the plan is not stated. A fully sharded data-parallel run (FSDP,
    // ZeRO-3) is pure data parallelism; anything else is searched.
    s.dp = left;
    s.searched = !(p.fsdp.value_or(false) || p.zero.value_or(0) == 3);
  }
  s.micro_batch_searched = !s.searched && !p.micro_batch;
  // A size that does not divide: 1, and check_plan says why the plan does not fit the GPUs.
  for (int* size : {&s.tp, &s.pp, &s.cp, &s.dp})
    *size = std::max(*size, 1);
  return s;
}

namespace {

/// The preset the case's model names, compared on letters and digits alone ("GPT-OSS 120B" is
/// gpt-oss-120b, "Llama-2 7B" llama2-7b; a preset name may leave off the size: "DeepSeek-V3
/// 671B" is deepseek-v3), whose layers, hidden size, heads and KV heads are the case's; nullptr
/// otherwise.
const models::TransformerConfig* matching_preset(const calibration::CaseModel& m) {
  const std::string wanted = models::model_name_key(m.name);
  for (const models::TransformerConfig& p : models::model_presets()) {
    const std::string name = models::model_name_key(p.name);
    if (name.empty() || wanted.rfind(name, 0) != 0) continue;
    if (p.layers == m.layers && p.hidden == m.hidden && p.heads == m.heads &&
        p.kv_heads == m.kv_heads.value_or(m.heads)) {
      return &p;
    }
  }
  return nullptr;
}

/// GPUs per NVLink domain a Megatron-Bridge benchmark job takes, 0 for the whole domain. Its
/// performance scripts launch a job that spans more than one multi-node NVLink domain (GB200,
/// GB300 NVL72: 4 GPUs per node, 18 nodes per rack) with Slurm --segment set to the largest
/// divisor of the node count that fits a rack (scripts/performance/utils/executors.py, v0.2.0):
/// 256 GPUs run as 4 segments of 16 nodes, 64 GPUs in each rack.
int launch_segment(const calibration::Case& c) {
  if (!c.framework || c.framework->name != "megatron-bridge") return 0;
  const topologies::SystemPreset* preset = topologies::find_system(c.system);
  if (preset == nullptr || c.gpus <= 0) return 0;
  const topologies::ClusterSpec spec = preset->make(c.gpus);
  if (!spec.nvlink || spec.nvlink->gpus_per_domain <= spec.gpus_per_server ||
      c.gpus <= spec.nvlink->gpus_per_domain || c.gpus % spec.gpus_per_server != 0) {
    return 0;
  }
  const int nodes = c.gpus / spec.gpus_per_server;
  const int rack = spec.nvlink->gpus_per_domain / spec.gpus_per_server;
  for (int d = rack; d > 0; --d) {
    if (nodes % d == 0) return d == rack ? 0 : d * spec.gpus_per_server;
  }
  return 0;
}

/// How the case's model encodes positions: its preset's, else its family's where the name says
/// it, else rotary, the default of current models. Learned absolute embeddings for GPT-3 and
/// Megatron's "GPT <size>" models (Brown et al. 2020; Megatron-LM's and NeMo's default
/// learned_absolute) and for MPT as llm-foundry benchmarks it: its benchmark configurations set no
/// `alibi`, so MPTConfig's defaults hold (learned_pos_emb true, alibi false), and the benchmark
/// table's parameter count grows by max_seq_len x d_model with the sequence (the position table;
/// scripts/train/yamls/pretrain/mpt-*.yaml and benchmarking/README.md, 2023-07).
models::PositionEncoding case_position(const calibration::CaseModel& m,
                                       const models::TransformerConfig* preset) {
  if (preset != nullptr) return preset->position;
  const std::string key = models::model_name_key(m.name);
  const bool gpt_size = key.size() > 3 && key.starts_with("gpt") &&
                        std::isdigit(static_cast<unsigned char>(key[3])) != 0;
  if (gpt_size || key.starts_with("mpt")) return models::PositionEncoding::learned;
  return models::PositionEncoding::rope;
}

/// The release of a Megatron-Bridge case that names one; nullptr for any other case.
const std::string* bridge_version(const calibration::Case& c) {
  if (!c.framework || c.framework->name != "megatron-bridge" || !c.framework->version)
    return nullptr;
  return &*c.framework->version;
}

/// The case's precision as a scenario names it: FP4 of unstated flavour is NVFP4, the FP4 training
/// recipe of Transformer Engine and Megatron-Bridge on Blackwell (MXFP4 is an inference format
/// there).
std::string case_precision(const calibration::Case& c) {
  const std::string precision = c.precision.value_or("bf16");
  return precision == "fp4" ? "nvfp4" : precision;
}

}  // namespace

const models::BridgePlanFix* case_plan_fix(const calibration::Case& c) {
  const std::string* version = bridge_version(c);
  if (version == nullptr || !c.model) return nullptr;
  return models::bridge_plan_fix(*version, c.model->name, c.system, case_precision(c));
}

int case_offload_layers(const calibration::Case& c) {
  const std::string* version = bridge_version(c);
  if (version == nullptr || !c.model || !c.parallelism || !c.parallelism->fsdp.value_or(false) ||
      c.parallelism->recompute)
    return 0;
  return models::bridge_offload_layers(*version, c.model->name, c.system, case_precision(c));
}

nlohmann::json training_case_scenario(const calibration::Case& c) {
  const calibration::CaseModel& m = *c.model;
  const calibration::CaseParallelism& p = *c.parallelism;
  // What the case format does not carry (the head width where it is not hidden / heads, the
  // MLP's gate) or leaves unstated (the vocabulary) comes from the model preset of the same name,
  // when its dimensions agree: facts about the named model.
  const models::TransformerConfig* preset = matching_preset(m);
  nlohmann::json model = {{"name", m.name},
                          {"layers", m.layers},
                          {"hidden", m.hidden},
                          {"heads", m.heads},
                          // Unknown: MHA, the 4h MLP, the named model's vocabulary or else
                          // Megatron's padded GPT-2 one, 2048.
                          {"kv_heads", m.kv_heads.value_or(m.heads)},
                          {"ffn", m.ffn.value_or(4 * m.hidden)},
                          {"vocab", m.vocab.value_or(preset != nullptr ? preset->vocab : 51200)},
                          {"seq_len", m.seq_len.value_or(2048)}};
  // A 4h MLP is GELU-style (GPT) or squared ReLU (Nemotron), both two matrices; any other width
  // is the gated SwiGLU of Llama-style models (ffn ~ 8h/3).
  const int ffn = m.ffn.value_or(4 * m.hidden);
  model["mlp"] = ffn == 4 * m.hidden ? "gelu" : "swiglu";
  // MLA presets' head width is not the case's to take: the case gives its MLA dimensions.
  if (preset != nullptr && !preset->mla) {
    model["head_dim"] = preset->head_dim;
    model["mlp"] = models::mlp_kind_name(preset->mlp);
    if (preset->qk_norm) model["qk_norm"] = true;
    if (preset->sliding_window > 0) {
      model["sliding_window"] = preset->sliding_window;
      model["full_attention_every"] = preset->full_attention_every;
    }
  }
  model["position"] = models::position_encoding_name(case_position(m, preset));
  if (m.mla) {
    // MLA has no separate key/value heads: every query head has its own compressed k/v.
    model["kv_heads"] = m.heads;
    model["mla"] = {{"q_lora_rank", m.mla->q_lora_rank},
                    {"kv_lora_rank", m.mla->kv_lora_rank},
                    {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                    {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                    {"v_head_dim", m.mla->v_head_dim}};
  }
  if (m.moe) {
    // Unstated MoE fields (README: one documented default): no shared experts, no leading dense
    // layers, every layer MoE; a shared expert of unstated width is as wide as a routed one.
    const calibration::CaseMoe& e = *m.moe;
    nlohmann::json moe = {{"experts", e.experts.value_or(0)},
                          {"top_k", e.top_k.value_or(0)},
                          {"expert_ffn", e.expert_ffn.value_or(ffn)},
                          {"shared_experts", e.shared_experts.value_or(0)},
                          {"dense_layers", e.dense_layers.value_or(0)},
                          {"moe_layer_freq", e.moe_layer_freq.value_or(1)}};
    if (e.shared_experts.value_or(0) > 0)
      moe["shared_expert_ffn"] = e.shared_expert_ffn.value_or(e.expert_ffn.value_or(ffn));
    // Expert biases are not in the case format: a fact of the named model (GPT-OSS).
    if (preset != nullptr && preset->moe && preset->moe->expert_bias) moe["expert_bias"] = true;
    model["moe"] = std::move(moe);
  }
  const CasePlanSizes sizes = case_plan_sizes(c);
  const int tp = sizes.tp, pp = sizes.pp, cp = sizes.cp, dp = sizes.dp;
  const int mb = p.micro_batch.value_or(1);
  // Unknown global batch: 8 micro-batches per pipeline stage per data-parallel rank.
  const int gbs = p.global_batch.value_or(dp * mb * 8 * pp);
  nlohmann::json parallelism = {{"tp", tp},
                                {"pp", pp},
                                {"cp", cp},
                                {"dp", dp},
                                {"ep", p.ep.value_or(1)},
                                {"vp", p.vp.value_or(1)},
                                {"micro_batch", mb},
                                {"sequence_parallel", p.sequence_parallel.value_or(tp > 1)},
                                {"zero", p.fsdp.value_or(false) ? 3 : p.zero.value_or(1)},
                                // Layers that do not divide into pp x vp stages: Megatron-Core
                                // and NeMo give the first and last stages fewer layers (they
                                // also hold the embedding and the loss; Megatron's
                                // account_for_embedding/loss_in_pipeline_split).
                                {"balanced_pipeline", true}};
  // Unstated recomputation: what the software preset runs (the scenario reader's default).
  if (p.recompute) parallelism["recompute"] = *p.recompute;
  const std::string precision = case_precision(c);
  nlohmann::json training = {
      {"task", c.task.value_or("pretrain")}, {"precision", precision}, {"global_batch", gbs}};
  // The software the source ran picks the stack preset (models/software_stack.cpp); a case
  // without one gets the documented default, PyTorch-native code when it shards with FSDP.
  nlohmann::json software = {{"framework", p.fsdp.value_or(false) ? "pytorch-fsdp" : "unknown"}};
  if (c.framework && c.framework->name != "unknown") {
    software["framework"] = c.framework->name;
    if (c.framework->version) software["version"] = *c.framework->version;
    if (c.framework->released) software["released"] = *c.framework->released;
  }
  // A NeMo run took its recipe's optimizer state, FP8 parameters (and whether their transposes
  // are cached) and FP8 attention, the last keyed on the run's stated CP and its GPU
  // (models/nemo_recipes).
  if (c.framework && c.framework->name == "nemo" && c.framework->version) {
    const topologies::SystemPreset* system = topologies::find_system(c.system);
    const topologies::GpuSpec* gpu = system ? topologies::find_gpu(system->gpu) : nullptr;
    const models::NemoRunPlan run{
        p.cp, gpu != nullptr && gpu->generation >= topologies::GpuGeneration::blackwell};
    const models::NemoRecipe nemo =
        models::nemo_recipe(*c.framework->version, m.name, c.task.value_or("pretrain"), run);
    if (nemo.bf16_optimizer_state) software["optimizer_state"] = "bf16";
    if (nemo.fp8_params) software["fp8_params"] = true;
    if (nemo.fp4_params) software["fp4_params"] = true;
    if (nemo.cross_entropy_fusion) software["loss_kernel"] = "megatron_fused";
    if (nemo.fp8_attention) software["fp8_attention"] = true;
    if (nemo.cp_comm_a2a) parallelism["cp_comm_type"] = "a2a";
    if (nemo.disable_parameter_transpose_cache) software["parameter_transpose_cache"] = false;
  }
  // A Megatron-Bridge MoE run also took its performance recipe's CUDA-graph scope, routing,
  // dispatcher and, where the summary misprints it, expert parallelism (models/bridge_recipes),
  // written out here so the scenario states them.
  const std::string* bridge = bridge_version(c);
  const models::BridgeRecipe* recipe =
      bridge != nullptr && m.moe ? models::bridge_recipe(*bridge, m.name, c.system, precision)
                                 : nullptr;
  if (recipe != nullptr) {
    software["cuda_graphs"] = models::to_string(recipe->cuda_graphs);
    software["cuda_graph_moe_router"] = recipe->graph_moe_router;
    software["moe_dispatcher"] = models::to_string(recipe->dispatcher);
    if (recipe->capacity_factor > 0) model["moe"]["capacity_factor"] = recipe->capacity_factor;
    if (recipe->fused_moe_mlp) software["fused_moe_mlp"] = true;
    if (recipe->a2a_overlap) software["moe_a2a_overlap"] = true;
    if (recipe->fp8_attention) software["fp8_attention"] = true;
    if (!recipe->recompute_modules.empty())
      parallelism["recompute_modules"] = std::string(recipe->recompute_modules);
    // A misprint is a fact of one release's table; a later release that falls back on these
    // rows printed its own plan.
    if (recipe->expert_parallel > 0 && recipe->version == *bridge)
      parallelism["ep"] = recipe->expert_parallel;
  }
  // A dense FSDP run of unstated recomputation kept the activations its release's scripts
  // offload to host memory; the memory fit adds more only where they do not fit.
  if (const int offload = case_offload_layers(c); offload > 0)
    parallelism["offload_layers"] = offload;
  // A row whose release's table misprints its plan ran the plan of the release's scripts.
  if (const models::BridgePlanFix* fix = case_plan_fix(c)) {
    parallelism["tp"] = fix->tp;
    parallelism["pp"] = fix->pp;
    parallelism["vp"] = fix->vp;
    parallelism["micro_batch"] = fix->micro_batch;
    parallelism["dp"] = c.gpus / (fix->tp * fix->pp * cp);
    parallelism["sequence_parallel"] = fix->tp > 1;
  }
  // DeepSeek-V3 under Megatron-Bridge also ran its multi-token-prediction module and the
  // pipeline layout its recipe gives the plan; Megatron-Core takes the virtual pipeline size from
  // the layout's stage count.
  if (bridge != nullptr) {
    const models::BridgePipeline pipeline =
        models::bridge_pipeline(*bridge, m.name, c.system, pp, p.vp.value_or(1));
    if (pipeline.mtp_layers > 0) model["mtp_layers"] = pipeline.mtp_layers;
    std::string error;
    const auto layout = pipeline.layout.empty()
                            ? std::nullopt
                            : models::parse_pipeline_layout(pipeline.layout, &error);
    if (layout && layout->stages.size() % pp == 0) {
      parallelism["pipeline_layout"] = pipeline.layout;
      parallelism["vp"] = static_cast<int>(layout->stages.size()) / pp;
    }
  }
  nlohmann::json system = {{"preset", c.system}, {"gpus", c.gpus}};
  if (const int segment = launch_segment(c); segment > 0) system["nvlink"] = {{"segment", segment}};
  nlohmann::json doc = {
      {"system", system},     {"software", software},
      {"model", model},       {"parallelism", parallelism},
      {"training", training}, {"simulation", {{"backend", "flow"}, {"ignore_memory", true}}}};
  if (sizes.searched || sizes.micro_batch_searched) {
    doc["comment"] = sizes.searched ? "the case does not state its plan: the sizes here are "
                                      "placeholders, validate searches it"
                                    : "the case does not state its micro-batch: validate "
                                      "searches it (the fastest that fits)";
  }
  return doc;
}

}  // namespace fabricsim::api
