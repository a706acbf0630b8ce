//! Benchmark baseline only: the plugin crates compiled natively and called
//! through the same dispatcher as their Wasm builds. The host's and the
//! SDK's contract types are generated from the same WIT by different tools,
//! so values are converted field by field.

use std::sync::Arc;
use tephra::plugin::{Answer, Backend, Call, Reasons};
use tephra::session::Names;
use tephra::wasm::contract as h;
use tephra_sdk::types as g;
use tephra_sdk::{Policy, Runtime};

trait To<T> {
    fn to(&self) -> T;
}

macro_rules! same {
    ($($t:ty),*) => { $(impl To<$t> for $t { fn to(&self) -> $t { self.clone() } })* };
}
same!(u32, i32, i64, f64, bool, u8, String);

impl<A: To<B>, B> To<Vec<B>> for Vec<A> {
    fn to(&self) -> Vec<B> {
        self.iter().map(To::to).collect()
    }
}

macro_rules! record {
    ($from:ty => $into:path { $($f:ident),* }) => {
        impl To<$into> for $from {
            fn to(&self) -> $into { use $into as R; R { $($f: self.$f.to()),* } }
        }
    };
}
macro_rules! enumeration {
    ($from:ident => $into:ident { $($v:ident),* }) => {
        impl To<$into::$from> for h::$from {
            fn to(&self) -> $into::$from { match self { $(h::$from::$v => $into::$from::$v),* } }
        }
    };
}
enumeration!(TaskStatus => g { Pending, Allocated, Pipelined, Binding, Bound, Running, Releasing, Succeeded, Failed, Unknown });
enumeration!(JobPhase => g { Pending, Inqueue, Running, Unknown, Completed });
enumeration!(QueueState => g { Open, Closed, Closing, Unknown });
enumeration!(EventKind => g { Allocate, Deallocate });
record!(h::Label => g::Label { owner, key, value });
record!(h::Taint => g::Taint { node, key, value, effect });
record!(h::Toleration => g::Toleration { task, key, operator, value, effect });
record!(h::AffinityExpr => g::AffinityExpr { task, group, term, weight, field, key, operator, values });
record!(h::Requirement => g::Requirement { key, operator, values });
record!(h::PodTerm => g::PodTerm {
    pod, anti, weight, topology_key, selector, matches_nothing, namespaces, all_namespaces
});
record!(h::Spread => g::Spread {
    task, max_skew, topology_key, hard, selector, matches_nothing, min_domains, honor_node_affinity, honor_taints
});
record!(h::HostPort => g::HostPort { pod, port, protocol, ip });
record!(h::Image => g::Image { owner, name, size });
record!(h::Attachment => g::Attachment { pod, driver, handle });
record!(h::AttachLimit => g::AttachLimit { node, driver, count });
record!(h::Quantity => g::Quantity { owner, dim, value });
record!(h::RoleMin => g::RoleMin { job, role, count });
record!(h::Subgroup => g::Subgroup { job, policy, min_available, highest_tier, topology });
record!(h::Event => g::Event { kind, task, node, status });
record!(h::SnapshotDelta => g::SnapshotDelta {
    now_ms, tasks, task_status, task_node, task_started_ms, nodes, node_used, node_releasing, node_pipelined,
    residents, resident_node, node_locked_job, node_locked_queue, job_phase, reservation_targets
});
record!(h::Snapshot => g::Snapshot {
    dims, strings, total, now_ms, node_allocatable, node_used, node_releasing, node_pipelined, node_unschedulable,
    node_labels, node_taints, node_locked_job, node_locked_queue, queue_parent, queue_weight, queue_priority,
    queue_reclaimable, queue_state, queue_capability, queue_deserved, queue_guarantee, queue_annotations,
    queue_affinity, queue_guaranteed, queue_reserve_percentage, job_queue, job_min_available,
    job_has_min_resources, job_min_resources, job_min_task_member, job_priority, job_phase, job_created_ms,
    job_annotations, reservation_targets, task_job, task_status, task_node, task_resreq, task_priority,
    task_preemptable, task_role, task_namespace, task_priority_class, task_created_ms, task_started_ms,
    task_estimated_ms, task_node_selector, task_tolerations, task_affinity, node_name, resident_node,
    resident_namespace, pod_labels, pod_terms, pod_ports, task_spread, node_images, task_images, pod_attachments,
    node_attach_limits, hypernode_name, hypernode_tier, hypernode_parent, node_hypernode, job_highest_tier,
    job_topology, subgroups, task_subgroup, job_min_subgroups
});

