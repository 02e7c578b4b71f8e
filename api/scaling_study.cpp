#include "api/scaling_study.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "api/evaluator.hpp"
#include "api/scenario.hpp"
#include "api/training_run.hpp"
#include "sim/input_error.hpp"
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
    c.emplace_back(std::string(part.label), b.*part.field);
    sum += b.*part.field;
  }
  c.emplace_back("other", step.step_seconds - sum);
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

std::vector<ScalingRow> run_scaling_study(const nlohmann::json& scenario, const std::string& source,
                                          const ScalingStudy& study,
                                          const std::function<void(const ScalingRow&)>& on_row) {
  // The scenario as given fixes the plan family and the batch per replica; any error in it is
  // the user's to fix, not a property of one size.
  const Scenario given = read_scenario(sim::JsonDocument(scenario, source).root());
  const models::ParallelPlan& plan = given.plan;
  const int model_parallel = plan.tp * plan.pp * plan.cp;
  const int per_replica = given.training.global_batch / plan.dp;
  const int strong_batch =
      study.strong_global_batch > 0 ? study.strong_global_batch : given.training.global_batch;

  std::vector<ScalingRow> rows;
  for (const std::string& system : study.systems) {
    for (ScalingMode mode : study.modes) {
      std::optional<Baseline> baseline;
      for (size_t i = 0; i < study.gpus.size(); ++i) {
        const int n = study.gpus[i];
        ScalingRow row;
        row.system = system;
        const auto file = study.system_files.find(system);
        row.preset = file == study.system_files.end()
                         ? system
                         : file->second.at("preset").get<std::string>();
        row.mode = mode;
        row.gpus = n;
        row.dp = n / model_parallel;
        row.global_batch = mode == ScalingMode::weak ? per_replica * row.dp : strong_batch;
        auto emit = [&](ScalingRow r) {
          on_row(r);
          rows.push_back(std::move(r));
        };
        if (n % model_parallel != 0) {
          emit(infeasible_row(
              row, fmt::format("tp x pp x cp = {} does not divide {} GPUs", model_parallel, n)));
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
          row.preset = variant.system;  // an alias names its preset
        } catch (const sim::InputError& e) {
          emit(infeasible_row(row, e.message()));
          continue;
        }
        variant.plan.dp = row.dp;
        variant.training.global_batch = row.global_batch;
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

}  // namespace fabricsim::api
