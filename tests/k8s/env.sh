#!/usr/bin/env bash
# A real kube-apiserver + etcd on loopback for tephra's Kubernetes tests.
#
#   env.sh install      apt-get etcd-server, build kube-apiserver, kubectl,
#                       kube-scheduler, helm and an OCI registry (only what is
#                       missing; safe to run again)
#   env.sh start DIR    certificates, token, etcd and kube-apiserver on
#                       127.0.0.1 with state and logs in DIR; waits for
#                       /readyz and prints DIR/kubeconfig
#   env.sh nodes DIR N  N kwok nodes (with TEPHRA_K8S_CONTROLLERS=1 at start)
#   env.sh stop DIR     stops both (safe to run again, or on a DIR that never
#                       started)
#   env.sh restart-apiserver DIR
#                       stops kube-apiserver and starts it with the same flags
#   env.sh tool NAME... builds the benchmarks' Go helpers (apiserver/cmd/NAME:
#                       bindwatch, rawbind, runwatch, churn) into bindir
#   env.sh bindir       prints the directory holding kube-apiserver, kubectl,
#                       kube-scheduler, helm and registry
#
# Progress goes to stderr; stdout carries only the printed path. See README.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODDIR="$HERE/apiserver"

# The Kubernetes release is the one go.mod requires, so the cache directory
# follows a version bump by itself.
K8S_VERSION="$(awk '$1 == "require" { $1 = "" ; $0 = $0 }
                    $1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$MODDIR/go.mod")"
[[ -n "$K8S_VERSION" ]] || { echo "env.sh: no k8s.io/kubernetes version in $MODDIR/go.mod" >&2; exit 1; }
CACHE="${TEPHRA_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tephra/k8s/$K8S_VERSION}"
BIN="$CACHE/bin"
APISERVER="$BIN/kube-apiserver"
KUBECTL="$BIN/kubectl"
SCHEDULER="$BIN/kube-scheduler"
# The whole cluster (TEPHRA_K8S_CONTROLLERS=1): Kubernetes' own controllers,
# from the same module, and kwok's simulated kubelets, from its Go module.
CONTROLLERS="$BIN/kube-controller-manager"
KWOK_VERSION=v0.8.0
KWOK="$BIN/kwok"
# Helm, for the chart's test (deploy/chart): its Go module, verified by the
# checksum database; the version it stamps is the one pinned here.
HELM_VERSION=v3.22.0
HELM_COMMIT=144ca65f8501953fa8b41cd1d37c7223051c85b7
HELM="$BIN/helm"
# A real OCI registry for the Plugin rollout tests: distribution's, from its Go module.
REGISTRY_VERSION=v3.1.2
REGISTRY="$BIN/registry"

# Settings (environment):
#   TEPHRA_K8S_CACHE            where the built binaries go
#   TEPHRA_K8S_ETCD             an etcd binary to use instead of Debian's
#   TEPHRA_K8S_APISERVER_ARGS   extra kube-apiserver flags, appended last, split
#                               on spaces (a repeated list flag appends to, not
#                               replaces, the value below)
#   TEPHRA_K8S_DISABLE_ADMISSION  admission plugins to turn off (default
#                               below; README.md says why; "" keeps the
#                               upstream default set)
#   TEPHRA_K8S_READY_TIMEOUT    seconds to wait for /readyz (default 180)
#   TEPHRA_K8S_OWNER            a pid: when that process is gone, a watchdog
#                               stops the cluster and removes DIR (tests)
#   TEPHRA_K8S_KEEP=1           the watchdog keeps DIR (its logs)
#   TEPHRA_K8S_AUDIT=1          kube-apiserver writes every pods/binding create
#                               (request and answer) to DIR/audit.log
#   TEPHRA_K8S_CONTROLLERS=1    the whole cluster: kube-controller-manager and
#                               kwok (tests/k8s/kwok.yaml: pods run, finish
#                               after tephra.io/duration, fail with
#                               tephra.io/fail; nodes go NotReady with the
#                               label tephra.io/not-ready=true) start too;
#                               `env.sh nodes DIR N` adds N nodes
#   TEPHRA_K8S_EVICT_AFTER      seconds pods tolerate a NotReady node (default 20)
#   TEPHRA_K8S_POD_GC           finished pods kept before the controller manager
#                               deletes the oldest (default 0: never)
#   TEPHRA_K8S_NODE_CPU, _MEMORY, _GPU, _PODS
#                               each node's allocatable (32, 256Gi, 8, 110)
READY_TIMEOUT="${TEPHRA_K8S_READY_TIMEOUT:-180}"
# Both need kube-controller-manager, which does not run here: ServiceAccount
# rejects every pod in a namespace until its "default" ServiceAccount exists
# (made by the serviceaccount controller); TaintNodesByCondition gives every
# new Node a node.kubernetes.io/not-ready:NoSchedule taint that only the node
# lifecycle controller removes.
DISABLE_ADMISSION="${TEPHRA_K8S_DISABLE_ADMISSION-ServiceAccount,TaintNodesByCondition}"
# The whole cluster: kube-controller-manager and kwok run beside the API
# server, so the default admission plugins stay on.
WHOLE="${TEPHRA_K8S_CONTROLLERS:-0}"
if [[ "$WHOLE" == 1 ]]; then DISABLE_ADMISSION="${TEPHRA_K8S_DISABLE_ADMISSION-}"; fi
# How long pods tolerate a NotReady or unreachable node before the node
# lifecycle controller evicts them (the DefaultTolerationSeconds admission
# plugin; upstream 300 s).
EVICT_AFTER="${TEPHRA_K8S_EVICT_AFTER:-20}"