fn vote(v: g::Vote) -> h::Vote {
    match v {
        g::Vote::Reject => h::Vote::Reject,
        g::Vote::Abstain => h::Vote::Abstain,
        g::Vote::Permit => h::Vote::Permit,
    }
}

fn point(p: &tephra_sdk::ExtensionPoint) -> h::ExtensionPoint {
    use h::ExtensionPoint as H;
    use tephra_sdk::ExtensionPoint as G;
    match p {
        G::QueueOrder => H::QueueOrder,
        G::JobOrder => H::JobOrder,
        G::TaskOrder => H::TaskOrder,
        G::VictimQueueOrder => H::VictimQueueOrder,
        G::Predicate => H::Predicate,
        G::NodeOrder => H::NodeOrder,
        G::Overused => H::Overused,
        G::Allocatable => H::Allocatable,
        G::Preemptive => H::Preemptive,
        G::JobValid => H::JobValid,
        G::JobReady => H::JobReady,
        G::JobPipelined => H::JobPipelined,
        G::JobEnqueueable => H::JobEnqueueable,
        G::JobEnqueued => H::JobEnqueued,
        G::JobStarving => H::JobStarving,
        G::Preemptable => H::Preemptable,
        G::Reclaimable => H::Reclaimable,
        G::VictimTasks => H::VictimTasks,
        G::TargetJob => H::TargetJob,
        G::ReservedNodes => H::ReservedNodes,
        G::QueueStatus => H::QueueStatus,
        G::HypernodeOrder => H::HypernodeOrder,
        G::Evictable => H::Evictable,
        G::Events => H::Events,
    }
}

/// A plugin crate running natively.
pub struct Native<P: Policy + Send> {
    rt: Runtime<P>,
    info: h::PluginInfo,
    reasons: Reasons,
}

impl<P: Policy + Send + 'static> Native<P> {
    pub fn boxed() -> Box<dyn Backend> {
        let i = Runtime::<P>::info();
        let info = h::PluginInfo {
            name: i.name,
            version: i.version,
            contract: i.contract,
            points: P::POINTS.iter().map(point).collect(),
        };
        Box::new(Native::<P> { rt: Runtime::default(), info, reasons: Reasons::default() })
    }
}

