#include "models/step_simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "models/collective_runner.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/step_communicator.hpp"
#include "models/straggler_model.hpp"
#include "sim/flow_network.hpp"
#include "sim/simulation.hpp"

namespace fabricsim::models {
namespace {

using sim::Time;
using Callback = std::function<void()>;

/// What a rank's compute-stream time is booked to, in kBreakdownComponents order. Kept in
/// integer picoseconds while the step runs, so a pass's memoized cost adds exactly as its ops do.
enum Part : size_t { kCompute, kTp, kCp, kEp, kPp, kBubble, kDp, kOptimizer, kParts };
using PartTimes = std::array<Time, kParts>;

/// The exposed-communication part of a group kind on the compute stream.
Part exposed_part(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp:
      return kTp;
    case GroupKind::cp:
      return kCp;
    case GroupKind::ep:
      return kEp;
    case GroupKind::pp:
      return kPp;
    case GroupKind::dp:
    case GroupKind::edp:
      return kDp;
  }
  return kDp;
}

/// A pass's cost on the analytical backend when nothing in it depends on the data-parallel
/// stream: its duration and what each part of it was booked to.
struct PassCost {
  Time duration;
  PartTimes parts{};
};

/// The collective a pass started in a slot (comm_start): whether it has finished and when
/// (known at the start on the analytical backend, at its completion on the flow backend).
struct Slot {
  bool done = false;
  GroupKind kind = GroupKind::tp;
  Time end;
};

/// A collective of a rank's passes and its uncontended time.
struct ResolvedCollective {
  GroupKind kind;
  CollectiveOp op;
  sim::Bytes bytes;
  Time time;
};

/// An activation or gradient a task waits for.
struct Input {
  bool sent = false;
  Time produced;  ///< when the neighbour finished the pass that made it
  Time at;        ///< when it arrives (analytical: known when it is sent)
};

/// The running pass's interpreter state (reset when a pass starts).
struct PassState {
  const PassProgram* program = nullptr;
  int program_index = 0;  ///< chunk * 3 + variant (forward, backward, overlapped backward)
  size_t op = 0;
  Time start;
  /// How far the pass has run: ahead of the simulation's clock while it runs ops whose end is
  /// known (compute; on the analytical backend every op); the clock catches up before an op
  /// that depends on other ranks or on the network.
  Time cursor;
  std::vector<Slot> slots;
  int waiting_slot = -1;        ///< comm_wait the pass is blocked on
  int waiting_gate_chunk = -1;  ///< param_gate the pass is blocked on
  int waiting_gate_bucket = -1;
  Time wait_start;
  std::vector<char> gathers;  ///< ZeRO-3: buckets whose gather this pass has issued
  /// The pass is learning its program's cost (memo), from these parts at its start; its waits
  /// for parameters, which the cost leaves out.
  bool learning = false;
  PartTimes start_parts{};
  Time gate_wait;
};

/// One collective of a data-parallel stream, and what its end means.
struct DpWork {
  enum class Purpose : uint8_t {
    reduce,       ///< a gradient bucket's reduction
    gather,       ///< a bucket's parameter gather of the step's gather_parameters
    pass_gather,  ///< ZeRO-3: a bucket's parameter gather for the running pass
  };
  Purpose purpose = Purpose::reduce;
  GroupKind kind = GroupKind::dp;
  CollectiveOp op = CollectiveOp::all_reduce;
  sim::Bytes bytes;
  int chunk = 0, bucket = 0;
};

/// A rank's data-parallel stream: collectives run one after another. Entries are data rather
/// than closures, so a step's hundreds of bucket collectives allocate nothing.
struct DpStream {
  std::deque<DpWork> queue;  ///< waiting to start
  DpWork running;            ///< valid while `busy`
  Time running_since;
  bool busy = false;
  int pending = 0;       ///< collectives not yet finished
  bool reduced = false;  ///< gradients of a non-overlapped step have been launched
  /// gather_parameters: collectives not yet finished, and what runs after the last.
  int gathers_left = 0;
  Callback gathered;
  /// (chunk, bucket) of reductions whose launch waits for the clock, in launch order.
  std::deque<std::pair<int, int>> due;
};

/// One simulated rank: its stage's pipeline tasks on the compute stream and its data-parallel
/// stream.
struct RankRun {
  int rank = 0;
  int stage = 0;
  double compute_scale = 1;  ///< StepOptions::compute_slowdown of this rank
  const StageWork* work = nullptr;
  // Pipeline: the stage's tasks, where the rank is in them, and its neighbours.
  const std::vector<PipelineTask>* tasks = nullptr;
  size_t next = 0;
  bool running = false;
  Time free_since;  ///< when the compute stream last went idle
  /// Inputs from the neighbouring stages, [microbatch * vp + chunk]: activations for forwards
  /// (fwd), gradients for backwards (bwd).
  std::vector<Input> fwd, bwd;
  std::vector<int> first_forward;  ///< per chunk, index of its first forward task
  std::vector<int> last_backward;  ///< per chunk, index of its last backward task
  /// The same (tp, cp, dp) rank in the next and the previous pipeline stage (itself at pp = 1).
  RankRun* downstream = nullptr;
  RankRun* upstream = nullptr;
  /// Analytical backend: uncontended send time to downstream [0] and upstream [1], per chunk.
  std::array<std::vector<std::optional<Time>>, 2> send_time;
  // ZeRO parameters: [chunk][bucket] gathered, and whether this step's forwards wait for them.
  std::vector<std::vector<char>> params_ready;
  /// [chunk][bucket]: collectives of the bucket's running gather not yet finished (dense over DP,
  /// expert over expert-DP).
  std::vector<std::vector<int>> gather_parts_left;
  bool gathering = false;
  PassState pass;
  DpStream dp;
  /// Memoized pass costs (analytical backend), [program_index].
  std::vector<std::optional<PassCost>> memo;
  std::vector<ResolvedCollective> resolved;  ///< distinct collectives timed for this rank
  // Accounting.
  PartTimes parts{};
  bool compute_done = false;
  bool finished = false;
  Time end;
};

struct Engine {
  sim::Simulation& sim;
  Communicator& comm;
  const Workload& workload;
  const ParallelPlan& plan;
  const Placement& placement;
  const StepOptions& options;
  std::vector<std::unique_ptr<RankRun>> ranks;
  std::vector<TraceEvent>* trace = nullptr;
  // Full-rank collectives wait for every member: (kind, first member, sequence) -> arrivals.
  struct Barrier {
    size_t arrived = 0;
    std::vector<Callback> waiting;
  };
  std::map<std::tuple<int, uint32_t, int>, Barrier> barriers;
  std::map<std::pair<int, int>, int> sequence;  ///< (rank, kind) -> collectives issued
  Time step_start;                 ///< when this step began (later steps of a shared cluster)
  size_t ended = 0;                ///< ranks that have finished the step
  Callback on_end;                 ///< runs when the last rank has finished (may be empty)
  std::deque<RankRun*> finishing;  ///< passes that have ended, in the order they ended
  bool draining = false;           ///< end_pass is finishing queued passes
  // Fixed for the step, asked for every task: data-parallel groups exist; ZeRO-3 shards the
  // parameters.
  const bool dp_active_ = plan.dense_dp() > 1 || (plan.ep > 1 && plan.expert_dp() > 1);
  const bool fsdp_ = plan.zero >= 3 && dp_active_ && !workload.frozen_base;

