#!/usr/bin/env bash
# tephra vs Volcano's own scheduler (vc-scheduler, built by volcano/build.sh)
# on the same real kube-apiserver + etcd (env.sh) and the same workload: wall
# time from the scheduler's start until every pod has spec.nodeName.
#
#   tests/k8s/bench-vs-volcano.sh [NODES [PODS [GANG]]]     default 100 1000 10
#
# Each scheduler gets a fresh API server (env.sh start in its own directory),
# Volcano's CRDs (config/crd/volcano/bases of the built release, for both),
# NODES Ready nodes (16 cpu, 64Gi, 110 pods; created with their status: there
# is no kubelet), one Queue `bench`, PODS/GANG PodGroups (minMember GANG,
# minResources = the sum of the members' requests) and PODS pending pods (1 cpu,
# 1Gi, schedulerName volcano, annotation scheduling.k8s.io/group-name). All
# objects exist before the scheduler starts; the clock starts when the
# scheduler process is started (so it includes its initial list/watch) and
# stops at the first poll (every POLL seconds) that finds no pod without
# spec.nodeName. Both get the same volcano-scheduler.conf (below), a 1 s
# period and their own defaults otherwise. Also printed: the time of the first
# bind seen, and the scheduler's CPU time and peak RSS (from /proc) at the end.
#
# Settings (environment):
#   TEPHRA      tephra binary (default target/release/tephra)
#   VC_SCHEDULER  vc-scheduler binary (default: tests/k8s/volcano/build.sh builds or finds it)
#   ORDER       "tephra volcano" (default) or any order/repetition of the two, e.g.
#               "tephra volcano volcano tephra tephra volcano": each name is one
#               run on a fresh API server; medians and their ratio are printed
#   POLL        seconds between polls (default 0.2)
#   TIMEOUT     seconds to wait for all pods to be bound (default 600)
#   VC_V        vc-scheduler log verbosity (default 1)
#   KEEP        1 keeps the run directories (logs) instead of deleting them
#   TEPHRA_ARGS extra arguments for `tephra run` (e.g. "--bind-concurrency 64")
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
NODES="${1:-100}"
PODS="${2:-1000}"
GANG="${3:-10}"
((PODS % GANG == 0)) || { echo "PODS ($PODS) must be a multiple of GANG ($GANG)" >&2; exit 2; }
JOBS=$((PODS / GANG))
TEPHRA="${TEPHRA:-${CARGO_TARGET_DIR:-target}/release/tephra}"
ORDER="${ORDER:-tephra volcano}"
POLL="${POLL:-0.2}"
TIMEOUT="${TIMEOUT:-600}"

[[ -x "$TEPHRA" ]] || { echo "no $TEPHRA; build it: cargo build --release -p tephra" >&2; exit 1; }
tests/k8s/env.sh install 2>/dev/null
VC_SCHEDULER="${VC_SCHEDULER:-$(tests/k8s/volcano/build.sh)}"
VC_SRC="$(dirname "$(dirname "$VC_SCHEDULER")")/src"
CRDS="$VC_SRC/config/crd/volcano/bases"
[[ -d "$CRDS" ]] || { echo "no Volcano CRDs in $CRDS" >&2; exit 1; }
KUBECTL="$(tests/k8s/env.sh bindir)/kubectl"

