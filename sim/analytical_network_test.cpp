#include "sim/analytical_network.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "sim/flow_network.hpp"

using namespace fabricsim::sim;

namespace {

/// A flow of a chain: started `gap` after the previous flow of its chain arrived.
struct ChainFlow {
  Route route;
  FlowRequest request;
  Time gap;
};

struct Outcome {
  std::vector<std::vector<Time>> done;  ///< [chain][flow] arrival times
  std::vector<double> link_bytes;
  uint64_t completed = 0;
};

template <class MakeNetwork>
Outcome run_chains(const std::vector<std::vector<ChainFlow>>& chains, MakeNetwork make_network) {
  Simulation sim;
  std::unique_ptr<Network> net = make_network(sim);
  Outcome out;
  out.done.resize(chains.size());
  std::function<void(size_t, size_t)> start = [&](size_t c, size_t i) {
    if (i == chains[c].size()) return;
    FlowRequest req = chains[c][i].request;
    req.on_complete = [&, c, i] {
      out.done[c].push_back(sim.now());
      if (i + 1 < chains[c].size()) {
        sim.schedule_in(chains[c][i + 1].gap, [&, c, i] { start(c, i + 1); });
      }
    };
    net->start_flow(chains[c][i].route, std::move(req));
  };
  for (size_t c = 0; c < chains.size(); ++c) {
    sim.schedule_at(chains[c].front().gap, [&, c] { start(c, 0); });
  }
  sim.run();
  out.link_bytes = net->link_bytes();
  out.completed = net->stats().flows_completed;
  return out;
}

}  // namespace

TEST_CASE("analytical and flow backends agree on flows that reuse links one after another",
          "[flow][analytical][equivalence]") {
  // Chains of transfers, each started after the previous one of its chain has arrived (plus a
  // random gap), over random routes inside the chain's own group of links: links are reused many
  // times but never by two flows at once, while other chains run concurrently elsewhere. Both
  // backends must give bit-identical arrival times.
  std::mt19937_64 rng(20240611);
  constexpr int kChains = 12;
  constexpr int kLinksPerChain = 6;
  std::vector<LinkCapacity> links;
  for (int i = 0; i < kChains * kLinksPerChain; ++i) {
    links.push_back({Bandwidth::gbytes_per_s(1 + static_cast<double>(rng() % 900) / 3.0),
                     0.4 + static_cast<double>(rng() % 60) / 100.0});
  }
  std::vector<std::vector<ChainFlow>> chains(kChains);
  size_t flows = 0;
  for (int c = 0; c < kChains; ++c) {
    const int length = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < length; ++i) {
      ChainFlow f;
      const int hops = 1 + static_cast<int>(rng() % kLinksPerChain);
      const int first = static_cast<int>(rng() % kLinksPerChain);
      for (int h = 0; h < hops; ++h) {
        const auto id = LinkId::at(c * kLinksPerChain + (first + h) % kLinksPerChain);
        f.route.links.push_back({id, h == 0 ? 1.0 : 1.0 / static_cast<double>(1 + rng() % 4)});
      }
      f.route.latency = Time::from_ns(static_cast<double>(rng() % 20000));
      // Sizes from bytes to gigabytes, a few empty transfers among them.
      f.request.bytes = Bytes::of(rng() % 10 == 0 ? 0.0
                                                  : std::exp2(static_cast<double>(rng() % 31)) +
                                                        static_cast<double>(rng() % 1000));
      f.request.weight = 1 + static_cast<double>(rng() % 3);
      if (rng() % 3 == 0) {
        f.request.max_rate = Bandwidth::gbytes_per_s(1 + static_cast<double>(rng() % 300));
      }
      f.gap = Time::from_ns(static_cast<double>(rng() % 50000));
      chains[c].push_back(std::move(f));
      ++flows;
    }
  }
  const Outcome flow =
      run_chains(chains, [&](Simulation& s) { return std::make_unique<FlowNetwork>(s, links); });
  const Outcome analytical = run_chains(
      chains, [&](Simulation& s) { return std::make_unique<AnalyticalNetwork>(s, links); });
  CHECK(flow.completed == flows);
  CHECK(analytical.completed == flows);
  for (size_t c = 0; c < chains.size(); ++c) {
    REQUIRE(flow.done[c].size() == chains[c].size());
    REQUIRE(analytical.done[c].size() == chains[c].size());
    for (size_t i = 0; i < chains[c].size(); ++i) {
      INFO("chain " << c << " flow " << i);
      CHECK(flow.done[c][i].ps() == analytical.done[c][i].ps());
    }
  }
  // Bytes per link: the same totals (the flow backend adds them in pieces as rates change).
  for (size_t l = 0; l < links.size(); ++l) {
    CHECK(flow.link_bytes[l] == Approx(analytical.link_bytes[l]).epsilon(1e-12));
  }
}

TEST_CASE("the analytical time is the bottleneck transfer plus the route latency", "[analytical]") {
  // Usable capacities 40 and 10 B/s; the flow crosses the second link with half its bytes:
  // bottleneck rate = min(40 / 1, 10 / 0.5) = 20 B/s, so 100 B take 5 s, plus 3 us.
  std::vector<LinkCapacity> links{{Bandwidth::bytes_per_s(80), 0.5},
                                  {Bandwidth::bytes_per_s(20), 0.5}};
  const auto usable = AnalyticalNetwork::usable_capacities(links);
  CHECK(usable == std::vector<double>{40, 10});
  Route r;
  r.links = {{LinkId(0), 1.0}, {LinkId(1), 0.5}};
  r.latency = Time::from_us(3);
  FlowRequest req{Bytes::of(100), 1, {}, {}};
  CHECK(AnalyticalNetwork::uncontended_time(usable, r, req) == Time::from_s(5) + Time::from_us(3));
  // A cap below the bottleneck wins; weights do not matter for a lone flow.
  req.max_rate = Bandwidth::bytes_per_s(10);
  CHECK(AnalyticalNetwork::uncontended_time(usable, r, req) == Time::from_s(10) + Time::from_us(3));
  req.max_rate.reset();
  req.weight = 5;
  CHECK(AnalyticalNetwork::uncontended_time(usable, r, req) == Time::from_s(5) + Time::from_us(3));
  // Empty transfers pay the latency only.
  req.bytes = Bytes::of(0);
  CHECK(AnalyticalNetwork::uncontended_time(usable, r, req) == Time::from_us(3));
  // Zero-capacity links are rejected.
  links[1].efficiency = 0;
  CHECK_THROWS_AS(AnalyticalNetwork::usable_capacities(links), std::invalid_argument);
}
