//! enqueue: admits Pending jobs (PodGroup → Inqueue) queue by queue, one job
//! at a time, when every tier's vote allows it (reference §7.1).

use super::{pop_first, Kind};
use std::collections::BTreeMap;
use tephra_contract::JobPhase;
use tephra_dispatch::backend::Call;
use tephra_session::session::Session;

pub fn execute(ssn: &mut Session) {
    let mut queues = Vec::new();
    let mut pending: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for j in 0..ssn.jobs() as u32 {
        let q = ssn.job_queue(j);
        if !queues.contains(&q) {
            queues.push(q);
        }
        if ssn.job_is_pending(j) {
            pending.entry(q).or_default().push(j);
        }
    }
    while let Some(q) = pop_first(ssn, Kind::Queue, &mut queues) {
        let Some(jobs) = pending.get_mut(&q) else { continue };
        let mut list = std::mem::take(jobs);
        let Some(job) = pop_first(ssn, Kind::Job, &mut list) else { continue };
        pending.insert(q, list);
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
