package tephra

import (
	"fmt"
	"math"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	host "tephra.dev/bindings/imports/tephra_scheduler_host"
	session "tephra.dev/bindings/imports/tephra_scheduler_session"
	types "tephra.dev/bindings/imports/tephra_scheduler_types"
)

// Register names the policy a component serves: New makes a fresh policy
// for each session. Call it from the plugin's main package (tephra-go.sh
// writes that package).
func Register(newPolicy func() Policy) { Exports.newPolicy = newPolicy }

// Log writes to the host's log at info level (fmt.Print's output is discarded).
func Log(format string, args ...any) { host.Log(host.Level_Info, fmt.Sprintf(format, args...)) }

// Exports answers the contract's exported functions for the registered
// policy; the component's export glue (generated per build) calls it.
var Exports = &exports{}

type exports struct {
	newPolicy func() Policy
	policy    Policy
	session   *Session
	last      *Session
	reasons   []types.Reason
	codes     map[types.Reason]uint32
}

func (x *exports) fresh() {
	x.policy = x.newPolicy()
	x.reasons, x.codes = nil, map[types.Reason]uint32{}
}

func arguments(args []witTypes.Tuple2[string, string]) map[string]string {
	out := make(map[string]string, len(args))
	for _, a := range args {
		out[a.F0] = a.F1
	}
	return out
}

func (x *exports) failure(err error) string { return x.policy.Name() + ": " + err.Error() }

func (x *exports) Info() session.PluginInfo {
	p := x.newPolicy()
	version := "0.1.0"
	if v, ok := p.(Versioned); ok {
		version = v.Version()
	}
	flush := false
	if f, ok := p.(Flusher); ok {
		flush = f.FlushEvents()
	}
	return session.PluginInfo{Name: p.Name(), Version: version, Contract: Contract, FlushEvents: flush}
}

