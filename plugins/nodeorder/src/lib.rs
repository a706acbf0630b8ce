//! Nodeorder: kube-scheduler's resource scores, weighted and summed as
//! Volcano's `nodeorder` plugin does (reference §8.9). Each score is 0–100
//! with kube-scheduler's integer arithmetic:
//! - LeastAllocated (`leastrequested.weight`, default 1) and MostAllocated
//!   (`mostrequested.weight`, default 0): mean over cpu and memory;
//! - BalancedAllocation (`balancedresource.weight`, default 1): 100 × (1 − std)
//!   of the requested/allocatable fractions of cpu, memory and, as Volcano
//!   configures it, `nvidia.com/gpu` when the task asks for it.
//!
//! - RequestedToCapacityRatio (`requestedtocapacityratio.weight`, default 0:
//!   a tephra extension, Volcano has none): the utilization of cpu and memory
//!   mapped through `requestedtocapacityratio.shape` (`utilization:score`
//!   points, scores 0–10, default `0:10,100:0`), averaged over the resources
//!   that score above 0, rounded; kube-scheduler's rules;
//! - NodeAffinity (`nodeaffinity.weight`, default 2): the summed weights of
//!   the preferred terms the node matches, not normalized (as Volcano adds it);
//! - TaintToleration (`tainttoleration.weight`, default 3): 100 − 100 × the
//!   node's untolerated `PreferNoSchedule` taints / the most any node has
//!   (kube-scheduler's reverse normalization; every node 100 when no node has
//!   one). Volcano normalizes over the nodes of its batch; here over all
//!   nodes, so that a node's score does not depend on which others are asked.
//!
//! - InterPodAffinity (`podaffinity.weight`, default 2): `affinity.rs`;
//! - PodTopologySpread (`podtopologyspread.weight`, default 2), the
//!   `ScheduleAnyway` constraints: `spread.rs`;
//! - ImageLocality (`imagelocality.weight`, default 1): `images.rs`.
//!
//! Kube-scheduler's non-zero defaults for requestless containers (100m cpu,
//! 200Mi) are not applied: the snapshot has no per-container requests. Nor
//! are PodTopologySpread's system default constraints (they come from the
//! Services and ReplicaSets that select a pod, which tephra does not watch).

mod affinity;
mod images;
mod spread;

use tephra_sdk::nodes::{group_rows, NodeRules};
use tephra_sdk::pods::Pods;
use tephra_sdk::resource::round;
use tephra_sdk::{Args, Event, ExtensionPoint as P, Policy, Session, TaskStatus, NONE};

const CPU: usize = 0;
const MEMORY: usize = 1;
const MAX_SCORE: i64 = 100;

#[derive(Default)]
pub struct NodeOrder {
    least: f64,
    most: f64,
    ratio: f64,
    /// RequestedToCapacityRatio's shape: (utilization, score × 10), ascending.
    shape: Vec<(i64, i64)>,
    balanced: f64,
    gpu: Option<usize>,
    affinity: f64,
    taints: f64,
    /// Per task, its preferred node-affinity rows, sorted by term.
    preferred: Vec<Vec<usize>>,
    /// Per node, its `PreferNoSchedule` taints' rows (most nodes: none).
    soft_taints: Vec<Vec<usize>>,
    /// The nodes with a `PreferNoSchedule` taint.
    softly_tainted: Vec<usize>,
    /// Per task, the most untolerated soft taints on any node (`NONE`: not
    /// worked out yet this session).
    most_untolerated: Vec<u32>,
    pod_affinity: f64,
    spread_weight: f64,
    image_weight: f64,
    rules: NodeRules,
    pods: Pods,
    pod_terms: affinity::Preferred,
    spread: spread::SoftSpread,
    images: images::Images,
    /// Per node, allocatable cpu and memory as kube-scheduler's integers:
    /// they do not move within a session, and rounding them for every
    /// node of every task cost as much as the rest of a score.
    allocatable: Vec<(i64, i64)>,
}

/// Mean of `score` over the dimensions with capacity (kube-scheduler skips
/// zero-allocatable resources); `dims` holds (requested, allocatable).
fn mean(dims: &[(i64, i64)], score: fn(i64, i64) -> i64) -> i64 {
    let (sum, n) = dims.iter().filter(|d| d.1 != 0).fold((0, 0), |(s, n), &(r, a)| (s + score(r, a), n + 1));
    sum.checked_div(n).unwrap_or(0)
}

