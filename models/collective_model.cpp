#include "models/collective_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "models/collective_algorithms.hpp"
#include "models/collective_runner.hpp"
#include "sim/analytical_network.hpp"
#include "sim/flow_network.hpp"

namespace fabricsim::models {

std::string_view to_string(Backend b) {
  return b == Backend::flow ? "flow" : "analytical";
}

NcclCommShape comm_shape(const System& system, const CollectiveProfile& profile,
                         const GroupLayout& group, bool collnet) {
  const topologies::Topology& t = *system.topology;
  NcclCommShape s;
  s.ranks = group.size();
  s.nodes = group.domain_count();
  s.generation = system.gpu.generation;
  s.cpu = system.cpu;
  s.channels = profile.channels;
  s.nvlink = system.gpu.nvlink_links > 0 && t.info().gpus_per_domain > 1;
  // Per-GPU intra-node bandwidth as NCCL's search models it.
  double intra_total = 0;
  if (s.nvlink) {
    intra_total = system.gpu.nvlink_links * NcclTuner::nvlink_link_bandwidth(system.gpu.generation);
  } else {
    const topologies::NodeId g0 = t.gpu(group.ranks.front());
    for (topologies::LinkId l : t.out_links(g0)) {
      if (t.link(l).kind == topologies::LinkKind::pcie) {
        intra_total = t.link(l).bandwidth.gbytes_per_s() * profile.pcie_efficiency;
      }
    }
  }
  // Inter-node: the NICs of the GPUs a domain contributes (NCCL uses one channel pair per NIC).
  double inter_total = 0;
  if (!group.domains.empty()) {
    std::set<topologies::NodeId> nics;
    for (topologies::GpuRank r : group.domains.front()) {
      if (t.gpu_nic(r) != topologies::kNoNode) nics.insert(t.gpu_nic(r));
    }
    for (topologies::NodeId nic : nics) {
      for (topologies::LinkId l : t.out_links(nic)) {
        if (t.link(l).kind == topologies::LinkKind::network) {
          inter_total += t.link(l).bandwidth.gbytes_per_s() * profile.network_efficiency;
        }
      }
    }
  }
  s.bw_intra = intra_total / s.channels;
  // A channel crosses between nodes through one NIC, at no more than the fastest inter-node
  // speed NCCL's search tries (nccl-tuning-model.json graph_search_speeds: 48 GB/s before SM100,
  // 96 from SM100): many NICs per node (an NVL72 rack's 72) do not make one channel faster.
  double nic_max = 0;
  if (!group.domains.empty()) {
    for (topologies::GpuRank r : group.domains.front()) {
      const topologies::NodeId nic = t.gpu_nic(r);
      if (nic == topologies::kNoNode) continue;
      for (topologies::LinkId l : t.out_links(nic)) {
        if (t.link(l).kind == topologies::LinkKind::network) {
          nic_max =
              std::max(nic_max, t.link(l).bandwidth.gbytes_per_s() * profile.network_efficiency);
        }
      }
    }
  }
  const double top_speed = system.gpu.generation >= topologies::GpuGeneration::blackwell ? 96 : 48;
  s.bw_inter = s.nodes > 1 ? std::min({inter_total / s.channels, nic_max, top_speed}) : s.bw_intra;
  s.bw_nvls_inter = s.nodes > 1 ? std::min(nic_max, top_speed) : s.bw_intra;
  // NCCL enables NVLS and CollNet only when every node contributes the same number of GPUs.
  s.nvls = t.info().nvls && s.nvlink && group.ppn > 1 && group.uniform;
  s.collnet = collnet && t.info().collnet && group.uniform;
  return s;
}

namespace {

/// Bandwidth inefficiencies NCCL's model charges beyond the protocol's wire overhead.
double algorithm_wire_factor(Algorithm a, Protocol p, const NcclCommShape& s,
                             const CollectiveProfile& profile, double correction) {
  double f = profile.wire_factor(p);
  switch (a) {
    case Algorithm::tree:
      f = 1.0 / 0.92;
      if (p == Protocol::ll) f *= 3.8;
      if (p == Protocol::ll128) f *= s.nodes == 1 ? 9.0 / 7.0 : 128.0 / 120.0;
      break;
    case Algorithm::pat:
      f /= 0.75;
      break;
    case Algorithm::collnet_direct:
      if (s.generation >= topologies::GpuGeneration::hopper) f /= 0.85;
      break;
    default:
      break;
  }
  return f / correction;
}

}  // namespace

PlannedCollective plan_collective(const System& system, const CollectiveProfile& profile,
                                  topologies::Router& router, const CollectiveRequest& request) {
  if (request.ranks.empty()) throw AlgorithmUnavailable("a collective needs at least one rank");
  const GroupLayout group = make_group_layout(*system.topology, request.ranks);
  const NcclCommShape shape = comm_shape(system, profile, group, request.collnet);
  auto schedule = std::make_shared<Schedule>();
  schedule->op = request.op;
  schedule->ranks = group.size();
  schedule->domains = group.domain_count();
  schedule->size_bytes = request.size_bytes;
  PlannedCollective plan;
  const bool p2p = request.op == CollectiveOp::alltoall || request.op == CollectiveOp::sendrecv;
  if (p2p) {
    // Point-to-point in NCCL: no tuner. PXN (rail-aligned) across domains of a rail fabric.
    Algorithm a = request.algorithm.value_or(
        group.domain_count() > 1 && system.topology->info().rails > 0 ? Algorithm::pxn
                                                                      : Algorithm::direct);
    if (a != Algorithm::direct && a != Algorithm::pxn) {
      throw AlgorithmUnavailable(fmt::format("{} runs with the direct or pxn algorithm, not {}",
                                             to_string(request.op), to_string(a)));
    }
    const Protocol p = request.protocol.value_or(Protocol::simple);
    schedule->algorithm = a;
    schedule->protocol = p;
    const sim::Time lat =
        group.domain_count() > 1 ? profile.p2p_latency_inter : profile.p2p_latency_intra;
    schedule->latency = profile.launch_overhead + lat * profile.latency_scale;
    schedule->wire_factor = profile.wire_factor(p);
    schedule->phases = build_phases(request.op, a, request.size_bytes, group, router);
    plan.nccl = NcclEstimate{a, p, lat.us(), 0, 0};
    plan.schedule = std::move(schedule);
    return plan;
  }
  const auto chosen =
      NcclTuner::choose(request.op, request.size_bytes, shape, request.algorithm, request.protocol);
  if (!chosen) {
    throw AlgorithmUnavailable(fmt::format(
        "no {}{}{} algorithm is available for {} over {} GPUs in {} domain(s) of this system",
        request.algorithm ? std::string(to_string(*request.algorithm)) : "",
        request.protocol ? std::string("/") + std::string(to_string(*request.protocol)) : "",
        request.algorithm || request.protocol ? "" : "NCCL", to_string(request.op), group.size(),
        group.domain_count()));
  }
  schedule->algorithm = chosen->algorithm;
  schedule->protocol = chosen->protocol;
  schedule->latency =
      profile.launch_overhead + sim::Time::from_us(chosen->latency_us * profile.latency_scale);
  // The tree-correction factor of NCCL's model (mid-size inefficiency of tree algorithms).
  const auto uncorrected =
      NcclTuner::estimate(request.op, 1 << 30, chosen->algorithm, chosen->protocol, shape);
  double correction = 1.0;
  if (uncorrected && uncorrected->algbw_GBps > 0 && chosen->algbw_GBps > 0 &&
      (chosen->algorithm == Algorithm::tree || chosen->algorithm == Algorithm::nvls_tree)) {
    correction = std::min(1.0, chosen->algbw_GBps / uncorrected->algbw_GBps);
  }
  schedule->wire_factor =
      algorithm_wire_factor(chosen->algorithm, chosen->protocol, shape, profile, correction);
  if (chosen->algorithm == Algorithm::nvls || chosen->algorithm == Algorithm::nvls_tree) {
    schedule->switch_wire_factor = shape.channels / (shape.channels - 1.0) / profile.nvls_factor;
    // NVLS pipelines loops of channels x heads x chunk bytes; filling the pipeline costs one loop
    // at the algorithm's bandwidth inside a domain, and one more per level of the inter-domain
    // tree a loop climbs (NVLS tree), which is what keeps mid-size NVLS below its asymptote.
    if (chosen->algbw_GBps > 0) {
      const double loop = NcclTuner::nvls_loop_bytes(chosen->algorithm, request.size_bytes, shape);
      const double depth = chosen->algorithm == Algorithm::nvls_tree
                               ? 2 * std::max(1.0, std::ceil(std::log2(shape.nodes)))
                               : 1.0;
      schedule->latency += sim::Time::from_s(depth * std::min(loop, request.size_bytes) /
                                             (chosen->algbw_GBps * 1e9));
    }
  }
  schedule->max_busbw_GBps =
      NcclTuner::busbw_cap(request.op, chosen->algorithm, chosen->protocol, shape);
  schedule->phases = build_phases(request.op, chosen->algorithm, request.size_bytes, group, router);
  plan.nccl = *chosen;
  plan.schedule = std::move(schedule);
  return plan;
}

sim::IdVector<sim::LinkId, sim::LinkCapacity> link_capacities(const System& system,
                                                              const CollectiveProfile& profile) {
  return system.topology->link_capacities([&](topologies::LinkKind kind) {
    switch (kind) {
      case topologies::LinkKind::nvlink:
        return profile.nvlink_efficiency;
      case topologies::LinkKind::pcie:
        return profile.pcie_efficiency;
      case topologies::LinkKind::network:
        return profile.network_efficiency;
    }
    return 1.0;
  });
}

CollectiveResult simulate_collective(const System& system, const CollectiveProfile& profile,
                                     topologies::Router& router, const CollectiveRequest& request,
                                     Backend backend) {
  const PlannedCollective plan = plan_collective(system, profile, router, request);
  CollectiveResult result;
  result.algorithm = plan.schedule->algorithm;
  result.protocol = plan.schedule->protocol;
  sim::Time finished;
  if (backend == Backend::flow) {
    sim::Simulation simulation;
    sim::FlowNetwork network(simulation, link_capacities(system, profile));
    CollectiveRunner runner(simulation, network, router);
    runner.run(plan.schedule, [&] { finished = simulation.now(); });
    simulation.run();
    result.flows = network.stats().flows_started;
    result.events = simulation.events_executed();
  } else {
    // The schedule alone on uncontended links, as an analytical training step times it.
    finished = CollectiveRunner::isolated_time(
        *plan.schedule, router,
        sim::AnalyticalNetwork::usable_capacities(link_capacities(system, profile)));
    for (const Phase& phase : plan.schedule->phases)
      result.flows += phase.transfers.size();
  }
  result.time = finished;
  if (finished > sim::Time::zero()) {
    result.algbw_GBps = request.size_bytes / finished.s() * 1e-9;
    result.busbw_GBps = result.algbw_GBps * busbw_factor(request.op, plan.schedule->ranks);
  }
  return result;
}

}  // namespace fabricsim::models
