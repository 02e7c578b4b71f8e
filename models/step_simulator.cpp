#include "models/step_simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <type_traits>

#include "models/collective_runner.hpp"
#include "models/pipeline_schedule.hpp"
#include "sim/analytical_network.hpp"
#include "sim/flow_network.hpp"
#include "sim/simulation.hpp"

namespace fabricsim::models {
namespace {

using sim::Time;
using Callback = std::function<void()>;

Time seconds(double s) {
  return Time::from_s(s);
}

/// Times collectives and point-to-point transfers for the simulated ranks: plans them, launches
/// every symmetric instance on the shared network (flow backend) or looks up their uncontended
/// duration (analytical backend).
class Communicator {
 public:
  Communicator(sim::Simulation& simulation, const System& system, const CollectiveProfile& profile,
               const Placement& placement, const StepOptions& options)
      : simulation_(simulation),
        system_(system),
        profile_(profile),
        placement_(placement),
        options_(options),
        router_(*system.topology, options.routing),
        capacities_(link_capacities(system, profile)),
        usable_(sim::AnalyticalNetwork::usable_capacities(capacities_)) {
    if (options.backend == Backend::flow) {
      network_ = std::make_unique<sim::FlowNetwork>(simulation, capacities_);
      runner_ = std::make_unique<CollectiveRunner>(simulation, *network_, router_);
    }
  }

  const std::vector<sim::LinkCapacity>& capacities() const { return capacities_; }

  bool flow() const { return options_.backend == Backend::flow; }
  sim::Network* network() { return network_.get(); }
  sim::FlowNetwork* flow_network() { return network_.get(); }
  topologies::Router& router() { return router_; }

  /// Uncontended duration of `rank`'s instance of a collective (cached).
  Time collective_time(int rank, GroupKind kind, CollectiveOp op, double bytes) {
    // Keyed by rank first, so repeated lookups skip building the group.
    const auto rank_key =
        std::make_tuple(static_cast<int>(kind), static_cast<int>(op), bytes, rank);
    if (auto it = by_rank_.find(rank_key); it != by_rank_.end()) return it->second;
    const Time t = group_collective_time(kind, op, bytes, placement_.group(kind, rank));
    by_rank_.emplace(rank_key, t);
    return t;
  }

  Time group_collective_time(GroupKind kind, CollectiveOp op, double bytes,
                             const std::vector<uint32_t>& group) {
    const auto key =
        std::make_tuple(static_cast<int>(kind), static_cast<int>(op), bytes, group.front());
    auto it = durations_.find(key);
    if (it != durations_.end()) return it->second;
    const Time t = isolated_time(plan(group, op, bytes));
    durations_.emplace(key, t);
    return t;
  }

  Time p2p_time(int from, int to, double bytes) {
    const auto key = std::make_tuple(-1, from, bytes, static_cast<uint32_t>(to));
    auto it = durations_.find(key);
    if (it != durations_.end()) return it->second;
    const Time t = isolated_time(p2p_schedule(from, to, bytes));
    durations_.emplace(key, t);
    return t;
  }

  /// Runs `rank`'s collective (and, with reduce, every symmetric instance of its stage).
  void collective(int rank, GroupKind kind, CollectiveOp op, double bytes, bool reduce,
                  Callback done) {
    if (!flow()) {
      simulation_.schedule_in(collective_time(rank, kind, op, bytes), std::move(done));
      return;
    }
    std::vector<std::vector<uint32_t>> instances;
    std::vector<uint32_t> own = placement_.group(kind, rank);
    if (reduce && spans_domains(own)) {
      instances = placement_.stage_groups(kind, placement_.coordinates(rank).pp);
    } else {
      instances.push_back(std::move(own));
    }
    auto remaining = std::make_shared<size_t>(instances.size());
    auto shared_done = std::make_shared<Callback>(std::move(done));
    for (const auto& g : instances) {
      runner_->run(plan(g, op, bytes), [remaining, shared_done] {
        if (--*remaining == 0) (*shared_done)();
      });
    }
  }

  /// Sends `bytes` from `from` to `to` (and, with all_instances, from every rank of `from`'s stage
  /// to its counterpart in `to`'s).
  void p2p(int from, int to, double bytes, bool all_instances, Callback done) {
    if (!flow()) {
      simulation_.schedule_in(p2p_time(from, to, bytes), std::move(done));
      return;
    }
    std::vector<std::pair<int, int>> pairs{{from, to}};
    if (all_instances) {
      const Coordinates a = placement_.coordinates(from);
      const Coordinates b = placement_.coordinates(to);
      pairs.clear();
      const ParallelPlan& p = placement_.plan();
      for (int flat = 0; flat < p.tp * p.cp * p.dp; ++flat) {
        Coordinates x;
        x.tp = flat % p.tp;
        x.cp = (flat / p.tp) % p.cp;
        x.dp = flat / (p.tp * p.cp);
        Coordinates y = x;
        x.pp = a.pp;
        y.pp = b.pp;
        pairs.emplace_back(placement_.rank_of(x), placement_.rank_of(y));
      }
    }
    auto remaining = std::make_shared<size_t>(pairs.size());
    auto shared_done = std::make_shared<Callback>(std::move(done));
    for (const auto& [x, y] : pairs) {
      runner_->run(p2p_schedule(x, y, bytes), [remaining, shared_done] {
        if (--*remaining == 0) (*shared_done)();
      });
    }
  }

