#pragma once
// What `fabricsim --version` prints: the project version and the git commit it was built from
// (generated at build time by cmake/VersionInfo.cmake).

#include <string_view>

namespace fabricsim::tools {

std::string_view build_version();
std::string_view build_commit();

}  // namespace fabricsim::tools
