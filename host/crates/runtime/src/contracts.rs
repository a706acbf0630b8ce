//! The contract versions a component may be built against, behind one face:
//! the current one (a `session` export plus one interface per extension
//! point it implements) and the earlier ones the host still loads (one
//! `policy` export with every point). A component's version is read from
//! its exports; the calls and their answers are the same for all.

use crate::state::State;
use anyhow::{anyhow, Result};
use tephra_contract::legacy::{delta_0_4, info_0_5, snapshot_0_4, snapshot_0_6};
use tephra_contract::world::v0_6::points as points_0_6;
use tephra_contract::world::{points, v0_4, v0_5, v0_6};
use tephra_contract::{Event, ExtensionPoint, PluginInfo, Reason, Snapshot, SnapshotDelta};
use tephra_dispatch::backend::{Answer, Call};
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::Store;

type Args<'a> = &'a [(String, String)];

/// Declares, for the current contract, the export lookup (before
/// instantiation) and the loaded exports of an instance: `session`, and
/// each point interface when the component exports it.
macro_rules! per_point {
    ($indices:ident, $exports:ident, $points:ident, $version:expr; $($field:ident: $point:ident),* $(,)?) => {
        /// Where a per-point contract's exports are in a component.
        #[derive(Clone)]
        pub struct $indices {
            session: $points::session::GuestIndices,
            $($field: Option<$points::$field::GuestIndices>,)*
        }

        /// A per-point contract's exports of one instance.
        pub struct $exports {
            session: $points::session::Guest,
            $($field: Option<$points::$field::Guest>,)*
        }

        impl $indices {
            fn new(pre: &InstancePre<State>) -> wasmtime::Result<$indices> {
                Ok($indices {
                    session: $points::session::GuestIndices::new(pre)?,
                    $($field: exported(pre, stringify!($field), $version)
                        .then(|| $points::$field::GuestIndices::new(pre))
                        .transpose()?,)*
                })
            }

            fn load(&self, store: &mut Store<State>, i: &wasmtime::component::Instance) -> wasmtime::Result<$exports> {
                Ok($exports {
                    session: self.session.load(&mut *store, i)?,
                    $($field: self.$field.as_ref().map(|x| x.load(&mut *store, i)).transpose()?,)*
                })
            }

            /// The extension points the component exports.
            fn points(&self) -> Vec<ExtensionPoint> {
                let mut v = Vec::new();
                $(if self.$field.is_some() { v.push(ExtensionPoint::$point); })*
                v
            }
        }
    };
}

/// Declares both per-point contracts' lookups with the points they share,
/// and `$more` that only the newer has.
macro_rules! both {
    ($($field:ident: $point:ident),* ; $($more:ident: $mpoint:ident),*) => {
        per_point!(Indices, Exports, points, tephra_contract::CONTRACT; $($field: $point,)* $($more: $mpoint,)*);
        per_point!(Indices0_6, Exports0_6, points_0_6, "0.6.0"; $($field: $point,)*);
    };
}

both!(
    queue_order: QueueOrder,
    job_order: JobOrder,
    task_order: TaskOrder,
    victim_queue_order: VictimQueueOrder,
    predicate: Predicate,
    node_order: NodeOrder,
    overused: Overused,
    allocatable: Allocatable,
    preemptive: Preemptive,
    job_valid: JobValid,
    job_ready: JobReady,
    job_pipelined: JobPipelined,
    job_enqueueable: JobEnqueueable,
    job_enqueued: JobEnqueued,
    job_starving: JobStarving,
    preemptable: Preemptable,
    reclaimable: Reclaimable,
    victim_tasks: VictimTasks,
    target_job: TargetJob,
    reserved_nodes: ReservedNodes,
    queue_status: QueueStatus;
    hypernode_order: HypernodeOrder,
    evictable: Evictable
);

