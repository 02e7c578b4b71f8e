#include "models/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "models/compute_model.hpp"
#include "models/eager_ops.hpp"
#include "models/grouped_gemm.hpp"
#include "models/precision_recipe.hpp"

namespace fabricsim::models {
namespace {

using topologies::Precision;

constexpr double kActivationBytes = 2.0;        // bf16 activations and activation gradients
constexpr double kWeightTensorsPerLayer = 4.0;  // QKV, projection, FC1, FC2 (see weight casts)
constexpr double kAmaxBytes = 8.0;  // the amaxes a quantizer all-reduces (FP32; NVFP4 has two)

/// Per-rank shapes of one layer under the plan.
struct Shapes {
  double tokens;       ///< T: tokens of a micro-batch on one context-parallel rank
  double norm_tokens;  ///< tokens in the sequence-parallel regions (T / tp with SP)
  double moe_tokens;   ///< tokens entering an MoE block on one rank
  double hidden;
  double q_heads;   ///< local query heads
  double kv_heads;  ///< local key/value heads
  double head_dim;  ///< q/k width (MLA: nope + rope)
  double v_dim;
  double ffn;             ///< local dense MLP width
  double attention_span;  ///< keys each query attends to before the causal halving
  int tp, cp, ep;
  bool sp;
  bool gated;
};

/// Builds pass programs: durations from the compute model, floor at the kernel launch time.
class ProgramBuilder {
 public:
  /// `expected_ops`: room to reserve (a planner lowers thousands of workloads; growing each
  /// program's ops by doubling cost a tenth of a plan search).
  ProgramBuilder(const topologies::GpuSpec& gpu, const ComputeProfile& profile,
                 const SoftwareStack& software, size_t expected_ops = 0)
      : gpu_(gpu), profile_(profile), software_(software) {
    program_.ops.reserve(expected_ops);
  }

  /// A GEMM; inside split() it runs as `split_` GEMMs of M / split_ rows each.
  void gemm(const char* name, Precision p, double m, double n, double k, double batch = 1) {
    if (m <= 0 || n <= 0 || k <= 0) return;
    swizzle_scales(p, (m + n) * k * batch, 2 * split_);
    const double s = split_ * gemm_seconds(gpu_, profile_, p, m / split_, n, k, batch,
                                           sustained_clock(gpu_, profile_, p));
    compute(name, ComputeKind::gemm, s, 2.0 * m * n * k * batch);
    program_.ops.back().gemm = {m / split_, n, k, batch, split_, p};
  }
  /// The `groups` experts' GEMMs of one shape, as the software runs them (models/grouped_gemm);
  /// the host launches each kernel of the multi-stream path.
  /// `epilogue`: the kernel's time over the plain GEMM's, for an epilogue that also reduces.
  void grouped_gemm(const char* name, Precision p, double m, double n, double k, int groups,
                    double epilogue = 1.0) {
    if (m <= 0 || n <= 0 || k <= 0 || groups <= 0) return;
    swizzle_scales(p, (m + n) * k * groups, 2);
    const GroupedGemmCost c = models::grouped_gemm(
        gpu_, profile_, p, m, n, k, groups, software_.grouped_gemm, software_.grouped_gemm_streams);
    kernels_ = c.kernels;
    compute(name, ComputeKind::gemm, c.seconds * epilogue, 2.0 * m * n * k * groups);
    program_.ops.back().gemm = {m, n, k, static_cast<double>(groups), 1, p};
  }
  /// Runs the GEMMs `body` adds as `chunks` row chunks (communication-overlap decomposition).
  template <class Body>
  void split(int chunks, Body body) {
    const int saved = split_;
    split_ = std::max(1, chunks);
    body();
    split_ = saved;
  }
  /// One flash-attention kernel (models::flash_attention_seconds), at the step's sustained clock.
  void attention(const char* name, const FlashAttention& a) {
    const double clock = sustained_clock(gpu_, profile_, Precision::bf16);
    compute(name, ComputeKind::attention, flash_attention_seconds(gpu_, profile_, a) / clock,
            a.flops);
  }
  /// A memory-bound kernel moving `bytes`, at `share` of an elementwise kernel's rate.
  void memory(const char* name, double bytes, double share = 1.0) {
    if (bytes <= 0) return;
    compute(name, ComputeKind::memory, memory_seconds(gpu_, profile_, bytes) / share, 0);
  }
  /// A LayerNorm/RMSNorm over `elements` bf16 values: 4 bytes each forward (read, write), 8
  /// backward, at the norm kernels' measured share of the elementwise rate; eager PyTorch's
  /// RMSNorm (`rms`) runs as its elementwise ops in fp32.
  void norm(const char* name, double elements, bool backward, bool rms) {
    if (software_.eager_elementwise && rms) {
      eager(name, kEagerRmsNorm, elements, backward);
      return;
    }
    memory(name, (backward ? 8.0 : 4.0) * elements,
           backward ? kNormBackwardShare : kNormForwardShare);
  }
  /// A memory-bound op as eager PyTorch runs it over `elements`: its kernels, each at the
  /// elementwise rate.
  void eager(const char* name, const EagerOp& op, double elements, bool backward) {
    if (elements <= 0) return;  // no op, so no kernel count left for the next one
    const EagerKernels& k = op.pass(backward);
    kernels(k.kernels);
    memory(name, k.bytes_per_element * elements);
  }
  /// DeepEP or Hybrid-EP dispatch or combine of `moe.tokens` tokens per rank (`bytes`: the
  /// all-to-all size it replaces, for the record).
  void moe_comm(const WorkOp::MoeTokens& moe, double bytes) {
    comm(GroupKind::ep, CollectiveOp::alltoall, bytes);
    program_.ops.back().moe = moe;
  }
  void comm(GroupKind group, CollectiveOp op, double bytes) {
    WorkOp w;
    w.kind = WorkOp::Kind::comm;
    w.name = "comm";
    w.group = group;
    w.op = op;
    w.bytes = sim::Bytes::of(bytes);
    program_.ops.push_back(w);
  }
  /// Starts a collective and carries on; returns the slot that wait() joins.
  int start(GroupKind group, CollectiveOp op, double bytes) {
    WorkOp start;
    start.kind = WorkOp::Kind::comm_start;
    start.name = "comm";
    start.group = group;
    start.op = op;
    start.bytes = sim::Bytes::of(bytes);
    start.slot = next_slot_++;
    program_.ops.push_back(start);
    return start.slot;
  }
  /// start() for a flex dispatcher's dispatch or combine (see moe_comm).
  int start_moe(const WorkOp::MoeTokens& moe, double bytes) {
    const int slot = start(GroupKind::ep, CollectiveOp::alltoall, bytes);
    program_.ops.back().moe = moe;
    return slot;
  }
  /// Puts the collective just started in `slot` on the pass's chained stream: it starts after
  /// the one chained before it and the compute stream waits for none of them; compute ops added
  /// from the first on run slower by `contention` while the chain holds SMs. The pass ends when
  /// the last has finished (take).
  void chain(int slot, double contention) {
    if (chain_ < 0) chain_saved_contention_ = contend(contention);
    program_.ops.back().after = chain_;
    chain_ = slot;
  }
  /// Makes the collective just started in `slot` (after join_carried(): one at a time) the pass's
  /// carried one, waited for by join_carried() or at the pass's end: the compute it runs beside
  /// is slower by `contention` for as long as it is in flight (PassProgram::slot_contention).
  void carry(int slot, double contention) {
    std::vector<double>& c = program_.slot_contention;
    if (c.size() <= static_cast<size_t>(slot)) c.resize(static_cast<size_t>(slot) + 1, 0.0);
    c[static_cast<size_t>(slot)] = contention;
    carried_ = slot;
  }
  /// The compute stream waits for the carried collective, if any.
  void join_carried() {
    if (carried_ < 0) return;
    wait(carried_);
    carried_ = -1;
  }
  /// The compute stream waits for the collective started in `slot`.
  void wait(int slot) {
    WorkOp wait;
    wait.kind = WorkOp::Kind::comm_wait;
    wait.name = "wait";
    wait.slot = slot;
    program_.ops.push_back(wait);
  }
  /// Compute ops added from here run slower by `contention` (a fraction): collectives in flight
  /// hold SMs. Returns the contention it replaces.
  double contend(double contention) {
    const double saved = contended_;
    contended_ = contention;
    return saved;
  }
  /// Starts a collective that overlaps the compute ops `body` adds; they run slower by
  /// `contention` (a fraction) while it holds SMs.
  template <class Body>
  void overlapped(GroupKind group, CollectiveOp op, double bytes, double contention, Body body) {
    const int slot = start(group, op, bytes);
    const double saved = contend(contention);
    body();
    contend(saved);
    wait(slot);
  }
  void marker(WorkOp::Kind kind, int bucket) {
    WorkOp w;
    w.kind = kind;
    w.name = kind == WorkOp::Kind::param_gate ? "param_gate" : "bucket_ready";
    w.slot = bucket;
    program_.ops.push_back(w);
  }
  /// Kernels the host issues for the next compute op (a logical op of several small kernels).
  void kernels(int n) { kernels_ = n; }
  /// Counts a tensor quantized in this pass (delayed scaling updates all their scales at its end).
  void count_quantized() { ++quantized_tensors_; }
  int quantized_tensors() const { return quantized_tensors_; }
  /// Inside a CUDA graph the host replays captured kernels without launching each one.
  void graphed(bool on) { graphed_ = on; }
  /// The host waits for the GPU here (a device-to-host copy): whatever it had issued ahead is
  /// drained, and the next kernel starts only once the host has issued it.
  void host_sync() {
    host_ = graphed_ ? sim::Time::zero() : profile_.kernel_launch;
    queued_ = sim::Time::zero();
  }
  /// GPU time issued in this pass so far.
  sim::Time compute_time() const { return program_.compute; }
  /// `bytes` copied between HBM and host memory (`to_host`, or back) on a copy engine while
  /// `overlapped` of this pass's compute runs beside it: the stream waits only for what the
  /// compute does not hide.
  void host_copy(const char* name, double bytes, bool to_host, sim::Time overlapped) {
    const double gb_per_s =
        to_host ? gpu_.host_link.to_host_gb_per_s : gpu_.host_link.from_host_gb_per_s;
    const sim::Time copy = sim::Time::from_s(bytes / (gb_per_s * 1e9));
    if (bytes <= 0 || copy <= overlapped) return;
    WorkOp w;
    w.kind = WorkOp::Kind::compute;
    w.name = name;
    w.compute = ComputeKind::memory;
    w.duration = copy - overlapped;
    queued_ += w.duration;
    push(w);
  }
  PassProgram take() {
    join_carried();
    if (chain_ >= 0) {
      contend(chain_saved_contention_);
      wait(chain_);
      chain_ = -1;
    }
    host_sync();
    set_runs(program_);
    return std::move(program_);
  }

