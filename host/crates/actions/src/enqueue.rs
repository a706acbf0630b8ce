//! enqueue: admits Pending jobs (PodGroup → Inqueue) queue by queue, one job
//! at a time, when every tier's vote allows it (reference §7.1).

use super::{fallback_rank, pop_first, Keyed, Kind};
use std::collections::BTreeMap;
use tephra_contract::JobPhase;
use tephra_dispatch::backend::Call;
use tephra_session::session::Session;

pub fn execute(ssn: &mut Session) {
    let mut queues = Vec::new();
    let mut by_queue: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for j in 0..ssn.jobs() as u32 {
        let q = ssn.job_queue(j);
        if !queues.contains(&q) {
            queues.push(q);
        }
        if ssn.job_is_pending(j) {
            by_queue.entry(q).or_default().push(j);
        }
    }
    // Each queue's jobs ordered once, as Volcano's per-queue heap: asking
    // for the order of every waiting job at each admission would be
    // quadratic (100k plain pods are 100k jobs).
    let rank = fallback_rank(ssn, Kind::Job);
    let mut pending: BTreeMap<u32, Keyed> = BTreeMap::new();
    for (q, jobs) in by_queue {
        let mut heap = Keyed::new(rank.clone());
        heap.push(ssn, Kind::Job, &jobs);
        pending.insert(q, heap);
    }
    while let Some(q) = pop_first(ssn, Kind::Queue, &mut queues) {
        let Some(job) = pending.get_mut(&q).and_then(Keyed::pop) else { continue };
        let admit =
            !ssn.snap.job_has_min_resources[job as usize] || ssn.policies.vote(&ssn.events, Call::JobEnqueueable(job));
        if admit {
            ssn.policies.job_enqueued(&ssn.events, job);
            ssn.snap.job_phase[job as usize] = JobPhase::Inqueue;
        } else {
            let why = "a plugin rejected JobEnqueueable (queue or cluster quota)".to_string();
            let why = super::gate_reason(ssn, tephra_contract::ExtensionPoint::JobEnqueueable, why);
            ssn.note_job(job, format!("not admitted: {why}"));
        }
        queues.push(q);
    }
}
