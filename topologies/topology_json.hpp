#pragma once
// The explicit graph as JSON: every node and directed link with its attributes, quantities written
// with units. `fabricsim topology --json` writes it; `fabricsim topology --graph FILE` reads it
// back, and a round trip reproduces the same graph (tested).

#include <nlohmann/json.hpp>
#include <string>

#include "sim/json_reader.hpp"
#include "topologies/graph.hpp"

namespace fabricsim::topologies {

nlohmann::json topology_to_json(const Topology& topology);
/// Reads the format written by topology_to_json. Bad input throws sim::InputError naming the
/// file and JSON pointer.
Topology topology_from_json(const sim::JsonValue& root);

}  // namespace fabricsim::topologies
