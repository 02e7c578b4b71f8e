#include "api/scaling_study.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "api/cluster_sizing.hpp"
#include "api/evaluator.hpp"
#include "api/plan_search.hpp"
#include "api/scenario.hpp"
#include "api/training_run.hpp"
#include "sim/input_error.hpp"
#include "topologies/describe.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {

const char* to_string(ScalingMode m) {
  return m == ScalingMode::weak ? "weak" : "strong";
}

std::vector<int> default_gpu_counts(int max_gpus) {
  std::vector<int> out;
  for (int n = 8; n <= max_gpus; n *= 2)
    out.push_back(n);
  return out;
}

namespace {

/// The "system" section of a scenario file, its preset checked (the sizes are the study's).
nlohmann::json system_section_of(const std::string& file) {
  const sim::JsonDocument doc = sim::load_json_file(file);
  const sim::JsonValue section = doc.root().as_object().required("system");
  const sim::JsonValue preset = section.as_object().required("preset");
  if (topologies::find_system(preset.as_string()) == nullptr) {
    preset.fail(fmt::format("one of {}", topologies::system_names()));
  }
  return section.raw();
}

}  // namespace

ScalingStudy read_scaling_study(const sim::JsonValue& root) {
  ScalingStudy study;
  study.modes = {ScalingMode::weak, ScalingMode::strong};
  sim::ObjectReader top = root.as_object();
  study.systems = {top.required("system").as_object().required("preset").as_string()};
  study.gpus = default_gpu_counts(1024);
  const auto section = top.optional("scale");
  if (!section) return study;
  sim::ObjectReader r = section->as_object();
  if (auto systems = r.optional("systems")) {
    study.systems.clear();
    for (const sim::JsonValue& s : systems->as_array()) {
      const std::string name = s.as_string();
      std::error_code ec;
      const bool preset = topologies::find_system(name) != nullptr;
      if (name.ends_with(".json") || (!preset && std::filesystem::exists(name, ec))) {
        study.system_files[name] = system_section_of(name);
      } else if (!preset) {
        s.fail(fmt::format("one of {}, or a scenario file (a name ending in .json)",
                           topologies::system_names()));
      }
      study.systems.push_back(name);
    }
    if (study.systems.empty()) systems->fail("at least one system preset");
  }
  const auto gpus = r.optional("gpus");
  const auto max_gpus = r.optional("max_gpus");
  if (gpus && max_gpus) max_gpus->fail_message("give either gpus or max_gpus, not both");
  if (gpus) {
    study.gpus.clear();
    for (const sim::JsonValue& g : gpus->as_array()) {
      const int n = g.as_positive_int32();
      if (n > topologies::kMaxGpus) g.fail(fmt::format("at most {} GPUs", topologies::kMaxGpus));
      if (!study.gpus.empty() && n <= study.gpus.back()) g.fail("GPU counts in ascending order");
      study.gpus.push_back(n);
    }
    if (study.gpus.empty()) gpus->fail("at least one GPU count");
  }
  if (max_gpus) {
    const int n = max_gpus->as_positive_int32();
    if (n < 8) max_gpus->fail("at least 8 (the default counts start at 8)");
    if (n > topologies::kMaxGpus) {
      max_gpus->fail(fmt::format("at most {} GPUs", topologies::kMaxGpus));
    }
    study.gpus = default_gpu_counts(n);
  }
  if (auto modes = r.optional("modes")) {
    study.modes.clear();
    for (const sim::JsonValue& m : modes->as_array()) {
      study.modes.push_back(m.as_enum({"weak", "strong"}) == "weak" ? ScalingMode::weak
                                                                    : ScalingMode::strong);
    }
    if (study.modes.empty()) modes->fail("at least one of weak, strong");
  }
  if (auto b = r.optional("strong_global_batch")) {
    study.strong_global_batch = b->as_positive_int32();
  }
  if (auto v = r.optional("replan")) study.replan = v->as_bool();
  if (auto v = r.optional("tokens")) study.tokens = v->as_positive_number();
  r.finish();
  return study;
}

