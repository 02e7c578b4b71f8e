#include "calibration/cases.hpp"

#include <fmt/format.h>

#include <array>
#include <climits>
#include <map>
#include <set>
#include <span>

#include "calibration/json_fields.hpp"
#include "calibration/text_fields.hpp"
#include "sim/input_error.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::calibration {

using sim::InputError;
using sim::JsonValue;
using sim::ObjectReader;

std::string_view to_string(CaseKind kind) {
  switch (kind) {
    case CaseKind::training:
      return "training";
    case CaseKind::collective:
      return "collective";
    case CaseKind::gemm:
      return "gemm";
  }
  return "?";
}

namespace {

// The closed key sets of the README, one list per object; used both to demand every key and to
// check the dotted paths listed in `derived`.
constexpr std::array<std::string_view, 16> kTopKeys = {
    "id",        "source", "source_ref",  "kind",       "task", "system",   "gpus",    "precision",
    "framework", "model",  "parallelism", "collective", "gemm", "measured", "derived", "notes"};
constexpr std::array<std::string_view, 3> kFrameworkKeys = {"name", "version", "released"};
constexpr std::array<std::string_view, 12> kModelKeys = {
    "name",  "layers",  "hidden", "ffn", "heads",     "kv_heads",
    "vocab", "seq_len", "params", "moe", "attention", "mla"};
constexpr std::array<std::string_view, 7> kMoeKeys = {
    "experts",           "top_k",        "expert_ffn",    "shared_experts",
    "shared_expert_ffn", "dense_layers", "moe_layer_freq"};
constexpr std::array<std::string_view, 5> kMlaKeys = {
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
constexpr std::array<std::string_view, 12> kParallelismKeys = {"tp",
                                                               "pp",
                                                               "dp",
                                                               "cp",
                                                               "ep",
                                                               "vp",
                                                               "zero",
                                                               "micro_batch",
                                                               "global_batch",
                                                               "recompute",
                                                               "sequence_parallel",
                                                               "fsdp"};
constexpr std::array<std::string_view, 7> kCollectiveKeys = {
    "op", "nodes", "gpus_per_node", "nccl_version", "algorithm", "in_place", "moe_payload"};
constexpr std::array<std::string_view, 5> kMoePayloadKeys = {"kernel", "tokens_per_rank", "hidden",
                                                             "top_k", "topk_groups"};
constexpr std::array<std::string_view, 6> kGemmKeys = {"m", "n", "k", "batch", "dtype", "library"};

const std::vector<std::string> kKinds = {"training", "collective", "gemm"};
const std::vector<std::string> kTasks = {"pretrain", "sft", "lora"};
const std::vector<std::string> kPrecisions = {"fp16",  "bf16",  "fp8", "mxfp8",
                                              "nvfp4", "mxfp4", "fp4"};
const std::vector<std::string> kAttention = {"mha", "gqa", "mla"};
const std::vector<std::string> kFrameworks = {
    "megatron-lm", "megatron-core",      "nemo",      "megatron-bridge", "nemo-automodel",
    "llm-foundry", "deepspeed",          "megascale", "meta-internal",   "hai-llm",
    "metaseq",     "megatron-deepspeed", "unknown"};
const std::vector<std::string> kRecompute = {"none", "selective", "full"};
const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                       "broadcast",  "sendrecv",   "moe_dispatch",   "moe_combine"};
const std::vector<std::string> kAlgorithms = {"Ring",          "Tree",         "NVLS", "NVLSTree",
                                              "CollNetDirect", "CollNetChain", "PAT"};
const std::vector<std::string> kMoeKernels = {"deepep_normal", "deepep_low_latency", "deepep_v2"};

enum class Range { positive, fraction, percent };

struct NumberMetric {
  std::string_view key;
  CaseKind kind;
  bool primary;
  Range range;
  std::optional<double> CaseMeasured::*field;
};

struct CurveMetric {
  std::string_view key;
  bool primary;
  std::optional<Curve> CaseMeasured::*field;
};

using M = CaseMeasured;
constexpr CaseKind kT = CaseKind::training;
constexpr CaseKind kC = CaseKind::collective;
constexpr CaseKind kG = CaseKind::gemm;
constexpr Range kPos = Range::positive;

constexpr std::array<NumberMetric, 26> kNumberMetrics = {{
    {"tflops_per_gpu", kT, true, kPos, &M::tflops_per_gpu},
    {"hw_tflops_per_gpu", kT, true, kPos, &M::hw_tflops_per_gpu},
    {"mfu", kT, true, Range::fraction, &M::mfu},
    {"hfu", kT, true, Range::fraction, &M::hfu},
    {"step_time_s", kT, true, kPos, &M::step_time_s},
    {"tokens_per_s_per_gpu", kT, true, kPos, &M::tokens_per_s_per_gpu},
    {"time_to_train_min", kT, true, kPos, &M::time_to_train_min},
    {"busbw_GBps", kC, true, kPos, &M::busbw_GBps},
    {"latency_us", kC, true, kPos, &M::latency_us},
    {"bottleneck_bw_GBps", kC, true, kPos, &M::bottleneck_bw_GBps},
    {"tflops", kG, true, kPos, &M::tflops},
    {"step_time_s_full_recompute_baseline", kT, false, kPos,
     &M::step_time_s_full_recompute_baseline},
    {"alt_tflops_per_gpu", kT, false, kPos, &M::alt_tflops_per_gpu},
    {"alt_tokens_per_s_per_gpu", kT, false, kPos, &M::alt_tokens_per_s_per_gpu},
    {"tflops_per_gpu_causal", kT, false, kPos, &M::tflops_per_gpu_causal},
    {"mfu_causal", kT, false, Range::fraction, &M::mfu_causal},
    {"busbw_GBps_nvls_off", kC, false, kPos, &M::busbw_GBps_nvls_off},
    {"nvls_busbw_GBps", kC, false, kPos, &M::nvls_busbw_GBps},
    {"nvls_algbw_GBps", kC, false, kPos, &M::nvls_algbw_GBps},
    {"rdma_bw_GBps", kC, false, kPos, &M::rdma_bw_GBps},
    {"latency_us_ib_cross_leaf", kC, false, kPos, &M::latency_us_ib_cross_leaf},
    {"latency_us_roce_same_leaf", kC, false, kPos, &M::latency_us_roce_same_leaf},
    {"latency_us_roce_cross_leaf", kC, false, kPos, &M::latency_us_roce_cross_leaf},
    {"latency_us_nvlink", kC, false, kPos, &M::latency_us_nvlink},
    {"pct_of_peak", kG, false, Range::percent, &M::pct_of_peak},
    {"memory_bw_GBps", kG, false, kPos, &M::memory_bw_GBps},
}};

constexpr std::array<CurveMetric, 3> kCurveMetrics = {{
    {"busbw_curve", true, &M::busbw_curve},
    {"algbw_curve", true, &M::algbw_curve},
    {"busbw_curve_inplace", false, &M::busbw_curve_inplace},
}};

int as_count(const JsonValue& v) {
  return v.as_positive_int32();
}

int as_count_or_zero(const JsonValue& v) {
  return v.as_non_negative_int32();
}

std::optional<std::string> opt_text(ObjectReader& r, std::string_view key) {
  const std::optional<JsonValue> v = r.optional(key);
  if (!v) return std::nullopt;
  std::string s = v->as_string();
  if (s.empty()) v->fail("a non-empty string or null");
  return s;
}

std::optional<std::string> opt_enum(ObjectReader& r, std::string_view key,
                                    const std::vector<std::string>& choices) {
  const std::optional<JsonValue> v = r.optional(key);
  if (!v) return std::nullopt;
  return v->as_enum(choices);
}

std::optional<int> opt_count(ObjectReader& r, std::string_view key) {
  const std::optional<JsonValue> v = r.optional(key);
  if (!v) return std::nullopt;
  return as_count(*v);
}

std::optional<int> opt_count_or_zero(ObjectReader& r, std::string_view key) {
  const std::optional<JsonValue> v = r.optional(key);
  if (!v) return std::nullopt;
  return as_count_or_zero(*v);
}

std::optional<bool> opt_bool(ObjectReader& r, std::string_view key) {
  const std::optional<JsonValue> v = r.optional(key);
  if (!v) return std::nullopt;
  return v->as_bool();
}

CaseMoe read_moe(const JsonValue& v) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kMoeKeys);
  CaseMoe moe;
  moe.experts = opt_count(r, "experts");
  moe.top_k = opt_count(r, "top_k");
  moe.expert_ffn = opt_count(r, "expert_ffn");
  moe.shared_experts = opt_count_or_zero(r, "shared_experts");
  moe.shared_expert_ffn = opt_count(r, "shared_expert_ffn");
  moe.dense_layers = opt_count_or_zero(r, "dense_layers");
  moe.moe_layer_freq = opt_count(r, "moe_layer_freq");
  if (moe.experts && moe.top_k && *moe.top_k > *moe.experts) {
    member(r, "top_k").fail(fmt::format("at most experts = {}", *moe.experts));
  }
  return moe;
}

