//! Glue between the generated `Guest` export and a [`Policy`]: owns the
//! session view, applies events, and shapes batched answers.

use crate::args::Args;
use crate::bindings::exports::tephra::scheduler::session::PluginInfo;
use crate::policy::{Fits, Policy, Unfit};
use crate::session::Session;
use crate::types::{Event, EvictionKind, Fit, LockOwner, QueueFigures, Reason, Snapshot, SnapshotDelta, Victims, Vote};
use std::collections::HashMap;
use std::sync::Arc;

/// A policy plus its current session. Used by [`crate::export_plugin!`] and,
/// natively, by tests and benchmarks that drive a policy like the host does.
#[derive(Default)]
pub struct Runtime<P: Policy> {
    pub plugin: P,
    pub session: Option<Session>,
    /// The last closed session, for `update_session` to start from.
    last: Option<Session>,
    /// Whether the policy resumed the current session rather than opening it.
    resumed: bool,
    /// The reasons `predicate_node` gave this session: code k is `reasons[k - 1]`.
    reasons: Reasons,
    /// The buffers of one-node predicate calls, kept between calls.
    one: Fits,
}

/// A session's table of one-node rejection reasons, each listed once.
#[derive(Default)]
struct Reasons {
    list: Vec<Unfit>,
    codes: HashMap<(Arc<str>, bool), u32>,
}

impl Reasons {
    fn clear(&mut self) {
        self.list.clear();
        self.codes.clear();
    }

    fn code(&mut self, why: &Unfit) -> u32 {
        let next = self.list.len() as u32 + 1;
        let code = *self.codes.entry((why.message.clone(), why.unresolvable)).or_insert(next);
        if code == next {
            self.list.push(why.clone());
        }
        code
    }
}

macro_rules! with_session {
    ($self:ident, $default:expr, |$s:ident| $body:expr) => {
        match $self.session.as_ref() {
            Some($s) => $body,
            None => $default,
        }
    };
}

impl<P: Policy> Runtime<P> {
    pub fn info() -> PluginInfo {
        PluginInfo {
            name: P::NAME.into(),
            version: P::VERSION.into(),
            contract: crate::CONTRACT.into(),
            flush_events: P::POINTS.contains(&crate::ExtensionPoint::Events),
        }
    }

    pub fn open_session(&mut self, snapshot: Snapshot, args: Vec<(String, String)>) -> Result<(), String> {
        self.last = None;
        self.resumed = false;
        self.reasons.clear();
        self.start(Session::new(snapshot), args)
    }

    /// The last closed session brought up to date; `Ok(false)` without one.
    /// The policy resumes from where it was ([`Policy::resume`]) or opens anew.
    pub fn update_session(&mut self, delta: &SnapshotDelta, args: Vec<(String, String)>) -> Result<bool, String> {
        let Some(mut session) = self.last.take() else { return Ok(false) };
        session.update(delta)?;
        self.reasons.clear();
        let args = Args::from_pairs(args);
        let r = self.plugin.resume(&session, &args);
        self.resumed = r == Ok(true);
        let r = match r {
            Ok(true) => Ok(()),
            Ok(false) => self.open_afresh(&session, &args),
            Err(e) => Err(e),
        };
        self.session = Some(session);
        r.map(|()| true)
    }

    fn start(&mut self, session: Session, args: Vec<(String, String)>) -> Result<(), String> {
        let r = self.open_afresh(&session, &Args::from_pairs(args));
        self.session = Some(session);
        r
    }

    fn open_afresh(&mut self, session: &Session, args: &Args) -> Result<(), String> {
        self.plugin = P::default();
        self.plugin.open(session, args)
    }

    /// Whether the policy resumed the current session ([`Policy::resume`]).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// Closes the session and opens the next one on `next` as the host
    /// does when only statuses moved: from a delta (see
    /// [`crate::testing::delta`]). A test then compares the answers with a
    /// policy opened afresh on `next`.
    pub fn continue_on(&mut self, next: &Snapshot, args: Vec<(String, String)>) -> Result<bool, String> {
        self.close_session();
        let Some(last) = self.last.as_ref() else { return Ok(false) };
        let delta = crate::testing::delta(&last.snap, next);
        self.update_session(&delta, args)
    }

