#!/usr/bin/env bash
# Records the kubectl session shown in docs/kubernetes.md: a fresh API server
# (env.sh), deploy/'s namespace, CRDs and RBAC, three nodes, `tephra run` as
# the tephra ServiceAccount, examples/kubernetes/training.yaml applied
# unchanged. Prints the transcript; stops everything on exit.
#   tests/k8s/session.sh [TEPHRA_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
TEPHRA="${1:-${CARGO_TARGET_DIR:-target}/debug/tephra}"
DIR="$(mktemp -d /tmp/tephra-session.XXXXXX)"
PID=""
cleanup() {
    [[ -n "$PID" ]] && kill -TERM "$PID" 2>/dev/null && sleep 1
    tests/k8s/env.sh stop "$DIR" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
KC="$(tests/k8s/env.sh start "$DIR" 2>/dev/null)"
KUBECTL="$(tests/k8s/env.sh bindir)/kubectl"
k() { "$KUBECTL" --kubeconfig "$KC" "$@"; }
k apply -f deploy/00-namespace.yaml -f deploy/10-crds.yaml -f deploy/20-rbac.yaml >/dev/null
k wait --for=condition=Established crd/queues.scheduling.volcano.sh crd/podgroups.scheduling.volcano.sh >/dev/null
for n in node-a node-b node-c; do
    echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$n\"}}" | k create -f - >/dev/null
    k patch node "$n" --subresource=status --type=merge -p '{"status":{"capacity":{"cpu":"4","memory":"16Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"demo"}]}}' >/dev/null
done
sed 's/^    token:/    as: system:serviceaccount:tephra-system:tephra\n    token:/' "$KC" > "$DIR/kubeconfig-sa"
"$TEPHRA" run --kubeconfig "$DIR/kubeconfig-sa" > "$DIR/tephra.log" 2>&1 &
PID=$!
sleep 2
show() { echo "\$ kubectl $*"; k "$@"; echo; }
show version
show get nodes
echo '$ kubectl create namespace ml && kubectl apply -f examples/kubernetes/training.yaml'
k create namespace ml
k apply -f examples/kubernetes/training.yaml
echo
sleep 4
show get pods -n ml -o wide
show get podgroups -n ml
show get queues
echo "\$ kubectl get queue research -o jsonpath='{.status.allocated}'"
k get queue research -o jsonpath='{.status.allocated}'
echo; echo
echo "\$ kubectl get pod too-big -n ml -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")]}'"
k get pod too-big -n ml -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")]}'
echo; echo
show get events -n ml --sort-by=.lastTimestamp
