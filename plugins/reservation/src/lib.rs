//! reservation: locks nodes so that what is promised can actually start.
//!
//! - **Queues** (seed 000): a queue with `spec.guarantee.resource` or
//!   `spec.guarantee.percentage` gets nodes locked for it (the host's
//!   `reserve` action asks every `relockPeriod`). The request must fit the
//!   cluster and the queue's capability; the set covers it as tightly as the
//!   seed's score wants ([`select`]); every queue together may lock at most
//!   `maxReservedFraction` (default 0.5) of the cluster in any dimension.
//!   Nodes of node groups the queue may not use, and nodes with a NoSchedule
//!   or NoExecute taint, are never chosen.
//! - **Big jobs** (seed 001): `target-job` elects, among waiting jobs that
//!   pass the thresholds (`bigJobMinRequest`, `bigJobMinWaiting`; none set:
//!   every job), the highest priority, then the one above the size line
//!   most (its request over `bigJobMinRequest`, largest ratio), then the
//!   longest waiting. Its nodes
//!   are the fewest, in order of when they free up (nodes by the time their
//!   last running task ends, from `tephra.io/estimated-running-duration`;
//!   unknown ends last; then the most idle first), whose total covers what
//!   the job still needs; a node too small for its largest task is never
//!   chosen. Big jobs together may lock at most `maxJobLockedFraction` of
//!   the cluster in any dimension (default 1, no cap, as in Volcano; set it
//!   so that one huge job cannot lock most of the cluster). A job needing
//!   more than its queue's (or an ancestor's) capability is refused: no
//!   quota will ever admit it. The plugin gives targets no pass at
//!   admission (the host's enqueue votes on them first and holds their
//!   queue while they are refused). With
//!   `evictOverdue: true`, tasks running past their estimate on its nodes
//!   are evicted. `lockStrategy: one-per-cycle` reproduces Volcano
//!   v1.1 instead (one more node, the most idle, per cycle).

mod score;
pub mod select;
mod shapes;

use select::{Candidate, Request};
use tephra_sdk::bindings::tephra::scheduler::host::Kind;
use tephra_sdk::{log, Args, ExtensionPoint as P, LockOwner, Policy, Session, TaskStatus, NONE};

const GROUP_LABEL: &str = "volcano.sh/nodegroup-name";

#[derive(Default)]
pub struct Reservation {
    min_request: Vec<(usize, f64)>,
    min_waiting_ms: Option<f64>,
    evict_overdue: bool,
    one_per_cycle: bool,
    cap: f64,
    /// `maxJobLockedFraction`: what big-job locks may hold together.
    job_cap: f64,
    exact_limit: usize,
    budget: usize,
    /// Nodes held by queues and by big jobs, updated with this session's
    /// answers (the snapshot does not change within a session).
    queue_locks: Vec<u32>,
    job_locks: Vec<u32>,
}

