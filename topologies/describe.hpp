#pragma once
// What a topology contains, in the terms people size clusters with: device counts, switches per
// tier, per-GPU scale-up and scale-out bandwidth, bisection bandwidth and oversubscription.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "topologies/graph.hpp"

namespace fabricsim::topologies {

struct TierSummary {
  int tier = 0;
  int switches = 0;
  double down_gbytes_per_s = 0;  ///< total bandwidth toward the tier below (one direction)
  double up_gbytes_per_s = 0;    ///< total bandwidth toward the tier above
  double oversubscription = 1;   ///< down / up (1 = non-blocking); 0 at the top tier
};

struct TopologySummary {
  std::string system;
  int gpus = 0;
  int servers = 0;
  int domains = 0;
  int gpus_per_domain = 0;
  int nvswitch_chips = 0;
  std::vector<int> nvswitch_per_tier;
  int nics = 0;
  int pcie_switches = 0;
  int planes = 1;
  int rails = 0;
  std::vector<TierSummary> scale_out_tiers;
  int directed_links = 0;
  int cables = 0;                             ///< duplex pairs
  double scale_up_gbytes_per_s_per_gpu = 0;   ///< one direction
  double scale_out_gbytes_per_s_per_gpu = 0;  ///< one direction
  double domain_bisection_gbytes_per_s = 0;   ///< one scale-up domain, one direction
  /// Estimate for a Clos: half the injection bandwidth, scaled by the worst tier's up/down ratio.
  double scale_out_bisection_gbytes_per_s = 0;
  double worst_oversubscription = 1;
  bool nvls = false;
  bool collnet = false;
  std::vector<std::string> notes;
};

TopologySummary summarize(const Topology& topology);
nlohmann::json summary_to_json(const TopologySummary& s);
std::string summary_to_text(const TopologySummary& s);

}  // namespace fabricsim::topologies
