// The libFuzzer entry point over every reader of user input (tests/fuzz/read_fuzz_input.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/read_fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fabricsim::testing::read_fuzz_input(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
