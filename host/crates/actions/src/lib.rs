//! Actions run in the configured order over one session. Each is a function
//! of the session; shared steps (ordering, predicates, node choice) live here.

#![warn(missing_docs)]

mod allocate;
mod backfill;
mod classes;
mod enqueue;
mod gang_evict;
mod preempt;
mod reclaim;
mod reserve;
mod shuffle;
pub mod timelimit;
pub mod topology;
mod victims;

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::sync::Arc;
use tephra_contract::ExtensionPoint as P;
use tephra_dispatch::backend::Call;
use tephra_readers::config::ActionKind;
use tephra_session::session::{FitErrors, Session};

/// An action of the scheduling cycle.
pub type Action = fn(&mut Session);

/// The best-effort tasks backfill would try, in order.
pub fn backfill_candidates(ssn: &mut Session) -> Vec<u32> {
    backfill::candidates(ssn).into_iter().map(|(_, t)| t).collect()
}

/// The code of an action.
pub fn action(kind: ActionKind) -> Action {
    match kind {
        ActionKind::Enqueue => enqueue::execute,
        ActionKind::Allocate => allocate::execute,
        ActionKind::Backfill => backfill::execute,
        ActionKind::Preempt => preempt::execute,
        ActionKind::Reclaim => reclaim::execute,
        ActionKind::Shuffle => shuffle::execute,
        ActionKind::Elect => reserve::elect,
        ActionKind::Reserve => reserve::reserve,
        ActionKind::GangPreempt => gang_evict::preempt,
        ActionKind::GangReclaim => gang_evict::reclaim,
    }
}

/// The action with this name, if tephra has it.
pub fn by_name(name: &str) -> Option<Action> {
    ActionKind::parse(name).map(action)
}

/// What kind of ids an ordering is over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Queues.
    Queue,
    /// Jobs.
    Job,
    /// Tasks.
    Task,
}

fn name_index(name: &str) -> Option<i64> {
    let parts: Vec<&str> = name.split('-').collect();
    if parts.len() >= 3 {
        parts.last()?.parse().ok()
    } else {
        None
    }
}

/// Volcano's fallbacks when every plugin says "equal".
fn fallback(ssn: &Session, kind: Kind, a: u32, b: u32) -> Ordering {
    match kind {
        Kind::Queue => ssn.extra.queue_created[a as usize]
            .cmp(&ssn.extra.queue_created[b as usize])
            .then_with(|| ssn.names.queues[a as usize].cmp(&ssn.names.queues[b as usize])),
        Kind::Job => ssn.snap.job_created_ms[a as usize]
            .cmp(&ssn.snap.job_created_ms[b as usize])
            .then_with(|| ssn.names.jobs[a as usize].cmp(&ssn.names.jobs[b as usize])),
        Kind::Task => {
            let (na, nb) = (&ssn.names.tasks[a as usize], &ssn.names.tasks[b as usize]);
            let by_index = match (name_index(na), name_index(nb)) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ => Ordering::Equal,
            };
            by_index
                .then_with(|| ssn.snap.task_created_ms[a as usize].cmp(&ssn.snap.task_created_ms[b as usize]))
                .then_with(|| uid_order(na, nb))
        }
    }
}

/// Orders two `namespace/name` keys as Volcano orders their pods' UIDs in
/// tephra (`namespace-name`), without building those strings: a key's only
/// `/` is the separator.
fn uid_order(a: &str, b: &str) -> Ordering {
    fn uid(s: &str) -> impl Iterator<Item = u8> + '_ {
        s.bytes().map(|c| if c == b'/' { b'-' } else { c })
    }
    uid(a).cmp(uid(b))
}

/// The order call for `kind` over `ids`.
fn order_call(kind: Kind, ids: &[u32]) -> Call<'_> {
    match kind {
        Kind::Queue => Call::QueueOrder(ids),
        Kind::Job => Call::JobOrder(ids),
        Kind::Task => Call::TaskOrder(ids),
    }
}

/// Sorts `ids` by the plugins' keys (tier order, first difference decides),
/// then by Volcano's fallback.
pub fn sort(ssn: &mut Session, kind: Kind, ids: &mut [u32]) {
    if ids.len() < 2 {
        return;
    }
    let rows = ssn.ask().order_keys(order_call(kind, ids), ids.len());
    let mut idx: Vec<usize> = (0..ids.len()).collect();
    idx.sort_by(|&x, &y| {
        rows.iter()
            .map(|r| r[x].partial_cmp(&r[y]).unwrap_or(Ordering::Equal))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or_else(|| fallback(ssn, kind, ids[x], ids[y]))
    });
    let sorted: Vec<u32> = idx.iter().map(|&i| ids[i]).collect();
    ids.copy_from_slice(&sorted);
}

