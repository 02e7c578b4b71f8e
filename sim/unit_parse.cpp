#include "sim/unit_parse.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace fabricsim::sim {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

namespace {

struct Suffix {
  std::string_view text;
  double scale;
};

constexpr std::array kTimeSuffixes{
    Suffix{"ps", 1e-12}, Suffix{"ns", 1e-9},   Suffix{"us", 1e-6},     Suffix{"µs", 1e-6},
    Suffix{"ms", 1e-3},  Suffix{"s", 1.0},     Suffix{"sec", 1.0},     Suffix{"min", 60.0},
    Suffix{"h", 3600.0}, Suffix{"d", 86400.0}, Suffix{"day", 86400.0}, Suffix{"days", 86400.0},
};

constexpr double kKi = 1024.0;
constexpr std::array kByteSuffixes{
    Suffix{"B", 1.0},
    Suffix{"bytes", 1.0},
    Suffix{"kB", 1e3},
    Suffix{"KB", 1e3},
    Suffix{"MB", 1e6},
    Suffix{"GB", 1e9},
    Suffix{"TB", 1e12},
    Suffix{"PB", 1e15},
    Suffix{"KiB", kKi},
    Suffix{"MiB", kKi* kKi},
    Suffix{"GiB", kKi* kKi* kKi},
    Suffix{"TiB", kKi* kKi* kKi* kKi},
    Suffix{"K", kKi},
    Suffix{"M", kKi* kKi},
    Suffix{"G", kKi* kKi* kKi},
    Suffix{"T", kKi* kKi* kKi* kKi},
};

// Bandwidth in bytes per second.
constexpr std::array kBandwidthSuffixes{
    Suffix{"bps", 1.0 / 8},
    Suffix{"b/s", 1.0 / 8},
    Suffix{"Kbps", 1e3 / 8},
    Suffix{"kbps", 1e3 / 8},
    Suffix{"Kb/s", 1e3 / 8},
    Suffix{"kb/s", 1e3 / 8},
    Suffix{"Mbps", 1e6 / 8},
    Suffix{"Mb/s", 1e6 / 8},
    Suffix{"Gbps", 1e9 / 8},
    Suffix{"Gb/s", 1e9 / 8},
    Suffix{"Tbps", 1e12 / 8},
    Suffix{"Tb/s", 1e12 / 8},
    Suffix{"B/s", 1.0},
    Suffix{"Bps", 1.0},
    Suffix{"kB/s", 1e3},
    Suffix{"KB/s", 1e3},
    Suffix{"MB/s", 1e6},
    Suffix{"MBps", 1e6},
    Suffix{"GB/s", 1e9},
    Suffix{"GBps", 1e9},
    Suffix{"TB/s", 1e12},
    Suffix{"TBps", 1e12},
    Suffix{"KiB/s", kKi},
    Suffix{"MiB/s", kKi* kKi},
    Suffix{"GiB/s", kKi* kKi* kKi},
    Suffix{"TiB/s", kKi* kKi* kKi* kKi},
};

constexpr std::array kFlopRateSuffixes{
    Suffix{"FLOPS", 1.0},   Suffix{"FLOP/s", 1.0},   Suffix{"GFLOPS", 1e9},
    Suffix{"GFLOP/s", 1e9}, Suffix{"TFLOPS", 1e12},  Suffix{"TFLOP/s", 1e12},
    Suffix{"PFLOPS", 1e15}, Suffix{"PFLOP/s", 1e15},
};

constexpr std::array kFlopSuffixes{
    Suffix{"FLOP", 1.0},   Suffix{"FLOPs", 1.0},  Suffix{"GFLOP", 1e9},  Suffix{"TFLOP", 1e12},
    Suffix{"PFLOP", 1e15}, Suffix{"EFLOP", 1e18}, Suffix{"ZFLOP", 1e21},
};

// Splits "1.5 us" into 1.5 and "us". Throws when there is no finite, non-negative number.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what) {
  const std::string_view s = trim(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) {
    throw UnitError(fmt::format("expected {}, got '{}'", what, text));
  }
  if (!std::isfinite(value) || value < 0) {
    throw UnitError(
        fmt::format("expected {} (a finite, non-negative number), got '{}'", what, text));
  }
  return {value, trim(std::string_view(end, static_cast<size_t>(s.data() + s.size() - end)))};
}

}  // namespace

double parse_number(std::string_view text, std::string_view what) {
  const auto [value, unit] = split_number(text, what);
  if (!unit.empty()) {
    throw UnitError(fmt::format("expected {}, got '{}' (no unit: the key names it)", what, text));
  }
  return value;
}

