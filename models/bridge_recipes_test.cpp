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
  CHECK(r->dispatcher == MoeDispatcher::alltoall);
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
  CHECK(bridge_recipe("25.11", "DeepSeek-V3", "dgx-h100", "fp8")->dispatcher ==
        MoeDispatcher::deepep);
  CHECK(bridge_recipe("25.09", "DeepSeek-V3", "dgx-h100", "fp8")->dispatcher ==
        MoeDispatcher::deepep);
  // A later release without rows of its own runs the newest earlier release's recipes; one
  // before every release here, an unknown model or system: none.
  CHECK(bridge_recipe("26.02.01", "Qwen3-235B-A22B", "dgx-b200", "mxfp8") ==
        bridge_recipe("26.02", "Qwen3-235B-A22B", "dgx-b200", "mxfp8"));
  CHECK(bridge_recipe("25.10", "Qwen3-30B-A3B", "dgx-b200", "fp8") ==
        bridge_recipe("25.09", "Qwen3-30B-A3B", "dgx-b200", "fp8"));
  CHECK(bridge_recipe("26.06.01", "DeepSeek-V3", "dgx-h100", "fp8")->dispatcher ==
        MoeDispatcher::deepep);
  // 26.04.01 moved DeepSeek-V3 on B200 to DeepEP with overlapped all-to-alls (#3368); 26.02
  // through 26.04 ran Hybrid-EP there.
  const BridgeRecipe* b200 = bridge_recipe("26.04.01", "DeepSeek-V3", "dgx-b200", "mxfp8");
  REQUIRE(b200 != nullptr);
  CHECK(b200->dispatcher == MoeDispatcher::deepep);
  CHECK(b200->a2a_overlap);
  CHECK(b200->cuda_graphs == CudaGraphs::attention);
  CHECK(b200->recompute_modules == "mla_up_proj,mlp");
  CHECK(bridge_recipe("26.04.01", "DeepSeek-V3", "dgx-b200", "nvfp4")->cuda_graphs ==
        CudaGraphs::none);
  CHECK(bridge_recipe("26.04", "DeepSeek-V3", "dgx-b200", "mxfp8")->dispatcher ==
        MoeDispatcher::hybridep);
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
  // ... and FP8 attention, except DeepSeek-V3 on GB200 (its preset does not set it).
  CHECK(fused->fp8_attention);
  CHECK(bridge_recipe("26.06", "DeepSeek-V3", "gb300-nvl72", "mxfp8")->fp8_attention);
  CHECK_FALSE(bridge_recipe("26.06", "DeepSeek-V3", "gb200-nvl72", "mxfp8")->fp8_attention);
  CHECK(bridge_recipe("26.06", "DeepSeek-V3", "gb200-nvl72", "mxfp8")->fused_moe_mlp);
  CHECK_FALSE(bridge_recipe("25.11", "Qwen3-30B-A3B", "gb200-nvl72", "mxfp8")->fp8_attention);
  CHECK(bridge_recipe("26.06", "Qwen3-30B-A3B", "gb200-nvl72", "bf16") ==
        bridge_recipe("26.02", "Qwen3-30B-A3B", "gb200-nvl72", "bf16"));
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

TEST_CASE("Megatron-Bridge runs DeepSeek-V3 with its MTP module in its recipe's layouts",
          "[validate][moe]") {
  const auto run = [](const char* version, const char* system, int pp, int vp) {
    return bridge_pipeline(version, "DeepSeek-V3 671B", system, pp, vp);
  };
  // 25.09's configs: one 32-stage layout whatever the plan.
  BridgePipeline b = run("25.09", "dgx-b200", 16, 1);
  CHECK(b.mtp_layers == 1);
  CHECK(b.layout == "Et|(tt|)*30mL");
  CHECK(run("25.09", "gb200-nvl72", 4, 4).layout == "Et|(tt|)*30mL");
  // 25.11: the recipe's map by plan; the summary's "w/o MTP" rows on GB200 and GB300.
  b = run("25.11", "dgx-b200", 16, 1);
  CHECK(b.mtp_layers == 1);
  CHECK(b.layout == "Et*4|(t*4|)*14tmL");
  b = run("25.11", "gb200-nvl72", 4, 4);
  CHECK(b.mtp_layers == 0);
  CHECK(b.layout == "Et*4|(t*4|)*14tL");
  CHECK(run("25.11", "gb300-nvl72", 2, 4).layout.empty());
  CHECK(run("25.11", "dgx-h100", 8, 4).layout == "Et|(tt|)*30mL");
  // Later releases run the module everywhere; GB300's (2, 8) layout arrives with 26.02.
  CHECK(run("26.02", "gb300-nvl72", 2, 8).mtp_layers == 1);
  CHECK(run("26.02", "gb300-nvl72", 2, 8).layout == "Et*4|(t*4|)*14tmL");
  CHECK(run("26.04", "dgx-b300", 8, 1).layout == "Et*8|(t*8|)*6t*5mL");
  CHECK(run("26.04", "dgx-b300", 4, 1).layout == "Et*16|t*16|t*16|t*13mL");
  CHECK(run("26.04", "dgx-b300", 2, 2).layout.empty());
  // Other models: nothing.
  b = bridge_pipeline("25.09", "Qwen3-235B-A22B", "dgx-b200", 16, 1);
  CHECK(b.mtp_layers == 0);
  CHECK(b.layout.empty());
}

