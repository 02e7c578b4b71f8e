#pragma once
// NeMo Framework's own configurations of its published runs (NeMo-Framework-Launcher): what a
// recipe sets beyond the framework's stack preset for one task or model. Facts about the
// published runs, used by the reference-case reader; never fitted to them.

#include <optional>
#include <string_view>

namespace fabricsim::models {

struct NemoRecipe {
  /// Adam's state (master parameters, both moments) in bf16: Apex's DistributedFusedAdam with
  /// `dtype: bf16` (SoftwareStack::optimizer_state_bytes 2).
  bool bf16_optimizer_state = false;
  /// Parameters kept only in FP8 (`fp8_params`, SoftwareStack::fp8_params).
  bool fp8_params = false;
  /// Megatron-Core's compiled vocab-parallel cross-entropy (`cross_entropy_loss_fusion`,
  /// LossKernel::megatron_fused).
  bool cross_entropy_fusion = false;
  /// Attention in FP8, forward and backward (`fp8_dot_product_attention`, NVTE_FP8_DPA_BWD;
  /// SoftwareStack::fp8_attention).
  bool fp8_attention = false;
  /// Context parallelism by all-to-all rather than the ring (`cp_comm_type: a2a`,
  /// ParallelPlan::cp_comm).
  bool cp_comm_a2a = false;
  /// NVFP4 runs hold their weights in NVFP4 alone (SoftwareStack::fp4_params).
  bool fp4_params = false;
  /// No FP8 parameter transposes kept between micro-batches (`disable_parameter_transpose_cache`,
  /// SoftwareStack::parameter_transpose_cache off).
  bool disable_parameter_transpose_cache = false;
};

/// What a run's own configuration chose that a release's recipe keys on.
struct NemoRunPlan {
  std::optional<int> cp;   ///< context-parallel size, where the source states it
  bool blackwell = false;  ///< the GPU is a Blackwell (B200, B300, GB200, GB300)
};

/// The recipe of NeMo `version` for `task` ("pretrain", "sft", "lora") of the model named
/// `model_name` run with `plan`; every field false where the release's configurations set
/// nothing of it.
NemoRecipe nemo_recipe(std::string_view version, std::string_view model_name, std::string_view task,
                       const NemoRunPlan& plan);

}  // namespace fabricsim::models
