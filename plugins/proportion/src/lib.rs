//! Proportion: queues share the cluster by weight (Volcano's `proportion`
//! plugin, reference §8.5). At session open every queue with a job gets a
//! `deserved` row by water-filling ([`fill`]); allocation stays within it,
//! queues beyond it are overused and may lose tasks to reclaim, and enqueue
//! admits jobs up to the queue's real capability.

mod fill;

use std::collections::HashMap;

use tephra_sdk::resource::{self, PODS};
use tephra_sdk::types::Quantity;
use tephra_sdk::{
    log, Args, Event, EventKind, ExtensionPoint as P, JobPhase, Policy, QueueState, Session, TaskStatus, Vote,
};

/// Session attributes of a queue that has jobs in the session.
struct Queue {
    weight: f64,
    guarantee: Vec<f64>,
    /// `(total ⊖ Σ guarantees) + guarantee`, capped by the capability.
    real_capability: Vec<f64>,
    /// The water-filling ceiling: `real_capability`, or +∞ on scalar dims
    /// Volcano drops from it (see [`Queue::new`]).
    fill_cap: Vec<f64>,
    /// Σ requests of tasks holding resources, kept current by events
    /// (pipelined tasks count too: Volcano fires the same handler).
    allocated: Vec<f64>,
    /// `allocated` at open plus Pending tasks.
    request: Vec<f64>,
    /// minResources still to be placed of admitted jobs.
    inqueue: Vec<f64>,
    /// Σ over jobs of what they hold beyond minResources.
    elastic: Vec<f64>,
    deserved: Vec<f64>,
    share: f64,
}

/// A sparse per-queue list as a dense row, and which dims it names.
fn sparse_row(list: &[Quantity], owner: u32, d: usize) -> (Vec<f64>, Vec<bool>) {
    let (mut row, mut named) = (vec![0.0; d], vec![false; d]);
    for q in list.iter().filter(|q| q.owner == owner && (q.dim as usize) < d) {
        row[q.dim as usize] = q.value;
        named[q.dim as usize] = true;
    }
    (row, named)
}

impl Queue {
    fn new(s: &Session, q: u32, total_guarantee: &[f64]) -> Self {
        let d = s.dims();
        let total = s.total();
        let (capability, capped) = sparse_row(&s.snap.queue_capability, q, d);
        let (guarantee, guaranteed) = sparse_row(&s.snap.queue_guarantee, q, d);
        let (mut real_capability, mut fill_cap) = (vec![0.0; d], vec![f64::INFINITY; d]);
        for k in 0..d {
            // Unset dims, and cpu/memory ≤ 0, mean no limit.
            let limit = if !capped[k] || (k < PODS && capability[k] <= 0.0) { f64::INFINITY } else { capability[k] };
            real_capability[k] = ((total[k] - total_guarantee[k]).max(0.0) + guarantee[k]).min(limit);
            // [quirk] Volcano's resource subtraction keeps a scalar only where
            // the total exceeds the guarantees; unless this queue's guarantee
            // names it, the dim is then absent from realCapability: 0 for
            // enqueue, but no ceiling (and no capability cap) in water-filling.
            if k < PODS || total[k] > total_guarantee[k] || guaranteed[k] {
                fill_cap[k] = real_capability[k];
            }
        }
        Queue {
            weight: s.snap.queue_weight[q as usize],
            guarantee,
            real_capability,
            fill_cap,
            allocated: vec![0.0; d],
            request: vec![0.0; d],
            inqueue: vec![0.0; d],
            elastic: vec![0.0; d],
            deserved: vec![0.0; d],
            share: 0.0,
        }
    }

    /// Adds job `j`: its allocation as the session keeps it, and its Pending
    /// tasks' requests (most jobs have none once a big cycle placed them).
    fn add_job(&mut self, s: &Session, j: u32) {
        let held = s.job_allocated(j);
        resource::add(&mut self.allocated, held);
        resource::add(&mut self.request, held);
        if s.job_pending_tasks(j) > 0 {
            for &t in s.job_tasks(j) {
                if s.task_status(t) == TaskStatus::Pending {
                    resource::add(&mut self.request, s.task_req(t));
                }
            }
        }
        let min = s.job_min_resources(j);
        if let Some(min) = min {
            // A Running job reserves its remainder only while it has its gang
            // placed (a finished driver must not reserve again).
            let reserves = match s.job_phase(j) {
                JobPhase::Inqueue => true,
                JobPhase::Running => s.job_allocated_tasks[j as usize] >= s.job_min_available(j),
                _ => false,
            };
            if reserves {
                for (k, x) in self.inqueue.iter_mut().enumerate() {
                    *x += positive(min[k] - held[k]);
                }
            }
        }
        // Without minResources everything a job holds is elastic.
        for (k, x) in self.elastic.iter_mut().enumerate() {
            *x += positive(held[k] - min.map_or(0.0, |m| m[k]));
        }
    }

