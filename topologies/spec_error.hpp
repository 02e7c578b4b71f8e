#pragma once
// Error for impossible topology specifications (radix too small, GPU count not a multiple of the
// domain size, zero bandwidth). It names the offending spec field, which the caller maps to a
// JSON pointer or a command-line flag when turning it into an InputError.

#include <stdexcept>
#include <string>

namespace fabricsim::topologies {

class SpecError : public std::invalid_argument {
 public:
  SpecError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  /// Slash-separated path of the field inside the cluster spec, e.g. "scale_out/tiers/1/ports".
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace fabricsim::topologies
