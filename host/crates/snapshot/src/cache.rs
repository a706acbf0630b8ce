//! The last session, kept so the next one starts from it. Most cycles change
//! a cluster only in pods' and PodGroups' statuses (binds, starts, phase
//! updates), which [`Tracked`](tephra_model::tracked::Tracked) lists; the next
//! session then settles the tasks that moved instead of rebuilding every
//! column, name and class from the cluster. Anything else (an object added,
//! removed or respecified, a priority class, status overrides) means a full
//! build.

use crate::basis::Marks;
use crate::names::NONE;
use crate::snapshot::{
    class_of, dense_row, job_phase, job_signature, move_on_nodes, node_share, resident_at, task_status, Built, Moved,
    StatusOverrides,
};
use std::sync::Arc;
use tephra_contract::TaskStatus;
use tephra_model::cluster::Cluster;
use tephra_model::resource::PODS;
use tephra_model::tracked::Changes;

/// Keeps the last closed session's build, for the next session to start from.
#[derive(Default)]
pub struct SnapshotCache {
    kept: Option<Built>,
    /// How sessions were opened.
    pub opens: Opens,
}

/// Session opens by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Opens {
    /// Built from the cluster.
    pub full: u64,
    /// Updated from the last session.
    pub updated: u64,
}

impl SnapshotCache {
    /// Keeps a closed session's parts for the next session to start from.
    pub fn keep(&mut self, parts: Built) {
        self.kept = (!parts.basis.overrides).then_some(parts);
    }

    /// The kept session brought up to `cluster`, or `None` when it needs a
    /// full build. Either way the kept session is used up.
    pub fn update(&mut self, cluster: &Cluster, overrides: &StatusOverrides, now_ms: i64) -> Option<Built> {
        let kept = self.kept.take();
        let parts = kept.and_then(|k| settle(k, cluster, overrides, now_ms));
        match parts {
            Some(p) => {
                self.opens.updated += 1;
                debug_assert_full_build_agrees(&p, cluster, now_ms);
                Some(p)
            }
            None => {
                self.opens.full += 1;
                None
            }
        }
    }
}