    pub fn close_session(&mut self) {
        if let Some(s) = self.session.take() {
            self.plugin.close(&s);
            self.last = Some(s);
        }
    }

    pub fn on_events(&mut self, events: &[Event]) {
        if let Some(s) = self.session.as_mut() {
            for e in events {
                if (e.task as usize) < s.tasks() {
                    let old = s.apply(e);
                    self.plugin.on_event(s, e, old);
                }
            }
        }
    }

    fn keys(&mut self, ids: &[u32], f: impl Fn(&mut P, &Session, u32) -> f64) -> Vec<f64> {
        let p = &mut self.plugin;
        with_session!(self, vec![0.0; ids.len()], |s| ids.iter().map(|&i| f(p, s, i)).collect())
    }

    pub fn queue_order(&mut self, ids: &[u32]) -> Vec<f64> {
        self.keys(ids, |p, s, i| p.queue_order(s, i))
    }
    pub fn job_order(&mut self, ids: &[u32]) -> Vec<f64> {
        self.keys(ids, |p, s, i| p.job_order(s, i))
    }
    pub fn task_order(&mut self, ids: &[u32]) -> Vec<f64> {
        self.keys(ids, |p, s, i| p.task_order(s, i))
    }
    pub fn victim_queue_order(&mut self, ids: &[u32], preemptor_queue: u32) -> Vec<f64> {
        self.keys(ids, |p, s, i| p.victim_queue_order(s, i, preemptor_queue))
    }

    pub fn predicate(&mut self, task: u32, nodes: &[u32]) -> Fit {
        let mut fits = Fits::new(nodes.len());
        if let Some(s) = self.session.as_ref() {
            self.plugin.predicate_nodes(s, task, nodes, &mut fits);
        }
        let reasons = fits
            .reasons
            .into_iter()
            .map(|u| Reason { message: u.message.to_string(), unresolvable: u.unresolvable })
            .collect();
        Fit { codes: fits.codes, reasons }
    }

    pub fn node_order(&mut self, task: u32, nodes: &[u32]) -> Vec<f64> {
        let mut scores = vec![0.0; nodes.len()];
        let p = &mut self.plugin;
        if let Some(s) = self.session.as_ref() {
            p.node_order(s, task, nodes, &mut scores);
        }
        scores
    }

    /// [`Runtime::predicate`] about one node: 0 fits, else the code of the
    /// reason, the same code for the same reason all session.
    pub fn predicate_node(&mut self, task: u32, node: u32) -> u32 {
        let Some(s) = self.session.as_ref() else { return 0 };
        self.one.reset(1);
        self.plugin.predicate_nodes(s, task, &[node], &mut self.one);
        match self.one.rejection(0) {
            Some(why) => self.reasons.code(why),
            None => 0,
        }
    }

    /// The reason behind a code [`Runtime::predicate_node`] answered this session.
    pub fn explain(&self, code: u32) -> Reason {
        match code.checked_sub(1).and_then(|k| self.reasons.list.get(k as usize)) {
            Some(u) => Reason { message: u.message.to_string(), unresolvable: u.unresolvable },
            None => {
                Reason { message: format!("{}: no reason has code {code} this session", P::NAME), unresolvable: false }
            }
        }
    }

    /// [`Runtime::node_order`] about one node.
    pub fn node_score(&mut self, task: u32, node: u32) -> f64 {
        let mut score = [0.0];
        if let Some(s) = self.session.as_ref() {
            self.plugin.node_order(s, task, &[node], &mut score);
        }
        score[0]
    }

