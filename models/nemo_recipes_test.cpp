#include "models/nemo_recipes.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::models;

TEST_CASE("NeMo 24.07's recipes: SFT's bf16 Adam state and FP8 parameters", "[software]") {
  // NeMo-Framework-Launcher 24.07: conf/peft/*/sft.yaml (distributed_fused_adam, dtype bf16),
  // examples/peft/*/h100/*.sh (fp8_params=true for SFT and LoRA), and the Nemotron-4 340B
  // pre-training configuration (dtype bf16); every other pre-training configuration keeps fp32.
  const NemoRecipe sft = nemo_recipe("24.07", "Llama-2 70B", "sft", {});
  CHECK(sft.bf16_optimizer_state);
  CHECK(sft.fp8_params);
  const NemoRecipe lora = nemo_recipe("24.07", "Llama-2 70B", "lora", {});
  CHECK_FALSE(lora.bf16_optimizer_state);
  CHECK(lora.fp8_params);
  CHECK(nemo_recipe("24.07", "Nemotron-4 340B", "pretrain", {}).bf16_optimizer_state);
  CHECK_FALSE(nemo_recipe("24.07", "Nemotron-4 340B", "pretrain", {}).fp8_params);
  for (const char* model : {"Llama-2 70B", "Nemotron-3 22B", "GPT-3 175B"}) {
    INFO(model);
    const NemoRecipe r = nemo_recipe("24.07", model, "pretrain", {});
    CHECK_FALSE(r.bf16_optimizer_state);
    CHECK_FALSE(r.fp8_params);
  }
  // Other releases are not read, but for 24.04's and 24.09's LoRA in FP8 (the NeMo-based MLPerf
  // implementations on those containers keep their frozen base in FP8).
  CHECK_FALSE(nemo_recipe("25.04", "Llama-2 70B", "sft", {}).bf16_optimizer_state);
  CHECK(nemo_recipe("24.04", "Llama-2 70B", "lora", {}).fp8_params);
  CHECK(nemo_recipe("24.09", "Llama-2 70B", "lora", {}).fp8_params);
  CHECK_FALSE(nemo_recipe("24.09", "Llama-2 70B", "pretrain", {}).fp8_params);
  CHECK_FALSE(nemo_recipe("24.04", "Llama-2 70B", "sft", {}).fp8_params);
  CHECK_FALSE(nemo_recipe("24.04", "Llama-2 70B", "pretrain", {}).fp8_params);
}

TEST_CASE("NeMo 2's Llama 2 70B LoRA recipe runs attention in FP8", "[software]") {
  // scripts/performance/llm/mlperf_lora_llama2_70b.py from v2.3.0 (the 25.04 container).
  CHECK(nemo_recipe("25.04", "Llama-2 70B", "lora", {}).fp8_attention);
  CHECK(nemo_recipe("25.09", "Llama 2 70B", "lora", {}).fp8_attention);
  CHECK_FALSE(nemo_recipe("24.07", "Llama-2 70B", "lora", {}).fp8_attention);
  CHECK_FALSE(nemo_recipe("25.09", "Llama-2 70B", "sft", {}).fp8_attention);
  CHECK_FALSE(nemo_recipe("25.09", "Llama 3 70B", "lora", {}).fp8_attention);
}

TEST_CASE("NVIDIA's MLPerf LoRA code before NeMo 2 runs FP8 attention where its configurations do",
          "[software]") {
  // MLPerf Training v4.0 (24.04): config_common.sh sets FP8_DPA=1 and NVTE_FP8_DPA_BWD=1 for
  // every Hopper run, context-parallel or not. v4.1 (24.09): the CP 1 configurations keep it, the
  // Hopper CP 2 ones set FP8_DPA=0, the B200 preview keeps it at CP 2.
  const NemoRunPlan cp1{1, false}, cp2{2, false}, unstated{std::nullopt, false};
  const NemoRunPlan blackwell_cp2{2, true};
  CHECK(nemo_recipe("24.04", "Llama-2 70B", "lora", cp1).fp8_attention);
  CHECK(nemo_recipe("24.04", "Llama-2 70B", "lora", cp2).fp8_attention);
  CHECK(nemo_recipe("24.04", "Llama-2 70B", "lora", unstated).fp8_attention);
  CHECK(nemo_recipe("24.09", "Llama-2 70B", "lora", cp1).fp8_attention);
  CHECK_FALSE(nemo_recipe("24.09", "Llama-2 70B", "lora", cp2).fp8_attention);
  CHECK_FALSE(nemo_recipe("24.09", "Llama-2 70B", "lora", unstated).fp8_attention);
  CHECK(nemo_recipe("24.09", "Llama-2 70B", "lora", blackwell_cp2).fp8_attention);
  // Their pre-training, fine-tuning and other models set nothing of it; NeMo 24.07's
  // performance recipes neither.
  CHECK_FALSE(nemo_recipe("24.09", "Llama-2 70B", "sft", cp1).fp8_attention);
  CHECK_FALSE(nemo_recipe("24.04", "GPT-3 175B", "pretrain", cp1).fp8_attention);
  CHECK_FALSE(nemo_recipe("24.07", "Llama-2 70B", "lora", cp1).fp8_attention);
}

