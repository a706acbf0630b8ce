//! allocate: places pending tasks job by job, queue by queue; a job's
//! statement commits only once the job is ready (gang), stays applied but
//! uncommitted when merely pipelined, and is discarded otherwise (§7.2).

use super::classes::Classes;
use super::{fallback_rank, gate_reason, job_pipelined, job_ready, job_valid, pop_first, Keyed, Kind};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use tephra_contract::{ExtensionPoint as P, JobPhase, TaskStatus};
use tephra_dispatch::backend::Call;
use tephra_session::session::{Session, NONE};
use tephra_session::statement::Statement;

/// Runs the action over the session.
pub fn execute(ssn: &mut Session) {
    let enqueue_on = ssn.actions.iter().any(|a| a == "enqueue");
    let cache_errors =
        ssn.action_args.get("allocate").and_then(|a| a.get("predicateErrorCacheEnable")).is_none_or(|v| v != "false");
    let mut queues = Vec::new();
    let mut listed: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut worksheet: BTreeMap<u32, VecDeque<u32>> = BTreeMap::new();
    for j in 0..ssn.jobs() as u32 {
        if ssn.job_is_pending(j) {
            if enqueue_on {
                ssn.note_job(j, "waiting to be admitted by enqueue".into());
                continue;
            }
            ssn.snap.job_phase[j as usize] = JobPhase::Inqueue;
        }
        if !job_valid(ssn, j) {
            continue;
        }
        let tasks = super::pending_sorted(ssn, j);
        if tasks.is_empty() {
            continue;
        }
        worksheet.insert(j, tasks.into());
        let q = ssn.job_queue(j);
        if !queues.contains(&q) {
            queues.push(q);
        }
        listed.entry(q).or_default().push(j);
    }
    let mut jobs_by_queue: BTreeMap<u32, Keyed> = BTreeMap::new();
    let rank = fallback_rank(ssn, Kind::Job);
    for (q, jobs) in listed {
        jobs_by_queue.entry(q).or_insert_with(|| Keyed::new(rank.clone())).push(ssn, Kind::Job, &jobs);
    }

    let mut failed_roles: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut classes = Classes::new(ssn);
    while let Some(q) = pop_first(ssn, Kind::Queue, &mut queues) {
        if ssn.ask().any_true(Call::Overused(q)) {
            let mut left = jobs_by_queue.remove(&q).unwrap_or_default();
            let why = gate_reason(ssn, P::Overused, format!("queue {} is overused", ssn.names.queues[q as usize]));
            while let Some(j) = left.pop() {
                ssn.note_job(j, why.clone());
            }
            continue;
        }
        let mut list = jobs_by_queue.remove(&q).unwrap_or_default();
        let Some(job) = list.pop() else { continue };
        jobs_by_queue.insert(q, list);
        let mut tasks = worksheet.remove(&job).unwrap_or_default();
        let roles = failed_roles.entry(job).or_default();
        let mut roles = std::mem::take(roles);
        let (stmt, domains) = if super::topology::wants_domain(ssn, job) {
            match super::topology::allocate(ssn, job, &mut tasks) {
                Some(p) => (Some((p.stmt, p.ready)), p.domains),
                None => (None, Vec::new()),
            }
        } else {
            (allocate_tasks(ssn, job, &mut tasks, &mut roles, cache_errors, &mut classes), Vec::new())
        };
        failed_roles.insert(job, roles);
        if let Some((stmt, ready)) = stmt {
            if ready {
                stmt.commit(ssn);
                ssn.domains.extend(domains.into_iter().map(|(g, h)| (job, g, h)));
                if !tasks.is_empty() {
                    worksheet.insert(job, tasks);
                    jobs_by_queue.entry(q).or_insert_with(|| Keyed::new(rank.clone())).push(ssn, Kind::Job, &[job]);
                }
            }
            // Pipelined only: the statement stays applied, uncommitted, for the
            // rest of the cycle (Volcano's behaviour), and the job is done.
        }
        queues.push(q);
    }
}

fn allocate_tasks(
    ssn: &mut Session,
    job: u32,
    tasks: &mut VecDeque<u32>,
    failed_roles: &mut BTreeSet<u32>,
    cache_errors: bool,
    classes: &mut Classes,
) -> Option<(Statement, bool)> {
    let queue = ssn.job_queue(job);
    let mut stmt = Statement::new();
    // JobReady's last answer: plugins change their minds only on events, and
    // only a placement here makes one, so the answer after the last placement
    // stands (a Wasm call saved per job, twice over).
    let mut ready = None;
    classes.begin(ssn, job);
    while let Some(t) = tasks.pop_front() {
        if !super::queue_admits(ssn, queue, t) {
            continue;
        }
        let role = ssn.snap.task_role[t as usize];
        if cache_errors && role != 0 && failed_roles.contains(&role) {
            continue;
        }
        let Some(node) = nominated(ssn, t).or_else(|| classes.choose(ssn, t)) else {
            if role != 0 {
                failed_roles.insert(role);
            }
            if need_continue(ssn, job, failed_roles) {
                continue;
            }
            break;
        };
        if ssn.short(ssn.req(t), node, false).is_none() {
            stmt.allocate(ssn, t, node);
        } else {
            stmt.pipeline(ssn, t, node, false);
        }
        let now = job_ready(ssn, job);
        ready = Some(now);
        if now {
            break;
        }
    }
    let ready = ready.unwrap_or_else(|| job_ready(ssn, job));
    if ready || job_pipelined(ssn, job) {
        Some((stmt, ready))
    } else {
        stmt.discard(ssn);
        None
    }
}