/// Whether the component exports contract `version`'s interface for
/// `field` (`node_order` → `tephra:scheduler/node-order@0.7.0`).
fn exported(pre: &InstancePre<State>, field: &str, version: &str) -> bool {
    let name = format!("tephra:scheduler/{}@{version}", field.replace('_', "-"));
    pre.component().get_export_index(None, &name).is_some()
}

/// A compiled component ready to instantiate, by contract version.
#[derive(Clone)]
pub enum Pre {
    Current(InstancePre<State>, Indices),
    V0_6(InstancePre<State>, Indices0_6),
    V0_5(v0_5::PluginPre<State>),
    V0_4(v0_4::PluginPre<State>),
}

/// One instance's exports, by contract version.
pub enum Instance {
    Current(Exports),
    V0_6(Exports0_6),
    V0_5(v0_5::Plugin),
    V0_4(v0_4::Plugin),
}

/// The export that marks a component of contract `version`: `session`
/// from 0.6.0 on, an earlier one's `policy`.
fn marker(version: &str) -> String {
    let interface = if matches!(version, "0.5.0" | "0.4.0") { "policy" } else { "session" };
    format!("tephra:scheduler/{interface}@{version}")
}

/// The contract version a component's exports say it was built against.
pub fn version_of(component: &Component) -> Option<&'static str> {
    tephra_contract::SUPPORTED.into_iter().find(|v| component.get_export_index(None, marker(v)).is_some())
}

impl Pre {
    /// Prepares a component of contract `version` (from [`version_of`]).
    pub fn new(version: &str, pre: InstancePre<State>) -> wasmtime::Result<Pre> {
        Ok(match version {
            "0.5.0" => Pre::V0_5(v0_5::PluginPre::new(pre)?),
            "0.4.0" => Pre::V0_4(v0_4::PluginPre::new(pre)?),
            "0.6.0" => {
                let indices = Indices0_6::new(&pre)?;
                Pre::V0_6(pre, indices)
            }
            _ => {
                let indices = Indices::new(&pre)?;
                Pre::Current(pre, indices)
            }
        })
    }

    pub fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Instance> {
        Ok(match self {
            Pre::Current(pre, indices) => {
                let i = pre.instantiate(&mut *store)?;
                Instance::Current(indices.load(store, &i)?)
            }
            Pre::V0_6(pre, indices) => {
                let i = pre.instantiate(&mut *store)?;
                Instance::V0_6(indices.load(store, &i)?)
            }
            Pre::V0_5(pre) => Instance::V0_5(pre.instantiate(store)?),
            Pre::V0_4(pre) => Instance::V0_4(pre.instantiate(store)?),
        })
    }

    /// What the instance says about itself, with the points it implements:
    /// listed by an earlier contract, exported under the current one.
    pub fn info(&self, instance: &Instance, store: &mut Store<State>) -> wasmtime::Result<PluginInfo> {
        Ok(match (self, instance) {
            (Pre::Current(_, indices), Instance::Current(x)) => {
                let i = x.session.call_info(store)?;
                let mut points = indices.points();
                if i.flush_events {
                    points.push(ExtensionPoint::Events);
                }
                PluginInfo { name: i.name, version: i.version, contract: i.contract, points }
            }
            (Pre::V0_6(_, indices), Instance::V0_6(x)) => {
                let i = x.session.call_info(store)?;
                let mut points = indices.points();
                if i.flush_events {
                    points.push(ExtensionPoint::Events);
                }
                PluginInfo { name: i.name, version: i.version, contract: i.contract, points }
            }
            (_, Instance::V0_5(p)) => info_0_5(p.tephra_scheduler0_5_0_policy().call_info(store)?),
            (_, Instance::V0_4(p)) => info_0_5(p.tephra_scheduler0_4_0_policy().call_info(store)?),
            _ => unreachable!("an instance comes from its own Pre"),
        })
    }
}

/// A point the host asked about that the component does not export.
fn missing(point: &str) -> wasmtime::Error {
    wasmtime::format_err!("the plugin does not export the {point} interface")
}