TEST_CASE("NVIDIA's Llama 2 70B LoRA code spreads context parallelism by all-to-all from 25.04",
          "[software]") {
  // conf/megatron_gpt_peft_tuning_config.yaml: cp_comm_type defaults to a2a in MLPerf v5.0's and
  // v5.1's code (25.04, 25.09); the 24.09 H100/H200 code sets none (Megatron-Core's p2p).
  CHECK(nemo_recipe("25.04", "Llama-2 70B", "lora", {}).cp_comm_a2a);
  CHECK(nemo_recipe("25.09", "Llama 2 70B", "lora", {}).cp_comm_a2a);
  CHECK_FALSE(nemo_recipe("24.09", "Llama-2 70B", "lora", {}).cp_comm_a2a);
  CHECK_FALSE(nemo_recipe("25.09", "Llama 3.1 8B", "pretrain", {}).cp_comm_a2a);
  CHECK_FALSE(nemo_recipe("25.09", "Llama-2 70B", "sft", {}).cp_comm_a2a);
}

TEST_CASE("NeMo 24.07's recipes: the compiled cross-entropy where the configuration fuses it",
          "[software]") {
  // conf/training/llama/llama3_*.yaml and conf/training/nemotron/nemotron_{4b,8b,15b,22b}.yaml
  // set cross_entropy_loss_fusion; Llama 2, GPT-3, Nemotron-4 340B and fine-tuning do not.
  for (const char* model : {"Llama-3 8B", "Llama-3 70B", "Nemotron-3 8B", "Nemotron-3 22B"}) {
    INFO(model);
    CHECK(nemo_recipe("24.07", model, "pretrain", {}).cross_entropy_fusion);
  }
  for (const char* model : {"Llama-2 7B", "GPT-3 175B", "Nemotron-4 340B"}) {
    INFO(model);
    CHECK_FALSE(nemo_recipe("24.07", model, "pretrain", {}).cross_entropy_fusion);
  }
  CHECK_FALSE(nemo_recipe("24.07", "Llama-3 8B", "sft", {}).cross_entropy_fusion);
  CHECK_FALSE(nemo_recipe("25.04", "Llama-3 8B", "pretrain", {}).cross_entropy_fusion);
}

TEST_CASE("NVIDIA's MLPerf LoRA code of 2024 caches no FP8 parameter transposes", "[software]") {
  // conf/megatron_gpt_peft_tuning_config.yaml of the 24.04 and 24.09 code:
  // disable_parameter_transpose_cache True; NeMo 2's code from 25.04 passes False (train.py).
  CHECK(nemo_recipe("24.04", "Llama-2 70B", "lora", {}).disable_parameter_transpose_cache);
  CHECK(nemo_recipe("24.09", "Llama 2 70B", "lora", {}).disable_parameter_transpose_cache);
  CHECK_FALSE(nemo_recipe("25.04", "Llama-2 70B", "lora", {}).disable_parameter_transpose_cache);
  CHECK_FALSE(nemo_recipe("24.07", "Llama-2 70B", "lora", {}).disable_parameter_transpose_cache);
  CHECK_FALSE(nemo_recipe("24.09", "Llama-2 70B", "sft", {}).disable_parameter_transpose_cache);
  CHECK_FALSE(nemo_recipe("24.09", "Llama 3 8B", "lora", {}).disable_parameter_transpose_cache);
}

TEST_CASE("NVIDIA's MLPerf LoRA code of 25.09 holds its NVFP4 base in NVFP4 alone", "[software]") {
  // config_common_fp4.sh: PRE_QUANTIZED_MODEL=True (custom_callbacks.py _pre_quantize_model).
  CHECK(nemo_recipe("25.09", "Llama-2 70B", "lora", {}).fp4_params);
  CHECK_FALSE(nemo_recipe("25.04", "Llama-2 70B", "lora", {}).fp4_params);
  CHECK_FALSE(nemo_recipe("25.09", "Llama-2 70B", "pretrain", {}).fp4_params);
  CHECK_FALSE(nemo_recipe("25.09", "Llama 3.1 8B", "lora", {}).fp4_params);
}

TEST_CASE("NVIDIA's MLPerf Llama 3.1 405B code keeps its parameters in FP8", "[software]") {
  // The 25.01 code's config_common.sh: FP8_PARAMS=True (fp8_param_gather in pretrain.py).
  CHECK(nemo_recipe("25.01", "Llama-3.1 405B", "pretrain", {}).fp8_params);
  CHECK_FALSE(nemo_recipe("24.09", "Llama-3.1 405B", "pretrain", {}).fp8_params);
  CHECK_FALSE(nemo_recipe("25.01", "Llama-3.1 8B", "pretrain", {}).fp8_params);
}
