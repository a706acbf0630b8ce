// Package gpupack is a tephra policy written in Go: GPU nodes are kept for
// the tasks that ask for GPUs, and those tasks are packed onto the nodes
// with the fewest GPUs left idle, so whole nodes stay free for big jobs.
//
//	predicate   a task asking none of the resource does not fit a node that has it
//	node-order  a task asking for it scores 10 - (units idle after placing it), at least 0
//
// Argument `resource` names the resource (default nvidia.com/gpu).
package gpupack

import (
	"fmt"
	"strings"

	tephra "tephra.dev/sdk"
)

// Policy is gpu-pack's state for one session.
type Policy struct {
	resource string
	dim      int
	has      bool
	reason   *tephra.Unfit
}

// New is the constructor the build registers (a fresh policy per session).
func New() tephra.Policy { return &Policy{} }

func (p *Policy) Name() string    { return "gpu-pack" }
func (p *Policy) Version() string { return "0.1.0" }

// Open reads the argument and finds the resource's dimension.
func (p *Policy) Open(s *tephra.Session, args map[string]string) error {
	p.resource = strings.TrimSpace(args["resource"])
	if _, given := args["resource"]; given && (p.resource == "" || strings.ContainsAny(p.resource, " \t")) {
		return fmt.Errorf("argument resource: %q is not a resource name", args["resource"])
	}
	if p.resource == "" {
		p.resource = "nvidia.com/gpu"
	}
	// A snapshot where nothing has the resource has no dimension for it.
	p.dim, p.has = s.Dim(p.resource)
	p.reason = tephra.Why("gpu-pack: node keeps its " + p.resource + " for tasks that ask for it")
	return nil
}

func (p *Policy) Predicate(s *tephra.Session, task, node uint32) *tephra.Unfit {
	if p.has && s.TaskRequest(task).Row[p.dim] <= 0 && s.NodeAllocatable(node).Row[p.dim] > 0 {
		return p.reason
	}
	return nil
}

func (p *Policy) NodeScore(s *tephra.Session, task, node uint32) float64 {
	if !p.has {
		return 0
	}
	want := s.TaskRequest(task).Row[p.dim]
	if want <= 0 {
		return 0
	}
	// Scalars are in milli-units.
	left := (s.NodeIdle(node).Row[p.dim] - want) / 1000
	if left < 0 {
		return 0
	}
	return max(0, 10-left)
}
