//! gangpreempt and gangreclaim (Volcano v1.15): a starving job makes room
//! for all its pending tasks at once, in one domain — a HyperNode its
//! network topology allows (at most `maxDomains` of them, highest tier
//! first), or the whole cluster — by evicting other jobs in bundles: first
//! each job's surplus over its gang minimum (safe: the job keeps running),
//! then, with `allowWholeBundle`, whole gangs. It evicts only when the job
//! then fits, and is pipelined there (nominated), as Volcano's
//! `BuildNominationPlanInDomain`. gangpreempt takes from lower-priority jobs
//! of the same queue, gangreclaim from reclaimable queues of others.

use super::topology;
use super::{job_pipelined, pop_first, sort, Kind};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use tephra_contract::{EvictionKind, TaskStatus};
use tephra_dispatch::backend::Call;
use tephra_model::resource;
use tephra_session::session::{is_allocated, Session, NONE};
use tephra_session::statement::Statement;

/// gangpreempt.
pub fn preempt(ssn: &mut Session) {
    execute(ssn, EvictionKind::GangPreempt);
}

/// gangreclaim.
pub fn reclaim(ssn: &mut Session) {
    execute(ssn, EvictionKind::GangReclaim);
}

fn name(kind: EvictionKind) -> &'static str {
    match kind {
        EvictionKind::GangPreempt => "gangpreempt",
        EvictionKind::GangReclaim => "gangreclaim",
    }
}

struct Args {
    max_domains: usize,
    allow_whole: bool,
    /// Per job, whether its PodGroup opts out of being a victim.
    opted_out: Vec<bool>,
}

impl Args {
    /// The action's arguments: `maxDomains` (default 8; 0 or less is 8)
    /// and `allowWholeBundle` (default true).
    fn of(ssn: &Session, kind: EvictionKind) -> Args {
        let args = ssn.action_args.get(name(kind));
        let get = |k: &str| args.and_then(|a| a.get(k));
        let max_domains = get("maxDomains").and_then(|v| v.parse::<i64>().ok()).filter(|&n| n > 0).unwrap_or(8);
        Args {
            max_domains: max_domains as usize,
            allow_whole: get("allowWholeBundle").is_none_or(|v| v != "false"),
            opted_out: opted_out(ssn),
        }
    }
}

fn execute(ssn: &mut Session, kind: EvictionKind) {
    let args = Args::of(ssn, kind);
    let (mut queues, mut starving) = super::preemptors_by_queue(ssn, super::starving);
    while let Some(q) = pop_first(ssn, Kind::Queue, &mut queues) {
        if kind == EvictionKind::GangReclaim && ssn.ask().any_true(Call::Overused(q)) {
            continue;
        }
        let mut jobs = starving.remove(&q).unwrap_or_default();
        while let Some(job) = pop_first(ssn, Kind::Job, &mut jobs) {
            let mut stmt = Statement::new();
            let domain = evict_for(ssn, &mut stmt, kind, &args, job);
            if !stmt.is_empty() && job_pipelined(ssn, job) {
                stmt.commit(ssn);
                ssn.domains.extend(domain.map(|h| (job, NONE, h)));
            } else {
                stmt.discard(ssn);
            }
        }
    }
}

