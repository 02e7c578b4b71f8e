#include "models/software_stack.hpp"

#include <algorithm>

#include "models/enum_from_name.hpp"

namespace fabricsim::models {

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::unfused:
      return "unfused";
    case AttentionKernel::flash2:
      return "flash2";
    case AttentionKernel::flash3:
      return "flash3";
    case AttentionKernel::flash_triton:
      return "flash_triton";
    case AttentionKernel::cudnn:
      return "cudnn";
  }
  return "?";
}

const char* to_string(CudaGraphs g) {
  switch (g) {
    case CudaGraphs::none:
      return "none";
    case CudaGraphs::attention:
      return "attention";
    case CudaGraphs::full:
      return "full";
  }
  return "?";
}

std::optional<CudaGraphs> cuda_graphs_from(std::string_view name) {
  return enum_from_name(name, {CudaGraphs::none, CudaGraphs::attention, CudaGraphs::full});
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::alltoall:
      return "alltoall";
    case MoeDispatcher::deepep:
      return "deepep";
    case MoeDispatcher::hybridep:
      return "hybridep";
  }
  return "?";
}

std::optional<MoeDispatcher> moe_dispatcher_from(std::string_view name) {
  return enum_from_name(name,
                        {MoeDispatcher::alltoall, MoeDispatcher::deepep, MoeDispatcher::hybridep});
}

bool moe_counts_on_gpu(const MoeConfig& moe, const SoftwareStack& software) {
  const bool static_shapes =
      moe.capacity_factor > 0 && software.moe_dispatcher == MoeDispatcher::alltoall;
  return static_shapes ||
         (software.fused_moe_mlp && software.moe_dispatcher != MoeDispatcher::deepep);
}

const char* to_string(A2aOverlapScope s) {
  switch (s) {
    case A2aOverlapScope::modules:
      return "modules";
    case A2aOverlapScope::chunk:
      return "chunk";
  }
  return "?";
}

std::optional<A2aOverlapScope> a2a_overlap_scope_from(std::string_view name) {
  return enum_from_name(name, {A2aOverlapScope::modules, A2aOverlapScope::chunk});
}

const char* to_string(FsdpImpl f) {
  switch (f) {
    case FsdpImpl::none:
      return "none";
    case FsdpImpl::pytorch_fsdp1:
      return "pytorch_fsdp1";
    case FsdpImpl::pytorch_fsdp2:
      return "pytorch_fsdp2";
    case FsdpImpl::megatron_fsdp:
      return "megatron_fsdp";
  }
  return "?";
}

const char* to_string(LossKernel k) {
  switch (k) {
    case LossKernel::fp32_upcast:
      return "fp32_upcast";
    case LossKernel::megatron_fused:
      return "megatron_fused";
    case LossKernel::fused:
      return "fused";
  }
  return "?";
}

std::optional<LossKernel> loss_kernel_from(std::string_view name) {
  return enum_from_name(name,
                        {LossKernel::fp32_upcast, LossKernel::megatron_fused, LossKernel::fused});
}

double loss_bytes_per_logit(LossKernel k, bool backward) {
  switch (k) {
    case LossKernel::fp32_upcast:
      return backward ? 14.0 : 38.0;
    case LossKernel::megatron_fused:
      return backward ? 6.0 : 22.0;
    case LossKernel::fused:
      return backward ? 4.0 : 2.0;
  }
  return 0.0;
}

const char* to_string(GroupedGemmKernel k) {
  switch (k) {
    case GroupedGemmKernel::fused:
      return "fused";
    case GroupedGemmKernel::multi_stream:
      return "multi_stream";
  }
  return "?";
}

