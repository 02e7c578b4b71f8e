// Pipeline tasks: what a finished pass hands on, when the next starts, and the end of a rank's
// step.

#include <algorithm>

#include "models/step_engine.hpp"

namespace fabricsim::models::step_engine {

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

}  // namespace fabricsim::models::step_engine