impl Policy for Reservation {
    const NAME: &'static str = "reservation";
    const POINTS: &'static [P] = &[P::TargetJob, P::ReservedNodes, P::VictimTasks, P::Events];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        self.min_request = match args.get("bigJobMinRequest") {
            None => Vec::new(),
            Some(v) => parse_request(s, v).map_err(|e| format!("argument bigJobMinRequest: {e}"))?,
        };
        self.min_waiting_ms = args.duration("bigJobMinWaiting")?;
        self.evict_overdue = args.bool("evictOverdue", false)?;
        self.one_per_cycle = match args.get("lockStrategy") {
            None | Some("fewest-nodes") => false,
            Some("one-per-cycle") => true,
            Some(v) => return Err(format!("argument lockStrategy: {v:?} is not fewest-nodes or one-per-cycle")),
        };
        self.cap = args.f64("maxReservedFraction", 0.5)?;
        if !(0.0..=1.0).contains(&self.cap) {
            return Err(format!("argument maxReservedFraction: {} is not in [0, 1]", self.cap));
        }
        self.job_cap = args.f64("maxJobLockedFraction", 1.0)?;
        if !(0.0..=1.0).contains(&self.job_cap) {
            return Err(format!("argument maxJobLockedFraction: {} is not in [0, 1]", self.job_cap));
        }
        self.exact_limit = args.f64("exactLimit", 16.0)?.clamp(0.0, 24.0) as usize;
        self.budget = args.f64("searchBudget", 20_000.0)?.max(1.0) as usize;
        self.queue_locks = s.snap.node_locked_queue.clone();
        self.job_locks = s.snap.node_locked_job.clone();
        Ok(())
    }

    /// The highest priority, then the one above the size line most, then
    /// the longest waiting, among jobs past a threshold.
    fn target_job(&mut self, s: &Session, jobs: &[u32]) -> Option<u32> {
        let key = |j: u32| (-s.snap.job_priority[j as usize], -self.margin(s, j), s.snap.job_created_ms[j as usize], j);
        let mut big: Vec<(i32, f64, i64, u32)> = jobs.iter().copied().filter(|&j| self.is_big(s, j)).map(key).collect();
        big.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
        big.first().map(|k| k.3)
    }

    fn reserved_nodes(&mut self, s: &Session, owner: LockOwner, candidates: &[u32]) -> Result<Vec<u32>, String> {
        let (r, locks, id) = match owner {
            LockOwner::Job(j) => (self.for_job(s, j, candidates), &mut self.job_locks, j),
            LockOwner::Queue(q) => (self.for_queue(s, q, candidates), &mut self.queue_locks, q),
        };
        // What this session's later answers must see as already held.
        for l in locks.iter_mut().filter(|l| **l == id) {
            *l = NONE;
        }
        if let Ok(nodes) = &r {
            nodes.iter().for_each(|&n| locks[n as usize] = id);
        }
        r
    }

    /// Tasks running past their estimate on a big job's nodes.
    fn victim_tasks(&mut self, s: &Session, candidates: &[u32]) -> Vec<u32> {
        if !self.evict_overdue {
            return Vec::new();
        }
        candidates
            .iter()
            .copied()
            .filter(|&t| {
                let (n, est) = (s.task_node(t), s.snap.task_estimated_ms[t as usize]);
                n != NONE
                    && est > 0
                    && s.task_status(t) == TaskStatus::Running
                    && self.job_locks[n as usize] != NONE
                    && self.job_locks[n as usize] != s.task_job(t)
                    && s.snap.now_ms > s.snap.task_started_ms[t as usize] + est
            })
            .collect()
    }
}

impl Reservation {
    /// How far the job is above the size line: its largest request over
    /// the threshold, as a ratio (0 without a size threshold).
    fn margin(&self, s: &Session, j: u32) -> f64 {
        let req = job_request(s, j);
        self.min_request.iter().filter(|(_, v)| *v > 0.0).map(|&(d, v)| req[d] / v).fold(0.0, f64::max)
    }

    fn is_big(&self, s: &Session, j: u32) -> bool {
        if self.min_request.is_empty() && self.min_waiting_ms.is_none() {
            return true;
        }
        let req = job_request(s, j);
        let by_size = !self.min_request.is_empty() && self.min_request.iter().any(|&(d, v)| req[d] >= v);
        let waited = (s.snap.now_ms - s.snap.job_created_ms[j as usize]) as f64;
        by_size || self.min_waiting_ms.is_some_and(|w| waited >= w)
    }

