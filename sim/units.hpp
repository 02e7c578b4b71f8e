#pragma once
// Strong unit types. Time is an integer count of picoseconds so that event ordering is exact and
// runs are bit-for-bit reproducible; sizes, rates and FLOP counts are doubles because they are
// divided and averaged freely. Conversions between them go through the few functions at the end of
// this file, which own the one rounding rule (round up to the next picosecond).

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace fabricsim::sim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }
  static constexpr Time min() { return Time(std::numeric_limits<int64_t>::min()); }
  /// Whether this time reached the end of the representable range (107 days) and so is no answer.
  constexpr bool is_saturated() const { return ps_ == std::numeric_limits<int64_t>::max(); }
  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  static Time from_ns(double ns) { return from_seconds_rounded(ns * 1e-9); }
  static Time from_us(double us) { return from_seconds_rounded(us * 1e-6); }
  static Time from_ms(double ms) { return from_seconds_rounded(ms * 1e-3); }
  static Time from_s(double s) { return from_seconds_rounded(s); }

  constexpr int64_t ps() const { return ps_; }
  constexpr double ns() const { return static_cast<double>(ps_) * 1e-3; }
  constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr double ms() const { return static_cast<double>(ps_) * 1e-9; }
  constexpr double s() const { return static_cast<double>(ps_) * 1e-12; }

  // Sums and integer multiples saturate at max() ("never") instead of overflowing, which would be
  // undefined behaviour; callers that must not report a saturated time check is_saturated().
  constexpr Time& operator+=(Time o) {
    *this = *this + o;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  friend constexpr Time operator+(Time a, Time b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a.ps_, b.ps_, &sum)) return b.ps_ > 0 ? max() : min();
    return Time(sum);
  }
  friend constexpr Time operator-(Time a, Time b) { return Time(a.ps_ - b.ps_); }
  friend constexpr Time operator*(Time a, int64_t k) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a.ps_, k, &product)) return (a.ps_ > 0) == (k > 0) ? max() : min();
    return Time(product);
  }
  friend constexpr Time operator*(int64_t k, Time a) { return a * k; }
  friend Time operator*(Time a, double k) { return from_seconds_rounded(a.s() * k); }
  friend constexpr double operator/(Time a, Time b) {
    return static_cast<double>(a.ps_) / static_cast<double>(b.ps_);
  }
  friend constexpr auto operator<=>(Time, Time) = default;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  static Time from_seconds_rounded(double s) {
    const double ps = std::round(s * 1e12);
    if (!(ps < 9.2e18)) return max();  // NaN too: never silently zero
    if (ps <= -9.2e18) return min();
    return Time(static_cast<int64_t>(ps));
  }
  int64_t ps_ = 0;
};

/// A duration derived from simulated times by averaging or scaling (a mean over ranks and steps,
/// a step's share): a length in seconds, not an instant of the event clock, so it is not rounded
/// to picoseconds the way Time is.
class Seconds {
 public:
  constexpr Seconds() = default;
  static constexpr Seconds of(double s) { return Seconds(s); }
  static constexpr Seconds of(Time t) { return Seconds(t.s()); }
  constexpr double s() const { return value_; }

  constexpr Seconds& operator+=(Seconds o) {
    value_ += o.value_;
    return *this;
  }
  constexpr Seconds& operator/=(double k) {
    value_ /= k;
    return *this;
  }
  friend constexpr Seconds operator+(Seconds a, Seconds b) { return Seconds(a.value_ + b.value_); }
  friend constexpr Seconds operator-(Seconds a, Seconds b) { return Seconds(a.value_ - b.value_); }
  friend constexpr Seconds operator*(Seconds a, double k) { return Seconds(a.value_ * k); }
  friend constexpr Seconds operator/(Seconds a, double k) { return Seconds(a.value_ / k); }
  friend constexpr double operator/(Seconds a, Seconds b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Seconds, Seconds) = default;

 private:
  constexpr explicit Seconds(double v) : value_(v) {}
  double value_ = 0;
};

class Bytes {
 public:
  constexpr Bytes() = default;
  static constexpr Bytes of(double count) { return Bytes(count); }
  static constexpr Bytes kib(double n) { return Bytes(n * 1024.0); }
  static constexpr Bytes mib(double n) { return Bytes(n * 1024.0 * 1024.0); }
  static constexpr Bytes gib(double n) { return Bytes(n * 1024.0 * 1024.0 * 1024.0); }
  constexpr double count() const { return value_; }
  constexpr double gib() const { return value_ / (1024.0 * 1024.0 * 1024.0); }
  constexpr double gb() const { return value_ * 1e-9; }

