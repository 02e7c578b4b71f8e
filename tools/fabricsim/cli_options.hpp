#pragma once
// Helpers shared by the commands: parsing unit-carrying flags and building systems with errors
// that name the flag at fault.

#include <CLI/CLI.hpp>
#include <string>

#include "models/collective_op.hpp"
#include "models/system.hpp"
#include "sim/units.hpp"
#include "topologies/router.hpp"

namespace fabricsim::tools {

inline constexpr const char* kCommandLine = "<command line>";

/// For count flags (--gpus, --tp, --global-batch, ...): a positive integer, else CLI11 exits 2
/// with "--flag: expected a positive integer, got X".
CLI::Validator positive_count();
CLI::Validator natural_count();

sim::Bytes parse_size_flag(const std::string& flag, const std::string& text);
/// "15T", "2.5e12", "300B": a positive token count with an optional K, M, B (or G) or T suffix.
double parse_tokens_flag(const std::string& flag, const std::string& text);
models::CollectiveOp parse_op_flag(const std::string& flag, const std::string& text);
models::Algorithm parse_algorithm_flag(const std::string& flag, const std::string& text);
models::Protocol parse_protocol_flag(const std::string& flag, const std::string& text);
topologies::RoutingStrategy parse_routing_flag(const std::string& flag, const std::string& text);

/// A preset at a GPU count; impossible sizes are reported against --gpus / --system.
models::System system_from_flags(const std::string& system, int gpus);

}  // namespace fabricsim::tools
