package tephra

// Named views over the session's columns: s.Node(n).Idle().CPU(),
// s.Task(t).Job().Queue().Weight(). A view is an id and the session.

// NodeView is a node.
type NodeView struct {
	s  *Session
	ID uint32
}

// TaskView is a task (a pod of a job).
type TaskView struct {
	s  *Session
	ID uint32
}

// JobView is a job (a PodGroup).
type JobView struct {
	s  *Session
	ID uint32
}

// QueueView is a queue.
type QueueView struct {
	s  *Session
	ID uint32
}

// HyperNodeView is a HyperNode (0: the whole cluster).
type HyperNodeView struct {
	s  *Session
	ID uint32
}

func (s *Session) Node(n uint32) NodeView           { return NodeView{s, n} }
func (s *Session) Task(t uint32) TaskView           { return TaskView{s, t} }
func (s *Session) Job(j uint32) JobView             { return JobView{s, j} }
func (s *Session) Queue(q uint32) QueueView         { return QueueView{s, q} }
func (s *Session) HyperNode(h uint32) HyperNodeView { return HyperNodeView{s, h} }
func (n NodeView) Name() string                     { return n.s.NodeName(n.ID) }
func (n NodeView) Allocatable() Resources           { return n.s.NodeAllocatable(n.ID) }
func (n NodeView) Used() Resources                  { return n.s.NodeUsed(n.ID) }
func (n NodeView) Idle() Resources                  { return n.s.NodeIdle(n.ID) }
func (n NodeView) Label(key string) (string, bool)  { return n.s.NodeLabel(n.ID, key) }
func (n NodeView) HyperNode() HyperNodeView         { return HyperNodeView{n.s, n.s.NodeHypernode(n.ID)} }
func (t TaskView) Job() JobView                     { return JobView{t.s, t.s.TaskJob(t.ID)} }
func (t TaskView) Status() TaskStatus               { return t.s.TaskStatus(t.ID) }
func (t TaskView) Request() Resources               { return t.s.TaskRequest(t.ID) }
func (t TaskView) Namespace() string                { return t.s.TaskNamespace(t.ID) }
func (j JobView) Queue() QueueView                  { return QueueView{j.s, j.s.JobQueue(j.ID)} }
func (j JobView) MinAvailable() uint32              { return j.s.JobMinAvailable(j.ID) }
func (q QueueView) Weight() float64                 { return q.s.QueueWeight(q.ID) }
func (h HyperNodeView) Tier() uint32                { return h.s.HypernodeTier(h.ID) }
func (h HyperNodeView) Name() string                { return h.s.Str(h.s.Snap.HypernodeName[h.ID]) }

// Node is the task's node, when it has one.
func (t TaskView) Node() (NodeView, bool) {
	n := t.s.TaskNode(t.ID)
	return NodeView{t.s, n}, n != None && int(n) < t.s.Nodes()
}

// Tasks are the job's tasks.
func (j JobView) Tasks() []TaskView {
	ids := j.s.JobTasks(j.ID)
	out := make([]TaskView, len(ids))
	for i, t := range ids {
		out[i] = TaskView{j.s, t}
	}
	return out
}

// Parent is the queue's parent, unless it is a root.
func (q QueueView) Parent() (QueueView, bool) {
	p := q.s.QueueParent(q.ID)
	return QueueView{q.s, p}, p != None
}

// Parent is the HyperNode above, unless it is the cluster.
func (h HyperNodeView) Parent() (HyperNodeView, bool) {
	p := h.s.HypernodeParent(h.ID)
	return HyperNodeView{h.s, p}, p != None
}