  int virtual_stages() const { return plan.pp * plan.vp; }
  const PipelineTask& task(const RankRun& r) const { return (*r.tasks)[r.next]; }

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

  /// Records collective `kind op` of `r` on its comm track.
  void record_comm(const RankRun& r, GroupKind kind, CollectiveOp op, Time start, Time end) {
    record(
        r, "comm", [&] { return comm_name(kind, op); }, start, end);
  }

  /// A collective issued by `r`: in full-rank mode it starts once every member has issued it.
  /// Runs the collective of a comm op; a DeepEP dispatch/combine takes its own model's time
  /// once every member has arrived (full ranks) or at once (one rank per symmetric instance).
  /// Moves the rank past `op` and starts its collective at flow fidelity; when the collective
  /// ends it is recorded and then(its start) runs.
  template <class OnEnd>
  void start_collective(RankRun& r, const WorkOp& op, OnEnd then) {
    ++r.pass.op;
    const Time start = sim.now();
    const GroupKind kind = op.group;
    const CollectiveOp cop = op.op;
    collective(r, op, [this, &r, start, kind, cop, then] {
      record_comm(r, kind, cop, start, sim.now());
      then(start);
    });
  }

  void collective(RankRun& r, const WorkOp& w, Callback done) {
    const GroupKind kind = w.group;
    const CollectiveOp op = w.op;
    const sim::Bytes bytes = w.bytes;
    const WorkOp::MoeTokens moe = w.moe;
    auto run = [this, kind, op, bytes, moe](int rank, bool reduce, Callback cb) {
      if (moe.tokens > 0) {
        sim.schedule_in(comm.moe_time(rank, moe), std::move(cb));
      } else {
        comm.collective(rank, kind, op, bytes, reduce, std::move(cb));
      }
    };
    if (!options.full_ranks) {
      run(r.rank, true, std::move(done));
      return;
    }
    const std::vector<uint32_t> group = placement.group(kind, r.rank);
    const int seq = sequence[{r.rank, static_cast<int>(kind)}]++;
    Barrier& b = barriers[{static_cast<int>(kind), group.front(), seq}];
    b.waiting.push_back(std::move(done));
    if (++b.arrived < group.size()) return;
    auto waiting = std::make_shared<std::vector<Callback>>(std::move(b.waiting));
    barriers.erase({static_cast<int>(kind), group.front(), seq});
    run(r.rank, false, [waiting] {
      for (auto& callback : *waiting)
        callback();
    });
  }

  void collective(RankRun& r, GroupKind kind, CollectiveOp op, sim::Bytes bytes, Callback done) {
    WorkOp w;
    w.kind = WorkOp::Kind::comm;
    w.group = kind;
    w.op = op;
    w.bytes = bytes;
    collective(r, w, std::move(done));
  }

  // ---- the pass interpreter -------------------------------------------------------------

  void start_task(RankRun& r, Time start) {
    const PipelineTask& t = task(r);
    const ChunkWork& c = r.work->chunks[static_cast<size_t>(t.chunk)];
    const bool overlapped_backward =
        !t.forward && plan.dp_comm_overlap && plan.dense_dp() > 1 &&
        (fsdp() || static_cast<int>(r.next) == r.last_backward[t.chunk]);
    const int variant = t.forward ? 0 : overlapped_backward ? 2 : 1;
    r.pass.program = t.forward             ? &c.forward
                     : overlapped_backward ? &c.backward_overlapped
                                           : &c.backward;
    r.pass.program_index = t.chunk * 3 + variant;
    r.running = true;
    r.pass.op = 0;
    r.pass.slots.clear();
    r.pass.waiting_slot = -1;
    r.pass.start = r.pass.cursor = start;
    if (fsdp()) {
      // Every pass gathers its parameters again, one bucket ahead of the compute.
      r.params_ready[t.chunk].assign(c.buckets.size(), 0);
      r.pass.gathers.assign(c.buckets.size(), 0);
    }
    // On the analytical backend a pass that neither waits for parameters nor reduces gradients
    // costs the same every time: it is interpreted once per rank and program, then replayed.
    // A first forward that waits for ZeRO's overlapped gathers costs the same plus its waits.
    const bool replayable = !comm.flow() && trace == nullptr && !fsdp() && !reducing(r);
    const std::optional<PassCost>& memo = r.memo[static_cast<size_t>(r.pass.program_index)];
    if (replayable && memo && !gated(r)) {
      for (size_t p = 0; p < kParts; ++p)
        r.parts[p] += memo->parts[p];
      r.pass.cursor += memo->duration;
      end_pass(r);
      return;
    }
    r.pass.learning = replayable && !memo;
    r.pass.start_parts = r.parts;
    r.pass.gate_wait = Time::zero();
    if (interpret(r)) end_pass(r);
  }