    fn for_job(&self, s: &Session, j: u32, candidates: &[u32]) -> Result<Vec<u32>, String> {
        let pending: Vec<u32> =
            s.job_tasks(j).iter().copied().filter(|&t| s.task_status(t) == TaskStatus::Pending).collect();
        let need = job_need(s, j, &pending);
        if let Some(why) = beyond_capability(s, s.job_queue(j), &need) {
            // Its quota will never admit it: locking for it would hold the
            // nodes, and its queue's admissions, for nothing.
            return Err(format!("job needs {}, {why}", render(s, &need)));
        }
        let largest =
            pending.iter().copied().max_by(|&a, &b| dominant(s, s.task_req(a)).total_cmp(&dominant(s, s.task_req(b))));
        let fits_largest = |n: u32| largest.is_none_or(|t| fits(s.task_req(t), s.node_allocatable(n)));
        let usable: Vec<u32> = candidates.iter().copied().filter(|&n| fits_largest(n)).collect();
        let mut mine: Vec<u32> = usable.iter().copied().filter(|&n| s.snap.node_locked_job[n as usize] == j).collect();
        if self.one_per_cycle {
            let next = usable
                .iter()
                .copied()
                .filter(|n| !mine.contains(n))
                .max_by(|&a, &b| idle_share(s, a).total_cmp(&idle_share(s, b)).then(b.cmp(&a)));
            mine.extend(next);
            self.within_job_cap(s, j, &mine)?;
            return Ok(mine);
        }
        if covers(s, &mine, &need) {
            return Ok(mine); // stable: what is locked still suffices
        }
        let mut order = usable;
        let ends = node_ends(s);
        order.sort_by(|&a, &b| {
            let mine_first = (s.snap.node_locked_job[b as usize] == j).cmp(&(s.snap.node_locked_job[a as usize] == j));
            mine_first
                .then(ends[a as usize].total_cmp(&ends[b as usize]))
                .then(idle_share(s, b).total_cmp(&idle_share(s, a)))
                .then(a.cmp(&b))
        });
        let mut chosen = Vec::new();
        for n in order {
            if covers(s, &chosen, &need) {
                break;
            }
            chosen.push(n);
        }
        if !covers(s, &chosen, &need) {
            return Err(format!(
                "job needs {} but the nodes it may lock hold {} in total",
                render(s, &need),
                render(s, &sum_alloc(s, &chosen))
            ));
        }
        // Fewest nodes: drop any the rest still covers without, latest end first.
        for i in (0..chosen.len()).rev() {
            let mut rest = chosen.clone();
            rest.remove(i);
            if covers(s, &rest, &need) {
                chosen = rest;
            }
        }
        chosen.sort_unstable();
        self.within_job_cap(s, j, &chosen)?;
        Ok(chosen)
    }

    /// Refuses `chosen` for job `j` when big-job locks would then hold more
    /// than `maxJobLockedFraction` of the cluster in some dimension.
    fn within_job_cap(&self, s: &Session, j: u32, chosen: &[u32]) -> Result<(), String> {
        let others: Vec<u32> = (0..s.nodes() as u32)
            .filter(|&n| {
                let l = self.job_locks[n as usize];
                l != NONE && l != j && !chosen.contains(&n)
            })
            .collect();
        let held = sum_alloc(s, &[others.as_slice(), chosen].concat());
        let total = s.total();
        let over = (0..s.dims()).find(|&k| s.snap.dims[k] != "pods" && held[k] > self.job_cap * total[k] + 1e-9);
        match over {
            None => Ok(()),
            Some(k) => Err(format!(
                "big-job locks would hold {} of the cluster's {}, above maxJobLockedFraction {}",
                amount(s, k, held[k]),
                amount(s, k, total[k]),
                self.job_cap
            )),
        }
    }

