//! Equivalence classes: pending tasks with the same class (same spec, and a
//! job with the same queue, minimums, priority and annotations; see
//! `Extra::task_class`) get the same predicate and node-order answers on a
//! node, so allocate searches once per class and afterwards asks the plugins
//! only about what changed.
//!
//! A class keeps the feasible nodes of its last search with their summed
//! scores. Before each choice, nodes that changed since the class last looked
//! (a task placed or removed there) are scored again, and nodes without room
//! or newly reserved are dropped; the chosen node is then checked against
//! every predicate again, so a rejection that depends on earlier placements
//! (a node-group limit, a pod count) still applies. A class is searched
//! afresh once half its nodes are gone, and every class is once a task
//! leaves a node (a gang discarded), since room came back.
//!
//! A job whose own tasks already hold resources sees nodes differently (a
//! plugin may spread a job's tasks), so such a job gets classes of its own;
//! and when a class passes from one job to the next, the nodes the previous
//! job touched are scored again.
//!
//! The assumption, stated in the contract: an answer about node A does not
//! rise when a task lands on node B (it may fall: the chosen node is checked
//! again). Pod rules break it. A task with pod affinity (whose rejection
//! is unresolvable) or with scores that move with placements (preferred pod
//! terms, soft spread, labels another pod's scoring term may pick) gets no
//! class and searches afresh. The class of a task with required
//! anti-affinity or a `DoNotSchedule` spread ("volatile"), once something
//! was placed, asks again about the nodes it would choose among (turned-down
//! ones leave) until they pass, and a spread class keeps the nodes turned
//! down for a resolvable reason ("parked") to take them back when they fit.
//! Allocate's argument `taskClasses: false` turns reuse off
//! for every task.

use super::{feasible_nodes, feasible_or_parked, scores};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use tephra_contract::{EventKind, TaskStatus};
use tephra_session::session::Session;
use tephra_snapshot::CLASSLESS;

/// A feasible node of a class.
#[derive(Clone, Copy)]
struct Entry {
    node: u32,
    /// The summed node-order score.
    score: f64,
    /// The task fits the node's idle resources now (not only once releasing
    /// pods are gone).
    now: bool,
    /// The event count when every predicate last passed the node (a volatile
    /// class's node is known to fit only while nothing was placed since).
    passed: usize,
}

/// The feasible nodes of one class.
struct Class {
    /// In node order (kept, so ties break as in a fresh search).
    nodes: Vec<Entry>,
    /// How many nodes the last search found.
    found: usize,
    /// The job using the class, and the event count when that job's
    /// allocation began (its own placements all come later).
    job: u32,
    job_began: usize,
    /// The event count when the scores were last brought up to date.
    synced: usize,
    /// For a task whose rejections may lift (topology spread): nodes a
    /// plugin turned down with a resolvable reason, asked again once
    /// something was placed, and the event count when they last were.
    parked: Vec<u32>,
    parked_synced: usize,
}

/// The classes of one allocate action.
pub struct Classes {
    by_key: HashMap<u64, Class>,
    /// Per node, the event count just after its last change.
    changed: Vec<usize>,
    /// Events already reflected in `changed`.
    seen: usize,
    /// Per job: it holds (or held, this action) resources, so it gets
    /// classes of its own.
    private: Vec<bool>,
    /// The job being allocated, whether its classes are its own, and the
    /// event count when its allocation began.
    job: u32,
    job_private: bool,
    job_began: usize,
    /// Some node is reserved (locks are checked when a class changes job).
    locks: bool,
    off: bool,
}

impl Classes {
    /// Reuse on, unless the allocate argument `taskClasses` is "false".
    pub fn new(ssn: &Session) -> Self {
        let off = ssn.action_args.get("allocate").and_then(|a| a.get("taskClasses")).is_some_and(|v| v == "false");
        let private = ssn
            .extra
            .job_tasks
            .iter()
            .map(|tasks| tasks.iter().any(|&t| ssn.task_status(t) != TaskStatus::Pending))
            .collect();
        Classes {
            by_key: HashMap::new(),
            changed: vec![0; ssn.nodes()],
            seen: 0,
            private,
            job: u32::MAX,
            job_private: false,
            job_began: 0,
            locks: ssn
                .snap
                .node_locked_job
                .iter()
                .chain(&ssn.snap.node_locked_queue)
                .any(|&o| o != tephra_session::session::NONE),
            off,
        }
    }

