#include "models/moe_alltoall.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace fabricsim::models {

std::optional<MoeKernel> parse_moe_kernel(std::string_view text) {
  if (text == "deepep_normal") return MoeKernel::deepep_normal;
  if (text == "deepep_low_latency") return MoeKernel::deepep_low_latency;
  return std::nullopt;
}

double expected_distinct_bins(double bins, double per_bin, int picks) {
  if (bins <= 1) return bins > 0 ? 1.0 : 0.0;
  const double total = bins * per_bin;
  const double others = total - per_bin;
  // P(a given bin gets none of the picks) = C(others, k) / C(total, k).
  double miss = 1.0;
  for (int i = 0; i < picks; ++i) {
    miss *= std::max(0.0, others - i) / (total - i);
  }
  return bins * (1.0 - miss);
}

double moe_token_bytes(const MoeAlltoallRequest& r) {
  if (!r.fp8) return 2.0 * r.hidden;
  const double bytes = r.hidden * (1.0 + 4.0 / 128.0);
  return r.kernel == MoeKernel::deepep_low_latency ? bytes + 16.0 : bytes;
}

namespace {

void check(const MoeAlltoallRequest& r, const MoeLinkRates& rates) {
  if (r.ranks < 1 || r.ranks_per_node < 1 || r.ranks % r.ranks_per_node != 0) {
    throw std::invalid_argument("MoE all-to-all: ranks must be a multiple of ranks per node");
  }
  if (r.top_k < 1 || r.hidden < 1 || r.experts < r.top_k || r.tokens_per_rank < 0) {
    throw std::invalid_argument("MoE all-to-all: needs top_k >= 1, hidden >= 1, experts >= top_k");
  }
  if (r.ranks_per_node > 1 && !(rates.nvlink_GBps > 0)) {
    throw std::invalid_argument("MoE all-to-all: DeepEP needs NVLink between a node's GPUs");
  }
  if (r.ranks > r.ranks_per_node && !(rates.rdma_GBps > 0)) {
    throw std::invalid_argument("MoE all-to-all: DeepEP needs RDMA NICs between nodes");
  }
}

/// What the normal-kernel path of `r` runs at: its share of each link's line rate, whether SM
/// forwarding binds across nodes and a fixed cost per call. DeepEP's kernels forward with their
/// SMs; Hybrid-EP's move by TMA, at rates that differ by direction and payload, and its torch API
/// adds a fixed cost per call.
struct PathRates {
  double nvlink = 0, rdma = 0;
  bool sm_forwarding = true;
  double call_s = 0;
};

PathRates path_rates(const MoeAlltoallRequest& r, const MoeKernelProfile& p, bool across_nodes) {
  if (r.kernel != MoeKernel::hybridep)
    return {p.normal_nvlink_efficiency, p.normal_rdma_efficiency, true, 0};
  const double nvlink = r.fp8                                  ? p.hybrid_fp8_nvlink_efficiency
                        : r.direction == MoeDirection::combine ? p.hybrid_combine_nvlink_efficiency
                                                               : p.hybrid_nvlink_efficiency;
  return {nvlink, r.fp8 ? p.hybrid_fp8_rdma_efficiency : p.hybrid_rdma_efficiency, false,
          1e-6 * (across_nodes ? p.hybrid_call_us_rdma : p.hybrid_call_us_nvlink)};
}

MoeAlltoallResult normal(const MoeAlltoallRequest& r, const MoeLinkRates& rates,
                         const MoeKernelProfile& p) {
  MoeAlltoallResult out;
  const double ranks = r.ranks;
  const double local = r.ranks_per_node;
  const double nodes = ranks / local;
  const double per_rank = r.experts / ranks;
  const double payload = moe_token_bytes(r);
  // Node-limited routing: experts are drawn from `groups` of the nodes (one group per node).
  const double groups = std::min(nodes, static_cast<double>(r.topk_groups.value_or(r.ranks)));
  out.distinct_nodes = expected_distinct_bins(groups, r.experts / nodes, r.top_k);
  out.distinct_ranks = expected_distinct_bins(groups * local, per_rank, r.top_k);
  out.nvlink_bytes = r.tokens_per_rank * out.distinct_ranks * payload;
  out.rdma_bytes = nodes > 1 ? r.tokens_per_rank * out.distinct_nodes * payload : 0;
  // By symmetry a GPU's own share of what it receives needs no NVLink (1/local), and a node's
  // own share of what it sends needs no NIC (1/nodes).
  const double nvlink_wire = out.nvlink_bytes * (local - 1) / local;
  const double rdma_wire = out.rdma_bytes * (nodes - 1) / nodes;
  double t = 0;
  out.binding = "nvlink";
  auto bind = [&](double seconds, const char* what) {
    if (seconds > t) {
      t = seconds;
      out.binding = what;
    }
  };
  const PathRates path = path_rates(r, p, nodes > 1);
  if (nvlink_wire > 0) bind(nvlink_wire / (rates.nvlink_GBps * 1e9 * path.nvlink), "nvlink");
  if (nodes > 1) {
    bind(rdma_wire / (rates.rdma_GBps * 1e9 * path.rdma), "rdma");
    if (path.sm_forwarding)
      bind(out.nvlink_bytes / (r.sms * p.normal_forward_GBps_per_sm * 1e9), "sm-forwarding");
  }
  t += path.call_s;
  out.seconds = t;
  out.reported_link = nodes > 1 ? "rdma" : "nvlink";
  const double reported = nodes > 1 ? out.rdma_bytes : out.nvlink_bytes;
  out.bottleneck_bw_GBps = t > 0 ? reported / t * 1e-9 : 0;
  return out;
}

MoeAlltoallResult low_latency(const MoeAlltoallRequest& r, const MoeLinkRates& rates,
                              const MoeKernelProfile& p) {
  MoeAlltoallResult out;
  const double ranks = r.ranks;
  const double local = r.ranks_per_node;
  const double messages = r.tokens_per_rank * r.top_k;  // one per (token, expert)
  const double bytes = messages * moe_token_bytes(r);
  out.distinct_ranks = expected_distinct_bins(ranks, r.experts / ranks, r.top_k);
  out.distinct_nodes = expected_distinct_bins(ranks / local, r.experts / ranks * local, r.top_k);
  // Experts are uniform over ranks: (local - 1)/ranks of the messages go to NVLink peers,
  // (ranks - local)/ranks over RDMA, 1/ranks stay on the GPU. DeepEP counts all of them.
  const double nvlink_wire = bytes * (local - 1) / ranks;
  const double rdma_wire = bytes * (ranks - local) / ranks;
  out.nvlink_bytes = bytes * local / ranks;
  out.rdma_bytes = bytes;
  const double nvlink_s =
      nvlink_wire > 0 ? nvlink_wire / (rates.nvlink_GBps * 1e9 * p.ll_nvlink_efficiency) : 0;
  const double rdma_s =
      rdma_wire > 0 ? rdma_wire / (rates.rdma_GBps * 1e9 * p.ll_rdma_efficiency) : 0;
  const double base_us =
      (r.direction == MoeDirection::dispatch ? p.ll_dispatch_base_us : p.ll_combine_base_us) +
      p.ll_per_doubling_us * std::log2(ranks);
  out.binding = rdma_s >= nvlink_s ? "rdma" : "nvlink";
  if (base_us * 1e-6 > std::max(rdma_s, nvlink_s)) out.binding = "latency";
  out.seconds = base_us * 1e-6 + std::max(rdma_s, nvlink_s);
  out.reported_link = "rdma";
  out.bottleneck_bw_GBps = out.seconds > 0 ? bytes / out.seconds * 1e-9 : 0;
  return out;
}

}  // namespace

