#include "calibration/bus_bandwidth.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::calibration;

TEST_CASE("busbw factors follow nccl-tests", "[import]") {
  CHECK(*bus_bandwidth_factor("all_reduce", 8) == Approx(1.75));
  CHECK(*bus_bandwidth_factor("all_reduce", 2) == Approx(1.0));
  CHECK(*bus_bandwidth_factor("all_gather", 8) == Approx(0.875));
  CHECK(*bus_bandwidth_factor("reduce_scatter", 16) == Approx(0.9375));
  CHECK(*bus_bandwidth_factor("alltoall", 4) == Approx(0.75));
  CHECK(*bus_bandwidth_factor("broadcast", 64) == 1.0);
  CHECK(*bus_bandwidth_factor("reduce", 64) == 1.0);
  CHECK(*bus_bandwidth_factor("sendrecv", 2) == 1.0);
  CHECK(*bus_bandwidth_factor("all_reduce", 1) == 0.0);
  // Op names are read as everywhere else in fabricsim, which also takes NCCL's spelling.
  CHECK(*bus_bandwidth_factor("allreduce", 8) == Approx(1.75));
  CHECK_FALSE(bus_bandwidth_factor("moe_dispatch", 8).has_value());
  CHECK_FALSE(bus_bandwidth_factor("all_reduce", 0).has_value());
  CHECK(collective_ops().size() == 7);
}

TEST_CASE("rates derive from whichever of time, algbw and busbw is known", "[import]") {
  const double f = *bus_bandwidth_factor("all_reduce", 8);
  // 1 MiB in 57.12 us: algbw = 1048576 / 57.12e-6 / 1e9.
  const CollectiveRates t = rates_from_time(1048576, 57.12, f);
  CHECK(t.time_us == 57.12);
  CHECK(t.algbw_GBps == Approx(18.357).epsilon(1e-4));
  CHECK(t.busbw_GBps == Approx(18.357 * 1.75).epsilon(1e-4));

  const CollectiveRates b = rates_from_busbw(1048576, t.busbw_GBps, f);
  CHECK(b.time_us == Approx(57.12));
  CHECK(b.algbw_GBps == Approx(t.algbw_GBps));

  const CollectiveRates a = rates_from_algbw(1048576, t.algbw_GBps, f);
  CHECK(a.time_us == Approx(57.12));
  CHECK(a.busbw_GBps == Approx(t.busbw_GBps));

  // Size unknown: bandwidths only.
  const CollectiveRates u = rates_from_busbw(0, 480, f);
  CHECK(u.time_us == 0);
  CHECK(u.algbw_GBps == Approx(480 / 1.75));
  CHECK(u.busbw_GBps == Approx(480));
}