func (x *exports) OpenSession(snap Snapshot, args []witTypes.Tuple2[string, string]) witTypes.Result[witTypes.Unit, string] {
	x.last = nil
	x.fresh()
	x.session = NewSession(snap)
	if o, ok := x.policy.(Opener); ok {
		if err := o.Open(x.session, arguments(args)); err != nil {
			return witTypes.Err[witTypes.Unit, string](x.failure(err))
		}
	}
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

func (x *exports) UpdateSession(delta SnapshotDelta, args []witTypes.Tuple2[string, string]) witTypes.Result[bool, string] {
	if x.last == nil {
		return witTypes.Ok[bool, string](false)
	}
	s := x.last
	x.last = nil
	if err := s.Update(delta); err != nil {
		return witTypes.Err[bool, string](x.failure(err))
	}
	x.session = s
	x.reasons, x.codes = nil, map[types.Reason]uint32{}
	a := arguments(args)
	keep := false
	if r, ok := x.policy.(Resumer); ok {
		var err error
		if keep, err = r.Resume(s, a); err != nil {
			return witTypes.Err[bool, string](x.failure(err))
		}
	}
	if !keep {
		x.fresh()
		if o, ok := x.policy.(Opener); ok {
			if err := o.Open(s, a); err != nil {
				return witTypes.Err[bool, string](x.failure(err))
			}
		}
	}
	return witTypes.Ok[bool, string](true)
}

func (x *exports) CloseSession() {
	if c, ok := x.policy.(Closer); ok && x.session != nil {
		c.Close(x.session)
	}
	x.last, x.session = x.session, nil
}

func (x *exports) OnEvents(events []Event) {
	for _, e := range events {
		x.OnEvent(e)
	}
}

func (x *exports) OnEvent(e Event) {
	if x.session == nil {
		return
	}
	old, oldNode := x.session.Apply(e)
	if h, ok := x.policy.(EventHandler); ok {
		h.OnEvent(x.session, e, old, oldNode)
	}
}

func keys(ids []uint32, f func(uint32) float64) []float64 {
	out := make([]float64, len(ids))
	for i, id := range ids {
		out[i] = f(id)
	}
	return out
}

func (x *exports) QueueOrder(queues []uint32) []float64 {
	p := x.policy.(QueueOrderer)
	return keys(queues, func(q uint32) float64 { return p.QueueOrder(x.session, q) })
}

func (x *exports) JobOrder(jobs []uint32) []float64 {
	p := x.policy.(JobOrderer)
	return keys(jobs, func(j uint32) float64 { return p.JobOrder(x.session, j) })
}

func (x *exports) TaskOrder(tasks []uint32) []float64 {
	p := x.policy.(TaskOrderer)
	return keys(tasks, func(t uint32) float64 { return p.TaskOrder(x.session, t) })
}

func (x *exports) VictimQueueOrder(queues []uint32, preemptorQueue uint32) []float64 {
	p := x.policy.(VictimQueueOrderer)
	return keys(queues, func(q uint32) float64 { return p.VictimQueueOrder(x.session, q, preemptorQueue) })
}

// code is this session's code of a rejection (1-based), each reason listed once.
func (x *exports) code(why *Unfit) uint32 {
	if why == nil {
		return 0
	}
	r := types.Reason{Message: why.Message, Unresolvable: why.Unresolvable}
	if c, ok := x.codes[r]; ok {
		return c
	}
	x.reasons = append(x.reasons, r)
	x.codes[r] = uint32(len(x.reasons))
	return x.codes[r]
}

func (x *exports) Predicate(task uint32, nodes []uint32) types.Fit {
	p := x.policy.(Predicater)
	// The contract's codes are bytes: reasons past the 254th share the last code.
	local := map[uint32]uint8{}
	var order []uint32
	codes := make([]uint8, len(nodes))
	for i, n := range nodes {
		c := x.code(p.Predicate(x.session, task, n))
		if c == 0 {
			continue
		}
		if _, ok := local[c]; !ok {
			local[c] = uint8(min(len(local)+1, 255))
			if len(order) < 255 {
				order = append(order, c)
			}
		}
		codes[i] = local[c]
	}
	reasons := make([]types.Reason, len(order))
	for i, c := range order {
		reasons[i] = x.reasons[c-1]
	}
	return types.Fit{Codes: codes, Reasons: reasons}
}

func (x *exports) PredicateNode(task, node uint32) uint32 {
	return x.code(x.policy.(Predicater).Predicate(x.session, task, node))
}

func (x *exports) Explain(code uint32) types.Reason {
	if code == 0 || int(code) > len(x.reasons) {
		return types.Reason{Message: fmt.Sprintf("%s: no reason has code %d", x.policy.Name(), code)}
	}
	return x.reasons[code-1]
}

func (x *exports) NodeOrder(task uint32, nodes []uint32) []float64 {
	p := x.policy.(NodeOrderer)
	return keys(nodes, func(n uint32) float64 { return p.NodeScore(x.session, task, n) })
}

func (x *exports) NodeScore(task, node uint32) float64 {
	return x.policy.(NodeOrderer).NodeScore(x.session, task, node)
}

func (x *exports) Overused(queue uint32) bool {
	return x.policy.(Overuser).Overused(x.session, queue)
}

func (x *exports) Allocatable(queue, task uint32) bool {
	return x.policy.(Allocatabler).Allocatable(x.session, queue, task)
}

func (x *exports) Preemptive(queue, task uint32) bool {
	return x.policy.(Preemptiver).Preemptive(x.session, queue, task)
}

func (x *exports) JobValid(job uint32) witTypes.Option[string] {
	if err := x.policy.(JobValidator).JobValid(x.session, job); err != nil {
		return witTypes.Some(err.Error())
	}
	return witTypes.None[string]()
}

func (x *exports) JobReady(job uint32) bool { return x.policy.(JobReadier).JobReady(x.session, job) }

func vote(v Vote) types.Vote {
	switch v {
	case Permit:
		return types.Vote_Permit
	case Reject:
		return types.Vote_Reject
	}
	return types.Vote_Abstain
}

func (x *exports) JobPipelined(job uint32) types.Vote {
	return vote(x.policy.(JobPipeliner).JobPipelined(x.session, job))
}

func (x *exports) JobEnqueueable(job uint32) types.Vote {
	return vote(x.policy.(JobEnqueuer).JobEnqueueable(x.session, job))
}

func (x *exports) JobEnqueued(job uint32) { x.policy.(EnqueueWatcher).JobEnqueued(x.session, job) }

func (x *exports) JobStarving(job uint32) bool {
	return x.policy.(JobStarver).JobStarving(x.session, job)
}

func victims(tasks []uint32, v Vote) types.Victims {
	return types.Victims{Tasks: append([]uint32{}, tasks...), Vote: vote(v)}
}

func (x *exports) Preemptable(preemptor uint32, candidates []uint32) types.Victims {
	return victims(x.policy.(Preemptabler).Preemptable(x.session, preemptor, candidates))
}

func (x *exports) Reclaimable(preemptor uint32, candidates []uint32) types.Victims {
	return victims(x.policy.(Reclaimabler).Reclaimable(x.session, preemptor, candidates))
}

func (x *exports) VictimTasks(candidates []uint32) []uint32 {
	return append([]uint32{}, x.policy.(VictimTasker).VictimTasks(x.session, candidates)...)
}

func (x *exports) TargetJob(jobs []uint32) witTypes.Option[uint32] {
	if j, ok := x.policy.(TargetJobber).TargetJob(x.session, jobs); ok {
		return witTypes.Some(j)
	}
	return witTypes.None[uint32]()
}

func (x *exports) ReservedNodes(owner LockOwner, candidates []uint32) witTypes.Result[[]uint32, string] {
	nodes, err := x.policy.(NodeReserver).ReservedNodes(x.session, owner, candidates)
	if err != nil {
		return witTypes.Err[[]uint32, string](x.failure(err))
	}
	return witTypes.Ok[[]uint32, string](append([]uint32{}, nodes...))
}

func (x *exports) QueueStatus(queues []uint32) types.QueueFigures {
	p := x.policy.(QueueStatuser)
	out := types.QueueFigures{Deserved: []float64{}, Share: []float64{}}
	for _, q := range queues {
		row, share := p.QueueStatus(x.session, q)
		out.Deserved = append(out.Deserved, row...)
		if math.IsNaN(share) || math.IsInf(share, 0) {
			share = 0
		}
		out.Share = append(out.Share, share)
	}
	return out
}

func (x *exports) HypernodeOrder(job, subgroup uint32, hypernodes []uint32) []float64 {
	p := x.policy.(HypernodeOrderer)
	return keys(hypernodes, func(h uint32) float64 { return p.HypernodeOrder(x.session, job, subgroup, h) })
}

func (x *exports) Evictable(kind EvictionKind, job, hypernode uint32, candidates []uint32) types.Victims {
	return victims(x.policy.(Evicter).Evictable(x.session, kind, job, hypernode, candidates))
}
