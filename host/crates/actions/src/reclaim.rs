//! reclaim: a starving job of a queue under its share takes resources back
//! from running tasks of other, reclaimable queues. The quota gate is the
//! reclaimer's `preemptive`; the victims come from `reclaimable` votes
//! (reference §7.5).
//!
//! Where a plugin answers `preemptive` (a share plugin: capacity,
//! proportion), reclaim serves the queue's share, not only the gang: a job
//! past its minAvailable with pending tasks keeps reclaiming while
//! `preemptive` admits each task, so a Deployment's queue gets back what it
//! deserves (Volcano's capacity guide). Volcano since #3869 stops at
//! minAvailable; its ping-pong cannot happen here, as `preemptive` keeps the
//! reclaimer within its share and `reclaimable` takes only from queues above
//! theirs.

use super::victims::{candidate_nodes, evict_until_fits, tasks_on, victim_order};
use super::{job_pipelined, pop_first, sort, Kind};
use std::collections::BTreeMap;
use tephra_contract::{ExtensionPoint as P, TaskStatus};
use tephra_dispatch::backend::Call;
use tephra_session::session::Session;
use tephra_session::statement::Statement;

/// Runs the action over the session.
pub fn execute(ssn: &mut Session) {
    let share = ssn.answered(P::Preemptive);
    // Starving jobs; with a share plugin also running jobs with more to place.
    let serves = |ssn: &mut Session, j| super::starving(ssn, j) || (share && job_pipelined(ssn, j));
    let (mut queues, mut preemptors) = super::preemptors_by_queue(ssn, serves);
    let mut tasks: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &j in preemptors.values().flatten() {
        let mut pending = super::pending_tasks(ssn, j);
        sort(ssn, Kind::Task, &mut pending);
        tasks.insert(j, pending);
    }
    while let Some(q) = pop_first(ssn, Kind::Queue, &mut queues) {
        if ssn.ask().any_true(Call::Overused(q)) {
            continue;
        }
        let mut jobs = preemptors.remove(&q).unwrap_or_default();
        let Some(job) = pop_first(ssn, Kind::Job, &mut jobs) else { continue };
        let mut stmt = Statement::new();
        let mut list = tasks.remove(&job).unwrap_or_default();
        while !list.is_empty() && (share || ssn.ask().job_starving(job)) {
            let t = list.remove(0);
            if ssn.extra.task_preempt_never[t as usize] || !ssn.ask().all_true(Call::Preemptive(q, t)) {
                continue;
            }
            reclaim_for(ssn, &mut stmt, t);
        }
        if job_pipelined(ssn, job) {
            stmt.commit(ssn);
        } else {
            stmt.discard(ssn);
        }
        // One job per visit; the queue comes back while it has starving jobs.
        if !jobs.is_empty() {
            preemptors.insert(q, jobs);
            queues.push(q);
        }
    }
}

fn reclaim_for(ssn: &mut Session, stmt: &mut Statement, t: u32) {
    let queue = ssn.job_queue(ssn.task_job(t));
    let req = ssn.req(t).to_vec();
    for node in candidate_nodes(ssn, t) {
        let reclaimees: Vec<u32> = tasks_on(ssn, node, &[TaskStatus::Running])
            .into_iter()
            .filter(|&v| {
                let vq = ssn.job_queue(ssn.task_job(v));
                ssn.snap.task_preemptable[v as usize] && vq != queue && ssn.snap.queue_reclaimable[vq as usize]
            })
            .collect();
        if reclaimees.is_empty() {
            continue;
        }
        let reclaimees = victim_order(ssn, t, &reclaimees);
        // No tier deciding means no victims; idle room alone may suffice.
        let (victims, voters) = ssn.ask().victims(Call::Reclaimable(t, &reclaimees), &reclaimees).unwrap_or_default();
        let reason = format!(
            "reclaim: for {} (queue {}) on {} (victims voted by {})",
            ssn.names.tasks[t as usize],
            ssn.names.queues[queue as usize],
            ssn.names.nodes[node as usize],
            voters.join(", ")
        );
        // The predicates again once victims go: a rule about pods (affinity
        // to a victim, spread) may turn on the evictions themselves.
        let fits =
            |ssn: &mut Session| ssn.short(&req, node, true).is_none() && ssn.ask().predicate(t, &[node])[0].is_none();
        if evict_until_fits(ssn, stmt, t, node, victims, &reason, &fits) {
            return;
        }
    }
}
