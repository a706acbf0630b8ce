//! Capacity: queues get what their spec says they deserve (Volcano's
//! `capacity` plugin, reference §8.6). A queue may borrow idle resources up
//! to its real capability; reclaim takes back only what other queues hold
//! beyond their `deserved`, and never below their `guarantee`.
//!
//! Two modes, chosen per session by the argument `enableHierarchy`:
//!
//! * **flat** (default): queues with jobs in the session get attributes;
//!   `realCapability = (total ⊖ Σ all guarantees) + guarantee`, capped by the
//!   capability; `deserved` is the spec's, capped by `realCapability` and
//!   floored at the guarantee (`quota` keeps Volcano's rules for named
//!   and absent dimensions).
//! * **hierarchical**: every queue is in a tree under the queue named `root`
//!   (`hierarchy`); usage rolls up to every ancestor, capabilities are
//!   inherited, the root is unlimited unless it has a capability, its
//!   deserved and guarantee are its children's sums, and a child's real
//!   capability is its parent's minus its siblings' guarantees. Only leaf
//!   queues take jobs; allocation and admission check the leaf and every
//!   ancestor. The root is the queue the host names `root` (names are not in
//!   the snapshot: one `name` call per parentless queue and session).
//!
//! Like Volcano's, the plugin has no Overused: it never drops a queue from
//! allocate or reclaim by itself.
//!
//! Arguments (the config's values, as strings):
//!
//! * `enableHierarchy` (`"true"`/`"false"`, default false). Volcano reads
//!   this from the plugin's `enableHierarchy: true` switch; tephra's host keeps
//!   switches to itself and forwards that one to this plugin as the argument
//!   of the same name, so both spellings in a config work.
//! * `ancestorReclaimLevel` (integer ≥ 0, default 0; negative means 0): in
//!   hierarchical mode, how many levels above the leaf reclaim also looks at
//!   (reference §8.6 Preemptive / Reclaimable).
//!
//! Differences from Volcano, on purpose or forced by the contract:
//!
//! * A broken hierarchy stops only the queues concerned: a queue whose
//!   parent does not exist, one on a parent cycle, or one whose capability
//!   exceeds its parent's is cut off with its subtree (logged as an error
//!   naming it) and gets nothing — no allocation, admission, preemption or
//!   reclaim, and its pods are no victims — while the rest of the tree
//!   schedules; what cut-off queues hold still counts against the root. A
//!   job in a non-leaf queue gets nothing either, and its usage counts for
//!   the queue and its ancestors. Volcano marks the whole plugin "not ready"
//!   (every queue refused) for cycles, missing parents and jobs in non-leaf
//!   queues, and only logs a child capability above its parent's. Without a
//!   `root` queue there is no tree: the session open fails (the host reports
//!   a fault and, failing closed, nothing is scheduled).
//! * Hierarchical QueueOrder is a comparison of two queues' ancestor paths
//!   in Volcano; as keys it becomes a rank in a lexicographic order over
//!   those paths, which agrees with Volcano whenever Volcano's comparison is
//!   not a tie and breaks some of its ties (see `Capacity::rerank`).
//! * [quirk, kept] Events refresh the share of the task's own queue only;
//!   ancestors' allocated follows, their share stays at its session-open
//!   value (it feeds hierarchical QueueOrder).
//! * Reclaimable walks the candidates in the order given: the host is
//!   expected to pass them in victim order (`BuildVictimsPriorityQueue`).
//! * Queue-allocation-gate reservations, scheduling-gated pods and DRA
//!   device-class quotas are not in the contract and are not modelled; a
//!   task's `InitResreq` is its request.

mod hierarchy;
mod quota;

use std::cmp::Ordering;
use std::collections::HashMap;

use hierarchy::Tree;
use quota::Res;
use tephra_sdk::bindings::tephra::scheduler::host::Kind;
use tephra_sdk::{
    log, Args, Event, EventKind, EvictionKind, ExtensionPoint as P, JobPhase, Policy, QueueState, Session, TaskStatus,
    Vote, NONE,
};