impl<P: Policy + Send> Backend for Native<P> {
    fn info(&self) -> &h::PluginInfo {
        &self.info
    }
    fn origin(&self) -> &str {
        "native"
    }
    fn open_session(&mut self, snap: &h::Snapshot, _: &Arc<Names>, args: &[(String, String)]) -> Result<(), String> {
        self.reasons.clear();
        self.rt.open_session(snap.to(), args.to_vec())
    }
    fn update_session(
        &mut self,
        delta: &h::SnapshotDelta,
        _: &Arc<Names>,
        args: &[(String, String)],
    ) -> Result<bool, String> {
        self.reasons.clear();
        self.rt.update_session(&delta.to(), args.to_vec())
    }
    fn close_session(&mut self) -> Result<(), String> {
        self.rt.close_session();
        Ok(())
    }
    fn on_events(&mut self, events: &[h::Event]) -> Result<(), String> {
        // As the Wasm backend does: one event by value, more as a list.
        match events {
            [e] => self.rt.on_events(&[e.to()]),
            _ => self.rt.on_events(&events.iter().map(To::to).collect::<Vec<g::Event>>()),
        }
        Ok(())
    }
    fn call(&mut self, call: Call<'_>) -> Result<Answer, String> {
        let rt = &mut self.rt;
        // The scalar forms for one node, as the Wasm backend takes them.
        match call {
            Call::Predicate(t, &[n]) => {
                let code = rt.predicate_node(t, n);
                return self.reasons.verdict(code, |c| {
                    let r = rt.explain(c);
                    Ok(h::Reason { message: r.message, unresolvable: r.unresolvable })
                });
            }
            Call::NodeOrder(t, &[n]) => return Ok(Answer::Keys(vec![rt.node_score(t, n)])),
            _ => {}
        }
        Ok(match call {
            Call::QueueOrder(ids) => Answer::Keys(rt.queue_order(ids)),
            Call::JobOrder(ids) => Answer::Keys(rt.job_order(ids)),
            Call::TaskOrder(ids) => Answer::Keys(rt.task_order(ids)),
            Call::VictimQueueOrder(ids, q) => Answer::Keys(rt.victim_queue_order(ids, q)),
            Call::Predicate(t, nodes) => {
                let f = rt.predicate(t, nodes);
                let reasons = f
                    .reasons
                    .into_iter()
                    .map(|r| h::Reason { message: r.message, unresolvable: r.unresolvable })
                    .collect();
                Answer::Fit(h::Fit { codes: f.codes, reasons })
            }
            Call::NodeOrder(t, nodes) => Answer::Keys(rt.node_order(t, nodes)),
            Call::HypernodeOrder(j, g, hns) => Answer::Keys(rt.hypernode_order(j, g, hns)),
            Call::Evictable(k, j, h, c) => {
                let k = match k {
                    h::EvictionKind::GangPreempt => g::EvictionKind::GangPreempt,
                    h::EvictionKind::GangReclaim => g::EvictionKind::GangReclaim,
                };
                let v = rt.evictable(k, j, h, c);
                Answer::Victims(h::Victims { tasks: v.tasks, vote: vote(v.vote) })
            }
            Call::Overused(q) => Answer::Bool(rt.overused(q)),
            Call::Allocatable(q, t) => Answer::Bool(rt.allocatable(q, t)),
            Call::Preemptive(q, t) => Answer::Bool(rt.preemptive(q, t)),
            Call::JobValid(j) => Answer::Invalid(rt.job_valid(j)),
            Call::JobReady(j) => Answer::Bool(rt.job_ready(j)),
            Call::JobPipelined(j) => Answer::Vote(vote(rt.job_pipelined(j))),
            Call::JobEnqueueable(j) => Answer::Vote(vote(rt.job_enqueueable(j))),
            Call::JobEnqueued(j) => {
                rt.job_enqueued(j);
                Answer::Unit
            }
            Call::JobStarving(j) => Answer::Bool(rt.job_starving(j)),
            Call::Preemptable(t, c) => {
                let v = rt.preemptable(t, c);
                Answer::Victims(h::Victims { tasks: v.tasks, vote: vote(v.vote) })
            }
            Call::Reclaimable(t, c) => {
                let v = rt.reclaimable(t, c);
                Answer::Victims(h::Victims { tasks: v.tasks, vote: vote(v.vote) })
            }
            Call::VictimTasks(c) => Answer::Ids(rt.victim_tasks(c)),
            Call::TargetJob(jobs) => Answer::Id(rt.target_job(jobs)),
            Call::ReservedNodes(owner, c) => Answer::Reserved(rt.reserved_nodes(
                match owner {
                    h::LockOwner::Job(j) => g::LockOwner::Job(j),
                    h::LockOwner::Queue(q) => g::LockOwner::Queue(q),
                },
                c,
            )),
            Call::QueueStatus(q) => {
                let f = rt.queue_status(q);
                Answer::QueueStatus(h::QueueFigures { deserved: f.deserved, share: f.share })
            }
        })
    }
}
