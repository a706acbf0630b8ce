//! allocate's topology path (Volcano's `allocateForJob` and
//! `allocateForSubJob`): a job with a hard network-topology limit, or with
//! subgroups, is placed inside one HyperNode, and each subgroup with a limit
//! of its own inside one HyperNode of that. Candidates come in gradients,
//! one per tier, lowest first; within a tier the `hypernode-order` scores
//! decide which is tried first, and the first that makes the job ready (or
//! pipelined) wins: the lowest tier that can hold the gang, its best-scored
//! HyperNode. Hard limits are never crossed.

use super::{best_node, job_pipelined, job_ready};
use std::collections::VecDeque;
use std::sync::Arc;
use tephra_contract::{ExtensionPoint as P, TaskStatus};
use tephra_model::topology::Tree;
use tephra_session::session::{is_allocated, Session, NONE};
use tephra_session::statement::Statement;

/// Whether allocate places `job` through a HyperNode (also when the
/// HyperNodes are unusable and the job has a topology: it then waits).
pub fn wants_domain(ssn: &Session, job: u32) -> bool {
    ssn.snap.job_highest_tier[job as usize] != NONE
        || !ssn.extra.job_subgroups[job as usize].is_empty()
        || (ssn.extra.topology_error.is_some() && has_topology(ssn, job))
}

/// A placement the topology path made: kept (ready or pipelined), with
/// the HyperNodes chosen as (subgroup or `NONE`: the job, HyperNode).
pub struct Placed {
    /// The placements, not yet committed.
    pub stmt: Statement,
    /// The job is ready (its gang placed), not only pipelined.
    pub ready: bool,
    /// The HyperNodes chosen: (subgroup or `NONE` for the job, HyperNode).
    pub domains: Vec<(u32, u32)>,
}

/// Whether `job` or one of its subgroups has a `networkTopology`
/// (Volcano's `ContainsNetworkTopology`).
pub fn has_topology(ssn: &Session, job: u32) -> bool {
    ssn.snap.job_topology[job as usize]
        || ssn.extra.job_subgroups[job as usize].iter().any(|&g| ssn.snap.subgroups[g as usize].topology)
}

/// Places pending `tasks` of `job` inside one HyperNode, or `None`
/// (nothing applied) when no HyperNode the job may use can hold it. Placed
/// tasks leave `tasks`.
pub fn allocate(ssn: &mut Session, job: u32, tasks: &mut VecDeque<u32>) -> Option<Placed> {
    if let Some(e) = ssn.extra.topology_error.clone() {
        ssn.note_job(job, format!("waits for a usable HyperNode tree: {e}"));
        return None;
    }
    let tree = Arc::clone(&ssn.extra.topology);
    let limit = ssn.snap.job_highest_tier[job as usize];
    let job_tasks = ssn.extra.job_tasks[job as usize].clone();
    let placed = home(ssn, &tree, &job_tasks);
    let Some(root) = search_root(&tree, 0, limit, placed) else {
        let why = format!("its placed tasks already span more than tier {limit} allows");
        ssn.note_job(job, why);
        return None;
    };
    let need = if placed.is_some() { Vec::new() } else { min_resources(ssn, job) };
    let slots = Slots::of(ssn, tasks, job_short(ssn, job));
    for gradient in job_gradients(&tree, root, limit) {
        let mut gradient = with_room(ssn, &tree, gradient, &need);
        gradient.retain(|&h| slots.may_fit(ssn, &tree.nodes[h as usize]));
        for hn in ordered(ssn, job, NONE, gradient) {
            let mut left = tasks.clone();
            let Some(mut placed) = try_in(ssn, &tree, job, &mut left, hn, false) else { continue };
            *tasks = left;
            if limit != NONE {
                placed.domains.insert(0, (NONE, hn));
            }
            return Some(placed);
        }
    }
    let within = if limit == NONE { String::new() } else { format!(" of tier {limit} or lower") };
    ssn.note_job(job, format!("no HyperNode{within} can hold the gang"));
    None
}