/// What a job adds to its queue (and, in hierarchical mode, every ancestor).
struct Usage {
    /// Σ requests of its tasks holding resources.
    allocated: Vec<f64>,
    /// minResources still to be placed, for admitted jobs.
    inqueue: Vec<f64>,
    /// What it holds beyond minResources.
    elastic: Vec<f64>,
}

fn job_usage(s: &Session, j: u32) -> Usage {
    let d = s.dims();
    let held = s.job_allocated(j).to_vec();
    let placed = s.job_allocated_tasks[j as usize];
    let min = s.job_min_resources(j);
    let mut inqueue = vec![0.0; d];
    if let Some(min) = min {
        // A Running job reserves its remainder only while its gang is placed
        // (a finished Spark driver must not reserve again).
        let reserves = match s.job_phase(j) {
            JobPhase::Inqueue => true,
            JobPhase::Running => placed >= s.job_min_available(j),
            _ => false,
        };
        if reserves {
            for (k, x) in inqueue.iter_mut().enumerate() {
                *x = (min[k] - held[k]).max(0.0);
            }
        }
    }
    let elastic = (0..d).map(|k| (held[k] - min.map_or(0.0, |m| m[k])).max(0.0)).collect();
    Usage { allocated: held, inqueue, elastic }
}

/// Session attributes of a queue.
struct Queue {
    deserved: Res,
    guarantee: Res,
    real: Res,
    /// Kept current by allocate/deallocate events (pipelined tasks count:
    /// Volcano fires the same handler).
    allocated: Vec<f64>,
    inqueue: Vec<f64>,
    elastic: Vec<f64>,
    share: f64,
}

impl Queue {
    fn new(deserved: &Res, guarantee: &Res) -> Self {
        let d = deserved.v.len();
        Queue {
            deserved: deserved.clone(),
            guarantee: guarantee.clone(),
            real: Res::empty(d),
            allocated: vec![0.0; d],
            inqueue: vec![0.0; d],
            elastic: vec![0.0; d],
            share: 0.0,
        }
    }

    fn add(&mut self, u: &Usage) {
        for k in 0..self.allocated.len() {
            self.allocated[k] += u.allocated[k];
            self.inqueue[k] += u.inqueue[k];
            self.elastic[k] += u.elastic[k];
        }
    }

    /// The dimensions where `used` (allocated plus `extra`, minus `less`)
    /// would exceed the real capability, on the dims `req` asks for.
    fn short(&self, extra: &[&[f64]], less: Option<&[f64]>, req: &[f64]) -> Vec<usize> {
        let used: Vec<f64> = (0..req.len())
            .map(|k| self.allocated[k] + extra.iter().map(|r| r[k]).sum::<f64>() - less.map_or(0.0, |l| l[k]))
            .collect();
        quota::short_dims(&used, &self.real.v, req)
    }
}

/// Higher `priority` first, then smaller `share`, as one key: `-priority`
/// is an exact integer and the share is squashed monotonically into
/// [0, 0.5), so it never reaches the next priority. Shares closer than one
/// ulp of the key tie.
fn order_key(priority: i32, share: f64) -> f64 {
    -(priority as f64) + (0.5 - 0.5 / (1.0 + share.max(0.0)))
}

/// Volcano's `getQueueLevel`: index (in root-first ancestor lists) of the
/// deepest ancestor two queues share.
fn common_level(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count().saturating_sub(1)
}

fn is_open(s: &Session, q: u32) -> bool {
    matches!(s.snap.queue_state.get(q as usize), Some(QueueState::Open))
}

fn queue_name(q: u32) -> String {
    log::name(Kind::Queue, q)
}

fn dim_names(s: &Session, dims: &[usize]) -> String {
    dims.iter().map(|&k| s.snap.dims[k].as_str()).collect::<Vec<_>>().join(", ")
}

