#include "api/job_mix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "api/plan_search.hpp"
#include "api/scenario_settings.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::api {

bool is_job_mix(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("jobs");
}

namespace {

/// A job of the file as a scenario: its own keys, on the cluster's system with its GPU count.
/// Errors point into the job (/jobs/K/...); one about the GPU count points at its "gpus".
Scenario read_job(const sim::JsonValue& job, const JobMix& mix, std::string& name, int index,
                  std::set<std::string>& names) {
  sim::ObjectReader r = job.as_object();
  r.ignore("comment");
  name = fmt::format("job{}", index);
  if (auto v = r.optional("name")) {
    name = v->as_string();
    if (name.empty()) v->fail("a non-empty name");
  }
  if (!names.insert(name).second) job.fail(fmt::format("a name no other job has ('{}')", name));
  const sim::JsonValue gpus_value = r.required("gpus");
  const int gpus = gpus_value.as_positive_int32();
  if (gpus > mix.cluster.gpus) {
    gpus_value.fail(fmt::format("at most the cluster's {} GPUs", mix.cluster.gpus));
  }
  for (const char* key : {"model", "parallelism", "training"})
    static_cast<void>(r.required(key));
  static_cast<void>(r.optional("software"));
  r.finish();  // simulation, calibration and the system belong to the whole cluster

  nlohmann::json doc = job.raw();
  for (const char* key : {"name", "gpus", "comment"})
    doc.erase(key);
  doc["system"] = {{"preset", mix.cluster.system()}, {"gpus", gpus}};
  Scenario sc;
  try {
    sc = read_scenario(job.child(doc, job.pointer()));
  } catch (const sim::InputError& e) {
    if (!e.path().starts_with(job.pointer() + "/system")) throw;
    throw sim::InputError(e.where(), gpus_value.pointer(), e.message());
  }
  sc.source = mix.source;
  sc.calibration = mix.cluster.calibration;
  sc.simulation = mix.cluster.simulation;
  // Every pipeline's sends load the fabric, not one pipeline's: other jobs see all of them.
  sc.simulation.pp_all_instances = true;
  sc.ignore_memory = false;  // a job that does not fit is reported, not simulated
  return sc;
}

}  // namespace

JobMix read_job_mix(const sim::JsonValue& root) {
  JobMix mix;
  mix.source = root.file();
  sim::ObjectReader top = root.as_object();
  top.ignore("comment");
  mix.cluster.source = root.file();
  read_system(top.required("system"), mix.cluster);
  if (auto c = top.optional("calibration")) mix.cluster.calibration = c->as_string();
  if (auto s = top.optional("simulation")) {
    sim::ObjectReader r = s->as_object();
    if (auto v = r.optional("steps")) {
      mix.steps = v->as_positive_int32();
      if (mix.steps > 100) v->fail("at most 100 steps per job");
    }
    // Jobs that do not fit are reported, not simulated, and every job's pipeline sends load
    // the fabric: these two have no choice here.
    for (const char* fixed : {"ignore_memory", "pp_all_instances"}) {
      if (r.has(fixed)) {
        r.required(fixed).fail_message(
            "not a setting of a jobs file (jobs that do not fit are reported unsimulated; every "
            "pipeline's sends are simulated)");
      }
    }
    // The scenario's own simulation settings (backend, collnet, ...), for the whole cluster.
    SettingTarget target{mix.cluster, {}};
    read_settings("/simulation", r, target);
    r.finish();
  }
  if (auto p = top.optional("placement")) {
    if (!models::parse_placement_policy(p->as_string(), mix.policy))
      p->fail("one of " + models::placement_policy_names());
  }
  const sim::JsonValue jobs = top.required("jobs");
  const std::vector<sim::JsonValue> list = jobs.as_array();
  if (list.empty()) jobs.fail("at least one job");
  top.finish();
  std::set<std::string> names;
  for (size_t k = 0; k < list.size(); ++k) {
    MixJob job;
    job.pointer = list[k].pointer();
    job.scenario = read_job(list[k], mix, job.name, static_cast<int>(k), names);
    // A shared cluster keeps each TP group inside one scale-up domain (as place_jobs checks).
    const int domain = models::largest_domain(*mix.cluster.topology);
    if (domain % job.scenario.plan.tp != 0) {
      throw sim::InputError(mix.source, job.pointer + "/parallelism/tp",
                            fmt::format("a TP size that divides the {} GPUs of a scale-up domain "
                                        "(jobs of a shared cluster keep TP groups inside one), "
                                        "got {}",
                                        domain, job.scenario.plan.tp));
    }
    mix.jobs.push_back(std::move(job));
  }
  return mix;
}

