#include "models/collective_model.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "models/collective_algorithms.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

CollectiveResult run(const System& system, CollectiveOp op, double bytes, int ranks,
                     std::optional<Algorithm> algo, std::optional<Protocol> proto,
                     Backend backend = Backend::flow) {
  const CollectiveProfile profile = default_collective_profile(system.gpu);
  topologies::Router router(*system.topology, topologies::RoutingStrategy::ecmp);
  CollectiveRequest request;
  request.op = op;
  request.size_bytes = bytes;
  request.ranks = first_ranks(ranks);
  request.algorithm = algo;
  request.protocol = proto;
  return simulate_collective(system, profile, router, request, backend);
}

double latency_us(const System& system, CollectiveOp op, double bytes, int ranks, Algorithm a,
                  Protocol p) {
  const CollectiveProfile profile = default_collective_profile(system.gpu);
  const GroupLayout group = make_group_layout(*system.topology, first_ranks(ranks));
  return NcclTuner::latency_us(op, bytes, a, p, comm_shape(system, profile, group, false));
}

/// The schedule of `op` by `a` over `ranks`, as both backends receive it.
std::vector<Phase> phases_of(const System& system, CollectiveOp op, Algorithm a, double size,
                             const std::vector<topologies::GpuRank>& ranks) {
  topologies::Router router(*system.topology, topologies::RoutingStrategy::ecmp);
  return build_phases(op, a, size, make_group_layout(*system.topology, ranks), router);
}

}  // namespace

TEST_CASE("ring all-reduce in one NVSwitch domain has the closed form", "[collective]") {
  // Each GPU sends 2(n-1)/n x S to its successor over its own NVLinks, alone on them:
  // t = latency + 2(n-1)/n x S / (450 GB/s x 20.6/25); busbw = 450 x 0.824 = 370.8 GB/s.
  const System h100 = make_system("dgx-h100", 8);
  const double size = 1 << 30;
  const auto r = run(h100, CollectiveOp::all_reduce, size, 8, Algorithm::ring, Protocol::simple);
  const double data_s = 2 * 7.0 / 8 * size / (450e9 * 20.6 / 25);
  const double lat_us =
      latency_us(h100, CollectiveOp::all_reduce, size, 8, Algorithm::ring, Protocol::simple);
  CHECK(r.time.us() == Approx(lat_us + data_s * 1e6).epsilon(1e-9));
  CHECK(r.algorithm == Algorithm::ring);
}

TEST_CASE("NVLS all-reduce moves S(1+1/n) each way per GPU", "[collective]") {
  // busbw = 2(n-1)/n x S / t with t = S (1 + 1/n) / (B_link x eff_nvls): 2(n-1)/(n+1) x B,
  // plus one pipeline loop (16 channels x 8 heads x 128 KiB) at NCCL's modelled NVLS algbw.
  const System h100 = make_system("dgx-h100", 8);
  const double size = 8.0 * (1 << 30);
  const auto r = run(h100, CollectiveOp::all_reduce, size, 8, Algorithm::nvls, Protocol::simple);
  const double b_nvls = 450e9 * (20.6 / 25) * 0.85 * (15.0 / 16);
  const double data_s = size * (1 + 1.0 / 8) / b_nvls;
  const double lat_us =
      latency_us(h100, CollectiveOp::all_reduce, size, 8, Algorithm::nvls, Protocol::simple);
  const CollectiveProfile profile = default_collective_profile(h100.gpu);
  const NcclCommShape shape =
      comm_shape(h100, profile, make_group_layout(*h100.topology, first_ranks(8)), false);
  const auto nccl =
      NcclTuner::estimate(CollectiveOp::all_reduce, size, Algorithm::nvls, Protocol::simple, shape);
  REQUIRE(nccl);
  const double loop = 16.0 * 8 * 128 * 1024;
  CHECK(NcclTuner::nvls_loop_bytes(Algorithm::nvls, size, shape) == loop);
  const double fill_s = loop / (nccl->algbw_GBps * 1e9);
  CHECK(r.time.us() == Approx(lat_us + (data_s + fill_s) * 1e6).epsilon(1e-9));
}

