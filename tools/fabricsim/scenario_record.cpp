#include "tools/fabricsim/scenario_record.hpp"

namespace fabricsim::tools {

nlohmann::json record_json(const ScenarioRecord& record) {
  nlohmann::json overrides = nlohmann::json::array();
  for (const api::Assignment& a : record.overrides)
    overrides.push_back({{"pointer", a.pointer}, {"value", a.value}});
  return {{"base", record.base}, {"overrides", overrides}};
}

void add_record(nlohmann::json& output, const ScenarioRecord& record) {
  output["base"] = record.base;
  output["overrides"] = record_json(record)["overrides"];
}

std::string record_text(const ScenarioRecord& record) {
  std::string list;
  for (const api::Assignment& a : record.overrides)
    list += (list.empty() ? "" : ", ") + a.pointer + "=" + a.value.dump();
  return "scenario: " + record.base + " | overrides: " + (list.empty() ? "none" : list);
}

}  // namespace fabricsim::tools