  /// The pass's ops have run: it ends at its cursor. On the analytical backend it finishes
  /// there and then, ahead of the clock: what it hands on (its output's arrival at the next
  /// stage, the rank's next start) is known without waiting for it. The flow backend's send
  /// starts flows, so it waits for the clock. Finishing passes queue, so that a pipeline does
  /// not recurse through every task.
  void end_pass(RankRun& r) {
    if (r.pass.learning) {
      r.pass.learning = false;
      PassCost cost{r.pass.cursor - r.pass.start - r.pass.gate_wait, {}};
      for (size_t p = 0; p < kParts; ++p)
        cost.parts[p] = r.parts[p] - r.pass.start_parts[p];
      cost.parts[kDp] -= r.pass.gate_wait;
      r.memo[static_cast<size_t>(r.pass.program_index)] = cost;
    }
    if (comm.flow() && r.pass.cursor > sim.now()) {
      sim.schedule_at(r.pass.cursor, [this, &r] { finish_task(r); });
      return;
    }
    finishing.push_back(&r);
    if (draining) return;
    draining = true;
    while (!finishing.empty()) {
      RankRun* next = finishing.front();
      finishing.pop_front();
      finish_task(*next);
    }
    draining = false;
  }

  /// Continues the running pass after a wait, at the simulation's clock.
  void resume(RankRun& r) {
    r.pass.cursor = sim.now();
    if (interpret(r)) end_pass(r);
  }

  /// Lets the clock catch up with the pass before an op that needs it: true when it already has
  /// (go on), false when the pass resumes later.
  bool caught_up(RankRun& r) {
    if (r.pass.cursor <= sim.now()) return true;
    sim.schedule_at(r.pass.cursor, [this, &r] { resume(r); });
    return false;
  }

  /// The interpreter of pass programs, for both backends: runs the running pass's ops from
  /// `r.pass.op` on, booking each to its part. An op whose end is known when it starts (compute; on
  /// the analytical backend collectives too) moves the cursor; any other one waits for the clock
  /// and then for its event. Returns true when the pass's last op has run (the pass ends at
  /// `r.pass.cursor`), false when it waits.
  bool interpret(RankRun& r) {
    const auto& ops = r.pass.program->ops;
    const bool flow = comm.flow();
    while (r.pass.op < ops.size()) {
      const WorkOp& op = ops[r.pass.op];
      switch (op.kind) {
        case WorkOp::Kind::compute: {
          if (trace == nullptr && r.compute_scale == 1) {
            r.parts[kCompute] += op.run_duration;
            r.pass.cursor += op.run_duration;
            r.pass.op = op.run_end;
            continue;
          }
          const Time d = known_duration(r, op);
          record(r, "compute", op.name, r.pass.cursor, r.pass.cursor + d);
          r.parts[kCompute] += d;
          r.pass.cursor += d;
          ++r.pass.op;
          continue;
        }
        case WorkOp::Kind::comm: {
          if (!flow) {
            const Time d = known_duration(r, op);
            record_comm(r, op.group, op.op, r.pass.cursor, r.pass.cursor + d);
            r.parts[exposed_part(op.group)] += d;
            r.pass.cursor += d;
            ++r.pass.op;
            continue;
          }
          if (!caught_up(r)) return false;
          start_collective(r, op, [this, &r, kind = op.group](Time start) {
            r.parts[exposed_part(kind)] += sim.now() - start;
            resume(r);
          });
          return false;
        }
        case WorkOp::Kind::comm_start: {
          const size_t slot = static_cast<size_t>(op.slot);
          if (r.pass.slots.size() <= slot) r.pass.slots.resize(slot + 1);
          if (!flow) {
            const Time d = known_duration(r, op);
            record_comm(r, op.group, op.op, r.pass.cursor, r.pass.cursor + d);
            r.pass.slots[slot] = {true, op.group, r.pass.cursor + d};
            ++r.pass.op;
            continue;
          }
          if (!caught_up(r)) return false;
          r.pass.slots[slot] = {false, op.group, Time::zero()};
          start_collective(r, op, [this, &r, slot](Time) {
            r.pass.slots[slot].done = true;
            r.pass.slots[slot].end = sim.now();
            if (r.pass.waiting_slot == static_cast<int>(slot)) {
              r.pass.waiting_slot = -1;
              r.parts[exposed_part(r.pass.slots[slot].kind)] += sim.now() - r.pass.wait_start;
              resume(r);
            }
          });
          continue;
        }
        case WorkOp::Kind::comm_wait: {
          const Slot& s = r.pass.slots[static_cast<size_t>(op.slot)];
          if (s.done) {
            if (s.end > r.pass.cursor) {
              r.parts[exposed_part(s.kind)] += s.end - r.pass.cursor;
              r.pass.cursor = s.end;
            }
            ++r.pass.op;
            continue;
          }
          if (!caught_up(r)) return false;
          ++r.pass.op;
          r.pass.waiting_slot = op.slot;
          r.pass.wait_start = sim.now();
          return false;
        }
        case WorkOp::Kind::param_gate: {
          if (!gated(r)) {
            ++r.pass.op;
            continue;
          }
          if (!caught_up(r)) return false;
          ++r.pass.op;
          const int chunk = task(r).chunk;
          if (fsdp()) {
            const bool forward = task(r).forward;
            const int buckets = static_cast<int>(r.pass.gathers.size());
            issue_pass_gather(r, chunk, op.slot);
            const int next = forward ? op.slot - 1 : op.slot + 1;
            if (next >= 0 && next < buckets) issue_pass_gather(r, chunk, next);
          }
          if (r.params_ready[chunk][op.slot]) continue;
          r.pass.waiting_gate_chunk = chunk;
          r.pass.waiting_gate_bucket = op.slot;
          r.pass.wait_start = sim.now();
          return false;
        }
        case WorkOp::Kind::bucket_ready: {
          ++r.pass.op;
          if (!reducing(r)) continue;
          const int chunk = task(r).chunk;
          const int bucket = op.slot;
          if (r.pass.cursor <= sim.now()) {
            reduce_bucket(r, chunk, bucket);
            continue;
          }
          // The reduction is launched when the clock reaches the cursor; the pass goes on. Held
          // until then, so that the optimizer cannot start early. A rank's cursor never goes
          // back and same-time events run in order, so the due buckets are a queue.
          ++r.dp.pending;
          r.dp.due.push_back({chunk, bucket});
          sim.schedule_at(r.pass.cursor, [this, &r] {
            const auto [due_chunk, due_bucket] = r.dp.due.front();
            r.dp.due.pop_front();
            --r.dp.pending;
            reduce_bucket(r, due_chunk, due_bucket);
          });
          continue;
        }
      }
    }
    return true;
  }