  bool spans_domains(const std::vector<uint32_t>& group) const {
    const int d = system_.topology->domain_of_rank(group.front());
    for (uint32_t r : group) {
      if (system_.topology->domain_of_rank(r) != d) return true;
    }
    return false;
  }

 private:
  std::shared_ptr<const Schedule> plan(const std::vector<uint32_t>& group, CollectiveOp op,
                                       double bytes) {
    const auto key = std::make_tuple(static_cast<int>(op), bytes, group.front(), group.size());
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    CollectiveRequest request;
    request.op = op;
    request.size_bytes = bytes;
    request.ranks = group;
    request.collnet = options_.collnet;
    auto schedule = plan_collective(system_, profile_, router_, request).schedule;
    plans_.emplace(key, schedule);
    return schedule;
  }

  std::shared_ptr<const Schedule> p2p_schedule(int from, int to, double bytes) {
    const auto key =
        std::make_tuple(-1, bytes, static_cast<uint32_t>(from), static_cast<size_t>(to));
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    auto s = std::make_shared<Schedule>();
    s->op = CollectiveOp::sendrecv;
    s->algorithm = Algorithm::direct;
    s->ranks = 2;
    s->size_bytes = bytes;
    const bool same = system_.topology->domain_of_rank(static_cast<size_t>(from)) ==
                      system_.topology->domain_of_rank(static_cast<size_t>(to));
    s->latency =
        profile_.launch_overhead +
        (same ? profile_.p2p_latency_intra : profile_.p2p_latency_inter) * profile_.latency_scale;
    Phase phase;
    Transfer t;
    t.src = static_cast<uint32_t>(from);
    t.dst = static_cast<uint32_t>(to);
    t.bytes = bytes;
    phase.transfers.push_back(t);
    s->phases.push_back(std::move(phase));
    plans_.emplace(key, s);
    return s;
  }

  Time isolated_time(const std::shared_ptr<const Schedule>& schedule) {
    return CollectiveRunner::isolated_time(*schedule, router_, usable_);
  }

  sim::Simulation& simulation_;
  const System& system_;
  const CollectiveProfile& profile_;
  const Placement& placement_;
  const StepOptions& options_;
  topologies::Router router_;
  std::vector<sim::LinkCapacity> capacities_;
  std::vector<double> usable_;
  std::unique_ptr<sim::FlowNetwork> network_;
  std::unique_ptr<CollectiveRunner> runner_;
  std::map<std::tuple<int, int, double, uint32_t>, Time> durations_;
  std::map<std::tuple<int, int, double, int>, Time> by_rank_;
  std::map<std::tuple<int, double, uint32_t, size_t>, std::shared_ptr<const Schedule>> plans_;
};

/// The exposed-communication bucket of a group kind on the compute stream.
double& exposed_slot(StageBreakdown& b, GroupKind kind) {
  switch (kind) {
    case GroupKind::tp:
      return b.exposed_tp;
    case GroupKind::cp:
      return b.exposed_cp;
    case GroupKind::ep:
      return b.exposed_ep;
    case GroupKind::pp:
      return b.exposed_pp;
    default:
      return b.exposed_dp;
  }
}

struct Engine;

/// One simulated rank: its stage's pipeline tasks on the compute stream and its data-parallel
/// stream.
struct RankRun {
  Engine* engine = nullptr;
  int rank = 0;
  int stage = 0;
  const StageWork* work = nullptr;
  std::vector<PipelineTask> tasks;
  size_t next = 0;
  bool running = false;
  Time free_since;  ///< when the compute stream last went idle
  // Dependencies: [microbatch][chunk] arrival flags and the producer's finish time.
  std::vector<std::vector<char>> fwd_in, bwd_in;
  std::vector<std::vector<Time>> fwd_produced, bwd_produced;
  /// [chunk][bucket]: parameters gathered (ZeRO with overlapped gathers).
  std::vector<std::vector<char>> params_ready;
  /// [chunk][bucket]: when the gather finishes, for the analytical backend (known in advance:
  /// the gathers run alone on the data-parallel stream at the start of the step).
  std::vector<std::vector<Time>> params_ready_at;
  bool gathering = false;          ///< this step's forwards wait for parameter gathers
  std::vector<int> first_forward;  ///< per chunk, index of its first forward task
  std::vector<int> last_backward;  ///< per chunk, index of its last backward task
  std::vector<char> pass_gathers;  ///< ZeRO-3: buckets whose gather this pass has issued
  int waiting_gate_chunk = -1;     ///< param_gate the pass is blocked on
  int waiting_gate_bucket = -1;
  int pending_dp = 0;  ///< data-parallel collectives not yet finished
  bool compute_done = false;
  bool finished = false;
  StageBreakdown breakdown;
  // DP stream: collectives run one after another.
  std::vector<std::function<void(Callback)>> dp_queue;
  bool dp_busy = false;
  // Interpreter state of the running pass.
  const PassProgram* program = nullptr;
  size_t op = 0;
  Time task_start;
  std::map<int, std::pair<bool, GroupKind>> slots;  ///< slot -> (done, kind)
  int waiting_slot = -1;
  Time wait_start;
  bool reduced = false;  ///< gradients of a non-overlapped step have been launched
};

struct Engine {
  sim::Simulation& sim;
  Communicator& comm;
  const Workload& workload;
  const ParallelPlan& plan;
  const Placement& placement;
  const StepOptions& options;
  std::vector<std::unique_ptr<RankRun>> ranks;
  std::map<int, RankRun*> by_rank;
  std::vector<TraceEvent>* trace = nullptr;
  // Full-rank collectives wait for every member: (kind, first member, sequence) -> arrivals.
  struct Barrier {
    size_t arrived = 0;
    std::vector<Callback> waiting;
  };
  std::map<std::tuple<int, uint32_t, int>, Barrier> barriers;
  std::map<std::pair<int, int>, int> sequence;  ///< (rank, kind) -> collectives issued

