// Command kubectl builds the upstream kubectl from the k8s.io/kubectl module
// at the same release as the API server in ../../main.go.
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec/oidc auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// Set -v before the command is constructed, as upstream does, so that
	// logging during construction (plugins, kuberc) honours it.
	_, _ = logs.GlogSetter(cmd.GetLogVerbosity(os.Args))
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
