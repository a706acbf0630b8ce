//! The columnar session view a policy reads: the host's snapshot plus the
//! counters Volcano's job and node accounting derive from task statuses, kept
//! current as allocate/deallocate events arrive.

use crate::resource;
use crate::types::{Event, JobPhase, Snapshot, SnapshotDelta, TaskStatus};

/// The id meaning "none" (no node, no parent).
pub const NONE: u32 = u32::MAX;

/// One session's state as a policy sees it. Resource rows are slices of
/// `dims()` numbers.
pub struct Session {
    /// The snapshot as pushed by the host; `task_status`, `task_node` and the
    /// node usage columns are updated by events.
    pub snap: Snapshot,
    d: usize,
    job_tasks: Groups,
    queue_jobs: Groups,
    /// Per job: tasks in Allocated, Binding, Bound, Running or Succeeded.
    pub job_ready: Vec<u32>,
    /// Per job: Pipelined tasks.
    pub job_waiting: Vec<u32>,
    /// Per job: Pending best-effort tasks.
    pub job_pending_best_effort: Vec<u32>,
    /// Per job: tasks counted by Volcano's `ValidTaskNum`.
    pub job_valid: Vec<u32>,
    /// Per job, row-major: Σ requests of tasks in Allocated..Running.
    pub job_allocated: Vec<f64>,
    /// Per job: tasks in Allocated..Running (those `job_allocated` sums).
    pub job_allocated_tasks: Vec<u32>,
    /// Per job, row-major: `minResources` as a dense row (read per call by
    /// quota policies, so it is laid out once).
    job_min: Vec<f64>,
    best_effort: Vec<bool>,
}

/// Where a task's request counts on its node: (used, releasing, pipelined).
pub fn node_share(status: TaskStatus) -> (bool, bool, bool) {
    use TaskStatus::*;
    match status {
        Allocated | Binding | Bound | Running => (true, false, false),
        Releasing => (true, true, false),
        Pipelined => (false, false, true),
        Pending | Succeeded | Failed | Unknown => (false, false, false),
    }
}

/// Volcano's `AllocatedStatus`: the task holds resources on its node.
pub const fn is_allocated(status: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(status, Allocated | Binding | Bound | Running)
}

const fn is_ready(status: TaskStatus) -> bool {
    is_allocated(status) || matches!(status, TaskStatus::Succeeded)
}

const fn is_valid(status: TaskStatus) -> bool {
    is_ready(status) || matches!(status, TaskStatus::Pipelined | TaskStatus::Pending)
}

// The job counters a task in some status adds to, as bits of `counters`.
const READY: u8 = 1;
const WAITING: u8 = 1 << 1;
const PENDING: u8 = 1 << 2;
const VALID: u8 = 1 << 3;
const ALLOCATED: u8 = 1 << 4;

/// The counters a task in `status` adds to (`PENDING` only matters for a
/// best-effort task): equal bits, equal contributions.
const fn counters_of(status: TaskStatus) -> u8 {
    const fn bit(on: bool, b: u8) -> u8 {
        if on {
            b
        } else {
            0
        }
    }
    bit(is_ready(status), READY)
        | bit(matches!(status, TaskStatus::Pipelined), WAITING)
        | bit(matches!(status, TaskStatus::Pending), PENDING)
        | bit(is_valid(status), VALID)
        | bit(is_allocated(status), ALLOCATED)
}

/// [`counters_of`] by the status's discriminant: a delta moves tens of
/// thousands of tasks, and in Wasm a load is cheaper than the tests.
const COUNTERS: [u8; 10] = {
    use TaskStatus::*;
    let all = [Pending, Allocated, Pipelined, Binding, Bound, Running, Releasing, Succeeded, Failed, Unknown];
    let mut table = [0; 10];
    let mut i = 0;
    while i < all.len() {
        table[all[i] as usize] = counters_of(all[i]);
        i += 1;
    }
    table
};

fn counters(status: TaskStatus) -> u8 {
    COUNTERS[status as usize]
}

/// Adds `req` into `row`, or takes it off.
fn shift(row: &mut [f64], req: &[f64], adding: bool) {
    if adding {
        resource::add(row, req)
    } else {
        resource::sub(row, req)
    }
}

