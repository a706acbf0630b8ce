package tephra

import (
	"fmt"
	"reflect"

	types "tephra.dev/bindings/imports/tephra_scheduler_types"
)

// The contract's types, as wit-bindgen generates them from wit/.
type (
	Snapshot      = types.Snapshot
	SnapshotDelta = types.SnapshotDelta
	Event         = types.Event
	TaskStatus    = types.TaskStatus
	LockOwner     = types.LockOwner
	EvictionKind  = types.EvictionKind
)

// None is the contract's "no id".
const None uint32 = 0xFFFFFFFF

// Task statuses.
const (
	Pending   = types.TaskStatus_Pending
	Allocated = types.TaskStatus_Allocated
	Pipelined = types.TaskStatus_Pipelined
	Binding   = types.TaskStatus_Binding
	Bound     = types.TaskStatus_Bound
	Running   = types.TaskStatus_Running
	Releasing = types.TaskStatus_Releasing
	Succeeded = types.TaskStatus_Succeeded
	Failed    = types.TaskStatus_Failed
)

// Holds says whether a task in this status holds resources on its node
// (allocated, binding, bound, running: Volcano's Used).
func Holds(st TaskStatus) bool {
	return st == Allocated || st == Binding || st == Bound || st == Running
}

// shares: the node columns (used, releasing, pipelined) a status counts in.
func shares(st TaskStatus) (bool, bool, bool) {
	switch {
	case Holds(st):
		return true, false, false
	case st == Releasing:
		return true, true, false
	case st == Pipelined:
		return false, false, true
	}
	return false, false, false
}

// Session is one scheduling session: the snapshot, with task statuses and
// node usage kept current as events and deltas arrive.
type Session struct {
	Snap Snapshot
	// D is the number of resource dimensions (the row length).
	D        int
	jobTasks [][]uint32
	strings  map[string]uint32
}

// NewSession views a snapshot (the SDK's own copy of its mutable columns).
func NewSession(snap Snapshot) *Session {
	s := &Session{Snap: snap, D: len(snap.Dims)}
	s.Snap.TaskStatus = append([]TaskStatus(nil), snap.TaskStatus...)
	s.Snap.TaskNode = append([]uint32(nil), snap.TaskNode...)
	s.Snap.NodeUsed = append([]float64(nil), snap.NodeUsed...)
	s.Snap.NodeReleasing = append([]float64(nil), snap.NodeReleasing...)
	s.Snap.NodePipelined = append([]float64(nil), snap.NodePipelined...)
	s.jobTasks = make([][]uint32, len(snap.JobQueue))
	for t, j := range snap.TaskJob {
		if int(j) < len(s.jobTasks) {
			s.jobTasks[j] = append(s.jobTasks[j], uint32(t))
		}
	}
	return s
}

func (s *Session) Nodes() int  { return len(s.Snap.NodeUnschedulable) }
func (s *Session) Queues() int { return len(s.Snap.QueueParent) }
func (s *Session) Jobs() int   { return len(s.Snap.JobQueue) }
func (s *Session) Tasks() int  { return len(s.Snap.TaskJob) }

// Str is an interned string ("" for an id out of range).
func (s *Session) Str(id uint32) string {
	if int(id) < len(s.Snap.Strings) {
		return s.Snap.Strings[id]
	}
	return ""
}

// StrID is the id of an interned string.
func (s *Session) StrID(text string) (uint32, bool) {
	if s.strings == nil {
		s.strings = make(map[string]uint32, len(s.Snap.Strings))
		for i, v := range s.Snap.Strings {
			s.strings[v] = uint32(i)
		}
	}
	id, ok := s.strings[text]
	return id, ok
}

// Dim is the index of a resource dimension ("cpu", "nvidia.com/gpu").
func (s *Session) Dim(name string) (int, bool) {
	for i, d := range s.Snap.Dims {
		if d == name {
			return i, true
		}
	}
	return 0, false
}

func (s *Session) row(column []float64, i uint32) Resources {
	return Resources{s, column[int(i)*s.D : (int(i)+1)*s.D]}
}

