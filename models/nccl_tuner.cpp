#include "models/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fabricsim::models {
namespace {

using topologies::GpuGeneration;

// NCCL's algorithm order in its tables: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree,
// PAT. Protocols: LL, LL128, Simple. Source: nccl-tuning-model.json "constants".
enum NcclAlgo { kTree, kRing, kCollNetDirect, kCollNetChain, kNvls, kNvlsTree, kPat, kNumAlgos };
using Triple = std::array<double, 3>;
using Table = std::array<Triple, kNumAlgos>;

constexpr Table kBaseLat{{{6.8, 14.0, 8.4},
                          {6.6, 14.0, 8.4},
                          {0, 0, 0},
                          {0, 0, 0},
                          {0, 0, 0},
                          {0, 0, 0},
                          {8.0, 8.0, 8.0}}};
constexpr Table kHwLatNvlink{{{0.6, 1.25, 4.0},
                              {0.6, 1.9, 3.4},
                              {0, 0, 3.7},
                              {0, 0, 2.8},
                              {0, 0, 25},
                              {0, 0, 25},
                              {0, 0, 4.0}}};
constexpr Table kHwLatPci{{{1.0, 1.9, 4.0},
                           {1.0, 2.5, 5.7},
                           {0, 0, 3.7},
                           {0, 0, 2.8},
                           {0, 0, 0},
                           {0, 0, 0},
                           {0, 0, 4.0}}};
constexpr Table kHwLatNet{{{5.0, 8.5, 14},
                           {2.7, 4.0, 14.0},
                           {0, 0, 31},
                           {0, 0, 30},
                           {0, 0, 18},
                           {0, 0, 20.9},
                           {0, 0, 14}}};
constexpr std::array<Triple, 4> kLlMaxBw{
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
constexpr std::array<double, 4> kPerChMaxRingLL128Bw{20.0, 20.0, 36.7, 40.0};
constexpr std::array<Triple, 4> kPerChMaxTreeLL128Bw{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr std::array<Triple, 4> kPerChMaxTreeBw{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr std::array<Triple, 4> kPerChMaxNvlsTreeBw{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};
constexpr std::array<double, 4> kNvlsEfficiency{0.0, 0.0, 0.85, 0.74};
constexpr std::array<std::array<double, 24>, 3> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5,
     0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6,
     0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0},
    {0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5,
     0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9},
}};

int nccl_index(Algorithm a) {
  switch (a) {
    case Algorithm::tree:
      return kTree;
    case Algorithm::ring:
      return kRing;
    case Algorithm::collnet_direct:
      return kCollNetDirect;
    case Algorithm::collnet_chain:
      return kCollNetChain;
    case Algorithm::nvls:
      return kNvls;
    case Algorithm::nvls_tree:
      return kNvlsTree;
    case Algorithm::pat:
      return kPat;
    default:
      return -1;
  }
}

int log2i(double x) {
  if (x < 1) return -1;
  return static_cast<int>(std::floor(std::log2(x)));
}

int node_column(int nodes) {
  return nodes <= 2 ? nodes - 1 : 2;
}

bool enabled(CollectiveOp op, Algorithm a, Protocol p, const NcclCommShape& s) {
  const bool simple = p == Protocol::simple;
  if (nccl_index(a) < 0) return false;
  if (op == CollectiveOp::broadcast || op == CollectiveOp::reduce) return a == Algorithm::ring;
  if (op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter) {
    if (a != Algorithm::ring && a != Algorithm::pat && a != Algorithm::nvls &&
        a != Algorithm::collnet_direct) {
      return false;
    }
  } else if (op == CollectiveOp::all_reduce) {
    if (a == Algorithm::pat) return false;
  } else {
    return false;  // alltoall and sendrecv are point-to-point in NCCL
  }
  if (p == Protocol::ll128 && !s.nvlink) return false;
  switch (a) {
    case Algorithm::nvls:
      if (!simple || !s.nvls || s.channels < 2) return false;
      if (s.nodes > 1 && !s.collnet) return false;
      return true;
    case Algorithm::nvls_tree:
      return simple && s.nvls && s.nodes > 1 && s.channels >= 2;
    case Algorithm::collnet_direct:
      return simple && s.collnet && s.nvlink && s.nodes > 1;
    case Algorithm::collnet_chain:
      return simple && s.collnet && s.nodes > 1;
    case Algorithm::pat:
      return simple && s.ppn() == 1 && s.nodes > 1;
    case Algorithm::tree:
      return op == CollectiveOp::all_reduce && s.nodes > 1;
    default:
      return true;
  }
}

double bus_bandwidth(CollectiveOp op, Algorithm a, Protocol p, const NcclCommShape& s) {
  const int gen = static_cast<int>(s.generation);
  const int col = node_column(s.nodes);
  const double nch = s.channels;
  const bool collnet = a == Algorithm::collnet_direct || a == Algorithm::collnet_chain;
  const double bw = (s.nodes <= 2 || collnet) ? s.bw_intra : s.bw_inter;
  double bus = nch * bw;
  if (a == Algorithm::nvls || a == Algorithm::nvls_tree) {
    const double ppn = s.ppn();
    double intra = s.bw_intra * kNvlsEfficiency[gen] * (nch - 1) / nch *
                   (op == CollectiveOp::all_reduce ? 2.0 : (ppn - 1) / ppn);
    const double nvls_inter = s.bw_nvls_inter > 0 ? s.bw_nvls_inter : s.bw_inter;
    double inter = nvls_inter * (a == Algorithm::nvls_tree && s.nodes <= 2 ? 2.0 : 1.0);
    double b = std::min(intra, inter);
    if (a == Algorithm::nvls_tree) b = std::min(b, kPerChMaxNvlsTreeBw[gen][col]);
    bus = nch * b;
  }
  const int ll_row = s.nodes == 1 ? gen : (s.cpu == topologies::HostCpu::x86_amd ? 1 : 0);
  const double ll_max = kLlMaxBw[ll_row][std::min(s.nodes, 3) - 1];
  if (a == Algorithm::ring) {
    if (p == Protocol::ll) bus = std::min(ll_max, 0.5 * bus);
    if (p == Protocol::ll128) bus = std::min(0.92 * bus, nch * kPerChMaxRingLL128Bw[gen]);
  }
  if (a == Algorithm::tree && op == CollectiveOp::all_reduce) {
    bus = std::min(0.92 * bus, nch * kPerChMaxTreeBw[gen][col]);
    if (p == Protocol::ll) bus = std::min(bus / 3.8, ll_max);
    if (p == Protocol::ll128) {
      bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                     nch * kPerChMaxTreeLL128Bw[gen][col]);
    }
  }
  if (a == Algorithm::pat) bus *= 0.75;
  if (a == Algorithm::collnet_direct) {
    const double ppn = s.ppn();
    if (op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter) {
      bus = ppn * std::min(s.bw_intra, 0.9 * s.bw_inter);
    } else {
      double factor = ppn / nch;
      factor -= (factor - 1) / 2;
      bus /= factor;
      if (s.generation >= GpuGeneration::hopper) bus *= 0.85;
    }
  }
  return bus;
}

