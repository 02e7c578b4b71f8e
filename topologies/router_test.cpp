#include "topologies/router.hpp"

#include <catch2/catch.hpp>
#include <numeric>

#include "topologies/cluster_spec.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim::topologies;

namespace {

Topology preset(const char* name, int gpus) {
  return build_cluster(find_system(name)->make(gpus));
}

std::vector<std::string> hop_names(const Topology& t, const fabricsim::sim::Route& r) {
  std::vector<std::string> out;
  for (const auto& s : r.links)
    out.push_back(t.resource_name(s.link));
  return out;
}

int count_kind(const Topology& t, const fabricsim::sim::Route& r, NodeKind kind, int tier) {
  int n = 0;
  for (const auto& s : r.links) {
    for (LinkId l : t.resource_links(s.link)) {
      const Node& dst = t.node(t.link(l).dst);
      if (dst.kind == kind && dst.tier == tier) ++n;
    }
  }
  return n;
}

}  // namespace

TEST_CASE("NVLink traffic is sprayed over the NVSwitch chips by lanes", "[routing]") {
  const Topology t = preset("dgx-h100", 8);
  Router router(t, RoutingStrategy::ecmp);
  const auto& r = router.route(GpuRank(0), GpuRank(1));
  // Each GPU's 4 chip links (5/4/4/5 lanes) form one bundle per direction: up, then down.
  REQUIRE(r.links.size() == 2);
  CHECK(t.resource_links(r.links[0].link).size() == 4);
  CHECK(t.resource_endpoints(r.links[0].link).first == t.gpu(GpuRank(0)));
  CHECK(t.resource_endpoints(r.links[1].link).second == t.gpu(GpuRank(1)));
  CHECK(r.links[0].fraction == Approx(1.0));
  // The bundle's capacity is the GPU's whole NVLink bandwidth.
  const auto caps = t.link_capacities([](LinkKind) { return 1.0; });
  CHECK(caps[r.links[0].link].bandwidth.gbytes_per_s() == Approx(450));
}

TEST_CASE("same-rail traffic stays on its leaf, cross-rail goes up unless rail-aware",
          "[routing]") {
  const Topology t = preset("dgx-h100", 16);
  Router ecmp(t, RoutingStrategy::ecmp);
  const auto& same_rail = ecmp.route(GpuRank(0), GpuRank(8));  // GPU 0 of node 0 -> GPU 0 of node 1
  CHECK(count_kind(t, same_rail, NodeKind::switch_, 2) == 0);
  CHECK(count_kind(t, same_rail, NodeKind::switch_, 1) == 1);
  const auto& cross_rail = ecmp.route(GpuRank(0), GpuRank(9));
  CHECK(count_kind(t, cross_rail, NodeKind::switch_, 2) == 1);
  Router rail(t, RoutingStrategy::rail_aware);
  const auto& pxn = rail.route(GpuRank(0), GpuRank(9));
  CHECK(count_kind(t, pxn, NodeKind::switch_, 2) == 0);
  // GPUs 0 and 1 share a PCIe switch with NICs 0 and 1: rail 1's NIC is reached over PCIe.
  CHECK(count_kind(t, pxn, NodeKind::nvswitch, 1) == 0);
  // Rail 2's NIC is not: the data crosses NVLink (GPU 0's lanes to the 4 chips) to GPU 2 first.
  const auto& nvlink_pxn = rail.route(GpuRank(0), GpuRank(10));
  CHECK(count_kind(t, nvlink_pxn, NodeKind::switch_, 2) == 0);
  CHECK(count_kind(t, nvlink_pxn, NodeKind::nvswitch, 1) == 4);
}

TEST_CASE("every route conserves the flow at each node", "[routing][invariant]") {
  // For each intermediate node, bytes in = bytes out; the source emits 1, the sink takes 1.
  for (const char* system :
       {"dgx-h100", "gb200-nvl72", "dgx-h800", "meta-h100-roce", "generic-h100-pcie-eth"}) {
    const Topology t = preset(system, 576);
    for (RoutingStrategy strategy : {RoutingStrategy::ecmp, RoutingStrategy::spray,
                                     RoutingStrategy::rail_aware, RoutingStrategy::shortest}) {
      Router router(t, strategy, 3);
      for (uint32_t dst : {1u, 9u, 100u, 301u, 575u}) {
        INFO(system << " " << to_string(strategy) << " 0 -> " << dst);
        const auto& r = router.route(GpuRank(0), GpuRank(dst));
        fabricsim::sim::IdVector<NodeId, double> net(t.node_count(), 0.0);
        for (const auto& s : r.links) {
          const auto [from, to] = t.resource_endpoints(s.link);
          net[from] -= s.fraction;
          net[to] += s.fraction;
        }
        for (size_t n = 0; n < t.node_count(); ++n) {
          const NodeId node = NodeId::at(n);
          const double expect = node == t.gpu(GpuRank(0))     ? -1.0
                                : node == t.gpu(GpuRank(dst)) ? 1.0
                                                              : 0.0;
          CHECK(net[n] == Approx(expect).margin(1e-9));
        }
      }
    }
  }
}

