#include "calibration/json_fields.hpp"

#include <fmt/format.h>

#include <string>

#include "sim/input_error.hpp"

namespace fabricsim::calibration {

void check_closed_keys(sim::ObjectReader& r, std::span<const std::string_view> keys) {
  for (std::string_view key : keys) {
    r.ignore(key);
  }
  r.finish();
  for (std::string_view key : keys) {
    if (!r.self().raw().contains(std::string(key))) {
      throw sim::InputError(r.self().file(), sim::json_pointer_child(r.self().pointer(), key),
                            "missing key (every key must be present; write null when the value "
                            "is not known)");
    }
  }
}

sim::JsonValue member(const sim::ObjectReader& r, std::string_view key) {
  return r.self().child(r.self().raw().at(std::string(key)),
                        sim::json_pointer_child(r.self().pointer(), key));
}

sim::JsonValue need(sim::ObjectReader& r, std::string_view key, std::string_view expectation) {
  std::optional<sim::JsonValue> v = r.optional(key);
  if (!v) member(r, key).fail(expectation);
  return *v;
}

std::string need_text(sim::ObjectReader& r, std::string_view key, std::string_view expectation) {
  const sim::JsonValue v = need(r, key, expectation);
  std::string s = v.as_string();
  if (s.empty()) v.fail(expectation);
  return s;
}

std::string optional_text(sim::ObjectReader& r, std::string_view key) {
  const std::optional<sim::JsonValue> v = r.optional(key);
  return v ? v->as_string() : std::string();
}

void check_format(sim::ObjectReader& r, std::string_view format, int version) {
  const std::string quoted = fmt::format("\"{}\"", format);
  const sim::JsonValue f = need(r, "format", quoted);
  if (f.as_string() != format) f.fail(quoted);
  const std::string v_text = std::to_string(version);
  const sim::JsonValue v = need(r, "version", v_text);
  if (!v.raw().is_number_integer() || v.as_int() != version)
    v.fail(fmt::format("version {}", version));
}

}  // namespace fabricsim::calibration
