#pragma once
// The step simulator's engine (internal to models/step_simulator): simulated ranks that interpret
// their passes' work programs on the compute stream, hand activations and gradients along the
// pipeline, and run data-parallel collectives on a stream of their own, on either backend.
// step_engine.cpp holds the pass interpreter, collective issue and the pipeline tasks (the step's
// hot loop, kept in one translation unit), step_dp_stream.cpp the data-parallel stream and ZeRO
// gathers.

#include <fmt/format.h>

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "models/pipeline_schedule.hpp"
#include "models/step_communicator.hpp"
#include "models/step_simulator.hpp"
#include "sim/simulation.hpp"

namespace fabricsim::models::step_engine {

using sim::Time;
using Callback = std::function<void()>;

/// What a rank's compute-stream time is booked to, in kBreakdownComponents order. Kept in
/// integer picoseconds while the step runs, so a pass's memoized cost adds exactly as its ops do.
enum Part : size_t { kCompute, kTp, kCp, kEp, kPp, kBubble, kDp, kOptimizer, kParts };
using PartTimes = std::array<Time, kParts>;

/// The exposed-communication part of a group kind on the compute stream.
Part exposed_part(GroupKind kind);

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
  Time begin;  ///< when the collective started (the flow backend: once it has)
  Time end;
  /// The slowdown of the compute beside it, not yet booked (PassProgram::slot_contention).
  double contention = 0;
  /// Flow backend: the op index of a comm_start that waits for this collective to finish
  /// (WorkOp::after); -1: none.
  int chained = -1;
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
  int program_index = 0;  ///< chunk * 3 + variant (forward, backward, reducing backward)
  /// What the collectives beside the pass add to its kernels (Engine::contention_scale), booked
  /// when it ends.
  Time contention;
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
  /// contention_scale per chunk and kind of pass, [chunk * 4 + (backward: 2) + (beside
  /// collectives: 1)] (0 until first asked).
  std::vector<double> pass_scales;
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

  /// A compute duration on rank `r`, slowed by its straggler factor (unscaled times stay exact).
  static Time scaled(const RankRun& r, Time t) {
    return r.compute_scale == 1 ? t : t * r.compute_scale;
  }
  /// ZeRO-3 / FSDP: parameters live sharded and are gathered for every pass; gradients are
  /// reduce-scattered after every micro-batch's backward.
  bool fsdp() const { return fsdp_; }
  bool dp_active() const { return dp_active_; }

  // ---- collectives and the pass interpreter (step_engine.cpp) ----
  /// Starts the collective of `op` at flow fidelity; when it ends it is recorded and then(its
  /// start) runs.
  template <class OnEnd>
  void start_collective(RankRun& r, const WorkOp& op, OnEnd then);
  /// Flow backend: starts the collective of comm_start `op` in its slot now; when it finishes,
  /// starts the one chained after it and resumes a pass waiting for it.
  void start_slot(RankRun& r, const WorkOp& op);
  /// A collective issued by `r`: in full-rank mode it starts once every member has issued it. A
  /// DeepEP dispatch/combine takes its own model's time once every member has arrived (full
  /// ranks) or at once (one rank per symmetric instance).
  void collective(RankRun& r, const WorkOp& w, Callback done);
  void collective(RankRun& r, GroupKind kind, CollectiveOp op, sim::Bytes bytes, Callback done);
  /// Starts the rank's next task at `start`: replays its memoized cost when it has one
  /// (analytical backend), else interprets its program.
  void start_task(RankRun& r, Time start);
  /// The pass's ops have run: it ends at its cursor. On the analytical backend it finishes
  /// there and then, ahead of the clock: what it hands on (its output's arrival at the next
  /// stage, the rank's next start) is known without waiting for it. The flow backend's send
  /// starts flows, so it waits for the clock. Finishing passes queue, so that a pipeline does
  /// not recurse through every task.
  void end_pass(RankRun& r);
  /// Continues the running pass after a wait, at the simulation's clock.
  void resume(RankRun& r);
  /// Lets the clock catch up with the pass before an op that needs it: true when it already has
  /// (go on), false when the pass resumes later.
  bool caught_up(RankRun& r);
  /// The interpreter of pass programs, for both backends: runs the running pass's ops from
  /// `r.pass.op` on, booking each to its part. An op whose end is known when it starts (compute;
  /// on the analytical backend collectives too) moves the cursor; any other one waits for the
  /// clock and then for its event. Returns true when the pass's last op has run (the pass ends at
  /// `r.pass.cursor`), false when it waits.
  bool interpret(RankRun& r);
  /// An op's duration when it starts, if known: a kernel's, or (analytical backend) a
  /// collective's uncontended time.
  Time known_duration(RankRun& r, const WorkOp& op);
  /// A collective's uncontended time for `r`: a pass repeats a handful of distinct collectives
  /// layer after layer, so a short list per rank answers before the communicator's map.
  Time rank_collective_time(RankRun& r, GroupKind kind, CollectiveOp op, sim::Bytes bytes);
  /// The pass waits for parameter gathers: every pass with ZeRO-3, else the first forward of its
  /// chunk when this step's ZeRO-1/2 gathers overlap the forward.
  bool gated(const RankRun& r) const;
  /// The pass reduces gradients as buckets complete: the last backward of its chunk, or every
  /// backward with ZeRO-3.
  bool reducing(const RankRun& r) const;
  /// How gradient buckets are reduced: reduce-scattered to their owners under ZeRO, else
  /// all-reduced.
  CollectiveOp reduce_op() const {
    return plan.zero >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
  }
  /// How much longer `pass`'s kernels run on `r` while the parameter gathers (`gathers`) and
  /// gradient reductions (`reduces`) it issues hold SMs, as a factor on the pass's compute: NCCL's
  /// blocks hold them only while a collective runs, so 1 + the full contention times the share of
  /// the pass those collectives' uncontended time covers (at most all of it). The same on both
  /// backends, so that they stay comparable.
  double contention_scale(RankRun& r, int chunk, const PassProgram& pass, bool gathers,
                          bool reduces);
  /// Books the slowdown of the compute that ran beside slot `s`'s collective (Slot::contention)
  /// when the compute stream waits for it.
  void book_contention(RankRun& r, Slot& s);

