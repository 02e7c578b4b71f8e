#include "api/plan_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <thread>

#include "api/confidence.hpp"
#include "api/layer_memory_fit.hpp"
#include "api/training_run.hpp"
#include "models/memory_model.hpp"
#include "models/pipeline_schedule.hpp"

namespace fabricsim::api {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Runs `work(i)` for i in [0, n) on `threads` threads; each i writes only its own slot.
template <typename Work>
void parallel_for(size_t n, int threads, const Work& work) {
  const size_t count = std::min(n, static_cast<size_t>(std::max(threads, 1)));
  if (count <= 1) {
    for (size_t i = 0; i < n; ++i)
      work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < count; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++)
        work(i);
    });
  }
  for (std::thread& t : pool)
    t.join();
}

/// Fastest first; ties by less memory, then by the order the plans were listed (stable sort).
void rank(std::vector<PlanResult>& results) {
  std::stable_sort(results.begin(), results.end(), [](const PlanResult& a, const PlanResult& b) {
    if (a.step_time_s != b.step_time_s) return a.step_time_s < b.step_time_s;
    return a.memory_gib < b.memory_gib;
  });
}

}  // namespace

std::string plan_label(const models::ParallelPlan& p) {
  std::string out = fmt::format("TP{} PP{} DP{} CP{}", p.tp, p.pp, p.dp, p.cp);
  if (p.ep > 1) out += fmt::format(" EP{}", p.ep);
  if (p.vp > 1) out += fmt::format(" VP{}", p.vp);
  out += fmt::format(" mb{} zero{} {}", p.micro_batch, p.zero, models::to_string(p.recompute));
  if (p.recompute_layers > 0) out += fmt::format(" +{} full", p.recompute_layers);
  if (p.offload_layers > 0) out += fmt::format(" offload{}", p.offload_layers);
  return out;
}

ScenarioEvaluator::ScenarioEvaluator(const Scenario& scenario)
    : scenario_(scenario), evaluator_(scenario) {}

int ScenarioEvaluator::domain() const {
  const topologies::ClusterSpec& c = scenario_.cluster;
  return std::min(scenario_.gpus, c.nvlink ? c.nvlink->gpus_per_domain : c.gpus_per_server);
}

Scenario ScenarioEvaluator::with_plan(const models::ParallelPlan& plan) const {
  Scenario s = scenario_;
  s.plan = plan;
  return s;
}

PlanScreen ScenarioEvaluator::screen(const models::ParallelPlan& plan) const {
  PlanScreen r;
  const PreparedPlan prepared = evaluator_.prepare(with_plan(plan));
  if (prepared.problem) {
    // The space only holds plans that divide; a disagreement is a bug in plan_rejection.
    throw std::logic_error("plan search: a plan the space accepted does not divide: " +
                           prepared.problem->reason);
  }
  const models::Workload& workload = prepared.workload;
  const models::MemoryReport& memory = prepared.memory;
  r.memory_gib = memory.stages[static_cast<size_t>(memory.worst_stage)].total() / kGiB;
  r.capacity_gib = memory.capacity / kGiB;
  if (!memory.fits && !scenario_.ignore_memory) {
    r.rejected = Rejection::memory;
    r.reason = memory.reason;
    const LayerMemoryRemedies remedies = layer_memory_remedies(prepared, evaluator_.system().gpu);
    for (const auto& remedy : {remedies.recompute, remedies.offload})
      if (remedy) r.remedies.push_back(*remedy);
    return r;
  }
  // Each stage's compute stream runs all its kernels; before its first pass, the same
  // micro-batch's forward through every earlier virtual stage; after its last pass, that
  // micro-batch's backward through every earlier virtual stage, then stage 0's optimizer.
  const int pp = plan.pp;
  auto chunk = [&](int v) -> const models::ChunkWork& {
    return workload.stages[static_cast<size_t>(v % pp)].chunks[static_cast<size_t>(v / pp)];
  };
  const auto schedule = models::pipeline_schedule(pp, plan.vp, workload.microbatches);
  for (int s = 0; s < pp; ++s) {
    const models::StageWork& stage = workload.stages[static_cast<size_t>(s)];
    const auto& tasks = schedule[static_cast<size_t>(s)];
    sim::Time bound;
    for (const models::PipelineTask& t : tasks) {
      const models::ChunkWork& c = stage.chunks[static_cast<size_t>(t.chunk)];
      bound += t.forward ? c.forward.compute : c.backward.compute;
    }
    for (int v = 0; v < tasks.front().chunk * pp + s; ++v)
      bound += chunk(v).forward.compute;
    for (int v = 0; v < tasks.back().chunk * pp + s; ++v)
      bound += chunk(v).backward.compute;
    bound += workload.stages.front().optimizer;
    r.lower_bound_s = std::max(r.lower_bound_s, bound.s());
  }
  // The bound adds the simulation's own picosecond durations; the margin keeps it below the
  // simulated step once both are turned into seconds by different sums.
  r.lower_bound_s *= 1 - 1e-9;
  return r;
}

