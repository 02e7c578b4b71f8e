#include "api/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "api/evaluator.hpp"
#include "api/layer_memory_fit.hpp"
#include "api/plan_search.hpp"
#include "api/run_calibration.hpp"
#include "api/scaling_series.hpp"
#include "api/scenario.hpp"
#include "api/training_case.hpp"
#include "api/training_run.hpp"
#include "calibration/collective_fit.hpp"
#include "calibration/gemm_fit.hpp"
#include "calibration/importers.hpp"
#include "calibration/profile_fit.hpp"
#include "models/collective_algorithms.hpp"
#include "models/collective_model.hpp"
#include "models/compute_model.hpp"
#include "models/mlperf_benchmark.hpp"
#include "models/moe_alltoall.hpp"
#include "models/system.hpp"
#include "sim/input_error.hpp"
#include "topologies/router.hpp"
#include "topologies/spec_error.hpp"

namespace fabricsim::api {
namespace {

/// Systems and routers built once per (preset, GPU count) and shared by the cases using them.
class SystemCache {
 public:
  struct Entry {
    models::System system;
    std::unique_ptr<topologies::Router> router;
  };
  Entry& get(const std::string& preset, int gpus) {
    const auto key = std::make_pair(preset, gpus);
    auto it = entries_.find(key);
    if (it != entries_.end()) return *it->second;
    auto entry = std::make_unique<Entry>();
    entry->system = models::make_system(preset, gpus, "case", "/system");
    entry->router = std::make_unique<topologies::Router>(*entry->system.topology,
                                                         topologies::RoutingStrategy::ecmp);
    return *entries_.emplace(key, std::move(entry)).first->second;
  }

 private:
  std::map<std::pair<std::string, int>, std::unique_ptr<Entry>> entries_;
};

/// Profiles fitted without one source's cases (ValidationOptions::hold_out_source), per
/// (held-out source, system).
class HeldOutFits {
 public:
  explicit HeldOutFits(const std::vector<calibration::Case>& cases)
      : measurements_(calibration::measurements_from_cases(cases)) {
    for (const calibration::Case& c : cases)
      source_of_[c.id] = c.source;
  }

  models::CollectiveProfile collective(const calibration::Case& held,
                                       const models::System& system) {
    const auto key = std::make_pair(held.source, held.system);
    if (auto it = collective_.find(key); it != collective_.end()) return it->second;
    std::vector<calibration::CollectiveMeasurement> others;
    for (const auto& m : measurements_.collectives) {
      if (m.system == held.system && source_of_.at(m.source) != held.source) others.push_back(m);
    }
    const models::CollectiveProfile start = models::default_collective_profile(system.gpu);
    const models::CollectiveProfile p =
        others.empty() ? start : calibration::fit_collectives(held.system, others, start).profile;
    return collective_.emplace(key, p).first->second;
  }

  models::ComputeProfile compute(const calibration::Case& held, const topologies::GpuSpec& gpu,
                                 topologies::Precision precision) {
    const auto key = std::make_tuple(held.source, gpu.id, static_cast<int>(precision));
    if (auto it = compute_.find(key); it != compute_.end()) return it->second;
    std::vector<calibration::GemmMeasurement> others;
    for (const auto& g : measurements_.gemms) {
      if (calibration::gpu_of_system(g.system) != gpu.id) continue;
      if (calibration::gemm_precision(g.dtype) != precision) continue;
      if (source_of_.at(g.source) != held.source) others.push_back(g);
    }
    models::ComputeProfile p = models::default_compute_profile(gpu);
    if (!others.empty()) {
      p.gemm_for(precision) = calibration::fit_gemm(gpu, precision, others, p).params;
    }
    return compute_.emplace(key, p).first->second;
  }

