// Package tephra is the Go SDK for tephra scheduling policies.
//
// A policy is a type with a Name; the extension points it implements are
// the interfaces below it satisfies (NodeOrderer, Predicater, ...), each
// with Volcano's neutral answer when absent. Register a constructor in the
// plugin's main package; tephra-go.sh builds the component, exporting the
// points the policy implements and nothing else. The Session is the view
// of the columnar snapshot, kept current with the host's events and deltas.
package tephra

import "sort"

// Policy is what every policy implements: the name the scheduler config uses.
type Policy interface {
	Name() string
}

// Versioned policies report a version (default "0.1.0").
type Versioned interface{ Version() string }

// Opener starts a session; an error refuses it (bad arguments), reported by the host.
type Opener interface {
	Open(s *Session, args map[string]string) error
}

// Resumer continues the last session after the SDK applied a delta: true
// keeps this policy; false (or not implementing it) opens a fresh one.
type Resumer interface {
	Resume(s *Session, args map[string]string) (bool, error)
}

// Closer is told when the session closes.
type Closer interface{ Close(s *Session) }

// EventHandler runs after the session applied an event; the task's status and node before.
type EventHandler interface {
	OnEvent(s *Session, e Event, oldStatus TaskStatus, oldNode uint32)
}

// Flusher policies want every event batch before the session closes.
type Flusher interface{ FlushEvents() bool }

// Vote is Volcano's vote.
type Vote int

const (
	Abstain Vote = iota
	Permit
	Reject
)

// Unfit says why a task does not fit a node; Unresolvable: evictions cannot help.
type Unfit struct {
	Message      string
	Unresolvable bool
}

// Why is an Unfit that evictions may resolve.
func Why(message string) *Unfit { return &Unfit{Message: message} }

// The extension points, one interface each (ids are the snapshot's dense ids).
type (
	QueueOrderer interface {
		QueueOrder(s *Session, queue uint32) float64
	}
	JobOrderer interface {
		JobOrder(s *Session, job uint32) float64
	}
	TaskOrderer interface {
		TaskOrder(s *Session, task uint32) float64
	}
	VictimQueueOrderer interface {
		VictimQueueOrder(s *Session, queue, preemptorQueue uint32) float64
	}
	// Predicater: nil fits.
	Predicater interface {
		Predicate(s *Session, task, node uint32) *Unfit
	}
	NodeOrderer interface {
		NodeScore(s *Session, task, node uint32) float64
	}
	Overuser interface {
		Overused(s *Session, queue uint32) bool
	}
	Allocatabler interface {
		Allocatable(s *Session, queue, task uint32) bool
	}
	Preemptiver interface {
		Preemptive(s *Session, queue, task uint32) bool
	}
	JobValidator interface {
		JobValid(s *Session, job uint32) error
	}
	JobReadier interface {
		JobReady(s *Session, job uint32) bool
	}
	JobPipeliner interface {
		JobPipelined(s *Session, job uint32) Vote
	}
	JobEnqueuer interface {
		JobEnqueueable(s *Session, job uint32) Vote
	}
	EnqueueWatcher interface{ JobEnqueued(s *Session, job uint32) }
	JobStarver     interface {
		JobStarving(s *Session, job uint32) bool
	}
	Preemptabler interface {
		Preemptable(s *Session, preemptor uint32, candidates []uint32) ([]uint32, Vote)
	}
	Reclaimabler interface {
		Reclaimable(s *Session, preemptor uint32, candidates []uint32) ([]uint32, Vote)
	}
	VictimTasker interface {
		VictimTasks(s *Session, candidates []uint32) []uint32
	}
	// TargetJobber: ok false names no job.
	TargetJobber interface {
		TargetJob(s *Session, jobs []uint32) (job uint32, ok bool)
	}
	// NodeReserver: an error refuses the reservation with its message.
	NodeReserver interface {
		ReservedNodes(s *Session, owner LockOwner, candidates []uint32) ([]uint32, error)
	}
	// QueueStatuser: the queue's deserved row (one number per dimension) and share.
	QueueStatuser interface {
		QueueStatus(s *Session, queue uint32) ([]float64, float64)
	}
	HypernodeOrderer interface {
		HypernodeOrder(s *Session, job, subgroup, hypernode uint32) float64
	}
	Evicter interface {
		Evictable(s *Session, kind EvictionKind, job, hypernode uint32, candidates []uint32) ([]uint32, Vote)
	}
)

// implements says, per extension point (the interface a plugin exports),
// whether a policy implements it.
var implements = map[string]func(Policy) bool{
	"queue-order":        func(p Policy) bool { _, ok := p.(QueueOrderer); return ok },
	"job-order":          func(p Policy) bool { _, ok := p.(JobOrderer); return ok },
	"task-order":         func(p Policy) bool { _, ok := p.(TaskOrderer); return ok },
	"victim-queue-order": func(p Policy) bool { _, ok := p.(VictimQueueOrderer); return ok },
	"predicate":          func(p Policy) bool { _, ok := p.(Predicater); return ok },
	"node-order":         func(p Policy) bool { _, ok := p.(NodeOrderer); return ok },
	"overused":           func(p Policy) bool { _, ok := p.(Overuser); return ok },
	"allocatable":        func(p Policy) bool { _, ok := p.(Allocatabler); return ok },
	"preemptive":         func(p Policy) bool { _, ok := p.(Preemptiver); return ok },
	"job-valid":          func(p Policy) bool { _, ok := p.(JobValidator); return ok },
	"job-ready":          func(p Policy) bool { _, ok := p.(JobReadier); return ok },
	"job-pipelined":      func(p Policy) bool { _, ok := p.(JobPipeliner); return ok },
	"job-enqueueable":    func(p Policy) bool { _, ok := p.(JobEnqueuer); return ok },
	"job-enqueued":       func(p Policy) bool { _, ok := p.(EnqueueWatcher); return ok },
	"job-starving":       func(p Policy) bool { _, ok := p.(JobStarver); return ok },
	"preemptable":        func(p Policy) bool { _, ok := p.(Preemptabler); return ok },
	"reclaimable":        func(p Policy) bool { _, ok := p.(Reclaimabler); return ok },
	"victim-tasks":       func(p Policy) bool { _, ok := p.(VictimTasker); return ok },
	"target-job":         func(p Policy) bool { _, ok := p.(TargetJobber); return ok },
	"reserved-nodes":     func(p Policy) bool { _, ok := p.(NodeReserver); return ok },
	"queue-status":       func(p Policy) bool { _, ok := p.(QueueStatuser); return ok },
	"hypernode-order":    func(p Policy) bool { _, ok := p.(HypernodeOrderer); return ok },
	"evictable":          func(p Policy) bool { _, ok := p.(Evicter); return ok },
}

// Implemented lists the points p implements, in the contract's order.
func Implemented(p Policy) []string {
	var out []string
	for _, point := range PointNames {
		if is, ok := implements[point]; ok && is(p) {
			out = append(out, point)
		}
	}
	return out
}

// World is the WIT world of a component serving p: the base plugin world
// and the points it implements.
func World(p Policy) string {
	w := "package local:plugin;\n\nworld plugin {\n    include tephra:scheduler/plugin@" + Contract + ";\n"
	for _, point := range Implemented(p) {
		w += "    export tephra:scheduler/" + point + "@" + Contract + ";\n"
	}
	return w + "}\n"
}

// knownPoints is the SDK's point table, sorted (tests compare it with the contract's).
func knownPoints() []string {
	out := make([]string, 0, len(implements))
	for p := range implements {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