/// The job's pending `tasks` placed inside HyperNode `domain` as allocate
/// would, but only pipelined and nominated, never bound (gang eviction's
/// plan: the room is the victims' once they are gone), or `None` with
/// nothing applied.
pub fn place_in(ssn: &mut Session, job: u32, tasks: &mut VecDeque<u32>, domain: u32) -> Option<Placed> {
    let tree = Arc::clone(&ssn.extra.topology);
    try_in(ssn, &tree, job, tasks, domain, true)
}

/// A job's candidate gradients: with a limit, every tier up to it under
/// `root`, lowest first; without one (a job placed through its subgroups'
/// limits only) just `root`, as Volcano's job gradient for a job that is
/// not hard.
fn job_gradients(tree: &Tree, root: u32, limit: u32) -> Vec<Vec<u32>> {
    if limit == NONE {
        vec![vec![root]]
    } else {
        gradients(tree, root, limit)
    }
}

/// Where gang eviction may make room for `job`: for a job with a hard
/// limit, the HyperNodes it may use whose nodes could hold its minimum
/// once emptied, highest tier first, at most `max`; for any other job the
/// whole cluster.
pub fn eviction_domains(ssn: &Session, job: u32, max: usize) -> Vec<u32> {
    if ssn.extra.topology_error.is_some() && has_topology(ssn, job) {
        return Vec::new();
    }
    if ssn.snap.job_highest_tier[job as usize] == NONE {
        return vec![0];
    }
    let tree = Arc::clone(&ssn.extra.topology);
    let limit = ssn.snap.job_highest_tier[job as usize];
    let placed = home(ssn, &tree, &ssn.extra.job_tasks[job as usize]);
    let Some(root) = search_root(&tree, 0, limit, placed) else { return Vec::new() };
    let need = if placed.is_some() { Vec::new() } else { min_resources(ssn, job) };
    let fits = |h: u32| {
        let mut total = vec![0.0; ssn.d];
        for &n in &tree.nodes[h as usize] {
            let d = ssn.d;
            tephra_model::resource::add_scaled(
                &mut total,
                &ssn.snap.node_allocatable[n as usize * d..(n as usize + 1) * d],
                1.0,
            );
        }
        need.iter().zip(&total).all(|(w, t)| w - t < tephra_model::resource::EPSILON)
    };
    let mut out = Vec::new();
    // Volcano's reversed, capped gradients: whole tiers from the highest
    // down while they fit, then the last ones of the next.
    for gradient in job_gradients(&tree, root, limit).into_iter().rev() {
        let gradient: Vec<u32> = gradient.into_iter().filter(|&h| fits(h)).collect();
        let left = max - out.len();
        let take = gradient.len().min(left);
        out.extend(&gradient[gradient.len() - take..]);
        if out.len() == max {
            break;
        }
    }
    out
}

/// The job's placement in HyperNode `hn`, subgroup by subgroup: kept when
/// the job is ready or pipelined, discarded otherwise.
fn try_in(
    ssn: &mut Session,
    tree: &Tree,
    job: u32,
    tasks: &mut VecDeque<u32>,
    hn: u32,
    nominate: bool,
) -> Option<Placed> {
    let mut stmt = Statement::new();
    let required = required(ssn, job, tasks);
    let mut queue: Vec<u32> = tasks.iter().map(|&t| subgroup(ssn, t)).collect();
    queue.sort_unstable();
    queue.dedup();
    // Volcano's subgroup queue: the groups a minSubGroups needs first, then
    // those not ready; a group placed until ready goes back while it has
    // pending tasks, one failing is dropped; until the job is ready.
    let mut domains = Vec::new();
    while let Some(group) = next_group(ssn, job, &required, &mut queue) {
        let mut mine: VecDeque<u32> = tasks.iter().copied().filter(|&t| subgroup(ssn, t) == group).collect();
        let own_limit = if group == NONE { NONE } else { ssn.snap.subgroups[group as usize].highest_tier };
        let placed = if own_limit == NONE {
            place(ssn, job, group, &mut mine, &tree.nodes[hn as usize], nominate)
        } else {
            place_subgroup(ssn, tree, job, group, &mut mine, hn, nominate).map(|(s, h)| {
                domains.push((group, h));
                s
            })
        };
        let Some(s) = placed else { continue };
        let left: std::collections::HashSet<u32> = mine.iter().copied().collect();
        tasks.retain(|t| subgroup(ssn, *t) != group || left.contains(t));
        stmt.merge(s);
        if job_ready(ssn, job) {
            break;
        }
        if !mine.is_empty() {
            queue.push(group);
        }
    }
    let ready = job_ready(ssn, job);
    if !stmt.is_empty() && (ready || job_pipelined(ssn, job)) {
        Some(Placed { stmt, ready, domains })
    } else {
        stmt.discard(ssn);
        None
    }
}

