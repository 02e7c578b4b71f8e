#pragma once
// Named models with their published dimensions; each preset's `source` cites the paper or the
// official config file the numbers come from.

#include <string>
#include <string_view>
#include <vector>

#include "models/transformer.hpp"

namespace fabricsim::models {

const std::vector<TransformerConfig>& model_presets();
/// The preset with this name; nullptr when unknown.
const TransformerConfig* find_model(std::string_view name);
/// Comma-separated preset names, for error messages and --help.
std::string model_names();

}  // namespace fabricsim::models