CaseMla read_mla(const JsonValue& v) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kMlaKeys);
  CaseMla mla{};
  mla.q_lora_rank = as_count(need(r, "q_lora_rank", "a positive integer"));
  mla.kv_lora_rank = as_count(need(r, "kv_lora_rank", "a positive integer"));
  mla.qk_nope_head_dim = as_count(need(r, "qk_nope_head_dim", "a positive integer"));
  mla.qk_rope_head_dim = as_count(need(r, "qk_rope_head_dim", "a positive integer"));
  mla.v_head_dim = as_count(need(r, "v_head_dim", "a positive integer"));
  return mla;
}

CaseModel read_model(const JsonValue& v) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kModelKeys);
  CaseModel m;
  m.name = need_text(r, "name");
  m.layers = as_count(need(r, "layers", "a positive integer"));
  m.hidden = as_count(need(r, "hidden", "a positive integer"));
  m.ffn = opt_count(r, "ffn");
  m.heads = as_count(need(r, "heads", "a positive integer"));
  m.kv_heads = opt_count(r, "kv_heads");
  m.vocab = opt_count(r, "vocab");
  m.seq_len = opt_count(r, "seq_len");
  if (const auto params = r.optional("params")) m.params = params->as_positive_number();
  if (const auto moe = r.optional("moe")) m.moe = read_moe(*moe);
  m.attention = opt_enum(r, "attention", kAttention);
  if (const auto mla = r.optional("mla")) {
    // MLA dims only make sense for MLA; "mla" with null dims is allowed (source did not say).
    if (m.attention != "mla") {
      mla->fail(fmt::format("null because attention is {}",
                            m.attention ? "'" + *m.attention + "'" : "not stated"));
    }
    m.mla = read_mla(*mla);
  }
  if (m.kv_heads && (*m.kv_heads > m.heads || m.heads % *m.kv_heads != 0)) {
    member(r, "kv_heads").fail(fmt::format("a divisor of heads = {}", m.heads));
  }
  if (m.kv_heads && m.attention == "mha" && *m.kv_heads != m.heads) {
    member(r, "kv_heads").fail(fmt::format("heads = {} for mha attention", m.heads));
  }
  return m;
}