 private:
  calibration::MeasurementSet measurements_;
  std::map<std::string, std::string> source_of_;  // case id -> publication
  std::map<std::pair<std::string, std::string>, models::CollectiveProfile> collective_;
  std::map<std::tuple<std::string, std::string, int>, models::ComputeProfile> compute_;
};

/// A GEMM case: the compute model's TFLOP/s for its shape on the case's GPU. The built-in
/// profiles are fitted to these same public measurements, so this is an in-sample check of the
/// fit (docs/calibration.md reports the cross-validated error).
void validate_gemm(const calibration::Case& c, const ValidationOptions& options,
                   HeldOutFits* held_out, ValidationReport& report) {
  const calibration::CaseGemm& g = *c.gemm;
  const auto precision = calibration::gemm_precision(g.dtype);
  const topologies::SystemPreset* preset = topologies::find_system(c.system);
  if (!precision || preset == nullptr) {
    report.skipped.push_back({c.id, calibration::unmodelled_gemm_dtype(g.dtype)});
    return;
  }
  const topologies::GpuSpec& gpu = *topologies::find_gpu(preset->gpu);
  if (gpu.peak_tflops(*precision) <= 0) {
    report.skipped.push_back(
        {c.id, fmt::format("{} has no {} tensor-core rate in the reference", gpu.id, g.dtype)});
    return;
  }
  if (!c.measured.tflops) {
    report.skipped.push_back({c.id, "no measured tflops"});
    return;
  }
  const models::ComputeProfile compute =
      held_out != nullptr ? held_out->compute(c, gpu, *precision)
                          : calibration::profile_for(c.system, gpu, options.calibration).compute;
  const double flops = 2.0 * static_cast<double>(g.m) * g.n * g.k * g.batch;
  const double seconds = models::gemm_seconds(gpu, compute, *precision, static_cast<double>(g.m),
                                              static_cast<double>(g.n), static_cast<double>(g.k),
                                              static_cast<double>(g.batch));
  ValidationRow row;
  row.id = c.id;
  row.source = c.source;
  row.system = c.system;
  row.metric = "tflops";
  row.predicted = flops / seconds * 1e-12;
  row.measured = *c.measured.tflops;
  row.error = (row.predicted - row.measured) / row.measured;
  row.detail = fmt::format("{}x{}x{} {} on {}", g.m, g.n, g.k, g.dtype, gpu.id);
  report.rows.push_back(std::move(row));
}

/// A DeepEP dispatch/combine case: the MoE all-to-all model on the case's system. DeepEP's
/// benchmarks route DeepSeek-V3's 256 experts (tests/legacy/test_*.py defaults) on 24 SMs.

/// The collective profile a case is predicted with: fitted to the other sources (held out) or
/// the option's / built-in profile of its system.
models::CollectiveProfile collective_profile(const calibration::Case& c,
                                             const SystemCache::Entry& entry,
                                             const ValidationOptions& options,
                                             HeldOutFits* held_out) {
  if (held_out != nullptr) return held_out->collective(c, entry.system);
  return calibration::profile_for(entry.system.name, entry.system.gpu, options.calibration)
      .collective;
}

void validate_moe(const calibration::Case& c, const ValidationOptions& options, SystemCache& cache,
                  HeldOutFits* held_out, ValidationReport& report) {
  const calibration::CaseCollective& coll = *c.collective;
  if (!coll.moe_payload) {
    report.skipped.push_back({c.id, "a MoE dispatch/combine case needs collective.moe_payload"});
    return;
  }
  const calibration::CaseMoePayload& payload = *coll.moe_payload;
  const auto kernel = models::parse_moe_kernel(payload.kernel);
  if (!kernel) {
    report.skipped.push_back(
        {c.id, fmt::format("MoE kernel '{}' is not modelled", payload.kernel)});
    return;
  }
  const std::string dtype = c.precision.value_or("bf16");
  if (dtype != "fp8" && dtype != "bf16" && dtype != "fp16") {
    report.skipped.push_back({c.id, fmt::format("MoE payload dtype '{}' is not modelled", dtype)});
    return;
  }
  SystemCache::Entry& entry = cache.get(c.system, c.gpus);
  const models::CollectiveProfile profile = collective_profile(c, entry, options, held_out);
  const models::GroupLayout group =
      models::make_group_layout(*entry.system.topology, models::first_ranks(c.gpus));
  models::MoeAlltoallRequest request;
  request.kernel = *kernel;
  request.direction =
      coll.op == "moe_dispatch" ? models::MoeDirection::dispatch : models::MoeDirection::combine;
  request.ranks = group.size();
  request.ranks_per_node = group.ppn;
  request.tokens_per_rank = payload.tokens_per_rank;
  request.hidden = payload.hidden;
  request.top_k = payload.top_k;
  request.topk_groups = payload.topk_groups;
  request.fp8 = dtype == "fp8";
  const models::MoeAlltoallResult r = models::moe_alltoall(
      request, models::moe_link_rates(entry.system, group), models::moe_kernel_profile(profile));
  const std::string detail = fmt::format(
      "{} {}, {} bytes reported, bound by {}, {:.2f} nodes / {:.2f} ranks per token",
      payload.kernel, coll.op, r.reported_link, r.binding, r.distinct_nodes, r.distinct_ranks);
  bool any = false;
  auto add = [&](const char* metric, double predicted, double measured) {
    report.rows.push_back({c.id, c.source, c.system, metric, std::nullopt, predicted, measured,
                           (predicted - measured) / measured, detail});
    any = true;
  };
  if (c.measured.bottleneck_bw_GBps) {
    add("bottleneck_bw_GBps", r.bottleneck_bw_GBps, *c.measured.bottleneck_bw_GBps);
  }
  if (c.measured.latency_us) add("latency_us", r.seconds * 1e6, *c.measured.latency_us);
  if (!any) report.skipped.push_back({c.id, "no primary metric this validator predicts"});
}

void validate_collective(const calibration::Case& c, const ValidationOptions& options,
                         SystemCache& cache, HeldOutFits* held_out, ValidationReport& report) {
  const calibration::CaseCollective& coll = *c.collective;
  if (coll.op == "moe_dispatch" || coll.op == "moe_combine") {
    validate_moe(c, options, cache, held_out, report);
    return;
  }
  const auto op = models::parse_collective_op(coll.op);
  if (!op) {
    report.skipped.push_back({c.id, fmt::format("collective op '{}' is not modelled", coll.op)});
    return;
  }
  SystemCache::Entry& entry = cache.get(c.system, c.gpus);
  const models::CollectiveProfile profile = collective_profile(c, entry, options, held_out);
  models::CollectiveRequest request;
  request.op = *op;
  request.ranks = models::first_ranks(c.gpus);
  if (coll.algorithm) {
    request.algorithm = models::parse_algorithm(*coll.algorithm);
    if (!request.algorithm) {
      report.skipped.push_back(
          {c.id, fmt::format("algorithm '{}' is not modelled", *coll.algorithm)});
      return;
    }
  }
  auto predict = [&](double size) {
    request.size_bytes = size;
    return models::simulate_collective(entry.system, profile, *entry.router, request,
                                       models::Backend::flow);
  };
  auto add = [&](const std::string& metric, std::optional<double> size, double predicted,
                 double measured, const models::CollectiveResult& r) {
    report.rows.push_back(
        {c.id, c.source, c.system, metric, size, predicted, measured,
         (predicted - measured) / measured,
         fmt::format("{}/{}", models::to_string(r.algorithm), models::to_string(r.protocol))});
  };
  bool any = false;
  if (c.measured.busbw_curve) {
    for (const auto& [size, bw] : *c.measured.busbw_curve) {
      const auto r = predict(size);
      add("busbw_GBps", size, r.busbw_GBps, bw, r);
    }
    any = true;
  }
  if (c.measured.algbw_curve) {
    for (const auto& [size, bw] : *c.measured.algbw_curve) {
      const auto r = predict(size);
      add("algbw_GBps", size, r.algbw_GBps, bw, r);
    }
    any = true;
  }
  if (c.measured.busbw_GBps && !c.measured.busbw_curve) {
    const auto r = predict(options.default_large_message);
    add("busbw_GBps", std::nullopt, r.busbw_GBps, *c.measured.busbw_GBps, r);
    any = true;
  }
  if (c.measured.latency_us) {
    const auto r = predict(8);
    add("latency_us", 8.0, r.time.us(), *c.measured.latency_us, r);
    any = true;
  }
  if (!any) report.skipped.push_back({c.id, "no primary metric this validator predicts"});
}

/// The scenario a training case runs. `no_micro_batch_fits`, when given, is set when the case
/// leaves its micro-batch unstated and none fits as stated (it then runs micro-batch 1).
Scenario training_scenario(const calibration::Case& c, const ValidationOptions& options,
                           bool* no_micro_batch_fits = nullptr) {
  nlohmann::json doc = training_case_scenario(c);
  if (!options.calibration.empty()) doc["calibration"] = options.calibration;
  apply_assignments(doc, options.scenario_sets, "<command line>");
  const sim::JsonDocument parsed(doc, "case " + c.id);
  const CasePlanSizes sizes = case_plan_sizes(c);
  Scenario scenario = read_scenario(parsed.root(), !sizes.searched);
  if (!sizes.searched && !sizes.micro_batch_searched) return scenario;
  // An unstated plan: the best one the search finds with what the case does state (analytical
  // ranking), as a user of that software would choose it. Only the micro-batch unstated: that
  // one size, everything else as the case and its defaults give it.
  PlanConstraints constraints;
  constraints.fixed = sizes.fixed;
  if (sizes.micro_batch_searched) {
    const models::ParallelPlan& p = scenario.plan;
    constraints.fixed = {{"tp", p.tp}, {"pp", p.pp}, {"cp", p.cp},    {"dp", p.dp},
                         {"ep", p.ep}, {"vp", p.vp}, {"zero", p.zero}};
    constraints.recompute = {p.recompute};
    constraints.search_overlap = false;
    constraints.search_order = false;
    constraints.allow_unbalanced = p.balanced_pipeline;
    constraints.max_micro_batch = std::max(1, scenario.training.global_batch / std::max(1, p.dp));
  }
  SearchOptions search;
  search.top = 0;
  // The search keeps to plans that fit, whatever the case scenario's ignore_memory says.
  Scenario base = scenario;
  base.ignore_memory = false;
  const PlanSearch found = search_plans(base, constraints, search);
  // No micro-batch fits as stated: micro-batch 1, and the layers recomputed or offloaded to fit
  // as for any case (fit_memory).
  if (found.ranked.empty() && !sizes.searched) {
    if (no_micro_batch_fits != nullptr) *no_micro_batch_fits = true;
    return scenario;
  }
  if (found.ranked.empty()) {
    throw sim::InputError("case " + c.id, "/parallelism",
                          fmt::format("the case does not state its plan and no plan with what it "
                                      "states fits ({} candidates)",
                                      found.candidates));
  }
  scenario.plan = found.ranked.front().plan;
  return scenario;
}

/// What a training case measured of `metric`.
std::optional<double> measured_of(const calibration::Case& c, RunMetric metric) {
  const calibration::CaseMeasured& m = c.measured;
  switch (metric) {
    case RunMetric::step_time_s:
      return m.step_time_s;
    case RunMetric::tokens_per_s_per_gpu:
      return m.tokens_per_s_per_gpu;
    case RunMetric::tflops_per_gpu:
      return m.tflops_per_gpu;
    case RunMetric::hw_tflops_per_gpu:
      return m.hw_tflops_per_gpu;
    case RunMetric::mfu:
      return m.mfu;
    case RunMetric::hfu:
      return m.hfu;
  }
  return std::nullopt;
}

/// A case's scenario prepared on `cluster`. The published run fitted in memory: unless the case
/// states its recomputation, its plan gets the layers recomputed or offloaded that recipes would
/// use (fit_layer_memory), lowered again only when that changes it.
struct CasePlan {
  PreparedPlan prepared;
  LayerMemoryFit fit;
};
CasePlan prepare_case(const calibration::Case& c, const Evaluator& cluster,
                      const Scenario& scenario) {
  CasePlan out{cluster.prepare(scenario), {scenario.plan, false, ""}};
  if (c.parallelism->recompute) return out;
  out.fit = fit_layer_memory(cluster, out.prepared);
  if (out.fit.changed) {
    Scenario fitted = scenario;
    fitted.plan = out.fit.plan;
    out.prepared = cluster.prepare(fitted);
  }
  return out;
}

}  // namespace

nlohmann::json case_scenario_json(const calibration::Case& c, const ValidationOptions& options) {
  const Scenario case_scenario = training_scenario(c, options);
  const Evaluator cluster(case_scenario);
  return scenario_to_json(prepare_case(c, cluster, case_scenario).prepared.scenario);
}

namespace {

/// An MLPerf Training run of a case's scenario: its benchmark and timed region in steps, or why
/// it has none.
struct MlperfTime {
  const models::MlperfBenchmark* benchmark = nullptr;
  std::optional<models::MlperfRun> run;
  std::string failure;
  std::string summary() const {
    return fmt::format(
        "MLPerf {}: {:.0f} samples to converge{}, {} evaluations of {} validation steps ({:.1f} "
        "steps)",
        benchmark->name, run->samples,
        run->extrapolated ? fmt::format(" (extrapolated past the largest reference batch, {})",
                                        benchmark->convergence.back().global_batch)
                          : "",
        run->evaluations, run->validation_steps, run->eval_steps);
  }
};

/// The benchmark the scenario trains and its run: validation steps cost the forward FLOPs of
/// their global batch at the training step's executed rate (the pipeline fills for a forward-only
/// step as for a training step, in proportion to its work).
MlperfTime mlperf_time(const Scenario& scenario, const models::Workload& workload) {
  MlperfTime t;
  const int seq_len = models::sequence_length(scenario.training, scenario.model);
  t.benchmark = models::mlperf_benchmark_for(scenario.training.task, scenario.model, seq_len);
  if (t.benchmark == nullptr) {
    t.failure = fmt::format(
        "no MLPerf Training benchmark trains {} layers of width {} at {} tokens for this task "
        "(gpt3, llama2_70b_lora, llama31_8b and llama31_405b are modelled)",
        scenario.model.layers, scenario.model.hidden, seq_len);
    return t;
  }
  const double forward_per_sequence =
      models::flops_per_token(scenario.model).total(scenario.training.causal) * seq_len;
  const double fraction =
      workload.executed_flops > 0 ? forward_per_sequence / workload.executed_flops : 0.0;
  t.run = models::mlperf_run(*t.benchmark, scenario.training.global_batch, fraction);
  if (!t.run) {
    t.failure = fmt::format("{} needs a positive global batch", t.benchmark->name);
  }
  return t;
}

/// `compute`: a run-calibrated compute profile in place of the calibration's (anchored).
void validate_training(const calibration::Case& c, const ValidationOptions& options,
                       ValidationReport& report, const models::ComputeProfile* compute = nullptr) {
  bool no_micro_batch_fits = false;
  const Scenario case_scenario = training_scenario(c, options, &no_micro_batch_fits);
  const Fidelity fidelity = fidelity_of(case_scenario.simulation.backend);
  const Evaluator cluster = compute ? Evaluator(case_scenario, *compute) : Evaluator(case_scenario);
  CasePlan plan = prepare_case(c, cluster, case_scenario);
  const LayerMemoryFit& fit = plan.fit;
  const Scenario scenario = plan.prepared.scenario;
  const TrainingReport r = cluster.report(std::move(plan.prepared), fidelity);
  const TrainingMetrics& m = r.metrics;
  std::string detail = fmt::format(
      "step {:.3f} s, memory {:.0f}% of HBM{}", m.step_time_s,
      100 * r.memory.stages[static_cast<size_t>(r.memory.worst_stage)].total() / r.memory.capacity,
      r.memory.fits ? "" : " (does not fit)");
  if (fit.changed) detail += ", " + fit.summary;
  const CasePlanSizes sizes = case_plan_sizes(c);
  if (sizes.searched) {
    const models::ParallelPlan& p = scenario.plan;
    detail += fmt::format(", plan not stated: searched TP{} PP{} DP{} CP{} EP{} mb{}", p.tp, p.pp,
                          p.dp, p.cp, p.ep, p.micro_batch);
  } else if (no_micro_batch_fits) {
    detail += ", micro-batch not stated: none fits as stated, mb1";
  } else if (sizes.micro_batch_searched) {
    detail += fmt::format(", micro-batch not stated: searched mb{}", scenario.plan.micro_batch);
  }
  if (const int offload = case_offload_layers(c); offload > 0 && !fit.changed)
    detail += fmt::format(", offloads {} layers per chunk as its recipe does", offload);
  if (case_plan_fix(c) != nullptr)
    detail += ", plan of the release's scripts (its table misprints it)";
  // In the order the rows have always been listed.
  for (const RunMetric metric :
       {RunMetric::tflops_per_gpu, RunMetric::hw_tflops_per_gpu, RunMetric::mfu, RunMetric::hfu,
        RunMetric::step_time_s, RunMetric::tokens_per_s_per_gpu}) {
    const std::optional<double> measured = measured_of(c, metric);
    if (!measured) continue;
    const double predicted = metric_value(m, metric);
    report.rows.push_back({c.id, c.source, c.system, std::string(to_string(metric)), std::nullopt,
                           predicted, *measured, (predicted - *measured) / *measured, detail});
  }
  if (c.measured.time_to_train_min) {
    const MlperfTime t = mlperf_time(scenario, r.workload);
    if (!t.run) {
      report.skipped.push_back({c.id, "time_to_train_min: " + t.failure});
      return;
    }
    const double predicted = m.step_time_s * t.run->steps() / 60.0;
    const double measured = *c.measured.time_to_train_min;
    report.rows.push_back({c.id, c.source, c.system, "time_to_train_min", std::nullopt, predicted,
                           measured, (predicted - measured) / measured,
                           detail + ", " + t.summary()});
  }
}

/// The measurement an anchor is fitted to: what the source measured most directly (throughput
/// or step time before the FLOP-convention metrics, whose counting may differ from ours).
std::optional<RunMeasurement> anchor_measurement(const calibration::Case& c) {
  for (const RunMetric metric :
       {RunMetric::tokens_per_s_per_gpu, RunMetric::step_time_s, RunMetric::tflops_per_gpu,
        RunMetric::hw_tflops_per_gpu, RunMetric::mfu, RunMetric::hfu}) {
    if (const std::optional<double> value = measured_of(c, metric))
      return RunMeasurement{metric, *value, "case " + c.id};
  }
  return std::nullopt;
}

/// Where a case sits among its group's runs: the logarithms of its model size (the stated
/// parameter count, else the 12 L h^2 of its layers) and of its sequence length (2048 unstated,
/// as its scenario reads it).
std::array<double, 2> anchor_position(const calibration::Case& c) {
  if (!c.model) return {0.0, 0.0};
  const calibration::CaseModel& m = *c.model;
  const double params = m.params.value_or(12.0 * m.layers * double(m.hidden) * m.hidden);
  return {std::log(params), std::log(double(m.seq_len.value_or(2048)))};
}

/// The anchors of the training cases: per group, of the cases with the fewest GPUs, the one
/// nearest the rest of its group (the least summed distance between anchor positions; file
/// order on a tie). A one-run calibration carries best to runs like it: a group's extreme shape
/// (its largest model at its longest sequence, often near the memory limit) would carry its own
/// misses to every other case. Only shapes are read, no measurement.
std::map<std::string, size_t> anchors_of(const std::vector<calibration::Case>& cases) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].kind == calibration::CaseKind::training)
      groups[anchor_group(cases[i])].push_back(i);
  }
  std::map<std::string, size_t> anchors;
  for (const auto& [group, members] : groups) {
    int fewest = cases[members.front()].gpus;
    for (const size_t i : members)
      fewest = std::min(fewest, cases[i].gpus);
    std::vector<std::array<double, 2>> positions;
    for (const size_t i : members)
      positions.push_back(anchor_position(cases[i]));
    std::optional<size_t> best;
    double best_distance = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      if (cases[members[k]].gpus != fewest) continue;
      double distance = 0;
      for (const std::array<double, 2>& there : positions)
        distance += std::hypot(positions[k][0] - there[0], positions[k][1] - there[1]);
      if (!best || distance < best_distance) {
        best = members[k];
        best_distance = distance;
      }
    }
    anchors.emplace(group, *best);
  }
  return anchors;
}

