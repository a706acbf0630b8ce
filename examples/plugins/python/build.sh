#!/usr/bin/env bash
# Builds the `fair-team` policy (app.py) into OUT_DIR/fair-team.wasm with
# componentize-py: a component of the world tephra:scheduler/plugin@0.7.0
# plus the extension points the policy implements (the methods it overrides;
# `python -m tephra_sdk world app` prints that world).
#
#   ./build.sh OUT_DIR
#
# Idempotent: the virtualenv (.venv, gitignored) is created and
# componentize-py installed into it only when missing or at another version;
# bindings for editors (bindings/, gitignored) are regenerated only when the
# world changed. The component itself is rebuilt on every run (~10-15 s).
#
# Environment:
#   PLUGIN_WASI=none (default)  WASI imports replaced by trapping stubs
#                               (componentize-py --stub-wasi): the component
#                               imports only tephra:scheduler/host. print(),
#                               time.time() and the like trap; log with
#                               host.log and take the time from snapshot.now_ms.
#   PLUGIN_WASI=full            keep the WASI p2 imports (stdout, clocks,
#                               random, filesystem, sockets...), for debugging.
#   PYTHON=python3              the interpreter that creates the virtualenv.
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1
NAME=fair-team

die() { echo "build.sh ($NAME): error: $*" >&2; exit 1; }
say() { echo "build.sh ($NAME): $*" >&2; }

[ $# -eq 1 ] || die "usage: $0 OUT_DIR"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WIT_DIR=$(cd "$HERE/../../../wit" 2>/dev/null && pwd) || die "no wit/ directory at $HERE/../../../wit"
[ -f "$WIT_DIR/scheduler.wit" ] || die "$WIT_DIR/scheduler.wit not found"
SDK_DIR=$(cd "$HERE/../../../sdk/python" 2>/dev/null && pwd) || die "no Python SDK at $HERE/../../../sdk/python"
[ -f "$SDK_DIR/tephra_sdk/__init__.py" ] || die "$SDK_DIR/tephra_sdk not found"
mkdir -p "$1" || die "cannot create output directory $1"
OUT_DIR=$(cd "$1" && pwd)
OUT=$OUT_DIR/$NAME.wasm

case "${PLUGIN_WASI:-none}" in
  none) STUB=(--stub-wasi) ;;
  full) STUB=() ;;
  *) die "PLUGIN_WASI must be 'none' or 'full', not '${PLUGIN_WASI}'" ;;
esac

# 1. The virtualenv.
VENV=$HERE/.venv
PY=${PYTHON:-python3}
if ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  command -v "$PY" >/dev/null || die "'$PY' not found: install Python >= 3.9 or set PYTHON"
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
    die "$("$PY" --version 2>&1) is too old: componentize-py needs Python >= 3.9"
  say "creating virtualenv $VENV"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "'$PY -m venv' failed (on Debian: apt-get install python3-venv)"
fi

# 2. componentize-py, pinned.
CPY=$VENV/bin/componentize-py
if [ "$("$CPY" --version 2>/dev/null || true)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]; then
  say "installing componentize-py==$COMPONENTIZE_PY_VERSION into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "componentize-py==$COMPONENTIZE_PY_VERSION" ||
    die "pip could not install componentize-py==$COMPONENTIZE_PY_VERSION (is PyPI reachable?)"
  [ "$("$CPY" --version 2>/dev/null || true)" = "componentize-py $COMPONENTIZE_PY_VERSION" ] ||
    die "componentize-py $COMPONENTIZE_PY_VERSION did not install as expected"
fi

# 3. The world: the base plugin world and the points the policy implements.
BUILD=$OUT_DIR/.$NAME.build
mkdir -p "$BUILD"
(cd "$HERE" && PYTHONPATH="$HERE:$SDK_DIR" "$VENV/bin/python" -m tephra_sdk world app >"$BUILD/world.wit") ||
  die "app.py does not load under plain Python (see above)"
WIT_ARGS=(-d "$WIT_DIR/scheduler.wit" -d "$BUILD/world.wit" -w local:plugin/plugin)

# Bindings for editors and type checkers (componentize generates its own).
BINDINGS=$HERE/bindings
STAMP=$BINDINGS/.wit-sha256
WIT_SUM="$(cat "$WIT_DIR/scheduler.wit" "$BUILD/world.wit" | sha256sum | cut -d' ' -f1) $COMPONENTIZE_PY_VERSION"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$WIT_SUM" ]; then
  say "generating bindings in $BINDINGS"
  rm -rf "$BINDINGS"
  "$CPY" "${WIT_ARGS[@]}" bindings "$BINDINGS" || die "binding generation failed"
  echo "$WIT_SUM" >"$STAMP"
fi

# 4. The component (written next to OUT and renamed: never a half-written file).
say "building $OUT (WASI: ${PLUGIN_WASI:-none})"
TMP=$OUT_DIR/.$NAME.wasm.tmp
trap 'rm -f "$TMP"' EXIT
START=$(date +%s%N)
(cd "$HERE" && "$CPY" --quiet "${WIT_ARGS[@]}" componentize ${STUB[@]+"${STUB[@]}"} -p "$HERE" -p "$SDK_DIR" app -o "$TMP") ||
  die "componentize-py failed (see above)"
mv -f "$TMP" "$OUT"
MS=$((($(date +%s%N) - START) / 1000000))
say "wrote $OUT ($(stat -c %s "$OUT") bytes) in $((MS / 1000)).$((MS % 1000 / 100)) s"
