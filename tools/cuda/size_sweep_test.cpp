#include "tools/cuda/size_sweep.hpp"

#include <catch2/catch.hpp>

#include "sim/input_error.hpp"

using namespace fabricsim::tools::cuda;

TEST_CASE("message sizes parse like nccl-tests", "[cuda-tools]") {
  CHECK(parse_message_size("8", "-b") == 8);
  CHECK(parse_message_size("1K", "-b") == 1024);
  CHECK(parse_message_size("1k", "-b") == 1024);
  CHECK(parse_message_size("64M", "-e") == 64ull << 20);
  CHECK(parse_message_size("8G", "-e") == 8ull << 30);
  CHECK(parse_message_size("8g", "-e") == 8ull << 30);
  CHECK(parse_message_size("64 MiB", "-e") == 64ull << 20);
  CHECK(parse_message_size("1 GB", "-e") == 1000000000ull);
}

TEST_CASE("bad message sizes are clear errors", "[cuda-tools][bad-input]") {
  CHECK_THROWS_AS(parse_message_size("0", "-b"), fabricsim::sim::InputError);
  CHECK_THROWS_WITH(parse_message_size("0", "-b"),
                    "<command line>: -b: expected a positive whole number of bytes, got '0'");
  CHECK_THROWS_WITH(parse_message_size("0.3", "-b"), Catch::Contains("whole number of bytes"));
  CHECK_THROWS_WITH(parse_message_size("lots", "-e"), Catch::StartsWith("<command line>: -e:"));
  CHECK_THROWS_WITH(parse_message_size("8X", "-e"), Catch::Contains("unknown unit 'X'"));
  CHECK_THROWS_WITH(parse_message_size("-8", "-e"), Catch::Contains("-e"));
}

TEST_CASE("8 B to 8 GiB by factor 2 gives the 31 sizes of nccl-tests", "[cuda-tools]") {
  const auto sizes = size_sweep(8, 8ull << 30, 2);
  REQUIRE(sizes.size() == 31);
  CHECK(sizes.front() == 8);
  CHECK(sizes[1] == 16);
  CHECK(sizes.back() == 8ull << 30);
}

TEST_CASE("size sweeps stop at the largest size and never overflow", "[cuda-tools]") {
  CHECK(size_sweep(8, 8, 2) == std::vector<uint64_t>{8});
  CHECK(size_sweep(3, 100, 4) == std::vector<uint64_t>{3, 12, 48});
  CHECK(size_sweep(1ull << 62, ~0ull, 2).size() == 2);
  CHECK_THROWS(size_sweep(16, 8, 2));
  CHECK_THROWS(size_sweep(8, 16, 1));
  CHECK_THROWS(size_sweep(0, 16, 2));
}
