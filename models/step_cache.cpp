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

std::shared_ptr<const Schedule> StepCache::collective(const std::vector<topologies::GpuRank>& group,
                                                      CollectiveOp op, sim::Bytes bytes) {
  auto key = std::make_tuple(static_cast<int>(op), bytes, group);
  auto it = collectives_.find(key);
  if (it != collectives_.end()) return it->second;
  CollectiveRequest request;
  request.op = op;
  request.size_bytes = bytes.count();
  request.ranks = group;
  request.collnet = collnet_;
  auto schedule = plan_collective(system_, profile_, router_, request).schedule;
  collectives_.emplace(std::move(key), schedule);
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

bool StepCache::spans_domains(const std::vector<topologies::GpuRank>& group) const {
  const auto d = system_.topology->domain_of_rank(group.front());
  for (topologies::GpuRank r : group) {
    if (system_.topology->domain_of_rank(r) != d) return true;
  }
  return false;
}

}  // namespace fabricsim::models