 private:
  void push(const WorkOp& w) {
    program_.ops.push_back(w);
    program_.compute += w.duration;
  }
  /// Block-scaled GEMMs (MXFP8, NVFP4) read their scale factors in cuBLAS's swizzled layout:
  /// Transformer Engine 2.9 rearranges both operands' scales before every GEMM, one kernel per
  /// operand (swizzle_scaling_factors in extensions/gemm.cpp; a grouped GEMM swizzles each
  /// operand list in one multi-tensor kernel), reading and writing one scale byte per block of
  /// `operand_elements`.
  void swizzle_scales(Precision p, double operand_elements, int kernels) {
    const double block = p == Precision::mxfp8 ? 32.0 : p == Precision::nvfp4 ? 16.0 : 0.0;
    if (block == 0) return;
    const int next = kernels_;
    kernels_ = kernels;
    compute("scale_swizzle", ComputeKind::memory,
            memory_seconds(gpu_, profile_, 2.0 * operand_elements / block), 0);
    kernels_ = next;
  }
  /// Runs of compute ops, from the back: each op's run is itself plus the run after it.
  static void set_runs(PassProgram& p) {
    for (size_t i = p.ops.size(); i-- > 0;) {
      WorkOp& op = p.ops[i];
      if (op.kind != WorkOp::Kind::compute) continue;
      const bool continues = i + 1 < p.ops.size() && p.ops[i + 1].kind == WorkOp::Kind::compute;
      op.run_end = continues ? p.ops[i + 1].run_end : static_cast<uint32_t>(i + 1);
      op.run_duration = op.duration + (continues ? p.ops[i + 1].run_duration : sim::Time::zero());
    }
  }

  void compute(const char* name, ComputeKind kind, double seconds, double flops) {
    WorkOp w;
    w.kind = WorkOp::Kind::compute;
    w.name = name;
    w.compute = kind;
    const double work = seconds / profile_.sustained_efficiency * (1.0 + contended_);
    // The host and the GPU race from the last sync: eager, the host spends kernel_launch on each
    // kernel (a CUDA graph replays them without), issuing an op while the GPU runs the one
    // before, and the GPU idles when it is done before the host has issued what comes next.
    // Long kernels let the host run ahead; a run of short ones spends that lead, then waits on
    // the host (launch-bound: each op then costs its launches).
    // An op of several kernels (kernels()) finishes only after the host has issued the last.
    const int64_t launches = graphed_ ? 0 : kernels_;
    if (launches > 1) host_ += profile_.kernel_launch * (launches - 1);
    const sim::Time idle = host_ > queued_ ? host_ - queued_ : sim::Time::zero();
    if (launches > 0) host_ += profile_.kernel_launch;
    // Each kernel of a logical op drains and ramps up on the stream; the multi-stream grouped
    // GEMM's kernels overlap theirs, priced by its own cost model.
    const int gaps = kind == ComputeKind::gemm ? 1 : std::max(1, kernels_);
    const sim::Time busy = sim::Time::from_s(work + gaps * profile_.kernel_gap.s());
    w.duration = busy + idle;
    w.overhead = w.duration - sim::Time::from_s(work);
    w.flops = flops;
    queued_ += w.duration;
    kernels_ = 1;
    push(w);
    program_.flops += flops;
  }

  const topologies::GpuSpec& gpu_;
  const ComputeProfile& profile_;
  const SoftwareStack& software_;
  double contended_ = 0;
  int chain_ = -1;  ///< the last collective started on the chained stream (chain), -1: none
  double chain_saved_contention_ = 0;
  int carried_ = -1;  ///< the collective carried beside the compute (carry), -1: none
  sim::Time host_;    ///< when the host has issued the ops so far, from the last sync
  sim::Time queued_;  ///< when the GPU finishes them, from the last sync
  int kernels_ = 1;
  bool graphed_ = false;
  int split_ = 1;
  int next_slot_ = 0;
  int quantized_tensors_ = 0;
  PassProgram program_;
};

/// Slowdown of compute while a collective holds `sms` of the GPU's SMs.
double sm_contention(const ComputeProfile& profile, const topologies::GpuSpec& gpu, int sms) {
  return gpu.sm_count > 0 ? profile.comm_sm_contention * sms / gpu.sm_count : 0.0;
}

struct LayerParams {
  double dense = 0;
  double expert = 0;
  double lora = 0;
  double linear = 0;  ///< weights of the layer's linear GEMMs (what a recipe quantizes)
};

/// Parameters of layer `layer` held by one rank.
LayerParams layer_params(const TransformerConfig& m, const Shapes& s, int layer, int lora_rank,
                         bool lora) {
  LayerParams p;
  const double h = m.hidden;
  const double t = s.tp;
  double attention;
  if (m.mla) {
    const MlaConfig& a = *m.mla;
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * m.heads * qk / t
                                       : h * m.heads * qk / t;
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                      a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim) / t;
    attention = q + kv + m.heads * a.v_head_dim * h / t;
  } else {
    const double d = m.head_dim;
    attention = h * (m.heads + 2.0 * m.kv_heads) * d / t + m.heads * d * h / t;
  }
  const double norms = 2 * h;
  const double gated = is_gated(m.mlp) ? 3.0 : 2.0;
  p.dense = attention + norms;
  p.linear = attention;
  if (m.moe && is_moe_layer(m, layer)) {
    const MoeConfig& e = *m.moe;
    p.dense += h * e.experts;  // router
    const double shared = e.shared_experts * gated * h * e.shared_expert_ffn / t;
    p.dense += shared;
    p.expert = static_cast<double>(e.experts) / s.ep * gated * h * e.expert_ffn;
    p.linear += shared + p.expert;
  } else {
    p.dense += gated * h * m.ffn / t;
    p.linear += gated * h * m.ffn / t;
  }
  if (lora) {
    // Rank-r adapters on the attention projections, r x (in + out) each, where the runs modelled
    // put them: NVIDIA's MLPerf LoRA on linear_qkv and linear_proj (training_results_v5.0,
    // llama2_70b_lora/implementations/*/train.py, target_modules), Megatron-Bridge's performance
    // recipes on linear_qkv alone (v0.4.0 scripts/performance/configs/llama/
    // llama3_llm_finetune.py). The MLP stays frozen without adapters.
    const double q = s.q_heads * s.head_dim;
    p.lora = lora_rank * ((h + q * 3) + (q + h));
  }
  return p;
}

struct LayerEmitter {
  const TransformerConfig& model;
  const ParallelPlan& plan;
  const TrainingConfig& training;
  const Shapes& s;
  const topologies::GpuSpec& gpu;
  const ComputeProfile& profile;
  double slowdown;
  bool lora;
  const SoftwareStack& software;
  const PrecisionRecipe& recipe;
  /// This layer's linear GEMMs: quantized by the recipe, at its precision (at()).
  bool quantized = false;
  Precision linear = Precision::bf16;
  /// This layer keeps only its input and reruns its forward in backward (at()).
  bool recompute_full = false;

  /// The emitter for layer `layer`, the `index`-th of its model chunk: a low-precision run keeps
  /// the recipe's BF16 layers in BF16; the chunk's first plan.recompute_layers recompute fully.
  LayerEmitter at(int layer, int index) const {
    LayerEmitter e = *this;
    e.quantized = recipe.quantized(layer);
    e.linear = recipe.linear(layer);
    e.recompute_full = recomputes_fully(plan, index);
    return e;
  }

  // Kernels the host issues per MoE routing step in Megatron-Core without fused permutation
  // (moe/router.py: gating GEMM, softmax/sigmoid, top-k, probability scatter, auxiliary-loss
  // reductions; moe/token_dispatcher.py: token counts, argsort-based permute, chunk sorting,
  // unpermute with probability weighting): about 15 each forward, autograd about 1.5x backward.
  // Counted from the source code, not measured.
  static constexpr int kRouterKernels = 15;
  static constexpr int kPermuteKernels = 15;
  static constexpr int kUnpermuteKernels = 12;
  static int backward_kernels(int forward) { return forward * 3 / 2; }

  Precision lin() const { return linear; }

  /// Quantizes a GEMM input of `elements` with the recipe's kernels (nothing in a BF16 layer):
  /// activations in forward, output gradients in backward, each with the transposed copy its
  /// weight gradient reads unless the base is frozen (LoRA). `producer`: the input comes from a
  /// norm fused into Transformer Engine's LayerNormLinear, which can quantize in its epilogue.
  void quantize(ProgramBuilder& b, TensorRole role, Producer producer, double elements,
                int splits = 1) const {
    if (!quantized) return;
    for (const QuantKernel& k : recipe.quantize(role, producer, !lora)) {
      b.kernels(splits);
      b.memory(k.name, k.bytes_per_element * elements + splits * k.fixed_bytes);
    }
    b.count_quantized();
  }
  /// Quantizes the input of Transformer Engine's GroupedLinear, split by expert: split_quantize
  /// (extensions/cast.cpp, TE 2.9) runs each split's quantizer on its own, so every kernel of
  /// the recipe is launched once per local expert; only delayed scaling has a fused multi-tensor
  /// cast+transpose (nvte_multi_cast_transpose), one kernel for all splits. A fused grouped GEMM
  /// kernel takes the routed tokens as one tensor.
  void quantize_experts(ProgramBuilder& b, TensorRole role, double elements, int experts) const {
    const bool per_split = software.grouped_gemm == GroupedGemmKernel::multi_stream &&
                           recipe.scaling != ScalingRecipe::delayed;
    quantize(b, role, Producer::standalone, elements, per_split ? experts : 1);
  }
  /// A data-gradient GEMM of a weight held in FP8 whose transpose is not cached
  /// (SoftwareStack::parameter_transpose_cache off) first transposes the weight's `elements`:
  /// one FP8 transpose kernel per GEMM, a byte read and a byte written per element, every
  /// micro-batch.
  void transpose_weight(ProgramBuilder& b, double elements) const {
    if (!quantized || !software.fp8_params || software.parameter_transpose_cache ||
        !recipe.keeps_transpose())
      return;
    b.memory("fp8_weight_transpose", 2.0 * recipe.copy_size(TensorRole::weight) * elements);
  }
  void quantize_activation(ProgramBuilder& b, Producer producer, double elements) const {
    quantize(b, TensorRole::activation, producer, elements);
  }
  void quantize_gradient(ProgramBuilder& b, double elements) const {
    quantize(b, TensorRole::gradient, Producer::standalone, elements);
  }

  /// A GEMM input that a sequence-parallel TP all-gather collects.
  struct GatheredInput {
    TensorRole role;
    Producer producer;
  };
  bool gathers() const { return s.tp > 1 && s.sp; }
  /// Transformer Engine quantizes the local sequence shard and all-gathers the quantized copy
  /// (gather_along_first_dim routes FP8, blockwise, MXFP8 and NVFP4 tensors to low-precision
  /// all-gathers). Per-tensor scales transpose exactly: the columnwise copy is a transpose of the
  /// gathered FP8 tensor. Block scales do not: both copies are quantized on the shard, and the
  /// backward gathers the columnwise one.
  void quantize_gathered(ProgramBuilder& b, GatheredInput in, double elements) const {
    if (!quantized) return;
    if (!gathers()) {
      quantize(b, in.role, in.producer, elements);
      return;
    }
    const double shard = elements / s.tp;
    const bool columnwise = !lora;
    bool reduced = !recipe.reduces_amax();
    for (const QuantKernel& k :
         recipe.quantize(in.role, in.producer, columnwise && !recipe.transposes())) {
      // The shards' amaxes (one FP32 each; NVFP4 two, coalesced) are all-reduced over TP after
      // the amax pass (or the norm that computed it) and before the scale and the cast.
      if (!reduced && !std::string_view(k.name).starts_with("fp8_amax")) {
        b.comm(GroupKind::tp, CollectiveOp::all_reduce, kAmaxBytes);
        reduced = true;
      }
      b.memory(k.name, k.bytes_per_element * shard + k.fixed_bytes);
    }
    if (columnwise && recipe.keeps_transpose()) b.memory("fp8_transpose", 2.0 * elements);
    b.count_quantized();
  }
  /// Bytes per element a TP all-gather of a GEMM input moves: its quantized copy in a quantized
  /// layer, else BF16.
  double gather_bytes() const { return quantized ? recipe.gathered_bytes() : kActivationBytes; }

  void tp_gather(ProgramBuilder& b, double elements) const {
    if (s.tp > 1 && s.sp)
      b.comm(GroupKind::tp, CollectiveOp::all_gather, elements * kActivationBytes);
  }