CaseParallelism read_parallelism(const JsonValue& v, int gpus) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kParallelismKeys);
  CaseParallelism p;
  p.tp = opt_count(r, "tp");
  p.pp = opt_count(r, "pp");
  p.dp = opt_count(r, "dp");
  p.cp = opt_count(r, "cp");
  p.ep = opt_count(r, "ep");
  p.vp = opt_count(r, "vp");
  p.zero = opt_count_or_zero(r, "zero");
  if (p.zero && *p.zero > 3) member(r, "zero").fail("a ZeRO stage 0-3");
  p.micro_batch = opt_count(r, "micro_batch");
  p.global_batch = opt_count(r, "global_batch");
  p.recompute = opt_enum(r, "recompute", kRecompute);
  p.sequence_parallel = opt_bool(r, "sequence_parallel");
  p.fsdp = opt_bool(r, "fsdp");
  // Known factors must divide gpus; with all four known, they must multiply to it.
  long long product = 1;
  std::string factors;
  for (const auto& [name, value] :
       {std::pair{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}}) {
    if (!value) continue;
    product *= *value;
    factors += fmt::format("{}{}={}", factors.empty() ? "" : "*", name, *value);
  }
  if (p.tp && p.pp && p.dp && p.cp && product != gpus) {
    v.fail_message(
        fmt::format("expected tp*pp*dp*cp = gpus = {}, got {} = {}", gpus, factors, product));
  }
  if (gpus % product != 0) {
    v.fail_message(fmt::format("expected the known parallel sizes to divide gpus = {}, got {} = {}",
                               gpus, factors, product));
  }
  // Experts are sharded over the tp x cp x dp ranks of a stage (parallel folding).
  if (p.ep && p.tp && p.cp && p.dp && (1LL * *p.tp * *p.cp * *p.dp) % *p.ep != 0) {
    member(r, "ep").fail(fmt::format("a divisor of tp*cp*dp = {}", *p.tp * *p.cp * *p.dp));
  }
  return p;
}

