// The defaults docs/formats.md states (each setting's `fallback`, generated into its tables) are
// the values a scenario that leaves the setting out is read with: a stated default that drifted
// from the reader's would mislead every user who trusts the table.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/scenario.hpp"
#include "api/scenario_settings.hpp"
#include "api/training_run.hpp"
#include "sim/json_reader.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// The JSON value a fallback states literally (`false`, 16, `flow`, `"tp-cp-dp-pp"`), or nothing
/// for a fallback in words ("the preset's", "required", "GPUs / (tp x pp x cp)").
std::optional<nlohmann::json> literal(std::string text) {
  if (text.size() >= 2 && text.front() == '`' && text.back() == '`')
    text = text.substr(1, text.size() - 2);
  else if (text.find_first_not_of("0123456789.") != std::string::npos)
    return std::nullopt;  // words, not a literal
  if (text.empty() || text.find(' ') != std::string::npos) return std::nullopt;
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  return nlohmann::json(text);  // a bare word: `flow`, `bf16`
}

}  // namespace

TEST_CASE("every default the settings table states literally is the one a scenario is read with",
          "[settings][docs]") {
  // Only the required settings: everything else takes its default.
  const nlohmann::json minimal = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama3-8b"},
    "parallelism": {},
    "training": {"global_batch": 64}
  })");
  const Scenario s = read_scenario(sim::JsonDocument(minimal, "minimal").root());
  const nlohmann::json echo = echo_settings(s);
  int checked = 0;
  for (const Setting& setting : scenario_settings()) {
    const std::optional<nlohmann::json> stated = literal(std::string(setting.fallback));
    if (!stated) continue;
    const nlohmann::json::json_pointer at{std::string(setting.pointer)};
    INFO(setting.pointer << ": the table says " << stated->dump());
    REQUIRE(echo.contains(at));
    const nlohmann::json& read = echo.at(at);
    if (stated->is_number() && read.is_number()) {
      CHECK(read.get<double>() == Approx(stated->get<double>()));
    } else {
      CHECK(read == *stated);
    }
    ++checked;
  }
  // 26 literal defaults at this commit: a change of the table that loses them shows here.
  CHECK(checked == 26);
}

TEST_CASE("a scenario as run --json echoes it reads back into the same run, on every system",
          "[settings]") {
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    for (const int gpus : {8, 64, 512}) {
      INFO(preset.name << ", " << gpus << " GPUs");
      const nlohmann::json doc = {{"system", {{"preset", preset.name}, {"gpus", gpus}}},
                                  {"model", {{"preset", "llama3-8b"}}},
                                  {"parallelism", nlohmann::json::object()},
                                  {"training", {{"global_batch", gpus}}},
                                  {"simulation", {{"backend", "analytical"}}}};
      const Scenario first = read_scenario(sim::JsonDocument(doc, "first").root());
      const nlohmann::json echo = scenario_to_json(first);
      Scenario again;
      REQUIRE_NOTHROW(again = read_scenario(sim::JsonDocument(echo, "echo").root()));
      CHECK(scenario_to_json(again) == echo);
      CHECK(run_training(again).metrics.step_time_s == run_training(first).metrics.step_time_s);
    }
  }
}
