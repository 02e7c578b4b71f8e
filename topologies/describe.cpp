#include "topologies/describe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace fabricsim::topologies {

TopologySummary summarize(const Topology& t) {
  TopologySummary s;
  const TopologyInfo& info = t.info();
  s.system = info.system;
  s.gpus = static_cast<int>(t.gpu_count());
  s.servers = static_cast<int>(t.server_count());
  s.domains = static_cast<int>(t.domain_count());
  s.gpus_per_domain = info.gpus_per_domain;
  s.planes = info.planes;
  s.rails = info.rails;
  s.nvls = info.nvls;
  s.collnet = info.collnet;
  s.notes = info.notes;
  s.directed_links = static_cast<int>(t.link_count());
  s.cables = s.directed_links / 2;
  std::map<int, TierSummary> tiers;
  std::map<int, int> nvswitch_tiers;
  double injection = 0;
  for (size_t i = 0; i < t.node_count(); ++i) {
    const Node& n = t.node(NodeId::at(i));
    switch (n.kind) {
      case NodeKind::nvswitch:
        ++s.nvswitch_chips;
        ++nvswitch_tiers[n.tier];
        break;
      case NodeKind::nic:
        ++s.nics;
        break;
      case NodeKind::pcie_switch:
        ++s.pcie_switches;
        break;
      case NodeKind::switch_:
        ++tiers[n.tier].switches;
        tiers[n.tier].tier = n.tier;
        break;
      default:
        break;
    }
  }
  for (const auto& [tier, count] : nvswitch_tiers)
    s.nvswitch_per_tier.push_back(count);
  for (const Link& l : t.links()) {
    if (l.kind != LinkKind::network) continue;
    const Node& a = t.node(l.src);
    const Node& b = t.node(l.dst);
    const double gbs = l.bandwidth.gbytes_per_s();
    if (a.kind == NodeKind::nic) injection += gbs;
    if (a.kind == NodeKind::switch_ && b.tier > a.tier) tiers[a.tier].up_gbytes_per_s += gbs;
    if (a.kind == NodeKind::switch_ && (b.tier < a.tier || b.kind == NodeKind::nic)) {
      tiers[a.tier].down_gbytes_per_s += gbs;
    }
  }
  double ratio = 1;
  for (auto& [tier, ts] : tiers) {
    if (ts.up_gbytes_per_s > 0) {
      ts.oversubscription = ts.down_gbytes_per_s / ts.up_gbytes_per_s;
      ratio = std::min(ratio, ts.up_gbytes_per_s / ts.down_gbytes_per_s);
      s.worst_oversubscription = std::max(s.worst_oversubscription, ts.oversubscription);
    } else {
      ts.oversubscription = 0;
    }
    s.scale_out_tiers.push_back(ts);
  }
  // A single switch is a crossbar: half the NICs can send to the other half at line rate.
  s.scale_out_bisection_gbytes_per_s = tiers.empty() ? 0 : injection / 2 * ratio;
  // Per-GPU bandwidth from GPU 0's links (every preset is uniform).
  const NodeId g0 = t.gpu(GpuRank(0));
  for (LinkId l : t.out_links(g0)) {
    if (t.link(l).kind == LinkKind::nvlink)
      s.scale_up_gbytes_per_s_per_gpu += t.link(l).bandwidth.gbytes_per_s();
  }
  if (s.scale_up_gbytes_per_s_per_gpu == 0) {
    // PCIe-only servers: the GPU's PCIe link is its scale-up path.
    for (LinkId l : t.out_links(g0))
      s.scale_up_gbytes_per_s_per_gpu += t.link(l).bandwidth.gbytes_per_s();
  }
  if (s.gpus > 0) s.scale_out_gbytes_per_s_per_gpu = injection / s.gpus;
  s.domain_bisection_gbytes_per_s =
      s.scale_up_gbytes_per_s_per_gpu * std::min(s.gpus, s.gpus_per_domain) / 2.0;
  return s;
}