  /// A compute duration on rank `r`, slowed by its straggler factor (unscaled times stay exact).
  static Time scaled(const RankRun& r, Time t) {
    return r.compute_scale == 1 ? t : t * r.compute_scale;
  }

  /// An op's duration when it starts, if known: a kernel's, or (analytical backend) a
  /// collective's uncontended time.
  Time known_duration(RankRun& r, const WorkOp& op) {
    if (op.kind == WorkOp::Kind::compute) {
      return scaled(r, op.duration);
    }
    if (op.moe.tokens > 0) return comm.moe_time(r.rank, op.moe);
    return rank_collective_time(r, op.group, op.op, op.bytes);
  }

  /// A collective's uncontended time for `r`: a pass repeats a handful of distinct collectives
  /// layer after layer, so a short list per rank answers before the communicator's map.
  Time rank_collective_time(RankRun& r, GroupKind kind, CollectiveOp op, sim::Bytes bytes) {
    for (const ResolvedCollective& c : r.resolved) {
      if (c.bytes == bytes && c.kind == kind && c.op == op) return c.time;
    }
    const Time t = comm.collective_time(r.rank, kind, op, bytes);
    r.resolved.push_back({kind, op, bytes, t});
    return t;
  }

  /// ZeRO-3 / FSDP: parameters live sharded and are gathered for every pass; gradients are
  /// reduce-scattered after every micro-batch's backward.
  bool fsdp() const { return fsdp_; }

  /// The pass waits for parameter gathers: every pass with ZeRO-3, else the first forward of its
  /// chunk when this step's ZeRO-1/2 gathers overlap the forward.
  bool gated(const RankRun& r) const {
    const PipelineTask& t = task(r);
    if (fsdp()) return true;
    return r.gathering && t.forward && static_cast<int>(r.next) == r.first_forward[t.chunk];
  }

  /// The pass reduces gradients as buckets complete: the last backward of its chunk, or every
  /// backward with ZeRO-3.
  bool reducing(const RankRun& r) const {
    const PipelineTask& t = task(r);
    return !t.forward && plan.dp_comm_overlap && dp_active() &&
           (fsdp() || static_cast<int>(r.next) == r.last_backward[t.chunk]);
  }

  /// ZeRO-3: starts the current pass's gather of `bucket` unless it has already started.
  void issue_pass_gather(RankRun& r, int chunk, int bucket) {
    if (r.pass.gathers[bucket]) return;
    r.pass.gathers[bucket] = 1;
    gather_bucket(r, chunk, bucket, DpWork::Purpose::pass_gather);
  }

  /// The data-parallel collectives of one of the rank's buckets (models/workload).
  BucketParts parts_of(const RankRun& r, int chunk, int bucket, double bytes_per_param) const {
    return bucket_parts(
        r.work->chunks[static_cast<size_t>(chunk)].buckets[static_cast<size_t>(bucket)], plan,
        bytes_per_param);
  }

  /// Queues the parameter gathers of one bucket; a bucket with nothing to gather is ready.
  void gather_bucket(RankRun& r, int chunk, int bucket, DpWork::Purpose purpose) {
    const BucketParts parts = parts_of(r, chunk, bucket, workload.param_bytes);
    if (parts.empty()) {
      r.params_ready[chunk][bucket] = 1;
      return;
    }
    r.gather_parts_left[chunk][bucket] = static_cast<int>(parts.size());
    if (purpose == DpWork::Purpose::gather) r.dp.gathers_left += static_cast<int>(parts.size());
    for (const auto& [kind, bytes] : parts) {
      dp_enqueue(r, {purpose, kind, CollectiveOp::all_gather, bytes, chunk, bucket});
    }
  }

  void params_arrived(RankRun& r, int chunk, int bucket) {
    r.params_ready[chunk][bucket] = 1;
    if (r.pass.waiting_gate_chunk == chunk && r.pass.waiting_gate_bucket == bucket) {
      r.pass.waiting_gate_chunk = r.pass.waiting_gate_bucket = -1;
      record(r, "compute", "wait params", r.pass.wait_start, sim.now());
      r.parts[kDp] += sim.now() - r.pass.wait_start;
      r.pass.gate_wait += sim.now() - r.pass.wait_start;
      resume(r);
    } else if (!r.running) {
      try_start(r);
    }
  }

  // ---- pipeline ---------------------------------------------------------------------------

  void finish_task(RankRun& r) {
    const PipelineTask t = task(r);
    record(
        r, "tasks",
        [&] { return fmt::format("{} mb{} c{}", t.forward ? "F" : "B", t.microbatch, t.chunk); },
        r.pass.start, r.pass.cursor);
    const ChunkWork& c = r.work->chunks[static_cast<size_t>(t.chunk)];
    const int v = t.chunk * plan.pp + r.stage;
    const Time produced = r.pass.cursor;
    // Activations go to the next virtual stage, gradients to the previous one.
    if (t.forward && v + 1 < virtual_stages()) {
      send(r, (v + 1) / plan.pp, t.microbatch, true, c.p2p_bytes, produced);
    } else if (!t.forward && v > 0) {
      send(r, (v - 1) / plan.pp, t.microbatch, false, c.p2p_bytes, produced);
    }
    r.running = false;
    r.pass.program = nullptr;
    ++r.next;
    r.free_since = produced;
    if (r.next == r.tasks->size()) {
      r.compute_done = true;
      if (produced > sim.now()) {
        sim.schedule_at(produced, [this, &r] { maybe_optimizer(r); });
      } else {
        maybe_optimizer(r);
      }
      return;
    }
    try_start(r);
  }

  /// Sends chunk `chunk`'s activation (forward) or gradient of micro-batch `mb` to the
  /// neighbouring stage's rank.
  void send(RankRun& from, int chunk, int mb, bool forward, sim::Bytes bytes, Time produced) {
    RankRun* dest = forward ? from.downstream : from.upstream;
    const int to = dest->rank;
    // Marks the input sent, arriving at `at`, and lets the destination start if it can.
    auto deliver = [this, dest, chunk, mb, forward, produced](Time at) {
      (forward ? dest->fwd : dest->bwd)[static_cast<size_t>(mb * plan.vp + chunk)] = {true,
                                                                                      produced, at};
      try_start(*dest);
    };
    if (to == from.rank) {
      deliver(produced);
      return;
    }
    if (!comm.flow()) {
      // Analytical: the arrival is known when the pass ends (the uncontended time, looked up
      // once per direction and chunk).
      std::optional<Time>& t = from.send_time[forward ? 0 : 1][static_cast<size_t>(chunk)];
      if (!t) t = comm.p2p_time(from.rank, to, bytes);
      deliver(produced + *t);
      return;
    }
    comm.p2p(from.rank, to, bytes, options.pp_all_instances && !options.full_ranks,
             [this, deliver] { deliver(sim.now()); });
  }

