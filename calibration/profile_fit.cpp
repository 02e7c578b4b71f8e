#include "calibration/profile_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "calibration/cases.hpp"
#include "calibration/collective_fit.hpp"
#include "calibration/gemm_fit.hpp"
#include "calibration/importers.hpp"
#include "calibration/relative_gemm_rate.hpp"
#include "sim/input_error.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::calibration {
namespace {

using topologies::Precision;

/// Same die or the closest relative; used when a GPU has no measurements of a precision.
const std::map<std::string, std::string>& gpu_donors() {
  static const std::map<std::string, std::string> donors = {
      {"A100-40GB-SXM4", "A100-80GB-SXM4"},
      {"H800-SXM", "H100-SXM5"},
      {"H200-SXM", "H100-SXM5"},
      {"H100-PCIe", "H100-SXM5"},
      {"GB300", "B300"},
      {"B300", "B200"},
      {"B200", "GB200"},
      // Block-scaled FP4 is measured on B200 only (cuBLAS MXFP4); GB200's other precisions are
      // its own, so the pair is looked up one way per precision and never loops.
      {"GB200", "B200"},
      {"Rubin", "GB300"},
  };
  return donors;
}

/// Presets without collective measurements take the fitted collective parameters of a preset
/// with the same NVLink generation and fabric family.
const std::map<std::string, std::string>& system_donors() {
  static const std::map<std::string, std::string> donors = {
      {"dgx-a100-40gb", "dgx-a100-80gb"}, {"unknown-a100-ib", "dgx-a100-80gb"},
      {"unknown-h100-ib", "dgx-h100"},    {"meta-h100-roce", "dgx-h100"},
      {"dgx-b300", "dgx-b200"},           {"gb300-nvl72", "gb200-nvl72"},
      {"vr-nvl72", "gb200-nvl72"},
  };
  return donors;
}

struct GpuFit {
  std::map<Precision, models::GemmParams> params;
  std::map<std::string, FitQuality> quality;
  std::map<Precision, int> points;
  /// Precisions set from a measured rate relative to another one (RelativeGemmRate): the
  /// source, for the profile's notes. They count as rich fits.
  std::map<Precision, std::string> relative;
};

GpuFit fit_gpu(const topologies::GpuSpec& gpu, const std::vector<GemmMeasurement>& gemms,
               const models::ComputeProfile& start) {
  GpuFit out;
  std::map<Precision, std::vector<GemmMeasurement>> by_precision;
  for (const GemmMeasurement& m : gemms) {
    const auto p = gemm_precision(m.dtype);
    if (p && gpu.peak_tflops(*p) > 0) by_precision[*p].push_back(m);
  }
  // Precisions with enough points first: their shape parameters seed the sparse ones.
  models::ComputeProfile base = start;
  std::optional<models::GemmParams> shape;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [p, data] : by_precision) {
      const bool rich = data.size() >= 6;
      if ((pass == 0) != rich) continue;
      if (!rich && shape) {
        models::GemmParams seeded = *shape;
        seeded.max_efficiency = base.gemm_for(p).max_efficiency;
        base.gemm_for(p) = seeded;
      }
      const GemmFitResult fit = fit_gemm(gpu, p, data, base);
      out.params[p] = fit.params;
      out.points[p] = static_cast<int>(data.size());
      out.quality[std::string(topologies::to_string(p))] = fit.quality;
      base.gemm_for(p) = fit.params;
      if (rich && !shape) shape = fit.params;
    }
  }
  return out;
}

bool has_rich(const std::map<std::string, GpuFit>& fits, const std::string& id, Precision p) {
  const auto it = fits.find(id);
  return it != fits.end() && (it->second.relative.count(p) ||
                              (it->second.points.count(p) && it->second.points.at(p) >= 6));
}

/// The GEMM parameters `gpu` takes at `p` and the GPU they were fitted on: its own fit when it
/// rests on enough shapes (or nothing better is at hand), else the nearest relative's. With one
/// or two best-case (MAMF) points of its own, a sibling die's rich fit is the better estimate.
std::optional<std::pair<models::GemmParams, std::string>> resolve_fit(
    const std::map<std::string, GpuFit>& fits, const std::string& gpu, Precision p) {
  std::string id = gpu;
  for (int depth = 0; depth < 4 && !id.empty(); ++depth) {
    const auto fit = fits.find(id);
    const bool usable = fit != fits.end() && fit->second.params.count(p) &&
                        (has_rich(fits, gpu, p) || id != gpu || !gpu_donors().count(gpu) ||
                         !has_rich(fits, gpu_donors().at(gpu), p));
    if (usable) return std::make_pair(fit->second.params.at(p), id);
    const auto d = gpu_donors().find(id);
    id = d == gpu_donors().end() ? "" : d->second;
  }
  return std::nullopt;
}