/// Fits the anchor of a group; nullopt (and the reason, for every case of the group) if it
/// cannot be fitted.
std::optional<models::ComputeProfile> fit_anchor(const calibration::Case& c,
                                                 const ValidationOptions& options,
                                                 ValidationReport& report, std::string& failure) {
  try {
    std::optional<RunMeasurement> m = anchor_measurement(c);
    const Scenario case_scenario = training_scenario(c, options);
    const Evaluator cluster(case_scenario);
    const PreparedPlan prepared = prepare_case(c, cluster, case_scenario).prepared;
    const Scenario& scenario = prepared.scenario;
    if (!m && c.measured.time_to_train_min) {
      // A time to train is the step time times the run's steps, which the workload fixes.
      const MlperfTime t = mlperf_time(scenario, prepared.workload);
      if (!t.run) throw sim::InputError("case " + c.id, "/measured/time_to_train_min", t.failure);
      m = RunMeasurement{RunMetric::step_time_s,
                         *c.measured.time_to_train_min * 60 / t.run->steps(),
                         "case " + c.id + " (time to train over its MLPerf run's steps)"};
    }
    if (!m) throw sim::InputError("case " + c.id, "/measured", "no metric to fit an anchor to");
    const RunFit fit = fit_sustained_efficiency(
        cluster, scenario, *m, fidelity_of(scenario.simulation.backend), "/measured");
    report.anchors.push_back({c.id, anchor_group(c), std::string(to_string(m->metric)), m->value,
                              fit.predicted_before,
                              zero_shot_error(m->metric, fit.predicted_before, m->value),
                              fit.compute.sustained_efficiency, 0});
    return fit.compute;
  } catch (const std::exception& e) {
    failure = fmt::format("its group's anchor {} could not be fitted: {}", c.id, e.what());
    report.skipped.push_back({c.id, "anchor not fitted: " + std::string(e.what())});
    return std::nullopt;
  }
}

}  // namespace