/// Tries the job's candidate domains in order; in the first where evicting
/// bundles lets all its pending tasks fit, applies the evictions and
/// pipelines the tasks into `stmt`; that domain.
fn evict_for(ssn: &mut Session, stmt: &mut Statement, kind: EvictionKind, args: &Args, job: u32) -> Option<u32> {
    let pending = super::pending_sorted(ssn, job);
    if pending.is_empty() {
        return None;
    }
    let queue = ssn.job_queue(job);
    if kind == EvictionKind::GangReclaim && !ssn.ask().all_true(Call::Preemptive(queue, pending[0])) {
        return None;
    }
    let mut need = vec![0.0; ssn.d];
    for &t in &pending {
        resource::add_scaled(&mut need, ssn.req(t), 1.0);
    }
    let tree = std::sync::Arc::clone(&ssn.extra.topology);
    for domain in topology::eviction_domains(ssn, job, args.max_domains) {
        let nodes = &tree.nodes[domain as usize];
        if nodes.is_empty() {
            continue;
        }
        let bundles = bundles(ssn, kind, args, job, domain, nodes, &need);
        let mut room = vec![0.0; ssn.d];
        for &n in nodes {
            resource::add_scaled(&mut room, &ssn.idle(n), 1.0);
            resource::add_scaled(
                &mut room,
                &ssn.snap.node_releasing[n as usize * ssn.d..(n as usize + 1) * ssn.d],
                1.0,
            );
        }
        let mut victims: Vec<u32> = Vec::new();
        for b in bundles {
            for &v in &b.tasks {
                resource::add_scaled(&mut room, ssn.req(v), 1.0);
            }
            victims.extend(b.tasks);
            if !resource::less_equal(&need, &room) {
                continue;
            }
            let reason = format!(
                "{}: for job {} in HyperNode {}",
                name(kind),
                ssn.names.jobs[job as usize],
                tree.names[domain as usize]
            );
            let mut plan = Statement::new();
            for &v in &victims {
                plan.evict(ssn, v, &reason);
            }
            let mut tasks = pending.iter().copied().collect();
            match topology::place_in(ssn, job, &mut tasks, domain) {
                Some(placed) => {
                    plan.merge(placed.stmt);
                    stmt.merge(plan);
                    return Some(domain);
                }
                None => plan.discard(ssn),
            }
        }
    }
    None
}

/// Victims of one job in a domain, evicted together.
struct Bundle {
    /// Safe: the job keeps its gang minimum; otherwise the whole gang goes.
    safe: bool,
    job: u32,
    tasks: Vec<u32>,
    /// Volcano's ROI: how much of the need it covers per resource it takes
    /// from the cluster (a safe bundle's whole job stays: infinite).
    roi: f64,
}

/// The bundles of the candidates on `nodes` in the order they are taken,
/// limited to the tasks the plugins let `job` evict.
fn bundles(
    ssn: &mut Session,
    kind: EvictionKind,
    args: &Args,
    job: u32,
    domain: u32,
    nodes: &[u32],
    need: &[f64],
) -> Vec<Bundle> {
    let queue = ssn.job_queue(job);
    let mut on_domain = vec![false; ssn.nodes()];
    nodes.iter().for_each(|&n| on_domain[n as usize] = true);
    let mut by_job: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for t in 0..ssn.tasks() as u32 {
        let node = ssn.snap.task_node[t as usize];
        let vj = ssn.task_job(t);
        let status = ssn.task_status(t);
        let running = match kind {
            EvictionKind::GangPreempt => matches!(status, TaskStatus::Running | TaskStatus::Bound),
            EvictionKind::GangReclaim => status == TaskStatus::Running,
        };
        if node == NONE || !on_domain[node as usize] || !running || vj == job || !ssn.snap.task_preemptable[t as usize]
        {
            continue;
        }
        let vq = ssn.job_queue(vj);
        let allowed = match kind {
            EvictionKind::GangPreempt => {
                vq == queue && ssn.snap.job_priority[vj as usize] < ssn.snap.job_priority[job as usize]
            }
            EvictionKind::GangReclaim => vq != queue && ssn.snap.queue_reclaimable[vq as usize],
        };
        if allowed && !args.opted_out[vj as usize] {
            by_job.entry(vj).or_default().push(t);
        }
    }
    let mut out = Vec::new();
    for (vj, local) in by_job {
        out.extend(job_bundles(ssn, vj, local, need));
    }
    order(ssn, kind, queue, &mut out);
    let candidates: Vec<u32> = out.iter().flat_map(|b| b.tasks.iter().copied()).collect();
    let call = Call::Evictable(kind, job, domain, &candidates);
    let Some((allowed, _)) = ssn.ask().victims(call, &candidates) else { return Vec::new() };
    let allowed: std::collections::HashSet<u32> = allowed.into_iter().collect();
    out.retain_mut(|b| {
        if b.safe {
            b.tasks.retain(|t| allowed.contains(t));
            !b.tasks.is_empty()
        } else {
            args.allow_whole && b.tasks.iter().all(|t| allowed.contains(t))
        }
    });
    out
}