log() { echo "env.sh: $*" >&2; }
die() { echo "env.sh: error: $*" >&2; exit 1; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else die "need root (or sudo) for: $*"
    fi
}

# apt-get install, running apt-get update first only when the package lists
# do not know the package yet.
apt_install() {
    local pkg
    for pkg in "$@"; do
        if ! apt-cache show "$pkg" >/dev/null 2>&1; then
            log "apt-get update (package lists do not know $pkg)"
            as_root apt-get update -qq >&2
            break
        fi
    done
    log "apt-get install $*"
    # The etcd-server package may start a system etcd on 127.0.0.1:2379 where
    # an init system runs; that one is not used here (ports are picked free).
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >&2
}

find_etcd() {
    if [[ -n "${TEPHRA_K8S_ETCD:-}" ]]; then echo "$TEPHRA_K8S_ETCD"
    elif command -v etcd >/dev/null; then command -v etcd
    elif [[ -x /usr/bin/etcd ]]; then echo /usr/bin/etcd
    else return 1
    fi
}

# A stamp of the sources the binaries are built from: a changed go.mod,
# go.sum or main file rebuilds them even under the same version.
source_stamp() {
    (cd "$MODDIR" && cat go.mod go.sum main.go cmd/kubectl/main.go cmd/kube-scheduler/main.go |
        sha256sum | cut -d' ' -f1)
}

build_binaries() {
    local stamp ldflags tmp key val
    stamp="$(source_stamp)"
    if [[ -x "$APISERVER" && -x "$KUBECTL" && -x "$SCHEDULER" && -x "$CONTROLLERS" &&
          "$(cat "$CACHE/stamp" 2>/dev/null)" == "$stamp" ]]; then
        log "kube-apiserver, kubectl, kube-scheduler and kube-controller-manager $K8S_VERSION already in $BIN"
        return
    fi
    # An older Go (Debian's) fetches the toolchain go.mod asks for through the module proxy.
    command -v go >/dev/null || apt_install golang-go
    command -v go >/dev/null || die "go is not installed (it builds kube-apiserver and kubectl)"
    mkdir -p "$BIN"
    # What the upstream build stamps into its binaries (hack/lib/version.sh):
    # kubectl's version-skew warning and `version` read it.
    local minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
    local major="${K8S_VERSION#v}"; major="${major%%.*}"
    ldflags="-s -w"
    for key in gitVersion=$K8S_VERSION gitMajor=$major gitMinor=$minor gitTreeState=clean \
               buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ); do
        for val in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
            ldflags+=" -X $val.$key"
        done
    done
    rm -rf "$CACHE"/build.*   # left by an interrupted build (we hold the lock)
    tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
    # Static binaries like the upstream release; -mod=readonly keeps go.sum
    # authoritative; -buildvcs=false because the module sits inside tephra's
    # git tree, whose state says nothing about these binaries (and git need
    # not be installed).
    log "building kube-apiserver $K8S_VERSION (7-10 minutes on 2 cores)"
    (cd "$MODDIR" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags "$ldflags" \
        -o "$tmp/kube-apiserver" .) >&2
    log "building kubectl $K8S_VERSION"
    (cd "$MODDIR" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags "$ldflags" \
        -o "$tmp/kubectl" ./cmd/kubectl) >&2
    # The comparison baseline of tests/k8s/bench.sh.
    log "building kube-scheduler $K8S_VERSION"
    (cd "$MODDIR" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags "$ldflags" \
        -o "$tmp/kube-scheduler" ./cmd/kube-scheduler) >&2
    # The whole cluster's controllers (Deployment, Job, garbage collector,
    # node lifecycle, resource claims, …).
    log "building kube-controller-manager $K8S_VERSION"
    (cd "$MODDIR" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags "$ldflags" \
        -o "$tmp/kube-controller-manager" ./cmd/kube-controller-manager) >&2
    mv -f "$tmp/kube-apiserver" "$tmp/kubectl" "$tmp/kube-scheduler" "$tmp/kube-controller-manager" "$BIN/"
    rmdir "$tmp"
    echo "$stamp" > "$CACHE/stamp"
    log "built $APISERVER, $KUBECTL, $SCHEDULER and $CONTROLLERS"
}

