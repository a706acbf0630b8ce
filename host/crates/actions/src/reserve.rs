//! elect and reserve: the host half of node reservation (seeds 000, 001).
//! Policies choose (target-job, reserved-nodes); these actions keep the
//! choice across cycles, release it when it is no longer needed and evict
//! where a reservation asks for it. Placement honours the locks everywhere
//! ([`Session::lock_blocks`]).

use super::victims::{candidate_nodes, tasks_on, victim_order};
use tephra_contract::{JobPhase, LockOwner, TaskStatus};
use tephra_dispatch::backend::Call;
use tephra_session::reservation::Backfill;
use tephra_session::session::{Session, NONE};
use tephra_session::statement::Statement;

/// Volcano's default relock period for queue reservations.
const RELOCK_MS: i64 = 5_000;

/// elect: keeps the big jobs to reserve nodes for. A target stays while
/// the policy still names it among its own candidacy; free slots (argument
/// `targets`, default 1) are filled by asking the policies among jobs that
/// wait with pending tasks.
pub fn elect(ssn: &mut Session) {
    for j in ssn.snap.reservation_targets.clone() {
        let keep = waiting(ssn, j) && ssn.ask().target_job(&[j]) == Some(j);
        if !keep {
            ssn.release_target(j);
        }
    }
    while ssn.snap.reservation_targets.len() < slots(ssn) {
        if elect_one(ssn, &[]).is_none() {
            break;
        }
    }
}

/// Free target slots: argument `targets` of `elect`, default 1; with
/// conservative backfill, every waiting job the policy elects (up to
/// [`CONSERVATIVE_MAX`]).
fn slots(ssn: &Session) -> usize {
    if backfill(ssn) == Backfill::Conservative {
        return CONSERVATIVE_MAX;
    }
    arg(ssn, "elect", "targets").and_then(|s| s.parse::<usize>().ok()).unwrap_or(1)
}

/// Jobs reserved for at once under conservative backfill: each costs the
/// policy a node search every cycle.
const CONSERVATIVE_MAX: usize = 64;

/// `reserve`'s argument `backfill` (the config check refuses other values).
fn backfill(ssn: &Session) -> Backfill {
    arg(ssn, "reserve", "backfill").and_then(Backfill::parse).unwrap_or_default()
}

/// Elects one more target among the waiting jobs, `except` these.
fn elect_one(ssn: &mut Session, except: &[u32]) -> Option<u32> {
    let candidates: Vec<u32> = (0..ssn.jobs() as u32)
        .filter(|&j| waiting(ssn, j) && !ssn.snap.reservation_targets.contains(&j) && !except.contains(&j))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let j = ssn.ask().target_job(&candidates)?;
    ssn.snap.reservation_targets.push(j);
    Some(j)
}

/// Refused targets a cycle replaces at most: each costs the policy a search.
const REELECT_MAX: usize = 8;

/// reserve: locks nodes for each target that is still not placed and, every
/// `relockPeriod` (default 5 s) or when a guarantee changes, for each queue
/// with a guarantee; then evicts where a reservation demands it.
pub fn reserve(ssn: &mut Session) {
    ssn.locks.backfill = backfill(ssn);
    let mut refused = Vec::new();
    for j in ssn.snap.reservation_targets.clone() {
        if !waiting(ssn, j) {
            ssn.release_target(j);
            continue;
        }
        if !lock_for_target(ssn, j) {
            refused.push(j);
        }
    }
    // A refused target leaves its slot to the next big job this very cycle:
    // a first choice that cannot be satisfied must not starve every other.
    while !refused.is_empty() && refused.len() <= REELECT_MAX && ssn.snap.reservation_targets.len() < slots(ssn) {
        let Some(j) = elect_one(ssn, &refused) else { break };
        if !lock_for_target(ssn, j) {
            refused.push(j);
        }
    }
    ssn.locks.starts = ssn.predicted_starts();
    evict_overdue(ssn);
    relock_queues(ssn);
    evict_for_guaranteed(ssn);
}

