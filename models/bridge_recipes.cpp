#include "models/bridge_recipes.hpp"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace fabricsim::models {
namespace {

// 25.09: scripts/performance at v0.1.0rc3 (the plans of the 25.09 summary). run_script.py
// applies apply_moe_token_drop (capacity factor 1.0, inputs padded to capacity) to both Qwen3
// MoE models on every GPU and to DeepSeek-V3 on B200 and GB200, and runs DeepSeek-V3 on H100
// with DeepEP; the perf_matrix cuda_graphs switch (recipe.model.enable_cuda_graph) captures each
// whole transformer layer with Megatron-Core's local graphs.
constexpr std::string_view k2509 =
    "Megatron-Bridge v0.1.0rc3 scripts/performance/run_script.py (apply_moe_token_drop, "
    "enable_deepep) and configs/<model>/*_llm_pretrain.yaml perf_matrix (cuda_graphs)";
// 25.11: scripts/performance/configs/<model>/workload_base_configs.py at v0.2.0: dropless
// routing (token drop is opt-in, DeepSeek-V3 only), no CUDA graphs unless the workload sets
// cuda_graph_impl transformer_engine with its cuda_graph_scope, DeepEP where it sets
// moe_flex_dispatcher_backend deepep, Hybrid-EP where it sets hybridep (every MoE model on
// GB200 and GB300 except GPT-OSS).
constexpr std::string_view k2511 =
    "Megatron-Bridge v0.2.0 scripts/performance/configs/<model>/workload_base_configs.py "
    "(cuda_graph_impl, cuda_graph_scope, moe_flex_dispatcher_backend)";
// GPT-OSS 120B on 64 B200: the 25.11 table prints EP 8, but GPT_OSS_120B_B200_BF16_BASE_CONFIG
// sets expert_model_parallel_size=64 (v0.2.0 through v0.2.2) beside the table's GBS 512 and
// MBS 4, so the experts' all-to-all crosses InfiniBand. The 26.02 table prints that plan, EP 64,
// at 219 TFLOP/s against 25.11's 223; 26.02.01's EP 8 run reached 373.
constexpr std::string_view k2511_ep =
    "Megatron-Bridge v0.2.0 scripts/performance/configs/gpt_oss/workload_base_configs.py "
    "(GPT_OSS_120B_B200_BF16_BASE_CONFIG: expert_model_parallel_size=64); the 26.02 "
    "performance summary prints EP 64 for this run's plan";

// 26.02 through 26.04.01: the same files at v0.3.0 (26.02), v0.3.1 (26.02.01), v0.4.0 (26.04) and
// v0.4.2 (26.04.01), each release's row written where its scripts change what the one before ran
// for a model on a system (the workload config of the summary's GPU count and precision: MXFP8 on
// Blackwell, FP8 on H100, BF16 for GPT-OSS). The rows hold for every precision; where another
// precision's config differs (BF16 graphs attention for Qwen3-30B-A3B on GB200 and the router on
// H100, attention with moe_act recomputed for DeepSeek-V3 on GB300; BF16 recomputes mla_up_proj
// for DeepSeek-V3 on GB200 from 26.04) it runs the summary's. From v0.3.1 on, qwen3_llm_pretrain.py
// forces moe_token_dispatcher_type alltoall for Qwen3-235B-A22B on B200, B300 and H100 whatever
// backend the workload names. Qwen3-30B-A3B on H100 names DeepEP in v0.3.0, whose container the
// release notes say lacks a working DeepEP (docs/releases/known-issues.md, 26.02): taken as the
// scripts say.
constexpr std::string_view k2602 =
    "Megatron-Bridge v0.3.0 scripts/performance/configs/{qwen,deepseek,gpt_oss}/"
    "*_workload_base_configs.py (cuda_graph_impl, cuda_graph_scope, moe_a2a_overlap, "
    "moe_flex_dispatcher_backend, recompute_modules)";
constexpr std::string_view k260201 =
    "Megatron-Bridge v0.3.1 scripts/performance/configs/qwen/qwen3_workload_base_configs.py and "
    "qwen3_llm_pretrain.py (moe_token_dispatcher_type)";
constexpr std::string_view k2604 =
    "Megatron-Bridge v0.4.0 scripts/performance/configs/{deepseek,gpt_oss}/"
    "*_workload_base_configs.py";
constexpr std::string_view k260401_all =
    "Megatron-Bridge v0.4.2 scripts/performance/configs/{qwen,deepseek,gpt_oss}/"
    "*_workload_base_configs.py";

// 26.06: scripts/performance/configs/<family>/*_workload_base_configs.py at v0.5.0
// (2026-06-16), the MXFP8 presets on GB200, GB300 and B300: cuda_graph_impl full_iteration,
// moe_a2a_overlap, cutedsl_fused_grouped_mlp, HybridEP and, except DeepSeek-V3 on GB200,
// fp8_dot_product_attention. Qwen3-30B-A3B on H100 runs HybridEP without overlap or graphs.
constexpr std::string_view k2606 =
    "Megatron-Bridge v0.5.0 scripts/performance/configs/{qwen,deepseek,gpt_oss}/"
    "*_workload_base_configs.py (cuda_graph_impl, moe_a2a_overlap, cutedsl_fused_grouped_mlp, "
    "fp8_dot_product_attention)";
// 25.11's moe_a2a_overlap: the same v0.2.0 files set it for Qwen3-235B-A22B on B200 and H100,
// Qwen3-30B-A3B and DeepSeek-V3 on H100. Their recompute_modules: DeepSeek-V3 mla_up_proj
// (GB200, B200; with mlp on H100; moe_act on GB300), GPT-OSS 120B layernorm and moe_act (H100,
// B200, GB200); 25.09's run_script.py sets DeepSeek-V3's to mla_up_proj and mlp on H100, with
// moe_act on GB200.

// 26.04.01: "b200 DSv3 better cfg" (NVIDIA-NeMo/Megatron-Bridge#3368, in v0.4.2's
// scripts/performance/configs/deepseek/deepseek_workload_base_configs.py,
// DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2 and _NVFP4_V2): DeepSeek-V3 on B200 at pp 8 x vp 2,
// EP 32 (the 26.04.01 table's plan) through the DeepEP backend with overlapped all-to-alls;
// MXFP8 with graphs over attention, the router and its preprocessing and mla_up_proj,mlp
// recomputed; NVFP4 without graphs, recomputing mla_up_proj, layernorm and moe_act.
constexpr std::string_view k260401 =
    "Megatron-Bridge v0.4.2 scripts/performance/configs/deepseek/"
    "deepseek_workload_base_configs.py (DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2, _NVFP4_V2; "
    "NVIDIA-NeMo/Megatron-Bridge#3368)";

using G = CudaGraphs;
using D = MoeDispatcher;
/// A 26.06 fused-MoE MXFP8 row: full-iteration graphs, overlapped all-to-alls, fused MLP.
constexpr BridgeRecipe fused_2606(std::string_view model, std::string_view system) {
  return BridgeRecipe{.version = "26.06",
                      .model = model,
                      .system = system,
                      .precision = "mxfp8",
                      .cuda_graphs = G::full,
                      .dispatcher = D::hybridep,
                      .source = k2606,
                      .fused_moe_mlp = true,
                      .a2a_overlap = true,
                      .fp8_attention = true};
}
/// A row without FP8 attention.
constexpr BridgeRecipe bf16_attention(BridgeRecipe r) {
  r.fp8_attention = false;
  return r;
}
/// A row whose layers also recompute `names` (recompute_modules).
constexpr BridgeRecipe modules(BridgeRecipe r, std::string_view names) {
  r.recompute_modules = names;
  return r;
}
/// A row with overlapped all-to-alls.
constexpr BridgeRecipe overlapped_a2a(BridgeRecipe r) {
  r.a2a_overlap = true;
  return r;
}
constexpr std::array kRecipes = {
    // version, model, system, precision, graphs, router graphs, capacity, dispatcher, EP, source
    BridgeRecipe{"25.09", "qwen330ba3b", "dgx-h100", "", G::none, false, 1.0, D::alltoall, 0,
                 k2509},
    BridgeRecipe{"25.09", "qwen330ba3b", "dgx-b200", "", G::full, false, 1.0, D::alltoall, 0,
                 k2509},
    BridgeRecipe{"25.09", "qwen330ba3b", "gb200-nvl72", "", G::full, false, 1.0, D::alltoall, 0,
                 k2509},
    BridgeRecipe{"25.09", "qwen3235ba22b", "dgx-h100", "", G::none, false, 1.0, D::alltoall, 0,
                 k2509},
    BridgeRecipe{"25.09", "qwen3235ba22b", "dgx-b200", "", G::none, false, 1.0, D::alltoall, 0,
                 k2509},
    BridgeRecipe{"25.09", "qwen3235ba22b", "gb200-nvl72", "", G::full, false, 1.0, D::alltoall, 0,
                 k2509},
    modules(BridgeRecipe{"25.09", "deepseekv3", "dgx-h100", "", G::none, false, 0.0, D::deepep, 0,
                         k2509},
            "mla_up_proj,mlp"),
    BridgeRecipe{"25.09", "deepseekv3", "dgx-b200", "bf16", G::none, false, 1.0, D::alltoall, 0,
                 k2509},
    BridgeRecipe{"25.09", "deepseekv3", "dgx-b200", "", G::full, false, 1.0, D::alltoall, 0, k2509},
    modules(BridgeRecipe{"25.09", "deepseekv3", "gb200-nvl72", "", G::none, false, 1.0, D::alltoall,
                         0, k2509},
            "mla_up_proj,mlp,moe_act"),
    overlapped_a2a(BridgeRecipe{"25.11", "qwen330ba3b", "dgx-h100", "bf16", G::none, true, 0.0,
                                D::alltoall, 0, k2511}),
    overlapped_a2a(BridgeRecipe{"25.11", "qwen330ba3b", "dgx-h100", "", G::none, false, 0.0,
                                D::alltoall, 0, k2511}),
    BridgeRecipe{"25.11", "qwen330ba3b", "dgx-b200", "", G::none, true, 0.0, D::alltoall, 0, k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "gb200-nvl72", "mxfp8", G::none, true, 0.0, D::hybridep, 0,
                 k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "gb200-nvl72", "", G::attention, true, 0.0, D::hybridep, 0,
                 k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "gb300-nvl72", "", G::none, true, 0.0, D::hybridep, 0,
                 k2511},
    overlapped_a2a(BridgeRecipe{"25.11", "qwen3235ba22b", "dgx-h100", "", G::none, false, 0.0,
                                D::alltoall, 0, k2511}),
    overlapped_a2a(BridgeRecipe{"25.11", "qwen3235ba22b", "dgx-b200", "", G::none, false, 0.0,
                                D::alltoall, 0, k2511}),
    BridgeRecipe{"25.11", "qwen3235ba22b", "gb200-nvl72", "", G::attention, true, 0.0, D::hybridep,
                 0, k2511},
    BridgeRecipe{"25.11", "qwen3235ba22b", "gb300-nvl72", "", G::none, true, 0.0, D::hybridep, 0,
                 k2511},
    modules(overlapped_a2a(BridgeRecipe{"25.11", "deepseekv3", "dgx-h100", "", G::none, false, 0.0,
                                        D::deepep, 0, k2511}),
            "mla_up_proj,mlp"),
    modules(BridgeRecipe{"25.11", "deepseekv3", "dgx-b200", "", G::none, false, 0.0, D::alltoall, 0,
                         k2511},
            "mla_up_proj"),
    modules(BridgeRecipe{"25.11", "deepseekv3", "gb200-nvl72", "", G::none, true, 0.0, D::hybridep,
                         0, k2511},
            "mla_up_proj"),
    modules(BridgeRecipe{"25.11", "deepseekv3", "gb300-nvl72", "", G::attention, true, 0.0,
                         D::hybridep, 0, k2511},
            "moe_act"),
    modules(BridgeRecipe{"25.11", "gptoss120b", "dgx-h100", "", G::none, false, 0.0, D::alltoall, 0,
                         k2511},
            "layernorm,moe_act"),
    modules(BridgeRecipe{"25.11", "gptoss120b", "dgx-b200", "", G::none, false, 0.0, D::alltoall,
                         64, k2511_ep},
            "layernorm,moe_act"),
    modules(BridgeRecipe{"25.11", "gptoss120b", "gb200-nvl72", "", G::none, false, 0.0, D::alltoall,
                         0, k2511},
            "layernorm,moe_act"),
    BridgeRecipe{"25.11", "gptoss120b", "gb300-nvl72", "", G::attention, true, 0.0, D::alltoall, 0,
                 k2511},
    // 26.02 (v0.3.0)
    modules(BridgeRecipe{"26.02", "deepseekv3", "dgx-b200", "", G::none, false, 0.0, D::hybridep, 0,
                         k2602},
            "mla_up_proj"),
    modules(BridgeRecipe{"26.02", "deepseekv3", "dgx-b300", "", G::none, false, 0.0, D::hybridep, 0,
                         k2602},
            "mla_up_proj"),
    modules(BridgeRecipe{"26.02", "deepseekv3", "gb200-nvl72", "", G::attention, true, 0.0,
                         D::hybridep, 0, k2602},
            "mla_up_proj"),
    modules(BridgeRecipe{"26.02", "deepseekv3", "gb300-nvl72", "", G::none, false, 0.0, D::hybridep,
                         0, k2602},
            "mla_up_proj"),
    BridgeRecipe{"26.02", "gptoss120b", "dgx-b300", "", G::attention, true, 0.0, D::alltoall, 0,
                 k2602},
    BridgeRecipe{"26.02", "qwen3235ba22b", "dgx-b200", "", G::none, false, 0.0, D::alltoall, 0,
                 k2602},
    overlapped_a2a(BridgeRecipe{"26.02", "qwen3235ba22b", "dgx-b300", "", G::none, false, 0.0,
                                D::alltoall, 0, k2602}),
    BridgeRecipe{"26.02", "qwen3235ba22b", "gb300-nvl72", "", G::attention, true, 0.0, D::hybridep,
                 0, k2602},
    BridgeRecipe{"26.02", "qwen330ba3b", "dgx-b300", "", G::none, true, 0.0, D::hybridep, 0, k2602},
    overlapped_a2a(BridgeRecipe{"26.02", "qwen330ba3b", "dgx-h100", "", G::none, false, 0.0,
                                D::deepep, 0, k2602}),
    BridgeRecipe{"26.02", "qwen330ba3b", "gb200-nvl72", "", G::none, true, 0.0, D::hybridep, 0,
                 k2602},
    BridgeRecipe{"26.02", "qwen330ba3b", "gb300-nvl72", "", G::none, true, 0.0, D::hybridep, 0,
                 k2602},
    // 26.02.01 (v0.3.1)
    BridgeRecipe{"26.02.01", "qwen3235ba22b", "dgx-b300", "", G::none, false, 0.0, D::alltoall, 0,
                 k260201},
    BridgeRecipe{"26.02.01", "qwen330ba3b", "dgx-b200", "", G::attention, true, 0.0, D::hybridep, 0,
                 k260201},
    BridgeRecipe{"26.02.01", "qwen330ba3b", "dgx-h100", "", G::none, false, 0.0, D::hybridep, 0,
                 k260201},
    // 26.04 (v0.4.0)
    modules(BridgeRecipe{"26.04", "deepseekv3", "gb200-nvl72", "", G::attention, true, 0.0,
                         D::hybridep, 0, k2604},
            "mlp"),
    modules(BridgeRecipe{"26.04", "gptoss120b", "dgx-b200", "", G::none, false, 0.0, D::hybridep, 0,
                         k2604},
            "layernorm,moe_act"),
    BridgeRecipe{"26.04", "gptoss120b", "dgx-b300", "", G::attention, true, 0.0, D::hybridep, 0,
                 k2604},
    modules(overlapped_a2a(BridgeRecipe{"26.04", "gptoss120b", "gb200-nvl72", "", G::none, false,
                                        0.0, D::hybridep, 0, k2604}),
            "layernorm,moe_act"),
    // 26.04.01 (v0.4.2)
    modules(BridgeRecipe{"26.04.01", "deepseekv3", "dgx-b300", "", G::attention, true, 0.0,
                         D::hybridep, 0, k260401_all},
            "mla_up_proj"),
    modules(BridgeRecipe{"26.04.01", "gptoss120b", "dgx-b200", "", G::none, false, 0.0, D::alltoall,
                         0, k260401_all},
            "layernorm,moe_act"),
    modules(overlapped_a2a(BridgeRecipe{"26.04.01", "gptoss120b", "gb200-nvl72", "", G::none, false,
                                        0.0, D::alltoall, 0, k260401_all}),
            "layernorm,moe_act"),
    BridgeRecipe{"26.04.01", "qwen3235ba22b", "dgx-b300", "", G::none, false, 0.0, D::hybridep, 0,
                 k260401_all},
    modules(overlapped_a2a(BridgeRecipe{"26.04.01", "deepseekv3", "dgx-b200", "mxfp8", G::attention,
                                        true, 0.0, D::deepep, 0, k260401}),
            "mla_up_proj,mlp"),
    modules(overlapped_a2a(BridgeRecipe{"26.04.01", "deepseekv3", "dgx-b200", "nvfp4", G::none,
                                        false, 0.0, D::deepep, 0, k260401}),
            "mla_up_proj,layernorm,moe_act"),
    fused_2606("qwen330ba3b", "gb200-nvl72"),
    fused_2606("qwen330ba3b", "gb300-nvl72"),
    fused_2606("qwen330ba3b", "dgx-b300"),
    BridgeRecipe{"26.06", "qwen330ba3b", "dgx-h100", "", G::none, false, 0.0, D::hybridep, 0,
                 k2606},
    fused_2606("qwen3235ba22b", "gb200-nvl72"),
    fused_2606("qwen3235ba22b", "gb300-nvl72"),
    bf16_attention(fused_2606("deepseekv3", "gb200-nvl72")),
    fused_2606("deepseekv3", "gb300-nvl72"),
    fused_2606("gptoss120b", "gb200-nvl72"),
    fused_2606("gptoss120b", "gb300-nvl72"),
};

/// The row of `rows` for the newest release up to `version` that `matches` ("YY.MM[.NN]"
/// compares in time order), the first such row of that release; nullptr when none does.
template <class Rows, class Match>
const typename Rows::value_type* newest_up_to(const Rows& rows, std::string_view version,
                                              Match matches) {
  const typename Rows::value_type* best = nullptr;
  for (const auto& r : rows) {
    if (r.version <= version && matches(r) && (best == nullptr || r.version > best->version))
      best = &r;
  }
  return best;
}

}  // namespace

