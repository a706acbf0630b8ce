#!/usr/bin/env bash
# tephra vs Volcano's vc-scheduler on the same real kube-apiserver + etcd, the
# same gang workload and the same volcano-scheduler.conf: tests/k8s/bench.sh
# with its runners tephra-volcano and volcano.
#
#   VC_SCHEDULER=... VC_CRDS=... tests/k8s/bench-vs-volcano.sh [NODES [PODS [GANG]]]
#
#   VC_SCHEDULER  vc-scheduler binary (required): Volcano's cmd/scheduler, built
#                 from a Volcano release you obtained yourself; this repository
#                 carries no recipe that fetches or builds it (Volcano is not
#                 served as a Go module)
#   VC_CRDS       that release's config/crd/volcano/bases directory (required)
#   ORDER         "tephra volcano" (default) or any order/repetition of the two
# Other settings as in bench.sh.
set -euo pipefail
here="$(dirname "$0")"
missing() {
    echo "bench-vs-volcano.sh: $1" >&2
    echo "  set VC_SCHEDULER to a vc-scheduler binary and VC_CRDS to its release's" >&2
    echo "  config/crd/volcano/bases directory (tests/k8s/README.md, \"Comparisons\")" >&2
    exit 2
}
[[ -n "${VC_SCHEDULER:-}" ]] || missing "VC_SCHEDULER is not set"
[[ -x "$VC_SCHEDULER" ]] || missing "VC_SCHEDULER=$VC_SCHEDULER is not an executable file"
[[ -n "${VC_CRDS:-}" ]] || missing "VC_CRDS is not set"
ls "$VC_CRDS"/*.yaml >/dev/null 2>&1 || missing "VC_CRDS=$VC_CRDS holds no .yaml files"
order=""
for w in ${ORDER:-tephra volcano}; do
    case "$w" in
        tephra) order+=" tephra-volcano" ;;
        volcano) order+=" volcano" ;;
        *) echo "bench-vs-volcano.sh: ORDER names tephra and volcano, not '$w'" >&2; exit 2 ;;
    esac
done
ORDER="${order# }" exec "$here/bench.sh" "$@"
