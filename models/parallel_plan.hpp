#pragma once
// A parallelism plan (TP/PP/DP/CP/EP, ZeRO, recomputation, micro-batching, overlap options), the
// training configuration it runs, and where each rank sits: its coordinates and its groups.
//
// Placement is by dimension order, innermost first (default tp, cp, dp, pp: TP inside the NVLink
// domain, PP outermost). Experts are folded into the tp x cp x dp ranks of a pipeline stage
// (Megatron-Core parallel folding, expert TP 1): an EP group is `ep` consecutive ranks of that
// flattened index, so EP sits just outside CP.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/pipeline_layout.hpp"
#include "models/transformer.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

enum class Recompute { none, selective, full };
/// How context-parallel ranks share attention (Megatron-Core's cp_comm_type): `p2p` passes K and
/// V around a ring, each step attending one block (the default); `a2a` trades sequence shards
/// for head shards by all-to-all, each rank attending the whole sequence with heads / cp;
/// `all_gather` gathers every rank's K and V, each rank attending its own queries over them.
enum class CpComm { p2p, a2a, all_gather };
enum class TrainingTask { pretrain, sft, lora };
enum class ParallelDim { tp, cp, dp, pp };
/// Kinds of communication group a rank belongs to. edp: expert data parallel (ranks holding the
/// same experts, which reduce expert gradients together).
enum class GroupKind : uint8_t { tp, cp, dp, pp, ep, edp };

std::string_view to_string(Recompute r);
std::string_view to_string(CpComm c);
/// The communication type `name` names (to_string's), or nullopt.
std::optional<CpComm> cp_comm_from(std::string_view name);
std::string_view to_string(TrainingTask t);

/// Modules Megatron-Core recomputes under selective recomputation (recompute_modules) beyond the
/// attention core: the module's output is not kept for the backward, which reruns its forward.
/// A bit set.
enum class RecomputeModule : uint8_t {
  layernorm = 1,    ///< the two norms of a layer (their outputs, the QKV and FC1 inputs)
  moe_act = 2,      ///< the experts' activation (its output, FC2's input)
  mla_up_proj = 4,  ///< MLA's up projections (the queries, keys and values they make)
  mlp = 8,          ///< a dense layer's whole MLP (only its input is kept)
};
/// The modules named in `text` ("layernorm,moe_act"; Megatron's core_attn, a no-op under fused
/// attention, is accepted), or nullopt with what is wrong in `error`.
std::optional<uint8_t> parse_recompute_modules(std::string_view text, std::string* error);
/// The names of the modules in `modules`, comma-separated, in enum order.
std::string recompute_modules_text(uint8_t modules);
std::string_view to_string(ParallelDim d);
std::string_view to_string(GroupKind g);

struct ParallelPlan {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  CpComm cp_comm = CpComm::p2p;
  int ep = 1;
  int vp = 1;  ///< virtual stages per pipeline rank (interleaved 1F1B when > 1)
  bool sequence_parallel = true;
  int zero = 1;  ///< 0 plain DP, 1 distributed optimizer, 2 + sharded grads, 3 FSDP
  Recompute recompute = Recompute::selective;
  /// Of each model chunk's layers, the first this many recompute fully in backward whatever
  /// `recompute` says (Megatron's recompute_num_layers, block method); a chunk with fewer
  /// layers recomputes them all.
  int recompute_layers = 0;
  /// RecomputeModule bits rerun in backward by the layers that do not recompute fully.
  uint8_t recompute_modules = 0;
  bool recomputes(RecomputeModule m) const {
    return recompute != Recompute::full && (recompute_modules & static_cast<uint8_t>(m)) != 0;
  }
  /// Of each model chunk's layers (after those recomputed), the next this many keep their
  /// activations in host memory between forward and backward, copied over the GPU's host link
  /// while the neighbouring layers compute (Megatron-Core cpu_offloading_num_layers).
  int offload_layers = 0;
  int micro_batch = 1;
  bool tp_comm_overlap = true;       ///< overlap TP collectives with their GEMMs (needs SP)
  bool dp_comm_overlap = true;       ///< overlap gradient reduction with backward compute
  bool param_gather_overlap = true;  ///< overlap ZeRO parameter all-gather with forward
  double bucket_bytes = 0;           ///< gradient bucket size; 0 = one bucket per layer
  /// Gradient bucket bytes per data x context-parallel rank: Megatron-Core's default bucket
  /// grows with the reduction group so that its collectives stay bandwidth-bound.
  double bucket_bytes_per_dp_rank = 0;
  /// Allow layers that do not divide by pp x vp: the first and last virtual stages, which also
  /// hold the embedding and the LM head, take the shortfall.
  bool balanced_pipeline = false;
  /// Megatron-Core's pipeline layout string (models/pipeline_layout.hpp): what each virtual
  /// stage builds; empty: layers_per_virtual_stage's split, the MTP modules with the loss.
  std::string pipeline_layout;
  std::array<ParallelDim, 4> order{ParallelDim::tp, ParallelDim::cp, ParallelDim::dp,
                                   ParallelDim::pp};

  int gpus() const { return tp * pp * dp * cp; }
  /// The tp x cp x dp ranks of one pipeline stage.
  int stage_ranks() const { return tp * cp * dp; }
  /// The ranks of a stage that hold the same dense parameters, over which their gradients are
  /// reduced and ZeRO shards them: data x context parallel (context-parallel ranks train on other
  /// tokens of the same sequences; Megatron-Core reduces gradients and shards its distributed
  /// optimizer over data_parallel_group(with_context_parallel=True)).
  int dense_dp() const { return dp * cp; }
  /// Gradient bytes per data-parallel bucket: the fixed size or the one that grows with the
  /// ranks, whichever is larger (0: one bucket per layer).
  double gradient_bucket_bytes() const {
    return std::max(bucket_bytes, bucket_bytes_per_dp_rank * dense_dp());
  }
  /// Expert data parallelism: experts are folded into a stage's ranks, `ep` to a group, so
  /// stage_ranks / ep ranks hold the same experts.
  int expert_dp() const { return stage_ranks() / ep; }
};

