#include "sim/flow_network.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "sim/analytical_network.hpp"

using namespace fabricsim::sim;

namespace {

std::vector<LinkCapacity> caps(std::initializer_list<double> bytes_per_s) {
  std::vector<LinkCapacity> out;
  for (double c : bytes_per_s)
    out.push_back({Bandwidth::bytes_per_s(c), 1.0});
  return out;
}

Route route(std::initializer_list<uint32_t> links, Time latency = Time::zero()) {
  Route r;
  for (uint32_t l : links)
    r.links.push_back({LinkId(l), 1.0});
  r.latency = latency;
  return r;
}

std::vector<double> rates_now(Simulation& sim, const FlowNetwork& net) {
  sim.run_until(sim.now());  // let the same-instant solve run
  std::vector<double> out;
  for (const auto& f : net.active_flow_rates())
    out.push_back(f.rate);
  return out;
}

}  // namespace

TEST_CASE("a lone flow runs at its bottleneck and pays the route latency", "[flow]") {
  Simulation sim;
  std::vector<LinkCapacity> links = caps({100, 50});
  links[1].efficiency = 0.5;  // usable 25 B/s
  FlowNetwork net(sim, links);
  Time done;
  net.start_flow(route({0, 1}, Time::from_us(3)),
                 {Bytes::of(100), 1, {}, [&] { done = sim.now(); }});
  sim.run();
  CHECK(done == Time::from_s(4) + Time::from_us(3));
  CHECK(net.link_bytes()[LinkId(0)] == Approx(100));
  CHECK(net.stats().flows_completed == 1);
}

TEST_CASE("two flows share a link fairly and the survivor speeds up", "[flow]") {
  // Link 100 B/s. A: 100 B, B: 300 B from t=0. Both at 50 B/s; A ends at 2 s with B at 200 B
  // left, which then runs at 100 B/s and ends at 4 s.
  Simulation sim;
  FlowNetwork net(sim, caps({100}));
  Time a, b;
  net.start_flow(route({0}), {Bytes::of(100), 1, {}, [&] { a = sim.now(); }});
  net.start_flow(route({0}), {Bytes::of(300), 1, {}, [&] { b = sim.now(); }});
  CHECK(rates_now(sim, net) == std::vector<double>{50, 50});
  sim.run();
  CHECK(a == Time::from_s(2));
  CHECK(b == Time::from_s(4));
}

TEST_CASE("a link's capacity can change while flows cross it", "[flow]") {
  // Link 100 B/s, one flow of 300 B. At 1 s the link degrades to 50 B/s: 200 B left take 4 s
  // more; a second flow on an idle link 1 is untouched; restoring the link at 3 s (100 B left)
  // ends the flow at 4 s instead of 5 s.
  for (const bool restore : {false, true}) {
    Simulation sim;
    FlowNetwork net(sim, caps({100, 100}));
    Time done, other;
    net.start_flow(route({0}), {Bytes::of(300), 1, {}, [&] { done = sim.now(); }});
    net.start_flow(route({1}), {Bytes::of(300), 1, {}, [&] { other = sim.now(); }});
    sim.schedule_at(Time::from_s(1), [&] {
      net.set_link_capacity(LinkId(0), {Bandwidth::bytes_per_s(50), 1.0});
    });
    if (restore) {
      sim.schedule_at(Time::from_s(3), [&] {
        net.set_link_capacity(LinkId(0), {Bandwidth::bytes_per_s(100), 1.0});
      });
    }
    sim.run();
    CHECK(done == Time::from_s(restore ? 4 : 5));
    CHECK(other == Time::from_s(3));
    CHECK(net.link_bytes()[LinkId(0)] == Approx(300));
  }
  Simulation sim;
  FlowNetwork net(sim, caps({100}));
  CHECK_THROWS_AS(net.set_link_capacity(LinkId(1), {Bandwidth::bytes_per_s(1), 1.0}),
                  std::invalid_argument);
  CHECK_THROWS_AS(net.set_link_capacity(LinkId(0), {Bandwidth::bytes_per_s(0), 1.0}),
                  std::invalid_argument);
}

