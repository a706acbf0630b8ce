//! backfill: places best-effort tasks (no requests) on any node that passes
//! the predicates; binds a job's tasks once the job is ready (§7.3).

use super::{best_node, feasible_nodes, job_ready, job_valid, sort, Kind};
use tephra_contract::TaskStatus;
use tephra_session::session::{Decision, Session};

/// Runs the action over the session.
pub fn execute(ssn: &mut Session) {
    for (j, t) in candidates(ssn) {
        if ssn.task_status(t) == TaskStatus::Pipelined {
            ssn.set_task(t, TaskStatus::Pending, tephra_session::session::NONE);
        }
        let nodes = feasible_nodes(ssn, t, false);
        let Some(node) = best_node(ssn, t, &nodes) else { continue };
        ssn.set_task(t, TaskStatus::Allocated, node);
        if job_ready(ssn, j) {
            bind_allocated(ssn, j);
        }
    }
}

/// (job, task) pairs backfill considers, in order: queues by queue order
/// (each drained before the next), jobs by job order, tasks by task order.
pub fn candidates(ssn: &mut Session) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut queues: Vec<u32> = (0..ssn.queues() as u32).collect();
    sort(ssn, Kind::Queue, &mut queues);
    for q in queues {
        let mut jobs: Vec<u32> =
            (0..ssn.jobs() as u32).filter(|&j| ssn.job_queue(j) == q && !ssn.job_is_pending(j)).collect();
        sort(ssn, Kind::Job, &mut jobs);
        for j in jobs {
            if !job_valid(ssn, j) {
                continue;
            }
            let mut tasks: Vec<u32> = ssn.extra.job_tasks[j as usize]
                .iter()
                .copied()
                .filter(|&t| {
                    ssn.extra.task_best_effort[t as usize]
                        && matches!(ssn.task_status(t), TaskStatus::Pending | TaskStatus::Pipelined)
                })
                .collect();
            sort(ssn, Kind::Task, &mut tasks);
            out.extend(tasks.into_iter().map(|t| (j, t)));
        }
    }
    out
}

/// Dispatches every Allocated, not yet bound task of the job.
fn bind_allocated(ssn: &mut Session, j: u32) {
    for t in ssn.extra.job_tasks[j as usize].clone() {
        if ssn.snap.task_status[t as usize] == TaskStatus::Allocated
            && !ssn.decisions.iter().any(|d| matches!(d, Decision::Bind { task, .. } if *task == t))
        {
            let node = ssn.snap.task_node[t as usize];
            ssn.decisions.push(Decision::Bind { task: t, node });
        }
    }
}
