#!/usr/bin/env bash
# The checks CI adds to the test suite: formatting, an AddressSanitizer + UndefinedBehaviorSanitizer
# build with warnings as errors running every test, and a deterministic libFuzzer run over every
# reader of user input (a fixed seed and number of runs over the committed corpus; longer random
# runs: tools/fuzz.sh SECONDS).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/tools/setup.sh" clang libclang-rt-14-dev >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)

echo "== clang-format"
files=$(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
if ! clang-format --dry-run --Werror $files; then
  echo "clang-format: run tools/format.sh" >&2
  exit 1
fi

echo "== test names CTest runs as written"
# catch_discover_tests splits a test name at ';' into two CTest entries that each match no test
# case and pass without running anything.
if grep -rnE --include='*_test.cpp' 'TEST_CASE\("[^"]*;' .; then
  echo "test names: a ';' in a TEST_CASE name hides the test from CTest" >&2
  exit 1
fi

echo "== ASan + UBSan build (clang, warnings as errors) and every test under it"
"$root/tools/sanitize.sh"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs"

echo "== libFuzzer over every reader (seed 1, fixed run count: tools/fuzz.sh --ci)"
"$root/tools/fuzz.sh" --ci
echo "== CI checks passed"
