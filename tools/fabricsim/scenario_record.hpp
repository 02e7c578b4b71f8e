#pragma once
// What a command's scenario is made of: the base (a file, the embedded default or a system
// preset) and the overrides applied to it (`--set` and the flags that are shorthands for one),
// so that every output says what it describes.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/scenario.hpp"

namespace fabricsim::tools {

struct ScenarioRecord {
  std::string base;  ///< a scenario file, "<embedded default>" or "preset NAME, N GPUs"
  std::vector<api::Assignment> overrides;  ///< in the order they were applied
};

/// {"base": ..., "overrides": [{"pointer": ..., "value": ...}, ...]}
nlohmann::json record_json(const ScenarioRecord& record);
/// Adds record_json's keys to a JSON object output.
void add_record(nlohmann::json& output, const ScenarioRecord& record);
/// "scenario: BASE | overrides: /a/b=1, /c=\"x\"" (or "overrides: none"), no newline.
std::string record_text(const ScenarioRecord& record);

}  // namespace fabricsim::tools