  int virtual_stages() const { return plan.pp * plan.vp; }

  /// Records an interval for the trace; `name` is a string or a callable that makes one, so
  /// untraced runs never format names.
  template <class Name>
  void record(const RankRun& r, const char* track, const Name& name, Time start, Time end) {
    if (trace == nullptr || end <= start) return;
    std::string text;
    if constexpr (std::is_invocable_v<Name>) {
      text = name();
    } else {
      text = name;
    }
    trace->push_back({std::move(text), fmt::format("stage {} rank {} {}", r.stage, r.rank, track),
                      r.stage, start.us(), (end - start).us(), std::nullopt});
  }

  static std::string comm_name(GroupKind kind, CollectiveOp op) {
    return fmt::format("{} {}", to_string(kind), to_string(op));
  }

  /// A collective issued by `r`: in full-rank mode it starts once every member has issued it.
  void collective(RankRun& r, GroupKind kind, CollectiveOp op, double bytes, Callback done) {
    if (!options.full_ranks) {
      comm.collective(r.rank, kind, op, bytes, true, std::move(done));
      return;
    }
    const std::vector<uint32_t> group = placement.group(kind, r.rank);
    const int seq = sequence[{r.rank, static_cast<int>(kind)}]++;
    Barrier& b = barriers[{static_cast<int>(kind), group.front(), seq}];
    b.waiting.push_back(std::move(done));
    if (++b.arrived < group.size()) return;
    auto waiting = std::make_shared<std::vector<Callback>>(std::move(b.waiting));
    barriers.erase({static_cast<int>(kind), group.front(), seq});
    comm.collective(r.rank, kind, op, bytes, false, [waiting] {
      for (auto& w : *waiting)
        w();
    });
  }

  // ---- the pass interpreter -------------------------------------------------------------

  void start_task(RankRun& r) {
    const PipelineTask& t = r.tasks[r.next];
    const ChunkWork& c = r.work->chunks[static_cast<size_t>(t.chunk)];
    const bool overlapped_backward =
        !t.forward && plan.dp_comm_overlap && plan.dp > 1 &&
        (fsdp() || static_cast<int>(r.next) == r.last_backward[t.chunk]);
    r.program = t.forward ? &c.forward : overlapped_backward ? &c.backward_overlapped : &c.backward;
    r.running = true;
    r.op = 0;
    r.slots.clear();
    r.waiting_slot = -1;
    r.task_start = sim.now();
    if (fsdp()) {
      // Every pass gathers its parameters again, one bucket ahead of the compute.
      r.params_ready[t.chunk].assign(c.buckets.size(), 0);
      r.pass_gathers.assign(c.buckets.size(), 0);
    }
    // The static fast path cannot see the data-parallel stream that ZeRO-3's gathers queue on.
    if (comm.flow() || fsdp()) {
      advance(r);
    } else {
      run_static(r);
    }
  }