#[derive(Default)]
pub struct Capacity {
    hierarchy: bool,
    /// `ancestorReclaimLevel`.
    level: usize,
    /// By queue id; flat mode leaves queues without jobs at `None`.
    queues: Vec<Option<Queue>>,
    /// Every queue's spec deserved, for status.
    spec_deserved: Vec<Res>,
    tree: Option<Tree>,
    /// Hierarchical QueueOrder keys, rebuilt after events.
    ranks: Vec<f64>,
    ranks_stale: bool,
}

impl Capacity {
    fn attr(&self, q: u32) -> Option<&Queue> {
        self.queues.get(q as usize).and_then(Option::as_ref)
    }

    fn ancestors(&self, q: u32) -> &[u32] {
        match &self.tree {
            Some(t) => t.ancestors.get(q as usize).map_or(&[], Vec::as_slice),
            None => &[],
        }
    }

    fn is_leaf(&self, q: u32) -> bool {
        self.tree.as_ref().is_none_or(|t| t.is_leaf(q))
    }

    /// Not cut off by a broken hierarchy; in flat mode, every queue.
    fn usable(&self, q: u32) -> bool {
        self.tree.as_ref().is_none_or(|t| !t.is_broken(q))
    }

    /// A candidate victim's queue and its figures (a cut-off queue's quota
    /// is unknown: its pods are no victims).
    fn victim_queue(&self, s: &Session, c: u32) -> Option<(u32, &Queue)> {
        let q = s.snap.job_queue.get(s.task_job(c) as usize).copied().filter(|&q| self.usable(q))?;
        Some((q, self.attr(q)?))
    }

    /// The queue's allocation without the candidate's request `creq`, when
    /// that keeps its guarantee (`alloc`: the allocation so far, victims
    /// already counted off).
    fn without(alloc: &[f64], creq: &[f64], a: &Queue) -> Option<Vec<f64>> {
        let rest: Vec<f64> = alloc.iter().zip(creq).map(|(x, r)| x - r).collect();
        quota::keeps_guarantee(&rest, &a.guarantee).then_some(rest)
    }

    /// May take jobs: a usable leaf queue.
    fn takes_jobs(&self, q: u32) -> bool {
        self.usable(q) && self.is_leaf(q)
    }

    fn is_root(&self, q: u32) -> bool {
        self.tree.as_ref().is_some_and(|t| t.root == q)
    }

    /// The queue, then its ancestors from the parent up to the root.
    fn chain(&self, q: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(q).chain(self.ancestors(q).iter().rev().copied())
    }

    /// Volcano's `queueAncestorAtDepth`: depth 1 is the parent.
    fn ancestor_at(&self, q: u32, depth: usize) -> Option<u32> {
        let a = self.ancestors(q);
        (depth >= 1 && depth <= a.len()).then(|| a[a.len() - depth])
    }

    /// Non-root ancestors within `ancestorReclaimLevel` levels.
    fn near_ancestors(&self, q: u32) -> Vec<u32> {
        (1..=self.level).filter_map(|l| self.ancestor_at(q, l)).filter(|&a| !self.is_root(a)).collect()
    }

    /// The reclaimee's ancestor at `level` that must also be over its
    /// deserved: none when it is the root or shared with the reclaimer.
    fn ancestor_to_check(&self, reclaimer: u32, reclaimee: u32, level: usize) -> Option<u32> {
        let theirs = self.ancestor_at(reclaimee, level).filter(|&a| !self.is_root(a))?;
        (self.ancestor_at(reclaimer, level) != Some(theirs)).then_some(theirs)
    }

