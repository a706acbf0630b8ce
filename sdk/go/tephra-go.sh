#!/usr/bin/env bash
# Builds and tests tephra plugins written in Go on the Go SDK (this directory).
#
#   tephra-go.sh build PLUGIN_DIR OUT.wasm   the plugin's component
#   tephra-go.sh test PLUGIN_DIR...          go test (vet included) of each module,
#                                            the SDK's own directory among them
#   tephra-go.sh world PLUGIN_DIR            the WIT world the plugin exports
#
# A plugin is a Go module whose root package has `func New() tephra.Policy`;
# this script writes the component's main package. The bindings come from
# wit/ through wit-bindgen's Go generator (crate wit-bindgen-cli, installed
# once with cargo into the tools cache), the wit runtime package from that
# crate's sources, the component from `tephra plugin componentize` (the WIT
# world embedded, WASI preview 1 adapted). The Go toolchain is the machine's.
#
# Environment:
#   WIT_DIR       the contract (default: ../../wit beside this SDK; a project
#                 made by `tephra plugin new --lang go` has it in ./wit)
#   TEPHRA        the tephra binary (default: tephra on PATH)
#   TEPHRA_GO_TOOLS  the tools cache (default: ~/.cache/tephra/go-tools)
set -euo pipefail

WIT_BINDGEN_VERSION=0.63.0
# The runtime package the generated bindings import, as that crate ships it.
PKG_MODULE=go.bytecodealliance.org/pkg
PKG_VERSION=v0.4.0

SDK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WIT_DIR=${WIT_DIR:-$SDK_DIR/../../wit}
TOOLS=${TEPHRA_GO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tephra/go-tools}
WIT_BINDGEN=$TOOLS/bin/wit-bindgen
PKG_DIR=$TOOLS/go-pkg-$WIT_BINDGEN_VERSION

die() { echo "tephra-go.sh: error: $*" >&2; exit 1; }
say() { echo "tephra-go.sh: $*" >&2; }

install_wit_bindgen() {
    cargo install --quiet --locked --force --root "$TOOLS" wit-bindgen-cli --version "$WIT_BINDGEN_VERSION" \
        --no-default-features --features go || die "cargo install wit-bindgen-cli failed"
}

# wit-bindgen (Go generator only) and the runtime package from its crate.
tools() {
    command -v go >/dev/null || die "go not found: install Go >= 1.24 (go:wasmexport)"
    command -v cargo >/dev/null || die "cargo not found: wit-bindgen is installed with cargo"
    if [[ "$("$WIT_BINDGEN" --version 2>/dev/null)" != "wit-bindgen-cli $WIT_BINDGEN_VERSION" ]]; then
        say "installing wit-bindgen-cli $WIT_BINDGEN_VERSION (Go generator) into $TOOLS (a few minutes, once)"
        install_wit_bindgen
        rm -rf "$PKG_DIR"
    fi
    if [[ ! -f "$PKG_DIR/go.mod" ]]; then
        local src
        src=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d \
            -name "wit-bindgen-go-$WIT_BINDGEN_VERSION" 2>/dev/null | head -1)
        if [[ -z "$src" ]]; then
            # The registry's sources were cleaned: fetch the crate again.
            install_wit_bindgen
            src=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d \
                -name "wit-bindgen-go-$WIT_BINDGEN_VERSION" | head -1)
        fi
        [[ -f "$src/src/pkg/go.mod" ]] || die "the wit-bindgen-go $WIT_BINDGEN_VERSION crate has no src/pkg"
        local tmp="$PKG_DIR.tmp"
        rm -rf "$tmp" && mkdir -p "$tmp"
        cp -r "$src/src/pkg/wit" "$src/src/pkg/go.mod" "$src/src/pkg/LICENSE" "$tmp/"
        # Its go.mod names a newer Go than it needs; the machine's builds it.
        sed -i 's/^go .*/go 1.24/' "$tmp/go.mod"
        mv "$tmp" "$PKG_DIR"
    fi
}

# The module path of a Go module directory.
module_of() {
    sed -n 's/^module[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$1/go.mod" | head -1
}

# bindings WORK WIT WORLD [--generate-stubs]: the module tephra.dev/bindings in WORK/bindings.
bindings() {
    local work="$1" wit="$2" world="$3"
    shift 3
    rm -rf "$work/bindings"
    if ! "$WIT_BINDGEN" go --world "$world" --pkg-name tephra.dev/bindings --out-dir "$work/bindings" "$@" "$wit" \
        >"$work/wit-bindgen.log" 2>&1; then
        cat "$work/wit-bindgen.log" >&2
        die "wit-bindgen go failed for world $world in $wit"
    fi
    printf 'module tephra.dev/bindings\n\ngo 1.24\n\nrequire %s %s\n' "$PKG_MODULE" "$PKG_VERSION" >"$work/bindings/go.mod"
}

# contract_bindings WORK: the bindings of every point (world all-points), from
# the current contract alone (with the older versions in wit/deps beside it,
# wit-bindgen would put the version in every package name).
contract_bindings() {
    local work="$1"
    mkdir -p "$work/contract"
    cp "$WIT_DIR/scheduler.wit" "$work/contract/"
    bindings "$work" "$work/contract" all-points
}