    fn for_queue(&self, s: &Session, q: u32, candidates: &[u32]) -> Result<Vec<u32>, String> {
        let d = s.dims();
        let total = s.total().to_vec();
        let mut guarantee = vec![0.0; d];
        for x in s.snap.queue_guarantee.iter().filter(|x| x.owner == q) {
            guarantee[x.dim as usize] = x.value;
        }
        let mut pct = vec![0.0; d];
        for x in s.snap.queue_reserve_percentage.iter().filter(|x| x.owner == q) {
            pct[x.dim as usize] = x.value;
        }
        let mut capability = vec![f64::INFINITY; d];
        for x in s.snap.queue_capability.iter().filter(|x| x.owner == q) {
            capability[x.dim as usize] = x.value;
        }
        let pct_target: Vec<f64> = (0..d).map(|k| pct[k] * total[k]).collect();
        for (what, row) in [("guarantee", &guarantee), ("percentage", &pct_target)] {
            for k in 0..d {
                if row[k] > total[k] + 1e-9 {
                    return Err(format!(
                        "{what} {} exceeds the cluster's {}",
                        amount(s, k, row[k]),
                        amount(s, k, total[k])
                    ));
                }
                if row[k] > capability[k] + 1e-9 {
                    return Err(format!(
                        "{what} {} exceeds the capability {}",
                        amount(s, k, row[k]),
                        amount(s, k, capability[k])
                    ));
                }
            }
        }
        let usable = self.usable_by_queue(s, q, candidates);
        let mut options = Vec::new();
        if guarantee.iter().any(|&x| x > 0.0) {
            options.push(self.choose(s, q, &usable, &guarantee, None)?);
        }
        if pct.iter().any(|&x| x > 0.0) {
            let k = (s.nodes() as f64 * pct.iter().cloned().fold(0.0, f64::max)).floor() as usize;
            if k > usable.len() {
                return Err(format!("percentage asks for {k} nodes but only {} are free for it", usable.len()));
            }
            if k > 0 {
                options.push(self.choose(s, q, &usable, &pct_target, Some(k))?);
            }
        }
        // Both given: the one reserving more wins.
        let best = options
            .into_iter()
            .max_by(|a, b| share_sum(s, &sum_alloc(s, a)).total_cmp(&share_sum(s, &sum_alloc(s, b))))
            .unwrap_or_default();
        // The cluster-wide cap, with every other queue's locks.
        let others: Vec<u32> = (0..s.nodes() as u32)
            .filter(|&n| self.queue_locks[n as usize] != NONE && self.queue_locks[n as usize] != q)
            .collect();
        let mut locked = sum_alloc(s, &others);
        tephra_sdk::resource::add(&mut locked, &sum_alloc(s, &best));
        for k in 0..d {
            if total[k] > 0.0 && locked[k] / total[k] > self.cap + 1e-9 {
                return Err(format!(
                    "reserving would lock {:.0}% of the cluster's {} with the other queues, over maxReservedFraction {:.0}%",
                    100.0 * locked[k] / total[k],
                    s.snap.dims[k],
                    100.0 * self.cap
                ));
            }
        }
        Ok(best)
    }

    /// The best set for `target` among `usable`; the current set is kept
    /// unless the new one scores better by more than 5 %.
    fn choose(
        &self,
        s: &Session,
        q: u32,
        usable: &[u32],
        target: &[f64],
        count: Option<usize>,
    ) -> Result<Vec<u32>, String> {
        let dims: Vec<usize> = (0..s.dims()).filter(|&k| target[k] > 0.0).collect();
        let total = s.total();
        let scalar = |row: &[f64]| {
            dims.iter().map(|&k| if total[k] > 0.0 { row[k] / total[k] } else { 0.0 }).sum::<f64>()
                / dims.len().max(1) as f64
        };
        let used = queue_usage(s, q);
        let cands: Vec<Candidate> = usable
            .iter()
            .map(|&n| {
                let idle: Vec<f64> = (0..s.dims()).map(|k| s.node_idle(n, k).max(0.0)).collect();
                Candidate {
                    alloc: dims.iter().map(|&k| s.node_allocatable(n)[k]).collect(),
                    used: scalar(&used[n as usize * s.dims()..(n as usize + 1) * s.dims()]),
                    idle: scalar(&idle),
                }
            })
            .collect();
        let req = Request::new(
            dims.iter().map(|&k| target[k]).collect(),
            dims.iter().map(|&k| total[k]).collect(),
            count,
            &cands,
        );
        let found = if cands.len() <= self.exact_limit {
            select::exact(&req, &cands)
        } else {
            select::heuristic(&req, &cands, self.budget)
        };
        let Some(best) = found else {
            let held = render(s, &sum_alloc(s, usable));
            return Err(format!("needs {} but the nodes it may lock hold {held}", render(s, target)));
        };
        let current: Vec<usize> =
            (0..usable.len()).filter(|&i| s.snap.node_locked_queue[usable[i] as usize] == q).collect();
        let keep = match (req.score_of(&cands, &current), req.score_of(&cands, &best)) {
            (Some(old), Some(new)) => new <= old * 1.05,
            _ => false,
        };
        let pick = if keep { current } else { best };
        Ok(pick.into_iter().map(|i| usable[i]).collect())
    }