nlohmann::json summary_to_json(const TopologySummary& s) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierSummary& t : s.scale_out_tiers) {
    tiers.push_back({{"tier", t.tier},
                     {"switches", t.switches},
                     {"down_GBps", t.down_gbytes_per_s},
                     {"up_GBps", t.up_gbytes_per_s},
                     {"oversubscription", t.oversubscription}});
  }
  return {{"system", s.system},
          {"gpus", s.gpus},
          {"servers", s.servers},
          {"scale_up_domains", s.domains},
          {"gpus_per_domain", s.gpus_per_domain},
          {"nvswitch_chips", s.nvswitch_chips},
          {"nvswitch_chips_per_tier", s.nvswitch_per_tier},
          {"nics", s.nics},
          {"pcie_switches", s.pcie_switches},
          {"planes", s.planes},
          {"rails", s.rails},
          {"scale_out_tiers", tiers},
          {"directed_links", s.directed_links},
          {"cables", s.cables},
          {"scale_up_GBps_per_gpu", s.scale_up_gbytes_per_s_per_gpu},
          {"scale_out_GBps_per_gpu", s.scale_out_gbytes_per_s_per_gpu},
          {"domain_bisection_GBps", s.domain_bisection_gbytes_per_s},
          {"scale_out_bisection_GBps", s.scale_out_bisection_gbytes_per_s},
          {"worst_oversubscription", s.worst_oversubscription},
          {"nvls", s.nvls},
          {"collnet", s.collnet},
          {"notes", s.notes}};
}

std::string summary_to_text(const TopologySummary& s) {
  std::string out;
  auto line = [&](const std::string& key, const std::string& value) {
    out += fmt::format("{:<34}{}\n", key, value);
  };
  line("system", s.system);
  line("GPUs", fmt::format("{} in {} servers, {} scale-up domain(s) of {}", s.gpus, s.servers,
                           s.domains, s.gpus_per_domain));
  std::string nvs = fmt::format("{}", s.nvswitch_chips);
  if (s.nvswitch_per_tier.size() > 1) {
    nvs += " (";
    for (size_t i = 0; i < s.nvswitch_per_tier.size(); ++i) {
      nvs += fmt::format("{}L{}: {}", i ? ", " : "", i + 1, s.nvswitch_per_tier[i]);
    }
    nvs += ")";
  }
  line("NVSwitch chips", nvs + (s.nvls ? ", NVLink SHARP" : ""));
  line("NICs", fmt::format("{} ({} rail(s), {} plane(s))", s.nics, s.rails, s.planes));
  line("PCIe switches", fmt::format("{}", s.pcie_switches));
  for (const TierSummary& t : s.scale_out_tiers) {
    const std::string name = t.tier == 1   ? "leaf"
                             : t.tier == 2 ? "spine"
                             : t.tier == 3 ? "core"
                                           : "tier";
    line(fmt::format("fabric tier {} ({})", t.tier, name),
         t.oversubscription > 0
             ? fmt::format("{} switches, oversubscription {:.2f}:1", t.switches, t.oversubscription)
             : fmt::format("{} switches (top)", t.switches));
  }
  line("links", fmt::format("{} directed ({} cables/bundles)", s.directed_links, s.cables));
  line("scale-up per GPU",
       fmt::format("{:.1f} GB/s per direction", s.scale_up_gbytes_per_s_per_gpu));
  line("scale-out per GPU",
       fmt::format("{:.1f} GB/s per direction", s.scale_out_gbytes_per_s_per_gpu));
  line("domain bisection", fmt::format("{:.1f} GB/s", s.domain_bisection_gbytes_per_s));
  line("scale-out bisection", fmt::format("{:.1f} GB/s", s.scale_out_bisection_gbytes_per_s));
  line("worst oversubscription", fmt::format("{:.2f}:1", s.worst_oversubscription));
  line("in-network reduction (SHARP)", s.collnet ? "available" : "no");
  for (const std::string& n : s.notes)
    out += "note: " + n + "\n";
  return out;
}

}  // namespace fabricsim::topologies
