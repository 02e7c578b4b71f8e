#pragma once
// A file of this source tree, for tests that read committed fixtures, goldens and docs. Joined as
// a std::filesystem::path: GCC 12's -Warray-bounds misfires on `std::string(dir) + "/" + name`
// once the checkout's path outgrows the short-string buffer, which broke CI's -Werror build.

#include <filesystem>
#include <string>

namespace fabricsim::testing {

template <typename... Parts>
std::string source_file(const Parts&... parts) {
  std::filesystem::path path(FABRICSIM_SOURCE_DIR);
  ((path /= parts), ...);
  return path.string();
}

}  // namespace fabricsim::testing
