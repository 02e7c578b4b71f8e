#pragma once
// The step simulator's view of communication for one job: collectives and point-to-point
// transfers timed alone (analytical backend) or run as flows on the shared fabric (flow
// backend), and, on a shared cluster, the bytes each job puts on every link.

#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/collective_op.hpp"
#include "models/collective_runner.hpp"
#include "models/parallel_plan.hpp"
#include "models/step_cache.hpp"
#include "models/workload.hpp"
#include "sim/flow_network.hpp"
#include "sim/simulation.hpp"

namespace fabricsim::models {

/// One job's view of the shared fabric: forwards its flows and counts the bytes they put on
/// each resource, so that links shared by several jobs can be named. Bytes are counted when a
/// flow starts (what it will move).
class JobTraffic : public sim::Network {
 public:
  JobTraffic(sim::FlowNetwork& fabric, size_t resources)
      : fabric_(fabric), bytes_(resources, 0.0) {}
  void start_flow(const sim::Route& route, sim::FlowRequest request) override;
  size_t active_flows() const override { return fabric_.active_flows(); }
  const sim::IdVector<sim::LinkId, double>& link_bytes() const override { return bytes_; }
  const sim::NetworkStats& stats() const override { return fabric_.stats(); }

 private:
  sim::FlowNetwork& fabric_;
  sim::IdVector<sim::LinkId, double> bytes_;
};

/// Times collectives and point-to-point transfers for one job's simulated ranks: plans them
/// (through the shared cache) on the GPUs its ranks run on, launches every symmetric instance on
/// the shared fabric (flow backend) or looks up their uncontended duration (analytical backend).
class Communicator {
 public:
  using Callback = std::function<void()>;

  /// `runner` is null on the analytical backend; `gpus` maps job ranks to topology ranks (empty:
  /// rank r runs on GPU r).
  Communicator(sim::Simulation& simulation, StepCache& cache, const Placement& placement,
               const std::vector<topologies::GpuRank>& gpus, CollectiveRunner* runner)
      : simulation_(simulation),
        cache_(cache),
        placement_(placement),
        gpus_(gpus),
        runner_(runner),
        memo_(gpus.empty() ? cache.placement_memo(placement) : own_memo_) {}

  bool flow() const { return runner_ != nullptr; }

  /// The topology rank job rank `rank` runs on.
  topologies::GpuRank gpu(int rank) const {
    return gpus_.empty() ? topologies::GpuRank::at(static_cast<size_t>(rank))
                         : gpus_[static_cast<size_t>(rank)];
  }
  /// `rank`'s group of `kind` as topology ranks (built once per kind and rank: a step asks for
  /// the same few groups for every distinct collective of every simulated rank).
  const std::vector<topologies::GpuRank>& group(GroupKind kind, int rank) {
    return known_group(kind, rank).gpus;
  }

  /// Uncontended duration of `rank`'s instance of a collective (cached).
  sim::Time collective_time(int rank, GroupKind kind, CollectiveOp op, sim::Bytes bytes);

  /// `rank`'s EP dispatch or combine through DeepEP's normal kernels (models/moe_alltoall): the
  /// same time on both backends; its traffic does not share links with the flows (DeepEP moves
  /// it with its own kernels, off NCCL's channels).
  sim::Time moe_time(int rank, const WorkOp::MoeTokens& m);

  sim::Time p2p_time(int from, int to, sim::Bytes bytes) {
    return cache_.isolated_time(cache_.p2p(gpu(from), gpu(to), bytes));
  }

  /// Runs `rank`'s collective (and, with reduce, every symmetric instance of its stage).
  void collective(int rank, GroupKind kind, CollectiveOp op, sim::Bytes bytes, bool reduce,
                  Callback done);

  /// Sends `bytes` from `from` to `to` (and, with all_instances, from every rank of `from`'s stage
  /// to its counterpart in `to`'s).
  void p2p(int from, int to, sim::Bytes bytes, bool all_instances, Callback done);

  /// Flows launched per group kind so far (flow backend), by name.
  std::map<std::string, uint64_t> flows_by_group() const;

 private:
  /// Job ranks as the topology ranks they run on.
  std::vector<topologies::GpuRank> on_gpus(const std::vector<uint32_t>& ranks) const {
    std::vector<topologies::GpuRank> out;
    out.reserve(ranks.size());
    for (uint32_t r : ranks)
      out.push_back(gpu(static_cast<int>(r)));
    return out;
  }
  /// Runs one schedule per instance (counting their flows under `kind`) and calls `done` after
  /// the last.
  void run_all(GroupKind kind, std::vector<std::shared_ptr<const Schedule>> schedules,
               Callback done);

  sim::Simulation& simulation_;
  StepCache& cache_;
  const Placement& placement_;
  const std::vector<topologies::GpuRank>& gpus_;
  CollectiveRunner* runner_;
  std::array<uint64_t, static_cast<size_t>(GroupKind::edp) + 1> flows_{};  ///< per GroupKind
  std::map<std::tuple<int, double, bool, bool, bool>, sim::Time> moe_by_rank_;
  const PlacementMemo::Group& known_group(GroupKind kind, int rank) {
    auto [it, inserted] = memo_.groups.try_emplace({static_cast<int>(kind), rank});
    if (inserted) {
      it->second.gpus = on_gpus(placement_.group(kind, rank));
      it->second.id = cache_.intern(it->second.gpus);
    }
    return it->second;
  }
  /// Groups and collective times of the ranks: the cache's memo of this placement where ranks
  /// run on GPUs 0..n-1, this job's own where a placement maps them elsewhere.
  PlacementMemo own_memo_;
  PlacementMemo& memo_;
};

}  // namespace fabricsim::models
