package tephra

import types "tephra.dev/bindings/imports/tephra_scheduler_types"

// Builder builds a snapshot by hand, for unit tests of a policy under plain
// Go: nodes, queues, jobs and tasks added one by one, ids returned in order.
// Rows are over Dims (default cpu millicores, memory bytes, pods).
type Builder struct {
	Snap Snapshot
}

// NewBuilder starts an empty snapshot over these dimensions.
func NewBuilder(dims ...string) *Builder {
	if len(dims) == 0 {
		dims = []string{"cpu", "memory", "pods"}
	}
	b := &Builder{}
	b.Snap.Dims = dims
	b.Snap.Strings = []string{""}
	b.Snap.Total = make([]float64, len(dims))
	// The cluster's HyperNode (0), one tier above every other.
	b.Snap.HypernodeName = []uint32{0}
	b.Snap.HypernodeTier = []uint32{1}
	b.Snap.HypernodeParent = []uint32{None}
	return b
}

// String interns a string.
func (b *Builder) String(text string) uint32 {
	for i, v := range b.Snap.Strings {
		if v == text {
			return uint32(i)
		}
	}
	b.Snap.Strings = append(b.Snap.Strings, text)
	return uint32(len(b.Snap.Strings) - 1)
}

func (b *Builder) row(values []float64) []float64 {
	r := make([]float64, len(b.Snap.Dims))
	copy(r, values)
	return r
}

// Node adds a node with its allocatable row and labels.
func (b *Builder) Node(name string, allocatable []float64, labels map[string]string) uint32 {
	s := &b.Snap
	n := uint32(len(s.NodeUnschedulable))
	row := b.row(allocatable)
	s.NodeName = append(s.NodeName, b.String(name))
	s.NodeAllocatable = append(s.NodeAllocatable, row...)
	for k, x := range row {
		s.Total[k] += x
	}
	zero := make([]float64, len(row))
	s.NodeUsed = append(s.NodeUsed, zero...)
	s.NodeReleasing = append(s.NodeReleasing, zero...)
	s.NodePipelined = append(s.NodePipelined, zero...)
	s.NodeUnschedulable = append(s.NodeUnschedulable, false)
	s.NodeLockedJob = append(s.NodeLockedJob, None)
	s.NodeLockedQueue = append(s.NodeLockedQueue, None)
	s.NodeHypernode = append(s.NodeHypernode, 0)
	for k, v := range labels {
		s.NodeLabels = append(s.NodeLabels, types.Label{Owner: n, Key: b.String(k), Value: b.String(v)})
	}
	return n
}

// Queue adds a root queue with this weight.
func (b *Builder) Queue(weight float64) uint32 {
	s := &b.Snap
	s.QueueParent = append(s.QueueParent, None)
	s.QueueWeight = append(s.QueueWeight, weight)
	s.QueuePriority = append(s.QueuePriority, 0)
	s.QueueReclaimable = append(s.QueueReclaimable, true)
	s.QueueState = append(s.QueueState, types.QueueState_Open)
	s.QueueGuaranteed = append(s.QueueGuaranteed, false)
	return uint32(len(s.QueueParent) - 1)
}

// Job adds an Inqueue job of a queue with its gang minimum.
func (b *Builder) Job(queue, minAvailable uint32) uint32 {
	s := &b.Snap
	s.JobQueue = append(s.JobQueue, queue)
	s.JobMinAvailable = append(s.JobMinAvailable, minAvailable)
	s.JobHasMinResources = append(s.JobHasMinResources, false)
	s.JobPriority = append(s.JobPriority, 0)
	s.JobPhase = append(s.JobPhase, types.JobPhase_Inqueue)
	s.JobCreatedMs = append(s.JobCreatedMs, int64(len(s.JobQueue)))
	s.JobHighestTier = append(s.JobHighestTier, None)
	s.JobTopology = append(s.JobTopology, false)
	return uint32(len(s.JobQueue) - 1)
}

// Task adds a task of a job with its request, in a status on a node (None: on none).
func (b *Builder) Task(job uint32, request []float64, status TaskStatus, node uint32) uint32 {
	s := &b.Snap
	t := uint32(len(s.TaskJob))
	row := b.row(request)
	s.TaskJob = append(s.TaskJob, job)
	s.TaskStatus = append(s.TaskStatus, status)
	s.TaskNode = append(s.TaskNode, node)
	s.TaskResreq = append(s.TaskResreq, row...)
	s.TaskPriority = append(s.TaskPriority, 0)
	s.TaskPreemptable = append(s.TaskPreemptable, true)
	s.TaskRole = append(s.TaskRole, 0)
	s.TaskNamespace = append(s.TaskNamespace, b.String("default"))
	s.TaskPriorityClass = append(s.TaskPriorityClass, 0)
	s.TaskCreatedMs = append(s.TaskCreatedMs, int64(t))
	s.TaskStartedMs = append(s.TaskStartedMs, 0)
	s.TaskEstimatedMs = append(s.TaskEstimatedMs, 0)
	s.TaskSubgroup = append(s.TaskSubgroup, None)
	place(s, t, node, status, 1)
	return t
}

// Session is a session over the snapshot built so far.
func (b *Builder) Session() *Session { return NewSession(b.Snap) }