/// Sets each RelativeGemmRate's precision on its GPU from the GPU's resolved reference fit, with
/// the shape parameters of the precision's own resolved fit (or the defaults).
void apply_relative_rates(std::map<std::string, GpuFit>& fits) {
  for (const RelativeGemmRate& rate : relative_gemm_rates()) {
    const topologies::GpuSpec& gpu = *topologies::find_gpu(std::string(rate.gpu));
    models::ComputeProfile profile = models::default_compute_profile(gpu);
    auto ref = resolve_fit(fits, gpu.id, rate.reference);
    // Blackwell runs MXFP8 on FP8's tensor cores: without MXFP8 points, a preset takes FP8's fit.
    if (!ref && rate.reference == Precision::mxfp8) ref = resolve_fit(fits, gpu.id, Precision::fp8);
    if (ref) profile.gemm_for(rate.reference) = ref->first;
    models::GemmParams seed = profile.gemm_for(rate.precision);
    if (const auto own = resolve_fit(fits, gpu.id, rate.precision)) seed = own->first;
    GpuFit& fit = fits[gpu.id];
    const models::GemmParams params = fit_relative_rate(gpu, profile, seed, rate);
    fit.params[rate.precision] = params;
    fit.relative[rate.precision] = std::string(rate.source);
    // One measurement (the ratio), reproduced: like a single point, it sets the ceiling only.
    profile.gemm_for(rate.precision) = params;
    const double miss =
        std::abs(summed_gemm_seconds(gpu, profile, rate.reference, rate.shapes) /
                     summed_gemm_seconds(gpu, profile, rate.precision, rate.shapes) / rate.ratio -
                 1);
    fit.quality[std::string(topologies::to_string(rate.precision))] =
        FitQuality{.points = 1, .r2 = 1, .median_rel_error = miss, .max_rel_error = miss};
  }
}

/// The GEMM records of the case files in `dir` (sorted by name), for the built-in fits.
MeasurementSet gemm_cases_in(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw sim::InputError(dir, "", "expected a folder of GEMM case files (*.json), found none");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  MeasurementSet out;
  for (const auto& path : files) {
    const std::vector<Case> cases = load_cases(path.string());
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].kind != CaseKind::gemm) {
        throw sim::InputError(path.string(), fmt::format("/{}/kind", i),
                              "expected a GEMM record (kind gemm) in a GEMM data folder");
      }
    }
    MeasurementSet m = measurements_from_cases(cases);
    m.provenance.push_back(
        {path.generic_string(), "cases_json", "", "", "", "public GEMM microbenchmarks"});
    out.append(std::move(m));
  }
  return out;
}

}  // namespace

std::string gpu_of_system(const std::string& system) {
  const topologies::SystemPreset* p = topologies::find_system(system);
  return p ? p->gpu : "";
}

CalibrationProfile fit_profile(const std::string& system, MeasurementSet measurements,
                               const CalibrationProfile& start, const ProfileFitOptions& options) {
  CalibrationProfile p = start;
  p.system = system;
  p.created = options.created;
  const topologies::GpuSpec* gpu = topologies::find_gpu(p.gpu);
  std::vector<GemmMeasurement> gemms;
  for (GemmMeasurement& m : measurements.gemms) {
    const bool mine = m.system.empty() || m.system == system ||
                      (options.gemm_by_gpu && gpu_of_system(m.system) == p.gpu);
    if (mine) gemms.push_back(m);
  }
  if (!gemms.empty()) {
    const GpuFit fit = fit_gpu(*gpu, gemms, p.compute);
    for (const auto& [prec, params] : fit.params) {
      p.compute.gemm_for(prec) = params;
      if (prec == Precision::bf16) p.compute.gemm_for(Precision::fp16) = params;
      if (prec == Precision::fp8 && !fit.params.count(Precision::mxfp8)) {
        p.compute.gemm_for(Precision::mxfp8) = params;
      }
    }
    p.gemm_fit = fit.quality;
    p.compute.source = fmt::format("GEMM parameters fitted to {} measurements of {}; {}",
                                   gemms.size(), p.gpu, p.compute.source);
  }
  for (CollectiveMeasurement& m : measurements.collectives) {
    if (m.system.empty()) m.system = system;
  }
  const CollectiveFitResult coll = fit_collectives(system, measurements.collectives, p.collective);
  if (!coll.points.empty()) {
    p.collective = coll.profile;
    p.collective_fit = coll.quality;
    if (options.collective_residuals != nullptr) {
      for (const CollectivePoint& pt : coll.points) {
        options.collective_residuals->push_back({pt.measurement->op, pt.measurement->ranks,
                                                 pt.bytes, pt.measured_busbw, pt.predicted_busbw,
                                                 pt.measurement->source});
      }
    }
    if (!coll.not_fitted.empty()) {
      p.notes.push_back(
          fmt::format("collective parameters the measurements do not constrain, "
                      "kept from the start profile: {}",
                      fmt::join(coll.not_fitted, ", ")));
    }
  }
  p.provenance.insert(p.provenance.end(), measurements.provenance.begin(),
                      measurements.provenance.end());
  return p;
}

