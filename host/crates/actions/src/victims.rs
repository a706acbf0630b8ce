//! Shared steps of the eviction actions: which nodes a preemptor may evict
//! on, and the order victims are evicted in (Volcano's
//! `BuildVictimsPriorityQueue`, reference §7.7).

use super::{fallback, Kind};
use std::cmp::Ordering;
use tephra_contract::TaskStatus;
use tephra_dispatch::backend::Call;
use tephra_model::resource;
use tephra_session::session::{Session, NONE};
use tephra_session::statement::Statement;

/// Nodes a preemptor may evict on: all nodes not reserved for others, except
/// those where a plugin predicate fails in a way evictions cannot fix
/// (UnschedulableAndUnresolvable).
pub fn candidate_nodes(ssn: &mut Session, task: u32) -> Vec<u32> {
    let all: Vec<u32> = (0..ssn.nodes() as u32).filter(|&n| !ssn.lock_blocks(task, n)).collect();
    let verdicts = ssn.ask().predicate(task, &all);
    all.into_iter().zip(verdicts).filter(|(_, v)| v.as_ref().is_none_or(|r| !r.unresolvable)).map(|(n, _)| n).collect()
}

/// Candidate nodes, highest summed node-order score first (ties by node order).
pub fn nodes_by_score(ssn: &mut Session, task: u32) -> Vec<u32> {
    let nodes = candidate_nodes(ssn, task);
    let scores = ssn.ask().node_scores(task, &nodes);
    let mut idx: Vec<usize> = (0..nodes.len()).collect();
    idx.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or(Ordering::Equal));
    idx.into_iter().map(|i| nodes[i]).collect()
}

/// Tasks on `node` in one of `statuses`.
pub fn tasks_on(ssn: &Session, node: u32, statuses: &[TaskStatus]) -> Vec<u32> {
    (0..ssn.tasks() as u32)
        .filter(|&t| ssn.snap.task_node[t as usize] == node && statuses.contains(&ssn.task_status(t)))
        .collect()
}

/// Whether `req` fits `FutureIdle` of `node` once `victims` are gone.
pub fn fits_with(ssn: &Session, req: &[f64], node: u32, victims: &[u32]) -> bool {
    let mut room = ssn.future_idle(node);
    for &v in victims {
        resource::add_scaled(&mut room, ssn.req(v), 1.0);
    }
    resource::less_equal(req, &room)
}

/// Evicts `victims` from `node`, next victim first, until `fits` says `p`
/// fits there; then pipelines `p` on the node (nominated if anything was
/// evicted) and merges the evictions into `stmt`. Skips the node when even
/// all victims would not make room, and undoes the evictions when `p` still
/// does not fit.
pub fn evict_until_fits(
    ssn: &mut Session,
    stmt: &mut Statement,
    p: u32,
    node: u32,
    mut victims: Vec<u32>,
    reason: &str,
    fits: &dyn Fn(&mut Session) -> bool,
) -> bool {
    let req = ssn.req(p).to_vec();
    if !fits_with(ssn, &req, node, &victims) {
        return false;
    }
    let mut node_stmt = Statement::new();
    let mut evicted = false;
    while !fits(ssn) {
        let Some(v) = next_victim(ssn, p, &victims) else { break };
        victims.retain(|&x| x != v);
        node_stmt.evict(ssn, v, reason);
        evicted = true;
    }
    if fits(ssn) {
        node_stmt.pipeline(ssn, p, node, evicted);
        stmt.merge(node_stmt);
        return true;
    }
    node_stmt.discard(ssn);
    false
}

fn rows_cmp(rows: &[Vec<f64>], a: usize, b: usize) -> Ordering {
    rows.iter()
        .map(|r| r[a].partial_cmp(&r[b]).unwrap_or(Ordering::Equal))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// The victim to evict next for `preemptor` (keys asked afresh: shares move
/// as victims go).
pub fn next_victim(ssn: &mut Session, preemptor: u32, victims: &[u32]) -> Option<u32> {
    victim_order(ssn, preemptor, victims).first().copied()
}

/// `victims` in eviction order (Volcano's `BuildVictimsPriorityQueue`, §7.7).
/// Candidates are handed to plugins in this order too: quota plugins walk
/// them first to last.
pub fn victim_order(ssn: &mut Session, preemptor: u32, victims: &[u32]) -> Vec<u32> {
    if victims.len() < 2 {
        return victims.to_vec();
    }
    let pq = if preemptor == NONE { NONE } else { ssn.job_queue(ssn.task_job(preemptor)) };
    let task_rows = ssn.ask().order_keys(Call::TaskOrder(victims), victims.len());
    let mut jobs: Vec<u32> = victims.iter().map(|&v| ssn.task_job(v)).collect();
    jobs.sort_unstable();
    jobs.dedup();
    let job_rows = ssn.ask().order_keys(Call::JobOrder(&jobs), jobs.len());
    let mut queues: Vec<u32> = jobs.iter().map(|&j| ssn.job_queue(j)).collect();
    queues.sort_unstable();
    queues.dedup();
    let vq_rows = ssn.ask().order_keys(Call::VictimQueueOrder(&queues, pq), queues.len());
    let q_rows = ssn.ask().order_keys(Call::QueueOrder(&queues), queues.len());
    let ji = |j: u32| jobs.binary_search(&j).unwrap();
    let qi = |q: u32| queues.binary_search(&q).unwrap();
    // Reverse task order: the task that would be scheduled last goes first.
    let reverse_task =
        |a: usize, b: usize| rows_cmp(&task_rows, b, a).then_with(|| fallback(ssn, Kind::Task, victims[b], victims[a]));
    let before = |a: usize, b: usize| -> Ordering {
        let (ja, jb) = (ssn.task_job(victims[a]), ssn.task_job(victims[b]));
        if ja == jb {
            return reverse_task(a, b);
        }
        let (qa, qb) = (ssn.job_queue(ja), ssn.job_queue(jb));
        if qa == qb {
            // The job that would be scheduled later is victimised first; no
            // creation-time fallback here (as in Volcano).
            return rows_cmp(&job_rows, ji(jb), ji(ja)).then_with(|| reverse_task(a, b));
        }
        rows_cmp(&vq_rows, qi(qa), qi(qb))
            .then_with(|| rows_cmp(&q_rows, qi(qb), qi(qa)))
            .then_with(|| fallback(ssn, Kind::Queue, qb, qa))
    };
    let mut idx: Vec<usize> = (0..victims.len()).collect();
    idx.sort_by(|&a, &b| before(a, b));
    idx.into_iter().map(|i| victims[i]).collect()
}
