//! One scheduling cycle's state: a columnar snapshot of the cluster (the same
//! [`Snapshot`] every plugin receives), the derived job counters, the event
//! log that keeps plugins in step, and the decisions taken.

use crate::ask::Ask;
use crate::locks::{Locks, QueueReservation, Reservations, WindowStatus};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tephra_contract::{Event, EventKind, JobPhase, Snapshot, SnapshotDelta, TaskStatus};
use tephra_dispatch::policy::{Fault, Policies};
use tephra_model::cluster::{Cluster, Condition};
use tephra_model::resource;
use tephra_snapshot::{self as snapshot, move_on_nodes, Built, Moved};
use tephra_snapshot::{cache::SnapshotCache, Basis};
pub use tephra_snapshot::{is_allocated, node_share, phase_name, Extra, NameMap, Names, StatusOverrides, NONE};

/// A decision the session commits.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Bind the task's pod to the node.
    Bind {
        /// The task.
        task: u32,
        /// The node.
        node: u32,
    },
    /// Evict the task's pod, saying why.
    Evict {
        /// The task.
        task: u32,
        /// Why (the pod's Event and condition say it).
        reason: String,
    },
    /// Preemption made room for the task on this node (`status.nominatedNodeName`).
    Nominate {
        /// The task.
        task: u32,
        /// The node.
        node: u32,
    },
}

/// Why a pending task was not placed, per plugin (for explanations).
#[derive(Clone, Debug, Default)]
pub struct FitErrors {
    /// (plugin or `resources`, message) → number of nodes.
    pub counts: BTreeMap<(Arc<str>, Arc<str>), usize>,
    /// Nodes considered.
    pub nodes: usize,
    /// A reason that is not about nodes (e.g. the queue's quota).
    pub whole: Option<String>,
}

impl FitErrors {
    /// One line as kube-scheduler writes it: `0/N nodes are available: …`.
    pub fn summary(&self) -> String {
        if let Some(w) = &self.whole {
            return w.clone();
        }
        let parts: Vec<String> = self.counts.iter().map(|((p, m), n)| format!("{n} {m} ({p})")).collect();
        format!("0/{} nodes are available: {}", self.nodes, parts.join(", "))
    }
}

/// The state of one cycle.
pub struct Session {
    /// The snapshot the plugins see, kept up to date as the session decides.
    pub snap: Snapshot,
    /// The names of what the snapshot numbers.
    pub names: Arc<Names>,
    /// Host-side facts about tasks and jobs.
    pub extra: Arc<Extra>,
    /// Resource dimensions per row.
    pub d: usize,
    /// The configured plugins (actions ask them through [`Session::ask`]).
    pub policies: Policies,
    /// Every state change, in order; plugins receive the part they have not seen.
    pub events: Vec<Event>,
    /// What the session decided, in order.
    pub decisions: Vec<Decision>,
    /// Why tasks stayed pending.
    pub fit_errors: HashMap<u32, FitErrors>,
    /// Why whole jobs were skipped (invalid, not admitted…).
    pub job_reasons: HashMap<u32, String>,
    /// Per job, its tasks allocated, bound, running or succeeded (Volcano's ready count).
    pub job_ready: Vec<u32>,
    /// Per job, its tasks pipelined (waiting for room being freed).
    pub job_waiting: Vec<u32>,
    /// Per job, its pending best-effort tasks.
    pub job_pending_best_effort: Vec<u32>,
    /// Node id by name.
    pub node_index: NameMap<String>,
    /// Queue id by name.
    pub queue_index: NameMap<String>,
    /// Actions configured this cycle (allocate admits jobs itself without enqueue).
    pub actions: Vec<String>,
    /// Per-action arguments.
    pub action_args: BTreeMap<String, BTreeMap<String, String>>,
    /// Random source for node-score ties (seeded: runs are reproducible).
    pub rng: u64,
    /// Volcano's `percentage-nodes-to-find` (0: adaptive; 100: exact search).
    pub nodes_percentage: u32,
    /// Where the next feasible-node search starts (rotates, as in Volcano).
    pub scan_start: usize,
    /// Reservation bookkeeping beside the snapshot's lock columns.
    pub locks: Locks,
    /// The HyperNodes chosen as domains: (job, subgroup or `NONE`, HyperNode).
    pub domains: Vec<(u32, u32, u32)>,
    /// What the next session needs to start from this one.
    basis: Basis,
}

