#include "models/job_placement.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>
#include <stdexcept>

#include "topologies/cluster_spec.hpp"
#include "topologies/system_presets.hpp"
#include "topologies/topology_json.hpp"

using namespace fabricsim;
using namespace fabricsim::models;
using topologies::GpuRank;

namespace {

topologies::Topology cluster(const char* system, int gpus) {
  return topologies::build_cluster(topologies::find_system(system)->make(gpus));
}

std::vector<GpuRank> iota_ranks(uint32_t first, uint32_t count) {
  std::vector<GpuRank> out;
  for (uint32_t r = first; r < first + count; ++r)
    out.push_back(GpuRank(r));
  return out;
}

std::vector<int> leaf_groups_touched(const PlacementResult& r) {
  std::vector<int> out;
  for (const JobAllocation& j : r.jobs)
    out.push_back(j.leaf_groups);
  return out;
}

// Every placed job: its GPU count, GPUs no other job holds, each block `block_gpus` consecutive
// ranks of one domain starting at an aligned position; the counters add up.
void check_invariants(const topologies::Topology& t, std::span<const JobRequest> mix,
                      const PlacementResult& r) {
  REQUIRE(r.jobs.size() == mix.size());
  std::set<GpuRank> taken;
  int allocated = 0, capacity = 0, fragmentation = 0;
  for (size_t i = 0; i < mix.size(); ++i) {
    const JobAllocation& job = r.jobs[i];
    CHECK(job.name == mix[i].name);
    if (!job.placed()) {
      CHECK_FALSE(job.reason.empty());
      (job.reason.find("form only") != std::string::npos ? fragmentation : capacity) += 1;
      continue;
    }
    CHECK(job.reason.empty());
    REQUIRE(static_cast<int>(job.gpus.size()) == mix[i].gpus);
    allocated += mix[i].gpus;
    const int b = mix[i].block_gpus;
    std::set<int> servers, domains;
    for (size_t k = 0; k < job.gpus.size(); k += static_cast<size_t>(b)) {
      const int d = t.domain_of_rank(job.gpus[k]);
      const std::vector<GpuRank>& ranks = t.domain_ranks(d);
      const auto at = std::find(ranks.begin(), ranks.end(), job.gpus[k]) - ranks.begin();
      CHECK(at % b == 0);  // aligned
      for (int m = 0; m < b; ++m) {
        REQUIRE(static_cast<size_t>(at + m) < ranks.size());
        CHECK(job.gpus[k + static_cast<size_t>(m)] == ranks[static_cast<size_t>(at + m)]);
      }
    }
    for (GpuRank g : job.gpus) {
      CHECK(taken.insert(g).second);
      servers.insert(t.node(t.gpu(g)).server);
      domains.insert(t.domain_of_rank(g));
    }
    CHECK(job.servers == static_cast<int>(servers.size()));
    CHECK(job.domains == static_cast<int>(domains.size()));
    CHECK(job.leaf_groups >= 1);
    CHECK(job.leaf_groups <= std::min(r.leaf_groups, job.servers));
  }
  CHECK(r.total_gpus == static_cast<int>(t.gpu_count()));
  CHECK(r.allocated_gpus == allocated);
  CHECK(r.idle_gpus == r.total_gpus - allocated);
  CHECK(r.unplaced_for_capacity == capacity);
  CHECK(r.unplaced_for_fragmentation == fragmentation);
  CHECK(r.stranded_gpus >= 0);
  CHECK(r.stranded_gpus <= r.idle_gpus);
  int whole = 0;
  for (size_t d = 0; d < t.domain_count(); ++d) {
    const std::vector<GpuRank>& ranks = t.domain_ranks(static_cast<int>(d));
    whole += std::none_of(ranks.begin(), ranks.end(), [&](GpuRank g) { return taken.count(g); });
  }
  CHECK(r.free_domains == whole);
}

constexpr std::array kPolicies{PlacementPolicy::packed, PlacementPolicy::spread,
                               PlacementPolicy::topology_aware};

}  // namespace

TEST_CASE("placement: policy names round-trip", "[job_placement]") {
  CHECK(placement_policy_names() == "packed, spread, topology-aware");
  for (PlacementPolicy p : kPolicies) {
    PlacementPolicy back = PlacementPolicy::packed;
    REQUIRE(parse_placement_policy(to_string(p), back));
    CHECK(back == p);
  }
  PlacementPolicy out = PlacementPolicy::spread;
  CHECK_FALSE(parse_placement_policy("best", out));
  CHECK(out == PlacementPolicy::spread);
}

