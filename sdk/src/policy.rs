//! The trait a policy implements: one method per extension point, each with
//! Volcano's neutral answer as default. Only points listed in `POINTS` are
//! ever called by the host.

use crate::args::Args;
use crate::session::Session;
use crate::types::{Event, EvictionKind, LockOwner, TaskStatus, Vote};
use crate::ExtensionPoint;
use std::sync::Arc;

/// Why a task does not fit a node. The message is shared (`Arc<str>`): a
/// policy can build its reasons once per session and hand out clones, so
/// rejecting thousands of nodes allocates nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Unfit {
    pub message: Arc<str>,
    /// Evicting pods from the node cannot make it fit.
    pub unresolvable: bool,
}

impl Unfit {
    /// A failure that evictions could resolve.
    pub fn new(message: impl Into<Arc<str>>) -> Self {
        Unfit { message: message.into(), unresolvable: false }
    }
    /// A failure that evictions cannot resolve (preempt/reclaim skip the node).
    pub fn unresolvable(message: impl Into<Arc<str>>) -> Self {
        Unfit { message: message.into(), unresolvable: true }
    }
}

/// The answers of one predicate call, node by node: what
/// [`Policy::predicate_nodes`] fills in. Rejections are kept as the contract's
/// `fit`: a code per node and each distinct reason once.
#[derive(Debug, Default)]
pub struct Fits {
    /// Per node of the call: 0 fits, k rejected for `reasons[k - 1]`.
    pub(crate) codes: Vec<u8>,
    pub(crate) reasons: Vec<Unfit>,
}

impl Fits {
    /// Every one of `nodes` fits until rejected.
    pub(crate) fn new(nodes: usize) -> Self {
        Fits { codes: vec![0; nodes], reasons: Vec::new() }
    }

    /// Rejects the `i`-th node of the call (panics past the last) for `why`.
    /// A reason already given is found by pointer first (policies hand out
    /// clones of a few shared messages), then by text.
    pub fn reject(&mut self, i: usize, why: &Unfit) {
        let same_ptr = |r: &Unfit| r.unresolvable == why.unresolvable && Arc::ptr_eq(&r.message, &why.message);
        let same_text = |r: &Unfit| r.unresolvable == why.unresolvable && r.message == why.message;
        let k = self.reasons.iter().position(same_ptr).or_else(|| self.reasons.iter().position(same_text));
        let k = k.unwrap_or_else(|| {
            self.reasons.push(why.clone());
            self.reasons.len() - 1
        });
        // The contract's codes are bytes: reasons past the 254th share the last code.
        self.codes[i] = (k + 1).min(255) as u8;
    }

    /// Starts over for a call about `nodes` nodes, keeping the buffers.
    pub(crate) fn reset(&mut self, nodes: usize) {
        self.codes.clear();
        self.codes.resize(nodes, 0);
        self.reasons.clear();
    }

    /// Why the `i`-th node was rejected, if it was.
    pub(crate) fn rejection(&self, i: usize) -> Option<&Unfit> {
        let code = *self.codes.get(i)?;
        code.checked_sub(1).and_then(|k| self.reasons.get(k as usize))
    }
}

/// A scheduling policy. Order methods return sort keys: smaller goes first,
/// equal keys defer to the next plugin.
#[allow(unused_variables)]
pub trait Policy: Default {
    /// The name the scheduler config uses.
    const NAME: &'static str;
    const VERSION: &'static str = "0.1.0";
    /// The extension points this policy implements.
    const POINTS: &'static [ExtensionPoint];

