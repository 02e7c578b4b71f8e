#include "api/cluster_sizing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/input_error.hpp"
#include "topologies/describe.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {
namespace {

constexpr const char* kWhere = "<command line>";

/// GPUs of one scale-up domain of a preset (a server without NVSwitch): the sizing step.
int domain_of(const topologies::SystemPreset& preset) {
  // 576 is a multiple of every preset's server (4 or 8 GPUs) and of a 72-GPU rack.
  const topologies::ClusterSpec spec = preset.make(576);
  return spec.nvlink ? spec.nvlink->gpus_per_domain : spec.gpus_per_server;
}

Scenario scenario_at(const nlohmann::json& base, const std::string& system, int gpus) {
  nlohmann::json doc = base;
  doc["system"]["preset"] = system;
  doc["system"]["gpus"] = gpus;
  return read_search_base(std::move(doc), fmt::format("<{} x {}>", system, gpus));
}

/// The best plan at one size; `fits` false when no plan fits (the reason says why).
struct SizePoint {
  bool fits = false;
  std::string reason;
  PlanResult best;
  double days = 0;
  Scenario scenario;
};

SizePoint evaluate_size(const nlohmann::json& base, const std::string& system, int gpus,
                        const SizingRequest& request) {
  SizePoint p;
  try {
    p.scenario = scenario_at(base, system, gpus);
  } catch (const sim::InputError& e) {
    // A size the preset's fabric generator cannot build is a size that does not work.
    if (e.path().rfind("/system", 0) != 0) throw;
    p.reason = e.message();
    return p;
  }
  SearchOptions o;
  o.top = 0;
  o.keep = 4;
  o.variant_shapes = 0;
  o.threads = request.threads;
  const PlanSearch search = search_plans(p.scenario, sizing_constraints(), o);
  if (search.ranked.empty()) {
    std::string why;
    for (const auto& [reason, count] : search.rejected)
      why += fmt::format("{}{} {}", why.empty() ? "" : ", ", count, to_string(reason));
    p.reason = fmt::format("no plan at {} GPUs ({})", gpus, why.empty() ? "none allowed" : why);
    return p;
  }
  p.fits = true;
  p.best = search.ranked.front();
  p.days = request.tokens / (p.best.tokens_per_s_per_gpu * gpus) / 86400.0;
  return p;
}

SizingRow size_one(const nlohmann::json& base, const std::string& system,
                   const SizingRequest& request, const models::PriceTable& prices) {
  const topologies::SystemPreset* preset = topologies::find_system(system);
  SizingRow row;
  row.system = system;
  row.domain = domain_of(*preset);
  const long long max_k = std::max(1, request.max_gpus / row.domain);
  auto at = [&](int k) {
    ++row.searches;
    SizePoint p = evaluate_size(base, system, k * row.domain, request);
    // Every size of a system rests on the same calibration: state it once, from the first
    // size that could be read.
    if (!row.confidence && !p.scenario.system().empty()) {
      row.confidence = scenario_confidence(p.scenario);
    }
    return p;
  };
  auto meets = [&](const SizePoint& p) {
    return p.fits && (!request.days || p.days <= *request.days);
  };
  SizePoint chosen;
  if (request.gpus) {
    const int k = (*request.gpus + row.domain - 1) / row.domain;
    chosen = at(k);
    row.baseline_gpus = k * row.domain;
    if (chosen.fits) row.scaling_efficiency = 1;
  } else {
    // Sizes of 1, 3 or 5 x 2^i domains: a batch of 2^n sequences divides over them with a
    // pipeline of 3 or 5 (or 9 on a 72-GPU domain) stages, where most other counts leave no
    // plan at all. The smallest size any plan fits, doubling; then grow on the perfect-scaling
    // estimate until the deadline is met, and bisect between the last size that misses and the
    // first that meets it.
    std::vector<int> ks;
    for (int m : {1, 3, 5}) {
      for (long long k = m; k <= max_k; k *= 2)
        ks.push_back(static_cast<int>(k));
    }
    std::sort(ks.begin(), ks.end());
    auto index_at_least = [&](double k) {
      const auto it = std::lower_bound(ks.begin(), ks.end(), static_cast<int>(std::ceil(k)));
      return static_cast<size_t>(it - ks.begin());
    };
    size_t lo = 0;
    SizePoint p = at(ks[lo]);
    while (!p.fits && lo + 1 < ks.size()) {
      lo = std::max(lo + 1, index_at_least(2.0 * ks[lo]));
      if (lo >= ks.size()) lo = ks.size() - 1;
      p = at(ks[lo]);
    }
    if (!p.fits) {
      row.reason = fmt::format("no plan fits at any size up to {} GPUs; at {}: {}",
                               ks.back() * row.domain, p.scenario.gpus, p.reason);
      return row;
    }
    const SizePoint baseline = p;
    row.baseline_gpus = ks[lo] * row.domain;
    size_t hi = lo;
    SizePoint fastest = p;
    while (!meets(p)) {
      if (hi + 1 >= ks.size()) {
        row.reason = fmt::format(
            "cannot meet {:g} days with up to {} GPUs: the fastest size tried, {} GPUs, takes "
            "{:.1f} days",
            *request.days, ks.back() * row.domain, fastest.scenario.gpus, fastest.days);
        row.gpus = fastest.scenario.gpus;
        return row;
      }
      lo = hi;
      const double target = p.fits ? ks[hi] * 1.05 * p.days / *request.days : 2.0 * ks[hi];
      hi = std::min(ks.size() - 1, std::max(hi + 1, index_at_least(target)));
      p = at(ks[hi]);
      if (p.fits && p.days < fastest.days) fastest = p;
    }
    chosen = p;
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      SizePoint m = at(ks[mid]);
      if (meets(m)) {
        hi = mid;
        chosen = std::move(m);
      } else {
        lo = mid;
      }
    }
    row.scaling_efficiency = chosen.best.tokens_per_s_per_gpu / baseline.best.tokens_per_s_per_gpu;
  }
  row.gpus = chosen.scenario.gpus;
  if (!chosen.fits) {
    row.reason = chosen.reason;
    return row;
  }
  row.met = meets(chosen);
  row.best = chosen.best;
  row.days = chosen.days;
  row.gpu_hours = row.days * 24 * row.gpus;
  const topologies::ClusterSpec& cluster = chosen.scenario.cluster;
  row.fabric =
      models::count_fabric(topologies::summarize(*chosen.scenario.topology),
                           cluster.scale_out ? cluster.scale_out->nic_bandwidth.gbytes_per_s() : 0);
  row.cost = models::cluster_cost(prices, system, row.gpus, row.fabric, row.days * 24, kWhere);
  return row;
}

