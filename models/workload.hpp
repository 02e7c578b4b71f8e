#pragma once
// Lowers a transformer, a parallelism plan and a training configuration into what one pipeline
// stage executes: for each of its model chunks, the forward and backward program of one
// micro-batch (GEMMs with their per-shard M, N, K; flash attention; memory-bound kernels; the TP,
// CP and EP communication between them), the gradient buckets data parallelism reduces, the
// activations each micro-batch keeps alive, and the optimizer step. Compute durations are fixed
// here from the compute model; communication is timed by whoever executes the programs.

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/collective_op.hpp"
#include "models/compute_profile.hpp"
#include "models/parallel_plan.hpp"
#include "models/software_stack.hpp"
#include "models/transformer.hpp"
#include "sim/units.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

enum class ComputeKind : uint8_t { gemm, attention, memory };

/// One step of a pass program.
struct WorkOp {
  enum class Kind : uint8_t {
    compute,     ///< runs on the compute stream for `duration`
    comm,        ///< a collective the compute stream waits for
    comm_start,  ///< starts a collective in `slot` and carries on (overlap)
    comm_wait,   ///< waits for the collective in `slot`
    /// The parameters of bucket `slot` must have been gathered: in the first forward of a chunk
    /// with ZeRO-1/2 overlapped gathers, and in every pass with ZeRO-3.
    param_gate,
    /// Backward: the gradients of bucket `slot` are complete (reduced during the last
    /// micro-batch when data-parallel communication overlaps backward).
    bucket_ready,
  };
  // What the interpreter reads for every op comes first, in one cache line: a step's programs
  // are walked once per evaluation and outgrow the caches.
  Kind kind = Kind::compute;
  ComputeKind compute = ComputeKind::gemm;
  GroupKind group = GroupKind::tp;
  CollectiveOp op = CollectiveOp::all_reduce;
  int slot = 0;
  /// Compute ops run back to back from this one up to op `run_end` (exclusive), taking
  /// `run_duration` in all: an interpreter without per-kernel work (no trace, no slowdown)
  /// steps over them at once. Set with the program.
  uint32_t run_end = 0;
  /// comm_start: the collective starts only once the one in slot `after` has finished (they
  /// run in order on one stream); -1: as soon as it is issued.
  int32_t after = -1;
  sim::Time run_duration;
  sim::Time duration;  ///< compute duration on an otherwise idle GPU
  sim::Bytes bytes;    ///< nccl-tests "size" of the collective
  /// An expert-parallel token dispatch or combine through DeepEP's normal or Hybrid-EP kernels
  /// (software `moe_dispatcher` deepep or hybridep): timed by models/moe_alltoall from the EP
  /// group's shape, not run as an NCCL all-to-all. `tokens` 0: an ordinary collective.
  struct MoeTokens {
    double tokens = 0;  ///< tokens per rank entering the dispatch
    int hidden = 0, top_k = 0, experts = 0;
    bool fp8 = false;       ///< FP8 payload (forward dispatch of a low-precision run)
    bool combine = false;   ///< combine (and the backward of dispatch) rather than dispatch
    bool hybridep = false;  ///< Hybrid-EP's kernels rather than DeepEP's normal ones
    friend bool operator==(const MoeTokens&, const MoeTokens&) = default;
  } moe;
  const char* name = "";
  /// Part of `duration` that is not the kernel's own work: the gap between dependent kernels and
  /// the wait for a launch that takes longer than the kernel (host-bound).
  sim::Time overhead;
  double flops = 0;  ///< FLOPs the kernel executes
  /// GEMMs: the shape one kernel runs (M rows after any overlap split) and how many run.
  struct GemmShape {
    double m = 0, n = 0, k = 0, batch = 1;
    int count = 1;
    topologies::Precision precision = topologies::Precision::bf16;
  } gemm;
};

static_assert(offsetof(WorkOp, moe) + sizeof(WorkOp::MoeTokens) <= 64,
              "the interpreter's fields of WorkOp fit one cache line");

struct PassProgram {
  std::vector<WorkOp> ops;
  sim::Time compute;  ///< the compute ops' durations, summed
  double flops = 0;
  /// By slot: the fraction by which compute runs slower while the collective started in that
  /// slot is in flight (its kernels hold SMs), booked when the compute stream waits for it; 0 or
  /// past the end: the program's compute durations already carry any slowdown. Kept here, not
  /// in WorkOp, which every op of every program carries.
  std::vector<double> slot_contention;
  double contention_of(int slot) const {
    return static_cast<size_t>(slot) < slot_contention.size()
               ? slot_contention[static_cast<size_t>(slot)]
               : 0.0;
  }
};

struct ChunkWork {
  int first_layer = 0;
  int layers = 0;
  bool has_embedding = false;
  bool has_lm_head = false;
  PassProgram forward;
  PassProgram backward;  ///< includes recomputation
  /// Per layer of the chunk, bytes one micro-batch keeps from forward to backward under the
  /// plan's recompute mode, and under full recomputation (the layer input only).
  struct LayerActivations {
    double kept = 0;
    double input = 0;
  };
  std::vector<LayerActivations> layer_activations;
  double head_activation_bytes = 0;  ///< the LM head's and the loss's (last virtual stage)
  /// kept per micro-batch from forward to backward under the plan it was built for
  /// (chunk_activation_bytes)
  double activation_bytes = 0;
  double dense_params = 0;  ///< parameters of this chunk on this rank (non-expert)
  double expert_params = 0;
  double trainable_params = 0;  ///< LoRA: adapters only
  /// Data-parallel buckets in the order backward completes them (last layers first): the
  /// trainable parameters they reduce (dense over DP, expert over expert-DP).
  struct Bucket {
    double dense = 0;
    double expert = 0;
  };
  std::vector<Bucket> buckets;
  sim::Bytes p2p_bytes;  ///< activation (and its gradient) passed between virtual stages
};