  /// Output of a row-parallel GEMM: reduce-scatter (SP) or all-reduce across TP.
  void tp_reduce(ProgramBuilder& b, double elements) const {
    if (s.tp <= 1) return;
    b.comm(GroupKind::tp, s.sp ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce,
           elements * kActivationBytes);
  }

  // Tensor-parallel communication overlap as Transformer Engine's userbuffers do it (its
  // default configuration in initialize_ub): an all-gather feeding a GEMM is a ring exchange,
  // the GEMM split into tp row chunks each computed while the next chunk arrives (one SM of
  // copy work); a reduce-scatter after a GEMM is pipelined over 4 chunks, each reduced by 16 SMs
  // while the next computes, the last one exposed; the other backward collectives run in bulk
  // beside a whole GEMM on 16 SMs. Smaller chunks lose GEMM efficiency, which the compute model
  // prices.
  static constexpr int kRingExchangeSms = 1;
  static constexpr int kPipelineSms = 16;
  static constexpr int kPipelineChunks = 4;
  static constexpr int kBulkSms = 16;

  bool overlap_tp() const { return plan.tp_comm_overlap && s.tp > 1 && s.sp; }

  double sm_contention(int sms) const { return models::sm_contention(profile, gpu, sms); }

  /// A GEMM fed by a TP all-gather of `elements` (the forward of column-parallel layers, the
  /// data-gradient of row-parallel ones), the input quantized before the gather.
  template <class Gemm>
  void gathered_gemm(ProgramBuilder& b, double elements, GatheredInput in, Gemm gemm) const {
    quantize_gathered(b, in, elements);
    const double bytes = elements * gather_bytes();
    if (overlap_tp()) {
      b.overlapped(GroupKind::tp, CollectiveOp::all_gather, bytes, sm_contention(kRingExchangeSms),
                   [&] { b.split(s.tp, gemm); });
    } else {
      if (gathers()) b.comm(GroupKind::tp, CollectiveOp::all_gather, bytes);
      gemm();
    }
  }

  /// A row-parallel GEMM whose output is reduce-scattered (or all-reduced) across TP.
  template <class Gemm>
  void reduced_gemm(ProgramBuilder& b, double elements, Gemm gemm) const {
    if (overlap_tp()) {
      const double bytes = elements * kActivationBytes;
      const double last = bytes / kPipelineChunks;
      b.overlapped(GroupKind::tp, CollectiveOp::reduce_scatter, bytes - last,
                   sm_contention(kPipelineSms), [&] { b.split(kPipelineChunks, gemm); });
      b.comm(GroupKind::tp, CollectiveOp::reduce_scatter, last);
    } else {
      gemm();
      tp_reduce(b, elements);
    }
  }

  /// Backward: a collective run in bulk beside the GEMM(s) in `body` when the plan overlaps TP
  /// communication, else before it.
  template <class Body>
  void with_tp(ProgramBuilder& b, CollectiveOp op, double elements, Body body) const {
    if (s.tp <= 1) {
      body();
      return;
    }
    const CollectiveOp actual = s.sp ? op : CollectiveOp::all_reduce;
    if (!s.sp && op == CollectiveOp::all_gather) {
      body();  // without sequence parallelism the gradient is already whole
      return;
    }
    // The backward regathers the forward's quantized input for the weight gradient.
    const double bytes =
        elements * (op == CollectiveOp::all_gather ? gather_bytes() : kActivationBytes);
    if (overlap_tp()) {
      b.overlapped(GroupKind::tp, actual, bytes, sm_contention(kBulkSms), body);
    } else {
      b.comm(GroupKind::tp, actual, bytes);
      body();
    }
  }

  /// Llama-family models (gated MLPs) normalize with RMSNorm, which eager PyTorch runs as its
  /// elementwise ops; the LayerNorm of GPT-style models is one native kernel even in eager mode.
  bool rms_norm() const { return s.gated; }

  /// Rotary position embedding of the rotated q and k elements: read and write both (a fused
  /// kernel), eager PyTorch's fp32 ops, or (YaRN under a Megatron stack) Megatron-Core's PyTorch
  /// rotary. Learned and ALiBi positions have no op here (models/transformer.hpp).
  void rotary(ProgramBuilder& b, bool backward) const {
    if (model.position == PositionEncoding::learned || model.position == PositionEncoding::alibi)
      return;
    // MLA rotates its decoupled rope dimensions only: each query head's and the one key head
    // all heads share (DeepSeek-V2, arXiv:2405.04434, section 2.1.3).
    const double elements = model.mla ? s.tokens * (s.q_heads + 1) * model.mla->qk_rope_head_dim
                                      : s.tokens * (s.q_heads + s.kv_heads) * s.head_dim;
    const char* name = backward ? "rope_bwd" : "rope";
    if (software.eager_elementwise) {
      b.eager(name, kEagerRotary, elements, backward);
    } else if (model.position == PositionEncoding::yarn) {
      b.eager(name, kMcoreRotary, elements, backward);
    } else {
      b.memory(name, 2.0 * 2.0 * elements);
    }
  }

  /// The dense MLP's activation over `elements` of the FFN width.
  void activation(ProgramBuilder& b, double elements, bool backward) const {
    activation_pass(b, backward ? "act_bwd" : "act", elements, backward,
                    software.eager_elementwise);
  }
  /// An activation over `elements` of an MLP's width: one fused kernel moving 6 bytes an element
  /// forward for a GLU, 4 otherwise, twice that backward (eager PyTorch's SwiGLU ops where
  /// `eager`), with the FP8 input store's casts after the forward and before the backward.
  void activation_pass(ProgramBuilder& b, const char* name, double elements, bool backward,
                       bool eager = false) const {
    if (backward) activation_input_cast(b, "cast_act_input_bwd", elements);
    if (eager && s.gated) {
      b.eager(name, kEagerSwiglu, elements, backward);
    } else {
      b.memory(name, (backward ? 2.0 : 1.0) * (s.gated ? 6.0 : 4.0) * elements);
    }
    if (!backward) activation_input_cast(b, "cast_act_input", elements);
  }

  /// Megatron-Core's activation_func_fp8_input_store (SwiGLU only): the activation keeps its
  /// input, 2 x `elements` of FC1's output, in FP8 for the backward and casts it back before it
  /// (fused_bias_swiglu.py, core_v0.15.0: `input.to(torch.float8_e4m3fn)` after the forward,
  /// `.to(ctx.ori_input_dtype)` before the backward), one kernel each way that reads two bytes
  /// per element and writes one, or reads one and writes two.
  bool fp8_activation_input() const { return software.fp8_activation_input && s.gated; }
  void activation_input_cast(ProgramBuilder& b, const char* name, double elements) const {
    if (fp8_activation_input()) b.memory(name, 3.0 * 2.0 * elements);
  }

  /// Eager PyTorch's copies around a flash-attention kernel: grouped-query keys and values
  /// repeated to every query head before it (backward: their gradients summed after it) ...
  void eager_repeat_kv(ProgramBuilder& b, bool backward) const {
    if (!software.eager_elementwise || training.unfused_attention || s.kv_heads >= s.q_heads)
      return;
    b.eager(backward ? "repeat_kv_bwd" : "repeat_kv",
            models::eager_repeat_kv(s.q_heads / s.kv_heads),
            2.0 * s.tokens * s.kv_heads * s.head_dim, backward);
  }
  /// ... and its output transposed back to token-major order after it (backward: the output
  /// gradient, before it).
  void eager_attention_layout(ProgramBuilder& b, bool backward) const {
    if (!software.eager_elementwise || training.unfused_attention) return;
    b.eager(backward ? "attn_layout_bwd" : "attn_layout", kEagerLayoutCopy,
            s.tokens * s.q_heads * s.v_dim, backward);
  }

  /// Keys a query of `layer` attends to on average: the span, or what its sliding window leaves
  /// of it, halved for causal masks.
  double span(int layer) const { return keys(layer) * (training.causal ? 0.5 : 1.0); }
  double keys(int layer) const {
    return is_windowed_layer(model, layer) ? windowed_span(s.attention_span, model.sliding_window)
                                           : s.attention_span;
  }

  /// The head width attention kernels see: the mean of the q/k and v widths (MLA: 192 and 128).
  double head_width() const { return 0.5 * (s.head_dim + s.v_dim); }

  double attention_flops(int layer) const {
    const double causal = training.causal ? 0.5 : 1.0;
    return 2.0 * s.tokens * keys(layer) * s.q_heads * (s.head_dim + s.v_dim) * causal;
  }

  /// Attention that writes the scores to HBM: QK^T and PV as batched GEMMs over every (sequence,
  /// head) with the full score matrix (a causal mask saves no work), and a fused scale-mask-
  /// softmax reading and writing it. The backward recomputes the forward under selective
  /// recomputation (Korthikanti et al.), else reads the stored probabilities.
  void unfused_attention(ProgramBuilder& b, bool backward) const {
    const double seq = s.tokens / plan.micro_batch;
    const double span = std::min(seq, s.attention_span);
    const double batch = plan.micro_batch * s.q_heads * (seq / span);
    const double scores = batch * span * span;
    if (!backward || plan.recompute != Recompute::none) {
      b.gemm(backward ? "attn_scores_recompute" : "attn_scores", Precision::bf16, span, span,
             s.head_dim, batch);
      b.memory(backward ? "softmax_recompute" : "softmax", 4.0 * scores);
      if (!backward) {
        b.gemm("attn_values", Precision::bf16, span, s.v_dim, span, batch);
        return;
      }
    }
    b.gemm("attn_dv", Precision::bf16, span, s.v_dim, span, batch);
    b.gemm("attn_dp", Precision::bf16, span, span, s.v_dim, batch);
    b.memory("softmax_bwd", 6.0 * scores);
    b.gemm("attn_dq", Precision::bf16, span, s.head_dim, span, batch);
    b.gemm("attn_dk", Precision::bf16, span, s.head_dim, span, batch);
  }

  /// Elements of one rank's attention inputs and output for a micro-batch.
  struct AttentionTensors {
    double q, k, v, out;
  };
  AttentionTensors attention_tensors() const {
    return {s.tokens * s.q_heads * s.head_dim, s.tokens * s.kv_heads * s.head_dim,
            s.tokens * s.kv_heads * s.v_dim, s.tokens * s.q_heads * s.v_dim};
  }

  /// All-to-all CP (Transformer Engine's AttnFuncWithCPAndQKVOA2A, Ulysses' scheme): Q, K and V
  /// leave by sequence shard and arrive by head shard, the kernel attends the whole sequence
  /// with heads / cp, and the output goes back the same way; backward the output gradient comes
  /// in and dQ, dK and dV go out. Around each all-to-all (flash_attn_a2a_communicate, TE
  /// d0067d0) a tensor is copied into the layout it leaves in (movedim, contiguous) and the
  /// received one into sequence order (the load-balanced chunks): a read and a write each side.
  /// Per-tensor FP8 quantizes Q, K and V before they leave (one byte each).
  template <class Kernel>
  void head_exchange(ProgramBuilder& b, bool backward, bool fp8_qkv, Kernel kernel) const {
    const auto [q, k, v, out] = attention_tensors();
    const double qkv_bytes = !backward && fp8_qkv ? 1.0 : kActivationBytes;
    auto exchange = [&](const char* name, std::initializer_list<double> tensors, double bytes) {
      double all = 0;
      for (double elements : tensors) {
        b.comm(GroupKind::cp, CollectiveOp::alltoall, elements * bytes);
        all += elements;
      }
      b.kernels(2 * static_cast<int>(tensors.size()));
      b.memory(name, 4.0 * bytes * all);
    };
    if (!backward) {
      exchange("cp_qkv_a2a_copy", {q, k, v}, qkv_bytes);
      kernel();
      exchange("cp_out_a2a_copy", {out}, kActivationBytes);
    } else {
      exchange("cp_dout_a2a_copy", {out}, kActivationBytes);
      kernel();
      exchange("cp_dqkv_a2a_copy", {q, k, v}, kActivationBytes);
    }
  }