/// Removes and returns the first of `set` in current order (keys are asked
/// afresh, so shares changed by earlier allocations count).
pub fn pop_first(ssn: &mut Session, kind: Kind, set: &mut Vec<u32>) -> Option<u32> {
    if set.is_empty() {
        return None;
    }
    let mut sorted = set.clone();
    sort(ssn, kind, &mut sorted);
    let first = sorted[0];
    set.retain(|&x| x != first);
    Some(first)
}

/// Ids with the plugins' sort keys taken when pushed (Volcano's heaps: a
/// job's keys change only through its own allocations, after which it is
/// pushed again). Popping asks no plugin. The fallback order is turned into
/// a rank once, so the heap needs no session to compare.
#[derive(Default)]
pub struct Keyed {
    heap: BinaryHeap<Reverse<Entry>>,
    /// Per id of the kind, its place in Volcano's fallback order.
    rank: Rc<[u32]>,
}

/// Per id of `kind`, its place in Volcano's fallback order.
pub fn fallback_rank(ssn: &Session, kind: Kind) -> Rc<[u32]> {
    let n = match kind {
        Kind::Queue => ssn.queues(),
        Kind::Job => ssn.jobs(),
        Kind::Task => ssn.tasks(),
    };
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| fallback(ssn, kind, a, b));
    let mut rank = vec![0; n];
    for (r, &id) in order.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    rank.into()
}

struct Entry {
    keys: Vec<f64>,
    rank: u32,
    id: u32,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.keys
            .iter()
            .zip(&other.keys)
            .map(|(x, y)| x.partial_cmp(y).unwrap_or(Ordering::Equal))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| self.rank.cmp(&other.rank))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Entry {}

impl Keyed {
    /// An empty queue ordering ties by `rank` ([`fallback_rank`], shared).
    pub fn new(rank: Rc<[u32]>) -> Self {
        Keyed { heap: BinaryHeap::new(), rank }
    }

    /// Adds `ids`, asking each plugin once for all their keys.
    pub fn push(&mut self, ssn: &mut Session, kind: Kind, ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        let rows = ssn.ask().order_keys(order_call(kind, ids), ids.len());
        for (i, &id) in ids.iter().enumerate() {
            let keys = rows.iter().map(|r| r[i]).collect();
            self.heap.push(Reverse(Entry { keys, rank: self.rank[id as usize], id }));
        }
    }

    /// Removes and returns the first id in order.
    pub fn pop(&mut self) -> Option<u32> {
        self.heap.pop().map(|Reverse(e)| e.id)
    }
}

/// (plugin or `resources`, message): how fit errors are tallied.
type Rejection = (Arc<str>, Arc<str>);

/// Nodes where `task` fits: resources against FutureIdle (when
/// `check_resources`) and every plugin predicate. Failures are recorded.
///
/// Like Volcano, the search stops once it has found `nodes_to_find` feasible
/// nodes, starting where the previous search stopped. Plugins are asked in
/// batches sized by the pass rate seen so far; answers past the node that
/// completes the set are dropped, so the result and the next start are the
/// same as asking node by node.
pub fn feasible_nodes(ssn: &mut Session, task: u32, check_resources: bool) -> Vec<u32> {
    feasible_or_parked(ssn, task, check_resources, None)
}

