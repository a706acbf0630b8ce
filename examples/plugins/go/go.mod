module example.com/gpupack

go 1.24

// The SDK and the contract's bindings come from the build's go.work
// (../../../sdk/go/tephra-go.sh).
require tephra.dev/sdk v0.0.0
