#pragma once
// nccl-tests' bandwidth conventions. algbw = size / time; busbw = algbw x a per-op factor that
// makes busbw comparable to the link speed whatever the op and rank count: 2(n-1)/n for
// all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall, 1 for broadcast, reduce and
// sendrecv. Sizes are bytes, times microseconds, bandwidths GB/s (1e9 B/s).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::calibration {

/// The ops nccl-tests measures, by their names without "_perf".
const std::vector<std::string>& collective_ops();

/// busbw / algbw for `op` on `ranks` ranks; nullopt for an op nccl-tests does not know or
/// ranks < 1.
std::optional<double> bus_bandwidth_factor(std::string_view op, int ranks);

struct CollectiveRates {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

/// All three rates from the time per operation (time_us > 0).
CollectiveRates rates_from_time(double bytes, double time_us, double factor);
/// All three rates from algbw. time_us is 0 when bytes is 0 (size unknown) or algbw is 0.
CollectiveRates rates_from_algbw(double bytes, double algbw_GBps, double factor);
/// All three rates from busbw; factor must be positive. time_us as for rates_from_algbw.
CollectiveRates rates_from_busbw(double bytes, double busbw_GBps, double factor);

}  // namespace fabricsim::calibration
