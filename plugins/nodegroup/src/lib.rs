//! Nodegroup: queues are tied to groups of nodes (Volcano's `nodegroup`
//! plugin, reference §8.7). A node's group is its `volcano.sh/nodegroup-name`
//! label; a queue names groups in its affinity (`required`, `preferred`) and
//! anti-affinity (`anti-required`, `anti-preferred`).
//!
//! Predicate, for a task of queue `q` on a node of group `g` — every failure
//! is unresolvable, so preempt and reclaim skip the node:
//!
//! 1. `q` has an invalid `volcano.sh/nodegroup-resource-limits` annotation:
//!    fail (every node, whatever its group);
//! 2. the node has no group label: pass only when `strict` is false and `q`
//!    has no affinity at all;
//! 3. `q` has no affinity: fail (labelled nodes are closed to such queues);
//! 4. allowed = `g ∈ required ∪ preferred`; `g ∈ anti-required` makes it
//!    false, then `g ∈ anti-preferred` makes it true again (Volcano's quirk:
//!    anti-preferred re-opens a group, even an anti-required or unlisted one);
//! 5. `q` limits group `g`: fail when the queue's usage in `g` plus the
//!    task's request exceeds a listed resource by ε or more.
//!
//! Score: 0 on unlabelled nodes or for queues without affinity; else +100 if
//! `g` is required, +50 if preferred (with `enablePreferredOrder`,
//! `50·(n−i)/n` for position `i` of `n` preferred groups), and exactly −1 if
//! `g` is anti-preferred.
//!
//! Arguments: `strict` (default true), `enablePreferredOrder` (default
//! false), `enableHierarchy` (default false; when true, a queue without
//! affinity takes its nearest ancestor's). Volcano reads `enableHierarchy` as a tier
//! switch; the contract passes only arguments, so here it is an argument. An
//! unreadable value keeps the default with a warning, as Volcano's `GetBool`
//! does: a plugin that refused to open would lift every group restriction.
//!
//! At open, a warning names every queue whose `capability` exceeds what the
//! nodes it may use can hold (the design's stated risk: jobs admitted but
//! never placeable).

mod limits;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use tephra_sdk::bindings::tephra::scheduler::host::Kind;
use tephra_sdk::resource::EPSILON;
use tephra_sdk::{
    is_allocated, log, Args, Event, EventKind, ExtensionPoint as P, Fits, Policy, Session, TaskStatus, Unfit, NONE,
};

/// The node label naming a node's group.
pub const GROUP_LABEL: &str = "volcano.sh/nodegroup-name";
/// The queue annotation with per-group resource limits.
pub const LIMITS_ANNOTATION: &str = "volcano.sh/nodegroup-resource-limits";
const BASE_SCORE: f64 = 100.0;
const JOB_MISSING: &str = "the task's job is not in the session";

/// What a queue's affinity says about one group in the predicate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    Allowed,
    /// Neither required nor preferred (nor re-opened by anti-preferred).
    NotListed,
    AntiRequired,
}

/// A queue's affinity lists as written, group names in list order.
#[derive(Default)]
struct Lists<'a> {
    required: Vec<&'a str>,
    preferred: Vec<&'a str>,
    anti_required: Vec<&'a str>,
    anti_preferred: Vec<&'a str>,
}

/// A queue's affinity resolved for every group of the session.
struct Affinity {
    verdict: Vec<Verdict>,
    score: Vec<f64>,
}