  /// Whether the next task's input has been sent, and when it was produced and arrives (zero
  /// when the task needs none).
  bool ready(const RankRun& r, Time& produced, Time& at) const {
    const PipelineTask& t = task(r);
    const int v = t.chunk * plan.pp + r.stage;
    produced = at = Time::zero();
    const bool needs_input = t.forward ? v > 0 : v + 1 < virtual_stages();
    if (!needs_input) return true;
    const Input& in =
        (t.forward ? r.fwd : r.bwd)[static_cast<size_t>(t.microbatch * plan.vp + t.chunk)];
    produced = in.produced;
    at = in.at;
    return in.sent;
  }

  /// Starts the rank's next task once its input has been sent: when the rank is free and the
  /// input has arrived, and not before the clock (a flow input arrives at the clock; an
  /// analytical one may be due later, or the rank be free later, having run ahead).
  void try_start(RankRun& r) {
    if (r.running || r.next >= r.tasks->size()) return;
    Time produced, at;
    if (!ready(r, produced, at)) return;
    const Time start = std::max({r.free_since, at, sim.now()});
    // Idle time before this task: waiting for the neighbour's compute is bubble, waiting for
    // the bytes in flight is exposed point-to-point communication. This holds for the first
    // task too: a later stage's wait for its first input is the pipeline filling (parameter
    // gathers are waited for inside the pass, at its param_gate ops).
    if (start > r.free_since) {
      const Time split = std::clamp(produced, r.free_since, start);
      r.parts[kBubble] += split - r.free_since;
      r.parts[kPp] += start - split;
      record(r, "compute", "idle", r.free_since, start);
    }
    start_task(r, start);
  }

  // ---- data parallelism ----------------------------------------------------------------

  void dp_enqueue(RankRun& r, const DpWork& work) {
    r.dp.queue.push_back(work);
    ++r.dp.pending;
    dp_next(r);
  }

  void dp_next(RankRun& r) {
    if (r.dp.busy || r.dp.queue.empty()) return;
    r.dp.busy = true;
    r.dp.running = r.dp.queue.front();
    r.dp.queue.pop_front();
    r.dp.running_since = sim.now();
    const DpWork& w = r.dp.running;
    collective(r, w.kind, w.op, w.bytes, [this, &r] { dp_done(r); });
  }

  /// The stream's running collective has finished: what it was for, then the next one.
  void dp_done(RankRun& r) {
    const DpWork w = r.dp.running;
    record(
        r, "dp",
        [&] { return fmt::format("{} {:.0f} MB", comm_name(w.kind, w.op), w.bytes.count() / 1e6); },
        r.dp.running_since, sim.now());
    if (w.purpose != DpWork::Purpose::reduce && --r.gather_parts_left[w.chunk][w.bucket] == 0) {
      params_arrived(r, w.chunk, w.bucket);
    }
    if (w.purpose == DpWork::Purpose::gather) step_gather_done(r);
    r.dp.busy = false;
    --r.dp.pending;
    dp_next(r);
    maybe_optimizer(r);
  }

  bool dp_active() const { return dp_active_; }