namespace {

/// Seconds per step component of the critical stage, "other" (the remainder) last.
using Components = std::vector<std::pair<std::string, double>>;

Components components_of(const models::StepResult& step) {
  const models::StageBreakdown& b = step.stages[static_cast<size_t>(step.critical_stage)];
  Components c;
  double sum = 0;
  for (const models::BreakdownComponent& part : models::kBreakdownComponents) {
    c.emplace_back(std::string(part.label), (b.*part.field).s());
    sum += (b.*part.field).s();
  }
  c.emplace_back("other", step.step_time.s() - sum);
  return c;
}

struct Baseline {
  double sequences_per_gpu = 0;
  double tokens_per_s_per_gpu = 0;
  Components components;
};

ScalingRow infeasible_row(ScalingRow row, std::string reason) {
  row.feasible = false;
  row.reason = std::move(reason);
  return row;
}

}  // namespace

namespace {

/// With replan: the best plan of `variant` at its size, or why there is none. The search ranks
/// as `size` does (analytical, bounded); a study at flow fidelity then re-checks the best plans of
/// the three best layouts at flow and keeps the fastest there, since the analytical ranking does
/// not see contention on a shared fabric.
std::optional<std::string> replan(Scenario& variant, const ScalingStudy& study) {
  SearchOptions o;
  o.top = variant.simulation.backend == models::Backend::flow ? 3 : 0;
  o.keep = 4;
  o.variant_shapes = 0;
  o.threads = study.threads;
  const PlanSearch search = search_plans(variant, sizing_constraints(), o);
  if (search.ranked.empty()) {
    std::string why;
    for (const auto& [reason, count] : search.rejected)
      why += fmt::format("{}{} {}", why.empty() ? "" : ", ", count, to_string(reason));
    return fmt::format("no plan fits ({})", why.empty() ? "none allowed" : why);
  }
  variant.plan = search.best.empty() ? search.ranked.front().plan : search.best.front().plan;
  return std::nullopt;
}

/// Rental price and capital of the row's cluster, where the price table has them.
void price_row(ScalingRow& row, const Scenario& variant, const models::PriceTable& prices) {
  const auto price = prices.systems.find(row.preset);
  if (price == prices.systems.end()) return;
  row.gpu_hour_usd = price->second.gpu_hour_usd;
  const topologies::ClusterSpec& cluster = variant.cluster;
  const models::FabricCount fabric =
      models::count_fabric(topologies::summarize(*variant.topology),
                           cluster.scale_out ? cluster.scale_out->nic_bandwidth.gbytes_per_s() : 0);
  row.capital_usd =
      models::cluster_cost(prices, row.preset, row.gpus, fabric, 0, variant.source).capital_usd;
}

}  // namespace