    /// Nodes of the queue's node groups (its own or its nearest ancestor's
    /// affinity) without a NoSchedule or NoExecute taint.
    fn usable_by_queue(&self, s: &Session, q: u32, candidates: &[u32]) -> Vec<u32> {
        let mut blocked = vec![false; s.nodes()];
        for t in &s.snap.node_taints {
            if matches!(s.str(t.effect), "NoSchedule" | "NoExecute") {
                blocked[t.node as usize] = true;
            }
        }
        let mut group = vec![None; s.nodes()];
        for l in s.snap.node_labels.iter().filter(|l| s.str(l.key) == GROUP_LABEL) {
            group[l.owner as usize] = Some(l.value);
        }
        let mut owner = q;
        for _ in 0..s.queues() {
            if s.snap.queue_affinity.iter().any(|a| a.owner == owner) || s.snap.queue_parent[owner as usize] == NONE {
                break;
            }
            owner = s.snap.queue_parent[owner as usize];
        }
        let listed = |kind: &str| -> Vec<u32> {
            s.snap.queue_affinity.iter().filter(|a| a.owner == owner && s.str(a.key) == kind).map(|a| a.value).collect()
        };
        let (required, anti) = (listed("required"), listed("anti-required"));
        candidates
            .iter()
            .copied()
            .filter(|&n| {
                let g = group[n as usize];
                !blocked[n as usize]
                    && (required.is_empty() || g.is_some_and(|g| required.contains(&g)))
                    && !g.is_some_and(|g| anti.contains(&g))
            })
            .collect()
    }
}

/// What the job's pending tasks request in total (or its minResources if larger).
fn job_request(s: &Session, j: u32) -> Vec<f64> {
    let mut row = vec![0.0; s.dims()];
    for &t in s.job_tasks(j) {
        if s.task_status(t) == TaskStatus::Pending {
            tephra_sdk::resource::add(&mut row, s.task_req(t));
        }
    }
    if let Some(m) = s.job_min_resources(j) {
        row.iter_mut().zip(m.iter().copied()).for_each(|(r, m)| *r = r.max(m));
    }
    row
}

/// Whether `need` exceeds the capability of queue `q` or an ancestor in
/// some dimension (cpu or memory ≤ 0 means unset, as in Volcano).
fn beyond_capability(s: &Session, q: u32, need: &[f64]) -> Option<String> {
    let mut at = q;
    for _ in 0..=s.queues() {
        if at == NONE || at as usize >= s.queues() {
            return None;
        }
        for x in s.snap.queue_capability.iter().filter(|x| x.owner == at) {
            let k = x.dim as usize;
            let unset = k < 2 && x.value <= 0.0;
            if !unset && need.get(k).is_some_and(|&n| n > x.value + 1e-9) {
                return Some(format!(
                    "more than queue {}'s capability {}",
                    log::name(Kind::Queue, at),
                    amount(s, k, x.value)
                ));
            }
        }
        at = s.snap.queue_parent[at as usize];
    }
    None
}

/// What must still be placed for the job to start: its largest pending
/// tasks, as many as minAvailable still lacks (all pending ones if none).
fn job_need(s: &Session, j: u32, pending: &[u32]) -> Vec<f64> {
    let lacking = s.job_min_available(j).saturating_sub(s.job_ready[j as usize]) as usize;
    let mut sorted = pending.to_vec();
    sorted.sort_by(|&a, &b| dominant(s, s.task_req(b)).total_cmp(&dominant(s, s.task_req(a))));
    let take = if lacking == 0 { sorted.len() } else { lacking.min(sorted.len()) };
    let mut row = vec![0.0; s.dims()];
    for &t in &sorted[..take] {
        tephra_sdk::resource::add(&mut row, s.task_req(t));
    }
    // Not admitted yet, so no pods: the PodGroup's minResources says it.
    if let Some(m) = s.job_min_resources(j) {
        row.iter_mut().zip(m.iter().copied()).for_each(|(r, m)| *r = r.max(m));
    }
    row
}