  /// Analytical backend: the pass's duration in one step, with the same arithmetic the flow
  /// interpreter uses when nothing contends.
  void run_static(RankRun& r) {
    Time t = sim.now();
    std::map<int, std::pair<Time, GroupKind>> slot_end;
    for (const WorkOp& op : r.program->ops) {
      switch (op.kind) {
        case WorkOp::Kind::compute: {
          const Time d = seconds(op.seconds);
          record(r, "compute", op.name, t, t + d);
          r.breakdown.compute += d.s();
          t += d;
          break;
        }
        case WorkOp::Kind::comm: {
          const Time d = comm.collective_time(r.rank, op.group, op.op, op.bytes);
          record(
              r, "comm", [&] { return comm_name(op.group, op.op); }, t, t + d);
          exposed_slot(r.breakdown, op.group) += d.s();
          t += d;
          break;
        }
        case WorkOp::Kind::comm_start: {
          const Time d = comm.collective_time(r.rank, op.group, op.op, op.bytes);
          record(
              r, "comm", [&] { return comm_name(op.group, op.op); }, t, t + d);
          slot_end[op.slot] = {t + d, op.group};
          break;
        }
        case WorkOp::Kind::comm_wait: {
          const auto [end, kind] = slot_end[op.slot];
          if (end > t) {
            exposed_slot(r.breakdown, kind) += (end - t).s();
            t = end;
          }
          break;
        }
        case WorkOp::Kind::param_gate: {
          if (!gated(r)) break;
          const Time ready_at = r.params_ready_at[r.tasks[r.next].chunk][op.slot];
          if (ready_at > t) {
            record(r, "compute", "wait params", t, ready_at);
            r.breakdown.exposed_dp += (ready_at - t).s();
            t = ready_at;
          }
          break;
        }
        case WorkOp::Kind::bucket_ready: {
          if (!reducing(r)) break;
          const int chunk = r.tasks[r.next].chunk;
          const int bucket = op.slot;
          ++r.pending_dp;  // held until the launch, so the optimizer cannot start early
          sim.schedule_at(t, [this, &r, chunk, bucket] {
            --r.pending_dp;
            reduce_bucket(r, chunk, bucket);
          });
          break;
        }
      }
    }
    sim.schedule_at(t, [this, &r] { finish_task(r); });
  }

  void advance(RankRun& r) {
    const auto& ops = r.program->ops;
    while (r.op < ops.size()) {
      const WorkOp& op = ops[r.op];
      switch (op.kind) {
        case WorkOp::Kind::compute: {
          ++r.op;
          const Time d = seconds(op.seconds);
          record(r, "compute", op.name, sim.now(), sim.now() + d);
          r.breakdown.compute += d.s();
          sim.schedule_in(d, [this, &r] { advance(r); });
          return;
        }
        case WorkOp::Kind::comm: {
          ++r.op;
          const Time start = sim.now();
          const GroupKind kind = op.group;
          const CollectiveOp cop = op.op;
          collective(r, op.group, op.op, op.bytes, [this, &r, start, kind, cop] {
            record(
                r, "comm", [&] { return comm_name(kind, cop); }, start, sim.now());
            exposed_slot(r.breakdown, kind) += (sim.now() - start).s();
            advance(r);
          });
          return;
        }
        case WorkOp::Kind::comm_start: {
          ++r.op;
          const int slot = op.slot;
          const Time start = sim.now();
          const GroupKind kind = op.group;
          const CollectiveOp cop = op.op;
          r.slots[slot] = {false, op.group};
          collective(r, op.group, op.op, op.bytes, [this, &r, slot, start, kind, cop] {
            record(
                r, "comm", [&] { return comm_name(kind, cop); }, start, sim.now());
            r.slots[slot].first = true;
            if (r.waiting_slot == slot) {
              r.waiting_slot = -1;
              exposed_slot(r.breakdown, r.slots[slot].second) += (sim.now() - r.wait_start).s();
              advance(r);
            }
          });
          continue;
        }
        case WorkOp::Kind::comm_wait: {
          ++r.op;
          if (r.slots[op.slot].first) continue;
          r.waiting_slot = op.slot;
          r.wait_start = sim.now();
          return;
        }
        case WorkOp::Kind::param_gate: {
          ++r.op;
          if (!gated(r)) continue;
          const int chunk = r.tasks[r.next].chunk;
          if (fsdp()) {
            const bool forward = r.tasks[r.next].forward;
            const int buckets = static_cast<int>(r.pass_gathers.size());
            issue_pass_gather(r, chunk, op.slot);
            const int next = forward ? op.slot - 1 : op.slot + 1;
            if (next >= 0 && next < buckets) issue_pass_gather(r, chunk, next);
          }
          if (r.params_ready[chunk][op.slot]) continue;
          r.waiting_gate_chunk = chunk;
          r.waiting_gate_bucket = op.slot;
          r.wait_start = sim.now();
          return;
        }
        case WorkOp::Kind::bucket_ready: {
          ++r.op;
          if (reducing(r)) reduce_bucket(r, r.tasks[r.next].chunk, op.slot);
          continue;
        }
      }
    }
    finish_task(r);
  }

