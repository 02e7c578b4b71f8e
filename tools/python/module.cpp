// fabricsim._fabricsim: the C++ half of the Python module (the package in fabricsim/__init__.py
// is the other). Documents cross as JSON text, which Python's json module turns into plain dicts,
// so every number keeps the bytes the CLI's --json prints. Each function calls the api function
// its CLI verb calls; `collective`, whose logic lives in its CLI command, runs that command
// in-process. Errors the CLI reports as bad input raise fabricsim.InputError (a ValueError) with
// the CLI's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "api/plan_search.hpp"
#include "api/scaling_study.hpp"
#include "api/scenario.hpp"
#include "api/sweep_output.hpp"
#include "api/sweep_runner.hpp"
#include "api/sweep_spec.hpp"
#include "api/training_run.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli.hpp"
#include "tools/fabricsim/scenario_record.hpp"
#include "tools/fabricsim/version.hpp"
#include "topologies/spec_error.hpp"

namespace py = pybind11;

namespace fabricsim::python {
namespace {

/// A document given as a file name (read as the CLI reads it) or as JSON text; neither: the
/// embedded default scenario, as the CLI's verbs take when no file is given. `base` is what the
/// outputs record as their scenario's base (the CLI's record, with no overrides: a dict holds
/// its changes itself).
struct Document {
  nlohmann::json doc;
  std::string source;
  tools::ScenarioRecord base;
};

Document document(const std::string& file, const std::string& text, const char* unnamed) {
  if (!file.empty()) return {sim::load_json_file(file).root().raw(), file, {file, {}}};
  if (!text.empty()) return {nlohmann::json::parse(text), unnamed, {unnamed, {}}};
  return {api::default_scenario_json(), unnamed, {"<embedded default>", {}}};
}

std::string run(const std::string& file, const std::string& text) {
  const Document d = document(file, text, "<scenario>");
  const py::gil_scoped_release unlocked;
  const api::Scenario scenario = api::read_scenario(sim::JsonDocument(d.doc, d.source).root());
  nlohmann::json j = api::report_to_json(api::run_training(scenario));
  tools::add_record(j, d.base);
  return j.dump();
}

std::string plan(const std::string& file, const std::string& text,
                 const std::vector<std::string>& fixed, int top, int threads, int max_tp,
                 int max_pp, int max_micro_batch) {
  const Document d = document(file, text, "<scenario>");
  api::PlanConstraints constraints;
  for (const std::string& f : fixed)
    api::add_fixed(constraints, f, "fix");
  if (max_tp > 0) constraints.max_tp = max_tp;
  if (max_pp > 0) constraints.max_pp = max_pp;
  if (max_micro_batch > 0) constraints.max_micro_batch = max_micro_batch;
  api::SearchOptions options;
  options.top = top;
  options.threads = threads;
  const py::gil_scoped_release unlocked;
  const api::Scenario scenario = api::read_search_base(d.doc, d.source);
  nlohmann::json j =
      api::search_to_json(api::search_plans(scenario, constraints, options), scenario);
  tools::add_record(j, d.base);
  return j.dump();
}

std::string scale(const std::string& file, const std::string& text, int threads) {
  const Document d = document(file, text, "<scenario>");
  const py::gil_scoped_release unlocked;
  api::ScalingStudy study = api::read_scaling_study(sim::JsonDocument(d.doc, d.source).root());
  study.threads = threads;
  const std::vector<api::ScalingRow> rows =
      api::run_scaling_study(d.doc, d.source, study, [](const api::ScalingRow&) {});
  nlohmann::json j = api::scaling_study_json(rows, study);
  tools::add_record(j, d.base);
  return j.dump();
}

/// The rows evaluated, in point order, as a JSON array; with `output` also streamed into that
/// folder as `fabricsim sweep -o` does (resumable, shardable, the same files).
std::string sweep(const std::string& file, const std::string& text, int threads,
                  const std::string& output, bool resume, const std::string& shard_text) {
  const py::gil_scoped_release unlocked;
  const api::SweepSpec spec =
      file.empty()
          ? api::read_sweep_spec(sim::JsonDocument(nlohmann::json::parse(text), "<sweep>").root())
          : api::load_sweep_spec(file);
  const api::SweepShard shard =
      shard_text.empty() ? api::SweepShard{} : api::parse_sweep_shard(shard_text, "<arguments>");
  if (resume && output.empty()) {
    throw sim::InputError("<arguments>", "resume", "needs the output folder (output=DIR)");
  }
  std::optional<api::SweepOutput> out;
  if (!output.empty()) out.emplace(output, spec, shard, resume);
  const std::vector<int64_t> todo =
      api::sweep_todo(spec, shard, out ? out->done() : std::set<std::string>{});
  std::map<int64_t, nlohmann::json> rows;
  api::run_sweep(spec, todo, threads, [&](const api::SweepPoint& p, const nlohmann::json& row) {
    if (out) out->write(row);
    rows.emplace(p.index, row);
  });
  if (out) out->close();
  nlohmann::json list = nlohmann::json::array();
  for (auto& [index, row] : rows)
    list.push_back(std::move(row));
  return list.dump();
}

/// `fabricsim ARGS...` in-process: (exit code, standard output, standard error).
std::tuple<int, std::string, std::string> cli(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"fabricsim"};
  for (const std::string& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  const py::gil_scoped_release unlocked;
  const int code = tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace
}  // namespace fabricsim::python

PYBIND11_MODULE(_fabricsim, m) {
  using namespace fabricsim;
  m.doc() = "fabricsim's C++ core; use the fabricsim package (JSON text in and out)";
  // Bad input the CLI reports with exit 2 raises this, with the CLI's message.
  py::register_exception<sim::InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const topologies::SpecError& e) {
      const py::object error = py::module_::import("fabricsim._fabricsim").attr("InputError");
      PyErr_SetString(error.ptr(), tools::cli_error(e).message.c_str());
    }
  });
  m.attr("__version__") = std::string(tools::build_version());
  m.attr("commit") = std::string(tools::build_commit());
  m.def("run", &python::run, py::arg("file"), py::arg("text"));
  m.def("plan", &python::plan, py::arg("file"), py::arg("text"), py::arg("fix"), py::arg("top"),
        py::arg("threads"), py::arg("max_tp"), py::arg("max_pp"), py::arg("max_micro_batch"));
  m.def("scale", &python::scale, py::arg("file"), py::arg("text"), py::arg("threads"));
  m.def("sweep", &python::sweep, py::arg("file"), py::arg("text"), py::arg("threads"),
        py::arg("output"), py::arg("resume"), py::arg("shard"));
  m.def("cli", &python::cli, py::arg("args"));
}