/// Per job, whether its PodGroup opts out of being a victim
/// (`volcano.sh/preemptable: "false"`).
fn opted_out(ssn: &Session) -> Vec<bool> {
    let mut out = vec![false; ssn.jobs()];
    let Some(key) = ssn.snap.strings.iter().position(|s| s == "volcano.sh/preemptable") else { return out };
    for l in ssn.snap.job_annotations.iter().filter(|l| l.key == key as u32) {
        if ssn.snap.strings[l.value as usize] == "false" {
            out[l.owner as usize] = true;
        }
    }
    out
}

/// Volcano's `CreateJobBundles`: the tasks of `job` on the domain
/// (`local`), lowest priority first, split into those the job can lose and
/// stay a gang (its surplus over minAvailable, each role's minTaskMember
/// and each subgroup policy's minSubGroups kept) and the rest.
fn job_bundles(ssn: &Session, job: u32, mut local: Vec<u32>, need: &[f64]) -> Vec<Bundle> {
    local.sort_by(|&a, &b| {
        ssn.snap.task_priority[a as usize]
            .cmp(&ssn.snap.task_priority[b as usize])
            .then_with(|| ssn.names.tasks[a as usize].cmp(&ssn.names.tasks[b as usize]))
    });
    let held = |t: u32| {
        let s = ssn.task_status(t);
        is_allocated(s) || s == TaskStatus::Succeeded
    };
    let tasks = &ssn.extra.job_tasks[job as usize];
    let mut surplus = ssn.job_ready[job as usize] as i64 - ssn.job_min(job) as i64;
    if surplus < 0 {
        let local_req = sum(ssn, &local);
        let roi = roi(&local_req, &[], need);
        return vec![Bundle { safe: true, job, tasks: local, roi }];
    }
    let roles = &ssn.extra.job_roles[job as usize];
    let enforce_roles = ssn.job_min(job) >= roles.values().sum::<u32>();
    let mut role_surplus: BTreeMap<u32, i64> = roles
        .iter()
        .map(|(&r, &min)| {
            let n = tasks.iter().filter(|&&t| ssn.snap.task_role[t as usize] == r && held(t)).count() as i64;
            (r, n - min as i64)
        })
        .collect();
    let mins: Vec<_> = ssn.snap.job_min_subgroups.iter().filter(|m| m.job == job).collect();
    let groups = ssn.extra.job_subgroups[job as usize].clone();
    let ready = |g: u32| {
        let n = ssn.extra.subgroup_tasks[g as usize].iter().filter(|&&t| held(t)).count();
        n >= ssn.snap.subgroups[g as usize].min_available as usize
    };
    let mut broken: BTreeMap<u32, bool> = groups.iter().map(|&g| (g, !ready(g))).collect();
    let mut group_surplus: BTreeMap<u32, i64> = mins
        .iter()
        .map(|m| {
            let n = groups.iter().filter(|&&g| ssn.snap.subgroups[g as usize].policy == m.role && ready(g)).count();
            (m.role, n as i64 - m.count as i64)
        })
        .collect();
    let (mut safe, mut whole) = (Vec::new(), Vec::new());
    for t in local {
        let role = ssn.snap.task_role[t as usize];
        let role_safe = !enforce_roles || role_surplus.get(&role).is_none_or(|&s| s > 0);
        let g = ssn.snap.task_subgroup[t as usize];
        let policy = (g != NONE).then(|| ssn.snap.subgroups[g as usize].policy);
        let group_safe = mins.is_empty()
            || (g != NONE && (broken[&g] || policy.and_then(|p| group_surplus.get(&p)).is_some_and(|&s| s > 0)));
        if surplus > 0 && role_safe && group_safe {
            safe.push(t);
            surplus -= 1;
            if let Some(s) = role_surplus.get_mut(&role) {
                *s -= 1;
            }
            if !mins.is_empty() && g != NONE && !broken[&g] {
                broken.insert(g, true);
                if let Some(s) = policy.and_then(|p| group_surplus.get_mut(&p)) {
                    *s -= 1;
                }
            }
        } else {
            whole.push(t);
        }
    }
    let mut out = Vec::new();
    if !safe.is_empty() {
        let roi = roi(&sum(ssn, &safe), &[], need);
        out.push(Bundle { safe: true, job, tasks: safe, roi });
    }
    if !whole.is_empty() {
        let roi = roi(&sum(ssn, &whole), &sum(ssn, tasks), need);
        out.push(Bundle { safe: false, job, tasks: whole, roi });
    }
    out
}