  /// Ring attention over CP ranks (Transformer Engine's AttnFuncWithCPAndKVP2P, the KV passed
  /// around the ring): cp steps, each computing on one KV block while the next travels. Around the
  /// kernels (context_parallel.py, TE d0067d0) the forward packs K and V into one send buffer
  /// (torch.cat: reads and writes them), merges each step's softmax statistics and then each
  /// step's partial output into the output (the first step's scaled copy: reads and writes it;
  /// every later one reads the partial and reads and writes the output); the backward copies K
  /// and V into its ring buffer, and adds each step's dQ into dQ and its dK and dV into the
  /// buffer that travels on (copies at the first step). Priced for the last rank, whose every
  /// step merges whole (under a causal mask lower ranks merge some steps over half the tokens).
  template <class Kernel>
  void ring_attention(ProgramBuilder& b, Kernel kernel, bool backward) const {
    const AttentionTensors t = attention_tensors();
    const double kv = t.k + t.v;
    const double kv_bytes = kv * kActivationBytes;
    const double merges = 4.0 + 6.0 * (s.cp - 1);  // bytes per element over the cp steps
    b.memory(backward ? "cp_kv_buffer_bwd" : "cp_kv_buffer", 2.0 * kv_bytes);
    for (int step = 0; step < s.cp; ++step) {
      if (step + 1 < s.cp) {
        b.overlapped(GroupKind::cp, CollectiveOp::sendrecv, kv_bytes * (backward ? 2.0 : 1.0),
                     slowdown, [&] { kernel(s.cp); });
      } else {
        kernel(s.cp);
      }
    }
    if (backward) {
      b.kernels(3 * s.cp);
      b.memory("cp_grad_merge", merges * (t.q + kv));
    } else {
      b.kernels(2 * s.cp);
      b.memory("cp_out_merge", merges * t.out);
    }
  }

  /// All-gather CP (Transformer Engine's AttnFuncWithCPAndKVAllGather, the scheme of the Llama 3
  /// paper, section 3.3.2): every rank gathers all ranks' K and V, exposed, and reorders the
  /// gathered chunks into sequence order (index_select: a read and a write); each of its two
  /// load-balanced query chunks then attends the keys up to it, one kernel each, and is copied
  /// into the output. Backward gathers K and V again, zeroes whole-sequence dK and dV buffers and
  /// dQ, adds each chunk's dK and dV (over the keys it saw) into the buffers, copies its dQ out,
  /// reorders dK and dV back and reduce-scatters them, exposed (context_parallel.py, TE d0067d0).
  /// The two chunks' key prefixes sum to (2 cp + 1) / (2 cp) of the sequence on every rank.
  /// Per-tensor FP8 gathers K and V in one byte.
  template <class Kernel>
  void kv_gather_attention(ProgramBuilder& b, bool backward, bool fp8_kv, Kernel kernel) const {
    const AttentionTensors t = attention_tensors();
    const double cp = s.cp;
    const double gathered = cp * (t.k + t.v);  // elements of the whole sequence's K and V
    const double kv_bytes = !backward && fp8_kv ? 1.0 : kActivationBytes;
    b.comm(GroupKind::cp, CollectiveOp::all_gather, cp * t.k * kv_bytes);
    b.comm(GroupKind::cp, CollectiveOp::all_gather, cp * t.v * kv_bytes);
    b.kernels(2);
    b.memory(backward ? "cp_kv_reorder_bwd" : "cp_kv_reorder", 2.0 * kv_bytes * gathered);
    if (!backward) {
      kernel();
      kernel();
      b.kernels(2);
      b.memory("cp_out_copy", 2.0 * kActivationBytes * t.out);
      return;
    }
    b.kernels(3);
    b.memory("cp_grad_zero", kActivationBytes * (gathered + t.q));
    kernel();
    kernel();
    const double prefixes = (2.0 * cp + 1.0) / (2.0 * cp);
    b.kernels(4);
    b.memory("cp_kv_grad_add", 3.0 * kActivationBytes * prefixes * gathered);
    b.kernels(2);
    b.memory("cp_dq_copy", 2.0 * kActivationBytes * t.q);
    b.kernels(2);
    b.memory("cp_kv_grad_reorder", 2.0 * kActivationBytes * gathered);
    b.comm(GroupKind::cp, CollectiveOp::reduce_scatter, cp * t.k * kActivationBytes);
    b.comm(GroupKind::cp, CollectiveOp::reduce_scatter, cp * t.v * kActivationBytes);
  }

  /// Flash attention (models::flash_attention_seconds: a banded layer's whole tiles, Blackwell's
  /// FP8 backward over the whole square). The unfused path's full score matrix skips nothing.
  void attention_core(ProgramBuilder& b, int layer, bool backward) const {
    if (training.unfused_attention) {
      unfused_attention(b, backward);
      return;
    }
    // FP8 attention (fp8_dpa without fp8_mha): Transformer Engine casts q, k and v to FP8 before
    // the kernel and its output back to BF16 after it; backward the output gradient in and the
    // q, k, v gradients out. A cast reads 2 bytes and writes 1 per value.
    const bool fp8 = software.fp8_attention && quantized;
    FlashAttention a;
    a.kernel = software.attention;
    a.flops = attention_flops(layer) * (backward ? 2.5 : 1.0);
    a.attended = span(layer);
    a.sequence = s.attention_span;
    a.banded = keys(layer) < s.attention_span;
    a.backward = backward;
    a.head_dim = head_width();
    a.fp8 = fp8;
    a.block_scaled =
        training.precision == Precision::mxfp8 || training.precision == Precision::nvfp4;
    a.mla = model.mla.has_value();
    const double qkv = s.tokens * (s.q_heads + 2.0 * s.kv_heads) * s.head_dim;
    const double out = attention_tensors().out;
    if (fp8)
      b.memory(backward ? "attn_fp8_cast_bwd" : "attn_fp8_cast", 3.0 * (backward ? out : qkv));
    // One kernel: the rank's attention FLOPs over `flop_parts`, each query attending the keys it
    // sees without CP over `key_parts` (a band keeps its width). A ring step attends one rank's
    // share: a causal sequence split in 2 x cp load-balanced chunks gives each step (the
    // diagonal's causal block, or half the local queries or keys unmasked) seq / (2 cp) keys per
    // query. An all-gather chunk's queries attend the keys up to them: on the last rank about
    // half the sequence each, as without CP.
    auto kernel = [&](double flop_parts, double key_parts) {
      FlashAttention step = a;
      step.flops /= flop_parts;
      if (!a.banded) step.attended /= key_parts;
      b.attention(backward ? "attn_bwd" : "attn", step);
    };
    const bool fp8_inputs = fp8 && !a.block_scaled;
    if (s.cp > 1 && plan.cp_comm == CpComm::a2a) {
      head_exchange(b, backward, fp8_inputs, [&] { kernel(1.0, 1.0); });
    } else if (s.cp > 1 && plan.cp_comm == CpComm::all_gather) {
      kv_gather_attention(b, backward, fp8_inputs, [&] { kernel(2.0, 1.0); });
    } else if (s.cp > 1) {
      ring_attention(
          b, [&](double parts) { kernel(parts, parts); }, backward);
    } else {
      kernel(1.0, 1.0);
    }
    if (fp8)
      b.memory(backward ? "attn_fp8_uncast_bwd" : "attn_fp8_uncast", 3.0 * (backward ? qkv : out));
  }

  /// QK-norm: an RMSNorm over each query and key head between the QKV GEMM and RoPE, its own
  /// kernel (Megatron-Core's q_layernorm and k_layernorm, TENorm over the head width).
  void qk_norm(ProgramBuilder& b, bool backward) const {
    if (!model.qk_norm || model.mla) return;
    b.norm(backward ? "qk_norm_bwd" : "qk_norm", s.tokens * (s.q_heads + s.kv_heads) * s.head_dim,
           backward, true);
  }

  void forward(ProgramBuilder& b, int layer) const {
    const double T = s.tokens, Tn = s.norm_tokens, h = s.hidden;
    const double qkv_out = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
    b.graphed(software.cuda_graphs != CudaGraphs::none);
    b.norm("norm", Tn * h, false, rms_norm());
    // Megatron-Core's MLA: the down projections read a separate norm's output; the up
    // projections are LayerNormLinears over the latent (q_layernorm, kv_layernorm).
    const Producer qkv_input = model.mla ? Producer::standalone : Producer::fused;
    gathered_gemm(b, T * h, {TensorRole::activation, qkv_input}, [&] {
      if (model.mla) {
        const MlaConfig& a = *model.mla;
        const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
        if (a.q_lora_rank > 0) {
          b.gemm("q_down", lin(), T, a.q_lora_rank, h);
          quantize_activation(b, Producer::fused, T * a.q_lora_rank);
          b.gemm("q_up", lin(), T, s.q_heads * qk, a.q_lora_rank);
        } else {
          b.gemm("q", lin(), T, s.q_heads * qk, h);
        }
        b.gemm("kv_down", lin(), T, a.kv_lora_rank + a.qk_rope_head_dim, h);
        quantize_activation(b, Producer::fused, T * a.kv_lora_rank);
        b.gemm("kv_up", lin(), T, s.q_heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank);
      } else {
        b.gemm("qkv", lin(), T, qkv_out, h);
      }
    });
    qk_norm(b, false);
    rotary(b, false);
    eager_repeat_kv(b, false);
    attention_core(b, layer, false);
    eager_attention_layout(b, false);
    reduced_gemm(b, T * h, [&] {
      quantize_activation(b, Producer::standalone, T * s.q_heads * s.v_dim);
      b.gemm("proj", lin(), T, h, s.q_heads * s.v_dim);
    });
    b.memory("residual", 6.0 * Tn * h);
    b.graphed(software.cuda_graphs == CudaGraphs::full);
    b.norm("norm", Tn * h, false, rms_norm());
    mlp(b, layer, false);
    b.memory("residual", 6.0 * Tn * h);
    b.graphed(false);
  }

  void mlp(ProgramBuilder& b, int layer, bool backward) const {
    const double T = s.tokens, h = s.hidden;
    const double gate = s.gated ? 2.0 : 1.0;
    if (model.moe && is_moe_layer(model, layer)) {
      moe(b, backward);
      return;
    }
    if (!backward) {
      gathered_gemm(b, T * h, {TensorRole::activation, Producer::fused},
                    [&] { b.gemm("fc1", lin(), T, gate * s.ffn, h); });
      activation(b, T * s.ffn, false);
      reduced_gemm(b, T * h, [&] {
        // Megatron-Core's activation is its own kernel, not TE's: fc2 quantizes a BF16 tensor.
        quantize_activation(b, Producer::standalone, T * s.ffn);
        b.gemm("fc2", lin(), T, h, s.ffn);
      });
      return;
    }
    // Backward of fc2 (row-parallel): the output gradient is gathered into dgrad.
    transpose_weight(b, s.ffn * h);
    gathered_gemm(b, T * h, {TensorRole::gradient, Producer::standalone},
                  [&] { b.gemm("fc2_dgrad", lin(), T, s.ffn, h); });
    if (!lora) b.gemm("fc2_wgrad", lin(), s.ffn, h, T);
    activation(b, T * s.ffn, true);
    // fc1 (column-parallel): the sequence-sharded input is gathered again during dgrad, and the
    // input gradient is reduce-scattered during wgrad.
    auto dgrad = [&] {
      quantize_gradient(b, T * gate * s.ffn);
      transpose_weight(b, h * gate * s.ffn);
      b.gemm("fc1_dgrad", lin(), T, h, gate * s.ffn);
    };
    if (!lora) {
      with_tp(b, CollectiveOp::all_gather, T * h, dgrad);
      with_tp(b, CollectiveOp::reduce_scatter, T * h,
              [&] { b.gemm("fc1_wgrad", lin(), h, gate * s.ffn, T); });
    } else {
      dgrad();
      tp_reduce(b, T * h);
    }
  }