impl Affinity {
    fn new(l: &Lists, ids: &HashMap<String, u32>, groups: usize, preferred_order: bool) -> Self {
        let member = |list: &[&str]| {
            let mut m = vec![false; groups];
            list.iter().filter_map(|name| ids.get(*name)).for_each(|&g| m[g as usize] = true);
            m
        };
        let (req, pref) = (member(&l.required), member(&l.preferred));
        let (anti_req, anti_pref) = (member(&l.anti_required), member(&l.anti_preferred));
        // [quirk] Volcano keeps a group's last position and divides by the
        // number of distinct names, so a repeated name shifts the scores.
        let mut index = vec![None; groups];
        for (i, name) in l.preferred.iter().enumerate() {
            if let Some(&g) = ids.get(*name) {
                index[g as usize] = Some(i);
            }
        }
        let mut distinct = l.preferred.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let n = distinct.len() as f64;
        let (mut verdict, mut score) = (Vec::with_capacity(groups), Vec::with_capacity(groups));
        for g in 0..groups {
            let allowed = anti_pref[g] || ((req[g] || pref[g]) && !anti_req[g]);
            verdict.push(match (allowed, anti_req[g]) {
                (true, _) => Verdict::Allowed,
                (false, true) => Verdict::AntiRequired,
                (false, false) => Verdict::NotListed,
            });
            let mut s = if req[g] { BASE_SCORE } else { 0.0 };
            if preferred_order {
                if let Some(i) = index[g] {
                    s += 0.5 * BASE_SCORE * (n - i as f64) / n;
                }
            } else if pref[g] {
                s += 0.5 * BASE_SCORE;
            }
            score.push(if anti_pref[g] { -1.0 } else { s });
        }
        Affinity { verdict, score }
    }
}

/// One queue's limit in one group, and the queue's usage there.
struct GroupLimit {
    /// `(resource name, dimension, amount)`, by dimension; a name that is no
    /// dimension of this session has no usage (it stays 0).
    amounts: Vec<(String, Option<usize>, f64)>,
    /// Σ requests of the queue's tasks holding resources on the group's
    /// nodes (Volcano's `nodeGroupAllocated[queue][group]`).
    allocated: Vec<f64>,
}

#[derive(Default)]
struct Queue {
    /// Index into `NodeGroup::affinities`: its own, or with `enableHierarchy`
    /// the nearest ancestor's; `None` when no affinity applies.
    affinity: Option<usize>,
    /// The failure reported for every node when the limits annotation is invalid.
    invalid_limits: Option<String>,
    /// Limits by group id.
    limits: HashMap<u32, GroupLimit>,
}

/// The exceeded dimensions of a limit, in words.
#[cold]
fn over_message(
    s: &Session,
    l: &GroupLimit,
    used: impl Fn(Option<usize>) -> f64,
    exceeded: impl Fn(&(String, Option<usize>, f64)) -> bool,
) -> String {
    let over: Vec<String> = l
        .amounts
        .iter()
        .filter(|a| exceeded(a))
        .map(|(name, dim, limit)| match dim {
            Some(d) => format!("{name} {} > {}", amount(s, *d, used(*dim)), amount(s, *d, *limit)),
            None => format!("{name} 0 > {limit}"),
        })
        .collect();
    over.join(", ")
}

/// A queue whose capability exceeds what its usable nodes hold.
#[derive(Debug, PartialEq)]
pub struct Shortfall {
    pub queue: u32,
    /// `(dimension, capability, usable)` for every exceeded dimension.
    pub dims: Vec<(usize, f64, f64)>,
    /// What the queue may use: group names, and "unlabelled nodes".
    pub usable: Vec<String>,
}

#[derive(Default)]
pub struct NodeGroup {
    strict: bool,
    preferred_order: bool,
    hierarchy: bool,
    /// Group names by group id (ids in order of first appearance on a node).
    groups: Vec<String>,
    group_ids: HashMap<String, u32>,
    /// Per node: its group id, or `NONE` when unlabelled.
    node_group: Vec<u32>,
    affinities: Vec<Affinity>,
    queues: Vec<Queue>,
    /// Per task: the group its request is counted in, or `NONE`. Empty
    /// when no queue has limits (nothing to count).
    charged: Vec<u32>,
    /// Rejection messages built once per session (predicates run for every
    /// node of every task).
    reasons: Reasons,
}

struct Reasons {
    no_label_strict: Unfit,
    no_label_affinity: Unfit,
    /// Per group: (queue has no affinity, group not listed, group anti-required).
    per_group: Vec<[Unfit; 3]>,
}

impl Reasons {
    fn new(groups: &[String]) -> Self {
        let no_label = |why: &str| Unfit::unresolvable(format!("node has no {GROUP_LABEL} label {why}"));
        Reasons {
            no_label_strict: no_label("(strict mode admits only nodes of a node group)"),
            no_label_affinity: no_label("and the queue has a node-group affinity"),
            per_group: groups
                .iter()
                .map(|group| {
                    [
                        format!("node is in nodegroup \"{group}\" but the queue has no node-group affinity"),
                        format!("nodegroup \"{group}\" is not among the queue's required or preferred node groups"),
                        format!("nodegroup \"{group}\" is in the queue's required anti-affinity"),
                    ]
                    .map(Unfit::unresolvable)
                })
                .collect(),
        }
    }
}

