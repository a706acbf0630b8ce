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
    QueueOrder(&'a [u32]),
    JobOrder(&'a [u32]),
    TaskOrder(&'a [u32]),
    VictimQueueOrder(&'a [u32], u32),
    Predicate(u32, &'a [u32]),
    NodeOrder(u32, &'a [u32]),
    Overused(u32),
    Allocatable(u32, u32),
    Preemptive(u32, u32),
    JobValid(u32),
    JobReady(u32),
    JobPipelined(u32),
    JobEnqueueable(u32),
    JobEnqueued(u32),
    JobStarving(u32),
    Preemptable(u32, &'a [u32]),
    Reclaimable(u32, &'a [u32]),
    VictimTasks(&'a [u32]),
    TargetJob(&'a [u32]),
    ReservedNodes(LockOwner, &'a [u32]),
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
    Keys(Vec<f64>),
    Fit(Fit),
    /// A predicate answer about one node: `None` fits, else the reason and
    /// whether it is unresolvable.
    Verdict(Option<(Arc<str>, bool)>),
    Bool(bool),
    Vote(Vote),
    Invalid(Option<String>),
    Victims(Victims),
    Ids(Vec<u32>),
    /// Reserved nodes, or the policy's refusal.
    Reserved(Result<Vec<u32>, String>),
    Id(Option<u32>),
    QueueStatus(QueueFigures),
    Unit,
}

/// A loaded policy. Errors are plugin faults (traps, deadline, bad output):
/// the dispatcher reports them and goes on without the plugin.
pub trait Backend: Send {
    fn info(&self) -> &PluginInfo;
    /// Where the plugin came from (file path or `built-in`).
    fn origin(&self) -> &str;
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
    fn close_session(&mut self) -> Result<(), String>;
    fn on_events(&mut self, events: &[Event]) -> Result<(), String>;
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