  /// ZeRO-3 / FSDP: parameters live sharded and are gathered for every pass; gradients are
  /// reduce-scattered after every micro-batch's backward.
  bool fsdp() const { return plan.zero >= 3 && dp_active() && !workload.frozen_base; }

  /// The pass waits for parameter gathers: every pass with ZeRO-3, else the first forward of its
  /// chunk when this step's ZeRO-1/2 gathers overlap the forward.
  bool gated(const RankRun& r) const {
    const PipelineTask& t = r.tasks[r.next];
    if (fsdp()) return true;
    return r.gathering && t.forward && static_cast<int>(r.next) == r.first_forward[t.chunk];
  }

  /// The pass reduces gradients as buckets complete: the last backward of its chunk, or every
  /// backward with ZeRO-3.
  bool reducing(const RankRun& r) const {
    const PipelineTask& t = r.tasks[r.next];
    return !t.forward && plan.dp_comm_overlap && dp_active() &&
           (fsdp() || static_cast<int>(r.next) == r.last_backward[t.chunk]);
  }

  /// ZeRO-3: starts the current pass's gather of `bucket` unless it has already started.
  void issue_pass_gather(RankRun& r, int chunk, int bucket) {
    if (r.pass_gathers[bucket]) return;
    r.pass_gathers[bucket] = 1;
    const auto parts = bucket_parts(r, chunk, bucket, workload.param_bytes);
    if (parts.empty()) {
      r.params_ready[chunk][bucket] = 1;
      return;
    }
    auto left = std::make_shared<int>(static_cast<int>(parts.size()));
    for (const auto& [kind, bytes] : parts) {
      dp_collective(r, kind, CollectiveOp::all_gather, bytes, [this, &r, chunk, bucket, left] {
        if (--*left == 0) params_arrived(r, chunk, bucket);
      });
    }
  }

  /// A bucket's data-parallel collectives: dense parameters over DP, expert ones over
  /// expert-DP, at `bytes_per_param`.
  std::vector<std::pair<GroupKind, double>> bucket_parts(const RankRun& r, int chunk, int bucket,
                                                         double bytes_per_param) const {
    const ChunkWork::Bucket& b =
        r.work->chunks[static_cast<size_t>(chunk)].buckets[static_cast<size_t>(bucket)];
    std::vector<std::pair<GroupKind, double>> parts;
    if (b.dense > 0 && plan.dp > 1) parts.emplace_back(GroupKind::dp, b.dense * bytes_per_param);
    if (b.expert > 0 && expert_dp() > 1)
      parts.emplace_back(GroupKind::edp, b.expert * bytes_per_param);
    return parts;
  }

  void params_arrived(RankRun& r, int chunk, int bucket) {
    r.params_ready[chunk][bucket] = 1;
    if (r.waiting_gate_chunk == chunk && r.waiting_gate_bucket == bucket) {
      r.waiting_gate_chunk = r.waiting_gate_bucket = -1;
      record(r, "compute", "wait params", r.wait_start, sim.now());
      r.breakdown.exposed_dp += (sim.now() - r.wait_start).s();
      advance(r);
    } else if (!r.running) {
      try_start(r);
    }
  }

  // ---- pipeline ---------------------------------------------------------------------------

  void finish_task(RankRun& r) {
    const PipelineTask t = r.tasks[r.next];
    record(
        r, "tasks",
        [&] { return fmt::format("{} mb{} c{}", t.forward ? "F" : "B", t.microbatch, t.chunk); },
        r.task_start, sim.now());
    const ChunkWork& c = r.work->chunks[static_cast<size_t>(t.chunk)];
    const int v = t.chunk * plan.pp + r.stage;
    const Time produced = sim.now();
    // Activations go to the next virtual stage, gradients to the previous one.
    if (t.forward && v + 1 < virtual_stages()) {
      send(r, (v + 1) % plan.pp, (v + 1) / plan.pp, t.microbatch, true, c.p2p_bytes, produced);
    } else if (!t.forward && v > 0) {
      send(r, (v - 1) % plan.pp, (v - 1) / plan.pp, t.microbatch, false, c.p2p_bytes, produced);
    }
    r.running = false;
    r.program = nullptr;
    ++r.next;
    r.free_since = sim.now();
    if (r.next == r.tasks.size()) {
      r.compute_done = true;
      maybe_optimizer(r);
      return;
    }
    try_start(r);
  }

  void send(RankRun& from, int stage, int chunk, int mb, bool forward, double bytes,
            Time produced) {
    Coordinates c = placement.coordinates(from.rank);
    c.pp = stage;
    const int to = placement.rank_of(c);
    RankRun* dest = by_rank.at(to);
    auto arrive = [this, dest, chunk, mb, forward, produced] {
      (forward ? dest->fwd_in : dest->bwd_in)[mb][chunk] = 1;
      (forward ? dest->fwd_produced : dest->bwd_produced)[mb][chunk] = produced;
      try_start(*dest);
    };
    if (to == from.rank) {
      arrive();
      return;
    }
    comm.p2p(from.rank, to, bytes, options.pp_all_instances && !options.full_ranks, arrive);
  }