TEST_CASE("placement: packed fills servers in topology order", "[job_placement]") {
  const topologies::Topology t = cluster("dgx-h100", 16);
  const std::vector<JobRequest> mix{{"a", 8, 8}, {"b", 8, 8}};
  const PlacementResult r = place_jobs(t, mix, PlacementPolicy::packed);
  check_invariants(t, mix, r);
  CHECK(r.jobs[0].gpus == iota_ranks(0, 8));
  CHECK(r.jobs[1].gpus == iota_ranks(8, 8));
  for (const JobAllocation& j : r.jobs) {
    CHECK(j.servers == 1);
    CHECK(j.domains == 1);
    CHECK(j.leaf_groups == 1);
  }
  CHECK(r.idle_gpus == 0);
  CHECK(r.stranded_gpus == 0);
}

TEST_CASE("placement: one job on an empty cluster runs where a single-job step puts it",
          "[job_placement]") {
  // Packed and topology-aware (ties to the lowest unit at every level) both give job rank r GPU
  // r, so a one-job mix reproduces the single-job simulation's default ranks.
  const topologies::Topology t = cluster("dgx-h100", 4096);
  for (const JobRequest& job : {JobRequest{"tp4", 4, 4}, JobRequest{"su", 256, 8},
                                JobRequest{"pods", 2048, 8}, JobRequest{"all", 4096, 2}}) {
    for (PlacementPolicy p : {PlacementPolicy::packed, PlacementPolicy::topology_aware}) {
      INFO(job.name << " " << to_string(p));
      const PlacementResult r = place_jobs(t, std::span(&job, 1), p);
      CHECK(r.jobs[0].gpus == iota_ranks(0, static_cast<uint32_t>(job.gpus)));
    }
  }
}

TEST_CASE("placement: blocks are aligned inside a domain", "[job_placement]") {
  // After a TP2 job on GPUs 0-1, a TP4 block may not start at GPU 2 (it would not be aligned):
  // it takes 4-7, and the next TP2 job fills the hole at 2-3.
  const topologies::Topology t = cluster("dgx-h100", 8);
  const std::vector<JobRequest> mix{{"a", 2, 2}, {"b", 4, 4}, {"c", 2, 2}};
  const PlacementResult r = place_jobs(t, mix, PlacementPolicy::packed);
  check_invariants(t, mix, r);
  CHECK(r.jobs[0].gpus == iota_ranks(0, 2));
  CHECK(r.jobs[1].gpus == iota_ranks(4, 4));
  CHECK(r.jobs[2].gpus == iota_ranks(2, 2));
}

TEST_CASE("placement: invariants hold for every policy on every kind of system",
          "[job_placement]") {
  topologies::ClusterSpec rack = topologies::find_system("gb200-nvl72")->make(72);
  rack.scale_out.reset();  // one NVL72 rack without a scale-out fabric: one leaf group
  const std::vector<topologies::Topology> systems = [&] {
    std::vector<topologies::Topology> out;
    out.push_back(cluster("dgx-h100", 512));
    out.push_back(cluster("dgx-h800", 128));  // 8 independent planes
    out.push_back(cluster("meta-h100-roce", 256));
    out.push_back(cluster("generic-h100-pcie-eth", 64));
    out.push_back(cluster("gb200-nvl72", 288));
    out.push_back(cluster("gb200-nvl72", 100));  // a partial last rack of 28 GPUs
    out.push_back(topologies::build_cluster(rack));
    return out;
  }();
  for (const topologies::Topology& t : systems) {
    const int domain = t.info().gpus_per_domain;
    const std::vector<JobRequest> mix{{"big", 48, domain >= 8 ? 8 : 4},
                                      {"tp2", 6, 2},
                                      {"solo", 1, 1},
                                      {"mid", 24, 4},
                                      {"huge", 1 << 20, 1},
                                      {"tp4", 12, 4}};
    for (PlacementPolicy p : kPolicies) {
      INFO(t.info().system << " " << t.gpu_count() << " GPUs, " << to_string(p));
      const PlacementResult r = place_jobs(t, mix, p);
      check_invariants(t, mix, r);
      CHECK_FALSE(r.jobs[4].placed());                              // more GPUs than the cluster
      CHECK(place_jobs(t, mix, p).jobs[3].gpus == r.jobs[3].gpus);  // deterministic
      CHECK(placement_to_json(r) == placement_to_json(place_jobs(t, mix, p)));
    }
  }
  CHECK(place_jobs(topologies::build_cluster(rack), {}, PlacementPolicy::packed).leaf_groups == 1);
}