fn sum(ssn: &Session, tasks: &[u32]) -> Vec<f64> {
    let mut row = vec![0.0; ssn.d];
    for &t in tasks {
        resource::add_scaled(&mut row, ssn.req(t), 1.0);
    }
    row
}

/// Over the resources the job needs: Σ min(local, need) / need divided by
/// Σ global / need (`global` empty or zero: infinite).
fn roi(local: &[f64], global: &[f64], need: &[f64]) -> f64 {
    let (mut l, mut g) = (0.0, 0.0);
    for (d, &n) in need.iter().enumerate() {
        if n <= 0.0 {
            continue;
        }
        l += local[d].min(n) / n;
        g += global.get(d).copied().unwrap_or(0.0) / n;
    }
    if g == 0.0 {
        f64::INFINITY
    } else {
        l / g
    }
}

/// Safe bundles first; then the victim job the job order would schedule
/// last (gangpreempt) or the victim queue order (gangreclaim); then the
/// better return; then by job and first task name, fewer tasks first.
fn order(ssn: &mut Session, kind: EvictionKind, queue: u32, bundles: &mut [Bundle]) {
    let mut jobs: Vec<u32> = bundles.iter().map(|b| b.job).collect();
    jobs.sort_unstable();
    jobs.dedup();
    let mut rank: BTreeMap<u32, usize> = BTreeMap::new();
    match kind {
        EvictionKind::GangPreempt => {
            let mut order = jobs.clone();
            sort(ssn, Kind::Job, &mut order);
            // The job scheduled last is victimised first.
            for (i, j) in order.iter().rev().enumerate() {
                rank.insert(*j, i);
            }
        }
        EvictionKind::GangReclaim => {
            let mut queues: Vec<u32> = jobs.iter().map(|&j| ssn.job_queue(j)).collect();
            queues.sort_unstable();
            queues.dedup();
            let keys = ssn.ask().order_keys(Call::VictimQueueOrder(&queues, queue), queues.len());
            let mut idx: Vec<usize> = (0..queues.len()).collect();
            idx.sort_by(|&a, &b| {
                keys.iter()
                    .map(|r| r[a].partial_cmp(&r[b]).unwrap_or(Ordering::Equal))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            });
            for &j in &jobs {
                let q = ssn.job_queue(j);
                let pos = idx.iter().position(|&i| queues[i] == q).unwrap_or(0);
                rank.insert(j, pos);
            }
        }
    }
    let names = &ssn.names;
    bundles.sort_by(|a, b| {
        b.safe
            .cmp(&a.safe)
            .then(rank[&a.job].cmp(&rank[&b.job]))
            .then(b.roi.total_cmp(&a.roi))
            .then_with(|| names.jobs[a.job as usize].cmp(&names.jobs[b.job as usize]))
            .then_with(|| names.tasks[a.tasks[0] as usize].cmp(&names.tasks[b.tasks[0] as usize]))
            .then(a.tasks.len().cmp(&b.tasks.len()))
    });
}
