#include "topologies/topology_json.hpp"

#include <catch2/catch.hpp>

#include "topologies/cluster_spec.hpp"
#include "topologies/router.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::topologies;

TEST_CASE("a generated topology survives a JSON round trip", "[topology][json]") {
  for (const char* system : {"dgx-h100", "gb200-nvl72", "dgx-h800"}) {
    const Topology original = build_cluster(find_system(system)->make(576));
    const nlohmann::json j = topology_to_json(original);
    const sim::JsonDocument doc = sim::parse_json_text(j.dump(), "roundtrip.json");
    const Topology loaded = topology_from_json(doc.root());
    CHECK(topology_to_json(loaded) == j);
    Router a(original, RoutingStrategy::ecmp, 5);
    Router b(loaded, RoutingStrategy::ecmp, 5);
    for (uint32_t d : {1u, 77u, 300u}) {
      const auto& ra = a.route(GpuRank(0), GpuRank(d));
      const auto& rb = b.route(GpuRank(0), GpuRank(d));
      REQUIRE(ra.links.size() == rb.links.size());
      for (size_t i = 0; i < ra.links.size(); ++i)
        CHECK(ra.links[i].link == rb.links[i].link);
    }
  }
}

TEST_CASE("bad topology JSON is reported with its location", "[topology][json][bad-input]") {
  const Topology t = build_cluster(find_system("dgx-h100")->make(8));
  nlohmann::json j = topology_to_json(t);
  auto load = [](const nlohmann::json& doc) {
    return topology_from_json(sim::parse_json_text(doc.dump(), "t.json").root());
  };
  {
    auto bad = j;
    bad["links"][3]["bandwidth"] = "0 Gbps";
    CHECK_THROWS_WITH(load(bad),
                      Catch::Contains("t.json: /links/3/bandwidth: expected a positive"));
  }
  {
    auto bad = j;
    bad["links"][0]["dst"] = 100000;
    CHECK_THROWS_WITH(load(bad), Catch::Contains("/links/0/dst: expected the id of a listed node"));
  }
  {
    auto bad = j;
    bad["nodes"][2]["kind"] = "toaster";
    CHECK_THROWS_WITH(load(bad), Catch::Contains("/nodes/2/kind: expected one of gpu"));
  }
  {
    auto bad = j;
    bad["nodes"][2]["colour"] = "red";
    CHECK_THROWS_WITH(load(bad), Catch::Contains("/nodes/2/colour: unknown key"));
  }
  {
    auto bad = j;
    bad.erase("links");
    CHECK_THROWS_WITH(load(bad), Catch::Contains("/links: missing required field"));
  }
  {
    auto bad = j;
    bad["format"] = "other";
    CHECK_THROWS_WITH(load(bad), Catch::Contains("/format: expected \"fabricsim-topology\""));
  }
}
