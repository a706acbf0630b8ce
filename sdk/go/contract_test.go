package tephra

// The SDK against the whole contract, as generated from wit/ (contract.go):
// a point, column or case added to the WIT and not to the SDK fails here.

import (
	"reflect"
	"sort"
	"testing"
)

func TestEveryPointHasAnInterfaceAndEveryFunctionAnExport(t *testing.T) {
	want := append([]string{}, PointNames...)
	sort.Strings(want)
	if got := knownPoints(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the SDK's points %v, the contract's %v", got, want)
	}
	glue := reflect.TypeOf(Exports)
	for _, point := range PointNames {
		for _, f := range PointFunctions[point] {
			if _, ok := glue.MethodByName(f); !ok {
				t.Errorf("%s: no export for %s", point, f)
			}
		}
	}
	for _, f := range []string{"Info", "OpenSession", "UpdateSession", "CloseSession", "OnEvents", "OnEvent"} {
		if _, ok := glue.MethodByName(f); !ok {
			t.Errorf("session: no export for %s", f)
		}
	}
}

func TestTheSnapshotTypeHasEveryColumn(t *testing.T) {
	for _, pair := range []struct {
		ty      reflect.Type
		columns []string
	}{{reflect.TypeOf(Snapshot{}), SnapshotColumns}, {reflect.TypeOf(SnapshotDelta{}), DeltaColumns}} {
		if pair.ty.NumField() != len(pair.columns) {
			t.Errorf("%s has %d fields, the contract %d", pair.ty, pair.ty.NumField(), len(pair.columns))
		}
		for _, c := range pair.columns {
			if _, ok := pair.ty.FieldByName(c); !ok {
				t.Errorf("%s has no %s", pair.ty, c)
			}
		}
	}
}

func TestADeltaBringsEveryColumn(t *testing.T) {
	b := NewBuilder("cpu")
	b.Task(b.Job(b.Queue(1), 1), []float64{100}, Pending, b.Node("n0", []float64{1000}, nil))
	s := b.Session()
	delta := SnapshotDelta{Tasks: []uint32{0}, TaskStatus: []TaskStatus{Running}, TaskNode: []uint32{0},
		TaskStartedMs: []int64{7}, Nodes: []uint32{0}, NodeUsed: []float64{100}, NodeReleasing: []float64{0},
		NodePipelined: []float64{0}}
	// Every other column set to something the session does not have.
	v := reflect.ValueOf(&delta).Elem()
	for _, c := range DeltaColumns {
		if DeltaRows[c] {
			continue
		}
		f := v.FieldByName(c)
		if f.Kind() == reflect.Slice {
			f.Set(reflect.MakeSlice(f.Type(), 3, 3))
		} else {
			f.SetInt(12345)
		}
	}
	if err := s.Update(delta); err != nil {
		t.Fatal(err)
	}
	snap := reflect.ValueOf(s.Snap)
	for _, c := range DeltaColumns {
		if !DeltaRows[c] && !reflect.DeepEqual(snap.FieldByName(c).Interface(), v.FieldByName(c).Interface()) {
			t.Errorf("%s not applied", c)
		}
	}
	if s.TaskStatus(0) != Running || s.TaskNode(0) != 0 || s.TaskStartedMs(0) != 7 {
		t.Errorf("task row not applied: %v %v %v", s.TaskStatus(0), s.TaskNode(0), s.TaskStartedMs(0))
	}
	delta.Tasks = []uint32{9}
	if err := s.Update(delta); err == nil {
		t.Error("a delta naming a task the session lacks was applied")
	}
}

func TestTheBuilderFillsEveryColumnForAnObject(t *testing.T) {
	b := NewBuilder()
	b.Task(b.Job(b.Queue(1), 1), []float64{100}, Running, b.Node("n0", []float64{1000}, nil))
	v := reflect.ValueOf(b.Snap)
	// Columns per node, queue, job and task have one entry each (rows: D).
	for _, c := range SnapshotColumns {
		f := v.FieldByName(c)
		for _, prefix := range []string{"Node", "Queue", "Job", "Task"} {
			if len(c) > len(prefix) && c[:len(prefix)] == prefix && f.Kind() == reflect.Slice {
				n := f.Len()
				if n != 1 && n != 3 && !sparse[c] {
					t.Errorf("%s has %d entries for one object", c, n)
				}
			}
		}
	}
}

// Columns of records keyed by owner: empty unless an object has one.
var sparse = map[string]bool{
	"NodeLabels": true, "NodeTaints": true, "NodeImages": true, "NodeAttachLimits": true, "QueueCapability": true,
	"QueueDeserved": true, "QueueGuarantee": true, "QueueAnnotations": true, "QueueAffinity": true,
	"QueueReservePercentage": true, "JobMinResources": true, "JobMinTaskMember": true, "JobAnnotations": true,
	"JobMinSubgroups": true, "TaskNodeSelector": true, "TaskTolerations": true, "TaskAffinity": true,
	"TaskSpread": true, "TaskImages": true,
}
