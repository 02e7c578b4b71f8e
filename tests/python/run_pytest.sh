#!/usr/bin/env bash
# The Python module's tests (tests/python) under pytest; skips (77) when the module was not built
# (no pybind11-dev, or a sanitizer build) or the interpreter has no pytest.
#   run_pytest.sh PYTHON3 BUILD_DIR FABRICSIM
set -euo pipefail
python=$1 build=$2 cli=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -f "$build/python/fabricsim/__init__.py" ] || { echo "Python module not built: skipped"; exit 77; }
"$python" -c "import pytest" 2>/dev/null || { echo "pytest missing: skipped"; exit 77; }
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" FABRICSIM_CLI=$cli
export PYTHONDONTWRITEBYTECODE=1
exec "$python" -m pytest -q -p no:cacheprovider "$here"