CaseMoePayload read_moe_payload(const JsonValue& v) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kMoePayloadKeys);
  CaseMoePayload p;
  p.kernel = need(r, "kernel", "a MoE kernel name").as_enum(kMoeKernels);
  p.tokens_per_rank = as_count(need(r, "tokens_per_rank", "a positive integer"));
  p.hidden = as_count(need(r, "hidden", "a positive integer"));
  p.top_k = as_count(need(r, "top_k", "a positive integer"));
  p.topk_groups = opt_count(r, "topk_groups");
  return p;
}

CaseCollective read_collective(const JsonValue& v, int gpus) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kCollectiveKeys);
  CaseCollective c;
  c.op = need(r, "op", "a collective op").as_enum(kOps);
  c.nodes = opt_count(r, "nodes");
  c.gpus_per_node = opt_count(r, "gpus_per_node");
  c.nccl_version = opt_text(r, "nccl_version");
  c.algorithm = opt_enum(r, "algorithm", kAlgorithms);
  c.in_place = opt_bool(r, "in_place");
  const bool moe_op = c.op == "moe_dispatch" || c.op == "moe_combine";
  if (const auto payload = r.optional("moe_payload")) {
    if (!moe_op) payload->fail(fmt::format("null for op '{}' (moe_payload is for MoE ops)", c.op));
    c.moe_payload = read_moe_payload(*payload);
  }
  if (c.nodes && c.gpus_per_node && 1LL * *c.nodes * *c.gpus_per_node != gpus) {
    v.fail_message(fmt::format("expected nodes*gpus_per_node = gpus = {}, got {}*{}", gpus,
                               *c.nodes, *c.gpus_per_node));
  }
  return c;
}

CaseGemm read_gemm(const JsonValue& v) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kGemmKeys);
  CaseGemm g{};
  g.m = need(r, "m", "a positive integer").as_positive_int();
  g.n = need(r, "n", "a positive integer").as_positive_int();
  g.k = need(r, "k", "a positive integer").as_positive_int();
  g.batch = need(r, "batch", "a positive integer").as_positive_int();
  g.dtype = need(r, "dtype", "a GEMM dtype").as_enum(kPrecisions);
  g.library = opt_text(r, "library");
  return g;
}

Curve read_curve(const JsonValue& v) {
  const std::vector<JsonValue> points = v.as_array();
  if (points.empty()) v.fail("a non-empty array of [bytes, GB/s] points");
  Curve curve;
  for (const JsonValue& point : points) {
    if (!point.raw().is_array() || point.raw().size() != 2) point.fail("a [bytes, GB/s] pair");
    const JsonValue size = point.at(0);
    const double bytes = static_cast<double>(size.as_positive_int());
    const double bandwidth = point.at(1).as_positive_number();
    if (!curve.empty() && bytes <= curve.back().first) {
      size.fail(
          fmt::format("a size larger than the previous point's {} (curves are strictly "
                      "increasing in size)",
                      curve.back().first));
    }
    curve.emplace_back(bytes, bandwidth);
  }
  return curve;
}

