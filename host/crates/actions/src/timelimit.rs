//! Time limits in force: tasks of jobs running past their enforced limit
//! are evicted (Slurm's TIMEOUT), whatever actions are configured. The
//! simulator's kubelet ends them itself before a cycle; in a cluster this
//! is what ends them (a pod's own activeDeadlineSeconds is the kubelet's).

use tephra_contract::TaskStatus;
use tephra_model::timelimit::Overrun;
use tephra_session::session::Session;
use tephra_session::statement::Statement;

/// Evicts running tasks whose job's enforced limit has passed since they
/// started: everywhere when its queue says `evict`; with `unprotect`, only
/// on a node held for someone else (a big job's, or in or before a window
/// that does not serve it), where backfill let it in on its limit.
pub fn end_overruns(ssn: &mut Session) {
    let now = ssn.snap.now_ms;
    let mut stmt = Statement::new();
    for t in 0..ssn.tasks() as u32 {
        let j = ssn.task_job(t) as usize;
        let (limit, started) = (ssn.extra.job_limit_ms[j], ssn.snap.task_started_ms[t as usize]);
        if !ssn.extra.job_limit_enforced[j] || started <= 0 || ssn.task_status(t) != TaskStatus::Running {
            continue;
        }
        if now - started < limit {
            continue;
        }
        let limit = tephra_model::timelimit::display(limit);
        match ssn.extra.job_overrun[j] {
            Overrun::Unprotect if ssn.lock_blocks(t, ssn.snap.task_node[t as usize]) => {
                let held = ssn.lock_reason(t, ssn.snap.task_node[t as usize]);
                stmt.evict(ssn, t, &format!("time limit of {limit} exceeded ({held})"));
            }
            Overrun::Evict => stmt.evict(ssn, t, &format!("time limit of {limit} exceeded")),
            _ => {}
        }
    }
    stmt.commit(ssn);
}