namespace {

template <size_t N>
double parse_with(std::string_view text, const std::array<Suffix, N>& suffixes,
                  std::string_view what, bool unit_optional) {
  const auto [value, unit] = split_number(text, what);
  if (unit.empty()) {
    if (unit_optional) return value;
    throw UnitError(fmt::format("expected {}, got '{}' (the unit is missing)", what, text));
  }
  for (const Suffix& s : suffixes) {
    if (unit != s.text) continue;
    // The number is finite but its product with the unit may not be ("1e300 TB/s").
    if (!std::isfinite(value * s.scale)) {
      throw UnitError(
          fmt::format("expected {}, got '{}' (too large: not finite in base units)", what, text));
    }
    return value * s.scale;
  }
  throw UnitError(fmt::format("expected {}, got '{}' (unknown unit '{}')", what, text, unit));
}

}  // namespace

Time parse_time(std::string_view text) {
  constexpr std::string_view what = "a time such as '1.5 us' or '20 ms'";
  const double s = parse_with(text, kTimeSuffixes, what, false);
  // Time counts picoseconds in an int64: anything longer would saturate into a wrong answer.
  if (!(s * 1e12 < 9.2e18)) {
    throw UnitError(
        fmt::format("expected {}, got '{}' (longer than the {:.0f} days a time can hold)", what,
                    text, Time::max().s() / 86400));
  }
  return Time::from_s(s);
}

Bytes parse_bytes(std::string_view text) {
  const double v = parse_with(text, kByteSuffixes, "a size such as '64 MiB', '8G' or '1024'", true);
  return Bytes::of(v);
}

Bandwidth parse_bandwidth(std::string_view text) {
  return Bandwidth::bytes_per_s(
      parse_with(text, kBandwidthSuffixes, "a bandwidth such as '400 Gbps' or '50 GB/s'", false));
}

FlopRate parse_flop_rate(std::string_view text) {
  return FlopRate::per_s(
      parse_with(text, kFlopRateSuffixes, "a FLOP rate such as '989 TFLOPS'", false));
}

Flops parse_flops(std::string_view text) {
  return Flops::of(parse_with(text, kFlopSuffixes, "a FLOP count such as '3.8e25 FLOP'", false));
}

ScopedRate parse_scoped_rate(std::string_view text, std::string_view what) {
  const auto fail = [&]() -> ScopedRate {
    throw UnitError(fmt::format("expected {}, got '{}'", what, text));
  };
  auto [value, rest] = split_number(text, what);
  bool percent = false;
  if (!rest.empty() && rest.front() == '%') {
    percent = true;
    rest = trim(rest.substr(1));
  }
  if (rest.empty() || rest.front() != '/') return fail();
  std::string unit(trim(rest.substr(1)));
  for (char& c : unit)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t dash = unit.find('-');
  if (dash == std::string::npos || dash == 0) return fail();
  const std::string period = unit.substr(dash + 1);
  double hours = 0;
  if (period == "h" || period == "hour") {
    hours = 1;
  } else if (period == "d" || period == "day") {
    hours = 24;
  } else if (period == "yr" || period == "year") {
    hours = 8760;
  } else {
    return fail();
  }
  return {(percent ? value / 100.0 : value) / hours, unit.substr(0, dash)};
}

std::string format_time(Time t) {
  const double ps = static_cast<double>(t.ps());
  if (ps < 1e3) return fmt::format("{:.0f} ps", ps);
  if (ps < 1e6) return fmt::format("{:.2f} ns", ps * 1e-3);
  if (ps < 1e9) return fmt::format("{:.2f} us", ps * 1e-6);
  if (ps < 1e12) return fmt::format("{:.3f} ms", ps * 1e-9);
  return fmt::format("{:.3f} s", ps * 1e-12);
}

std::string format_bytes(Bytes b) {
  const double v = b.count();
  if (v < kKi) return fmt::format("{:.0f} B", v);
  if (v < kKi * kKi) return fmt::format("{:.4g} KiB", v / kKi);
  if (v < kKi * kKi * kKi) return fmt::format("{:.4g} MiB", v / (kKi * kKi));
  if (v < kKi * kKi * kKi * kKi) return fmt::format("{:.4g} GiB", v / (kKi * kKi * kKi));
  return fmt::format("{:.4g} TiB", v / (kKi * kKi * kKi * kKi));
}

std::string format_bandwidth(Bandwidth bw) {
  return fmt::format("{:.1f} GB/s", bw.gbytes_per_s());
}

}  // namespace fabricsim::sim