/// Members by owner, in member order, laid out in one array (a list per
/// owner would be tens of thousands of allocations per session).
struct Groups {
    /// Owner `o`'s members are `members[start[o]..start[o + 1]]`.
    start: Vec<u32>,
    members: Vec<u32>,
}

impl Groups {
    /// Groups ids `0..owner_of.len()` by owner; owners out of range are left out.
    fn new(owners: usize, owner_of: &[u32]) -> Self {
        let mut start = vec![0u32; owners + 1];
        for &o in owner_of {
            if (o as usize) < owners {
                start[o as usize + 1] += 1;
            }
        }
        for o in 0..owners {
            start[o + 1] += start[o];
        }
        let mut next = start.clone();
        let mut members = vec![0; start[owners] as usize];
        for (i, &o) in owner_of.iter().enumerate() {
            if (o as usize) < owners {
                members[next[o as usize] as usize] = i as u32;
                next[o as usize] += 1;
            }
        }
        Groups { start, members }
    }

    fn of(&self, owner: u32) -> &[u32] {
        let o = owner as usize;
        &self.members[self.start[o] as usize..self.start[o + 1] as usize]
    }
}

impl Session {
    /// Builds the view and its derived counters from a snapshot.
    pub fn new(snap: Snapshot) -> Self {
        let d = snap.dims.len();
        let jobs = snap.job_queue.len();
        let job_tasks = Groups::new(jobs, &snap.task_job);
        let queue_jobs = Groups::new(snap.queue_parent.len(), &snap.job_queue);
        let mut job_min = vec![0.0; jobs * d];
        for q in &snap.job_min_resources {
            if (q.owner as usize) < jobs && (q.dim as usize) < d {
                job_min[q.owner as usize * d + q.dim as usize] = q.value;
            }
        }
        let best_effort =
            (0..snap.task_job.len()).map(|t| resource::is_empty(&snap.task_resreq[t * d..(t + 1) * d])).collect();
        let mut s = Session {
            snap,
            d,
            job_tasks,
            queue_jobs,
            job_ready: vec![0; jobs],
            job_waiting: vec![0; jobs],
            job_pending_best_effort: vec![0; jobs],
            job_valid: vec![0; jobs],
            job_allocated: vec![0.0; jobs * d],
            job_allocated_tasks: vec![0; jobs],
            job_min,
            best_effort,
        };
        for t in 0..s.snap.task_job.len() as u32 {
            s.recount(t, 0, counters(s.snap.task_status[t as usize]));
        }
        s
    }

    /// Number of resource dimensions.
    pub fn dims(&self) -> usize {
        self.d
    }
    pub fn nodes(&self) -> usize {
        self.snap.node_unschedulable.len()
    }
    pub fn queues(&self) -> usize {
        self.snap.queue_parent.len()
    }
    pub fn jobs(&self) -> usize {
        self.snap.job_queue.len()
    }
    pub fn tasks(&self) -> usize {
        self.snap.task_job.len()
    }
    /// An interned string.
    pub fn str(&self, id: u32) -> &str {
        self.snap.strings.get(id as usize).map_or("", String::as_str)
    }
    /// The id of an interned string, if the snapshot has it.
    pub fn str_id(&self, s: &str) -> Option<u32> {
        self.snap.strings.iter().position(|x| x == s).map(|i| i as u32)
    }
    /// Index of a dimension by name.
    pub fn dim(&self, name: &str) -> Option<usize> {
        self.snap.dims.iter().position(|x| x == name)
    }

