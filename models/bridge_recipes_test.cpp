#include "models/bridge_recipes.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::models;

TEST_CASE("Megatron-Bridge recipes: found by release, model name, system and precision",
          "[software]") {
  // The model name is compared on letters and digits, as a prefix ("(w/ MTP)" and the like).
  const BridgeRecipe* r = bridge_recipe("25.09", "Qwen3-30B-A3B", "dgx-b200", "fp8");
  REQUIRE(r != nullptr);
  CHECK(r->cuda_graphs == CudaGraphs::full);
  CHECK(r->capacity_factor == 1.0);
  CHECK_FALSE(r->deepep);
  CHECK_FALSE(r->source.empty());
  // A precision-specific row wins over its system's catch-all: DeepSeek-V3 on B200 in 25.09 is
  // graphed in FP8 only.
  CHECK(bridge_recipe("25.09", "DeepSeek-V3 (w/ MTP)", "dgx-b200", "bf16")->cuda_graphs ==
        CudaGraphs::none);
  CHECK(bridge_recipe("25.09", "DeepSeek-V3", "dgx-b200", "fp8")->cuda_graphs == CudaGraphs::full);
  // Qwen3-30B on GB200 in 25.11: MXFP8 graphs only the router; BF16 also attention.
  CHECK(bridge_recipe("25.11", "Qwen3-30B-A3B", "gb200-nvl72", "mxfp8")->cuda_graphs ==
        CudaGraphs::none);
  CHECK(bridge_recipe("25.11", "Qwen3-30B-A3B", "gb200-nvl72", "bf16")->cuda_graphs ==
        CudaGraphs::attention);
  CHECK(bridge_recipe("25.11", "Qwen3-30B-A3B", "gb200-nvl72", "bf16")->graph_moe_router);
  // 25.11 routes dropless everywhere; DeepSeek-V3 on H100 through DeepEP in both releases.
  CHECK(bridge_recipe("25.11", "Qwen3-235B-A22B", "dgx-b200", "fp8")->capacity_factor == 0);
  CHECK(bridge_recipe("25.11", "DeepSeek-V3", "dgx-h100", "fp8")->deepep);
  CHECK(bridge_recipe("25.09", "DeepSeek-V3", "dgx-h100", "fp8")->deepep);
  // A later release without rows of its own runs the newest earlier release's recipes; one
  // before every release here, an unknown model or system: none.
  CHECK(bridge_recipe("26.02", "Qwen3-30B-A3B", "dgx-b200", "fp8") ==
        bridge_recipe("25.11", "Qwen3-30B-A3B", "dgx-b200", "fp8"));
  CHECK(bridge_recipe("25.10", "Qwen3-30B-A3B", "dgx-b200", "fp8") ==
        bridge_recipe("25.09", "Qwen3-30B-A3B", "dgx-b200", "fp8"));
  CHECK(bridge_recipe("26.06.01", "DeepSeek-V3", "dgx-h100", "fp8")->deepep);
  CHECK(bridge_recipe("25.07", "Qwen3-30B-A3B", "dgx-b200", "fp8") == nullptr);
  CHECK(bridge_recipe("25.11", "Llama 3 70B", "dgx-b200", "fp8") == nullptr);
  CHECK(bridge_recipe("25.11", "Qwen3-30B-A3B", "dgx-a100-80gb", "bf16") == nullptr);
  // 26.06's MXFP8 presets on NVL72 racks run the sync-free fused MoE stack; its other
  // precisions there keep the newest earlier row.
  const BridgeRecipe* fused = bridge_recipe("26.06.01", "Qwen3-30B-A3B", "gb200-nvl72", "mxfp8");
  REQUIRE(fused != nullptr);
  CHECK(fused->version == "26.06");
  CHECK(fused->fused_moe_mlp);
  CHECK(fused->a2a_overlap);
  CHECK(fused->cuda_graphs == CudaGraphs::full);
  CHECK(bridge_recipe("26.06", "Qwen3-30B-A3B", "gb200-nvl72", "bf16") ==
        bridge_recipe("25.11", "Qwen3-30B-A3B", "gb200-nvl72", "bf16"));
  // 25.11 overlaps the all-to-alls where its scripts set moe_a2a_overlap.
  CHECK(bridge_recipe("25.11", "Qwen3-235B-A22B", "dgx-h100", "fp8")->a2a_overlap);
  CHECK(bridge_recipe("25.11", "Qwen3-30B-A3B", "dgx-h100", "bf16")->a2a_overlap);
  CHECK_FALSE(bridge_recipe("25.11", "Qwen3-30B-A3B", "gb200-nvl72", "mxfp8")->a2a_overlap);
  CHECK_FALSE(bridge_recipe("26.06", "Qwen3-30B-A3B", "dgx-h100", "fp8")->a2a_overlap);
  // Recomputed modules as the scripts set them.
  CHECK(bridge_recipe("25.11", "DeepSeek-V3", "gb200-nvl72", "mxfp8")->recompute_modules ==
        "mla_up_proj");
  CHECK(bridge_recipe("25.09", "DeepSeek-V3", "dgx-h100", "fp8")->recompute_modules ==
        "mla_up_proj,mlp");
  CHECK(bridge_recipe("25.11", "GPT-OSS 120B", "dgx-h100", "bf16")->recompute_modules ==
        "layernorm,moe_act");
  CHECK(bridge_recipe("25.11", "Qwen3-30B-A3B", "dgx-b200", "mxfp8")->recompute_modules.empty());
}