TEST_CASE("placement: leaf groups touched by packed, spread and topology-aware",
          "[job_placement]") {
  // 512 DGX H100 = 64 servers; a SuperPOD scalable unit is 32 servers under its 8 rail leaves, so
  // the cluster has 2 leaf groups of 256 GPUs.
  const topologies::Topology t = cluster("dgx-h100", 512);
  {
    const std::vector<JobRequest> mix{{"a", 64, 8}, {"b", 64, 8}, {"c", 64, 8}, {"d", 64, 8}};
    const PlacementResult packed = place_jobs(t, mix, PlacementPolicy::packed);
    const PlacementResult spread = place_jobs(t, mix, PlacementPolicy::spread);
    const PlacementResult aware = place_jobs(t, mix, PlacementPolicy::topology_aware);
    CHECK(packed.leaf_groups == 2);
    for (const PlacementResult* r : {&packed, &spread, &aware})
      check_invariants(t, mix, *r);
    CHECK(leaf_groups_touched(packed) == std::vector<int>{1, 1, 1, 1});
    CHECK(leaf_groups_touched(spread) == std::vector<int>{2, 2, 2, 2});
    CHECK(leaf_groups_touched(aware) == std::vector<int>{1, 1, 1, 1});
    // Spread alternates the leaf groups block by block: servers 0, 32, 1, 33, ...
    const std::vector<GpuRank>& a = spread.jobs[0].gpus;
    CHECK(std::vector<GpuRank>(a.begin(), a.begin() + 8) == iota_ranks(0, 8));
    CHECK(std::vector<GpuRank>(a.begin() + 8, a.begin() + 16) == iota_ranks(256, 8));
    CHECK(std::vector<GpuRank>(a.begin() + 16, a.begin() + 24) == iota_ranks(8, 8));
    CHECK(spread.jobs[0].servers == 8);
  }
  {
    // Packed lets the 160-GPU job straddle both groups; topology-aware places it first, and best
    // fit then puts a 96-GPU job into the 96 GPUs left beside it, so the rest fit in group 1.
    const std::vector<JobRequest> mix{
        {"a", 96, 8}, {"b", 80, 8}, {"c", 160, 8}, {"d", 96, 8}, {"e", 80, 8}};
    const PlacementResult packed = place_jobs(t, mix, PlacementPolicy::packed);
    const PlacementResult spread = place_jobs(t, mix, PlacementPolicy::spread);
    const PlacementResult aware = place_jobs(t, mix, PlacementPolicy::topology_aware);
    for (const PlacementResult* r : {&packed, &spread, &aware}) {
      check_invariants(t, mix, *r);
      CHECK(r->idle_gpus == 0);
    }
    CHECK(leaf_groups_touched(packed) == std::vector<int>{1, 1, 2, 1, 1});
    CHECK(leaf_groups_touched(spread) == std::vector<int>{2, 2, 2, 2, 2});
    CHECK(leaf_groups_touched(aware) == std::vector<int>{1, 1, 1, 1, 1});
    CHECK(aware.jobs[2].gpus == iota_ranks(0, 160));
    CHECK(aware.jobs[0].gpus == iota_ranks(160, 96));  // best fit: the 12 servers left in group 0
    CHECK(aware.jobs[3].gpus == iota_ranks(256, 96));
  }
}

TEST_CASE("placement: topology-aware keeps a job inside one Clos pod", "[job_placement]") {
  // 4096 DGX H100: 16 scalable units (leaf groups of 256 GPUs) under a 3-tier fabric whose
  // level-2 pods hold 32 leaves = 4 units = 1024 GPUs.
  const topologies::Topology t = cluster("dgx-h100", 4096);
  const std::vector<JobRequest> mix{{"a", 1024, 8}, {"b", 768, 8}, {"c", 768, 8}, {"d", 256, 8}};
  const PlacementResult aware = place_jobs(t, mix, PlacementPolicy::topology_aware);
  const PlacementResult packed = place_jobs(t, mix, PlacementPolicy::packed);
  check_invariants(t, mix, aware);
  check_invariants(t, mix, packed);
  CHECK(aware.leaf_groups == 16);
  CHECK(aware.jobs[0].gpus == iota_ranks(0, 1024));
  CHECK(aware.jobs[1].gpus == iota_ranks(1024, 768));
  // Pod 1 has one unit left; c takes pod 2 rather than straddling pods 1 and 2 as packed does.
  CHECK(aware.jobs[2].gpus == iota_ranks(2048, 768));
  CHECK(packed.jobs[2].gpus == iota_ranks(1792, 768));
  // d fits one leaf group exactly: best fit takes the unit left in pod 1.
  CHECK(aware.jobs[3].gpus == iota_ranks(1792, 256));

  // The locality comes from the graph alone: the same graph read back from its JSON (as a custom
  // topology would be) places every job identically.
  const sim::JsonDocument doc =
      sim::parse_json_text(topologies::topology_to_json(t).dump(), "t.json");
  const topologies::Topology loaded = topologies::topology_from_json(doc.root());
  for (PlacementPolicy p : kPolicies) {
    CHECK(placement_to_json(place_jobs(loaded, mix, p)) ==
          placement_to_json(place_jobs(t, mix, p)));
  }
}

