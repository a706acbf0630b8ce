#!/usr/bin/env bash
# Schedulers side by side on the whole cluster (env.sh with TEPHRA_K8S_CONTROLLERS=1:
# kube-controller-manager and kwok): time from the first create of the workload until
# every pod has run (phase Running, or already Succeeded), the scheduler's CPU seconds
# and peak RSS. A fresh cluster per run.
#
#   tests/k8s/bench-cluster.sh [NODES [JOBS [TASKS]]]      default 5000 5000 10
#   ORDER="tephra:jobs raw:jobs" tests/k8s/bench-cluster.sh 500 500
#
# Runners are SCHEDULER:WORKLOAD (ORDER names them; repeat names alternated to even out
# the machine's drift). Workloads:
#   jobs       JOBS batch/v1 Jobs of TASKS pods (parallelism = completions = TASKS),
#              made into pods by the Job controller
#   podgroups  JOBS Volcano PodGroups (minMember TASKS) of TASKS pods each, created whole
# Schedulers:
#   tephra                        tephra run, built-in config
#   kube-scheduler                kube-scheduler v1.37.1, its client at 50 QPS / burst 100
#   kube-scheduler-unthrottled    the same at 5000 / 5000
#   raw                           cmd/rawbind --watch: no scheduling, every pod bound as it
#                                 appears (the ceiling this API server and machine allow)
# Pods ask for 1 cpu and 1Gi; nodes are env.sh's (32 cpu, 256Gi). The clock
# (cmd/runwatch) watches the namespace from before the first create.
#
# Settings: TEPHRA (default target/release/tephra), ORDER, TIMEOUT (seconds, default
# 3600), KEEP=1 keeps the run directories, TEPHRA_ARGS, KS_ARGS.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODES="${1:-5000}"
JOBS="${2:-5000}"
TASKS="${3:-10}"
PODS=$((JOBS * TASKS))
TEPHRA="${TEPHRA:-${CARGO_TARGET_DIR:-target}/release/tephra}"
ORDER="${ORDER:-tephra:jobs kube-scheduler-unthrottled:jobs raw:jobs kube-scheduler:jobs tephra:podgroups raw:podgroups kube-scheduler-unthrottled:podgroups}"
TIMEOUT="${TIMEOUT:-3600}"

die() { echo "bench-cluster.sh: $*" >&2; exit 2; }
for runner in $ORDER; do
    sched="${runner%%:*}" workload="${runner#*:}"
    case "$sched" in
        tephra) [[ -x "$TEPHRA" ]] || die "no $TEPHRA; build it: cargo build --release -p tephra" ;;
        kube-scheduler | kube-scheduler-unthrottled | raw) ;;
        *) die "unknown scheduler '$sched' (tephra, kube-scheduler, kube-scheduler-unthrottled, raw)" ;;
    esac
    [[ "$workload" == jobs || "$workload" == podgroups ]] || die "unknown workload '$workload' (jobs, podgroups)"
done
tests/k8s/env.sh install 2>/dev/null
BIN="$(tests/k8s/env.sh bindir)"
tests/k8s/env.sh tool runwatch rawbind