  // ---- pipeline tasks and the end of a rank's step (step_engine.cpp) ----
  /// Starts the step on every rank. All are ready before any starts: a rank that runs ahead
  /// may hand its output to the next stage at once.
  void start();
  /// The running task is done: hands its output on and starts the next task, or the optimizer.
  void finish_task(RankRun& r);
  /// Sends chunk `chunk`'s activation (forward) or gradient of micro-batch `mb` to the
  /// neighbouring stage's rank.
  void send(RankRun& from, int chunk, int mb, bool forward, sim::Bytes bytes, Time produced);
  /// Whether the next task's input has been sent, and when it was produced and arrives (zero
  /// when the task needs none).
  bool ready(const RankRun& r, Time& produced, Time& at) const;
  /// Starts the rank's next task once its input has been sent: when the rank is free and the
  /// input has arrived, and not before the clock (a flow input arrives at the clock; an
  /// analytical one may be due later, or the rank be free later, having run ahead).
  void try_start(RankRun& r);
  /// Runs the optimizer once the rank's passes and data-parallel collectives are done, then
  /// (ZeRO without overlapped gathers) gathers the parameters, then ends the rank's step.
  void maybe_optimizer(RankRun& r);
  void rank_ended(RankRun& r);

  // ---- the data-parallel stream and ZeRO gathers (step_dp_stream.cpp) ----
  /// ZeRO-3: starts the current pass's gather of `bucket` unless it has already started.
  void issue_pass_gather(RankRun& r, int chunk, int bucket);
  /// The data-parallel collectives of one of the rank's buckets (models/workload).
  BucketParts parts_of(const RankRun& r, int chunk, int bucket, double bytes_per_param) const;
  /// Queues the parameter gathers of one bucket; a bucket with nothing to gather is ready.
  void gather_bucket(RankRun& r, int chunk, int bucket, DpWork::Purpose purpose);
  /// A bucket's parameters have arrived: a pass waiting for them resumes, an idle rank starts.
  void params_arrived(RankRun& r, int chunk, int bucket);
  void dp_enqueue(RankRun& r, const DpWork& work);
  void dp_next(RankRun& r);
  /// The stream's running collective has finished: what it was for, then the next one.
  void dp_done(RankRun& r);
  /// Reduces one gradient bucket: dense gradients over DP, expert gradients over expert-DP.
  void reduce_bucket(RankRun& r, int chunk, int bucket);
  void reduce_all(RankRun& r);
  /// The ZeRO parameter all-gathers of every bucket, in the order the forward needs them, on the
  /// DP stream; `all_done` runs after the last one.
  void gather_parameters(RankRun& r, Callback all_done);
  /// One of gather_parameters' collectives (or its hold) is done; the last runs `gathered`.
  void step_gather_done(RankRun& r);
};

/// A simulated rank at the start of the step, running its stage's part of `schedule`.
std::unique_ptr<RankRun> make_rank(int rank, const Placement& placement, const Workload& workload,
                                   const std::vector<std::vector<PipelineTask>>& schedule);

/// A rank's booked parts as a breakdown in seconds, `end` counted from the step's start.
StageBreakdown breakdown_of(const RankRun& r, Time step_start);

}  // namespace fabricsim::models::step_engine