impl Default for Reasons {
    fn default() -> Self {
        Reasons::new(&[])
    }
}

/// A boolean argument; an unreadable value keeps the default, as Volcano's
/// `Arguments.GetBool` does.
fn flag(args: &Args, key: &str, default: bool) -> bool {
    args.bool(key, default).unwrap_or_else(|e| {
        log::warn(&format!("{e}; using {default}"));
        default
    })
}

/// The arguments `strict`, `enablePreferredOrder` and `enableHierarchy`.
fn switches(args: &Args) -> (bool, bool, bool) {
    (flag(args, "strict", true), flag(args, "enablePreferredOrder", false), flag(args, "enableHierarchy", false))
}

/// An amount in Volcano's internal units, written as a Kubernetes quantity.
fn amount(s: &Session, dim: usize, v: f64) -> String {
    let n = if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v}") };
    match s.snap.dims.get(dim).map(String::as_str) {
        Some("memory" | "pods") => n,
        _ => format!("{n}m"),
    }
}

fn task_queue(s: &Session, task: u32) -> Option<u32> {
    let job = *s.snap.task_job.get(task as usize)?;
    s.snap.job_queue.get(job as usize).copied()
}

impl NodeGroup {
    fn index_groups(&mut self, s: &Session) {
        self.node_group = vec![NONE; s.nodes()];
        for l in &s.snap.node_labels {
            if (l.owner as usize) >= s.nodes() || s.str(l.key) != GROUP_LABEL {
                continue;
            }
            let name = s.str(l.value);
            let g = match self.group_ids.get(name) {
                Some(&g) => g,
                None => {
                    self.groups.push(name.to_string());
                    let g = self.groups.len() as u32 - 1;
                    self.group_ids.insert(name.to_string(), g);
                    g
                }
            };
            self.node_group[l.owner as usize] = g;
        }
    }

    fn resolve_affinities(&mut self, s: &Session) {
        let nq = s.queues();
        let mut lists: Vec<Option<Lists>> = (0..nq).map(|_| None).collect();
        for l in &s.snap.queue_affinity {
            let Some(slot) = lists.get_mut(l.owner as usize) else { continue };
            let name = s.str(l.value);
            let kind = s.str(l.key);
            if !matches!(kind, "required" | "preferred" | "anti-required" | "anti-preferred") {
                continue;
            }
            let lists = slot.get_or_insert_with(Lists::default);
            match kind {
                "required" => lists.required.push(name),
                "preferred" => lists.preferred.push(name),
                "anti-required" => lists.anti_required.push(name),
                _ => lists.anti_preferred.push(name),
            }
        }
        let mut own = vec![None; nq];
        for (q, l) in lists.iter().enumerate() {
            if let Some(l) = l {
                own[q] = Some(self.affinities.len());
                self.affinities.push(Affinity::new(l, &self.group_ids, self.groups.len(), self.preferred_order));
            }
        }
        self.queues = (0..nq).map(|_| Queue::default()).collect();
        for q in 0..nq {
            let mut affinity = own[q];
            if self.hierarchy {
                // The nearest ancestor with an affinity; the walk is bounded
                // so a parent cycle cannot loop.
                let mut p = s.snap.queue_parent[q];
                for _ in 0..nq {
                    if affinity.is_some() || p == NONE || p as usize >= nq {
                        break;
                    }
                    affinity = own[p as usize];
                    p = s.snap.queue_parent[p as usize];
                }
            }
            self.queues[q].affinity = affinity;
        }
    }

