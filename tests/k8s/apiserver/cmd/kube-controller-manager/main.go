// Command kube-controller-manager builds the upstream controller manager
// from the k8s.io/kubernetes module at the API server's release: the
// Deployment, ReplicaSet, StatefulSet, Job, CronJob, garbage-collector,
// node-lifecycle and resource-claim controllers of the whole-cluster tests
// (tests/k8s/env.sh start with TEPHRA_K8S_CONTROLLERS=1).
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