    /// `job`'s tasks are allocated next. From its second turn on, its own
    /// earlier placements count, so its classes are its own.
    pub fn begin(&mut self, ssn: &Session, job: u32) {
        self.job = job;
        self.job_private = std::mem::replace(&mut self.private[job as usize], true);
        self.job_began = ssn.events.len();
    }

    /// The node for `task` of the current job: Volcano's choice (room now
    /// before room once releasing pods leave, then the highest score, ties at
    /// random); `None` when no node fits (fit errors recorded).
    pub fn choose(&mut self, ssn: &mut Session, task: u32) -> Option<u32> {
        // A classless task (pod affinity, moving scores) searches afresh,
        // like reuse off.
        if self.off || ssn.extra.task_class[task as usize] == CLASSLESS {
            let nodes = feasible_nodes(ssn, task, true);
            return super::best_node(ssn, task, &nodes);
        }
        self.catch_up(ssn);
        let key = self.key(ssn, task);
        // Whether the class's nodes passed every predicate just now.
        let mut checked = false;
        loop {
            // The nodes to choose among, when the class just worked them out.
            let mut ranked = None;
            let fresh = !self.by_key.contains_key(&key);
            let rising = ssn.extra.task_rising[task as usize];
            if fresh {
                let mut parked = Vec::new();
                let nodes = feasible_or_parked(ssn, task, true, rising.then_some(&mut parked));
                if nodes.is_empty() {
                    return None;
                }
                let scores = scores(ssn, task, &nodes);
                let req = ssn.req(task);
                let synced = ssn.events.len();
                let nodes: Vec<Entry> = nodes
                    .into_iter()
                    .zip(scores)
                    .map(|(node, score)| Entry {
                        node,
                        score,
                        now: ssn.short(req, node, false).is_none(),
                        passed: synced,
                    })
                    .collect();
                let class = Class {
                    found: nodes.len(),
                    nodes,
                    job: self.job,
                    job_began: self.job_began,
                    synced: ssn.events.len(),
                    parked,
                    parked_synced: ssn.events.len(),
                };
                self.by_key.insert(key, class);
                checked = true;
            } else if !checked {
                if !self.refresh(ssn, task, key) {
                    // Half the nodes are gone: search again.
                    self.by_key.remove(&key);
                    continue;
                }
                if ssn.extra.task_volatile[task as usize] {
                    if rising {
                        self.lift(ssn, task, key);
                    }
                    ranked = Some(self.verify_top(ssn, task, key, rising));
                    checked = true;
                }
            }
            let class = self.by_key.get_mut(&key).expect("present");
            let rng = ssn.rng;
            let ranked = ranked.unwrap_or_else(|| top(&class.nodes));
            let Some(i) = pick(ssn, &ranked) else {
                // Nothing left: a fresh search finds the nodes or records why not.
                self.by_key.remove(&key);
                if fresh {
                    return None;
                }
                continue;
            };
            let node = class.nodes[i].node;
            if checked || ssn.ask().predicate(task, &[node])[0].is_none() {
                ssn.fit_errors.remove(&task);
                return Some(node);
            }
            // An answer changed through placements on other nodes (a
            // node-group limit): check the whole class again, and choose
            // again as if this draw never happened.
            ssn.rng = rng;
            let nodes: Vec<u32> = class.nodes.iter().map(|e| e.node).collect();
            let verdicts = ssn.ask().predicate(task, &nodes);
            if rising {
                let lifts = verdicts.iter().zip(&nodes).filter(|(v, _)| v.as_ref().is_some_and(|r| !r.unresolvable));
                class.parked.extend(lifts.map(|(_, &n)| n));
            }
            let mut ok = verdicts.iter().map(Option::is_none);
            class.nodes.retain(|_| ok.next().unwrap_or(false));
            checked = true;
        }
    }

