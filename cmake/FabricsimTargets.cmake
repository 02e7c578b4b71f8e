# Shared compile options and the one way every library of the project is declared.

add_library(fabricsim_options INTERFACE)
target_compile_options(fabricsim_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
if(FABRICSIM_WERROR)
  target_compile_options(fabricsim_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
# A fuzzing build is a sanitizer build whose code also carries libFuzzer's coverage counters, so one
# build serves both the sanitized test suite and the fuzz target (tools/sanitize.sh).
if(FABRICSIM_SANITIZE OR FABRICSIM_FUZZ)
  target_compile_options(fabricsim_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer>)
  target_link_options(fabricsim_options INTERFACE -fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 under -fsanitize reports false positives inside libstdc++ (std::regex,
    # std::function, std::string copies: GCC bugs 105329, 105562).
    target_compile_options(fabricsim_options INTERFACE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized -Wno-restrict>)
  endif()
endif()
if(FABRICSIM_FUZZ)
  # Coverage instrumentation for libFuzzer (clang only); the fuzz target links the driver.
  target_compile_options(fabricsim_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
target_include_directories(fabricsim_options INTERFACE ${PROJECT_SOURCE_DIR})

# Precompiled headers: the standard library, the header-only JSON library and fmt are parsed once
# per target instead of in every file (a sixth less build time, docs/performance.md, "Build").
# fabricsim_precompile(<target> [headers...]) adds the common set plus the target's own.
set(FABRICSIM_PCH_HEADERS <algorithm> <cstdint> <functional> <map> <memory> <optional> <string>
                          <string_view> <unordered_map> <variant> <vector>
                          <nlohmann/json.hpp> <fmt/format.h>)
function(fabricsim_precompile target)
  if(FABRICSIM_PCH)
    target_precompile_headers(${target} PRIVATE ${FABRICSIM_PCH_HEADERS} ${ARGN})
  endif()
endfunction()

# The unit tests of every library are collected here and built into one test program.
set_property(GLOBAL PROPERTY FABRICSIM_TEST_SOURCES "")

# fabricsim_library(<name> DEPS <targets...>)
# Builds every *.cpp in the calling folder except *_test.cpp into library fabricsim_<name>;
# the *_test.cpp files go into the shared test program.
function(fabricsim_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp)
  if(tests)
    list(REMOVE_ITEM sources ${tests})
  endif()
  add_library(fabricsim_${name} STATIC ${sources})
  target_link_libraries(fabricsim_${name} PUBLIC fabricsim_options ${ARG_DEPS})
  fabricsim_precompile(fabricsim_${name})
  set_property(GLOBAL APPEND PROPERTY FABRICSIM_TEST_SOURCES ${tests})
endfunction()
