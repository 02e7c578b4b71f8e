#!/usr/bin/env bash
# Sets up and builds fabricsim, then runs the whole test suite (unit, equivalence, golden, CLI).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"