    fn open_named(&mut self, s: &Session, args: &Args, name: &dyn Fn(u32) -> String) -> Result<(), String> {
        self.hierarchy = args.bool("enableHierarchy", false)?;
        let level = args.f64("ancestorReclaimLevel", 0.0)?;
        if !level.is_finite() {
            return Err(format!("argument ancestorReclaimLevel: {level} is not a level"));
        }
        if level < 0.0 {
            log::warn(&format!("ancestorReclaimLevel should be non-negative, got {level}; using 0"));
        }
        // Deeper than the number of queues means every ancestor.
        self.level = level.clamp(0.0, s.queues() as f64) as usize;
        self.tree = None;
        self.spec_deserved = Res::rows(&s.snap.queue_deserved, s.queues(), s.dims()).0;
        self.ranks_stale = true;
        if self.hierarchy {
            self.open_tree(s, name)
        } else {
            self.open_flat(s);
            Ok(())
        }
    }

    /// `buildQueueAttrs`: attributes for queues with jobs.
    fn open_flat(&mut self, s: &Session) {
        let (d, n) = (s.dims(), s.queues());
        let (guarantee, _) = Res::rows(&s.snap.queue_guarantee, n, d);
        let (capability, capped) = Res::rows(&s.snap.queue_capability, n, d);
        // Every queue's guarantee is reserved, with jobs or without.
        let mut guarantees = Res::empty(d);
        for g in &guarantee {
            guarantees.add(g);
        }
        let free = quota::exceeded_part(&Res::dense(s.total()), &guarantees);
        self.queues = (0..n).map(|_| None).collect();
        for j in 0..s.jobs() as u32 {
            let q = s.job_queue(j) as usize;
            let Some(slot) = self.queues.get_mut(q) else { continue };
            let a = slot.get_or_insert_with(|| {
                let mut a = Queue::new(&self.spec_deserved[q], &guarantee[q]);
                a.real = free.clone();
                a.real.add(&a.guarantee);
                if capped[q] {
                    let mut cap = capability[q].clone();
                    // cpu/memory unset or ≤ 0 mean no limit.
                    for x in &mut cap.v[..2] {
                        if *x <= 0.0 {
                            *x = f64::INFINITY;
                        }
                    }
                    a.real.min_dimension(&cap);
                }
                a
            });
            a.add(&job_usage(s, j));
        }
        for a in self.queues.iter_mut().flatten() {
            a.deserved.min_dimension(&a.real);
            a.deserved = quota::max_of(&a.deserved, &a.guarantee);
            a.share = quota::share(&a.allocated, &a.deserved);
        }
    }