fn least_requested(requested: i64, capacity: i64) -> i64 {
    if requested > capacity {
        0
    } else {
        (capacity - requested) * MAX_SCORE / capacity
    }
}

fn most_requested(requested: i64, capacity: i64) -> i64 {
    requested.min(capacity) * MAX_SCORE / capacity
}

/// A RequestedToCapacityRatio shape from `utilization:score` points:
/// utilizations 0–100 ascending, scores 0–10 (scaled to 0–100).
fn shape(text: &str) -> Result<Vec<(i64, i64)>, String> {
    let bad = |why: &str| format!("requestedtocapacityratio.shape: {text:?}: {why}");
    let mut points = Vec::new();
    for point in text.split(',') {
        let (u, sc) = point.trim().split_once(':').ok_or_else(|| bad("expected utilization:score points"))?;
        let u: i64 = u.trim().parse().map_err(|_| bad("a utilization is not a whole number"))?;
        let sc: i64 = sc.trim().parse().map_err(|_| bad("a score is not a whole number"))?;
        if !(0..=100).contains(&u) || !(0..=10).contains(&sc) {
            return Err(bad("utilizations are 0–100, scores 0–10"));
        }
        if points.last().is_some_and(|&(last, _)| u <= last) {
            return Err(bad("utilizations must ascend"));
        }
        points.push((u, sc * 10));
    }
    Ok(points)
}

/// Kube-scheduler's broken linear function over `shape` at utilization `p`.
fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    match shape.iter().position(|&(u, _)| p <= u) {
        Some(0) => shape[0].1,
        Some(i) => {
            let ((u0, s0), (u1, s1)) = (shape[i - 1], shape[i]);
            s0 + (s1 - s0) * (p - u0) / (u1 - u0)
        }
        None => shape.last().map_or(0, |&(_, s)| s),
    }
}

/// RequestedToCapacityRatio over cpu and memory (weight 1 each): the
/// resources that score above 0, averaged, rounded half away from zero.
fn capacity_ratio(shape: &[(i64, i64)], dims: &[(i64, i64)]) -> i64 {
    let (mut sum, mut n) = (0, 0);
    for &(requested, capacity) in dims.iter().filter(|d| d.1 != 0) {
        let p = if requested > capacity { 100 } else { requested * 100 / capacity };
        let score = broken_linear(shape, p);
        if score > 0 {
            sum += score;
            n += 1;
        }
    }
    if n == 0 {
        return 0;
    }
    (sum as f64 / n as f64).round() as i64
}

/// `(1 − std) × 100` of the requested/allocatable fractions of cpu, memory
/// and (when requested) gpus, each capped at 1; a dimension without
/// capacity is left out. Values, not a buffer: this runs for every node of
/// every task, and a local array indexed at run time lives in linear memory
/// in Wasm.
fn balanced(cpu: (i64, i64), memory: (i64, i64), gpu: Option<(i64, i64)>) -> i64 {
    let fraction = |(r, a): (i64, i64)| {
        let f = r as f64 / a as f64;
        // Not `min`: a libm call in Wasm; `f` is never NaN (a ≠ 0).
        (a != 0).then_some(if f < 1.0 { f } else { 1.0 })
    };
    let std = match (fraction(cpu), fraction(memory), gpu.and_then(fraction)) {
        (Some(a), Some(b), Some(c)) => {
            let mean = (a + b + c) / 3.0;
            (((a - mean) * (a - mean) + (b - mean) * (b - mean) + (c - mean) * (c - mean)) / 3.0).sqrt()
        }
        (Some(a), Some(b), None) | (Some(a), None, Some(b)) | (None, Some(a), Some(b)) => ((a - b) / 2.0).abs(),
        _ => 0.0,
    };
    ((1.0 - std) * MAX_SCORE as f64) as i64
}