    /// The class key of `task`: its class, made the job's own when needed.
    fn key(&self, ssn: &Session, task: u32) -> u64 {
        let class = ssn.extra.task_class[task as usize];
        if !self.job_private {
            return class;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (class, self.job).hash(&mut h);
        h.finish()
    }

    /// For a rising class, once something was placed: asks again about its
    /// parked nodes; those that fit now (with room, not reserved for others)
    /// join with fresh scores, those still turned down for a resolvable
    /// reason stay parked.
    fn lift(&mut self, ssn: &mut Session, task: u32, key: u64) {
        let class = self.by_key.get_mut(&key).expect("present");
        if class.parked_synced == ssn.events.len() {
            return;
        }
        let asked = std::mem::take(&mut class.parked);
        class.parked_synced = ssn.events.len();
        if asked.is_empty() {
            return;
        }
        let verdicts = ssn.ask().predicate(task, &asked);
        let req = ssn.req(task);
        let mut back = Vec::new();
        let mut parked = Vec::new();
        for (&n, v) in asked.iter().zip(&verdicts) {
            match v {
                None if ssn.short(req, n, true).is_none() && !ssn.lock_blocks(task, n) => back.push(n),
                Some(r) if !r.unresolvable => parked.push(n),
                _ => {}
            }
        }
        let class = self.by_key.get_mut(&key).expect("present");
        class.parked = parked;
        if back.is_empty() {
            return;
        }
        let scores = scores(ssn, task, &back);
        let (req, synced) = (ssn.req(task), ssn.events.len());
        let class = self.by_key.get_mut(&key).expect("present");
        for (n, score) in back.into_iter().zip(scores) {
            let now = ssn.short(req, n, false).is_none();
            let at = class.nodes.partition_point(|e| e.node < n);
            class.nodes.insert(at, Entry { node: n, score, now, passed: synced });
        }
    }

    /// For a volatile class, once something was placed: asks again about
    /// the nodes [`pick`] would choose among, until they all pass, and about
    /// one other candidate, whose existence decides whether Volcano's choice
    /// draws a random number. A placement elsewhere only ever turns such a
    /// class's nodes down (what may lift is parked, see [`Classes::lift`]), so
    /// the nodes further down need no asking: [`pick`] then chooses exactly
    /// what a fresh search would, where asking every node after each
    /// placement cost a call over the whole class per task. Returns what
    /// [`top`] returns once they passed.
    fn verify_top(&mut self, ssn: &mut Session, task: u32, key: u64, rising: bool) -> Ranked {
        let synced = ssn.events.len();
        let mut round = 0;
        loop {
            round += 1;
            let class = self.by_key.get_mut(&key).expect("present");
            let (ties, other) = top(&class.nodes);
            let mut asked: Vec<usize> = ties.iter().copied().filter(|&i| class.nodes[i].passed != synced).collect();
            if asked.is_empty() && ties.len() == 1 {
                asked.extend(other.filter(|&i| class.nodes[i].passed != synced));
            }
            // Many turned down one after another: ask about the rest at once.
            if round == 5 && !asked.is_empty() {
                asked = (0..class.nodes.len()).filter(|&i| class.nodes[i].passed != synced).collect();
            }
            if asked.is_empty() {
                return (ties, other);
            }
            let nodes: Vec<u32> = asked.iter().map(|&i| class.nodes[i].node).collect();
            let verdicts = ssn.ask().predicate(task, &nodes);
            let class = self.by_key.get_mut(&key).expect("present");
            let mut down = Vec::new();
            for (&i, v) in asked.iter().zip(&verdicts) {
                match v {
                    None => class.nodes[i].passed = synced,
                    Some(r) => {
                        if rising && !r.unresolvable {
                            class.parked.push(class.nodes[i].node);
                        }
                        down.push(i);
                    }
                }
            }
            if !down.is_empty() {
                down.sort_unstable();
                drop_indexes(&mut class.nodes, &down);
            }
        }
    }

    /// Brings `changed` up to the session's events. A task leaving a node (a
    /// gang's placements discarded) gives room back that classes may have
    /// dropped, so every class searches again; unless the task came there
    /// after the classes last looked (a trial placement undone, as the
    /// topology path makes them): then the node is as they saw it.
    fn catch_up(&mut self, ssn: &Session) {
        let mut arrived: Vec<(u32, u32)> = Vec::new();
        for (i, e) in ssn.events.iter().enumerate().skip(self.seen) {
            if let Some(c) = self.changed.get_mut(e.node as usize) {
                *c = i + 1;
            }
            match e.kind {
                EventKind::Allocate => arrived.push((e.task, e.node)),
                EventKind::Deallocate => match arrived.iter().rposition(|&a| a == (e.task, e.node)) {
                    Some(k) => {
                        arrived.swap_remove(k);
                    }
                    None => self.by_key.clear(),
                },
            }
        }
        self.seen = ssn.events.len();
    }

    /// Drops the class's nodes without room (or reserved for others) and
    /// scores again those that changed since it last looked, or, when the
    /// class passes to another job, since the previous job began. False
    /// (nothing rescored) when half the nodes are gone.
    fn refresh(&mut self, ssn: &mut Session, task: u32, key: u64) -> bool {
        let class = self.by_key.get_mut(&key).expect("present");
        let switch = class.job != self.job;
        let since = if switch { class.job_began } else { class.synced };
        // Locks do not change during allocate but depend on the job: a new
        // job checks every node, when there are locks at all. Otherwise only
        // nodes that changed can have lost room or changed score.
        let check_locks = switch && self.locks;
        // Indexes of the class's nodes that changed since: few changes (a
        // job's next task) are looked up, the class being in node order;
        // otherwise the class is walked.
        let recent = &ssn.events[since.min(ssn.events.len())..];
        let changed: Vec<usize> = if recent.len() * 8 < class.nodes.len() {
            let mut nodes: Vec<u32> = recent.iter().map(|e| e.node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            nodes.iter().filter_map(|&n| class.nodes.binary_search_by_key(&n, |e| e.node).ok()).collect()
        } else {
            (0..class.nodes.len()).filter(|&i| self.changed[class.nodes[i].node as usize] > since).collect()
        };
        // Indexes to drop (reserved for others, or without room) and to score again.
        let blocked: Vec<usize> = if check_locks {
            (0..class.nodes.len()).filter(|&i| ssn.lock_blocks(task, class.nodes[i].node)).collect()
        } else {
            Vec::new()
        };
        let mut gone = Vec::new();
        let req = ssn.req(task);
        let mut stale: Vec<usize> = Vec::new();
        for i in changed {
            let n = class.nodes[i].node;
            if blocked.binary_search(&i).is_ok() {
                continue;
            }
            if ssn.short(req, n, true).is_some() {
                gone.push(i);
            } else {
                class.nodes[i].now = ssn.short(req, n, false).is_none();
                stale.push(i);
            }
        }
        gone.extend(blocked);
        gone.sort_unstable();
        if (class.nodes.len() - gone.len()) * 2 < class.found {
            return false;
        }
        score_again(ssn, task, &mut class.nodes, &stale);
        drop_indexes(&mut class.nodes, &gone);
        class.job = self.job;
        class.job_began = self.job_began;
        class.synced = ssn.events.len();
        true
    }
}

/// Removes `nodes[i]` for every `i` in `sorted` (ascending, distinct).
fn drop_indexes(nodes: &mut Vec<Entry>, sorted: &[usize]) {
    if sorted.is_empty() {
        return;
    }
    let mut next = sorted.iter().peekable();
    let mut i = 0;
    nodes.retain(|_| {
        let drop = next.next_if_eq(&&i).is_some();
        i += 1;
        !drop
    });
}

/// The indexes of the nodes [`pick`] would choose among (the best by room
/// now, then score; in node order), and of another node that counts as a
/// candidate beside them (one with room now when they have it).
type Ranked = (Vec<usize>, Option<usize>);

/// The [`Ranked`] nodes of a class.
fn top(nodes: &[Entry]) -> Ranked {
    let mut ties: Vec<usize> = Vec::new();
    let (mut best_now, mut best_score) = (false, f64::NEG_INFINITY);
    for (i, e) in nodes.iter().enumerate() {
        let order = e.now.cmp(&best_now).then(e.score.total_cmp(&best_score));
        if ties.is_empty() || order.is_gt() {
            ties.clear();
            (best_now, best_score) = (e.now, e.score);
            ties.push(i);
        } else if order.is_eq() {
            ties.push(i);
        }
    }
    let other = (0..nodes.len()).find(|&i| ties.binary_search(&i).is_err() && (nodes[i].now || !best_now));
    (ties, other)
}

/// Scores `nodes[i]` again for every `i` in `stale`, in one call.
fn score_again(ssn: &mut Session, task: u32, nodes: &mut [Entry], stale: &[usize]) {
    if stale.is_empty() {
        return;
    }
    let asked: Vec<u32> = stale.iter().map(|&i| nodes[i].node).collect();
    for (&i, s) in stale.iter().zip(scores(ssn, task, &asked)) {
        nodes[i].score = s;
    }
}

/// The index of the node Volcano would choose among a class's `ranked`
/// nodes, drawing a random number exactly when [`super::best_node`] would
/// (two or more candidates), so both give the same choices from the same seed.
fn pick(ssn: &mut Session, (ties, other): &Ranked) -> Option<usize> {
    // Volcano draws among the best when there are two candidates or more.
    match ties.len() {
        0 => None,
        1 if other.is_none() => Some(ties[0]),
        k => Some(ties[(ssn.random() % k as u64) as usize]),
    }
}