    /// `buildHierarchicalQueueAttrs`: attributes for every queue of a
    /// checked tree.
    fn open_tree(&mut self, s: &Session, name: &dyn Fn(u32) -> String) -> Result<(), String> {
        let (d, n) = (s.dims(), s.queues());
        // The root normally has no parent: ask for those names first.
        let parentless = |q: &u32| s.snap.queue_parent[*q as usize] == NONE;
        let mut ids = (0..n as u32).filter(parentless).chain((0..n as u32).filter(|q| !parentless(q)));
        let root = ids.find(|&q| name(q) == "root");
        let mut tree = hierarchy::build(&s.snap.queue_parent, root, name)?;
        let caps = hierarchy::capabilities(&mut tree, &Res::rows(&s.snap.queue_capability, n, d).0, &s.snap.dims, name);
        if !tree.problems.is_empty() {
            log::error(&format!(
                "broken queue hierarchy: {}; those queues and the queues below them get nothing until it is fixed",
                tree.problems.join("; ")
            ));
        }

        let (guarantee, _) = Res::rows(&s.snap.queue_guarantee, n, d);
        let mut queues: Vec<Queue> = (0..n).map(|q| Queue::new(&self.spec_deserved[q], &guarantee[q])).collect();
        let mut misplaced = std::collections::BTreeSet::new();
        for j in 0..s.jobs() as u32 {
            let q = s.job_queue(j);
            if q as usize >= n {
                continue;
            }
            if !tree.is_leaf(q) && !tree.is_broken(q) && misplaced.insert(q) {
                log::error(&format!(
                    "job {} is in queue {:?}, which is not a leaf queue: its jobs get nothing",
                    log::name(Kind::Job, j),
                    name(q)
                ));
            }
            let u = job_usage(s, j);
            queues[q as usize].add(&u);
            // A queue cut off from the root still holds what it holds.
            let above = &tree.ancestors[q as usize];
            let above = if above.is_empty() && q != tree.root { std::slice::from_ref(&tree.root) } else { above };
            for &a in above {
                queues[a as usize].add(&u);
            }
        }

        let root = tree.root as usize;
        queues[root].real = caps[root].clone();
        for &p in &tree.top_down {
            let kids = &tree.children[p as usize];
            if kids.is_empty() {
                continue;
            }
            let (mut deserved, mut guarantee) = (Res::empty(d), Res::empty(d));
            for &c in kids {
                let c = &mut queues[c as usize];
                c.deserved = quota::max_of(&c.deserved, &c.guarantee);
                deserved.add(&c.deserved);
                guarantee.add(&c.guarantee);
            }
            let parent = &mut queues[p as usize];
            if p == tree.root {
                parent.deserved = deserved.clone();
                parent.guarantee = guarantee.clone();
            } else {
                for (what, own, sum) in
                    [("deserved", &parent.deserved, &deserved), ("guarantee", &parent.guarantee, &guarantee)]
                {
                    let over = quota::below(own, sum);
                    if !over.is_empty() {
                        log::warn(&format!(
                            "the children of queue {:?} together have more {what} than it ({})",
                            name(p),
                            dim_names(s, &over)
                        ));
                    }
                }
            }
            let free = quota::exceeded_part(&parent.real, &guarantee);
            for &c in kids {
                let c = c as usize;
                let mut real = free.clone();
                real.add(&queues[c].guarantee).min_dimension(&caps[c]);
                queues[c].real = real;
            }
        }
        for a in &mut queues {
            a.share = quota::share(&a.allocated, &a.deserved);
        }
        self.queues = queues.into_iter().map(Some).collect();
        self.tree = Some(tree);
        Ok(())
    }

    /// Hierarchical QueueOrder as ranks: higher priority first, leaves
    /// before other queues; leaves by the path of (share, best-effort)
    /// entries of their ancestors below the root and themselves, compared
    /// lexicographically; non-leaf queues by their own entry. Volcano
    /// compares two leaves only at the first level where their paths part
    /// and calls equal entries there a tie; the lexicographic order goes on
    /// to the next level instead (a comparator with such ties is not a
    /// consistent order, so no key can reproduce it exactly).
    ///
    /// [quirk] Ancestors' shares are computed at session open and not
    /// refreshed by events (Volcano updates only the leaf's share).
    fn rerank(&mut self, s: &Session) {
        let n = s.queues();
        let entry = |q: u32| self.attr(q).map_or(Entry::default(), |a| Entry(a.share, a.deserved.is_empty()));
        let key = |q: u32| RankKey {
            priority: s.snap.queue_priority.get(q as usize).copied().unwrap_or(0),
            inner: !self.is_leaf(q),
            path: if self.is_leaf(q) {
                self.ancestors(q).iter().skip(1).copied().chain(std::iter::once(q)).map(entry).collect()
            } else {
                vec![entry(q)]
            },
        };
        let keys: Vec<RankKey> = (0..n as u32).map(key).collect();
        let cmp = |a: &u32, b: &u32| keys[*a as usize].cmp(&keys[*b as usize]);
        let mut ids: Vec<u32> = (0..n as u32).collect();
        ids.sort_by(cmp);
        let mut ranks = vec![0.0; n];
        let mut rank = 0.0;
        for i in 0..ids.len() {
            if i > 0 && cmp(&ids[i - 1], &ids[i]).is_ne() {
                rank += 1.0;
            }
            ranks[ids[i] as usize] = rank;
        }
        self.ranks = ranks;
        self.ranks_stale = false;
    }
}

/// One level of a hierarchical order path: a queue's share, then whether it
/// is best-effort (queues with a deserved go first at equal share).
#[derive(Clone, Copy, Default, PartialEq)]
struct Entry(f64, bool);

