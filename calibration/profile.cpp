#include "calibration/profile.hpp"

#include <fmt/format.h>

#include "sim/input_error.hpp"
#include "topologies/gpu_spec.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::calibration {
namespace {

constexpr const char* kFormat = "fabricsim-calibration";
constexpr int kVersion = 1;

std::string time_string(sim::Time t) {
  return fmt::format("{} ps", t.ps());
}

nlohmann::json quality_to_json(const FitQuality& q) {
  return {{"points", q.points},
          {"r2", q.r2},
          {"median_rel_error", q.median_rel_error},
          {"max_rel_error", q.max_rel_error},
          {"cv_median_rel_error", q.cv_median_rel_error}};
}

FitQuality quality_from_json(const sim::JsonValue& v) {
  sim::ObjectReader r = v.as_object();
  FitQuality q;
  q.points = r.required("points").as_non_negative_int32();
  q.r2 = r.required("r2").as_number();
  q.median_rel_error = r.required("median_rel_error").as_number();
  q.max_rel_error = r.required("max_rel_error").as_number();
  q.cv_median_rel_error = r.required("cv_median_rel_error").as_number();
  r.finish();
  return q;
}

}  // namespace

nlohmann::json profile_to_json(const CalibrationProfile& p) {
  nlohmann::json gemm = nlohmann::json::object();
  for (size_t i = 0; i < p.compute.gemm.size(); ++i) {
    const models::GemmParams& g = p.compute.gemm[i];
    gemm[std::string(topologies::to_string(static_cast<topologies::Precision>(i)))] = {
        {"max_efficiency", g.max_efficiency},
        {"k_half", g.k_half},
        {"tile_m", g.tile_m},
        {"tile_n", g.tile_n},
        {"launch", time_string(g.launch)},
        {"fitted", g.fitted}};
  }
  const models::ComputeProfile& c = p.compute;
  const models::CollectiveProfile& k = p.collective;
  nlohmann::json fit_gemm = nlohmann::json::object();
  for (const auto& [dtype, q] : p.gemm_fit)
    fit_gemm[dtype] = quality_to_json(q);
  nlohmann::json provenance = nlohmann::json::array();
  for (const Provenance& pr : p.provenance) {
    provenance.push_back({{"file", pr.file},
                          {"format", pr.format},
                          {"gpu_name", pr.gpu_name},
                          {"versions", pr.versions},
                          {"date", pr.date},
                          {"notes", pr.notes}});
  }
  nlohmann::json out = {
      {"format", kFormat},
      {"version", kVersion},
      {"system", p.system},
      {"gpu", p.gpu},
      {"created", p.created},
      {"compute",
       {{"gemm", gemm},
        {"attention_forward_efficiency", c.attention_forward_efficiency},
        {"attention_backward_efficiency", c.attention_backward_efficiency},
        {"attention_span_half", c.attention_span_half},
        {"kernel_gap", time_string(c.kernel_gap)},
        {"memory_efficiency", c.memory_efficiency},
        {"kernel_launch", time_string(c.kernel_launch)},
        {"comm_sm_contention", c.comm_sm_contention},
        {"sustained_efficiency", c.sustained_efficiency},
        {"sustained_source", c.sustained_source},
        {"source", c.source}}},
      {"collective",
       {{"nvlink_efficiency", k.nvlink_efficiency},
        {"network_efficiency", k.network_efficiency},
        {"pcie_efficiency", k.pcie_efficiency},
        {"nvls_factor", k.nvls_factor},
        {"ll_wire_factor", k.ll_wire_factor},
        {"ll128_wire_factor", k.ll128_wire_factor},
        {"latency_scale", k.latency_scale},
        {"launch_overhead", time_string(k.launch_overhead)},
        {"p2p_latency_intra", time_string(k.p2p_latency_intra)},
        {"p2p_latency_inter", time_string(k.p2p_latency_inter)},
        {"channels", k.channels},
        {"source", k.source}}},
      {"fit",
       {{"gemm", fit_gemm},
        {"collective", p.collective_fit ? quality_to_json(*p.collective_fit) : nullptr}}},
      {"provenance", provenance},
      {"notes", p.notes}};
  // Written only when set, so profiles from before the key read and write back unchanged.
  if (c.fitted_in_step) out["compute"]["fitted_in_step"] = true;
  return out;
}