/// Session ids, unique in the process (plugins' kept sessions are told apart by them).
static SESSION_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Session {
    /// The policies, to ask them a question with the events they have not
    /// seen (the one way actions ask the plugins).
    pub fn ask(&mut self) -> Ask<'_> {
        Ask::new(&mut self.policies, &self.events)
    }

    /// Whether any plugin answers `point` (with its switch on).
    pub fn answered(&self, point: tephra_contract::ExtensionPoint) -> bool {
        self.policies.any(point)
    }

    /// The plugin that is down and keeps `point`'s gate shut, if one does.
    pub fn gate_shut_by(&self, point: tephra_contract::ExtensionPoint) -> Option<&str> {
        self.policies.closed_at(point)
    }

    /// Snapshots `cluster` and opens the session in every plugin.
    pub fn open(cluster: &Cluster, policies: Policies, overrides: &StatusOverrides, now_ms: i64, seed: u64) -> Session {
        Self::open_with(cluster, policies, overrides, now_ms, seed, &Reservations::default())
    }

    /// [`Session::open`] with the reservations kept from earlier cycles.
    pub fn open_with(
        cluster: &Cluster,
        policies: Policies,
        overrides: &StatusOverrides,
        now_ms: i64,
        seed: u64,
        reservations: &Reservations,
    ) -> Session {
        let parts = snapshot::build(cluster, overrides, now_ms);
        let mut s = Self::assemble(parts, policies, seed, reservations);
        s.load_windows(cluster);
        s
    }

    /// [`Session::open_with`], starting from the session `cache` kept when
    /// the cluster changed only in ways it can follow (see [`SnapshotCache`]).
    pub fn open_cached(
        cache: &mut SnapshotCache,
        cluster: &Cluster,
        policies: Policies,
        overrides: &StatusOverrides,
        now_ms: i64,
        seed: u64,
        reservations: &Reservations,
    ) -> Session {
        let parts = match cache.update(cluster, overrides, now_ms) {
            Some(parts) => parts,
            None => snapshot::build(cluster, overrides, now_ms),
        };
        let mut s = Self::assemble(parts, policies, seed, reservations);
        s.load_windows(cluster);
        s
    }

    /// Restores reservations, counts jobs and opens the plugins.
    fn assemble(parts: Built, policies: Policies, seed: u64, reservations: &Reservations) -> Session {
        let Built { snap, names, extra, d, node_index, queue_index, mut basis, moved } = parts;
        basis.session = SESSION_IDS.fetch_add(1, Relaxed);
        let mut policies = policies;
        policies.extra = Some(extra.clone());
        let jobs = snap.job_queue.len();
        let mut s = Session {
            snap,
            names,
            extra,
            d,
            policies,
            events: Vec::new(),
            decisions: Vec::new(),
            fit_errors: HashMap::new(),
            job_reasons: HashMap::new(),
            job_ready: vec![0; jobs],
            job_waiting: vec![0; jobs],
            job_pending_best_effort: vec![0; jobs],
            node_index,
            queue_index,
            actions: Vec::new(),
            action_args: BTreeMap::new(),
            rng: seed | 1,
            nodes_percentage: 0,
            scan_start: 0,
            locks: Default::default(),
            domains: Vec::new(),
            basis,
        };
        s.restore_locks(reservations);
        for t in 0..s.tasks() as u32 {
            s.count(t, s.snap.task_status[t as usize], 1);
        }
        let delta = moved.map(|m| (m.base, s.delta(m)));
        let (snap, names) = (&s.snap, &s.names);
        s.policies.open_from(snap, names, delta.as_ref().map(|(base, d)| (*base, d)));
        s
    }

    /// The contract's `snapshot-delta` for what moved.
    fn delta(&self, m: Moved) -> SnapshotDelta {
        let snap = &self.snap;
        let rows = |col: &[f64]| {
            let d = self.d;
            m.nodes.iter().flat_map(|&n| col[n as usize * d..(n as usize + 1) * d].iter().copied()).collect()
        };
        SnapshotDelta {
            now_ms: snap.now_ms,
            task_status: m.tasks.iter().map(|&t| snap.task_status[t as usize]).collect(),
            task_node: m.tasks.iter().map(|&t| snap.task_node[t as usize]).collect(),
            task_started_ms: m.tasks.iter().map(|&t| snap.task_started_ms[t as usize]).collect(),
            tasks: m.tasks,
            node_used: rows(&snap.node_used),
            node_releasing: rows(&snap.node_releasing),
            node_pipelined: rows(&snap.node_pipelined),
            nodes: m.nodes,
            resident_node: m.residents.iter().map(|&r| snap.resident_node[r as usize]).collect(),
            residents: m.residents,
            node_locked_job: snap.node_locked_job.clone(),
            node_locked_queue: snap.node_locked_queue.clone(),
            job_phase: snap.job_phase.clone(),
            reservation_targets: snap.reservation_targets.clone(),
        }
    }

    /// How many nodes.
    #[inline]
    pub fn nodes(&self) -> usize {
        self.snap.node_unschedulable.len()
    }
    /// How many queues.
    #[inline]
    pub fn queues(&self) -> usize {
        self.snap.queue_parent.len()
    }
    /// How many jobs.
    #[inline]
    pub fn jobs(&self) -> usize {
        self.snap.job_queue.len()
    }
    /// How many tasks.
    #[inline]
    pub fn tasks(&self) -> usize {
        self.snap.task_job.len()
    }
    /// Task `t`'s request row.
    #[inline]
    pub fn req(&self, t: u32) -> &[f64] {
        &self.snap.task_resreq[t as usize * self.d..(t as usize + 1) * self.d]
    }
    fn node_row(&self, v: &[f64], n: u32) -> Vec<f64> {
        v[n as usize * self.d..(n as usize + 1) * self.d].to_vec()
    }
    /// `allocatable − used`.
    #[inline]
    pub fn idle(&self, n: u32) -> Vec<f64> {
        let mut r = self.node_row(&self.snap.node_allocatable, n);
        resource::add_scaled(&mut r, &self.snap.node_used[n as usize * self.d..(n as usize + 1) * self.d], -1.0);
        r
    }
    /// `idle + releasing − pipelined` (Volcano's FutureIdle).
    #[inline]
    pub fn future_idle(&self, n: u32) -> Vec<f64> {
        let mut r = self.idle(n);
        let range = n as usize * self.d..(n as usize + 1) * self.d;
        resource::add_scaled(&mut r, &self.snap.node_releasing[range.clone()], 1.0);
        resource::add_scaled(&mut r, &self.snap.node_pipelined[range], -1.0);
        r
    }
    /// The first dimension where `req` does not fit node `n`'s idle room
    /// (or, with `future`, its FutureIdle), with Volcano's tolerance. No
    /// allocation: this runs for every node of every task.
    #[inline]
    pub fn short(&self, req: &[f64], n: u32, future: bool) -> Option<usize> {
        // Slices first, so that the loop checks no bounds. `req < room or
        // |req − room| < ε` is `req − room < ε`: when req < room the
        // difference is negative.
        let (d, base) = (self.d, n as usize * self.d);
        let sn = &self.snap;
        let (req, alloc, used) = (&req[..d], &sn.node_allocatable[base..base + d], &sn.node_used[base..base + d]);
        if future {
            let (rel, pip) = (&sn.node_releasing[base..base + d], &sn.node_pipelined[base..base + d]);
            (0..d).find(|&k| {
                let mut room = alloc[k] - used[k];
                room += rel[k] - pip[k];
                lacks(req[k], room)
            })
        } else {
            (0..d).find(|&k| lacks(req[k], alloc[k] - used[k]))
        }
    }

    /// Task `t`'s status.
    #[inline]
    pub fn task_status(&self, t: u32) -> TaskStatus {
        self.snap.task_status[t as usize]
    }
    /// Task `t`'s job.
    #[inline]
    pub fn task_job(&self, t: u32) -> u32 {
        self.snap.task_job[t as usize]
    }
    /// Job `j`'s queue.
    #[inline]
    pub fn job_queue(&self, j: u32) -> u32 {
        self.snap.job_queue[j as usize]
    }
    /// Job `j`'s gang minimum (`minMember`).
    #[inline]
    pub fn job_min(&self, j: u32) -> u32 {
        self.snap.job_min_available[j as usize]
    }
    /// Volcano's `IsPending`: the PodGroup has not been admitted.
    #[inline]
    pub fn job_is_pending(&self, j: u32) -> bool {
        self.snap.job_phase[j as usize] == JobPhase::Pending
    }
    /// Ready + pending best-effort ≥ minAvailable (Volcano's IsReady).
    #[inline]
    pub fn job_is_ready(&self, j: u32) -> bool {
        let j = j as usize;
        self.job_ready[j] + self.job_pending_best_effort[j] >= self.snap.job_min_available[j]
    }

    fn count(&mut self, t: u32, status: TaskStatus, sign: i32) {
        let j = self.snap.task_job[t as usize] as usize;
        let add = |v: &mut u32| *v = (*v as i32 + sign).max(0) as u32;
        if is_allocated(status) || status == TaskStatus::Succeeded {
            add(&mut self.job_ready[j]);
        }
        if status == TaskStatus::Pipelined {
            add(&mut self.job_waiting[j]);
        }
        if status == TaskStatus::Pending && self.extra.task_best_effort[t as usize] {
            add(&mut self.job_pending_best_effort[j]);
        }
    }

    /// Moves a task to `status` on `node`, updating accounting and logging the event.
    pub fn set_task(&mut self, t: u32, status: TaskStatus, node: u32) {
        let old = self.snap.task_status[t as usize];
        let old_node = self.snap.task_node[t as usize];
        let req = self.req(t).to_vec();
        self.basis.touched.push(t);
        self.count(t, old, -1);
        move_on_nodes(&mut self.snap, self.d, &req, (old_node, old), (node, status));
        self.snap.task_status[t as usize] = status;
        self.snap.task_node[t as usize] = node;
        self.count(t, status, 1);
        let holds = |s: TaskStatus| is_allocated(s) || s == TaskStatus::Pipelined;
        match (holds(old), holds(status)) {
            (false, true) => self.events.push(Event { kind: EventKind::Allocate, task: t, node, status }),
            (true, false) => self.events.push(Event { kind: EventKind::Deallocate, task: t, node: old_node, status }),
            (true, true) if old != status || old_node != node => {
                // Handlers see a give-back then a take, so their sums stay exact.
                let gone = TaskStatus::Pending;
                self.events.push(Event { kind: EventKind::Deallocate, task: t, node: old_node, status: gone });
                self.events.push(Event { kind: EventKind::Allocate, task: t, node, status });
            }
            _ => {}
        }
    }

    /// A random number for tie-breaks (xorshift; reproducible per seed).
    pub fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// Records why a job was skipped (first reason wins).
    pub fn note_job(&mut self, j: u32, reason: String) {
        self.job_reasons.entry(j).or_insert(reason);
    }

    /// Adds `more` to job `j`'s reason (after the first, with "; ").
    pub fn add_job_note(&mut self, j: u32, more: &str) {
        match self.job_reasons.get_mut(&j) {
            Some(r) => {
                r.push_str("; ");
                r.push_str(more);
            }
            None => self.note_job(j, more.to_string()),
        }
    }

    /// The gang condition Volcano writes at session close: `Scheduled` when
    /// the job is ready, else `Unschedulable` with how many tasks are missing.
    fn condition(&self, j: u32) -> Option<Condition> {
        let tasks = &self.extra.job_tasks[j as usize];
        if tasks.is_empty() {
            return None;
        }
        Some(if self.job_is_ready(j) {
            Condition {
                kind: "Scheduled".into(),
                reason: "tasks in gang are ready to be scheduled".into(),
                message: String::new(),
            }
        } else {
            let ready = self.job_ready[j as usize];
            let missing = self.job_min(j).saturating_sub(ready);
            let why = tasks
                .iter()
                .find_map(|t| self.fit_errors.get(t))
                .map(|e| e.summary())
                .or_else(|| self.job_reasons.get(&j).cloned())
                .unwrap_or_default();
            Condition {
                kind: "Unschedulable".into(),
                reason: "NotEnoughResources".into(),
                message: format!("{missing}/{} tasks in gang unschedulable: {why}", tasks.len()),
            }
        })
    }

    /// Closes the plugins' sessions; returns the policies for the next cycle.
    pub fn close(self) -> (Outcome, Policies) {
        let (out, policies, _) = self.finish(false);
        (out, policies)
    }

    /// [`Session::close`], keeping the session in `cache` for the next one.
    pub fn close_cached(self, cache: &mut SnapshotCache) -> (Outcome, Policies) {
        let (out, policies, kept) = self.finish(true);
        cache.keep(kept);
        (out, policies)
    }

    /// Closes the session; `keep`: plugins end in its final state too, for
    /// the next session to start from.
    fn finish(mut self, keep: bool) -> (Outcome, Policies, Built) {
        let conditions = (0..self.jobs() as u32).map(|j| self.condition(j)).collect();
        let reservations = self.save_locks();
        let reservation_status = self.reservation_status();
        let queues: Vec<u32> = (0..self.queues() as u32).collect();
        let queue_status = self.policies.queue_status(&self.events, &queues, self.d);
        let events = std::mem::take(&mut self.events);
        self.policies.close_as(&events, keep.then_some(self.basis.session));
        self.basis.touched.sort_unstable();
        self.basis.touched.dedup();
        let outcome = Outcome {
            decisions: self.decisions,
            pipelined: (0..self.snap.task_job.len() as u32)
                .filter(|&t| self.snap.task_status[t as usize] == TaskStatus::Pipelined)
                .map(|t| (t, self.snap.task_node[t as usize]))
                .collect(),
            job_phase: self.snap.job_phase.clone(),
            fit_errors: self.fit_errors,
            job_reasons: self.job_reasons,
            faults: std::mem::take(&mut self.policies.faults),
            names: self.names.clone(),
            extra: self.extra.clone(),
            dims: self.snap.dims.clone(),
            task_job: self.snap.task_job.clone(),
            conditions,
            queue_status,
            reservations,
            reservation_status,
            windows: std::mem::take(&mut self.locks.window_status),
            domains: self.domains,
        };
        let kept = Built {
            snap: self.snap,
            names: self.names,
            extra: self.extra,
            d: self.d,
            node_index: self.node_index,
            queue_index: self.queue_index,
            basis: self.basis,
            moved: None,
        };
        (outcome, self.policies, kept)
    }
}