impl Policy for NodeOrder {
    const NAME: &'static str = "nodeorder";
    const POINTS: &'static [P] = &[P::NodeOrder];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        self.least = args.f64("leastrequested.weight", 1.0)?;
        self.most = args.f64("mostrequested.weight", 0.0)?;
        self.balanced = args.f64("balancedresource.weight", 1.0)?;
        self.ratio = args.f64("requestedtocapacityratio.weight", 0.0)?;
        self.shape = shape(args.get("requestedtocapacityratio.shape").unwrap_or("0:10,100:0"))?;
        self.gpu = s.dim("nvidia.com/gpu");
        self.affinity = args.f64("nodeaffinity.weight", 2.0)?;
        self.taints = args.f64("tainttoleration.weight", 3.0)?;
        self.pod_affinity = args.f64("podaffinity.weight", 2.0)?;
        self.spread_weight = args.f64("podtopologyspread.weight", 2.0)?;
        self.image_weight = args.f64("imagelocality.weight", 1.0)?;
        // Pods are indexed only when a pod term or soft spread needs them.
        let sn = &s.snap;
        let pods = !sn.pod_terms.is_empty() || sn.task_spread.iter().any(|c| !c.hard);
        self.rules.index(s);
        self.pods = Pods::default();
        if pods {
            self.pods.index(sn);
            self.pods.open(s);
        }
        self.pod_terms.index(s, if pods { self.pods.count() } else { 0 });
        self.pod_terms.open(s, &mut self.pods);
        self.spread.index(s);
        self.spread.open();
        self.images.index(s);
        let sn = &s.snap;
        self.preferred = group_rows(s.tasks(), sn.task_affinity.iter().map(|e| e.task));
        for rows in &mut self.preferred {
            rows.retain(|&r| sn.task_affinity[r].weight > 0 && sn.task_affinity[r].group == 0);
            rows.sort_by_key(|&r| sn.task_affinity[r].term);
        }
        self.soft_taints = group_rows(s.nodes(), sn.node_taints.iter().map(|t| t.node));
        for rows in &mut self.soft_taints {
            rows.retain(|&r| s.str(sn.node_taints[r].effect) == "PreferNoSchedule");
        }
        self.softly_tainted = (0..s.nodes()).filter(|&n| !self.soft_taints[n].is_empty()).collect();
        self.most_untolerated = vec![NONE; s.tasks()];
        let whole = |n: u32, d: usize| round(s.node_allocatable(n)[d]) as i64;
        self.allocatable = (0..s.nodes() as u32).map(|n| (whole(n, CPU), whole(n, MEMORY))).collect();
        Ok(())
    }

    fn on_event(&mut self, s: &Session, e: &Event, _: TaskStatus) {
        if !self.pod_terms.any() && !self.spread.any() {
            return;
        }
        if let Some((from, to)) = self.pods.settle(s, e.task) {
            self.pod_terms.shift(s, &mut self.pods, e.task, from, to);
        }
    }

    fn node_order(&mut self, s: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
        let t = task;
        let most = self.most_untolerated(s, t);
        let task = self.task(s, t);
        // Most tasks have no preference and no node a soft taint: those
        // scores are one number for every node, worked out once.
        let (fixed, per_node) = self.placement_fixed(t, most);
        let pods = self.pod_scored(t);
        for (score, &n) in scores.iter_mut().zip(nodes) {
            *score = self.score(s, &task, n) + fixed;
            if per_node {
                *score += self.placement(s, t, n, most);
            }
            if pods {
                *score += self.pod_scores(s, t, n);
            }
        }
    }

    fn node_score(&mut self, s: &Session, task: u32, node: u32) -> f64 {
        let most = self.most_untolerated(s, task);
        let t = self.task(s, task);
        self.score(s, &t, node) + self.placement(s, task, node, most) + self.pod_scores(s, task, node)
    }
}

/// What scoring needs of the task, worked out once per call rather than per node.
struct Task<'a> {
    req: &'a [f64],
    /// The gpu dimension, when the task requests gpus.
    gpu: Option<usize>,
    /// BalancedAllocation applies (weight set, and the task is not best-effort).
    balanced: bool,
}

