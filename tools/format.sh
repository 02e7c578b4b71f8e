#!/usr/bin/env bash
# Formats every C++ and CUDA file of the repository with the root .clang-format.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i
