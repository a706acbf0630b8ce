#!/usr/bin/env bash
# Instructions executed by allocate, Wasm plugins against the same plugins
# built natively, counted by callgrind: unlike wall-clock time, the count does
# not move with the machine's load, so a 5 % change is visible in one run.
#   host/benches/instructions.sh [1k|5k|10k]     (default 1k: ~40 s once built; 5k ~3 min)
set -euo pipefail
cd "$(dirname "$0")/../.."
workload="${1:-1k}"
case "$workload" in 1k | 5k | 10k) ;; *)
    echo "instructions.sh: workload must be 1k, 5k or 10k, not '$workload'" >&2
    exit 2
    ;;
esac
if ! command -v valgrind >/dev/null; then
    apt-get update -qq && apt-get install -y -qq valgrind
fi
# The bench binary cargo builds (its name carries a hash); build errors show on stderr.
bin=$(cargo bench -p tephra --bench schedule --no-run --message-format=json |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "schedule":
        print(m["executable"])')
if [ -z "$bin" ]; then
    echo "instructions.sh: cargo did not report the schedule bench binary" >&2
    exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {
    # The bench resolves its paths from host/, as `cargo bench` runs it.
    (cd host && TEPHRA_BENCH_ONLY="$workload" TEPHRA_BENCH_PLUGINS="$1" TEPHRA_BENCH_ROUNDS=1 \
        valgrind --tool=callgrind --callgrind-out-file="$out/$1.cg" \
        --toggle-collect='tephra::actions::allocate::execute*' "$bin" >"$out/$1.log" 2>&1) || {
        echo "instructions.sh: the $1 run failed; its output:" >&2
        tail -20 "$out/$1.log" >&2
        exit 1
    }
    local n
    n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$1.log")
    if [ -z "$n" ] || [ "$n" = 0 ]; then
        echo "instructions.sh: callgrind counted nothing in allocate for $1 (was the function renamed?)" >&2
        exit 1
    fi
    echo "$n"
}
wasm=$(count wasm)
native=$(count native)
python3 - "$workload" "$wasm" "$native" <<'PY'
import sys
w, wasm, native = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print(f"{w}: allocate executed {wasm / 1e9:.3f} G instructions with Wasm plugins, "
      f"{native / 1e9:.3f} G natively: Wasm / native {wasm / native:.2f}")
PY