double algorithm_bandwidth(CollectiveOp op, Algorithm a, double bus, int ranks) {
  const bool gather_like = op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter;
  if (gather_like && a != Algorithm::ring) return bus;
  const double n = ranks;
  const double steps = op == CollectiveOp::all_reduce ? 2 * (n - 1) : gather_like ? n - 1 : n;
  if (a == Algorithm::ring || a == Algorithm::nvls || a == Algorithm::nvls_tree) {
    return bus * n / steps;
  }
  return bus * 0.5;
}

}  // namespace

double NcclTuner::nvlink_link_bandwidth(GpuGeneration g) {
  // topo.h: SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 (GB/s per link).
  switch (g) {
    case GpuGeneration::volta:
    case GpuGeneration::ampere:
      return 20.0;
    case GpuGeneration::hopper:
      return 20.6;
    case GpuGeneration::blackwell:
      return 40.1;
  }
  return 20.0;
}

int NcclTuner::nvls_channels(const NcclCommShape& s) {
  if (s.generation == GpuGeneration::blackwell) return s.nodes > 1 ? 32 : 24;
  return 16;
}

double NcclTuner::nvls_loop_bytes(Algorithm a, double bytes, const NcclCommShape& s) {
  const double concurrent = static_cast<double>(nvls_channels(s)) * s.ppn();
  double chunk = 128 * 1024;
  if (a == Algorithm::nvls_tree) {
    // Tree max chunk: 64 KiB from 4 nodes on (nvls.cc fallback), else the NVLS chunk.
    chunk = s.nodes >= 4 ? 64 * 1024 : chunk;
    if (bytes < 16 * concurrent * chunk && chunk > 131072) chunk = 131072;
    if (bytes < 4 * concurrent * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 1 * concurrent * chunk && chunk > 32768) chunk = 32768;
  } else {
    if (bytes < 64 * concurrent * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 8 * concurrent * chunk && chunk > 32768) chunk = 32768;
    if (bytes < 2 * concurrent * chunk && chunk > 16384) chunk = 16384;
  }
  return concurrent * chunk;
}

