//! enqueue: admits Pending jobs (PodGroup → Inqueue) queue by queue, one job
//! at a time, when every tier's vote allows it (reference §7.1). A big job
//! elected for reservation gets no pass: it is admitted by the same vote,
//! and while it is refused the other jobs of its queue wait.

use super::{fallback_rank, pop_first, Keyed, Kind};
use std::collections::BTreeMap;
use tephra_contract::JobPhase;
use tephra_dispatch::backend::Call;
use tephra_session::session::Session;

/// Runs the action over the session.
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
    hold_for_targets(ssn, &mut by_queue);
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
        admit(ssn, job);
        queues.push(q);
    }
}

/// Big jobs reserved for are voted on first, by the same vote as any job.
/// One that is refused holds its queue: the queue's other jobs wait this
/// cycle, or they would take the quota the target waits for as fast as
/// its nodes drain, and it would never start.
fn hold_for_targets(ssn: &mut Session, by_queue: &mut BTreeMap<u32, Vec<u32>>) {
    for j in ssn.snap.reservation_targets.clone() {
        let q = ssn.job_queue(j);
        let Some(jobs) = by_queue.get_mut(&q) else { continue };
        let Some(at) = jobs.iter().position(|&x| x == j) else { continue };
        jobs.swap_remove(at);
        if admit(ssn, j) {
            continue;
        }
        let name = &ssn.names.jobs[j as usize];
        let why = format!("not admitted: waiting behind big job {name}, which is reserved for and not admitted yet");
        for other in by_queue.remove(&q).unwrap_or_default() {
            ssn.note_job(other, why.clone());
        }
    }
}

/// Admits `job` when the tier vote allows it (a job without minResources
/// always); otherwise notes which plugin refused.
fn admit(ssn: &mut Session, job: u32) -> bool {
    let rejected = match ssn.snap.job_has_min_resources[job as usize] {
        true => ssn.ask().refusal(Call::JobEnqueueable(job)),
        false => None,
    };
    match rejected {
        Some((plugin, why)) => {
            // The plugin's own reason names the resource and the amounts
            // (`needs cpu 64; queue default can admit 24 (…)`).
            let why = match why {
                Some(why) => format!("{why} ({plugin})"),
                None => format!("plugin {plugin} refused to admit the job (its quota check, JobEnqueueable)"),
            };
            let why = super::gate_reason(ssn, tephra_contract::ExtensionPoint::JobEnqueueable, why);
            ssn.note_job(job, format!("not admitted: {why}"));
            false
        }
        None => {
            ssn.ask().job_enqueued(job);
            ssn.snap.job_phase[job as usize] = JobPhase::Inqueue;
            true
        }
    }
}