  /// Reduces one gradient bucket: dense gradients over DP, expert gradients over expert-DP.
  void reduce_bucket(RankRun& r, int chunk, int bucket) {
    const CollectiveOp op =
        plan.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
    for (const auto& [kind, bytes] : parts_of(r, chunk, bucket, workload.grad_bytes)) {
      dp_enqueue(r, {DpWork::Purpose::reduce, kind, op, bytes, chunk, bucket});
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
    // A rank that ran ahead is called again when the clock reaches its last pass's end.
    if (!r.compute_done || r.finished || r.free_since > sim.now()) return;
    if (!r.dp.reduced && (!plan.dp_comm_overlap || !dp_active())) {
      r.dp.reduced = true;  // no overlap: every bucket is reduced after the last backward
      if (dp_active()) reduce_all(r);
    }
    if (r.dp.pending > 0) return;
    r.finished = true;
    const Time wait_start = r.free_since;
    r.parts[kDp] += sim.now() - wait_start;
    if (sim.now() > wait_start) record(r, "compute", "wait dp", wait_start, sim.now());
    const Time opt = scaled(r, r.work->optimizer);
    record(r, "compute", "optimizer", sim.now(), sim.now() + opt);
    r.parts[kOptimizer] += opt;
    sim.schedule_in(opt, [this, &r] {
      if (plan.zero >= 1 && !fsdp() && !plan.param_gather_overlap && dp_active() &&
          !workload.frozen_base) {
        // Parameters gathered after the step, in full view of the next one.
        const Time gather_start = sim.now();
        gather_parameters(r, [this, &r, gather_start] {
          r.parts[kDp] += sim.now() - gather_start;
          rank_ended(r);
        });
        return;
      }
      rank_ended(r);
    });
  }

  void rank_ended(RankRun& r) {
    r.end = sim.now();
    if (++ended == ranks.size() && on_end) on_end();
  }

  /// The ZeRO parameter all-gathers of every bucket, in the order the forward needs them, on the
  /// DP stream; `all_done` runs after the last one.
  void gather_parameters(RankRun& r, Callback all_done) {
    r.dp.gathered = std::move(all_done);
    // One count is held while the gathers are queued, so that none finishing at once can run
    // `all_done` before the last is queued; releasing it runs `all_done` if nothing was queued.
    r.dp.gathers_left = 1;
    for (size_t c = 0; c < r.work->chunks.size(); ++c) {
      for (size_t b = r.work->chunks[c].buckets.size(); b-- > 0;) {
        gather_bucket(r, static_cast<int>(c), static_cast<int>(b), DpWork::Purpose::gather);
      }
    }
    step_gather_done(r);
  }

  /// One of gather_parameters' collectives (or its hold) is done; the last runs `gathered`.
  void step_gather_done(RankRun& r) {
    if (--r.dp.gathers_left == 0 && r.dp.gathered) std::exchange(r.dp.gathered, nullptr)();
  }

  /// Starts the step on every rank. All are ready before any starts: a rank that runs ahead
  /// may hand its output to the next stage at once.
  void start() {
    for (auto& r : ranks) {
      r->free_since = sim.now();
      r->gathering = plan.zero >= 1 && !fsdp() && plan.param_gather_overlap && dp_active() &&
                     !workload.frozen_base;
      for (size_t c = 0; c < r->params_ready.size(); ++c) {
        const size_t buckets = r->work->chunks[c].buckets.size();
        r->params_ready[c].assign(buckets, r->gathering ? 0 : 1);
        r->gather_parts_left[c].assign(buckets, 0);
      }
    }
    for (auto& r : ranks) {
      if (r->gathering) gather_parameters(*r, nullptr);
      try_start(*r);
    }
  }
};

/// A simulated rank at the start of the step, running its stage's part of `schedule`.
std::unique_ptr<RankRun> make_rank(int rank, const Placement& placement, const Workload& workload,
                                   const std::vector<std::vector<PipelineTask>>& schedule) {
  const ParallelPlan& plan = placement.plan();
  auto run = std::make_unique<RankRun>();
  run->rank = rank;
  run->stage = placement.coordinates(rank).pp;
  run->work = &workload.stages[static_cast<size_t>(run->stage)];
  run->tasks = &schedule[static_cast<size_t>(run->stage)];
  const size_t m = static_cast<size_t>(workload.microbatches);
  const size_t vp = static_cast<size_t>(plan.vp);
  run->fwd.assign(m * vp, Input{});
  run->bwd.assign(m * vp, Input{});
  run->params_ready.assign(vp, {});
  run->gather_parts_left.assign(vp, {});
  run->last_backward.assign(vp, -1);
  run->first_forward.assign(vp, -1);
  run->memo.assign(3 * vp, std::nullopt);
  for (auto& times : run->send_time)
    times.assign(vp, std::nullopt);
  for (size_t i = 0; i < run->tasks->size(); ++i) {
    const PipelineTask& t = (*run->tasks)[i];
    if (!t.forward) run->last_backward[t.chunk] = static_cast<int>(i);
    if (t.forward && run->first_forward[t.chunk] < 0)
      run->first_forward[t.chunk] = static_cast<int>(i);
  }
  return run;
}

/// A rank's booked parts as a breakdown in seconds, `end` counted from the step's start.
StageBreakdown breakdown_of(const RankRun& r, Time step_start) {
  StageBreakdown b;
  for (size_t p = 0; p < kParts; ++p)
    b.*kBreakdownComponents[p].field = r.parts[p].s();
  b.end = (r.end - step_start).s();
  return b;
}

/// The busiest links of a flow step (and, when traced, their rate counters).
void report_links(const sim::FlowNetwork& net, const std::vector<sim::LinkCapacity>& caps,
                  const topologies::Topology& t, const StepOptions& options, int pid,
                  const std::map<topologies::LinkId, std::vector<std::pair<double, double>>>& rates,
                  StepResult& result) {
  result.flows = net.stats().flows_started;
  result.rate_solves = net.stats().rate_solves;
  result.solved_flows = net.stats().solved_flows;
  std::vector<std::pair<double, size_t>> use;
  for (size_t l = 0; l < net.link_bytes().size(); ++l) {
    const double bytes = net.link_bytes()[l];
    if (bytes <= 0) continue;
    const double usable = caps[l].bandwidth.bytes_per_s() * caps[l].efficiency;
    use.emplace_back(bytes / (usable * result.step_seconds), l);
  }
  std::sort(use.begin(), use.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; i < use.size() && static_cast<int>(i) < options.busiest_links; ++i) {
    const auto id = topologies::LinkId::at(use[i].second);
    result.busiest_links.push_back({t.resource_name(id),
                                    std::string(topologies::to_string(t.resource_kind(id))),
                                    net.link_bytes()[use[i].second], use[i].first});
    const auto series = rates.find(id);
    if (series == rates.end()) continue;
    for (const auto& [at_us, rate] : series->second) {
      TraceEvent e;
      e.name = "GB/s";
      e.track = "link " + t.resource_name(id);
      e.pid = pid;
      e.start_us = at_us;
      e.value = rate * 1e-9;
      result.trace.push_back(std::move(e));
    }
  }
}

/// Rejects a job whose GPU map does not fit its plan and the topology.
void check_job(const System& system, const ParallelPlan& plan, const StepOptions& options) {
  if (!options.link_changes.empty() && options.backend != Backend::flow) {
    throw std::invalid_argument("link changes during a step need the flow backend");
  }
  const size_t n = static_cast<size_t>(plan.gpus());
  if (options.gpus.empty()) {
    if (n > system.topology->gpu_count()) {
      throw std::invalid_argument(fmt::format("the plan needs {} GPUs, the system has {}", n,
                                              system.topology->gpu_count()));
    }
    return;
  }
  if (options.gpus.size() != n) {
    throw std::invalid_argument(
        fmt::format("StepOptions::gpus maps {} ranks, the plan has {}", options.gpus.size(), n));
  }
  for (topologies::GpuRank g : options.gpus) {
    if (g.index() >= system.topology->gpu_count())
      throw std::invalid_argument(fmt::format("StepOptions::gpus names GPU {} of {}", g.value(),
                                              system.topology->gpu_count()));
  }
}

/// One job of a simulation: its placement, its traffic on the shared fabric and the engine of
/// its current step. Steps run back to back: each starts a fresh engine at the current time.
class JobRun {
 public:
  /// `network` is null on the analytical backend; with `count_traffic` the job's bytes per
  /// resource are kept apart (several jobs on one fabric).
  JobRun(sim::Simulation& simulation, StepCache& cache, sim::FlowNetwork* network,
         bool count_traffic, const Workload& workload, const ParallelPlan& plan,
         const StepOptions& options, std::vector<TraceEvent>* trace)
      : simulation_(simulation),
        workload_(workload),
        plan_(plan),
        options_(options),
        placement_(plan, plan.gpus()),
        schedule_(cache.pipeline(plan.pp, plan.vp, workload.microbatches)),
        trace_(trace) {
    if (network != nullptr) {
      sim::Network* carrier = network;
      if (count_traffic) carrier = &traffic_.emplace(*network, cache.capacities().size());
      runner_.emplace(simulation, *carrier, cache.router());
    }
    comm_.emplace(simulation, cache, placement_, options_.gpus, runner_ ? &*runner_ : nullptr);
  }

