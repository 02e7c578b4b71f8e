#include "tools/cuda/nccl_options.hpp"

#include <catch2/catch.hpp>
#include <initializer_list>
#include <vector>

#include "sim/input_error.hpp"

using namespace fabricsim::tools::cuda;

namespace {

CommandLine<NcclOptions> parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv = {"fabricsim-nccl-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_nccl_args(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("nccl bench defaults sweep 8 B to 8 GiB over every op", "[cuda-tools]") {
  const auto cl = parse({});
  REQUIRE_FALSE(cl.help);
  const NcclOptions& o = cl.options;
  CHECK(o.ops == all_collective_ops());
  CHECK(o.min_bytes == 8);
  CHECK(o.max_bytes == 8ull << 30);
  CHECK(o.step_factor == 2);
  CHECK(o.warmup == 5);
  CHECK(o.iters == 20);
  CHECK(o.dtype == NcclDtype::kFloat);
  CHECK_FALSE(o.check);
  CHECK_FALSE(o.in_place);
  CHECK(o.gpus_per_process == 1);
}

TEST_CASE("nccl bench flags", "[cuda-tools]") {
  const auto cl = parse({"--ops",   "sendrecv,all_reduce",
                         "-b",      "1K",
                         "-e",      "1G",
                         "-f",      "4",
                         "-w",      "2",
                         "-n",      "9",
                         "-d",      "bfloat16",
                         "--check", "--inplace",
                         "-g",      "8",
                         "-o",      "nccl.json"});
  const NcclOptions& o = cl.options;
  CHECK(o.ops == std::vector<CollectiveOp>{CollectiveOp::kSendRecv, CollectiveOp::kAllReduce});
  CHECK(o.min_bytes == 1024);
  CHECK(o.max_bytes == 1ull << 30);
  CHECK(o.step_factor == 4);
  CHECK(o.warmup == 2);
  CHECK(o.iters == 9);
  CHECK(o.dtype == NcclDtype::kBfloat16);
  CHECK(o.check);
  CHECK(o.in_place);
  CHECK(o.gpus_per_process == 8);
  CHECK(o.output == "nccl.json");
  CHECK(parse({"--warmup", "3", "--iters", "4", "--dtype", "half"}).options.iters == 4);
  CHECK(parse({"--ops", "alltoall", "--ops", "alltoall"}).options.ops.size() == 1);
}

TEST_CASE("bad nccl bench arguments are clear errors", "[cuda-tools][bad-input]") {
  using fabricsim::sim::InputError;
  CHECK_THROWS_AS(parse({"--bogus"}), InputError);
  CHECK_THROWS_WITH(parse({"--bogus"}), Catch::Contains("--bogus"));
  CHECK_THROWS_WITH(parse({"--ops", "all_reduce,allgather"}),
                    Catch::StartsWith("<command line>: --ops: unknown op 'allgather'"));
  CHECK_THROWS_WITH(parse({"-b", "1M", "-e", "1K"}),
                    "<command line>: -b: the smallest size (-b 1M) is larger than the largest "
                    "(-e 1K)");
  CHECK_THROWS_WITH(parse({"-e", "8Q"}), Catch::StartsWith("<command line>: -e:"));
  CHECK_THROWS_WITH(parse({"-b", "0"}), Catch::Contains("positive whole number"));
  CHECK_THROWS_WITH(parse({"-f", "1"}), Catch::Contains("step factor of at least 2"));
  CHECK_THROWS_WITH(parse({"-d", "double"}), Catch::Contains("unknown dtype 'double'"));
  CHECK_THROWS_WITH(parse({"-g", "0"}), Catch::Contains("-g"));
  CHECK_THROWS_WITH(parse({"-n", "0"}), Catch::Contains("-n"));
  CHECK_THROWS_WITH(parse({"-w", "-1"}), Catch::Contains("-w"));
}

TEST_CASE("nccl dtypes", "[cuda-tools]") {
  CHECK(nccl_dtype_name(NcclDtype::kFloat) == "float");
  CHECK(nccl_dtype_bytes(NcclDtype::kFloat) == 4);
  CHECK(nccl_dtype_name(NcclDtype::kHalf) == "half");
  CHECK(nccl_dtype_bytes(NcclDtype::kBfloat16) == 2);
  CHECK(parse({"--help"}).help.has_value());
}
