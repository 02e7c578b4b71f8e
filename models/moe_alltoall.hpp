#pragma once
// MoE token dispatch and combine as DeepEP V1 runs them (deepseek-ai/DeepEP, docs/legacy.md and
// the kernels in csrc/kernels/legacy). A pure function of the EP group's shape, the routing and the
// per-GPU link rates, so the training step and `validate` share it.
//
// Normal kernels (training, prefill): a token goes once over RDMA to every node that holds one of
// its experts (to the GPU of the same local index there), which forwards it over NVLink to the
// GPUs of that node that hold its experts; within one node the tokens go straight over NVLink.
// Combine is the same traffic reversed (with BF16 payloads). Node-limited routing (DeepSeek-V3's
// top-k groups, one group per node) bounds the nodes a token reaches.
// Low-latency kernels (decode): every (token, expert) pair is its own message, over NVLink to GPUs
// of the same node and RDMA (IBGDA) to the others; the time is a fixed cost that grows with the
// rank count plus the slower of the two paths.
// Hybrid-EP (NVIDIA's kernels in DeepEP, docs/README_Hybrid-EP.md and Hybrid-EP_Implementation.md,
// Megatron-Core's flex dispatcher backend `hybridep`): the normal kernels' traffic (a token once
// to each rank, and once over RDMA to each other node, that holds one of its experts), moved by
// TMA copies from a few SMs, so neither forwarding nor the SM count binds at its published rates;
// each call through its torch API adds a fixed cost (metadata, allocation, synchronisation).

#include <optional>
#include <string>
#include <string_view>

#include "models/collective_profile.hpp"
#include "models/group_layout.hpp"
#include "models/system.hpp"