TEST_CASE("a late flow takes half of what is left", "[flow]") {
  // A: 100 B alone at 100 B/s; B (100 B) joins at 0.5 s. Both at 50 B/s; A ends at 1.5 s, B has
  // 50 B left and ends at 2 s.
  Simulation sim;
  FlowNetwork net(sim, caps({100}));
  Time a, b;
  net.start_flow(route({0}), {Bytes::of(100), 1, {}, [&] { a = sim.now(); }});
  sim.schedule_at(Time::from_ms(500), [&] {
    net.start_flow(route({0}), {Bytes::of(100), 1, {}, [&] { b = sim.now(); }});
  });
  sim.run();
  CHECK(a == Time::from_ms(1500));
  CHECK(b == Time::from_ms(2000));
  CHECK(net.link_bytes()[LinkId(0)] == Approx(200));
}

TEST_CASE("max-min allocation of the textbook three-flow example", "[flow]") {
  // L0 = 10, L1 = 4. f1 crosses both, f2 only L0, f3 only L1. L1 is the bottleneck: f1 = f3 = 2;
  // then f2 takes the rest of L0: 8.
  Simulation sim;
  FlowNetwork net(sim, caps({10, 4}));
  net.start_flow(route({0, 1}), {Bytes::of(1e6), 1, {}, {}});
  net.start_flow(route({0}), {Bytes::of(1e6), 1, {}, {}});
  net.start_flow(route({1}), {Bytes::of(1e6), 1, {}, {}});
  const auto r = rates_now(sim, net);
  REQUIRE(r.size() == 3);
  CHECK(r[0] == Approx(2));
  CHECK(r[1] == Approx(8));
  CHECK(r[2] == Approx(2));
}

TEST_CASE("weights, rate caps and fractional shares", "[flow]") {
  SECTION("weights split a link in proportion") {
    Simulation sim;
    FlowNetwork net(sim, caps({100}));
    net.start_flow(route({0}), {Bytes::of(1e6), 1, {}, {}});
    net.start_flow(route({0}), {Bytes::of(1e6), 3, {}, {}});
    const auto r = rates_now(sim, net);
    CHECK(r[0] == Approx(25));
    CHECK(r[1] == Approx(75));
  }
  SECTION("a capped flow leaves the rest to others") {
    Simulation sim;
    FlowNetwork net(sim, caps({100}));
    net.start_flow(route({0}), {Bytes::of(1e6), 1, Bandwidth::bytes_per_s(30), {}});
    net.start_flow(route({0}), {Bytes::of(1e6), 1, {}, {}});
    const auto r = rates_now(sim, net);
    CHECK(r[0] == Approx(30));
    CHECK(r[1] == Approx(70));
  }
  SECTION("a flow sprayed over two parallel links uses both") {
    Simulation sim;
    FlowNetwork net(sim, caps({10, 10}));
    Route sprayed;
    sprayed.links = {{LinkId(0), 0.5}, {LinkId(1), 0.5}};
    Time done;
    net.start_flow(sprayed, {Bytes::of(200), 1, {}, [&] { done = sim.now(); }});
    sim.run();
    CHECK(done == Time::from_s(10));
    CHECK(net.link_bytes()[LinkId(0)] == Approx(100));
  }
}

