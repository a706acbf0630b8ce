//! preempt: a starving job takes resources from lower-priority work of its
//! own queue — first other jobs, then its own lower-priority tasks. The
//! preemptor is only pipelined; allocate binds it on its nominated node once
//! the victims are gone (reference §7.4).

use super::victims::{evict_until_fits, nodes_by_score, tasks_on, victim_order};
use super::{job_pipelined, pop_first, sort, Kind};
use std::collections::BTreeMap;
use tephra_contract::TaskStatus;
use tephra_dispatch::backend::Call;
use tephra_session::session::{Session, NONE};
use tephra_session::statement::Statement;

/// Runs the action over the session.
pub fn execute(ssn: &mut Session) {
    // As in Volcano, a job with a network topology does not preempt task by
    // task: gangpreempt makes room for it within its domain.
    let serves = |ssn: &mut Session, j| super::starving(ssn, j) && !super::topology::has_topology(ssn, j);
    let (mut queues, mut preemptors) = super::preemptors_by_queue(ssn, serves);
    let starving: Vec<u32> = preemptors.values().flatten().copied().collect();
    let mut tasks: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &j in &starving {
        let mut pending = super::pending_tasks(ssn, j);
        sort(ssn, Kind::Task, &mut pending);
        tasks.insert(j, pending);
    }
    while let Some(q) = pop_first(ssn, Kind::Queue, &mut queues) {
        // Between jobs of the queue.
        let mut jobs = preemptors.remove(&q).unwrap_or_default();
        while let Some(job) = pop_first(ssn, Kind::Job, &mut jobs) {
            let mut stmt = Statement::new();
            let list = tasks.entry(job).or_default();
            let mut list = std::mem::take(list);
            while ssn.ask().job_starving(job) && !list.is_empty() {
                let p = list.remove(0);
                let filter = |ssn: &Session, v: u32| {
                    let vj = ssn.task_job(v);
                    ssn.job_queue(vj) == q && vj != job
                };
                preempt(ssn, &mut stmt, p, &filter);
            }
            tasks.insert(job, list);
            if job_pipelined(ssn, job) {
                stmt.commit(ssn);
            } else {
                stmt.discard(ssn);
            }
        }
        // Inside each starving job of the queue: its own lower-priority tasks.
        let own: Vec<u32> = starving.iter().copied().filter(|&j| ssn.job_queue(j) == q).collect();
        for job in own {
            let mut pending = super::pending_tasks(ssn, job);
            sort(ssn, Kind::Task, &mut pending);
            for p in pending {
                let mut stmt = Statement::new();
                let filter = |ssn: &Session, v: u32| ssn.task_job(v) == job;
                let assigned = preempt(ssn, &mut stmt, p, &filter);
                stmt.commit(ssn);
                if !assigned {
                    break;
                }
            }
        }
    }
}

/// Whether `p` must not preempt now: policy Never, or its nominated node
/// already fits it (allocate will place it) or is still releasing victims.
fn ineligible(ssn: &mut Session, p: u32) -> bool {
    if ssn.extra.task_preempt_never[p as usize] {
        return true;
    }
    let n = ssn.extra.task_nominated[p as usize];
    if n == NONE {
        return false;
    }
    let verdict = ssn.ask().predicate(p, &[n]).remove(0);
    match verdict {
        Some(r) if r.unresolvable => false,
        None if ssn.short(ssn.req(p), n, true).is_none() => true,
        _ => !tasks_on(ssn, n, &[TaskStatus::Releasing]).is_empty(),
    }
}

/// Tries to make room for `p` on one node by evicting victims that pass
/// `filter` and the plugins' votes; pipelines `p` there on success.
fn preempt(ssn: &mut Session, stmt: &mut Statement, p: u32, filter: &dyn Fn(&Session, u32) -> bool) -> bool {
    if ineligible(ssn, p) {
        return false;
    }
    let queue = ssn.job_queue(ssn.task_job(p));
    let req = ssn.req(p).to_vec();
    let p_best_effort = ssn.extra.task_best_effort[p as usize];
    for node in nodes_by_score(ssn, p) {
        let preemptees: Vec<u32> = tasks_on(ssn, node, &[TaskStatus::Bound, TaskStatus::Running])
            .into_iter()
            .filter(|&v| {
                // A best-effort preemptor may only evict best-effort pods.
                let class_ok = !p_best_effort || ssn.extra.task_best_effort[v as usize];
                ssn.snap.task_preemptable[v as usize] && class_ok && filter(ssn, v)
            })
            .collect();
        let preemptees = victim_order(ssn, p, &preemptees);
        // No tier deciding means no victims, not "skip the node": the room
        // check below may still pass on idle capacity alone (as in Volcano).
        let (victims, voters) = ssn.ask().victims(Call::Preemptable(p, &preemptees), &preemptees).unwrap_or_default();
        let reason = format!(
            "preempt: for {} on {} (victims voted by {})",
            ssn.names.tasks[p as usize],
            ssn.names.nodes[node as usize],
            voters.join(", ")
        );
        let fits = |ssn: &mut Session| {
            ssn.ask().all_true(Call::Allocatable(queue, p))
                && ssn.short(&req, node, true).is_none()
                && ssn.ask().predicate(p, &[node])[0].is_none()
        };
        if evict_until_fits(ssn, stmt, p, node, victims, &reason, &fits) {
            return true;
        }
    }
    false
}