impl Entry {
    fn cmp(&self, o: &Entry) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// A queue's place in the hierarchical QueueOrder, smallest first.
struct RankKey {
    priority: i32,
    /// Not a leaf: after every leaf.
    inner: bool,
    path: Vec<Entry>,
}

impl RankKey {
    fn cmp(&self, o: &RankKey) -> Ordering {
        o.priority.cmp(&self.priority).then(self.inner.cmp(&o.inner)).then_with(|| {
            let differ = self.path.iter().zip(&o.path).map(|(x, y)| x.cmp(y)).find(|c| c.is_ne());
            differ.unwrap_or_else(|| self.path.len().cmp(&o.path.len()))
        })
    }
}

impl Policy for Capacity {
    const NAME: &'static str = "capacity";
    const POINTS: &'static [P] = &[
        P::QueueOrder,
        P::VictimQueueOrder,
        P::Allocatable,
        P::Preemptive,
        P::Reclaimable,
        P::JobEnqueueable,
        P::JobEnqueued,
        P::QueueStatus,
        P::Evictable,
        P::Events,
    ];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        self.open_named(s, args, &queue_name)
    }

    fn on_event(&mut self, s: &Session, e: &Event, _: TaskStatus) {
        let Some(&q) = s.snap.job_queue.get(s.task_job(e.task) as usize) else { return };
        let sign = match e.kind {
            EventKind::Allocate => 1.0,
            EventKind::Deallocate => -1.0,
        };
        let req = s.task_req(e.task);
        let chain: Vec<u32> = self.chain(q).collect();
        for (i, c) in chain.into_iter().enumerate() {
            if let Some(a) = self.queues.get_mut(c as usize).and_then(Option::as_mut) {
                for (x, r) in a.allocated.iter_mut().zip(req) {
                    *x += sign * r;
                }
                if i == 0 {
                    a.share = quota::share(&a.allocated, &a.deserved);
                }
            }
        }
        self.ranks_stale = true;
    }

    /// Flat: priority, share, then queues with a deserved before best-effort
    /// ones at equal share (a best-effort queue's share is always 1).
    /// Hierarchical: see `Capacity::rerank`.
    fn queue_order(&mut self, s: &Session, q: u32) -> f64 {
        let priority = s.snap.queue_priority.get(q as usize).copied().unwrap_or(0);
        if !self.hierarchy {
            return match self.attr(q) {
                Some(a) if a.deserved.is_empty() => order_key(priority, a.share).next_up(),
                Some(a) => order_key(priority, a.share),
                None => order_key(priority, 0.0),
            };
        }
        if self.ranks_stale || self.ranks.len() != s.queues() {
            self.rerank(s);
        }
        self.ranks.get(q as usize).copied().unwrap_or(0.0)
    }

    /// Hierarchical only: a queue sharing a deeper ancestor with the
    /// preemptor's queue is a victim first (siblings before cousins).
    fn victim_queue_order(&mut self, _: &Session, q: u32, preemptor_queue: u32) -> f64 {
        if !self.hierarchy {
            return 0.0;
        }
        -(common_level(self.ancestors(q), self.ancestors(preemptor_queue)) as f64)
    }

    /// An open (leaf) queue may take the task while it and every ancestor
    /// stay within their real capability on the dims the task asks for:
    /// borrowing beyond `deserved` is allowed.
    fn allocatable(&mut self, s: &Session, q: u32, t: u32) -> bool {
        if !is_open(s, q) || !self.takes_jobs(q) {
            return false;
        }
        let req = s.task_req(t);
        for c in self.chain(q) {
            let Some(a) = self.attr(c) else { continue };
            let short = a.short(&[req], None, req);
            if !short.is_empty() {
                log::debug(&format!(
                    "queue {}: task {} would exceed the real capability of {} on {}",
                    queue_name(q),
                    log::name(Kind::Task, t),
                    queue_name(c),
                    dim_names(s, &short)
                ));
                return false;
            }
        }
        true
    }

    /// The queue may reclaim for the task when it stays within its real
    /// capability and, on some dimension the task asks for, within its
    /// deserved — or, with `ancestorReclaimLevel`, an ancestor does.
    fn preemptive(&mut self, s: &Session, q: u32, t: u32) -> bool {
        if !self.takes_jobs(q) || !is_open(s, q) {
            return false;
        }
        let Some(a) = self.attr(q) else { return false };
        let req = s.task_req(t);
        if !a.short(&[req], None, req).is_empty() {
            return false;
        }
        let within = |a: &Queue| {
            let future: Vec<f64> = a.allocated.iter().zip(req).map(|(x, r)| x + r).collect();
            quota::partly_within(&future, &a.deserved.v, req)
        };
        if within(a) {
            return true;
        }
        if !self.hierarchy {
            return false;
        }
        (1..=self.level)
            .filter_map(|l| self.ancestor_at(q, l))
            .filter(|&anc| !self.is_root(anc))
            .any(|anc| self.attr(anc).is_some_and(within))
    }

    /// In the given (victim) order, a candidate is a victim when it shares a
    /// dimension with the reclaimer, its queue keeps its guarantee without
    /// it, and the queue (net of the victims already chosen) holds more than
    /// it deserves on a dimension the candidate uses — or the candidate uses
    /// nothing the queue deserves. With `ancestorReclaimLevel`, ancestors
    /// not shared with the reclaimer must be over their deserved too.
    fn reclaimable(&mut self, s: &Session, reclaimer: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        let queue_of = |t: u32| s.snap.job_queue.get(s.task_job(t) as usize).copied();
        let Some(rq) = queue_of(reclaimer).filter(|&q| self.takes_jobs(q)) else { return (Vec::new(), Vote::Reject) };
        let Some(ra) = self.attr(rq) else { return (Vec::new(), Vote::Reject) };
        let rreq = s.task_req(reclaimer);
        let ancestral = self.hierarchy && self.level > 0;
        // Contention gate: the reclaimer's own leaf deserves nothing it asks for.
        let unbacked = !quota::intersects(rreq, &ra.deserved.v, true);
        let near = self.near_ancestors(rq);

        let mut held: HashMap<u32, Vec<f64>> = HashMap::new();
        let mut victims = Vec::new();
        for &c in candidates {
            let Some((cq, a)) = self.victim_queue(s, c) else { continue };
            let creq = s.task_req(c);
            if !quota::intersects(creq, rreq, false) {
                continue;
            }
            let alloc = held.entry(cq).or_insert_with(|| a.allocated.clone());
            if Self::without(alloc, creq, a).is_none() {
                continue;
            }
            let eligible = if !quota::intersects(creq, &a.deserved.v, true) {
                // Nothing it uses is deserved: an immediate victim, unless
                // both sit under a near non-root ancestor without contention.
                !(ancestral && unbacked && self.near_ancestors(cq).iter().any(|x| near.contains(x)))
            } else {
                quota::over_deserved(alloc, &a.deserved, creq)
            };
            if !eligible {
                continue;
            }
            let mut checked = Vec::new();
            let mut ancestors_over = true;
            if ancestral {
                for level in 1..=self.level {
                    let Some(anc) = self.ancestor_to_check(rq, cq, level) else { continue };
                    let Some(aa) = self.attr(anc) else {
                        ancestors_over = false;
                        break;
                    };
                    checked.push(anc);
                    let anc_alloc = held.entry(anc).or_insert_with(|| aa.allocated.clone());
                    if quota::intersects(creq, &aa.deserved.v, true)
                        && !quota::over_deserved(anc_alloc, &aa.deserved, creq)
                    {
                        ancestors_over = false;
                        break;
                    }
                }
            }
            if !ancestors_over {
                continue;
            }
            for q in std::iter::once(cq).chain(checked) {
                if let Some(h) = held.get_mut(&q) {
                    for (x, r) in h.iter_mut().zip(creq) {
                        *x -= r;
                    }
                }
            }
            victims.push(c);
        }
        (victims, Vote::Permit)
    }

    /// Admit while `minResources + allocated + inqueue − elastic` stays
    /// within the real capability of the (leaf) queue and every ancestor, on
    /// the dims minResources asks for.
    fn job_enqueueable(&mut self, s: &Session, j: u32) -> Vote {
        let q = s.job_queue(j);
        if !self.takes_jobs(q) || !is_open(s, q) {
            return Vote::Reject;
        }
        let Some(min) = s.job_min_resources(j) else { return Vote::Permit };
        for c in self.chain(q) {
            let Some(a) = self.attr(c) else { continue };
            let short = a.short(&[min, &a.inqueue], Some(&a.elastic), min);
            if let Some(&k) = short.first() {
                // Volcano records this as a PodGroup event: here it is the refusal's reason.
                let (dim, show) = (&s.snap.dims[k], |v: f64| tephra_sdk::resource::show(&s.snap.dims[k], v));
                let room = a.real.v[k] - a.allocated[k] - a.inqueue[k] + a.elastic[k];
                log::why(&format!(
                    "needs {dim} {}; queue {} can admit {} ({dim} capability {} − allocated {} − held by admitted jobs {} + elastic {})",
                    show(min[k]),
                    queue_name(c),
                    show(room.max(0.0)),
                    show(a.real.v[k]),
                    show(a.allocated[k]),
                    show(a.inqueue[k]),
                    show(a.elastic[k]),
                ));
                return Vote::Reject;
            }
        }
        Vote::Permit
    }

    fn job_enqueued(&mut self, s: &Session, j: u32) {
        let Some(min) = s.job_min_resources(j) else { return };
        let chain: Vec<u32> = self.chain(s.job_queue(j)).collect();
        for c in chain {
            if let Some(a) = self.queues.get_mut(c as usize).and_then(Option::as_mut) {
                for (x, m) in a.inqueue.iter_mut().zip(min) {
                    *x += m;
                }
            }
        }
    }

    /// Gang eviction (Volcano's capacity `UnifiedEvictable`): gangpreempt
    /// may take any candidate; gangreclaim only what its queue holds beyond
    /// its deserved share (or uses without deserving any of it), never
    /// below its guarantee, each victim counted off as it is taken.
    fn evictable(
        &mut self,
        s: &Session,
        kind: EvictionKind,
        _job: u32,
        _hn: u32,
        candidates: &[u32],
    ) -> (Vec<u32>, Vote) {
        if kind == EvictionKind::GangPreempt {
            return (candidates.to_vec(), Vote::Permit);
        }
        let mut held: HashMap<u32, Vec<f64>> = HashMap::new();
        let mut victims = Vec::new();
        for &c in candidates {
            let Some((cq, a)) = self.victim_queue(s, c) else { continue };
            let creq = s.task_req(c);
            let alloc = held.entry(cq).or_insert_with(|| a.allocated.clone());
            let Some(rest) = Self::without(alloc, creq, a) else { continue };
            if !quota::intersects(creq, &a.deserved.v, true) || quota::over_deserved(alloc, &a.deserved, creq) {
                *alloc = rest;
                victims.push(c);
            }
        }
        (victims, Vote::Permit)
    }

    /// Deserved (NaN on scalars it does not name) and share; in flat mode a
    /// queue without jobs reports its spec deserved and share 0.
    fn queue_status(&mut self, s: &Session, q: u32) -> (Vec<f64>, f64) {
        match self.attr(q) {
            Some(a) => (a.deserved.status_row(), a.share),
            None => match self.spec_deserved.get(q as usize) {
                Some(d) => (d.status_row(), 0.0),
                None => (vec![f64::NAN; s.dims()], 0.0),
            },
        }
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(
    Capacity: queue_order,
    victim_queue_order,
    allocatable,
    preemptive,
    reclaimable,
    job_enqueueable,
    job_enqueued,
    queue_status,
    evictable
);

#[cfg(test)]
mod tests;
