#pragma once
// The discrete-event core: one Simulation object owns the clock and the event queue. There is no
// global state, so any number of simulations can run side by side (sweeps, tests, threads).
//
// Events are ordered by (time, sequence number): events at the same time run in the order they
// were scheduled, which makes every run deterministic. Scheduling is O(log n); cancelling is O(1)
// (the slot is released and the stale heap entry is skipped when it surfaces).

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/units.hpp"

namespace fabricsim::sim {

/// Handle of a scheduled event; stays valid (and harmless) after the event ran or was cancelled.
class EventId {
 public:
  constexpr EventId() = default;
  constexpr bool valid() const { return generation_ != 0; }
  friend constexpr bool operator==(EventId, EventId) = default;

 private:
  friend class Simulation;
  constexpr EventId(uint32_t slot, uint32_t generation) : slot_(slot), generation_(generation) {}
  uint32_t slot_ = 0;
  uint32_t generation_ = 0;
};

class Simulation {
 public:
  using Callback = std::function<void()>;

  Simulation() = default;
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  Time now() const { return now_; }

  /// Schedules `callback` at absolute time `at` (which must not be in the past).
  EventId schedule_at(Time at, Callback callback);
  /// Schedules `callback` `delay` after now.
  EventId schedule_in(Time delay, Callback callback) {
    return schedule_at(saturating_add(now_, delay), std::move(callback));
  }
  /// Cancels a pending event. Returns false if it already ran or was cancelled.
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  /// Runs until no events remain (or stop() is called from an event).
  void run();
  /// Runs every event with time <= `limit`, then sets the clock to `limit`.
  void run_until(Time limit);
  /// Makes run()/run_until() return after the event being executed.
  void stop() { stopped_ = true; }

  uint64_t events_executed() const { return executed_; }
  size_t pending_events() const { return live_; }

 private:
  struct Entry {
    int64_t time;
    uint64_t sequence;
    uint32_t slot;
    uint32_t generation;
  };
  struct Slot {
    Callback callback;
    uint32_t generation = 1;
    bool pending = false;
  };
  static bool later(const Entry& a, const Entry& b) {
    return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
  }
  bool pop_and_run_one(Time limit);
  void release(uint32_t slot);
  void compact_if_stale();

  Time now_ = Time::zero();
  uint64_t next_sequence_ = 0;
  uint64_t executed_ = 0;
  size_t live_ = 0;
  bool stopped_ = false;
  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
};

}  // namespace fabricsim::sim
