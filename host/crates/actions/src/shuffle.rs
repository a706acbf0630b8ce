//! shuffle: evicts the running tasks that victim-task plugins select
//! (descheduling-style policies, reference §7.6).

use tephra_contract::TaskStatus;
use tephra_session::session::Session;
use tephra_session::statement::Statement;

/// Runs the action over the session.
pub fn execute(ssn: &mut Session) {
    let running: Vec<u32> = (0..ssn.tasks() as u32).filter(|&t| ssn.task_status(t) == TaskStatus::Running).collect();
    if running.is_empty() {
        return;
    }
    let victims = ssn.ask().victim_tasks(&running);
    let mut stmt = Statement::new();
    for v in victims {
        stmt.evict(ssn, v, "shuffle: selected by a victim-tasks policy");
    }
    stmt.commit(ssn);
}