    /// `allocated + req ≤ deserved` on the dims `req` asks for, `pods` aside
    /// (Volcano compares these exactly, without ε).
    fn fits(&self, req: &[f64]) -> bool {
        (0..req.len()).all(|k| k == PODS || req[k] <= 0.0 || self.allocated[k] + req[k] <= self.deserved[k])
    }
}

/// `x.max(0.0)` without a call: in Wasm `f64::max` is one, and it runs per
/// job and dimension at every session open.
fn positive(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// Higher `priority` first, then smaller `share`, as one key. `-priority` is
/// an exact integer and the share is squashed monotonically into [0, 0.5], so
/// it never reaches the next priority; shares whose squashed values differ by
/// less than one ulp of `priority` (≈ |priority|·2⁻⁵²) tie.
fn order_key(priority: i32, share: f64) -> f64 {
    -(priority as f64) + (0.5 - 0.5 / (1.0 + share.max(0.0)))
}

fn is_open(s: &Session, q: u32) -> bool {
    matches!(s.snap.queue_state.get(q as usize), Some(QueueState::Open))
}

#[derive(Default)]
pub struct Proportion {
    /// Indexed by queue id; `None` for queues without jobs in the session.
    queues: Vec<Option<Queue>>,
}

impl Proportion {
    fn attr(&self, q: u32) -> Option<&Queue> {
        self.queues.get(q as usize).and_then(Option::as_ref)
    }

    fn job_attr_mut(&mut self, s: &Session, j: u32) -> Option<&mut Queue> {
        let q = *s.snap.job_queue.get(j as usize)?;
        self.queues.get_mut(q as usize).and_then(Option::as_mut)
    }

    /// Allocatable and Preemptive: an open queue stays within deserved.
    fn within_deserved(&self, s: &Session, q: u32, t: u32) -> bool {
        is_open(s, q) && self.attr(q).is_none_or(|a| a.fits(s.task_req(t)))
    }
}

impl Policy for Proportion {
    const NAME: &'static str = "proportion";
    const POINTS: &'static [P] = &[
        P::QueueOrder,
        P::Overused,
        P::Allocatable,
        P::Preemptive,
        P::Reclaimable,
        P::JobEnqueueable,
        P::JobEnqueued,
        P::QueueStatus,
        P::Events,
    ];

    fn open(&mut self, s: &Session, _: &Args) -> Result<(), String> {
        let d = s.dims();
        // Every queue's guarantee is reserved, with jobs or without.
        let mut total_guarantee = vec![0.0; d];
        for q in s.snap.queue_guarantee.iter().filter(|q| (q.dim as usize) < d) {
            total_guarantee[q.dim as usize] += q.value;
        }
        self.queues = (0..s.queues()).map(|_| None).collect();
        for j in 0..s.jobs() as u32 {
            let q = s.job_queue(j);
            if let Some(slot) = self.queues.get_mut(q as usize) {
                slot.get_or_insert_with(|| Queue::new(s, q, &total_guarantee)).add_job(s, j);
            }
        }

        let ids: Vec<usize> = (0..self.queues.len()).filter(|&q| self.queues[q].is_some()).collect();
        let claims: Vec<fill::Claim> = ids
            .iter()
            .filter_map(|&q| self.queues[q].as_ref())
            .map(|a| fill::Claim { weight: a.weight, cap: &a.fill_cap, request: &a.request, guarantee: &a.guarantee })
            .collect();
        let deserved = fill::deserved(s.total(), &claims);
        for (q, row) in ids.into_iter().zip(deserved) {
            if let Some(a) = self.queues[q].as_mut() {
                a.share = fill::share(&a.allocated, &row);
                a.deserved = row;
            }
        }
        Ok(())
    }

    fn on_event(&mut self, s: &Session, e: &Event, _: TaskStatus) {
        let req = s.task_req(e.task);
        if let Some(a) = self.job_attr_mut(s, s.task_job(e.task)) {
            match e.kind {
                EventKind::Allocate => resource::add(&mut a.allocated, req),
                EventKind::Deallocate => resource::sub(&mut a.allocated, req),
            }
            a.share = fill::share(&a.allocated, &a.deserved);
        }
    }

    fn queue_order(&mut self, s: &Session, q: u32) -> f64 {
        let share = self.attr(q).map_or(0.0, |a| a.share);
        order_key(s.snap.queue_priority[q as usize], share)
    }

    /// The queue holds at least its whole deserved row (every dim, ε).
    fn overused(&mut self, _: &Session, q: u32) -> bool {
        self.attr(q).is_some_and(|a| resource::less_equal(&a.deserved, &a.allocated))
    }

    fn allocatable(&mut self, s: &Session, q: u32, t: u32) -> bool {
        self.within_deserved(s, q, t)
    }

    fn preemptive(&mut self, s: &Session, q: u32, t: u32) -> bool {
        self.within_deserved(s, q, t)
    }

    /// In the given order, a candidate is a victim while its queue (net of the
    /// victims already chosen) still holds more than it deserves.
    fn reclaimable(&mut self, s: &Session, _: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        let mut held: HashMap<u32, Vec<f64>> = HashMap::new();
        let mut victims = Vec::new();
        for &c in candidates {
            let Some(&q) = s.snap.job_queue.get(s.task_job(c) as usize) else {
                continue;
            };
            let Some(a) = self.attr(q) else { continue };
            let held = held.entry(q).or_insert_with(|| a.allocated.clone());
            if !resource::less_equal(held, &a.deserved) {
                resource::sub(held, s.task_req(c));
                victims.push(c);
            }
        }
        (victims, Vote::Permit)
    }

    /// Admit while `minResources + allocated + inqueue − elastic` stays within
    /// the real capability on the dims minResources asks for (`pods` aside).
    fn job_enqueueable(&mut self, s: &Session, j: u32) -> Vote {
        let q = s.job_queue(j);
        if !is_open(s, q) {
            return Vote::Reject;
        }
        let (Some(min), Some(a)) = (s.job_min_resources(j), self.attr(q)) else {
            return Vote::Permit;
        };
        let short = (0..min.len()).find(|&k| {
            let need = min[k] + a.allocated[k] + a.inqueue[k] - a.elastic[k];
            k != PODS && min[k] > 0.0 && need > a.real_capability[k]
        });
        let Some(k) = short else {
            return Vote::Permit;
        };
        // Volcano records this as a PodGroup event: here it is the refusal's reason.
        let (dim, show) = (&s.snap.dims[k], |v: f64| resource::show(&s.snap.dims[k], v));
        let room = a.real_capability[k] - a.allocated[k] - a.inqueue[k] + a.elastic[k];
        log::why(&format!(
            "needs {dim} {}; queue {} can admit {} ({dim} real capability {} − allocated {} − held by admitted jobs {} + elastic {})",
            show(min[k]),
            log::name(tephra_sdk::bindings::tephra::scheduler::host::Kind::Queue, q),
            show(room.max(0.0)),
            show(a.real_capability[k]),
            show(a.allocated[k]),
            show(a.inqueue[k]),
            show(a.elastic[k]),
        ));
        Vote::Reject
    }

    fn job_enqueued(&mut self, s: &Session, j: u32) {
        if let Some(min) = s.job_min_resources(j) {
            if let Some(a) = self.job_attr_mut(s, j) {
                resource::add(&mut a.inqueue, min);
            }
        }
    }

    /// Deserved and share for status; queues without jobs have no figures.
    fn queue_status(&mut self, s: &Session, q: u32) -> (Vec<f64>, f64) {
        match self.attr(q) {
            Some(a) => (a.deserved.clone(), a.share),
            None => (vec![f64::NAN; s.dims()], 0.0),
        }
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Proportion: queue_order, overused, allocatable, preemptive, reclaimable, job_enqueueable, job_enqueued, queue_status);

#[cfg(test)]
mod tests;
