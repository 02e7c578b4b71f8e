#include "tools/cuda/gemm_options.hpp"

#include <catch2/catch.hpp>
#include <initializer_list>
#include <vector>

#include "sim/input_error.hpp"

using namespace fabricsim::tools::cuda;

namespace {

CommandLine<GemmOptions> parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv = {"fabricsim-gemm-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_gemm_args(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("gemm bench defaults", "[cuda-tools]") {
  const auto cl = parse({"--shape", "1024x1024x1024"});
  REQUIRE_FALSE(cl.help);
  const GemmOptions& o = cl.options;
  CHECK(o.warmup == 10);
  CHECK(o.iters == 50);
  CHECK_FALSE(o.rotate_bytes);
  CHECK(o.device == 0);
  CHECK(o.output.empty());
  CHECK_FALSE(o.shapes_file);
  CHECK(collect_gemm_shapes(o) == std::vector<GemmShape>{{1024, 1024, 1024, 1, GemmDtype::kBf16}});
}

TEST_CASE("gemm bench flags", "[cuda-tools]") {
  const auto cl = parse({"--shape", "8x16x32:fp8", "--shape", "4x4x4:fp16:3", "--warmup", "0",
                         "--iters", "7", "--rotate-bytes", "512M", "--device", "1", "-o",
                         "out.json", "--seed", "42", "--shapes", "list.json"});
  const GemmOptions& o = cl.options;
  REQUIRE(o.shape_args.size() == 2);
  CHECK(o.shape_args[0] == GemmShape{8, 16, 32, 1, GemmDtype::kFp8});
  CHECK(o.shape_args[1] == GemmShape{4, 4, 4, 3, GemmDtype::kFp16});
  CHECK(o.warmup == 0);
  CHECK(o.iters == 7);
  CHECK(o.rotate_bytes == 512ull << 20);
  CHECK(o.device == 1);
  CHECK(o.output == "out.json");
  CHECK(o.seed == 42);
  CHECK(o.shapes_file == "list.json");
}

TEST_CASE("gemm bench help", "[cuda-tools]") {
  const auto cl = parse({"--help"});
  REQUIRE(cl.help);
  CHECK_THAT(*cl.help, Catch::Contains("--rotate-bytes") && Catch::Contains("--shapes"));
}

TEST_CASE("bad gemm bench arguments are clear errors", "[cuda-tools][bad-input]") {
  using fabricsim::sim::InputError;
  CHECK_THROWS_AS(parse({"--bogus"}), InputError);
  CHECK_THROWS_WITH(parse({"--bogus"}), Catch::Contains("--bogus"));
  CHECK_THROWS_WITH(parse({"--shape", "1024x1024"}), Catch::Contains("--shape"));
  CHECK_THROWS_WITH(parse({"--shape", "8x8x8:int8"}), Catch::Contains("unknown dtype 'int8'"));
  CHECK_THROWS_WITH(parse({"--iters", "0"}),
                    "<command line>: --iters: expected a positive integer");
  CHECK_THROWS_WITH(parse({"--iters", "many"}), Catch::Contains("--iters"));
  CHECK_THROWS_WITH(parse({"--warmup", "-1"}), Catch::Contains("--warmup"));
  CHECK_THROWS_WITH(parse({"--device", "-2"}), Catch::Contains("--device"));
  CHECK_THROWS_WITH(parse({"--rotate-bytes", "lots"}),
                    Catch::StartsWith("<command line>: --rotate-bytes:"));
  CHECK_THROWS_WITH(parse({"--rotate-bytes", "0"}), Catch::Contains("positive whole number"));
  CHECK_THROWS_WITH(collect_gemm_shapes(parse({}).options), Catch::Contains("no shapes"));
}