  void moe(ProgramBuilder& b, bool backward) const {
    const MoeConfig& e = *model.moe;
    // Drop-and-pad routing (a capacity factor: every expert's buffer padded to capacity) has
    // static shapes through the alltoall dispatcher; the flex dispatcher pads nothing to capacity
    // (token_dispatcher.py asserts it). Where the token counts stay on the GPU, the host waits for
    // nothing and the block can be captured in a CUDA graph (moe_counts_on_gpu).
    const MoeDispatcher dispatcher = software.moe_dispatcher;
    const bool flex = dispatcher != MoeDispatcher::alltoall;
    const bool static_shapes = e.capacity_factor > 0 && !flex;
    const bool sync_free = moe_counts_on_gpu(e, software);
    const bool block_graphed = sync_free && software.cuda_graphs == CudaGraphs::full;
    b.graphed(block_graphed);
    // Graphs over the router and the dispatcher's preprocessing (its permutation) replay those
    // kernels, forward and backward, whatever the block's shapes.
    auto routing = [&](auto body) {
      b.graphed(block_graphed || software.graph_moe_router);
      body();
      b.graphed(block_graphed);
    };
    const double h = s.hidden, Tr = s.moe_tokens;
    const double gate = s.gated ? 2.0 : 1.0;
    const int local_experts = std::max(1, e.experts / s.ep);
    // The simulated rank is the most loaded one: capacity-padded buffers, or dropless routing's
    // imbalance (1: balanced, every rank receives the tokens its experts are chosen for).
    const double load = moe_rank_load(e);
    const double routed = Tr * e.top_k * load;
    const double per_expert = routed / local_experts;
    // The all-to-all waits for the most loaded receiver.
    const double a2a = Tr * e.top_k * h * kActivationBytes * load;
    // Dispatch and combine: NCCL all-to-all of a2a bytes, or the flex dispatcher's kernels
    // (DeepEP's or Hybrid-EP's). Backward, the gradient of the combine travels as a dispatch and
    // that of the dispatch as a combine; the flex kernels send FP8 only in the forward dispatch of
    // a low-precision run.
    // Overlapped (moe_a2a_overlap), each all-to-all runs beside the compute up to the next one,
    // is joined before the next starts and the last by the end of the block, and slows the
    // compute beside it while its channels hold SMs, for as long as it is in flight. Megatron-Core
    // pairs each with a sub-module of another micro-batch's opposite pass instead
    // (model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run: the forward combine beside
    // the backward attention, the backward dispatch beside the expert weight gradients and
    // forward); carried that far, the model hides nearly every all-to-all, where NVIDIA's
    // measured A/B (docs/validation.md) hides about a third: the block's own compute is the
    // nearer stand-in. With the chunk scope (DualPipe) they run one after another on their own
    // stream beside the whole pass, whose compute belongs in the real schedule to the paired
    // chunk and so waits for none.
    const bool a2a_overlap = software.moe_a2a_overlap && s.ep > 1;
    auto ep_comm = [&](bool combine, bool fp8) {
      if (s.ep <= 1) return;
      const WorkOp::MoeTokens tokens{Tr * load,
                                     static_cast<int>(h),
                                     e.top_k,
                                     e.experts,
                                     fp8,
                                     combine,
                                     dispatcher == MoeDispatcher::hybridep};
      auto start = [&] {
        return flex ? b.start_moe(tokens, a2a)
                    : b.start(GroupKind::ep, CollectiveOp::alltoall, a2a);
      };
      if (a2a_overlap && software.moe_a2a_overlap_scope == A2aOverlapScope::chunk) {
        b.chain(start(), slowdown);
        return;
      }
      if (a2a_overlap) {
        b.join_carried();
        b.carry(start(), slowdown);
        return;
      }
      if (!flex) {
        b.comm(GroupKind::ep, CollectiveOp::alltoall, a2a);
        return;
      }
      b.moe_comm(tokens, a2a);
    };
    const bool fp8_dispatch = quantized;
    // Megatron-Core's alltoall dispatcher receives tokens grouped by source rank and sorts them
    // by local expert before the grouped GEMM ("permutation 2", sort_chunks_by_idxs or a
    // transpose when padded), and unsorts them before the combine (token_dispatcher.py,
    // dispatch_postprocess / combine_preprocess, core_v0.15.0): one more read and write of every
    // routed token each way, and again in backward. The flex dispatcher permutes once, after its
    // dispatch (Hybrid-EP's permutation stays a separate pass unless
    // moe_permute_fusion_into_hybridep, off by default in Megatron-Core).
    // A permutation reads and writes each of `tokens` hidden states once.
    auto permutation = [&](const char* name, double tokens) {
      b.memory(name, 2.0 * kActivationBytes * tokens * h);
    };
    const bool local_sort = s.ep > 1 && local_experts > 1 && !flex;
    // A quantized grouped GEMM wants every expert's rows in whole scaling blocks: Megatron-Core
    // pads each expert's tokens with Transformer Engine's Fp8Padding before FC1 and unpads FC2's
    // output (experts.py, core_v0.15.0-v0.18.0; fp8_padding.py, v2.9: 32 rows under MXFP8, 16
    // otherwise; nothing when every count already fits, as capacity-padded buffers may), one fused
    // row-copy kernel each that reads and writes every routed token's hidden state, and their
    // backward the reverse copies. Random routing (the benchmarks' forced balance) leaves the
    // counts unaligned. Hybrid-EP's dispatch pads the counts itself (token_dispatcher.py,
    // core_v0.16.0: pad_multiple), so its experts copy nothing.
    const double align = linear == Precision::mxfp8 ? 32.0 : 16.0;
    const bool row_padding = quantized && dispatcher != MoeDispatcher::hybridep &&
                             (!static_shapes || std::fmod(per_expert, align) != 0);
    auto rows_copy = [&](const char* name) {
      if (row_padding) b.memory(name, 2.0 * kActivationBytes * routed * h);
    };
    // GPT-OSS's clamped GLU: Megatron-Core (core_v0.15.0 fused_bias_geglu.py,
    // weighted_bias_quick_geglu_impl) clamps the gate and linear halves and concatenates them in
    // PyTorch before its compiled activation kernel: two clamps (each reads and writes half the
    // fc1 output) and a cat (reads and writes all of it); backward, the two clamp gradients
    // (gradient and saved input read, gradient written) and chunk's cat of them.
    const bool clamped_glu = model.mlp == MlpKind::quick_geglu;
    auto glu_clamp = [&](const char* name, bool gradient) {
      if (!clamped_glu) return;
      b.kernels(3);
      b.memory(name, (gradient ? 10.0 : 8.0) * kActivationBytes * routed * e.expert_ffn);
    };
    // Expert biases: TEGroupedMLP._apply_bias (core_v0.15.0 experts.py) splits fc2's output by
    // expert and computes t + bias x prob expert by expert, then concatenates: per expert a
    // multiply (writes the weighted bias) and an add (reads two, writes one), and the cat (reads
    // and writes every token). Backward: the multiply's two gradients (a product and a
    // reduction each) per expert and the split's cat of the gradients. The flex dispatchers
    // hand the experts FP32 probabilities (DeepEP and Hybrid-EP take no other,
    // token_dispatcher.py core_v0.16.0), so bias x prob, the sum and the cat are FP32 and the
    // result is cast back to bf16: 28 bytes per routed element forward (12 in bf16), and
    // backward the gradient's cast up, each expert's cast back and FP32 products and
    // reductions: 40 bytes (16 in bf16), one more kernel per expert.
    // The fused grouped MLP scales FC2's bias by the probabilities inside its ops (experts.py
    // core_v0.18.0 _fused_forward, TE GroupedLinear scale_bias): no loop.
    auto expert_bias = [&](const char* name) {
      if (!e.expert_bias || software.fused_moe_mlp) return;
      const int per_expert_kernels = backward ? (flex ? 5 : 4) : 2;
      b.kernels(per_expert_kernels * local_experts + (flex ? 2 : 1));
      const double bytes =
          flex ? (backward ? 40.0 : 28.0) : (backward ? 8.0 : 6.0) * kActivationBytes;
      b.memory(name, bytes * routed * h);
    };
    // The experts' activation (and GPT-OSS's clamps) over FC1's output, forward or rerun.
    auto expert_activation = [&](const char* clamp, const char* name) {
      glu_clamp(clamp, false);
      activation_pass(b, name, routed * e.expert_ffn, false);
    };
    auto sort_chunks = [&](const char* name) {
      if (local_sort) permutation(name, routed);
    };
    const double shared = static_cast<double>(e.shared_experts) * e.shared_expert_ffn / s.tp;
    auto shared_gemms = [&](bool bwd) {
      if (shared <= 0) return;
      if (!bwd) {
        quantize_activation(b, Producer::standalone, Tr * h);
        b.gemm("shared_fc1", lin(), Tr, gate * shared, h);
        activation_pass(b, "act", Tr * shared, false);
        quantize_activation(b, Producer::standalone, Tr * shared);
        b.gemm("shared_fc2", lin(), Tr, h, shared);
      } else {
        quantize_gradient(b, Tr * h);
        transpose_weight(b, shared * h);
        b.gemm("shared_fc2_dgrad", lin(), Tr, shared, h);
        if (!lora) b.gemm("shared_fc2_wgrad", lin(), shared, h, Tr);
        activation_pass(b, "act_bwd", Tr * shared, true);
        quantize_gradient(b, Tr * gate * shared);
        transpose_weight(b, h * gate * shared);
        b.gemm("shared_fc1_dgrad", lin(), Tr, h, gate * shared);
        if (!lora) b.gemm("shared_fc1_wgrad", lin(), h, gate * shared, Tr);
      }
    };
    if (!backward) {
      routing([&] {
        b.kernels(kRouterKernels);
        b.gemm("router", Precision::bf16, Tr, e.experts, h);
        b.kernels(kPermuteKernels);
        permutation("permute", Tr * e.top_k);
      });
      // The dropless dispatcher copies the per-expert token counts to the host (the grouped
      // GEMM's splits), so the host waits for the GPU once per MoE layer.
      if (software.moe_host_sync && !sync_free) b.host_sync();
      ep_comm(false, fp8_dispatch);
      sort_chunks("permute_local");
      rows_copy("expert_row_pad");
      quantize_experts(b, TensorRole::activation, routed * h, local_experts);
      b.grouped_gemm("expert_fc1", lin(), per_expert, gate * e.expert_ffn, h, local_experts);
      if (!software.fused_moe_mlp) {
        expert_activation("act_clamp", "act");
        quantize_experts(b, TensorRole::activation, routed * e.expert_ffn, local_experts);
      }
      b.grouped_gemm("expert_fc2", lin(), per_expert, h, e.expert_ffn, local_experts);
      expert_bias("expert_bias");
      rows_copy("expert_row_unpad");
      sort_chunks("unpermute_local");
      ep_comm(true, false);
      b.kernels(kUnpermuteKernels);
      permutation("unpermute", Tr * e.top_k);
      shared_gemms(false);
      b.join_carried();
      return;
    }
    shared_gemms(true);
    b.kernels(backward_kernels(kUnpermuteKernels));
    permutation("unpermute_bwd", Tr * e.top_k);
    ep_comm(false, false);
    sort_chunks("unpermute_local_bwd");
    rows_copy("expert_row_unpad_bwd");
    expert_bias("expert_bias_bwd");
    quantize_experts(b, TensorRole::gradient, routed * h, local_experts);
    // Fused, FC2's dgrad carries the GLU's backward and, with expert biases, FC1's bias gradient.
    const double dbias = software.fused_moe_mlp && e.expert_bias ? software.dglu_dbias_factor : 1.0;
    transpose_weight(b, local_experts * e.expert_ffn * h);
    b.grouped_gemm("expert_fc2_dgrad", lin(), per_expert, e.expert_ffn, h, local_experts, dbias);
    if (!lora)
      b.grouped_gemm("expert_fc2_wgrad", lin(), e.expert_ffn, h, per_expert, local_experts);
    if (!software.fused_moe_mlp) {
      if (!recompute_full && plan.recomputes(RecomputeModule::moe_act)) {
        expert_activation("act_clamp_recompute", "act_recompute");
      }
      activation_pass(b, "act_bwd", routed * e.expert_ffn, true);
      glu_clamp("act_clamp_bwd", true);
      quantize_experts(b, TensorRole::gradient, routed * gate * e.expert_ffn, local_experts);
    }
    transpose_weight(b, local_experts * h * gate * e.expert_ffn);
    b.grouped_gemm("expert_fc1_dgrad", lin(), per_expert, h, gate * e.expert_ffn, local_experts);
    if (!lora)
      b.grouped_gemm("expert_fc1_wgrad", lin(), h, gate * e.expert_ffn, per_expert, local_experts);
    rows_copy("expert_row_pad_bwd");
    sort_chunks("permute_local_bwd");
    ep_comm(true, false);
    routing([&] {
      b.kernels(backward_kernels(kPermuteKernels));
      permutation("permute_bwd", Tr * e.top_k);
      b.kernels(backward_kernels(kRouterKernels));
      b.gemm("router_dgrad", Precision::bf16, Tr, h, e.experts);
      if (!lora) b.gemm("router_wgrad", Precision::bf16, h, e.experts, Tr);
    });
    b.join_carried();
  }

