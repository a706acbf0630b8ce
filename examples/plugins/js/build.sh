#!/usr/bin/env bash
# Builds the `spread-label` policy (spread-label.js) into
# OUT_DIR/spread-label.wasm with componentize-js (SpiderMonkey) or, with
# JS_ENGINE=quickjs, componentize-qjs (QuickJS): a component of the world
# tephra:scheduler/plugin@0.7.0 plus the extension points the policy
# implements (the methods it overrides; `node world.js` of the SDK prints it).
#
#   ./build.sh OUT_DIR
#
# Idempotent: node_modules (gitignored) is installed from the committed
# package-lock.json with `npm ci` only when missing or when the lock changed.
# The component itself is rebuilt on every run (SpiderMonkey ~10-25 s,
# QuickJS ~2 s).
#
# componentize-js is called directly, not through `jco componentize`, whose
# WASI shim starts without filesystem preopens and fails with "failed to get
# path metadata (os error 44)". `--aot` is not used: it needs a download.
#
# Environment:
#   PLUGIN_WASI=none (default)  componentize-js features stdio, random,
#                               clocks, http and fetch-event disabled: the
#                               component imports only tephra:scheduler/host.
#                               console.log output is dropped; log with
#                               host.log and take the time from snapshot.nowMs.
#   PLUGIN_WASI=full            only http and fetch-event disabled: the
#                               component imports WASI p2 stdio, clocks,
#                               random and filesystem (never wasi:http).
#   JS_ENGINE=spidermonkey (default)  componentize-js 0.23: ~12 MB component.
#   JS_ENGINE=quickjs                 componentize-qjs 0.4.5 (--sync, WASI
#                                     stubbed whatever PLUGIN_WASI says):
#                                     ~1.7 MB, compiles and instantiates ~10x
#                                     faster; exports an extra `init` function.
set -euo pipefail

NAME=spread-label

die() { echo "build.sh ($NAME): error: $*" >&2; exit 1; }
say() { echo "build.sh ($NAME): $*" >&2; }

[ $# -eq 1 ] || die "usage: $0 OUT_DIR"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WIT_DIR=$(cd "$HERE/../../../wit" 2>/dev/null && pwd) || die "no wit/ directory at $HERE/../../../wit"
[ -f "$WIT_DIR/scheduler.wit" ] || die "$WIT_DIR/scheduler.wit not found"
SDK_DIR=$(cd "$HERE/../../../sdk/js" 2>/dev/null && pwd) || die "no JavaScript SDK at $HERE/../../../sdk/js"
for f in tephra-sdk.js contract.js; do
  [ -f "$SDK_DIR/$f" ] || die "$SDK_DIR/$f not found"
done
mkdir -p "$1" || die "cannot create output directory $1"
OUT_DIR=$(cd "$1" && pwd)
OUT=$OUT_DIR/$NAME.wasm

case "${PLUGIN_WASI:-none}" in
  none) DISABLE=(stdio random clocks http fetch-event) ;;
  full) DISABLE=(http fetch-event) ;;
  *) die "PLUGIN_WASI must be 'none' or 'full', not '${PLUGIN_WASI}'" ;;
esac
ENGINE=${JS_ENGINE:-spidermonkey}
case "$ENGINE" in
  spidermonkey | quickjs) ;;
  *) die "JS_ENGINE must be 'spidermonkey' or 'quickjs', not '$ENGINE'" ;;
esac

command -v node >/dev/null || die "node not found: install Node.js >= 18"
command -v npm >/dev/null || die "npm not found"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
[ "$NODE_MAJOR" -ge 18 ] || die "Node.js $(node --version) is too old: need >= 18"

