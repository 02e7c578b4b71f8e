#pragma once
// Helpers shared by the JSON readers of this folder, on top of sim::ObjectReader: closed key sets
// whose every key must be present (null standing for "not known"), and non-null members with an
// "expected ..., got null" message.

#include <span>
#include <string>
#include <string_view>

#include "sim/json_reader.hpp"

namespace fabricsim::calibration {

/// Rejects keys outside `keys` (reported first, so a misspelt key shows as itself), then demands
/// every key of `keys`, null allowed.
void check_closed_keys(sim::ObjectReader& r, std::span<const std::string_view> keys);
/// Member `key`, which check_closed_keys has shown to be present.
sim::JsonValue member(const sim::ObjectReader& r, std::string_view key);
/// Member `key`, which must not be null: "expected <expectation>, got null".
sim::JsonValue need(sim::ObjectReader& r, std::string_view key, std::string_view expectation);
/// A non-null, non-empty string member.
std::string need_text(sim::ObjectReader& r, std::string_view key,
                      std::string_view expectation = "a non-empty string");
/// A string member that may be null (""), as the bench tools write unknown versions.
std::string optional_text(sim::ObjectReader& r, std::string_view key);
/// The "format" and "version" members that open our own output files.
void check_format(sim::ObjectReader& r, std::string_view format, int version);

}  // namespace fabricsim::calibration
