#pragma once
// Sweep specs: a base scenario and axes over any of its fields (JSON pointers), combined as a
// cartesian product or zipped lists. Each point of a sweep is the base with one value of every
// axis applied; its id (index in the sweep's order plus a short hash of its assignments) is
// stable, so interrupted, resumed and sharded sweeps agree on which point is which. The format is
// documented in docs/formats.md ("Sweep spec").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/evaluator.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::api {

struct SweepAxis {
  std::string pointer;  ///< the scenario field, as a JSON pointer
  std::vector<nlohmann::json> values;
};

enum class SweepCombine { product, zip };

struct SweepSpec {
  std::string source = "<sweep>";  ///< the spec's file name, for messages
  nlohmann::json base;             ///< the base scenario document (resolved from a file)
  std::vector<SweepAxis> axes;     ///< in pointer order; the last one varies fastest
  SweepCombine combine = SweepCombine::product;
  std::optional<Fidelity> fidelity;  ///< absent: each point's simulation.backend
};

/// One point: its index in the sweep, its id and the value of every axis.
struct SweepPoint {
  int64_t index = 0;
  std::string id;
  std::vector<std::pair<std::string, nlohmann::json>> assignments;  ///< axis order
};

/// Reads a spec strictly. `base` may be a scenario object or a scenario file name (relative to
/// the spec's folder); absent, the embedded default scenario. Throws sim::InputError for unknown
/// keys, empty axes, zip lists of unequal length and a pointer the base does not accept.
SweepSpec read_sweep_spec(const sim::JsonValue& root);
SweepSpec load_sweep_spec(const std::string& path);

/// Number of points (product of the axis lengths, or their common length when zipped).
int64_t sweep_point_count(const SweepSpec& spec);
/// Point `index` (0 <= index < sweep_point_count).
SweepPoint sweep_point(const SweepSpec& spec, int64_t index);
/// The scenario document of a point: the base with its assignments applied.
nlohmann::json sweep_point_document(const SweepSpec& spec, const SweepPoint& point);
/// The spec as one canonical document (base resolved), for checking that a resumed or merged
/// output folder belongs to the same sweep.
nlohmann::json sweep_spec_json(const SweepSpec& spec);

}  // namespace fabricsim::api