  /// The forward of the modules plan.recompute_modules names, rerun before the layer's backward
  /// (the experts' activation reruns inside the MoE block's backward).
  void recompute_modules(ProgramBuilder& b, int layer) const {
    const double T = s.tokens, Tn = s.norm_tokens, h = s.hidden;
    b.graphed(software.cuda_graphs == CudaGraphs::full);
    if (plan.recomputes(RecomputeModule::layernorm)) {
      b.norm("norm_recompute", Tn * h, false, rms_norm());
      b.norm("norm_recompute", Tn * h, false, rms_norm());
    }
    if (model.mla && plan.recomputes(RecomputeModule::mla_up_proj)) {
      const MlaConfig& a = *model.mla;
      const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      if (a.q_lora_rank > 0) b.gemm("q_up_recompute", lin(), T, s.q_heads * qk, a.q_lora_rank);
      b.gemm("kv_up_recompute", lin(), T, s.q_heads * (a.qk_nope_head_dim + a.v_head_dim),
             a.kv_lora_rank);
    }
    if (!(model.moe && is_moe_layer(model, layer)) && plan.recomputes(RecomputeModule::mlp)) {
      const double gate = s.gated ? 2.0 : 1.0;
      gathered_gemm(b, T * h, {TensorRole::activation, Producer::fused},
                    [&] { b.gemm("fc1_recompute", lin(), T, gate * s.ffn, h); });
      activation(b, T * s.ffn, false);
    }
  }

  void backward(ProgramBuilder& b, int layer) const {
    const double T = s.tokens, Tn = s.norm_tokens, h = s.hidden;
    const double qkv_out = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
    if (recompute_full) {
      forward(b, layer);
    } else {
      recompute_modules(b, layer);
    }
    b.graphed(software.cuda_graphs == CudaGraphs::full);
    b.memory("residual_bwd", 2.0 * 6.0 * Tn * h);
    mlp(b, layer, true);
    b.norm("norm_bwd", Tn * h, true, rms_norm());
    b.graphed(software.cuda_graphs != CudaGraphs::none);
    b.memory("residual_bwd", 2.0 * 6.0 * Tn * h);
    // proj (row-parallel): the output gradient is gathered into dgrad.
    transpose_weight(b, s.q_heads * s.v_dim * h);
    gathered_gemm(b, T * h, {TensorRole::gradient, Producer::standalone},
                  [&] { b.gemm("proj_dgrad", lin(), T, s.q_heads * s.v_dim, h); });
    if (!lora) b.gemm("proj_wgrad", lin(), s.q_heads * s.v_dim, h, T);
    eager_attention_layout(b, true);
    attention_core(b, layer, true);
    eager_repeat_kv(b, true);
    rotary(b, true);
    qk_norm(b, true);
    if (model.mla) {
      const MlaConfig& a = *model.mla;
      const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      quantize_gradient(b, T * qkv_out);
      transpose_weight(b, a.kv_lora_rank * s.q_heads * (a.qk_nope_head_dim + a.v_head_dim));
      b.gemm("kv_up_dgrad", lin(), T, a.kv_lora_rank,
             s.q_heads * (a.qk_nope_head_dim + a.v_head_dim));
      quantize_gradient(b, T * (a.kv_lora_rank + a.qk_rope_head_dim));
      transpose_weight(b, h * (a.kv_lora_rank + a.qk_rope_head_dim));
      b.gemm("kv_down_dgrad", lin(), T, h, a.kv_lora_rank + a.qk_rope_head_dim);
      transpose_weight(b, h * s.q_heads * qk);
      b.gemm("q_dgrad", lin(), T, h, s.q_heads * qk);
      if (!lora) {
        b.gemm("kv_up_wgrad", lin(), a.kv_lora_rank,
               s.q_heads * (a.qk_nope_head_dim + a.v_head_dim), T);
        b.gemm("kv_down_wgrad", lin(), h, a.kv_lora_rank + a.qk_rope_head_dim, T);
        b.gemm("q_wgrad", lin(), h, s.q_heads * qk, T);
      }
      tp_reduce(b, T * h);
    } else {
      // qkv (column-parallel): regather the input during dgrad, reduce-scatter during wgrad.
      auto dgrad = [&] {
        quantize_gradient(b, T * qkv_out);
        transpose_weight(b, h * qkv_out);
        b.gemm("qkv_dgrad", lin(), T, h, qkv_out);
      };
      if (!lora) {
        with_tp(b, CollectiveOp::all_gather, T * h, dgrad);
        with_tp(b, CollectiveOp::reduce_scatter, T * h,
                [&] { b.gemm("qkv_wgrad", lin(), h, qkv_out, T); });
      } else {
        dgrad();
        tp_reduce(b, T * h);
      }
    }
    b.norm("norm_bwd", Tn * h, true, rms_norm());
    b.graphed(false);
  }

  /// Bytes one micro-batch keeps alive from this layer's forward to its backward: the layer
  /// input only when it recomputes fully (`full`), else what the recompute mode keeps.
  double activations(int layer, bool full) const {
    const double T = s.tokens, Tn = s.norm_tokens, h = s.hidden, a = kActivationBytes;
    if (full) return Tn * h * a;
    // A GEMM input kept for the weight gradient: under a low-precision recipe Transformer Engine
    // keeps only its quantized column-wise copy (Linear and LayerNormLinear save the quantized
    // input, LayerNormMLP quantizes the activation output for FC2; TE 2.9 module/linear.py,
    // layernorm_mlp.py), at the bytes a gather of it moves; BF16 otherwise.
    const bool low = recipe.quantized(layer);
    const double q = low ? recipe.gathered_bytes() : a;
    // None of a dense GEMM's input when its weight is frozen (LoRA): Transformer Engine keeps it
    // only for a weight gradient (module/linear.py backward_needs_input; layernorm_mlp.py clears
    // ln_out and act_out for frozen FC1 and FC2, TransformerEngine d0067d0).
    const double wgrad_input = lora ? 0.0 : q;
    // A recomputed module's output is not kept (recompute_modules); where a GEMM keeps its own
    // quantized copy of it (a low-precision run), that copy stays.
    const auto drops = [&](RecomputeModule m) { return plan.recomputes(m) && !low; };
    double bytes = 2 * Tn * h * a;  // norm inputs (the residual stream, sequence-sharded)
    if (!drops(RecomputeModule::layernorm)) bytes += 2 * Tn * h * wgrad_input;  // QKV, FC1 inputs
    // LoRA's QKV adapter keeps the norm's output in BF16 for its own weight gradient (the
    // projection's adapter reads the attention output kept below).
    if (lora && !plan.recomputes(RecomputeModule::layernorm)) bytes += Tn * h * a;
    if (!model.mla || !plan.recomputes(RecomputeModule::mla_up_proj))
      bytes += T * (s.q_heads + 2 * s.kv_heads) * s.head_dim * a;  // q, k, v
    if (model.qk_norm && !model.mla)
      bytes += T * (s.q_heads + s.kv_heads) * s.head_dim * a;  // q and k before their norms
    // The attention output, which the attention backward reads too: shared with the projection's
    // input in BF16, beside its quantized copy otherwise.
    bytes += T * s.q_heads * s.v_dim * (a + (low ? wgrad_input : 0.0));
    bytes += T * s.q_heads * 4.0 * 2;  // softmax statistics (fp32)
    if (training.unfused_attention && plan.recompute == Recompute::none) {
      bytes +=
          T * s.q_heads * std::min(T / plan.micro_batch, s.attention_span) * a;  // probabilities
    }
    // FC1's output, the activation's input: in FP8 under activation_func_fp8_input_store.
    const double act_in = (s.gated ? 2.0 : 1.0) * (fp8_activation_input() ? 1.0 : a);
    if (model.moe && is_moe_layer(model, layer)) {
      const MoeConfig& e = *model.moe;
      const double routed = s.moe_tokens * e.top_k * moe_rank_load(e);
      // Permuted tokens (FC1's input) and FC2's output; FC1's output and FC2's input (as in
      // pre-training under LoRA too, which no modelled run applies to an MoE model).
      bytes += routed * h * (q + a) +
               routed * e.expert_ffn * (act_in + (drops(RecomputeModule::moe_act) ? 0.0 : q));
      const double shared = static_cast<double>(e.shared_experts) * e.shared_expert_ffn / s.tp;
      bytes += s.moe_tokens * shared * (act_in + q);
    } else if (!plan.recomputes(RecomputeModule::mlp)) {  // a recomputed MLP keeps its input only
      bytes += T * s.ffn * (act_in + wgrad_input);        // fc1 output, activation output
    }
    return bytes;
  }
};

void add_op_classes(const PassProgram& pass, double times, OpClassSeconds& out) {
  for (const WorkOp& op : pass.ops) {
    if (op.kind != WorkOp::Kind::compute) continue;
    const std::string_view name = op.name;
    const double work = (op.duration - op.overhead).s() * times;
    out.launch_gaps += op.overhead.s() * times;
    if (name.starts_with("cast") || name.starts_with("fp8_")) {
      out.fp8 += work;
    } else if (name.starts_with("router") || name.starts_with("permute") ||
               name.starts_with("unpermute")) {
      out.moe_routing += work;
    } else if (name.starts_with("loss")) {
      out.loss += work;
    } else if (op.compute == ComputeKind::gemm && !name.starts_with("attn")) {
      out.gemm += work;
    } else if (op.compute == ComputeKind::attention || name.starts_with("attn") ||
               name.starts_with("softmax")) {
      out.attention += work;
    } else {
      out.memory += work;
    }
  }
}

}  // namespace

