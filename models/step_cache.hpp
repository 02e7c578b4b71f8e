#pragma once
// What evaluating many plans on one cluster can share: the router (its route cache), the link
// capacities, collective schedules with their uncontended durations (keyed by the group of GPUs,
// interned, rather than by a plan's placement), each placement's rank groups and collective
// times, and pipeline schedules. One cache serves one system,
// collective profile and routing strategy; it is not thread-safe (give each thread its own).

#include <array>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/collective_model.hpp"
#include "models/collective_profile.hpp"
#include "models/collective_schedule.hpp"
#include "models/parallel_plan.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/system.hpp"
#include "sim/id.hpp"
#include "sim/network.hpp"
#include "sim/units.hpp"
#include "topologies/router.hpp"

namespace fabricsim::models {

/// A group of GPUs interned in a StepCache.
using GroupId = sim::Id<struct GroupIdTag>;

/// The hash of a cache key: a byte count and small integers packed into `tag`.
inline size_t bytes_key_hash(sim::Bytes bytes, size_t tag) {
  return std::hash<double>()(bytes.count()) ^ tag;
}

/// What the ranks of one placement ask a StepCache, kept for every plan that shares the
/// placement (a planner varies micro-batches, schedules and recomputation over one tp/cp/dp/pp/ep
/// layout): each rank's groups and the uncontended times of its collectives.
struct PlacementMemo {
  struct Group {
    std::vector<topologies::GpuRank> gpus;
    GroupId id;  ///< in the cache
  };
  using TimeKey = std::tuple<int, int, sim::Bytes, int>;  ///< kind, op, bytes, rank
  struct TimeKeyHash {
    size_t operator()(const TimeKey& k) const {
      const auto [kind, op, bytes, rank] = k;
      return bytes_key_hash(bytes, (static_cast<size_t>(rank) << 8) ^
                                       (static_cast<size_t>(kind) << 4) ^ static_cast<size_t>(op));
    }
  };
  std::map<std::pair<int, int>, Group> groups;  ///< (kind, rank) -> group
  std::unordered_map<TimeKey, sim::Time, TimeKeyHash> times;
};

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

  /// `group`'s id in this cache: equal groups share one, so that a collective is looked up by
  /// (id, op, bytes) instead of comparing whole groups of GPUs.
  GroupId intern(const std::vector<topologies::GpuRank>& group);
  /// The schedule NCCL's tuner picks for `op` of `bytes` over group `id` (cached).
  std::shared_ptr<const Schedule> collective(GroupId id, CollectiveOp op, sim::Bytes bytes);
  std::shared_ptr<const Schedule> collective(const std::vector<topologies::GpuRank>& group,
                                             CollectiveOp op, sim::Bytes bytes) {
    return collective(intern(group), op, bytes);
  }
  /// A point-to-point send of `bytes` from GPU `from` to GPU `to` (cached).
  std::shared_ptr<const Schedule> p2p(topologies::GpuRank from, topologies::GpuRank to,
                                      sim::Bytes bytes);
  /// Duration of a schedule of this cache alone on the fabric (cached per schedule).
  sim::Time isolated_time(const std::shared_ptr<const Schedule>& schedule);

  /// The memo of ranks placed by `placement` on GPUs 0..n-1 (one per layout and GPU count).
  PlacementMemo& placement_memo(const Placement& placement);

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
  struct GroupHash {
    size_t operator()(const std::vector<topologies::GpuRank>& g) const;
  };
  std::unordered_map<std::vector<topologies::GpuRank>, GroupId, GroupHash> group_ids_;
  std::vector<const std::vector<topologies::GpuRank>*> groups_;  ///< by id, into group_ids_
  struct CollectiveKey {
    GroupId group;
    CollectiveOp op;
    sim::Bytes bytes;
    bool operator==(const CollectiveKey&) const = default;
  };
  struct CollectiveKeyHash {
    size_t operator()(const CollectiveKey& k) const;
  };
  std::unordered_map<CollectiveKey, std::shared_ptr<const Schedule>, CollectiveKeyHash>
      collectives_;
  std::map<std::tuple<topologies::GpuRank, topologies::GpuRank, sim::Bytes>,
           std::shared_ptr<const Schedule>>
      p2p_;
  std::unordered_map<const Schedule*, sim::Time> durations_;
  std::map<std::tuple<int, int, int>, std::vector<std::vector<PipelineTask>>> pipelines_;
  std::map<std::array<int, 7>, std::unique_ptr<PlacementMemo>> placements_;
};

}  // namespace fabricsim::models