// TaskRequest is a task's resource request.
func (s *Session) TaskRequest(t uint32) Resources { return s.row(s.Snap.TaskResreq, t) }

// NodeAllocatable is a node's allocatable resources.
func (s *Session) NodeAllocatable(n uint32) Resources { return s.row(s.Snap.NodeAllocatable, n) }

// NodeUsed is what holding tasks use on a node.
func (s *Session) NodeUsed(n uint32) Resources { return s.row(s.Snap.NodeUsed, n) }

// NodeIdle is allocatable minus used.
func (s *Session) NodeIdle(n uint32) Resources {
	a, u := s.NodeAllocatable(n), s.NodeUsed(n)
	out := make([]float64, s.D)
	for k := range out {
		out[k] = a.Row[k] - u.Row[k]
	}
	return Resources{s, out}
}

// NodeLabel is a node's label value, if it has the label.
func (s *Session) NodeLabel(n uint32, key string) (string, bool) {
	return s.label(s.Snap.NodeLabels, n, key)
}

func (s *Session) TaskJob(t uint32) uint32         { return s.Snap.TaskJob[t] }
func (s *Session) TaskNode(t uint32) uint32        { return s.Snap.TaskNode[t] }
func (s *Session) TaskStatus(t uint32) TaskStatus  { return s.Snap.TaskStatus[t] }
func (s *Session) JobQueue(j uint32) uint32        { return s.Snap.JobQueue[j] }
func (s *Session) JobTasks(j uint32) []uint32      { return s.jobTasks[j] }
func (s *Session) Placed(t uint32) bool            { return Holds(s.Snap.TaskStatus[t]) }
func (s *Session) TaskNamespace(t uint32) string   { return s.Str(s.Snap.TaskNamespace[t]) }
func (s *Session) NodeName(n uint32) string        { return s.Str(s.Snap.NodeName[n]) }
func (s *Session) JobMinAvailable(j uint32) uint32 { return s.Snap.JobMinAvailable[j] }
func (s *Session) QueueWeight(q uint32) float64    { return s.Snap.QueueWeight[q] }
func (s *Session) TaskPreemptable(t uint32) bool   { return s.Snap.TaskPreemptable[t] }
func (s *Session) TaskStartedMs(t uint32) int64    { return s.Snap.TaskStartedMs[t] }
func (s *Session) NowMs() int64                    { return s.Snap.NowMs }
func (s *Session) NodeUnschedulable(n uint32) bool { return s.Snap.NodeUnschedulable[n] }
func (s *Session) NodeHypernode(n uint32) uint32   { return s.Snap.NodeHypernode[n] }
func (s *Session) HypernodeTier(h uint32) uint32   { return s.Snap.HypernodeTier[h] }
func (s *Session) HypernodeParent(h uint32) uint32 { return s.Snap.HypernodeParent[h] }
func (s *Session) JobPriority(j uint32) int32      { return s.Snap.JobPriority[j] }
func (s *Session) TaskPriority(t uint32) int32     { return s.Snap.TaskPriority[t] }
func (s *Session) QueueParent(q uint32) uint32     { return s.Snap.QueueParent[q] }
func (s *Session) JobCreatedMs(j uint32) int64     { return s.Snap.JobCreatedMs[j] }
func (s *Session) TaskEstimatedMs(t uint32) int64  { return s.Snap.TaskEstimatedMs[t] }
func (s *Session) ReservationTargets() []uint32    { return s.Snap.ReservationTargets }
func (s *Session) JobAnnotation(j uint32, key string) (string, bool) {
	return s.label(s.Snap.JobAnnotations, j, key)
}

func (s *Session) label(labels []types.Label, owner uint32, key string) (string, bool) {
	k, ok := s.StrID(key)
	if !ok {
		return "", false
	}
	for _, l := range labels {
		if l.Owner == owner && l.Key == k {
			return s.Str(l.Value), true
		}
	}
	return "", false
}

