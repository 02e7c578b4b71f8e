#pragma once
// Typed reader for the reference case format (shared/reference/cases/README.md): published
// training, collective and GEMM measurements. The format is closed: every key is present in every
// record (null = the source does not state it) and no other key may occur, so the reader rejects
// missing keys, unknown keys, wrong types and out-of-range values with the JSON pointer of the
// offending value. `measured` is the one object whose keys are optional: it holds only the metrics
// the source gives.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/json_reader.hpp"

namespace fabricsim::calibration {

enum class CaseKind { training, collective, gemm };

std::string_view to_string(CaseKind kind);

/// MoE layout of a model; every field may be unstated. The README asks readers to pick one
/// documented default for unstated fields; this reader leaves them unset and lets the model
/// builder apply its defaults (0 shared experts, 0 dense layers, frequency 1).
struct CaseMoe {
  std::optional<int> experts, top_k, expert_ffn, shared_experts, shared_expert_ffn, dense_layers,
      moe_layer_freq;
};

struct CaseMla {
  int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
};

struct CaseModel {
  std::string name;
  int layers, hidden;
  std::optional<int> ffn;
  int heads;
  std::optional<int> kv_heads, vocab, seq_len;
  std::optional<double> params;
  std::optional<CaseMoe> moe;
  std::optional<std::string> attention;  ///< mha, gqa or mla
  std::optional<CaseMla> mla;
};

/// The training software a source ran, as the source states it.
struct CaseFramework {
  std::string name;                     ///< megatron-lm, nemo, megatron-bridge, llm-foundry, ...
  std::optional<std::string> version;   ///< e.g. "24.07", "r0.8.0"
  std::optional<std::string> released;  ///< "YYYY-MM": when that version was published
};

struct CaseParallelism {
  std::optional<int> tp, pp, dp, cp, ep, vp, zero, micro_batch, global_batch;
  std::optional<std::string> recompute;  ///< none, selective or full
  std::optional<bool> sequence_parallel, fsdp;
};

/// Payload of a MoE dispatch/combine case; the element dtype is the case's `precision`.
struct CaseMoePayload {
  std::string kernel;  ///< deepep_normal, deepep_low_latency or deepep_v2
  int tokens_per_rank, hidden, top_k;
  std::optional<int> topk_groups;
};

struct CaseCollective {
  std::string op;
  std::optional<int> nodes, gpus_per_node;
  std::optional<std::string> nccl_version, algorithm;
  std::optional<bool> in_place;
  std::optional<CaseMoePayload> moe_payload;
};

struct CaseGemm {
  long long m, n, k, batch;
  std::string dtype;
  std::optional<std::string> library;
};

/// [message size in bytes, bandwidth in GB/s], strictly increasing in size.
using Curve = std::vector<std::pair<double, double>>;

/// What a case measured. Primary metrics are compared against predictions; informational ones
/// describe a variant of the run and are kept only for reports (see the README).
struct CaseMeasured {
  // Training, primary.
  std::optional<double> tflops_per_gpu, hw_tflops_per_gpu, mfu, hfu, step_time_s,
      tokens_per_s_per_gpu, time_to_train_min;
  // Collective, primary.
  std::optional<double> busbw_GBps;
  std::optional<Curve> busbw_curve, algbw_curve;
  std::optional<double> latency_us, bottleneck_bw_GBps;
  // GEMM, primary.
  std::optional<double> tflops;
  // Training, informational.
  std::optional<double> step_time_s_full_recompute_baseline, alt_tflops_per_gpu,
      alt_tokens_per_s_per_gpu, tflops_per_gpu_causal, mfu_causal;
  // Collective, informational.
  std::optional<double> busbw_GBps_nvls_off, nvls_busbw_GBps, nvls_algbw_GBps;
  std::optional<Curve> busbw_curve_inplace;
  std::optional<double> rdma_bw_GBps, latency_us_ib_cross_leaf, latency_us_roce_same_leaf,
      latency_us_roce_cross_leaf, latency_us_nvlink;
  // GEMM, informational.
  std::optional<double> pct_of_peak, memory_bw_GBps;
};

struct Case {
  std::string id, source, source_ref;
  CaseKind kind;
  std::optional<std::string> task;  ///< training only: pretrain, sft or lora
  std::string system;               ///< a system preset id
  int gpus;
  std::optional<std::string> precision;
  std::optional<CaseFramework> framework;  ///< training only
  std::optional<CaseModel> model;
  std::optional<CaseParallelism> parallelism;
  std::optional<CaseCollective> collective;
  std::optional<CaseGemm> gemm;
  CaseMeasured measured;
  std::vector<std::string> derived;  ///< dotted paths of computed or inferred fields
  std::string notes;
};

/// Reads a whole case file (a JSON array of records).
std::vector<Case> load_cases(const std::string& path);
/// Reads records from an already parsed JSON array; ids must be unique within it.
std::vector<Case> read_cases(const sim::JsonValue& array);

}  // namespace fabricsim::calibration