MoeLinkRates moe_link_rates(const System& system, const GroupLayout& group) {
  const topologies::Topology& t = *system.topology;
  MoeLinkRates rates;
  if (t.info().gpus_per_domain > 1) {
    rates.nvlink_GBps = system.gpu.nvlink_links * system.gpu.nvlink_link_gb_per_s;
  }
  if (group.domains.empty()) return rates;
  const auto& domain = group.domains.front();
  std::set<topologies::NodeId> nics;
  for (topologies::GpuRank r : domain) {
    if (t.gpu_nic(r) != topologies::kNoNode) nics.insert(t.gpu_nic(r));
  }
  double total = 0;
  for (topologies::NodeId nic : nics) {
    for (topologies::LinkId l : t.out_links(nic)) {
      if (t.link(l).kind == topologies::LinkKind::network)
        total += t.link(l).bandwidth.gbytes_per_s();
    }
  }
  rates.rdma_GBps = total / static_cast<double>(domain.size());
  return rates;
}

MoeKernelProfile moe_kernel_profile(const CollectiveProfile& collective) {
  MoeKernelProfile p;
  p.ll_nvlink_efficiency = collective.nvlink_efficiency;
  p.ll_rdma_efficiency = collective.network_efficiency;
  return p;
}

MoeAlltoallResult moe_alltoall(const MoeAlltoallRequest& request, const MoeLinkRates& rates,
                               const MoeKernelProfile& profile) {
  check(request, rates);
  return request.kernel == MoeKernel::deepep_low_latency ? low_latency(request, rates, profile)
                                                         : normal(request, rates, profile);
}

}  // namespace fabricsim::models