double check_range(const JsonValue& v, Range range) {
  switch (range) {
    case Range::positive:
      return v.as_positive_number();
    case Range::fraction: {
      const double x = v.as_fraction();
      if (x == 0) v.fail("a fraction in (0, 1]");
      return x;
    }
    case Range::percent: {
      const double x = v.as_positive_number();
      if (x > 100) v.fail("a percentage in (0, 100]");
      return x;
    }
  }
  return 0;
}

CaseMeasured read_measured(const JsonValue& v, CaseKind kind, const std::string& op) {
  ObjectReader r = v.as_object();
  for (const NumberMetric& m : kNumberMetrics) {
    r.ignore(m.key);
  }
  for (const CurveMetric& m : kCurveMetrics) {
    r.ignore(m.key);
  }
  r.finish();
  CaseMeasured out;
  bool has_primary = false;
  std::vector<std::string_view> primaries;
  for (const NumberMetric& m : kNumberMetrics) {
    if (m.kind == kind && m.primary) primaries.push_back(m.key);
    const std::optional<JsonValue> value = r.optional(m.key);
    if (!value) continue;
    if (m.kind != kind) {
      value->fail_message(fmt::format("metric '{}' belongs to {} cases, not to a {} case", m.key,
                                      to_string(m.kind), to_string(kind)));
    }
    out.*m.field = check_range(*value, m.range);
    has_primary = has_primary || m.primary;
  }
  for (const CurveMetric& m : kCurveMetrics) {
    if (kind == CaseKind::collective && m.primary) primaries.push_back(m.key);
    const std::optional<JsonValue> value = r.optional(m.key);
    if (!value) continue;
    if (kind != CaseKind::collective) {
      value->fail_message(fmt::format("metric '{}' belongs to collective cases, not to a {} case",
                                      m.key, to_string(kind)));
    }
    out.*m.field = read_curve(*value);
    has_primary = has_primary || m.primary;
  }
  if (out.bottleneck_bw_GBps && op != "moe_dispatch" && op != "moe_combine") {
    member(r, "bottleneck_bw_GBps")
        .fail_message(fmt::format("metric 'bottleneck_bw_GBps' is for moe_dispatch/moe_combine "
                                  "cases, not for op '{}'",
                                  op));
  }
  if (!has_primary) {
    v.fail(fmt::format("at least one primary metric of a {} case ({})", to_string(kind),
                       join(primaries, ", ")));
  }
  return out;
}

std::set<std::string, std::less<>> derived_paths() {
  std::set<std::string, std::less<>> paths;
  const auto add = [&](std::string_view prefix, std::span<const std::string_view> keys) {
    for (std::string_view key : keys) {
      paths.insert(fmt::format("{}{}", prefix, key));
    }
  };
  add("", kTopKeys);
  add("framework.", kFrameworkKeys);
  add("model.", kModelKeys);
  add("model.moe.", kMoeKeys);
  add("model.mla.", kMlaKeys);
  add("parallelism.", kParallelismKeys);
  add("collective.", kCollectiveKeys);
  add("collective.moe_payload.", kMoePayloadKeys);
  add("gemm.", kGemmKeys);
  for (const NumberMetric& m : kNumberMetrics) {
    paths.insert(fmt::format("measured.{}", m.key));
  }
  for (const CurveMetric& m : kCurveMetrics) {
    paths.insert(fmt::format("measured.{}", m.key));
  }
  return paths;
}

/// `released` is a month, YYYY-MM.
bool is_year_month(std::string_view s) {
  if (s.size() != 7 || s[4] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6}) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  const int month = (s[5] - '0') * 10 + (s[6] - '0');
  return month >= 1 && month <= 12;
}

CaseFramework read_framework(const JsonValue& v) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kFrameworkKeys);
  CaseFramework f;
  f.name = need(r, "name", "a framework name").as_enum(kFrameworks);
  f.version = opt_text(r, "version");
  if (const std::optional<JsonValue> released = r.optional("released")) {
    std::string month = released->as_string();
    if (!is_year_month(month)) released->fail("a month as \"YYYY-MM\" or null");
    f.released = std::move(month);
  }
  return f;
}

