// Replays the committed fuzz corpus (seeds and the reproducer of every crash class found so far)
// through the same dispatch as the libFuzzer target, in every build: a reader may reject an input
// only with sim::InputError.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/fuzz/read_fuzz_input.hpp"

namespace fs = std::filesystem;

TEST_CASE("every committed fuzz input is read or rejected with an InputError",
          "[fuzz][bad-input]") {
  const fs::path root = fs::path(FABRICSIM_SOURCE_DIR) / "tests" / "fuzz";
  size_t files = 0;
  for (const char* dir : {"corpus", "corpus-regressions"}) {
    for (const auto& entry : fs::directory_iterator(root / dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      INFO(entry.path().string());
      CHECK_NOTHROW(fabricsim::testing::read_fuzz_input(bytes.str()));
      ++files;
    }
  }
  CHECK(files >= 40);
}
