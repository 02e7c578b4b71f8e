#pragma once
// Feeds bytes to every reader of user input, dispatching on the first byte: T topology
// JSON, S scenario (leading "/pointer=value" lines are --set assignments), P calibration profile,
// L nccl-tests log, C GEMM CSV, G gemm-bench JSON, N nccl-bench JSON, K case file, R PyTorch
// profiler (Kineto) trace, F format detection; any other byte picks a reader by its value. A reader
// may reject input only with sim::InputError (or a SpecError from the topology reader), which is
// swallowed here; anything else is a bug: a crash, a sanitizer report, a hang, or another exception
// escaping. Used by the libFuzzer target and by the test that replays the committed corpus.

#include <string_view>

namespace fabricsim::testing {

void read_fuzz_input(std::string_view bytes);

}  // namespace fabricsim::testing
