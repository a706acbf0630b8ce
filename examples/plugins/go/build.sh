#!/usr/bin/env bash
# Builds the `gpu-pack` policy (gpupack.go) into OUT_DIR/gpu-pack.wasm with the
# Go SDK: bindings from wit/ by wit-bindgen's Go generator, the machine's Go
# for wasip1, and `tephra plugin componentize` (TEPHRA: the tephra binary,
# default tephra on PATH). `sdk/go/tephra-go.sh world .` prints its world.
#
#   ./build.sh OUT_DIR
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
SDK_DIR=$HERE/../../../sdk/go
WIT_DIR=${WIT_DIR:-$HERE/../../../wit}
WIT_DIR="$WIT_DIR" exec "$SDK_DIR/tephra-go.sh" build "$HERE" "$1/gpu-pack.wasm"