WORK="$(mktemp -d /tmp/tephra-vs-volcano.XXXXXX)"
DIR=""
SPID=""
cleanup() {
    if [[ -n "$SPID" ]]; then
        kill -TERM "$SPID" 2>/dev/null || true
        wait "$SPID" 2>/dev/null || true
    fi
    for d in "$WORK"/runs/*/; do
        [[ -d "$d" ]] && tests/k8s/env.sh stop "$d" 2>/dev/null || true
    done
    if [[ "${KEEP:-0}" == 1 ]]; then echo "logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# The same scheduler configuration for both (Volcano's format).
# In a directory of its own: vc-scheduler watches the file's directory with
# fsnotify and reloads its configuration on every event there (a directory
# with logs being written would keep it reloading all the time).
mkdir -p "$WORK/conf"
cat > "$WORK/conf/scheduler.conf" <<'EOF'
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
EOF

# The workload, one file of NODES + 1 + JOBS + PODS objects.
gen_workload() {
    local n j t
    for ((n = 0; n < NODES; n++)); do
        cat <<EOF
---
apiVersion: v1
kind: Node
metadata: {name: node-$n, labels: {kubernetes.io/hostname: node-$n, kubernetes.io/os: linux}}
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, message: bench}]
EOF
    done
    cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: bench}
spec: {weight: 1, reclaimable: true}
EOF
    for ((j = 0; j < JOBS; j++)); do
        cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: job-$j, namespace: bench}
spec: {minMember: $GANG, queue: bench, minResources: {cpu: "$GANG", memory: ${GANG}Gi}}
EOF
        for ((t = 0; t < GANG; t++)); do
            cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: job-$j-$t, namespace: bench, annotations: {scheduling.k8s.io/group-name: job-$j}}
spec:
  schedulerName: volcano
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
EOF
        done
    done
}
gen_workload > "$WORK/workload.yaml"

now() { date +%s.%N; }
# CPU seconds (user + system) of a process.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
peak_rss_mb() {
    awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"
}

declare -A RESULT
run_one() {
    local which="$1" kc t0 t1 first="" unbound port1 port2 k
    DIR="$WORK/runs/$which.$RANDOM"
    mkdir -p "$DIR"
    kc="$(tests/k8s/env.sh start "$DIR" 2>"$DIR/env.log")"
    k() { "$KUBECTL" --kubeconfig "$kc" "$@"; }
    k create -f "$CRDS" >/dev/null
    # (a CRD created a moment ago may have no status.conditions yet, which
    # makes kubectl wait fail instead of waiting: try again)
    local i
    for ((i = 0; i < 50; i++)); do
        k wait --for=condition=Established crd --all --timeout 30s >/dev/null 2>&1 && break
        sleep 0.2
    done
    ((i < 50)) || { echo "[$which] CRDs not established" >&2; exit 1; }
    k create namespace bench >/dev/null
    echo "[$which] creating $NODES nodes, $JOBS podgroups, $PODS pods" >&2
    k create -f "$WORK/workload.yaml" >/dev/null
    # What Volcano's queue controller (not running here) does first: a new
    # Queue is Open. vc-scheduler's proportion plugin rejects jobs of a Queue
    # whose status.state is not Open; tephra would set it itself.
    k patch queue bench --subresource=status --type=merge -p '{"status":{"state":"Open"}}' >/dev/null
    [[ "$(k get pods -n bench --field-selector spec.nodeName= -o name | wc -l)" == "$PODS" ]] \
        || { echo "[$which] workload not created as expected" >&2; exit 1; }

    case "$which" in
        tephra)
            t0="$(now)"
            # shellcheck disable=SC2086 # TEPHRA_ARGS: words on purpose
            "$TEPHRA" run --kubeconfig "$kc" --config "$WORK/conf/scheduler.conf" --period 1s ${TEPHRA_ARGS:-} \
                > "$DIR/scheduler.log" 2>&1 &
            SPID=$!
            ;;
        volcano)
            port1="$(shuf -i 20000-32000 -n 1)"; port2=$((port1 + 1))
            t0="$(now)"
            "$VC_SCHEDULER" --kubeconfig "$kc" --scheduler-conf "$WORK/conf/scheduler.conf" \
                --schedule-period 1s --leader-elect=false --cache-dumper=false \
                --listen-address "127.0.0.1:$port1" --healthz-address "127.0.0.1:$port2" \
                -v "${VC_V:-1}" > "$DIR/scheduler.log" 2>&1 &
            SPID=$!
            ;;
        *) echo "unknown scheduler $which" >&2; exit 2 ;;
    esac

    while :; do
        unbound="$(k get pods -n bench --field-selector spec.nodeName= -o name | wc -l)"
        t1="$(now)"
        [[ -z "$first" && "$unbound" -lt "$PODS" ]] && first="$(echo "$t1 - $t0" | bc)"
        ((unbound == 0)) && break
        if ! kill -0 "$SPID" 2>/dev/null; then
            echo "[$which] scheduler exited; last lines of its log:" >&2
            tail -n 30 "$DIR/scheduler.log" >&2
            exit 1
        fi
        if (($(echo "$t1 - $t0 > $TIMEOUT" | bc))); then
            echo "[$which] $unbound of $PODS pods still unbound after ${TIMEOUT}s; last lines of its log:" >&2
            tail -n 30 "$DIR/scheduler.log" >&2
            exit 1
        fi
        sleep "$POLL"
    done
    local total cpu rss
    total="$(echo "$t1 - $t0" | bc)"
    cpu="$(cpu_seconds "$SPID")"
    rss="$(peak_rss_mb "$SPID")"
    kill -TERM "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    SPID=""
    # Every pod bound exactly once, to an existing node.
    local bad
    bad="$(k get pods -n bench -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' \
        | grep -cv '^node-[0-9]*$' || true)"
    ((bad == 0)) || { echo "[$which] $bad pods bound to something else" >&2; exit 1; }
    printf '[%s] all %d pods bound in %.2f s (first bind seen at %.2f s; scheduler cpu %s s, peak RSS %s MB)\n' \
        "$which" "$PODS" "$total" "$first" "$cpu" "$rss"
    RESULT[$which]+="$total "
    tests/k8s/env.sh stop "$DIR" 2>/dev/null
}

echo "workload: $NODES nodes, $JOBS PodGroups of $GANG, $PODS pods; kube-apiserver $("$(tests/k8s/env.sh bindir)/kube-apiserver" --version | awk '{print $2}') + etcd on loopback; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tephra: $TEPHRA ($("$TEPHRA" --version 2>/dev/null || echo '?'))"
echo "volcano: $VC_SCHEDULER ($("$VC_SCHEDULER" --version 2>/dev/null | awk '/Version|Git/ {printf "%s ", $0}'))"
for which in $ORDER; do
    run_one "$which"
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A MED
for which in "${!RESULT[@]}"; do
    MED[$which]="$(echo "${RESULT[$which]}" | median)"
    printf '%s: median %.2f s of %s run(s): %s\n' "$which" "${MED[$which]}" "$(echo "${RESULT[$which]}" | wc -w)" "${RESULT[$which]% }"
done
if [[ -n "${MED[tephra]:-}" && -n "${MED[volcano]:-}" ]]; then
    printf 'volcano / tephra (medians) = %.2f\n' "$(echo "${MED[volcano]} / ${MED[tephra]}" | bc -l)"
fi