/// What a closed session hands back to the cache.
pub struct Outcome {
    /// What the session decided, in order.
    pub decisions: Vec<Decision>,
    /// Tasks left pipelined (task, node): they evaporate, as in Volcano.
    pub pipelined: Vec<(u32, u32)>,
    /// Per job, its phase at the close.
    pub job_phase: Vec<JobPhase>,
    /// Why tasks stayed pending.
    pub fit_errors: HashMap<u32, FitErrors>,
    /// Why whole jobs were skipped.
    pub job_reasons: HashMap<u32, String>,
    /// The plugins' faults in the session.
    pub faults: Vec<Fault>,
    /// The names of what the session numbered.
    pub names: Arc<Names>,
    /// Host-side facts about its tasks and jobs.
    pub extra: Arc<Extra>,
    /// The resource dimensions of its rows.
    pub dims: Vec<String>,
    /// Per task, its job.
    pub task_job: Vec<u32>,
    /// Per job, the PodGroup condition to write (None: no tasks yet).
    pub conditions: Vec<Option<Condition>>,
    /// The quota plugin's (name, deserved rows, shares) per queue.
    pub queue_status: Option<(String, Vec<f64>, Vec<f64>)>,
    /// The reservations to keep for the next cycle.
    pub reservations: Reservations,
    /// Every reserving queue's `status.reservation`.
    pub reservation_status: Vec<QueueReservation>,
    /// Every advance reservation's status.
    pub windows: Vec<WindowStatus>,
    /// The HyperNodes chosen as domains: (job, subgroup or `NONE`, HyperNode).
    pub domains: Vec<(u32, u32, u32)>,
}

/// Whether `room` is short of `req` beyond Volcano's tolerance (a NaN is).
#[inline]
fn lacks(req: f64, room: f64) -> bool {
    let fits = req - room < resource::EPSILON;
    !fits
}
