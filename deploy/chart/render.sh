#!/usr/bin/env bash
# Renders the chart with its defaults into the plain manifests: 20-rbac.yaml,
# 30-config.yaml and 40-scheduler.yaml in OUTDIR (default deploy/), and the
# CRDs of crds/ as 10-crds.yaml. `./dev manifests` writes deploy/; the tests
# render into a temporary directory and compare.
#   deploy/chart/render.sh HELM [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
HELM="${1:?usage: deploy/chart/render.sh HELM [OUTDIR]}"
OUT="${2:-deploy}"
export HELM_CACHE_HOME="${TMPDIR:-/tmp}/tephra-helm/cache" HELM_CONFIG_HOME="${TMPDIR:-/tmp}/tephra-helm/config" \
    HELM_DATA_HOME="${TMPDIR:-/tmp}/tephra-helm/data"
rendered="$("$HELM" template tephra deploy/chart --namespace tephra-system)"
header="# Generated from deploy/chart by \`./dev manifests\` (helm template, default values): edit the chart."
# Each template's documents go to one file, in the order helm prints them.
awk -v out="$OUT" -v header="$header" '
    BEGIN {
        file["tephra/templates/rbac.yaml"] = "20-rbac.yaml"
        file["tephra/templates/configmap.yaml"] = "30-config.yaml"
        file["tephra/templates/deployment.yaml"] = "40-scheduler.yaml"
        file["tephra/templates/service.yaml"] = "40-scheduler.yaml"
    }
    /^---$/ { next }
    /^# Source: / {
        f = out "/" file[$3]
        if (!(f in started)) { started[f] = 1; print header > f }
        print "---" > f
        next
    }
    { print > f }
' <<<"$rendered"
{ echo "$header"; cat deploy/chart/crds/crds.yaml; echo "---"; cat deploy/chart/crds/plugins.yaml; echo "---"; cat deploy/chart/crds/reservations.yaml; } > "$OUT/10-crds.yaml"