std::string anchor_group(const calibration::Case& c) {
  const std::string framework =
      c.framework ? c.framework->name + " " + c.framework->version.value_or("?") : "unknown";
  return fmt::format("{} | {} | {} | {}", c.source, c.system, framework, c.precision.value_or("?"));
}

ValidationReport validate_cases(const std::vector<calibration::Case>& cases,
                                const ValidationOptions& options) {
  ValidationReport report;
  SystemCache cache;
  std::optional<HeldOutFits> held_out;
  if (options.hold_out_source) held_out.emplace(cases);
  HeldOutFits* fits = held_out ? &*held_out : nullptr;
  // Anchored: each group's fit, made when the group first comes up in file order.
  const std::map<std::string, size_t> anchors =
      options.anchor ? anchors_of(cases) : std::map<std::string, size_t>{};
  struct GroupFit {
    std::optional<models::ComputeProfile> compute;
    std::string failure;
    size_t anchor_row = 0;
  };
  std::map<std::string, GroupFit> group_fits;
  auto group_fit = [&](const std::string& group) -> GroupFit& {
    auto it = group_fits.find(group);
    if (it != group_fits.end()) return it->second;
    GroupFit& g = group_fits[group];
    const calibration::Case& anchor = cases[anchors.at(group)];
    g.compute = fit_anchor(anchor, options, report, g.failure);
    if (g.compute) g.anchor_row = report.anchors.size() - 1;
    return g;
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const calibration::Case& c = cases[i];
    if (options.anchor && c.kind == calibration::CaseKind::training) {
      const std::string group = anchor_group(c);
      GroupFit& g = group_fit(group);
      if (anchors.at(group) == i) continue;  // the anchor: fitted, never scored
      if (!g.compute) {
        report.skipped.push_back({c.id, g.failure});
        continue;
      }
      try {
        validate_training(c, options, report, &*g.compute);
        ++report.anchors[g.anchor_row].scored;
      } catch (const topologies::SpecError& e) {
        report.skipped.push_back({c.id, fmt::format("cannot build the system: {}", e.what())});
      } catch (const sim::InputError& e) {
        report.skipped.push_back({c.id, fmt::format("not a valid scenario: {}", e.what())});
      }
      continue;
    }
    try {
      switch (c.kind) {
        case calibration::CaseKind::collective:
          validate_collective(c, options, cache, fits, report);
          break;
        case calibration::CaseKind::gemm:
          validate_gemm(c, options, fits, report);
          break;
        case calibration::CaseKind::training:
          validate_training(c, options, report);
          break;
      }
    } catch (const models::AlgorithmUnavailable& e) {
      report.skipped.push_back({c.id, e.what()});
    } catch (const topologies::SpecError& e) {
      report.skipped.push_back({c.id, fmt::format("cannot build the system: {}", e.what())});
    } catch (const sim::InputError& e) {
      report.skipped.push_back({c.id, fmt::format("not a valid scenario: {}", e.what())});
    }
  }
  report.scaling = scaling_points(cases, report.rows);
  return report;
}

