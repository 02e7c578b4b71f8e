#include "sim/simulation.hpp"

#include <catch2/catch.hpp>
#include <vector>

using namespace fabricsim::sim;

TEST_CASE("events run in time order, ties in scheduling order", "[simulation]") {
  Simulation sim;
  std::vector<int> order;
  sim.schedule_at(Time::from_us(2), [&] { order.push_back(2); });
  sim.schedule_at(Time::from_us(1), [&] { order.push_back(1); });
  sim.schedule_at(Time::from_us(2), [&] { order.push_back(3); });
  sim.schedule_at(Time::from_us(1), [&] { order.push_back(4); });
  sim.run();
  CHECK(order == std::vector<int>{1, 4, 2, 3});
  CHECK(sim.now() == Time::from_us(2));
  CHECK(sim.events_executed() == 4);
}

TEST_CASE("cancelled events never run and handles go stale", "[simulation]") {
  Simulation sim;
  int ran = 0;
  const EventId a = sim.schedule_in(Time::from_ns(5), [&] { ran += 1; });
  const EventId b = sim.schedule_in(Time::from_ns(6), [&] { ran += 10; });
  CHECK(sim.cancel(a));
  CHECK_FALSE(sim.cancel(a));
  CHECK(sim.pending_events() == 1);
  sim.run();
  CHECK(ran == 10);
  CHECK_FALSE(sim.cancel(b));
  // A reused slot must not be cancellable through the old handle.
  const EventId c = sim.schedule_in(Time::from_ns(1), [&] { ran += 100; });
  CHECK_FALSE(sim.cancel(a));
  CHECK(sim.is_pending(c));
  sim.run();
  CHECK(ran == 110);
}

TEST_CASE("events may schedule and cancel other events", "[simulation]") {
  Simulation sim;
  std::vector<int64_t> times;
  EventId victim;
  sim.schedule_at(Time::from_ns(1), [&] {
    times.push_back(sim.now().ps());
    sim.schedule_in(Time::from_ns(1), [&] { times.push_back(sim.now().ps()); });
    sim.cancel(victim);
  });
  victim = sim.schedule_at(Time::from_ns(3), [&] { times.push_back(-1); });
  sim.run();
  CHECK(times == std::vector<int64_t>{1000, 2000});
}

TEST_CASE("run_until stops at the limit and advances the clock", "[simulation]") {
  Simulation sim;
  int ran = 0;
  sim.schedule_at(Time::from_us(1), [&] { ++ran; });
  sim.schedule_at(Time::from_us(5), [&] { ++ran; });
  sim.run_until(Time::from_us(3));
  CHECK(ran == 1);
  CHECK(sim.now() == Time::from_us(3));
  sim.run();
  CHECK(ran == 2);
}

TEST_CASE("scheduling in the past is a programming error", "[simulation]") {
  Simulation sim;
  sim.schedule_at(Time::from_us(2), [] {});
  sim.run();
  CHECK_THROWS_AS(sim.schedule_at(Time::from_us(1), [] {}), std::logic_error);
}

TEST_CASE("two simulations in one process do not interfere", "[simulation]") {
  Simulation a;
  Simulation b;
  std::vector<char> log;
  a.schedule_at(Time::from_us(1), [&] { log.push_back('a'); });
  b.schedule_at(Time::from_us(1), [&] { log.push_back('b'); });
  b.schedule_at(Time::from_us(2), [&] { log.push_back('B'); });
  a.run();
  CHECK(log == std::vector<char>{'a'});
  CHECK(b.now() == Time::zero());
  CHECK(b.pending_events() == 2);
  b.run();
  CHECK(log == std::vector<char>{'a', 'b', 'B'});
  CHECK(a.events_executed() == 1);
  CHECK(b.events_executed() == 2);
}

TEST_CASE("heavy cancel churn keeps the queue consistent", "[simulation]") {
  Simulation sim;
  std::vector<EventId> ids;
  int ran = 0;
  for (int i = 0; i < 20000; ++i) {
    ids.push_back(sim.schedule_at(Time::from_ps(1000 + i), [&] { ++ran; }));
  }
  for (int i = 0; i < 20000; ++i) {
    if (i % 3 != 0) sim.cancel(ids[i]);
  }
  CHECK(sim.pending_events() == 6667);
  sim.run();
  CHECK(ran == 6667);
}