  bool ready(RankRun& r, Time& produced) {
    const PipelineTask& t = r.tasks[r.next];
    const int v = t.chunk * plan.pp + r.stage;
    produced = Time::zero();
    if (t.forward) {
      if (v > 0) {
        if (!r.fwd_in[t.microbatch][t.chunk]) return false;
        produced = r.fwd_produced[t.microbatch][t.chunk];
      }
    } else if (v + 1 < virtual_stages()) {
      if (!r.bwd_in[t.microbatch][t.chunk]) return false;
      produced = r.bwd_produced[t.microbatch][t.chunk];
    }
    return true;
  }

  void try_start(RankRun& r) {
    if (r.running || r.next >= r.tasks.size()) return;
    Time produced;
    if (!ready(r, produced)) return;
    // Idle time before this task: waiting for the neighbour's compute is bubble, waiting for
    // the bytes in flight is exposed point-to-point communication. This holds for the first
    // task too: a later stage's wait for its first input is the pipeline filling (parameter
    // gathers are waited for inside the pass, at its param_gate ops).
    const Time now = sim.now();
    if (now > r.free_since) {
      const Time split = std::clamp(produced, r.free_since, now);
      r.breakdown.bubble += (split - r.free_since).s();
      r.breakdown.exposed_pp += (now - split).s();
      record(r, "compute", "idle", r.free_since, now);
    }
    start_task(r);
  }

  // ---- data parallelism ----------------------------------------------------------------

  void dp_enqueue(RankRun& r, std::function<void(Callback)> work) {
    r.dp_queue.push_back(std::move(work));
    ++r.pending_dp;
    dp_next(r);
  }

  void dp_next(RankRun& r) {
    if (r.dp_busy || r.dp_queue.empty()) return;
    r.dp_busy = true;
    auto work = std::move(r.dp_queue.front());
    r.dp_queue.erase(r.dp_queue.begin());
    work([this, &r] {
      r.dp_busy = false;
      --r.pending_dp;
      dp_next(r);
      maybe_optimizer(r);
    });
  }

  void dp_collective(RankRun& r, GroupKind kind, CollectiveOp op, double bytes, Callback after) {
    dp_enqueue(r, [this, &r, kind, op, bytes, after = std::move(after)](Callback done) mutable {
      const Time start = sim.now();
      collective(r, kind, op, bytes, [this, &r, start, kind, op, bytes, done, after] {
        record(
            r, "dp", [&] { return fmt::format("{} {:.0f} MB", comm_name(kind, op), bytes / 1e6); },
            start, sim.now());
        if (after) after();
        done();
      });
    });
  }

  bool dp_active() const {
    return plan.dp > 1 || (plan.ep > 1 && plan.tp * plan.cp * plan.dp / plan.ep > 1);
  }

  double expert_dp() const { return static_cast<double>(plan.tp) * plan.cp * plan.dp / plan.ep; }

  /// Reduces one gradient bucket: dense gradients over DP, expert gradients over expert-DP.
  void reduce_bucket(RankRun& r, int chunk, int bucket) {
    const CollectiveOp op =
        plan.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
    for (const auto& [kind, bytes] : bucket_parts(r, chunk, bucket, workload.grad_bytes)) {
      dp_collective(r, kind, op, bytes, nullptr);
    }
  }

  void reduce_all(RankRun& r) {
    for (size_t c = 0; c < r.work->chunks.size(); ++c) {
      for (size_t b = 0; b < r.work->chunks[c].buckets.size(); ++b) {
        reduce_bucket(r, static_cast<int>(c), static_cast<int>(b));
      }
    }
  }

  void maybe_optimizer(RankRun& r) {
    if (!r.compute_done || r.finished) return;
    if (!r.reduced && (!plan.dp_comm_overlap || !dp_active())) {
      r.reduced = true;  // no overlap: every bucket is reduced after the last backward
      if (dp_active()) reduce_all(r);
    }
    if (r.pending_dp > 0) return;
    r.finished = true;
    const Time wait_start = r.free_since;
    r.breakdown.exposed_dp += (sim.now() - wait_start).s();
    if (sim.now() > wait_start) record(r, "compute", "wait dp", wait_start, sim.now());
    const Time opt = seconds(r.work->optimizer_seconds);
    record(r, "compute", "optimizer", sim.now(), sim.now() + opt);
    r.breakdown.optimizer += opt.s();
    sim.schedule_in(opt, [this, &r] {
      if (plan.zero >= 1 && !fsdp() && !plan.param_gather_overlap && dp_active() &&
          !workload.frozen_base) {
        // Parameters gathered after the step, in full view of the next one.
        const Time gather_start = sim.now();
        gather_parameters(r, [this, &r, gather_start] {
          r.breakdown.exposed_dp += (sim.now() - gather_start).s();
          r.breakdown.end = sim.now().s();
        });
        return;
      }
      r.breakdown.end = sim.now().s();
    });
  }

