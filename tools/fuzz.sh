#!/usr/bin/env bash
# libFuzzer over every reader of user input (tests/fuzz/read_fuzz_input.hpp), built with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/.
#
#   tools/fuzz.sh --ci             the CI step: seed 1 and a fixed number of runs over the committed
#                                  corpus, so the same inputs run on every machine, fast or slow
#   tools/fuzz.sh [SECONDS]        a longer random run (default 600 s); new inputs go to
#                                  build-fuzz/corpus-long, crashes to build-fuzz/crash-*
#
# A crash found by a long run is fixed, then its input is committed to
# tests/fuzz/corpus-regressions/ (the first byte picks the reader), where the CI run and the
# ordinary test suite (tests/fuzz_corpus_test.cpp) replay it. See docs/hardening.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# About 1-3 minutes on a busy 2-core machine (docs/hardening.md has the measured rate).
ci_runs=${FABRICSIM_FUZZ_RUNS:-60000}
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DFABRICSIM_FUZZ=ON -DFABRICSIM_BENCH=OFF \
  -DFABRICSIM_CUDA=OFF -DFABRICSIM_MPI=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz_readers
fuzzer=build-fuzz/tests/fuzz/fuzz_readers
common=(-max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix=build-fuzz/)
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

if [ "${1:-}" = "--ci" ]; then
  # New inputs go to a fresh folder (the first one), so every run starts from the committed corpus.
  rm -rf build-fuzz/corpus-ci
  mkdir -p build-fuzz/corpus-ci
  start=$(date +%s)
  # -reload=0: never re-read the corpus on a timer, the one clock libFuzzer would consult.
  "$fuzzer" -seed=1 -runs="$ci_runs" -reload=0 "${common[@]}" build-fuzz/corpus-ci tests/fuzz/corpus \
    tests/fuzz/corpus-regressions
  echo "fuzz: $ci_runs runs in $(($(date +%s) - start)) s"
else
  seconds=${1:-600}
  mkdir -p build-fuzz/corpus-long
  "$fuzzer" -max_total_time="$seconds" "${common[@]}" build-fuzz/corpus-long tests/fuzz/corpus \
    tests/fuzz/corpus-regressions
fi