TEST_CASE("Megatron-Bridge recipes of 26.02 through 26.04.01 follow each release's scripts",
          "[software]") {
  // Hybrid-EP on every NVL72 rack from 25.11 on; DeepSeek-V3 on B200 and B300 from 26.02.
  CHECK(bridge_recipe("25.11", "Qwen3-235B-A22B", "gb200-nvl72", "bf16")->dispatcher ==
        MoeDispatcher::hybridep);
  CHECK(bridge_recipe("26.02", "DeepSeek-V3", "dgx-b300", "mxfp8")->dispatcher ==
        MoeDispatcher::hybridep);
  // v0.3.0 overlaps Qwen3-235B-A22B's all-to-alls on B300 and H100, no longer on B200; v0.3.1
  // stops on B300 and forces the alltoall dispatcher there.
  CHECK(bridge_recipe("26.02", "Qwen3-235B-A22B", "dgx-b300", "mxfp8")->a2a_overlap);
  CHECK(bridge_recipe("26.02", "Qwen3-235B-A22B", "dgx-h100", "fp8")->a2a_overlap);
  CHECK_FALSE(bridge_recipe("26.02", "Qwen3-235B-A22B", "dgx-b200", "mxfp8")->a2a_overlap);
  const BridgeRecipe* b300 = bridge_recipe("26.02.01", "Qwen3-235B-A22B", "dgx-b300", "mxfp8");
  CHECK_FALSE(b300->a2a_overlap);
  CHECK(b300->dispatcher == MoeDispatcher::alltoall);
  CHECK(bridge_recipe("26.04.01", "Qwen3-235B-A22B", "dgx-b300", "mxfp8")->dispatcher ==
        MoeDispatcher::hybridep);
  // Qwen3-30B-A3B on H100: DeepEP with overlap in v0.3.0, Hybrid-EP without from v0.3.1.
  const BridgeRecipe* h100 = bridge_recipe("26.02", "Qwen3-30B-A3B", "dgx-h100", "fp8");
  CHECK(h100->a2a_overlap);
  CHECK(h100->dispatcher == MoeDispatcher::deepep);
  const BridgeRecipe* later = bridge_recipe("26.04.01", "Qwen3-30B-A3B", "dgx-h100", "fp8");
  CHECK(later->version == "26.02.01");
  CHECK_FALSE(later->a2a_overlap);
  CHECK(later->dispatcher == MoeDispatcher::hybridep);
  // B300 runs no attention graphs for these models: the router and its preprocessing only.
  const BridgeRecipe* qwen = bridge_recipe("26.04", "Qwen3-30B-A3B", "dgx-b300", "mxfp8");
  CHECK(qwen->cuda_graphs == CudaGraphs::none);
  CHECK(qwen->graph_moe_router);
  // DeepSeek-V3 on GB200 recomputes the MLP from 26.04; GPT-OSS there overlaps its all-to-alls.
  CHECK(bridge_recipe("26.04", "DeepSeek-V3", "gb200-nvl72", "mxfp8")->recompute_modules == "mlp");
  CHECK(bridge_recipe("26.02.01", "DeepSeek-V3", "gb200-nvl72", "mxfp8")->recompute_modules ==
        "mla_up_proj");
  CHECK(bridge_recipe("26.04", "GPT-OSS 120B", "gb200-nvl72", "bf16")->a2a_overlap);
  CHECK_FALSE(bridge_recipe("26.02.01", "GPT-OSS 120B", "gb200-nvl72", "bf16")->a2a_overlap);
}

TEST_CASE("Megatron-Bridge's dense FSDP recipes offload the layers their scripts name",
          "[software]") {
  // 25.09 yaml: GB200 Llama 3 70B bf16 20, fp8_cs 40; Llama 3.1 405B fp8_cs 95. From 25.11 the
  // workload configs: GB300 70B fp8_cs 20, bf16 30; B200 fp8_cs 5; 405B GB200 fp8_cs 92.
  CHECK(bridge_offload_layers("25.09", "Llama-3 70B", "gb200-nvl72", "fp8") == 40);
  CHECK(bridge_offload_layers("25.09", "Llama-3 70B", "gb200-nvl72", "bf16") == 20);
  CHECK(bridge_offload_layers("25.09", "Llama-3.1 405B", "gb200-nvl72", "fp8") == 95);
  CHECK(bridge_offload_layers("25.11", "Llama-3.1 405B", "gb200-nvl72", "fp8") == 92);
  CHECK(bridge_offload_layers("26.04.01", "Llama-3 70B", "gb300-nvl72", "fp8") == 20);
  CHECK(bridge_offload_layers("26.04.01", "Llama-3 70B", "gb300-nvl72", "bf16") == 30);
  CHECK(bridge_offload_layers("25.11", "Llama-3 70B", "dgx-b200", "fp8") == 5);
  // None before a release sets it, on another system or precision, or for another model.
  CHECK(bridge_offload_layers("25.09", "Llama-3 70B", "gb300-nvl72", "fp8") == 0);
  CHECK(bridge_offload_layers("26.04", "Llama-3 70B", "gb300-nvl72", "mxfp8") == 0);
  CHECK(bridge_offload_layers("26.04", "Llama-3 8B", "dgx-h100", "fp8") == 0);
}