    /// HyperNode `h` and its ancestors, lowest first, up to the cluster (0).
    pub fn hypernode_chain(&self, h: u32) -> impl Iterator<Item = u32> + '_ {
        let mut next = h;
        std::iter::from_fn(move || {
            let out = next;
            if out == NONE || out as usize >= self.snap.hypernode_parent.len() {
                return None;
            }
            next = self.snap.hypernode_parent[out as usize];
            Some(out)
        })
    }
    /// The HyperNode of tier `tier` holding node `n`, if any (the cluster's
    /// tier gives 0).
    pub fn node_hypernode_at(&self, n: u32, tier: u32) -> Option<u32> {
        let leaf = *self.snap.node_hypernode.get(n as usize)?;
        self.hypernode_chain(leaf).find(|&h| self.snap.hypernode_tier[h as usize] == tier)
    }
    /// The lowest HyperNode holding both (0, the cluster, at worst).
    pub fn common_hypernode(&self, a: u32, b: u32) -> u32 {
        let above: Vec<u32> = self.hypernode_chain(a).collect();
        self.hypernode_chain(b).find(|h| above.contains(h)).unwrap_or(0)
    }

    #[inline]
    fn row(v: &[f64], i: u32, d: usize) -> &[f64] {
        &v[i as usize * d..(i as usize + 1) * d]
    }
    #[inline]
    pub fn task_req(&self, t: u32) -> &[f64] {
        Self::row(&self.snap.task_resreq, t, self.d)
    }
    #[inline]
    pub fn node_allocatable(&self, n: u32) -> &[f64] {
        Self::row(&self.snap.node_allocatable, n, self.d)
    }
    #[inline]
    pub fn node_used(&self, n: u32) -> &[f64] {
        Self::row(&self.snap.node_used, n, self.d)
    }
    #[inline]
    pub fn node_releasing(&self, n: u32) -> &[f64] {
        Self::row(&self.snap.node_releasing, n, self.d)
    }
    #[inline]
    pub fn node_pipelined(&self, n: u32) -> &[f64] {
        Self::row(&self.snap.node_pipelined, n, self.d)
    }
    /// `allocatable − used` in one dimension.
    #[inline]
    pub fn node_idle(&self, n: u32, d: usize) -> f64 {
        self.node_allocatable(n)[d] - self.node_used(n)[d]
    }
    /// `idle + releasing − pipelined` in one dimension (Volcano's FutureIdle).
    #[inline]
    pub fn node_future_idle(&self, n: u32, d: usize) -> f64 {
        self.node_idle(n, d) + self.node_releasing(n)[d] - self.node_pipelined(n)[d]
    }
    #[inline]
    pub fn job_allocated(&self, j: u32) -> &[f64] {
        Self::row(&self.job_allocated, j, self.d)
    }
    /// The job's Pending tasks (valid ones that are neither ready nor waiting).
    pub fn job_pending_tasks(&self, j: u32) -> u32 {
        let j = j as usize;
        self.job_valid[j].saturating_sub(self.job_ready[j] + self.job_waiting[j])
    }
    pub fn total(&self) -> &[f64] {
        &self.snap.total
    }

    #[inline]
    pub fn task_job(&self, t: u32) -> u32 {
        self.snap.task_job[t as usize]
    }
    #[inline]
    pub fn task_status(&self, t: u32) -> TaskStatus {
        self.snap.task_status[t as usize]
    }
    #[inline]
    pub fn task_node(&self, t: u32) -> u32 {
        self.snap.task_node[t as usize]
    }
    /// A task is best-effort when it requests nothing but `pods`.
    #[inline]
    pub fn task_best_effort(&self, t: u32) -> bool {
        self.best_effort[t as usize]
    }
    #[inline]
    pub fn job_queue(&self, j: u32) -> u32 {
        self.snap.job_queue[j as usize]
    }
    pub fn job_tasks(&self, j: u32) -> &[u32] {
        self.job_tasks.of(j)
    }
    pub fn queue_jobs(&self, q: u32) -> &[u32] {
        self.queue_jobs.of(q)
    }
    pub fn job_min_available(&self, j: u32) -> u32 {
        self.snap.job_min_available[j as usize]
    }
    pub fn job_phase(&self, j: u32) -> JobPhase {
        self.snap.job_phase[j as usize]
    }
    /// PodGroup `minResources` as a dense row, or `None` when unset.
    pub fn job_min_resources(&self, j: u32) -> Option<&[f64]> {
        if !self.snap.job_has_min_resources[j as usize] {
            return None;
        }
        Some(Self::row(&self.job_min, j, self.d))
    }
    /// Volcano's `IsReady`: ready + pending best-effort ≥ minAvailable.
    pub fn job_is_ready(&self, j: u32) -> bool {
        let j = j as usize;
        self.job_ready[j] + self.job_pending_best_effort[j] >= self.snap.job_min_available[j]
    }
    /// Volcano's `IsPipelined`: waiting + ready + pending best-effort ≥ minAvailable.
    pub fn job_is_pipelined(&self, j: u32) -> bool {
        let j = j as usize;
        self.job_waiting[j] + self.job_ready[j] + self.job_pending_best_effort[j] >= self.snap.job_min_available[j]
    }
    /// Volcano's `IsStarving`: waiting + ready < minAvailable.
    pub fn job_is_starving(&self, j: u32) -> bool {
        let j = j as usize;
        self.job_waiting[j] + self.job_ready[j] < self.snap.job_min_available[j]
    }

    /// Moves task `t` from the counters of `was` to those of `now` (bits of
    /// [`counters`]), touching only the counters that differ.
    fn recount(&mut self, t: u32, was: u8, now: u8) {
        let j = self.snap.task_job[t as usize] as usize;
        if was == now || j >= self.job_ready.len() {
            return;
        }
        let step = |v: &mut u32, bit: u8| match (was & bit != 0, now & bit != 0) {
            (false, true) => *v += 1,
            (true, false) => *v = v.saturating_sub(1),
            _ => {}
        };
        step(&mut self.job_ready[j], READY);
        step(&mut self.job_waiting[j], WAITING);
        if self.best_effort[t as usize] {
            step(&mut self.job_pending_best_effort[j], PENDING);
        }
        step(&mut self.job_valid[j], VALID);
        step(&mut self.job_allocated_tasks[j], ALLOCATED);
        if (was ^ now) & ALLOCATED != 0 {
            let d = self.d;
            let req = &self.snap.task_resreq[t as usize * d..(t as usize + 1) * d];
            shift(&mut self.job_allocated[j * d..(j + 1) * d], req, now & ALLOCATED != 0);
        }
    }

    /// Adds (or takes off) task `t`'s request on `node`, in the columns
    /// `status` counts it in.
    fn place(&mut self, t: u32, node: u32, status: TaskStatus, adding: bool) {
        if node == NONE || node as usize >= self.nodes() {
            return;
        }
        let (used, releasing, pipelined) = node_share(status);
        let (d, t, n) = (self.d, t as usize, node as usize);
        let req = &self.snap.task_resreq[t * d..(t + 1) * d];
        for (on, column) in [
            (used, &mut self.snap.node_used),
            (releasing, &mut self.snap.node_releasing),
            (pipelined, &mut self.snap.node_pipelined),
        ] {
            if on {
                shift(&mut column[n * d..(n + 1) * d], req, adding);
            }
        }
    }

    /// Brings the session up to date with `delta` (the contract's
    /// `snapshot-delta`): moved tasks, new node rows, the per-cycle columns.
    pub fn update(&mut self, delta: &SnapshotDelta) -> Result<(), String> {
        let (n, rows) = (delta.tasks.len(), delta.nodes.len() * self.d);
        let fits = [delta.task_status.len(), delta.task_node.len(), delta.task_started_ms.len()] == [n; 3]
            && [delta.node_used.len(), delta.node_releasing.len(), delta.node_pipelined.len()] == [rows; 3]
            && [delta.node_locked_job.len(), delta.node_locked_queue.len()] == [self.nodes(); 2]
            && delta.job_phase.len() == self.jobs()
            && delta.tasks.iter().all(|&t| (t as usize) < self.tasks())
            && delta.nodes.iter().all(|&n| (n as usize) < self.nodes())
            && delta.residents.len() == delta.resident_node.len()
            && delta.residents.iter().all(|&r| (r as usize) < self.snap.resident_node.len());
        if !fits {
            return Err("snapshot-delta does not fit the kept session (lengths or ids)".into());
        }
        // A column per loop: in Wasm, one loop over all four spills its
        // pointers to the stack (a delta moves tens of thousands of tasks).
        for (&t, &node) in delta.tasks.iter().zip(&delta.task_node) {
            self.snap.task_node[t as usize] = node;
        }
        for (&t, &started) in delta.tasks.iter().zip(&delta.task_started_ms) {
            self.snap.task_started_ms[t as usize] = started;
        }
        for (&t, &new) in delta.tasks.iter().zip(&delta.task_status) {
            let old = std::mem::replace(&mut self.snap.task_status[t as usize], new);
            // Most moves (allocated → bound → running) leave the counters as they are.
            let (was, now) = (counters(old), counters(new));
            if was != now {
                self.recount(t, was, now);
            }
        }
        let d = self.d;
        for (i, &node) in delta.nodes.iter().enumerate() {
            let (to, from) = (node as usize * d..(node as usize + 1) * d, i * d..(i + 1) * d);
            self.snap.node_used[to.clone()].copy_from_slice(&delta.node_used[from.clone()]);
            self.snap.node_releasing[to.clone()].copy_from_slice(&delta.node_releasing[from.clone()]);
            self.snap.node_pipelined[to].copy_from_slice(&delta.node_pipelined[from]);
        }
        for (&r, &node) in delta.residents.iter().zip(&delta.resident_node) {
            self.snap.resident_node[r as usize] = node;
        }
        self.snap.node_locked_job.clone_from(&delta.node_locked_job);
        self.snap.node_locked_queue.clone_from(&delta.node_locked_queue);
        self.snap.job_phase.clone_from(&delta.job_phase);
        self.snap.reservation_targets.clone_from(&delta.reservation_targets);
        self.snap.now_ms = delta.now_ms;
        Ok(())
    }

    /// Applies one event; returns the task's previous status.
    pub fn apply(&mut self, e: &Event) -> TaskStatus {
        let t = e.task as usize;
        let (old, old_node) = (self.snap.task_status[t], self.snap.task_node[t]);
        self.recount(e.task, counters(old), counters(e.status));
        if old_node != e.node || node_share(old) != node_share(e.status) {
            self.place(e.task, old_node, old, false);
            self.place(e.task, e.node, e.status, true);
        }
        self.snap.task_status[t] = e.status;
        self.snap.task_node[t] = e.node;
        old
    }
}

