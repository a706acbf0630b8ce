#!/usr/bin/env bash
# Schedulers side by side on the same real kube-apiserver + etcd (env.sh) and
# the same nodes: wall time from the scheduler's start until every pod has
# spec.nodeName, the first bind seen, the scheduler's CPU time and peak RSS.
#
#   tests/k8s/bench.sh [NODES [PODS [GANG]]]               default 100 1000 10
#   ORDER="tephra kube-scheduler kube-scheduler tephra" tests/k8s/bench.sh 500 5000
#
# Runners (ORDER names them; each name is one run on a fresh API server, so
# repeating names in an alternated order evens out the machine's drift):
#   tephra          plain pods (no PodGroups: tephra makes its own), `tephra run`
#                   with its built-in config
#   tephra-gang     pods in PodGroups of GANG (minMember GANG), `tephra run`
#                   with its built-in config
#   kube-scheduler  plain pods, kube-scheduler of the API server's release
#                   (built by env.sh install from the k8s.io/kubernetes module)
#                   with its default profile and client settings (50 QPS,
#                   burst 100: its binds wait on client-side throttling)
#   kube-scheduler-unthrottled
#                   the same with clientConnection qps/burst 5000
#   raw             plain pods bound by cmd/rawbind (tests/k8s/apiserver): no
#                   scheduling, one list, then pods/binding POSTs, 64 in
#                   flight: the rate this API server accepts bindings at
#   volcano         pods in PodGroups of GANG, Volcano's vc-scheduler; needs
#                   VC_SCHEDULER and VC_CRDS (below); this repository does not
#                   build it. Uses VOLCANO_CONF below, as does tephra-volcano
#   tephra-volcano  the volcano workload and config under `tephra run`
#
# Nodes: 16 cpu, 64Gi, 110 pods, Ready (created with their status: there is
# no kubelet). Pods: 1 cpu, 1Gi each. All objects exist before the scheduler
# starts; the clock starts when the scheduler process is started (so it
# includes its initial list/watch) and stops when cmd/bindwatch, watching the
# pods from before the start, sees the last one bound (one watch stream: the
# clock neither polls nor loads the API server). Medians per runner and every
# ratio against tephra's runners are printed at the end.
#
# Settings (environment):
#   TEPHRA        tephra binary (default target/release/tephra)
#   ORDER         default "tephra kube-scheduler kube-scheduler tephra"
#   VC_SCHEDULER  vc-scheduler binary (Volcano's cmd/scheduler, built from a
#                 Volcano release you obtained yourself; Volcano is not served
#                 as a Go module, and no recipe for it is kept here)
#   VC_CRDS       directory of that release's config/crd/volcano/bases
#   POLL          seconds between checks that the scheduler is alive (default 0.2)
#   TIMEOUT       seconds to wait for all pods to be bound (default 600)
#   KEEP          1 keeps the run directories (logs) instead of deleting them
#   TEPHRA_ARGS   extra arguments for `tephra run` (e.g. "--bind-concurrency 64")
#   KS_ARGS       extra arguments for kube-scheduler
set -euo pipefail
cd "$(dirname "$0")/../.."
NODES="${1:-100}"
PODS="${2:-1000}"
GANG="${3:-10}"
((PODS % GANG == 0)) || { echo "bench.sh: PODS ($PODS) must be a multiple of GANG ($GANG)" >&2; exit 2; }
JOBS=$((PODS / GANG))
TEPHRA="${TEPHRA:-${CARGO_TARGET_DIR:-target}/release/tephra}"
ORDER="${ORDER:-tephra kube-scheduler kube-scheduler tephra}"
POLL="${POLL:-0.2}"
TIMEOUT="${TIMEOUT:-600}"