std::vector<ScalingRow> run_scaling_study(const nlohmann::json& scenario, const std::string& source,
                                          const ScalingStudy& study,
                                          const std::function<void(const ScalingRow&)>& on_row) {
  // The scenario as given fixes the plan family and the batch per replica (with replan: the
  // batch per GPU); any error in it is the user's to fix, not a property of one size.
  const Scenario given = study.replan ? read_search_base(scenario, source)
                                      : read_scenario(sim::JsonDocument(scenario, source).root());
  const models::ParallelPlan& plan = given.plan;
  const int model_parallel = plan.tp * plan.pp * plan.cp;
  const int per_replica = given.training.global_batch / plan.dp;
  const int strong_batch =
      study.strong_global_batch > 0 ? study.strong_global_batch : given.training.global_batch;

  std::vector<ScalingRow> rows;
  for (const std::string& system : study.systems) {
    // What the rows of this system rest on: its preset's profile (sizes do not change it).
    Scenario probe = given;
    const auto system_file = study.system_files.find(system);
    probe.preset =
        topologies::find_system(system_file == study.system_files.end()
                                    ? system
                                    : system_file->second.at("preset").get<std::string>());
    const Confidence confidence = scenario_confidence(probe);
    for (ScalingMode mode : study.modes) {
      std::optional<Baseline> baseline;
      for (size_t i = 0; i < study.gpus.size(); ++i) {
        const int n = study.gpus[i];
        ScalingRow row;
        row.system = system;
        row.confidence = confidence;
        const auto file = study.system_files.find(system);
        row.preset = file == study.system_files.end()
                         ? system
                         : file->second.at("preset").get<std::string>();
        row.mode = mode;
        row.gpus = n;
        row.dp = n / model_parallel;
        const int64_t weak_batch = study.replan
                                       ? int64_t{given.training.global_batch} * n / given.gpus
                                       : int64_t{per_replica} * row.dp;
        row.global_batch = mode == ScalingMode::weak
                               ? static_cast<int>(std::min<int64_t>(weak_batch, INT32_MAX))
                               : strong_batch;
        row.batch_tokens = static_cast<double>(row.global_batch) *
                           models::sequence_length(given.training, given.model);
        auto emit = [&](ScalingRow r) {
          on_row(r);
          rows.push_back(std::move(r));
        };
        if (!study.replan && n % model_parallel != 0) {
          emit(infeasible_row(
              row, fmt::format("tp x pp x cp = {} does not divide {} GPUs", model_parallel, n)));
          continue;
        }
        if (study.replan && mode == ScalingMode::weak &&
            int64_t{given.training.global_batch} * n % given.gpus != 0) {
          emit(infeasible_row(row, fmt::format("the batch per GPU ({} sequences on {} GPUs) "
                                               "makes no whole batch at {} GPUs",
                                               given.training.global_batch, given.gpus, n)));
          continue;
        }
        // The scenario at this system and size: its own fabric overrides on that preset (what
        // cannot be built at this size makes the size infeasible), DP taking the rest.
        Scenario variant = given;
        try {
          nlohmann::json doc = scenario;
          if (file == study.system_files.end()) {
            doc["system"]["preset"] = system;
          } else {
            doc["system"] = file->second;
          }
          doc["system"]["gpus"] = n;
          read_system(sim::JsonDocument(doc, file == study.system_files.end() ? source : system)
                          .root()
                          .as_object()
                          .required("system"),
                      variant);
          row.preset = variant.system();  // an alias names its preset
        } catch (const sim::InputError& e) {
          emit(infeasible_row(row, e.message()));
          continue;
        }
        variant.training.global_batch = row.global_batch;
        if (study.replan) {
          if (const auto why = replan(variant, study)) {
            emit(infeasible_row(row, *why));
            continue;
          }
          row.plan = variant.plan;
          row.dp = variant.plan.dp;
          price_row(row, variant, study.prices);
        } else {
          variant.plan.dp = row.dp;
        }
        const Evaluator evaluator(variant);
        const PreparedPlan prepared = evaluator.prepare(variant);
        const StepEvaluation e =
            evaluator.evaluate(prepared, fidelity_of(variant.simulation.backend));
        if (e.infeasible) {
          emit(infeasible_row(row, e.infeasible->reason));
          continue;
        }
        const TrainingMetrics& m = e.metrics;
        row.feasible = true;
        row.step_time_s = m.step_time_s;
        row.tokens_per_s_per_gpu = m.tokens_per_s_per_gpu;
        row.model_tflops_per_gpu = m.model_tflops_per_gpu;
        row.mfu = m.mfu;
        row.simulate_wall_s = e.simulate_wall_s;
        if (study.tokens > 0) {
          row.days_to_train = study.tokens / (m.tokens_per_s_per_gpu * n) / 86400;
        }
        const Components parts = components_of(*e.step);
        const double sequences_per_gpu = static_cast<double>(row.global_batch) / n;
        if (i == 0) {
          baseline = Baseline{sequences_per_gpu, m.tokens_per_s_per_gpu, parts};
        }
        if (baseline) {
          row.efficiency = m.tokens_per_s_per_gpu / baseline->tokens_per_s_per_gpu;
          // What the step would hold if every component scaled with the work per GPU.
          const double work = sequences_per_gpu / baseline->sequences_per_gpu;
          for (size_t c = 0; c < parts.size(); ++c) {
            const double lost = parts[c].second - work * baseline->components[c].second;
            row.losses.push_back({parts[c].first, lost / m.step_time_s});
          }
          std::stable_sort(
              row.losses.begin(), row.losses.end(),
              [](const ScalingLoss& a, const ScalingLoss& b) { return a.points > b.points; });
        }
        emit(row);
      }
    }
  }
  return rows;
}