  /// Starts a step now; `on_end` runs when its last rank has finished it.
  void start_step(Callback on_end) {
    // Engines of earlier steps stay alive: events of theirs may still be queued.
    engines_.push_back(std::unique_ptr<Engine>(new Engine{simulation_,
                                                          *comm_,
                                                          workload_,
                                                          plan_,
                                                          placement_,
                                                          options_,
                                                          {},
                                                          trace_,
                                                          {},
                                                          {},
                                                          simulation_.now(),
                                                          0,
                                                          std::move(on_end),
                                                          {},
                                                          false}));
    Engine& engine = *engines_.back();
    std::vector<int> ranks;
    if (options_.full_ranks) {
      for (int r = 0; r < plan_.gpus(); ++r)
        ranks.push_back(r);
    } else {
      for (int s = 0; s < plan_.pp; ++s)
        ranks.push_back(placement_.stage_representative(s));
    }
    std::unordered_map<int, RankRun*> by_rank;
    for (int rank : ranks) {
      engine.ranks.push_back(make_rank(rank, placement_, workload_, schedule_));
      if (!options_.compute_slowdown.empty()) {
        engine.ranks.back()->compute_scale =
            options_.compute_slowdown.at(static_cast<size_t>(rank));
      }
      by_rank[rank] = engine.ranks.back().get();
    }
    for (auto& r : engine.ranks) {
      Coordinates c = placement_.coordinates(r->rank);
      c.pp = (r->stage + 1) % plan_.pp;
      r->downstream = by_rank.at(placement_.rank_of(c));
      c.pp = (r->stage + plan_.pp - 1) % plan_.pp;
      r->upstream = by_rank.at(placement_.rank_of(c));
    }
    engine.start();
  }

  /// The current step's per-stage breakdown (averaged over the simulated ranks of a stage) and
  /// time; throws std::logic_error naming a rank that has not finished.
  StepResult step_result() const {
    const Engine& engine = *engines_.back();
    StepResult result;
    result.stages.assign(static_cast<size_t>(plan_.pp), StageBreakdown{});
    std::vector<int> count(static_cast<size_t>(plan_.pp), 0);
    for (const auto& r : engine.ranks) {
      if (!r->finished) {
        throw std::logic_error(fmt::format("rank {} did not finish the step (deadlock)", r->rank));
      }
      result.stages[static_cast<size_t>(r->stage)] += breakdown_of(*r, engine.step_start);
      ++count[static_cast<size_t>(r->stage)];
    }
    for (size_t s = 0; s < result.stages.size(); ++s) {
      StageBreakdown& b = result.stages[s];
      b /= std::max(1, count[s]);
      if (b.end > result.step_seconds) {
        result.step_seconds = b.end;
        result.critical_stage = static_cast<int>(s);
      }
    }
    result.simulated_ranks = engine.ranks.size();
    return result;
  }

  std::map<std::string, uint64_t> flows_by_group() const { return comm_->flows_by_group(); }

  /// Bytes this job's flows put on `resource` (with count_traffic).
  double link_bytes(size_t resource) const {
    return traffic_ ? traffic_->link_bytes()[resource] : 0.0;
  }

 private:
  sim::Simulation& simulation_;
  const Workload& workload_;
  const ParallelPlan& plan_;
  const StepOptions& options_;
  const Placement placement_;
  const std::vector<std::vector<PipelineTask>>& schedule_;
  std::vector<TraceEvent>* trace_;
  std::optional<JobTraffic> traffic_;
  std::optional<CollectiveRunner> runner_;
  std::optional<Communicator> comm_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

}  // namespace

StageBreakdown& StageBreakdown::operator+=(const StageBreakdown& other) {
  for (const BreakdownComponent& c : kBreakdownComponents)
    this->*c.field += other.*c.field;
  end = std::max(end, other.end);
  return *this;
}

StageBreakdown& StageBreakdown::operator/=(double n) {
  for (const BreakdownComponent& c : kBreakdownComponents)
    this->*c.field /= n;
  return *this;
}

namespace {

/// What the jobs of one simulation run on: a cache that serves the system (the caller's, or
/// one of its own), the simulation, and on the flow backend the network.
struct Fabric {
  Fabric(const System& system, const CollectiveProfile& collective, const StepOptions& options,
         StepCache* given)
      : cache(given) {
    if (cache == nullptr || !cache->serves(system, collective, options.routing, options.collnet)) {
      cache = &own.emplace(system, collective, options.routing, options.collnet);
    }
    if (options.backend == Backend::flow) network.emplace(simulation, cache->capacities());
  }
  sim::FlowNetwork* flow_network() { return network ? &*network : nullptr; }