namespace {

// Megatron-Core's DDP bucket when none is configured: max(40M, 1M x DP) parameters, DP the
// data x context-parallel group (distributed_data_parallel_config.py bucket_size: "larger DP
// sizes need larger buckets to ensure collectives do not become latency-bound"), in the
// stack's gradient dtype (a 40M floor of 80 MB of bf16 gradients, 160 MB of fp32 ones).
constexpr double kMcoreBucketParams = 40e6;
constexpr double kMcoreBucketParamsPerDpRank = 1e6;
// Megatron-LM, NeMo and Megatron-Bridge wrap every model chunk after the first with
// disable_bucketing ("communication for these model chunks is overlapped with compute anyway").
void set_mcore_buckets(SoftwareStack& s) {
  const double bytes = s.gradient_bytes(topologies::Precision::bf16);
  s.bucket_bytes = kMcoreBucketParams * bytes;
  s.bucket_bytes_per_dp_rank = kMcoreBucketParamsPerDpRank * bytes;
  s.bucket_first_chunk_only = true;
}
// NeMo 2's MegatronCommOverlapCallback and Megatron-Bridge's CommOverlapConfig set the bucket
// to 128 Mi parameters whenever data parallelism overlaps (DP > 1, distributed optimizer).
constexpr double kNemo2BucketParams = 128.0 * 1024 * 1024;
void set_nemo2_buckets(SoftwareStack& s) {
  s.bucket_bytes = kNemo2BucketParams * s.gradient_bytes(topologies::Precision::bf16);
  s.bucket_bytes_per_dp_rank = 0;
  s.bucket_first_chunk_only = true;
}

const SoftwareFact kMegatronFp32Grads{
    "bf16 training accumulates and all-reduces (reduce-scatters, with the distributed optimizer) "
    "its gradients in fp32: Megatron-LM forces accumulate_allreduce_grads_in_fp32 for bf16, and "
    "Megatron-Core's grad buffer then holds fp32 (DistributedDataParallelConfig "
    "grad_reduce_in_fp32)",
    "NVIDIA/Megatron-LM megatron/training/arguments.py at core_r0.8.0 ('bfloat16 requires "
    "gradient accumulation and all-reduce to be done in fp32'), megatron/training/training.py "
    "(grad_reduce_in_fp32=args.accumulate_allreduce_grads_in_fp32), "
    "megatron/core/distributed/distributed_data_parallel.py (grad_dtype float when "
    "grad_reduce_in_fp32)"};

const SoftwareFact kTe{
    "Transformer Engine layers; attention through TE's cuDNN fused-attention backend on Hopper and "
    "Blackwell",
    "NVIDIA Transformer Engine docs, 'Attention backends' (FusedAttention preferred on sm90+); "
    "Megatron-Core transformer_engine spec"};
const SoftwareFact kTpOverlap{
    "tensor-parallel communication overlapped with GEMMs (TE userbuffers, --tp-comm-overlap)",
    "Megatron-Core docs 'Communication overlap'; NeMo performance recipes (tp_comm_overlap=True)"};
const SoftwareFact kMcoreBuckets{
    "gradient buckets of max(40M, 1M x DP) parameters (DP: data x context-parallel ranks), "
    "reduced while backward runs (overlap_grad_reduce); an interleaved rank's later model chunks "
    "one bucket each",
    "Megatron-Core distributed_data_parallel_config.py (bucket_size default), Megatron-LM "
    "--overlap-grad-reduce; megatron/training/training.py get_model (disable_bucketing = "
    "model_chunk_idx > 0), NeMo megatron_gpt_model.py (the same)"};
const SoftwareFact kNemo2Buckets{
    "gradient buckets of 128 Mi parameters whenever DP > 1 with the distributed optimizer; an "
    "interleaved rank's later model chunks one bucket each",
    "NVIDIA/NeMo nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py "
    "(_get_optimizer_overlap_cfgs, bucket_size = 128 * 1024 * 1024) at v2.3.0; "
    "Megatron-Bridge src/megatron/bridge/training/comm_overlap.py (the same) at v0.1.0rc3 "
    "to v0.5.0; nemo/lightning/megatron_parallel.py and Megatron-Bridge "
    "models/model_provider.py (disable_bucketing = model_chunk_idx > 0)"};
const SoftwareFact kAlltoall{
    "MoE alltoall token dispatcher: per-expert token counts copied to the host once per MoE layer "
    "(dropless)",
    "Megatron-Core moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher, tokens_per_expert .cpu())"};

const SoftwareFact kGroupedLinear{
    "MoE experts through Transformer Engine's GroupedLinear (moe_grouped_gemm): the per-expert "
    "path reads the token counts on the host and launches one cuBLAS GEMM per expert on a pool of "
    "4 compute streams",
    "Transformer Engine docs, MoE 'Grouped GEMM' (per-expert GEMMs on a pool of CUDA streams); "
    "transformer_engine/common/util/multi_stream.cpp get_num_compute_streams() = 4; "
    "Megatron-Core moe/experts.py TEGroupedMLP"};

const SoftwareFact kMcoreNvfp4Layers{
    "NVFP4 keeps no transformer layer in BF16 unless the run asks: Megatron-Core's "
    "first_last_layers_bf16 defaults to False; NeMo 2 ships no NVFP4 recipe, and NVIDIA's "
    "NeMo-based MLPerf Training v5.1 implementation leaves that default "
    "(FIRST_LAST_LAYERS_BF16 False, NUM_LAYERS_AT_START/END_IN_BF16 0)",
    "NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py at core_v0.14.0 "
    "(first_last_layers_bf16: bool = False); NVIDIA/NeMo "
    "nemo/collections/llm/recipes/precision/mixed_precision.py at v2.5.0rc0 (no NVFP4 recipe); "
    "mlcommons/training_results_v5.1 NVIDIA/benchmarks/{llama31_8b,llama31_405b}/"
    "implementations/*/conf/custom.yaml"};

const SoftwareFact kSdpaFlash{
    "attention through torch scaled_dot_product_attention, which runs the FlashAttention-2 "
    "backend: PyTorch made its cuDNN backend opt-in after the 2.5 release (pytorch#138522) until a "
    "cuDNN newer than 9.15 ships with it",
    "pytorch/torchtitan torchtitan/models/llama/model.py at 9dec370 "
    "(F.scaled_dot_product_attention); pytorch/pytorch#138522, #139298; "
    "aten/src/ATen/native/transformers/cuda/sdp_utils.cpp check_prefer_cudnn_attention"};

const SoftwareFact kUpcastLoss{
    "the loss upcasts the whole logits tensor to fp32 before cross_entropy",
    "pytorch/torchtitan train.py at 9dec370 (loss_fn: cross_entropy(pred.flatten(0, 1).float(), "
    "...)); Hugging Face LlamaForCausalLM (logits.float())"};

const SoftwareFact kTorchaoFloat8{
    "FP8 through torchao Float8Linear with dynamic (per-tensor current) scaling of inputs, weights "
    "and output gradients by default",
    "pytorch/torchtitan torchtitan/float8.py, config_manager.py float8.scaling_type_* (default "
    "dynamic) at 9dec370"};

const SoftwareFact kEagerOps{
    "eager PyTorch elementwise ops: RMSNorm and rotary embeddings as separate fp32 kernels, "
    "SwiGLU as silu and a product, grouped-query keys and values repeated to every head and the "
    "attention output copied back to token-major order (models/eager_ops.hpp)",
    "pytorch/torchtitan torchtitan/models/norms.py (RMSNorm), models/llama/model.py "
    "(apply_rotary_emb, repeat_kv, Attention, FeedForward) at 9dec370; Hugging Face "
    "transformers models/llama/modeling_llama.py (LlamaRMSNorm, apply_rotary_pos_emb, repeat_kv)"};

/// Transformer Engine with TP overlap, the release's gradient buckets, Megatron-Core's alltoall
/// dispatcher and GroupedLinear experts (the NeMo releases' stack), then `more`.
std::vector<SoftwareFact> nemo_stack_facts(const SoftwareFact& buckets,
                                           std::vector<SoftwareFact> more) {
  std::vector<SoftwareFact> facts = {kTe,       kTpOverlap,     buckets,
                                     kAlltoall, kGroupedLinear, kMcoreNvfp4Layers};
  facts.insert(facts.end(), more.begin(), more.end());
  return facts;
}

std::vector<SoftwareStack> make_presets() {
  std::vector<SoftwareStack> out;
  {
    SoftwareStack s;
    s.id = "megatron-lm-2021";
    s.framework = "megatron-lm";
    s.released = "2021-04";
    s.attention = AttentionKernel::unfused;
    s.tp_comm_overlap = false;
    s.grad_reduce_fp32 = true;
    s.facts = {
        {"attention as two batched GEMMs around a fused scale-mask-softmax kernel (the score "
         "matrix goes through HBM); FlashAttention was published in 2022",
         "Narayanan et al. SC'21 §4 (fused kernels); Dao et al. 2022, arXiv:2205.14135"},
        {"tensor-parallel all-reduces run in the critical path (no overlap)",
         "Narayanan et al. SC'21 §3.3; Shoeybi et al. 2019 (Megatron-LM), Fig. 3"},
        kMegatronFp32Grads,
    };
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "megatron-lm-2022";
    s.released = "2022-05";
    s.facts.push_back(
        {"sequence parallelism and selective recomputation, still without TP "
         "overlap",
         "Korthikanti et al. 2022, arXiv:2205.05198 §4-5"});
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "megatron-core-r0.8.0";
    s.framework = "megatron-core";
    s.version = "r0.8.0";
    s.released = "2024-07";
    s.grad_reduce_fp32 = true;
    s.nvfp4_bf16_first = 0;
    s.nvfp4_bf16_last = 0;
    set_mcore_buckets(s);
    s.facts = {kTe,
               kTpOverlap,
               kMcoreBuckets,
               kMegatronFp32Grads,
               kAlltoall,
               kGroupedLinear,
               kMcoreNvfp4Layers,
               {"no CUDA graphs in the training loop", "Megatron-LM r0.8.0 README, H100 table"}};
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "nemo-24.07";
    s.framework = "nemo";
    s.version = "24.07";
    s.grad_reduce_fp32 = false;
    set_mcore_buckets(s);
    s.facts = nemo_stack_facts(
        kMcoreBuckets,
        {{"FP8 with delayed scaling (amax history) through Transformer Engine",
          "NeMo 24.07 performance summary (FP8); TE DelayedScaling recipe default"},
         {"gradients taken as reduced in bf16, which is not established: NeMo's "
          "grad_reduce_in_fp32 follows optim.grad_sync_dtype (default fp32), the launcher's "
          "Llama 3 70B recipe does not set it, but with fp32 gradients two of the "
          "published NeMo 24.07 runs (Llama 3 8B on 8 GPUs, Llama 2 70B SFT on 16) would "
          "not fit in this memory model, and which configuration the performance runs used "
          "is not published",
          "NVIDIA/NeMo nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py "
          "setup_mcore_distributed_parallel; NVIDIA/NeMo-Framework-Launcher "
          "launcher_scripts/conf/training/llama/llama3_70b.yaml"},
         {"a LoRA run's reported TFLOP/s count two thirds of the frozen model's FLOPs plus the "
          "attention over each packed 256-token document, the form Megatron-Bridge later "
          "published: the summary's Llama 2 LoRA rows give 26.7, 51.7 and 275.5 GFLOP per token "
          "(TFLOP/s over tokens/s; 7B, 13B, 70B), that form 26.8, 52.0 and 276.9",
          "NeMo 24.07 performance summary (LoRA rows); Megatron-Bridge flop_utils.py "
          "transformer_flops() (#2571)"}});
    s.bridge_lora_flops = true;
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "nemo-25.04";
    // Which LoRA count NeMo 2's summaries use is not established: the GEMM count.
    s.bridge_lora_flops = false;
    s.version = "25.04";
    s.released = "2025-04";
    s.loss = LossKernel::fused;
    s.fp8_params = true;
    set_nemo2_buckets(s);
    s.facts = nemo_stack_facts(
        kNemo2Buckets,
        {{"FP8 runs keep their weights in FP8 only (fp8_param_gather: the model is built under "
          "Transformer Engine's fp8_model_init), the frozen base of a LoRA run too; MXFP8 "
          "recipes from v2.4.0 (the 25.07 container) on",
          "NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py at v2.3.0 "
          "(bf16_with_fp8_mixed, bf16_with_fp8_current_scaling_mixed: fp8_param_gather True; "
          "bf16_with_mxfp8_mixed False) and v2.4.0 (all True); MLPerf Training v5.1 NVIDIA "
          "llama2_70b_lora (NeMo 25.09) custom_llama.py configure_model under fp8_model_init"},
         {"NeMo 2 performance scripts: the loss through Transformer Engine's fused "
          "cross-entropy kernel (cross_entropy_fusion_impl te), FP8 with delayed scaling "
          "unless the run names current scaling or MXFP8, gradients reduced in bf16 "
          "(grad_reduce_in_fp32 off)",
          "NVIDIA/NeMo scripts/performance/utils.py set_primary_perf_configs and "
          "argument_parser.py (--fp8_recipe default ds) at v2.3.0 (the 25.04 container); "
          "nemo/collections/llm/recipes/llama3_8b.py pretrain_recipe_performance"},
         {"FLOPs counted as NeMo 2's flops_formulas do: every GEMM with the full score "
          "matrix of attention (Narayanan et al.'s convention)",
          "NVIDIA/NeMo nemo/utils/flops_formulas.py at v2.3.0 (gpt3, llama3: 12 s/h)"}});
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "megatron-bridge-25.09";
    s.framework = "megatron-bridge";
    s.version = "25.09";
    s.released = "2025-09";
    s.fp8_current_scaling = true;
    s.fp8_params = true;
    s.cuda_graphs = CudaGraphs::attention;
    s.flop_count = FlopCount::megatron_bridge;
    s.loss = LossKernel::fused;
    s.facts = {kTe,
               kTpOverlap,
               kNemo2Buckets,
               {"gradients accumulated and reduced in bf16: the performance recipes switch "
                "grad_reduce_in_fp32 off (mixed_precision and ddp)",
                "Megatron-Bridge scripts/performance configs at v0.1.0rc4 (mixed_precision "
                "grad_reduce_in_fp32: false) and v0.2.0 (cfg.ddp.grad_reduce_in_fp32 = False)"},
               {"FP8 with per-tensor current scaling (FP8-CS) or MXFP8 blocks on Blackwell; the "
                "performance recipes keep no transformer layer in BF16 (FP8-CS: "
                "first_last_layers_bf16 switched off; NVFP4: bf16_with_nvfp4_mixed sets none)",
                "Megatron-Bridge performance summary (precision column FP8-CS / FP8-MX); "
                "scripts/performance get_precision_config; training/mixed_precision.py"},
               {"the loss is Transformer Engine's fused cross-entropy (Triton): the forward reads "
                "the bf16 logits once (online softmax), the backward reads them and writes the "
                "gradient in place",
                "Megatron-Bridge src/megatron/bridge/models/gpt_provider.py "
                "(cross_entropy_loss_fusion = True) and scripts/performance "
                "(cross_entropy_fusion_impl te) at v0.1.0rc3, v0.2.0rc4 and v0.2.0; "
                "TransformerEngine transformer_engine/pytorch/triton/cross_entropy.py"},
               {"Transformer Engine CUDA graphs over the attention part of each layer "
                "(cuda_graph_impl transformer_engine, scope attn)",
                "Megatron-Bridge scripts/performance recipes 25.09"},
               {"reported TFLOP/s per GPU count Megatron-Bridge's closed form: causal attention "
                "(seq/2), kv_channels x heads projections, routed top-k and shared experts, MLA, "
                "the padded vocabulary, a 3/2 gate only for SiLU, no router",
                "Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py "
                "transformer_flops() at v0.2.0 (7af9601c)"},
               kAlltoall,
               kGroupedLinear,
               {"the DeepSeek-V3 recipes switch MoE dispatch to the flex dispatcher with DeepEP; "
                "a framework-level preset keeps the default alltoall dispatcher",
                "Megatron-Bridge scripts/performance recipes (moe_token_dispatcher_type, "
                "moe_flex_dispatcher_backend); Megatron-Core MoE docs"},
               {"FP8 and MXFP8 runs keep their parameters in FP8 only (fp8_param_gather: the "
                "mixed-precision presets for delayed, current and MX scaling set it; NVFP4 and "
                "blockwise FP8 do not)",
                "Megatron-Bridge src/megatron/bridge/training/mixed_precision.py at v0.1.0rc4, "
                "v0.2.0 and v0.5.0 (bf16_with_fp8_delayed_scaling_mixed, "
                "bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed: fp8_param_gather = "
                "True; bf16_with_nvfp4_mixed, bf16_with_fp8_subchannel_scaling_mixed: False)"}};
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "megatron-bridge-25.11";
    s.version = "25.11";
    s.released = "2025-11";
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "megatron-bridge-26.02.01";
    s.version = "26.02.01";
    s.released = "2026-03";
    s.bridge_lora_flops = true;
    s.facts.push_back(
        {"a LoRA run's reported TFLOP/s count two thirds of the frozen model's FLOPs (no weight "
         "gradient) plus the attention over each packed document",
         "Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py transformer_flops() "
         "(#2571, 2026-03-03; v0.3.1 to v0.5.0)"});
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "megatron-bridge-26.06";
    s.version = "26.06";
    s.released = "2026-06";
    s.bridge_flop_form = BridgeFlopForm::v0_5;
    s.facts.push_back(
        {"reported TFLOP/s count the gate of every gated MLP (GPT-OSS's quick-GELU too) and a "
         "sliding-window layer's mean causal context instead of half the sequence",
         "Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py "
         "num_floating_point_operations() at v0.5.0 (fcbb6031, 2026-06-16; #3029 and #3947)"});
    out.push_back(s);
  }
  // 26.08 follows 26.06, not 26.06.01's regressed kernel.
  const size_t bridge_2606 = out.size() - 1;
  {
    SoftwareStack s = out.back();
    s.id = "megatron-bridge-26.06.01";
    s.version = "26.06.01";
    s.dglu_dbias_factor = 1362.768 / 139.392;
    s.facts.push_back(
        {"the fused MoE MLP's dGLU kernel with a bias gradient (GPT-OSS) runs 9.78x the kernel "
         "without it (cuDNN front end 1.24-1.25; 1.12x once fixed)",
         "Megatron-Bridge docs/performance-summary-archive.md, 26.06.01 (GPT-OSS 120B's "
         "regression is NVIDIA/cudnn-frontend#256); NVIDIA/cudnn-frontend#322 (SM100 benchmark "
         "at the issue's shape: 1362.768 us against 139.392 without the bias gradient)"});
    out.push_back(s);
  }
  {
    SoftwareStack s = out[bridge_2606];
    s.id = "megatron-bridge-26.08";
    s.version = "26.08";
    s.released = "2026-08";
    s.facts.push_back(
        {"the fused MoE MLP's dGLU kernel with a bias gradient back to 1.12x the kernel without it",
         "Megatron-Bridge docs/performance-summary-archive.md, 26.06.01 (the regression \"will be "
         "resolved with the next container release\"); NVIDIA/cudnn-frontend#322 (merged "
         "2026-06-23)"});
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "llm-foundry";
    s.framework = "llm-foundry";
    s.released = "2023-05";
    s.attention = AttentionKernel::flash_triton;
    s.tp_comm_overlap = false;
    s.fsdp = FsdpImpl::pytorch_fsdp1;
    s.loss = LossKernel::fused;
    s.facts = {{"Composer with PyTorch FSDP (FULL_SHARD), one FSDP unit per transformer block, "
                "parameters prefetched one unit ahead",
                "mosaicml/llm-foundry scripts/train/benchmarking/README.md; Composer FSDP docs"},
               {"the MPT benchmarks run attn_impl triton (flash_attn.flash_attn_triton, the Triton "
                "FlashAttention of flash-attn 1.x; ALiBi needs it) with low-precision LayerNorm, "
                "no tensor parallelism",
                "mosaicml/llm-foundry scripts/train/benchmarking/submit_benchmarks.py "
                "(--attn_impl default triton, low_precision_layernorm True)"},
               {"eager PyTorch, no CUDA graphs", "mosaicml/llm-foundry train configs"},
               {"the loss is flash-attn's fused cross-entropy kernel (xentropy) on the bf16 logits",
                "mosaicml/llm-foundry llmfoundry/models/mpt/modeling_mpt.py, ComposerMPTCausalLM "
                "(loss_fn default 'fused_crossentropy': flash_attn.losses.cross_entropy)"}};
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "nemo-automodel";
    s.framework = "nemo-automodel";
    s.released = "2025-10";
    s.attention = AttentionKernel::cudnn;
    s.tp_comm_overlap = false;
    s.fsdp = FsdpImpl::pytorch_fsdp2;
    s.recompute = Recompute::full;
    s.moe_dispatcher = MoeDispatcher::deepep;
    s.grouped_gemm = GroupedGemmKernel::fused;
    s.facts = {
        {"PyTorch-native training: FSDP2 (fully_shard) data parallelism, DTensor tensor "
         "parallelism without communication overlap, eager PyTorch (no CUDA graphs)",
         "NVIDIA-NeMo/Automodel docs/performance-summary.md; examples/benchmark/configs "
         "(distributed: FSDP2Manager)"},
        {"FSDP2 copies every gathered parameter out of the all-gather buffer "
         "(split_with_sizes_copy) and every gradient into the reduce-scatter buffer (chunk_cat), "
         "on the compute stream: 2 x 2 bytes of HBM traffic per gathered parameter per gather and "
         "per reduced gradient",
         "pytorch/pytorch torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py "
         "(foreach_all_gather_copy_out, foreach_reduce, foreach_reduce_scatter_copy_in) at "
         "010ae4a8"},
        {"Transformer Engine kernels for RMSNorm, Linear and DotProductAttention (cuDNN fused "
         "attention); the GPT-OSS configurations use PyTorch FlexAttention instead",
         "NVIDIA-NeMo/Automodel docs/performance-summary.md (Kernel Optimizations, glossary)"},
        {"activation checkpointing of every transformer block in the benchmark configurations",
         "NVIDIA-NeMo/Automodel examples/benchmark/configs/*_te_deepep.yaml "
         "(parallelizer.activation_checkpointing: true)"},
        {"MoE: DeepEP dispatch and combine (dispatcher_num_sms 20), experts as one grouped "
         "GEMM (grouped_gemm.ops.gmm or torch._grouped_mm)",
         "NVIDIA-NeMo/Automodel nemo_automodel/components/moe (GroupedExpertsDeepEP); "
         "examples/benchmark/configs (backend.enable_deepep)"}};
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "torchtitan";
    s.framework = "torchtitan";
    s.released = "2024-12";
    s.attention = AttentionKernel::flash2;
    s.tp_comm_overlap = false;
    s.fsdp = FsdpImpl::pytorch_fsdp2;
    s.grad_reduce_fp32 = true;
    s.fp8_current_scaling = true;
    s.eager_elementwise = true;
    s.facts = {
        {"PyTorch-native training: FSDP2 (fully_shard) per transformer block, DTensor tensor "
         "parallelism; asynchronous TP is opt-in (experimental.enable_async_tensor_parallel, off "
         "by default), eager PyTorch unless training.compile, no CUDA graphs",
         "pytorch/torchtitan torchtitan/config_manager.py and train_configs/llama3_8b.toml at "
         "9dec370 (the commit of benchmarks/llama3_h100_202412_torchtitan.md)"},
        kSdpaFlash,
        {"FSDP2 mixed precision: parameters gathered in bf16, gradients reduce-scattered in fp32 "
         "(training.mixed_precision_reduce default float32)",
         "pytorch/torchtitan torchtitan/config_manager.py at 9dec370"},
        kUpcastLoss,
        kTorchaoFloat8,
        {"selective activation checkpointing by default (the 8B configuration's op-level policy; "
         "the 70B and 405B configurations checkpoint fully)",
         "pytorch/torchtitan train_configs/llama3_8b.toml, llama3_70b.toml at 9dec370"},
        kEagerOps};
    out.push_back(s);
  }
  {
    // The stack of a run that names no framework but shards with FSDP: PyTorch's own API, so
    // PyTorch-native code (torchtitan's, Hugging Face's) in its defaults, not Megatron's kernels.
    SoftwareStack s = out.back();
    s.id = "pytorch-fsdp";
    s.framework = "unknown";
    s.released = "";
    s.fsdp = FsdpImpl::pytorch_fsdp1;
    s.grad_reduce_fp32 = false;
    s.documented = false;
    s.facts = {
        {"a run that names no framework but shards with FSDP is assumed PyTorch-native: PyTorch "
         "FSDP (FULL_SHARD, one unit per transformer block, gradients reduced in the parameters' "
         "bf16), eager PyTorch without CUDA graphs or tensor-parallel overlap",
         "fabricsim default (docs/models.md, software stacks); PyTorch FSDP docs "
         "(MixedPrecision reduce_dtype defaults to param_dtype)"},
        kSdpaFlash,
        kUpcastLoss,
        kTorchaoFloat8,
        kEagerOps};
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "metaseq";
    s.framework = "metaseq";
    s.released = "2022-05";
    s.attention = AttentionKernel::unfused;
    s.tp_comm_overlap = false;
    s.fsdp = FsdpImpl::pytorch_fsdp1;
    s.facts = {
        {"Fully Sharded Data Parallel (FairScale, the origin of PyTorch FSDP) with Megatron-LM "
         "tensor parallelism",
         "Zhang et al. 2022, OPT, arXiv:2205.01068, section 2.3 (training setup)"},
        {"attention as batched GEMMs around a softmax kernel: OPT-175B trained in 2021-22, "
         "before FlashAttention was published",
         "Zhang et al. 2022, arXiv:2205.01068; Dao et al. 2022, arXiv:2205.14135"},
        {"tensor-parallel communication in the critical path (Megatron-LM of 2021)",
         "Shoeybi et al. 2019, Megatron-LM, Fig. 3; Narayanan et al. SC'21 section 3.3"}};
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "megatron-deepspeed";
    s.framework = "megatron-deepspeed";
    s.released = "2022-07";
    s.attention = AttentionKernel::unfused;
    s.tp_comm_overlap = false;
    s.facts = {
        {"a fork of Megatron-LM (2021-22) with DeepSpeed's ZeRO stage 1 optimizer sharding and "
         "pipeline engine: 3D parallelism",
         "BigScience Workshop 2022, BLOOM, arXiv:2211.05100, section 3.4 (Megatron-DeepSpeed)"},
        {"Megatron-LM's fused scale-mask-softmax around batched attention GEMMs (no "
         "FlashAttention in the BLOOM training code)",
         "BLOOM, arXiv:2211.05100, section 3.4 (fused CUDA kernels); "
         "bigscience-workshop/Megatron-DeepSpeed"},
        {"tensor-parallel communication in the critical path",
         "Megatron-LM 2021-22 (Narayanan et al. SC'21 section 3.3)"}};
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "deepspeed-2020";
    s.framework = "deepspeed";
    s.released = "2020-02";
    s.attention = AttentionKernel::unfused;
    s.tp_comm_overlap = false;
    s.facts = {
        {"DeepSpeed shards optimizer state, gradients and parameters (ZeRO 1-3) but does not "
         "supply the model's attention: runs before FlashAttention (2022-05) used the "
         "model library's batched-GEMM attention",
         "Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054; Dao et al. 2022, "
         "arXiv:2205.14135"},
        {"no tensor-parallel communication overlap (DeepSpeed's tensor parallelism is "
         "Megatron-LM's)",
         "DeepSpeed docs, 'Megatron-LM GPT2 tutorial'"}};
    out.push_back(s);
  }
  {
    SoftwareStack s = out.back();
    s.id = "deepspeed-2023";
    s.released = "2023-08";
    s.attention = AttentionKernel::flash2;
    s.facts = {s.facts.back(),
               {"models trained with DeepSpeed from mid-2023 run FlashAttention-2 through their "
                "model library (flash-attn 2, Hugging Face attn_implementation, "
                "DeepSpeed-Ulysses)",
                "Dao 2023, FlashAttention-2, arXiv:2307.08691; Jacobs et al. 2023, "
                "DeepSpeed-Ulysses, arXiv:2309.14509"}};
    out.push_back(s);
  }
  {
    SoftwareStack s;
    s.id = "megascale";
    s.framework = "megascale";
    s.released = "2024-02";
    s.attention = AttentionKernel::flash2;
    set_mcore_buckets(s);
    s.facts = {
        {"built on Megatron-LM; FlashAttention-2 and fused LayerNorm/GeLU kernels",
         "Jiang et al. 2024, MegaScale, arXiv:2402.15627, section 3.3 (efficient operators)"},
        {"tensor/sequence-parallel communication fused with and overlapped by the adjacent "
         "GEMMs; data-parallel reduction overlapped with backward",
         "MegaScale, arXiv:2402.15627, section 3.2 (communication overlapping)"}};
    out.push_back(s);
  }
  {
    SoftwareStack s = *std::find_if(out.begin(), out.end(), [](const SoftwareStack& x) {
      return x.id == "megatron-core-r0.8.0";
    });
    s.id = "hai-llm";
    s.framework = "hai-llm";
    s.version = "";
    s.released = "2024-12";
    s.moe_dispatcher = MoeDispatcher::deepep;
    s.grouped_gemm = GroupedGemmKernel::fused;
    s.moe_a2a_overlap = true;
    s.moe_a2a_overlap_scope = A2aOverlapScope::chunk;
    s.attention = AttentionKernel::flash3;
    s.facts = {{"expert GEMMs as one grouped FP8 kernel over the experts (contiguous layout for "
                "training), released as DeepGEMM",
                "deepseek-ai/DeepGEMM README (grouped GEMMs, contiguous layout, used in "
                "DeepSeek-V3 training and inference)"},
               {"expert-parallel dispatch and combine through DeepSeek's own all-to-all kernels "
                "(IB to one GPU per node, NVLink forwarding, node-limited routing), released as "
                "DeepEP",
                "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.2.2; "
                "deepseek-ai/DeepEP README"},
               {"DualPipe: each forward chunk runs paired with a backward chunk, so the "
                "expert-parallel all-to-alls of one run beside the other's compute on 20 of the "
                "132 SMs, fully overlapped; modelled pass by pass (a pass's all-to-alls back to "
                "back beside its whole compute), with 1F1B's bubble and one copy of the "
                "parameters where DualPipe has a smaller bubble and two",
                "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.2.1; "
                "deepseek-ai/DualPipe README; deepseek-ai/profile-data train.json (a DualPipe "
                "pair of 4-layer chunks on H800, EP64: the compute stream idles 8% of the "
                "129 ms window while DeepEP's kernels run 89% of it)"},
               {"attention (MLA, query/key heads 192 wide, values 128) through FlashAttention-3's "
                "Hopper kernels: the profile's forward is flash::compute_attn_ws, its backward "
                "flash::FlashAttnBwd with CollectiveMainloopBwd, FlashAttention-3's warp-"
                "specialised kernels",
                "deepseek-ai/profile-data train.json (kernel names)"},
               {"the other kernels (norms, rotary, casts) are not stated: those of the default "
                "stack",
                "fabricsim default (docs/models.md, software stacks)"}};
    out.push_back(s);
  }
  {
    SoftwareStack s = *std::find_if(out.begin(), out.end(), [](const SoftwareStack& x) {
      return x.id == "megatron-core-r0.8.0";
    });
    s.id = "default";
    s.framework = "unknown";
    s.version = "";
    s.documented = false;
    s.facts.insert(s.facts.begin(),
                   {"an unknown framework is assumed to run the 2024 Megatron-Core stack",
                    "fabricsim default (docs/models.md, software stacks)"});
    out.push_back(s);
  }
  return out;
}

}  // namespace

