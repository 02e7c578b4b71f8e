#include "api/straggler_run.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/training_run.hpp"
#include "sim/input_error.hpp"
#include "topologies/cluster_spec.hpp"

namespace fabricsim::api {
namespace {

struct Component {
  const char* name;
  sim::Seconds models::StageBreakdown::*field;
  bool wait;  ///< time spent waiting for someone else
};

constexpr Component kComponents[] = {
    {"compute", &models::StageBreakdown::compute, false},
    {"TP", &models::StageBreakdown::exposed_tp, true},
    {"CP", &models::StageBreakdown::exposed_cp, true},
    {"EP", &models::StageBreakdown::exposed_ep, true},
    {"PP", &models::StageBreakdown::exposed_pp, true},
    {"PP bubble", &models::StageBreakdown::bubble, true},
    {"DP", &models::StageBreakdown::exposed_dp, true},
    {"optimizer", &models::StageBreakdown::optimizer, false},
};

models::StepResult simulate(const Scenario& s) {
  const TrainingReport t = run_training(s);
  if (!t.step) {
    throw sim::InputError(s.source, "/parallelism",
                          "the plan does not fit in GPU memory: " + t.memory.reason);
  }
  return *t.step;
}

}  // namespace

StragglerReport run_stragglers(const Scenario& scenario) {
  const std::vector<double>& f = scenario.simulation.compute_slowdown;
  if (!scenario.operations.stragglers.any()) {
    throw sim::InputError(scenario.source, "/stragglers",
                          "no slow GPUs: set fraction and slowdown, node_fraction and "
                          "node_slowdown, ranks, nodes or links");
  }
  StragglerReport r;
  for (const double x : f) {
    if (x != 1.0) ++r.slow_ranks;
    r.worst_factor = std::max(r.worst_factor, x);
  }
  const models::StragglerSpec& spec = scenario.operations.stragglers;
  r.slow_links = static_cast<int>(spec.links.size() + spec.link_windows.size());
  for (const auto& [rank, factor] : spec.links)
    r.worst_factor = std::max(r.worst_factor, factor);
  for (const models::StragglerSpec::LinkWindow& w : spec.link_windows)
    r.worst_factor = std::max(r.worst_factor, w.factor);
  Scenario nominal = scenario;
  nominal.simulation.compute_slowdown.clear();  // full_ranks stays: like for like
  nominal.operations.stragglers.link_windows.clear();
  if (!spec.links.empty()) {
    nominal.topology =
        std::make_shared<const topologies::Topology>(topologies::build_cluster(nominal.cluster));
  }
  const models::StepResult base = simulate(nominal);
  const models::StepResult slow = simulate(scenario);
  r.nominal_step_s = base.step_time.s();
  r.straggler_step_s = slow.step_time.s();
  r.slowdown = slow.step_time / base.step_time;
  double most = 0;
  r.propagated_through = "none";
  for (const Component& c : kComponents) {
    double added = 0;
    for (size_t s = 0; s < base.stages.size(); ++s)
      added += (slow.stages[s].*c.field - base.stages[s].*c.field).s();
    r.added_s.emplace_back(c.name, added);
    if (c.wait && added > most * (1 + 1e-9) && added > 1e-9) {
      most = added;
      r.propagated_through = c.name;
    }
  }
  return r;
}

nlohmann::json stragglers_to_json(const StragglerReport& r) {
  nlohmann::json added;
  for (const auto& [name, s] : r.added_s)
    added[name] = s;
  return {{"slow_ranks", r.slow_ranks},
          {"slow_links", r.slow_links},
          {"worst_factor", r.worst_factor},
          {"nominal_step_s", r.nominal_step_s},
          {"straggler_step_s", r.straggler_step_s},
          {"slowdown", r.slowdown},
          {"added_s", added},
          {"propagated_through", r.propagated_through}};
}

std::string stragglers_to_text(const StragglerReport& r) {
  std::string out = fmt::format(
      "{} slow GPU(s), {} slow link(s), worst {:.2f}x: step {:.4f} s -> {:.4f} s ({:.3f}x), "
      "propagated through {}\n",
      r.slow_ranks, r.slow_links, r.worst_factor, r.nominal_step_s, r.straggler_step_s, r.slowdown,
      r.propagated_through);
  out += "added per rank (stage averages, summed over stages):\n";
  for (const auto& [name, s] : r.added_s) {
    if (s > 1e-9 || s < -1e-9) out += fmt::format("  {:<10} {:+.4f} s\n", name, s);
  }
  return out;
}

}  // namespace fabricsim::api
