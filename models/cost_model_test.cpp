#include "models/cost_model.hpp"

#include <catch2/catch.hpp>

#include "models/system.hpp"
#include "sim/input_error.hpp"
#include "topologies/describe.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

void apply(PriceTable& t, const nlohmann::json& doc) {
  const sim::JsonDocument parsed(doc, "prices.json");
  read_price_table(parsed.root(), t);
}

}  // namespace

TEST_CASE("cost model: capital, rental, power and energy in closed form", "[cost]") {
  const PriceTable t = default_prices();
  FabricCount f;
  f.switches = 4;
  f.nics = 16;
  f.transceivers = 40;
  f.tiers = 2;
  const ClusterCost c = cluster_cost(t, "dgx-h100", 16, f, 100.0, "test");
  CHECK(c.units == 2);
  REQUIRE(c.systems_usd);
  CHECK(*c.systems_usd == Approx(2 * 199000.0));
  CHECK(c.fabric_usd == Approx(16 * 4390.0));  // two tiers: DeepSeek's per-endpoint figure
  CHECK(*c.capital_usd == Approx(2 * 199000.0 + 16 * 4390.0));
  CHECK(c.it_kw == Approx(2 * 10.2 + 40 * 17.0 / 1000));
  CHECK(c.facility_mw == Approx(c.it_kw * 1.3 / 1000));
  CHECK(c.energy_mwh == Approx(c.facility_mw * 100));
  CHECK(c.energy_usd == Approx(c.energy_mwh * 1000 * 0.08));
  REQUIRE(c.rental_usd);
  CHECK(*c.rental_usd == Approx(3.0 * 16 * 100));
  // Three tiers cost more per endpoint; a partial rack is a whole rack.
  f.tiers = 3;
  CHECK(cluster_cost(t, "dgx-h100", 16, f, 1, "test").fabric_usd == Approx(16 * 7500.0));
  CHECK(cluster_cost(t, "gb200-nvl72", 100, f, 1, "test").units == 2);
  // No published price: capital unknown, power still counted.
  const ClusterCost b200 = cluster_cost(t, "dgx-b200", 8, f, 1, "test");
  CHECK(!b200.capital_usd);
  CHECK(b200.it_kw > 14.3);
  CHECK_THROWS_WITH(cluster_cost(t, "generic-h100-pcie-eth", 8, f, 1, "test"),
                    Catch::Contains("no price or power figures"));
}

TEST_CASE("cost model: price tables override and count parts", "[cost]") {
  PriceTable t = default_prices();
  apply(t, {{"pue", 1.1},
            {"electricity_usd_per_kwh", 0.05},
            {"switch_usd", 30000},
            {"nic_usd", 1500},
            {"transceiver_usd", 800},
            {"systems",
             {{"dgx-b200", {{"unit_usd", 500000}, {"gpu_hour_usd", 6}}},
              {"vr-nvl144", {{"unit_usd", 6e6}}}}}});
  CHECK(t.pue == 1.1);
  CHECK(*t.systems.at("dgx-b200").unit_usd == 500000);
  CHECK(t.systems.at("dgx-b200").unit_kw == 14.3);   // kept
  CHECK(*t.systems.at("vr-nvl72").unit_usd == 6e6);  // the alias names the preset
  FabricCount f{2, 8, 20, 1};
  const ClusterCost c = cluster_cost(t, "dgx-b200", 8, f, 10, "test");
  CHECK(c.fabric_usd == Approx(2 * 30000.0 + 8 * 1500.0 + 20 * 800.0));
  CHECK(*c.rental_usd == Approx(6.0 * 8 * 10));
  CHECK(c.energy_usd == Approx(c.energy_mwh * 1000 * 0.05));

  PriceTable u = default_prices();
  CHECK_THROWS_WITH(apply(u, {{"pue", 0.9}}), Catch::Contains("PUE of at least 1"));
  CHECK_THROWS_WITH(apply(u, {{"pues", 1.2}}), Catch::Contains("pues"));
  CHECK_THROWS_WITH(apply(u, {{"systems", {{"dgx-h900", {{"unit_usd", 1}}}}}}),
                    Catch::Contains("unknown system \"dgx-h900\""));
  CHECK_THROWS_WITH(apply(u, {{"systems", {{"dgx-h100", {{"usd", 1}}}}}}), Catch::Contains("usd"));
}

TEST_CASE("cost model: fabric parts of a built topology", "[cost]") {
  const System s = make_system("dgx-h100", 64);
  const topologies::TopologySummary summary = topologies::summarize(*s.topology);
  const FabricCount f = count_fabric(summary, 50.0);  // NDR 400 Gb/s ports
  CHECK(f.nics == 64);
  CHECK(f.tiers >= 1);
  int switches = 0;
  for (const auto& tier : summary.scale_out_tiers)
    switches += tier.switches;
  CHECK(f.switches == switches);
  // Two ends per cable: every NIC's cable plus the leaf uplinks.
  CHECK(f.transceivers >= 2 * 64);
  CHECK(f.transceivers % 2 == 0);
}
