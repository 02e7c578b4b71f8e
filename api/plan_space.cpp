#include "api/plan_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sim/input_error.hpp"

namespace fabricsim::api {
namespace {

using models::ParallelDim;
using models::ParallelPlan;

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

/// The values of one size: the fixed one, or every candidate within [1, limit].
std::vector<int> choices(const PlanConstraints& c, const std::string& key,
                         const std::vector<int>& candidates, int limit) {
  if (auto it = c.fixed.find(key); it != c.fixed.end()) {
    if (std::find(candidates.begin(), candidates.end(), it->second) == candidates.end()) return {};
    return {it->second};
  }
  std::vector<int> out;
  for (int v : candidates) {
    if (v <= limit) out.push_back(v);
  }
  return out;
}

/// The order with the size-1 dimensions left out: two orders that agree on it place every
/// group on the same GPUs.
std::string effective_order(const ParallelPlan& p) {
  std::string out;
  for (ParallelDim d : p.order) {
    const int size = d == ParallelDim::tp   ? p.tp
                     : d == ParallelDim::cp ? p.cp
                     : d == ParallelDim::dp ? p.dp
                                            : p.pp;
    if (size > 1) out += std::string(models::to_string(d)) + "-";
  }
  return out;
}

}  // namespace

std::string_view to_string(Rejection r) {
  switch (r) {
    case Rejection::heads:
      return "heads_not_divisible_by_tp";
    case Rejection::kv_heads:
      return "kv_heads_not_divisible_by_tp";
    case Rejection::layers:
      return "layers_do_not_fill_pp_x_vp";
    case Rejection::experts:
      return "experts_not_divisible_by_ep";
    case Rejection::batch:
      return "global_batch_not_divisible_by_dp_x_micro_batch";
    case Rejection::interleave:
      return "micro_batches_not_divisible_by_pp_for_vp";
    case Rejection::sequence:
      return "sequence_not_divisible_by_cp";
    case Rejection::sequence_parallel:
      return "sequence_not_divisible_by_tp";
    case Rejection::memory:
      return "out_of_memory";
  }
  return "?";
}

void add_fixed(PlanConstraints& constraints, const std::string& item, const std::string& flag) {
  static constexpr std::array<std::string_view, 8> kKeys{"tp", "pp", "dp",          "cp",
                                                         "ep", "vp", "micro_batch", "zero"};
  const size_t eq = item.find('=');
  const std::string key = item.substr(0, eq);
  if (eq == std::string::npos ||
      std::find(kKeys.begin(), kKeys.end(), std::string_view(key)) == kKeys.end()) {
    throw sim::InputError("<command line>", flag,
                          fmt::format("expected size=value with size one of tp, pp, dp, cp, ep, "
                                      "vp, micro_batch, zero; got \"{}\"",
                                      item));
  }
  const std::string text = item.substr(eq + 1);
  int value = 0;
  size_t used = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const int lowest = key == "zero" ? 0 : 1;
  if (used == 0 || used != text.size() || value < lowest || (key == "zero" && value > 3)) {
    throw sim::InputError(
        "<command line>", flag,
        fmt::format("expected a {} for {}, got \"{}\"",
                    key == "zero" ? "ZeRO stage 0..3" : "positive size", key, text));
  }
  constraints.fixed[key] = value;
}

std::optional<Rejection> plan_rejection(const ParallelPlan& plan,
                                        const models::TrainingConfig& training,
                                        const models::TransformerConfig& model) {
  const auto problem = models::check_plan(plan, training, model, plan.gpus());
  if (!problem) return std::nullopt;
  using Kind = models::PlanProblem::Kind;
  switch (problem->kind) {
    case Kind::heads:
      return Rejection::heads;
    case Kind::kv_heads:
      return Rejection::kv_heads;
    case Kind::layers:
      return Rejection::layers;
    case Kind::experts:
      return Rejection::experts;
    case Kind::interleave:
      return Rejection::interleave;
    case Kind::sequence:
      return Rejection::sequence;
    case Kind::sequence_parallel:
      return Rejection::sequence_parallel;
    case Kind::batch:
    // The enumeration only builds positive sizes that multiply to the GPU count and ZeRO 0-3.
    case Kind::size:
    case Kind::gpus:
    case Kind::zero:
      return Rejection::batch;
  }
  return Rejection::batch;
}

PlanSpace enumerate_plans(const ParallelPlan& base, const models::TransformerConfig& model,
                          const models::TrainingConfig& training, int gpus, int domain,
                          const PlanConstraints& c) {
  PlanSpace space;
  std::vector<int> zero_stages = c.zero_stages;
  if (auto it = c.fixed.find("zero"); it != c.fixed.end()) zero_stages = {it->second};
  std::sort(zero_stages.begin(), zero_stages.end());
  zero_stages.erase(std::unique(zero_stages.begin(), zero_stages.end()), zero_stages.end());
  const long long per_shape = static_cast<long long>(zero_stages.size() * c.recompute.size());
  std::vector<int> micro;
  for (int mb = 1; mb <= std::max(c.max_micro_batch, 1); ++mb)
    micro.push_back(mb);
  // A pipeline layout in the base plan is kept for the pipelines of its stage count (the
  // interleaving it implies is searched too); other pipelines take the default split.
  size_t layout_stages = 0;
  if (!base.pipeline_layout.empty()) {
    std::string error;
    if (const auto layout = models::parse_pipeline_layout(base.pipeline_layout, &error)) {
      layout_stages = layout->stages.size();
    }
  }
  const int experts = model.moe ? model.moe->experts : 1;
  for (int tp : choices(c, "tp", divisors(gpus), c.max_tp > 0 ? c.max_tp : domain)) {
    for (int cp : choices(c, "cp", divisors(gpus / tp), c.allow_cp ? c.max_cp : 1)) {
      for (int pp :
           choices(c, "pp", divisors(gpus / tp / cp), c.max_pp > 0 ? c.max_pp : model.layers)) {
        const int dp = gpus / tp / cp / pp;
        if (auto it = c.fixed.find("dp"); it != c.fixed.end() && it->second != dp) continue;
        // Interleaving only with equal layer counts per virtual stage (Megatron's rule).
        std::vector<int> interleavings{1};
        for (int v = 2; pp > 1 && v <= c.max_vp && pp * v <= model.layers; ++v) {
          const bool laid_out = static_cast<size_t>(pp) * v == layout_stages;
          if (model.layers % (pp * v) == 0 || laid_out) interleavings.push_back(v);
        }
        const std::vector<int> vps = choices(c, "vp", interleavings, c.allow_vp ? c.max_vp : 1);
        for (int vp : vps) {
          for (int ep : choices(c, "ep", divisors(experts), c.allow_ep ? experts : 1)) {
            for (int mb : choices(c, "micro_batch", micro, c.max_micro_batch)) {
              ParallelPlan p = base;
              p.tp = tp;
              p.cp = cp;
              p.pp = pp;
              p.dp = dp;
              p.vp = vp;
              p.ep = ep;
              p.micro_batch = mb;
              p.balanced_pipeline = c.allow_unbalanced && model.layers % (pp * vp) != 0;
              if (static_cast<size_t>(pp) * vp != layout_stages) p.pipeline_layout.clear();
              space.candidates += per_shape;
              if (auto why = plan_rejection(p, training, model)) {
                space.rejected[*why] += per_shape;
                continue;
              }
              // Without data-parallel sharding every ZeRO stage is the same plan.
              const bool shards = dp > 1 || tp * cp * dp / ep > 1;
              for (models::Recompute r : c.recompute) {
                for (int z : zero_stages) {
                  if (!shards && z != zero_stages.front()) continue;
                  p.recompute = r;
                  p.zero = z;
                  space.plans.push_back(p);
                }
              }
            }
          }
        }
      }
    }
  }
  return space;
}

std::vector<ParallelPlan> plan_variants(const ParallelPlan& plan, const PlanConstraints& c) {
  std::vector<ParallelPlan> out{plan};
  std::vector<std::array<ParallelDim, 4>> orders{plan.order};
  if (c.search_order) {
    std::array<ParallelDim, 3> rest{ParallelDim::cp, ParallelDim::dp, ParallelDim::pp};
    do {
      orders.push_back({ParallelDim::tp, rest[0], rest[1], rest[2]});
    } while (std::next_permutation(rest.begin(), rest.end()));
  }
  std::vector<std::array<bool, 3>> switches{
      {plan.tp_comm_overlap, plan.dp_comm_overlap, plan.param_gather_overlap}};
  if (c.search_overlap) {
    for (int bits = 7; bits >= 0; --bits)
      switches.push_back({(bits & 4) != 0, (bits & 2) != 0, (bits & 1) != 0});
  }
  // Expert gradients reduce over tp x cp x dp / ep ranks even at dp 1.
  const bool shards = plan.dense_dp() > 1 || plan.expert_dp() > 1;
  std::set<std::string> seen;
  out.clear();
  for (const auto& order : orders) {
    for (const auto& s : switches) {
      ParallelPlan p = plan;
      p.order = order;
      p.tp_comm_overlap = s[0] && plan.tp > 1 && plan.sequence_parallel;
      p.dp_comm_overlap = s[1] && shards;
      p.param_gather_overlap = s[2] && shards && plan.zero >= 1;
      const std::string key = fmt::format("{}{}{}{}", effective_order(p), p.tp_comm_overlap,
                                          p.dp_comm_overlap, p.param_gather_overlap);
      if (seen.insert(key).second) out.push_back(p);
    }
  }
  return out;
}

}  // namespace fabricsim::api