double NcclTuner::busbw_cap(CollectiveOp op, Algorithm a, Protocol p, const NcclCommShape& s) {
  const int gen = static_cast<int>(s.generation);
  const int col = node_column(std::max(1, s.nodes));
  const double nch = s.channels;
  const int ll_row = s.nodes == 1 ? gen : (s.cpu == topologies::HostCpu::x86_amd ? 1 : 0);
  const double ll_max = kLlMaxBw[ll_row][std::min(std::max(1, s.nodes), 3) - 1];
  double cap = std::numeric_limits<double>::infinity();
  if (a == Algorithm::ring) {
    if (p == Protocol::ll) cap = ll_max;
    if (p == Protocol::ll128) cap = nch * kPerChMaxRingLL128Bw[gen];
  }
  if (a == Algorithm::tree && op == CollectiveOp::all_reduce) {
    cap = nch * kPerChMaxTreeBw[gen][col];
    if (p == Protocol::ll) cap = std::min(cap, ll_max);
    if (p == Protocol::ll128) cap = std::min(cap, nch * kPerChMaxTreeLL128Bw[gen][col]);
  }
  if (a == Algorithm::nvls_tree && kPerChMaxNvlsTreeBw[gen][col] > 0) {
    cap = nch * kPerChMaxNvlsTreeBw[gen][col];
  }
  return cap;
}

