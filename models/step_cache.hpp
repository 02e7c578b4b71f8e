#pragma once
// What evaluating many plans on one cluster can share: the router (its route cache), the link
// capacities, collective schedules with their uncontended durations (keyed by the ranks of the
// group rather than by a plan's placement) and pipeline schedules. One cache serves one system,
// collective profile and routing strategy; it is not thread-safe (give each thread its own).

#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/collective_model.hpp"
#include "models/collective_profile.hpp"
#include "models/collective_schedule.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/system.hpp"
#include "sim/network.hpp"
#include "sim/units.hpp"
#include "topologies/router.hpp"

namespace fabricsim::models {

class StepCache {
 public:
  /// `collnet`: collectives may use IB SHARP where the fabric has it (NCCL_COLLNET_ENABLE=1).
  StepCache(const System& system, const CollectiveProfile& profile,
            topologies::RoutingStrategy routing, bool collnet);
  StepCache(const StepCache&) = delete;
  StepCache& operator=(const StepCache&) = delete;

  /// Whether this cache was built for exactly these (same objects, same strategy).
  bool serves(const System& system, const CollectiveProfile& profile,
              topologies::RoutingStrategy routing, bool collnet) const {
    return &system == &system_ && &profile == &profile_ && routing == router_.strategy() &&
           collnet == collnet_;
  }

  const System& system() const { return system_; }
  const CollectiveProfile& profile() const { return profile_; }
  topologies::Router& router() { return router_; }
  const sim::IdVector<sim::LinkId, sim::LinkCapacity>& capacities() const { return capacities_; }

  /// The schedule NCCL's tuner picks for `op` of `bytes` over `group` (cached).
  std::shared_ptr<const Schedule> collective(const std::vector<topologies::GpuRank>& group,
                                             CollectiveOp op, sim::Bytes bytes);
  /// A point-to-point send of `bytes` from GPU `from` to GPU `to` (cached).
  std::shared_ptr<const Schedule> p2p(topologies::GpuRank from, topologies::GpuRank to,
                                      sim::Bytes bytes);
  /// Duration of a schedule of this cache alone on the fabric (cached per schedule).
  sim::Time isolated_time(const std::shared_ptr<const Schedule>& schedule);

  /// pipeline_schedule(pp, vp, microbatches), cached.
  const std::vector<std::vector<PipelineTask>>& pipeline(int pp, int vp, int microbatches);

  /// Whether the GPUs of `group` sit in more than one scale-up domain.
  bool spans_domains(const std::vector<topologies::GpuRank>& group) const;

 private:
  const System& system_;
  const CollectiveProfile& profile_;
  bool collnet_;
  topologies::Router router_;
  sim::IdVector<sim::LinkId, sim::LinkCapacity> capacities_;
  sim::IdVector<sim::LinkId, double> usable_;
  std::map<std::tuple<int, sim::Bytes, std::vector<topologies::GpuRank>>,
           std::shared_ptr<const Schedule>>
      collectives_;
  std::map<std::tuple<topologies::GpuRank, topologies::GpuRank, sim::Bytes>,
           std::shared_ptr<const Schedule>>
      p2p_;
  std::unordered_map<const Schedule*, sim::Time> durations_;
  std::map<std::tuple<int, int, int>, std::vector<std::vector<PipelineTask>>> pipelines_;
};

}  // namespace fabricsim::models