/// A subgroup with a limit of its own: inside one HyperNode under `within`
/// (the statement and the HyperNode).
fn place_subgroup(
    ssn: &mut Session,
    tree: &Tree,
    job: u32,
    group: u32,
    tasks: &mut VecDeque<u32>,
    within: u32,
    nominate: bool,
) -> Option<(Statement, u32)> {
    let limit = ssn.snap.subgroups[group as usize].highest_tier;
    let members = ssn.extra.subgroup_tasks[group as usize].clone();
    let placed = home(ssn, tree, &members);
    let root = search_root(tree, within, limit, placed)?;
    let need = if placed.is_some() { Vec::new() } else { pending_request(ssn, tasks) };
    let held = members.iter().filter(|&&t| is_allocated(ssn.task_status(t))).count() as u32;
    let short = ssn.snap.subgroups[group as usize].min_available.saturating_sub(held);
    let slots = Slots::of(ssn, tasks, short);
    for gradient in gradients(tree, root, limit) {
        let mut gradient = with_room(ssn, tree, gradient, &need);
        gradient.retain(|&h| slots.may_fit(ssn, &tree.nodes[h as usize]));
        for hn in ordered(ssn, job, group, gradient) {
            let mut left = tasks.clone();
            if let Some(s) = place(ssn, job, group, &mut left, &tree.nodes[hn as usize], nominate) {
                *tasks = left;
                return Some((s, hn));
            }
        }
    }
    None
}

/// Places tasks of `group` (a subgroup, or `NONE`: the job's tasks in
/// none) on `nodes` until the group is ready: the statement when it is
/// ready or pipelined, else nothing (discarded). `nominate`: every task is
/// pipelined and nominated to its node (room made by evictions), none bound.
fn place(
    ssn: &mut Session,
    job: u32,
    group: u32,
    tasks: &mut VecDeque<u32>,
    nodes: &[u32],
    nominate: bool,
) -> Option<Statement> {
    let queue = ssn.job_queue(job);
    let mut stmt = Statement::new();
    // A group needing every task fails at its first unplaceable one.
    let whole = group_needs_all(ssn, job, group);
    while let Some(t) = tasks.pop_front() {
        if !super::queue_admits(ssn, queue, t) {
            continue;
        }
        let fits = feasible_in(ssn, t, nodes);
        // The node preemption nominated, when it is among them (Volcano).
        let nominated = ssn.extra.task_nominated[t as usize];
        let Some(node) = fits.contains(&nominated).then_some(nominated).or_else(|| best_node(ssn, t, &fits)) else {
            if whole {
                break;
            }
            continue;
        };
        if !nominate && ssn.short(ssn.req(t), node, false).is_none() {
            stmt.allocate(ssn, t, node);
        } else {
            stmt.pipeline(ssn, t, node, nominate);
        }
        if group_ready(ssn, job, group, false) {
            break;
        }
    }
    if !stmt.is_empty() && (group_ready(ssn, job, group, false) || group_ready(ssn, job, group, true)) {
        Some(stmt)
    } else {
        stmt.discard(ssn);
        None
    }
}

