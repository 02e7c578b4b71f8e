#!/usr/bin/env bash
# Installs the Debian packages fabricsim needs (only those missing) and builds it in build/.
# Used by tools/main.sh and tools/test.sh; safe to run again.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(build-essential cmake ninja-build pkg-config libboost-dev libeigen3-dev
          nlohmann-json3-dev libcli11-dev catch2 libfmt-dev libbenchmark-dev libopenmpi-dev
          openmpi-bin clang-format python3-matplotlib pybind11-dev python3-dev python3-pytest)
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
jobs=$(nproc 2>/dev/null || echo 2)
# A build folder configured before (by hand, with another generator) keeps its generator: CMake
# refuses to switch one, and the cache already says how to build.
generator=(-G Ninja)
if [ -f "$root/build/CMakeCache.txt" ]; then generator=(); fi
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$jobs"