JobMixReport run_job_mix(const JobMix& mix, models::PlacementPolicy policy) {
  JobMixReport report;
  report.source = mix.source;
  report.system = mix.cluster.system();
  report.gpus = mix.cluster.gpus;
  report.policy = policy;
  report.fidelity = fidelity_of(mix.cluster.simulation.backend);
  report.steps = mix.steps;
  const Evaluator cluster(mix.cluster);

  std::vector<models::JobRequest> requests;
  for (const MixJob& job : mix.jobs)
    requests.push_back({job.name, job.scenario.gpus, job.scenario.plan.tp});
  report.placement = models::place_jobs(*mix.cluster.topology, requests, policy);

  std::vector<PreparedPlan> prepared(mix.jobs.size());
  std::vector<const PreparedPlan*> runnable;
  std::vector<size_t> runnable_index;
  for (size_t k = 0; k < mix.jobs.size(); ++k) {
    JobOutcome out;
    out.name = mix.jobs[k].name;
    out.gpus = mix.jobs[k].scenario.gpus;
    out.allocation = report.placement.jobs[k];
    out.plan = mix.jobs[k].scenario.plan;
    if (out.allocation.placed()) {
      Scenario s = mix.jobs[k].scenario;
      s.simulation.gpus = out.allocation.gpus;
      prepared[k] = cluster.prepare(s);
      StepEvaluation alone = cluster.evaluate(prepared[k], report.fidelity);
      if (alone.infeasible) {
        out.infeasible = alone.infeasible;
      } else {
        report.simulate_wall_s += alone.simulate_wall_s;
        report.tokens_per_s_alone += alone.metrics.tokens_per_s;
        out.alone = std::move(alone);
        runnable.push_back(&prepared[k]);
        runnable_index.push_back(k);
      }
    }
    report.jobs.push_back(std::move(out));
  }
  if (runnable.empty()) return report;

  const SharedEvaluation together = cluster.evaluate_together(runnable, report.fidelity, mix.steps);
  report.simulate_wall_s += together.jobs.front().simulate_wall_s;
  report.simulated_seconds = together.shared.simulated_seconds;
  for (size_t i = 0; i < runnable.size(); ++i) {
    JobOutcome& out = report.jobs[runnable_index[i]];
    out.together = together.jobs[i];
    out.slowdown = out.together->metrics.step_time_s / out.alone->metrics.step_time_s;
    report.tokens_per_s_together += out.together->metrics.tokens_per_s;
  }
  for (const models::SharedLink& l : together.shared.shared_links) {
    if (report.shared_links.size() >= 8) break;
    SharedLinkRow row{l.use.name, l.use.kind, l.use.bytes.count(), l.use.utilization, {}, {}};
    for (int j : l.jobs) {
      row.jobs.push_back(report.jobs[runnable_index[static_cast<size_t>(j)]].name);
      row.job_bytes.push_back(l.job_bytes[static_cast<size_t>(j)].count());
    }
    report.shared_links.push_back(std::move(row));
  }
  return report;
}

namespace {

nlohmann::json metrics_json(const StepEvaluation& e) {
  return {{"step_time_s", e.metrics.step_time_s},
          {"tokens_per_s", e.metrics.tokens_per_s},
          {"tokens_per_s_per_gpu", e.metrics.tokens_per_s_per_gpu},
          {"mfu", e.metrics.mfu}};
}

/// Mean and largest slowdown over the jobs that ran together.
std::pair<double, double> slowdowns(const JobMixReport& r) {
  double sum = 0, worst = 0;
  int n = 0;
  for (const JobOutcome& j : r.jobs) {
    if (!j.together) continue;
    sum += j.slowdown;
    worst = std::max(worst, j.slowdown);
    ++n;
  }
  return {n > 0 ? sum / n : 0.0, worst};
}

int placed_jobs(const JobMixReport& r) {
  return static_cast<int>(std::count_if(
      r.jobs.begin(), r.jobs.end(), [](const JobOutcome& j) { return j.together.has_value(); }));
}

}  // namespace

nlohmann::json job_mix_to_json(const JobMixReport& r) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobOutcome& j : r.jobs) {
    nlohmann::json o = {{"name", j.name},
                        {"gpus", j.gpus},
                        {"parallelism", plan_to_json(j.plan)},
                        {"placed", j.allocation.placed()},
                        {"servers", j.allocation.servers},
                        {"domains", j.allocation.domains},
                        {"leaf_groups", j.allocation.leaf_groups}};
    if (!j.allocation.placed()) o["reason"] = j.allocation.reason;
    if (j.infeasible) o["infeasible"] = j.infeasible->reason;
    if (j.alone) o["alone"] = metrics_json(*j.alone);
    if (j.together) {
      o["together"] = metrics_json(*j.together);
      o["slowdown"] = j.slowdown;
    }
    jobs.push_back(std::move(o));
  }
  nlohmann::json links = nlohmann::json::array();
  for (const SharedLinkRow& l : r.shared_links) {
    links.push_back({{"name", l.name},
                     {"kind", l.kind},
                     {"bytes", l.bytes},
                     {"utilization", l.utilization},
                     {"jobs", l.jobs},
                     {"job_bytes", l.job_bytes}});
  }
  const auto [mean, worst] = slowdowns(r);
  return {{"system", r.system},
          {"gpus", r.gpus},
          {"placement", std::string(models::to_string(r.policy))},
          {"backend", std::string(models::to_string(backend_of(r.fidelity)))},
          {"steps_per_job", r.steps},
          {"jobs", jobs},
          {"allocation", models::placement_to_json(r.placement)},
          {"mean_slowdown", mean},
          {"max_slowdown", worst},
          {"tokens_per_s_alone", r.tokens_per_s_alone},
          {"tokens_per_s_together", r.tokens_per_s_together},
          {"busiest_shared_links", links},
          {"simulated_s", r.simulated_seconds},
          {"simulate_wall_s", r.simulate_wall_s}};
}

