#include "api/sweep_runner.hpp"

#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "sim/input_error.hpp"
#include "topologies/spec_error.hpp"

namespace fabricsim::api {
namespace {

/// The metric columns of a row, in CSV order.
const std::vector<std::string>& metric_keys() {
  static const std::vector<std::string> keys{
      "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
      "mfu",         "hfu",          "time_to_train_days"};
  return keys;
}

nlohmann::json metrics_json(const TrainingMetrics& m) {
  return {{"step_time_s", m.step_time_s},
          {"tokens_per_s", m.tokens_per_s},
          {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
          {"model_tflops_per_gpu", m.model_tflops_per_gpu},
          {"mfu", m.mfu},
          {"hfu", m.hfu},
          {"time_to_train_days", m.time_to_train_days}};
}

void set_problem(nlohmann::json& row, const std::string& cause, const std::string& field,
                 const std::string& reason) {
  row["feasible"] = false;
  row["cause"] = cause;
  row["field"] = field;
  row["reason"] = reason;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

std::string csv_value(const nlohmann::json& v) {
  if (v.is_null()) return "";
  return csv_field(v.is_string() ? v.get<std::string>() : v.dump());
}

}  // namespace

/// One evaluator per cluster, built by the first point that needs it while other points wait for
/// it (each entry has its own once_flag, so different clusters build concurrently).
struct SweepRunner::Clusters {
  struct Entry {
    std::once_flag built;
    std::unique_ptr<Evaluator> evaluator;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Entry>> entries;

  Entry& entry(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<Entry>& e = entries[key];
    if (!e) e = std::make_unique<Entry>();
    return *e;
  }
};

SweepRunner::SweepRunner(const SweepSpec& spec)
    : spec_(spec), clusters_(std::make_unique<Clusters>()) {}
SweepRunner::~SweepRunner() = default;

nlohmann::json SweepRunner::evaluate(const SweepPoint& point) const {
  nlohmann::json row = {{"id", point.id}, {"index", point.index}};
  nlohmann::json assigned = nlohmann::json::object();
  for (const auto& [pointer, value] : point.assignments)
    assigned[pointer] = value;
  row["assignments"] = std::move(assigned);

  nlohmann::json doc = sweep_point_document(spec_, point);
  const std::string key = doc.value("system", nlohmann::json()).dump() + "\n" +
                          doc.value("calibration", nlohmann::json()).dump();
  Scenario scenario;
  try {
    scenario = read_scenario(sim::JsonDocument(std::move(doc), spec_.source).root());
  } catch (const sim::InputError& e) {
    set_problem(row, "scenario", e.path(), e.message());
    return row;
  } catch (const topologies::SpecError& e) {
    set_problem(row, "fabric", "/system", e.what());
    return row;
  }

  Clusters::Entry& entry = clusters_->entry(key);
  std::call_once(entry.built, [&] {
    try {
      entry.evaluator = std::make_unique<Evaluator>(scenario);
    } catch (...) {
      entry.error = std::current_exception();
    }
  });
  if (entry.error) {
    try {
      std::rethrow_exception(entry.error);
    } catch (const sim::InputError& e) {
      set_problem(row, "calibration", e.path(), e.message());
      return row;
    } catch (const topologies::SpecError& e) {
      set_problem(row, "fabric", "/system", e.what());
      return row;
    }
  }

  const Fidelity fidelity = spec_.fidelity.value_or(fidelity_of(scenario.simulation.backend));
  const TrainingReport report = entry.evaluator->evaluate(scenario, fidelity);
  row["feasible"] = !report.infeasible.has_value();
  if (report.infeasible) {
    set_problem(row, report.infeasible->cause == Infeasible::Cause::memory ? "memory" : "plan",
                report.infeasible->field, report.infeasible->reason);
  }
  if (report.step) row["metrics"] = metrics_json(report.metrics);
  return row;
}

void run_sweep(const SweepSpec& spec, const std::vector<int64_t>& indices, int threads,
               const SweepRowHandler& on_row) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), indices.size()));
  const SweepRunner runner(spec);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex report;
  std::exception_ptr error;
  auto work = [&] {
    while (!stop) {
      const size_t i = next++;
      if (i >= indices.size()) return;
      try {
        const SweepPoint point = sweep_point(spec, indices[i]);
        const nlohmann::json row = runner.evaluate(point);
        std::lock_guard<std::mutex> lock(report);
        if (!stop) on_row(point, row);
      } catch (...) {
        std::lock_guard<std::mutex> lock(report);
        if (!error) error = std::current_exception();
        stop = true;
      }
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(work);
    for (std::thread& t : pool)
      t.join();
  }
  if (error) std::rethrow_exception(error);
}

std::string sweep_row_line(const nlohmann::json& row) {
  nlohmann::json rest = row;
  rest.erase("id");
  std::string line = "{\"id\":";
  line += row.at("id").dump();
  line += ',';
  line += rest.dump().substr(1);
  line += '\n';
  return line;
}

// Built with append rather than "," + text: GCC 12 warns falsely (-Wrestrict) on the latter.
std::string sweep_csv_header(const SweepSpec& spec) {
  std::string line = "id,index";
  auto column = [&](const std::string& name) {
    line += ',';
    line += csv_field(name);
  };
  for (const SweepAxis& a : spec.axes)
    column(a.pointer);
  column("feasible");
  for (const std::string& k : metric_keys())
    column(k);
  for (const char* k : {"cause", "field", "reason"})
    column(k);
  return line + "\n";
}

std::string sweep_csv_line(const SweepSpec& spec, const nlohmann::json& row) {
  std::string line = csv_value(row.at("id"));
  auto column = [&](const nlohmann::json& v) {
    line += ',';
    line += csv_value(v);
  };
  column(row.at("index"));
  const nlohmann::json& assigned = row.at("assignments");
  for (const SweepAxis& a : spec.axes)
    column(assigned.value(a.pointer, nlohmann::json()));
  column(row.at("feasible"));
  const nlohmann::json metrics = row.value("metrics", nlohmann::json::object());
  for (const std::string& k : metric_keys())
    column(metrics.value(k, nlohmann::json()));
  for (const char* k : {"cause", "field", "reason"})
    column(row.value(k, nlohmann::json()));
  return line + "\n";
}

}  // namespace fabricsim::api