ErrorSummary summarize_errors(const std::vector<ValidationRow>& rows,
                              const std::function<bool(const ValidationRow&)>& keep) {
  std::vector<double> errors;
  for (const ValidationRow& r : rows) {
    if (keep(r)) errors.push_back(std::fabs(r.error));
  }
  ErrorSummary s;
  s.points = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  s.median_abs_error = n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  s.max_abs_error = errors.back();
  return s;
}

namespace {

const ValidationRow* primary_of(const std::vector<const ValidationRow*>& rows) {
  static const std::vector<std::string> kPrimary = {
      "tflops_per_gpu", "hw_tflops_per_gpu", "tokens_per_s_per_gpu", "mfu", "hfu",
      "step_time_s",    "time_to_train_min"};
  for (const std::string& metric : kPrimary) {
    for (const ValidationRow* r : rows) {
      if (r->metric == metric) return r;
    }
  }
  return nullptr;
}

/// Each case's rows, cases in order of first appearance.
std::vector<std::vector<const ValidationRow*>> rows_by_case(
    const std::vector<ValidationRow>& rows) {
  std::vector<std::vector<const ValidationRow*>> out;
  std::map<std::string, size_t> index;
  for (const ValidationRow& r : rows) {
    const auto [it, added] = index.emplace(r.id, out.size());
    if (added) out.emplace_back();
    out[it->second].push_back(&r);
  }
  return out;
}

}  // namespace