/// [`feasible_nodes`], and into `parked` the nodes a plugin turned down
/// with a reason evictions could resolve: for a task whose answers rise
/// through placements elsewhere (topology spread), the nodes to ask again.
pub fn feasible_or_parked(
    ssn: &mut Session,
    task: u32,
    check_resources: bool,
    mut parked: Option<&mut Vec<u32>>,
) -> Vec<u32> {
    let n = ssn.nodes();
    let mut errors = FitErrors { nodes: n, ..Default::default() };
    let req = ssn.req(task).to_vec();
    let want = nodes_to_find(n, ssn.nodes_percentage);
    let start = ssn.scan_start;
    let mut out = Vec::new();
    // Nodes looked at so far, and those of them the search used.
    let (mut scanned, mut consumed) = (0, 0);
    let (mut asked, mut passed) = (0usize, 0usize);
    // Rejection texts, made once per search rather than per node.
    let (resources, reservation): (Arc<str>, Arc<str>) = ("resources".into(), "reservation".into());
    let mut insufficient: Vec<Option<Arc<str>>> = vec![None; ssn.d];
    // Rejections counted by pointer first: thousands share a few reasons,
    // and comparing their texts in the map per node showed in profiles.
    let mut tally: Vec<(Rejection, usize)> = Vec::new();
    while scanned < n && out.len() < want {
        // Enough nodes with room that, at the pass rate so far, the plugins
        // complete the set in one call.
        let target = ((want - out.len()) * (asked + 1)).div_ceil(passed + 1);
        // Per node in scan order, the host's own rejection if any.
        let mut batch: Vec<(u32, Option<Rejection>)> = Vec::new();
        let mut room = Vec::new();
        while scanned < n && room.len() < target {
            let node = ((start + scanned) % n) as u32;
            scanned += 1;
            if ssn.lock_blocks(task, node) {
                batch.push((node, Some((reservation.clone(), ssn.lock_reason(task, node).into()))));
                continue;
            }
            if check_resources {
                if let Some(d) = ssn.short(&req, node, true) {
                    let msg =
                        insufficient[d].get_or_insert_with(|| format!("Insufficient {}", ssn.snap.dims[d]).into());
                    batch.push((node, Some((resources.clone(), msg.clone()))));
                    continue;
                }
            }
            batch.push((node, None));
            room.push(node);
        }
        let mut verdicts = if room.is_empty() { Vec::new() } else { ssn.ask().predicate(task, &room) };
        asked += room.len();
        passed += verdicts.iter().filter(|v| v.is_none()).count();
        verdicts.reverse();
        for (node, host) in batch {
            if out.len() == want {
                break;
            }
            consumed += 1;
            let verdict = match host {
                Some(reason) => Some(reason),
                None => verdicts.pop().flatten().map(|r| {
                    if let (Some(p), false) = (parked.as_deref_mut(), r.unresolvable) {
                        p.push(node);
                    }
                    (r.plugin, r.message)
                }),
            };
            match verdict {
                None => out.push(node),
                Some(key) => {
                    let same = |k: &Rejection| Arc::ptr_eq(&k.0, &key.0) && Arc::ptr_eq(&k.1, &key.1);
                    match tally.iter_mut().find(|(k, _)| same(k)) {
                        Some((_, n)) => *n += 1,
                        None => tally.push((key, 1)),
                    }
                }
            }
        }
    }
    for (key, k) in tally {
        *errors.counts.entry(key).or_default() += k;
    }
    ssn.scan_start = (start + consumed) % n.max(1);
    out.sort_unstable();
    if out.is_empty() {
        ssn.fit_errors.insert(task, errors);
    } else {
        ssn.fit_errors.remove(&task);
    }
    out
}

/// Volcano's `numNodesToFind`: every node up to 100; above, `percentage`%
/// (0: adaptive, `max(5, 50 − n/125)`), never fewer than 100.
pub fn nodes_to_find(n: usize, percentage: u32) -> usize {
    const MIN_FEASIBLE: usize = 100;
    if n <= MIN_FEASIBLE {
        return n;
    }
    let p = if percentage == 0 { (50 - n as i64 / 125).max(5) as usize } else { percentage.min(100) as usize };
    (n * p / 100).clamp(MIN_FEASIBLE, n)
}

/// Volcano's node choice: nodes with room now before nodes with room once
/// releasing pods are gone; then the highest summed score, ties at random.
pub fn best_node(ssn: &mut Session, task: u32, nodes: &[u32]) -> Option<u32> {
    let req = ssn.req(task).to_vec();
    let now: Vec<u32> = nodes.iter().copied().filter(|&n| ssn.short(&req, n, false).is_none()).collect();
    let gradient = if now.is_empty() { nodes.to_vec() } else { now };
    match gradient.len() {
        0 => None,
        1 => Some(gradient[0]),
        _ => {
            let scores = scores(ssn, task, &gradient);
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let best: Vec<u32> = gradient.iter().zip(&scores).filter(|(_, s)| **s == max).map(|(n, _)| *n).collect();
            let pick = (ssn.random() % best.len() as u64) as usize;
            Some(best[pick])
        }
    }
}

/// The node-order scores of `nodes` for `task`, summed over plugins.
fn scores(ssn: &mut Session, task: u32, nodes: &[u32]) -> Vec<f64> {
    if ssn.answered(P::NodeOrder) {
        ssn.ask().node_scores(task, nodes)
    } else {
        vec![0.0; nodes.len()]
    }
}

/// Pending tasks of `job` that request resources, in task order: what
/// allocate places and gang eviction makes room for.
pub fn pending_sorted(ssn: &mut Session, job: u32) -> Vec<u32> {
    let mut tasks: Vec<u32> = ssn.extra.job_tasks[job as usize]
        .iter()
        .copied()
        .filter(|&t| {
            ssn.task_status(t) == tephra_contract::TaskStatus::Pending && !ssn.extra.task_best_effort[t as usize]
        })
        .collect();
    sort(ssn, Kind::Task, &mut tasks);
    tasks
}