/// The kind's own object must be there; the other kinds' objects must be null.
std::optional<JsonValue> kind_object(ObjectReader& r, std::string_view key, CaseKind owner,
                                     CaseKind kind) {
  if (kind == owner) {
    return need(r, key, fmt::format("a {} object (a {} case needs one)", key, to_string(kind)));
  }
  if (const std::optional<JsonValue> v = r.optional(key)) {
    v->fail(fmt::format("null for a {} case ({} is for {} cases)", to_string(kind), key,
                        to_string(owner)));
  }
  return std::nullopt;
}

Case read_case(const JsonValue& v, const std::set<std::string, std::less<>>& paths) {
  ObjectReader r = v.as_object();
  check_closed_keys(r, kTopKeys);
  Case c;
  c.id = need_text(r, "id");
  c.source = need_text(r, "source");
  c.source_ref = need_text(r, "source_ref");
  const std::string kind = need(r, "kind", "a case kind").as_enum(kKinds);
  c.kind = kind == "training"     ? CaseKind::training
           : kind == "collective" ? CaseKind::collective
                                  : CaseKind::gemm;
  c.task = opt_enum(r, "task", kTasks);
  if (c.task && c.kind != CaseKind::training) {
    member(r, "task").fail(fmt::format("null for a {} case (task is for training cases)", kind));
  }
  const JsonValue system = need(r, "system", "a system preset id");
  c.system = system.as_string();
  if (topologies::find_system(c.system) == nullptr) {
    system.fail(fmt::format("a system preset id ({})", topologies::system_names()));
  }
  c.gpus = as_count(need(r, "gpus", "a positive integer"));
  c.precision = opt_enum(r, "precision", kPrecisions);
  if (const std::optional<JsonValue> framework = r.optional("framework")) {
    if (c.kind != CaseKind::training) {
      framework->fail(fmt::format("null for a {} case (framework is for training cases)", kind));
    }
    c.framework = read_framework(*framework);
  }

  if (const auto model = kind_object(r, "model", CaseKind::training, c.kind)) {
    c.model = read_model(*model);
  }
  if (const auto p = kind_object(r, "parallelism", CaseKind::training, c.kind)) {
    c.parallelism = read_parallelism(*p, c.gpus);
  }
  if (const auto coll = kind_object(r, "collective", CaseKind::collective, c.kind)) {
    // Every collective moves data between at least two ranks; one GPU has no bus bandwidth.
    if (c.gpus < 2) member(r, "gpus").fail("at least 2 GPUs for a collective case");
    c.collective = read_collective(*coll, c.gpus);
  }
  if (const auto gemm = kind_object(r, "gemm", CaseKind::gemm, c.kind)) {
    c.gemm = read_gemm(*gemm);
    if (c.precision && *c.precision != c.gemm->dtype) {
      member(r, "precision")
          .fail(fmt::format("null or gemm.dtype '{}' (the GEMM's precision)", c.gemm->dtype));
    }
  }
  c.measured = read_measured(need(r, "measured", "a measured object"), c.kind,
                             c.collective ? c.collective->op : std::string());
  for (const JsonValue& item : need(r, "derived", "an array of field paths").as_array()) {
    std::string path = item.as_string();
    if (paths.count(path) == 0) {
      item.fail("the dotted path of a case field such as \"parallelism.dp\"");
    }
    c.derived.push_back(std::move(path));
  }
  c.notes = need(r, "notes", "a string").as_string();
  return c;
}

}  // namespace

std::vector<Case> read_cases(const JsonValue& array) {
  const std::set<std::string, std::less<>> paths = derived_paths();
  std::vector<Case> cases;
  std::map<std::string, std::string, std::less<>> first_use;  // id -> pointer of its first use
  for (const JsonValue& record : array.as_array()) {
    cases.push_back(read_case(record, paths));
    const std::string pointer = sim::json_pointer_child(record.pointer(), "id");
    const auto [it, inserted] = first_use.emplace(cases.back().id, pointer);
    if (!inserted) {
      throw InputError(record.file(), pointer,
                       fmt::format("duplicate id '{}' (first used at {})", it->first, it->second));
    }
  }
  return cases;
}

std::vector<Case> load_cases(const std::string& path) {
  const sim::JsonDocument doc = sim::load_json_file(path);
  return read_cases(doc.root());
}

}  // namespace fabricsim::calibration
