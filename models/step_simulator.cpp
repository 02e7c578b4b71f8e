#include "models/step_simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "models/collective_runner.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/step_communicator.hpp"
#include "models/step_engine.hpp"
#include "models/straggler_model.hpp"
#include "sim/flow_network.hpp"
#include "sim/simulation.hpp"

namespace fabricsim::models {
namespace {

using namespace step_engine;

/// The busiest links of a flow step (and, when traced, their rate counters).
void report_links(const sim::FlowNetwork& net, const std::vector<sim::LinkCapacity>& caps,
                  const topologies::Topology& t, const StepOptions& options, int pid,
                  const std::map<topologies::LinkId, std::vector<std::pair<double, double>>>& rates,
                  StepResult& result) {
  result.flows = net.stats().flows_started;
  result.rate_solves = net.stats().rate_solves;
  result.solved_flows = net.stats().solved_flows;
  std::vector<std::pair<double, size_t>> use;
  for (size_t l = 0; l < net.link_bytes().size(); ++l) {
    const double bytes = net.link_bytes()[l];
    if (bytes <= 0) continue;
    const double usable = caps[l].bandwidth.bytes_per_s() * caps[l].efficiency;
    use.emplace_back(bytes / (usable * result.step_time.s()), l);
  }
  std::sort(use.begin(), use.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; i < use.size() && static_cast<int>(i) < options.busiest_links; ++i) {
    const auto id = topologies::LinkId::at(use[i].second);
    result.busiest_links.push_back({t.resource_name(id),
                                    std::string(topologies::to_string(t.resource_kind(id))),
                                    sim::Bytes::of(net.link_bytes()[use[i].second]), use[i].first});
    const auto series = rates.find(id);
    if (series == rates.end()) continue;
    for (const auto& [at_us, rate] : series->second) {
      TraceEvent e;
      e.name = "GB/s";
      e.track = "link " + t.resource_name(id);
      e.pid = pid;
      e.start_us = at_us;
      e.value = rate * 1e-9;
      result.trace.push_back(std::move(e));
    }
  }
}

/// Rejects a job whose GPU map does not fit its plan and the topology.
void check_job(const System& system, const ParallelPlan& plan, const StepOptions& options) {
  if (!options.link_changes.empty() && options.backend != Backend::flow) {
    throw std::invalid_argument("link changes during a step need the flow backend");
  }
  const size_t n = static_cast<size_t>(plan.gpus());
  if (options.gpus.empty()) {
    if (n > system.topology->gpu_count()) {
      throw std::invalid_argument(fmt::format("the plan needs {} GPUs, the system has {}", n,
                                              system.topology->gpu_count()));
    }
    return;
  }
  if (options.gpus.size() != n) {
    throw std::invalid_argument(
        fmt::format("StepOptions::gpus maps {} ranks, the plan has {}", options.gpus.size(), n));
  }
  for (topologies::GpuRank g : options.gpus) {
    if (g.index() >= system.topology->gpu_count())
      throw std::invalid_argument(fmt::format("StepOptions::gpus names GPU {} of {}", g.value(),
                                              system.topology->gpu_count()));
  }
}

/// One job of a simulation: its placement, its traffic on the shared fabric and the engine of
/// its current step. Steps run back to back: each starts a fresh engine at the current time.
class JobRun {
 public:
  /// `network` is null on the analytical backend; with `count_traffic` the job's bytes per
  /// resource are kept apart (several jobs on one fabric).
  JobRun(sim::Simulation& simulation, StepCache& cache, sim::FlowNetwork* network,
         bool count_traffic, const Workload& workload, const ParallelPlan& plan,
         const StepOptions& options, std::vector<TraceEvent>* trace)
      : simulation_(simulation),
        workload_(workload),
        plan_(plan),
        options_(options),
        placement_(plan, plan.gpus()),
        schedule_(cache.pipeline(plan.pp, plan.vp, workload.microbatches)),
        trace_(trace) {
    if (network != nullptr) {
      sim::Network* carrier = network;
      if (count_traffic) carrier = &traffic_.emplace(*network, cache.capacities().size());
      runner_.emplace(simulation, *carrier, cache.router());
    }
    comm_.emplace(simulation, cache, placement_, options_.gpus, runner_ ? &*runner_ : nullptr);
  }

