// Command kube-apiserver is a thin wrapper that builds the upstream
// kube-apiserver from the k8s.io/kubernetes Go module, so that tephra's
// integration tests can run a real API server without downloading release
// binaries. See ../README.md.
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as in the upstream binary

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