# kwok: simulated nodes whose pods run and finish (the stages in kwok.yaml).
build_kwok() {
    if [[ -x "$KWOK" && "$(cat "$CACHE/kwok.version" 2>/dev/null)" == "$KWOK_VERSION" ]]; then
        log "kwok $KWOK_VERSION already in $BIN"
        return
    fi
    command -v go >/dev/null || apt_install golang-go
    local tmp
    tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
    log "building kwok $KWOK_VERSION (sigs.k8s.io/kwok/cmd/kwok, a few minutes on 2 cores)"
    GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
    mv -f "$tmp/kwok" "$KWOK"
    rmdir "$tmp"
    echo "$KWOK_VERSION" > "$CACHE/kwok.version"
    log "built $KWOK"
}

build_helm() {
    if [[ -x "$HELM" ]] && "$HELM" version --template '{{.Version}}' 2>/dev/null | grep -qx "$HELM_VERSION"; then
        log "helm $HELM_VERSION already in $BIN"
        return
    fi
    command -v go >/dev/null || apt_install golang-go
    local minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
    local v=helm.sh/helm/v3/internal/version ldflags tmp
    # What helm's Makefile stamps: its version, and the Kubernetes release
    # `.Capabilities.KubeVersion` and lint assume (this harness's).
    ldflags="-s -w -X $v.version=$HELM_VERSION -X $v.gitCommit=$HELM_COMMIT -X $v.gitTreeState=clean"
    for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
    done
    tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
    log "building helm $HELM_VERSION (about 4 minutes on 2 cores)"
    GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
    mv -f "$tmp/helm" "$HELM"
    rmdir "$tmp"
    log "built $HELM"
}

build_registry() {
    if [[ -x "$REGISTRY" && "$(cat "$CACHE/registry.version" 2>/dev/null)" == "$REGISTRY_VERSION" ]]; then
        log "registry (distribution) $REGISTRY_VERSION already in $BIN"
        return
    fi
    command -v go >/dev/null || apt_install golang-go
    local tmp
    tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
    log "building the OCI registry (distribution $REGISTRY_VERSION, about 4 minutes on 2 cores)"
    GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
        "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION" >&2
    mv -f "$tmp/registry" "$REGISTRY"
    rmdir "$tmp"
    echo "$REGISTRY_VERSION" > "$CACHE/registry.version"
    log "built $REGISTRY"
}