    fn parse_limits(&mut self, s: &Session) {
        let mut raw: Vec<Option<&str>> = vec![None; s.queues()];
        for l in &s.snap.queue_annotations {
            if let Some(slot) = raw.get_mut(l.owner as usize) {
                if s.str(l.key) == LIMITS_ANNOTATION {
                    *slot = Some(s.str(l.value));
                }
            }
        }
        for (q, text) in raw.into_iter().enumerate() {
            let Some(text) = text.filter(|t| !t.is_empty()) else { continue };
            let queue = &mut self.queues[q];
            match limits::parse(text) {
                Err(e) => {
                    let reason = format!("the queue's {LIMITS_ANNOTATION} annotation is invalid: {e}");
                    log::error(&format!("queue {}: {reason}", log::name(Kind::Queue, q as u32)));
                    queue.invalid_limits = Some(reason);
                }
                Ok(groups) => {
                    for (group, list) in groups {
                        let Some(&g) = self.group_ids.get(&group) else { continue };
                        let mut amounts: Vec<_> = list.into_iter().map(|(n, v)| (s.dim(&n), n, v)).collect();
                        amounts
                            .sort_by(|a, b| (a.0.unwrap_or(usize::MAX), &a.1).cmp(&(b.0.unwrap_or(usize::MAX), &b.1)));
                        let amounts = amounts.into_iter().map(|(d, n, v)| (n, d, v)).collect();
                        queue.limits.insert(g, GroupLimit { amounts, allocated: vec![0.0; s.dims()] });
                    }
                }
            }
        }
    }

    /// Counts, from zero, the tasks that already hold resources (Allocated,
    /// Binding, Bound, Running: Volcano's `AllocatedStatus`) in their queue's
    /// groups.
    fn count_existing(&mut self, s: &Session) {
        if self.queues.iter().all(|q| q.limits.is_empty()) {
            return;
        }
        for q in &mut self.queues {
            q.limits.values_mut().for_each(|l| l.allocated.fill(0.0));
        }
        self.charged = vec![NONE; s.tasks()];
        for t in 0..s.tasks() as u32 {
            if is_allocated(s.task_status(t)) {
                self.charge(s, t, s.task_node(t));
            }
        }
    }

    fn limit_of(&mut self, s: &Session, task: u32, group: u32) -> Option<&mut GroupLimit> {
        let q = task_queue(s, task)?;
        self.queues.get_mut(q as usize)?.limits.get_mut(&group)
    }

    fn charge(&mut self, s: &Session, task: u32, node: u32) {
        let g = self.node_group.get(node as usize).copied().unwrap_or(NONE);
        if let Some(l) = self.limit_of(s, task, g) {
            tephra_sdk::resource::add(&mut l.allocated, s.task_req(task));
            self.charged[task as usize] = g;
        }
    }

    fn uncharge(&mut self, s: &Session, task: u32) {
        let g = self.charged[task as usize];
        if g == NONE {
            return;
        }
        if let Some(l) = self.limit_of(s, task, g) {
            tephra_sdk::resource::sub(&mut l.allocated, s.task_req(task));
        }
        self.charged[task as usize] = NONE;
    }

    /// Dimensions over the limit if `task` joined its queue's usage in `group`.
    fn over_limit(&self, s: &Session, queue: &Queue, task: u32, group: u32) -> Option<String> {
        let l = queue.limits.get(&group)?;
        let req = s.task_req(task);
        let used = |dim: Option<usize>| dim.map_or(0.0, |d| l.allocated[d] + req[d]);
        let exceeded = |&(_, dim, limit): &(String, Option<usize>, f64)| {
            let used = used(dim);
            used > limit && used - limit >= EPSILON
        };
        // Checked first without words: this runs for every node of a group the queue limits.
        l.amounts.iter().any(exceeded).then(|| over_message(s, l, used, exceeded))
    }

