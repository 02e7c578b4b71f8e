#pragma once
// What a cluster costs to buy, rent and run: system and fabric capital, rental per GPU-hour,
// facility power (IT power x PUE) and the energy of a training run. Every default cites
// ../shared/reference/hardware.json (its source keys) or is listed as an assumption in
// docs/models.md; every figure can be overridden with a price table (read_price_table).

#include <map>
#include <optional>
#include <string>

#include "sim/json_reader.hpp"
#include "topologies/describe.hpp"

namespace fabricsim::models {

/// One system's unit of purchase (a server or a rack) and its figures.
struct SystemPrice {
  int gpus_per_unit = 8;
  std::optional<double> unit_usd;      ///< purchase price of one unit; unknown for some systems
  double unit_kw = 0;                  ///< maximum power of one unit (IT load)
  std::optional<double> gpu_hour_usd;  ///< rental price
  std::string source;
};

struct PriceTable {
  std::map<std::string, SystemPrice> systems;
  /// Scale-out fabric (switches, NICs, optics, cables) per NIC endpoint: DeepSeek's published
  /// cost of a two-tier multi-plane fat tree and of a three-tier fat tree [DSV3-EEUMEE].
  double fabric_usd_per_endpoint_2tier = 4390;
  double fabric_usd_per_endpoint_3tier = 7500;
  /// When all three are given, the fabric is priced from the built topology's counts instead.
  std::optional<double> switch_usd, nic_usd, transceiver_usd;
  double transceiver_w = 17;  ///< twin-port 800G OSFP, single-mode [XCVR-MMS-T]
  double switch_w = 0;        ///< chassis power: not published [hardware.json network_power]
  double pue = 1.3;           ///< assumption (docs/models.md)
  double electricity_usd_per_kwh = 0.08;  ///< assumption (docs/models.md)
};

/// The built-in table (hardware.json figures).
PriceTable default_prices();
/// Applies a price-table JSON (docs/formats.md, "price table") over `table`. Unknown keys are
/// errors.
void read_price_table(const sim::JsonValue& root, PriceTable& table);

/// Parts of the scale-out fabric of a built topology.
struct FabricCount {
  int switches = 0;
  int nics = 0;
  int transceivers = 0;  ///< two per scale-out cable (NIC-leaf and switch-switch), all optical
  int tiers = 0;
};
FabricCount count_fabric(const topologies::TopologySummary& summary, double port_gbytes_per_s);

struct ClusterCost {
  int units = 0;
  std::optional<double> systems_usd;
  double fabric_usd = 0;
  std::optional<double> capital_usd;  ///< systems + fabric, when the system price is known
  double it_kw = 0;                   ///< systems + fabric at maximum power
  double facility_mw = 0;             ///< it_kw x PUE
  std::optional<double> rental_usd;   ///< GPU-hours x rental price
  double energy_mwh = 0;              ///< facility power over the run
  double energy_usd = 0;
};

/// The cost of `gpus` GPUs of `system` training for `hours`. Throws sim::InputError (at
/// `where`) when the table has no entry for the system.
ClusterCost cluster_cost(const PriceTable& prices, const std::string& system, int gpus,
                         const FabricCount& fabric, double hours, const std::string& where);

}  // namespace fabricsim::models
