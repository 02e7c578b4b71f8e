#include "api/confidence.hpp"

#include <fmt/format.h>

#include "api/training_run.hpp"
#include "models/compute_model.hpp"
#include "models/precision_recipe.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {

std::string describe_calibration(const Scenario& s, const models::ComputeProfile& compute) {
  std::string source = s.calibration.empty() ? "built-in profile of " + s.system() : s.calibration;
  if (!compute.sustained_source.empty()) {
    source += fmt::format(", sustained efficiency {:.3f} from {}", compute.sustained_efficiency,
                          compute.sustained_source);
  }
  return source;
}

std::vector<std::string> known_gaps(const Scenario& s) {
  static constexpr std::string_view kDroplessAllToAll =
      "dropless MoE through NCCL's all-to-all dispatcher: published runs of this path take "
      "several ms more per MoE layer and micro-batch than predicted, the step is a lower bound "
      "(docs/validation.md, 'MoE through the alltoall dispatcher')";
  static constexpr std::string_view kGptOssLayer =
      "GPT-OSS's layer (clamped GLU, expert biases, attention sinks): published runs are slower "
      "than predicted on every system, the step is a lower bound (docs/validation.md, "
      "'GPT-OSS 120B')";
  static constexpr std::string_view kX86BlackwellMoe =
      "expert-parallel MoE on an x86 Blackwell system (HGX B200/B300): published Megatron-Bridge "
      "runs of this path are 15-25% slower than predicted where the same models on GB200/GB300 "
      "are not, the step is a lower bound (docs/validation.md, 'MoE on x86 Blackwell')";
  std::vector<std::string> gaps;
  const models::SoftwareStack& sw = s.lowering.software;
  // The alltoall dispatcher's host sync, as the workload builds it (models::moe_counts_on_gpu).
  if (s.model.moe && s.plan.ep > 1 && sw.moe_dispatcher == models::MoeDispatcher::alltoall &&
      sw.moe_host_sync && !models::moe_counts_on_gpu(*s.model.moe, sw)) {
    gaps.emplace_back(kDroplessAllToAll);
  }
  if (s.model.mlp == models::MlpKind::quick_geglu) gaps.emplace_back(kGptOssLayer);
  if (s.model.moe && s.plan.ep > 1 && s.preset->cpu != topologies::HostCpu::arm &&
      scenario_gpu(s).generation == topologies::GpuGeneration::blackwell) {
    gaps.emplace_back(kX86BlackwellMoe);
  }
  return gaps;
}

Confidence assess_confidence(const calibration::CalibrationProfile& profile, const Scenario& s) {
  Confidence c;
  c.system = s.system();
  c.calibration = describe_calibration(s, profile.compute);
  const topologies::Precision p = s.training.precision;
  c.precision = std::string(topologies::to_string(p));
  // fp16 runs on bf16's tensor-core rates and kernels and takes bf16's fit (profile_fit).
  const topologies::Precision fitted =
      p == topologies::Precision::fp16 ? topologies::Precision::bf16 : p;
  const std::string fit_key(topologies::to_string(fitted));
  if (auto it = profile.gemm_fit.find(fit_key); it != profile.gemm_fit.end()) {
    c.gemm_points = it->second.points;
    c.gemm_median = it->second.median_rel_error;
  }
  // A fit with no points of its own was inherited from a related preset's GPU.
  c.gemm_fitted = profile.compute.gemm_for(fitted).fitted && c.gemm_points > 0;
  if (profile.collective_fit) {
    c.collective_fitted = profile.collective_fit->points > 0;
    c.collective_points = profile.collective_fit->points;
  }
  c.sustained_clock =
      models::sustained_clock(scenario_gpu(s), profile.compute, p, &c.sustained_assumed);
  // FP8 attention runs where the precision recipe quantizes (models/workload).
  c.fp8_attention = s.lowering.software.fp8_attention &&
                    models::precision_recipe(s.training, s.lowering.software, s.model.layers,
                                             scenario_gpu(s).generation)
                        .quantizes();
  // Hybrid-EP's published NVLink rows are all Blackwell's.
  c.hybridep_nvlink_assumed =
      s.model.moe && s.plan.ep > 1 &&
      s.lowering.software.moe_dispatcher == models::MoeDispatcher::hybridep &&
      scenario_gpu(s).generation != topologies::GpuGeneration::blackwell;
  c.software = s.lowering.software.id;
  c.software_documented = s.lowering.software.documented;
  c.announced = s.preset->announced;
  c.unmeasured = !c.gemm_fitted && !c.collective_fitted;
  c.known_gaps = known_gaps(s);
  return c;
}