/// Nodes among `nodes` where `task` fits: reservations, resources against
/// FutureIdle, every plugin predicate.
fn feasible_in(ssn: &mut Session, task: u32, nodes: &[u32]) -> Vec<u32> {
    let req = ssn.req(task).to_vec();
    let room: Vec<u32> =
        nodes.iter().copied().filter(|&n| !ssn.lock_blocks(task, n) && ssn.short(&req, n, true).is_none()).collect();
    if room.is_empty() {
        return room;
    }
    let verdicts = ssn.ask().predicate(task, &room);
    room.into_iter().zip(verdicts).filter(|(_, v)| v.is_none()).map(|(n, _)| n).collect()
}

/// Whether `group` is ready (`pipelined`: or pipelined): a subgroup when
/// enough of its tasks hold a node; the rest of a job as the plugins say.
fn group_ready(ssn: &mut Session, job: u32, group: u32, pipelined: bool) -> bool {
    let partitioned = !ssn.extra.job_subgroups[job as usize].is_empty();
    if group == NONE && !partitioned {
        return if pipelined { job_pipelined(ssn, job) } else { job_ready(ssn, job) };
    }
    // A partitioned job's tasks in no subgroup form a group of one (Volcano).
    let (min, members) = if group == NONE {
        let rest = ssn.extra.job_tasks[job as usize].iter().copied().filter(|&t| subgroup(ssn, t) == NONE).collect();
        (1, rest)
    } else {
        (ssn.snap.subgroups[group as usize].min_available as usize, ssn.extra.subgroup_tasks[group as usize].clone())
    };
    let held = members
        .iter()
        .filter(|&&t| {
            let s = ssn.task_status(t);
            is_allocated(s) || s == TaskStatus::Succeeded || (pipelined && s == TaskStatus::Pipelined)
        })
        .count();
    held >= min
}

/// Volcano's `NeedContinueAllocating` for a group: false when it needs
/// every one of its tasks.
fn group_needs_all(ssn: &Session, job: u32, group: u32) -> bool {
    if group == NONE {
        // A partitioned job's tasks in no subgroup are a group of one.
        let partitioned = !ssn.extra.job_subgroups[job as usize].is_empty();
        return !partitioned && ssn.job_min(job) as usize >= ssn.extra.job_tasks[job as usize].len();
    }
    let g = &ssn.snap.subgroups[group as usize];
    g.min_available as usize >= ssn.extra.subgroup_tasks[group as usize].len()
}

fn subgroup(ssn: &Session, t: u32) -> u32 {
    ssn.snap.task_subgroup[t as usize]
}

/// The subgroups a policy's minSubGroups still needs (Volcano's required
/// subgroups): walking the unready ones in order, while the policy has
/// fewer ready than its minimum.
fn required(ssn: &mut Session, job: u32, tasks: &VecDeque<u32>) -> Vec<u32> {
    let mins: Vec<(u32, u32)> =
        ssn.snap.job_min_subgroups.iter().filter(|m| m.job == job).map(|m| (m.role, m.count)).collect();
    if mins.is_empty() {
        return Vec::new();
    }
    let groups = ssn.extra.job_subgroups[job as usize].clone();
    let mut count: std::collections::BTreeMap<u32, u32> = Default::default();
    let mut unready = Vec::new();
    for g in groups {
        let policy = ssn.snap.subgroups[g as usize].policy;
        if group_ready(ssn, job, g, false) {
            *count.entry(policy).or_default() += 1;
        } else if tasks.iter().any(|&t| subgroup(ssn, t) == g) {
            unready.push(g);
        }
    }
    let mut out = Vec::new();
    for g in unready {
        let policy = ssn.snap.subgroups[g as usize].policy;
        let min = mins.iter().find(|m| m.0 == policy).map_or(0, |m| m.1);
        let c = count.entry(policy).or_default();
        if *c < min {
            *c += 1;
            out.push(g);
        }
    }
    out
}

