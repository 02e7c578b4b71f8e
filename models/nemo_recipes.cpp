#include "models/nemo_recipes.hpp"

#include <string>

#include "models/bridge_recipes.hpp"

namespace fabricsim::models {

NemoRecipe nemo_recipe(std::string_view version, std::string_view model_name, std::string_view task,
                       const NemoRunPlan& plan) {
  NemoRecipe r;
  // A LoRA run in FP8 builds its frozen base in FP8 alone in the 24.04 and 24.09 containers too:
  // NVIDIA's NeMo-based llama2_70b_lora of MLPerf Training v4.0 (NeMo 24.04) and the 24.09 one
  // its partners submitted to v5.0 and v5.1 (Cisco, Krai: pytorch:24.09-py3, NeMo
  // 24.09-alpha.rc0), conf/megatron_gpt_peft_tuning_config.yaml `fp8_params: ${FP8}`, FP8 on.
  const bool nemo_2024 = version == "24.04" || version == "24.09";
  if (nemo_2024 && task == "lora") r.fp8_params = true;
  const std::string key = model_name_key(model_name);
  const bool mlperf_lora = task == "lora" && key.starts_with("llama270b");
  // NVIDIA's MLPerf llama2_70b_lora code before NeMo 2 ran FP8 attention too (FP8_DPA=1,
  // NVTE_FP8_DPA_BWD=1): the 24.04 code in every Hopper configuration
  // (implementations/nemo/configs/config_common.sh of MLPerf Training v4.0; only the L40S
  // configurations turn it off); the 24.09 code where context parallelism is off and on
  // Blackwell, while its Hopper configurations with CP 2 set FP8_DPA=0 (v4.1 eos_n8, eos_n128,
  // h200_ngc24.09 and the partners' reruns in v5.0 and v5.1). A 24.09 run of unstated CP on
  // Hopper is not assumed to run it.
  if (mlperf_lora && version == "24.04") r.fp8_attention = true;
  if (mlperf_lora && version == "24.09" && (plan.blackwell || plan.cp == 1)) {
    r.fp8_attention = true;
  }
  // The same code builds its model with `disable_parameter_transpose_cache: True` (both
  // containers' conf/megatron_gpt_peft_tuning_config.yaml, every submitter's copy in v4.0 and
  // v4.1): the frozen FP8 base keeps no transposed copy on Hopper. NeMo 2's code of 25.04 on
  // passes disable_parameter_transpose_cache=False (v5.0 NVIDIA train.py).
  if (mlperf_lora && nemo_2024) r.disable_parameter_transpose_cache = true;
  // NeMo 2's recipe for Llama 2 70B LoRA at 8,192 tokens, "based on performance optimizations
  // used in NVIDIA's MLPerf submissions" (scripts/performance/llm/mlperf_lora_llama2_70b.py, from
  // v2.3.0, the 25.04 container): FP8 attention forward (fp8_dot_product_attention=1) and backward
  // (NVTE_FP8_DPA_BWD=1), FP8 parameters (fp8_param_gather, the nemo-25.04 stack's already).
  if (version >= "25.04" && mlperf_lora) {
    r.fp8_attention = true;
    // NVIDIA's MLPerf llama2_70b_lora code of the 25.04 and 25.09 containers (v5.0, v5.1, and
    // the partners who ran it) defaults conf/megatron_gpt_peft_tuning_config.yaml
    // `cp_comm_type` to a2a; its 24.09 H100 and H200 code (v4.1 eos_*, h200_*, which partners
    // reran in v5.0 and v5.1) sets none, Megatron-Core's p2p (v4.1's B200 preview set a2a).
    r.cp_comm_a2a = true;
  }
  // The 25.09 code's NVFP4 runs (config_common_fp4.sh, which every NVFP4 configuration sources,
  // NVIDIA's and its partners' reruns in MLPerf Training v5.1: PRE_QUANTIZED_MODEL=True) replace
  // the frozen base's weights by NVFP4 tensors before training (custom_callbacks.py
  // _pre_quantize_model: "NVFP4 parameters in GPU memory"; the FP8 copies for the late healing
  // steps wait in host memory).
  if (version >= "25.09" && mlperf_lora) r.fp4_params = true;
  // NVIDIA's MLPerf llama31_405b code of the 25.01 container (v5.0's eos-dfw results and
  // Nebius's in v5.0 and v5.1) sets FP8_PARAMS=True in its config_common.sh, which pretrain.py
  // passes on as the distributed optimizer's fp8_param_gather: the model's parameters in FP8
  // alone. The 25.04 code's stack keeps them so already (the nemo-25.04 preset).
  if (task == "pretrain" && key.starts_with("llama31405b") && version >= "25.01")
    r.fp8_params = true;
  if (version != "24.07") return r;
  // NVIDIA/NeMo-Framework-Launcher at tag 24.07: every SFT configuration
  // (launcher_scripts/conf/peft/{llama,nemotron,gemma,qwen2}/sft.yaml) runs
  // distributed_fused_adam with `dtype: bf16`, and the H100 fine-tuning scripts
  // (examples/peft/{llama,nemotron}/h100/*.sh, SFT and LoRA) add `fp8_params=true`. LoRA trains
  // its adapters with fused_adam: its state is the adapters' alone.
  if (task == "sft") {
    r.bf16_optimizer_state = true;
    r.fp8_params = true;
  } else if (task == "lora") {
    r.fp8_params = true;
  } else if (key.starts_with("nemotron4340b")) {
    // conf/training/nemotron/nemotron_340b.yaml: distributed_fused_adam, `dtype: bf16` (and
    // grad_sync_dtype bf16); the other pre-training configurations keep the fp32 default.
    r.bf16_optimizer_state = true;
  }
  // conf/training/llama/llama3_{8b,70b}.yaml, llama3_1_*.yaml and
  // conf/training/nemotron/nemotron_{4b,8b,15b,22b}.yaml set `cross_entropy_loss_fusion: true`;
  // the Llama 2, GPT-3 and Nemotron-4 340B configurations and the PEFT ones leave it off.
  if (task == "pretrain" && (key.starts_with("llama3") || key.starts_with("nemotron3"))) {
    r.cross_entropy_fusion = true;
  }
  return r;
}

}  // namespace fabricsim::models