    pub fn overused(&mut self, q: u32) -> bool {
        let p = &mut self.plugin;
        with_session!(self, false, |s| p.overused(s, q))
    }
    pub fn allocatable(&mut self, q: u32, t: u32) -> bool {
        let p = &mut self.plugin;
        with_session!(self, true, |s| p.allocatable(s, q, t))
    }
    pub fn preemptive(&mut self, q: u32, t: u32) -> bool {
        let p = &mut self.plugin;
        with_session!(self, true, |s| p.preemptive(s, q, t))
    }
    pub fn job_valid(&mut self, j: u32) -> Option<String> {
        let p = &mut self.plugin;
        with_session!(self, None, |s| p.job_valid(s, j))
    }
    pub fn job_ready(&mut self, j: u32) -> bool {
        let p = &mut self.plugin;
        with_session!(self, true, |s| p.job_ready(s, j))
    }
    pub fn job_pipelined(&mut self, j: u32) -> Vote {
        let p = &mut self.plugin;
        with_session!(self, Vote::Abstain, |s| p.job_pipelined(s, j))
    }
    pub fn job_enqueueable(&mut self, j: u32) -> Vote {
        let p = &mut self.plugin;
        with_session!(self, Vote::Abstain, |s| p.job_enqueueable(s, j))
    }
    pub fn job_enqueued(&mut self, j: u32) {
        let p = &mut self.plugin;
        with_session!(self, (), |s| p.job_enqueued(s, j))
    }
    pub fn job_starving(&mut self, j: u32) -> bool {
        let p = &mut self.plugin;
        with_session!(self, false, |s| p.job_starving(s, j))
    }
    pub fn preemptable(&mut self, preemptor: u32, candidates: &[u32]) -> Victims {
        let p = &mut self.plugin;
        let (tasks, vote) =
            with_session!(self, (Vec::new(), Vote::Abstain), |s| p.preemptable(s, preemptor, candidates));
        Victims { tasks, vote }
    }
    pub fn reclaimable(&mut self, preemptor: u32, candidates: &[u32]) -> Victims {
        let p = &mut self.plugin;
        let (tasks, vote) =
            with_session!(self, (Vec::new(), Vote::Abstain), |s| p.reclaimable(s, preemptor, candidates));
        Victims { tasks, vote }
    }
    pub fn victim_tasks(&mut self, candidates: &[u32]) -> Vec<u32> {
        let p = &mut self.plugin;
        with_session!(self, Vec::new(), |s| p.victim_tasks(s, candidates))
    }
    pub fn target_job(&mut self, jobs: &[u32]) -> Option<u32> {
        let p = &mut self.plugin;
        with_session!(self, None, |s| p.target_job(s, jobs))
    }
    pub fn reserved_nodes(&mut self, owner: LockOwner, candidates: &[u32]) -> Result<Vec<u32>, String> {
        let p = &mut self.plugin;
        with_session!(self, Ok(Vec::new()), |s| p.reserved_nodes(s, owner, candidates))
    }

    pub fn hypernode_order(&mut self, job: u32, subgroup: u32, hypernodes: &[u32]) -> Vec<f64> {
        let p = &mut self.plugin;
        let mut scores = vec![0.0; hypernodes.len()];
        if let Some(s) = self.session.as_ref() {
            p.hypernode_order(s, job, subgroup, hypernodes, &mut scores);
        }
        scores
    }

    pub fn evictable(&mut self, kind: EvictionKind, job: u32, hypernode: u32, candidates: &[u32]) -> Victims {
        let p = &mut self.plugin;
        let (tasks, vote) =
            with_session!(self, (Vec::new(), Vote::Abstain), |s| p.evictable(s, kind, job, hypernode, candidates));
        Victims { tasks, vote }
    }

