#!/usr/bin/env bash
# Instructions executed by allocate, Wasm plugins against the same plugins
# built natively, counted by callgrind: unlike wall-clock time, the count does
# not move with the machine's load, so a 5 % change is visible in one run.
# Callgrind also simulates the caches (the geometry of the AMD EPYC these
# machines run on, fixed so the figures do not depend on where this runs) and
# the branch predictor, and the script weighs the misses into modelled cycles:
# what instruction counts miss, such as eight plugins' code evicting each
# other from the instruction cache, shows there.
#   host/benches/instructions.sh [1k|5k|10k]     (default 1k: ~1.5 min once built, ~5 min after the
#   plugins changed, as Cranelift then compiles them under valgrind; 5k ~5 min)
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
        --cache-sim=yes --branch-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64 \
        --toggle-collect='tephra_actions::allocate::execute*' "$bin" >"$out/$1.log" 2>&1) || {
        echo "instructions.sh: the $1 run failed; its output:" >&2
        tail -20 "$out/$1.log" >&2
        exit 1
    }
    local n
    n=$(sed -n 's/.*Collected : \([0-9 ]*\).*/\1/p' "$out/$1.log")
    if [ -z "$n" ] || [ "${n%% *}" = 0 ]; then
        echo "instructions.sh: callgrind counted nothing in allocate for $1 (was the function renamed?)" >&2
        exit 1
    fi
    echo "$n"
}
wasm=$(count wasm)
native=$(count native)
python3 - "$workload" "$wasm" "$native" <<'PY'
import sys
# Callgrind's events, in the order of its "Collected" line with cache and branch simulation.
names = "Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim".split()
w = sys.argv[1]
wasm, native = (dict(zip(names, map(int, a.split()))) for a in sys.argv[2:4])
def cycles(e):
    # Latencies of the EPYC (Zen 4) these machines run on: a first-level miss
    # served by L2 ~14 cycles, a last-level miss ~100 (rare here), a
    # mispredicted branch ~18. A model: it ranks builds, it is not a clock.
    return (e["Ir"] + 14 * (e["I1mr"] + e["D1mr"] + e["D1mw"])
            + 100 * (e["ILmr"] + e["DLmr"] + e["DLmw"]) + 18 * (e["Bcm"] + e["Bim"]))
for side, e in (("Wasm", wasm), ("native", native)):
    print(f"{w} {side}: {e['Ir'] / 1e9:.3f} G instructions, first-level misses {e['I1mr'] / 1e6:.1f} M code "
          f"and {(e['D1mr'] + e['D1mw']) / 1e6:.1f} M data, {(e['Bcm'] + e['Bim']) / 1e6:.1f} M mispredicted "
          f"branches: {cycles(e) / 1e9:.3f} G modelled cycles")
print(f"{w}: allocate executed {wasm['Ir'] / 1e9:.3f} G instructions with Wasm plugins, "
      f"{native['Ir'] / 1e9:.3f} G natively: Wasm / native {wasm['Ir'] / native['Ir']:.2f} by instructions, "
      f"{cycles(wasm) / cycles(native):.2f} by modelled cycles")
PY
