#!/usr/bin/env bash
# Configures and builds the sanitizer build in build-sanitize/: clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, warnings as errors, and libFuzzer's coverage instrumentation, so the
# one build runs both the whole test suite under the sanitizers and the fuzz target
# (tools/ci-checks.sh, tools/fuzz.sh).
#
#   tools/sanitize.sh [TARGET...]   builds the targets named (default: all)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1 without debug info: sanitizer builds at -O2 -g take twice as long to compile.
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DFABRICSIM_FUZZ=ON -DFABRICSIM_BENCH=OFF \
  -DFABRICSIM_CUDA=OFF -DFABRICSIM_MPI=OFF "${launcher[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build-sanitize -j "$jobs" "${targets[@]}"
