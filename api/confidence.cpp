#include "api/confidence.hpp"

#include <fmt/format.h>

namespace fabricsim::api {

Confidence assess_confidence(const calibration::CalibrationProfile& profile, const Scenario& s) {
  Confidence c;
  const topologies::Precision p = s.training.precision;
  c.precision = std::string(topologies::to_string(p));
  if (auto it = profile.gemm_fit.find(c.precision); it != profile.gemm_fit.end()) {
    c.gemm_points = it->second.points;
    c.gemm_median = it->second.median_rel_error;
  }
  // A fit with no points of its own was inherited from a related preset's GPU.
  c.gemm_fitted = profile.compute.gemm_for(p).fitted && c.gemm_points > 0;
  if (profile.collective_fit) {
    c.collective_fitted = profile.collective_fit->points > 0;
    c.collective_points = profile.collective_fit->points;
  }
  c.software = s.lowering.software.id;
  c.software_documented = s.lowering.software.documented;
  c.unmeasured = !c.gemm_fitted && !c.collective_fitted;
  return c;
}

nlohmann::json confidence_to_json(const Confidence& c) {
  return {{"gemm",
           {{"precision", c.precision},
            {"fitted", c.gemm_fitted},
            {"points", c.gemm_points},
            {"median_rel_error", c.gemm_median}}},
          {"collectives", {{"fitted", c.collective_fitted}, {"points", c.collective_points}}},
          {"attention_memory_host", "documented defaults (not fitted)"},
          {"software", {{"preset", c.software}, {"documented", c.software_documented}}},
          {"unmeasured", c.unmeasured},
          {"summary", confidence_line(c)}};
}

std::string confidence_line(const Confidence& c) {
  std::string out =
      c.gemm_fitted
          ? fmt::format("GEMM {}: {} points (median {:.1f}%)", c.precision, c.gemm_points,
                        100 * c.gemm_median)
          : fmt::format("GEMM {}: no measurement of this GPU (inherited fit or default ceiling)",
                        c.precision);
  out += c.collective_fitted ? fmt::format("; collectives: {} points", c.collective_points)
                             : "; collectives: NCCL-constant defaults, never measured here";
  out += "; attention, memory-bound and host costs: documented defaults";
  out += fmt::format("; software {} ({})", c.software,
                     c.software_documented ? "documented" : "framework unknown: default stack");
  if (c.unmeasured) out += "; UNMEASURED system: announced or inherited figures only";
  return out;
}

}  // namespace fabricsim::api