    /// Queues whose `capability` exceeds, by ε or more in some dimension, the
    /// allocatable of the nodes their affinity admits (each group capped by
    /// the queue's limit there). Queues with an invalid limits annotation
    /// are left out: no node admits them, and open already logs that.
    pub fn shortfalls(&self, s: &Session) -> Vec<Shortfall> {
        let d = s.dims();
        let mut per_group = vec![0.0; self.groups.len() * d];
        let mut unlabelled = vec![0.0; d];
        for n in 0..s.nodes() as u32 {
            let g = self.node_group[n as usize];
            let row = if g == NONE { &mut unlabelled[..] } else { &mut per_group[g as usize * d..][..d] };
            tephra_sdk::resource::add(row, s.node_allocatable(n));
        }
        let mut capability: Vec<Vec<(usize, f64)>> = vec![Vec::new(); s.queues()];
        for c in &s.snap.queue_capability {
            if let Some(row) = capability.get_mut(c.owner as usize) {
                if (c.dim as usize) < d {
                    row.push((c.dim as usize, c.value));
                }
            }
        }
        let mut out = Vec::new();
        for (q, queue) in self.queues.iter().enumerate() {
            if capability[q].is_empty() || queue.invalid_limits.is_some() {
                continue;
            }
            let mut usable = vec![0.0; d];
            let mut names = Vec::new();
            match queue.affinity.map(|a| &self.affinities[a]) {
                None if !self.strict => {
                    tephra_sdk::resource::add(&mut usable, &unlabelled);
                    names.push("unlabelled nodes".to_string());
                }
                None => {}
                Some(a) => {
                    for g in (0..self.groups.len()).filter(|&g| a.verdict[g] == Verdict::Allowed) {
                        let mut row = per_group[g * d..][..d].to_vec();
                        for (_, dim, limit) in queue.limits.get(&(g as u32)).map_or(&[][..], |l| &l.amounts[..]) {
                            if let Some(k) = *dim {
                                row[k] = row[k].min(limit.max(0.0));
                            }
                        }
                        tephra_sdk::resource::add(&mut usable, &row);
                        names.push(self.groups[g].clone());
                    }
                }
            }
            let dims: Vec<_> = capability[q]
                .iter()
                .filter(|&&(k, cap)| cap > 0.0 && cap - usable[k] >= EPSILON)
                .map(|&(k, cap)| (k, cap, usable[k]))
                .collect();
            if !dims.is_empty() {
                out.push(Shortfall { queue: q as u32, dims, usable: names });
            }
        }
        out
    }

    fn warn_shortfalls(&self, s: &Session) {
        for f in self.shortfalls(s) {
            let dims: Vec<String> = f
                .dims
                .iter()
                .map(|&(k, cap, usable)| format!("{} {} > {}", s.snap.dims[k], amount(s, k, cap), amount(s, k, usable)))
                .collect();
            let usable = if f.usable.is_empty() { "none".to_string() } else { f.usable.join(", ") };
            log::warn(&format!(
                "queue {}: capability exceeds the allocatable of the node groups it may use ({}; usable: {usable}); \
                 its jobs can be admitted but never placed",
                log::name(Kind::Queue, f.queue),
                dims.join(", "),
            ));
        }
    }

    fn group_name(&self, g: u32) -> &str {
        &self.groups[g as usize]
    }

    #[cold]
    fn limit_unfit(&self, g: u32, over: String) -> Unfit {
        let group = self.group_name(g);
        Unfit::unresolvable(format!("the queue's resource limit in nodegroup \"{group}\" would be exceeded: {over}"))
    }

    /// The task's queue and the affinity that applies to it, worked out once
    /// per predicate call (step 1 of the module docs fails every node).
    fn admission(&self, s: &Session, task: u32) -> Result<Admission<'_>, Unfit> {
        let Some(q) = task_queue(s, task) else { return Err(Unfit::unresolvable(JOB_MISSING)) };
        let queue = self.queues.get(q as usize);
        if let Some(reason) = queue.and_then(|q| q.invalid_limits.as_ref()) {
            return Err(Unfit::unresolvable(reason.as_str()));
        }
        Ok((queue, queue.and_then(|q| q.affinity).map(|a| &self.affinities[a])))
    }

    /// Whether `node` admits `task` (steps 2–5 of the module docs).
    fn admits(&self, s: &Session, task: u32, (queue, affinity): Admission<'_>, node: u32) -> Result<(), Unfit> {
        let g = self.group_of(node);
        match self.refusal(g, affinity) {
            Some(why) => Err(why.clone()),
            None => self.over_limit_in(s, queue, task, g).map_or(Ok(()), Err),
        }
    }

    fn group_of(&self, node: u32) -> u32 {
        self.node_group.get(node as usize).copied().unwrap_or(NONE)
    }

    /// Steps 2–4 for a node of group `g` (`NONE`: unlabelled): one of the
    /// session's reasons, handed out by reference (this runs for every node
    /// of every task), or `None` if the limits (step 5) are all that is left.
    fn refusal(&self, g: u32, affinity: Option<&Affinity>) -> Option<&Unfit> {
        if g == NONE {
            return match (self.strict, affinity) {
                (false, None) => None,
                (true, _) => Some(&self.reasons.no_label_strict),
                (false, Some(_)) => Some(&self.reasons.no_label_affinity),
            };
        }
        let reasons = &self.reasons.per_group[g as usize];
        match affinity.map(|a| a.verdict[g as usize]) {
            None => Some(&reasons[0]),
            Some(Verdict::Allowed) => None,
            Some(Verdict::NotListed) => Some(&reasons[1]),
            Some(Verdict::AntiRequired) => Some(&reasons[2]),
        }
    }

    /// Step 5: the queue's limit in group `g` (unlabelled nodes have none).
    fn over_limit_in(&self, s: &Session, queue: Option<&Queue>, task: u32, g: u32) -> Option<Unfit> {
        if g == NONE {
            return None;
        }
        let over = self.over_limit(s, queue?, task, g)?;
        Some(self.limit_unfit(g, over))
    }
}

