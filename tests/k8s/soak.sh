#!/usr/bin/env bash
# A soak of `tephra run` on the whole cluster (env.sh with TEPHRA_K8S_CONTROLLERS=1):
# an hour of churn compressed — batch/v1 Jobs arriving at a steady rate and finishing
# (cmd/churn: pods of DURATION each, Jobs removed by the TTL controller), PODS in all —
# while the `prefer` plugin is hot-swapped every SWAP seconds (two versions, dropped into
# the watched directory in turn). At the end, counted from the API server's records and
# tephra's own: RSS after warm-up against the end, cycle lengths (median, max), double
# binds (the audit log of every pods/binding), pods that never ran, failed cycles.
#
#   tests/k8s/soak.sh [NODES [PODS [RATE]]]     default 1000 200000 250
#
# Settings: TEPHRA (default target/release/tephra), DURATION (pods' run time, 20s),
# SWAP (seconds between swaps, 60), KEEP=1 keeps the directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODES="${1:-1000}"
PODS="${2:-200000}"
RATE="${3:-250}"
DURATION="${DURATION:-20s}"
SWAP="${SWAP:-60}"
TEPHRA="${TEPHRA:-${CARGO_TARGET_DIR:-target}/release/tephra}"
[[ -x "$TEPHRA" ]] || { echo "soak.sh: no $TEPHRA; build it: cargo build --release -p tephra" >&2; exit 2; }
FIXTURES="${CARGO_TARGET_DIR:-target}/plugins/wasm32-wasip2/plugin"
[[ -f "$FIXTURES/plugin_prefer_first.wasm" ]] || { echo "soak.sh: build the fixtures first (cargo build -p tephra)" >&2; exit 2; }
tests/k8s/env.sh install 2>/dev/null
BIN="$(tests/k8s/env.sh bindir)"
tests/k8s/env.sh tool runwatch churn
DIR="$(mktemp -d /tmp/tephra-soak.XXXXXX)"
TPID=""
cleanup() {
    [[ -z "$TPID" ]] || kill -TERM "$TPID" 2>/dev/null || true
    tests/k8s/env.sh stop "$DIR" >/dev/null 2>&1 || true
    if [[ "${KEEP:-0}" == 1 ]]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
# Finished pods are collected past 20,000 (200,000 would fill etcd); the audit log
# records every bind.
KC="$(TEPHRA_K8S_CONTROLLERS=1 TEPHRA_K8S_AUDIT=1 TEPHRA_K8S_POD_GC=20000 tests/k8s/env.sh start "$DIR" 2>"$DIR/env.log")"
tests/k8s/env.sh nodes "$DIR" "$NODES" 2>>"$DIR/env.log"
k() { "$BIN/kubectl" --kubeconfig "$KC" "$@"; }
k apply -f deploy/00-namespace.yaml -f deploy/10-crds.yaml -f deploy/20-rbac.yaml >/dev/null
k create namespace soak >/dev/null
for ((i = 0; i < 300; i++)); do k get sa default -n soak >/dev/null 2>&1 && break; sleep 0.2; done
mkdir -p "$DIR/plugins"
cp "$FIXTURES/plugin_prefer_first.wasm" "$DIR/plugins/prefer.wasm"
cat > "$DIR/scheduler.conf" <<'EOF'
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: prefer
EOF
: > "$DIR/tephra.log"
RUST_LOG="tephra::cycles=debug,tephra=info,warn" "$TEPHRA" run --kubeconfig "$KC" --config "$DIR/scheduler.conf" \
    --plugins "$DIR/plugins" --watch --admin 127.0.0.1:0 > "$DIR/tephra.log" 2>&1 &
TPID=$!
for ((i = 0; i < 600; i++)); do grep -q "caches synced" "$DIR/tephra.log" && break; sleep 0.1; done
"$BIN/runwatch" --kubeconfig "$KC" --namespace soak --expect "$PODS" > "$DIR/clock.out" 2> "$DIR/clock.err" &
WPID=$!
for ((i = 0; i < 300; i++)); do grep -q ready "$DIR/clock.out" 2>/dev/null && break; sleep 0.1; done
echo "soak: $NODES nodes, $PODS pods at $RATE/s running $DURATION each, prefer swapped every ${SWAP}s" >&2
T0=$SECONDS
"$BIN/churn" --kubeconfig "$KC" --namespace soak --rate "$RATE" --total "$PODS" --duration "$DURATION" \
    > "$DIR/churn.out" 2>&1 &
CPID=$!
swaps=0 version=first
: > "$DIR/rss"
while kill -0 "$WPID" 2>/dev/null; do
    kill -0 "$TPID" 2>/dev/null || { echo "soak: tephra exited" >&2; tail -20 "$DIR/tephra.log" >&2; exit 1; }
    echo "$((SECONDS - T0)) $(awk '/^VmRSS:/ {print $2}' "/proc/$TPID/status")" >> "$DIR/rss"
    if (((SECONDS - T0) / SWAP > swaps)); then
        swaps=$((swaps + 1))
        version=$([[ $version == first ]] && echo last || echo first)
        cp "$FIXTURES/plugin_prefer_$version.wasm" "$DIR/plugins/prefer.wasm.tmp"
        mv "$DIR/plugins/prefer.wasm.tmp" "$DIR/plugins/prefer.wasm"
    fi
    sleep 5
done
wait "$CPID" || { echo "soak: churn failed:" >&2; cat "$DIR/churn.out" >&2; exit 1; }
ELAPSED=$((SECONDS - T0))
RAN="$(awk '/^last/ {print $4}' "$DIR/clock.out")"
# RSS: after warm-up (the first fifth of the run) against the last sample.
read -r WARM END <<< "$(awk '{ t[NR] = $1; r[NR] = $2 } END { w = int(NR / 5) + 1; print r[w], r[NR] }' "$DIR/rss")"
# Cycle lengths from tephra's own debug line.
CYCLES="$(grep -o 'took [0-9.]* ms' "$DIR/tephra.log" | awk '{print $2}' | sort -g)"
N="$(echo "$CYCLES" | grep -c .)"
MEDIAN="$(echo "$CYCLES" | awk -v n="$N" 'NR == int((n + 1) / 2) {print}')"
MAX="$(echo "$CYCLES" | tail -1)"
P99="$(echo "$CYCLES" | awk -v n="$N" 'NR == int(n * 0.99) {print}')"
SWAPPED="$(grep -c 'swapped plugin prefer' "$DIR/tephra.log" || true)"
FAULTS="$(grep -c 'plugin fault\|FAULT' "$DIR/tephra.log" || true)"
ERRORS="$(grep -c ' ERROR ' "$DIR/tephra.log" || true)"
# Double binds: a binding refused because the pod was bound elsewhere, or two applied.
DOUBLE="$(jq -r 'select(.stage == "ResponseComplete" and .objectRef.subresource == "binding")
    | [.objectRef.namespace + "/" + .objectRef.name, .responseStatus.code, (.responseStatus.message // "")] | @tsv' "$DIR/audit.log" \
    | awk -F'\t' '$2 < 300 { ok[$1]++ } $3 ~ /already assigned/ { bad++ } END { for (p in ok) if (ok[p] > 1) bad += ok[p] - 1; print bad + 0 }')"
BINDS="$(jq -r 'select(.stage == "ResponseComplete" and .objectRef.subresource == "binding" and .responseStatus.code < 300) | 1' "$DIR/audit.log" | wc -l)"
cat <<EOF
soak: $PODS pods made in ${ELAPSED}s ($(tail -1 "$DIR/churn.out")); $RAN ran (lost: $((PODS - RAN)))
soak: binds applied $BINDS, double binds $DOUBLE
soak: prefer swapped $SWAPPED times; plugin faults $FAULTS; ERROR lines $ERRORS
soak: cycles $N: median $MEDIAN ms, p99 $P99 ms, max $MAX ms (max/median $(echo "scale=2; $MAX / $MEDIAN" | bc))
soak: RSS after warm-up $((WARM / 1024)) MB, at the end $((END / 1024)) MB ($(echo "scale=1; 100 * ($END - $WARM) / $WARM" | bc) %)
EOF