std::string job_mix_to_text(const JobMixReport& r) {
  std::string out = fmt::format(
      "shared cluster: {} x {} GPUs, placement {}, {} backend, {} step(s) per job counted\n",
      r.system, r.gpus, models::to_string(r.policy), models::to_string(backend_of(r.fidelity)),
      r.steps);
  out += fmt::format("{:<16} {:>6} {:<34} {:>7} {:>6} {:>9} {:>10} {:>10} {:>8}\n", "job", "gpus",
                     "plan", "servers", "leaves", "alone s", "together s", "tok/s/GPU", "slowdown");
  for (const JobOutcome& j : r.jobs) {
    out += fmt::format("{:<16} {:>6} {:<34} ", j.name, j.gpus, plan_label(j.plan));
    if (!j.allocation.placed()) {
      out += "not placed: " + j.allocation.reason + "\n";
      continue;
    }
    out += fmt::format("{:>7} {:>6} ", j.allocation.servers, j.allocation.leaf_groups);
    if (!j.together) {
      out += "cannot run: " + (j.infeasible ? j.infeasible->reason : std::string("?")) + "\n";
      continue;
    }
    out += fmt::format("{:>9.4f} {:>10.4f} {:>10.0f} {:>7.3f}x\n", j.alone->metrics.step_time_s,
                       j.together->metrics.step_time_s, j.together->metrics.tokens_per_s_per_gpu,
                       j.slowdown);
  }
  const models::PlacementResult& p = r.placement;
  out += fmt::format(
      "GPUs: {} allocated, {} idle ({} stranded: too few together to host a block of any job); "
      "jobs not placed: {} for capacity, {} for fragmentation\n",
      p.allocated_gpus, p.idle_gpus, p.stranded_gpus, p.unplaced_for_capacity,
      p.unplaced_for_fragmentation);
  if (r.tokens_per_s_alone > 0) {
    out += fmt::format(
        "cluster throughput: {:.4g} tokens/s together, {:.4g} if each job ran "
        "alone ({:.1f}% lost to sharing)\n",
        r.tokens_per_s_together, r.tokens_per_s_alone,
        std::max(0.0, 100 * (1 - r.tokens_per_s_together / r.tokens_per_s_alone)));
  }
  if (!r.shared_links.empty()) {
    out += "busiest shared links (utilization over the simulated time; bytes per job):\n";
    for (const SharedLinkRow& l : r.shared_links) {
      std::string who;
      for (size_t i = 0; i < l.jobs.size(); ++i)
        who += fmt::format("{}{} {:.3g} GB", i ? ", " : "", l.jobs[i], l.job_bytes[i] * 1e-9);
      out +=
          fmt::format("  {:<40} {:<8} {:>5.1f}%  {}\n", l.name, l.kind, 100 * l.utilization, who);
    }
  } else if (r.fidelity == Fidelity::flow) {
    out += "no link carried traffic of two jobs\n";
  }
  return out;
}

nlohmann::json placement_comparison_json(const std::vector<JobMixReport>& reports) {
  nlohmann::json rows = nlohmann::json::array();
  for (const JobMixReport& r : reports) {
    const auto [mean, worst] = slowdowns(r);
    rows.push_back({{"placement", std::string(models::to_string(r.policy))},
                    {"placed_jobs", placed_jobs(r)},
                    {"mean_slowdown", mean},
                    {"max_slowdown", worst},
                    {"tokens_per_s_together", r.tokens_per_s_together},
                    {"idle_gpus", r.placement.idle_gpus},
                    {"stranded_gpus", r.placement.stranded_gpus}});
  }
  return rows;
}

std::string placement_comparison_text(const std::vector<JobMixReport>& reports) {
  std::string out =
      fmt::format("{:<15} {:>6} {:>13} {:>12} {:>14} {:>6} {:>9}\n", "placement", "placed",
                  "mean slowdown", "max slowdown", "tokens/s", "idle", "stranded");
  for (const JobMixReport& r : reports) {
    const auto [mean, worst] = slowdowns(r);
    out += fmt::format("{:<15} {:>6} {:>12.3f}x {:>11.3f}x {:>14.4g} {:>6} {:>9}\n",
                       models::to_string(r.policy), placed_jobs(r), mean, worst,
                       r.tokens_per_s_together, r.placement.idle_gpus, r.placement.stranded_gpus);
  }
  return out;
}

}  // namespace fabricsim::api
