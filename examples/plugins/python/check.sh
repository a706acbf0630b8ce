#!/usr/bin/env bash
# Checks policy components against the contract by loading them with
# wasmtime 50 from PyPI (the engine version the tephra host links), no cargo:
#
#   ./check.sh [--wasi full|traps] FILE.wasm...
#
# See check.py for what is checked. Installs wasmtime==50.0.1 into .venv (the
# same gitignored virtualenv build.sh uses) only when missing.
set -euo pipefail

WASMTIME_PY_VERSION=50.0.1

die() { echo "check.sh: error: $*" >&2; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VENV=$HERE/.venv
PY=${PYTHON:-python3}
[ $# -ge 1 ] || die "usage: $0 [--wasi full|traps] FILE.wasm..."
if ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  command -v "$PY" >/dev/null || die "'$PY' not found: install Python >= 3.9 or set PYTHON"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "'$PY -m venv' failed"
fi
if [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("wasmtime"))' 2>/dev/null || true)" != "$WASMTIME_PY_VERSION" ]; then
  echo "check.sh: installing wasmtime==$WASMTIME_PY_VERSION into $VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "wasmtime==$WASMTIME_PY_VERSION" ||
    die "pip could not install wasmtime==$WASMTIME_PY_VERSION"
fi
exec "$VENV/bin/python" "$HERE/check.py" "$@"
