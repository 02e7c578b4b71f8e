// Reference cases as calibration data. Only GEMM and collective cases become measurements;
// training cases are held out for validation and never converted.

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "calibration/bus_bandwidth.hpp"
#include "calibration/importers.hpp"
#include "calibration/text_fields.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::calibration {

namespace {

struct CurvePoint {
  std::optional<double> busbw, algbw;
};

}  // namespace

MeasurementSet measurements_from_cases(const std::vector<Case>& cases) {
  MeasurementSet set;
  int gemm_cases = 0, collective_cases = 0, training_cases = 0, skipped = 0;
  std::vector<std::string> versions;
  for (const Case& c : cases) {
    if (c.kind == CaseKind::training) {
      ++training_cases;
      continue;
    }
    if (c.kind == CaseKind::gemm) {
      if (!c.gemm || !c.measured.tflops) {
        throw sim::InputError("case " + c.id, "measured",
                              "expected a gemm object and measured.tflops for a GEMM case");
      }
      GemmMeasurement g;
      g.m = c.gemm->m;
      g.n = c.gemm->n;
      g.k = c.gemm->k;
      g.batch = c.gemm->batch;
      g.dtype = c.gemm->dtype;
      g.tflops = *c.measured.tflops;
      g.system = c.system;
      g.source = c.id;
      // stas00/ml-engineering's MAMF table reports, per GPU and dtype, the fastest shape of a
      // brute-force search ("Maximum Achievable Matmul FLOPS"): an upper bound for every shape.
      g.sweep_maximum = c.source.find("Maximum Achievable Matmul FLOPS") != std::string::npos;
      set.gemms.push_back(std::move(g));
      ++gemm_cases;
      continue;
    }
    if (!c.collective) {
      throw sim::InputError("case " + c.id, "collective",
                            "expected a collective object for a collective case");
    }
    const CaseCollective& coll = *c.collective;
    // MoE dispatch/combine bandwidths are not nccl-tests busbw (see the case README).
    const std::optional<double> factor = bus_bandwidth_factor(coll.op, c.gpus);
    if (!factor || *factor <= 0) {
      ++skipped;
      continue;
    }
    CollectiveMeasurement base;
    base.op = coll.op;
    base.ranks = c.gpus;
    base.nodes = coll.nodes.value_or(0);
    base.gpus_per_node = coll.gpus_per_node.value_or(0);
    base.in_place = coll.in_place;
    base.algorithm = coll.algorithm.value_or("");
    base.nccl_version = coll.nccl_version.value_or("");
    base.system = c.system;
    base.source = c.id;
    if (coll.nccl_version &&
        std::find(versions.begin(), versions.end(), *coll.nccl_version) == versions.end()) {
      versions.push_back(*coll.nccl_version);
    }
    // One measurement per message size; a size on both curves gives one point with both rates.
    std::map<double, CurvePoint> points;
    if (c.measured.busbw_curve) {
      for (const auto& [bytes, bw] : *c.measured.busbw_curve) {
        points[bytes].busbw = bw;
      }
    }
    if (c.measured.algbw_curve) {
      for (const auto& [bytes, bw] : *c.measured.algbw_curve) {
        points[bytes].algbw = bw;
      }
    }
    // busbw_GBps repeats a curve point when a curve exists; alone, its size is unknown (bytes 0)
    // and the fitter treats it as a large-message bandwidth.
    if (points.empty() && c.measured.busbw_GBps) points[0].busbw = *c.measured.busbw_GBps;
    if (points.empty()) {
      ++skipped;  // only latency or informational metrics: nothing with a bandwidth to fit
      continue;
    }
    for (const auto& [bytes, point] : points) {
      CollectiveMeasurement m = base;
      m.bytes = bytes;
      const CollectiveRates rates = point.algbw ? rates_from_algbw(bytes, *point.algbw, *factor)
                                                : rates_from_busbw(bytes, *point.busbw, *factor);
      m.time_us = rates.time_us;
      m.algbw_GBps = rates.algbw_GBps;
      m.busbw_GBps = point.busbw ? *point.busbw : rates.busbw_GBps;
      set.collectives.push_back(std::move(m));
    }
    ++collective_cases;
  }
  Provenance p;
  p.format = std::string(to_string(MeasurementFormat::cases_json));
  if (!versions.empty()) p.versions = "NCCL " + join(versions, ", ");
  p.notes = fmt::format(
      "{} GEMM cases, {} collective cases ({} points); {} training cases not converted; {} cases "
      "skipped (MoE dispatch/combine or no bandwidth)",
      gemm_cases, collective_cases, set.collectives.size(), training_cases, skipped);
  set.provenance.push_back(std::move(p));
  return set;
}

}  // namespace fabricsim::calibration
