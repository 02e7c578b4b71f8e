// A rank's data-parallel stream: gradient reductions and ZeRO parameter gathers, one at a time.

#include "models/step_engine.hpp"

namespace fabricsim::models::step_engine {

void Engine::issue_pass_gather(RankRun& r, int chunk, int bucket) {
  if (r.pass.gathers[bucket]) return;
  r.pass.gathers[bucket] = 1;
  gather_bucket(r, chunk, bucket, DpWork::Purpose::pass_gather);
}

BucketParts Engine::parts_of(const RankRun& r, int chunk, int bucket,
                             double bytes_per_param) const {
  return bucket_parts(
      r.work->chunks[static_cast<size_t>(chunk)].buckets[static_cast<size_t>(bucket)], plan,
      bytes_per_param);
}

void Engine::gather_bucket(RankRun& r, int chunk, int bucket, DpWork::Purpose purpose) {
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

void Engine::params_arrived(RankRun& r, int chunk, int bucket) {
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

void Engine::dp_enqueue(RankRun& r, const DpWork& work) {
  r.dp.queue.push_back(work);
  ++r.dp.pending;
  dp_next(r);
}

void Engine::dp_next(RankRun& r) {
  if (r.dp.busy || r.dp.queue.empty()) return;
  r.dp.busy = true;
  r.dp.running = r.dp.queue.front();
  r.dp.queue.pop_front();
  r.dp.running_since = sim.now();
  const DpWork& w = r.dp.running;
  collective(r, w.kind, w.op, w.bytes, [this, &r] { dp_done(r); });
}

void Engine::dp_done(RankRun& r) {
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

void Engine::reduce_bucket(RankRun& r, int chunk, int bucket) {
  for (const auto& [kind, bytes] : parts_of(r, chunk, bucket, workload.grad_bytes)) {
    dp_enqueue(r, {DpWork::Purpose::reduce, kind, reduce_op(), bytes, chunk, bucket});
  }
}

void Engine::reduce_all(RankRun& r) {
  for (size_t c = 0; c < r.work->chunks.size(); ++c) {
    for (size_t b = 0; b < r.work->chunks[c].buckets.size(); ++b) {
      reduce_bucket(r, static_cast<int>(c), static_cast<int>(b));
    }
  }
}

void Engine::gather_parameters(RankRun& r, Callback all_done) {
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

void Engine::step_gather_done(RankRun& r) {
  if (--r.dp.gathers_left == 0 && r.dp.gathered) std::exchange(r.dp.gathered, nullptr)();
}

}  // namespace fabricsim::models::step_engine