TEST_CASE("each schedule sends and receives NCCL's bytes per GPU", "[collective]") {
  // Per GPU and direction, what each algorithm moves for a buffer of S over n GPUs: ring and PAT
  // (n-1)/n x S per pass; NVLS uploads its shard and downloads the rest for all-gather, the
  // reverse for reduce-scatter, S(1+1/n) both ways for all-reduce; all-to-all S/n to each peer.
  struct Volume {
    double sent = 0, received = 0;
  };
  const auto volumes = [](const System& system, CollectiveOp op, Algorithm a, double size,
                          const std::vector<topologies::GpuRank>& ranks) {
    std::map<topologies::GpuRank, Volume> v;
    for (const Phase& phase : phases_of(system, op, a, size, ranks)) {
      for (const Transfer& t : phase.transfers) {
        if (t.kind == Transfer::Kind::route) continue;  // in-network reduction: checked below
        const double bytes = t.bytes * t.multiplicity;
        if (t.kind != Transfer::Kind::from_switch) v[t.src].sent += bytes;
        if (t.kind != Transfer::Kind::to_switch) v[t.dst].received += bytes;
      }
    }
    REQUIRE(v.size() == ranks.size());
    return v;
  };
  const double S = 1 << 30;
  const auto check = [&](const System& system, CollectiveOp op, Algorithm a,
                         const std::vector<topologies::GpuRank>& ranks, double sent,
                         double received) {
    INFO(to_string(op) << " " << to_string(a) << " over " << ranks.size());
    for (const auto& [rank, v] : volumes(system, op, a, S, ranks)) {
      CHECK(v.sent == Approx(sent * S).epsilon(1e-12));
      CHECK(v.received == Approx(received * S).epsilon(1e-12));
    }
  };
  const System node = make_system("dgx-h100", 8);
  const auto eight = first_ranks(8);
  const double n = 8;
  check(node, CollectiveOp::all_reduce, Algorithm::ring, eight, 2 * (n - 1) / n, 2 * (n - 1) / n);
  check(node, CollectiveOp::all_gather, Algorithm::ring, eight, (n - 1) / n, (n - 1) / n);
  check(node, CollectiveOp::all_gather, Algorithm::nvls, eight, 1 / n, (n - 1) / n);
  check(node, CollectiveOp::reduce_scatter, Algorithm::nvls, eight, (n - 1) / n, 1 / n);
  check(node, CollectiveOp::all_reduce, Algorithm::nvls, eight, 1 + 1 / n, 1 + 1 / n);
  check(node, CollectiveOp::alltoall, Algorithm::direct, eight, (n - 1) / n, (n - 1) / n);
  // PAT over one GPU per node (its only use in NCCL), 2^k ranks and not.
  const System nodes = make_system("dgx-h100", 96);
  for (int count : {8, 12}) {
    std::vector<topologies::GpuRank> one_per_node;
    for (int i = 0; i < count; ++i)
      one_per_node.push_back(topologies::GpuRank(static_cast<uint32_t>(8 * i)));
    const double r = count;
    for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter})
      check(nodes, op, Algorithm::pat, one_per_node, (r - 1) / r, (r - 1) / r);
    // As NCCL's PatAGAlgorithm: the chunk at offset s goes over the distance of s's lowest set
    // bit, so half the chunks go to the next rank, a quarter two ranks on, ... (8 ranks: 4, 2,
    // 1 chunks at distances 1, 2, 4; 12 ranks: 6, 3, 1, 1 at 1, 2, 4, 8).
    const std::vector<double> chunks =
        count == 8 ? std::vector<double>{4, 2, 1} : std::vector<double>{6, 3, 1, 1};
    const std::vector<Phase> gather =
        phases_of(nodes, CollectiveOp::all_gather, Algorithm::pat, S, one_per_node);
    REQUIRE(gather.size() == chunks.size());
    for (size_t k = 0; k < gather.size(); ++k) {
      const Transfer& first = gather[k].transfers.front();
      CHECK(first.src == one_per_node[0]);
      CHECK(first.dst == one_per_node[size_t{1} << k]);
      CHECK(first.bytes == Approx(chunks[k] * S / r).epsilon(1e-12));
    }
  }
  // IB SHARP (CollNet) over two nodes: each of a node's 8 lanes sends its 1/8 shard of the
  // node's partial sum up the switch tree and receives the reduced shard down it.
  const System two = make_system("dgx-h100", 16);
  for (Algorithm a : {Algorithm::collnet_direct, Algorithm::collnet_chain}) {
    INFO(to_string(a));
    int routes = 0;
    for (const Phase& phase : phases_of(two, CollectiveOp::all_reduce, a, S, first_ranks(16))) {
      for (const Transfer& t : phase.transfers) {
        if (t.kind != Transfer::Kind::route) continue;
        ++routes;
        CHECK(t.bytes == Approx(S / 8).epsilon(1e-12));
      }
    }
    CHECK(routes >= 2 * 8 * 2);  // up and down, 8 lanes, at least one link each way per node
  }
}