double NcclTuner::latency_us(CollectiveOp op, double bytes, Algorithm a, Protocol p,
                             const NcclCommShape& s) {
  const int ai = nccl_index(a);
  if (ai < 0) return 0;
  const int pi = static_cast<int>(p);
  const int n = s.ranks;
  const int nodes = s.nodes;
  const int ppn = s.ppn();
  const int steps = op == CollectiveOp::all_reduce ? 2 * (n - 1)
                    : op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter ? n - 1
                                                                                           : n;
  const Table& intra_table = s.nvlink ? kHwLatNvlink : kHwLatPci;
  double lat = kBaseLat[ai][pi];
  double intra = intra_table[ai][pi];
  const double inter = ppn == 1 ? kHwLatNet[kTree][pi] : kHwLatNet[ai][pi];
  switch (a) {
    case Algorithm::ring:
      if (op == CollectiveOp::broadcast || op == CollectiveOp::reduce) {
        // A pipelined chain: (ppn - 1) hops inside each node and one between nodes.
        const double hw = p == Protocol::simple ? intra_table[kTree][pi] : intra;
        lat += nodes * (ppn - 1) * hw + (nodes - 1) * inter;
      } else {
        if (nodes > 1) {
          const double overhead = (s.cpu == topologies::HostCpu::x86_amd ? 2.0 : 1.0) *
                                  (p == Protocol::simple ? 3.0 : 1.0);
          intra = std::max(intra, overhead);
        }
        const int inter_steps =
            nodes == 1 ? 0 : (op == CollectiveOp::all_reduce ? 2 * (nodes - 1) : nodes - 1);
        lat += (steps - inter_steps) * intra + inter_steps * inter;
        if (op == CollectiveOp::all_reduce && p == Protocol::simple && nodes > 1 &&
            bytes / (static_cast<double>(s.channels) * n) >= 64) {
          lat *= s.generation >= GpuGeneration::ampere ? 1.4 : 1.9;
        }
      }
      break;
    case Algorithm::tree:
      lat += 2 * ((ppn - 1) * intra + log2i(nodes) * inter);
      break;
    case Algorithm::collnet_direct:
      lat += 2 * (std::min(1, ppn - 1) * intra + (ppn - 1) * 0.4) + inter;
      break;
    case Algorithm::collnet_chain:
      lat += 2 * (ppn - 1) * intra + inter;
      break;
    case Algorithm::nvls:
      lat = intra + (nodes > 1 ? inter : 0);
      break;
    case Algorithm::nvls_tree:
      lat += intra + 2 * log2i(nodes) * inter;
      break;
    case Algorithm::pat:
      lat += log2i(nodes) * inter / 3.5 + n * 2.8;
      break;
    default:
      break;
  }
  return lat;
}

std::optional<NcclEstimate> NcclTuner::estimate(CollectiveOp op, double bytes, Algorithm a,
                                                Protocol p, const NcclCommShape& s) {
  if (s.ranks <= 1) {
    if (a != Algorithm::ring || p != Protocol::simple) return std::nullopt;
    return NcclEstimate{a, p, 0.0, std::numeric_limits<double>::infinity(), 0.0};
  }
  if (!enabled(op, a, p, s)) return std::nullopt;
  const double bus = bus_bandwidth(op, a, p, s);
  if (!(bus > 0)) return std::nullopt;
  double algbw = algorithm_bandwidth(op, a, bus, s.ranks);
  const int bucket = log2i(bytes / 64.0);
  const int gen = static_cast<int>(s.generation);
  (void)gen;
  if (op == CollectiveOp::all_reduce && bucket >= 0) {
    const bool tree = a == Algorithm::tree && bucket < 23;
    const bool nvls_tree_bw = a == Algorithm::nvls_tree && bucket < 24 &&
                              s.generation == GpuGeneration::blackwell &&
                              s.cpu != topologies::HostCpu::arm;
    if (tree || nvls_tree_bw) algbw *= kTreeCorrection[static_cast<size_t>(p)][bucket];
  }
  const double lat = latency_us(op, bytes, a, p, s);
  return NcclEstimate{a, p, lat, algbw, lat + bytes / (1000.0 * algbw)};
}

std::optional<NcclEstimate> NcclTuner::choose(CollectiveOp op, double bytes, const NcclCommShape& s,
                                              std::optional<Algorithm> algo,
                                              std::optional<Protocol> proto) {
  std::optional<NcclEstimate> best;
  for (Algorithm a :
       {Algorithm::tree, Algorithm::ring, Algorithm::collnet_direct, Algorithm::collnet_chain,
        Algorithm::nvls, Algorithm::nvls_tree, Algorithm::pat}) {
    if (algo && *algo != a) continue;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      if (proto && *proto != p) continue;
      const auto e = estimate(op, bytes, a, p, s);
      if (e && (!best || e->time_us < best->time_us)) best = e;
    }
  }
  return best;
}

}  // namespace fabricsim::models