#[cfg(test)]
mod tests {
    use super::Groups;

    /// A session that applied events equals one built from the snapshot they
    /// lead to: columns, node rows and the counters derived from statuses.
    #[test]
    fn events_bring_the_session_to_the_snapshot_they_describe() {
        use crate::testing::SnapshotBuilder;
        use crate::types::{Event, EventKind, TaskStatus as S};
        // Tasks as (status, node) before and after; a best-effort task moves too.
        let moves = [
            ((S::Pending, super::NONE), (S::Allocated, 1)),
            // The same node, another column: pipelined → used, used → releasing.
            ((S::Pipelined, 0), (S::Allocated, 0)),
            ((S::Running, 1), (S::Releasing, 1)),
            ((S::Allocated, 0), (S::Pending, super::NONE)),
            ((S::Bound, 1), (S::Running, 1)),
            ((S::Pending, super::NONE), (S::Pipelined, 1)),
        ];
        let cluster = |after: bool| {
            let mut b = SnapshotBuilder::new(&[]);
            b.node(&[8000.0, 16e9]);
            b.node(&[8000.0, 16e9]);
            let q = b.queue(1.0);
            let j = b.job(q, 3);
            for (i, (before, later)) in moves.iter().enumerate() {
                let (status, node) = if after { *later } else { *before };
                let request = if i == 5 { [0.0, 0.0] } else { [100.0 * (i + 1) as f64, 1e9] };
                b.task(j, &request, status, node);
            }
            b.build()
        };
        let (mut s, want) = (cluster(false), cluster(true));
        // After: ready = two Allocated and a Running; one waits (Pipelined); valid adds the Pending.
        assert_eq!((&want.job_ready, &want.job_waiting, &want.job_valid), (&vec![3], &vec![1], &vec![5]));
        // Allocated..Running holds three (Releasing does not count); one is Pending.
        assert_eq!((&want.job_allocated_tasks, want.job_pending_tasks(0)), (&vec![3], 1));
        for (t, &(_, (status, node))) in moves.iter().enumerate() {
            let kind = if node == super::NONE { EventKind::Deallocate } else { EventKind::Allocate };
            let old = s.apply(&Event { kind, task: t as u32, node, status });
            assert_eq!(old, moves[t].0 .0);
        }
        assert_eq!((&s.snap.task_status, &s.snap.task_node), (&want.snap.task_status, &want.snap.task_node));
        assert_eq!(
            (&s.snap.node_used, &s.snap.node_releasing, &s.snap.node_pipelined),
            (&want.snap.node_used, &want.snap.node_releasing, &want.snap.node_pipelined)
        );
        assert_eq!(
            (&s.job_ready, &s.job_waiting, &s.job_pending_best_effort, &s.job_valid, &s.job_allocated),
            (&want.job_ready, &want.job_waiting, &want.job_pending_best_effort, &want.job_valid, &want.job_allocated)
        );
        assert_eq!(s.job_allocated_tasks, want.job_allocated_tasks);
    }