std::vector<CalibrationProfile> generate_builtin_profiles(const std::string& reference_dir,
                                                          const std::string& gemm_dir,
                                                          const std::string& created) {
  MeasurementSet data;
  for (const char* file : {"dev-gemm.json", "dev-collectives.json"}) {
    const std::string path = reference_dir + "/cases/" + file;
    MeasurementSet m = measurements_from_cases(load_cases(path));
    m.provenance.push_back({path, "cases_json", "", "", "", "reference cases (public sources)"});
    data.append(std::move(m));
  }
  data.append(gemm_cases_in(gemm_dir));
  // GPU-level compute fits.
  std::map<std::string, GpuFit> gpu_fits;
  for (const topologies::GpuSpec& gpu : topologies::gpu_catalog()) {
    std::vector<GemmMeasurement> gemms;
    for (const GemmMeasurement& m : data.gemms) {
      if (gpu_of_system(m.system) == gpu.id) gemms.push_back(m);
    }
    if (!gemms.empty())
      gpu_fits[gpu.id] = fit_gpu(gpu, gemms, models::default_compute_profile(gpu));
  }
  apply_relative_rates(gpu_fits);
  // System-level collective fits.
  std::map<std::string, CollectiveFitResult> system_fits;
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    const topologies::GpuSpec& gpu = *topologies::find_gpu(preset.gpu);
    CollectiveFitResult fit =
        fit_collectives(preset.name, data.collectives, models::default_collective_profile(gpu));
    if (!fit.points.empty()) system_fits.emplace(preset.name, std::move(fit));
  }
  std::vector<CalibrationProfile> out;
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    const topologies::GpuSpec& gpu = *topologies::find_gpu(preset.gpu);
    CalibrationProfile p;
    p.system = preset.name;
    p.gpu = gpu.id;
    p.created = created;
    p.compute = models::default_compute_profile(gpu, preset.cpu);
    p.collective = models::default_collective_profile(gpu);
    // Compute: each precision from this GPU's fit, else the nearest relative's.
    std::set<std::string> donors_used;
    for (size_t i = 0; i < p.compute.gemm.size(); ++i) {
      const Precision prec = static_cast<Precision>(i);
      if (gpu.peak_tflops(prec) <= 0) continue;
      const auto fit = resolve_fit(gpu_fits, gpu.id, prec);
      if (!fit) continue;
      p.compute.gemm[i] = fit->first;
      const GpuFit& from = gpu_fits.at(fit->second);
      if (const auto r = from.relative.find(prec); r != from.relative.end()) {
        p.notes.push_back(fmt::format("{} GEMMs{}: {}", topologies::to_string(prec),
                                      fit->second == gpu.id ? "" : " (" + fit->second + ")",
                                      r->second));
      }
      if (fit->second == gpu.id) {
        const auto q = from.quality.find(std::string(topologies::to_string(prec)));
        if (q != from.quality.end()) p.gemm_fit[q->first] = q->second;
      } else {
        donors_used.insert(fmt::format("{} from {}", topologies::to_string(prec), fit->second));
      }
    }
    // fp16 and bf16 share tensor-core rates and kernels.
    p.compute.gemm_for(Precision::fp16) = p.compute.gemm_for(Precision::bf16);
    if (gpu.generation == topologies::GpuGeneration::blackwell &&
        !p.compute.gemm_for(Precision::mxfp8).fitted) {
      p.compute.gemm_for(Precision::mxfp8) = p.compute.gemm_for(Precision::fp8);
    }
    p.compute.source = fmt::format(
        "GEMM: fitted to the reference GEMM cases of {}{}; attention, memory and launch: defaults "
        "({}, 0.8 of HBM, {})",
        gpu.id, donors_used.empty() ? "" : fmt::format(" ({})", fmt::join(donors_used, "; ")),
        models::attention_source(gpu.generation), models::launch_source(preset.cpu));
    // Collectives: this preset's fit, else its donor's.
    std::string from = preset.name;
    auto fit = system_fits.find(from);
    if (fit == system_fits.end()) {
      const auto d = system_donors().find(preset.name);
      if (d != system_donors().end()) {
        from = d->second;
        fit = system_fits.find(from);
      }
    }
    if (fit != system_fits.end()) {
      p.collective = fit->second.profile;
      if (from == preset.name) {
        p.collective_fit = fit->second.quality;
      } else {
        p.collective.source = fmt::format("taken from {} ({}): {}", from,
                                          "same NVLink generation, no measurements of its own",
                                          fit->second.profile.source);
      }
      if (!fit->second.not_fitted.empty()) {
        p.notes.push_back(
            fmt::format("collective parameters not constrained by {}'s data, left "
                        "at NCCL-constant defaults: {}",
                        from, fmt::join(fit->second.not_fitted, ", ")));
      }
    } else {
      p.notes.push_back(
          "no collective measurements for this system or a relative: NCCL-constant "
          "defaults");
    }
    p.provenance = data.provenance;
    p.notes.push_back("generated by `fabricsim calibrate builtin`; training cases are never read");
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace fabricsim::calibration