/// Brings `k` up to `cluster` when only statuses changed. Requests are spec,
/// so the kept dimensions still cover every pod.
fn settle(mut k: Built, c: &Cluster, overrides: &StatusOverrides, now_ms: i64) -> Option<Built> {
    let b = &k.basis;
    let [nodes, queues, groups, pods] = b.marks.0;
    let unchanged = |ch: Changes| ch == Changes::Status(Vec::new());
    if !overrides.is_empty()
        || b.classes != c.priority_classes
        || b.namespaces != c.namespaces
        || !b.storage.is(c)
        || b.hypernodes != c.hypernodes
        || b.topology_error != c.topology_error
        || !unchanged(c.nodes.changes_since(nodes?))
        || !unchanged(c.queues.changes_since(queues?))
    {
        return None;
    }
    let Changes::Status(changed_groups) = c.podgroups.changes_since(groups?) else { return None };
    let Changes::Status(changed_pods) = c.pods.changes_since(pods?) else { return None };

    let snap = &mut k.snap;
    let extra = Arc::make_mut(&mut k.extra);
    let basis = &mut k.basis;
    let d = k.d;
    // Phases as the PodGroups have them (the last session admitted some);
    // a group whose phase moved changes its pending tasks' classes.
    let mut reclass = vec![false; snap.job_queue.len()];
    for (j, &g) in extra.job_pg.iter().enumerate() {
        snap.job_phase[j] = job_phase(c.podgroups[g].phase);
    }
    for g in changed_groups {
        let j = basis.pg_job[g];
        if j != NONE {
            let sig = job_signature(&c.podgroups[g], snap.job_queue[j as usize]);
            reclass[j as usize] = sig != basis.job_sig[j as usize];
            basis.job_sig[j as usize] = sig;
        }
    }
    let look = Lookup { c, names: &k.names.nodes, index: &k.node_index };
    let mut moved = Moved { base: basis.session, tasks: Vec::new(), nodes: Vec::new(), residents: Vec::new() };
    // Tasks to settle, marked rather than sorted (up to every task).
    let mut settle = vec![false; snap.task_job.len()];
    std::mem::take(&mut basis.touched).into_iter().for_each(|t| settle[t as usize] = true);
    let mut req = vec![0.0; d];
    for &i in &changed_pods {
        let t = basis.pod_task[i];
        if t != NONE {
            settle[t as usize] = true;
            continue;
        }
        // Pods that are not tasks count on their nodes only.
        let p = &c.pods[i];
        let (old_node, old_status) = (basis.pod_node[i], basis.pod_status[i]);
        let (node, status) = look.placed(p, old_node);
        if shifts((old_node, old_status), (node, status)) {
            if !dense_row(&snap.dims, &p.requests, &mut req) {
                return None;
            }
            req[PODS] += 1.0;
            move_on_nodes(snap, d, &req, (old_node, old_status), (node, status));
            moved.nodes.extend([old_node, node]);
        }
        (basis.pod_node[i], basis.pod_status[i]) = (node, status);
        let r = basis.pod_resident[i] as usize;
        if snap.resident_node[r] != resident_at(node, status) {
            snap.resident_node[r] = resident_at(node, status);
            moved.residents.push(r as u32);
        }
    }
    for (j, _) in reclass.iter().enumerate().filter(|(_, &r)| r) {
        extra.job_tasks[j].iter().for_each(|&t| settle[t as usize] = true);
    }

    let todo: Vec<u32> = (0..settle.len() as u32).filter(|&t| settle[t as usize]).collect();
    let jobs = Jobs {
        task_job: &snap.task_job,
        task_resreq: &snap.task_resreq,
        d,
        sig: &basis.job_sig,
        reclass: &reclass,
        keys: &basis.selector_keys,
    };
    let columns = Columns {
        from: 0,
        node: &mut snap.task_node,
        status: &mut snap.task_status,
        started: &mut snap.task_started_ms,
        nominated: &mut extra.task_nominated,
        class: &mut extra.task_class,
    };
    let shares = if todo.len() >= 2 * SETTLE_PER_THREAD {
        // After a big cycle tens of thousands of pods moved; reading them is
        // mostly waiting for memory, which two threads do at once.
        let (a, b) = todo.split_at(todo.len() / 2);
        let (first, second) = columns.split_at(b[0] as usize);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| settle_tasks(&look, &jobs, &extra.task_pod, second, b));
            let mine = settle_tasks(&look, &jobs, &extra.task_pod, first, a);
            vec![mine, other.join().unwrap_or_else(|e| std::panic::resume_unwind(e))]
        })
    } else {
        vec![settle_tasks(&look, &jobs, &extra.task_pod, columns, &todo)]
    };
    // Node rows move in task order, as one thread would have moved them.
    for share in shares {
        moved.tasks.extend(share.moved);
        for (t, from, to) in share.shifts {
            let t = t as usize;
            req.copy_from_slice(&snap.task_resreq[t * d..(t + 1) * d]);
            move_on_nodes(snap, d, &req, from, to);
            moved.nodes.extend([from.0, to.0]);
        }
    }
    snap.now_ms = now_ms;
    // Restored from the reservations when the session is assembled.
    snap.reservation_targets.clear();
    snap.node_locked_job.clear();
    snap.node_locked_queue.clear();
    basis.marks = Marks::of(c);
    moved.nodes.retain(|&n| n != NONE);
    moved.nodes.sort_unstable();
    moved.nodes.dedup();
    k.moved = Some(moved);
    Some(k)
}

/// Tasks to settle before a second thread helps (every split in unit tests,
/// so that they take the two-thread path).
const SETTLE_PER_THREAD: usize = if cfg!(test) { 1 } else { 4096 };

/// Whether a pod moving from `a` to `b` changes node usage rows.
fn shifts(a: Place, b: Place) -> bool {
    a.0 != b.0 || node_share(a.1) != node_share(b.1)
}

/// Where pods are: the cluster and the kept session's node names.
struct Lookup<'a> {
    c: &'a Cluster,
    names: &'a [String],
    index: &'a crate::names::NameMap<String>,
}

impl Lookup<'_> {
    /// A node by name; `was` (where the pod counted before, most often
    /// where it still is) is compared first, sparing a hash of the name.
    fn node_of(&self, n: &Option<String>, was: u32) -> u32 {
        match n {
            Some(n) if self.names.get(was as usize) == Some(n) => was,
            Some(n) => self.index.get(n).copied().unwrap_or(NONE),
            None => NONE,
        }
    }

    /// Where a pod counts now: its node and status.
    fn placed(&self, p: &tephra_model::cluster::Pod, was: u32) -> Place {
        (self.node_of(&p.node, was), task_status(p.phase, p.node.is_some(), p.deleting))
    }
}