TEST_CASE("placement: best fit fills a partly used domain before a free one", "[job_placement]") {
  const topologies::Topology t = cluster("dgx-h100", 16);
  // Equal sizes keep the request order. a takes GPUs 0-3; b (TP2) fits both server 0 (2 free
  // TP2 blocks) and server 1 (4): best fit takes server 0, so c and d share server 1 (a worst
  // fit would put b on 8-11 and c on 4-7).
  const std::vector<JobRequest> mix{{"a", 4, 4}, {"b", 4, 2}, {"c", 4, 4}, {"d", 4, 4}};
  const PlacementResult r = place_jobs(t, mix, PlacementPolicy::topology_aware);
  check_invariants(t, mix, r);
  CHECK(r.jobs[0].gpus == iota_ranks(0, 4));
  CHECK(r.jobs[1].gpus == iota_ranks(4, 4));
  CHECK(r.jobs[2].gpus == iota_ranks(8, 4));
  CHECK(r.jobs[3].gpus == iota_ranks(12, 4));
  for (const JobAllocation& j : r.jobs)
    CHECK(j.servers == 1);
}

TEST_CASE("placement: spread fragments what packed keeps whole", "[job_placement]") {
  const topologies::Topology t = cluster("dgx-h100", 16);
  const std::vector<JobRequest> mix{{"a", 4, 4}, {"b", 4, 4}, {"c", 8, 8}};
  const PlacementResult packed = place_jobs(t, mix, PlacementPolicy::packed);
  const PlacementResult spread = place_jobs(t, mix, PlacementPolicy::spread);
  check_invariants(t, mix, packed);
  check_invariants(t, mix, spread);
  CHECK(packed.jobs[2].gpus == iota_ranks(8, 8));
  CHECK(packed.unplaced_for_fragmentation == 0);
  CHECK(spread.jobs[0].gpus == iota_ranks(0, 4));
  CHECK(spread.jobs[1].gpus == iota_ranks(8, 4));  // the server with the most free GPUs
  CHECK_FALSE(spread.jobs[2].placed());
  CHECK(spread.unplaced_for_fragmentation == 1);
  CHECK(spread.unplaced_for_capacity == 0);
  CHECK(spread.jobs[2].reason ==
        "Job \"c\" needs 8 GPUs as 1 aligned block of 8 GPUs inside one scale-up domain; 8 GPUs "
        "are free but they form only 0 aligned blocks.");
  // The 8 idle GPUs (4-7, 12-15) are two free TP4 blocks: they could serve a TP4 job, so none is
  // stranded by the definition (smallest block of the mix: 4).
  CHECK(spread.idle_gpus == 8);
  CHECK(spread.stranded_gpus == 0);
  // Without the TP8 job, packed leaves server 1 whole and spread none.
  const std::span<const JobRequest> small(mix.data(), 2);
  CHECK(place_jobs(t, small, PlacementPolicy::packed).free_domains == 1);
  CHECK(place_jobs(t, small, PlacementPolicy::spread).free_domains == 0);
}

TEST_CASE("placement: NVL72 racks as whole blocks", "[job_placement]") {
  // 2 racks of 18 trays; leaf groups of 32 trays: group 0 = trays 0-31, group 1 = trays 32-35,
  // so rack 1 straddles both groups.
  const topologies::Topology t = cluster("gb200-nvl72", 144);
  const std::vector<JobRequest> mix{{"small", 36, 4}, {"rack", 72, 72}};
  const PlacementResult packed = place_jobs(t, mix, PlacementPolicy::packed);
  const PlacementResult spread = place_jobs(t, mix, PlacementPolicy::spread);
  const PlacementResult aware = place_jobs(t, mix, PlacementPolicy::topology_aware);
  for (const PlacementResult* r : {&packed, &spread, &aware})
    check_invariants(t, mix, *r);
  CHECK(packed.leaf_groups == 2);
  CHECK(packed.jobs[0].gpus == iota_ranks(0, 36));
  CHECK(packed.jobs[1].gpus == iota_ranks(72, 72));
  CHECK(packed.jobs[1].leaf_groups == 2);
  // Spread alternates the small job's trays over both racks (5 in rack 0, 4 in rack 1): no rack
  // is left whole.
  CHECK(spread.jobs[0].domains == 2);
  CHECK(spread.jobs[0].servers == 9);
  CHECK_FALSE(spread.jobs[1].placed());
  CHECK(spread.unplaced_for_fragmentation == 1);
  // Topology-aware places the rack job first (rack 0, all in group 0), the small one in rack 1.
  CHECK(aware.jobs[1].gpus == iota_ranks(0, 72));
  CHECK(aware.jobs[1].leaf_groups == 1);
  CHECK(aware.jobs[0].gpus == iota_ranks(72, 36));
  CHECK(aware.jobs[0].domains == 1);
}