std::string money(const std::optional<double>& usd) {
  if (!usd) return "n/a";
  if (*usd >= 1e9) return fmt::format("${:.2f}B", *usd / 1e9);
  if (*usd >= 1e6) return fmt::format("${:.1f}M", *usd / 1e6);
  return fmt::format("${:.0f}k", *usd / 1e3);
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

PlanConstraints sizing_constraints() {
  PlanConstraints c;
  c.zero_stages = {1};
  c.recompute = {models::Recompute::selective, models::Recompute::full};
  c.max_micro_batch = 2;
  c.search_overlap = false;
  c.search_order = false;
  return c;
}

std::vector<SizingRow> size_clusters(const nlohmann::json& base, const SizingRequest& request,
                                     const models::PriceTable& prices) {
  if (!(request.tokens > 0)) {
    throw sim::InputError(kWhere, "--tokens", "expected a positive token budget such as 15T");
  }
  if (request.days.has_value() == request.gpus.has_value()) {
    throw sim::InputError(kWhere, "--days",
                          "expected either a deadline (--days) or a GPU count (--gpus)");
  }
  if (request.days && !(*request.days > 0)) {
    throw sim::InputError(kWhere, "--days", "expected a positive number of days");
  }
  if (request.systems.empty()) {
    throw sim::InputError(kWhere, "--systems", "expected at least one system");
  }
  std::vector<std::string> systems;
  for (const std::string& s : request.systems) {
    const topologies::SystemPreset* preset = topologies::find_system(s);
    if (preset == nullptr) {
      throw sim::InputError(
          kWhere, "--systems",
          fmt::format("unknown system \"{}\" (one of {})", s, topologies::system_names()));
    }
    systems.push_back(preset->name);  // aliases name their preset
    if (prices.systems.count(preset->name) == 0) {
      throw sim::InputError(kWhere, "--systems",
                            fmt::format("no power figures for \"{}\": add it to a price table "
                                        "(--prices)",
                                        s));
    }
  }
  std::vector<SizingRow> rows;
  for (const std::string& s : systems)
    rows.push_back(size_one(base, s, request, prices));
  return rows;
}

nlohmann::json sizing_to_json(const std::vector<SizingRow>& rows, const SizingRequest& request,
                              const models::PriceTable& prices) {
  nlohmann::json out = nlohmann::json::array();
  for (const SizingRow& r : rows) {
    nlohmann::json j = {{"system", r.system},
                        {"domain_gpus", r.domain},
                        {"met", r.met},
                        {"gpus", r.gpus},
                        {"searches", r.searches}};
    if (!r.reason.empty()) j["reason"] = r.reason;
    if (r.confidence) j["confidence"] = confidence_to_json(*r.confidence);
    if (r.best.feasible() && r.best.step_time_s > 0) {
      j["plan"] = plan_result_json(r.best);
      j["days"] = r.days;
      j["gpu_hours"] = r.gpu_hours;
      j["scaling_efficiency"] = r.scaling_efficiency;
      j["baseline_gpus"] = r.baseline_gpus;
      j["fabric"] = {{"switches", r.fabric.switches},
                     {"nics", r.fabric.nics},
                     {"transceivers", r.fabric.transceivers},
                     {"tiers", r.fabric.tiers}};
      j["cost"] = {{"units", r.cost.units},
                   {"systems_usd", optional_json(r.cost.systems_usd)},
                   {"fabric_usd", r.cost.fabric_usd},
                   {"capital_usd", optional_json(r.cost.capital_usd)},
                   {"rental_usd", optional_json(r.cost.rental_usd)},
                   {"it_kw", r.cost.it_kw},
                   {"facility_MW", r.cost.facility_mw},
                   {"energy_MWh", r.cost.energy_mwh},
                   {"energy_usd", r.cost.energy_usd}};
    }
    out.push_back(j);
  }
  return {
      {"tokens", request.tokens},
      {"days", optional_json(request.days ? std::optional<double>(*request.days) : std::nullopt)},
      {"pue", prices.pue},
      {"electricity_usd_per_kwh", prices.electricity_usd_per_kwh},
      {"systems", out}};
}

std::string sizing_to_text(const std::vector<SizingRow>& rows, const SizingRequest& request) {
  std::string out =
      request.days ? fmt::format("{:.3g} tokens within {:g} days\n", request.tokens, *request.days)
                   : fmt::format("{:.3g} tokens on {} GPUs\n", request.tokens, *request.gpus);
  out += fmt::format("{:<14} {:>7} {:>7} {:>9} {:>6} {:>6} {:>9} {:>8} {:>8} {:>9} {:>9}  {}\n",
                     "system", "GPUs", "days", "GPU-h", "MFU", "eff.", "MWh", "MW", "capital",
                     "rental", "energy", "plan");
  for (const SizingRow& r : rows) {
    if (r.best.step_time_s <= 0) {
      out += fmt::format("{:<14} {}\n", r.system, r.reason);
      continue;
    }
    const models::ParallelPlan& p = r.best.plan;
    std::string plan = fmt::format("TP{} PP{} DP{} CP{}", p.tp, p.pp, p.dp, p.cp);
    if (p.ep > 1) plan += fmt::format(" EP{}", p.ep);
    if (p.vp > 1) plan += fmt::format(" VP{}", p.vp);
    plan += fmt::format(" mb{} {}", p.micro_batch, models::to_string(p.recompute));
    out += fmt::format(
        "{:<14} {:>7} {:>7.1f} {:>9.3g} {:>5.1f}% {:>5.1f}% {:>9.0f} {:>8.2f} {:>8} {:>9} {:>9}  "
        "{}{}\n",
        r.system, r.gpus, r.days, r.gpu_hours, 100 * r.best.mfu, 100 * r.scaling_efficiency,
        r.cost.energy_mwh, r.cost.facility_mw, money(r.cost.capital_usd), money(r.cost.rental_usd),
        money(r.cost.energy_usd), plan, r.met ? "" : "  (" + r.reason + ")");
  }
  out +=
      "eff.: tokens/s per GPU relative to the smallest size that fits; capital: systems + "
      "scale-out fabric; energy: facility energy x electricity price\n";
  for (const SizingRow& r : rows) {
    if (r.confidence) {
      out += fmt::format("confidence on {}: {}\n", r.system,
                         confidence_with_calibration(*r.confidence));
    }
  }
  return out;
}

}  // namespace fabricsim::api