TEST_CASE("NVLS chunks shrink with the message like NCCL's enqueue", "[collective]") {
  const System h100 = make_system("dgx-h100", 8);
  const NcclCommShape shape = comm_shape(h100, default_collective_profile(h100.gpu),
                                         make_group_layout(*h100.topology, first_ranks(8)), false);
  const double ops = 16.0 * 8;  // channels x heads
  CHECK(NcclTuner::nvls_loop_bytes(Algorithm::nvls, 2e9, shape) == ops * 131072);
  CHECK(NcclTuner::nvls_loop_bytes(Algorithm::nvls, 256e6, shape) == ops * 65536);
  CHECK(NcclTuner::nvls_loop_bytes(Algorithm::nvls, 32e6, shape) == ops * 32768);
  CHECK(NcclTuner::nvls_loop_bytes(Algorithm::nvls, 1e6, shape) == ops * 16384);
  const System nvl72 = make_system("gb200-nvl72", 72);
  CHECK(NcclTuner::nvls_channels(comm_shape(nvl72, default_collective_profile(nvl72.gpu),
                                            make_group_layout(*nvl72.topology, first_ranks(72)),
                                            false)) == 24);
}

TEST_CASE("flow and analytical backends agree where nothing contends",
          "[collective][equivalence]") {
  // Inside one domain every GPU's links carry one ring flow each way: no sharing.
  for (const char* system : {"dgx-h100", "dgx-a100-80gb", "gb200-nvl72", "dgx-b200"}) {
    const System s = make_system(system, 8);
    for (double size : {1024.0, 1e6, 1e9}) {
      for (auto op : {CollectiveOp::all_reduce, CollectiveOp::all_gather,
                      CollectiveOp::reduce_scatter, CollectiveOp::broadcast}) {
        INFO(system << " " << to_string(op) << " " << size);
        const auto flow = run(s, op, size, 8, Algorithm::ring, std::nullopt, Backend::flow);
        const auto analytical =
            run(s, op, size, 8, Algorithm::ring, std::nullopt, Backend::analytical);
        CHECK(flow.time.ps() == analytical.time.ps());
      }
    }
  }
  // Across domains with one GPU each (TP=8-style DP groups) every GPU has its own NIC and rail.
  const System cluster = make_system("dgx-h100", 256);
  const GroupLayout dp = make_group_layout(
      *cluster.topology, sim::ids_of<topologies::GpuRank>({0, 8, 16, 24, 32, 40, 48, 56}));
  CHECK(dp.ppn == 1);
  const CollectiveProfile profile = default_collective_profile(cluster.gpu);
  topologies::Router router(*cluster.topology, topologies::RoutingStrategy::ecmp);
  CollectiveRequest request;
  request.op = CollectiveOp::all_reduce;
  request.size_bytes = 1e9;
  request.ranks = dp.ranks;
  request.algorithm = Algorithm::ring;
  CHECK(simulate_collective(cluster, profile, router, request, Backend::flow).time ==
        simulate_collective(cluster, profile, router, request, Backend::analytical).time);
}