PlanResult ScenarioEvaluator::evaluate(const models::ParallelPlan& plan,
                                       models::Backend backend) const {
  PlanResult r;
  r.plan = plan;
  r.backend = backend;
  const PreparedPlan prepared = evaluator_.prepare(with_plan(plan));
  const StepEvaluation e = evaluator_.evaluate(prepared, fidelity_of(backend));
  if (!prepared.problem) {
    const models::MemoryReport& memory = prepared.memory;
    r.memory_gib = memory.stages[static_cast<size_t>(memory.worst_stage)].total() / kGiB;
    r.capacity_gib = memory.capacity / kGiB;
  }
  if (!e.step) {
    r.rejected = Rejection::memory;
    if (e.infeasible && e.infeasible->cause == Infeasible::Cause::plan) {
      throw std::logic_error("plan search: a plan the space accepted does not divide: " +
                             e.infeasible->reason);
    }
    r.reason = e.infeasible ? e.infeasible->reason : "";
    return r;
  }
  r.step_time_s = e.metrics.step_time_s;
  r.tokens_per_s_per_gpu = e.metrics.tokens_per_s_per_gpu;
  r.mfu = e.metrics.mfu;
  r.breakdown = e.step->stages[static_cast<size_t>(e.step->critical_stage)];
  return r;
}

PlanEvaluator ScenarioEvaluator::functions() const {
  return {[this](const models::ParallelPlan& p) { return screen(p); },
          [this](const models::ParallelPlan& p, models::Backend b) { return evaluate(p, b); }};
}

