#include "topologies/topology_json.hpp"

#include <fmt/format.h>

#include <limits>

#include "sim/input_error.hpp"

namespace fabricsim::topologies {

namespace {
constexpr const char* kFormat = "fabricsim-topology";
constexpr int kVersion = 1;

// A pod index, or -1 for "none", held in an int32.
int32_t pod_index(const sim::JsonValue& v) {
  const int64_t x = v.as_int();
  if (x < -1 || x > std::numeric_limits<int32_t>::max()) v.fail("a pod index >= -1 below 2^31");
  return static_cast<int32_t>(x);
}
}  // namespace

nlohmann::json topology_to_json(const Topology& t) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  const TopologyInfo& info = t.info();
  j["info"] = {{"system", info.system},
               {"gpus_per_server", info.gpus_per_server},
               {"gpus_per_domain", info.gpus_per_domain},
               {"nics_per_server", info.nics_per_server},
               {"rails", info.rails},
               {"planes", info.planes},
               {"scale_out_tiers", info.scale_out_tiers},
               {"nvls", info.nvls},
               {"collnet", info.collnet},
               {"notes", info.notes}};
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < t.node_count(); ++i) {
    const Node& n = t.node(NodeId::at(i));
    nodes.push_back({{"id", i},
                     {"kind", std::string(to_string(n.kind))},
                     {"name", n.name},
                     {"tier", n.tier},
                     {"server", n.server},
                     {"domain", n.domain},
                     {"local", n.local},
                     {"rail", n.rail},
                     {"plane", n.plane},
                     {"pods", n.pods}});
  }
  j["nodes"] = std::move(nodes);
  nlohmann::json links = nlohmann::json::array();
  for (const Link& l : t.links()) {
    // Shortest round-trip number formatting keeps the bandwidth exact.
    links.push_back({{"src", l.src.value()},
                     {"dst", l.dst.value()},
                     {"kind", std::string(to_string(l.kind))},
                     {"bandwidth", fmt::format("{} B/s", l.bandwidth.bytes_per_s())},
                     {"latency", fmt::format("{} ps", l.latency.ps())},
                     {"lanes", l.lanes}});
  }
  j["links"] = std::move(links);
  return j;
}

Topology topology_from_json(const sim::JsonValue& root) {
  sim::ObjectReader top = root.as_object();
  const sim::JsonValue format = top.required("format");
  if (format.as_string() != kFormat) format.fail(fmt::format("\"{}\"", kFormat));
  const sim::JsonValue version = top.required("version");
  if (version.as_int() != kVersion) version.fail(fmt::format("version {}", kVersion));

  TopologyInfo info;
  {
    sim::ObjectReader r = top.required("info").as_object();
    info.system = r.required("system").as_string();
    info.gpus_per_server = r.required("gpus_per_server").as_non_negative_int32();
    info.gpus_per_domain = r.required("gpus_per_domain").as_non_negative_int32();
    info.nics_per_server = r.required("nics_per_server").as_non_negative_int32();
    info.rails = r.required("rails").as_non_negative_int32();
    info.planes = r.required("planes").as_positive_int32();
    info.scale_out_tiers = r.required("scale_out_tiers").as_non_negative_int32();
    info.nvls = r.required("nvls").as_bool();
    info.collnet = r.required("collnet").as_bool();
    if (auto notes = r.optional("notes")) {
      for (const auto& n : notes->as_array())
        info.notes.push_back(n.as_string());
    }
    r.finish();
  }
  TopologyBuilder b(info);
  const auto nodes = top.required("nodes").as_array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    sim::ObjectReader r = nodes[i].as_object();
    if (auto id = r.optional("id"); id && id->as_int() != static_cast<int64_t>(i)) {
      id->fail(fmt::format("{} (nodes are listed in id order)", i));
    }
    Node n;
    const sim::JsonValue kind = r.required("kind");
    if (!parse_node_kind(kind.as_string(), n.kind)) {
      kind.fail("one of gpu, nvswitch, nic, pcie_switch, host, switch");
    }
    n.name = r.required("name").as_string();
    const auto tier = r.required("tier").as_non_negative_int();
    if (tier > 16) r.required("tier").fail("a tier between 0 and 16");
    n.tier = static_cast<uint8_t>(tier);
    auto small_int = [&](const char* key) {
      const auto v = r.optional(key);
      if (!v) return -1;
      const int64_t x = v->as_int();
      if (x < -1 || x > 100'000'000) v->fail("an index >= -1");
      return static_cast<int>(x);
    };
    n.server = small_int("server");
    n.domain = small_int("domain");
    n.local = small_int("local");
    n.rail = small_int("rail");
    n.plane = small_int("plane");
    if (auto pods = r.optional("pods")) {
      for (const auto& p : pods->as_array())
        n.pods.push_back(pod_index(p));
    }
    r.finish();
    if (n.kind == NodeKind::gpu && (n.server < 0 || n.domain < 0)) {
      nodes[i].fail_message("a GPU needs a server and a domain index");
    }
    b.add_node(std::move(n));
  }
  const auto links = top.required("links").as_array();
  for (const auto& lv : links) {
    sim::ObjectReader r = lv.as_object();
    const sim::JsonValue src = r.required("src");
    const sim::JsonValue dst = r.required("dst");
    const auto s = src.as_non_negative_int();
    const auto d = dst.as_non_negative_int();
    if (static_cast<size_t>(s) >= nodes.size()) src.fail("the id of a listed node");
    if (static_cast<size_t>(d) >= nodes.size()) dst.fail("the id of a listed node");
    if (s == d) dst.fail("a node other than src");
    LinkKind kind;
    const sim::JsonValue k = r.required("kind");
    if (!parse_link_kind(k.as_string(), kind)) k.fail("one of nvlink, pcie, network");
    const sim::Bandwidth bw = r.required("bandwidth").as_bandwidth();
    const sim::Time latency =
        r.optional("latency") ? r.required("latency").as_time_or_zero() : sim::Time::zero();
    uint32_t lanes = 1;
    if (auto l = r.optional("lanes")) lanes = static_cast<uint32_t>(l->as_positive_int());
    r.finish();
    b.add_directed(NodeId::at(s), NodeId::at(d), kind, bw, latency, lanes);
  }
  top.finish();
  try {
    return std::move(b).build();
  } catch (const std::invalid_argument& e) {
    root.fail_message(fmt::format("invalid topology: {}", e.what()));
  }
}

}  // namespace fabricsim::topologies
