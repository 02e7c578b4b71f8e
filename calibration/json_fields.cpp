#include "calibration/json_fields.hpp"

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

}  // namespace fabricsim::calibration