/// Locks nodes for target `j`; on a refusal the target is released with the
/// reason noted, and `false` returned.
fn lock_for_target(ssn: &mut Session, j: u32) -> bool {
    let candidates = job_candidates(ssn, j);
    match ssn.ask().reserved_nodes(LockOwner::Job(j), &candidates) {
        Some(Ok(nodes)) => {
            ssn.lock_for_job(j, &nodes);
            true
        }
        Some(Err(reason)) => {
            ssn.add_job_note(j, &format!("reservation refused: {reason}"));
            ssn.release_target(j);
            false
        }
        None => {
            ssn.release_target(j);
            false
        }
    }
}

/// Jobs that can be reservation targets: not admitted yet (a Volcano Job
/// has no pods before), or admitted, not ready, with a task still pending.
fn waiting(ssn: &Session, j: u32) -> bool {
    match ssn.snap.job_phase[j as usize] {
        JobPhase::Pending => true,
        JobPhase::Inqueue => {
            !ssn.job_is_ready(j)
                && ssn.extra.job_tasks[j as usize].iter().any(|&t| ssn.task_status(t) == TaskStatus::Pending)
        }
        _ => false,
    }
}

fn arg<'a>(ssn: &'a Session, action: &str, key: &str) -> Option<&'a str> {
    ssn.action_args.get(action).and_then(|a| a.get(key)).map(String::as_str)
}

/// Nodes a target may lock: its own, or free ones that its first pending
/// task (if it has pods yet) could ever use (no unresolvable predicate
/// failure).
fn job_candidates(ssn: &mut Session, j: u32) -> Vec<u32> {
    let first = ssn.extra.job_tasks[j as usize].iter().copied().find(|&t| ssn.task_status(t) == TaskStatus::Pending);
    let nodes = match first {
        Some(t) => candidate_nodes(ssn, t),
        None => (0..ssn.nodes() as u32).collect(),
    };
    nodes
        .into_iter()
        .filter(|&n| {
            let (lj, lq) = (ssn.snap.node_locked_job[n as usize], ssn.snap.node_locked_queue[n as usize]);
            !ssn.snap.node_unschedulable[n as usize] && (lj == j || (lj == NONE && lq == NONE))
        })
        .collect()
}

/// Running tasks of other jobs on the targets' nodes that the policies pick
/// (a reservation policy names those running past their estimate).
fn evict_overdue(ssn: &mut Session) {
    let candidates: Vec<u32> = (0..ssn.tasks() as u32)
        .filter(|&t| {
            let n = ssn.snap.task_node[t as usize];
            ssn.task_status(t) == TaskStatus::Running && n != NONE && {
                let lj = ssn.snap.node_locked_job[n as usize];
                lj != NONE && lj != ssn.task_job(t)
            }
        })
        .collect();
    if candidates.is_empty() {
        return;
    }
    let victims = ssn.ask().victim_tasks(&candidates);
    let mut stmt = Statement::new();
    for v in victims {
        let holder = ssn.snap.node_locked_job[ssn.snap.task_node[v as usize] as usize];
        let why = format!("reserve: overdue on a node reserved for job {}", ssn.names.jobs[holder as usize]);
        stmt.evict(ssn, v, &why);
    }
    stmt.commit(ssn);
}

