#!/usr/bin/env bash
# Builds Volcano's own scheduler (vc-scheduler) for tests/k8s/bench-vs-volcano.sh.
#
#   tests/k8s/volcano/build.sh            builds if missing; prints the binary's path on stdout
#
# Source: the `volcano.sh/volcano` module at $VOLCANO_VERSION. The Go module
# proxy refuses that module (403 "This module version is not available" for
# @v/list and every version, volcano.sh/apis too), so the source comes from a
# git clone of the upstream repository at the release tag, checked against the
# commit pinned below; its dependencies (k8s.io/* etc.) come from the module
# proxy, verified by upstream's own go.sum (-mod=readonly). Built like
# upstream's Makefile (`go build ./cmd/scheduler`, CGO_ENABLED=0) with the
# version stamped into pkg/version.
#
# Settings (environment):
#   VOLCANO_GIT     where to clone from (default https://github.com/volcano-sh/volcano.git;
#                   a local git directory works too)
#   VOLCANO_CACHE   cache directory (default ~/.cache/tephra/volcano/$VOLCANO_VERSION)
set -euo pipefail

VOLCANO_VERSION=v1.15.1
# `git rev-parse v1.15.1^{commit}` in github.com/volcano-sh/volcano
VOLCANO_COMMIT=0a56ed331897f5455916a44d3075671376d731d6
VOLCANO_GIT="${VOLCANO_GIT:-https://github.com/volcano-sh/volcano.git}"
CACHE="${VOLCANO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tephra/volcano/$VOLCANO_VERSION}"
SRC="$CACHE/src"
BIN="$CACHE/bin/vc-scheduler"

log() { echo "volcano/build.sh: $*" >&2; }
die() { echo "volcano/build.sh: error: $*" >&2; exit 1; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

if [[ -x "$BIN" && "$(cat "$CACHE/stamp" 2>/dev/null)" == "$VOLCANO_COMMIT" ]]; then
    log "vc-scheduler $VOLCANO_VERSION already in $BIN"
    echo "$BIN"
    exit 0
fi

if [[ "$(cat "$SRC/.tephra-commit" 2>/dev/null)" != "$VOLCANO_COMMIT" ]]; then
    rm -rf "$SRC" "$CACHE/clone"
    from="$VOLCANO_GIT"
    [[ -d "$from" ]] && from="file://$(cd "$from" && pwd)"
    log "cloning $VOLCANO_VERSION from $VOLCANO_GIT"
    git -c advice.detachedHead=false clone -q --depth 1 --branch "$VOLCANO_VERSION" "$from" "$CACHE/clone" >&2
    got="$(git -C "$CACHE/clone" rev-parse HEAD)"
    [[ "$got" == "$VOLCANO_COMMIT" ]] || die "$VOLCANO_VERSION is $got, expected $VOLCANO_COMMIT"
    mkdir -p "$SRC"
    git -C "$CACHE/clone" archive HEAD | tar -x -C "$SRC"
    rm -rf "$CACHE/clone"
    echo "$VOLCANO_COMMIT" > "$SRC/.tephra-commit"
fi

command -v go >/dev/null || die "go is not installed"
mkdir -p "$CACHE/bin"
ldflags="-s -w"
ldflags+=" -X volcano.sh/volcano/pkg/version.Version=$VOLCANO_VERSION"
ldflags+=" -X volcano.sh/volcano/pkg/version.GitSHA=$VOLCANO_COMMIT"
ldflags+=" -X volcano.sh/volcano/pkg/version.Built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "building vc-scheduler $VOLCANO_VERSION (several minutes on 2 cores)"
(cd "$SRC" && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags "$ldflags" \
    -o "$BIN.tmp" ./cmd/scheduler) >&2
mv -f "$BIN.tmp" "$BIN"
echo "$VOLCANO_COMMIT" > "$CACHE/stamp"
log "built $BIN"
echo "$BIN"