OpClassSeconds op_class_seconds(const Workload& w, int stage) {
  OpClassSeconds out;
  const StageWork& sw = w.stages.at(static_cast<size_t>(stage));
  for (const ChunkWork& c : sw.chunks) {
    add_op_classes(c.forward, w.microbatches, out);
    add_op_classes(c.backward, w.microbatches, out);
  }
  out.optimizer = (sw.optimizer - sw.weight_quantize).s();
  out.fp8 += sw.weight_quantize.s();
  return out;
}

nlohmann::json op_class_json(const OpClassSeconds& c) {
  return {{"gemm_s", c.gemm},
          {"attention_s", c.attention},
          {"memory_bound_s", c.memory},
          {"loss_s", c.loss},
          {"fp8_overhead_s", c.fp8},
          {"moe_routing_s", c.moe_routing},
          {"launch_gaps_s", c.launch_gaps},
          {"optimizer_s", c.optimizer},
          {"total_s", c.total()}};
}

bool recomputes_fully(const ParallelPlan& plan, int index) {
  return plan.recompute == Recompute::full || index < plan.recompute_layers;
}

bool offloads(const ParallelPlan& plan, int index, int layers) {
  return !recomputes_fully(plan, index) && index + 1 < layers &&
         index < plan.recompute_layers + plan.offload_layers;
}

double fully_recomputed_share(const Workload& workload, const ParallelPlan& plan) {
  int layers = 0, recomputed = 0;
  for (const StageWork& stage : workload.stages) {
    for (const ChunkWork& chunk : stage.chunks) {
      layers += chunk.layers;
      for (int i = 0; i < chunk.layers; ++i)
        recomputed += recomputes_fully(plan, i) ? 1 : 0;
    }
  }
  return layers > 0 ? static_cast<double>(recomputed) / layers : 0.0;
}

BucketParts bucket_parts(const ChunkWork::Bucket& b, const ParallelPlan& plan,
                         double bytes_per_param) {
  BucketParts out;
  if (b.dense > 0 && plan.dense_dp() > 1)
    out.parts[out.count++] = {GroupKind::dp, sim::Bytes::of(b.dense * bytes_per_param)};
  if (b.expert > 0 && plan.expert_dp() > 1)
    out.parts[out.count++] = {GroupKind::edp, sim::Bytes::of(b.expert * bytes_per_param)};
  return out;
}

double chunk_activation_bytes(const ChunkWork& chunk, const ParallelPlan& plan) {
  const int layers = static_cast<int>(chunk.layer_activations.size());
  double bytes = chunk.head_activation_bytes, in_transit = 0;
  for (int i = 0; i < layers; ++i) {
    const ChunkWork::LayerActivations& a = chunk.layer_activations[static_cast<size_t>(i)];
    if (recomputes_fully(plan, i)) {
      bytes += a.input;
    } else if (offloads(plan, i, layers)) {
      in_transit = std::max(in_transit, a.kept);
    } else {
      bytes += a.kept;
    }
  }
  return bytes + in_transit;
}