TEST_CASE("random flow sets satisfy the max-min conditions", "[flow][invariant]") {
  // Feasibility: no link carries more than its capacity. Optimality: every flow is either at its
  // cap or has a saturated link on which no other flow gets a larger rate per unit of weight.
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 30; ++trial) {
    const int n_links = 3 + static_cast<int>(rng() % 12);
    std::vector<LinkCapacity> links;
    for (int i = 0; i < n_links; ++i) {
      links.push_back({Bandwidth::bytes_per_s(1 + static_cast<double>(rng() % 100)), 1.0});
    }
    Simulation sim;
    FlowNetwork net(sim, links);
    const int n_flows = 1 + static_cast<int>(rng() % 25);
    for (int i = 0; i < n_flows; ++i) {
      Route r;
      std::vector<LinkId> ids(n_links);
      for (int l = 0; l < n_links; ++l)
        ids[l] = LinkId::at(l);
      std::shuffle(ids.begin(), ids.end(), rng);
      const int hops = 1 + static_cast<int>(rng() % 3);
      for (int h = 0; h < hops; ++h)
        r.links.push_back({ids[h], (rng() % 2) ? 1.0 : 0.5});
      FlowRequest req{Bytes::of(1e9), 1.0 + static_cast<double>(rng() % 3), {}, {}};
      if (rng() % 4 == 0)
        req.max_rate = Bandwidth::bytes_per_s(1 + static_cast<double>(rng() % 20));
      net.start_flow(r, std::move(req));
    }
    sim.run_until(Time::zero());
    const auto flows = net.active_flow_rates();
    IdVector<LinkId, double> load(n_links, 0.0);
    for (const auto& f : flows) {
      for (const auto& s : f.links)
        load[s.link] += f.rate * s.fraction;
    }
    for (int l = 0; l < n_links; ++l)
      CHECK(load[LinkId::at(l)] <= net.usable_capacity(LinkId::at(l)) * (1 + 1e-9));
    for (const auto& f : flows) {
      if (f.rate >= f.max_rate * (1 - 1e-9)) continue;
      bool has_bottleneck = false;
      for (const auto& s : f.links) {
        if (load[s.link] < net.usable_capacity(s.link) * (1 - 1e-9)) continue;
        bool largest = true;
        for (const auto& g : flows) {
          for (const auto& t : g.links) {
            if (t.link == s.link && g.rate / g.weight > f.rate / f.weight * (1 + 1e-9))
              largest = false;
          }
        }
        if (largest) has_bottleneck = true;
      }
      CHECK(has_bottleneck);
    }
  }
}

TEST_CASE("flow and analytical backends agree exactly without contention", "[flow][equivalence]") {
  // Flows on disjoint links, started at random times with random sizes, latencies, shares and
  // caps: both backends must produce bit-identical completion times.
  std::mt19937_64 rng(7);
  std::vector<LinkCapacity> links;
  for (int i = 0; i < 64; ++i) {
    links.push_back({Bandwidth::gbytes_per_s(1 + static_cast<double>(rng() % 900) / 7.0),
                     0.5 + static_cast<double>(rng() % 50) / 100.0});
  }
  struct Spec {
    Route route;
    FlowRequest req;
    Time start;
  };
  std::vector<Spec> specs;
  for (int i = 0; i < 16; ++i) {
    Spec s;
    for (int h = 0; h < 4; ++h) {
      s.route.links.push_back({LinkId::at(i * 4 + h), h == 0 ? 1.0 : 0.25 + 0.25 * h});
    }
    s.route.latency = Time::from_ns(static_cast<double>(rng() % 5000));
    s.req.bytes = Bytes::of(static_cast<double>(rng() % (1u << 30)) + 1);
    s.req.weight = 1 + static_cast<double>(rng() % 4);
    if (i % 3 == 0) s.req.max_rate = Bandwidth::gbytes_per_s(static_cast<double>(rng() % 200) + 1);
    s.start = Time::from_ns(static_cast<double>(rng() % 100000));
    specs.push_back(s);
  }
  auto run = [&](auto make_network) {
    Simulation sim;
    auto net = make_network(sim);
    std::vector<Time> done(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      sim.schedule_at(specs[i].start, [&, i] {
        FlowRequest req = specs[i].req;
        req.on_complete = [&, i] { done[i] = sim.now(); };
        net->start_flow(specs[i].route, std::move(req));
      });
    }
    sim.run();
    return done;
  };
  const auto flow = run([&](Simulation& s) { return std::make_unique<FlowNetwork>(s, links); });
  const auto analytical =
      run([&](Simulation& s) { return std::make_unique<AnalyticalNetwork>(s, links); });
  for (size_t i = 0; i < specs.size(); ++i)
    CHECK(flow[i].ps() == analytical[i].ps());
}

TEST_CASE("flows that start from completion callbacks are solved together", "[flow]") {
  // A chain of 100 transfers, each started when the previous one ends: total = sum of parts.
  Simulation sim;
  FlowNetwork net(sim, caps({1e9}));
  int remaining = 100;
  std::function<void()> next = [&] {
    if (--remaining == 0) return;
    net.start_flow(route({0}), {Bytes::of(1e6), 1, {}, next});
  };
  net.start_flow(route({0}), {Bytes::of(1e6), 1, {}, next});
  sim.run();
  CHECK(remaining == 0);
  CHECK(sim.now() == Time::from_ms(100));
}