TEST_CASE("placement: stranded GPUs when block sizes do not nest", "[job_placement]") {
  // One NVL72 rack: a TP8 job takes GPUs 0-63; of the 8 left, the aligned TP6 blocks are
  // 60-65 (partly used) and 66-71 (free), so 64-65 can serve no job of the mix: 2 stranded.
  const topologies::Topology t = cluster("gb200-nvl72", 72);
  {
    const std::vector<JobRequest> mix{{"tp8", 64, 8}, {"tp6", 6, 6}};
    const PlacementResult r = place_jobs(t, mix, PlacementPolicy::packed);
    check_invariants(t, mix, r);
    CHECK(r.jobs[1].gpus == iota_ranks(66, 6));
    CHECK(r.idle_gpus == 2);
    CHECK(r.stranded_gpus == 2);
  }
  {
    const std::vector<JobRequest> mix{{"tp8", 64, 8}, {"tp6", 12, 6}};
    const PlacementResult r = place_jobs(t, mix, PlacementPolicy::packed);
    check_invariants(t, mix, r);
    CHECK(r.unplaced_for_capacity == 1);
    CHECK(r.jobs[1].reason ==
          "Job \"tp6\" needs 12 GPUs but only 8 of the cluster's 72 GPUs are free.");
    CHECK(r.idle_gpus == 8);
    CHECK(r.stranded_gpus == 2);
  }
}

TEST_CASE("placement: a job larger than the cluster is unplaced for capacity", "[job_placement]") {
  const topologies::Topology t = cluster("dgx-h100", 16);
  const std::vector<JobRequest> mix{{"huge", 32, 8}, {"fits", 16, 8}};
  for (PlacementPolicy p : kPolicies) {
    const PlacementResult r = place_jobs(t, mix, p);
    check_invariants(t, mix, r);
    CHECK(r.jobs[0].reason == "Job \"huge\" needs 32 GPUs but the cluster has only 16.");
    CHECK(r.jobs[0].gpus.empty());
    CHECK(r.jobs[1].gpus == iota_ranks(0, 16));
    CHECK(r.unplaced_for_capacity == 1);
    CHECK(r.unplaced_for_fragmentation == 0);
    const nlohmann::json j = placement_to_json(r);
    CHECK(j["jobs"][0]["placed"] == false);
    CHECK(j["jobs"][0]["reason"] == r.jobs[0].reason);
    CHECK(j["jobs"][1]["gpu_ranks"].size() == 16);
    CHECK_FALSE(j["jobs"][1].contains("reason"));
    CHECK(j["allocated_gpus"] == 16);
    CHECK(j["policy"] == std::string(to_string(p)));
  }
}

TEST_CASE("placement: bad requests throw naming the job", "[job_placement]") {
  const topologies::Topology t = cluster("dgx-h100", 16);
  const auto message = [&](JobRequest job) {
    try {
      const std::vector<JobRequest> mix{{"ok", 8, 8}, std::move(job)};
      place_jobs(t, mix, PlacementPolicy::packed);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  CHECK(message({"j", 0, 1}) == "job \"j\": gpus must be positive (got 0)");
  CHECK(message({"j", 8, 0}) == "job \"j\": block_gpus must be positive (got 0)");
  CHECK(message({"j", 12, 8}) == "job \"j\": block_gpus 8 does not divide its 12 GPUs");
  CHECK(message({"j", 32, 16}) ==
        "job \"j\": block_gpus 16 is larger than a scale-up domain of this cluster (8 GPUs)");
  CHECK(message({"j", 6, 3}) ==
        "job \"j\": block_gpus 3 does not divide the scale-up domain size 8, so its blocks cannot "
        "be aligned inside a domain");
  CHECK(message({"j", 8, 4}) == "no exception");
  CHECK_NOTHROW(check_job_request(cluster("gb200-nvl72", 144), {"rack", 144, 72}));
}
