#include "tools/cuda/tool_errors.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/input_error.hpp"

using namespace fabricsim::tools::cuda;

TEST_CASE("failures become one line and the exit code of their kind", "[cuda-tools]") {
  std::ostringstream err;
  CHECK(run_tool("tool", err, [] { return 0; }) == kExitOk);
  CHECK(err.str().empty());
  CHECK(run_tool("tool", err, []() -> int {
          throw fabricsim::sim::InputError("<command line>", "--iters", "bad");
        }) == kExitBadInput);
  CHECK(run_tool("tool", err, []() -> int {
          throw DeviceUnavailable("no CUDA device found (cudaGetDeviceCount: none)");
        }) == kExitNoDevice);
  CHECK(run_tool("tool", err, []() -> int {
          throw CallFailure(
              describe_call_failure("cudaMalloc", "cudaErrorMemoryAllocation", "out of memory"));
        }) == kExitRuntimeFailure);
  CHECK(run_tool("tool", err, []() -> int { throw 42; }) == kExitRuntimeFailure);
  CHECK(err.str() ==
        "tool: <command line>: --iters: bad\n"
        "tool: no CUDA device found (cudaGetDeviceCount: none)\n"
        "tool: cudaMalloc: cudaErrorMemoryAllocation (out of memory)\n"
        "tool: unknown error\n");
}

TEST_CASE("call failures name the call", "[cuda-tools]") {
  CHECK(describe_call_failure("ncclAllReduce", "ncclResult 2", "unhandled system error") ==
        "ncclAllReduce: ncclResult 2 (unhandled system error)");
  CHECK(describe_call_failure("x", "E", "") == "x: E");
}
