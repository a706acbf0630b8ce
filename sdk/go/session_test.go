package tephra

import (
	"errors"
	"strings"
	"testing"
)

type gate struct{}

func (gate) Name() string { return "gate" }
func (gate) Predicate(s *Session, task, node uint32) *Unfit {
	if v, _ := s.NodeLabel(node, "zone"); v != "east" {
		return Why("gate: not in the east")
	}
	return nil
}
func (gate) JobValid(s *Session, job uint32) error { return errors.New("never") }

func TestEventsMoveUsageBetweenNodes(t *testing.T) {
	b := NewBuilder("cpu", "memory")
	n0 := b.Node("n0", []float64{8000, 16e9}, nil)
	n1 := b.Node("n1", []float64{8000, 16e9}, nil)
	j := b.Job(b.Queue(1), 2)
	t0 := b.Task(j, []float64{500, 1e9}, Running, n0)
	s := b.Session()
	old, oldNode := s.Apply(Event{Task: t0, Node: n1, Status: Releasing})
	if old != Running || oldNode != n0 {
		t.Fatalf("old %v on %v", old, oldNode)
	}
	if s.NodeIdle(n0).CPU() != 8000 || s.NodeUsed(n1).Memory() != 1e9 || s.Snap.NodeReleasing[2] != 500 {
		t.Fatalf("usage %v %v %v", s.Snap.NodeUsed, s.Snap.NodeReleasing, s.NodeIdle(n0).Row)
	}
	if s.NodeIdle(n1).Get("cpu") != 7500 || s.NodeIdle(n1).Get("nvidia.com/gpu") != 0 {
		t.Fatalf("idle by name %v", s.NodeIdle(n1).Row)
	}
}

func TestTheWorldExportsThePointsImplemented(t *testing.T) {
	got := Implemented(gate{})
	if strings.Join(got, ",") != "predicate,job-valid" {
		t.Fatalf("implemented %v", got)
	}
	w := World(gate{})
	for _, line := range []string{"include tephra:scheduler/plugin@" + Contract, "export tephra:scheduler/predicate@" + Contract} {
		if !strings.Contains(w, line) {
			t.Errorf("world lacks %q:\n%s", line, w)
		}
	}
}

func TestRejectionsShareCodes(t *testing.T) {
	b := NewBuilder()
	b.Node("east", []float64{1000}, map[string]string{"zone": "east"})
	b.Node("west", []float64{1000}, map[string]string{"zone": "west"})
	b.Node("none", []float64{1000}, nil)
	b.Task(b.Job(b.Queue(1), 1), []float64{100}, Pending, None)
	Register(func() Policy { return gate{} })
	if r := Exports.OpenSession(b.Snap, nil); r.IsErr() {
		t.Fatal(r.Err())
	}
	fit := Exports.Predicate(0, []uint32{0, 1, 2})
	if len(fit.Codes) != 3 || fit.Codes[0] != 0 || fit.Codes[1] != 1 || fit.Codes[2] != 1 || len(fit.Reasons) != 1 {
		t.Fatalf("fit %+v", fit)
	}
	if c := Exports.PredicateNode(0, 2); Exports.Explain(c).Message != "gate: not in the east" {
		t.Fatalf("code %d: %+v", c, Exports.Explain(c))
	}
	if v := Exports.JobValid(0); v.IsNone() || v.Some() != "never" {
		t.Fatalf("job-valid %+v", v)
	}
	if info := Exports.Info(); info.Name != "gate" || info.Contract != Contract {
		t.Fatalf("info %+v", info)
	}
}

func TestViewsReadTheColumnsTheyName(t *testing.T) {
	b := NewBuilder("cpu", "memory", "pods", "nvidia.com/gpu")
	n := b.Node("gpu-1", []float64{8000, 32e9, 110, 4000}, map[string]string{"zone": "east"})
	q := b.Queue(2)
	j := b.Job(q, 1)
	task := b.Task(j, []float64{1000, 1e9, 1, 1000}, Running, n)
	b.Task(j, []float64{500, 0, 1, 0}, Pending, None)
	s := b.Session()
	node := s.Node(n)
	zone, _ := node.Label("zone")
	if node.Name() != "gpu-1" || zone != "east" || node.Idle().CPU() != 7000 || node.Idle().Get("nvidia.com/gpu") != 3000 {
		t.Fatalf("node %q %q %v", node.Name(), zone, node.Idle().Row)
	}
	on, placed := s.Task(task).Node()
	if !placed || on.ID != n || s.Task(task).Job().Queue().Weight() != 2 || s.Task(task).Request().Pods() != 1 {
		t.Fatal("task view")
	}
	if _, placed := s.Task(task + 1).Node(); placed {
		t.Fatal("a pending task has a node")
	}
	if len(s.Job(j).Tasks()) != 2 || s.Job(j).MinAvailable() != 1 {
		t.Fatal("job view")
	}
	if _, ok := s.Queue(q).Parent(); ok {
		t.Fatal("a root queue has a parent")
	}
	if h := node.HyperNode(); h.ID != 0 || h.Tier() != 1 {
		t.Fatalf("hypernode %d tier %d", h.ID, h.Tier())
	}
	if _, ok := node.HyperNode().Parent(); ok {
		t.Fatal("the cluster has a parent")
	}
}