/// The nominated node (set by preemption) when the task fits its FutureIdle
/// and its predicates.
fn nominated(ssn: &mut Session, t: u32) -> Option<u32> {
    let n = ssn.extra.task_nominated[t as usize];
    if n == NONE || ssn.lock_blocks(t, n) || ssn.short(ssn.req(t), n, true).is_some() {
        return None;
    }
    ssn.ask().predicate(t, &[n])[0].is_none().then_some(n)
}

/// Volcano's `NeedContinueAllocating`: whether a job that hit an unplaceable
/// task can still become ready with its other tasks.
fn need_continue(ssn: &Session, job: u32, failed_roles: &BTreeSet<u32>) -> bool {
    let tasks = &ssn.extra.job_tasks[job as usize];
    let min = ssn.job_min(job);
    if min as usize == tasks.len() {
        return false;
    }
    let roles = &ssn.extra.job_roles[job as usize];
    let role_sum: u32 = roles.values().sum();
    let count = |role: u32, pred: &dyn Fn(TaskStatus) -> bool| {
        tasks.iter().filter(|&&t| ssn.snap.task_role[t as usize] == role && pred(ssn.task_status(t))).count() as u32
    };
    if min < role_sum {
        let ready = ssn.job_ready[job as usize];
        let pending: u32 =
            roles.keys().filter(|r| !failed_roles.contains(r)).map(|&r| count(r, &|s| s == TaskStatus::Pending)).sum();
        return ready + pending >= min;
    }
    !failed_roles.iter().any(|r| {
        let want = roles.get(r).copied().unwrap_or(0);
        count(*r, &|s| tephra_session::session::is_allocated(s) || s == TaskStatus::Pipelined) < want
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use tephra_contract::{Event, EventKind, ExtensionPoint as P, PluginInfo, Snapshot};
    use tephra_dispatch::backend::{Answer, Backend, Call};
    use tephra_dispatch::policy::{Policies, Slot};
    use tephra_readers::config::PluginConf;
    use tephra_session::session::{Decision, Names, Session};

    /// Gang's JobReady in miniature: ready once `min` placements are seen;
    /// counts the questions.
    struct Gang {
        info: PluginInfo,
        min: i64,
        placed: i64,
        asked: Arc<Mutex<u32>>,
    }

    impl Backend for Gang {
        fn info(&self) -> &PluginInfo {
            &self.info
        }
        fn origin(&self) -> &str {
            "test"
        }
        fn open_session(&mut self, _: &Snapshot, _: &Arc<Names>, _: &[(String, String)]) -> Result<(), String> {
            self.placed = 0;
            Ok(())
        }
        fn close_session(&mut self) -> Result<(), String> {
            Ok(())
        }
        fn on_events(&mut self, events: &[Event]) -> Result<(), String> {
            for e in events {
                self.placed += if e.kind == EventKind::Allocate { 1 } else { -1 };
            }
            Ok(())
        }
        fn call(&mut self, call: Call<'_>) -> Result<Answer, String> {
            let Call::JobReady(_) = call else { return Err(format!("not asked for {call:?}")) };
            *self.asked.lock().unwrap() += 1;
            Ok(Answer::Bool(self.placed >= self.min))
        }
    }

    /// Placed tasks and JobReady questions for one job of `pods` tasks
    /// needing `min`, on two nodes with room for two tasks each.
    fn allocate(pods: usize, min: u32) -> (usize, u32) {
        let c = tephra_readers::synthetic::small(2, 2000.0, pods, 1000.0, min);
        let asked = Arc::default();
        let info = PluginInfo {
            name: "gang".into(),
            version: "t".into(),
            contract: tephra_contract::CONTRACT.into(),
            points: vec![P::JobReady, P::Events],
        };
        let gang = Gang { info, min: min.into(), placed: 0, asked: Arc::clone(&asked) };
        let policies = Policies::new(vec![vec![Slot::new(PluginConf::new("gang"), Box::new(gang))]], true);
        let mut ssn = Session::open(&c, policies, &Default::default(), 0, 1);
        ssn.actions = vec!["allocate".into()];
        super::execute(&mut ssn);
        let (out, _) = ssn.close();
        let binds = out.decisions.iter().filter(|d| matches!(d, Decision::Bind { .. })).count();
        let asked = *asked.lock().unwrap();
        (binds, asked)
    }

    /// No event, no new answer: JobReady is asked once after each placement,
    /// not again before the statement commits or is discarded.
    #[test]
    fn job_ready_is_asked_once_per_placement() {
        assert_eq!(allocate(3, 3), (3, 3));
        // Ready after two of three: the third waits for the next turn of the job.
        assert_eq!(allocate(3, 2), (3, 3));
        // Five tasks needing five, room for four: never ready, nothing bound.
        assert_eq!(allocate(5, 5), (0, 4));
    }
}