const std::vector<SoftwareStack>& software_presets() {
  static const std::vector<SoftwareStack> presets = make_presets();
  return presets;
}

const SoftwareStack* find_software(std::string_view id) {
  for (const SoftwareStack& s : software_presets()) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

const SoftwareStack& default_software() {
  return *find_software("default");
}

const SoftwareStack& software_for(std::string_view framework, std::string_view version,
                                  std::string_view released) {
  std::vector<const SoftwareStack*> candidates;
  for (const SoftwareStack& s : software_presets()) {
    if (s.documented && s.framework == framework) candidates.push_back(&s);
  }
  if (candidates.empty()) return default_software();
  for (const SoftwareStack* s : candidates) {
    if (!version.empty() && s->version == version) return *s;
  }
  // Presets are listed oldest first; "YYYY-MM" strings compare in time order.
  const SoftwareStack* best = nullptr;
  if (!released.empty()) {
    for (const SoftwareStack* s : candidates) {
      if (s->released <= released) best = s;
    }
    return best != nullptr ? *best : *candidates.front();
  }
  return *candidates.back();
}

std::string software_names() {
  std::string out;
  for (const SoftwareStack& s : software_presets()) {
    if (!out.empty()) out += ", ";
    out += s.id;
  }
  return out;
}

}  // namespace fabricsim::models
