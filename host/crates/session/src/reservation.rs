//! Reservations that outlive a cycle: big jobs elected for reservation
//! (seed 001) and the nodes locked for them, and the nodes locked for queues
//! (seed 000). The scheduler keeps them by name between cycles; a session
//! sees them as one lock per node (`node-locked-job`, `node-locked-queue`),
//! the `elect` and `reserve` actions change them, and every placement
//! honours them ([`Session::lock_blocks`]).

pub use crate::locks::{Backfill, Locks, QueueLock, QueueReservation, Reservations, ADOPTED};
use crate::session::Session;
use std::collections::BTreeMap;
use tephra_model::resource;
use tephra_snapshot::NONE;

impl Session {
    /// Loads `r` into the snapshot's lock columns (before the plugins open).
    /// Names that no longer exist are dropped: a deleted target or node
    /// releases its lock.
    pub(crate) fn restore_locks(&mut self, r: &Reservations) {
        let n = self.nodes();
        self.snap.node_locked_job = vec![NONE; n];
        self.snap.node_locked_queue = vec![NONE; n];
        self.locks.queue_state = vec![None; self.queues()];
        // Indexing every job's name costs milliseconds at 10k jobs: only
        // when some job holds a reservation.
        let job_index: BTreeMap<&str, u32> = match r.targets.is_empty() {
            true => BTreeMap::new(),
            false => self.names.jobs.iter().enumerate().map(|(i, s)| (s.as_str(), i as u32)).collect(),
        };
        for (job, nodes) in &r.targets {
            let Some(&j) = job_index.get(job.as_str()) else { continue };
            self.snap.reservation_targets.push(j);
            for node in nodes {
                if let Some(&i) = self.node_index.get(node) {
                    self.snap.node_locked_job[i as usize] = j;
                }
            }
        }
        for (queue, lock) in &r.queues {
            let Some(&q) = self.queue_index.get(queue) else { continue };
            self.locks.queue_state[q as usize] = Some((lock.relocked_ms, lock.spec.clone(), lock.refused.clone()));
            for node in &lock.nodes {
                if let Some(&i) = self.node_index.get(node) {
                    if self.snap.node_locked_job[i as usize] == NONE {
                        self.snap.node_locked_queue[i as usize] = q;
                    }
                }
            }
        }
    }

    /// The reservations to keep for the next cycle.
    pub(crate) fn save_locks(&self) -> Reservations {
        let mut r = Reservations::default();
        for &j in &self.snap.reservation_targets {
            r.targets
                .push((self.names.jobs[j as usize].clone(), self.locked_nodes(|n| self.snap.node_locked_job[n] == j)));
        }
        for (q, state) in self.locks.queue_state.iter().enumerate() {
            let Some((relocked_ms, spec, refused)) = state else { continue };
            let nodes = self.locked_nodes(|n| self.snap.node_locked_queue[n] == q as u32);
            let lock = QueueLock { nodes, relocked_ms: *relocked_ms, spec: spec.clone(), refused: refused.clone() };
            r.queues.insert(self.names.queues[q].clone(), lock);
        }
        r.starts = self.locks.starts.iter().map(|&(j, at)| (self.names.jobs[j as usize].clone(), at)).collect();
        r
    }

    /// Every queue's reservation status.
    pub(crate) fn reservation_status(&self) -> Vec<QueueReservation> {
        let mut out = Vec::new();
        for (q, state) in self.locks.queue_state.iter().enumerate() {
            let Some((_, _, refused)) = state else { continue };
            let locked: Vec<usize> =
                (0..self.nodes()).filter(|&n| self.snap.node_locked_queue[n] == q as u32).collect();
            let mut idle = vec![0.0; self.d];
            for &n in &locked {
                resource::add_scaled(&mut idle, &self.idle(n as u32), 1.0);
            }
            out.push(QueueReservation {
                queue: self.names.queues[q].clone(),
                nodes: locked.iter().map(|&n| self.names.nodes[n].clone()).collect(),
                idle,
                refused: refused.clone(),
            });
        }
        out
    }

    fn locked_nodes(&self, f: impl Fn(usize) -> bool) -> Vec<String> {
        (0..self.nodes()).filter(|&n| f(n)).map(|n| self.names.nodes[n].clone()).collect()
    }