/// Removes and returns the group to place next: required ones first, then
/// those not ready, then the job's tasks in no subgroup before subgroups,
/// then subgroup order (partition index, then id, as the snapshot has them).
fn next_group(ssn: &mut Session, job: u32, required: &[u32], queue: &mut Vec<u32>) -> Option<u32> {
    let key = |ssn: &mut Session, g: u32| {
        let ready = group_ready(ssn, job, g, false);
        (!required.contains(&g), ready, g.wrapping_add(1))
    };
    let (i, _) = (0..queue.len()).map(|i| (i, key(ssn, queue[i]))).min_by_key(|&(_, k)| k)?;
    Some(queue.remove(i))
}

/// The HyperNodes under `root` (itself included) of tier `limit` or lower,
/// one list per tier, lowest first.
fn gradients(tree: &Tree, root: u32, limit: u32) -> Vec<Vec<u32>> {
    let mut under = vec![root];
    let mut i = 0;
    while i < under.len() {
        under.extend(&tree.children[under[i] as usize]);
        i += 1;
    }
    let mut by_tier: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for h in under {
        if tree.tiers[h as usize] <= limit {
            by_tier.entry(tree.tiers[h as usize]).or_default().push(h);
        }
    }
    by_tier.into_values().collect()
}

/// Those of `gradient` whose idle (or future idle) room covers `need`
/// (Volcano's pre-filter; an empty `need` keeps all), worked out a tier at
/// a time: most jobs never look past the first.
fn with_room(ssn: &Session, tree: &Tree, mut gradient: Vec<u32>, need: &[f64]) -> Vec<u32> {
    if !need.is_empty() {
        gradient.retain(|&h| room_for(ssn, &tree.nodes[h as usize], need));
    }
    gradient
}

/// A sound shortcut past HyperNodes that cannot hold a gang: `short` more
/// tasks must be placed, each at least the smallest pending request, and
/// a HyperNode whose nodes' future idle room fits fewer such tasks in all
/// (resources alone, before any predicate) cannot make the group ready.
/// Trying one costs placements and their undoing.
struct Slots {
    smallest: Vec<f64>,
    short: u32,
}

impl Slots {
    fn of(ssn: &Session, tasks: &VecDeque<u32>, short: u32) -> Slots {
        let mut smallest: Option<Vec<f64>> = None;
        for &t in tasks {
            let r = ssn.req(t);
            smallest = Some(match smallest {
                None => r.to_vec(),
                Some(s) => s.iter().zip(r).map(|(a, b)| a.min(*b)).collect(),
            });
        }
        Slots { smallest: smallest.unwrap_or_default(), short }
    }

    fn may_fit(&self, ssn: &Session, nodes: &[u32]) -> bool {
        if self.short == 0 || self.smallest.is_empty() {
            return true;
        }
        let (d, s) = (ssn.d, &ssn.snap);
        let mut fit = 0u64;
        for &n in nodes {
            let at = n as usize * d;
            let mut k = u64::MAX;
            for (i, &r) in self.smallest.iter().enumerate() {
                if r <= tephra_model::resource::EPSILON {
                    continue;
                }
                let free = s.node_allocatable[at + i] - s.node_used[at + i] + s.node_releasing[at + i]
                    - s.node_pipelined[at + i];
                k = k.min(((free + tephra_model::resource::EPSILON) / r).max(0.0) as u64);
            }
            fit = fit.saturating_add(k);
            if fit >= u64::from(self.short) {
                return true;
            }
        }
        false
    }
}

/// How many more of `job`'s tasks must hold a node for it to be ready.
fn job_short(ssn: &Session, job: u32) -> u32 {
    let held = ssn.job_ready[job as usize] + ssn.job_pending_best_effort[job as usize];
    ssn.job_min(job).saturating_sub(held)
}

