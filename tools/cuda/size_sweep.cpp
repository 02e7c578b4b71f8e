#include "tools/cuda/size_sweep.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/input_error.hpp"
#include "sim/unit_parse.hpp"

namespace fabricsim::tools::cuda {

uint64_t parse_message_size(std::string_view text, std::string_view flag) {
  // nccl-tests also takes lower-case k/m/g; the shared parser only knows the upper-case forms.
  std::string normalized(text);
  if (normalized.size() >= 2 && std::isdigit(static_cast<unsigned char>(normalized.end()[-2])) &&
      (normalized.back() == 'k' || normalized.back() == 'm' || normalized.back() == 'g')) {
    normalized.back() =
        static_cast<char>(std::toupper(static_cast<unsigned char>(normalized.back())));
  }
  double bytes = 0;
  try {
    bytes = sim::parse_bytes(normalized).count();
  } catch (const sim::UnitError& e) {
    throw sim::InputError("<command line>", std::string(flag), e.what());
  }
  if (bytes < 1 || bytes != std::floor(bytes)) {
    throw sim::InputError("<command line>", std::string(flag),
                          fmt::format("expected a positive whole number of bytes, got '{}'", text));
  }
  if (bytes > static_cast<double>(std::numeric_limits<int64_t>::max())) {
    throw sim::InputError("<command line>", std::string(flag),
                          fmt::format("size '{}' is too large", text));
  }
  return static_cast<uint64_t>(bytes);
}

std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor) {
  if (min_bytes < 1 || min_bytes > max_bytes || factor < 2) {
    throw std::invalid_argument("size sweep needs 1 <= min <= max and factor >= 2");
  }
  std::vector<uint64_t> sizes;
  for (uint64_t size = min_bytes; size <= max_bytes;) {
    sizes.push_back(size);
    if (size > max_bytes / factor) break;  // the next step would pass max (or overflow)
    size *= factor;
  }
  return sizes;
}

}  // namespace fabricsim::tools::cuda
