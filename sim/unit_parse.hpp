#pragma once
// The one parser for quantities written with units ("400 Gbps", "50 GB/s", "1.5 us", "64 MiB",
// "8G"). Every config reader and CLI flag goes through these functions. A bad string throws
// UnitError whose message says what was expected; callers add the file and JSON path.
//
// Conventions: a lower-case `b` is a bit and an upper-case `B` a byte; SI prefixes are decimal
// (1 GB = 1e9 B); `KiB`/`MiB`/`GiB`/`TiB` are binary; a bare `K`/`M`/`G`/`T` after a byte count
// is binary too, as in nccl-tests (`-e 8G` is 8 GiB). A size without a unit is bytes; every other
// quantity needs its unit.

#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/units.hpp"

namespace fabricsim::sim {

class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A plain number whose unit its key names ("step_time_s=12.5"): no unit may follow.
double parse_number(std::string_view text, std::string_view what);

/// `s` without the spaces and tabs at either end.
std::string_view trim(std::string_view s);
Time parse_time(std::string_view text);
Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
Flops parse_flops(std::string_view text);

/// An event rate per unit of something per period, "9.2e-6/GPU-h", "6.1%/GPU-year",
/// "0.9/job-day": events per hour and the scope as written, lower-cased ("gpu"). Periods: h,
/// hour, d, day, yr, year. `what` is the expectation named in the error.
struct ScopedRate {
  double per_hour = 0;
  std::string scope;
};
ScopedRate parse_scoped_rate(std::string_view text, std::string_view what);

/// Human-readable forms used in tables: "1.50 us", "64 MiB", "400.0 GB/s".
std::string format_time(Time t);
std::string format_bytes(Bytes b);
std::string format_bandwidth(Bandwidth bw);

}  // namespace fabricsim::sim