    /// A new session: compute per-session state here.
    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        Ok(())
    }
    /// Called instead of [`Policy::open`] on the policy that served the last
    /// session, when the next one continues it (the host sent a delta).
    /// Between the two only the tasks' statuses, nodes and start times, the
    /// nodes' usage and locks, the jobs' phases, the reservation targets and
    /// the clock changed (not as events: `on_event` saw none of it). Keep
    /// what depends on nothing else (indexes of labels, specs, parsed
    /// arguments if `args` are the same), bring the rest up to date, and
    /// answer `Ok(true)`; `Ok(false)`, the default, has the policy replaced by
    /// a `Default` one and opened afresh.
    fn resume(&mut self, s: &Session, args: &Args) -> Result<bool, String> {
        Ok(false)
    }
    fn close(&mut self, s: &Session) {}
    /// Called after `s` has applied the event; `old` is the task's previous status.
    fn on_event(&mut self, s: &Session, e: &Event, old: TaskStatus) {}

    fn queue_order(&mut self, s: &Session, queue: u32) -> f64 {
        0.0
    }
    fn job_order(&mut self, s: &Session, job: u32) -> f64 {
        0.0
    }
    fn task_order(&mut self, s: &Session, task: u32) -> f64 {
        0.0
    }
    fn victim_queue_order(&mut self, s: &Session, queue: u32, preemptor_queue: u32) -> f64 {
        0.0
    }

    fn predicate(&mut self, s: &Session, task: u32, node: u32) -> Result<(), Unfit> {
        Ok(())
    }
    /// [`Policy::predicate`] for every node in `nodes`, rejecting `nodes[i]`
    /// with `fits.reject(i, …)`. The default asks `predicate` node by node; a
    /// policy that first works something out about the task overrides it to
    /// do that once per call (the host asks about hundreds of nodes at a time).
    fn predicate_nodes(&mut self, s: &Session, task: u32, nodes: &[u32], fits: &mut Fits) {
        for (i, &n) in nodes.iter().enumerate() {
            if let Err(why) = self.predicate(s, task, n) {
                fits.reject(i, &why);
            }
        }
    }
    /// Scores for every node in `nodes`; the default calls [`Policy::node_score`].
    fn node_order(&mut self, s: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
        for (score, &n) in scores.iter_mut().zip(nodes) {
            *score = self.node_score(s, task, n);
        }
    }
    fn node_score(&mut self, s: &Session, task: u32, node: u32) -> f64 {
        0.0
    }

    fn overused(&mut self, s: &Session, queue: u32) -> bool {
        false
    }
    fn allocatable(&mut self, s: &Session, queue: u32, task: u32) -> bool {
        true
    }
    fn preemptive(&mut self, s: &Session, queue: u32, task: u32) -> bool {
        true
    }

    /// `Some(reason)` when the job must not be scheduled this session.
    fn job_valid(&mut self, s: &Session, job: u32) -> Option<String> {
        None
    }
    fn job_ready(&mut self, s: &Session, job: u32) -> bool {
        true
    }
    fn job_pipelined(&mut self, s: &Session, job: u32) -> Vote {
        Vote::Abstain
    }
    fn job_enqueueable(&mut self, s: &Session, job: u32) -> Vote {
        Vote::Abstain
    }
    fn job_enqueued(&mut self, s: &Session, job: u32) {}
    fn job_starving(&mut self, s: &Session, job: u32) -> bool {
        false
    }

    fn preemptable(&mut self, s: &Session, preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (Vec::new(), Vote::Abstain)
    }
    fn reclaimable(&mut self, s: &Session, preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (Vec::new(), Vote::Abstain)
    }
    /// Tasks among `candidates` that should be evicted (shuffle).
    fn victim_tasks(&mut self, s: &Session, candidates: &[u32]) -> Vec<u32> {
        Vec::new()
    }
    /// The job to reserve nodes for, among `jobs` (big-job reservation).
    fn target_job(&mut self, s: &Session, jobs: &[u32]) -> Option<u32> {
        None
    }
    /// The nodes to lock for `owner`, all among `candidates`; `Err` refuses
    /// the reservation with a reason. The neutral answer locks nothing.
    fn reserved_nodes(&mut self, s: &Session, owner: LockOwner, candidates: &[u32]) -> Result<Vec<u32>, String> {
        Ok(Vec::new())
    }
    /// A quota policy's deserved row and share for `queue` (for status).
    fn queue_status(&mut self, s: &Session, queue: u32) -> (Vec<f64>, f64) {
        (vec![f64::NAN; s.dims()], 0.0)
    }
    /// Scores (higher first) of `hypernodes` as the domain of `job`'s
    /// `subgroup` (`NONE`: of the whole job).
    fn hypernode_order(&mut self, s: &Session, job: u32, subgroup: u32, hypernodes: &[u32], scores: &mut [f64]) {}
    /// Gang eviction: which of `candidates` (running tasks on HyperNode
    /// `hypernode`) starving `job` may evict.
    fn evictable(
        &mut self,
        s: &Session,
        kind: EvictionKind,
        job: u32,
        hypernode: u32,
        candidates: &[u32],
    ) -> (Vec<u32>, Vote) {
        (Vec::new(), Vote::Abstain)
    }
}

#[cfg(test)]
mod tests {
    use super::{Fits, Unfit};

    /// Messages built afresh for each node and dropped at once, so the next
    /// one takes the last one's address (two texts of one length): reasons
    /// are told apart by what they say, never by a dropped message's address.
    #[test]
    fn rejections_with_short_lived_messages_keep_their_own_codes() {
        let mut fits = Fits::new(100);
        for i in 0..100 {
            let text = if i % 2 == 0 { "node full" } else { "node busy" };
            let why = if i % 3 == 0 { Unfit::unresolvable(String::from(text)) } else { Unfit::new(String::from(text)) };
            fits.reject(i, &why);
        }
        let want: Vec<(&str, bool)> =
            (0..100).map(|i| (if i % 2 == 0 { "node full" } else { "node busy" }, i % 3 == 0)).collect();
        let got: Vec<(&str, bool)> =
            fits.codes.iter().map(|&c| &fits.reasons[c as usize - 1]).map(|r| (&*r.message, r.unresolvable)).collect();
        assert_eq!(got, want);
        assert_eq!(fits.reasons.len(), 4);
    }
}
