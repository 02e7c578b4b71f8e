#include "sim/simulation.hpp"

#include <algorithm>
#include <stdexcept>

namespace fabricsim::sim {

EventId Simulation::schedule_at(Time at, Callback callback) {
  if (at < now_) throw std::logic_error("Simulation::schedule_at: time is in the past");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.callback = std::move(callback);
  s.pending = true;
  heap_.push_back(Entry{at.ps(), next_sequence_++, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), later);
  ++live_;
  return EventId(slot, s.generation);
}

bool Simulation::is_pending(EventId id) const {
  return id.valid() && id.slot_ < slots_.size() && slots_[id.slot_].pending &&
         slots_[id.slot_].generation == id.generation_;
}

bool Simulation::cancel(EventId id) {
  if (!is_pending(id)) return false;
  release(id.slot_);
  compact_if_stale();
  return true;
}

void Simulation::release(uint32_t slot) {
  Slot& s = slots_[slot];
  s.callback = nullptr;
  s.pending = false;
  // Generation 0 marks an invalid EventId, so skip it on wrap-around.
  if (++s.generation == 0) s.generation = 1;
  free_slots_.push_back(slot);
  --live_;
}

void Simulation::compact_if_stale() {
  // Cancelled entries stay in the heap until they surface; rebuild when they dominate it.
  const size_t stale = heap_.size() - live_;
  if (stale < 4096 || stale < 2 * live_) return;
  std::erase_if(heap_, [this](const Entry& e) {
    const Slot& s = slots_[e.slot];
    return !s.pending || s.generation != e.generation;
  });
  std::make_heap(heap_.begin(), heap_.end(), later);
}

bool Simulation::pop_and_run_one(Time limit) {
  while (!heap_.empty()) {
    const Entry top = heap_.front();
    Slot& s = slots_[top.slot];
    const bool stale = !s.pending || s.generation != top.generation;
    if (!stale && top.time > limit.ps()) return false;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
    if (stale) continue;
    Callback callback = std::move(s.callback);
    release(top.slot);
    now_ = Time::from_ps(top.time);
    ++executed_;
    callback();
    return true;
  }
  return false;
}

void Simulation::run() {
  stopped_ = false;
  while (!stopped_ && pop_and_run_one(Time::max())) {
  }
}

void Simulation::run_until(Time limit) {
  stopped_ = false;
  while (!stopped_ && pop_and_run_one(limit)) {
  }
  if (!stopped_ && now_ < limit) now_ = limit;
}

}  // namespace fabricsim::sim