Confidence scenario_confidence(const Scenario& s) {
  return assess_confidence(scenario_profile(s), s);
}

nlohmann::json confidence_to_json(const Confidence& c) {
  return {{"system", c.system},
          {"calibration", c.calibration},
          {"gemm",
           {{"precision", c.precision},
            {"fitted", c.gemm_fitted},
            {"points", c.gemm_points},
            {"median_rel_error", c.gemm_median}}},
          {"collectives", {{"fitted", c.collective_fitted}, {"points", c.collective_points}}},
          {"sustained_clock", c.sustained_clock},
          {"sustained_assumed", c.sustained_assumed},
          {"attention_memory_host", "documented defaults (not fitted)"},
          {"fp8_attention", c.fp8_attention},
          {"hybridep_nvlink_assumed", c.hybridep_nvlink_assumed},
          {"software", {{"preset", c.software}, {"documented", c.software_documented}}},
          {"announced", c.announced},
          {"unmeasured", c.unmeasured},
          {"known_gaps", c.known_gaps},
          {"summary", confidence_line(c)}};
}

std::string confidence_line(const Confidence& c) {
  // One point sets the ceiling at most: its error says nothing about other shapes.
  std::string out =
      !c.gemm_fitted ? fmt::format(
                           "GEMM {}: no measurement of this GPU (inherited fit or "
                           "default ceiling)",
                           c.precision)
      : c.gemm_points == 1
          ? fmt::format("GEMM {}: 1 point only (the ceiling; no shape dependence measured)",
                        c.precision)
          : fmt::format("GEMM {}: {} points (median {:.1f}%)", c.precision, c.gemm_points,
                        100 * c.gemm_median);
  // A preset without collective measurements takes a related preset's fit where it has one.
  out += !c.collective_fitted
             ? "; collectives: no measurement of this system (a related preset's fit or "
               "NCCL-constant defaults)"
         : c.collective_points == 1 ? "; collectives: 1 point only"
                                    : fmt::format("; collectives: {} points", c.collective_points);
  if (c.sustained_clock < 1) {
    out += fmt::format("; sustained clock {:.3f} of the fit ({})", c.sustained_clock,
                       c.sustained_assumed ? "assumed: the H200's power-limited share"
                                           : "one GPU's sustained rate");
  }
  out += "; attention, memory-bound and host costs: documented defaults";
  if (c.fp8_attention) {
    out += "; FP8 attention at cuDNN's benchmarked FP8/BF16 rates (one benchmark a generation)";
  }
  if (c.hybridep_nvlink_assumed) {
    out += "; Hybrid-EP over NVLink at Blackwell's measured rates (none published for this GPU)";
  }
  out += fmt::format("; software {} ({})", c.software,
                     c.software_documented ? "documented" : "framework unknown: default stack");
  if (c.announced) {
    out += "; ANNOUNCED system: vendor figures, not measured";
  } else if (c.unmeasured) {
    out += "; UNMEASURED system: inherited figures only";
  }
  for (const std::string& gap : c.known_gaps)
    out += "; KNOWN GAP: " + gap;
  return out;
}

std::string confidence_with_calibration(const Confidence& c) {
  return c.calibration + "; " + confidence_line(c);
}

}  // namespace fabricsim::api
