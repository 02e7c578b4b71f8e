#include "models/cost_model.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/input_error.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::models {

PriceTable default_prices() {
  PriceTable t;
  // Hopper: DGX H100 ~$199,000 base [SUPERCLUSTER-COST]; 10.2 kW max [DGXH100-PWR]; rental at
  // the middle of the specialty-cloud range, H100 2.50-3.50, H200 3.50-4.50 [MERCATUS].
  const SystemPrice h100{8, 199000.0, 10.2, 3.00,
                         "SUPERCLUSTER-COST (price), DGXH100-PWR (power), MERCATUS (rental)"};
  t.systems["dgx-h100"] = h100;
  t.systems["unknown-h100-ib"] = h100;
  t.systems["meta-h100-roce"] = h100;
  t.systems["dgx-h200"] = {8, std::nullopt, 10.2, 4.00, "DGXH100-PWR (power), MERCATUS (rental)"};
  t.systems["dgx-h800"] = {8, std::nullopt, 10.2, std::nullopt, "DGXH100-PWR (power, as H100)"};
  // Ampere: DGX A100 from $200,000 [GEEKTOPIA-DGXA100], 6.5 kW [PCNEWS-DGXA100]; A100 80GB
  // specialty rental 1.10-1.50 [MERCATUS].
  const SystemPrice a100{8, 200000.0, 6.5, 1.30,
                         "GEEKTOPIA-DGXA100 (price), PCNEWS-DGXA100 (power), MERCATUS (rental)"};
  t.systems["dgx-a100-80gb"] = a100;
  t.systems["dgx-a100-40gb"] = a100;
  t.systems["unknown-a100-ib"] = a100;
  // Blackwell: no published system prices for DGX B200/B300; 14.3 kW [FLASHGENIUS]; DGX B300
  // 56 kW per rack of 4 [B300XDR-RA-ARCH].
  t.systems["dgx-b200"] = {8, std::nullopt, 14.3, std::nullopt, "FLASHGENIUS (power)"};
  t.systems["dgx-b300"] = {8, std::nullopt, 14.0, std::nullopt, "B300XDR-RA-ARCH (power)"};
  // Racks: GB200 NVL72 ~$3.0M [XATAKA-GB200], 120 kW [STH-GB200]; GB300 NVL72 $3-4M
  // [AWESOME-GB300] (middle), 132 kW shelves [SUPERMICRO-GB300]; Vera Rubin NVL72 180-220 kW,
  // third-party [VR-TRANSURF] (middle), no price.
  t.systems["gb200-nvl72"] = {72, 3.0e6, 120, std::nullopt, "XATAKA-GB200 (price), STH-GB200"};
  t.systems["gb300-nvl72"] = {72, 3.5e6, 132, std::nullopt,
                              "AWESOME-GB300 (price), SUPERMICRO-GB300 (power)"};
  t.systems["vr-nvl72"] = {72, std::nullopt, 200, std::nullopt, "VR-TRANSURF (power, announced)"};
  t.systems["azure-gb200-4gpu"] = {4, std::nullopt, 120.0 * 4 / 72, std::nullopt,
                                   "STH-GB200 (rack power / 18 trays)"};
  return t;
}

namespace {

std::optional<double> optional_price(const sim::JsonValue& v) {
  if (v.is_null()) return std::nullopt;
  return v.as_positive_number();
}

}  // namespace

