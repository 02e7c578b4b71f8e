#pragma once
// An enum value from the name its to_string gives it: the one table the settings readers parse
// choices with, so a value's name is written once.

#include <initializer_list>
#include <optional>
#include <string_view>

namespace fabricsim::models {

/// The value of `values` whose to_string is `name`, or nullopt.
template <class E>
std::optional<E> enum_from_name(std::string_view name, std::initializer_list<E> values) {
  for (const E v : values) {
    if (name == to_string(v)) return v;
  }
  return std::nullopt;
}

}  // namespace fabricsim::models