PlanSearch search_plans(const Scenario& scenario, const PlanConstraints& constraints,
                        const SearchOptions& options, const PlanEvaluator& evaluator, int domain) {
  PlanSearch out;
  out.threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto start = std::chrono::steady_clock::now();
  const PlanSpace space = enumerate_plans(scenario.plan, scenario.model, scenario.training,
                                          scenario.gpus, domain, constraints);
  out.candidates = space.candidates;
  out.rejected = space.rejected;
  // Memory and the compute bound of every shape (with the scenario's overlap switches and order,
  // which change neither).
  std::vector<models::ParallelPlan> plans = space.plans;
  std::vector<PlanScreen> screens(plans.size());
  parallel_for(screens.size(), out.threads,
               [&](size_t i) { screens[i] = evaluator.screen(plans[i]); });
  if (constraints.fit_layers) {
    // Shapes that overflow HBM, with their layers recomputed or offloaded: screened in turn.
    const size_t shapes = plans.size();
    for (size_t i = 0; i < shapes; ++i)
      for (const models::ParallelPlan& remedy : screens[i].remedies)
        plans.push_back(remedy);
    screens.resize(plans.size());
    parallel_for(plans.size() - shapes, out.threads,
                 [&](size_t i) { screens[shapes + i] = evaluator.screen(plans[shapes + i]); });
  }
  std::vector<size_t> fits;
  for (size_t i = 0; i < screens.size(); ++i) {
    if (screens[i].rejected) {
      ++out.rejected[*screens[i].rejected];
    } else {
      fits.push_back(i);
    }
  }
  std::stable_sort(fits.begin(), fits.end(), [&](size_t a, size_t b) {
    return screens[a].lower_bound_s < screens[b].lower_bound_s;
  });
  // Simulate in bound order, in fixed-size batches (so the count does not depend on the threads),
  // until the next bound exceeds the keep-th best step time found.
  constexpr size_t kBatch = 64;
  std::vector<double> best_steps;  // ascending, at most `keep`
  const size_t keep = options.keep > 0 ? static_cast<size_t>(options.keep) : fits.size();
  size_t next = 0;
  while (next < fits.size()) {
    const double threshold =
        best_steps.size() < keep ? std::numeric_limits<double>::infinity() : best_steps.back();
    if (screens[fits[next]].lower_bound_s > threshold) break;
    size_t end = std::min(fits.size(), next + kBatch);
    while (end > next && screens[fits[end - 1]].lower_bound_s > threshold)
      --end;
    std::vector<PlanResult> batch(end - next);
    parallel_for(batch.size(), out.threads, [&](size_t i) {
      batch[i] = evaluator.evaluate(plans[fits[next + i]], models::Backend::analytical);
    });
    for (PlanResult& r : batch) {
      best_steps.insert(std::upper_bound(best_steps.begin(), best_steps.end(), r.step_time_s),
                        r.step_time_s);
      if (best_steps.size() > keep) best_steps.pop_back();
      out.ranked.push_back(std::move(r));
    }
    next = end;
  }
  out.bounded = static_cast<long long>(fits.size() - next);
  out.evaluated = static_cast<long long>(out.ranked.size());
  rank(out.ranked);
  // Then the overlap and order variants of the best shapes: they move the exposed
  // communication, a second-order term next to the shape's compute, bubble and memory.
  const size_t refine = std::min(out.ranked.size(), static_cast<size_t>(options.variant_shapes));
  std::vector<models::ParallelPlan> variants;
  for (size_t i = 0; i < refine; ++i) {
    const std::vector<models::ParallelPlan> v = plan_variants(out.ranked[i].plan, constraints);
    variants.insert(variants.end(), v.begin() + 1, v.end());  // the first is the shape itself
  }
  std::vector<PlanResult> results(variants.size());
  parallel_for(results.size(), out.threads, [&](size_t i) {
    results[i] = evaluator.evaluate(variants[i], models::Backend::analytical);
  });
  out.evaluated += static_cast<long long>(results.size());
  for (PlanResult& r : results) {
    if (r.feasible()) out.ranked.push_back(std::move(r));
  }
  rank(out.ranked);
  out.search_wall_s = seconds_since(start);

  // The flow re-check takes the best plan of each distinct layout (sizes, micro-batch, rank
  // order): the analytical ranking is contention-free, and its next few entries are often one
  // layout's ZeRO and recomputation variants with the same time, while a layout whose exposed
  // communication it underrates on a shared fabric can be a few places down.
  const auto refine_start = std::chrono::steady_clock::now();
  const size_t top = std::min(out.ranked.size(), static_cast<size_t>(std::max(options.top, 0)));
  std::vector<const models::ParallelPlan*> chosen;
  for (size_t i = 0; i < out.ranked.size() && chosen.size() < top; ++i) {
    const models::ParallelPlan& p = out.ranked[i].plan;
    if (std::none_of(chosen.begin(), chosen.end(),
                     [&](const models::ParallelPlan* c) { return same_layout(*c, p); }))
      chosen.push_back(&p);
  }
  out.best.resize(chosen.size());
  parallel_for(chosen.size(), out.threads, [&](size_t i) {
    out.best[i] = evaluator.evaluate(*chosen[i], models::Backend::flow);
  });
  out.evaluated += static_cast<long long>(chosen.size());
  rank(out.best);
  out.refine_wall_s = seconds_since(refine_start);
  return out;
}

PlanSearch search_plans(const Scenario& scenario, const PlanConstraints& constraints,
                        const SearchOptions& options) {
  const ScenarioEvaluator evaluator(scenario);
  return search_plans(scenario, constraints, options, evaluator.functions(), evaluator.domain());
}

namespace {

/// Same parallel sizes and micro-batch.
bool same_sizes(const models::ParallelPlan& a, const models::ParallelPlan& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.ep == b.ep &&
         a.vp == b.vp && a.micro_batch == b.micro_batch;
}

}  // namespace

bool same_layout(const models::ParallelPlan& a, const models::ParallelPlan& b) {
  return same_sizes(a, b) && a.order == b.order;
}

bool same_shape(const models::ParallelPlan& a, const models::ParallelPlan& b) {
  return same_sizes(a, b) && a.recompute == b.recompute &&
         a.recompute_layers == b.recompute_layers && a.offload_layers == b.offload_layers &&
         a.zero == b.zero;
}

int rank_of_shape(const PlanSearch& search, const models::ParallelPlan& plan) {
  for (size_t i = 0; i < search.ranked.size(); ++i) {
    if (same_shape(search.ranked[i].plan, plan)) return static_cast<int>(i) + 1;
  }
  return 0;
}

nlohmann::json plan_result_json(const PlanResult& r) {
  nlohmann::json j = {{"parallelism", plan_to_json(r.plan)},
                      {"backend", std::string(models::to_string(r.backend))},
                      {"feasible", r.feasible()},
                      {"memory_GiB", r.memory_gib},
                      {"capacity_GiB", r.capacity_gib}};
  if (!r.feasible()) {
    j["rejected"] = std::string(to_string(*r.rejected));
    j["reason"] = r.reason;
    return j;
  }
  const models::StageBreakdown& b = r.breakdown;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  j["mfu"] = r.mfu;
  nlohmann::json& parts = j["breakdown"];
  for (const models::BreakdownComponent& c : models::kBreakdownComponents)
    parts[std::string(c.key) + "_s"] = (b.*c.field).s();
  return j;
}