/// A task's queue, and the node-group affinity that applies to it.
type Admission<'a> = (Option<&'a Queue>, Option<&'a Affinity>);

impl Policy for NodeGroup {
    const NAME: &'static str = "nodegroup";
    const POINTS: &'static [P] = &[P::Predicate, P::NodeOrder, P::Events];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        (self.strict, self.preferred_order, self.hierarchy) = switches(args);
        self.index_groups(s);
        self.reasons = Reasons::new(&self.groups);
        self.resolve_affinities(s);
        self.parse_limits(s);
        self.count_existing(s);
        self.warn_shortfalls(s);
        Ok(())
    }

    /// Groups, affinities and limits come from labels and queue specs, which
    /// do not move between sessions that continue; what tasks hold in each
    /// group is counted again (their statuses moved without events).
    fn resume(&mut self, s: &Session, args: &Args) -> Result<bool, String> {
        if switches(args) != (self.strict, self.preferred_order, self.hierarchy) {
            return Ok(false);
        }
        self.count_existing(s);
        self.warn_shortfalls(s);
        Ok(true)
    }

    fn on_event(&mut self, s: &Session, e: &Event, _old: TaskStatus) {
        if self.charged.is_empty() || e.task as usize >= self.charged.len() {
            return;
        }
        // Volcano adds on Allocate and subtracts on Deallocate, both on the
        // task's node; keeping the charged group per task gives the same
        // sums and stays exact however the events name the node.
        self.uncharge(s, e.task);
        if e.kind == EventKind::Allocate {
            self.charge(s, e.task, e.node);
        }
    }

    fn predicate(&mut self, s: &Session, task: u32, node: u32) -> Result<(), Unfit> {
        let admission = self.admission(s, task)?;
        self.admits(s, task, admission, node)
    }

    fn predicate_nodes(&mut self, s: &Session, task: u32, nodes: &[u32], fits: &mut Fits) {
        match self.admission(s, task) {
            Ok((queue, affinity)) => {
                // Most queues have no limits: then step 5 is not even called.
                let limited = queue.filter(|q| !q.limits.is_empty());
                for (i, &n) in nodes.iter().enumerate() {
                    // `admits`, with the session's reasons passed by reference.
                    // Kept apart on purpose: one function serving both (a
                    // `Cow` answer) cost allocate 39 M more instructions at 1k.
                    let g = self.group_of(n);
                    match self.refusal(g, affinity) {
                        Some(why) => fits.reject(i, why),
                        None if limited.is_some() => {
                            if let Some(why) = self.over_limit_in(s, limited, task, g) {
                                fits.reject(i, &why);
                            }
                        }
                        None => {}
                    }
                }
            }
            Err(why) => (0..nodes.len()).for_each(|i| fits.reject(i, &why)),
        }
    }

    fn node_order(&mut self, s: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
        let queue = task_queue(s, task).and_then(|q| self.queues.get(q as usize));
        let Some(affinity) = queue.and_then(|q| q.affinity).map(|a| &self.affinities[a]) else {
            scores.fill(0.0);
            return;
        };
        for (score, &n) in scores.iter_mut().zip(nodes) {
            let g = self.group_of(n);
            *score = if g == NONE { 0.0 } else { affinity.score[g as usize] };
        }
    }

    fn node_score(&mut self, s: &Session, task: u32, node: u32) -> f64 {
        let mut score = [0.0];
        self.node_order(s, task, &[node], &mut score);
        score[0]
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(NodeGroup: predicate, node_order);