WORK="$(mktemp -d /tmp/tephra-bench-cluster.XXXXXX)"
SPID=""
cleanup() {
    if [[ -n "$SPID" ]]; then kill -TERM "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; fi
    for d in "$WORK"/runs/*/; do [[ -d "$d" ]] && tests/k8s/env.sh stop "$d" >/dev/null 2>&1 || true; done
    if [[ "${KEEP:-0}" == 1 ]]; then echo "logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# gen WORKLOAD SCHEDULER_NAME
gen() {
    local workload="$1" sched="$2" j t
    if [[ "$workload" == podgroups ]]; then
        printf -- '---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: bench}\nspec: {weight: 1, reclaimable: true}\n'
    fi
    for ((j = 0; j < JOBS; j++)); do
        if [[ "$workload" == jobs ]]; then
            cat <<EOF
---
apiVersion: batch/v1
kind: Job
metadata: {name: job-$j, namespace: bench}
spec:
  parallelism: $TASKS
  completions: $TASKS
  template:
    spec:
      schedulerName: $sched
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
EOF
        else
            cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: job-$j, namespace: bench}
spec: {minMember: $TASKS, queue: bench, minResources: {cpu: "$TASKS", memory: ${TASKS}Gi}}
EOF
            for ((t = 0; t < TASKS; t++)); do
                cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: job-$j-$t, namespace: bench, annotations: {scheduling.k8s.io/group-name: job-$j}}
spec:
  schedulerName: $sched
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
EOF
            done
        fi
    done
}

now() { date +%s.%N; }
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1f", ($12 + $13) / hz }' "/proc/$1/stat"; }
peak_rss_mb() { awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

declare -A RESULT
run_one() {
    local runner="$1" sched="${1%%:*}" workload="${1#*:}" dir kc t0 t1 name file
    dir="$WORK/runs/${runner/:/-}.$RANDOM"
    mkdir -p "$dir"
    kc="$(TEPHRA_K8S_CONTROLLERS=1 tests/k8s/env.sh start "$dir" 2>"$dir/env.log")" || { cat "$dir/env.log" >&2; exit 1; }
    tests/k8s/env.sh nodes "$dir" "$NODES" 2>>"$dir/env.log" || { cat "$dir/env.log" >&2; exit 1; }
    k() { "$BIN/kubectl" --kubeconfig "$kc" "$@"; }
    k apply -f deploy/00-namespace.yaml -f deploy/10-crds.yaml -f deploy/20-rbac.yaml >/dev/null
    k create namespace bench >/dev/null
    for ((i = 0; i < 300; i++)); do k get sa default -n bench >/dev/null 2>&1 && break; sleep 0.2; done
    name="$( [[ "$sched" == kube-scheduler* ]] && echo default-scheduler || echo volcano )"
    file="$WORK/$workload-$name.yaml"
    [[ -f "$file" ]] || gen "$workload" "$name" > "$file"
    # The scheduler first, then the clock, then the workload.
    case "$sched" in
        tephra)
            # shellcheck disable=SC2086 # TEPHRA_ARGS: words on purpose
            "$TEPHRA" run --kubeconfig "$kc" ${TEPHRA_ARGS:-} > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            for ((i = 0; i < 600; i++)); do grep -q "caches synced" "$dir/scheduler.log" && break; sleep 0.1; done
            ;;
        raw)
            "$BIN/rawbind" --kubeconfig "$kc" --scheduler-name volcano --watch \
                --per-node "$(((PODS + NODES - 1) / NODES))" > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            sleep 2
            ;;
        kube-scheduler*)
            local qps=50 burst=100
            [[ "$sched" == kube-scheduler-unthrottled ]] && qps=5000 burst=5000
            printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection: {kubeconfig: "%s", qps: %s, burst: %s}\nleaderElection: {leaderElect: false}\n' \
                "$kc" "$qps" "$burst" > "$dir/ks.yaml"
            # shellcheck disable=SC2086 # KS_ARGS: words on purpose
            "$BIN/kube-scheduler" --config "$dir/ks.yaml" --secure-port 0 ${KS_ARGS:-} > "$dir/scheduler.log" 2>&1 &
            SPID=$!
            sleep 3
            ;;
    esac
    "$BIN/runwatch" --kubeconfig "$kc" --namespace bench --expect "$PODS" > "$dir/clock.out" 2> "$dir/clock.err" &
    local wpid=$!
    for ((i = 0; i < 300; i++)); do grep -q ready "$dir/clock.out" 2>/dev/null && break; sleep 0.1; done
    echo "[$runner] $NODES nodes; creating $JOBS $workload of $TASKS ($PODS pods)" >&2
    t0="$(now)"
    # Eight creators at once: each kubectl is throttled on its own.
    # Whole documents, dealt round-robin into eight parts.
    awk -v out="$dir/part." '/^---$/ { n++ } { print > (out (n % 8)) }' "$file"
    local creators=()
    for part in "$dir"/part.*; do
        k create -f "$part" >/dev/null 2>>"$dir/create.err" &
        creators+=($!)
    done
    local deadline=$((SECONDS + TIMEOUT))
    while kill -0 "$wpid" 2>/dev/null; do
        kill -0 "$SPID" 2>/dev/null || { echo "[$runner] scheduler exited:" >&2; tail -n 20 "$dir/scheduler.log" >&2; exit 1; }
        [[ ! -s "$dir/create.err" ]] || { echo "[$runner] creating the workload failed:" >&2; head -n 5 "$dir/create.err" >&2; exit 1; }
        ((SECONDS < deadline)) || { echo "[$runner] not all running after ${TIMEOUT}s" >&2; exit 1; }
        sleep 0.5
    done
    for c in "${creators[@]}"; do wait "$c" || { echo "[$runner] kubectl create failed" >&2; exit 1; }; done
    read -r _ l_ns _ running <<< "$(cat "$dir/clock.out" | grep '^last')"
    t1="$(echo "scale=3; $l_ns / 1000000000" | bc)"
    local total cpu rss
    total="$(echo "$t1 - $t0" | bc)"
    cpu="$(cpu_seconds "$SPID")"
    rss="$(peak_rss_mb "$SPID")"
    kill -TERM "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    SPID=""
    printf '[%s] %d pods running %.1f s after the first create = %.0f pods/s (scheduler cpu %s s, peak RSS %s MB)\n' \
        "$runner" "$running" "$total" "$(echo "$PODS / $total" | bc -l)" "$cpu" "$rss"
    RESULT[$runner]+="$total "
    tests/k8s/env.sh stop "$dir" >/dev/null 2>&1
}

echo "workload: $NODES kwok nodes, $JOBS jobs of $TASKS; kube-apiserver, kube-controller-manager $("$BIN/kube-apiserver" --version | awk '{print $2}'), kwok $("$BIN/kwok" --version 2>/dev/null | awk '{print $3}'), etcd on loopback; $(nproc) cores"
for runner in $ORDER; do run_one "$runner"; done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A MED
for runner in $(echo "$ORDER" | tr ' ' '\n' | awk '!seen[$0]++'); do
    MED[$runner]="$(echo "${RESULT[$runner]}" | median)"
    printf '%s: median %.1f s = %.0f pods/s over %s run(s)\n' "$runner" "${MED[$runner]}" \
        "$(echo "$PODS / ${MED[$runner]}" | bc -l)" "$(echo "${RESULT[$runner]}" | wc -w)"
done
for w in jobs podgroups; do
    [[ -n "${MED[tephra:$w]:-}" ]] || continue
    for other in raw kube-scheduler kube-scheduler-unthrottled; do
        [[ -n "${MED[$other:$w]:-}" ]] || continue
        printf '%s: tephra rate / %s rate = %.2f\n' "$w" "$other" "$(echo "${MED[$other:$w]} / ${MED[tephra:$w]}" | bc -l)"
    done
done