double optimism(const ValidationRow& row) {
  const bool time = row.metric == "step_time_s" || row.metric == "time_to_train_min";
  return time ? row.measured / row.predicted - 1 : row.error;
}

std::vector<const ValidationRow*> primary_rows(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> out;
  for (const auto& v : rows_by_case(rows)) {
    if (const ValidationRow* primary = primary_of(v)) out.push_back(primary);
  }
  return out;
}

std::vector<CaseError> case_errors(const std::vector<ValidationRow>& rows) {
  std::vector<CaseError> out;
  for (const auto& v : rows_by_case(rows)) {
    if (const ValidationRow* primary = primary_of(v)) {
      out.push_back({primary->id, primary->source, optimism(*primary)});
      continue;
    }
    std::vector<double> errors;
    for (const ValidationRow* r : v) {
      errors.push_back(r->metric == "latency_us" ? r->measured / r->predicted - 1 : r->error);
    }
    std::sort(errors.begin(), errors.end());
    const size_t n = errors.size();
    out.push_back({v.front()->id, v.front()->source,
                   n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2])});
  }
  return out;
}

CaseSummary summarize_cases(const std::vector<CaseError>& errors) {
  CaseSummary s;
  s.cases = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::vector<double> abs, signed_;
  for (const CaseError& e : errors) {
    abs.push_back(std::fabs(e.error));
    signed_.push_back(e.error);
  }
  std::sort(abs.begin(), abs.end());
  std::sort(signed_.begin(), signed_.end());
  auto median = [](const std::vector<double>& v) {
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  s.median_abs_error = median(abs);
  s.median_signed_error = median(signed_);
  // Nearest rank: the smallest error at least 90% of the cases do not exceed.
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(abs.size())));
  s.p90_abs_error = abs[std::max<size_t>(rank, 1) - 1];
  return s;
}

