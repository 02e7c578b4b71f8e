#pragma once
// The tests that compare against the project's shared reference data (../shared/reference: the
// case files of measured collectives, GEMMs and training runs) read it from FABRICSIM_SHARED_DIR
// (the environment variable of that name overrides the build's path). Without it they are
// skipped with a message rather than failed: FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE() at the top
// of such a test case.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace fabricsim::testing {

inline std::string shared_dir() {
  const char* env = std::getenv("FABRICSIM_SHARED_DIR");
  return env != nullptr ? std::string(env) : std::string(FABRICSIM_SHARED_DIR);
}

/// A case file of ../shared/reference/cases.
inline std::string shared_case(const std::string& file) {
  return (std::filesystem::path(shared_dir()) / "reference" / "cases" / file).string();
}

inline bool shared_reference_present() {
  return std::filesystem::is_directory(std::filesystem::path(shared_dir()) / "reference" / "cases");
}

}  // namespace fabricsim::testing

#define FABRICSIM_SKIP_WITHOUT_SHARED_REFERENCE()                                                  \
  do {                                                                                             \
    if (!::fabricsim::testing::shared_reference_present()) {                                       \
      WARN("skipped: the shared reference data is absent (" + ::fabricsim::testing::shared_dir() + \
           "/reference; set FABRICSIM_SHARED_DIR)");                                               \
      return;                                                                                      \
    }                                                                                              \
  } while (false)
