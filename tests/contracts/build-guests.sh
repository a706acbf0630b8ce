#!/usr/bin/env bash
# Builds the Python and JavaScript example policies as they were for
# contract 0.4.0 (frozen sources under tests/contracts/0.4.0/, the WIT under
# wit/deps/scheduler-0.4.0) into OUT_DIR/{fair-team,spread-label}-0.4.0.wasm,
# with the pinned tools the examples' own build scripts installed (run
# those first). host/tests/guests.rs loads them beside the current builds.
#
#   tests/contracts/build-guests.sh OUT_DIR
set -euo pipefail

die() { echo "build-guests.sh: error: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 OUT_DIR"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$1" || die "cannot create $1"
OUT=$(cd "$1" && pwd)
WIT=$ROOT/wit/deps/scheduler-0.4.0
SRC=$ROOT/tests/contracts/0.4.0
CPY=$ROOT/examples/plugins/python/.venv/bin/componentize-py
CJS=$ROOT/examples/plugins/js/node_modules/@bytecodealliance/componentize-js/src/cli.js
[ -x "$CPY" ] || die "$CPY missing: run examples/plugins/python/build.sh first"
[ -f "$CJS" ] || die "$CJS missing: run examples/plugins/js/build.sh first"

"$CPY" --quiet -d "$WIT/scheduler.wit" -w plugin componentize --stub-wasi -p "$SRC/python" app \
  -o "$OUT/.fair-team-0.4.0.wasm" || die "componentize-py failed"
mv -f "$OUT/.fair-team-0.4.0.wasm" "$OUT/fair-team-0.4.0.wasm"
(cd "$SRC/js" && node "$CJS" spread-label.js --wit "$WIT" --world-name plugin \
  --disable stdio random clocks http fetch-event --out "$OUT/.spread-label-0.4.0.wasm" >/dev/null) ||
  die "componentize-js failed"
mv -f "$OUT/.spread-label-0.4.0.wasm" "$OUT/spread-label-0.4.0.wasm"
echo "build-guests.sh: wrote $OUT/fair-team-0.4.0.wasm and $OUT/spread-label-0.4.0.wasm" >&2