std::string model_name_key(std::string_view name) {
  std::string out;
  for (const char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

const BridgeRecipe* bridge_recipe(std::string_view version, std::string_view model_name,
                                  std::string_view system, std::string_view precision) {
  // Within a release the first match wins: a precision-specific row comes before its system's
  // catch-all.
  const std::string wanted = model_name_key(model_name);
  return newest_up_to(kRecipes, version, [&](const BridgeRecipe& r) {
    return r.system == system && wanted.starts_with(r.model) &&
           (r.precision.empty() || r.precision == precision);
  });
}

namespace {

// Llama 3 70B on 64 GB300 in 26.02.01: the table prints MXFP8 at PP 4 with no VP and MBS 2, and
// NVFP4 at TP 1, PP 1, MBS 2 without FSDP (which the memory model cannot fit: 216% of HBM); the
// release's scripts (v0.3.1 llama3_workload_base_configs.py, LLAMA3_70B_PRETRAIN_CONFIG_GB300_
// FP8_MX_V2 and _NVFP4_V2, GBS 256 as printed) run both at PP 4, VP 5 and the default MBS 1, the
// plan 26.02, 26.04 and 26.04.01 print for the same rows. The rows' throughput is that plan's:
// MXFP8 2,157 TFLOP/s against 2,064-2,186 in those releases, where PP 4 without interleaving at
// 8 micro-batches would idle 3/8 of the step in the pipeline bubble.
constexpr std::string_view k260201_llama =
    "Megatron-Bridge v0.3.1 scripts/performance/configs/llama/llama3_workload_base_configs.py "
    "(LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2, LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2: "
    "pipeline 4, virtual pipeline 5, micro-batch 1)";
constexpr std::array kPlanFixes{
    BridgePlanFix{"26.02.01", "llama370b", "gb300-nvl72", "mxfp8", 1, 4, 5, 1, k260201_llama},
    BridgePlanFix{"26.02.01", "llama370b", "gb300-nvl72", "nvfp4", 1, 4, 5, 1, k260201_llama},
};

}  // namespace

const BridgePlanFix* bridge_plan_fix(std::string_view version, std::string_view model_name,
                                     std::string_view system, std::string_view precision) {
  const std::string wanted = model_name_key(model_name);
  for (const BridgePlanFix& f : kPlanFixes) {
    if (f.version == version && f.system == system && f.precision == precision &&
        wanted.starts_with(f.model))
      return &f;
  }
  return nullptr;
}

namespace {

// Activation offloading in the dense FSDP recipes. 25.09: v0.1.0rc3
// scripts/performance/configs/llama3/llama3_70b_llm_pretrain.yaml (GB200: bf16 20, fp8_cs 40)
// and llama31/llama31_405b_llm_pretrain.yaml (GB200 128 GPUs, fp8_cs at TP 2 with FSDP: 95).
// 25.11 on: v0.2.0 scripts/performance/configs/llama3/workload_base_configs.py and
// llama31/workload_base_configs.py, unchanged in llama/llama3_workload_base_configs.py from
// v0.3.0 through v0.5.0 (Llama 3 70B: GB300 bf16 30, fp8_cs 20; GB200 bf16 20, fp8_cs 40; B200
// fp8_cs 5; Llama 3.1 405B: GB300 bf16 40, fp8_cs 10; GB200 fp8_cs 92). Megatron-Bridge's FP8
// is current scaling (fp8_cs), the case format's "fp8".
struct BridgeOffload {
  std::string_view version, model, system, precision;
  int layers;
};
constexpr std::array kOffloads{
    BridgeOffload{"25.09", "llama370b", "gb200-nvl72", "bf16", 20},
    BridgeOffload{"25.09", "llama370b", "gb200-nvl72", "fp8", 40},
    BridgeOffload{"25.09", "llama31405b", "gb200-nvl72", "fp8", 95},
    BridgeOffload{"25.11", "llama370b", "gb300-nvl72", "bf16", 30},
    BridgeOffload{"25.11", "llama370b", "gb300-nvl72", "fp8", 20},
    BridgeOffload{"25.11", "llama370b", "gb200-nvl72", "bf16", 20},
    BridgeOffload{"25.11", "llama370b", "gb200-nvl72", "fp8", 40},
    BridgeOffload{"25.11", "llama370b", "dgx-b200", "fp8", 5},
    BridgeOffload{"25.11", "llama31405b", "gb300-nvl72", "bf16", 40},
    BridgeOffload{"25.11", "llama31405b", "gb300-nvl72", "fp8", 10},
    BridgeOffload{"25.11", "llama31405b", "gb200-nvl72", "fp8", 92},
};

}  // namespace

int bridge_offload_layers(std::string_view version, std::string_view model_name,
                          std::string_view system, std::string_view precision) {
  const std::string wanted = model_name_key(model_name);
  const BridgeOffload* row = newest_up_to(kOffloads, version, [&](const BridgeOffload& o) {
    return o.system == system && o.precision == precision && wanted.starts_with(o.model);
  });
  return row != nullptr ? row->layers : 0;
}

// DeepSeek-V3 in Megatron-Bridge. Multi-token prediction: the deepseek_v3 recipe defaults to
// mtp_num_layers=1 from v0.1.0rc3 through v0.5.0 and no performance script overrides it; only the
// 25.11 summary's GB200 and GB300 rows are "DeepSeekV3 (w/o MTP)", and their model FLOPs per
// token (249.7 G from TFLOP/s over tokens/s) are Bridge's count without the module, against
// 260 G for every other DeepSeek-V3 row of 25.09 through 26.06.
//
// Layouts (E embedding, t decoder, m MTP, L loss; pp x vp stages):
// - 25.09 (v0.1.0rc3 configs/deepseek/deepseek_v3_llm_pretrain.yaml) sets "Et|(tt|)*30mL" on
//   every GPU, 32 stages whatever vp the table prints (Megatron-Core takes the virtual pipeline
//   size from the layout);
// - H100 from 25.11 on (v0.2.0 deepseek_v3_h100_config; v0.3.0+ DEEPSEEK_V3_H100 pp_layout)
//   keeps that layout;
// - elsewhere the recipe's layout_map by (pp, vp) (deepseek_v3.py, v0.2.0 through v0.5.0):
//   4 stages E t*16 | t*16 | t*16 | t*13 m L; 8 (8,1 and 4,2) E t*8 | (t*8 |)*6 t*5 m L; 16
//   (16,1, 8,2 and 4,4) E t*4 | (t*4 |)*14 t m L, which GB300's pp_layout (2,8) repeats from
//   26.02 (v0.3.0 deepseek_workload_base_configs.py); other plans have none.
BridgePipeline bridge_pipeline(std::string_view version, std::string_view model_name,
                               std::string_view system, int pp, int vp) {
  BridgePipeline out;
  if (!model_name_key(model_name).starts_with("deepseekv3")) return out;
  const bool without_mtp =
      version == "25.11" && (system == "gb200-nvl72" || system == "gb300-nvl72");
  out.mtp_layers = without_mtp ? 0 : 1;
  const std::string last = std::string(static_cast<size_t>(out.mtp_layers), 'm') + "L";
  if (version < "25.11" || system == "dgx-h100") {
    out.layout = "Et|(tt|)*30" + last;
    return out;
  }
  const std::pair<int, int> plan{pp, vp};
  using P = std::pair<int, int>;
  if (plan == P{4, 1}) {
    out.layout = "Et*16|t*16|t*16|t*13" + last;
  } else if (plan == P{8, 1} || plan == P{4, 2}) {
    out.layout = "Et*8|(t*8|)*6t*5" + last;
  } else if (plan == P{16, 1} || plan == P{8, 2} || plan == P{4, 4} ||
             (plan == P{2, 8} && version >= "26.02")) {
    out.layout = "Et*4|(t*4|)*14t" + last;
  }
  return out;
}

}  // namespace fabricsim::models