  /// Starts a step now; `on_end` runs when its last rank has finished it.
  void start_step(Callback on_end) {
    // Engines of earlier steps stay alive: events of theirs may still be queued.
    engines_.push_back(std::unique_ptr<Engine>(new Engine{simulation_,
                                                          *comm_,
                                                          workload_,
                                                          plan_,
                                                          placement_,
                                                          options_,
                                                          {},
                                                          trace_,
                                                          {},
                                                          {},
                                                          simulation_.now(),
                                                          0,
                                                          std::move(on_end),
                                                          {},
                                                          false}));
    Engine& engine = *engines_.back();
    std::vector<int> ranks;
    if (options_.full_ranks) {
      for (int r = 0; r < plan_.gpus(); ++r)
        ranks.push_back(r);
    } else {
      for (int s = 0; s < plan_.pp; ++s)
        ranks.push_back(placement_.stage_representative(s));
    }
    std::unordered_map<int, RankRun*> by_rank;
    for (int rank : ranks) {
      engine.ranks.push_back(make_rank(rank, placement_, workload_, schedule_));
      if (!options_.compute_slowdown.empty()) {
        engine.ranks.back()->compute_scale =
            options_.compute_slowdown.at(static_cast<size_t>(rank));
      }
      by_rank[rank] = engine.ranks.back().get();
    }
    for (auto& r : engine.ranks) {
      Coordinates c = placement_.coordinates(r->rank);
      c.pp = (r->stage + 1) % plan_.pp;
      r->downstream = by_rank.at(placement_.rank_of(c));
      c.pp = (r->stage + plan_.pp - 1) % plan_.pp;
      r->upstream = by_rank.at(placement_.rank_of(c));
    }
    engine.start();
  }

  /// The current step's per-stage breakdown (averaged over the simulated ranks of a stage) and
  /// time; throws std::logic_error naming a rank that has not finished.
  StepResult step_result() const {
    const Engine& engine = *engines_.back();
    StepResult result;
    result.stages.assign(static_cast<size_t>(plan_.pp), StageBreakdown{});
    std::vector<int> count(static_cast<size_t>(plan_.pp), 0);
    for (const auto& r : engine.ranks) {
      if (!r->finished) {
        throw std::logic_error(fmt::format("rank {} did not finish the step (deadlock)", r->rank));
      }
      result.stages[static_cast<size_t>(r->stage)] += breakdown_of(*r, engine.step_start);
      ++count[static_cast<size_t>(r->stage)];
    }
    for (size_t s = 0; s < result.stages.size(); ++s) {
      StageBreakdown& b = result.stages[s];
      b /= std::max(1, count[s]);
      if (b.end > result.step_time) {
        result.step_time = b.end;
        result.critical_stage = static_cast<int>(s);
      }
    }
    result.simulated_ranks = engine.ranks.size();
    return result;
  }

  std::map<std::string, uint64_t> flows_by_group() const { return comm_->flows_by_group(); }

  /// Bytes this job's flows put on `resource` (with count_traffic).
  double link_bytes(size_t resource) const {
    return traffic_ ? traffic_->link_bytes()[resource] : 0.0;
  }

 private:
  sim::Simulation& simulation_;
  const Workload& workload_;
  const ParallelPlan& plan_;
  const StepOptions& options_;
  const Placement placement_;
  const std::vector<std::vector<PipelineTask>>& schedule_;
  std::vector<TraceEvent>* trace_;
  std::optional<JobTraffic> traffic_;
  std::optional<CollectiveRunner> runner_;
  std::optional<Communicator> comm_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

}  // namespace

StageBreakdown& StageBreakdown::operator+=(const StageBreakdown& other) {
  for (const BreakdownComponent& c : kBreakdownComponents)
    this->*c.field += other.*c.field;
  end = std::max(end, other.end);
  return *this;
}

StageBreakdown& StageBreakdown::operator/=(double n) {
  for (const BreakdownComponent& c : kBreakdownComponents)
    this->*c.field /= n;
  return *this;
}

namespace {

/// What the jobs of one simulation run on: a cache that serves the system (the caller's, or
/// one of its own), the simulation, and on the flow backend the network.
struct Fabric {
  Fabric(const System& system, const CollectiveProfile& collective, const StepOptions& options,
         StepCache* given)
      : cache(given) {
    if (cache == nullptr || !cache->serves(system, collective, options.routing, options.collnet)) {
      cache = &own.emplace(system, collective, options.routing, options.collnet);
    }
    if (options.backend == Backend::flow) network.emplace(simulation, cache->capacities());
  }
  sim::FlowNetwork* flow_network() { return network ? &*network : nullptr; }