namespace fabricsim::models {

enum class MoeKernel { deepep_normal, deepep_low_latency, hybridep };
enum class MoeDirection { dispatch, combine };

std::optional<MoeKernel> parse_moe_kernel(std::string_view text);

/// DeepEP's kernel behaviour beyond the link rates, each from public DeepEP data (see
/// docs/models.md "MoE dispatch and combine").
struct MoeKernelProfile {
  /// Normal kernels: NVLink bytes actually crossing a GPU's links per second, as a fraction of
  /// the NVLink line rate. DeepEP #16: H20 (18 x 25 GB/s per direction) intranode EP8 reaches
  /// 337.35 GB/s counting local-rank traffic, i.e. 337.35 x 7/8 / 450 = 0.656.
  double normal_nvlink_efficiency = 0.656;
  /// Normal kernels: RDMA bytes on the wire per second over the NIC line rate. DeepEP README
  /// (V2 table, SM90 + CX7, EP 8x2): 90 GB/s with local traffic counted = 45 of 50 GB/s.
  double normal_rdma_efficiency = 0.90;
  /// Normal internode kernels forward RDMA-received tokens to their NVLink peers with warps of the
  /// kernel's SMs: logical NVLink bytes per second per SM. DeepEP #493: H200 (450 GB/s NVLink),
  /// EP16, 24 SMs: 133.78 (BF16 dispatch) and 145.16 GB/s (combine) NVL, the same as H800's
  /// ~140 GB/s at half the NVLink bandwidth (DeepEP #285), so the SMs bind: 139.5 / 24.
  double normal_forward_GBps_per_sm = 5.81;
  /// Low-latency kernels' fixed cost (kernel, signalling, waiting for every rank) at one rank
  /// and its growth per doubling of the EP size, fitted to DeepEP's first, pure-RDMA low-latency
  /// table (commit ebfe47e, EP8-256 on H800, bytes at the NIC's 0.96 x line rate): dispatch
  /// 15.7 us, combine 38.6 us, +2.64 us per doubling.
  double ll_dispatch_base_us = 15.7;
  double ll_combine_base_us = 38.6;
  double ll_per_doubling_us = 2.64;
  /// Low-latency kernels move each message with plain loads/stores (NVLink) or IBGDA writes
  /// (RDMA) at the links' bulk rates: NCCL's modelled fractions of line rate, as in the
  /// collective profile (nvlink_efficiency, network_efficiency).
  double ll_nvlink_efficiency = 0.824;
  double ll_rdma_efficiency = 0.96;
  /// Hybrid-EP (DeepEP docs/README_Hybrid-EP.md: 4096 tokens x 7168 x top-8 of 8 local experts
  /// per rank, uniform routing; bytes counted as DeepEP counts them) publishes each row twice:
  /// the kernels alone and through the torch API, whose difference is a fixed cost per call.
  /// Kernels: NVLink bytes crossing a GPU's links over the 900 GB/s line rate, local share
  /// removed, on B200 (EP 8) and GB200 (EP 8-36, MNNVL), 16 SMs: BF16 dispatch 0.66-0.73 (6
  /// rows, median 0.685), combine (which also reduces) 0.59-0.67 (median 0.614); FP8 dispatch
  /// 0.58-0.60 up to EP 16 (3 rows; 0.28-0.38 beyond, where 16 SMs bind and 32 do not: not
  /// modelled). RDMA wire bytes over the 50 GB/s NIC on H100 (16/32/64 ranks, 8 per node, 8 SMs):
  /// BF16 0.68-0.89, median 0.83; FP8 0.62-0.82, median 0.77.
  double hybrid_nvlink_efficiency = 0.685;
  double hybrid_combine_nvlink_efficiency = 0.614;
  double hybrid_fp8_nvlink_efficiency = 0.60;
  double hybrid_rdma_efficiency = 0.83;
  double hybrid_fp8_rdma_efficiency = 0.77;
  /// The torch API's time over the kernels' for the same bytes, per call: 125-287 us inside one
  /// NVLink domain (18 rows, median 170) and 334-1343 us across nodes over InfiniBand (9 rows,
  /// median 500).
  double hybrid_call_us_nvlink = 170;
  double hybrid_call_us_rdma = 500;
  std::string source =
      "DeepEP issues #16, #285, #493; README V2 table; legacy table at ebfe47e; "
      "docs/README_Hybrid-EP.md B200 and GB200 tables";
};

struct MoeAlltoallRequest {
  MoeKernel kernel = MoeKernel::deepep_normal;
  MoeDirection direction = MoeDirection::dispatch;
  int ranks = 8;           ///< EP group size
  int ranks_per_node = 8;  ///< EP ranks per NVLink domain (DeepEP's NVL peers)
  double tokens_per_rank = 4096;
  int hidden = 7168;
  int top_k = 8;
  std::optional<int> topk_groups;  ///< node-limited routing: nodes a token may reach
  int experts = 256;               ///< routed experts over the group
  bool fp8 = false;                ///< FP8 payload with one FP32 scale per 128 values
  int sms = 24;                    ///< SMs DeepEP's normal kernels run on
};

/// Per-GPU, per-direction line rates of the two paths (GB/s).
struct MoeLinkRates {
  double nvlink_GBps = 0;
  double rdma_GBps = 0;
};

/// Line rates of one GPU of `group` on `system`: its NVLink links, and its share of the NICs of
/// its NVLink domain.
MoeLinkRates moe_link_rates(const System& system, const GroupLayout& group);
/// The kernel profile with the low-latency link efficiencies of a collective profile.
MoeKernelProfile moe_kernel_profile(const CollectiveProfile& collective);

struct MoeAlltoallResult {
  double seconds = 0;
  /// Bytes per GPU as DeepEP's tests count them (local-rank/local-node traffic included): NVLink
  /// = tokens received by a GPU; RDMA = tokens sent once per node reached (normal) or per
  /// (token, expert) pair (low latency).
  double nvlink_bytes = 0;
  double rdma_bytes = 0;
  /// DeepEP's reported "bottleneck bandwidth": RDMA bytes / time across nodes, NVLink bytes /
  /// time inside one (GB/s).
  double bottleneck_bw_GBps = 0;
  std::string reported_link;  ///< "rdma" or "nvlink": which bytes bottleneck_bw_GBps counts
  std::string binding;        ///< what sets the time: "nvlink", "rdma", "sm-forwarding", "latency"
  double distinct_nodes = 1;  ///< expected nodes a token reaches
  double distinct_ranks = 1;  ///< expected ranks a token reaches
};

/// Expected number of distinct bins hit when `picks` of `bins` x `per_bin` items are drawn
/// without replacement (uniform routing of top-k experts onto ranks or nodes).
double expected_distinct_bins(double bins, double per_bin, int picks);

/// Bytes of one token's payload: hidden x 2 (BF16), or hidden x (1 + 4/128) for FP8 with
/// per-128 FP32 scales (DeepEP's fp8_factor); low-latency FP8 messages add a 16-byte header.
double moe_token_bytes(const MoeAlltoallRequest& request);

MoeAlltoallResult moe_alltoall(const MoeAlltoallRequest& request, const MoeLinkRates& rates,
                               const MoeKernelProfile& profile = {});

}  // namespace fabricsim::models