  std::optional<StepCache> own;
  StepCache* cache;
  sim::Simulation simulation;
  std::optional<sim::FlowNetwork> network;
};

}  // namespace

StepResult simulate_step(const System& system, const CollectiveProfile& collective,
                         const Workload& workload, const ParallelPlan& plan,
                         const StepOptions& options, StepCache* given) {
  check_job(system, plan, options);
  Fabric fabric(system, collective, options, given);
  StepCache* cache = fabric.cache;
  sim::Simulation& simulation = fabric.simulation;
  std::optional<sim::FlowNetwork>& network = fabric.network;
  std::vector<TraceEvent> trace;
  JobRun job(simulation, *cache, fabric.flow_network(), false, workload, plan, options,
             options.trace ? &trace : nullptr);
  // Traces: every link's rate after each re-solve, kept for the busiest links at the end.
  std::map<topologies::LinkId, std::vector<std::pair<double, double>>> link_rates;
  if (options.trace && network) {
    network->set_link_rate_observer([&link_rates](sim::LinkId l, sim::Time t, double rate) {
      auto& series = link_rates[l];
      if (!series.empty() && series.back().first == t.us()) {
        series.back().second = rate;
      } else if (series.empty() || series.back().second != rate) {
        series.emplace_back(t.us(), rate);
      }
    });
  }
  for (const LinkChange& c : options.link_changes) {
    const sim::LinkCapacity nominal = cache->capacities().at(c.resource);
    if (!(c.factor > 0)) throw std::invalid_argument("LinkChange: factor must be positive");
    simulation.schedule_at(c.at, [&network, c, nominal] {
      network->set_link_capacity(
          c.resource, {sim::Bandwidth::bytes_per_s(nominal.bandwidth.bytes_per_s() / c.factor),
                       nominal.efficiency});
    });
  }
  job.start_step(nullptr);
  simulation.run();
  StepResult result = job.step_result();  // throws when a rank did not finish (a deadlock)
  result.events = simulation.events_executed();
  result.flows_by_group = job.flows_by_group();
  result.trace = std::move(trace);
  if (network) {
    report_links(*network, cache->capacities(), *system.topology, options, plan.pp, link_rates,
                 result);
  }
  return result;
}

SharedStepResult simulate_shared_steps(const System& system, const CollectiveProfile& collective,
                                       const std::vector<SharedJob>& jobs, int steps,
                                       StepCache* given) {
  if (jobs.empty()) throw std::invalid_argument("simulate_shared_steps: no jobs");
  if (steps < 1) throw std::invalid_argument("simulate_shared_steps: steps must be >= 1");
  const StepOptions& first = jobs.front().options;
  std::vector<int> owner(system.topology->gpu_count(), -1);
  for (size_t k = 0; k < jobs.size(); ++k) {
    const SharedJob& job = jobs[k];
    check_job(system, *job.plan, job.options);
    if (job.options.backend != first.backend || job.options.routing != first.routing ||
        job.options.collnet != first.collnet) {
      throw std::invalid_argument(
          "simulate_shared_steps: the jobs of one fabric share its backend, routing and collnet");
    }
    if (!job.options.link_changes.empty()) {
      throw std::invalid_argument("simulate_shared_steps: link changes are per step, not per job");
    }
    if (job.options.gpus.empty() && jobs.size() > 1) {
      throw std::invalid_argument("simulate_shared_steps: every job needs its GPUs");
    }
    for (size_t r = 0; r < static_cast<size_t>(job.plan->gpus()); ++r) {
      int& o = owner[job.options.gpus.empty() ? r : job.options.gpus[r].index()];
      if (o >= 0) {
        throw std::invalid_argument(
            fmt::format("simulate_shared_steps: jobs {} and {} share a GPU", o, k));
      }
      o = static_cast<int>(k);
    }
  }
  Fabric fabric(system, collective, first, given);
  StepCache* cache = fabric.cache;
  sim::Simulation& simulation = fabric.simulation;
  std::optional<sim::FlowNetwork>& network = fabric.network;

  // Every job repeats its step, back to back, until each has finished `steps` of them after a
  // first one (all jobs start that one together at time 0, so it is not counted); a job that is
  // done early keeps running, so that every counted step shared the fabric with all the others.
  const size_t warmup = steps > 1 ? 1 : 0;
  std::vector<std::unique_ptr<JobRun>> runs;
  std::vector<std::vector<StepResult>> finished(jobs.size());
  for (const SharedJob& job : jobs) {
    runs.push_back(std::make_unique<JobRun>(simulation, *cache, fabric.flow_network(),
                                            jobs.size() > 1, *job.workload, *job.plan, job.options,
                                            nullptr));
  }
  auto all_done = [&] {
    return std::all_of(finished.begin(), finished.end(), [&](const auto& f) {
      return f.size() >= warmup + static_cast<size_t>(steps);
    });
  };
  std::function<void(size_t)> next_step = [&](size_t k) {
    runs[k]->start_step([&, k] {
      finished[k].push_back(runs[k]->step_result());
      if (all_done()) {
        simulation.stop();
      } else {
        next_step(k);
      }
    });
  };
  for (size_t k = 0; k < runs.size(); ++k)
    next_step(k);
  simulation.run();
  for (size_t k = 0; k < runs.size(); ++k) {
    if (finished[k].size() < warmup + static_cast<size_t>(steps))
      runs[k]->step_result();  // throws: which rank did not finish
  }

  SharedStepResult out;
  out.simulated_seconds = simulation.now().s();
  out.events = simulation.events_executed();
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::vector<StepResult>& done = finished[k];
    const size_t n = done.size() - warmup;
    StepResult mean = done[warmup];
    for (size_t i = warmup + 1; i < done.size(); ++i) {
      mean.step_seconds += done[i].step_seconds;
      for (size_t s = 0; s < mean.stages.size(); ++s) {
        const double end = mean.stages[s].end + done[i].stages[s].end;
        mean.stages[s] += done[i].stages[s];
        mean.stages[s].end = end;
      }
    }
    mean.step_seconds /= static_cast<double>(n);
    for (StageBreakdown& b : mean.stages) {
      b /= static_cast<double>(n);
      b.end /= static_cast<double>(n);
    }
    out.jobs.push_back(std::move(mean));
    out.steps.push_back(static_cast<int>(n));
  }
  if (network) {
    out.flows = network->stats().flows_started;
    out.rate_solves = network->stats().rate_solves;
    const topologies::Topology& t = *system.topology;
    const std::vector<sim::LinkCapacity>& caps = cache->capacities();
    for (size_t l = 0; l < network->link_bytes().size(); ++l) {
      // Most resources of a large fabric carry nothing or one job: count before allocating.
      if (network->link_bytes()[l] <= 0) continue;
      const auto carried = std::count_if(runs.begin(), runs.end(),
                                         [l](const auto& run) { return run->link_bytes(l) > 0; });
      if (carried < 2) continue;
      SharedLink shared;
      for (size_t k = 0; k < runs.size(); ++k) {
        const double bytes = runs[k]->link_bytes(l);
        shared.job_bytes.push_back(bytes);
        if (bytes > 0) shared.jobs.push_back(static_cast<int>(k));
      }
      const auto id = topologies::LinkId::at(l);
      const double usable = caps[l].bandwidth.bytes_per_s() * caps[l].efficiency;
      shared.use = {t.resource_name(id), std::string(topologies::to_string(t.resource_kind(id))),
                    network->link_bytes()[l],
                    network->link_bytes()[l] / (usable * out.simulated_seconds)};
      out.shared_links.push_back(std::move(shared));
    }
    std::sort(out.shared_links.begin(), out.shared_links.end(), [](const auto& a, const auto& b) {
      return a.use.utilization != b.use.utilization ? a.use.utilization > b.use.utilization
                                                    : a.use.name < b.use.name;
    });
  }
  return out;
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