/// An exported point interface, or the fault of asking a plugin about a
/// point it does not implement.
macro_rules! point {
    ($x:expr, $field:ident) => {
        $x.$field.as_ref().ok_or_else(|| missing(stringify!($field)))?
    };
}

/// Every call of an earlier contract's `policy` (their functions are the
/// same; only the snapshot types differ).
macro_rules! legacy_call {
    ($p:expr, $s:expr, $call:expr) => {{
        let (p, s) = ($p, $s);
        match $call {
            Call::QueueOrder(ids) => Answer::Keys(p.call_queue_order(s, ids)?),
            Call::JobOrder(ids) => Answer::Keys(p.call_job_order(s, ids)?),
            Call::TaskOrder(ids) => Answer::Keys(p.call_task_order(s, ids)?),
            Call::VictimQueueOrder(ids, q) => Answer::Keys(p.call_victim_queue_order(s, ids, q)?),
            Call::Predicate(t, nodes) => Answer::Fit(p.call_predicate(s, t, nodes)?),
            Call::NodeOrder(t, nodes) => Answer::Keys(p.call_node_order(s, t, nodes)?),
            Call::Overused(q) => Answer::Bool(p.call_overused(s, q)?),
            Call::Allocatable(q, t) => Answer::Bool(p.call_allocatable(s, q, t)?),
            Call::Preemptive(q, t) => Answer::Bool(p.call_preemptive(s, q, t)?),
            Call::JobValid(j) => Answer::Invalid(p.call_job_valid(s, j)?),
            Call::JobReady(j) => Answer::Bool(p.call_job_ready(s, j)?),
            Call::JobPipelined(j) => Answer::Vote(p.call_job_pipelined(s, j)?),
            Call::JobEnqueueable(j) => Answer::Vote(p.call_job_enqueueable(s, j)?),
            Call::JobEnqueued(j) => {
                p.call_job_enqueued(s, j)?;
                Answer::Unit
            }
            Call::JobStarving(j) => Answer::Bool(p.call_job_starving(s, j)?),
            Call::Preemptable(t, c) => Answer::Victims(p.call_preemptable(s, t, c)?),
            Call::Reclaimable(t, c) => Answer::Victims(p.call_reclaimable(s, t, c)?),
            Call::VictimTasks(c) => Answer::Ids(p.call_victim_tasks(s, c)?),
            Call::TargetJob(jobs) => Answer::Id(p.call_target_job(s, jobs)?),
            Call::ReservedNodes(owner, c) => Answer::Reserved(p.call_reserved_nodes(s, owner, c)?),
            Call::QueueStatus(q) => Answer::QueueStatus(p.call_queue_status(s, q)?),
            Call::HypernodeOrder(..) => return Err(missing("hypernode_order")),
            Call::Evictable(..) => return Err(missing("evictable")),
        }
    }};
}

/// One session function or point call for every version, through `$p`
/// (the version's session or policy interface).
macro_rules! each {
    ($self:expr, |$p:ident| $body:expr) => {
        match $self {
            Instance::Current(x) => {
                let $p = &x.session;
                $body
            }
            Instance::V0_6(x) => {
                let $p = &x.session;
                $body
            }
            Instance::V0_5(i) => {
                let $p = i.tephra_scheduler0_5_0_policy();
                $body
            }
            Instance::V0_4(i) => {
                let $p = i.tephra_scheduler0_4_0_policy();
                $body
            }
        }
    };
}