  /// The ZeRO parameter all-gathers of every bucket, in the order the forward needs them, on the
  /// DP stream; `all_done` runs after the last one.
  void gather_parameters(RankRun& r, Callback all_done) {
    auto remaining = std::make_shared<int>(0);
    auto finish = std::make_shared<Callback>(std::move(all_done));
    Time expected = sim.now();  // completion times for the analytical backend
    for (size_t c = 0; c < r.work->chunks.size(); ++c) {
      const ChunkWork& chunk = r.work->chunks[c];
      for (size_t b = chunk.buckets.size(); b-- > 0;) {
        const auto parts =
            bucket_parts(r, static_cast<int>(c), static_cast<int>(b), workload.param_bytes);
        for (const auto& [kind, bytes] : parts) {
          expected += comm.collective_time(r.rank, kind, CollectiveOp::all_gather, bytes);
        }
        r.params_ready_at[c][b] = expected;
        if (parts.empty()) {
          r.params_ready[c][b] = 1;
          continue;
        }
        auto left = std::make_shared<int>(static_cast<int>(parts.size()));
        const int ci = static_cast<int>(c), bi = static_cast<int>(b);
        for (const auto& [kind, bytes] : parts) {
          ++*remaining;
          dp_collective(r, kind, CollectiveOp::all_gather, bytes,
                        [this, &r, ci, bi, left, remaining, finish] {
                          if (--*left == 0) params_arrived(r, ci, bi);
                          if (--*remaining == 0 && *finish) (*finish)();
                        });
        }
      }
    }
    if (*remaining == 0 && *finish) (*finish)();
  }

