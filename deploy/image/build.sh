#!/usr/bin/env bash
# Builds tephra's OCI image from a tephra binary, offline: a context holding
# the (stripped) binary, the shared libraries it links (as `ldd` lists them)
# and an /etc/passwd naming its user, built FROM scratch with podman; then
# checks it: the image's user is 65532, it has no shell, and in a container
# with a read-only root filesystem, no network and no capabilities the binary
# runs and schedules the embedded demo as that user. Saves it as an OCI
# archive.
#
#   deploy/image/build.sh BINARY [TAG]      (TAG default: tephra:<version>)
#
# Installs podman, buildah and runc from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
BINARY="${1:?usage: deploy/image/build.sh BINARY [TAG]}"
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)"
TAG="${2:-tephra:$VERSION}"
OUT="${CARGO_TARGET_DIR:-$PWD/target}/image"
log() { echo "image: $*" >&2; }
die() { echo "image: error: $*" >&2; exit 1; }

[[ -x "$BINARY" ]] || die "$BINARY is not an executable"
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
    as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
    apt-cache show podman >/dev/null 2>&1 || as_root apt-get update -qq
    log "apt-get install podman buildah runc"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc >&2
fi
mkdir -p "$OUT"
# runc: crun in Debian 12 refuses hybrid cgroup hierarchies. Limits no higher
# than podman's own: raising one needs CAP_SYS_RESOURCE, which a container
# host (CI) may not grant.
cat > "$OUT/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF="$OUT/containers.conf"

ctx="$(mktemp -d "$OUT/context.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/usr/bin" "$ctx/rootfs/etc" "$ctx/rootfs/var/cache/tephra"
strip -o "$ctx/rootfs/usr/bin/tephra" "$BINARY"
# Every library the loader resolves, at the path it resolves it to.
ldd "$BINARY" | awk '/=> \// { print $3 } /^\t\// { print $1 }' | while read -r lib; do
    mkdir -p "$ctx/rootfs$(dirname "$lib")"
    cp -L "$lib" "$ctx/rootfs$lib"
done
echo "tephra:x:65532:65532:tephra:/nonexistent:/usr/sbin/nologin" > "$ctx/rootfs/etc/passwd"
echo "tephra:x:65532:" > "$ctx/rootfs/etc/group"
cp deploy/image/Containerfile "$ctx/Containerfile"
log "building $TAG from $BINARY"
podman build --quiet --no-cache -t "$TAG" "$ctx" >/dev/null

# The checks.
user="$(podman image inspect -f '{{.Config.User}}' "$TAG")"
[[ "$user" == "65532:65532" ]] || die "the image runs as '$user', not 65532:65532"
run() {
    podman run --rm --read-only --read-only-tmpfs=false --network none --cap-drop=ALL \
        --security-opt no-new-privileges "$@"
}
if run --entrypoint /bin/sh "$TAG" -c true >/dev/null 2>&1; then
    die "the image has a shell"
fi
version="$(run "$TAG" --version)"
[[ "$version" == "tephra $VERSION" ]] || die "tephra --version in the image said '$version'"
# The embedded demo, scheduled inside: Wasm plugins compiled and run under a
# read-only root, as uid 65532, the compile cache on a volume (as in the chart).
cache="$ctx/cache"
mkdir -p "$cache" && chown 65532:65532 "$cache"
demo="$(run -v "$cache:/var/cache/tephra" "$TAG" simulate 2>&1)"
grep -q "bind " <<<"$demo" || die "the demo bound nothing in the image:
$demo"
! grep -q WARN <<<"$demo" || die "the demo warned in the image:
$demo"
[[ -n "$(find "$cache" -type f | head -1)" ]] || die "nothing was written to the compile cache volume"
# And who it runs as, seen from the host while it runs.
cid="$(run -d "$TAG" simulate --realtime --period 1 --cycles 60)"
pid="$(podman inspect -f '{{.State.Pid}}' "$cid")"
uid="$(awk '$1 == "Uid:" { print $2 }' "/proc/$pid/status")"
podman rm -f -t 0 "$cid" >/dev/null
[[ "$uid" == 65532 ]] || die "the container's process runs as uid '$uid', not 65532"
archive="$OUT/${TAG//[:\/]/-}.oci.tar"
rm -f "$archive"
podman save --quiet --format oci-archive -o "$archive" "$TAG"
log "built $TAG ($user, no shell, read-only root: the demo schedules): $archive ($(du -h "$archive" | cut -f1))"