  constexpr Bytes& operator+=(Bytes o) {
    value_ += o.value_;
    return *this;
  }
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes(a.value_ + b.value_); }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes(a.value_ - b.value_); }
  friend constexpr Bytes operator*(Bytes a, double k) { return Bytes(a.value_ * k); }
  friend constexpr Bytes operator*(double k, Bytes a) { return Bytes(a.value_ * k); }
  friend constexpr Bytes operator/(Bytes a, double k) { return Bytes(a.value_ / k); }
  friend constexpr double operator/(Bytes a, Bytes b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;

 private:
  constexpr explicit Bytes(double v) : value_(v) {}
  double value_ = 0;
};

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
  /// GB/s, decimal: 1 GB/s = 1e9 bytes per second.
  static constexpr Bandwidth gbytes_per_s(double v) { return Bandwidth(v * 1e9); }
  /// Gb/s, decimal bits: 400 Gb/s = 50 GB/s.
  static constexpr Bandwidth gbits_per_s(double v) { return Bandwidth(v * 1e9 / 8.0); }
  constexpr double bytes_per_s() const { return value_; }
  constexpr double gbytes_per_s() const { return value_ * 1e-9; }
  constexpr double gbits_per_s() const { return value_ * 8e-9; }

  friend constexpr Bandwidth operator+(Bandwidth a, Bandwidth b) {
    return Bandwidth(a.value_ + b.value_);
  }
  friend constexpr Bandwidth operator*(Bandwidth a, double k) { return Bandwidth(a.value_ * k); }
  friend constexpr Bandwidth operator*(double k, Bandwidth a) { return Bandwidth(a.value_ * k); }
  friend constexpr Bandwidth operator/(Bandwidth a, double k) { return Bandwidth(a.value_ / k); }
  friend constexpr double operator/(Bandwidth a, Bandwidth b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Bandwidth, Bandwidth) = default;

 private:
  constexpr explicit Bandwidth(double v) : value_(v) {}
  double value_ = 0;
};

class Flops {
 public:
  constexpr Flops() = default;
  static constexpr Flops of(double count) { return Flops(count); }
  constexpr double count() const { return value_; }
  constexpr double tera() const { return value_ * 1e-12; }
  constexpr Flops& operator+=(Flops o) {
    value_ += o.value_;
    return *this;
  }
  friend constexpr Flops operator+(Flops a, Flops b) { return Flops(a.value_ + b.value_); }
  friend constexpr Flops operator-(Flops a, Flops b) { return Flops(a.value_ - b.value_); }
  friend constexpr Flops operator*(Flops a, double k) { return Flops(a.value_ * k); }
  friend constexpr Flops operator*(double k, Flops a) { return Flops(a.value_ * k); }
  friend constexpr double operator/(Flops a, Flops b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Flops, Flops) = default;

 private:
  constexpr explicit Flops(double v) : value_(v) {}
  double value_ = 0;
};

class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate per_s(double v) { return FlopRate(v); }
  static constexpr FlopRate tflops(double v) { return FlopRate(v * 1e12); }
  constexpr double per_s() const { return value_; }
  constexpr double tflops() const { return value_ * 1e-12; }
  friend constexpr FlopRate operator*(FlopRate a, double k) { return FlopRate(a.value_ * k); }
  friend constexpr FlopRate operator*(double k, FlopRate a) { return FlopRate(a.value_ * k); }
  friend constexpr double operator/(FlopRate a, FlopRate b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(FlopRate, FlopRate) = default;

 private:
  constexpr explicit FlopRate(double v) : value_(v) {}
  double value_ = 0;
};

namespace detail {
inline Time ceil_seconds(double s) {
  const double ps = std::ceil(s * 1e12);
  if (!(ps < 9.2e18)) return Time::max();
  return Time::from_ps(static_cast<int64_t>(ps));
}
}  // namespace detail

/// a + b for non-negative durations, saturating at Time::max() ("never") instead of overflowing.
inline Time saturating_add(Time a, Time b) {
  return b > Time::max() - a ? Time::max() : a + b;
}

/// Time to move `bytes` at `rate`, rounded up to the next picosecond. Every byte/bandwidth
/// conversion in the simulator goes through here so that different backends agree exactly.
inline Time transfer_time(Bytes bytes, Bandwidth rate) {
  if (bytes.count() <= 0) return Time::zero();
  if (rate.bytes_per_s() <= 0) return Time::max();
  return detail::ceil_seconds(bytes.count() / rate.bytes_per_s());
}

/// Time to execute `work` at `rate`, rounded up to the next picosecond.
inline Time compute_time(Flops work, FlopRate rate) {
  if (work.count() <= 0) return Time::zero();
  if (rate.per_s() <= 0) return Time::max();
  return detail::ceil_seconds(work.count() / rate.per_s());
}

inline Bandwidth operator/(Bytes b, Time t) {
  return Bandwidth::bytes_per_s(b.count() / t.s());
}
inline FlopRate operator/(Flops f, Time t) {
  return FlopRate::per_s(f.count() / t.s());
}
inline Bytes operator*(Bandwidth r, Time t) {
  return Bytes::of(r.bytes_per_s() * t.s());
}

}  // namespace fabricsim::sim
