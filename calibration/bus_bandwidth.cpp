#include "calibration/bus_bandwidth.hpp"

#include "models/collective_op.hpp"

namespace fabricsim::calibration {

const std::vector<std::string>& collective_ops() {
  static const std::vector<std::string> ops = {
      "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"};
  return ops;
}

std::optional<double> bus_bandwidth_factor(std::string_view op, int ranks) {
  const auto parsed = models::parse_collective_op(op);
  if (ranks < 1 || !parsed) return std::nullopt;
  return models::busbw_factor(*parsed, ranks);
}

// GB/s from bytes and microseconds: bytes / (us * 1e-6) / 1e9 = bytes / (us * 1e3).
CollectiveRates rates_from_time(double bytes, double time_us, double factor) {
  const double algbw = bytes / (time_us * 1e3);
  return {time_us, algbw, algbw * factor};
}

CollectiveRates rates_from_algbw(double bytes, double algbw_GBps, double factor) {
  const double time_us = bytes > 0 && algbw_GBps > 0 ? bytes / (algbw_GBps * 1e3) : 0.0;
  return {time_us, algbw_GBps, algbw_GBps * factor};
}

CollectiveRates rates_from_busbw(double bytes, double busbw_GBps, double factor) {
  return rates_from_algbw(bytes, busbw_GBps / factor, factor);
}

}  // namespace fabricsim::calibration