namespace {

// Efficiencies divide rates: 0 would mean "never", and anything below 1% is a typo (the built-in
// profiles are all above 40%) that would saturate the simulator's clock.
constexpr double kMinEfficiency = 0.01;

double as_efficiency(const sim::JsonValue& v) {
  const double x = v.as_number();
  if (!(x >= kMinEfficiency && x <= 1)) v.fail("an efficiency between 0.01 and 1");
  return x;
}

}  // namespace

CalibrationProfile profile_from_json(const sim::JsonValue& root) {
  sim::ObjectReader top = root.as_object();
  const sim::JsonValue format = top.required("format");
  if (format.as_string() != kFormat) format.fail(fmt::format("\"{}\"", kFormat));
  const sim::JsonValue version = top.required("version");
  if (version.as_int() != kVersion) version.fail(fmt::format("version {}", kVersion));
  CalibrationProfile p;
  p.system = top.required("system").as_string();
  p.gpu = top.required("gpu").as_string();
  const topologies::GpuSpec* gpu = topologies::find_gpu(p.gpu);
  if (gpu == nullptr) top.required("gpu").fail("a known GPU id (e.g. H100-SXM5)");
  p.compute = models::default_compute_profile(*gpu);
  p.collective = models::default_collective_profile(*gpu);
  if (auto created = top.optional("created")) p.created = created->as_string();
  {
    sim::ObjectReader c = top.required("compute").as_object();
    sim::ObjectReader gemm = c.required("gemm").as_object();
    for (size_t i = 0; i < p.compute.gemm.size(); ++i) {
      const std::string name(topologies::to_string(static_cast<topologies::Precision>(i)));
      auto v = gemm.optional(name);
      if (!v) continue;
      sim::ObjectReader g = v->as_object();
      models::GemmParams& params = p.compute.gemm[i];
      params.max_efficiency = as_efficiency(g.required("max_efficiency"));
      params.k_half = g.required("k_half").as_number();
      if (params.k_half < 0) g.required("k_half").fail("a non-negative number");
      params.tile_m = g.required("tile_m").as_positive_int32();
      params.tile_n = g.required("tile_n").as_positive_int32();
      params.launch = g.required("launch").as_time_or_zero();
      params.fitted = g.required("fitted").as_bool();
      g.finish();
    }
    gemm.finish();
    p.compute.attention_forward_efficiency =
        as_efficiency(c.required("attention_forward_efficiency"));
    p.compute.attention_backward_efficiency =
        as_efficiency(c.required("attention_backward_efficiency"));
    p.compute.attention_span_half = c.required("attention_span_half").as_number();
    if (p.compute.attention_span_half < 0)
      c.required("attention_span_half").fail("a non-negative number");
    p.compute.kernel_gap = c.required("kernel_gap").as_time_or_zero();
    p.compute.memory_efficiency = as_efficiency(c.required("memory_efficiency"));
    p.compute.kernel_launch = c.required("kernel_launch").as_time_or_zero();
    p.compute.comm_sm_contention = c.required("comm_sm_contention").as_number();
    // Optional (profiles written before `calibrate run` existed): 1, no run anchor.
    if (auto e = c.optional("sustained_efficiency")) {
      p.compute.sustained_efficiency = e->as_positive_number();
      if (p.compute.sustained_efficiency > 4) e->fail("a positive number of at most 4");
    }
    if (auto e = c.optional("sustained_source")) p.compute.sustained_source = e->as_string();
    if (auto e = c.optional("fitted_in_step")) p.compute.fitted_in_step = e->as_bool();
    p.compute.source = c.required("source").as_string();
    c.finish();
  }
  {
    sim::ObjectReader k = top.required("collective").as_object();
    auto efficiency = [&](const char* key) { return as_efficiency(k.required(key)); };
    p.collective.nvlink_efficiency = efficiency("nvlink_efficiency");
    p.collective.network_efficiency = efficiency("network_efficiency");
    p.collective.pcie_efficiency = efficiency("pcie_efficiency");
    p.collective.nvls_factor = efficiency("nvls_factor");
    p.collective.ll_wire_factor = k.required("ll_wire_factor").as_positive_number();
    p.collective.ll128_wire_factor = k.required("ll128_wire_factor").as_positive_number();
    p.collective.latency_scale = k.required("latency_scale").as_number();
    if (p.collective.latency_scale < 0) k.required("latency_scale").fail("a non-negative number");
    p.collective.launch_overhead = k.required("launch_overhead").as_time_or_zero();
    p.collective.p2p_latency_intra = k.required("p2p_latency_intra").as_time_or_zero();
    p.collective.p2p_latency_inter = k.required("p2p_latency_inter").as_time_or_zero();
    p.collective.channels = k.required("channels").as_positive_int32();
    if (p.collective.channels < 2) k.required("channels").fail("at least 2 channels");
    p.collective.source = k.required("source").as_string();
    k.finish();
  }
  if (auto fit = top.optional("fit")) {
    sim::ObjectReader f = fit->as_object();
    if (auto g = f.optional("gemm")) {
      sim::ObjectReader gr = g->as_object();
      for (const std::string& key : gr.keys()) {
        p.gemm_fit[key] = quality_from_json(gr.required(key));
      }
      gr.finish();
    }
    if (auto c = f.optional("collective")) p.collective_fit = quality_from_json(*c);
    f.finish();
  }
  if (auto prov = top.optional("provenance")) {
    for (const sim::JsonValue& v : prov->as_array()) {
      sim::ObjectReader r = v.as_object();
      Provenance pr;
      pr.file = r.required("file").as_string();
      pr.format = r.required("format").as_string();
      pr.gpu_name = r.required("gpu_name").as_string();
      pr.versions = r.required("versions").as_string();
      pr.date = r.required("date").as_string();
      pr.notes = r.required("notes").as_string();
      r.finish();
      p.provenance.push_back(std::move(pr));
    }
  }
  if (auto notes = top.optional("notes")) {
    for (const sim::JsonValue& v : notes->as_array())
      p.notes.push_back(v.as_string());
  }
  top.finish();
  return p;
}

