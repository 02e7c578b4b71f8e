#include "models/straggler_model.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "topologies/cluster_spec.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

TEST_CASE("stragglers: seeded choice of slow GPUs and throttled nodes", "[straggler]") {
  StragglerSpec s;
  s.fraction = 0.05;
  s.slowdown_min = 1.1;
  s.slowdown_max = 1.4;
  s.seed = 7;
  const std::vector<double> a = rank_slowdowns(s, 1000, 8);
  REQUIRE(a.size() == 1000);
  CHECK(std::count_if(a.begin(), a.end(), [](double f) { return f != 1.0; }) == 50);
  for (const double f : a) {
    CHECK(f >= 1.0);
    CHECK(f <= 1.4);
    if (f != 1.0) CHECK(f >= 1.1);
  }
  CHECK(rank_slowdowns(s, 1000, 8) == a);  // deterministic
  s.seed = 8;
  CHECK(rank_slowdowns(s, 1000, 8) != a);

  StragglerSpec nodes;
  nodes.node_fraction = 0.25;
  nodes.node_slowdown = 1.2;
  nodes.nodes = {{0, 1.5}};
  nodes.ranks = {{1, 2.0}};
  const std::vector<double> b = rank_slowdowns(nodes, 64, 8);  // 8 nodes: 2 throttled + node 0
  // Whole nodes: eight GPUs share each factor; node 0 may also be one of the throttled two.
  for (int n = 0; n < 8; ++n) {
    for (int g = 1; g < 8; ++g) {
      if (n * 8 + g == 1) continue;
      CHECK(b[static_cast<size_t>(n * 8 + g)] == b[static_cast<size_t>(n * 8 + 2)]);
    }
  }
  const int throttled =
      static_cast<int>(std::count_if(b.begin() + 8, b.end(), [](double f) { return f == 1.2; }));
  CHECK((throttled == 16 || throttled == 8));
  CHECK(b[1] == b[2] * 2.0);  // the named rank multiplies its node's factor
  CHECK((b[2] == 1.5 || b[2] == Approx(1.5 * 1.2)));
  CHECK_FALSE(StragglerSpec{}.any());
}

TEST_CASE("stragglers: a slow link divides the bandwidth of one NIC's network links",
          "[straggler]") {
  topologies::ClusterSpec spec = topologies::find_system("dgx-h100")->make(16);
  const topologies::Topology t = topologies::build_cluster(spec);
  const topologies::Topology slow = with_slow_nic_links(t, {{3, 4.0}});
  REQUIRE(slow.link_count() == t.link_count());
  const topologies::NodeId nic = t.gpu_nic(topologies::GpuRank(3));
  int changed = 0;
  for (size_t i = 0; i < t.link_count(); ++i) {
    const topologies::Link& a = t.link(topologies::LinkId::at(i));
    const topologies::Link& b = slow.link(topologies::LinkId::at(i));
    CHECK(a.src == b.src);
    CHECK(a.dst == b.dst);
    const bool on_nic = (a.src == nic || a.dst == nic) && a.kind == topologies::LinkKind::network;
    if (on_nic) {
      ++changed;
      CHECK(b.bandwidth.bytes_per_s() == Approx(a.bandwidth.bytes_per_s() / 4));
    } else {
      CHECK(b.bandwidth.bytes_per_s() == a.bandwidth.bytes_per_s());
    }
  }
  CHECK(changed == 2);  // to and from its leaf
  CHECK(slow.gpus() == t.gpus());
}