die() { echo "bench.sh: $*" >&2; exit 2; }
for which in $ORDER; do
    case "$which" in
        tephra | tephra-gang | tephra-volcano)
            [[ -x "$TEPHRA" ]] || die "no $TEPHRA; build it: cargo build --release -p tephra" ;;
        kube-scheduler | kube-scheduler-unthrottled | raw) ;;
        volcano)
            [[ -n "${VC_SCHEDULER:-}" && -x "${VC_SCHEDULER}" ]] ||
                die "runner volcano: set VC_SCHEDULER to a vc-scheduler binary (now: '${VC_SCHEDULER:-}')"
            ls "${VC_CRDS:-/nonexistent}"/*.yaml >/dev/null 2>&1 ||
                die "runner volcano: set VC_CRDS to the release's config/crd/volcano/bases (now: '${VC_CRDS:-}')" ;;
        *) die "unknown runner '$which' (tephra, tephra-gang, tephra-volcano, kube-scheduler, kube-scheduler-unthrottled, raw, volcano)" ;;
    esac
done
tests/k8s/env.sh install 2>/dev/null
BIN="$(tests/k8s/env.sh bindir)"
KUBECTL="$BIN/kubectl"
# The clock (cmd/bindwatch) and the raw-binding client (cmd/rawbind).
tests/k8s/env.sh tool bindwatch rawbind

WORK="$(mktemp -d /tmp/tephra-bench.XXXXXX)"
SPID=""
WPID=""
cleanup() {
    if [[ -n "$WPID" ]]; then kill "$WPID" 2>/dev/null || true; fi
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

# Volcano's runner and tephra-volcano share this config (Volcano's format).
# In a directory of its own: vc-scheduler watches the file's directory with
# fsnotify and reloads on every event there.
mkdir -p "$WORK/conf"
cat > "$WORK/conf/volcano.conf" <<'EOF'
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

gen_nodes() {
    local n
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
}

# gen_pods SCHEDULER_NAME gang|plain
gen_pods() {
    local sched="$1" kind="$2" j t ann
    if [[ "$kind" == gang ]]; then
        cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: bench}
spec: {weight: 1, reclaimable: true}
EOF
    fi
    for ((j = 0; j < JOBS; j++)); do
        ann=""
        if [[ "$kind" == gang ]]; then
            cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: job-$j, namespace: bench}
spec: {minMember: $GANG, queue: bench, minResources: {cpu: "$GANG", memory: ${GANG}Gi}}
EOF
            ann=", annotations: {scheduling.k8s.io/group-name: job-$j}"
        fi
        for ((t = 0; t < GANG; t++)); do
            cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: job-$j-$t, namespace: bench$ann}
spec:
  schedulerName: $sched
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
EOF
        done
    done
}

gen_nodes > "$WORK/nodes.yaml"
gen_pods volcano plain > "$WORK/plain-volcano.yaml"
gen_pods default-scheduler plain > "$WORK/plain-default.yaml"
gen_pods volcano gang > "$WORK/gang-volcano.yaml"

now() { date +%s.%N; }
# CPU seconds (user + system) of a process.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
peak_rss_mb() {
    awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"
}

# A kube-scheduler config: its defaults, without leader election, the
# kubeconfig it reads, and its client's qps and burst (defaults 50 and 100).
ks_config() {
    cat <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$1", qps: ${2:-50}, burst: ${3:-100}}
leaderElection: {leaderElect: false}
EOF
}

declare -A RESULT
run_one() {
    local which="$1" dir kc t0 t1 first="" unbound port workload crds
    dir="$WORK/runs/$which.$RANDOM"
    mkdir -p "$dir"
    kc="$(tests/k8s/env.sh start "$dir" 2>"$dir/env.log")" || { cat "$dir/env.log" >&2; exit 1; }
    k() { "$KUBECTL" --kubeconfig "$kc" "$@"; }
    case "$which" in
        tephra) workload=plain-volcano; crds=deploy/10-crds.yaml ;;
        tephra-gang) workload=gang-volcano; crds=deploy/10-crds.yaml ;;
        tephra-volcano) workload=gang-volcano; crds="${VC_CRDS:-deploy/10-crds.yaml}" ;;
        kube-scheduler | kube-scheduler-unthrottled) workload=plain-default; crds="" ;;
        raw) workload=plain-volcano; crds="" ;;
        volcano) workload=gang-volcano; crds="$VC_CRDS" ;;
    esac
    if [[ -n "$crds" ]]; then
        k create -f "$crds" >/dev/null
        # (a CRD created a moment ago may have no status.conditions yet, which
        # makes kubectl wait fail instead of waiting: try again)
        local i
        for ((i = 0; i < 50; i++)); do
            k wait --for=condition=Established crd --all --timeout 30s >/dev/null 2>&1 && break
            sleep 0.2
        done
        ((i < 50)) || { echo "[$which] CRDs not established" >&2; exit 1; }
    fi
    k create namespace bench >/dev/null
    echo "[$which] creating $NODES nodes and $PODS pods ($workload)" >&2
    k create -f "$WORK/nodes.yaml" >/dev/null
    k create -f "$WORK/$workload.yaml" >/dev/null
    if [[ "$workload" == gang-* ]]; then
        # What Volcano's queue controller (not running here) does first: a new
        # Queue is Open. vc-scheduler's proportion plugin rejects jobs of a
        # Queue whose status.state is not Open; tephra would set it itself.
        k patch queue bench --subresource=status --type=merge -p '{"status":{"state":"Open"}}' >/dev/null
    fi
    [[ "$(k get pods -n bench --field-selector spec.nodeName= -o name | wc -l)" == "$PODS" ]] \
        || { echo "[$which] workload not created as expected" >&2; exit 1; }

    # The clock: watching before the scheduler starts.
    "$BIN/bindwatch" --kubeconfig "$kc" --namespace bench > "$dir/clock.out" 2> "$dir/clock.err" &
    WPID=$!
    local i
    for ((i = 0; i < 300; i++)); do
        grep -q ready "$dir/clock.out" 2>/dev/null && break
        kill -0 "$WPID" 2>/dev/null || { cat "$dir/clock.err" >&2; exit 1; }
        sleep 0.1
    done
    grep -q ready "$dir/clock.out" || { echo "[$which] bindwatch not ready" >&2; exit 1; }
    case "$which" in
        tephra | tephra-gang | tephra-volcano)
            local conf=()
            [[ "$which" == tephra-volcano ]] && conf=(--config "$WORK/conf/volcano.conf")
            t0="$(now)"
            # shellcheck disable=SC2086 # TEPHRA_ARGS: words on purpose
            "$TEPHRA" run --kubeconfig "$kc" ${conf[@]+"${conf[@]}"} ${TEPHRA_ARGS:-} \
                > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            ;;
        raw)
            t0="$(now)"
            "$BIN/rawbind" --kubeconfig "$kc" --scheduler-name volcano > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            ;;
        kube-scheduler | kube-scheduler-unthrottled)
            if [[ "$which" == kube-scheduler ]]; then ks_config "$kc"; else ks_config "$kc" 5000 5000; fi \
                > "$dir/ks.yaml"
            t0="$(now)"
            # shellcheck disable=SC2086 # KS_ARGS: words on purpose
            "$BIN/kube-scheduler" --config "$dir/ks.yaml" --secure-port 0 ${KS_ARGS:-} \
                > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            ;;
        volcano)
            port="$(shuf -i 20000-32000 -n 1)"
            t0="$(now)"
            "$VC_SCHEDULER" --kubeconfig "$kc" --scheduler-conf "$WORK/conf/volcano.conf" \
                --schedule-period 1s --leader-elect=false --cache-dumper=false \
                --listen-address "127.0.0.1:$port" --healthz-address "127.0.0.1:$((port + 1))" \
                -v "${VC_V:-1}" > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            ;;
    esac

    while kill -0 "$WPID" 2>/dev/null; do
        t1="$(now)"
        if ! kill -0 "$SPID" 2>/dev/null; then
            echo "[$which] scheduler exited; last lines of its log:" >&2
            tail -n 30 "$dir/scheduler.log" >&2
            exit 1
        fi
        if (($(echo "$t1 - $t0 > $TIMEOUT" | bc))); then
            unbound="$(k get pods -n bench --field-selector spec.nodeName= -o name | wc -l)"
            echo "[$which] $unbound of $PODS pods still unbound after ${TIMEOUT}s; last lines of its log:" >&2
            tail -n 30 "$dir/scheduler.log" >&2
            exit 1
        fi
        sleep "$POLL"
    done
    wait "$WPID" || { echo "[$which] bindwatch failed:" >&2; cat "$dir/clock.err" >&2; exit 1; }
    WPID=""
    read -r _ f_ns _ l_ns <<< "$(grep '^first' "$dir/clock.out")"
    first="$(echo "scale=3; $f_ns / 1000000000 - $t0" | bc)"
    t1="$(echo "scale=3; $l_ns / 1000000000" | bc)"
    local total cpu rss bad
    total="$(echo "$t1 - $t0" | bc)"
    cpu="$(cpu_seconds "$SPID")"
    rss="$(peak_rss_mb "$SPID")"
    kill -TERM "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    SPID=""
    # Every pod bound to an existing node, and no node over its 16 cpus.
    bad="$(k get pods -n bench -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' \
        | grep -cv '^node-[0-9]*$' || true)"
    ((bad == 0)) || { echo "[$which] $bad pods bound to something else" >&2; exit 1; }
    bad="$(k get pods -n bench -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' \
        | sort | uniq -c | awk '$1 > 16' | wc -l)"
    ((bad == 0)) || { echo "[$which] $bad nodes hold more than 16 one-cpu pods" >&2; exit 1; }
    printf '[%s] all %d pods bound in %.2f s = %.0f binds/s (first bind seen at %.2f s; scheduler cpu %s s, peak RSS %s MB)\n' \
        "$which" "$PODS" "$total" "$(echo "$PODS / $total" | bc -l)" "$first" "$cpu" "$rss"
    RESULT[$which]+="$total "
    tests/k8s/env.sh stop "$dir" 2>/dev/null
}

echo "workload: $NODES nodes, $PODS pods (gangs of $GANG where the runner uses PodGroups); kube-apiserver $("$BIN/kube-apiserver" --version | awk '{print $2}') + etcd on loopback; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for which in $ORDER; do
    case "$which" in
        tephra*) echo "$which: $TEPHRA ($("$TEPHRA" --version 2>/dev/null || echo '?'))" ;;
        kube-scheduler*) echo "kube-scheduler: $("$BIN/kube-scheduler" --version 2>/dev/null)" ;;
        raw) echo "raw: $BIN/rawbind (tests/k8s/apiserver/cmd/rawbind)" ;;
        volcano) echo "volcano: $VC_SCHEDULER ($("$VC_SCHEDULER" --version 2>/dev/null | awk '/Version|Git/ {printf "%s ", $0}'))" ;;
    esac
done | sort -u
for which in $ORDER; do
    run_one "$which"
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A MED
for which in $(echo "$ORDER" | tr ' ' '\n' | awk '!seen[$0]++'); do
    MED[$which]="$(echo "${RESULT[$which]}" | median)"
    printf '%s: median %.2f s = %.0f binds/s, of %s run(s): %s\n' "$which" "${MED[$which]}" \
        "$(echo "$PODS / ${MED[$which]}" | bc -l)" "$(echo "${RESULT[$which]}" | wc -w)" "${RESULT[$which]% }"
done
for base in tephra tephra-gang tephra-volcano; do
    [[ -n "${MED[$base]:-}" ]] || continue
    for other in "${!MED[@]}"; do
        [[ "$other" == tephra* ]] && continue
        printf '%s / %s (medians) = %.2f\n' "$other" "$base" "$(echo "${MED[$other]} / ${MED[$base]}" | bc -l)"
    done
done