cmd_install() {
    mkdir -p "$CACHE"
    # One install at a time per cache directory (parallel test jobs).
    exec 9>"$CACHE/.lock"
    flock 9

    local missing=()
    [[ -n "${TEPHRA_K8S_ETCD:-}" ]] || find_etcd >/dev/null || missing+=(etcd-server)
    command -v openssl >/dev/null || missing+=(openssl)
    command -v curl >/dev/null || missing+=(curl)
    command -v jq >/dev/null || missing+=(jq)
    command -v bc >/dev/null || missing+=(bc)
    if ((${#missing[@]})); then
        apt_install "${missing[@]}"
    fi
    find_etcd >/dev/null || die "etcd not found after installing etcd-server"
    log "etcd: $("$(find_etcd)" --version 2>/dev/null | head -1)"

    build_binaries
    build_helm
    build_registry
    build_kwok
    log "kube-apiserver: $("$APISERVER" --version)"
    log "kubectl: $("$KUBECTL" version --client 2>/dev/null | head -1)"
    log "kube-scheduler: $("$SCHEDULER" --version)"
    log "helm: $("$HELM" version --short)"
    log "kube-controller-manager: $("$CONTROLLERS" --version)"
    log "kwok: $("$KWOK" --version 2>/dev/null | head -1)"
}

# The benchmarks' helpers, from the module the Kubernetes binaries come from:
# with the build cache install filled, each is a link step.
cmd_tool() {
    [[ $# -gt 0 ]] || die "usage: env.sh tool NAME... (bindwatch, rawbind, runwatch, churn)"
    local name
    mkdir -p "$BIN"
    for name in "$@"; do
        case "$name" in
            bindwatch | rawbind | runwatch | churn) ;;
            *) die "no helper '$name' (bindwatch, rawbind, runwatch, churn)" ;;
        esac
        (cd "$MODDIR" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath \
            -o "$BIN/$name" "./cmd/$name") >&2 || die "building $MODDIR/cmd/$name failed"
    done
}

# --- start / stop -----------------------------------------------------------

# True when nothing accepts connections on 127.0.0.1:$1.
port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A free loopback port below the Linux ephemeral range (32768+), so that it
# does not collide with the source ports of outgoing connections.
free_port() {
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + RANDOM % 12000))
        if port_free "$p" && [[ " ${TAKEN_PORTS:-} " != *" $p "* ]]; then
            TAKEN_PORTS="${TAKEN_PORTS:-} $p"
            echo "$p"
            return
        fi
    done
    die "no free port found"
}

# The pid in DIR/NAME.pid if that process is alive and is the one started
# there (its command line names DIR), so a reused pid is never killed.
live_pid() {
    local dir="$1" name="$2" pid
    pid="$(cat "$dir/$name.pid" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$dir/" || return 1
    echo "$pid"
}

stop_one() {
    local dir="$1" name="$2" pid i
    if pid="$(live_pid "$dir" "$name")"; then
        log "stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "$name did not stop in 10 s; SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$dir/$name.pid"
}

# Every other process whose command line names a file in DIR (a tephra, a
# registry or a kube-scheduler a test started with its files there): TERM,
# then KILL after 5 s.
stop_mentioning() {
    local dir="$1" pid pids=() i
    for pid in $(pgrep -f -- "$dir/" || true); do
        [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
        pids+=("$pid")
    done
    ((${#pids[@]})) || return 0
    log "stopping ${#pids[@]} more process(es) using $dir"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "${pids[@]}" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "${pids[@]}" 2>/dev/null || true
}

cmd_stop() {
    [[ $# -eq 1 ]] || die "usage: env.sh stop DIR"
    [[ -d "$1" ]] || { log "$1 does not exist; nothing to stop"; return 0; }
    local dir
    dir="$(cd "$1" && pwd)"
    stop_one "$dir" kwok
    stop_one "$dir" kube-controller-manager
    stop_one "$dir" kube-apiserver
    stop_one "$dir" etcd
    stop_mentioning "$dir"
    # The watchdog's own work is done when the cluster is stopped by hand.
    local w
    w="$(cat "$dir/watchdog.pid" 2>/dev/null || true)"
    if [[ "${TEPHRA_K8S_WATCHDOG:-}" != 1 && "$w" =~ ^[0-9]+$ ]] &&
        tr '\0' ' ' < "/proc/$w/cmdline" 2>/dev/null | grep -qF tephra-k8s-watchdog; then
        kill -TERM "$w" 2>/dev/null || true
    fi
    rm -f "$dir/watchdog.pid"
}

# With TEPHRA_K8S_OWNER=PID (a test process), a watchdog stops everything in
# DIR and removes it once that process is gone, however it ended (a SIGKILL
# runs no destructor). TEPHRA_K8S_KEEP=1 keeps the directory (logs).
watch_owner() {
    local dir="$1" owner="$2"
    kill -0 "$owner" 2>/dev/null || die "TEPHRA_K8S_OWNER=$owner is not a running process"
    TEPHRA_K8S_WATCHDOG=1 setsid bash -c '
        while kill -0 "$1" 2>/dev/null; do sleep 1; done
        "$2" stop "$3" >/dev/null 2>&1
        [[ "${TEPHRA_K8S_KEEP:-}" == 1 ]] || rm -rf "$3"' \
        tephra-k8s-watchdog "$owner" "$HERE/env.sh" "$dir" </dev/null >/dev/null 2>&1 &
    echo $! > "$dir/watchdog.pid"
}

gen_pki() {
    local pki="$1"
    mkdir -p "$pki"
    chmod 700 "$pki"
    (
        cd "$pki"
        umask 077
        # CA
        openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 30 \
            -keyout ca.key -out ca.crt -subj "/CN=tephra-test-ca" 2>/dev/null
        # Serving certificate for 127.0.0.1 / localhost (and the in-cluster
        # names and first service IP, which nothing here uses but clients of a
        # real cluster expect).
        cat > serving.ext <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost, IP:10.0.0.1, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
EOF
        openssl req -newkey rsa:2048 -nodes -sha256 \
            -keyout serving.key -out serving.csr -subj "/CN=kube-apiserver" 2>/dev/null
        openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -days 30 -sha256 -extfile serving.ext -out serving.crt 2>/dev/null
        # Service-account token signing key pair.
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
        openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
        rm -f serving.csr serving.ext ca.srl
        # Static tokens: token,user,uid,"groups". system:masters bypasses RBAC.
        printf '%s,tephra-admin,tephra-admin,"system:masters"\n' \
            "$(openssl rand -hex 32)" > tokens.csv
    )
}

write_kubeconfig() {
    local dir="$1" port="$2" token ca
    token="$(cut -d, -f1 "$dir/pki/tokens.csv")"
    ca="$(base64 -w0 < "$dir/pki/ca.crt")"
    (umask 077; cat > "$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tephra
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority-data: $ca
users:
- name: tephra-admin
  user:
    token: $token
contexts:
- name: tephra
  context:
    cluster: tephra
    user: tephra-admin
current-context: tephra
EOF
    )
}

# Starts a program detached from this shell (its own session, stdin closed),
# logging to DIR/NAME.log and recording its pid in DIR/NAME.pid.
spawn() {
    local dir="$1" name="$2"
    shift 2
    setsid "$@" </dev/null >>"$dir/$name.log" 2>&1 &
    echo $! > "$dir/$name.pid"
}

# True while the process spawn started as NAME runs. kill -0, not live_pid:
# until the forked shell has exec'd (long, on a loaded machine), its command
# line is env.sh's own and would not name DIR/.
spawned_alive() {
    kill -0 "$(cat "$1/$2.pid")" 2>/dev/null
}

wait_port() {
    local dir="$1" name="$2" port="$3" i
    for ((i = 0; i < 300; i++)); do
        port_free "$port" || return 0
        spawned_alive "$dir" "$name" || return 1
        sleep 0.1
    done
    return 1
}

fail_start() {
    local dir="$1" name="$2"
    log "$name failed to start; last lines of $dir/$name.log:"
    tail -n 30 "$dir/$name.log" >&2 || true
    cmd_stop "$dir"
    return 1
}

start_once() {
    local dir="$1" etcd etcd_client etcd_peer api_port
    etcd="$(find_etcd)" || die "etcd not installed; run: env.sh install"
    TAKEN_PORTS=""
    etcd_client="$(free_port)"
    etcd_peer="$(free_port)"
    api_port="$(free_port)"

    # etcd: single member, plain HTTP on loopback only; the API server is its
    # only client.
    log "starting etcd on 127.0.0.1:$etcd_client (data in $dir/etcd)"
    spawn "$dir" etcd "$etcd" \
        --name tephra \
        --data-dir "$dir/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_client" \
        --advertise-client-urls "http://127.0.0.1:$etcd_client" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "tephra=http://127.0.0.1:$etcd_peer" \
        --initial-cluster-state new \
        --logger zap --log-outputs stderr --log-level warn
    wait_port "$dir" etcd "$etcd_client" || { fail_start "$dir" etcd; return 1; }

    local extra_args=()
    read -r -a extra_args <<< "${TEPHRA_K8S_APISERVER_ARGS:-}"
    # The API server's own record of every bind (tests count double binds
    # from it): pods/binding creates with the request, in DIR/audit.log.
    if [[ "${TEPHRA_K8S_AUDIT:-}" == 1 ]]; then
        cat > "$dir/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [create]
  resources: [{group: "", resources: [pods/binding]}]
- level: None
EOF
        extra_args+=(--audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/audit.log"
                     --audit-log-mode blocking)
    fi
    # Streaming lists (WatchList) need etcd's progress notifications, which
    # Debian's etcd 3.4 lacks: a client-go watch asking for one (kwok's) would
    # end in an error, back off and stay blind for seconds at a time. Off, the
    # API server refuses such a request at once and the client lists instead.
    # No kubelet and no controller-manager. --endpoint-reconciler-type none:
    # the default (lease) refuses to start with a loopback advertise address
    # ("cannot use public IP 127.0.0.1 with endpoint reconciler"), and the
    # default/kubernetes Service's endpoints are of no use without pods.
    log "starting kube-apiserver on https://127.0.0.1:$api_port"
    spawn "$dir" kube-apiserver "$APISERVER" \
        --bind-address 127.0.0.1 \
        --advertise-address 127.0.0.1 \
        --secure-port "$api_port" \
        --cert-dir "$dir/pki" \
        --tls-cert-file "$dir/pki/serving.crt" \
        --tls-private-key-file "$dir/pki/serving.key" \
        --client-ca-file "$dir/pki/ca.crt" \
        --etcd-servers "http://127.0.0.1:$etcd_client" \
        --token-auth-file "$dir/pki/tokens.csv" \
        --authorization-mode RBAC \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-key-file "$dir/pki/sa.pub" \
        --service-account-signing-key-file "$dir/pki/sa.key" \
        --service-cluster-ip-range 10.0.0.0/24 \
        --disable-admission-plugins "$DISABLE_ADMISSION" \
        --feature-gates WatchList=false \
        --default-not-ready-toleration-seconds "$EVICT_AFTER" \
        --default-unreachable-toleration-seconds "$EVICT_AFTER" \
        --endpoint-reconciler-type none \
        --profiling=false \
        --v 1 \
        "${extra_args[@]}"
    wait_port "$dir" kube-apiserver "$api_port" || { fail_start "$dir" kube-apiserver; return 1; }
    write_kubeconfig "$dir" "$api_port"
    cat > "$dir/ports" <<EOF
ETCD_CLIENT_PORT=$etcd_client
ETCD_PEER_PORT=$etcd_peer
APISERVER_PORT=$api_port
EOF
}

wait_ready() {
    local dir="$1" deadline out
    deadline=$((SECONDS + READY_TIMEOUT))
    while ((SECONDS < deadline)); do
        if out="$("$KUBECTL" --kubeconfig "$dir/kubeconfig" --request-timeout 5s get --raw /readyz 2>&1)" \
            && [[ "$out" == ok ]]; then
            return 0
        fi
        live_pid "$dir" kube-apiserver >/dev/null || { fail_start "$dir" kube-apiserver; return 1; }
        live_pid "$dir" etcd >/dev/null || { fail_start "$dir" etcd; return 1; }
        sleep 0.5
    done
    log "kube-apiserver not ready after ${READY_TIMEOUT}s; last answer:"
    echo "$out" >&2
    "$KUBECTL" --kubeconfig "$dir/kubeconfig" get --raw '/readyz?verbose' >&2 || true
    fail_start "$dir" kube-apiserver
}

cmd_start() {
    [[ $# -eq 1 ]] || die "usage: env.sh start DIR"
    [[ -x "$APISERVER" && -x "$KUBECTL" ]] || die "$APISERVER or $KUBECTL missing; run: env.sh install"
    mkdir -p "$1"
    local dir attempt t0=$SECONDS
    dir="$(cd "$1" && pwd)"

    if live_pid "$dir" kube-apiserver >/dev/null && live_pid "$dir" etcd >/dev/null; then
        log "already running in $dir"
        wait_ready "$dir"
        echo "$dir/kubeconfig"
        return
    fi
    cmd_stop "$dir"
    # A fresh cluster each start: old data would carry the old CA's secrets.
    rm -rf "$dir/etcd" "$dir/pki" "$dir/kubeconfig" "$dir/ports"
    gen_pki "$dir/pki"
    # A port picked free can be taken by someone else before the server binds
    # it; try again with new ports in that case.
    for attempt in 1 2 3; do
        : > "$dir/etcd.log"
        : > "$dir/kube-apiserver.log"
        if start_once "$dir"; then break; fi
        if ((attempt < 3)) && grep -q "address already in use" "$dir"/*.log; then
            log "port taken meanwhile; retrying with new ports"
            rm -rf "$dir/etcd"
            continue
        fi
        die "start failed; logs in $dir"
    done
    wait_ready "$dir" || die "start failed; logs in $dir"
    if [[ "$WHOLE" == 1 ]]; then start_controllers "$dir" || die "start failed; logs in $dir"; fi
    if [[ -n "${TEPHRA_K8S_OWNER:-}" ]]; then watch_owner "$dir" "$TEPHRA_K8S_OWNER"; fi
    log "ready in $((SECONDS - t0)) s: $(grep APISERVER_PORT "$dir/ports")"
    echo "$dir/kubeconfig"
}

# Waits for https://127.0.0.1:PORT/healthz of NAME (self-signed) to say ok.
wait_healthz() {
    local dir="$1" name="$2" port="$3" scheme="${4:-https}" i
    for ((i = 0; i < 600; i++)); do
        if [[ "$(curl -sk --max-time 2 "$scheme://127.0.0.1:$port/healthz" 2>/dev/null)" == ok ]]; then
            return 0
        fi
        spawned_alive "$dir" "$name" || return 1
        sleep 0.1
    done
    return 1
}

# kube-controller-manager and kwok for the whole cluster, as the admin.
start_controllers() {
    local dir="$1" kcm_port kwok_port
    [[ -x "$CONTROLLERS" && -x "$KWOK" ]] || die "$CONTROLLERS or $KWOK missing; run: env.sh install"
    TAKEN_PORTS="$(tr '\n' ' ' < "$dir/ports" | sed 's/[A-Z_]*=//g')"
    kcm_port="$(free_port)"
    kwok_port="$(free_port)"
    : > "$dir/kube-controller-manager.log"
    : > "$dir/kwok.log"
    # Every controller the release runs by default; pods are never collected
    # (tests count what finished), node health as upstream but evictions not
    # rate-limited (a chaos run takes many nodes down at once); clients fast
    # enough for 50,000 pods. The in-tree host-path provisioner (for testing
    # only, as its flag says) provisions claims of classes whose provisioner
    # is kubernetes.io/host-path, for the node the scheduler selected.
    log "starting kube-controller-manager on 127.0.0.1:$kcm_port"
    spawn "$dir" kube-controller-manager "$CONTROLLERS" \
        --kubeconfig "$dir/kubeconfig" \
        --bind-address 127.0.0.1 --secure-port "$kcm_port" \
        --leader-elect=false \
        --use-service-account-credentials=false \
        --root-ca-file "$dir/pki/ca.crt" \
        --service-account-private-key-file "$dir/pki/sa.key" \
        --controllers '*' \
        --enable-hostpath-provisioner \
        --kube-api-qps 2000 --kube-api-burst 4000 \
        --concurrent-job-syncs 20 --concurrent-replicaset-syncs 20 --concurrent-deployment-syncs 10 \
        --concurrent-statefulset-syncs 10 --concurrent-gc-syncs 20 \
        --terminated-pod-gc-threshold "${TEPHRA_K8S_POD_GC:-0}" \
        --node-monitor-period 2s \
        --node-eviction-rate 1000 --secondary-node-eviction-rate 1000 \
        --profiling=false --v 1
    wait_healthz "$dir" kube-controller-manager "$kcm_port" || { fail_start "$dir" kube-controller-manager; return 1; }
    log "starting kwok on 127.0.0.1:$kwok_port"
    spawn "$dir" kwok "$KWOK" \
        --kubeconfig "$dir/kubeconfig" \
        --config "$HERE/kwok.yaml" \
        --manage-all-nodes=true \
        --server-address "127.0.0.1:$kwok_port" \
        --v=WARN
    wait_healthz "$dir" kwok "$kwok_port" http || { fail_start "$dir" kwok; return 1; }
    cat >> "$dir/ports" <<EOF
CONTROLLER_MANAGER_PORT=$kcm_port
KWOK_PORT=$kwok_port
EOF
}

# nodes DIR N: N kwok nodes named kwok-node-0000 … with the shape of
# TEPHRA_K8S_NODE_* (see the top), labelled into zones of 64 nodes, spines of
# 16 and racks of 4 (topology.kubernetes.io/zone, tephra.io/spine,
# tephra.io/rack: HyperNodes can be made or discovered from them); waits
# until every one is Ready and untainted.
cmd_nodes() {
    [[ $# -eq 2 && "$2" =~ ^[0-9]+$ ]] || die "usage: env.sh nodes DIR N"
    local dir n="$2" i ready t0=$SECONDS
    dir="$(cd "$1" && pwd)"
    local cpu="${TEPHRA_K8S_NODE_CPU:-32}" mem="${TEPHRA_K8S_NODE_MEMORY:-256Gi}"
    local gpu="${TEPHRA_K8S_NODE_GPU:-8}" pods="${TEPHRA_K8S_NODE_PODS:-110}"
    for ((i = 0; i < n; i++)); do
        printf -v name 'kwok-node-%04d' "$i"
        cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  labels: {type: kwok, kubernetes.io/hostname: $name, kubernetes.io/os: linux, topology.kubernetes.io/zone: zone-$((i / 64)), tephra.io/spine: spine-$((i / 16)), tephra.io/rack: rack-$((i / 4))}
spec: {providerID: "kwok://$name"}
status:
  addresses: [{type: InternalIP, address: 10.250.$((i / 250)).$((i % 250 + 1))}, {type: Hostname, address: $name}]
  capacity: {cpu: "$cpu", memory: $mem, nvidia.com/gpu: "$gpu", pods: "$pods"}
  allocatable: {cpu: "$cpu", memory: $mem, nvidia.com/gpu: "$gpu", pods: "$pods"}
EOF
    done > "$dir/nodes.yaml"
    ((n > 0)) || return 0
    "$KUBECTL" --kubeconfig "$dir/kubeconfig" create -f "$dir/nodes.yaml" >/dev/null
    for ((i = 0; i < 1200; i++)); do
        ready="$("$KUBECTL" --kubeconfig "$dir/kubeconfig" get nodes -l type=kwok -o json | jq '[.items[]
            | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))
            | select(all(.spec.taints[]?; .key != "node.kubernetes.io/not-ready"))] | length')"
        [[ "$ready" -ge "$n" ]] && break
        sleep 0.5
    done
    [[ "$ready" -ge "$n" ]] || die "$ready of $n nodes Ready and untainted after 600 s; logs in $dir"
    log "$n nodes Ready in $((SECONDS - t0)) s"
}

# Stops kube-apiserver and starts it again with the same flags (same port,
# same etcd, same certificates): clients see the connection drop and come back.
# restart COMPONENT DIR [DOWN_SECONDS]: stops etcd or kube-apiserver, keeps it
# down that long (default 0), starts it with the same command line and waits
# until the API server is ready again (for the chaos tests).
cmd_restart() {
    [[ $# -ge 2 && $# -le 3 ]] || die "usage: env.sh restart etcd|kube-apiserver DIR [DOWN_SECONDS]"
    local name="$1" down="${3:-0}" dir pid args=()
    [[ "$name" =~ ^(etcd|kube-apiserver|kube-controller-manager|kwok)$ ]] ||
        die "restart: $name is not etcd, kube-apiserver, kube-controller-manager or kwok"
    [[ "$down" =~ ^[0-9]+$ ]] || die "restart: DOWN_SECONDS $down is not a whole number"
    dir="$(cd "$2" && pwd)"
    pid="$(live_pid "$dir" "$name")" || die "no $name running in $dir"
    mapfile -d '' -t args < "/proc/$pid/cmdline"
    stop_one "$dir" "$name"
    sleep "$down"
    spawn "$dir" "$name" "${args[@]}"
    wait_ready "$dir" || die "restart failed; logs in $dir"
    log "$name restarted after ${down}s down"
}

case "${1:-}" in
    install) shift; [[ $# -eq 0 ]] || die "usage: env.sh install"; cmd_install ;;
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    restart-apiserver) shift; cmd_restart kube-apiserver "$@" ;;
    restart) shift; cmd_restart "$@" ;;
    nodes) shift; cmd_nodes "$@" ;;
    tool) shift; cmd_tool "$@" ;;
    bindir) echo "$BIN" ;;
    *) die "usage: env.sh install | start DIR | nodes DIR N | stop DIR | restart-apiserver DIR | restart etcd|kube-apiserver|kube-controller-manager|kwok DIR [DOWN_SECONDS] | bindir" ;;
esac