namespace {

std::vector<std::string> sources(const ValidationReport& report) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& r : report.rows) {
    if (seen.insert(r.source).second) out.push_back(r.source);
  }
  return out;
}

nlohmann::json rank_json(const RankAgreement& r) {
  return {{"source", r.source}, {"metric", r.metric},         {"runs", r.runs},
          {"pairs", r.pairs},   {"concordant", r.concordant}, {"kendall_tau", r.kendall_tau()}};
}

nlohmann::json cases_json(const CaseSummary& s) {
  return {{"cases", s.cases},
          {"median_abs_error", s.median_abs_error},
          {"p90_abs_error", s.p90_abs_error},
          {"median_signed_error", s.median_signed_error}};
}

std::vector<CaseError> scaling_errors(const std::vector<ScalingPoint>& points) {
  std::vector<CaseError> out;
  for (const ScalingPoint& p : points)
    out.push_back({p.id, p.series, p.error});
  return out;
}

std::vector<CaseError> of_source(const std::vector<CaseError>& errors, const std::string& source) {
  std::vector<CaseError> out;
  for (const CaseError& e : errors) {
    if (e.source == source) out.push_back(e);
  }
  return out;
}

nlohmann::json summary_json(const ErrorSummary& s) {
  return {{"points", s.points},
          {"median_abs_error", s.median_abs_error},
          {"max_abs_error", s.max_abs_error}};
}

}  // namespace

std::vector<RankAgreement> rank_agreements(const std::vector<ValidationRow>& rows) {
  static const std::set<std::string> kThroughput = {"tflops_per_gpu", "hw_tflops_per_gpu", "mfu",
                                                    "hfu", "tokens_per_s_per_gpu"};
  // (source, metric) groups in order of first appearance.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const ValidationRow*>> groups;
  for (const ValidationRow& r : rows) {
    if (!kThroughput.contains(r.metric)) continue;
    auto& g = groups[{r.source, r.metric}];
    if (g.empty()) order.emplace_back(r.source, r.metric);
    g.push_back(&r);
  }
  std::vector<RankAgreement> out;
  for (const auto& key : order) {
    const auto& g = groups[key];
    if (g.size() < 3) continue;
    RankAgreement a{key.first, key.second, static_cast<int>(g.size()), 0, 0};
    for (size_t i = 0; i < g.size(); ++i) {
      for (size_t j = i + 1; j < g.size(); ++j) {
        const double measured = g[i]->measured - g[j]->measured;
        if (measured == 0) continue;
        ++a.pairs;
        if ((g[i]->predicted - g[j]->predicted) * measured > 0) ++a.concordant;
      }
    }
    out.push_back(a);
  }
  return out;
}

nlohmann::json report_to_json(const ValidationReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ValidationRow& r : report.rows) {
    nlohmann::json row = {{"id", r.id},
                          {"metric", r.metric},
                          {"predicted", r.predicted},
                          {"measured", r.measured},
                          {"error", r.error},
                          {"source", r.source},
                          {"system", r.system},
                          {"detail", r.detail}};
    if (r.size_bytes) row["size_bytes"] = *r.size_bytes;
    rows.push_back(std::move(row));
  }
  nlohmann::json by_source = nlohmann::json::object();
  for (const std::string& s : sources(report)) {
    by_source[s] =
        summary_json(summarize_errors(report.rows, [&](const auto& r) { return r.source == s; }));
  }
  const std::vector<CaseError> errors = case_errors(report.rows);
  nlohmann::json per_case = {{"overall", cases_json(summarize_cases(errors))}};
  for (const std::string& s : sources(report))
    per_case["by_source"][s] = cases_json(summarize_cases(of_source(errors, s)));
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedCase& s : report.skipped)
    skipped.push_back({{"id", s.id}, {"reason", s.reason}});
  nlohmann::json anchors = nlohmann::json::array();
  for (const AnchorFit& a : report.anchors) {
    anchors.push_back({{"id", a.id},
                       {"group", a.group},
                       {"metric", a.metric},
                       {"measured", a.measured},
                       {"predicted_zero_shot", a.predicted_before},
                       {"zero_shot_error", a.zero_shot_error},
                       {"beyond_validated_spread", beyond_validated_spread(a.zero_shot_error)},
                       {"sustained_efficiency", a.sustained_efficiency},
                       {"scored_cases", a.scored}});
  }
  nlohmann::json scaling = nlohmann::json::array();
  for (const ScalingPoint& p : report.scaling) {
    scaling.push_back(
        {{"id", p.id},
         {"baseline", p.baseline},
         {"series", p.series},
         {"metric", p.metric},
         {"gpus", p.gpus},
         {"baseline_gpus", p.baseline_gpus},
         {"measured_efficiency",
          p.measured_efficiency ? nlohmann::json(*p.measured_efficiency) : nlohmann::json()},
         {"predicted_efficiency",
          p.predicted_efficiency ? nlohmann::json(*p.predicted_efficiency) : nlohmann::json()},
         {"error", p.error}});
  }
  const CaseSummary along = summarize_cases(scaling_errors(report.scaling));
  nlohmann::json out = {
      {"rows", rows},
      {"summary",
       {{"overall", summary_json(summarize_errors(report.rows, [](const auto&) { return true; }))},
        {"by_source", by_source},
        {"cases", per_case},
        {"ranking",
         [&] {
           nlohmann::json ranks = nlohmann::json::array();
           for (const RankAgreement& r : rank_agreements(report.rows))
             ranks.push_back(rank_json(r));
           return ranks;
         }()},
        {"scaling",
         {{"points", along.cases},
          {"median_abs_error", along.median_abs_error},
          {"p90_abs_error", along.p90_abs_error},
          {"median_signed_error", along.median_signed_error}}}}},
      {"scaling", scaling},
      {"skipped", skipped}};
  if (!report.anchors.empty()) out["anchors"] = anchors;
  return out;
}

