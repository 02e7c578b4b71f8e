#include "models/step_cache.hpp"

#include "models/collective_runner.hpp"
#include "sim/analytical_network.hpp"

namespace fabricsim::models {

StepCache::StepCache(const System& system, const CollectiveProfile& profile,
                     topologies::RoutingStrategy routing, bool collnet)
    : system_(system),
      profile_(profile),
      collnet_(collnet),
      router_(*system.topology, routing),
      capacities_(link_capacities(system, profile)),
      usable_(sim::AnalyticalNetwork::usable_capacities(capacities_)) {}

size_t StepCache::GroupHash::operator()(const std::vector<topologies::GpuRank>& g) const {
  // FNV-1a over the ranks.
  uint64_t h = 1469598103934665603ULL;
  for (topologies::GpuRank r : g)
    h = (h ^ r.value()) * 1099511628211ULL;
  return static_cast<size_t>(h);
}

size_t StepCache::CollectiveKeyHash::operator()(const CollectiveKey& k) const {
  return bytes_key_hash(k.bytes,
                        (static_cast<size_t>(k.group.value()) << 8) ^ static_cast<size_t>(k.op));
}

GroupId StepCache::intern(const std::vector<topologies::GpuRank>& group) {
  const auto [it, fresh] = group_ids_.try_emplace(group, GroupId::at(groups_.size()));
  if (fresh) groups_.push_back(&it->first);
  return it->second;
}

std::shared_ptr<const Schedule> StepCache::collective(GroupId id, CollectiveOp op,
                                                      sim::Bytes bytes) {
  const CollectiveKey key{id, op, bytes};
  auto it = collectives_.find(key);
  if (it != collectives_.end()) return it->second;
  CollectiveRequest request;
  request.op = op;
  request.size_bytes = bytes.count();
  request.ranks = *groups_[id.value()];
  request.collnet = collnet_;
  auto schedule = plan_collective(system_, profile_, router_, request).schedule;
  collectives_.emplace(key, schedule);
  return schedule;
}

std::shared_ptr<const Schedule> StepCache::p2p(topologies::GpuRank from, topologies::GpuRank to,
                                               sim::Bytes bytes) {
  const auto key = std::make_tuple(from, to, bytes);
  auto it = p2p_.find(key);
  if (it != p2p_.end()) return it->second;
  auto s = std::make_shared<Schedule>();
  s->op = CollectiveOp::sendrecv;
  s->algorithm = Algorithm::direct;
  s->ranks = 2;
  s->size_bytes = bytes.count();
  const bool same = system_.topology->domain_of_rank(from) == system_.topology->domain_of_rank(to);
  s->latency =
      profile_.launch_overhead +
      (same ? profile_.p2p_latency_intra : profile_.p2p_latency_inter) * profile_.latency_scale;
  Phase phase;
  Transfer t;
  t.src = from;
  t.dst = to;
  t.bytes = bytes.count();
  phase.transfers.push_back(t);
  s->phases.push_back(std::move(phase));
  p2p_.emplace(key, s);
  return s;
}

sim::Time StepCache::isolated_time(const std::shared_ptr<const Schedule>& schedule) {
  auto it = durations_.find(schedule.get());
  if (it != durations_.end()) return it->second;
  const sim::Time t = CollectiveRunner::isolated_time(*schedule, router_, usable_);
  durations_.emplace(schedule.get(), t);
  return t;
}

const std::vector<std::vector<PipelineTask>>& StepCache::pipeline(int pp, int vp,
                                                                  int microbatches) {
  const auto key = std::make_tuple(pp, vp, microbatches);
  auto it = pipelines_.find(key);
  if (it == pipelines_.end()) {
    it = pipelines_.emplace(key, pipeline_schedule(pp, vp, microbatches)).first;
  }
  return it->second;
}

PlacementMemo& StepCache::placement_memo(const Placement& placement) {
  const ParallelPlan& p = placement.plan();
  int order = 0;
  for (ParallelDim d : p.order)
    order = order * 4 + static_cast<int>(d);
  std::unique_ptr<PlacementMemo>& memo =
      placements_[{p.tp, p.cp, p.dp, p.pp, p.ep, order, placement.gpus()}];
  if (!memo) memo = std::make_unique<PlacementMemo>();
  return *memo;
}

bool StepCache::spans_domains(const std::vector<topologies::GpuRank>& group) const {
  const auto d = system_.topology->domain_of_rank(group.front());
  for (topologies::GpuRank r : group) {
    if (system_.topology->domain_of_rank(r) != d) return true;
  }
  return false;
}

}  // namespace fabricsim::models