/// What a task's class depends on beyond its pod.
struct Jobs<'a> {
    task_job: &'a [u32],
    task_resreq: &'a [f64],
    d: usize,
    sig: &'a [u64],
    reclass: &'a [bool],
    keys: &'a crate::rules::LabelKeys,
}

/// The task columns settling writes, from task `from` on.
struct Columns<'a> {
    from: usize,
    node: &'a mut [u32],
    status: &'a mut [TaskStatus],
    started: &'a mut [i64],
    nominated: &'a mut [u32],
    class: &'a mut [u64],
}

impl<'a> Columns<'a> {
    /// Tasks before `t`, and from `t` on.
    fn split_at(self, t: usize) -> (Columns<'a>, Columns<'a>) {
        let at = t - self.from;
        let (node, node2) = self.node.split_at_mut(at);
        let (status, status2) = self.status.split_at_mut(at);
        let (started, started2) = self.started.split_at_mut(at);
        let (nominated, nominated2) = self.nominated.split_at_mut(at);
        let (class, class2) = self.class.split_at_mut(at);
        (
            Columns { from: self.from, node, status, started, nominated, class },
            Columns { from: t, node: node2, status: status2, started: started2, nominated: nominated2, class: class2 },
        )
    }
}

/// Where a pod counts: its node and status.
type Place = (u32, TaskStatus);

/// One thread's settled tasks: those whose columns changed, and the moves
/// of node usage still to make (task, from, to).
struct Share {
    moved: Vec<u32>,
    shifts: Vec<(u32, Place, Place)>,
}

/// Brings `tasks` (ascending, all within `cols`) up to their pods.
fn settle_tasks(look: &Lookup, jobs: &Jobs, task_pod: &[usize], cols: Columns, tasks: &[u32]) -> Share {
    let mut out = Share { moved: Vec::new(), shifts: Vec::new() };
    let d = jobs.d;
    for &t in tasks {
        let (ti, i) = (t as usize, t as usize - cols.from);
        let p = &look.c.pods[task_pod[ti]];
        let (old_node, old_status) = (cols.node[i], cols.status[i]);
        let (node, status) = look.placed(p, old_node);
        if shifts((old_node, old_status), (node, status)) {
            out.shifts.push((t, (old_node, old_status), (node, status)));
        }
        cols.node[i] = node;
        cols.status[i] = status;
        let started = p.started.unwrap_or(0);
        if (node, status, started) != (old_node, old_status, cols.started[i]) {
            out.moved.push(t);
        }
        cols.started[i] = started;
        cols.nominated[i] = look.node_of(&p.nominated_node, cols.nominated[i]);
        let j = jobs.task_job[ti] as usize;
        cols.class[i] = match status {
            TaskStatus::Pending if cols.class[i] == 0 || jobs.reclass[j] => {
                class_of(p, &jobs.task_resreq[ti * d..(ti + 1) * d], jobs.sig[j], jobs.keys)
            }
            TaskStatus::Pending => cols.class[i],
            _ => 0,
        };
    }
    out
}

/// In debug builds (every test), an updated session must equal a full build.
fn debug_assert_full_build_agrees(p: &Built, c: &Cluster, now_ms: i64) {
    if cfg!(debug_assertions) {
        let full = crate::build(c, &StatusOverrides::default(), now_ms);
        assert!(
            p.snap == full.snap,
            "an updated session differs from a full build: {}",
            first_difference(&p.snap, &full.snap)
        );
        assert_eq!(p.names.tasks, full.names.tasks);
        let (a, b) = (&p.extra, &full.extra);
        assert_eq!(a.task_pod, b.task_pod);
        assert_eq!(a.task_nominated, b.task_nominated);
        assert_eq!(a.task_class, b.task_class);
        assert_eq!(a.job_tasks, b.job_tasks);
    }
}

/// Where two snapshots' debug forms first differ, with some context (a
/// failed comparison of an update with a full build says it).
pub fn first_difference(a: &tephra_contract::Snapshot, b: &tephra_contract::Snapshot) -> String {
    let (a, b) = (format!("{a:?}"), format!("{b:?}"));
    let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let around =
        |s: &str| String::from_utf8_lossy(&s.as_bytes()[at.saturating_sub(120)..(at + 80).min(s.len())]).into_owned();
    format!("updated …{}… full …{}…", around(&a), around(&b))
}
