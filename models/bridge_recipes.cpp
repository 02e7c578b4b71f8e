#include "models/bridge_recipes.hpp"

#include <array>
#include <cctype>
#include <string>

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
// moe_flex_dispatcher_backend deepep. Its HybridEP backend (GB200, GB300) is not modelled: those
// runs are simulated with the alltoall dispatcher.
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

using G = CudaGraphs;
constexpr std::array kRecipes = {
    // version, model, system, precision, graphs, router graphs, capacity, deepep, EP, source
    BridgeRecipe{"25.09", "qwen330ba3b", "dgx-h100", "", G::none, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "qwen330ba3b", "dgx-b200", "", G::full, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "qwen330ba3b", "gb200-nvl72", "", G::full, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "qwen3235ba22b", "dgx-h100", "", G::none, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "qwen3235ba22b", "dgx-b200", "", G::none, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "qwen3235ba22b", "gb200-nvl72", "", G::full, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "deepseekv3", "dgx-h100", "", G::none, false, 0.0, true, 0, k2509},
    BridgeRecipe{"25.09", "deepseekv3", "dgx-b200", "bf16", G::none, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "deepseekv3", "dgx-b200", "", G::full, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.09", "deepseekv3", "gb200-nvl72", "", G::none, false, 1.0, false, 0, k2509},
    BridgeRecipe{"25.11", "qwen330ba3b", "dgx-h100", "bf16", G::none, true, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "dgx-h100", "", G::none, false, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "dgx-b200", "", G::none, true, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "gb200-nvl72", "mxfp8", G::none, true, 0.0, false, 0,
                 k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "gb200-nvl72", "", G::attention, true, 0.0, false, 0,
                 k2511},
    BridgeRecipe{"25.11", "qwen330ba3b", "gb300-nvl72", "", G::none, true, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "qwen3235ba22b", "dgx-h100", "", G::none, false, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "qwen3235ba22b", "dgx-b200", "", G::none, false, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "qwen3235ba22b", "gb200-nvl72", "", G::attention, true, 0.0, false, 0,
                 k2511},
    BridgeRecipe{"25.11", "qwen3235ba22b", "gb300-nvl72", "", G::none, true, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "deepseekv3", "dgx-h100", "", G::none, false, 0.0, true, 0, k2511},
    BridgeRecipe{"25.11", "deepseekv3", "dgx-b200", "", G::none, false, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "deepseekv3", "gb200-nvl72", "", G::none, true, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "deepseekv3", "gb300-nvl72", "", G::attention, true, 0.0, false, 0,
                 k2511},
    BridgeRecipe{"25.11", "gptoss120b", "dgx-h100", "", G::none, false, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "gptoss120b", "dgx-b200", "", G::none, false, 0.0, false, 64, k2511_ep},
    BridgeRecipe{"25.11", "gptoss120b", "gb200-nvl72", "", G::none, false, 0.0, false, 0, k2511},
    BridgeRecipe{"25.11", "gptoss120b", "gb300-nvl72", "", G::attention, true, 0.0, false, 0,
                 k2511},
};

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
  // A release without recipes of its own ran those of the newest release before it that has some
  // ("YY.MM" compares in time order; a later scripts release keeps what it does not change).
  std::string_view release;
  for (const BridgeRecipe& r : kRecipes) {
    if (r.version <= version && r.version > release) release = r.version;
  }
  if (release.empty()) return nullptr;
  const std::string wanted = model_name_key(model_name);
  // The first match wins: a precision-specific row comes before its system's catch-all.
  for (const BridgeRecipe& r : kRecipes) {
    if (r.version == release && r.system == system && wanted.starts_with(r.model) &&
        (r.precision.empty() || r.precision == precision)) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace fabricsim::models
