//! Time limits in force: tasks of jobs running past their enforced limit
//! are evicted (Slurm's TIMEOUT), whatever actions are configured. The
//! simulator's kubelet ends them itself before a cycle; in a cluster this
//! is what ends them (a pod's own activeDeadlineSeconds is the kubelet's).

use tephra_contract::TaskStatus;
use tephra_session::session::Session;
use tephra_session::statement::Statement;

/// Evicts running tasks whose job's enforced limit has passed since they started.
pub fn end_overruns(ssn: &mut Session) {
    let now = ssn.snap.now_ms;
    let mut stmt = Statement::new();
    for t in 0..ssn.tasks() as u32 {
        let j = ssn.task_job(t) as usize;
        let (limit, started) = (ssn.extra.job_limit_ms[j], ssn.snap.task_started_ms[t as usize]);
        if !ssn.extra.job_limit_enforced[j] || started <= 0 || ssn.task_status(t) != TaskStatus::Running {
            continue;
        }
        if now - started >= limit {
            let why = format!("time limit of {} exceeded", tephra_model::timelimit::display(limit));
            stmt.evict(ssn, t, &why);
        }
    }
    stmt.commit(ssn);
}