# 1. Pinned tools from the committed lock file.
cd "$HERE"
[ -f package-lock.json ] || die "package-lock.json is missing (create it once with 'npm install' and commit it)"
# npm ci with an empty cache refuses a lock entry without a version ("Invalid
# Version:"), which a warm cache hides: catch it here, on every machine.
UNVERSIONED=$(node -e '
  const p = require("./package-lock.json").packages || {};
  const bad = Object.keys(p).filter((k) => k && !p[k].link && !p[k].version);
  if (bad.length) console.log(bad.length + " entries, e.g. " + bad[0]);') ||
  die "package-lock.json is not valid JSON"
[ -z "$UNVERSIONED" ] ||
  die "package-lock.json lists packages without a version ($UNVERSIONED): regenerate it with 'rm package-lock.json && npm install --ignore-scripts'"
LOCK_SUM=$(sha256sum package-lock.json | cut -d' ' -f1)
STAMP=node_modules/.tephra-lock-sha256
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$LOCK_SUM" ]; then
  say "installing the pinned tools (npm ci)"
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error ||
    die "npm ci failed (is the npm registry reachable? is package-lock.json in sync with package.json?)"
  echo "$LOCK_SUM" >"$STAMP"
fi
CJS=node_modules/@bytecodealliance/componentize-js/src/cli.js
QJS=node_modules/componentize-qjs/bin/componentize-qjs
JCO=node_modules/@bytecodealliance/jco/dist/jco.js
for f in "$CJS" "$QJS" "$JCO"; do
  [ -f "$f" ] || die "$f missing: remove node_modules and run again"
done

# 2. The world and the sources: the policy, with its SDK import pointed at a
# copy beside it, and a WIT directory of the world and the contract.
BUILD=$OUT_DIR/.$NAME.build
rm -rf "$BUILD"
mkdir -p "$BUILD/wit/deps/tephra-scheduler"
node "$SDK_DIR/world.js" "$HERE/$NAME.js" >"$BUILD/wit/world.wit" || die "$NAME.js does not load under Node (see above)"
cp "$WIT_DIR/scheduler.wit" "$BUILD/wit/deps/tephra-scheduler/"
cp "$SDK_DIR/tephra-sdk.js" "$SDK_DIR/contract.js" "$BUILD/"
sed -E "s#from '[^']*tephra-sdk\.js'#from './tephra-sdk.js'#" "$HERE/$NAME.js" >"$BUILD/$NAME.js"

# 3. The component (written next to OUT and renamed: never a half-written file).
TMP=$OUT_DIR/.$NAME.wasm.tmp
trap 'rm -f "$TMP"' EXIT
START=$(date +%s%N)
if [ "$ENGINE" = spidermonkey ]; then
  say "building $OUT with componentize-js (WASI: ${PLUGIN_WASI:-none})"
  (cd "$BUILD" && node "$HERE/$CJS" "$NAME.js" --wit wit --world-name plugin --disable "${DISABLE[@]}" --out "$TMP") ||
    die "componentize-js failed (see above)"
else
  say "building $OUT with componentize-qjs (WASI: stubbed)"
  (cd "$BUILD" && node "$HERE/$QJS" --wit wit --world plugin --js "$NAME.js" --sync --stub-wasi --output "$TMP" >/dev/null) ||
    die "componentize-qjs failed (see above)"
fi

# 4. Never ship a component that asks the host for wasi:http.
WIT=$(node "$HERE/$JCO" wit "$TMP" 2>/dev/null) || die "jco wit could not read the component"
if grep -q 'import wasi:http' <<<"$WIT"; then
  die "the component imports wasi:http: $(grep 'import wasi:http' <<<"$WIT" | tr -s ' \n' ' ')"
fi
mv -f "$TMP" "$OUT"
MS=$((($(date +%s%N) - START) / 1000000))
say "wrote $OUT ($(stat -c %s "$OUT") bytes) in $((MS / 1000)).$((MS % 1000 / 100)) s"
say "imports: $(grep -o 'import [^;]*' <<<"$WIT" | cut -d' ' -f2 | tr '\n' ' ')"