# workspace WORK MODULE_DIR...: WORK/go.work over the bindings, the runtime
# package, the SDK and the given modules.
workspace() {
    local work="$1" dir
    shift
    {
        printf 'go %s\n\nuse (\n' "$(go env GOVERSION | sed 's/^go//')"
        for dir in "$work/bindings" "$PKG_DIR" "$SDK_DIR" "$@"; do printf '\t%s\n' "$dir"; done
        printf ')\n'
    } >"$work/go.work"
}

# prepare PLUGIN_DIR WORK: bindings of every point, and the plugin's world in WORK/wit.
prepare() {
    local plugin="$1" work="$2" module
    [[ -f "$plugin/go.mod" ]] || die "$plugin/go.mod not found: a plugin is a Go module"
    [[ -f "$WIT_DIR/scheduler.wit" ]] || die "$WIT_DIR/scheduler.wit not found (set WIT_DIR)"
    module=$(module_of "$plugin")
    [[ -n "$module" ]] || die "$plugin/go.mod names no module"
    mkdir -p "$work/main/world" "$work/wit/deps/tephra-scheduler"
    cp "$WIT_DIR/scheduler.wit" "$work/wit/deps/tephra-scheduler/"
    contract_bindings "$work"
    printf 'module tephra.dev/plugin-main\n\ngo 1.24\n' >"$work/main/go.mod"
    cat >"$work/main/world/main.go" <<EOF
// Prints the WIT world of the plugin's policy (generated by tephra-go.sh).
package main

import (
	"fmt"

	policy "$module"
	tephra "tephra.dev/sdk"
)

func main() { fmt.Print(tephra.World(policy.New())) }
EOF
    workspace "$work" "$work/main" "$plugin"
    (cd "$work" && GOWORK="$work/go.work" GOFLAGS=-mod=readonly go run ./main/world >"$work/wit/world.wit") ||
        die "$plugin: the policy does not build natively (see above); its package needs func New() tephra.Policy"
}

cmd_world() {
    [[ $# -eq 1 ]] || die "usage: tephra-go.sh world PLUGIN_DIR"
    tools
    local plugin work
    plugin=$(cd "$1" && pwd)
    work=$(mktemp -d)
    TMP_WORK=$work
    trap 'rm -rf "$TMP_WORK"' EXIT
    prepare "$plugin" "$work"
    cat "$work/wit/world.wit"
}

cmd_build() {
    [[ $# -eq 2 ]] || die "usage: tephra-go.sh build PLUGIN_DIR OUT.wasm"
    tools
    local plugin out work module tephra
    plugin=$(cd "$1" && pwd)
    mkdir -p "$(dirname "$2")"
    out="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
    tephra=${TEPHRA:-tephra}
    command -v "$tephra" >/dev/null || die "$tephra not found: set TEPHRA to the tephra binary (tephra plugin componentize)"
    work="$(dirname "$out")/.$(basename "$out" .wasm).build"
    rm -rf "$work" && mkdir -p "$work"
    prepare "$plugin" "$work"
    module=$(module_of "$plugin")
    # The bindings of the plugin's world, its exports calling the SDK.
    bindings "$work" "$work/wit" plugin --generate-stubs
    (cd "$work" && GOWORK="$work/go.work" go run tephra.dev/sdk/cmd/tephra-glue "$work/bindings") ||
        die "tephra-glue failed"
    cat >"$work/main/main.go" <<EOF
// The component's main package (generated by tephra-go.sh).
package main

import (
	policy "$module"
	_ "tephra.dev/bindings/exports/wit_exports"
	tephra "tephra.dev/sdk"
)

func init() { tephra.Register(func() tephra.Policy { return policy.New() }) }

func main() {}
EOF
    # go:linkname of runtime.sbrk in the wit runtime package: allowed by flag.
    (cd "$work" && GOWORK="$work/go.work" GOOS=wasip1 GOARCH=wasm \
        go build -buildmode=c-shared -trimpath -ldflags='-checklinkname=0 -s -w' -o "$work/core.wasm" ./main) ||
        die "go build for wasip1 failed (see above)"
    "$tephra" plugin componentize "$work/core.wasm" --wit "$work/wit" --world plugin -o "$out" ||
        die "tephra plugin componentize failed"
    say "wrote $out ($(stat -c %s "$out") bytes): $(grep -c '^    export' "$work/wit/world.wit") point(s)"
}

cmd_test() {
    [[ $# -ge 1 ]] || die "usage: tephra-go.sh test PLUGIN_DIR..."
    tools
    local work dir dirs=()
    work=$(mktemp -d)
    TMP_WORK=$work
    trap 'rm -rf "$TMP_WORK"' EXIT
    for dir in "$@"; do
        dir=$(cd "$dir" && pwd)
        [[ "$dir" == "$SDK_DIR" ]] || dirs+=("$dir")
    done
    contract_bindings "$work"
    workspace "$work" "${dirs[@]}"
    for dir in "$SDK_DIR" "${dirs[@]}"; do
        (cd "$dir" && GOWORK="$work/go.work" go vet ./... && GOWORK="$work/go.work" go test -count=1 ./...) ||
            die "go test failed in $dir"
    done
}

case "${1:-}" in
    build) shift; cmd_build "$@" ;;
    test) shift; cmd_test "$@" ;;
    world) shift; cmd_world "$@" ;;
    *) die "usage: tephra-go.sh build PLUGIN_DIR OUT.wasm | test PLUGIN_DIR... | world PLUGIN_DIR" ;;
esac
