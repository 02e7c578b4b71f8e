// The pass interpreter, for both backends, how a rank issues collectives, and the pipeline tasks
// around it: what a finished pass hands on, when the next starts, the end of a rank's step. One
// file: a step's hot loop (start, interpret, finish, send, start the next) runs through all of it.

#include "models/step_engine.hpp"

#include <algorithm>

namespace fabricsim::models::step_engine {

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

template <class OnEnd>
void Engine::start_collective(RankRun& r, const WorkOp& op, OnEnd then) {
  const Time start = sim.now();
  const GroupKind kind = op.group;
  const CollectiveOp cop = op.op;
  collective(r, op, [this, &r, start, kind, cop, then] {
    record_comm(r, kind, cop, start, sim.now());
    then(start);
  });
}

void Engine::start_slot(RankRun& r, const WorkOp& op) {
  const size_t slot = static_cast<size_t>(op.slot);
  r.pass.slots[slot].begin = sim.now();
  start_collective(r, op, [this, &r, slot](Time) {
    Slot& s = r.pass.slots[slot];
    s.done = true;
    s.end = sim.now();
    if (s.chained >= 0) {
      const WorkOp& next = r.pass.program->ops[static_cast<size_t>(s.chained)];
      s.chained = -1;
      start_slot(r, next);
    }
    if (r.pass.waiting_slot == static_cast<int>(slot)) {
      r.pass.waiting_slot = -1;
      r.parts[exposed_part(r.pass.slots[slot].kind)] += sim.now() - r.pass.wait_start;
      resume(r);
    }
  });
}

void Engine::collective(RankRun& r, const WorkOp& w, Callback done) {
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

void Engine::collective(RankRun& r, GroupKind kind, CollectiveOp op, sim::Bytes bytes,
                        Callback done) {
  WorkOp w;
  w.kind = WorkOp::Kind::comm;
  w.group = kind;
  w.op = op;
  w.bytes = bytes;
  collective(r, w, std::move(done));
}

void Engine::start_task(RankRun& r, Time start) {
  const PipelineTask& t = task(r);
  const ChunkWork& c = r.work->chunks[static_cast<size_t>(t.chunk)];
  const bool gathers = gated(r);
  const bool reduces = reducing(r);
  r.pass.program = t.forward ? &c.forward : &c.backward;
  r.pass.program_index = t.chunk * 3 + (t.forward ? 0 : reduces ? 2 : 1);
  // The slowdown beside collectives, per kind of pass: a forward alone or beside gathers, a
  // backward alone or beside gathers and reductions (which of them is fixed for the step).
  const bool beside = gathers || reduces;
  double& scale =
      r.pass_scales[static_cast<size_t>(t.chunk * 4 + (t.forward ? 0 : 2) + (beside ? 1 : 0))];
  if (scale == 0) scale = contention_scale(r, t.chunk, *r.pass.program, gathers, reduces);
  r.pass.contention = scale == 1 ? Time::zero() : r.pass.program->compute * (scale - 1.0);
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
  const bool replayable = !comm.flow() && trace == nullptr && !fsdp() && !reduces;
  const std::optional<PassCost>& memo = r.memo[static_cast<size_t>(r.pass.program_index)];
  if (replayable && memo && !gathers) {
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

void Engine::end_pass(RankRun& r) {
  if (r.pass.learning) {
    r.pass.learning = false;
    PassCost cost{r.pass.cursor - r.pass.start - r.pass.gate_wait, {}};
    for (size_t p = 0; p < kParts; ++p)
      cost.parts[p] = r.parts[p] - r.pass.start_parts[p];
    cost.parts[kDp] -= r.pass.gate_wait;
    r.memo[static_cast<size_t>(r.pass.program_index)] = cost;
  }
  // The pass's kernels ran longer beside collectives: booked at its end, so that its memoized
  // cost stays the pass's own and a ZeRO first forward still teaches the forwards after it.
  const Time contention = scaled(r, r.pass.contention);
  record(r, "compute", "slowed beside DP collectives", r.pass.cursor, r.pass.cursor + contention);
  r.parts[kCompute] += contention;
  r.pass.cursor += contention;
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

void Engine::resume(RankRun& r) {
  r.pass.cursor = sim.now();
  if (interpret(r)) end_pass(r);
}

bool Engine::caught_up(RankRun& r) {
  if (r.pass.cursor <= sim.now()) return true;
  sim.schedule_at(r.pass.cursor, [this, &r] { resume(r); });
  return false;
}

bool Engine::interpret(RankRun& r) {
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
        ++r.pass.op;
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
          Time begin = r.pass.cursor;
          if (op.after >= 0) begin = std::max(begin, r.pass.slots[op.after].end);
          const Time d = known_duration(r, op);
          record_comm(r, op.group, op.op, begin, begin + d);
          r.pass.slots[slot] = {true, op.group, begin, begin + d,
                                r.pass.program->contention_of(op.slot)};
          ++r.pass.op;
          continue;
        }
        if (!caught_up(r)) return false;
        r.pass.slots[slot] = {false, op.group, Time::zero(), Time::zero(),
                              r.pass.program->contention_of(op.slot)};
        if (op.after >= 0 && !r.pass.slots[op.after].done) {
          r.pass.slots[op.after].chained = static_cast<int>(r.pass.op);
        } else {
          start_slot(r, op);
        }
        ++r.pass.op;
        continue;
      }
      case WorkOp::Kind::comm_wait: {
        Slot& s = r.pass.slots[static_cast<size_t>(op.slot)];
        if (s.contention > 0) {
          // The flow backend knows whether it is still in flight once the clock is here.
          if (!s.done && !caught_up(r)) return false;
          book_contention(r, s);
        }
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

void Engine::book_contention(RankRun& r, Slot& s) {
  // The compute since the collective started ran beside it until it finished (or until now, in
  // flight still), slower by the SMs it held.
  const Time until = s.done ? std::min(s.end, r.pass.cursor) : r.pass.cursor;
  if (until > s.begin) {
    const Time slower = (until - s.begin) * s.contention;
    record(r, "compute", "slowed beside overlapped collective", r.pass.cursor,
           r.pass.cursor + slower);
    r.parts[kCompute] += slower;
    r.pass.cursor += slower;
  }
  s.contention = 0;
}

double Engine::contention_scale(RankRun& r, int chunk, const PassProgram& pass, bool gathers,
                                bool reduces) {
  const ChunkWork& c = r.work->chunks[static_cast<size_t>(chunk)];
  Time beside;
  for (size_t b = 0; b < c.buckets.size(); ++b) {
    const int bucket = static_cast<int>(b);
    if (gathers) {
      for (const auto& [kind, bytes] : parts_of(r, chunk, bucket, workload.param_bytes))
        beside += comm.collective_time(r.rank, kind, CollectiveOp::all_gather, bytes);
    }
    if (reduces) {
      for (const auto& [kind, bytes] : parts_of(r, chunk, bucket, workload.grad_bytes))
        beside += comm.collective_time(r.rank, kind, reduce_op(), bytes);
    }
  }
  if (beside == Time::zero() || pass.compute == Time::zero()) return 1.0;
  return 1.0 + workload.dp_contention * std::min(1.0, beside.s() / pass.compute.s());
}

Time Engine::known_duration(RankRun& r, const WorkOp& op) {
  if (op.kind == WorkOp::Kind::compute) {
    return scaled(r, op.duration);
  }
  if (op.moe.tokens > 0) return comm.moe_time(r.rank, op.moe);
  return rank_collective_time(r, op.group, op.op, op.bytes);
}

Time Engine::rank_collective_time(RankRun& r, GroupKind kind, CollectiveOp op, sim::Bytes bytes) {
  for (const ResolvedCollective& c : r.resolved) {
    if (c.bytes == bytes && c.kind == kind && c.op == op) return c.time;
  }
  const Time t = comm.collective_time(r.rank, kind, op, bytes);
  r.resolved.push_back({kind, op, bytes, t});
  return t;
}

bool Engine::gated(const RankRun& r) const {
  const PipelineTask& t = task(r);
  if (fsdp()) return true;
  return r.gathering && t.forward && static_cast<int>(r.next) == r.first_forward[t.chunk];
}

bool Engine::reducing(const RankRun& r) const {
  const PipelineTask& t = task(r);
  return !t.forward && plan.dp_comm_overlap && dp_active() &&
         (fsdp() || static_cast<int>(r.next) == r.last_backward[t.chunk]);
}

void Engine::finish_task(RankRun& r) {
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

void Engine::send(RankRun& from, int chunk, int mb, bool forward, sim::Bytes bytes, Time produced) {
  RankRun* dest = forward ? from.downstream : from.upstream;
  const int to = dest->rank;
  // Marks the input sent, arriving at `at`, and lets the destination start if it can.
  auto deliver = [this, dest, chunk, mb, forward, produced](Time at) {
    (forward ? dest->fwd : dest->bwd)[static_cast<size_t>(mb * plan.vp + chunk)] = {true, produced,
                                                                                    at};
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

bool Engine::ready(const RankRun& r, Time& produced, Time& at) const {
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

void Engine::try_start(RankRun& r) {
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

void Engine::maybe_optimizer(RankRun& r) {
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

void Engine::rank_ended(RankRun& r) {
  r.end = sim.now();
  if (++ended == ranks.size() && on_end) on_end();
}

void Engine::start() {
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
  run->pass_scales.assign(4 * vp, 0.0);
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
    b.*kBreakdownComponents[p].field = sim::Seconds::of(r.parts[p]);
  b.end = sim::Seconds::of(r.end - step_start);
  return b;
}

}  // namespace fabricsim::models::step_engine