/// Every call of a per-point contract's exports `$x`, with `$more` arms
/// for the points only some versions have.
macro_rules! point_call {
    ($x:ident, $s:ident, $call:expr, { $($more:tt)* }) => {{
        let x = $x;
        match $call {
            Call::QueueOrder(ids) => Answer::Keys(point!(x, queue_order).call_queue_order($s, ids)?),
            Call::JobOrder(ids) => Answer::Keys(point!(x, job_order).call_job_order($s, ids)?),
            Call::TaskOrder(ids) => Answer::Keys(point!(x, task_order).call_task_order($s, ids)?),
            Call::VictimQueueOrder(ids, q) => {
                Answer::Keys(point!(x, victim_queue_order).call_victim_queue_order($s, ids, q)?)
            }
            Call::Predicate(t, nodes) => Answer::Fit(point!(x, predicate).call_predicate($s, t, nodes)?),
            Call::NodeOrder(t, nodes) => Answer::Keys(point!(x, node_order).call_node_order($s, t, nodes)?),
            Call::Overused(q) => Answer::Bool(point!(x, overused).call_overused($s, q)?),
            Call::Allocatable(q, t) => Answer::Bool(point!(x, allocatable).call_allocatable($s, q, t)?),
            Call::Preemptive(q, t) => Answer::Bool(point!(x, preemptive).call_preemptive($s, q, t)?),
            Call::JobValid(j) => Answer::Invalid(point!(x, job_valid).call_job_valid($s, j)?),
            Call::JobReady(j) => Answer::Bool(point!(x, job_ready).call_job_ready($s, j)?),
            Call::JobPipelined(j) => Answer::Vote(point!(x, job_pipelined).call_job_pipelined($s, j)?),
            Call::JobEnqueueable(j) => Answer::Vote(point!(x, job_enqueueable).call_job_enqueueable($s, j)?),
            Call::JobEnqueued(j) => {
                point!(x, job_enqueued).call_job_enqueued($s, j)?;
                Answer::Unit
            }
            Call::JobStarving(j) => Answer::Bool(point!(x, job_starving).call_job_starving($s, j)?),
            Call::Preemptable(t, c) => Answer::Victims(point!(x, preemptable).call_preemptable($s, t, c)?),
            Call::Reclaimable(t, c) => Answer::Victims(point!(x, reclaimable).call_reclaimable($s, t, c)?),
            Call::VictimTasks(c) => Answer::Ids(point!(x, victim_tasks).call_victim_tasks($s, c)?),
            Call::TargetJob(jobs) => Answer::Id(point!(x, target_job).call_target_job($s, jobs)?),
            Call::ReservedNodes(owner, c) => {
                Answer::Reserved(point!(x, reserved_nodes).call_reserved_nodes($s, owner, c)?)
            }
            Call::QueueStatus(q) => Answer::QueueStatus(point!(x, queue_status).call_queue_status($s, q)?),
            $($more)*
        }
    }};
}