/// Whether layer `index` of a model chunk of `layers` recomputes fully under `plan` (the chunk's
/// first plan.recompute_layers, or every layer under full recomputation), and whether its
/// activations are offloaded to host memory (the next plan.offload_layers, never the last).
bool recomputes_fully(const ParallelPlan& plan, int index);
bool offloads(const ParallelPlan& plan, int index, int layers);
/// Bytes a chunk keeps per micro-batch from forward to backward under `plan`'s recompute_layers
/// and offload_layers (HBM holds one offloaded layer's in transit); `chunk` was lowered with the
/// same recompute mode.
double chunk_activation_bytes(const ChunkWork& chunk, const ParallelPlan& plan);

/// A bucket's data-parallel collectives at `bytes_per_param`: dense parameters over DP, expert
/// ones over expert-DP, none over a group of one member (at most two, held inline).
struct BucketParts {
  std::array<std::pair<GroupKind, sim::Bytes>, 2> parts{};
  size_t count = 0;
  const std::pair<GroupKind, sim::Bytes>* begin() const { return parts.data(); }
  const std::pair<GroupKind, sim::Bytes>* end() const { return parts.data() + count; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  sim::Bytes total() const {
    sim::Bytes sum;
    for (const auto& part : *this)
      sum += part.second;
    return sum;
  }
};
BucketParts bucket_parts(const ChunkWork::Bucket& bucket, const ParallelPlan& plan,
                         double bytes_per_param);

struct StageWork {
  std::vector<ChunkWork> chunks;
  /// Once per step after the last backward: the optimizer, and the low-precision cast of the
  /// quantized weights (`weight_quantize` of it).
  sim::Time optimizer;
  sim::Time weight_quantize;
  double dense_params = 0;
  double expert_params = 0;
  double trainable_params = 0;
};

struct Workload {
  std::vector<StageWork> stages;
  int microbatches = 0;
  int seq_len = 0;
  double tokens_per_step = 0;
  /// Per step over all GPUs: FLOPs the kernels execute (causal attention, recomputation), and
  /// the model FLOPs of the Megatron convention (3 x forward, full attention, no recomputation).
  double executed_flops = 0;
  double model_flops = 0;
  /// The part of model_flops that is attention scores (QK^T and AV): conventions that count
  /// causal attention take half of it (SoftwareStack::causal_flops).
  double model_attention_flops = 0;
  /// Bytes of one gradient element in the data-parallel reduction and of a parameter gathered.
  double grad_bytes = 2;
  double param_bytes = 2;
  /// Bytes per element of the optimizer's state (SoftwareStack::optimizer_state_bytes).
  double optimizer_state_bytes = 4;
  /// Bytes held per parameter of the model's own weights (SoftwareStack::fp8_params: 1 where only
  /// the FP8 form is kept; bf16 and, in a low-precision run, its FP8 copy otherwise).
  double weight_bytes = 2;
  bool frozen_base = false;  ///< LoRA: base weights neither reduced nor gathered
  /// How much slower compute runs while a data-parallel collective holds SMs (a fraction): NCCL
  /// runs one block per channel.
  double dp_contention = 0;
  std::vector<std::string> notes;
};

/// Options of the lowering that are not part of the plan.
struct LoweringOptions {
  /// Average document length inside packed fine-tuning sequences (attention spans one
  /// document): SQuAD-like samples.
  int sft_document_tokens = 256;
  /// The training software: its attention kernel, CUDA graphs and MoE dispatch change the
  /// kernels the lowering emits (its TP overlap and buckets are already in the plan).
  SoftwareStack software = default_software();
};

/// Where a stage's compute time goes, per step (all micro-batches, forward and backward,
/// recomputation included, on an otherwise idle GPU), so each mechanism can be checked alone.
struct OpClassSeconds {
  double gemm = 0;         ///< weight GEMMs (dense and grouped expert GEMMs)
  double attention = 0;    ///< attention kernels (flash, or the unfused score GEMMs)
  double memory = 0;       ///< norms, rotary, activations, residuals, softmax, embedding
  double loss = 0;         ///< cross-entropy over the vocabulary, forward and backward
  double fp8 = 0;          ///< the recipe's quantization kernels (models/precision_recipe)
  double moe_routing = 0;  ///< router GEMMs, token permutation and unpermutation
  double launch_gaps = 0;  ///< kernel gaps and host-bound launches (the `overhead` of each op)
  double optimizer = 0;
  double total() const {
    return gemm + attention + memory + loss + fp8 + moe_routing + launch_gaps + optimizer;
  }
};

OpClassSeconds op_class_seconds(const Workload& workload, int stage);
/// {"gemm_s": ..., "attention_s": ..., ..., "total_s": ...}
nlohmann::json op_class_json(const OpClassSeconds& c);

/// The share of the model's layers that recompute fully under `plan` (recomputes_fully over
/// every chunk's layers): 1 under full recomputation.
double fully_recomputed_share(const Workload& workload, const ParallelPlan& plan);

Workload build_workload(const TransformerConfig& model, const ParallelPlan& plan,
                        const TrainingConfig& training, const topologies::GpuSpec& gpu,
                        const ComputeProfile& profile, const LoweringOptions& options = {});

}  // namespace fabricsim::models