/// Queues with a guarantee (resource or percentage) get their nodes chosen
/// again when due; queues without one lose their locks.
fn relock_queues(ssn: &mut Session) {
    let period = arg(ssn, "reserve", "relockPeriod").and_then(tephra_model::duration::duration_ms).unwrap_or(RELOCK_MS);
    let now = ssn.snap.now_ms;
    let mut queues: Vec<u32> = (0..ssn.queues() as u32).collect();
    // Higher priority first, then the older queue: who reserves first wins
    // a contested node and the cluster-wide cap.
    queues.sort_by_key(|&q| (-ssn.snap.queue_priority[q as usize], ssn.extra.queue_created[q as usize]));
    for q in queues {
        let spec = guarantee_spec(ssn, q);
        if spec.is_empty() {
            ssn.lock_for_queue(q, &[]);
            ssn.locks.queue_state[q as usize] = None;
            continue;
        }
        let due = match &mut ssn.locks.queue_state[q as usize] {
            Some((at, old, _)) => {
                // Adopted nodes were chosen for the guarantee as it is.
                if old == tephra_session::reservation::ADOPTED {
                    old.clone_from(&spec);
                }
                *old != spec || now - *at >= period || now < *at
            }
            None => true,
        };
        if !due {
            continue;
        }
        let candidates: Vec<u32> = (0..ssn.nodes() as u32)
            .filter(|&n| {
                let (lj, lq) = (ssn.snap.node_locked_job[n as usize], ssn.snap.node_locked_queue[n as usize]);
                !ssn.snap.node_unschedulable[n as usize] && lj == NONE && (lq == NONE || lq == q)
            })
            .collect();
        let refused = match ssn.ask().reserved_nodes(LockOwner::Queue(q), &candidates) {
            Some(Ok(nodes)) => {
                ssn.lock_for_queue(q, &nodes);
                None
            }
            Some(Err(reason)) => {
                ssn.lock_for_queue(q, &[]);
                Some(reason)
            }
            None => {
                ssn.lock_for_queue(q, &[]);
                Some("no reserved-nodes policy is configured".to_string())
            }
        };
        ssn.locks.queue_state[q as usize] = Some((now, spec, refused));
    }
}

/// The queue's guarantee as a fingerprint ("" when it has none).
fn guarantee_spec(ssn: &Session, q: u32) -> String {
    let mut out = String::new();
    let snap = &ssn.snap;
    for (kind, list) in [("r", &snap.queue_guarantee), ("p", &snap.queue_reserve_percentage)] {
        for x in list.iter().filter(|x| x.owner == q && x.value > 0.0) {
            out.push_str(&format!("{kind}{}={};", x.dim, x.value));
        }
    }
    if !out.is_empty() && snap.queue_guaranteed[q as usize] {
        out.push_str("guaranteed");
    }
    out
}

/// `Guaranteed` queues take their nodes back, for pending demand only and
/// by reclaim's rules: other queues' running tasks on the locked nodes are
/// the candidates (preemptable, in a reclaimable queue), the plugins' vote
/// on `reclaimable` for the queue's first pending task picks the victims
/// (gang minimums, priorities, critical pods), in victim order; the
/// Kubernetes driver evicts through the Eviction API (PodDisruptionBudgets).
fn evict_for_guaranteed(ssn: &mut Session) {
    let mut stmt = Statement::new();
    for lq in 0..ssn.queues() as u32 {
        if !ssn.snap.queue_guaranteed[lq as usize] {
            continue;
        }
        let locked: Vec<u32> =
            (0..ssn.nodes() as u32).filter(|&n| ssn.snap.node_locked_queue[n as usize] == lq).collect();
        if locked.is_empty() {
            continue;
        }
        // The demand: a pending task of the queue or of a queue under it.
        let claimant = (0..ssn.tasks() as u32).find(|&t| {
            ssn.task_status(t) == TaskStatus::Pending && ssn.queue_within(ssn.job_queue(ssn.task_job(t)), lq)
        });
        let Some(claimant) = claimant else { continue };
        let mut candidates = Vec::new();
        for &n in &locked {
            for v in tasks_on(ssn, n, &[TaskStatus::Running, TaskStatus::Bound]) {
                let vq = ssn.job_queue(ssn.task_job(v));
                if !ssn.queue_within(vq, lq)
                    && ssn.snap.task_preemptable[v as usize]
                    && ssn.snap.queue_reclaimable[vq as usize]
                {
                    candidates.push(v);
                }
            }
        }
        if candidates.is_empty() {
            continue;
        }
        let ordered = victim_order(ssn, claimant, &candidates);
        let call = Call::Reclaimable(claimant, &ordered);
        let Some((victims, voters)) = ssn.ask().victims(call, &ordered) else { continue };
        let why = format!(
            "reserve: node reserved for queue {} (Guaranteed; victims voted by {})",
            ssn.names.queues[lq as usize],
            voters.join(", ")
        );
        for v in victims {
            stmt.evict(ssn, v, &why);
        }
    }
    stmt.commit(ssn);
}