impl Instance {
    pub fn open_session(
        &self,
        s: &mut Store<State>,
        snap: &Snapshot,
        args: Args,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            Instance::Current(x) => x.session.call_open_session(s, snap, args),
            Instance::V0_6(x) => x.session.call_open_session(s, &snapshot_0_6(snap), args),
            Instance::V0_5(i) => i.tephra_scheduler0_5_0_policy().call_open_session(s, &snapshot_0_6(snap), args),
            Instance::V0_4(i) => i.tephra_scheduler0_4_0_policy().call_open_session(s, &snapshot_0_4(snap), args),
        }
    }

    pub fn update_session(
        &self,
        s: &mut Store<State>,
        delta: &SnapshotDelta,
        args: Args,
    ) -> wasmtime::Result<Result<bool, String>> {
        match self {
            Instance::Current(x) => x.session.call_update_session(s, delta, args),
            Instance::V0_6(x) => x.session.call_update_session(s, delta, args),
            Instance::V0_5(i) => i.tephra_scheduler0_5_0_policy().call_update_session(s, delta, args),
            Instance::V0_4(i) => i.tephra_scheduler0_4_0_policy().call_update_session(s, &delta_0_4(delta), args),
        }
    }

    pub fn close_session(&self, s: &mut Store<State>) -> wasmtime::Result<()> {
        each!(self, |p| p.call_close_session(s))
    }

    pub fn on_event(&self, s: &mut Store<State>, e: Event) -> wasmtime::Result<()> {
        each!(self, |p| p.call_on_event(s, e))
    }

    pub fn on_events(&self, s: &mut Store<State>, events: &[Event]) -> wasmtime::Result<()> {
        each!(self, |p| p.call_on_events(s, events))
    }

    pub fn predicate_node(&self, s: &mut Store<State>, task: u32, node: u32) -> wasmtime::Result<u32> {
        match self {
            Instance::Current(x) => point!(x, predicate).call_predicate_node(s, task, node),
            Instance::V0_6(x) => point!(x, predicate).call_predicate_node(s, task, node),
            Instance::V0_5(i) => i.tephra_scheduler0_5_0_policy().call_predicate_node(s, task, node),
            Instance::V0_4(i) => i.tephra_scheduler0_4_0_policy().call_predicate_node(s, task, node),
        }
    }

    pub fn explain(&self, s: &mut Store<State>, code: u32) -> wasmtime::Result<Reason> {
        match self {
            Instance::Current(x) => point!(x, predicate).call_explain(s, code),
            Instance::V0_6(x) => point!(x, predicate).call_explain(s, code),
            Instance::V0_5(i) => i.tephra_scheduler0_5_0_policy().call_explain(s, code),
            Instance::V0_4(i) => i.tephra_scheduler0_4_0_policy().call_explain(s, code),
        }
    }

    pub fn node_score(&self, s: &mut Store<State>, task: u32, node: u32) -> wasmtime::Result<f64> {
        match self {
            Instance::Current(x) => point!(x, node_order).call_node_score(s, task, node),
            Instance::V0_6(x) => point!(x, node_order).call_node_score(s, task, node),
            Instance::V0_5(i) => i.tephra_scheduler0_5_0_policy().call_node_score(s, task, node),
            Instance::V0_4(i) => i.tephra_scheduler0_4_0_policy().call_node_score(s, task, node),
        }
    }

    /// A batched call of any point.
    pub fn call(&self, s: &mut Store<State>, call: Call<'_>) -> wasmtime::Result<Answer> {
        Ok(match self {
            Instance::Current(x) => point_call!(x, s, call, {
                Call::HypernodeOrder(j, g, hns) => {
                    Answer::Keys(point!(x, hypernode_order).call_hypernode_order(s, j, g, hns)?)
                }
                Call::Evictable(k, j, h, c) => Answer::Victims(point!(x, evictable).call_evictable(s, k, j, h, c)?),
            }),
            Instance::V0_6(x) => point_call!(x, s, call, {
                Call::HypernodeOrder(..) => return Err(missing("hypernode_order")),
                Call::Evictable(..) => return Err(missing("evictable")),
            }),
            Instance::V0_5(i) => legacy_call!(i.tephra_scheduler0_5_0_policy(), s, call),
            Instance::V0_4(i) => legacy_call!(i.tephra_scheduler0_4_0_policy(), s, call),
        })
    }
}

/// Adds every supported contract's host interfaces to the linker.
pub fn link(linker: &mut Linker<State>) -> Result<()> {
    use wasmtime::component::HasSelf;
    tephra_contract::world::AllPoints::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
        .map_err(|e| anyhow!("linking host interface {}: {e}", tephra_contract::CONTRACT))?;
    v0_6::AllPoints::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
        .map_err(|e| anyhow!("linking host interface 0.6.0: {e}"))?;
    v0_5::Plugin::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
        .map_err(|e| anyhow!("linking host interface 0.5.0: {e}"))?;
    v0_4::Plugin::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
        .map_err(|e| anyhow!("linking host interface 0.4.0: {e}"))?;
    Ok(())
}

/// The one-line refusal of a component whose exports match no supported
/// contract.
pub fn unsupported(origin: &str) -> anyhow::Error {
    let versions: Vec<String> = tephra_contract::SUPPORTED.iter().map(|v| marker(v)).collect();
    anyhow!("{origin}: exports no plugin contract this host speaks (it looks for {})", versions.join(", "))
}