impl NodeOrder {
    fn task<'a>(&self, s: &'a Session, task: u32) -> Task<'a> {
        let req = s.task_req(task);
        // Best-effort tasks get 0; an extended resource counts only when requested.
        let gpu = self.gpu.filter(|&g| round(req[g]) > 0.0);
        let balanced = self.balanced != 0.0 && (gpu.is_some() || round(req[CPU]) > 0.0 || round(req[MEMORY]) > 0.0);
        Task { req, gpu, balanced }
    }

    /// The node's untolerated `PreferNoSchedule` taints for task `t`.
    /// (A toleration with another effect does not tolerate them.)
    fn untolerated(&self, s: &Session, t: u32, node: usize) -> u32 {
        let taints = &s.snap.node_taints;
        let soft = self.soft_taints[node].iter().map(|&r| &taints[r]);
        let tolerated = |key, value| self.rules.tolerated(s, t as usize, key, value, "PreferNoSchedule");
        soft.filter(|x| !tolerated(s.str(x.key), s.str(x.value))).count() as u32
    }

    /// The most untolerated soft taints on any node for task `t`, worked out
    /// once per task and session.
    fn most_untolerated(&mut self, s: &Session, t: u32) -> u32 {
        if self.taints == 0.0 || self.softly_tainted.is_empty() {
            return 0;
        }
        if self.most_untolerated[t as usize] == NONE {
            let most = self.softly_tainted.iter().map(|&n| self.untolerated(s, t, n)).max().unwrap_or(0);
            self.most_untolerated[t as usize] = most;
        }
        self.most_untolerated[t as usize]
    }

    /// Whether [`Self::placement`] varies by node for task `t` (else the
    /// number it is for every node).
    fn placement_fixed(&self, t: u32, most: u32) -> (f64, bool) {
        let varies = (self.affinity != 0.0 && !self.preferred[t as usize].is_empty()) || most > 0;
        (if varies { 0.0 } else { self.taints * MAX_SCORE as f64 }, varies)
    }

    /// Whether any of [`Self::pod_scores`] may be non-zero for task `t`.
    fn pod_scored(&self, t: u32) -> bool {
        (self.pod_affinity != 0.0 && self.pod_terms.any())
            || (self.spread_weight != 0.0 && self.spread.applies(t))
            || (self.image_weight != 0.0 && self.images.wanted(t))
    }

    /// InterPodAffinity's, PodTopologySpread's and ImageLocality's scores, weighted.
    fn pod_scores(&mut self, s: &Session, t: u32, n: u32) -> f64 {
        let mut score = 0.0;
        if self.pod_affinity != 0.0 && self.pod_terms.any() {
            score += self.pod_affinity * self.pod_terms.score(s, &mut self.pods, t, n) as f64;
        }
        if self.spread_weight != 0.0 && self.spread.applies(t) {
            score += self.spread_weight * self.spread.score(s, &mut self.pods, &self.rules, t, n) as f64;
        }
        if self.image_weight != 0.0 {
            score += self.image_weight * self.images.score(s, t, n) as f64;
        }
        score
    }

    /// NodeAffinity's and TaintToleration's scores, weighted.
    fn placement(&self, s: &Session, t: u32, node: u32, most: u32) -> f64 {
        let n = node as usize;
        let mut score = 0.0;
        if self.affinity != 0.0 && !self.preferred[t as usize].is_empty() {
            let exprs = &s.snap.task_affinity;
            let terms = self.preferred[t as usize].chunk_by(|&a, &b| exprs[a].term == exprs[b].term);
            let matched = terms.filter(|term| term.iter().all(|&r| self.rules.labels.matches(s, &exprs[r], n)));
            let sum: i64 = matched.map(|term| exprs[term[0]].weight as i64).sum();
            score += self.affinity * sum as f64;
        }
        if self.taints != 0.0 {
            let untolerated = if most == 0 { 0 } else { self.untolerated(s, t, n) as i64 };
            let normalized = if most == 0 { MAX_SCORE } else { MAX_SCORE - untolerated * MAX_SCORE / most as i64 };
            score += self.taints * normalized as f64;
        }
        score
    }

    fn score(&self, s: &Session, task: &Task, node: u32) -> f64 {
        let req = task.req;
        // Kube-scheduler's NodeInfo, as Volcano builds it, holds every task on
        // the node: pipelined ones count as requested too.
        let (used, pipelined) = (s.node_used(node), s.node_pipelined(node));
        let requested = |d: usize| round(used[d] + pipelined[d] + req[d]) as i64;
        let (cpu, memory) = self.allocatable[node as usize];
        let cpu_mem = [(requested(CPU), cpu), (requested(MEMORY), memory)];
        let mut score = 0.0;
        if self.least != 0.0 {
            score += self.least * mean(&cpu_mem, least_requested) as f64;
        }
        if self.most != 0.0 {
            score += self.most * mean(&cpu_mem, most_requested) as f64;
        }
        if self.ratio != 0.0 {
            score += self.ratio * capacity_ratio(&self.shape, &cpu_mem) as f64;
        }
        if task.balanced {
            let gpu = task.gpu.map(|g| (requested(g), round(s.node_allocatable(node)[g]) as i64));
            score += self.balanced * balanced(cpu_mem[0], cpu_mem[1], gpu) as f64;
        }
        score
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(NodeOrder: node_order);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::{Runtime, SnapshotBuilder, TaskStatus, NONE};

    /// Score of a pending task `req` on a node `alloc` already running `used`.
    fn score_with(scalars: &[&str], alloc: &[f64], used: &[f64], req: &[f64], args: &[(&str, &str)]) -> f64 {
        let mut b = SnapshotBuilder::new(scalars);
        let n = b.node(alloc);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        b.task(j, used, TaskStatus::Running, n);
        let t = b.task(j, req, TaskStatus::Pending, NONE);
        let s = b.build();
        let mut p = NodeOrder::default();
        // The resource scores alone: no taint anywhere scores every node
        // 100 × tainttoleration.weight, unless a case sets the weight.
        let mut args: Vec<(String, String)> = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if !args.iter().any(|(k, _)| k == "tainttoleration.weight") {
            args.push(("tainttoleration.weight".into(), "0".into()));
        }
        p.open(&s, &Args::from_pairs(args)).unwrap();
        p.node_score(&s, t, n)
    }

    fn score(alloc: &[f64], used: &[f64], req: &[f64], args: &[(&str, &str)]) -> f64 {
        score_with(&[], alloc, used, req, args)
    }

    const ONLY_LEAST: [(&str, &str); 1] = [("balancedresource.weight", "0")];
    const ONLY_MOST: [(&str, &str); 3] =
        [("leastrequested.weight", "0"), ("balancedresource.weight", "0"), ("mostrequested.weight", "1")];
    const ONLY_BALANCED: [(&str, &str); 1] = [("leastrequested.weight", "0")];

    #[test]
    fn scores_with_integer_truncation() {
        // Requested cpu 1000/3000, memory 5000/10000.
        let (alloc, used, req) = ([3000.0, 10000.0, 110.0], [500.0, 2000.0], [500.0, 3000.0]);
        // (2000·100/3000 = 66 + 50) / 2
        assert_eq!(score(&alloc, &used, &req, &ONLY_LEAST), 58.0);
        // (33 + 50) / 2
        assert_eq!(score(&alloc, &used, &req, &ONLY_MOST), 41.0);
        // std = (1/2 − 1/3) / 2 ⇒ 91.67 truncated
        assert_eq!(score(&alloc, &used, &req, &ONLY_BALANCED), 91.0);
        // Defaults: least 1, balanced 1, most 0; taint toleration 3 × 100 (no taints).
        assert_eq!(score(&alloc, &used, &req, &[]), 58.0 + 91.0);
        assert_eq!(score(&alloc, &used, &req, &[("tainttoleration.weight", "3")]), 58.0 + 91.0 + 300.0);
        let weighted =
            [("leastrequested.weight", "0"), ("mostrequested.weight", "2"), ("balancedresource.weight", "3")];
        assert_eq!(score(&alloc, &used, &req, &weighted), 2.0 * 41.0 + 3.0 * 91.0);
    }

    #[test]
    fn over_capacity() {
        // cpu 1200/1000 (over), memory 250/1000.
        let (alloc, used, req) = ([1000.0, 1000.0, 110.0], [800.0, 150.0], [400.0, 100.0]);
        assert_eq!(score(&alloc, &used, &req, &ONLY_LEAST), 37.0); // (0 + 75) / 2
        assert_eq!(score(&alloc, &used, &req, &ONLY_MOST), 62.0); // (100 + 25) / 2
        assert_eq!(score(&alloc, &used, &req, &ONLY_BALANCED), 62.0); // fractions 1, 0.25
    }

    #[test]
    fn zero_allocatable_dimensions_are_skipped() {
        let (alloc, req) = ([2000.0, 0.0, 110.0], [500.0, 100.0]);
        assert_eq!(score(&alloc, &[], &req, &ONLY_LEAST), 75.0);
        assert_eq!(score(&alloc, &[], &req, &ONLY_MOST), 25.0);
        assert_eq!(score(&alloc, &[], &req, &ONLY_BALANCED), 100.0);
        // No resource at all: least/most 0, balance trivially 100 (as in kube-scheduler).
        assert_eq!(score(&[0.0, 0.0, 110.0], &[], &req, &ONLY_MOST), 0.0);
        assert_eq!(score(&[0.0, 0.0, 110.0], &[], &req, &[]), 100.0);
    }

    #[test]
    fn best_effort_task_has_no_balance_score() {
        let alloc = [1000.0, 1000.0, 110.0];
        assert_eq!(score(&alloc, &[500.0, 0.0], &[], &ONLY_BALANCED), 0.0);
        // Least still scores the node's own usage: (50 + 100) / 2.
        assert_eq!(score(&alloc, &[500.0, 0.0], &[], &[]), 75.0);
    }

    #[test]
    fn gpu_joins_the_balance_only_when_requested() {
        let gpu = ["nvidia.com/gpu"];
        let alloc = [4000.0, 4000.0, 110.0, 4000.0];
        // Fractions .25, .25, .75: std = √(1/18) ⇒ 76.4; least ignores gpu.
        assert_eq!(score_with(&gpu, &alloc, &[], &[1000.0, 1000.0, 0.0, 3000.0], &ONLY_BALANCED), 76.0);
        assert_eq!(score_with(&gpu, &alloc, &[], &[1000.0, 1000.0, 0.0, 3000.0], &ONLY_LEAST), 75.0);
        // A gpu-only task is not best-effort.
        assert_eq!(score_with(&gpu, &alloc, &[], &[0.0, 0.0, 0.0, 2000.0], &ONLY_BALANCED), 76.0);
        // Not requested: the node's busy gpu is ignored.
        assert_eq!(score_with(&gpu, &alloc, &[0.0, 0.0, 0.0, 4000.0], &[1000.0, 1000.0], &ONLY_BALANCED), 100.0);
        // Requested but the node has none: skipped.
        let no_gpu = [4000.0, 4000.0, 110.0, 0.0];
        assert_eq!(score_with(&gpu, &no_gpu, &[], &[1000.0, 1000.0, 0.0, 1000.0], &ONLY_BALANCED), 100.0);
    }

    #[test]
    fn pipelined_tasks_count_and_events_update_scores() {
        let mut b = SnapshotBuilder::new(&[]);
        let busy = b.node(&[1000.0, 1000.0, 110.0]);
        let idle = b.node(&[1000.0, 1000.0, 110.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        b.task(j, &[250.0, 250.0], TaskStatus::Pipelined, busy);
        let t = b.task(j, &[250.0, 250.0], TaskStatus::Pending, NONE);
        let other = b.task(j, &[500.0, 500.0], TaskStatus::Pending, NONE);
        let mut rt = Runtime::<NodeOrder>::default();
        rt.open_session(b.snap, vec![]).unwrap();
        // busy: requested 500/1000 ⇒ 50 + 100; idle: 250/1000 ⇒ 75 + 100;
        // and 300 each from taint toleration (no taints).
        assert_eq!(rt.node_order(t, &[busy, idle]), [450.0, 475.0]);
        let e = tephra_sdk::Event {
            kind: tephra_sdk::EventKind::Allocate,
            task: other,
            node: idle,
            status: TaskStatus::Allocated,
        };
        rt.on_events(&[e]);
        assert_eq!(rt.node_order(t, &[busy, idle]), [450.0, 425.0]);
        let snap = rt.session.take().unwrap().snap;
        assert!(rt.open_session(snap, vec![("leastrequested.weight".into(), "x".into())]).is_err());
    }

    /// Preferred node affinity sums matched terms' weights (not normalized);
    /// soft taints score by kube-scheduler's reverse normalization over all
    /// nodes, a toleration with another effect not counting.
    #[test]
    fn preferred_affinity_and_soft_taints() {
        use tephra_sdk::types::{AffinityExpr, Label, Taint, Toleration};
        let mut b = SnapshotBuilder::new(&[]);
        let nodes: Vec<u32> = (0..3).map(|_| b.node(&[4000.0, 8e9, 110.0])).collect();
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        let t = b.task(j, &[1000.0, 1e9], TaskStatus::Pending, NONE);
        let (zone, a, gpu, yes) = (b.string("zone"), b.string("a"), b.string("gpu"), b.string("yes"));
        b.snap.node_labels.push(Label { owner: nodes[0], key: zone, value: a });
        b.snap.node_labels.push(Label { owner: nodes[1], key: zone, value: a });
        b.snap.node_labels.push(Label { owner: nodes[1], key: gpu, value: yes });
        let (in_op, exists) = (b.string("In"), b.string("Exists"));
        let expr = |term, weight, key, operator, values: Vec<u32>| AffinityExpr {
            task: t,
            group: 0,
            term,
            weight,
            field: false,
            key,
            operator,
            values,
        };
        b.snap.task_affinity.push(expr(0, 5, zone, in_op, vec![a]));
        b.snap.task_affinity.push(expr(1, 7, gpu, exists, vec![]));
        let (k, v, soft, hard) = (b.string("k"), b.string("v"), b.string("PreferNoSchedule"), b.string("NoSchedule"));
        let k2 = b.string("k2");
        b.snap.node_taints.push(Taint { node: nodes[1], key: k, value: v, effect: soft });
        b.snap.node_taints.push(Taint { node: nodes[2], key: k, value: v, effect: soft });
        b.snap.node_taints.push(Taint { node: nodes[2], key: k2, value: v, effect: soft });
        // Tolerates k only for NoSchedule: it does not count for soft taints.
        let equal = b.string("Equal");
        b.snap.task_tolerations.push(Toleration { task: t, key: k, operator: equal, value: v, effect: hard });
        let s = b.build();
        let run = |args: &[(&str, &str)]| {
            let mut p = NodeOrder::default();
            let mut all = vec![("leastrequested.weight", "0"), ("balancedresource.weight", "0")];
            all.extend_from_slice(args);
            let pairs = all.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            p.open(&s, &Args::from_pairs(pairs)).unwrap();
            let mut out = vec![0.0; 3];
            p.node_order(&s, t, &nodes, &mut out);
            let one: Vec<f64> = nodes.iter().map(|&n| p.node_score(&s, t, n)).collect();
            assert_eq!(out, one, "list and scalar forms agree");
            out
        };
        // Node 0: zone a (5); node 1: zone a and gpu (12); node 2: nothing. Weight 2.
        assert_eq!(run(&[("tainttoleration.weight", "0")]), [10.0, 24.0, 0.0]);
        // Untolerated soft taints 0, 1, 2 of at most 2: 100, 50, 0; weight 3.
        assert_eq!(run(&[("nodeaffinity.weight", "0")]), [300.0, 150.0, 0.0]);
        assert!(NodeOrder::default()
            .open(&s, &Args::from_pairs(vec![("podaffinity.weight".into(), "x".into())]))
            .is_err());
    }

    /// RequestedToCapacityRatio: the shape is read strictly; utilization
    /// between points is interpolated in whole numbers; only resources that
    /// score count in the mean, which is rounded.
    #[test]
    fn capacity_ratio_follows_its_shape() {
        assert_eq!(shape("0:10,100:0"), Ok(vec![(0, 100), (100, 0)]));
        for bad in ["", "0:10,", "0:11", "50:1,40:2", "x:1", "0-1"] {
            let err = shape(bad).unwrap_err();
            assert!(err.starts_with("requestedtocapacityratio.shape: "), "{err}");
        }
        let s = shape("0:10,100:0").unwrap();
        assert_eq!((broken_linear(&s, 0), broken_linear(&s, 37), broken_linear(&s, 100)), (100, 63, 0));
        let steps = shape("20:0,50:10").unwrap();
        assert_eq!((broken_linear(&steps, 10), broken_linear(&steps, 35), broken_linear(&steps, 90)), (0, 50, 100));
        // cpu 1/4 (75), memory 1/2 (50): 62.5 rounds to 63; a full resource scores 0 and is left out.
        assert_eq!(capacity_ratio(&s, &[(1, 4), (5, 10)]), 63);
        assert_eq!(capacity_ratio(&s, &[(4, 4), (5, 10)]), 50);
        assert_eq!(capacity_ratio(&s, &[(4, 4), (10, 10)]), 0);
        let args = |shape: &str| Args::from_pairs(vec![("requestedtocapacityratio.shape".into(), shape.into())]);
        let b = SnapshotBuilder::new(&[]);
        assert!(NodeOrder::default().open(&b.build(), &args("1:2:3")).is_err());
    }
}
