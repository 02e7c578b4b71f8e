#!/usr/bin/env bash
# Sets up and builds fabricsim, then runs the main job on its embedded default.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
exec "$root/build/tools/fabricsim/fabricsim" scale "$@"