TEST_CASE("an analytical all-to-all counts the pairs that share each link", "[collective]") {
  // Every pair of an all-to-all crosses its source's NIC (PXN: via a peer's) at the same time:
  // the phase lasts their bytes over the NIC, as the flow backend finds by sharing it. Timing
  // each pair alone would make it 7x faster on two DGX H100.
  for (int gpus : {16, 64}) {
    const System s = make_system("dgx-h100", gpus);
    for (double size : {1e6, 64e6}) {
      INFO(gpus << " GPUs, " << size << " B");
      const auto flow =
          run(s, CollectiveOp::alltoall, size, gpus, std::nullopt, std::nullopt, Backend::flow);
      const auto analytical = run(s, CollectiveOp::alltoall, size, gpus, std::nullopt, std::nullopt,
                                  Backend::analytical);
      CHECK(analytical.time.s() == Approx(flow.time.s()).epsilon(1e-9));
    }
  }
}

TEST_CASE("multi-node rings are limited by the NICs", "[collective]") {
  // 4 DGX H100: each of the 8 NICs carries one lane; busbw ~ 8 x 400 Gb/s x 0.96.
  const System s = make_system("dgx-h100", 32);
  const auto r = run(s, CollectiveOp::all_reduce, 8e9, 32, Algorithm::ring, Protocol::simple);
  CHECK(r.busbw_GBps == Approx(8 * 50 * 0.96).epsilon(0.03));
  // A100 HDR: 8 x 25 GB/s x 0.96.
  const System a = make_system("dgx-a100-80gb", 32);
  const auto ra = run(a, CollectiveOp::all_reduce, 8e9, 32, Algorithm::ring, Protocol::simple);
  CHECK(ra.busbw_GBps == Approx(8 * 25 * 0.96).epsilon(0.03));
}

TEST_CASE("collectives scale with O(n) flows", "[collective][scale]") {
  const System s = make_system("dgx-h100", 1024);
  const auto r = run(s, CollectiveOp::all_reduce, 1e9, 1024, Algorithm::ring, Protocol::simple);
  // One merged intra-domain flow per GPU pair and one crossing per GPU.
  CHECK(r.flows <= 3 * 1024);
  // At 128 nodes the ring's 2(n-1) step latencies matter: t = latency + V / (8 NICs' rate).
  const double lat_us =
      latency_us(s, CollectiveOp::all_reduce, 1e9, 1024, Algorithm::ring, Protocol::simple);
  const double volume = 2.0 * 1023 / 1024 * 1e9;
  CHECK(r.time.us() == Approx(lat_us + volume / (8 * 50e9 * 0.96) * 1e6).epsilon(0.03));
}

TEST_CASE("busbw never beats the hardware", "[collective][invariant]") {
  for (const char* system : {"dgx-h100", "dgx-a100-80gb", "gb200-nvl72", "generic-h100-pcie-eth"}) {
    const System s = make_system(system, 16);
    for (auto op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::alltoall,
                    CollectiveOp::reduce_scatter, CollectiveOp::sendrecv}) {
      for (double size : {8.0, 65536.0, 1e8, 4e9}) {
        INFO(system << " " << to_string(op) << " " << size);
        const auto r = run(s, op, size, 16, std::nullopt, std::nullopt);
        CHECK(r.time > sim::Time::zero());
        // Per-GPU injection (NVLink or PCIe, plus NIC) bounds the bus bandwidth of every
        // algorithm except in-switch reduction, which at most doubles it.
        const double per_gpu = s.gpu.nvlink_links * s.gpu.nvlink_link_gb_per_s + 64 + 100;
        CHECK(r.busbw_GBps <= 2 * per_gpu);
      }
    }
  }
}

TEST_CASE("forced algorithms that cannot run are reported", "[collective][bad-input]") {
  const System a100 = make_system("dgx-a100-80gb", 8);
  CHECK_THROWS_AS(run(a100, CollectiveOp::all_reduce, 1e6, 8, Algorithm::nvls, std::nullopt),
                  AlgorithmUnavailable);
  const System h100 = make_system("dgx-h100", 8);
  CHECK_THROWS_WITH(run(h100, CollectiveOp::all_reduce, 1e6, 8, Algorithm::tree, std::nullopt),
                    Catch::Contains("no tree algorithm is available"));
  CHECK_THROWS_AS(run(h100, CollectiveOp::alltoall, 1e6, 8, Algorithm::ring, std::nullopt),
                  AlgorithmUnavailable);
}