struct TrainingConfig {
  TrainingTask task = TrainingTask::pretrain;
  topologies::Precision precision = topologies::Precision::bf16;
  int global_batch = 0;  ///< sequences per optimizer step
  int seq_len = 0;       ///< 0 = the model's
  int lora_rank = 16;
  bool causal = true;
  /// Flash-style attention (scores never leave the SM), or the pre-2023 kernels that write the
  /// score matrix to HBM between two batched GEMMs (Megatron's fused softmax).
  bool unfused_attention = false;
  /// FP8 scaling granularity: per-tensor delayed scaling or 1x128/128x128 blocks (DeepSeek).
  bool fp8_blockwise = false;
  double tokens_to_train = 0;  ///< for time-to-train reports; 0 = not asked
};

/// The sequence length a training configuration runs: its own, else the model's.
int sequence_length(const TrainingConfig& training, const TransformerConfig& model);

/// Key/value heads a TP rank holds: its share, or one replicated when tp exceeds them; MLA keeps
/// a key and value per query head.
int rank_kv_heads(const TransformerConfig& model, int tp);

/// Why a plan cannot run: the field at fault (a JSON pointer below the plan's or the training
/// section's path) and the reason.
struct PlanProblem {
  /// Which check failed, for callers that count reasons (the plan search) rather than print them.
  enum class Kind {
    size,
    gpus,
    zero,
    heads,
    kv_heads,
    layers,
    experts,
    batch,
    interleave,
    sequence,
    sequence_parallel
  };
  Kind kind = Kind::size;
  std::string field;  ///< "/tp", "" for the plan as a whole, "/training/global_batch"
  std::string message;
  bool in_training = false;  ///< the field is the training section's, not the plan's
};

/// The first reason `plan` cannot run `training` of `model` on `gpus` GPUs, if any. Checks: the
/// GPUs factor as tp x cp x dp x pp; heads and kv heads divide by tp; layers divide by pp x vp
/// (unless balanced, where they fill all but the first and last virtual stages); experts divide by
/// ep and ep divides tp x cp x dp; the global batch divides by dp x micro_batch; the sequence
/// divides by cp (and by 2 cp for load-balanced causal CP); all-to-all CP's heads divide by cp.
std::optional<PlanProblem> check_plan(const ParallelPlan& plan, const TrainingConfig& training,
                                      const TransformerConfig& model, int gpus);

/// Rejects impossible plans with check_plan's reason (InputError at `where`/`path`, or at
/// /training/global_batch for the batch).
void validate_plan(const ParallelPlan& plan, const TrainingConfig& training,
                   const TransformerConfig& model, int gpus, const std::string& where,
                   const std::string& path);

/// Most micro-batches per pipeline per step a plan may have: each is simulated (docs/formats.md).
inline constexpr int kMaxMicroBatches = 1 << 16;

/// Micro-batches per pipeline per step.
int micro_batches(const ParallelPlan& plan, const TrainingConfig& training);

struct Coordinates {
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
  /// Index within the stage's tp x cp x dp ranks, TP fastest; EP group = flat / ep.
  int flat = 0;
};

class Placement {
 public:
  Placement(const ParallelPlan& plan, int gpus);
  const ParallelPlan& plan() const { return plan_; }
  int gpus() const { return gpus_; }
  Coordinates coordinates(int rank) const;
  int rank_of(const Coordinates& c) const;
  /// The coordinates of index `flat` (TP fastest, then CP, then DP) of pipeline stage `stage`.
  Coordinates at_flat(int flat, int stage) const;
  /// The members of `rank`'s group of `kind`, in group order.
  std::vector<uint32_t> group(GroupKind kind, int rank) const;
  /// One representative rank per pipeline stage: tp = cp = dp = 0.
  int stage_representative(int stage) const;
  /// Every group of `kind` that contains a rank of pipeline stage `stage` (for pp: all
  /// pipelines). Used to launch all symmetric instances of a collective at once.
  std::vector<std::vector<uint32_t>> stage_groups(GroupKind kind, int stage) const;
  /// "tp-cp-dp-pp", innermost first.
  std::string order_string() const;

 private:
  ParallelPlan plan_;
  int gpus_;
  std::array<int, 4> stride_{};  // indexed by ParallelDim
};

/// Parses "tp-cp-dp-pp" (an "ep" entry is accepted and ignored: experts are folded). Returns
/// nullopt for anything else.
std::optional<std::array<ParallelDim, 4>> parse_order(const std::string& text);

/// Layers of the model held by each virtual stage, in model order: index = chunk * pp + stage
/// for interleaved schedules (Megatron's layout: chunk c of stage s holds virtual stage c*pp+s).
/// The plan's pipeline_layout when it has one (check_plan has accepted it).
std::vector<int> layers_per_virtual_stage(const ParallelPlan& plan, int layers);

/// What each virtual stage builds: the plan's pipeline_layout, else layers_per_virtual_stage's
/// split with the embedding on the first virtual stage and the model's MTP modules, the output
/// head and the loss on the last (Megatron-Core's placement without a layout).
PipelineLayout stage_layout(const ParallelPlan& plan, const TransformerConfig& model);

}  // namespace fabricsim::models