  void start(RankRun& r) {
    r.gathering = plan.zero >= 1 && !fsdp() && plan.param_gather_overlap && dp_active() &&
                  !workload.frozen_base;
    for (size_t c = 0; c < r.params_ready.size(); ++c) {
      const size_t buckets = r.work->chunks[c].buckets.size();
      r.params_ready[c].assign(buckets, r.gathering ? 0 : 1);
      r.params_ready_at[c].assign(buckets, Time::zero());
    }
    if (r.gathering) gather_parameters(r, nullptr);
    try_start(r);
  }
};

}  // namespace

StepResult simulate_step(const System& system, const CollectiveProfile& collective,
                         const Workload& workload, const ParallelPlan& plan,
                         const StepOptions& options) {
  StepResult result;
  sim::Simulation simulation;
  const Placement placement(plan, plan.gpus());
  Communicator comm(simulation, system, collective, placement, options);
  std::vector<TraceEvent> trace;
  Engine engine{simulation, comm,      workload,
                plan,       placement, options,
                {},         {},        options.trace ? &trace : nullptr,
                {},         {}};
  const auto schedule = pipeline_schedule(plan.pp, plan.vp, workload.microbatches);

  std::vector<int> ranks;
  if (options.full_ranks) {
    for (int r = 0; r < plan.gpus(); ++r)
      ranks.push_back(r);
  } else {
    for (int s = 0; s < plan.pp; ++s)
      ranks.push_back(placement.stage_representative(s));
  }
  for (int rank : ranks) {
    auto run = std::make_unique<RankRun>();
    run->engine = &engine;
    run->rank = rank;
    run->stage = placement.coordinates(rank).pp;
    run->work = &workload.stages[static_cast<size_t>(run->stage)];
    run->tasks = schedule[static_cast<size_t>(run->stage)];
    const size_t m = static_cast<size_t>(workload.microbatches);
    const size_t vp = static_cast<size_t>(plan.vp);
    run->fwd_in.assign(m, std::vector<char>(vp, 0));
    run->bwd_in.assign(m, std::vector<char>(vp, 0));
    run->fwd_produced.assign(m, std::vector<Time>(vp));
    run->bwd_produced.assign(m, std::vector<Time>(vp));
    run->params_ready.assign(vp, {});
    run->params_ready_at.assign(vp, {});
    run->last_backward.assign(vp, -1);
    run->first_forward.assign(vp, -1);
    for (size_t i = 0; i < run->tasks.size(); ++i) {
      const PipelineTask& t = run->tasks[i];
      if (!t.forward) run->last_backward[t.chunk] = static_cast<int>(i);
      if (t.forward && run->first_forward[t.chunk] < 0)
        run->first_forward[t.chunk] = static_cast<int>(i);
    }
    engine.by_rank[rank] = run.get();
    engine.ranks.push_back(std::move(run));
  }
  // Traces: every link's rate after each re-solve, kept for the busiest links at the end.
  std::map<topologies::LinkId, std::vector<std::pair<double, double>>> link_rates;
  if (options.trace && comm.flow()) {
    comm.flow_network()->set_link_rate_observer(
        [&link_rates](sim::LinkId l, sim::Time t, double rate) {
          auto& series = link_rates[static_cast<topologies::LinkId>(l)];
          if (!series.empty() && series.back().first == t.us()) {
            series.back().second = rate;
          } else if (series.empty() || series.back().second != rate) {
            series.emplace_back(t.us(), rate);
          }
        });
  }
  for (auto& r : engine.ranks)
    engine.start(*r);
  simulation.run();

  // Per-stage breakdowns (averaged over the simulated ranks of a stage).
  result.stages.assign(static_cast<size_t>(plan.pp), StageBreakdown{});
  std::vector<int> count(static_cast<size_t>(plan.pp), 0);
  for (const auto& r : engine.ranks) {
    if (!r->finished) {
      throw std::logic_error(fmt::format("rank {} did not finish the step (deadlock)", r->rank));
    }
    StageBreakdown& s = result.stages[static_cast<size_t>(r->stage)];
    const StageBreakdown& b = r->breakdown;
    s.compute += b.compute;
    s.exposed_tp += b.exposed_tp;
    s.exposed_cp += b.exposed_cp;
    s.exposed_ep += b.exposed_ep;
    s.exposed_pp += b.exposed_pp;
    s.bubble += b.bubble;
    s.exposed_dp += b.exposed_dp;
    s.optimizer += b.optimizer;
    s.end = std::max(s.end, b.end);
    ++count[static_cast<size_t>(r->stage)];
  }
  for (size_t s = 0; s < result.stages.size(); ++s) {
    StageBreakdown& b = result.stages[s];
    const double n = std::max(1, count[s]);
    b.compute /= n;
    b.exposed_tp /= n;
    b.exposed_cp /= n;
    b.exposed_ep /= n;
    b.exposed_pp /= n;
    b.bubble /= n;
    b.exposed_dp /= n;
    b.optimizer /= n;
    if (b.end > result.step_seconds) {
      result.step_seconds = b.end;
      result.critical_stage = static_cast<int>(s);
    }
  }
  // The reported breakdown is the first stage's: it runs the longest (warm-up and cool-down).
  result.critical_stage = 0;
  result.events = simulation.events_executed();
  result.simulated_ranks = engine.ranks.size();
  if (sim::Network* net = comm.network()) {
    result.flows = net->stats().flows_started;
    result.rate_solves = net->stats().rate_solves;
    result.solved_flows = net->stats().solved_flows;
    const auto& caps = comm.capacities();
    const topologies::Topology& t = *system.topology;
    std::vector<std::pair<double, size_t>> use;
    for (size_t l = 0; l < net->link_bytes().size(); ++l) {
      const double bytes = net->link_bytes()[l];
      if (bytes <= 0) continue;
      const double usable = caps[l].bandwidth.bytes_per_s() * caps[l].efficiency;
      use.emplace_back(bytes / (usable * result.step_seconds), l);
    }
    std::sort(use.begin(), use.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t i = 0; i < use.size() && static_cast<int>(i) < options.busiest_links; ++i) {
      const auto id = static_cast<topologies::LinkId>(use[i].second);
      result.busiest_links.push_back({t.resource_name(id),
                                      std::string(topologies::to_string(t.resource_kind(id))),
                                      net->link_bytes()[use[i].second], use[i].first});
      const auto series = link_rates.find(id);
      if (series == link_rates.end()) continue;
      for (const auto& [at_us, rate] : series->second) {
        TraceEvent e;
        e.name = "GB/s";
        e.track = "link " + t.resource_name(id);
        e.pid = plan.pp;  // after the stages' processes
        e.start_us = at_us;
        e.value = rate * 1e-9;
        trace.push_back(std::move(e));
      }
    }
  }
  result.trace = std::move(trace);
  return result;
}

nlohmann::json trace_to_json(const StepResult& result) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> tids;
  std::set<int> named;
  for (const TraceEvent& e : result.trace) {
    if (named.insert(e.pid).second) {
      events.push_back(
          {{"name", "process_name"},
           {"ph", "M"},
           {"pid", e.pid},
           {"args", {{"name", e.value ? std::string("links") : fmt::format("stage {}", e.pid)}}}});
    }
    const auto [it, inserted] = tids.emplace(e.track, static_cast<int>(tids.size()));
    if (inserted) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", e.pid},
                        {"tid", it->second},
                        {"args", {{"name", e.track}}}});
    }
    if (e.value) {
      events.push_back({{"name", e.track},
                        {"ph", "C"},
                        {"pid", e.pid},
                        {"ts", e.start_us},
                        {"args", {{e.name, *e.value}}}});
      continue;
    }
    events.push_back({{"name", e.name},
                      {"ph", "X"},
                      {"pid", e.pid},
                      {"tid", it->second},
                      {"ts", e.start_us},
                      {"dur", e.duration_us}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace fabricsim::models