    pub fn queue_status(&mut self, queues: &[u32]) -> QueueFigures {
        let mut out = QueueFigures { deserved: Vec::new(), share: Vec::new() };
        let p = &mut self.plugin;
        if let Some(s) = self.session.as_ref() {
            for &q in queues {
                let (row, share) = p.queue_status(s, q);
                out.deserved.extend(row);
                out.share.push(share);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Runtime;
    use crate::policy::{Policy, Unfit};
    use crate::testing::SnapshotBuilder;
    use crate::ExtensionPoint;
    use crate::Session;
    use std::sync::Arc;

    /// Rejects nodes 0 and 3 with one shared message, node 1 with a fresh
    /// copy of its text, node 2 with another text, and node 5 with the shared
    /// message but unresolvable; node 4 fits.
    #[derive(Default)]
    struct Rejecter {
        shared: Option<Arc<str>>,
    }

    impl Policy for Rejecter {
        const NAME: &'static str = "rejecter";
        const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::Predicate];
        fn predicate(&mut self, _: &Session, _: u32, node: u32) -> Result<(), Unfit> {
            let shared = self.shared.get_or_insert_with(|| "node full".into()).clone();
            match node {
                0 | 3 => Err(Unfit::new(shared)),
                1 => Err(Unfit::new(String::from("node full"))),
                2 => Err(Unfit::new("tainted")),
                4 => Ok(()),
                _ => Err(Unfit::unresolvable(shared)),
            }
        }
    }

    #[test]
    fn predicate_reasons_are_deduplicated_by_text_and_resolvability() {
        let mut b = SnapshotBuilder::new(&[]);
        let nodes: Vec<u32> = (0..6).map(|_| b.node(&[1000.0, 1000.0, 10.0])).collect();
        let mut rt = Runtime::<Rejecter>::default();
        rt.open_session(b.snap, vec![]).unwrap();
        let fit = rt.predicate(0, &nodes);
        assert_eq!(fit.codes, [1, 1, 2, 1, 0, 3]);
        let reasons: Vec<(&str, bool)> = fit.reasons.iter().map(|r| (r.message.as_str(), r.unresolvable)).collect();
        assert_eq!(reasons, [("node full", false), ("tainted", false), ("node full", true)]);
    }

    #[test]
    fn one_node_answers_match_the_batch_and_keep_their_codes_all_session() {
        let mut b = SnapshotBuilder::new(&[]);
        let nodes: Vec<u32> = (0..6).map(|_| b.node(&[1000.0, 1000.0, 10.0])).collect();
        let mut rt = Runtime::<Rejecter>::default();
        rt.open_session(b.snap.clone(), vec![]).unwrap();
        let batch = rt.predicate(0, &nodes);
        // Asked in reverse, the codes come in another order than the batch's.
        let mut codes = [0; 6];
        for &n in nodes.iter().rev() {
            codes[n as usize] = rt.predicate_node(0, n);
        }
        assert_eq!(codes, [2, 2, 3, 2, 0, 1]);
        for (n, &code) in codes.iter().enumerate() {
            assert_eq!(rt.predicate_node(0, n as u32), code, "node {n} asked again");
            let pair = |r: &crate::types::Reason| (r.message.clone(), r.unresolvable);
            let batch_reason = batch.codes[n].checked_sub(1).map(|k| pair(&batch.reasons[k as usize]));
            let reason = (code > 0).then(|| pair(&rt.explain(code)));
            assert_eq!(reason, batch_reason, "node {n}");
        }
        assert!(rt.explain(4).message.contains("no reason has code 4"));
        assert!(rt.explain(0).message.contains("no reason has code 0"));
        // A new session numbers its reasons afresh.
        rt.close_session();
        rt.open_session(b.snap, vec![]).unwrap();
        assert_eq!(rt.predicate_node(0, 2), 1);
        assert_eq!(rt.explain(1).message, "tainted");
    }

    /// Scores a node by its index; only `node_order` is written.
    #[derive(Default)]
    struct Indexer;

    impl Policy for Indexer {
        const NAME: &'static str = "indexer";
        const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::NodeOrder];
        fn node_order(&mut self, _: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
            for (s, &n) in scores.iter_mut().zip(nodes) {
                *s = (task * 100 + n) as f64;
            }
        }
    }

    #[test]
    fn one_node_scores_come_from_node_order() {
        let mut b = SnapshotBuilder::new(&[]);
        let nodes: Vec<u32> = (0..3).map(|_| b.node(&[1000.0, 1000.0, 10.0])).collect();
        let mut rt = Runtime::<Indexer>::default();
        assert_eq!(rt.node_score(1, 2), 0.0, "no session: the neutral score");
        rt.open_session(b.snap, vec![]).unwrap();
        let batch = rt.node_order(1, &nodes);
        let one: Vec<f64> = nodes.iter().map(|&n| rt.node_score(1, n)).collect();
        assert_eq!(one, batch);
        assert_eq!(one, [100.0, 101.0, 102.0]);
    }
}