nlohmann::json scaling_row_json(const ScalingRow& row) {
  nlohmann::json j = {
      {"system", row.system}, {"mode", to_string(row.mode)},      {"gpus", row.gpus},
      {"dp", row.dp},         {"global_batch", row.global_batch}, {"feasible", row.feasible}};
  if (row.preset != row.system) j["preset"] = row.preset;
  if (row.plan) {
    j["plan"] = plan_label(*row.plan);
    j["parallelism"] = plan_to_json(*row.plan);
  }
  if (row.batch_tokens > kLargestPublishedBatchTokens) j["batch_above_published"] = true;
  if (!row.feasible) {
    j["reason"] = row.reason;
    return j;
  }
  j["step_time_s"] = row.step_time_s;
  j["tokens_per_s_per_gpu"] = row.tokens_per_s_per_gpu;
  j["model_tflops_per_gpu"] = row.model_tflops_per_gpu;
  j["mfu"] = row.mfu;
  if (row.efficiency) j["scaling_efficiency"] = *row.efficiency;
  nlohmann::json losses = nlohmann::json::object();
  for (const ScalingLoss& l : row.losses)
    losses[l.component] = l.points;
  if (row.efficiency) j["efficiency_lost_to"] = losses;
  j["simulate_wall_s"] = row.simulate_wall_s;
  if (row.days_to_train) j["days_to_train"] = *row.days_to_train;
  if (row.plan) {
    j["gpu_hour_usd"] = row.gpu_hour_usd ? nlohmann::json(*row.gpu_hour_usd) : nullptr;
    j["capital_usd"] = row.capital_usd ? nlohmann::json(*row.capital_usd) : nullptr;
  }
  return j;
}

