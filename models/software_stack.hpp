#pragma once
// Training software as data: what a framework version runs (attention kernel, tensor-parallel
// communication overlap, CUDA graphs, FSDP implementation, MoE dispatcher, FP8 recipe, gradient
// buckets), each fact with the release note or document that states it. A scenario's `software`
// section and a reference case's `framework` select one preset; unknown frameworks get the
// documented default. These are facts about the software, never corrections fitted to a run.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/megatron_bridge_flops.hpp"
#include "models/parallel_plan.hpp"

namespace fabricsim::models {

enum class AttentionKernel : uint8_t {
  unfused,       ///< QK^T and PV as batched GEMMs around a fused softmax (Megatron-LM before 2023)
  flash2,        ///< FlashAttention-2 (Dao 2023)
  flash_triton,  ///< the Triton FlashAttention of flash-attn 1.x (flash_attn_triton, 2022-23)
  flash3,        ///< FlashAttention-3 (Hopper warp-specialised, Shah et al. 2024)
  cudnn,         ///< cuDNN fused attention through Transformer Engine
};
const char* to_string(AttentionKernel k);

/// Which part of a step is captured in CUDA graphs (replayed without per-kernel host launches).
enum class CudaGraphs : uint8_t { none, attention, full };
const char* to_string(CudaGraphs g);
/// The scope named by to_string, or nullopt.
std::optional<CudaGraphs> cuda_graphs_from(std::string_view name);

enum class FsdpImpl : uint8_t { none, pytorch_fsdp1, pytorch_fsdp2, megatron_fsdp };

/// How an MoE layer's tokens travel between expert-parallel ranks: NCCL all-to-all (Megatron-Core's
/// alltoall dispatcher), or the flex dispatcher's DeepEP or HybridEP kernels (models/moe_alltoall).
enum class MoeDispatcher : uint8_t { alltoall, deepep, hybridep };
const char* to_string(MoeDispatcher d);
/// The dispatcher named by to_string, or nullopt.
std::optional<MoeDispatcher> moe_dispatcher_from(std::string_view name);

/// What an overlapped expert-parallel all-to-all hides behind (SoftwareStack::moe_a2a_overlap).
enum class A2aOverlapScope : uint8_t {
  /// Megatron-Core's combined 1F1B: each all-to-all beside the sub-module up to the next one.
  modules,
  /// DeepSeek's DualPipe: the all-to-alls of a pass run one after another on their own stream
  /// beside the pass's whole compute, which needs none of them to finish before the pass ends.
  chunk,
};
const char* to_string(A2aOverlapScope s);
/// The scope named by to_string, or nullopt.
std::optional<A2aOverlapScope> a2a_overlap_scope_from(std::string_view name);

/// How the experts' GEMMs of an MoE layer run (models/grouped_gemm).
enum class GroupedGemmKernel : uint8_t {
  /// One kernel over every expert (CUTLASS or cuBLASLt grouped GEMM, DeepGEMM): the experts'
  /// output tiles share the waves, one launch.
  fused,
  /// One cuBLAS GEMM per expert, issued round-robin on a pool of streams (Transformer Engine's
  /// GroupedLinear per-expert path): the GEMMs of one round share the SMs, each round ends with
  /// its slowest, and the host launches every GEMM.
  multi_stream,
};
const char* to_string(GroupedGemmKernel k);

/// How the loss over the vocabulary runs (HBM traffic per logit, counted from the code):
/// - `fp32_upcast`: the logits upcast to fp32 and cross-entropy in separate eager kernels,
///   counted on Megatron's vocab-parallel cross-entropy (core_r0.8.0
///   tensor_parallel/cross_entropy.py, the same passes in Megatron-LM 2021-22): the bf16 logits
///   upcast to fp32 (2 + 4 bytes), max (4), subtract (4 + 4), exp (4 + 4), sum (4) and normalise
///   (4 + 4) as separate kernels, 38 bytes forward; backward scales the saved softmax in place
///   (4 + 4) and casts it to bf16 for the head (4 + 2), 14;
/// - `megatron_fused`: the same code compiled (Megatron-Core's cross_entropy_loss_fusion,
///   fusions/fused_cross_entropy.py under jit_fuser, torch.compile from PyTorch 2.2): upcast with
///   max (2 + 4), subtract-exp-sum (4 + 4), normalise (4 + 4), 22 forward; scale and cast in one
///   kernel (4 + 2), 6 backward;
/// - `fused`: one kernel reads the bf16 logits and keeps per-row statistics, the backward
///   recomputes the softmax and writes the bf16 gradient (flash-attn's xentropy kernel,
///   Transformer Engine's Triton one): 2 bytes forward, 4 backward.
enum class LossKernel : uint8_t { fp32_upcast, megatron_fused, fused };
const char* to_string(LossKernel k);
std::optional<LossKernel> loss_kernel_from(std::string_view name);
/// Bytes of HBM traffic per logit of the loss, forward or backward.
double loss_bytes_per_logit(LossKernel k, bool backward);

/// How the framework counts the model FLOPs it reports (TFLOP/s per GPU, MFU): the GEMMs of the
/// model with attention over the full score matrix (Narayanan et al.'s convention, Megatron-LM
/// and NeMo through 24.07), or Megatron-Bridge's closed form (models/megatron_bridge_flops).
enum class FlopCount : uint8_t { megatron_lm, megatron_bridge };
const char* to_string(FsdpImpl f);

struct SoftwareFact {
  std::string fact;
  std::string source;
};

struct SoftwareStack {
  std::string id;         ///< preset id, e.g. "nemo-24.07"
  std::string framework;  ///< the case format's framework name
  std::string version;    ///< as the framework numbers it; "" when it has none
  std::string released;   ///< "YYYY-MM"
  AttentionKernel attention = AttentionKernel::cudnn;
  bool tp_comm_overlap = true;
  CudaGraphs cuda_graphs = CudaGraphs::none;
  /// The MoE router and the dispatcher's preprocessing captured too (Transformer Engine graphs
  /// with cuda_graph_scope moe_router, moe_preprocess): their kernels cost no host launches; the
  /// dropless dispatcher's host sync stays, after the graph.
  bool graph_moe_router = false;
  FsdpImpl fsdp = FsdpImpl::none;
  /// Activation recomputation the framework's published benchmark configurations run: what a
  /// source that does not state it is taken to have run.
  Recompute recompute = Recompute::selective;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  GroupedGemmKernel grouped_gemm = GroupedGemmKernel::multi_stream;
  LossKernel loss = LossKernel::fp32_upcast;
  /// Memory-bound ops run as eager PyTorch writes them (models/eager_ops.hpp: every elementwise op
  /// its own kernel, RMSNorm and rotary in fp32) instead of fused kernels (Transformer Engine,
  /// Apex, torch.compile).
  bool eager_elementwise = false;
  int grouped_gemm_streams = 4;  ///< streams of the multi_stream path
  /// Dropless MoE dispatch copies the per-expert token counts to the host once per MoE layer
  /// (Megatron-Core's alltoall dispatcher), so the host cannot run ahead of the GPU there.
  bool moe_host_sync = true;
  /// The experts' MLP as cuDNN's CuTe DSL fused grouped kernels (Megatron-Core's
  /// cutedsl_fused_grouped_mlp): each expert GEMM one kernel over the local experts, whose token
  /// counts stay on the GPU (sync-free: no host sync, the block can be captured in a CUDA graph),
  /// with the GLU activation (clamp, bias, routing probability) and the quantization of FC2's
  /// input in FC1's epilogue, and their backward in FC2's dgrad epilogue (NVIDIA technical blog
  /// "Boosting MoE Training Throughput with Advanced Fusion Kernels", 2026-06-15).
  bool fused_moe_mlp = false;
  /// With expert biases (GPT-OSS), the fused MLP's backward kernel (FC2's dgrad with the GLU's
  /// backward in its epilogue: cuDNN's grouped_gemm_dglu) also reduces FC1's bias gradient: its
  /// time over the same kernel without that reduction. cuDNN front end's SM100 benchmark at the
  /// shape of NVIDIA/cudnn-frontend#256 (PR #322, 2026-06-23): 138.96 us without, 155.63 us with
  /// it (1.12); 1362.77 us against 139.39 before that fix (9.78: versions 1.24 and 1.25, whose
  /// CUTLASS DSL 4.5 code spilled the reduction's loop to local memory).
  double dglu_dbias_factor = 155.632 / 138.960;
  /// Expert-parallel all-to-alls run beside compute (Megatron-Core's moe_a2a_overlap, which pairs
  /// one micro-batch's forward with another's backward so each one's all-to-alls hide behind the
  /// other's compute): modelled as each all-to-all running beside the block's compute up to the
  /// next one, which it slows while it is in flight.
  bool moe_a2a_overlap = false;
  /// How far the overlapped all-to-alls reach: Megatron-Core's sub-module pairing, or the whole
  /// chunk's compute as DeepSeek's DualPipe overlaps a forward and a backward chunk.
  A2aOverlapScope moe_a2a_overlap_scope = A2aOverlapScope::modules;
  /// Attention in FP8 in quantized layers (Transformer Engine's fp8_dpa, Megatron-Bridge's
  /// fp8_dot_product_attention): cuDNN's FP8 (MXFP8 on Blackwell) fused attention, its inputs
  /// cast to FP8 before it and its output back after it.
  bool fp8_attention = false;
  /// The SwiGLU activation's input (FC1's output) is kept for the backward in FP8 and cast back
  /// before it (Megatron-Core's activation_func_fp8_input_store): half its activation bytes, one
  /// cast each way.
  bool fp8_activation_input = false;
  /// FP8 with per-tensor current scaling instead of delayed scaling (amax history); the recipe
  /// itself is models/precision_recipe.
  bool fp8_current_scaling = false;
  /// NVFP4 keeps the linear layers of this fraction of the first and of the last transformer
  /// layers in BF16: the first two and the last eight of the 62 blocks of the paper's 12B model,
  /// about 16% of its linear layers, most at the end (NVIDIA, "Pretraining Large Language Models
  /// with NVFP4", arXiv:2509.25149, section 4.1, selective high-precision layers).
  double nvfp4_bf16_first = 2.0 / 62.0;
  double nvfp4_bf16_last = 8.0 / 62.0;
  double bucket_bytes = 0;  ///< data-parallel gradient bucket; 0 = one per layer
  /// Bucket bytes per data x context-parallel rank when that is larger (ParallelPlan).
  double bucket_bytes_per_dp_rank = 0;
  /// Only a rank's first model chunk is cut into buckets; each later (interleaved) chunk reduces
  /// its gradients at once, when its last backward is done.
  bool bucket_first_chunk_only = false;
  /// Gradients are accumulated and reduced across data-parallel ranks in fp32 (4 bytes each)
  /// when the model trains in bf16 or fp8; false: in bf16, the parameters' dtype. fp16 training
  /// always keeps fp32 gradients (loss scaling).
  bool grad_reduce_fp32 = false;
  /// Bytes of each element of the optimizer's state: Adam's master copy of the parameters and
  /// its two moments. 4 (fp32) by default; 2 where the optimizer keeps them in bf16 (Apex's
  /// DistributedFusedAdam with dtype bf16, as NeMo's SFT recipes and its Nemotron-4 340B
  /// pre-training recipe run it: its `dtype` is the datatype of that whole state).
  double optimizer_state_bytes = 4.0;
  /// In an FP8 or MXFP8 run (any FP8 scaling, blockwise too; not NVFP4) the model's parameters are
  /// kept only in their FP8 form (Transformer Engine's fp8_model_init: NeMo's fp8_params,
  /// Megatron-Core's fp8_param_gather): no bf16 copy beside it; the optimizer's state keeps the
  /// master copy.
  bool fp8_params = false;
  /// In an NVFP4 run the linear layers' weights are held only in NVFP4, rowwise and columnwise
  /// copies with their scales, no bf16 copy (Megatron-Core's fp4_param; NVIDIA's MLPerf LoRA
  /// code of the 25.09 container quantizes its frozen base so in place, PRE_QUANTIZED_MODEL).
  bool fp4_params = false;
  /// Transformer Engine keeps the transposed FP8 copy of a parameter held in FP8 (fp8_params)
  /// between micro-batches, for the data-gradient GEMMs of GPUs that read FP8 in the TN layout
  /// only (Megatron-Core's `disable_parameter_transpose_cache` off, its default). Off, each
  /// backward transposes the weight afresh and drops it (TE v1.6-v1.13 module/linear.py: the
  /// backward's transpose_2d fills no cache when Megatron passes is_first_microbatch None), so
  /// the parameter holds one byte per element instead of two.
  bool parameter_transpose_cache = true;
  /// Bytes of one gradient element as this software keeps and reduces it for a run in `p`.
  double gradient_bytes(topologies::Precision p) const {
    return p == topologies::Precision::fp16 || grad_reduce_fp32 ? 4.0 : 2.0;
  }
  FlopCount flop_count = FlopCount::megatron_lm;
  /// A LoRA run reports the frozen-model count of megatron_bridge_lora_flops_per_token instead of
  /// the pre-training one (Megatron-Bridge from 26.02.01; NeMo 24.07's summary already did).
  bool bridge_lora_flops = false;
  /// The revision of Megatron-Bridge's closed form the framework reports with.
  BridgeFlopForm bridge_flop_form = BridgeFlopForm::v0_2;
  bool documented = true;  ///< false for the fallback default
  std::vector<SoftwareFact> facts;
};

/// Whether an MoE block keeps its per-expert token counts on the GPU, so its host need not wait
/// for them (sync-free: the block can be captured in a CUDA graph): capacity-padded routing
/// through the alltoall dispatcher (static shapes: Megatron-Core's sync point stays "no_sync"
/// under drop_and_pad, token_dispatcher.py core_v0.14.0; the flex dispatcher pads nothing), or
/// the fused grouped MLP, unless DeepEP's normal kernels make the host wait for the received
/// counts (Hybrid-EP's need no host synchronisation: DeepEP docs/README_Hybrid-EP.md).
bool moe_counts_on_gpu(const MoeConfig& moe, const SoftwareStack& software);

/// `bf16` or `fp32`: the setting's name of an optimizer state of `bytes` per element.
inline std::string_view optimizer_state_name(double bytes) {
  return bytes == 2.0 ? "bf16" : "fp32";
}

const std::vector<SoftwareStack>& software_presets();
/// The preset with this id, or nullptr.
const SoftwareStack* find_software(std::string_view id);
/// The preset for a framework as a source states it: the exact version, else the framework's
/// newest preset released no later than `released` ("YYYY-MM"; empty = unknown), else its oldest
/// (or, with nothing to compare, its newest); a framework with no preset gets the default.
const SoftwareStack& software_for(std::string_view framework, std::string_view version,
                                  std::string_view released);
/// The documented default: the stack of Megatron-Core r0.8 (2024), the middle of the sources.
const SoftwareStack& default_software();
/// Comma-separated preset ids, for messages.
std::string software_names();

}  // namespace fabricsim::models