/// Whether the nodes' idle room, or their future idle room, covers `need`.
fn room_for(ssn: &Session, nodes: &[u32], need: &[f64]) -> bool {
    let d = ssn.d;
    let (mut idle, mut future) = (vec![0.0; d], vec![0.0; d]);
    let s = &ssn.snap;
    for &n in nodes {
        let at = n as usize * d;
        for k in 0..d {
            let free = s.node_allocatable[at + k] - s.node_used[at + k];
            idle[k] += free;
            future[k] += free + s.node_releasing[at + k] - s.node_pipelined[at + k];
        }
    }
    let covers = |room: &[f64]| need.iter().zip(room).all(|(w, r)| w - r < tephra_model::resource::EPSILON);
    covers(&idle) || covers(&future)
}

/// `gradient` in the order the `hypernode-order` scores give (higher
/// first; ties in name order).
fn ordered(ssn: &mut Session, job: u32, group: u32, mut gradient: Vec<u32>) -> Vec<u32> {
    if gradient.len() < 2 || !ssn.answered(P::HypernodeOrder) {
        return gradient;
    }
    let scores = ssn.ask().hypernode_scores(job, group, &gradient);
    let mut keyed: Vec<(f64, u32)> = scores.into_iter().zip(gradient.iter().copied()).collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    gradient = keyed.into_iter().map(|(_, h)| h).collect();
    gradient
}

/// Where `tasks` already hold nodes: the lowest HyperNode holding them all
/// (`None`: none holds a node).
fn home(ssn: &Session, tree: &Tree, tasks: &[u32]) -> Option<u32> {
    let mut at: Option<u32> = None;
    for &t in tasks {
        let s = ssn.task_status(t);
        if !(is_allocated(s) || s == TaskStatus::Pipelined) {
            continue;
        }
        let node = ssn.snap.task_node[t as usize];
        if node == NONE {
            continue;
        }
        let leaf = tree.node_leaf[node as usize];
        at = Some(match at {
            None => leaf,
            Some(a) => common_ancestor(tree, a, leaf),
        });
    }
    at
}

/// The lowest HyperNode above (or at) both.
pub fn common_ancestor(tree: &Tree, a: u32, b: u32) -> u32 {
    let chain = |mut h: u32| {
        let mut v = vec![h];
        while tree.parents[h as usize] != NONE {
            h = tree.parents[h as usize];
            v.push(h);
        }
        v
    };
    let above_a = chain(a);
    chain(b).into_iter().find(|h| above_a.contains(h)).unwrap_or(0)
}

/// Where to search: `within`, narrowed to the highest HyperNode of tier
/// `limit` or lower above `placed` (tasks already placed keep the rest
/// near them); `None` when the placed tasks already span more than the
/// limit or lie outside `within`.
fn search_root(tree: &Tree, within: u32, limit: u32, placed: Option<u32>) -> Option<u32> {
    let Some(mut h) = placed else { return Some(within) };
    if tree.tiers[h as usize] > limit {
        return None;
    }
    while tree.parents[h as usize] != NONE && tree.tiers[tree.parents[h as usize] as usize] <= limit {
        h = tree.parents[h as usize];
    }
    match common_ancestor(tree, within, h) {
        c if c == within => Some(h),
        c if c == h => Some(within),
        _ => None,
    }
}

/// The job's `minResources` as a row (empty: none given).
fn min_resources(ssn: &Session, job: u32) -> Vec<f64> {
    if !ssn.snap.job_has_min_resources[job as usize] {
        return Vec::new();
    }
    let mut row = vec![0.0; ssn.d];
    for q in ssn.snap.job_min_resources.iter().filter(|q| q.owner == job) {
        row[q.dim as usize] = q.value;
    }
    row
}

/// What `tasks` request together.
fn pending_request(ssn: &Session, tasks: &VecDeque<u32>) -> Vec<f64> {
    let mut row = vec![0.0; ssn.d];
    for &t in tasks {
        tephra_model::resource::add_scaled(&mut row, ssn.req(t), 1.0);
    }
    row
}