    /// Whether a reservation keeps `task` off `node`: the node is locked
    /// for another job, or for a queue that is not the task's (or an
    /// ancestor of it).
    #[inline]
    pub fn lock_blocks(&self, task: u32, node: u32) -> bool {
        let j = self.task_job(task);
        let (lj, lq) = (self.snap.node_locked_job[node as usize], self.snap.node_locked_queue[node as usize]);
        (lj != NONE && lj != j && !self.backfills(j, lj))
            || (lq != NONE && !self.queue_within(self.job_queue(j), lq))
            || (!self.locks.node_windows.is_empty() && self.window_blocks(task, node).is_some())
    }

    /// Whether job `j` may run ahead of target `lj` on its nodes: backfill
    /// is on, `j`'s limit is enforced and ends before `lj`'s predicted start.
    fn backfills(&self, j: u32, lj: u32) -> bool {
        if self.locks.backfill == Backfill::Off || !self.extra.job_limit_enforced[j as usize] {
            return false;
        }
        let Some(&(_, start)) = self.locks.starts.iter().find(|s| s.0 == lj) else { return false };
        self.snap.now_ms.saturating_add(self.extra.job_limit_ms[j as usize]) <= start
    }

    /// When each target can start on its locked nodes: once every other
    /// job's task there has ended, by its start and its estimate (its own,
    /// else its limits). `i64::MAX` when one has no estimate or ran past it.
    pub fn predicted_starts(&self) -> Vec<(u32, i64)> {
        let now = self.snap.now_ms;
        let mut starts: Vec<(u32, i64)> = self.snap.reservation_targets.iter().map(|&j| (j, now)).collect();
        if starts.is_empty() {
            return starts;
        }
        for t in 0..self.tasks() as u32 {
            let n = self.snap.task_node[t as usize];
            if n == NONE {
                continue;
            }
            let lj = self.snap.node_locked_job[n as usize];
            let status = self.task_status(t);
            if lj == NONE || lj == self.task_job(t) || !tephra_snapshot::is_allocated(status) {
                continue;
            }
            let Some(slot) = starts.iter_mut().find(|s| s.0 == lj) else { continue };
            let est = self.snap.task_estimated_ms[t as usize];
            let began = match status {
                tephra_contract::TaskStatus::Running => self.snap.task_started_ms[t as usize],
                _ => now,
            };
            let end = began.saturating_add(est);
            slot.1 = if est <= 0 || end < now { i64::MAX } else { slot.1.max(end) };
        }
        starts
    }

    /// Who holds `node` against `task`, for fit errors.
    pub fn lock_reason(&self, task: u32, node: u32) -> String {
        let (lj, lq) = (self.snap.node_locked_job[node as usize], self.snap.node_locked_queue[node as usize]);
        if let Some(w) = self.window_blocks(task, node) {
            let what = if w.maintenance { "maintenance window" } else { "window" };
            return match self.snap.now_ms >= w.start_ms {
                true => format!("node in the {what} of reservation {}", w.name),
                false => format!("job would not end before the {what} of reservation {} opens", w.name),
            };
        }
        if lj != NONE {
            format!("node reserved for job {}", self.names.jobs[lj as usize])
        } else {
            format!("node reserved for queue {}", self.names.queues[lq as usize])
        }
    }

    /// Whether queue `q` is `ancestor` or one of its descendants.
    #[inline]
    pub fn queue_within(&self, mut q: u32, ancestor: u32) -> bool {
        for _ in 0..=self.queues() {
            if q == ancestor {
                return true;
            }
            if q == NONE {
                return false;
            }
            q = self.snap.queue_parent[q as usize];
        }
        false
    }

    /// Locks `nodes` for job `j` (its previous nodes are released first).
    pub fn lock_for_job(&mut self, j: u32, nodes: &[u32]) {
        relock(&mut self.snap.node_locked_job, &self.snap.node_locked_queue, j, nodes);
    }

    /// Locks `nodes` for queue `q` (its previous nodes are released first).
    pub fn lock_for_queue(&mut self, q: u32, nodes: &[u32]) {
        relock(&mut self.snap.node_locked_queue, &self.snap.node_locked_job, q, nodes);
    }

    /// Ends the reservation of target `j`.
    pub fn release_target(&mut self, j: u32) {
        self.lock_for_job(j, &[]);
        self.snap.reservation_targets.retain(|&t| t != j);
    }
}

/// Gives `owner` exactly `nodes` in the lock column `mine`, skipping nodes
/// the other kind of lock (`theirs`) already holds: a node has one owner.
fn relock(mine: &mut [u32], theirs: &[u32], owner: u32, nodes: &[u32]) {
    for l in mine.iter_mut().filter(|l| **l == owner) {
        *l = NONE;
    }
    for &n in nodes {
        if theirs[n as usize] == NONE {
            mine[n as usize] = owner;
        }
    }
}