nlohmann::json search_to_json(const PlanSearch& s, const Scenario& scenario) {
  nlohmann::json plans = nlohmann::json::array();
  for (const PlanResult& r : s.best)
    plans.push_back(plan_result_json(r));
  nlohmann::json rejected = nlohmann::json::object();
  for (const auto& [why, count] : s.rejected)
    rejected[std::string(to_string(why))] = count;
  // The analytical ranking, compact: what a throughput-vs-memory scatter needs.
  nlohmann::json ranked = nlohmann::json::array();
  for (const PlanResult& r : s.ranked) {
    ranked.push_back({{"plan", plan_label(r.plan)},
                      {"step_time_s", r.step_time_s},
                      {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                      {"mfu", r.mfu},
                      {"memory_GiB", r.memory_gib}});
  }
  nlohmann::json summary = scenario_to_json(scenario);
  summary.erase("parallelism");  // searched
  return {{"scenario", summary},
          {"software", software_to_json(scenario.lowering.software)},
          {"confidence", confidence_to_json(scenario_confidence(scenario))},
          {"plans", plans},
          {"rejected", rejected},
          {"evaluated", s.evaluated},
          {"candidates", s.candidates},
          {"bounded", s.bounded},
          {"analytical_ranking", ranked},
          {"search_wall_s", s.search_wall_s},
          {"refine_wall_s", s.refine_wall_s},
          {"threads", s.threads}};
}

std::string search_to_text(const PlanSearch& s, const Scenario& scenario) {
  std::string out = fmt::format(
      "{} on {} x {}, {} {}, global batch {}, seq {}\n", scenario.model.name, scenario.gpus,
      scenario.system(), models::to_string(scenario.training.task),
      topologies::to_string(scenario.training.precision), scenario.training.global_batch,
      models::sequence_length(scenario.training, scenario.model));
  out +=
      fmt::format("confidence: {}\n", confidence_with_calibration(scenario_confidence(scenario)));
  out += fmt::format(
      "{} candidates, {} plans simulated (analytical ranking in {:.2f} s on {} thread(s); {} "
      "more fit but are bounded out by compute alone); top {} re-simulated at flow fidelity in "
      "{:.2f} s\n",
      s.candidates, s.evaluated, s.search_wall_s, s.threads, s.bounded, s.best.size(),
      s.refine_wall_s);
  if (!s.best.empty()) {
    out += fmt::format("{:>2}  {:<40} {:<12} {:>9} {:>9} {:>6} {:>8}  {}\n", "#", "plan", "order",
                       "step s", "tok/s/GPU", "MFU", "mem GiB", "breakdown (s)");
    for (size_t i = 0; i < s.best.size(); ++i) {
      const PlanResult& r = s.best[i];
      const models::StageBreakdown& b = r.breakdown;
      std::string parts = fmt::format("compute {:.3f}", b.compute.s());
      for (auto [name, v] : {std::pair{"TP", b.exposed_tp},
                             {"CP", b.exposed_cp},
                             {"EP", b.exposed_ep},
                             {"PP", b.exposed_pp},
                             {"DP", b.exposed_dp},
                             {"bubble", b.bubble}}) {
        if (v.s() > 0.0005) parts += fmt::format(" {} {:.3f}", name, v.s());
      }
      std::string label = plan_label(r.plan);
      if (!r.plan.tp_comm_overlap && r.plan.tp > 1) label += " -tpov";
      if (!r.plan.dp_comm_overlap && (r.plan.dense_dp() > 1 || r.plan.expert_dp() > 1)) {
        label += " -dpov";
      }
      out += fmt::format("{:>2}  {:<40} {:<12} {:>9.4f} {:>9.1f} {:>5.1f}% {:>8.1f}  {}\n", i + 1,
                         label, models::Placement(r.plan, r.plan.gpus()).order_string(),
                         r.step_time_s, r.tokens_per_s_per_gpu, 100 * r.mfu, r.memory_gib, parts);
    }
  }
  long long total = 0;
  for (const auto& [why, count] : s.rejected)
    total += count;
  out += fmt::format("rejected {}:", total);
  for (const auto& [why, count] : s.rejected)
    out += fmt::format(" {} {}", to_string(why), count);
  out += "\n";
  return out;
}

}  // namespace fabricsim::api
