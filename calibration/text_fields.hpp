#pragma once
// Small, strict helpers for the line-oriented measurement formats (nccl-tests logs, CSV): numbers
// must fill the whole field, so "12abc" or "1,5" is an error rather than 12 or 1.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::calibration {

/// Lines without their terminator ("\n" or "\r\n"); a final line without "\n" is kept.
std::vector<std::string_view> split_lines(std::string_view text);
std::string_view trim(std::string_view text);
std::vector<std::string_view> split_whitespace(std::string_view text);
/// Fields between `separator`s, each trimmed; "" gives one empty field.
std::vector<std::string_view> split_fields(std::string_view text, char separator);
/// A finite decimal number filling the whole of `text`.
std::optional<double> parse_number(std::string_view text);
/// A decimal integer filling the whole of `text`.
std::optional<long long> parse_integer(std::string_view text);

/// The items (strings or string_views) with `separator` between them.
template <class Items>
std::string join(const Items& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += item;
    first = false;
  }
  return out;
}

}  // namespace fabricsim::calibration
