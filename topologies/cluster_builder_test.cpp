#include <catch2/catch.hpp>

#include "topologies/cluster_spec.hpp"
#include "topologies/describe.hpp"
#include "topologies/spec_error.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim::topologies;

namespace {

Topology preset(const char* name, int gpus) {
  return build_cluster(find_system(name)->make(gpus));
}

std::vector<int> switches_per_tier(const Topology& t) {
  std::vector<int> out;
  for (const auto& tier : summarize(t).scale_out_tiers)
    out.push_back(tier.switches);
  return out;
}

}  // namespace

TEST_CASE("every preset builds at its smallest and at a multi-node size", "[topology][presets]") {
  for (const SystemPreset& p : system_presets()) {
    INFO(p.name);
    REQUIRE(find_gpu(p.gpu) != nullptr);
    const ClusterSpec spec = p.make(8);
    const int per_server = spec.gpus_per_server;
    const int domain = spec.nvlink ? spec.nvlink->gpus_per_domain : per_server;
    const Topology small = build_cluster(p.make(per_server));
    CHECK(small.gpu_count() == static_cast<size_t>(per_server));
    const Topology big = build_cluster(p.make(domain * 4));
    CHECK(big.gpu_count() == static_cast<size_t>(domain * 4));
    CHECK(big.domain_count() == 4);
  }
}

TEST_CASE("DGX SuperPOD switch counts match the reference architectures", "[topology][presets]") {
  // DGX H100 / B200 SuperPOD tables (H100-RA-NET, B200-RA-ARCH): scalable units of 32 nodes.
  CHECK(switches_per_tier(preset("dgx-h100", 256)) == std::vector<int>{8, 4});     // 1 SU
  CHECK(switches_per_tier(preset("dgx-h100", 512)) == std::vector<int>{16, 8});    // 2 SU
  CHECK(switches_per_tier(preset("dgx-h100", 1024)) == std::vector<int>{32, 16});  // 4 SU
  CHECK(switches_per_tier(preset("dgx-b200", 2048)) == std::vector<int>{64, 32});  // 8 SU
  CHECK(switches_per_tier(preset("dgx-b200", 4096)) == std::vector<int>{128, 128, 64});
  CHECK(switches_per_tier(preset("dgx-b200", 8192)) == std::vector<int>{256, 256, 128});
  CHECK(switches_per_tier(preset("dgx-b200", 16384)) == std::vector<int>{512, 512, 256});
  // DGX B300 XDR (B300XDR-RA-ARCH): 72-node SUs, 144-port switches.
  CHECK(switches_per_tier(preset("dgx-b300", 576)) == std::vector<int>{8, 4});
  CHECK(switches_per_tier(preset("dgx-b300", 1152)) == std::vector<int>{16, 8});
}

TEST_CASE("a full 3-tier radix-64 fat tree holds k^3/4 endpoints", "[topology][clos]") {
  const Topology t = preset("dgx-h100", 65536);
  CHECK(switches_per_tier(t) == std::vector<int>{2048, 2048, 1024});
  const TopologySummary s = summarize(t);
  CHECK(s.worst_oversubscription == Approx(1.0));
  CHECK(s.scale_out_bisection_gbytes_per_s == Approx(65536 * 50.0 / 2));
  // One more scalable unit needs a fourth tier.
  CHECK(summarize(preset("dgx-h100", 65536 + 256)).scale_out_tiers.size() == 4);
}

TEST_CASE("scale-up domains have the reference chip layout", "[topology][presets]") {
  const TopologySummary h100 = summarize(preset("dgx-h100", 16));
  CHECK(h100.nvswitch_chips == 8);
  CHECK(h100.scale_up_gbytes_per_s_per_gpu == Approx(450));
  CHECK(h100.scale_out_gbytes_per_s_per_gpu == Approx(50));
  CHECK(h100.nvls);
  const TopologySummary nvl72 = summarize(preset("gb200-nvl72", 1152));
  CHECK(nvl72.domains == 16);
  CHECK(nvl72.nvswitch_chips == 16 * 18);
  CHECK(nvl72.scale_up_gbytes_per_s_per_gpu == Approx(900));
  CHECK(nvl72.nics == 1152);
  const TopologySummary a100 = summarize(preset("dgx-a100-80gb", 8));
  CHECK(a100.scale_up_gbytes_per_s_per_gpu == Approx(300));
  CHECK_FALSE(a100.nvls);
  const TopologySummary h800 = summarize(preset("dgx-h800", 64));
  CHECK(h800.scale_up_gbytes_per_s_per_gpu == Approx(200));
  CHECK(h800.planes == 8);
}

TEST_CASE("partial servers and partial NVL72 racks are allowed", "[topology]") {
  CHECK(preset("dgx-h200", 5).gpu_count() == 5);
  const Topology t = preset("gb200-nvl72", 32);
  CHECK(t.gpu_count() == 32);
  CHECK(t.domain_count() == 1);
}

TEST_CASE("a two-tier NVLink domain (NVL576 what-if) is built from racks", "[topology][clos]") {
  ClusterSpec spec = find_system("gb200-nvl72")->make(576);
  spec.nvlink->gpus_per_domain = 576;
  spec.nvlink->gpus_per_board = 72;
  spec.nvlink->chip_ports = 144;
  spec.nvlink->l1_up_ports = 72;
  spec.nvlink->l2_chip_ports = 64;
  const TopologySummary s = summarize(build_cluster(spec));
  CHECK(s.domains == 1);
  REQUIRE(s.nvswitch_per_tier.size() == 2);
  CHECK(s.nvswitch_per_tier[0] == 8 * 18);
  // Plane j of 8 racks: 8 x 72 uplinks over 64-port chips -> 9 chips per plane.
  CHECK(s.nvswitch_per_tier[1] == 18 * 9);
}

TEST_CASE("impossible specifications name the field at fault", "[topology][bad-input]") {
  auto field_of = [](const ClusterSpec& spec) {
    try {
      build_cluster(spec);
    } catch (const SpecError& e) {
      return e.field();
    }
    return std::string("no error");
  };
  ClusterSpec s = find_system("dgx-h100")->make(12);
  CHECK(field_of(s) == "gpus");
  s = find_system("dgx-h100")->make(64);
  s.scale_out->radix = 16;
  CHECK(field_of(s) == "scale_out/radix");
  s = find_system("dgx-h100")->make(64);
  s.scale_out->nic_bandwidth = {};
  CHECK(field_of(s) == "scale_out/nic_bandwidth");
  s = find_system("dgx-h100")->make(64);
  s.nvlink->chip_ports = 16;
  CHECK(field_of(s) == "nvlink/chip_ports");
  s = find_system("dgx-h100")->make(64);
  s.nvlink->lanes_per_chip = {5, 5, 5};
  CHECK(field_of(s) == "nvlink/lanes_per_chip");
  s = find_system("dgx-h100")->make(64);
  s.scale_out.reset();
  CHECK(field_of(s) == "scale_out");
  s = find_system("dgx-h100")->make(64);
  s.scale_out->upper_tiers = {ClosTier{4, 0, {}, {}}};
  CHECK(field_of(s) == "scale_out/tiers/1/ports");
  s = find_system("dgx-h100")->make(0);
  CHECK(field_of(s) == "gpus");
}
