#!/usr/bin/env bash
# Self-check of the harness: install, start a cluster in a temporary
# directory, exercise what tephra needs from a real API server with kubectl,
# stop. Exits non-zero on the first failure (the directory and its logs are
# then kept and named). TEPHRA_K8S_KEEP=1 keeps the directory on success too.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ENV="$HERE/env.sh"
NS=tephra-smoke

now() { date +%s.%N; }
T_ALL="$(now)"
step() { printf '\n== %s\n' "$*"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }
# Every listening TCP socket as "INODE IP:PORT" lines, read from /proc so that
# no extra package is needed (IPv6 addresses are printed as raw hex).
tcp_listen() {
    local f laddr st inode ip port
    for f in /proc/net/tcp /proc/net/tcp6; do
        [[ -r $f ]] || continue
        while read -r _ laddr _ st _ _ _ _ _ inode _; do
            [[ $st == 0A ]] || continue
            ip="${laddr%:*}"
            port="$((16#${laddr#*:}))"
            if ((${#ip} == 8)); then
                printf '%s %d.%d.%d.%d:%d\n' "$inode" \
                    "0x${ip:6:2}" "0x${ip:4:2}" "0x${ip:2:2}" "0x${ip:0:2}" "$port"
            else
                echo "$inode [$ip]:$port"
            fi
        done < <(tail -n +2 "$f")
    done
}
# The addresses listening on TCP port $1, on one line.
listeners() {
    tcp_listen | awk -v p=":$1" 'substr($2, length($2) - length(p) + 1) == p { print $2 }' |
        sort -u | tr '\n' ' '
}
# The addresses process $1 listens on, on one line.
listeners_of() {
    local inodes
    inodes="$(find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null |
        sed 's/^socket:\[\([0-9]*\)\]$/\1/' | sort -u | tr '\n' ' ')"
    tcp_listen | awk -v set=" $inodes" 'index(set, " " $1 " ") { print $2 }' | sort -u | tr '\n' ' '
}
# expect WHAT GOT WANT
expect() {
    if [[ "$2" != "$3" ]]; then fail "$1: got '$2', want '$3'"; fi
    echo "ok: $1 = $2"
}

step "install"
t="$(now)"
"$ENV" install
echo "install: $(since "$t")"
BIN="$("$ENV" bindir)"
k() { "$BIN/kubectl" "$@"; }

DIR="$(mktemp -d "${TMPDIR:-/tmp}/tephra-k8s-smoke.XXXXXX")"
STATUS=failed
cleanup() {
    "$ENV" stop "$DIR" || true
    if [[ $STATUS == ok && "${TEPHRA_K8S_KEEP:-}" != 1 ]]; then
        rm -rf "$DIR"
    else
        echo "smoke: state and logs kept in $DIR" >&2
    fi
}
trap cleanup EXIT

step "start $DIR"
t="$(now)"
KUBECONFIG="$("$ENV" start "$DIR")"
export KUBECONFIG
echo "kubeconfig: $KUBECONFIG"
echo "start (to /readyz ok): $(since "$t")"
expect "kubeconfig path" "$KUBECONFIG" "$DIR/kubeconfig"
# shellcheck source=/dev/null  # written by env.sh start
source "$DIR/ports"
for p in "$APISERVER_PORT" "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT"; do
    expect "listeners on port $p" "$(listeners "$p")" "127.0.0.1:$p "
done
# Every socket either process listens on is on loopback.
for name in etcd kube-apiserver; do
    addrs="$(listeners_of "$(cat "$DIR/$name.pid")")"
    echo "$name listens on: $addrs"
    [[ -n "$addrs" ]] || fail "no listening sockets found for $name"
    for a in $addrs; do [[ $a == 127.0.0.1:* ]] || fail "$name listens on $a"; done
done

T_K="$(now)"
step "server and identity"
k version
k get --raw /readyz; echo
k auth whoami

step "namespace"
k create namespace "$NS"

step "node: create, then patch its status"
k create -f - <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: smoke-node-1
  labels:
    kubernetes.io/hostname: smoke-node-1
    tephra.io/pool: smoke
EOF
k patch node smoke-node-1 --subresource=status --type=merge -p '{
  "status": {
    "capacity":    {"cpu": "8", "memory": "32Gi", "pods": "110"},
    "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                    "message": "set by tests/k8s/smoke.sh"}]
  }
}'
k get node smoke-node-1 -o wide
expect "node allocatable cpu" "$(k get node smoke-node-1 -o jsonpath='{.status.allocatable.cpu}')" 8
expect "node allocatable memory" "$(k get node smoke-node-1 -o jsonpath='{.status.allocatable.memory}')" 32Gi
expect "node allocatable pods" "$(k get node smoke-node-1 -o jsonpath='{.status.allocatable.pods}')" 110
# TaintNodesByCondition is off: no not-ready taint that nothing would remove.
expect "node taints" "$(k get node smoke-node-1 -o jsonpath='{.spec.taints}')" ""

step "pod for scheduler 'volcano'"
k create -n "$NS" -f - <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: smoke-pod-1
  annotations:
    scheduling.k8s.io/group-name: smoke-group
spec:
  schedulerName: volcano
  containers:
  - name: main
    image: registry.invalid/tephra/smoke:0
    resources:
      requests: {cpu: "1", memory: 1Gi}
EOF
expect "pod schedulerName" "$(k get pod -n "$NS" smoke-pod-1 -o jsonpath='{.spec.schedulerName}')" volcano
expect "pod nodeName before binding" "$(k get pod -n "$NS" smoke-pod-1 -o jsonpath='{.spec.nodeName}')" ""

step "bind: POST pods/smoke-pod-1/binding"
cat > "$DIR/binding.json" <<'EOF'
{"apiVersion": "v1", "kind": "Binding",
 "metadata": {"name": "smoke-pod-1"},
 "target": {"apiVersion": "v1", "kind": "Node", "name": "smoke-node-1"}}
EOF
k create --raw "/api/v1/namespaces/$NS/pods/smoke-pod-1/binding" -f "$DIR/binding.json"; echo
k get pod -n "$NS" smoke-pod-1 -o wide
echo "spec.nodeName: $(k get pod -n "$NS" smoke-pod-1 -o jsonpath='{.spec.nodeName}')"
expect "pod nodeName after binding" "$(k get pod -n "$NS" smoke-pod-1 -o jsonpath='{.spec.nodeName}')" smoke-node-1
expect "pod PodScheduled condition" \
    "$(k get pod -n "$NS" smoke-pod-1 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}')" True
# A real API server refuses a second binding of a bound pod (409).
if out="$(k create --raw "/api/v1/namespaces/$NS/pods/smoke-pod-1/binding" -f "$DIR/binding.json" 2>&1)"; then
    fail "second binding was accepted: $out"
fi
echo "second binding refused: $out"
[[ "$out" == *"already assigned"* ]] || fail "unexpected error for a second binding: $out"

step "CRD: Volcano Queue (scheduling.volcano.sh/v1beta1)"
k apply -f "$HERE/manifests/queue-crd.yaml"
k wait --for condition=Established --timeout 60s crd/queues.scheduling.volcano.sh
k api-resources --api-group scheduling.volcano.sh
k apply -f - <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: smoke-queue
spec:
  weight: 4
  reclaimable: true
  capability:
    cpu: "4"
    memory: 8Gi
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: smoke-queue-defaults
spec: {}
EOF
k patch queue smoke-queue --subresource=status --type=merge -p '{"status": {"state": "Open", "running": 1}}'
k get queues
k get queue smoke-queue -o yaml
expect "queue weight" "$(k get queue smoke-queue -o jsonpath='{.spec.weight}')" 4
expect "queue capability cpu" "$(k get queue smoke-queue -o jsonpath='{.spec.capability.cpu}')" 4
expect "queue status.state" "$(k get queue smoke-queue -o jsonpath='{.status.state}')" Open
expect "queue default weight" "$(k get queue smoke-queue-defaults -o jsonpath='{.spec.weight}')" 1
# Through the main resource, status is ignored (the subresource is real).
k patch queue smoke-queue --type=merge -p '{"status": {"state": "Closed"}}' >/dev/null
expect "status unchanged by a main-resource patch" "$(k get queue smoke-queue -o jsonpath='{.status.state}')" Open
if out="$(k apply -f - 2>&1 <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: smoke-queue-bad
spec:
  weight: 0
EOF
)"; then fail "a queue with weight 0 was accepted: $out"; fi
echo "weight 0 refused: $out"
echo "kubectl steps: $(since "$T_K")"

step "stop"
t="$(now)"
"$ENV" stop "$DIR"
"$ENV" stop "$DIR"   # again: nothing left to stop
echo "stop: $(since "$t")"
for p in "$APISERVER_PORT" "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT"; do
    expect "listeners on port $p after stop" "$(listeners "$p")" ""
done
[[ ! -e "$DIR/etcd.pid" && ! -e "$DIR/kube-apiserver.pid" ]] || fail "pid files left in $DIR"

STATUS=ok
echo
echo "smoke: ok in $(since "$T_ALL")"