Workload build_workload(const TransformerConfig& model_in, const ParallelPlan& plan,
                        const TrainingConfig& training, const topologies::GpuSpec& gpu,
                        const ComputeProfile& profile, const LoweringOptions& options) {
  TransformerConfig model = model_in;
  model.seq_len = sequence_length(training, model_in);
  Workload w;
  w.seq_len = model.seq_len;
  w.microbatches = micro_batches(plan, training);
  w.tokens_per_step = static_cast<double>(training.global_batch) * model.seq_len;
  const bool lora = training.task == TrainingTask::lora;
  w.frozen_base = lora;

  Shapes s;
  s.tp = plan.tp;
  s.cp = plan.cp;
  s.ep = plan.ep;
  s.sp = plan.sequence_parallel && plan.tp > 1;
  s.gated = is_gated(model.mlp);
  s.tokens = static_cast<double>(plan.micro_batch) * model.seq_len / plan.cp;
  s.norm_tokens = s.sp ? s.tokens / plan.tp : s.tokens;
  s.moe_tokens = plan.tp > 1 ? s.tokens / plan.tp : s.tokens;
  s.hidden = model.hidden;
  s.q_heads = static_cast<double>(model.heads) / plan.tp;
  if (model.mla) {
    s.kv_heads = s.q_heads;
    s.head_dim = model.mla->qk_nope_head_dim + model.mla->qk_rope_head_dim;
    s.v_dim = model.mla->v_head_dim;
  } else {
    s.kv_heads = rank_kv_heads(model, plan.tp);
    s.head_dim = model.head_dim;
    s.v_dim = model.head_dim;
  }
  s.ffn = static_cast<double>(model.ffn) / plan.tp;
  s.attention_span = model.seq_len;
  if (training.task == TrainingTask::sft) {
    s.attention_span = std::min<double>(model.seq_len, options.sft_document_tokens);
    w.notes.push_back(
        fmt::format("fine-tuning sequences are packed documents of {} tokens: "
                    "attention spans one document",
                    options.sft_document_tokens));
  }

  // Slowdown of compute while a data-parallel collective holds SMs: NCCL runs one block per
  // channel.
  const int channels = 16;
  const double slowdown = sm_contention(profile, gpu, channels);
  w.dp_contention = slowdown;

  const PrecisionRecipe recipe =
      precision_recipe(training, options.software, model.layers, gpu.generation);
  if (recipe.quantizes()) {
    w.notes.push_back(fmt::format(
        "low-precision recipe: {} scaling, {} of {} layers kept in BF16", to_string(recipe.scaling),
        recipe.bf16_first_layers + recipe.bf16_last_layers, model.layers));
  }
  const LayerEmitter emit{model,    plan, training,         s,     gpu, profile,
                          slowdown, lora, options.software, recipe};
  const PipelineLayout layout = stage_layout(plan, model);
  const int virtual_stages = plan.pp * plan.vp;
  w.stages.resize(static_cast<size_t>(plan.pp));
  // First decoder layer of each virtual stage, and the hidden states it sends on: the main one
  // and, past a multi-token-prediction module, that module's too (Megatron-Core concatenates
  // them along the sequence).
  std::vector<int> first_layer(static_cast<size_t>(virtual_stages), 0);
  std::vector<int> hidden_states(static_cast<size_t>(virtual_stages), 1);
  for (int v = 0; v < virtual_stages; ++v) {
    if (v > 0) {
      first_layer[v] = first_layer[v - 1] + layout.stages[v - 1].decoders;
      hidden_states[v] = hidden_states[v - 1];
    }
    hidden_states[v] += layout.stages[v].mtp;
  }
  // A multi-token-prediction module runs a layer of the last layer's kind (precision, experts).
  const int mtp_kind = model.layers - 1;
  const double grad_bytes = options.software.gradient_bytes(training.precision);
  w.grad_bytes = grad_bytes;
  w.optimizer_state_bytes = options.software.optimizer_state_bytes;
  // bf16 weights, plus the low-precision copies Transformer Engine keeps for the forward and the
  // data gradient (PrecisionRecipe::weight_copy_bytes); only those where the parameters are held
  // in that form themselves: FP8 and MXFP8 under fp8_params, NVFP4 under fp4_params.
  const bool fp8_form = recipe.quantizes() && recipe.scaling != ScalingRecipe::nvfp4;
  const bool low_params = (options.software.fp8_params && fp8_form) ||
                          (options.software.fp4_params && recipe.scaling == ScalingRecipe::nvfp4);
  // The data-parallel (ZeRO/FSDP) parameter gather moves what the parameters are stored in: with
  // FP8 parameters (fp8_param_gather) a per-tensor-scaled one (transposes()) is gathered as its
  // uint8 data, one byte; an MXFP8 one in bf16 through the buffer it shares with the gradients,
  // then quantized (Megatron-Core core_v0.15.0 distributed_data_parallel.py,
  // param_and_grad_buffer.py).
  w.param_bytes = options.software.fp8_params && recipe.transposes() ? 1.0 : 2.0;
  w.weight_bytes = low_params ? recipe.weight_copy_bytes(options.software.parameter_transpose_cache)
                              : 2.0 + recipe.weight_copy_bytes(true);
  const Precision lm_precision = Precision::bf16;
  // PyTorch FSDP2 (fully_shard) copies each gathered bucket out of the all-gather buffer into the
  // parameters' own tensors (split_with_sizes_copy) and each bucket's gradients into the
  // reduce-scatter buffer (chunk_cat), both on the compute stream: a read and a write of what
  // the bucket's collectives move (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
  // foreach_all_gather_copy_out and foreach_reduce). FSDP1's FlatParameter and Megatron gather
  // into the parameters' own storage. The step simulator gathers only for full training.
  const bool fsdp2_copies =
      options.software.fsdp == FsdpImpl::pytorch_fsdp2 && plan.zero >= 3 && !lora;

  size_t fwd_ops = 0, bwd_ops = 0;
  for (int stage = 0; stage < plan.pp; ++stage) {
    StageWork& sw = w.stages[stage];
    double sw_weights = 0;  // linear weights of this stage's quantized layers
    for (int chunk = 0; chunk < plan.vp; ++chunk) {
      const int v = chunk * plan.pp + stage;
      ChunkWork c;
      const PipelineLayout::Stage& part = layout.stages[static_cast<size_t>(v)];
      c.first_layer = first_layer[v];
      c.layers = part.decoders;
      c.has_embedding = part.embedding;
      c.has_lm_head = part.loss;
      // Chunks hold about the same layers: each reserves what the largest before it needed.
      ProgramBuilder fwd(gpu, profile, options.software, fwd_ops);
      ProgramBuilder bwd(gpu, profile, options.software, bwd_ops);
      const double T = s.tokens, h = s.hidden;
      const double vocab = static_cast<double>(model.vocab) / plan.tp;
      // The token embedding: looked up for the decoders and, shifted one token per depth, for
      // each multi-token-prediction module.
      // Learned absolute positions add a second lookup and the sum (read both, write one), and
      // backward the position table's gradient, summed over the batch (read, write).
      const bool learned = model.position == PositionEncoding::learned;
      const auto embed = [&] {
        fwd.memory("embedding", (learned ? 5.0 : 2.0) * T * h * kActivationBytes);
        emit.tp_reduce(fwd, T * h);
      };
      const auto embed_backward = [&] {
        emit.tp_gather(bwd, T * h);
        bwd.memory("embedding_bwd", (learned ? 4.0 : 2.0) * T * h * kActivationBytes);
      };
      if (c.has_embedding) {
        embed();
        c.dense_params += vocab * h;
      }
      // Parameters per layer and their data-parallel buckets: layers are grouped, last layer
      // first, until a bucket holds the plan's bucket bytes of gradients (one layer each when 0).
      // The chunk's multi-token-prediction modules follow its decoder layers: their layer, the
      // eh_proj (2h -> h, column-parallel) and the enorm, hnorm and final norm.
      std::vector<LayerParams> params;
      for (int l = c.first_layer; l < c.first_layer + c.layers; ++l) {
        params.push_back(layer_params(model, s, l, training.lora_rank, lora));
      }
      for (int d = 0; d < part.mtp; ++d) {
        LayerParams p = layer_params(model, s, mtp_kind, training.lora_rank, lora);
        p.dense += 2.0 * h * h / plan.tp + 3.0 * h;
        p.linear += 2.0 * h * h / plan.tp;
        params.push_back(p);
      }
      const auto is_mtp = [&](size_t i) { return i >= static_cast<size_t>(c.layers); };
      const auto layer_of = [&](size_t i) {
        return is_mtp(i) ? mtp_kind : c.first_layer + static_cast<int>(i);
      };
      // Without the embedding, a chunk with MTP modules builds its own copy of it (Megatron-Core's
      // GPTModel builds one where pre_process or mtp_process), trained and reduced like a layer.
      const double mtp_embedding = part.mtp > 0 && !c.has_embedding ? vocab * h : 0.0;
      std::vector<int> bucket_of(params.size(), 0);
      {
        const double bucket_bytes = chunk > 0 && options.software.bucket_first_chunk_only
                                        ? std::numeric_limits<double>::infinity()
                                        : plan.gradient_bucket_bytes();
        double filled = 0;
        int bucket = 0;
        for (size_t i = params.size(); i-- > 0;) {
          const double bytes =
              (lora ? params[i].lora : params[i].dense + params[i].expert) * grad_bytes;
          if (filled > 0 && filled >= bucket_bytes) {
            ++bucket;
            filled = 0;
          }
          bucket_of[i] = bucket;
          filled += bytes;
        }
        c.buckets.assign(static_cast<size_t>(bucket + 1), ChunkWork::Bucket{});
        for (size_t i = 0; i < params.size(); ++i) {
          ChunkWork::Bucket& b = c.buckets[static_cast<size_t>(bucket_of[i])];
          b.dense += lora ? params[i].lora : params[i].dense;
          b.expert += lora ? 0.0 : params[i].expert;
        }
        if (params.empty()) c.buckets.assign(1, ChunkWork::Bucket{});
      }
      const double head_params = vocab * h;
      if (!lora) {
        if (c.has_embedding) c.buckets.back().dense += head_params;
        if (c.has_lm_head) c.buckets.front().dense += head_params;
        c.buckets.front().dense += mtp_embedding;
      }
      // Offloaded layers' activations go to host memory as each layer produces them, hidden by
      // its forward, and come back during the backward of the layer above (offloads()).
      const auto offloaded = [&](size_t i) {
        return offloads(plan, static_cast<int>(i), static_cast<int>(params.size()));
      };
      const auto copied = [&](int bucket, double bytes_per_param) {
        if (!fsdp2_copies) return 0.0;
        const ChunkWork::Bucket& b = c.buckets[static_cast<size_t>(bucket)];
        return 2.0 * bucket_parts(b, plan, bytes_per_param).total().count();
      };
      const auto gate = [&](ProgramBuilder& pass, int bucket) {
        pass.marker(WorkOp::Kind::param_gate, bucket);
        pass.memory("fsdp_copy_out", copied(bucket, w.param_bytes));
      };
      const auto bucket_ready = [&](int bucket) {
        bwd.memory("fsdp_copy_in", copied(bucket, grad_bytes));
        bwd.marker(WorkOp::Kind::bucket_ready, bucket);
      };
      for (size_t i = 0; i < params.size(); ++i) {
        if (i == 0 || bucket_of[i] != bucket_of[i - 1]) gate(fwd, bucket_of[i]);
        const int layer = layer_of(i);
        const sim::Time before = fwd.compute_time();
        if (is_mtp(i)) {
          // enorm(embedding of the next tokens) and hnorm(hidden), concatenated, projected.
          embed();
          fwd.norm("mtp_norms", 2.0 * s.norm_tokens * h, false, emit.rms_norm());
          emit.tp_gather(fwd, 2.0 * T * h);
          fwd.gemm("mtp_eh_proj", lm_precision, T, h / plan.tp, 2.0 * h);
        }
        emit.at(layer, static_cast<int>(i)).forward(fwd, layer);
        c.layer_activations.push_back({emit.activations(layer, plan.recompute == Recompute::full),
                                       emit.activations(layer, true)});
        if (offloaded(i)) {
          fwd.host_copy("offload_wait", c.layer_activations[i].kept, true,
                        fwd.compute_time() - before);
        }
        if (recipe.quantized(layer)) sw_weights += params[i].linear;
      }
      gate(bwd, 0);
      // The output head and the loss, once for the next token and once per MTP depth (the
      // modules share the head; each has its own final norm).
      const int predictions = c.has_lm_head ? 1 + model.mtp_layers : 0;
      for (int prediction = 0; prediction < predictions; ++prediction) {
        fwd.norm("final_norm", s.norm_tokens * h, false, emit.rms_norm());
        emit.tp_gather(fwd, T * h);
        fwd.gemm("lm_head", lm_precision, T, vocab, h);
        // Cross-entropy over the vocabulary shard, as the software's loss kernel runs it.
        fwd.memory("loss", loss_bytes_per_logit(options.software.loss, false) * T * vocab);
        if (plan.tp > 1) fwd.comm(GroupKind::tp, CollectiveOp::all_reduce, 2.0 * 4.0 * T);
        c.head_activation_bytes += T * vocab * 4.0 + T * h * kActivationBytes;
        // Backward of the head.
        bwd.memory("loss_bwd", loss_bytes_per_logit(options.software.loss, true) * T * vocab);
        bwd.gemm("lm_head_dgrad", lm_precision, T, h, vocab);
        if (!lora) bwd.gemm("lm_head_wgrad", lm_precision, h, vocab, T);
        emit.tp_reduce(bwd, T * h);
        bwd.norm("final_norm_bwd", s.norm_tokens * h, true, emit.rms_norm());
      }
      if (c.has_lm_head && (!model.tied_embeddings || plan.pp > 1)) c.dense_params += head_params;
      c.dense_params += mtp_embedding;
      for (size_t i = params.size(); i-- > 0;) {
        // ZeRO-3 gathers each bucket again before its backward (bucket 0, the last layers', was
        // gated before the head).
        if (i + 1 < params.size() && bucket_of[i] != bucket_of[i + 1]) gate(bwd, bucket_of[i]);
        const int layer = layer_of(i);
        const sim::Time before = bwd.compute_time();
        emit.at(layer, static_cast<int>(i)).backward(bwd, layer);
        if (is_mtp(i)) {
          bwd.gemm("mtp_eh_proj_dgrad", lm_precision, T, 2.0 * h, h / plan.tp);
          if (!lora) bwd.gemm("mtp_eh_proj_wgrad", lm_precision, 2.0 * h, h / plan.tp, T);
          emit.tp_reduce(bwd, 2.0 * T * h);
          bwd.norm("mtp_norms_bwd", 2.0 * s.norm_tokens * h, true, emit.rms_norm());
          embed_backward();
        }
        // The next layer's activations come back while this one's backward runs.
        if (i > 0 && offloaded(i - 1)) {
          bwd.host_copy("reload_wait", c.layer_activations[i - 1].kept, false,
                        bwd.compute_time() - before);
        }
        if (i == 0 || bucket_of[i] != bucket_of[i - 1]) {
          if (!(i == 0 && c.has_embedding)) bucket_ready(bucket_of[i]);
        }
      }
      if (c.has_embedding) {
        embed_backward();
        bucket_ready(bucket_of.empty() ? 0 : bucket_of.front());
      } else if (params.empty()) {
        bucket_ready(0);  // a chunk of the head alone
      }
      // Delayed scaling rolls every quantized tensor's amax history and recomputes its scale
      // once per pass, in one bulk kernel at the end of the FP8 autocast region.
      for (ProgramBuilder* pass : {&fwd, &bwd}) {
        if (pass->quantized_tensors() > 0) {
          pass->memory("fp8_scale_update", recipe.scale_update_bytes(pass->quantized_tensors()));
        }
      }
      c.activation_bytes = chunk_activation_bytes(c, plan);
      c.forward = fwd.take();
      c.backward = bwd.take();
      fwd_ops = std::max(fwd_ops, c.forward.ops.size());
      bwd_ops = std::max(bwd_ops, c.backward.ops.size());
      for (const LayerParams& p : params) {
        c.expert_params += p.expert;
        c.dense_params += p.dense;
        c.trainable_params += lora ? p.lora : p.dense + p.expert;
      }
      if (!lora)
        c.trainable_params +=
            (c.has_embedding ? head_params : 0) + (c.has_lm_head ? head_params : 0) + mtp_embedding;
      c.p2p_bytes =
          sim::Bytes::of(hidden_states[v] * T * h * kActivationBytes / (s.sp ? plan.tp : 1));
      sw.dense_params += c.dense_params;
      sw.expert_params += c.expert_params;
      sw.trainable_params += c.trainable_params;
      sw.chunks.push_back(std::move(c));
    }
    // Adam over this rank's shard of the trainable parameters: the master weights and two
    // moments read and written (24 bytes in fp32, 12 in bf16), the fp32 gradient read and the
    // bf16 copy written back (~34 bytes per parameter in all with fp32 state).
    const double dense_share = plan.zero >= 1 ? 1.0 / plan.dense_dp() : 1.0;
    const double edp = plan.expert_dp();
    const double expert_share = plan.zero >= 1 ? 1.0 / edp : 1.0;
    double trainable;
    if (lora) {
      trainable = sw.trainable_params * dense_share;
    } else {
      trainable = (sw.dense_params * dense_share + sw.expert_params * expert_share);
    }
    const double optimizer_bytes = 6.0 * w.optimizer_state_bytes + 10.0;
    sw.optimizer = sim::Time::from_s(memory_seconds(gpu, profile, optimizer_bytes * trainable)) +
                   profile.kernel_launch;
    // The quantized weights are cast once per step, on the first micro-batch (TE caches them for
    // the others, Megatron's is_first_microbatch), or by the optimizer when it gathers FP8
    // parameters: a per-step cost beside the optimizer's. About four weight tensors per layer
    // (QKV, projection, FC1, FC2; grouped experts quantized as one). A LoRA run's frozen base
    // held in its low-precision form alone (fp8_params: built under fp8_model_init; fp4_params)
    // never changes: nothing to cast.
    if (sw_weights > 0 && !(lora && low_params)) {
      // Without a transpose cache the step's cast makes the rowwise copy alone.
      const bool columnwise = options.software.parameter_transpose_cache;
      const std::vector<QuantKernel> kernels =
          recipe.quantize(TensorRole::weight, Producer::standalone, columnwise);
      const double bytes =
          recipe.bytes_per_element(TensorRole::weight, Producer::standalone, columnwise);
      double layers = 0;
      for (const ChunkWork& c : sw.chunks) {
        for (int l = c.first_layer; l < c.first_layer + c.layers; ++l)
          layers += recipe.quantized(l);
      }
      sw.weight_quantize =
          sim::Time::from_s(memory_seconds(gpu, profile, bytes * sw_weights) +
                            kWeightTensorsPerLayer * layers * static_cast<double>(kernels.size()) *
                                profile.kernel_launch.s());
      sw.optimizer += sw.weight_quantize;
    }
  }

  // FLOP accounting over all GPUs.
  const double replicas = static_cast<double>(plan.tp) * plan.cp * plan.dp;
  for (const StageWork& sw : w.stages) {
    for (const ChunkWork& c : sw.chunks) {
      w.executed_flops += (c.forward.flops + c.backward.flops) * w.microbatches * replicas;
    }
  }
  // Model FLOPs: the work of the forward and backward passes a dense implementation must do,
  // attention counted over the span it attends non-causally (the Megatron/NeMo convention);
  // LoRA computes no weight gradients for its frozen base, so its backward is one forward.
  const FlopsPerToken f = flops_per_token(model);
  const double attention = f.attention_scores * s.attention_span / model.seq_len;
  w.model_flops = (f.dense_matmul + attention) * (lora ? 2.0 : 3.0) * w.tokens_per_step;
  w.model_attention_flops = attention * (lora ? 2.0 : 3.0) * w.tokens_per_step;
  return w;
}

}  // namespace fabricsim::models
