#pragma once
// The space of parallelism plans for a model on a GPU count: every TP, CP, PP, VP, DP, EP,
// micro-batch, recomputation and ZeRO choice the constraints allow, with the plans that cannot
// divide rejected by reason (a value: the planner meets thousands of them). Overlap switches and
// placement orders are the second layer of the space (`plan_variants`): they change neither
// divisibility nor memory, so they are expanded only for plans that fit.

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/parallel_plan.hpp"
#include "models/transformer.hpp"

namespace fabricsim::api {

/// Why a candidate plan was dropped. The divisibility reasons mirror models::validate_plan.
enum class Rejection {
  heads,              ///< attention heads do not divide by tp
  kv_heads,           ///< key/value heads can neither be split nor replicated over tp
  layers,             ///< layers do not fill pp x vp stages
  experts,            ///< experts do not divide by ep, or ep not by tp x cp x dp
  batch,              ///< global batch does not divide by dp x micro_batch
  interleave,         ///< interleaved schedule: micro-batches not divisible by pp
  sequence,           ///< sequence does not divide into the context-parallel chunks
  sequence_parallel,  ///< tokens per CP rank do not divide by tp
  memory,             ///< does not fit in HBM
};
inline constexpr std::array kRejections{
    Rejection::heads, Rejection::kv_heads,   Rejection::layers,   Rejection::experts,
    Rejection::batch, Rejection::interleave, Rejection::sequence, Rejection::sequence_parallel,
    Rejection::memory};
std::string_view to_string(Rejection r);

/// What the user allows. Unset fields take the defaults documented in docs/cli.md (`plan`).
struct PlanConstraints {
  /// Sizes the user fixed: "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "zero".
  std::map<std::string, int> fixed;
  int max_tp = 0;  ///< 0: the scale-up (NVLink) domain size
  int max_pp = 0;  ///< 0: the layer count
  int max_cp = 16;
  int max_vp = 32;  ///< interleavings tried: those that split the layers evenly
  int max_micro_batch = 8;
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::vector<models::Recompute> recompute{models::Recompute::none, models::Recompute::selective,
                                           models::Recompute::full};
  bool allow_cp = true;
  bool allow_ep = true;
  bool allow_vp = true;
  /// Layers that do not divide by pp x vp may be balanced (first and last stages take fewer).
  bool allow_unbalanced = true;
  /// Expand overlap switches (TP overlap, DP overlap, parameter-gather overlap: on and off) and
  /// placement orders (TP innermost; CP, DP and PP in any order) for plans that fit.
  bool search_overlap = true;
  bool search_order = true;
  /// A shape whose activations do not fit is tried again with the fewest layers per chunk
  /// recomputed fully, and with the fewest offloaded to host memory, that fit (recipes' remedies).
  bool fit_layers = true;
};

/// Reads a "--fix" item such as "tp=8"; throws sim::InputError naming the flag otherwise.
void add_fixed(PlanConstraints& constraints, const std::string& item, const std::string& flag);

/// The first reason `plan` cannot run (models::check_plan's, as a countable category), or nullopt.
/// The GPU count is the plan's own tp x cp x dp x pp.
std::optional<Rejection> plan_rejection(const models::ParallelPlan& plan,
                                        const models::TrainingConfig& training,
                                        const models::TransformerConfig& model);

struct PlanSpace {
  /// Plans that divide, in a fixed order (tp, cp, pp, vp, ep, micro-batch, recompute, zero);
  /// overlap switches and order are those of `base`.
  std::vector<models::ParallelPlan> plans;
  std::map<Rejection, long long> rejected;
  long long candidates = 0;  ///< every combination looked at, rejected or not
};

/// Enumerates the plans for `gpus` GPUs. `base` supplies what is not searched (sequence
/// parallelism, bucket size, overlap switches, order, and a pipeline layout, kept for the
/// pipelines of its stage count and searched with the interleaving it implies, the default split
/// elsewhere); `domain` is the scale-up domain size.
PlanSpace enumerate_plans(const models::ParallelPlan& base, const models::TransformerConfig& model,
                          const models::TrainingConfig& training, int gpus, int domain,
                          const PlanConstraints& constraints);

/// The overlap and order variants of a plan that fits, `plan` itself first. Switches that have
/// no effect on the plan (TP overlap at tp 1, DP overlap at dp 1, parameter gathers without
/// ZeRO sharding) and orders that place the same groups are not repeated.
std::vector<models::ParallelPlan> plan_variants(const models::ParallelPlan& plan,
                                                const PlanConstraints& constraints);

}  // namespace fabricsim::api
