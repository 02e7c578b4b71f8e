#pragma once
// Megatron-Bridge's performance recipes for MoE models: what its performance scripts set for one
// model on one system beyond the plan its performance summary prints (CUDA-graph scope, token
// drop, DeepEP), read from the scripts of the release that produced each summary. Facts about
// the published runs, used by the reference-case reader; never fitted to them.

#include <string>
#include <string_view>

#include "models/software_stack.hpp"

namespace fabricsim::models {

struct BridgeRecipe {
  std::string_view version;    ///< the NeMo container of the summary ("25.09")
  std::string_view model;      ///< the model name's letters and digits, lower case, as a prefix
  std::string_view system;     ///< system preset
  std::string_view precision;  ///< the case's precision; empty: any
  CudaGraphs cuda_graphs = CudaGraphs::none;
  bool graph_moe_router = false;  ///< TE graphs over the router and the dispatch preprocessing
  /// Token drop with padding to capacity (Megatron's moe_expert_capacity_factor with
  /// moe_pad_expert_input_to_capacity); 0: dropless.
  double capacity_factor = 0;
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;  ///< how the EP tokens travel
  /// Expert parallelism the scripts ran where the summary's table prints another; 0: as printed.
  int expert_parallel = 0;
  std::string_view source;
  bool fused_moe_mlp = false;  ///< cutedsl_fused_grouped_mlp (SoftwareStack::fused_moe_mlp)
  bool a2a_overlap = false;    ///< moe_a2a_overlap (SoftwareStack::moe_a2a_overlap)
  bool fp8_attention = false;  ///< fp8_dot_product_attention (SoftwareStack::fp8_attention)
  /// recompute_modules beyond the attention core (ParallelPlan::recompute_modules), as
  /// models::parse_recompute_modules reads them; empty: none.
  std::string_view recompute_modules = {};
};

/// A model name's letters and digits, lower case: how names from different sources compare
/// ("GPT-OSS 120B" is gptoss120b).
std::string model_name_key(std::string_view name);

/// The recipe of Megatron-Bridge `version` for the model named `model_name` (compared on letters
/// and digits) on `system` at `precision`: the row of the newest release up to `version` that
/// has one (a later release keeps what its scripts do not change); nullptr when none has.
const BridgeRecipe* bridge_recipe(std::string_view version, std::string_view model_name,
                                  std::string_view system, std::string_view precision);

/// The plan Megatron-Bridge's performance scripts ran for one row whose summary table prints
/// another (a misprint: the row's throughput is the scripts' plan's, not the printed one's).
struct BridgePlanFix {
  std::string_view version;    ///< the summary's release, exactly
  std::string_view model;      ///< model_name_key prefix
  std::string_view system;     ///< system preset
  std::string_view precision;  ///< the case's precision
  int tp = 1, pp = 1, vp = 1, micro_batch = 1;
  std::string_view source;
};

/// The fix for the row of release `version` (that release's table only), or nullptr.
const BridgePlanFix* bridge_plan_fix(std::string_view version, std::string_view model_name,
                                     std::string_view system, std::string_view precision);

/// The layers per model chunk whose activations a Megatron-Bridge release's performance scripts
/// keep in host memory (cpu_offloading_num_layers) for a dense model's FSDP run on `system` at
/// `precision`: the newest release up to `version` that sets it; 0 where none does.
int bridge_offload_layers(std::string_view version, std::string_view model_name,
                          std::string_view system, std::string_view precision);

/// DeepSeek-V3's multi-token prediction and pipeline layout in a Megatron-Bridge run.
struct BridgePipeline {
  int mtp_layers = 0;
  /// Megatron-Core's pipeline layout string (models/pipeline_layout.hpp); empty: none, the
  /// default split.
  std::string layout;
};

/// What a Megatron-Bridge release runs for the model named `model_name` on `system` with
/// pipeline `pp` x `vp`: for DeepSeek-V3, one MTP module (its recipe's mtp_num_layers default)
/// except where that release's summary says "w/o MTP", and the layout its recipe or performance
/// scripts give that plan; nothing for other models. Sources in bridge_recipes.cpp.
BridgePipeline bridge_pipeline(std::string_view version, std::string_view model_name,
                               std::string_view system, int pp, int vp);

}  // namespace fabricsim::models