/// Per node, when its last running task is expected to end (now if it runs
/// nothing; infinity if a task there has no estimate).
fn node_ends(s: &Session) -> Vec<f64> {
    let mut end = vec![s.snap.now_ms as f64; s.nodes()];
    for t in 0..s.tasks() as u32 {
        let n = s.task_node(t);
        if n == NONE || !matches!(s.task_status(t), TaskStatus::Running | TaskStatus::Bound) {
            continue;
        }
        let est = s.snap.task_estimated_ms[t as usize];
        let e = &mut end[n as usize];
        *e = if est <= 0 { f64::INFINITY } else { e.max((s.snap.task_started_ms[t as usize] + est) as f64) };
    }
    end
}

/// Per node, the resources the queue's own tasks hold there (row-major).
fn queue_usage(s: &Session, q: u32) -> Vec<f64> {
    let d = s.dims();
    let mut out = vec![0.0; s.nodes() * d];
    for t in 0..s.tasks() as u32 {
        let n = s.task_node(t);
        if n != NONE && s.job_queue(s.task_job(t)) == q && tephra_sdk::is_allocated(s.task_status(t)) {
            tephra_sdk::resource::add(&mut out[n as usize * d..(n as usize + 1) * d], s.task_req(t));
        }
    }
    out
}

fn covers(s: &Session, nodes: &[u32], need: &[f64]) -> bool {
    !nodes.is_empty() && fits(need, &sum_alloc(s, nodes))
}

fn fits(req: &[f64], room: &[f64]) -> bool {
    req.iter().zip(room).all(|(r, x)| *r <= *x + 1e-9)
}

fn sum_alloc(s: &Session, nodes: &[u32]) -> Vec<f64> {
    let mut row = vec![0.0; s.dims()];
    for &n in nodes {
        tephra_sdk::resource::add(&mut row, s.node_allocatable(n));
    }
    row
}

fn share_sum(s: &Session, row: &[f64]) -> f64 {
    row.iter().zip(s.total()).map(|(x, t)| if *t > 0.0 { x / t } else { 0.0 }).sum()
}

fn dominant(s: &Session, row: &[f64]) -> f64 {
    row.iter().zip(s.total()).map(|(x, t)| if *t > 0.0 { x / t } else { 0.0 }).fold(0.0, f64::max)
}

fn idle_share(s: &Session, n: u32) -> f64 {
    (0..s.dims()).map(|k| s.node_idle(n, k).max(0.0) / s.total()[k].max(1.0)).sum()
}

fn amount(s: &Session, k: usize, v: f64) -> String {
    match s.snap.dims[k].as_str() {
        "cpu" => format!("cpu {}", v / 1000.0),
        "memory" => format!("memory {:.1}Gi", v / (1u64 << 30) as f64),
        "pods" => format!("pods {v}"),
        other => format!("{other} {}", v / 1000.0),
    }
}

fn render(s: &Session, row: &[f64]) -> String {
    (0..s.dims())
        .filter(|&k| row[k] > 0.0 && s.snap.dims[k] != "pods")
        .map(|k| amount(s, k, row[k]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `cpu=16,memory=64Gi,nvidia.com/gpu=4` in Volcano's internal units.
fn parse_request(s: &Session, text: &str) -> Result<Vec<(usize, f64)>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').ok_or_else(|| format!("{part:?} is not name=quantity"))?;
        let k = s.dim(name.trim()).ok_or_else(|| format!("no resource {name:?} in the cluster"))?;
        let v = quantity(value.trim()).ok_or_else(|| format!("{value:?} is not a quantity"))?;
        out.push((k, if name.trim() == "memory" { v } else { v * 1000.0 }));
    }
    Ok(out)
}

/// A Kubernetes quantity in base units (`500m` = 0.5, `2Gi`, `1G`).
fn quantity(v: &str) -> Option<f64> {
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let n: f64 = v[..split].parse().ok()?;
    let scale = match &v[split..] {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => (1u64 << 30) as f64,
        "Ti" => (1u64 << 40) as f64,
        _ => return None,
    };
    Some(n * scale)
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Reservation: target_job, reserved_nodes, victim_tasks);