std::string scaling_summary_text(const std::vector<ScalingRow>& rows, double threshold) {
  // Per system and mode: the largest size up to which every size keeps the threshold.
  std::map<std::pair<std::string, int>, std::vector<const ScalingRow*>> groups;
  std::vector<std::pair<std::string, int>> order;
  for (const ScalingRow& r : rows) {
    const auto key = std::pair{r.system, static_cast<int>(r.mode)};
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  std::string out =
      fmt::format("near-linear (efficiency >= {:.0f}% of the smallest size):\n", 100 * threshold);
  for (const auto& key : order) {
    const auto& g = groups[key];
    int holds_to = 0;
    const ScalingRow* first_miss = nullptr;
    for (const ScalingRow* r : g) {
      if (r->efficiency && *r->efficiency >= threshold) {
        holds_to = r->gpus;
        continue;
      }
      first_miss = r;
      break;
    }
    std::string line =
        fmt::format("  {:<22} {:<6} ", key.first, to_string(static_cast<ScalingMode>(key.second)));
    if (holds_to == 0) {
      line += "no baseline (the smallest size is infeasible)";
    } else if (first_miss == nullptr) {
      line += fmt::format("holds through {} GPUs ({:.1f}% there)", holds_to,
                          100 * g.back()->efficiency.value_or(0));
    } else if (!first_miss->feasible) {
      line += fmt::format("holds through {} GPUs; {} GPUs infeasible: {}", holds_to,
                          first_miss->gpus, first_miss->reason);
    } else {
      line += fmt::format("holds through {} GPUs; {:.1f}% at {} GPUs, lost mostly to {}", holds_to,
                          100 * first_miss->efficiency.value_or(0), first_miss->gpus,
                          first_miss->losses.empty() ? "?" : first_miss->losses.front().component);
    }
    out += line + "\n";
  }
  return out;
}

namespace {

/// Each value of `key` over `entries` divided by the largest (null where a value is missing).
void add_relative(nlohmann::json& entries, const char* key, const char* relative) {
  double best = 0;
  for (const nlohmann::json& e : entries)
    if (e[key].is_number()) best = std::max(best, e[key].get<double>());
  for (nlohmann::json& e : entries) {
    e[relative] = e[key].is_number() && best > 0 ? nlohmann::json(e[key].get<double>() / best)
                                                 : nlohmann::json(nullptr);
  }
}

}  // namespace

nlohmann::json scaling_comparison_json(const std::vector<ScalingRow>& rows) {
  std::vector<std::string> systems;
  std::vector<ScalingMode> modes;
  for (const ScalingRow& r : rows) {
    if (std::find(systems.begin(), systems.end(), r.system) == systems.end())
      systems.push_back(r.system);
    if (std::find(modes.begin(), modes.end(), r.mode) == modes.end()) modes.push_back(r.mode);
  }
  nlohmann::json out = nlohmann::json::array();
  if (systems.size() < 2) return out;
  for (ScalingMode mode : modes) {
    // The largest size every system ran: per GPU and per dollar then compare like with like.
    std::map<int, std::vector<const ScalingRow*>> by_size;
    for (const ScalingRow& r : rows)
      if (r.mode == mode && r.feasible) by_size[r.gpus].push_back(&r);
    const ScalingRow* const* chosen = nullptr;
    int gpus = 0;
    for (const auto& [n, at] : by_size) {
      if (at.size() == systems.size()) {
        chosen = at.data();
        gpus = n;
      }
    }
    nlohmann::json entry = {{"mode", to_string(mode)}};
    if (chosen == nullptr) {
      entry["gpus"] = nullptr;
      out.push_back(entry);
      continue;
    }
    entry["gpus"] = gpus;
    nlohmann::json list = nlohmann::json::array();
    for (size_t s = 0; s < systems.size(); ++s) {
      const ScalingRow& r = *chosen[s];
      nlohmann::json e = {{"system", r.system},
                          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                          {"tokens_per_usd_rental", nullptr},
                          {"tokens_per_s_per_musd_capital", nullptr}};
      if (r.plan) e["plan"] = plan_label(*r.plan);
      if (r.gpu_hour_usd)
        e["tokens_per_usd_rental"] = r.tokens_per_s_per_gpu * 3600 / *r.gpu_hour_usd;
      if (r.capital_usd) {
        e["tokens_per_s_per_musd_capital"] =
            r.tokens_per_s_per_gpu * r.gpus / (*r.capital_usd / 1e6);
      }
      list.push_back(e);
    }
    add_relative(list, "tokens_per_s_per_gpu", "relative_throughput");
    add_relative(list, "tokens_per_usd_rental", "relative_rental");
    add_relative(list, "tokens_per_s_per_musd_capital", "relative_capital");
    entry["systems"] = list;
    out.push_back(entry);
  }
  return out;
}

std::string scaling_comparison_text(const nlohmann::json& comparison) {
  std::string out;
  auto cell = [](const nlohmann::json& value, const nlohmann::json& relative, double scale,
                 const char* format) {
    if (!value.is_number()) return fmt::format("{:>18}", "-");
    return fmt::format("{:>11} {:>5.1f}%",
                       fmt::format(fmt::runtime(format), value.get<double>() * scale),
                       100 * relative.get<double>());
  };
  for (const nlohmann::json& entry : comparison) {
    if (entry["gpus"].is_null()) {
      out += fmt::format("systems compared, {} scaling: no GPU count every system ran\n",
                         entry["mode"].get<std::string>());
      continue;
    }
    out += fmt::format(
        "systems compared, {} scaling at {} GPUs (the largest size every system ran; % of the "
        "best):\n  {:<22} {:>18} {:>18} {:>18}  {}\n",
        entry["mode"].get<std::string>(), entry["gpus"].get<int>(), "system", "tok/s/GPU",
        "Mtok per $ rent", "tok/s per $M cap.", "plan");
    for (const nlohmann::json& e : entry["systems"]) {
      out +=
          fmt::format("  {:<22} {} {} {}  {}\n", e["system"].get<std::string>(),
                      cell(e["tokens_per_s_per_gpu"], e["relative_throughput"], 1, "{:.0f}"),
                      cell(e["tokens_per_usd_rental"], e["relative_rental"], 1e-6, "{:.2f}"),
                      cell(e["tokens_per_s_per_musd_capital"], e["relative_capital"], 1, "{:.0f}"),
                      e.value("plan", ""));
    }
  }
  return out;
}

std::vector<std::string> scaling_warnings(const std::vector<ScalingRow>& rows) {
  std::vector<std::string> out;
  std::map<std::pair<std::string, int>, const ScalingRow*> first;
  std::vector<std::pair<std::string, int>> order;
  for (const ScalingRow& r : rows) {
    const auto key = std::pair{r.system, static_cast<int>(r.mode)};
    if (r.batch_tokens > kLargestPublishedBatchTokens && !first.contains(key)) {
      first[key] = &r;
      order.push_back(key);
    }
  }
  for (const auto& key : order) {
    const ScalingRow& r = *first[key];
    out.push_back(fmt::format(
        "warning: {} {} scaling: from {} GPUs the global batch ({} sequences, {:.1f}M tokens) "
        "is above the largest published for a dense model (Llama 3 405B: {:.1f}M tokens); "
        "throughput there says nothing about convergence",
        r.system, to_string(r.mode), r.gpus, r.global_batch, r.batch_tokens / 1e6,
        kLargestPublishedBatchTokens / 1e6));
  }
  return out;
}

namespace {

/// The first row of each system, in study order.
std::vector<const ScalingRow*> first_row_per_system(const std::vector<ScalingRow>& rows) {
  std::vector<const ScalingRow*> first;
  for (const ScalingRow& r : rows) {
    if (std::none_of(first.begin(), first.end(),
                     [&](const ScalingRow* f) { return f->system == r.system; })) {
      first.push_back(&r);
    }
  }
  return first;
}

}  // namespace

std::string scaling_confidence_text(const std::vector<ScalingRow>& rows) {
  std::string out;
  for (const ScalingRow* r : first_row_per_system(rows))
    out += fmt::format("confidence on {}: {}\n", r->system,
                       confidence_with_calibration(r->confidence));
  return out;
}

nlohmann::json scaling_confidence_json(const std::vector<ScalingRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const ScalingRow* r : first_row_per_system(rows))
    j[r->system] = confidence_to_json(r->confidence);
  return j;
}

nlohmann::json scaling_study_json(const std::vector<ScalingRow>& rows, const ScalingStudy& study) {
  nlohmann::json j = {{"rows", nlohmann::json::array()}};
  for (const ScalingRow& r : rows)
    j["rows"].push_back(scaling_row_json(r));
  j["summary"] = scaling_summary_text(rows, kNearLinearEfficiency);
  j["confidence"] = scaling_confidence_json(rows);
  if (study.replan) j["comparison"] = scaling_comparison_json(rows);
  if (const std::vector<std::string> warnings = scaling_warnings(rows); !warnings.empty()) {
    j["warnings"] = warnings;
  }
  return j;
}

}  // namespace fabricsim::api
