#pragma once
// The scalar settings of a scenario, declared once: each one's JSON pointer, type, default,
// meaning, command-line flag, how it is read into a Scenario and how it is echoed back. The reader
// (api/scenario.cpp), the `scenario` echo of `run --json`, the scenario flags of the CLI and the
// tables of docs/formats.md are all generated from this one table. Structured keys (the model,
// the fabric's tier list, the operations sections) are read by their own code; their rows here
// only document them.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/software_stack.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::api {

struct Scenario;

/// The `software` section as written; read_scenario resolves it to a stack preset.
struct SoftwareChoice {
  std::string framework, version, released;
  std::optional<models::MoeDispatcher> moe_dispatcher;    ///< moe_dispatcher, over the preset's
  std::optional<models::GroupedGemmKernel> grouped_gemm;  ///< grouped_gemm, over the preset's
  std::optional<models::CudaGraphs> cuda_graphs;          ///< cuda_graphs, over the preset's
  std::optional<bool> graph_moe_router;   ///< cuda_graph_moe_router, over the preset's
  std::optional<bool> eager_elementwise;  ///< eager_elementwise, over the preset's
  std::optional<bool> fused_moe_mlp;      ///< fused_moe_mlp, over the preset's
  std::optional<bool> moe_a2a_overlap;    ///< moe_a2a_overlap, over the preset's
  std::optional<models::A2aOverlapScope> moe_a2a_overlap_scope;  ///< over the preset's
  std::optional<bool> fp8_attention;              ///< fp8_attention, over the preset's
  std::optional<bool> fp8_activation_input;       ///< fp8_activation_input, over the preset's
  std::optional<bool> fp8_params;                 ///< fp8_params, over the preset's
  std::optional<bool> fp4_params;                 ///< fp4_params, over the preset's
  std::optional<bool> parameter_transpose_cache;  ///< over the preset's
  std::optional<double> optimizer_state_bytes;    ///< optimizer_state, over the preset's
  std::optional<models::LossKernel> loss;         ///< loss_kernel, over the preset's
};

/// What the settings are read into.
struct SettingTarget {
  Scenario& scenario;
  SoftwareChoice software;
};

/// How a value is written; also the command-line type of a setting that has a flag.
enum class SettingKind : uint8_t {
  boolean,  ///< a flag sets it to true
  count,    ///< positive integer
  stage,    ///< ZeRO stage 0..3
  natural,  ///< integer >= 0
  number,
  size,
  bandwidth,
  text,    ///< free string (a name, a path)
  choice,  ///< one of `choices`
  object,  ///< structured: read by its section's own code (documentation only)
};

using SettingRead = void (*)(const sim::JsonValue& value, SettingTarget& target);
/// The value to write at the setting's pointer for the scenario as read; null leaves it out (what
/// the reader then assumes is what the scenario has).
using SettingEcho = nlohmann::json (*)(const Scenario& scenario);

struct Setting {
  std::string_view pointer;  ///< "/parallelism/tp"; its parent is the section
  SettingKind kind;
  std::string_view type;       ///< docs: how the value is written
  std::string_view fallback;   ///< docs: the default ("required" when `required`)
  std::string_view meaning;    ///< docs (Markdown)
  std::string_view flag = {};  ///< command-line shorthand and its value, "--tp N"; empty: none
  std::string_view help = {};  ///< its --help text
  bool required = false;
  std::string_view choices = {};  ///< `choice` kind: the accepted values, '|'-separated
  SettingRead read = nullptr;     ///< nullptr: a structured key (documentation only)
  SettingEcho echo = nullptr;

  std::string_view section() const { return pointer.substr(0, pointer.rfind('/')); }
  std::string_view key() const { return pointer.substr(pointer.rfind('/') + 1); }
  std::string_view flag_name() const { return flag.substr(0, flag.find(' ')); }  ///< "--tp"
  std::vector<std::string> choice_list() const;
};

/// Every setting, section by section, in the order they are read and documented.
std::span<const Setting> scenario_settings();

/// Reads the settings of `section` ("/training"; "" for the top level) present in `object`, in
/// table order; required ones missing are errors. The caller finishes the reader (unknown keys).
void read_settings(std::string_view section, sim::ObjectReader& object, SettingTarget& target);

/// The scenario as read, as a scenario document: every setting's echo at its pointer (the caller
/// adds the structured parts).
nlohmann::json echo_settings(const Scenario& scenario);

/// A bandwidth as a unit string that parses back to the same double ("50000000000 B/s").
std::string exact_bandwidth(double bytes_per_s);

}  // namespace fabricsim::api
