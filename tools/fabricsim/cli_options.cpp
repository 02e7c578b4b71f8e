#include "tools/fabricsim/cli_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "sim/input_error.hpp"
#include "sim/unit_parse.hpp"
#include "topologies/spec_error.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::tools {

namespace {

/// An integer flag of at least `least` (1: positive, 0: non-negative), named in the message.
CLI::Validator integer_at_least(long long least, const char* what, const char* name) {
  return CLI::Validator(
      [least, what](std::string& text) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || v < least) {
          return fmt::format("expected a {} integer, got {}", what, text);
        }
        return {};
      },
      name);
}

}  // namespace

CLI::Validator positive_count() {
  return integer_at_least(1, "positive", "POSITIVE");
}

CLI::Validator natural_count() {
  return integer_at_least(0, "non-negative", "NATURAL");
}

/// "15T", "2.5e12", "300B": a token count with an optional K, M, B (or G) or T suffix.
double parse_tokens_flag(const std::string& flag, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  double scale = 1;
  const std::string suffix = used > 0 ? text.substr(used) : "";
  if (suffix == "K" || suffix == "k") {
    scale = 1e3;
  } else if (suffix == "M") {
    scale = 1e6;
  } else if (suffix == "B" || suffix == "G") {
    scale = 1e9;
  } else if (suffix == "T") {
    scale = 1e12;
  } else if (!suffix.empty()) {
    used = 0;
  }
  if (used == 0 || !std::isfinite(value) || value <= 0) {
    throw sim::InputError(kCommandLine, flag,
                          fmt::format("expected a positive token count such as 15T or 2.5e12, "
                                      "got \"{}\"",
                                      text));
  }
  return value * scale;
}

sim::Bytes parse_size_flag(const std::string& flag, const std::string& text) {
  try {
    const sim::Bytes b = sim::parse_bytes(text);
    if (!(b.count() > 0))
      throw sim::UnitError(fmt::format("expected a positive size, got '{}'", text));
    return b;
  } catch (const sim::UnitError& e) {
    throw sim::InputError(kCommandLine, flag, e.what());
  }
}

models::CollectiveOp parse_op_flag(const std::string& flag, const std::string& text) {
  if (auto op = models::parse_collective_op(text)) return *op;
  throw sim::InputError(kCommandLine, flag,
                        fmt::format("unknown operation '{}' (expected one of: {})", text,
                                    models::collective_op_names()));
}

models::Algorithm parse_algorithm_flag(const std::string& flag, const std::string& text) {
  if (auto a = models::parse_algorithm(text)) return *a;
  throw sim::InputError(
      kCommandLine, flag,
      fmt::format("unknown algorithm '{}' (expected one of: {})", text, models::algorithm_names()));
}

models::Protocol parse_protocol_flag(const std::string& flag, const std::string& text) {
  if (auto p = models::parse_protocol(text)) return *p;
  throw sim::InputError(
      kCommandLine, flag,
      fmt::format("unknown protocol '{}' (expected one of: ll, ll128, simple)", text));
}

topologies::RoutingStrategy parse_routing_flag(const std::string& flag, const std::string& text) {
  topologies::RoutingStrategy s;
  if (topologies::parse_routing_strategy(text, s)) return s;
  throw sim::InputError(kCommandLine, flag,
                        fmt::format("unknown routing '{}' (expected one of: {})", text,
                                    topologies::routing_strategy_names()));
}

models::System system_from_flags(const std::string& system, int gpus) {
  if (gpus <= 0) {
    throw sim::InputError(kCommandLine, "--gpus",
                          fmt::format("expected a positive GPU count, got {}", gpus));
  }
  if (const topologies::SystemPreset* p = topologies::find_system(system)) {
    if (gpus > topologies::kMaxGpus) {
      throw sim::InputError(
          kCommandLine, "--gpus",
          fmt::format("expected at most {} GPUs, got {}", topologies::kMaxGpus, gpus));
    }
    const int per_server = p->make(gpus).gpus_per_server;
    if (gpus % per_server != 0) {
      throw sim::InputError(
          kCommandLine, "--gpus",
          fmt::format("{} GPUs is not a multiple of the {} GPUs per server of {} (a collective "
                      "over part of a server: --ranks)",
                      gpus, per_server, system));
    }
  }
  try {
    return models::make_system(system, gpus, kCommandLine, "--system");
  } catch (const topologies::SpecError& e) {
    const std::string flag = e.field() == "gpus" ? "--gpus" : "--system " + system;
    throw sim::InputError(kCommandLine, flag,
                          e.field() == "gpus" || e.field().empty()
                              ? std::string(e.what())
                              : fmt::format("{} ({})", e.what(), e.field()));
  }
}

}  // namespace fabricsim::tools
