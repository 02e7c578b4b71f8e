// Reader for the JSON that fabricsim-nccl-bench writes: one run of NCCL collectives on one set
// of ranks, with the environment that chose the algorithm/protocol.

#include <fmt/format.h>

#include <array>
#include <climits>
#include <cmath>

#include "calibration/bus_bandwidth.hpp"
#include "calibration/importers.hpp"
#include "calibration/json_fields.hpp"
#include "calibration/text_fields.hpp"

namespace fabricsim::calibration {

namespace {

using sim::JsonValue;
using sim::ObjectReader;

constexpr std::array<std::string_view, 15> kTopKeys = {"format",
                                                       "version",
                                                       "nccl_version",
                                                       "cuda_driver_version",
                                                       "cuda_runtime_version",
                                                       "gpu_name",
                                                       "nodes",
                                                       "gpus_per_node",
                                                       "ranks",
                                                       "env",
                                                       "topology",
                                                       "date",
                                                       "warmup_iters",
                                                       "iters",
                                                       "rows"};
constexpr std::array<std::string_view, 8> kRowKeys = {
    "op", "bytes", "count", "dtype", "in_place", "time_us", "algbw_GBps", "busbw_GBps"};
// nccl-tests' type names.
const std::vector<std::string> kNcclTypes = {"int8",   "uint8",    "int32",  "uint32",
                                             "int64",  "uint64",   "half",   "float",
                                             "double", "bfloat16", "f8e4m3", "f8e5m2"};

int as_small_positive(const JsonValue& v) {
  const int64_t x = v.as_positive_int();
  if (x > INT_MAX) v.fail("a positive integer below 2^31");
  return static_cast<int>(x);
}

double non_negative(const JsonValue& v) {
  const double x = v.as_number();
  if (x < 0) v.fail("a non-negative number");
  return x;
}

// The bench writes algbw and busbw computed from time; a mismatch means a corrupted or
// hand-edited file, whose numbers cannot all be true.
void check_close(const JsonValue& v, double value, double expected, std::string_view formula) {
  if (std::fabs(value - expected) > 0.01 + 0.01 * std::fabs(expected)) {
    v.fail(fmt::format("{} = {:.4g}", formula, expected));
  }
}

}  // namespace

MeasurementSet import_nccl_bench_json(const JsonValue& root) {
  ObjectReader r = root.as_object();
  check_closed_keys(r, kTopKeys);
  check_format(r, "fabricsim-nccl-bench", 1);

  CollectiveMeasurement base;
  base.nccl_version = optional_text(r, "nccl_version");
  const std::string driver = optional_text(r, "cuda_driver_version");
  const std::string runtime = optional_text(r, "cuda_runtime_version");
  const std::string gpu_name = need_text(r, "gpu_name", "a non-empty GPU name");
  base.nodes = as_small_positive(need(r, "nodes", "a positive integer"));
  base.gpus_per_node = as_small_positive(need(r, "gpus_per_node", "a positive integer"));
  const JsonValue ranks = need(r, "ranks", "a positive integer");
  base.ranks = as_small_positive(ranks);
  if (1LL * base.nodes * base.gpus_per_node != base.ranks) {
    ranks.fail(fmt::format("nodes x gpus_per_node = {}", 1LL * base.nodes * base.gpus_per_node));
  }
  // env is the NCCL_* environment of the run: any variable, each a string or null (unset).
  ObjectReader env = need(r, "env", "an object of environment variables").as_object();
  for (const std::string& key : env.keys()) {
    const std::optional<JsonValue> value = env.optional(key);
    if (!value) continue;
    const std::string text = value->as_string();
    if (key == "NCCL_ALGO") base.algorithm = text;
    if (key == "NCCL_PROTO") base.protocol = text;
  }
  env.finish();
  const std::string topology = optional_text(r, "topology");
  const std::string date = optional_text(r, "date");
  const int64_t warmup = need(r, "warmup_iters", "a non-negative integer").as_non_negative_int();
  const int64_t iters = need(r, "iters", "a positive integer").as_positive_int();

  MeasurementSet set;
  const JsonValue rows = need(r, "rows", "an array of results");
  for (const JsonValue& row : rows.as_array()) {
    ObjectReader rr = row.as_object();
    check_closed_keys(rr, kRowKeys);
    CollectiveMeasurement m = base;
    m.op = need(rr, "op", "a collective op").as_enum(collective_ops());
    m.bytes = static_cast<double>(need(rr, "bytes", "a positive size").as_positive_int());
    need(rr, "count", "a non-negative element count").as_non_negative_int();
    need(rr, "dtype", "an NCCL data type").as_enum(kNcclTypes);
    m.in_place = need(rr, "in_place", "true or false").as_bool();
    m.time_us = need(rr, "time_us", "a positive time in microseconds").as_positive_number();
    const JsonValue algbw = need(rr, "algbw_GBps", "a non-negative number");
    const JsonValue busbw = need(rr, "busbw_GBps", "a non-negative number");
    m.algbw_GBps = non_negative(algbw);
    m.busbw_GBps = non_negative(busbw);
    const double factor = *bus_bandwidth_factor(m.op, m.ranks);
    const CollectiveRates expected = rates_from_time(m.bytes, m.time_us, factor);
    check_close(algbw, m.algbw_GBps, expected.algbw_GBps, "bytes / time_us / 1e3");
    check_close(busbw, m.busbw_GBps, m.algbw_GBps * factor,
                fmt::format("algbw_GBps x {:.4f} ({} on {} ranks)", factor, m.op, m.ranks));
    m.source = fmt::format("{}:{}", row.file(), row.pointer());
    set.collectives.push_back(std::move(m));
  }
  if (set.collectives.empty()) rows.fail("a non-empty array of results");

  Provenance p;
  p.file = root.file();
  p.format = std::string(to_string(MeasurementFormat::nccl_bench_json));
  p.gpu_name = gpu_name;
  std::vector<std::string> versions;
  if (!base.nccl_version.empty()) versions.push_back("NCCL " + base.nccl_version);
  if (!driver.empty()) versions.push_back("CUDA driver " + driver);
  if (!runtime.empty()) versions.push_back("CUDA runtime " + runtime);
  p.versions = join(versions, "; ");
  p.date = date;
  p.notes = fmt::format("{} rows; {} nodes x {} GPUs; {} iterations after {} warm-up",
                        set.collectives.size(), base.nodes, base.gpus_per_node, iters, warmup);
  if (!topology.empty()) p.notes += "; topology: " + topology;
  set.provenance.push_back(std::move(p));
  return set;
}

}  // namespace fabricsim::calibration