std::string report_to_text(const ValidationReport& report) {
  std::string out = fmt::format("{:<40} {:<18} {:>12} {:>11} {:>11} {:>8}  {}\n", "id", "metric",
                                "size_bytes", "predicted", "measured", "error", "detail");
  for (const ValidationRow& r : report.rows) {
    out += fmt::format("{:<40} {:<18} {:>12} {:>11.4g} {:>11.4g} {:>+7.1f}%  {}\n", r.id, r.metric,
                       r.size_bytes ? fmt::format("{:.0f}", *r.size_bytes) : "-", r.predicted,
                       r.measured, 100 * r.error, r.detail);
  }
  out += "\nsummary (|error|):\n";
  auto line = [&](const std::string& name, const ErrorSummary& s) {
    out += fmt::format("  {:<70} points {:>4}  median {:>6.1f}%  max {:>6.1f}%\n", name, s.points,
                       100 * s.median_abs_error, 100 * s.max_abs_error);
  };
  for (const std::string& s : sources(report)) {
    line(s, summarize_errors(report.rows, [&](const auto& r) { return r.source == s; }));
  }
  line("overall", summarize_errors(report.rows, [](const auto&) { return true; }));
  const std::vector<CaseError> errors = case_errors(report.rows);
  out += "\nper case (one primary metric each; signed > 0 = optimistic):\n";
  auto case_line = [&](const std::string& name, const CaseSummary& s) {
    out += fmt::format("  {:<70} cases {:>4}  median {:>6.1f}%  p90 {:>6.1f}%  bias {:>+6.1f}%\n",
                       name, s.cases, 100 * s.median_abs_error, 100 * s.p90_abs_error,
                       100 * s.median_signed_error);
  };
  for (const std::string& s : sources(report))
    case_line(s, summarize_cases(of_source(errors, s)));
  case_line("overall", summarize_cases(errors));
  const std::vector<RankAgreement> ranks = rank_agreements(report.rows);
  if (!ranks.empty()) {
    out += "\nranking of runs within a source (pairs ordered as measured):\n";
    for (const RankAgreement& r : ranks) {
      out += fmt::format("  {:<70} {:<20} runs {:>3}  {:>3}/{:<3} pairs  tau {:+.2f}\n", r.source,
                         r.metric, r.runs, r.concordant, r.pairs, r.kendall_tau());
    }
  }
  if (!report.scaling.empty()) {
    out +=
        "\nscaling along each series (throughput per GPU against its run with the fewest GPUs; "
        "error > 0 = the model holds it better than measured):\n";
    for (const ScalingPoint& p : report.scaling) {
      out +=
          fmt::format("  {:<60} {:>5} -> {:<5} measured {:>6} predicted {:>6}  {:>+6.1f}%\n", p.id,
                      p.baseline_gpus, p.gpus,
                      p.measured_efficiency ? fmt::format("{:.3f}", *p.measured_efficiency) : "-",
                      p.predicted_efficiency ? fmt::format("{:.3f}", *p.predicted_efficiency) : "-",
                      100 * p.error);
    }
    const CaseSummary s = summarize_cases(scaling_errors(report.scaling));
    out += fmt::format("  {:<70} points {:>4}  median {:>6.1f}%  p90 {:>6.1f}%  bias {:>+6.1f}%\n",
                       "overall", s.cases, 100 * s.median_abs_error, 100 * s.p90_abs_error,
                       100 * s.median_signed_error);
  }
  if (!report.anchors.empty()) {
    out += "\nanchors (fitted, not scored): sustained efficiency per group\n";
    bool beyond = false;
    for (const AnchorFit& a : report.anchors) {
      const bool flag = beyond_validated_spread(a.zero_shot_error);
      beyond = beyond || flag;
      out += fmt::format("  {:<60} {:>6.3f}  zero-shot {:>+7.1f}%{} on {}, {} case(s) scored\n",
                         a.id, a.sustained_efficiency, 100 * a.zero_shot_error, flag ? "*" : " ",
                         a.metric, a.scored);
    }
    if (beyond) {
      out += fmt::format(
          "  * beyond the model's validated spread ({:.0f}%): the fit likely absorbs a mechanism "
          "the model lacks, which its group's predictions inherit\n",
          100 * kValidatedSpread);
    }
  }
  if (!report.skipped.empty()) {
    out += "\nnot run:\n";
    for (const SkippedCase& s : report.skipped)
      out += fmt::format("  {}: {}\n", s.id, s.reason);
  }
  return out;
}

}  // namespace fabricsim::api
