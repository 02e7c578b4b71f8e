#include "models/step_communicator.hpp"

#include <algorithm>
#include <memory>

#include "models/group_layout.hpp"
#include "models/moe_alltoall.hpp"

namespace fabricsim::models {

using sim::Time;

void JobTraffic::start_flow(const sim::Route& route, sim::FlowRequest request) {
  for (const sim::LinkShare& share : route.links)
    bytes_[share.link] += request.bytes.count() * share.fraction;
  fabric_.start_flow(route, std::move(request));
}

Time Communicator::collective_time(int rank, GroupKind kind, CollectiveOp op, sim::Bytes bytes) {
  // Keyed by rank, so repeated lookups skip building the group.
  const auto key = std::make_tuple(static_cast<int>(kind), static_cast<int>(op), bytes, rank);
  if (auto it = memo_.times.find(key); it != memo_.times.end()) return it->second;
  const Time t = cache_.isolated_time(cache_.collective(known_group(kind, rank).id, op, bytes));
  memo_.times.emplace(key, t);
  return t;
}

Time Communicator::moe_time(int rank, const WorkOp::MoeTokens& m) {
  const auto key = std::make_tuple(rank, m.tokens, m.combine, m.fp8, m.hybridep);
  if (auto it = moe_by_rank_.find(key); it != moe_by_rank_.end()) return it->second;
  const System& system = cache_.system();
  const GroupLayout layout = make_group_layout(*system.topology, group(GroupKind::ep, rank));
  MoeAlltoallRequest q;
  q.kernel = m.hybridep ? MoeKernel::hybridep : MoeKernel::deepep_normal;
  q.direction = m.combine ? MoeDirection::combine : MoeDirection::dispatch;
  q.ranks = layout.size();
  // DeepEP (and Hybrid-EP) needs the same number of NVLink peers in every node: a group that
  // straddles domains unevenly runs with the largest such count its smallest domain allows.
  q.ranks_per_node = std::max(layout.min_ppn, 1);
  while (q.ranks % q.ranks_per_node != 0)
    --q.ranks_per_node;
  q.tokens_per_rank = m.tokens;
  q.hidden = m.hidden;
  q.top_k = m.top_k;
  q.experts = m.experts;
  q.fp8 = m.fp8;
  const Time t = Time::from_s(
      moe_alltoall(q, moe_link_rates(system, layout), moe_kernel_profile(cache_.profile()))
          .seconds);
  moe_by_rank_.emplace(key, t);
  return t;
}

void Communicator::collective(int rank, GroupKind kind, CollectiveOp op, sim::Bytes bytes,
                              bool reduce, Callback done) {
  if (!flow()) {
    simulation_.schedule_in(collective_time(rank, kind, op, bytes), std::move(done));
    return;
  }
  std::vector<std::vector<topologies::GpuRank>> instances;
  std::vector<topologies::GpuRank> own = group(kind, rank);
  if (reduce && cache_.spans_domains(own)) {
    for (auto& g : placement_.stage_groups(kind, placement_.coordinates(rank).pp))
      instances.push_back(on_gpus(g));
  } else {
    instances.push_back(std::move(own));
  }
  std::vector<std::shared_ptr<const Schedule>> schedules;
  for (const auto& g : instances)
    schedules.push_back(cache_.collective(g, op, bytes));
  run_all(kind, std::move(schedules), std::move(done));
}

void Communicator::p2p(int from, int to, sim::Bytes bytes, bool all_instances, Callback done) {
  if (!flow()) {
    simulation_.schedule_in(p2p_time(from, to, bytes), std::move(done));
    return;
  }
  std::vector<std::pair<int, int>> pairs{{from, to}};
  if (all_instances) {
    const int a = placement_.coordinates(from).pp;
    const int b = placement_.coordinates(to).pp;
    pairs.clear();
    for (int flat = 0; flat < placement_.plan().stage_ranks(); ++flat) {
      pairs.emplace_back(placement_.rank_of(placement_.at_flat(flat, a)),
                         placement_.rank_of(placement_.at_flat(flat, b)));
    }
  }
  std::vector<std::shared_ptr<const Schedule>> schedules;
  for (const auto& [x, y] : pairs)
    schedules.push_back(cache_.p2p(gpu(x), gpu(y), bytes));
  run_all(GroupKind::pp, std::move(schedules), std::move(done));
}

void Communicator::run_all(GroupKind kind, std::vector<std::shared_ptr<const Schedule>> schedules,
                           Callback done) {
  for (const auto& schedule : schedules) {
    for (const Phase& phase : schedule->phases)
      flows_[static_cast<size_t>(kind)] += phase.transfers.size();
  }
  auto remaining = std::make_shared<size_t>(schedules.size());
  auto shared_done = std::make_shared<Callback>(std::move(done));
  for (auto& schedule : schedules) {
    runner_->run(std::move(schedule), [remaining, shared_done] {
      if (--*remaining == 0) (*shared_done)();
    });
  }
}

std::map<std::string, uint64_t> Communicator::flows_by_group() const {
  std::map<std::string, uint64_t> out;
  for (size_t k = 0; k < flows_.size(); ++k) {
    if (flows_[k] > 0) out[std::string(to_string(static_cast<GroupKind>(k)))] = flows_[k];
  }
  return out;
}

}  // namespace fabricsim::models