TEST_CASE("multi-plane fabrics forward across planes over NVLink", "[routing]") {
  const Topology t = preset("dgx-h800", 16);
  Router router(t, RoutingStrategy::ecmp);
  // Plane 0 -> plane 2: GPU 0 hands the data over NVLink to GPU 2, whose NIC is in plane 2.
  const auto& r = router.route(GpuRank(0), GpuRank(10));
  CHECK(count_kind(t, r, NodeKind::nvswitch, 1) == 4);
  CHECK(count_kind(t, r, NodeKind::switch_, 2) == 0);
  // Plane 0 -> plane 1: NIC 1 sits under GPU 0's own PCIe switch, so no NVLink hop is needed.
  const auto& sibling = router.route(GpuRank(0), GpuRank(9));
  CHECK(count_kind(t, sibling, NodeKind::nvswitch, 1) == 0);
  CHECK(count_kind(t, sibling, NodeKind::nic, 0) == 2);
}

TEST_CASE("routes are deterministic and the seed changes ECMP choices", "[routing]") {
  const Topology t = preset("dgx-h100", 4096);
  Router a(t, RoutingStrategy::ecmp, 1);
  Router b(t, RoutingStrategy::ecmp, 1);
  CHECK(hop_names(t, a.route(GpuRank(0), GpuRank(4000))) ==
        hop_names(t, b.route(GpuRank(0), GpuRank(4000))));
  int differ = 0;
  for (uint32_t d = 1000; d < 1100; ++d) {
    Router c(t, RoutingStrategy::ecmp, 99);
    if (hop_names(t, a.route(GpuRank(3), GpuRank(d))) !=
        hop_names(t, c.route(GpuRank(3), GpuRank(d))))
      ++differ;
  }
  CHECK(differ > 50);
}

TEST_CASE("PCIe-only servers route GPU to GPU through the host bridge", "[routing]") {
  const Topology t = preset("generic-h100-pcie-eth", 8);
  Router router(t, RoutingStrategy::ecmp);
  CHECK(router.route(GpuRank(0), GpuRank(1)).links.size() == 2);  // same PCIe switch
  CHECK(router.route(GpuRank(0), GpuRank(7)).links.size() == 4);  // via the host
}

TEST_CASE("an ECMP path is one of the paths spraying spreads over, hop by hop",
          "[routing][invariant]") {
  // 16,384 GPUs of dgx-h100 take a three-tier fabric: paths between pods climb to the core and
  // come down into the destination's pod, each hop looked up in the router's index.
  const Topology t = preset("dgx-h100", 16384);
  Router ecmp(t, RoutingStrategy::ecmp, 7);
  Router spray(t, RoutingStrategy::spray, 7);
  int core = 0;
  for (uint32_t dst : {8u, 1000u, 4104u, 9000u, 16383u}) {
    for (uint32_t src : {0u, 3u, 7u}) {
      INFO(src << " -> " << dst);
      const auto& path = ecmp.route(GpuRank(src), GpuRank(dst));
      const auto& all = spray.route(GpuRank(src), GpuRank(dst));
      for (const auto& s : path.links) {
        CHECK(s.fraction == Approx(1.0));
        bool sprayed = false;
        for (const auto& a : all.links)
          sprayed |= a.link == s.link;
        CHECK(sprayed);
      }
      core += count_kind(t, path, NodeKind::switch_, 3);
    }
  }
  CHECK(core > 0);
}

TEST_CASE("a full route cache starts over and gives the same routes", "[routing]") {
  const Topology t = preset("dgx-h100", 1024);
  Router cached(t, RoutingStrategy::ecmp, 5);
  const uint32_t n = 1024;
  size_t asked = 0;
  for (uint32_t s = 0; s < n && asked <= Router::kRouteCacheCapacity; ++s) {
    for (uint32_t d = 0; d < n; ++d, ++asked)
      cached.route(GpuRank(s), GpuRank(d));
  }
  CHECK(cached.cached_routes() <= Router::kRouteCacheCapacity);
  CHECK(cached.cached_routes() < asked);
  Router fresh(t, RoutingStrategy::ecmp, 5);
  for (uint32_t d : {1u, 77u, 513u, 1023u}) {
    CHECK(hop_names(t, cached.route(GpuRank(3), GpuRank(d))) ==
          hop_names(t, fresh.route(GpuRank(3), GpuRank(d))));
  }
}