    /// A session updated by a delta equals one built from the new snapshot:
    /// columns and the counters derived from task statuses.
    #[test]
    fn a_delta_brings_the_session_to_the_new_snapshot() {
        use crate::testing::SnapshotBuilder;
        use crate::types::{JobPhase, SnapshotDelta, TaskStatus as S};
        let cluster = |second: bool| {
            let mut b = SnapshotBuilder::new(&[]);
            let (n0, n1) = (b.node(&[4000.0, 8e9]), b.node(&[4000.0, 8e9]));
            let q = b.queue(1.0);
            let j = b.job(q, 2);
            let moved = if second { (S::Running, n1) } else { (S::Pending, super::NONE) };
            b.task(j, &[1000.0, 1e9], moved.0, moved.1);
            b.task(j, &[500.0, 1e9], if second { S::Succeeded } else { S::Running }, n0);
            // Allocated → Running moves no counter, but the status column.
            b.task(j, &[250.0, 1e9], if second { S::Running } else { S::Allocated }, n0);
            let mut s = b.build();
            if second {
                s.snap.task_started_ms[0] = 5;
                s.snap.job_phase[0] = JobPhase::Running;
                s.snap.now_ms = 99;
            }
            s
        };
        let (mut old, new) = (cluster(false), cluster(true));
        let rows = |v: &[f64]| v.to_vec();
        let mut delta = SnapshotDelta {
            now_ms: 99,
            tasks: vec![0, 1, 2],
            task_status: vec![S::Running, S::Succeeded, S::Running],
            task_node: vec![1, 0, 0],
            task_started_ms: vec![5, 0, 0],
            nodes: vec![0, 1],
            residents: vec![],
            resident_node: vec![],
            node_used: rows(&new.snap.node_used),
            node_releasing: rows(&new.snap.node_releasing),
            node_pipelined: rows(&new.snap.node_pipelined),
            node_locked_job: vec![super::NONE; 2],
            node_locked_queue: vec![super::NONE; 2],
            job_phase: vec![JobPhase::Running],
            reservation_targets: vec![],
        };
        delta.task_node.push(0);
        assert!(old.update(&delta).is_err(), "columns of different lengths are refused");
        delta.task_node.pop();
        old.update(&delta).unwrap();
        assert_eq!(old.snap.task_status, new.snap.task_status);
        assert_eq!(old.snap.task_node, new.snap.task_node);
        assert_eq!(old.snap.task_started_ms, new.snap.task_started_ms);
        assert_eq!(old.snap.node_used, new.snap.node_used);
        assert_eq!(old.snap.job_phase, new.snap.job_phase);
        assert_eq!(old.snap.now_ms, 99);
        assert_eq!(
            (&old.job_ready, &old.job_waiting, &old.job_valid, &old.job_allocated),
            (&new.job_ready, &new.job_waiting, &new.job_valid, &new.job_allocated)
        );
        assert_eq!(old.job_allocated_tasks, new.job_allocated_tasks);
    }

    #[test]
    fn groups_keep_member_order_and_skip_unknown_owners() {
        let g = Groups::new(3, &[2, 0, 2, super::NONE, 0, 2]);
        assert_eq!(g.of(0), &[1, 4]);
        assert_eq!(g.of(1), &[] as &[u32]);
        assert_eq!(g.of(2), &[0, 2, 5]);
    }
}
