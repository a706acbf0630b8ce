//! A loaded policy as the dispatcher sees it: one `call` entry point per
//! extension point, whatever runs behind it (a Wasm component in production,
//! a native build of the same crate in benchmarks).

use std::collections::HashMap;
use std::sync::Arc;
use tephra_contract::{Event, EvictionKind, ExtensionPoint, Reason};
use tephra_contract::{Fit, LockOwner, PluginInfo, QueueFigures, Snapshot, SnapshotDelta, Victims, Vote};
use tephra_snapshot::Names;

/// The most of a plugin's text (a fault, a reason) the host keeps: what a
/// plugin says is one line, and a 50 MB message is cut, not printed.
pub(crate) const MESSAGE_BYTES: usize = 2 << 10;

/// One extension-point call with its arguments.
#[derive(Clone, Copy, Debug)]
pub enum Call<'a> {
    /// Sort keys of these queues.
    QueueOrder(&'a [u32]),
    /// Sort keys of these jobs.
    JobOrder(&'a [u32]),
    /// Sort keys of these tasks.
    TaskOrder(&'a [u32]),
    /// Sort keys of these victims' queues, for the preemptor's queue.
    VictimQueueOrder(&'a [u32], u32),
    /// Whether the task fits each of these nodes.
    Predicate(u32, &'a [u32]),
    /// The task's score on each of these nodes.
    NodeOrder(u32, &'a [u32]),
    /// Whether the queue is over its share.
    Overused(u32),
    /// Whether the queue may take the task.
    Allocatable(u32, u32),
    /// Whether the queue may take the task from others.
    Preemptive(u32, u32),
    /// Whether the job is valid.
    JobValid(u32),
    /// Whether the job is ready (its gang placed).
    JobReady(u32),
    /// Whether the job is pipelined.
    JobPipelined(u32),
    /// Whether the job may be admitted.
    JobEnqueueable(u32),
    /// The job was admitted.
    JobEnqueued(u32),
    /// Whether the job starves.
    JobStarving(u32),
    /// Which of these candidates the preemptor may evict.
    Preemptable(u32, &'a [u32]),
    /// Which of these candidates the reclaimer may evict.
    Reclaimable(u32, &'a [u32]),
    /// Which of these running tasks to evict (shuffle).
    VictimTasks(&'a [u32]),
    /// Which of these jobs to reserve nodes for.
    TargetJob(&'a [u32]),
    /// Which of these nodes to lock for the owner.
    ReservedNodes(LockOwner, &'a [u32]),
    /// The quota plugin's deserved shares of these queues.
    QueueStatus(&'a [u32]),
    /// (job, subgroup or `none`, HyperNodes).
    HypernodeOrder(u32, u32, &'a [u32]),
    /// (kind, preemptor job, domain HyperNode, candidates).
    Evictable(EvictionKind, u32, u32, &'a [u32]),
}

impl Call<'_> {
    /// The extension point this call belongs to.
    pub fn point(&self) -> ExtensionPoint {
        use ExtensionPoint as P;
        match self {
            Call::QueueOrder(_) => P::QueueOrder,
            Call::JobOrder(_) => P::JobOrder,
            Call::TaskOrder(_) => P::TaskOrder,
            Call::VictimQueueOrder(..) => P::VictimQueueOrder,
            Call::Predicate(..) => P::Predicate,
            Call::NodeOrder(..) => P::NodeOrder,
            Call::Overused(_) => P::Overused,
            Call::Allocatable(..) => P::Allocatable,
            Call::Preemptive(..) => P::Preemptive,
            Call::JobValid(_) => P::JobValid,
            Call::JobReady(_) => P::JobReady,
            Call::JobPipelined(_) => P::JobPipelined,
            Call::JobEnqueueable(_) => P::JobEnqueueable,
            Call::JobEnqueued(_) => P::JobEnqueued,
            Call::JobStarving(_) => P::JobStarving,
            Call::Preemptable(..) => P::Preemptable,
            Call::Reclaimable(..) => P::Reclaimable,
            Call::VictimTasks(_) => P::VictimTasks,
            Call::TargetJob(_) => P::TargetJob,
            Call::ReservedNodes(..) => P::ReservedNodes,
            Call::QueueStatus(_) => P::QueueStatus,
            Call::HypernodeOrder(..) => P::HypernodeOrder,
            Call::Evictable(..) => P::Evictable,
        }
    }
}

/// A plugin's answer to a [`Call`].
#[derive(Clone, Debug)]
pub enum Answer {
    /// Sort keys, one per id.
    Keys(Vec<f64>),
    /// Predicate answers over nodes.
    Fit(Fit),
    /// A predicate answer about one node: `None` fits, else the reason and
    /// whether it is unresolvable.
    Verdict(Option<(Arc<str>, bool)>),
    /// A yes or no.
    Bool(bool),
    /// A permit, an abstention or a refusal.
    Vote(Vote),
    /// Why the job is invalid, if it is.
    Invalid(Option<String>),
    /// The victims allowed.
    Victims(Victims),
    /// Ids chosen.
    Ids(Vec<u32>),
    /// Reserved nodes, or the policy's refusal.
    Reserved(Result<Vec<u32>, String>),
    /// An id chosen, or none.
    Id(Option<u32>),
    /// Deserved shares per queue.
    QueueStatus(QueueFigures),
    /// Nothing to say (a notification).
    Unit,
}

/// A loaded policy. Errors are plugin faults (traps, deadline, bad output):
/// the dispatcher reports them and goes on without the plugin.
pub trait Backend: Send {
    /// What the plugin says of itself (name, version, points).
    fn info(&self) -> &PluginInfo;
    /// Where the plugin came from (file path or `built-in`).
    fn origin(&self) -> &str;
    /// Opens a session on `snap` with the plugin's arguments.
    fn open_session(&mut self, snap: &Snapshot, names: &Arc<Names>, args: &[(String, String)]) -> Result<(), String>;
    /// Opens a session from the last one this backend closed, brought up to
    /// date by `delta`; `Ok(false)` when it did not keep that session (the
    /// caller then opens with the whole snapshot). The caller makes sure the
    /// last session is the one `delta` starts from.
    fn update_session(
        &mut self,
        delta: &SnapshotDelta,
        names: &Arc<Names>,
        args: &[(String, String)],
    ) -> Result<bool, String> {
        let _ = (delta, names, args);
        Ok(false)
    }
    /// Closes the session.
    fn close_session(&mut self) -> Result<(), String>;
    /// Delivers state changes the plugin has not seen.
    fn on_events(&mut self, events: &[Event]) -> Result<(), String>;
    /// Asks one extension point.
    fn call(&mut self, call: Call<'_>) -> Result<Answer, String>;
    /// Called after closing a session in which the plugin faulted: the next
    /// session must not reuse anything of this one (a kept instance).
    fn discard(&mut self) {}
    /// The reason the plugin gave for its last answer (a refusal's amounts),
    /// if it gave one.
    fn why(&mut self) -> Option<String> {
        None
    }
}

/// The reasons a plugin's one-node predicate answers (`predicate-node`) named
/// by code this session; each code is explained once.
#[derive(Default)]
pub struct Reasons(HashMap<u32, (Arc<str>, bool)>);

impl Reasons {
    /// Forgets the codes: a new session numbers its reasons afresh.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The verdict for `code` (0 fits), asking `explain` about a code not
    /// seen this session.
    pub fn verdict(
        &mut self,
        code: u32,
        explain: impl FnOnce(u32) -> Result<Reason, String>,
    ) -> Result<Answer, String> {
        if code == 0 {
            return Ok(Answer::Verdict(None));
        }
        if let Some(r) = self.0.get(&code) {
            return Ok(Answer::Verdict(Some(r.clone())));
        }
        let r = explain(code)?;
        let r = (Arc::<str>::from(tephra_model::text::one_line(&r.message, MESSAGE_BYTES)), r.unresolvable);
        self.0.insert(code, r.clone());
        Ok(Answer::Verdict(Some(r)))
    }
}