/// The queues of admitted, valid jobs with pending tasks (as first seen),
/// and per queue the jobs `serves` picks, in id order: who preempt, reclaim
/// and gang eviction act for. A job with nothing pending can take nothing,
/// so no plugin is asked about it.
pub fn preemptors_by_queue(
    ssn: &mut Session,
    mut serves: impl FnMut(&mut Session, u32) -> bool,
) -> (Vec<u32>, std::collections::BTreeMap<u32, Vec<u32>>) {
    let mut queues = Vec::new();
    let mut picked: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for j in 0..ssn.jobs() as u32 {
        if ssn.job_is_pending(j) || !has_pending(ssn, j) || !job_valid(ssn, j) {
            continue;
        }
        let q = ssn.job_queue(j);
        if !queues.contains(&q) {
            queues.push(q);
        }
        if serves(ssn, j) {
            picked.entry(q).or_default().push(j);
        }
    }
    (queues, picked)
}

/// Whether the job is starving (the first tier that answers decides).
pub fn starving(ssn: &mut Session, j: u32) -> bool {
    ssn.ask().job_starving(j)
}

/// The pending tasks of `j` (best-effort ones too), by id.
pub fn pending_tasks(ssn: &Session, j: u32) -> Vec<u32> {
    ssn.extra.job_tasks[j as usize]
        .iter()
        .copied()
        .filter(|&t| ssn.task_status(t) == tephra_contract::TaskStatus::Pending)
        .collect()
}

/// Whether any task of job `j` is pending.
pub fn has_pending(ssn: &Session, j: u32) -> bool {
    ssn.extra.job_tasks[j as usize].iter().any(|&t| ssn.task_status(t) == tephra_contract::TaskStatus::Pending)
}

/// Allocatable for task `t` of `queue`; when not, the task's fit error
/// says so (naming a plugin down after a fault).
pub fn queue_admits(ssn: &mut Session, queue: u32, t: u32) -> bool {
    if ssn.ask().all_true(Call::Allocatable(queue, t)) {
        return true;
    }
    let why = format!("queue {} has no quota left for it (allocatable)", ssn.names.queues[queue as usize]);
    let why = gate_reason(ssn, P::Allocatable, why);
    ssn.fit_errors.insert(t, FitErrors { whole: Some(why), ..Default::default() });
    false
}

/// JobValid across plugins; records the reason when invalid.
pub fn job_valid(ssn: &mut Session, job: u32) -> bool {
    match ssn.ask().job_valid(job) {
        None => true,
        Some((plugin, reason)) => {
            ssn.note_job(job, format!("{reason} ({plugin})"));
            false
        }
    }
}

/// `why` a gate refused, unless a plugin down after a fault shut it: then
/// that, naming the plugin.
pub fn gate_reason(ssn: &Session, point: tephra_contract::ExtensionPoint, why: String) -> String {
    match ssn.gate_shut_by(point) {
        Some(p) => format!("{} ({p}, {})", tephra_dispatch::policy::CLOSED, tephra_dispatch::policy::point_name(point)),
        None => why,
    }
}

/// JobReady: AND over plugins.
pub fn job_ready(ssn: &mut Session, job: u32) -> bool {
    ssn.ask().all_true(Call::JobReady(job))
}

/// JobPipelined: tier vote.
pub fn job_pipelined(ssn: &mut Session, job: u32) -> bool {
    ssn.ask().vote(Call::JobPipelined(job))
}

#[cfg(test)]
mod tests {
    use super::{nodes_to_find, uid_order};
    use std::cmp::Ordering;

    #[test]
    fn tasks_tie_break_on_namespace_dash_name() {
        // "ns-x" < "ns.a-y" although "ns/x" > "ns.a/y".
        assert_eq!(uid_order("ns/x", "ns.a/y"), Ordering::Less);
        assert_eq!(uid_order("a/b-c", "a-b/c"), Ordering::Equal);
        assert_eq!(uid_order("a/p-2", "a/p-10"), Ordering::Greater);
    }

    #[test]
    fn volcano_node_sampling() {
        assert_eq!(nodes_to_find(50, 0), 50);
        assert_eq!(nodes_to_find(100, 0), 100);
        assert_eq!(nodes_to_find(1000, 0), 420); // 50 − 8 = 42%
        assert_eq!(nodes_to_find(5000, 0), 500); // 50 − 40 = 10%
        assert_eq!(nodes_to_find(10_000, 0), 500); // max(5, −30) = 5%
        assert_eq!(nodes_to_find(150, 0), 100); // never fewer than 100
        assert_eq!(nodes_to_find(5000, 100), 5000); // exact search
    }
}
