package gpupack

import (
	"testing"

	tephra "tephra.dev/sdk"
)

// Three nodes: g1 with 4 GPUs (3 in use), g2 with 8 idle, c1 with none.
func cluster() (*tephra.Builder, uint32, uint32) {
	b := tephra.NewBuilder("cpu", "memory", "pods", "nvidia.com/gpu")
	g1 := b.Node("g1", []float64{16000, 64e9, 110, 4000}, nil)
	b.Node("g2", []float64{16000, 64e9, 110, 8000}, nil)
	b.Node("c1", []float64{16000, 64e9, 110}, nil)
	q := b.Queue(1)
	b.Task(b.Job(q, 1), []float64{1000, 1e9, 1, 3000}, tephra.Running, g1)
	gpu := b.Task(b.Job(q, 1), []float64{1000, 1e9, 1, 1000}, tephra.Pending, tephra.None)
	cpu := b.Task(b.Job(q, 1), []float64{1000, 1e9, 1}, tephra.Pending, tephra.None)
	return b, gpu, cpu
}

func open(t *testing.T, b *tephra.Builder, args map[string]string) (*Policy, *tephra.Session) {
	p, s := New().(*Policy), b.Session()
	if err := p.Open(s, args); err != nil {
		t.Fatal(err)
	}
	return p, s
}

func TestGPUTasksPackOntoTheFullestNode(t *testing.T) {
	b, gpu, _ := cluster()
	p, s := open(t, b, nil)
	got := []float64{p.NodeScore(s, gpu, 0), p.NodeScore(s, gpu, 1), p.NodeScore(s, gpu, 2)}
	if got[0] != 10 || got[1] != 3 || got[2] != 0 {
		t.Fatalf("scores %v, want [10 3 0]", got)
	}
}

func TestCPUTasksStayOffGPUNodes(t *testing.T) {
	b, gpu, cpu := cluster()
	p, s := open(t, b, nil)
	if p.Predicate(s, cpu, 0) == nil || p.Predicate(s, cpu, 1) == nil || p.Predicate(s, cpu, 2) != nil {
		t.Fatal("a CPU task fits a GPU node, or not the CPU node")
	}
	if p.Predicate(s, gpu, 0) != nil {
		t.Fatal("a GPU task does not fit a GPU node")
	}
}

func TestAnotherResourceAndBadArguments(t *testing.T) {
	b, _, cpu := cluster()
	p, s := open(t, b, map[string]string{"resource": "example.com/fpga"})
	if p.Predicate(s, cpu, 0) != nil {
		t.Fatal("nothing has FPGAs: every node fits")
	}
	if err := New().(*Policy).Open(b.Session(), map[string]string{"resource": " "}); err == nil {
		t.Fatal("an empty resource name was accepted")
	}
}
