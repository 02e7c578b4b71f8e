#!/usr/bin/env bash
# libFuzzer over every reader of user input (tests/fuzz/read_fuzz_input.hpp), built with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in build-sanitize/ (tools/sanitize.sh).
#
#   tools/fuzz.sh --ci             the CI step: seed 1 and a fixed number of runs over the committed
#                                  corpus, so the same inputs run on every machine, fast or slow
#   tools/fuzz.sh [SECONDS]        a longer random run (default 600 s); new inputs go to
#                                  build-sanitize/corpus-long, crashes to build-sanitize/crash-*
#
# A crash found by a long run is fixed, then its input is committed to
# tests/fuzz/corpus-regressions/ (the first byte picks the reader), where the CI run and the
# ordinary test suite (tests/fuzz_corpus_test.cpp) replay it. See docs/hardening.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# About 1-3 minutes on a busy 2-core machine (docs/hardening.md has the measured rate).
ci_runs=${FABRICSIM_FUZZ_RUNS:-60000}
"$root/tools/sanitize.sh" fuzz_readers
fuzzer=build-sanitize/tests/fuzz/fuzz_readers
common=(-max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -dict=tests/fuzz/readers.dict -artifact_prefix=build-sanitize/)
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

if [ "${1:-}" = "--ci" ]; then
  # New inputs go to a fresh folder (the first one), so every run starts from the committed corpus.
  rm -rf build-sanitize/corpus-ci
  mkdir -p build-sanitize/corpus-ci
  start=$(date +%s)
  # Bit-exact runs: -reload=0 never re-reads the corpus on a timer; -use_cmp=0 keeps compared
  # values out of the mutations (they include heap and stack addresses, which vary with ASLR and
  # with allocations made by libFuzzer's timed status lines; the dictionary gives the magic words
  # instead); setarch -R turns address randomisation off where the kernel allows it.
  norandom=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then norandom=(setarch "$(uname -m)" -R); fi
  "${norandom[@]}" "$fuzzer" -seed=1 -runs="$ci_runs" -reload=0 -use_cmp=0 "${common[@]}" \
    build-sanitize/corpus-ci tests/fuzz/corpus tests/fuzz/corpus-regressions
  echo "fuzz: $ci_runs runs in $(($(date +%s) - start)) s"
else
  seconds=${1:-600}
  mkdir -p build-sanitize/corpus-long
  "$fuzzer" -max_total_time="$seconds" "${common[@]}" build-sanitize/corpus-long tests/fuzz/corpus \
    tests/fuzz/corpus-regressions
fi