  std::optional<StepCache> own;
  StepCache* cache;
  sim::Simulation simulation;
  std::optional<sim::FlowNetwork> network;
};

}  // namespace

StepResult simulate_step(const System& system, const CollectiveProfile& collective,
                         const Workload& workload, const ParallelPlan& plan,
                         const StepOptions& options, StepCache* given) {
  check_job(system, plan, options);
  Fabric fabric(system, collective, options, given);
  StepCache* cache = fabric.cache;
  sim::Simulation& simulation = fabric.simulation;
  std::optional<sim::FlowNetwork>& network = fabric.network;
  std::vector<TraceEvent> trace;
  JobRun job(simulation, *cache, fabric.flow_network(), false, workload, plan, options,
             options.trace ? &trace : nullptr);
  // Traces: every link's rate after each re-solve, kept for the busiest links at the end.
  std::map<topologies::LinkId, std::vector<std::pair<double, double>>> link_rates;
  if (options.trace && network) {
    network->set_link_rate_observer([&link_rates](sim::LinkId l, sim::Time t, double rate) {
      auto& series = link_rates[l];
      if (!series.empty() && series.back().first == t.us()) {
        series.back().second = rate;
      } else if (series.empty() || series.back().second != rate) {
        series.emplace_back(t.us(), rate);
      }
    });
  }
  for (const LinkChange& c : options.link_changes) {
    const sim::LinkCapacity nominal = cache->capacities().at(c.resource);
    if (!(c.factor > 0)) throw std::invalid_argument("LinkChange: factor must be positive");
    simulation.schedule_at(c.at, [&network, c, nominal] {
      network->set_link_capacity(
          c.resource, {sim::Bandwidth::bytes_per_s(nominal.bandwidth.bytes_per_s() / c.factor),
                       nominal.efficiency});
    });
  }
  job.start_step(nullptr);
  simulation.run();
  StepResult result = job.step_result();  // throws when a rank did not finish (a deadlock)
  result.events = simulation.events_executed();
  result.flows_by_group = job.flows_by_group();
  result.trace = std::move(trace);
  if (network) {
    report_links(*network, cache->capacities(), *system.topology, options, plan.pp, link_rates,
                 result);
  }
  return result;
}

SharedStepResult simulate_shared_steps(const System& system, const CollectiveProfile& collective,
                                       const std::vector<SharedJob>& jobs, int steps,
                                       StepCache* given) {
  if (jobs.empty()) throw std::invalid_argument("simulate_shared_steps: no jobs");
  if (steps < 1) throw std::invalid_argument("simulate_shared_steps: steps must be >= 1");
  const StepOptions& first = jobs.front().options;
  std::vector<int> owner(system.topology->gpu_count(), -1);
  for (size_t k = 0; k < jobs.size(); ++k) {
    const SharedJob& job = jobs[k];
    check_job(system, *job.plan, job.options);
    if (job.options.backend != first.backend || job.options.routing != first.routing ||
        job.options.collnet != first.collnet) {
      throw std::invalid_argument(
          "simulate_shared_steps: the jobs of one fabric share its backend, routing and collnet");
    }
    if (!job.options.link_changes.empty()) {
      throw std::invalid_argument("simulate_shared_steps: link changes are per step, not per job");
    }
    if (job.options.gpus.empty() && jobs.size() > 1) {
      throw std::invalid_argument("simulate_shared_steps: every job needs its GPUs");
    }
    for (size_t r = 0; r < static_cast<size_t>(job.plan->gpus()); ++r) {
      int& o = owner[job.options.gpus.empty() ? r : job.options.gpus[r].index()];
      if (o >= 0) {
        throw std::invalid_argument(
            fmt::format("simulate_shared_steps: jobs {} and {} share a GPU", o, k));
      }
      o = static_cast<int>(k);
    }
  }
  Fabric fabric(system, collective, first, given);
  StepCache* cache = fabric.cache;
  sim::Simulation& simulation = fabric.simulation;
  std::optional<sim::FlowNetwork>& network = fabric.network;

  // Every job repeats its step, back to back, until each has finished `steps` of them after a
  // first one (all jobs start that one together at time 0, so it is not counted); a job that is
  // done early keeps running, so that every counted step shared the fabric with all the others.
  const size_t warmup = steps > 1 ? 1 : 0;
  std::vector<std::unique_ptr<JobRun>> runs;
  std::vector<std::vector<StepResult>> finished(jobs.size());
  for (const SharedJob& job : jobs) {
    runs.push_back(std::make_unique<JobRun>(simulation, *cache, fabric.flow_network(),
                                            jobs.size() > 1, *job.workload, *job.plan, job.options,
                                            nullptr));
  }
  auto all_done = [&] {
    return std::all_of(finished.begin(), finished.end(), [&](const auto& f) {
      return f.size() >= warmup + static_cast<size_t>(steps);
    });
  };
  std::function<void(size_t)> next_step = [&](size_t k) {
    runs[k]->start_step([&, k] {
      finished[k].push_back(runs[k]->step_result());
      if (all_done()) {
        simulation.stop();
      } else {
        next_step(k);
      }
    });
  };
  for (size_t k = 0; k < runs.size(); ++k)
    next_step(k);
  simulation.run();
  for (size_t k = 0; k < runs.size(); ++k) {
    if (finished[k].size() < warmup + static_cast<size_t>(steps))
      runs[k]->step_result();  // throws: which rank did not finish
  }

  SharedStepResult out;
  out.simulated_seconds = simulation.now().s();
  out.events = simulation.events_executed();
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::vector<StepResult>& done = finished[k];
    const size_t n = done.size() - warmup;
    StepResult mean = done[warmup];
    for (size_t i = warmup + 1; i < done.size(); ++i) {
      mean.step_time += done[i].step_time;
      for (size_t s = 0; s < mean.stages.size(); ++s) {
        const sim::Seconds end = mean.stages[s].end + done[i].stages[s].end;
        mean.stages[s] += done[i].stages[s];
        mean.stages[s].end = end;
      }
    }
    mean.step_time /= static_cast<double>(n);
    for (StageBreakdown& b : mean.stages) {
      b /= static_cast<double>(n);
      b.end /= static_cast<double>(n);
    }
    out.jobs.push_back(std::move(mean));
    out.steps.push_back(static_cast<int>(n));
  }
  if (network) {
    out.flows = network->stats().flows_started;
    out.rate_solves = network->stats().rate_solves;
    const topologies::Topology& t = *system.topology;
    const std::vector<sim::LinkCapacity>& caps = cache->capacities();
    for (size_t l = 0; l < network->link_bytes().size(); ++l) {
      // Most resources of a large fabric carry nothing or one job: count before allocating.
      if (network->link_bytes()[l] <= 0) continue;
      const auto carried = std::count_if(runs.begin(), runs.end(),
                                         [l](const auto& run) { return run->link_bytes(l) > 0; });
      if (carried < 2) continue;
      SharedLink shared;
      for (size_t k = 0; k < runs.size(); ++k) {
        const double bytes = runs[k]->link_bytes(l);
        shared.job_bytes.push_back(sim::Bytes::of(bytes));
        if (bytes > 0) shared.jobs.push_back(static_cast<int>(k));
      }
      const auto id = topologies::LinkId::at(l);
      const double usable = caps[l].bandwidth.bytes_per_s() * caps[l].efficiency;
      shared.use = {t.resource_name(id), std::string(topologies::to_string(t.resource_kind(id))),
                    sim::Bytes::of(network->link_bytes()[l]),
                    network->link_bytes()[l] / (usable * out.simulated_seconds)};
      out.shared_links.push_back(std::move(shared));
    }
    std::sort(out.shared_links.begin(), out.shared_links.end(), [](const auto& a, const auto& b) {
      return a.use.utilization != b.use.utilization ? a.use.utilization > b.use.utilization
                                                    : a.use.name < b.use.name;
    });
  }
  return out;
}

nlohmann::json trace_to_json(const StepResult& result) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> tids;
  std::set<int> named;
  for (const TraceEvent& e : result.trace) {
    if (named.insert(e.pid).second) {
      events.push_back(
          {{"name", "process_name"},
           {"ph", "M"},
           {"pid", e.pid},
           {"args", {{"name", e.value ? std::string("links") : fmt::format("stage {}", e.pid)}}}});
    }
    const auto [it, inserted] = tids.emplace(e.track, static_cast<int>(tids.size()));
    if (inserted) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", e.pid},
                        {"tid", it->second},
                        {"args", {{"name", e.track}}}});
    }
    if (e.value) {
      events.push_back({{"name", e.track},
                        {"ph", "C"},
                        {"pid", e.pid},
                        {"ts", e.start_us},
                        {"args", {{e.name, *e.value}}}});
      continue;
    }
    events.push_back({{"name", e.name},
                      {"ph", "X"},
                      {"pid", e.pid},
                      {"tid", it->second},
                      {"ts", e.start_us},
                      {"dur", e.duration_us}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace fabricsim::models
