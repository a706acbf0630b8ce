module tephra.dev/sdk

go 1.25

// Both come from the build (sdk/go/tephra-go.sh): the bindings wit-bindgen
// generates from wit/ for the plugin's world, and the runtime package the
// wit-bindgen-go crate ships. A go.work names their directories.
require (
	go.bytecodealliance.org/pkg v0.4.0
	tephra.dev/bindings v0.0.0
)