void read_price_table(const sim::JsonValue& root, PriceTable& t) {
  sim::ObjectReader r = root.as_object();
  r.ignore("comment");
  if (auto v = r.optional("pue")) {
    t.pue = v->as_positive_number();
    if (t.pue < 1) v->fail("a PUE of at least 1");
  }
  if (auto v = r.optional("electricity_usd_per_kwh")) {
    t.electricity_usd_per_kwh = v->as_number();
    if (t.electricity_usd_per_kwh < 0) v->fail("a price of at least 0");
  }
  if (auto v = r.optional("fabric_usd_per_endpoint_2tier")) {
    t.fabric_usd_per_endpoint_2tier = v->as_positive_number();
  }
  if (auto v = r.optional("fabric_usd_per_endpoint_3tier")) {
    t.fabric_usd_per_endpoint_3tier = v->as_positive_number();
  }
  if (auto v = r.optional("switch_usd")) t.switch_usd = optional_price(*v);
  if (auto v = r.optional("nic_usd")) t.nic_usd = optional_price(*v);
  if (auto v = r.optional("transceiver_usd")) t.transceiver_usd = optional_price(*v);
  if (auto v = r.optional("transceiver_w")) t.transceiver_w = v->as_positive_number();
  if (auto v = r.optional("switch_w")) t.switch_w = v->as_positive_number();
  if (auto systems = r.optional("systems")) {
    sim::ObjectReader sr = systems->as_object();
    for (const auto& [name, value] : systems->raw().items()) {
      const sim::JsonValue entry = sr.required(name);
      const topologies::SystemPreset* preset = topologies::find_system(name);
      if (preset == nullptr) {
        entry.fail_message(
            fmt::format("unknown system \"{}\" (one of {})", name, topologies::system_names()));
      }
      SystemPrice& p = t.systems[preset->name];
      sim::ObjectReader er = entry.as_object();
      if (auto v = er.optional("gpus_per_unit")) p.gpus_per_unit = v->as_positive_int32();
      if (auto v = er.optional("unit_usd")) p.unit_usd = optional_price(*v);
      if (auto v = er.optional("unit_kw")) p.unit_kw = v->as_positive_number();
      if (auto v = er.optional("gpu_hour_usd")) p.gpu_hour_usd = optional_price(*v);
      er.finish();
      p.source = "price table " + root.file();
    }
    sr.finish();
  }
  r.finish();
}

FabricCount count_fabric(const topologies::TopologySummary& s, double port_gbytes_per_s) {
  FabricCount f;
  f.nics = s.nics;
  f.tiers = static_cast<int>(s.scale_out_tiers.size());
  double cables = s.nics;  // NIC to leaf
  for (const topologies::TierSummary& tier : s.scale_out_tiers) {
    f.switches += tier.switches;
    if (port_gbytes_per_s > 0) cables += std::round(tier.up_gbytes_per_s / port_gbytes_per_s);
  }
  if (f.tiers == 0) cables = 0;
  f.transceivers = static_cast<int>(2 * cables);
  return f;
}

ClusterCost cluster_cost(const PriceTable& prices, const std::string& system, int gpus,
                         const FabricCount& fabric, double hours, const std::string& where) {
  const auto it = prices.systems.find(system);
  if (it == prices.systems.end()) {
    throw sim::InputError(where, "/systems/" + system,
                          fmt::format("no price or power figures for system \"{}\": add them to "
                                      "the price table (--prices)",
                                      system));
  }
  const SystemPrice& p = it->second;
  ClusterCost c;
  c.units = (gpus + p.gpus_per_unit - 1) / p.gpus_per_unit;
  if (p.unit_usd) c.systems_usd = *p.unit_usd * c.units;
  if (prices.switch_usd && prices.nic_usd && prices.transceiver_usd) {
    c.fabric_usd = fabric.switches * *prices.switch_usd + fabric.nics * *prices.nic_usd +
                   fabric.transceivers * *prices.transceiver_usd;
  } else if (fabric.tiers > 0) {
    c.fabric_usd = fabric.nics * (fabric.tiers <= 2 ? prices.fabric_usd_per_endpoint_2tier
                                                    : prices.fabric_usd_per_endpoint_3tier);
  }
  if (c.systems_usd) c.capital_usd = *c.systems_usd + c.fabric_usd;
  c.it_kw = p.unit_kw * c.units +
            (fabric.transceivers * prices.transceiver_w + fabric.switches * prices.switch_w) / 1e3;
  c.facility_mw = c.it_kw * prices.pue / 1e3;
  if (p.gpu_hour_usd) c.rental_usd = *p.gpu_hour_usd * gpus * hours;
  c.energy_mwh = c.facility_mw * hours;
  c.energy_usd = c.energy_mwh * 1e3 * prices.electricity_usd_per_kwh;
  return c;
}

}  // namespace fabricsim::models