// Apply applies one event (a task moved to a status on a node) and returns
// the task's status and node before.
func (s *Session) Apply(e Event) (TaskStatus, uint32) {
	t := e.Task
	old, oldNode := s.Snap.TaskStatus[t], s.Snap.TaskNode[t]
	place(&s.Snap, t, oldNode, old, -1)
	place(&s.Snap, t, e.Node, e.Status, 1)
	s.Snap.TaskStatus[t], s.Snap.TaskNode[t] = e.Status, e.Node
	return old, oldNode
}

// place adds (sign 1) or removes (-1) task t's request in the node columns
// its status counts in.
func place(snap *Snapshot, t, node uint32, st TaskStatus, sign float64) {
	if node == None || int(node) >= len(snap.NodeUnschedulable) {
		return
	}
	used, releasing, pipelined := shares(st)
	d := len(snap.Dims)
	req := snap.TaskResreq[int(t)*d : (int(t)+1)*d]
	for c, on := range []bool{used, releasing, pipelined} {
		if !on {
			continue
		}
		column := [][]float64{snap.NodeUsed, snap.NodeReleasing, snap.NodePipelined}[c]
		for k := 0; k < d; k++ {
			column[int(node)*d+k] += sign * req[k]
		}
	}
}

// DeltaRows are the delta's columns applied row by row; every other
// column of the delta replaces the snapshot's column of the same name.
var DeltaRows = map[string]bool{
	"Tasks": true, "TaskStatus": true, "TaskNode": true, "TaskStartedMs": true, "Nodes": true, "NodeUsed": true,
	"NodeReleasing": true, "NodePipelined": true, "Residents": true, "ResidentNode": true,
}

// Update brings the session up to date with a snapshot-delta.
func (s *Session) Update(delta SnapshotDelta) error {
	n, d := len(delta.Tasks), s.D
	if len(delta.TaskStatus) != n || len(delta.TaskNode) != n || len(delta.TaskStartedMs) != n ||
		len(delta.NodeUsed) != len(delta.Nodes)*d || len(delta.NodeReleasing) != len(delta.Nodes)*d ||
		len(delta.NodePipelined) != len(delta.Nodes)*d || len(delta.ResidentNode) != len(delta.Residents) {
		return fmt.Errorf("snapshot-delta does not fit the kept session (lengths)")
	}
	for _, t := range delta.Tasks {
		if int(t) >= s.Tasks() {
			return fmt.Errorf("snapshot-delta names task %d of %d", t, s.Tasks())
		}
	}
	for _, x := range delta.Nodes {
		if int(x) >= s.Nodes() {
			return fmt.Errorf("snapshot-delta names node %d of %d", x, s.Nodes())
		}
	}
	for _, r := range delta.Residents {
		if int(r) >= len(s.Snap.ResidentNode) {
			return fmt.Errorf("snapshot-delta names resident %d of %d", r, len(s.Snap.ResidentNode))
		}
	}
	for i, t := range delta.Tasks {
		s.Snap.TaskStatus[t], s.Snap.TaskNode[t], s.Snap.TaskStartedMs[t] = delta.TaskStatus[i], delta.TaskNode[i], delta.TaskStartedMs[i]
	}
	for i, x := range delta.Nodes {
		copy(s.Snap.NodeUsed[int(x)*d:(int(x)+1)*d], delta.NodeUsed[i*d:(i+1)*d])
		copy(s.Snap.NodeReleasing[int(x)*d:(int(x)+1)*d], delta.NodeReleasing[i*d:(i+1)*d])
		copy(s.Snap.NodePipelined[int(x)*d:(int(x)+1)*d], delta.NodePipelined[i*d:(i+1)*d])
	}
	for i, r := range delta.Residents {
		s.Snap.ResidentNode[r] = delta.ResidentNode[i]
	}
	// The columns the host sets afresh each cycle, by name (contract.go
	// lists them from wit/): a new one needs no change here.
	src, dst := reflect.ValueOf(delta), reflect.ValueOf(&s.Snap).Elem()
	for _, column := range DeltaColumns {
		if !DeltaRows[column] {
			dst.FieldByName(column).Set(src.FieldByName(column))
		}
	}
	return nil
}
