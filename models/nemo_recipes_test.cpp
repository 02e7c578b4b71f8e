#include "models/nemo_recipes.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::models;

TEST_CASE("NeMo 24.07's recipes: SFT's bf16 Adam state and FP8 parameters", "[software]") {
  // NeMo-Framework-Launcher 24.07: conf/peft/*/sft.yaml (distributed_fused_adam, dtype bf16),
  // examples/peft/*/h100/*.sh (fp8_params=true for SFT and LoRA), and the Nemotron-4 340B
  // pre-training configuration (dtype bf16); every other pre-training configuration keeps fp32.
  const NemoRecipe sft = nemo_recipe("24.07", "Llama-2 70B", "sft");
  CHECK(sft.bf16_optimizer_state);
  CHECK(sft.fp8_params);
  const NemoRecipe lora = nemo_recipe("24.07", "Llama-2 70B", "lora");
  CHECK_FALSE(lora.bf16_optimizer_state);
  CHECK(lora.fp8_params);
  CHECK(nemo_recipe("24.07", "Nemotron-4 340B", "pretrain").bf16_optimizer_state);
  CHECK_FALSE(nemo_recipe("24.07", "Nemotron-4 340B", "pretrain").fp8_params);
  for (const char* model : {"Llama-2 70B", "Nemotron-3 22B", "GPT-3 175B"}) {
    INFO(model);
    const NemoRecipe r = nemo_recipe("24.07", model, "pretrain");
    CHECK_FALSE(r.bf16_optimizer_state);
    CHECK_FALSE(r.fp8_params);
  }
  // Other releases are not read.
  CHECK_FALSE(nemo_recipe("25.04", "Llama-2 70B", "sft").bf16_optimizer_state);
}
