#include "sim/units.hpp"

#include <catch2/catch.hpp>

#include "sim/unit_parse.hpp"

using namespace fabricsim::sim;

TEST_CASE("time is exact integer picoseconds", "[units]") {
  CHECK(Time::from_us(1.5).ps() == 1'500'000);
  CHECK(Time::from_ns(0.25).ps() == 250);
  CHECK((Time::from_us(1) + Time::from_ns(500)).ps() == 1'500'000);
  CHECK(Time::from_s(2).ms() == Approx(2000));
  CHECK(Time::from_us(3) / Time::from_us(1) == Approx(3));
  CHECK(Time::from_us(1) < Time::from_us(2));
}

TEST_CASE("bandwidth conversions follow bits vs bytes", "[units]") {
  CHECK(Bandwidth::gbits_per_s(400).gbytes_per_s() == Approx(50));
  CHECK(Bandwidth::gbytes_per_s(50).gbits_per_s() == Approx(400));
}

TEST_CASE("transfer time rounds up to the next picosecond", "[units]") {
  // 1 GB at 1 GB/s is exactly one second.
  CHECK(transfer_time(Bytes::of(1e9), Bandwidth::gbytes_per_s(1)).ps() == 1'000'000'000'000);
  // 1 byte at 3 B/s = 0.333.. s -> rounded up.
  CHECK(transfer_time(Bytes::of(1), Bandwidth::bytes_per_s(3)).ps() == 333'333'333'334);
  CHECK(transfer_time(Bytes::of(0), Bandwidth::gbytes_per_s(1)) == Time::zero());
  CHECK(transfer_time(Bytes::of(5), Bandwidth::bytes_per_s(0)) == Time::max());
  CHECK(compute_time(Flops::of(1e12), FlopRate::tflops(1)).ps() == 1'000'000'000'000);
}

TEST_CASE("unit strings parse in one place", "[units][parse]") {
  CHECK(parse_time("1.5 us").ps() == 1'500'000);
  CHECK(parse_time("20ms").ps() == 20'000'000'000);
  CHECK(parse_time("250 ns").ps() == 250'000);
  CHECK(parse_bandwidth("400 Gbps").gbytes_per_s() == Approx(50));
  CHECK(parse_bandwidth("400 Gb/s").gbytes_per_s() == Approx(50));
  CHECK(parse_bandwidth("50 GB/s").gbits_per_s() == Approx(400));
  CHECK(parse_bandwidth("1 GiB/s").bytes_per_s() == Approx(1024.0 * 1024 * 1024));
  CHECK(parse_bytes("64 MiB").count() == 64.0 * 1024 * 1024);
  CHECK(parse_bytes("8G").count() == 8.0 * 1024 * 1024 * 1024);
  CHECK(parse_bytes("1024").count() == 1024);
  CHECK(parse_bytes("1.5 GB").count() == 1.5e9);
  CHECK(parse_flop_rate("989.4 TFLOPS").tflops() == Approx(989.4));
  CHECK(parse_flop_rate("2 PFLOP/s").tflops() == Approx(2000));
  CHECK(parse_flops("3.8e25 FLOP").count() == Approx(3.8e25));
}

TEST_CASE("bad unit strings are rejected with the expectation", "[units][parse][bad-input]") {
  CHECK_THROWS_WITH(parse_time("fast"), Catch::Contains("expected a time"));
  CHECK_THROWS_WITH(parse_time("5"), Catch::Contains("unit is missing"));
  CHECK_THROWS_WITH(parse_time("5 parsecs"), Catch::Contains("unknown unit 'parsecs'"));
  CHECK_THROWS_WITH(parse_bandwidth("400"), Catch::Contains("unit is missing"));
  CHECK_THROWS_WITH(parse_bandwidth("-4 Gbps"), Catch::Contains("expected a bandwidth"));
  CHECK_THROWS_WITH(parse_bytes("12 apples"), Catch::Contains("unknown unit 'apples'"));
  CHECK_THROWS_WITH(parse_bytes(""), Catch::Contains("expected a size"));
  CHECK_THROWS_WITH(parse_bandwidth("nan Gbps"), Catch::Contains("expected a bandwidth"));
  CHECK_THROWS_AS(parse_flop_rate("1e400 TFLOPS"), UnitError);
}

TEST_CASE("formatting is readable", "[units]") {
  CHECK(format_time(Time::from_us(1.5)) == "1.50 us");
  CHECK(format_bytes(Bytes::mib(64)) == "64 MiB");
  CHECK(format_bandwidth(Bandwidth::gbytes_per_s(50)) == "50.0 GB/s");
}