CalibrationProfile load_profile(const std::string& path) {
  const sim::JsonDocument doc = sim::load_json_file(path);
  return profile_from_json(doc.root());
}

CalibrationProfile profile_for(const std::string& system, const topologies::GpuSpec& gpu,
                               const std::string& path) {
  if (!path.empty()) {
    CalibrationProfile p = load_profile(path);
    if (p.gpu != gpu.id) {
      throw sim::InputError(
          path, "/gpu",
          fmt::format("the profile is for GPU {}, but {} has {}", p.gpu, system, gpu.id));
    }
    return p;
  }
  if (const CalibrationProfile* builtin = builtin_profile(system)) return *builtin;
  CalibrationProfile p = default_profile(system, gpu);
  p.notes.push_back("no built-in profile: datasheet and NCCL-constant defaults");
  return p;
}

CalibrationProfile default_profile(const std::string& system, const topologies::GpuSpec& gpu) {
  CalibrationProfile p;
  p.system = system;
  p.gpu = gpu.id;
  const topologies::SystemPreset* preset = topologies::find_system(system);
  p.compute = models::default_compute_profile(
      gpu, preset != nullptr ? preset->cpu : topologies::HostCpu::x86_intel);
  p.collective = models::default_collective_profile(gpu);
  return p;
}

}  // namespace fabricsim::calibration
