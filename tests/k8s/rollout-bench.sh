#!/usr/bin/env bash
# How long a Plugin object takes to reach a cycle: from `kubectl apply` of
# an object naming a new digest to the first cycle that runs the version
# (tephra logs "swapped plugin … " in the step whose cycle uses it), on a
# fresh API server, distribution's registry on loopback and `tephra run`
# with an empty compile cache. Cold: a digest never pulled or compiled;
# warm: one pulled and compiled before (both disk caches hit).
#   tests/k8s/rollout-bench.sh [ROUNDS]      (release build: cargo build --release -p tephra)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-3}"
TARGET="${CARGO_TARGET_DIR:-target}"
TEPHRA="${TEPHRA:-$TARGET/release/tephra}"
[[ -x "$TEPHRA" ]] || { echo "rollout-bench: build $TEPHRA first (cargo build --release -p tephra)" >&2; exit 1; }
FIX="$TARGET/plugins/fixtures/swap"
[[ -f "$FIX/prefer-first.wasm" ]] || { echo "rollout-bench: no fixtures in $FIX (cargo build -p tephra builds them)" >&2; exit 1; }
BIN="$(tests/k8s/env.sh bindir)"
DIR="$(mktemp -d /tmp/tephra-rollout-bench.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    tests/k8s/env.sh stop "$DIR" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
KC="$(tests/k8s/env.sh start "$DIR" 2>/dev/null)"
k() { "$BIN/kubectl" --kubeconfig "$KC" "$@"; }
k apply -f deploy/00-namespace.yaml -f deploy/10-crds.yaml -f deploy/20-rbac.yaml >/dev/null
k wait --for=condition=Established crd/plugins.tephra.io >/dev/null
for n in rack-a rack-b; do
    echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$n\"}}" | k create -f - >/dev/null
    k patch node "$n" --subresource=status --type=merge -p '{"status":{"allocatable":{"cpu":"64","memory":"64Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"bench"}]}}' >/dev/null
done
printf 'version: 0.1\nlog: {level: info}\nstorage: {inmemory: {}}\nhttp: {addr: 127.0.0.1:0, secret: bench}\n' > "$DIR/registry.yml"
"$BIN/registry" serve "$DIR/registry.yml" > "$DIR/registry.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q "listening on" "$DIR/registry.log" && break; sleep 0.1; done
REG="$(grep -o 'listening on [0-9.:]*' "$DIR/registry.log" | head -1 | cut -d' ' -f3)"
push() { "$TEPHRA" plugin push "$1" "$REG/bench/prefer:$2" --insecure | tail -1; }
FIRST="$(push "$FIX/prefer-first.wasm" first)"
LAST="$(push "$FIX/prefer-last.wasm" last)"
printf 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: predicates\n  - name: prefer\n' > "$DIR/conf"
sed 's/^    token:/    as: system:serviceaccount:tephra-system:tephra\n    token:/' "$KC" > "$DIR/kubeconfig-sa"
TEPHRA_CACHE_DIR="$DIR/cache" RUST_LOG=tephra=info,warn "$TEPHRA" run --kubeconfig "$DIR/kubeconfig-sa" \
    --config "$DIR/conf" --plugin "$FIX/prefer-first.wasm" --period 100ms > "$DIR/tephra.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q "caches synced" "$DIR/tephra.log" && break; sleep 0.1; done
# One apply, timed to the log line of the swap that follows it.
measure() {
    local ref="$1" before t0 line t1
    before="$(grep -c "swapped plugin prefer" "$DIR/tephra.log" || true)"
    t0="$(date +%s.%N)"
    printf 'apiVersion: tephra.io/v1alpha1\nkind: Plugin\nmetadata: {name: prefer}\nspec: {plugin: prefer, source: {oci: {reference: "%s", insecure: true}}}\n' "$ref" | k apply -f - >/dev/null
    for _ in $(seq 600); do
        (( $(grep -c "swapped plugin prefer" "$DIR/tephra.log" || true) > before )) && break
        sleep 0.02
    done
    line="$(grep "swapped plugin prefer" "$DIR/tephra.log" | tail -1)"
    t1="$(date -d "$(cut -d' ' -f1 <<<"$line")" +%s.%N)"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
echo "| case | apply → first cycle with the version (s) |"
echo "|---|---|"
echo "| cold: a digest never pulled or compiled | $(measure "$LAST") |"
echo "| pulled now, compiled before (the version loaded at start) | $(measure "$FIRST") |"
for i in $(seq "$ROUNDS"); do
    echo "| warm, round $i: pulled and compiled before (both disk caches hit) | $(measure "$LAST") |"
    echo "| warm, round $i: the other version, likewise | $(measure "$FIRST") |"
done
